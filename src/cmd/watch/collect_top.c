// SPDX-License-Identifier: GPL-2.0
/*
 * iospan watch's first BPF collector: top's per-process and per-file attribution
 * (src/cmd/top), read once per sample. Each sample keeps the busiest processes and
 * files of the window since the previous one (at most TOPC_MAX_ROWS of each, so memory
 * stays flat); the last --pre seconds of them are kept in memory and written into the
 * processes and files tables while an incident is open. Writeback is credited to the
 * process that dirtied the pages, as top does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "collector.h"
#include "disks.h"
#include "fspath.h"
#include "iospan_types.h"
#include "procinfo.h"
#include "watch.h"
#include "../top/top.h"

#define TOPC_MAX_ROWS 20

struct topc_proc {
	uint32_t pid;
	char comm[TOP_COMM_LEN];
	char *cmdline, *cgroup, *container;
	char disk[DISK_NAME_LEN];
	struct row sum;
	uint64_t writeback_bytes;
};

struct topc_file {
	uint32_t pid;
	char disk[DISK_NAME_LEN];
	unsigned int major, minor;
	uint64_t ino;
	char *path;
	struct row r;
};

/* The busiest processes and files of one sample's window. */
struct topc_sample {
	double time; /* the iostat sample's, so rows line up with the samples table */
	struct topc_proc procs[TOPC_MAX_ROWS];
	struct topc_file files[TOPC_MAX_ROWS];
	unsigned int nr_procs, nr_files;
};

/* Whether a device is a watched disk or on one, remembered for one sample. */
#define TOPC_DEV_CACHE 64
struct topc_dev {
	uint32_t dev;
	bool watched;
};

struct topc {
	struct top_opts o;
	struct topc_dev devs[TOPC_DEV_CACHE];
	unsigned int nr_devs;
	struct top_ctx *top;
	struct topc_sample *ring; /* oldest first from head */
	unsigned int cap, nr, head;
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void sample_clear(struct topc_sample *s)
{
	unsigned int i;

	for (i = 0; i < s->nr_procs; i++) {
		free(s->procs[i].cmdline);
		free(s->procs[i].cgroup);
		free(s->procs[i].container);
	}
	for (i = 0; i < s->nr_files; i++)
		free(s->files[i].path);
	memset(s, 0, sizeof(*s));
}

static int topc_open(void **priv)
{
	struct topc *t = calloc(1, sizeof(*t));
	int ret;

	*priv = t;
	if (!t)
		return -ENOMEM;
	top_opts_default(&t->o);
	/* Deltas: each read is the window since the previous sample. */
	t->o.interval_ns = NSEC_PER_SEC;
	t->o.stall_ns = 0;
	ret = top_collect_open(&t->o, &t->top);
	if (ret) {
		top_collect_close(t->top);
		free(t);
		*priv = NULL;
	}
	return ret;
}

/* Whether block device @dev is one of @ws's disks, or a partition of one. */
static bool dev_watched(struct topc *t, const struct watch_sample *ws, uint32_t dev)
{
	unsigned int maj = KDEV_MAJOR(dev), min = KDEV_MINOR(dev), i;
	struct disk d;
	bool watched = false;
	int k;

	for (i = 0; i < t->nr_devs; i++)
		if (t->devs[i].dev == dev)
			return t->devs[i].watched;
	/* A partition counts for its disk: sysfs once per device and sample. */
	if (disk_from_devnum(maj, min, &d)) {
		d.disk_major = maj;
		d.disk_minor = min;
	}
	for (k = 0; k < ws->nr && !watched; k++)
		watched = (ws->disks[k].dev.major == maj && ws->disks[k].dev.minor == min) ||
			  (ws->disks[k].dev.major == d.disk_major &&
			   ws->disks[k].dev.minor == d.disk_minor);
	if (t->nr_devs < TOPC_DEV_CACHE)
		t->devs[t->nr_devs++] = (struct topc_dev){ .dev = dev, .watched = watched };
	return watched;
}

/* The block device a row's I/O went to (a file system's disk for its files). */
static uint32_t row_bdev(struct top_ctx *c, uint32_t fs_dev, uint32_t bdev)
{
	if (bdev)
		return bdev;
	if (!KDEV_MAJOR(fs_dev) && fspath_cache_fs_disk(c->fspaths, fs_dev))
		return fspath_cache_fs_disk(c->fspaths, fs_dev);
	return fs_dev;
}

/* The busiest processes and files of @snap on the watched disks into @out. */
static int take_sample(struct topc *t, const struct watch_sample *ws,
		       const struct top_snapshot *snap, struct topc_sample *out)
{
	struct top_ctx *c = t->top;
	struct report rep = { 0 };
	struct row **files = NULL;
	size_t i, nr_files = 0;
	int ret = -ENOMEM;

	/* Only what went to the watched disks: an incident is about them. */
	t->nr_devs = 0;
	rep.rows = malloc((snap->nr_rows ? snap->nr_rows : 1) * sizeof(*rep.rows));
	rep.wb = malloc((snap->nr_wb ? snap->nr_wb : 1) * sizeof(*rep.wb));
	if (!rep.rows || !rep.wb)
		goto cleanup;
	for (i = 0; i < snap->nr_rows; i++) {
		const struct row *r = &snap->rows[i];
		/* As top_row_disk_name(): the kinds of rows name their device in the key. */
		uint32_t bdev = top_ino_special(r->key.ino) ? 0 : r->bdev;

		if (dev_watched(t, ws, row_bdev(c, r->key.dev, bdev)))
			rep.rows[rep.nr_rows++] = *r;
	}
	for (i = 0; i < snap->nr_wb; i++)
		if (dev_watched(t, ws, row_bdev(c, snap->wb[i].key.dev, 0)))
			rep.wb[rep.nr_wb++] = snap->wb[i];
	ret = top_group_procs(c, &rep);
	if (ret)
		goto cleanup;
	for (i = 0; i < rep.nr_procs && out->nr_procs < TOPC_MAX_ROWS; i++) {
		const struct proc_agg *p = &rep.procs[i];
		struct topc_proc *q = &out->procs[out->nr_procs];
		struct proc_ident id;
		struct cg_desc d;

		if (!p->sum.disk_read && !p->sum.disk_write && !p->sum.fs_read &&
		    !p->sum.fs_write && !p->writeback_bytes)
			continue;
		out->nr_procs++;
		q->pid = top_proc_tgid(p->pid, &p->info);
		snprintf(q->comm, sizeof(q->comm), "%s", p->info.comm);
		procinfo_get(c->procinfo, q->pid, p->info.comm, &id);
		q->cmdline = dup_or_null(id.cmdline);
		top_describe_cgroup(c, p->info.cgid, &d);
		q->cgroup = dup_or_null(d.path);
		q->container = d.has_ct ? dup_or_null(d.ct.id) : NULL;
		/* Its busiest row (the rows are sorted) names its disk. */
		if (p->nr_rows)
			top_row_disk_name(c, p->files[0], q->disk, sizeof(q->disk));
		q->sum = p->sum;
		q->writeback_bytes = p->writeback_bytes;
	}
	/* Files: the rows of real files, busiest first, each with its process. */
	files = calloc(rep.nr_rows ? rep.nr_rows : 1, sizeof(*files));
	if (!files) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < rep.nr_rows; i++)
		if (!top_ino_special(rep.rows[i].key.ino) && top_row_active(&rep.rows[i]))
			files[nr_files++] = &rep.rows[i];
	qsort_r(files, nr_files, sizeof(*files), top_row_ptr_cmp, (void *)&t->o.sort);
	for (i = 0; i < nr_files && out->nr_files < TOPC_MAX_ROWS; i++) {
		const struct row *r = files[i];
		struct topc_file *f = &out->files[out->nr_files++];
		struct top_proc info;

		top_proc_info(c, r->key.pid, &info);
		f->pid = top_proc_tgid(r->key.pid, &info);
		top_row_disk_name(c, r, f->disk, sizeof(f->disk));
		f->major = KDEV_MAJOR(r->key.dev);
		f->minor = KDEV_MINOR(r->key.dev);
		f->ino = r->key.ino;
		f->path = dup_or_null(top_file_path(c, r));
		f->r = *r;
	}
cleanup:
	free(files);
	free(rep.rows);
	free(rep.wb);
	top_report_free(&rep);
	return ret;
}

static void bind_text_or_null(sqlite3_stmt *s, int col, const char *v)
{
	if (v && *v)
		sqlite3_bind_text(s, col, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, col);
}

static int step_reset(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* One kept sample's rows into the incident's tables, in the open transaction. */
static int write_sample(sqlite3 *db, int64_t id, const struct topc_sample *s, const char *phase)
{
	sqlite3_stmt *ps = NULL, *fs = NULL;
	char dev[32];
	unsigned int i;
	int ret = -EIO;

	if (sqlite3_prepare_v2(db,
			       "INSERT INTO processes (incident_id, time, phase, pid, comm,"
			       " cmdline, cgroup, container, disk, fs_read_bytes, fs_write_bytes,"
			       " disk_read_bytes, disk_write_bytes, writeback_bytes, q2c_avg_us,"
			       " q2c_max_us, d2c_avg_us, d2c_max_us) VALUES (?1, ?2, ?3, ?4, ?5,"
			       " ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
			       -1, &ps, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO files (incident_id, time, phase, pid, disk, dev,"
			       " inode, path, fs_read_bytes, fs_write_bytes, disk_read_bytes,"
			       " disk_write_bytes, direct, writeback) VALUES (?1, ?2, ?3, ?4, ?5,"
			       " ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
			       -1, &fs, NULL) != SQLITE_OK)
		goto cleanup;
	for (i = 0; i < s->nr_procs; i++) {
		const struct topc_proc *p = &s->procs[i];

		sqlite3_bind_int64(ps, 1, id);
		sqlite3_bind_double(ps, 2, s->time);
		sqlite3_bind_text(ps, 3, phase, -1, SQLITE_STATIC);
		sqlite3_bind_int64(ps, 4, p->pid);
		bind_text_or_null(ps, 5, p->comm);
		bind_text_or_null(ps, 6, p->cmdline);
		bind_text_or_null(ps, 7, p->cgroup);
		bind_text_or_null(ps, 8, p->container);
		bind_text_or_null(ps, 9, p->disk);
		sqlite3_bind_int64(ps, 10, p->sum.fs_read);
		sqlite3_bind_int64(ps, 11, p->sum.fs_write);
		sqlite3_bind_int64(ps, 12, p->sum.disk_read);
		sqlite3_bind_int64(ps, 13, p->sum.disk_write);
		sqlite3_bind_int64(ps, 14, p->writeback_bytes);
		sqlite3_bind_double(ps, 15, top_avg_us(p->sum.q2c_sum, p->sum.nr_q2c));
		sqlite3_bind_double(ps, 16, p->sum.q2c_max / 1e3);
		sqlite3_bind_double(ps, 17, top_avg_us(p->sum.d2c_sum, p->sum.nr_d2c));
		sqlite3_bind_double(ps, 18, p->sum.d2c_max / 1e3);
		if (step_reset(ps))
			goto cleanup;
	}
	for (i = 0; i < s->nr_files; i++) {
		const struct topc_file *f = &s->files[i];

		snprintf(dev, sizeof(dev), "%u:%u", f->major, f->minor);
		sqlite3_bind_int64(fs, 1, id);
		sqlite3_bind_double(fs, 2, s->time);
		sqlite3_bind_text(fs, 3, phase, -1, SQLITE_STATIC);
		sqlite3_bind_int64(fs, 4, f->pid);
		bind_text_or_null(fs, 5, f->disk);
		sqlite3_bind_text(fs, 6, dev, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(fs, 7, (sqlite3_int64)f->ino);
		bind_text_or_null(fs, 8, f->path);
		sqlite3_bind_int64(fs, 9, f->r.fs_read);
		sqlite3_bind_int64(fs, 10, f->r.fs_write);
		sqlite3_bind_int64(fs, 11, f->r.disk_read);
		sqlite3_bind_int64(fs, 12, f->r.disk_write);
		sqlite3_bind_int(fs, 13, !!(f->r.flags & TOP_F_DIRECT));
		sqlite3_bind_int(fs, 14, !!(f->r.flags & TOP_F_WRITEBACK));
		if (step_reset(fs))
			goto cleanup;
	}
	ret = 0;
cleanup:
	sqlite3_finalize(ps);
	sqlite3_finalize(fs);
	return ret;
}

static struct topc_sample *ring_at(struct topc *t, unsigned int i)
{
	return &t->ring[(t->head + i) % t->cap];
}

/* A free slot at the ring's end; the ring grows while --pre holds more samples. */
static struct topc_sample *ring_push(struct topc *t)
{
	struct topc_sample *grown, *s;
	unsigned int i;

	if (t->nr == t->cap) {
		grown = calloc(t->cap ? 2 * t->cap : 8, sizeof(*grown));
		if (!grown)
			return NULL;
		for (i = 0; i < t->nr; i++)
			grown[i] = *ring_at(t, i);
		free(t->ring);
		t->ring = grown;
		t->cap = t->cap ? 2 * t->cap : 8;
		t->head = 0;
	}
	s = ring_at(t, t->nr++);
	memset(s, 0, sizeof(*s));
	return s;
}

/* Drops the samples older than @pre_s before @now (the newest always stays). */
static void ring_trim(struct topc *t, double now, double pre_s)
{
	while (t->nr > 1 && ring_at(t, 0)->time < now - pre_s - 1e-6) {
		sample_clear(ring_at(t, 0));
		t->head = (t->head + 1) % t->cap;
		t->nr--;
	}
}

static int topc_sample(void *priv, const struct watch_tick *tick)
{
	struct topc *t = priv;
	struct top_snapshot snap;
	struct topc_sample *s;
	unsigned int i;
	int ret;

	/* Housekeeping (cgroup and process names while they live); no stalls traced. */
	top_collect_poll(t->top, 0);
	ret = top_collect_read(t->top, &snap);
	if (ret)
		return ret;
	s = ring_push(t);
	if (!s) {
		ret = -ENOMEM;
		goto cleanup;
	}
	s->time = tick->sample->epoch_s;
	ret = take_sample(t, tick->sample, &snap, s);
	ring_trim(t, s->time, tick->pre_s);
	if (ret || !tick->incident_id)
		goto cleanup;
	if (tick->opened)
		for (i = 0; i + 1 < t->nr && !ret; i++)
			ret = write_sample(tick->db, tick->incident_id, ring_at(t, i), "pre");
	if (!ret)
		ret = write_sample(tick->db, tick->incident_id, s, "capture");
cleanup:
	top_snapshot_free(&snap);
	return ret;
}

static void topc_close(void *priv)
{
	struct topc *t = priv;
	unsigned int i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++)
		sample_clear(ring_at(t, i));
	free(t->ring);
	top_collect_close(t->top);
	free(t);
}

const struct watch_collector_ops watch_collector_top = {
	.name = "top",
	.open = topc_open,
	.sample = topc_sample,
	.close = topc_close,
};
