// SPDX-License-Identifier: GPL-2.0
/*
 * top's report model, pure: the rows read from the maps grouped by process (or by
 * file, or directory) and checked against /proc/diskstats for coverage; the renderers
 * only print what this builds. What it must know of the world (names of processes,
 * paths, disks) it asks through struct top_names, so it is unit tested without a
 * kernel (tests/unit/test_top_model.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/top.h"

/* What each counter of top's programs says; the informational ones lost nothing. */
const struct counter_def top_counters[TOP_DROP_NR] = {
	[TOP_DROP_STATS_FULL] = {"stats_map_full"},
	[TOP_DROP_LOST_BYTES] = {"lost_bytes_events"},
	[TOP_DROP_PROCS_FULL] = {"procs_map_full"},
	[TOP_DROP_WB_FULL] = {"writeback_map_full"},
	[TOP_DROP_UNMATCHED] = {"unmatched_bios", .info = true},
	[TOP_DROP_CHAIN_TRUNC] = {"truncated_bio_chains"},
	[TOP_DROP_RINGBUF_FULL] = {"ringbuf_full"},
	[TOP_DROP_IOWAIT_FULL] = {"iowait_map_full"},
	[TOP_DROP_DIRTIER_FULL] = {"dirtier_map_full"},
	[TOP_DROP_WB_UNKNOWN_BYTES] = {"writeback_dirtier_unknown_bytes", .info = true},
	[TOP_DROP_MAP_BUSY] = {"map_insert_busy"},
	[TOP_DROP_DIO_SLOT_BUSY] = {"async_dio_slot_busy"},
	[TOP_DROP_HOOK_MISSED] = {"hook_runs_missed"},
	[TOP_DROP_MAP_NOMEM] = {"map_alloc_failed"},
	[TOP_DROP_NO_QUEUE_TIME] = {"requests_without_queue_time", .info = true},
	[TOP_DROP_RQ_UNSEEN] = {"completions_unseen"},
	[TOP_DROP_RQ_UNSEEN_BYTES] = {"completion_unseen_bytes", .info = true},
	[TOP_DROP_FLUSH_LOST] = {"flushes_not_counted"},
	[TOP_DROP_DHIST_FULL] = {"disk_histograms_full"},
};

void top_opts_default(struct top_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_procs = 10;
	o->max_files = 5;
	o->max_entries = 16384;
	o->stall_ns = 100 * 1000000ULL;
}

/* Orders by the field @f of @a and @b if they differ there (a step of a key compare). */
#define CMP_FIELD(a, b, f)                               \
	do {                                             \
		if ((a)->f != (b)->f)                    \
			return (a)->f < (b)->f ? -1 : 1; \
	} while (0)

int top_key_cmp(const struct top_key *a, const struct top_key *b)
{
	CMP_FIELD(a, b, pid);
	CMP_FIELD(a, b, dev);
	CMP_FIELD(a, b, ino);
	CMP_FIELD(a, b, gen);
	return 0;
}

int top_row_cmp_key(const void *a, const void *b)
{
	return top_key_cmp(&((const struct row *)a)->key, &((const struct row *)b)->key);
}

int top_wb_cmp_key(const void *a, const void *b)
{
	const struct top_wb_key *x = &((const struct wbrow *)a)->key;
	const struct top_wb_key *y = &((const struct wbrow *)b)->key;

	CMP_FIELD(x, y, pid);
	CMP_FIELD(x, y, dev);
	CMP_FIELD(x, y, ino);
	CMP_FIELD(x, y, gen);
	CMP_FIELD(x, y, flusher);
	return 0;
}

uint64_t top_sub0(uint64_t a, uint64_t b)
{
	/* A counter that went backwards (row deleted and re-created) counts from zero. */
	return a >= b ? a - b : a;
}

const char *const top_by_names[] = {"process", "file", "dir"};

bool top_ino_special(uint64_t ino)
{
	return ino >= TOP_INO_SPECIAL;
}

const char *top_kind_name(uint64_t ino)
{
	if (!top_ino_special(ino))
		return "file";
	switch (ino - TOP_INO_SPECIAL) {
	case TOP_INO_META:
		return "metadata";
	case TOP_INO_RAW:
		return "raw";
	case TOP_INO_NOPAGE:
		return "kernel-buffer";
	case TOP_INO_FLUSH:
		return "flush";
	default:
		return "unattributed";
	}
}

bool top_row_is_flush(const struct row *r)
{
	return r->key.ino == TOP_INO(TOP_INO_FLUSH);
}

const char *top_kind_label(uint64_t ino)
{
	switch (ino - TOP_INO_SPECIAL) {
	case TOP_INO_META:
		return "[metadata: journal, fs metadata, buffered raw device]";
	case TOP_INO_RAW:
		return "[no file: direct I/O to the device, or swap]";
	case TOP_INO_NOPAGE:
		return "[no file: kernel buffers (fs metadata)]";
	case TOP_INO_FLUSH:
		return "[cache flushes it waited for (fsync, journal commits); Q2C: their time]";
	default:
		return "[unattributed: queued before tracing, or owner lost]";
	}
}

bool top_row_active(const struct row *r)
{
	return r->fs_read || r->fs_write || r->disk_read || r->disk_write ||
	       (top_row_is_flush(r) && r->nr_q2c);
}

static uint64_t row_sort_value(const struct row *r, enum sort_key k, uint64_t *tie)
{
	switch (k) {
	case SORT_FS:
		*tie = r->disk_read + r->disk_write;
		return r->fs_read + r->fs_write;
	case SORT_READ:
		*tie = r->fs_read;
		return r->disk_read + r->fs_read;
	case SORT_WRITE:
		*tie = r->fs_write;
		return r->disk_write + r->fs_write;
	case SORT_LATENCY:
		*tie = r->q2c_max;
		return r->nr_q2c ? r->q2c_sum / r->nr_q2c : 0;
	default:
		*tie = r->fs_read + r->fs_write;
		return r->disk_read + r->disk_write;
	}
}

/* Rows by --sort (@key: the enum sort_key), busiest first: a qsort_r() comparator. */
int top_row_ptr_cmp(const void *a, const void *b, void *key)
{
	enum sort_key sort = *(const enum sort_key *)key;
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;
	uint64_t tx, ty, vx = row_sort_value(x, sort, &tx), vy = row_sort_value(y, sort, &ty);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return top_key_cmp(&x->key, &y->key);
}

static int proc_cmp(const void *a, const void *b, void *key)
{
	enum sort_key sort = *(const enum sort_key *)key;
	const struct proc_agg *x = a, *y = b;
	uint64_t tx, ty, vx = row_sort_value(&x->sum, sort, &tx),
			 vy = row_sort_value(&y->sum, sort, &ty);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void top_row_add(struct row *sum, const struct row *r)
{
	sum->fs_read += r->fs_read;
	sum->fs_write += r->fs_write;
	sum->disk_read += r->disk_read;
	sum->disk_write += r->disk_write;
	sum->q2c_sum += r->q2c_sum;
	sum->d2c_sum += r->d2c_sum;
	sum->nr_q2c += r->nr_q2c;
	sum->nr_d2c += r->nr_d2c;
	sum->nr_q2c_write += r->nr_q2c_write;
	sum->q2c_write_sum += r->q2c_write_sum;
	if (r->q2c_max > sum->q2c_max)
		sum->q2c_max = r->q2c_max;
	if (r->d2c_max > sum->d2c_max)
		sum->d2c_max = r->d2c_max;
	sum->flags |= r->flags;
}

/* Groups the active rows by owner (rows are sorted by key, so owners are contiguous). */
int top_group_procs(const struct top_opts *o, const struct top_names *nm, struct report *rep)
{
	struct proc_agg *procs = NULL, *p = NULL;
	size_t i, j, n = 0;
	int err = 0;

	procs = calloc(rep->snap->nr_rows ? rep->snap->nr_rows : 1, sizeof(*procs));
	if (!procs)
		return -ENOMEM;
	for (i = 0; i < rep->snap->nr_rows; i++) {
		struct row *r = &rep->snap->rows[i];

		if (!top_row_active(r))
			continue;
		if (!p || p->pid != r->key.pid) {
			p = &procs[n++];
			p->pid = r->key.pid;
			p->files = calloc(rep->snap->nr_rows - i, sizeof(*p->files));
			p->flushes = calloc(rep->snap->nr_rows - i, sizeof(*p->flushes));
			if (!p->files || !p->flushes) {
				err = -ENOMEM;
				goto cleanup;
			}
			nm->proc(nm->arg, p->pid, &p->info);
		}
		/* Flushes move no bytes: their latency is not the data requests'. */
		if (top_row_is_flush(r)) {
			p->flushes[p->nr_flush_rows++] = r;
			top_row_add(&p->flush, r);
			continue;
		}
		p->files[p->nr_rows++] = r;
		top_row_add(&p->sum, r);
		if (!top_ino_special(r->key.ino))
			p->nr_files++;
	}
	for (i = 0; i < n; i++) {
		qsort_r(procs[i].files, procs[i].nr_rows, sizeof(*procs[i].files), top_row_ptr_cmp,
			(void *)&o->sort);
		for (j = 0; j < rep->snap->nr_wb; j++)
			if (rep->snap->wb[j].key.pid == procs[i].pid)
				procs[i].writeback_bytes += rep->snap->wb[j].bytes;
	}
	qsort_r(procs, n, sizeof(*procs), proc_cmp, (void *)&o->sort);
	rep->procs = procs;
	rep->nr_procs = n;
	procs = NULL;
cleanup:
	if (procs) {
		for (i = 0; i < n; i++) {
			free(procs[i].files);
			free(procs[i].flushes);
		}
		free(procs);
	}
	return err;
}

static struct dev_cov *cov_get(struct report *rep, unsigned int major, unsigned int minor)
{
	struct dev_cov *grown;
	size_t i;

	for (i = 0; i < rep->nr_devs; i++)
		if (rep->devs[i].major == major && rep->devs[i].minor == minor)
			return &rep->devs[i];
	grown = realloc(rep->devs, (rep->nr_devs + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	rep->devs = grown;
	memset(&grown[rep->nr_devs], 0, sizeof(*grown));
	grown[rep->nr_devs].major = major;
	grown[rep->nr_devs].minor = minor;
	return &grown[rep->nr_devs++];
}

/* The device a coverage line is about: the whole disk, or the partition given by -d. */
static void cov_target(const struct top_opts *o, const struct top_names *nm, unsigned int major,
		       unsigned int minor, unsigned int *tmaj, unsigned int *tmin)
{
	struct disk d;

	*tmaj = major;
	*tmin = minor;
	if (o->filter.have_disk && o->filter.disk.partition)
		return;
	if (!nm->disk_of(nm->arg, major, minor, &d)) {
		*tmaj = d.disk_major;
		*tmin = d.disk_minor;
	}
}

static bool cov_selected(const struct top_opts *o, unsigned int major, unsigned int minor)
{
	if (!o->filter.have_disk)
		return true;
	return o->filter.disk.major == major && o->filter.disk.minor == minor;
}

int top_compute_coverage(const struct top_opts *o, const struct top_names *nm,
			 const struct ds_snapshot *ds_start, const struct ds_snapshot *ds_end,
			 struct report *rep)
{
	unsigned int tmaj, tmin;
	struct dev_cov *d;
	size_t i;

	for (i = 0; i < rep->snap->nr_rows; i++) {
		const struct row *r = &rep->snap->rows[i];
		uint32_t bdev = r->bdev ? r->bdev : r->key.dev;

		if (!r->disk_read && !r->disk_write)
			continue;
		cov_target(o, nm, KDEV_MAJOR(bdev), KDEV_MINOR(bdev), &tmaj, &tmin);
		if (!cov_selected(o, tmaj, tmin))
			continue;
		d = cov_get(rep, tmaj, tmin);
		if (!d)
			return -ENOMEM;
		d->seen_read += r->disk_read;
		d->seen_write += r->disk_write;
		if (r->key.pid == TOP_PID_NONE) {
			d->unattr_read += r->disk_read;
			d->unattr_write += r->disk_write;
		}
	}
	/* Flushes are the whole disk's: shown unless -d names a partition. */
	for (i = 0; i < rep->snap->nr_flushes; i++) {
		const struct disk_counts_row *f = &rep->snap->flushes[i];

		if ((!f->nr && !f->drv.cmds && !f->drv.requeues && !f->drv.timeouts &&
		     !f->drv.dispatch_errors) ||
		    !cov_selected(o, KDEV_MAJOR(f->dev), KDEV_MINOR(f->dev)))
			continue;
		d = cov_get(rep, KDEV_MAJOR(f->dev), KDEV_MINOR(f->dev));
		if (!d)
			return -ENOMEM;
		d->drv = f->drv;
		d->flushes = f->nr;
		d->flush_ns = f->ns;
		d->flushes_untimed = f->untimed;
		d->flush_untimed_ns = f->untimed_ns;
	}
	/* Requests not seen complete, on their coverage line (a flush on its disk's). */
	for (i = 0; i < rep->snap->nr_open; i++) {
		const struct rq_open *q = &rep->snap->open[i];
		struct rq_open *u;

		cov_target(o, nm, KDEV_MAJOR(q->dev), KDEV_MINOR(q->dev), &tmaj, &tmin);
		if (!cov_selected(o, tmaj, tmin))
			continue;
		d = cov_get(rep, tmaj, tmin);
		if (!d)
			return -ENOMEM;
		u = &d->unresolved;
		u->dev = KDEV(tmaj, tmin);
		u->requests += q->requests;
		u->read_bytes += q->read_bytes;
		u->write_bytes += q->write_bytes;
		u->flushes += q->flushes;
		u->flush_ns += q->flush_ns;
	}
	for (i = 0; i < ds_end->nr; i++) {
		const struct ds_dev *e = &ds_end->devs[i], *s;
		uint64_t rd, wr, fl = 0, fl_ms = 0;
		bool want;

		want = o->filter.have_disk ? cov_selected(o, e->major, e->minor) : !e->partition;
		if (!want)
			continue;
		s = ds_snapshot_find(ds_start, e->major, e->minor, e->name);
		rd = (e->f[DS_RD_SECTORS] - (s ? s->f[DS_RD_SECTORS] : 0)) * 512;
		wr = (e->f[DS_WR_SECTORS] - (s ? s->f[DS_WR_SECTORS] : 0)) * 512;
		if (s && (e->f[DS_RD_SECTORS] < s->f[DS_RD_SECTORS] ||
			  e->f[DS_WR_SECTORS] < s->f[DS_WR_SECTORS]))
			rd = wr = 0;
		if (e->nr_fields > DS_FL_TICKS && s) {
			fl = top_sub0(e->f[DS_FL_IOS], s->f[DS_FL_IOS]);
			fl_ms = top_sub0(e->f[DS_FL_TICKS], s->f[DS_FL_TICKS]);
		}
		d = NULL;
		if (rd || wr || fl || o->filter.have_disk) {
			d = cov_get(rep, e->major, e->minor);
		} else {
			size_t j;

			for (j = 0; j < rep->nr_devs; j++)
				if (rep->devs[j].major == e->major &&
				    rep->devs[j].minor == e->minor)
					d = &rep->devs[j];
		}
		if (!d)
			continue;
		d->ds_read = rd;
		d->ds_write = wr;
		d->ds_known = true;
		d->ds_flushes = fl;
		d->ds_flush_ms = fl_ms;
		d->ds_flush_known = e->nr_fields > DS_FL_TICKS;
		snprintf(d->name, sizeof(d->name), "%s", e->name);
	}
	for (i = 0; i < rep->nr_devs; i++) {
		d = &rep->devs[i];
		if (!d->name[0])
			nm->dev_name(nm->arg, d->major, d->minor, d->name, sizeof(d->name));
		cov_target(o, nm, d->major, d->minor, &tmaj, &tmin);
		if (o->filter.have_disk && o->filter.disk.partition) {
			tmaj = o->filter.disk.disk_major;
			tmin = o->filter.disk.disk_minor;
		}
		d->traced = nm->request_based(nm->arg, tmaj, tmin);
	}
	return 0;
}

int top_stall_cmp(const void *a, const void *b)
{
	const struct stall_agg *x = a, *y = b;

	if (x->max_ns != y->max_ns)
		return x->max_ns > y->max_ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

double top_avg_us(uint64_t sum, uint64_t nr)
{
	return nr ? sum / 1e3 / nr : 0;
}

/* The process of owner @pid (a thread with --threads). */
uint32_t top_proc_tgid(uint32_t pid, const struct top_proc *info)
{
	return info->tgid ? info->tgid : pid;
}

int top_wb_bytes_cmp(const void *a, const void *b)
{
	const struct wbrow *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return top_wb_cmp_key(a, b);
}

double top_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0;
}

bool top_coverage_meaningful(const struct top_opts *o)
{
	/* Under a target filter the others' I/O is deliberately not counted. */
	return !filter_opts_target(&o->filter);
}

static int file_key_cmp(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;

	CMP_FIELD(x, y, key.dev);
	CMP_FIELD(x, y, key.ino);
	CMP_FIELD(x, y, key.gen);
	return 0;
}

static int group_cmp(const void *a, const void *b, void *key)
{
	const struct by_group *x = a, *y = b;

	return top_row_ptr_cmp(&(const struct row *){&x->sum}, &(const struct row *){&y->sum}, key);
}

static int pid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The directory of @path cut to its first @depth components ("/a/b" of "/a/b/c/f" at
 * depth 2, "/a/b/c" at 3 and more; "MAJ:MIN:" and "..." heads kept), into @out.
 */
static void dir_prefix(const char *path, unsigned int depth, char *out, size_t len)
{
	const char *slash = strchr(path, '/'), *last = strrchr(path, '/'), *q, *next;
	unsigned int n = 0;

	if (!slash) {
		snprintf(out, len, "%s", path);
		return;
	}
	for (q = slash; q < last && n < depth; n++) {
		next = strchr(q + 1, '/');
		q = next && next < last ? next : last;
	}
	if (q == slash)
		snprintf(out, len, "%.*s/", (int)(slash - path), path); /* the root */
	else
		snprintf(out, len, "%.*s", (int)(q - path), path);
}

/* Adds @g's processes and sums to @into. */
static int group_merge(struct by_group *into, const struct by_group *g)
{
	uint32_t *grown = realloc(into->pids, (into->nr_pids + g->nr_pids) * sizeof(*grown));

	if (!grown && into->nr_pids + g->nr_pids)
		return -ENOMEM;
	into->pids = grown;
	memcpy(into->pids + into->nr_pids, g->pids, g->nr_pids * sizeof(*grown));
	into->nr_pids += g->nr_pids;
	into->nr_files += g->nr_files;
	top_row_add(&into->sum, &g->sum);
	return 0;
}

void top_groups_free(struct by_group *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].pids);
	}
	free(v);
}

/* The active rows summed per file (device, generation, inode), or per no-file kind. */
static int group_files(const struct top_names *nm, const struct report *rep, struct by_group **out,
		       size_t *nr)
{
	struct by_group *v = NULL, *g = NULL;
	const struct row **rows;
	const char *path;
	size_t i, j, n = 0, k = 0;
	int err = -ENOMEM;

	rows = calloc(rep->snap->nr_rows ? rep->snap->nr_rows : 1, sizeof(*rows));
	v = calloc(rep->snap->nr_rows ? rep->snap->nr_rows : 1, sizeof(*v));
	if (!rows || !v)
		goto cleanup;
	for (i = 0; i < rep->snap->nr_rows; i++)
		if (top_row_active(&rep->snap->rows[i]))
			rows[k++] = &rep->snap->rows[i];
	qsort(rows, k, sizeof(*rows), file_key_cmp);
	for (i = 0; i < k; i++) {
		if (!g || file_key_cmp(&rows[i], &rows[i - 1])) {
			for (j = i + 1; j < k && !file_key_cmp(&rows[i], &rows[j]); j++)
				;
			g = &v[n++];
			g->sum.key = rows[i]->key;
			g->sum.key.pid = TOP_PID_NONE;
			g->nr_files = !top_ino_special(rows[i]->key.ino);
			g->pids = calloc(j - i, sizeof(*g->pids));
			path = g->nr_files ? nm->file_path(nm->arg, rows[i]->key.dev,
							   rows[i]->key.gen, rows[i]->key.ino) :
					     NULL;
			g->name = path ? strdup(path) : NULL;
			if (!g->pids || (path && !g->name))
				goto cleanup;
		}
		top_row_add(&g->sum, rows[i]);
		g->sum.bdev = rows[i]->bdev ? rows[i]->bdev : g->sum.bdev;
		if (rows[i]->key.pid != TOP_PID_NONE)
			g->pids[g->nr_pids++] = rows[i]->key.pid;
	}
	*out = v;
	*nr = n;
	v = NULL;
	err = 0;
cleanup:
	if (v)
		top_groups_free(v, n);
	free(rows);
	return err;
}

/* Directories by name, then uncaptured paths (one bucket), then no-file kinds. */
static int dir_key_cmp(const void *a, const void *b)
{
	const struct by_group *x = a, *y = b;
	int cx = x->name ? 0 : x->nr_files ? 1 : 2, cy = y->name ? 0 : y->nr_files ? 1 : 2;

	if (cx != cy)
		return cx < cy ? -1 : 1;
	if (cx == 0)
		return strcmp(x->name, y->name);
	if (cx == 1)
		return 0;
	return file_key_cmp(&(const struct row *){&x->sum}, &(const struct row *){&y->sum});
}

/* File groups rolled up by directory (--by dir); no-file kinds stay as they are. */
static int group_dirs(const struct top_opts *o, struct by_group *files, size_t nr_files,
		      struct by_group **out, size_t *nr)
{
	struct by_group *v, *g = NULL;
	char dir[PATH_MAX], *d;
	size_t i, j, k, n = 0;
	int err = 0;

	for (i = 0; i < nr_files; i++) {
		if (!files[i].name)
			continue;
		dir_prefix(files[i].name, o->dir_depth, dir, sizeof(dir));
		d = strdup(dir);
		if (!d)
			return -ENOMEM;
		free(files[i].name);
		files[i].name = d;
	}
	qsort(files, nr_files, sizeof(*files), dir_key_cmp);
	v = calloc(nr_files ? nr_files : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < nr_files && !err; i++) {
		if (!g || dir_key_cmp(g, &files[i])) {
			g = &v[n++];
			g->sum.key = files[i].sum.key;
			g->sum.bdev = files[i].sum.bdev;
			g->name = files[i].name;
			files[i].name = NULL;
		}
		err = group_merge(g, &files[i]);
	}
	for (i = 0; i < n; i++) {
		/* A process writing several files of a directory counts once. */
		qsort(v[i].pids, v[i].nr_pids, sizeof(*v[i].pids), pid_cmp);
		for (j = k = 0; j < v[i].nr_pids; j++)
			if (!k || v[i].pids[j] != v[i].pids[k - 1])
				v[i].pids[k++] = v[i].pids[j];
		v[i].nr_pids = k;
	}
	if (err) {
		top_groups_free(v, n);
		return err;
	}
	*out = v;
	*nr = n;
	return 0;
}

/* The rows of the main table for --by file or dir, busiest first (rep->groups). */
int top_group_by(const struct top_opts *o, const struct top_names *nm, struct report *rep)
{
	struct by_group *files, *dirs;
	size_t nr_files, nr_dirs;
	int err;

	err = group_files(nm, rep, &files, &nr_files);
	if (err)
		return err;
	if (o->by == BY_DIR) {
		err = group_dirs(o, files, nr_files, &dirs, &nr_dirs);
		top_groups_free(files, nr_files);
		if (err)
			return err;
		files = dirs;
		nr_files = nr_dirs;
	}
	qsort_r(files, nr_files, sizeof(*files), group_cmp, (void *)&o->sort);
	rep->groups = files;
	rep->nr_groups = nr_files;
	return 0;
}

/* Frees what the model built; rows, wb and flushes are the snapshot's. */
void top_report_free(struct report *rep)
{
	size_t i;

	for (i = 0; i < rep->nr_procs; i++) {
		free(rep->procs[i].files);
		free(rep->procs[i].flushes);
	}
	free(rep->procs);
	free(rep->devs);
	top_groups_free(rep->groups, rep->nr_groups);
	memset(rep, 0, sizeof(*rep));
}
