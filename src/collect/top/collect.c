// SPDX-License-Identifier: GPL-2.0
/*
 * iospan top: the collector (its API in top.h) and the reading of the BPF maps. Rows
 * are summed over CPUs (with the part the spill maps hold), turned into deltas in
 * periodic mode, and idle ones pruned when the map fills; I/O stalls arrive as
 * ring-buffer records and are aggregated per stack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "args.h"
#include "bpfmap.h"
#include "cgroups.h"
#include "drvstatus.h"
#include "err.h"
#include "fspath.h"
#include "procinfo.h"
#include "collect/top.h"
#include "top.skel.h"

int top_lookup_path(void *arg, const struct file_key *key, struct file_path *p)
{
	struct top_ctx *c = arg;

	return bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.paths), key, p) ? -errno : 0;
}

int top_lookup_title(void *arg, uint32_t tgid, struct proc_title *t)
{
	struct top_ctx *c = arg;

	return bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.titles), &tgid, t) ? -errno : 0;
}

/* The folds step through per-CPU values by struct size: libbpf lays them 8-byte aligned. */
_Static_assert(sizeof(struct top_stat) % 8 == 0, "per-CPU stride of top_stat");
_Static_assert(sizeof(struct top_wb_val) % 8 == 0, "per-CPU stride of top_wb_val");

/* Maxima are taken from this slot of the CPUs whose generation there is gen. */
struct max_slot {
	uint32_t slot, gen;
};

/* The part of a row that stats_spill held (see top.bpf.c). */
static void row_merge(void *into, const void *from)
{
	const struct row *f = from;
	struct row *r = into;

	top_row_add(r, f);
	if (f->bdev)
		r->bdev = f->bdev;
	if (f->path_epoch > r->path_epoch)
		r->path_epoch = f->path_epoch;
}

static void wb_merge(void *into, const void *from)
{
	const struct wbrow *f = from;
	struct wbrow *r = into;

	r->bytes += f->bytes;
	r->nr += f->nr;
}

static void fold_stat(void *row, const void *key, const void *vals, int ncpus, void *arg)
{
	const struct max_slot *ms = arg;
	const struct top_stat *v = vals;
	struct row *r = row;
	int cpu;

	r->key = *(const struct top_key *)key;
	for (cpu = 0; cpu < ncpus; cpu++, v++) {
		r->fs_read += v->fs_read;
		r->fs_write += v->fs_write;
		r->disk_read += v->disk_read;
		r->disk_write += v->disk_write;
		r->q2c_sum += v->q2c_sum;
		r->d2c_sum += v->d2c_sum;
		r->nr_q2c += v->nr_q2c;
		r->nr_d2c += v->nr_d2c;
		r->nr_q2c_write += v->nr_q2c_write;
		r->q2c_write_sum += v->q2c_write_sum;
		r->flags |= v->flags;
		if (v->bdev)
			r->bdev = v->bdev;
		if (v->path_epoch > r->path_epoch)
			r->path_epoch = v->path_epoch;
		if (v->max_gen[ms->slot] == ms->gen) {
			if (v->q2c_max[ms->slot] > r->q2c_max)
				r->q2c_max = v->q2c_max[ms->slot];
			if (v->d2c_max[ms->slot] > r->d2c_max)
				r->d2c_max = v->d2c_max[ms->slot];
		}
	}
}

/* A device's unattributed row (the unattr map, keyed by device) as a stats row. */
static void fold_unattr(void *row, const void *key, const void *vals, int ncpus, void *arg)
{
	struct top_key k = {
		.pid = TOP_PID_NONE,
		.dev = *(const uint32_t *)key,
		.ino = TOP_INO(TOP_INO_UNATTR),
	};
	struct row *r = row;

	fold_stat(row, &k, vals, ncpus, arg);
	r->bdev = k.dev;
}

/*
 * All rows of the stats map, summed over CPUs, with the devices' unattributed rows.
 * Maxima are taken from @slot of the CPUs whose generation there is @gen (the interval
 * that just ended).
 */
static int read_stats(struct top_ctx *c, uint32_t slot, uint32_t gen, struct row **out, size_t *nr)
{
	struct max_slot ms = {.slot = slot, .gen = gen};
	struct row *rows, *un = NULL, *all;
	size_t nr_un = 0, n, i, j;
	int err;

	err = bpfmap_collect_percpu_spilled(
		bpf_map__fd(c->skel->maps.stats), bpf_map__fd(c->skel->maps.stats_spill),
		sizeof(struct top_key), sizeof(struct top_stat), sizeof(struct row), fold_stat, &ms,
		top_row_cmp_key, row_merge, (void **)&rows, nr);
	if (err)
		return err;
	err = bpfmap_collect_percpu(bpf_map__fd(c->skel->maps.unattr), sizeof(uint32_t),
				    sizeof(struct top_stat), sizeof(struct row), fold_unattr, &ms,
				    (void **)&un, &nr_un);
	if (err || !nr_un) {
		*out = rows;
		free(un);
		if (err)
			free(rows);
		return err;
	}
	all = realloc(rows, (*nr + nr_un) * sizeof(*all));
	if (!all) {
		free(rows);
		free(un);
		return -ENOMEM;
	}
	memcpy(all + *nr, un, nr_un * sizeof(*un));
	free(un);
	n = *nr + nr_un;
	qsort(all, n, sizeof(*all), top_row_cmp_key);
	/* The stats map makes no unattributed rows; merged all the same if it did. */
	for (i = 1, j = 0; i < n; i++) {
		if (!top_row_cmp_key(&all[j], &all[i]))
			row_merge(&all[j], &all[i]);
		else
			all[++j] = all[i];
	}
	*nr = j + 1;
	*out = all;
	return 0;
}

static void fold_wb(void *row, const void *key, const void *vals, int ncpus, void *arg)
{
	const struct top_wb_val *v = vals;
	struct wbrow *r = row;
	int cpu;

	r->key = *(const struct top_wb_key *)key;
	for (cpu = 0; cpu < ncpus; cpu++) {
		r->bytes += v[cpu].bytes;
		r->nr += v[cpu].nr;
	}
}

static int read_wb(struct top_ctx *c, struct wbrow **out, size_t *nr)
{
	void *rows;
	int err;

	err = bpfmap_collect_percpu_spilled(
		bpf_map__fd(c->skel->maps.wb), bpf_map__fd(c->skel->maps.wb_spill),
		sizeof(struct top_wb_key), sizeof(struct top_wb_val), sizeof(struct wbrow), fold_wb,
		NULL, top_wb_cmp_key, wb_merge, &rows, nr);
	if (err)
		return err;
	*out = rows;
	return 0;
}

static int read_drops(struct top_ctx *c, uint64_t *out)
{
	int err = counters_read(bpf_map__fd(c->skel->maps.counters), TOP_DROP_NR, out);

	out[TOP_DROP_HOOK_MISSED] = bpfobj_missed_runs(c->skel->obj);
	return err;
}

static void fold_disk_counts(void *row, const void *key, const void *vals, int ncpus, void *arg)
{
	const struct top_disk_counts *v = vals;
	struct disk_counts_row *r = row;
	int cpu;

	r->dev = *(const uint32_t *)key;
	for (cpu = 0; cpu < ncpus; cpu++) {
		r->nr += v[cpu].nr;
		r->ns += v[cpu].ns;
		r->untimed += v[cpu].untimed;
		r->untimed_ns += v[cpu].untimed_ns;
		drv_disk_stats_add(&r->drv, &v[cpu].drv);
	}
}

/* Adds histogram @v to @h. */
static void add_dhist(struct top_dhist *h, const struct top_dhist *v)
{
	uint64_t *sum = (uint64_t *)h;
	const uint64_t *add = (const uint64_t *)v;
	size_t i;

	_Static_assert(sizeof(struct top_dhist) % sizeof(uint64_t) == 0, "u64 fields only");
	for (i = 0; i < sizeof(*h) / sizeof(uint64_t); i++)
		sum[i] += add[i];
}

static void fold_dhist(void *row, const void *key, const void *vals, int ncpus, void *arg)
{
	const struct top_dhist_key *k = key;
	const struct top_dhist *v = vals;
	struct top_disk_hist *r = row;
	int cpu;

	r->dev = k->dev;
	r->op = k->op;
	for (cpu = 0; cpu < ncpus; cpu++)
		add_dhist(&r->h, &v[cpu]);
}

/* The hash map's rows, and the CPUs' slots of the fast array added (top_abi.h). */
struct dhist_rows {
	struct top_disk_hist *rows;
	size_t nr;
	int ncpus;
	int err;
};

static int add_fast_dhists(const void *key, const void *vals, void *arg)
{
	const struct top_dhist_slot *v = vals;
	struct dhist_rows *d = arg;
	struct top_disk_hist *grown, *r;
	size_t i;
	int cpu;

	for (cpu = 0; cpu < d->ncpus; cpu++) {
		if (!v[cpu].key.dev)
			continue;
		for (i = 0, r = NULL; i < d->nr && !r; i++)
			if (d->rows[i].dev == v[cpu].key.dev && d->rows[i].op == v[cpu].key.op)
				r = &d->rows[i];
		if (!r) {
			grown = realloc(d->rows, (d->nr + 1) * sizeof(*grown));
			if (!grown) {
				d->err = -ENOMEM;
				return 1; /* stops the walk */
			}
			d->rows = grown;
			r = &grown[d->nr++];
			memset(r, 0, sizeof(*r));
			r->dev = v[cpu].key.dev;
			r->op = v[cpu].key.op;
		}
		add_dhist(&r->h, &v[cpu].h);
	}
	return 0;
}

int top_collect_disk_hists(struct top_ctx *c, struct top_disk_hist **rows, size_t *nr)
{
	struct dhist_rows d = {.ncpus = libbpf_num_possible_cpus()};
	int err;

	*rows = NULL;
	*nr = 0;
	if (!c->o->disk_hists)
		return 0;
	if (d.ncpus <= 0)
		return d.ncpus ? d.ncpus : -EINVAL;
	err = bpfmap_collect_percpu(bpf_map__fd(c->skel->maps.dhists), sizeof(struct top_dhist_key),
				    sizeof(struct top_dhist), sizeof(struct top_disk_hist),
				    fold_dhist, NULL, (void **)&d.rows, &d.nr);
	if (err)
		return err;
	err = bpfmap_walk(bpf_map__fd(c->skel->maps.dhist_fast), sizeof(uint32_t),
			  sizeof(struct top_dhist_slot), true, add_fast_dhists, &d);
	if (!err)
		err = d.err;
	if (err) {
		free(d.rows);
		return err;
	}
	*rows = d.rows;
	*nr = d.nr;
	return 0;
}

int top_collect_disk_counts(struct top_ctx *c, struct disk_counts_row **rows, size_t *nr)
{
	void *v = NULL;
	int err;

	*rows = NULL;
	*nr = 0;
	err = bpfmap_collect_percpu(bpf_map__fd(c->skel->maps.disk_counts), sizeof(uint32_t),
				    sizeof(struct top_disk_counts), sizeof(struct disk_counts_row),
				    fold_disk_counts, NULL, &v, nr);
	if (!err)
		*rows = v;
	return err;
}

/* The disks' cache flushes: cumulative in *@cum, in the window in *@out (periodic). */
static int read_disk_counts(struct top_ctx *c, struct disk_counts_row **cum, size_t *nr,
			    struct disk_counts_row **out)
{
	struct disk_counts_row *d;
	void *rows;
	size_t i, j;
	int err;

	err = bpfmap_collect_percpu(bpf_map__fd(c->skel->maps.disk_counts), sizeof(uint32_t),
				    sizeof(struct top_disk_counts), sizeof(struct disk_counts_row),
				    fold_disk_counts, NULL, &rows, nr);
	if (err)
		return err;
	*cum = rows;
	d = malloc((*nr ? *nr : 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (*nr) /* rows is NULL without any */
		memcpy(d, rows, *nr * sizeof(*d));
	for (i = 0; i < *nr; i++)
		for (j = 0; j < c->nr_prev_fl; j++)
			if (c->prev_fl[j].dev == d[i].dev) {
				d[i].nr = top_sub0(d[i].nr, c->prev_fl[j].nr);
				d[i].ns = top_sub0(d[i].ns, c->prev_fl[j].ns);
				d[i].untimed = top_sub0(d[i].untimed, c->prev_fl[j].untimed);
				d[i].untimed_ns =
					top_sub0(d[i].untimed_ns, c->prev_fl[j].untimed_ns);
				drv_disk_stats_since(&d[i].drv, &c->prev_fl[j].drv);
			}
	*out = d;
	return 0;
}

/*
 * The requests issued before @before (CLOCK_MONOTONIC, just after /proc/diskstats was
 * read) whose completion top has not seen, per device: the open slots of the requests table.
 * A slot holds the last request issued at its index, so a request whose slot another
 * took is not among them (it counts when it completes, if it is seen).
 */
static int read_open(struct top_ctx *c, uint64_t before, struct rq_open **out, size_t *nr)
{
	struct rq_open *v = NULL, *grown, *o;
	size_t i, j, n = 0;

	*out = NULL;
	*nr = 0;
	for (i = 0; i < c->nr_rq_slots; i++) {
		/* Copied once: the kernel writes the slot meanwhile. */
		struct top_rq_slot sl = c->rq_slots[i];

		if (!sl.state || sl.d > before)
			continue;
		for (j = 0; j < n && v[j].dev != sl.dev; j++)
			;
		if (j == n) {
			grown = realloc(v, (n + 1) * sizeof(*v));
			if (!grown) {
				free(v);
				return -ENOMEM;
			}
			v = grown;
			memset(&v[n], 0, sizeof(v[n]));
			v[n++].dev = sl.dev;
		}
		o = &v[j];
		o->requests++;
		if (sl.state & TOP_RQ_FLUSH) {
			o->flushes++;
			o->flush_ns += before - sl.d;
		} else if (sl.state & TOP_RQ_WRITE) {
			o->write_bytes += sl.left;
		} else {
			o->read_bytes += sl.left;
		}
	}
	*out = v;
	*nr = n;
	return 0;
}

/* @cur minus the previous cumulative values; keeps @cur as the new previous. */
static int rows_delta(struct top_ctx *c, struct row *cur, size_t nr, struct row **out)
{
	struct row *d, *p;
	size_t i;

	d = malloc((nr ? nr : 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		d[i] = cur[i];
		p = c->prev ? bsearch(&cur[i], c->prev, c->nr_prev, sizeof(*p), top_row_cmp_key) :
			      NULL;
		if (!p)
			continue;
		d[i].fs_read = top_sub0(cur[i].fs_read, p->fs_read);
		d[i].fs_write = top_sub0(cur[i].fs_write, p->fs_write);
		d[i].disk_read = top_sub0(cur[i].disk_read, p->disk_read);
		d[i].disk_write = top_sub0(cur[i].disk_write, p->disk_write);
		d[i].q2c_sum = top_sub0(cur[i].q2c_sum, p->q2c_sum);
		d[i].d2c_sum = top_sub0(cur[i].d2c_sum, p->d2c_sum);
		d[i].nr_q2c = top_sub0(cur[i].nr_q2c, p->nr_q2c);
		d[i].nr_d2c = top_sub0(cur[i].nr_d2c, p->nr_d2c);
		d[i].nr_q2c_write = top_sub0(cur[i].nr_q2c_write, p->nr_q2c_write);
		d[i].q2c_write_sum = top_sub0(cur[i].q2c_write_sum, p->q2c_write_sum);
	}
	*out = d;
	return 0;
}

static int wb_delta(struct top_ctx *c, struct wbrow *cur, size_t nr)
{
	struct wbrow *p;
	size_t i;

	for (i = 0; i < nr; i++) {
		p = c->prev_wb ? bsearch(&cur[i], c->prev_wb, c->nr_prev_wb, sizeof(*p),
					 top_wb_cmp_key) :
				 NULL;
		if (!p)
			continue;
		cur[i].bytes = top_sub0(cur[i].bytes, p->bytes);
		cur[i].nr = top_sub0(cur[i].nr, p->nr);
	}
	return 0;
}

/*
 * Periodic mode keeps rows forever (deltas need the totals). When the map gets 3/4
 * full, rows idle in the last interval are deleted to make room; an update racing
 * with the delete can lose that one update, which is why only idle rows go.
 */
static void prune_idle(struct top_ctx *c, const struct row *cur, const struct row *delta, size_t nr)
{
	int fd = bpf_map__fd(c->skel->maps.stats);
	int spill_fd = bpf_map__fd(c->skel->maps.stats_spill);
	size_t i;

	if (nr < c->o->max_entries * 3 / 4)
		return;
	for (i = 0; i < nr; i++) {
		if (top_row_active(&delta[i]) || cur[i].key.pid == TOP_PID_NONE)
			continue;
		/* Both parts of the row, or its next total would count the rest again. */
		bpf_map_delete_elem(spill_fd, &cur[i].key);
		if (!bpf_map_delete_elem(fd, &cur[i].key))
			c->pruned++;
	}
}

int top_on_slow_rq(void *ctx, const void *data, uint32_t size)
{
	struct top_ctx *c = ctx;

	(void)size;
	if (c->sink.slow_rq)
		c->sink.slow_rq(c->sink.arg, data);
	return 0;
}

int top_on_stall(void *ctx, const void *data, uint32_t size)
{
	const struct top_stall *e = data;
	struct top_ctx *c = ctx;
	struct stall_agg *a;
	int nr, i;

	if (c->stalls_taken) {
		c->nr_stalls = 0;
		c->stalls_dropped = 0;
		c->stalls_taken = false;
	}
	nr = e->stack_bytes > 0 ? e->stack_bytes / (int)sizeof(uint64_t) : 0;
	if (nr > TOP_STACK_DEPTH)
		nr = TOP_STACK_DEPTH;
	/* The same thread stuck at the same place again: one line with a count. */
	for (i = 0; i < (int)c->nr_stalls; i++) {
		a = &c->stalls[i];
		if (a->tid == e->tid && a->nr_ips == nr &&
		    !memcmp(a->ips, e->stack, nr * sizeof(uint64_t)))
			goto update;
	}
	if (c->nr_stalls == MAX_STALLS) {
		c->stalls_dropped++;
		return 0;
	}
	a = &c->stalls[c->nr_stalls++];
	memset(a, 0, sizeof(*a));
	a->tid = e->tid;
	a->tgid = e->tgid;
	a->cgid = e->cgid;
	memcpy(a->comm, e->comm, sizeof(a->comm));
	a->comm[sizeof(a->comm) - 1] = '\0';
	a->nr_ips = nr;
	memcpy(a->ips, e->stack, nr * sizeof(uint64_t));
update:
	a->count++;
	a->total_ns += e->dur_ns;
	if (e->dur_ns > a->max_ns)
		a->max_ns = e->dur_ns;
	return 0;
}

/* One process of the procs map, at housekeeping. */
static int refresh_proc(const void *key, const void *val, void *arg)
{
	const struct top_proc *info = val;
	struct top_ctx *c = arg;
	uint32_t tgid = top_proc_tgid(*(const uint32_t *)key, info);
	struct proc_ident id;

	cgroup_map_path(c->cmd.cgmap, info->cgid);
	/*
	 * Read /proc while it lives, in case the kernel has no title for it: once. The
	 * rows shown read it again each round; every process each second was most of a
	 * watcher's CPU on a busy machine.
	 */
	if (!procinfo_known(c->procinfo, tgid))
		procinfo_get(c->procinfo, tgid, info->comm, &id);
	return 0;
}

/*
 * Names the cgroups of the processes seen so far while they still exist: a container
 * that did its I/O and went away before the report is still named in it. Runs about
 * once a second, reading the map a few hundred processes a syscall; a rescan of the
 * hierarchy happens only for ids not seen before.
 */
static void refresh_cgroups(struct top_ctx *c)
{
	if (!c->cmd.cgmap)
		return;
	cgroup_map_round(c->cmd.cgmap);
	bpfmap_walk(bpf_map__fd(c->skel->maps.procs), sizeof(uint32_t), sizeof(struct top_proc),
		    false, refresh_proc, c);
	cgroup_map_round(c->cmd.cgmap);
}

void top_collect_housekeep(void *ctx)
{
	struct top_ctx *c = ctx;

	refresh_cgroups(c);
	/* Rows check their files' paths again at their next I/O. */
	c->skel->bss->path_epoch++;
}

/* ------------------------------------------------------------------ names */

/* The user-visible path of a row's file as it is now; NULL if not captured. */
const char *top_file_path(struct top_ctx *c, const struct row *r)
{
	return fspath_current(c->fspaths, r->key.dev, r->key.gen, r->key.ino);
}

void top_proc_info(struct top_ctx *c, uint32_t pid, struct top_proc *info)
{
	char path[64];
	FILE *f;

	memset(info, 0, sizeof(*info));
	if (pid == TOP_PID_NONE) {
		snprintf(info->comm, sizeof(info->comm), "(unattributed)");
		return;
	}
	if (!bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.procs), &pid, info))
		return;
	/* Not recorded (map full): ask /proc while the process still exists. */
	info->tgid = pid;
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(info->comm, sizeof(info->comm), f))
			info->comm[strcspn(info->comm, "\n")] = '\0';
		fclose(f);
	}
	if (!info->comm[0])
		snprintf(info->comm, sizeof(info->comm), "?");
}

void top_describe_cgroup(struct top_ctx *c, uint64_t cgid, struct cg_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->path = cgroup_map_path(c->cmd.cgmap, cgid);
	d->has_ct = d->path && cgroup_container(d->path, &d->ct);
}

/*
 * The disk a file row is on: the one its requests went to, or for a file system named
 * by an anonymous device (btrfs) that has moved no DISK bytes yet, its backing device.
 */
const char *top_row_disk_name(struct top_ctx *c, const struct row *r, char *buf, size_t len)
{
	uint32_t dev = r->key.dev;

	if (!KDEV_MAJOR(dev) && !top_ino_special(r->key.ino)) {
		if (r->bdev)
			dev = r->bdev;
		else if (fspath_cache_fs_disk(c->fspaths, dev))
			dev = fspath_cache_fs_disk(c->fspaths, dev);
	}
	return disk_name_of(KDEV_MAJOR(dev), KDEV_MINOR(dev), buf, len);
}

/* The path of a writeback row's file: the one its dirtier's row of the file names. */
const char *top_wb_path(struct top_ctx *c, const struct report *rep, const struct wbrow *w)
{
	struct row k = {.key = {.pid = w->key.pid,
				.dev = w->key.dev,
				.ino = w->key.ino,
				.gen = w->key.gen}};
	const struct row *r =
		bsearch(&k, rep->snap->rows, rep->snap->nr_rows, sizeof(k), top_row_cmp_key);

	return r ? top_file_path(c, r) :
		   fspath_current(c->fspaths, w->key.dev, w->key.gen, w->key.ino);
}

static void names_proc(void *arg, uint32_t pid, struct top_proc *info)
{
	top_proc_info(arg, pid, info);
}

static const char *names_file_path(void *arg, uint32_t dev, uint32_t gen, uint64_t ino)
{
	struct top_ctx *c = arg;

	return fspath_current(c->fspaths, dev, gen, ino);
}

static int names_disk_of(void *arg, unsigned int major, unsigned int minor, struct disk *d)
{
	return disk_from_devnum(major, minor, d);
}

static void names_dev_name(void *arg, unsigned int major, unsigned int minor, char *buf, size_t len)
{
	disk_name_of(major, minor, buf, len);
}

static bool names_request_based(void *arg, unsigned int major, unsigned int minor)
{
	char sys[64];

	/* Request-based (blk-mq) disks have an mq directory; dm, md, zram do not. */
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/mq", major, minor);
	return !access(sys, F_OK);
}

static void top_names_init(struct top_ctx *c, struct top_names *n)
{
	*n = (struct top_names){
		.arg = c,
		.proc = names_proc,
		.file_path = names_file_path,
		.disk_of = names_disk_of,
		.dev_name = names_dev_name,
		.request_based = names_request_based,
	};
}

int top_collect_report(struct top_ctx *c, struct top_snapshot *snap, bool stopped,
		       struct report *rep)
{
	int err;

	memset(rep, 0, sizeof(*rep));
	rep->snap = snap;
	rep->stopped = stopped;
	err = top_group_procs(c->o, &c->names, rep);
	if (!err && c->o->by != BY_PROCESS)
		err = top_group_by(c->o, &c->names, rep);
	if (!err)
		err = top_compute_coverage(c->o, &c->names, &c->ds_start, &c->ds_end, rep);
	if (err)
		return fail(err, "cannot build the report: %s", strerror(-err));
	return 0;
}

int top_collect_open(const struct top_opts *o, const struct top_sink *sink, struct top_ctx **out)
{
	struct top_ctx *c = calloc(1, sizeof(*c));
	int err;

	*out = c;
	if (!c)
		return fail(-ENOMEM, "out of memory");
	c->o = o;
	if (sink)
		c->sink = *sink;
	top_names_init(c, &c->names);
	ds_snapshot_init(&c->ds_start);
	ds_snapshot_init(&c->ds_end);
	err = top_setup(c);
	if (err)
		return err;
	/* Tracing runs: the first window starts here. */
	err = ds_read("/proc/diskstats", &c->ds_start);
	if (err)
		return fail(err, "cannot read /proc/diskstats: %s", strerror(-err));
	c->window_start_ns = now_ns(CLOCK_MONOTONIC);
	return 0;
}

int top_collect_stalls(struct top_ctx *c, bool on)
{
	int err;

	if (!c->o->stall_ns || !c->o->stalls_on_demand || on == !!c->stall_link)
		return 0;
	/* Not loaded: the plan found no way to attach it, and said so at start-up. */
	if (bpf_program__fd(c->skel->progs.top_sched_switch) < 0)
		return 0;
	if (!on) {
		bpf_link__destroy(c->stall_link);
		c->stall_link = NULL;
		return 0;
	}
	c->skel->bss->stalls_since = now_ns(CLOCK_MONOTONIC);
	c->stall_link = bpf_program__attach(c->skel->progs.top_sched_switch);
	if (!c->stall_link) {
		err = -errno;
		return fail(err, "cannot attach the stall program (sched_switch): %s",
			    strerror(-err));
	}
	return 0;
}

int top_collect_poll(struct top_ctx *c, int timeout_ms)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (now >= c->next_housekeep_ns) {
		top_collect_housekeep(c);
		c->next_housekeep_ns = now + NSEC_PER_SEC;
	}
	return bpfcmd_poll(&c->cmd, timeout_ms);
}

/* The previous snapshot's stalls are its own no more; its window ends this one's start. */
static void next_window(struct top_ctx *c)
{
	struct ds_snapshot t = c->ds_start;

	if (c->stalls_taken) {
		c->nr_stalls = 0;
		c->stalls_dropped = 0;
		c->stalls_taken = false;
	}
	if (!c->reads)
		return;
	c->ds_start = c->ds_end;
	c->ds_end = t;
}

int top_collect_read(struct top_ctx *c, struct top_snapshot *snap)
{
	bool deltas = c->o->interval_ns;
	uint32_t gen = c->gen, slot = gen & 1;
	struct row *cur = NULL;
	struct wbrow *wb_cum = NULL;
	struct disk_counts_row *fl_cum = NULL;
	size_t nr = 0, nr_fl = 0;
	uint64_t read_ns;
	int err;

	memset(snap, 0, sizeof(*snap));
	next_window(c);
	cgroup_map_round(c->cmd.cgmap);
	err = ds_read("/proc/diskstats", &c->ds_end);
	if (err)
		return fail(err, "cannot read /proc/diskstats: %s", strerror(-err));
	/* Requests issued before this may be in its numbers (read_open()). */
	c->ds_end_ns = now_ns(CLOCK_MONOTONIC);
	/*
	 * The window ends here, whenever the previous report finished printing (output
	 * to a pipe nobody reads can block it for long): the numbers cover this span.
	 */
	read_ns = now_ns(CLOCK_MONOTONIC);
	snap->timestamp = now_ns(CLOCK_REALTIME) / 1e9;
	snap->deltas = deltas;
	/* New samples go to the other max slot while this interval's is read. */
	if (deltas)
		c->skel->bss->max_gen = ++c->gen;
	fspath_cache_round(c->fspaths);
	procinfo_round(c->procinfo);
	err = read_stats(c, slot, gen, &cur, &nr);
	if (!err)
		err = read_wb(c, &snap->wb, &snap->nr_wb);
	if (!err)
		err = read_disk_counts(c, &fl_cum, &nr_fl, &snap->flushes);
	if (!err)
		err = read_drops(c, snap->drops);
	if (!err)
		err = read_open(c, c->ds_end_ns, &snap->open, &snap->nr_open);
	if (err) {
		err = fail(err, "cannot read the BPF maps: %s", strerror(-err));
		goto cleanup;
	}
	snap->seconds = (read_ns - c->window_start_ns) / 1e9;
	snap->nr_rows = nr;
	snap->nr_flushes = nr_fl;
	if (deltas) {
		err = rows_delta(c, cur, nr, &snap->rows);
		if (err)
			goto cleanup;
		wb_cum = malloc((snap->nr_wb ? snap->nr_wb : 1) * sizeof(*wb_cum));
		if (!wb_cum) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (snap->nr_wb) /* snap->wb is NULL without any */
			memcpy(wb_cum, snap->wb, snap->nr_wb * sizeof(*wb_cum));
		wb_delta(c, snap->wb, snap->nr_wb);
		counters_since(snap->drops, c->prev_drops, TOP_DROP_NR);
		prune_idle(c, cur, snap->rows, nr);
		/* The totals of this read are what the next one's deltas start from. */
		free(c->prev);
		c->prev = cur;
		c->nr_prev = nr;
		cur = NULL;
		free(c->prev_wb);
		c->prev_wb = wb_cum;
		c->nr_prev_wb = snap->nr_wb;
		wb_cum = NULL;
		free(c->prev_fl);
		c->prev_fl = fl_cum;
		c->nr_prev_fl = nr_fl;
		fl_cum = NULL;
	} else {
		snap->rows = cur;
		cur = NULL;
	}
	snap->stalls = c->stalls;
	snap->nr_stalls = c->nr_stalls;
	snap->stalls_dropped = c->stalls_dropped;
	c->stalls_taken = true;
	/* This window's end is the next one's start. */
	c->window_start_ns = read_ns;
	c->reads++;
cleanup:
	free(cur);
	free(wb_cum);
	free(fl_cum);
	if (err)
		top_snapshot_free(snap);
	return err;
}

void top_snapshot_free(struct top_snapshot *snap)
{
	free(snap->rows);
	free(snap->wb);
	free(snap->flushes);
	free(snap->open);
	memset(snap, 0, sizeof(*snap));
}

void top_collect_close(struct top_ctx *c)
{
	if (!c)
		return;
	bpf_link__destroy(c->stall_link);
	top_teardown(c);
	free(c);
}
