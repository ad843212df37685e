// SPDX-License-Identifier: GPL-2.0
/* iospan snoop: a record's fields as a user reads them (names, letters, durations). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <bpf/bpf.h>

#include "args.h"
#include "cgroups.h"
#include "fspath.h"
#include "probe.h"
#include "snoop.h"

struct snoop_format {
	int paths_fd;
	struct fspath_cache *paths;
	struct cgroup_map *cgmap;
	int64_t mono_to_real; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	struct container cont;
	/* The last disk named: requests come in runs of one disk. */
	uint32_t disk_dev;
	char disk[DISK_NAME_LEN];
};

void snoop_rwbs(uint32_t op, uint32_t f, char *buf)
{
	int i = 0;

	if (f & SNOOP_RQ_PREFLUSH)
		buf[i++] = 'F';
	switch (op) {
	case SNOOP_OP_WRITE:
	case SNOOP_OP_ZONE_APPEND:
		buf[i++] = 'W';
		break;
	case SNOOP_OP_DISCARD:
		buf[i++] = 'D';
		break;
	case SNOOP_OP_SECURE_ERASE:
		buf[i++] = 'D';
		buf[i++] = 'E';
		break;
	case SNOOP_OP_FLUSH:
		buf[i++] = 'F';
		break;
	case SNOOP_OP_READ:
		buf[i++] = 'R';
		break;
	default:
		buf[i++] = 'N';
	}
	if (f & SNOOP_RQ_FUA)
		buf[i++] = 'F';
	if (f & SNOOP_RQ_RAHEAD)
		buf[i++] = 'A';
	if (f & SNOOP_RQ_SYNC)
		buf[i++] = 'S';
	if (f & SNOOP_RQ_META)
		buf[i++] = 'M';
	buf[i] = 0;
}

static int lookup_path(void *arg, const struct top_file_key *key, struct top_path *p)
{
	struct snoop_format *f = arg;

	return bpf_map_lookup_elem(f->paths_fd, key, p) ? -errno : 0;
}

int snoop_format_new(int paths_fd, struct snoop_format **out)
{
	struct snoop_format *f = calloc(1, sizeof(*f));
	char root[PATH_MAX];
	int err;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->paths_fd = paths_fd;
	f->disk_dev = UINT32_MAX;
	err = fspath_cache_new(lookup_path, f, &f->paths);
	if (err) {
		free(f);
		return err;
	}
	if (!probe_cgroup2_mount(root, sizeof(root)))
		cgroup_map_new(root, &f->cgmap);
	f->mono_to_real = (int64_t)(now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC));
	*out = f;
	return 0;
}

void snoop_format_free(struct snoop_format *f)
{
	if (!f)
		return;
	fspath_cache_free(f->paths);
	cgroup_map_free(f->cgmap);
	free(f);
}

static int64_t span(uint64_t from, uint64_t to)
{
	return from && to && to >= from ? (int64_t)(to - from) : -1;
}

void snoop_format(struct snoop_format *f, const struct snoop_io *e, struct snoop_line *l)
{
	l->wall = (double)((int64_t)e->ts + f->mono_to_real) / 1e9;
	l->comm = e->comm[0] ? e->comm : "?";
	if (e->dev != f->disk_dev) {
		f->disk_dev = e->dev;
		disk_name_of(KDEV_MAJOR(e->dev), KDEV_MINOR(e->dev), f->disk, sizeof(f->disk));
	}
	l->disk = f->disk;
	snoop_rwbs(e->op, e->rq_flags, l->rwbs);
	l->cgroup = f->cgmap && e->cgid ? cgroup_map_path(f->cgmap, e->cgid) : NULL;
	l->container = l->cgroup && cgroup_container(l->cgroup, &f->cont) ? f->cont.id : NULL;
	l->kind = e->flags & SNOOP_IO_NO_OWNER ? "unknown" : blk_owner_kind_name(e->kind);
	l->path = e->flags & SNOOP_IO_PATH ? fspath_of_id(f->paths, e->fs_dev, e->ino, e->path_id) :
					     NULL;
	l->queue_ns = span(e->start_ns, e->issue_ns);
	l->device_ns = span(e->issue_ns, e->ts);
	l->total_ns = span(e->start_ns, e->ts);
}
