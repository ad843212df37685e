// SPDX-License-Identifier: GPL-2.0
/* iospan snoop: a record's fields as a user reads them (names, letters, durations). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#include "array.h"
#include "args.h"
#include "cgroups.h"
#include "fspath.h"
#include "printable.h"
#include "collect/snoop.h"

/* Recent names kept (each a power of two; direct-mapped by a hash of the key). */
#define COMM_SLOTS   64
#define CGROUP_SLOTS 16
#define PATH_SLOTS   64

/* A string kept in a slot, in a buffer that grows (never per record once warm). */
struct kept_str {
	char *s;
	size_t cap;
};

struct comm_slot {
	bool used;
	char comm[SNOOP_COMM_LEN];
	char text[SNOOP_COMM_LEN * 4 + 1];
	size_t len;
};

/* An unknown submitter's name, in an array as long as the renderer copies. */
static const char unknown_comm[16] = "?";

struct cgroup_slot {
	bool used;
	uint64_t cgid;
	struct kept_str path, text;
	bool in_container;
	struct container cont;
};

struct path_slot {
	bool used;
	uint32_t dev;
	uint64_t ino, id;
	struct kept_str path, text;
};

struct snoop_format {
	bool text; /* fill the *_text fields */
	struct fspath_cache *paths;
	struct cgroup_map *cgmap;
	int64_t mono_to_real; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	/* The last disk named: requests come in runs of one disk. */
	uint32_t disk_dev;
	char disk[DISK_NAME_LEN];
	char disk_text[DISK_NAME_LEN * 4];
	size_t disk_text_len;
	struct comm_slot comms[COMM_SLOTS];
	struct cgroup_slot cgroups[CGROUP_SLOTS];
	struct path_slot path_slots[PATH_SLOTS];
};

/* blktrace's letters (its RWBS field) for each op; "N" for any other. */
static const char *const op_letters[] = {
	[SNOOP_OP_READ] = "R",	  [SNOOP_OP_WRITE] = "W",	  [SNOOP_OP_FLUSH] = "F",
	[SNOOP_OP_DISCARD] = "D", [SNOOP_OP_SECURE_ERASE] = "DE", [SNOOP_OP_ZONE_APPEND] = "W",
};

/* blktrace's letters for the flags after the op, in its order. */
static const struct {
	uint32_t flag;
	char letter;
} flag_letters[] = {
	{RQ_FL_FUA, 'F'},
	{RQ_FL_RAHEAD, 'A'},
	{RQ_FL_SYNC, 'S'},
	{RQ_FL_META, 'M'},
};

void snoop_rwbs(uint32_t op, uint32_t f, char *buf)
{
	const char *l = op < ARRAY_SIZE(op_letters) && op_letters[op] ? op_letters[op] : "N";
	size_t k;
	int i = 0;

	if (f & RQ_FL_PREFLUSH)
		buf[i++] = 'F';
	while (*l)
		buf[i++] = *l++;
	for (k = 0; k < ARRAY_SIZE(flag_letters); k++)
		if (f & flag_letters[k].flag)
			buf[i++] = flag_letters[k].letter;
	buf[i] = 0;
}

int snoop_format_new(int paths_fd, bool text, struct cgroup_map *cgmap, struct snoop_format **out)
{
	struct snoop_format *f = calloc(1, sizeof(*f));
	int err;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->text = text;
	f->disk_dev = UINT32_MAX;
	err = fspath_cache_new(fspath_lookup_bpf_map, FSPATH_MAP_ARG(paths_fd), &f->paths);
	if (err) {
		free(f);
		return err;
	}
	f->cgmap = cgmap;
	f->mono_to_real = mono_to_real_ns();
	*out = f;
	return 0;
}

void snoop_format_free(struct snoop_format *f)
{
	int i;

	if (!f)
		return;
	for (i = 0; i < CGROUP_SLOTS; i++) {
		free(f->cgroups[i].path.s);
		free(f->cgroups[i].text.s);
	}
	for (i = 0; i < PATH_SLOTS; i++) {
		free(f->path_slots[i].path.s);
		free(f->path_slots[i].text.s);
	}
	fspath_cache_free(f->paths);
	free(f);
}

static int64_t span(uint64_t from, uint64_t to)
{
	return from && to && to >= from ? (int64_t)(to - from) : -1;
}

/* @s into @k, escaped for a terminal with @escape. 0 or -ENOMEM. */
static int keep_str(struct kept_str *k, const char *s, bool escape)
{
	size_t need = strlen(s) * (escape ? 4 : 1) + 1;
	char *p;

	if (need > k->cap) {
		p = realloc(k->s, need);
		if (!p)
			return -ENOMEM;
		k->s = p;
		k->cap = need;
	}
	if (escape)
		printable_buf(s, k->s, k->cap);
	else
		memcpy(k->s, s, need);
	return 0;
}

static uint32_t mix64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (uint32_t)v;
}

/* The escaped name @comm into @l. */
static void note_comm(struct snoop_format *f, const char *comm, struct snoop_line *l)
{
	uint64_t w[2];
	struct comm_slot *s;

	if (!comm[0]) {
		l->comm_text = unknown_comm;
		l->comm_text_len = 1;
		return;
	}
	memcpy(w, comm, sizeof(w));
	s = &f->comms[mix64(w[0] ^ mix64(w[1])) & (COMM_SLOTS - 1)];
	if (!s->used || memcmp(s->comm, comm, SNOOP_COMM_LEN)) {
		memcpy(s->comm, comm, SNOOP_COMM_LEN);
		printable_buf(comm, s->text, sizeof(s->text));
		s->len = strlen(s->text);
		s->used = true;
	}
	l->comm_text = s->text;
	l->comm_text_len = s->len;
}

/* The cgroup of @cgid into @l (its path, container, text); unknown ones are not kept. */
static void note_cgroup(struct snoop_format *f, uint64_t cgid, struct snoop_line *l)
{
	struct cgroup_slot *s = &f->cgroups[mix64(cgid) & (CGROUP_SLOTS - 1)];
	const char *path;

	if (!cgid || !f->cgmap)
		goto unknown;
	if (!s->used || s->cgid != cgid) {
		path = cgroup_map_path(f->cgmap, cgid);
		s->used = false;
		if (!path || keep_str(&s->path, path, false))
			goto unknown;
		s->in_container = cgroup_container(path, &s->cont);
		if (f->text && keep_str(&s->text, s->in_container ? s->cont.id : path, true))
			goto unknown;
		s->cgid = cgid;
		s->used = true;
	}
	l->cgroup = s->path.s;
	l->container = s->in_container ? s->cont.id : NULL;
	l->group_text = f->text ? s->text.s : NULL;
	return;
unknown:
	l->cgroup = NULL;
	l->container = NULL;
	l->group_text = "-";
}

/*
 * The path of the file of @e as captured with its path id into @l: an id names one
 * capture (generation and dentry stamp), so a kept one is the same path.
 */
static void note_path(struct snoop_format *f, const struct snoop_io *e, struct snoop_line *l)
{
	struct path_slot *s =
		&f->path_slots[mix64(e->ino ^ mix64(e->path_id ^ e->fs_dev)) & (PATH_SLOTS - 1)];
	const char *path;

	l->path = NULL;
	l->path_text = NULL;
	if (!(e->flags & SNOOP_IO_PATH))
		return;
	if (!s->used || s->dev != e->fs_dev || s->ino != e->ino || s->id != e->path_id) {
		s->used = false;
		path = fspath_of_id(f->paths, e->fs_dev, e->ino, e->path_id);
		if (!path)
			return;
		if (keep_str(&s->path, path, false) ||
		    (f->text && keep_str(&s->text, path, true))) {
			/* No room to keep it: shown all the same. */
			l->path = path;
			l->path_text = f->text ? printable(path) : NULL;
			return;
		}
		s->dev = e->fs_dev;
		s->ino = e->ino;
		s->id = e->path_id;
		s->used = true;
	}
	l->path = s->path.s;
	l->path_text = f->text ? s->text.s : NULL;
}

void snoop_format(struct snoop_format *f, const struct snoop_io *e, struct snoop_line *l)
{
	l->wall_ns = (int64_t)e->ts + f->mono_to_real;
	l->wall = (double)l->wall_ns / 1e9;
	l->comm = e->comm[0] ? e->comm : "?";
	if (e->dev != f->disk_dev) {
		f->disk_dev = e->dev;
		disk_name_of(KDEV_MAJOR(e->dev), KDEV_MINOR(e->dev), f->disk, sizeof(f->disk));
		printable_buf(f->disk, f->disk_text, sizeof(f->disk_text));
		f->disk_text_len = strlen(f->disk_text);
	}
	l->disk = f->disk;
	l->disk_text = f->disk_text;
	l->disk_text_len = f->disk_text_len;
	l->comm_text = NULL;
	l->comm_text_len = 0;
	if (f->text)
		note_comm(f, e->comm, l);
	snoop_rwbs(e->op, e->rq_flags, l->rwbs);
	note_cgroup(f, e->cgid, l);
	l->kind = e->flags & SNOOP_IO_NO_OWNER ? "unknown" : blk_owner_kind_name(e->kind);
	note_path(f, e, l);
	l->queue_ns = span(e->start_ns, e->issue_ns);
	l->device_ns = span(e->issue_ns, e->ts);
	l->total_ns = span(e->start_ns, e->ts);
	l->drv_ns = -1;
	if (e->drv.kind != DRV_NONE && e->issue_ns)
		l->drv_ns = span(e->drv_submit_ns > e->issue_ns ? e->drv_submit_ns : e->issue_ns,
				 e->drv_done_ns);
}

/* Their JSON names are an interface (docs/iospan-snoop.md): the summary's keys. */
const struct counter_def snoop_counters[SNOOP_CNT_NR] = {
	[SNOOP_CNT_NO_OWNER] = {"owner_unknown"},
	[SNOOP_CNT_NO_ISSUE] = {"dispatch_not_seen"},
	[SNOOP_CNT_PARTIAL] = {"partial_completions", .info = true},
	[SNOOP_CNT_FILTERED] = {"filtered", .info = true},
	[SNOOP_CNT_INFLIGHT_FULL] = {"inflight_map_full"},
	[SNOOP_CNT_DIRTIER_FULL] = {"dirtier_map_full"},
	[SNOOP_CNT_NO_DIRTIER] = {"writeback_dirtier_unknown"},
	[SNOOP_CNT_COMPLETION_UNSEEN] = {"completion_not_seen"},
	[SNOOP_CNT_NO_QUEUE] = {"queue_not_seen"},
};
