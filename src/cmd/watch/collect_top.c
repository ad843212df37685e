// SPDX-License-Identifier: GPL-2.0
/*
 * iospan watch's first BPF collector: top's per-thread and per-file attribution
 * (src/cmd/top), read once per sample. Each sample keeps the busiest processes, threads
 * and files of the window since the previous one (at most TOPC_MAX_ROWS of each, so
 * memory stays flat: a database's flush thread is told from its compaction thread); the last --pre
 * seconds of them are kept in memory and written into the processes and files tables while an
 * incident is open. Writeback is credited to the process that dirtied the pages, as top does. With
 * --stall-threshold, top's I/O stalls (a thread's iowait sleep over it, with the kernel stack it
 * slept in) go into the stalls table the same way. At --detail block (the default), top's
 * completion program also sends each request slower than --capture-threshold (or --slow-request, if
 * lower): its owner as the rows credit it, its file, its queue and device time. Before the rules
 * are checked, each sample reads those sent since the previous one (the slowest on each watched
 * disk is the slow-request rule's value); they are kept as trace's collector keeps its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "args.h"
#include "collector.h"
#include "disks.h"
#include "drvstatus.h"
#include "fspath.h"
#include "common_abi.h"
#include "json.h"
#include "ksyms.h"
#include "procinfo.h"
#include "rbuf.h"
#include "watch.h"
#include "collect/top.h"
#include "export/metrics.h"

#define TOPC_MAX_ROWS 20

struct topc_proc {
	uint32_t pid;
	char comm[IOSPAN_COMM_LEN];
	char *cmdline, *cgroup, *container;
	char disk[DISK_NAME_LEN];
	struct row sum;
	uint64_t writeback_bytes;
};

/* A thread, named by itself, of process pid. */
struct topc_thread {
	uint32_t pid, tid;
	char comm[IOSPAN_COMM_LEN];
	char disk[DISK_NAME_LEN];
	struct row sum;
	uint64_t writeback_bytes;
};

struct topc_file {
	uint32_t pid;
	char disk[DISK_NAME_LEN];
	unsigned int major, minor;
	uint64_t ino;
	uint32_t gen;
	char *path;
	struct row r;
};

/* A thread's iowait sleeps at one kernel stack in a sample's window. */
struct topc_stall {
	uint32_t pid, tid;
	char comm[IOSPAN_COMM_LEN];
	uint64_t max_ns, count;
	char *stack; /* JSON array of "function+0xoff/[module]" frames, innermost first */
};

/* A watched disk's histograms of one op in a sample's window (deltas of top's). */
struct topc_hist {
	char disk[DISK_NAME_LEN];
	enum top_dh_op op;
	struct top_dhist h;
};

/* The busiest processes and files of one sample's window, and its longest stalls. */
struct topc_sample {
	double time; /* the iostat sample's, so rows line up with the samples table */
	struct topc_proc procs[TOPC_MAX_ROWS];
	struct topc_thread threads[TOPC_MAX_ROWS];
	struct topc_file files[TOPC_MAX_ROWS];
	struct topc_stall stalls[TOPC_MAX_ROWS];
	unsigned int nr_procs, nr_threads, nr_files, nr_stalls;
	uint64_t stalls_dropped;      /* past TOPC_MAX_ROWS, or top's own table full */
	struct coll_slow_sample slow; /* the slow requests, at block detail */
	uint64_t drops[TOP_DROP_NR];  /* top's counters in the window (top_counters) */
	struct topc_hist *hists;      /* latency and size histograms, per disk and op */
	unsigned int nr_hists;
};

struct topc {
	struct top_opts o;
	struct coll_devs devs;
	struct top_ctx *top;
	struct coll_ring ring; /* of struct topc_sample */
	/* Slow requests (block detail): those read since the last sample. */
	struct coll_slow_sample pending;
	struct io_sample *cur; /* the sample being observed */
	double slowest_ns[WATCH_MAX_DISKS];
	bool capturing; /* an incident is open: the larger cap */
	bool slow_fresh; /* the newest sample's slow requests were not handed out yet */
	int64_t mono_to_real;
	uint64_t prev_lost;
	uint64_t drops[TOP_DROP_NR]; /* top's counters since it opened */
	/* top's histograms as last read (since it opened): the next sample's base. */
	struct top_disk_hist *cum; /* NULL when there are none yet */
	size_t nr_cum;
	/* The disks' driver counters as last read (since it opened), and whether any hook
	 * of a driver attached (else the driver-errors rule has no value). */
	struct disk_counts_row *drv_cum;
	size_t nr_drv_cum;
	bool have_drv_cum, drv_hooked;
	bool have_cum; /* read once at least: the endpoint's histograms are known */
	/* With --listen: what each cgroup did on each disk in the last sample. */
	struct metrics_cgroup_io *cg;
	size_t nr_cg, cap_cg;
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void sample_clear(void *rec)
{
	struct topc_sample *s = rec;
	unsigned int i;

	free(s->hists);
	s->hists = NULL;
	s->nr_hists = 0;
	for (i = 0; i < s->nr_procs; i++) {
		free(s->procs[i].cmdline);
		free(s->procs[i].cgroup);
		free(s->procs[i].container);
	}
	for (i = 0; i < s->nr_files; i++)
		free(s->files[i].path);
	for (i = 0; i < s->nr_stalls; i++)
		free(s->stalls[i].stack);
	coll_slow_clear(&s->slow);
	memset(s, 0, sizeof(*s));
}

static const char *block_op_name(const struct top_slow_rq *e)
{
	switch (e->cmd_flags & 0xff) { /* REQ_OP_MASK: REQ_OP_READ 0, REQ_OP_WRITE 1 */
	case 0:
		return "read";
	case 1:
		return e->flags & TOP_F_WRITEBACK ? "writeback" : "write";
	default:
		return "other";
	}
}

struct block_stages_arg {
	const struct top_slow_rq *e;
	const struct coll_slow_req *q;
};

static void fill_block_stages(struct jw *jw, const void *arg)
{
	const struct block_stages_arg *a = arg;
	const struct top_slow_rq *e = a->e;

	jw_start_object(jw);
	jw_kv_string(jw, "detail", "block");
	jw_kv_float(jw, "q2c", e->q2c_ns / 1e3, 3);
	/* Without the time (d2c 0), the request is not cut in two. */
	if (e->d2c_ns && e->d2c_ns <= e->q2c_ns) {
		jw_kv_float(jw, "q2d", (e->q2c_ns - e->d2c_ns) / 1e3, 3);
		jw_kv_float(jw, "d2c", e->d2c_ns / 1e3, 3);
	}
	jw_kv_bool(jw, "direct", e->flags & TOP_F_DIRECT);
	coll_json_parts(jw, a->q);
	jw_end_object(jw);
}

/* The stages that add up to q2c: queue (q2d) and device (d2c), where both are known. */
static void block_stages(struct coll_slow_req *q, const struct top_slow_rq *e)
{
	if (e->d2c_ns && e->d2c_ns <= e->q2c_ns) {
		q->stage[0].name = "q2d";
		q->stage[0].ns = e->q2c_ns - e->d2c_ns;
		q->stage[1].name = "d2c";
		q->stage[1].ns = e->d2c_ns;
		q->nr_stages = 2;
	} else {
		q->stage[0].name = "q2c";
		q->stage[0].ns = e->q2c_ns;
		q->nr_stages = 1;
	}
}

/* top's completion program sends each slow request here, while a sample is observed. */
static void on_slow_rq(void *arg, const struct top_slow_rq *e)
{
	struct topc *t = arg;
	struct coll_slow_req *q;
	struct top_proc info;
	int disk;

	if (!t->cur)
		return;
	disk = coll_devs_disk(&t->devs, e->bdev);
	if (disk < 0)
		return; /* an incident is about the watched disks */
	if (e->q2c_ns > t->slowest_ns[disk])
		t->slowest_ns[disk] = e->q2c_ns;
	if (e->q2c_ns < t->o.slow_rq_ns)
		return;
	q = coll_slow_slot(&t->pending, t->capturing, e->q2c_ns);
	if (!q)
		return;
	q->time = (int64_t)(e->end_ns - e->q2c_ns + t->mono_to_real) / 1e9;
	q->owner_known = e->pid != TOP_PID_NONE;
	if (q->owner_known) {
		top_proc_info(t->top, e->pid, &info);
		q->pid = top_proc_tgid(e->pid, &info);
		q->tid = t->o.threads ? e->pid : 0;
		snprintf(q->comm, sizeof(q->comm), "%s", info.comm);
	}
	snprintf(q->disk, sizeof(q->disk), "%s", t->cur->disks[disk].dev.name);
	q->op = block_op_name(e);
	q->offset = (int64_t)(e->sector * 512);
	q->bytes = e->bytes;
	q->total_ns = e->q2c_ns;
	block_stages(q, e);
	q->stages = coll_json(fill_block_stages, &(struct block_stages_arg){.e = e, .q = q});
	if (q->owner_known) {
		struct cg_desc d;

		top_describe_cgroup(t->top, info.cgid, &d);
		q->cgroup = dup_or_null(d.path);
		if (d.has_ct)
			memcpy(q->container, d.ct.id, sizeof(q->container));
	}
	if (!top_ino_special(e->ino)) {
		q->fs_dev = e->dev;
		q->ino = e->ino;
		q->gen = e->gen;
	}
}

/* Names the files of the slow requests read since the last sample: their rows in @snap. */
static void name_slow_files(struct topc *t, const struct top_snapshot *snap)
{
	struct coll_slow_req *q;
	const char *path;
	unsigned int i;
	size_t k;

	for (i = 0; i < t->pending.nr; i++) {
		q = &t->pending.reqs[i];
		if (!q->ino || q->path)
			continue;
		for (k = 0; k < snap->nr_rows; k++) {
			if (snap->rows[k].key.ino != q->ino || snap->rows[k].key.dev != q->fs_dev ||
			    snap->rows[k].key.gen != q->gen)
				continue;
			path = top_file_path(t->top, &snap->rows[k]);
			q->path = path ? strdup(path) : NULL;
			break;
		}
	}
}

static int topc_open(const struct watch_opts *wo, void **priv)
{
	struct topc *t = calloc(1, sizeof(*t));
	struct top_sink sink = {};
	int ret;

	*priv = t;
	if (!t)
		return -ENOMEM;
	coll_ring_init(&t->ring, sizeof(struct topc_sample), sample_clear);
	top_opts_default(&t->o);
	/* Deltas: each read is the window since the previous sample. */
	t->o.interval_ns = NSEC_PER_SEC;
	/* Rows per thread: processes are their sums (rows_by_process()). */
	t->o.threads = true;
	t->o.syscalls = watch_syscall_attach(wo);
	t->o.no_syscalls = !watch_top_follows_syscalls(wo);
	t->o.stall_ns = wo->stall_threshold_ns;
	t->o.filter = wo->filter; /* the target, if any: rows of its I/O only */
	t->o.stalls_on_demand = !wo->stalls_always;
	/* The stored histograms (heatmaps of the report), and the metrics'. */
	t->o.disk_hists = true;
	if (!wo->full_detail) {
		t->o.slow_rq_ns = watch_slow_keep_ns(wo);
		sink.slow_rq = on_slow_rq;
		sink.arg = t;
	}
	t->mono_to_real = mono_to_real_ns();
	ret = top_collect_open(&t->o, &sink, &t->top);
	if (ret) {
		top_collect_close(t->top);
		free(t);
		*priv = NULL;
		return ret;
	}
	for (int i = 0; i < t->top->cmd.nr_hooks; i++)
		if (t->top->cmd.hooks[i].module && t->top->cmd.hooks[i].chosen >= 0)
			t->drv_hooked = true;
	/* Symbols for the stall stacks, read in a thread (bpfcmd_start() does it for top). */
	if (t->top->cmd.want_ksyms && !t->top->cmd.ksyms)
		ksyms_load_async(NULL, &t->top->cmd.ksyms);
	return 0;
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

/* Sorted rows with one key each: those with the same key are summed into the first. */
static size_t merge_rows(struct row *v, size_t n)
{
	size_t i, k = 0;

	qsort(v, n, sizeof(*v), top_row_cmp_key);
	for (i = 0; i < n; i++) {
		if (k && !top_key_cmp(&v[k - 1].key, &v[i].key)) {
			top_row_add(&v[k - 1], &v[i]);
			if (v[i].bdev)
				v[k - 1].bdev = v[i].bdev;
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

static size_t merge_wb(struct wbrow *v, size_t n)
{
	size_t i, k = 0;

	qsort(v, n, sizeof(*v), top_wb_cmp_key);
	for (i = 0; i < n; i++) {
		if (k && !top_wb_cmp_key(&v[k - 1], &v[i])) {
			v[k - 1].bytes += v[i].bytes;
			v[k - 1].nr += v[i].nr;
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

/* The process of owner (thread) @tid. */
static uint32_t tgid_of(struct top_ctx *c, uint32_t tid)
{
	struct top_proc info;

	if (tid == TOP_PID_NONE)
		return tid;
	top_proc_info(c, tid, &info);
	return top_proc_tgid(tid, &info);
}

/* @in's rows and writeback rows, keyed by thread, as their processes' in @out. */
static int rows_by_process(struct top_ctx *c, const struct top_snapshot *in,
			   struct top_snapshot *out)
{
	size_t i;

	out->rows = malloc((in->nr_rows ? in->nr_rows : 1) * sizeof(*out->rows));
	out->wb = malloc((in->nr_wb ? in->nr_wb : 1) * sizeof(*out->wb));
	if (!out->rows || !out->wb)
		return -ENOMEM;
	memcpy(out->rows, in->rows, in->nr_rows * sizeof(*out->rows));
	memcpy(out->wb, in->wb, in->nr_wb * sizeof(*out->wb));
	for (i = 0; i < in->nr_rows; i++)
		out->rows[i].key.pid = tgid_of(c, out->rows[i].key.pid);
	for (i = 0; i < in->nr_wb; i++)
		out->wb[i].key.pid = tgid_of(c, out->wb[i].key.pid);
	out->nr_rows = merge_rows(out->rows, in->nr_rows);
	out->nr_wb = merge_wb(out->wb, in->nr_wb);
	return 0;
}

/* The busiest threads of @rep (grouped by thread) into @out. */
static void take_threads(struct top_ctx *c, const struct report *rep, struct topc_sample *out)
{
	size_t i;

	for (i = 0; i < rep->nr_procs && out->nr_threads < TOPC_MAX_ROWS; i++) {
		const struct proc_agg *p = &rep->procs[i];
		struct topc_thread *q = &out->threads[out->nr_threads];

		if (!p->sum.disk_read && !p->sum.disk_write && !p->sum.fs_read &&
		    !p->sum.fs_write && !p->writeback_bytes)
			continue;
		out->nr_threads++;
		q->tid = p->pid;
		q->pid = top_proc_tgid(p->pid, &p->info);
		snprintf(q->comm, sizeof(q->comm), "%s", p->info.comm);
		if (p->nr_rows)
			top_row_disk_name(c, p->files[0], q->disk, sizeof(q->disk));
		q->sum = p->sum;
		q->writeback_bytes = p->writeback_bytes;
	}
}

/*
 * What a process's own record does not say (its main thread never did I/O, and it has
 * exited: no /proc to ask): its cgroup, and a name, from one of its threads in @threads.
 */
static void fill_proc_info(struct proc_agg *p, const struct report *threads)
{
	size_t i;

	if (p->info.cgid)
		return;
	for (i = 0; i < threads->nr_procs; i++) {
		const struct proc_agg *th = &threads->procs[i];

		if (top_proc_tgid(th->pid, &th->info) != p->pid)
			continue;
		p->info.cgid = th->info.cgid;
		if (!p->info.comm[0] || !strcmp(p->info.comm, "?"))
			memcpy(p->info.comm, th->info.comm, sizeof(p->info.comm));
		return;
	}
}

/* The place of cgroup @d (@cgid) on disk @disk in the sample's changes; NULL: no memory. */
static struct metrics_cgroup_io *cg_delta(struct topc *t, uint64_t cgid, const struct cg_desc *d,
					  const char *disk)
{
	struct metrics_cgroup_io *e;
	size_t i;

	/* Every cgroup whose path is not known is one: "unknown". */
	if (!d->path)
		cgid = METRICS_CGID_UNKNOWN;
	for (i = 0; i < t->nr_cg; i++)
		if (t->cg[i].cgid == cgid && !strcmp(t->cg[i].disk, disk))
			return &t->cg[i];
	if (t->nr_cg == t->cap_cg) {
		e = realloc(t->cg, (t->cap_cg ? 2 * t->cap_cg : 16) * sizeof(*e));
		if (!e)
			return NULL;
		t->cg = e;
		t->cap_cg = t->cap_cg ? 2 * t->cap_cg : 16;
	}
	e = &t->cg[t->nr_cg++];
	memset(e, 0, sizeof(*e));
	e->cgid = cgid;
	snprintf(e->cgroup, sizeof(e->cgroup), "%s", d->path ? d->path : "unknown");
	if (d->has_ct)
		snprintf(e->container, sizeof(e->container), "%s", d->ct.id);
	snprintf(e->disk, sizeof(e->disk), "%s", disk);
	return e;
}

static uint64_t sub_or_0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* A row's bytes, requests and their time on its cgroup's place (flush rows: flushes). */
static void cg_add_row(struct metrics_cgroup_io *e, const struct row *r)
{
	if (top_row_is_flush(r)) {
		e->requests[MCG_FLUSH] += r->nr_q2c;
		e->request_ns[MCG_FLUSH] += r->q2c_sum;
		return;
	}
	e->disk_bytes[MCG_READ] += r->disk_read;
	e->disk_bytes[MCG_WRITE] += r->disk_write;
	e->fs_bytes[MCG_READ] += r->fs_read;
	e->fs_bytes[MCG_WRITE] += r->fs_write;
	/* Deltas are taken field by field: a row made anew can show more writes than all. */
	e->requests[MCG_READ] += sub_or_0(r->nr_q2c, r->nr_q2c_write);
	e->requests[MCG_WRITE] += r->nr_q2c_write;
	e->request_ns[MCG_READ] += sub_or_0(r->q2c_sum, r->q2c_write_sum);
	e->request_ns[MCG_WRITE] += r->q2c_write_sum;
}

/*
 * What each cgroup did on each watched disk in the sample (@rep: @threads grouped by
 * process), for the metrics endpoint: its processes' rows, writeback credited to them.
 */
static int take_cgroups(struct topc *t, struct report *rep, const struct report *threads)
{
	struct top_ctx *c = t->top;
	struct metrics_cgroup_io *e;
	char disk[DISK_NAME_LEN];
	struct cg_desc d;
	size_t i, j, k;

	t->nr_cg = 0;
	for (i = 0; i < rep->nr_procs; i++) {
		struct proc_agg *p = &rep->procs[i];
		struct row **rows[2] = {p->files, p->flushes};
		size_t nr[2] = {p->nr_rows, p->nr_flush_rows};

		fill_proc_info(p, threads);
		top_describe_cgroup(c, p->info.cgid, &d);
		for (k = 0; k < 2; k++)
			for (j = 0; j < nr[k]; j++) {
				if (!top_row_active(rows[k][j]))
					continue; /* nothing in this sample */
				top_row_disk_name(c, rows[k][j], disk, sizeof(disk));
				e = cg_delta(t, p->info.cgid, &d, disk);
				if (!e)
					return -ENOMEM;
				cg_add_row(e, rows[k][j]);
			}
	}
	for (i = 0; i < rep->snap->nr_wb; i++) {
		const struct wbrow *w = &rep->snap->wb[i];
		uint32_t dev = row_bdev(c, w->key.dev, 0);
		uint64_t cgid = 0;

		if (!w->bytes)
			continue;
		for (j = 0; j < rep->nr_procs; j++)
			if (rep->procs[j].pid == w->key.pid)
				cgid = rep->procs[j].info.cgid;
		top_describe_cgroup(c, cgid, &d);
		disk_name_of(KDEV_MAJOR(dev), KDEV_MINOR(dev), disk, sizeof(disk));
		e = cg_delta(t, cgid, &d, disk);
		if (!e)
			return -ENOMEM;
		e->writeback_bytes += w->bytes;
	}
	return 0;
}

/* The busiest processes, threads and files of @snap on the watched disks into @out. */
static int take_sample(struct topc *t, const struct io_sample *ws,
		       const struct top_snapshot *snap, struct topc_sample *out)
{
	struct top_ctx *c = t->top;
	struct top_snapshot by_thread = {0}, by_process = {0};
	struct report threads = {.snap = &by_thread}, rep = {.snap = &by_process};
	struct row **files = NULL;
	size_t i, nr_files = 0;
	int ret = -ENOMEM;

	/* Only what went to the watched disks: an incident is about them. */
	coll_devs_reset(&t->devs, ws);
	by_thread.rows = malloc((snap->nr_rows ? snap->nr_rows : 1) * sizeof(*by_thread.rows));
	by_thread.wb = malloc((snap->nr_wb ? snap->nr_wb : 1) * sizeof(*by_thread.wb));
	if (!by_thread.rows || !by_thread.wb)
		goto cleanup;
	for (i = 0; i < snap->nr_rows; i++) {
		const struct row *r = &snap->rows[i];
		/* As top_row_disk_name(): the kinds of rows name their device in the key. */
		uint32_t bdev = top_ino_special(r->key.ino) ? 0 : r->bdev;

		if (coll_devs_disk(&t->devs, row_bdev(c, r->key.dev, bdev)) >= 0)
			by_thread.rows[by_thread.nr_rows++] = *r;
	}
	for (i = 0; i < snap->nr_wb; i++)
		if (coll_devs_disk(&t->devs, row_bdev(c, snap->wb[i].key.dev, 0)) >= 0)
			by_thread.wb[by_thread.nr_wb++] = snap->wb[i];
	ret = top_group_procs(c->o, &c->names, &threads);
	if (ret)
		goto cleanup;
	take_threads(c, &threads, out);
	ret = rows_by_process(c, &by_thread, &by_process) ?: top_group_procs(c->o, &c->names, &rep);
	if (!ret && t->o.disk_hists)
		ret = take_cgroups(t, &rep, &threads);
	if (ret)
		goto cleanup;
	for (i = 0; i < rep.nr_procs && out->nr_procs < TOPC_MAX_ROWS; i++) {
		struct proc_agg *p = &rep.procs[i];
		struct topc_proc *q = &out->procs[out->nr_procs];
		struct proc_ident id;
		struct cg_desc d;

		if (!p->sum.disk_read && !p->sum.disk_write && !p->sum.fs_read &&
		    !p->sum.fs_write && !p->writeback_bytes)
			continue;
		out->nr_procs++;
		fill_proc_info(p, &threads);
		q->pid = p->pid;
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
	files = calloc(by_process.nr_rows ? by_process.nr_rows : 1, sizeof(*files));
	if (!files) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < by_process.nr_rows; i++)
		if (!top_ino_special(by_process.rows[i].key.ino) &&
		    top_row_active(&by_process.rows[i]))
			files[nr_files++] = &by_process.rows[i];
	qsort_r(files, nr_files, sizeof(*files), top_row_ptr_cmp, (void *)&t->o.sort);
	for (i = 0; i < nr_files && out->nr_files < TOPC_MAX_ROWS; i++) {
		const struct row *r = files[i];
		struct topc_file *f = &out->files[out->nr_files++];

		f->pid = r->key.pid; /* a process's: rows_by_process() */
		top_row_disk_name(c, r, f->disk, sizeof(f->disk));
		f->major = KDEV_MAJOR(r->key.dev);
		f->minor = KDEV_MINOR(r->key.dev);
		f->ino = r->key.ino;
		f->gen = r->key.gen;
		f->path = dup_or_null(top_file_path(c, r));
		f->r = *r;
	}
cleanup:
	free(files);
	free(by_process.rows);
	free(by_process.wb);
	top_report_free(&rep);
	free(by_thread.rows);
	free(by_thread.wb);
	top_report_free(&threads);
	return ret;
}

/*
 * Binds a process's or thread's sums from column @col on: FS and disk bytes read and
 * written, writeback bytes, then q2c and d2c in microseconds (average, maximum).
 */
static void bind_sums(sqlite3_stmt *s, int col, const struct row *sum, uint64_t writeback)
{
	sqlite3_bind_int64(s, col, sum->fs_read);
	sqlite3_bind_int64(s, col + 1, sum->fs_write);
	sqlite3_bind_int64(s, col + 2, sum->disk_read);
	sqlite3_bind_int64(s, col + 3, sum->disk_write);
	sqlite3_bind_int64(s, col + 4, writeback);
	sqlite3_bind_double(s, col + 5, top_avg_us(sum->q2c_sum, sum->nr_q2c));
	sqlite3_bind_double(s, col + 6, sum->q2c_max / 1e3);
	sqlite3_bind_double(s, col + 7, top_avg_us(sum->d2c_sum, sum->nr_d2c));
	sqlite3_bind_double(s, col + 8, sum->d2c_max / 1e3);
}

static void fill_buckets(struct jw *jw, const void *arg)
{
	const uint64_t *v = arg;
	int n = (int)v[0], i;

	jw_start_array(jw);
	for (i = 0; i < n; i++)
		jw_uint(jw, v[i + 1]);
	jw_end_array(jw);
}

/*
 * One histogram row: @kind's counts (buckets as JSON, to the last one not empty), their
 * number and sum (µs for latencies, bytes for sizes).
 */
static int write_hist(sqlite3_stmt *s, int64_t id, double time, const char *phase,
		      const struct topc_hist *h, const char *kind, const __u64 *v, int nr,
		      double sum)
{
	static const char *const op_names[] = {"read", "write", "discard", "flush"};
	uint64_t buf[TOP_DH_LAT_SLOTS + 1], count = 0;
	char *json;
	int i, last = 0, ret;

	for (i = 0; i < nr; i++) {
		count += v[i];
		if (v[i])
			last = i + 1;
	}
	if (!count)
		return 0;
	buf[0] = last;
	for (i = 0; i < last; i++)
		buf[i + 1] = v[i];
	json = coll_json(fill_buckets, buf);
	if (!json)
		return -ENOMEM;
	coll_bind_key(s, id, time, phase);
	coll_bind_text(s, 4, h->disk);
	coll_bind_text(s, 5, op_names[h->op]);
	coll_bind_text(s, 6, kind);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)count);
	sqlite3_bind_double(s, 8, sum);
	coll_bind_text(s, 9, json);
	ret = coll_step_reset(s);
	free(json);
	return ret;
}

/* A sample's histograms: q2c and d2c (log2 ns buckets) and size (log2 bytes), per disk and op. */
static int write_hists(sqlite3 *db, int64_t id, const struct topc_sample *s, const char *phase)
{
	sqlite3_stmt *hs = NULL;
	unsigned int i;
	int ret = 0;

	if (!s->nr_hists)
		return 0;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO histograms (incident_id, time, phase, disk, op, kind,"
			       " count, sum, buckets) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
			       -1, &hs, NULL) != SQLITE_OK)
		return -EIO;
	for (i = 0; !ret && i < s->nr_hists; i++) {
		const struct topc_hist *h = &s->hists[i];

		ret = write_hist(hs, id, s->time, phase, h, "q2c", h->h.q2c, TOP_DH_LAT_SLOTS, h->h.q2c_sum / 1e3) ?:
			      write_hist(hs, id, s->time, phase, h, "d2c", h->h.d2c, TOP_DH_LAT_SLOTS, h->h.d2c_sum / 1e3) ?:
			      write_hist(hs, id, s->time, phase, h, "size", h->h.size,
					 TOP_DH_SIZE_SLOTS, h->h.bytes_sum);
	}
	sqlite3_finalize(hs);
	return ret;
}

/* One kept sample's rows into the incident's tables, in the open transaction. */
static int write_sample(void *priv, sqlite3 *db, int64_t id, const void *rec, const char *phase)
{
	const struct topc_sample *s = rec;
	sqlite3_stmt *ps = NULL, *ts = NULL, *fs = NULL, *ss = NULL;
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
			       "INSERT INTO threads (incident_id, time, phase, pid, tid, comm,"
			       " disk, fs_read_bytes, fs_write_bytes, disk_read_bytes,"
			       " disk_write_bytes, writeback_bytes, q2c_avg_us, q2c_max_us,"
			       " d2c_avg_us, d2c_max_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
			       " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
			       -1, &ts, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO files (incident_id, time, phase, pid, disk, dev,"
			       " inode, path, fs_read_bytes, fs_write_bytes, disk_read_bytes,"
			       " disk_write_bytes, direct, writeback, generation) VALUES (?1, ?2,"
			       " ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
			       -1, &fs, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(
		    db,
		    "INSERT INTO stalls (incident_id, time, phase, pid, tid, comm,"
		    " wait_us, count, stack) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
		    -1, &ss, NULL) != SQLITE_OK)
		goto cleanup;
	for (i = 0; i < s->nr_procs; i++) {
		const struct topc_proc *p = &s->procs[i];

		coll_bind_key(ps, id, s->time, phase);
		sqlite3_bind_int64(ps, 4, p->pid);
		coll_bind_text(ps, 5, p->comm);
		coll_bind_text(ps, 6, p->cmdline);
		coll_bind_text(ps, 7, p->cgroup);
		coll_bind_text(ps, 8, p->container);
		coll_bind_text(ps, 9, p->disk);
		bind_sums(ps, 10, &p->sum, p->writeback_bytes);
		if (coll_step_reset(ps))
			goto cleanup;
	}
	for (i = 0; i < s->nr_threads; i++) {
		const struct topc_thread *th = &s->threads[i];

		coll_bind_key(ts, id, s->time, phase);
		sqlite3_bind_int64(ts, 4, th->pid);
		sqlite3_bind_int64(ts, 5, th->tid);
		coll_bind_text(ts, 6, th->comm);
		coll_bind_text(ts, 7, th->disk);
		bind_sums(ts, 8, &th->sum, th->writeback_bytes);
		if (coll_step_reset(ts))
			goto cleanup;
	}
	for (i = 0; i < s->nr_files; i++) {
		const struct topc_file *f = &s->files[i];

		snprintf(dev, sizeof(dev), "%u:%u", f->major, f->minor);
		coll_bind_key(fs, id, s->time, phase);
		sqlite3_bind_int64(fs, 4, f->pid);
		coll_bind_text(fs, 5, f->disk);
		sqlite3_bind_text(fs, 6, dev, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(fs, 7, (sqlite3_int64)f->ino);
		coll_bind_text(fs, 8, f->path);
		sqlite3_bind_int64(fs, 9, f->r.fs_read);
		sqlite3_bind_int64(fs, 10, f->r.fs_write);
		sqlite3_bind_int64(fs, 11, f->r.disk_read);
		sqlite3_bind_int64(fs, 12, f->r.disk_write);
		sqlite3_bind_int(fs, 13, !!(f->r.flags & TOP_F_DIRECT));
		sqlite3_bind_int(fs, 14, !!(f->r.flags & TOP_F_WRITEBACK));
		sqlite3_bind_int64(fs, 15, f->gen);
		if (coll_step_reset(fs))
			goto cleanup;
	}
	for (i = 0; i < s->nr_stalls; i++) {
		const struct topc_stall *st = &s->stalls[i];

		coll_bind_key(ss, id, s->time, phase);
		sqlite3_bind_int64(ss, 4, st->pid);
		sqlite3_bind_int64(ss, 5, st->tid);
		coll_bind_text(ss, 6, st->comm);
		sqlite3_bind_double(ss, 7, st->max_ns / 1e3);
		sqlite3_bind_int64(ss, 8, (sqlite3_int64)st->count);
		coll_bind_text(ss, 9, st->stack);
		if (coll_step_reset(ss))
			goto cleanup;
	}
	ret = coll_write_dropped(db, id, s->time, phase, "stalls", s->stalls_dropped);
	/* What top's attribution lost or could not tell in the window, by its counters. */
	for (i = 0; !ret && i < TOP_DROP_NR; i++)
		ret = coll_write_dropped(db, id, s->time, phase, top_counters[i].name, s->drops[i]);
	if (!ret)
		ret = coll_slow_write(NULL, db, id, &s->slow, phase);
	if (!ret)
		ret = write_hists(db, id, s, phase);
cleanup:
	sqlite3_finalize(ps);
	sqlite3_finalize(ts);
	sqlite3_finalize(fs);
	sqlite3_finalize(ss);
	return ret;
}

struct stack_arg {
	const struct ksyms *ks;
	const struct stall_agg *a;
};

static void fill_stack(struct jw *jw, const void *arg)
{
	const struct stack_arg *sa = arg;
	char sym[256];
	int k;

	jw_start_array(jw);
	for (k = 0; k < sa->a->nr_ips; k++)
		jw_string(jw, ksyms_format(sa->ks, sa->a->ips[k], sym, sizeof(sym)));
	jw_end_array(jw);
}

/* The longest stalls of the window (top's, one per thread and stack) into @out. */
static int take_stalls(struct topc *t, const struct top_snapshot *snap, struct topc_sample *out)
{
	struct stall_agg *v = snap->stalls;
	struct stack_arg sa = { .ks = t->top->cmd.ksyms };
	size_t i;

	qsort(v, snap->nr_stalls, sizeof(*v), top_stall_cmp);
	out->stalls_dropped = snap->stalls_dropped;
	for (i = 0; i < snap->nr_stalls; i++) {
		struct topc_stall *st = &out->stalls[out->nr_stalls];

		if (out->nr_stalls == TOPC_MAX_ROWS) {
			out->stalls_dropped += snap->nr_stalls - i;
			break;
		}
		sa.a = &v[i];
		st->stack = coll_json(fill_stack, &sa);
		if (!st->stack)
			return -ENOMEM;
		out->nr_stalls++;
		st->pid = v[i].tgid;
		st->tid = v[i].tid;
		memcpy(st->comm, v[i].comm, sizeof(st->comm));
		st->max_ns = v[i].max_ns;
		st->count = v[i].count;
	}
	return 0;
}

static void dhist_sub(struct top_dhist *d, const struct top_dhist *cur, const struct top_dhist *was)
{
	int k;

	d->q2c_sum = cur->q2c_sum - was->q2c_sum;
	d->d2c_sum = cur->d2c_sum - was->d2c_sum;
	d->bytes_sum = cur->bytes_sum - was->bytes_sum;
	for (k = 0; k < TOP_DH_LAT_SLOTS; k++) {
		d->q2c[k] = cur->q2c[k] - was->q2c[k];
		d->d2c[k] = cur->d2c[k] - was->d2c[k];
	}
	for (k = 0; k < TOP_DH_SIZE_SLOTS; k++)
		d->size[k] = cur->size[k] - was->size[k];
}

/*
 * The window's histograms of the watched disks: top's (since it opened) less those of
 * the last read. A read that fails leaves the sample without them (said by the caller).
 */
static int take_hists(struct topc *t, const struct io_sample *ws, struct topc_sample *out)
{
	static const struct top_dhist zero;
	struct top_disk_hist *rows;
	size_t nr, i, j;
	int ret, disk;

	ret = top_collect_disk_hists(t->top, &rows, &nr);
	if (ret)
		return ret;
	out->hists = calloc(nr ? nr : 1, sizeof(*out->hists));
	if (!out->hists) {
		free(rows);
		return -ENOMEM;
	}
	coll_devs_reset(&t->devs, ws);
	for (i = 0; i < nr; i++) {
		const struct top_dhist *was = &zero;
		struct topc_hist *h = &out->hists[out->nr_hists];

		disk = coll_devs_disk(&t->devs, rows[i].dev);
		if (disk < 0 || rows[i].op >= TOP_DH_NR_OPS)
			continue;
		for (j = 0; j < t->nr_cum; j++)
			if (t->cum[j].dev == rows[i].dev && t->cum[j].op == rows[i].op)
				was = &t->cum[j].h;
		snprintf(h->disk, sizeof(h->disk), "%s", ws->disks[disk].dev.name);
		h->op = rows[i].op;
		dhist_sub(&h->h, &rows[i].h, was);
		out->nr_hists++;
	}
	free(t->cum);
	t->cum = rows;
	t->nr_cum = nr;
	t->have_cum = true;
	return 0;
}

static int topc_sample(void *priv, const struct watch_tick *tick)
{
	struct topc *t = priv;
	struct top_snapshot snap;
	struct topc_sample *s;
	struct rbuf_stats rs;
	int ret, stall_ret = 0, i;
	uint64_t lost;

	/*
	 * Stall events, and housekeeping (cgroup and process names while they live); with
	 * slow requests, observe() read them (what came since waits for the next sample).
	 */
	if (!t->o.slow_rq_ns)
		top_collect_poll(t->top, 0);
	/*
	 * Stalls on demand: timed from the sample that opens an incident to the one that
	 * closes it (failing to attach is said; the capture goes on without them).
	 */
	if (tick->opened)
		stall_ret = top_collect_stalls(t->top, true);
	else if (tick->closing)
		top_collect_stalls(t->top, false);
	ret = top_collect_read(t->top, &snap);
	if (ret)
		return ret;
	s = coll_ring_push(&t->ring);
	if (!s) {
		ret = -ENOMEM;
		goto cleanup;
	}
	s->time = tick->sample->epoch_s;
	for (i = 0; i < TOP_DROP_NR; i++) {
		uint64_t was = t->drops[i];

		t->drops[i] = snap.deltas ? t->drops[i] + snap.drops[i] : snap.drops[i];
		s->drops[i] = t->drops[i] - was;
	}
	ret = take_sample(t, tick->sample, &snap, s);
	if (!ret)
		ret = take_stalls(t, &snap, s);
	if (!ret)
		ret = take_hists(t, tick->sample, s);
	name_slow_files(t, &snap);
	s->slow = t->pending;
	s->slow.time = s->time;
	t->slow_fresh = true;
	memset(&t->pending, 0, sizeof(t->pending));
	if (t->o.slow_rq_ns && !rbuf_stats(t->top->cmd.rb, &rs)) {
		lost = rs.lost + rs.malformed;
		s->slow.lost = lost - t->prev_lost;
		t->prev_lost = lost;
	}
	/* From the next sample on, the cap of a capture (or no longer). */
	t->capturing = tick->incident_id && !tick->closing;
	coll_ring_trim(&t->ring, s->time, tick->pre_s);
	if (!ret)
		ret = coll_ring_write(&t->ring, tick, write_sample, t);
cleanup:
	top_snapshot_free(&snap);
	return ret ?: stall_ret;
}

static const struct disk_counts_row *counts_of(const struct disk_counts_row *v, size_t n,
					       uint32_t dev)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].dev == dev)
			return &v[i];
	return NULL;
}

/*
 * Each disk's driver counters in the sample: what changed since the last read. A failed
 * read leaves the sample without them (and the next one covers both).
 */
static void observe_drivers(struct topc *t, struct io_sample *s)
{
	const struct disk_counts_row *cur, *prev;
	struct disk_counts_row *rows;
	size_t nr;
	int i;

	if (top_collect_disk_counts(t->top, &rows, &nr))
		return;
	for (i = 0; i < s->nr; i++) {
		struct io_disk_sample *d = &s->disks[i];
		uint32_t dev = KDEV(d->dev.major, d->dev.minor);

		memset(&d->drv, 0, sizeof(d->drv));
		cur = counts_of(rows, nr, dev);
		prev = counts_of(t->drv_cum, t->nr_drv_cum, dev);
		if (cur)
			d->drv = cur->drv;
		if (cur && prev)
			drv_disk_stats_since(&d->drv, &prev->drv);
		/* The first read has no base: its counts are the collector's start-up's. */
		d->have_drv = t->have_drv_cum;
	}
	free(t->drv_cum);
	t->drv_cum = rows;
	t->nr_drv_cum = nr;
	t->have_drv_cum = true;
}

/*
 * Before the rules: the disks' driver counters, and the slow requests sent since the
 * last sample, the slowest per disk.
 */
static void topc_observe(void *priv, struct io_sample *s)
{
	struct topc *t = priv;
	int i;

	observe_drivers(t, s);
	if (!t->o.slow_rq_ns)
		return;
	t->cur = s;
	coll_devs_reset(&t->devs, s);
	for (i = 0; i < s->nr; i++)
		t->slowest_ns[i] = 0;
	/* Stall events too, and housekeeping; a failure is said, the sample goes on. */
	top_collect_poll(t->top, 0);
	for (i = 0; i < s->nr; i++)
		s->disks[i].slowest_ms = t->slowest_ns[i] / 1e6;
	t->cur = NULL;
}

static void topc_close(void *priv)
{
	struct topc *t = priv;

	if (!t)
		return;
	coll_slow_clear(&t->pending);
	coll_ring_free(&t->ring);
	free(t->cum);
	free(t->drv_cum);
	free(t->cg);
	top_collect_close(t->top);
	free(t);
}

/* The disks' driver counters since the collector opened, for the endpoint. */
static void export_drivers(struct topc *t, struct metrics *m)
{
	struct metrics_ddrv *v = calloc(t->nr_drv_cum ? t->nr_drv_cum : 1, sizeof(*v));
	size_t i;

	if (!v)
		return;
	for (i = 0; i < t->nr_drv_cum; i++) {
		v[i].major = KDEV_MAJOR(t->drv_cum[i].dev);
		v[i].minor = KDEV_MINOR(t->drv_cum[i].dev);
		v[i].s = t->drv_cum[i].drv;
	}
	metrics_note_disk_drivers(m, v, t->nr_drv_cum, t->drv_hooked);
	free(v);
}

static void topc_export(void *priv, struct metrics *m, struct metrics_collector *out)
{
	struct topc *t = priv;
	const struct top_disk_hist *rows = t->cum;
	struct metrics_dhist *h;
	size_t nr = t->nr_cum, i;
	int n = 0;

	metrics_collector_fill(out, "top", &t->top->cmd, top_counters, t->drops, TOP_DROP_NR);
	/*
	 * As the last sample read them (a failed read keeps the last the endpoint had). No
	 * disk with a request yet is still a reading: its zeros are series from the start.
	 */
	if (!t->have_cum)
		return;
	h = calloc(nr ? nr : 1, sizeof(*h));
	for (i = 0; h && i < nr; i++) {
		if (rows[i].op >= TOP_DH_NR_OPS)
			continue;
		h[n].major = rows[i].dev >> 20;
		h[n].minor = rows[i].dev & ((1U << 20) - 1);
		h[n].op = rows[i].op;
		h[n++].h = rows[i].h;
	}
	if (h)
		metrics_note_disk_hists(m, h, n);
	free(h);
	if (t->have_drv_cum)
		export_drivers(t, m);
	metrics_note_cgroups(m, t->cg, t->nr_cg);
	t->nr_cg = 0;
}

static const struct coll_slow_sample *topc_slow_requests(void *priv)
{
	struct topc *t = priv;
	const struct topc_sample *s;

	if (!t->slow_fresh || !t->ring.nr)
		return NULL;
	t->slow_fresh = false;
	s = coll_ring_at(&t->ring, t->ring.nr - 1);
	return &s->slow;
}

const struct watch_collector_ops watch_collector_top = {
	.name = "top",
	.open = topc_open,
	.observe = topc_observe,
	.sample = topc_sample,
	.export = topc_export,
	.slow_requests = topc_slow_requests,
	.close = topc_close,
};
