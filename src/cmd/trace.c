// SPDX-License-Identifier: GPL-2.0
/*
 * iospan trace: each request followed through the whole storage stack; the slow ones
 * logged with a stage breakdown and a timeline, all of them summarised per op.
 *
 * The BPF side (src/bpf/trace.bpf.c) correlates everything in the kernel and keeps
 * per-op stage histograms; only requests over the threshold arrive here, through a
 * ring buffer. This file parses options, sets up the filters and the attach plan,
 * renders slow requests (text, JSON Lines, Perfetto) and prints the periodic summary
 * and the exit accounts.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "iospan.h"
#include "args.h"
#include "bpfmap.h"
#include "cgroups.h"
#include "disks.h"
#include "diskstats.h"
#include "err.h"
#include "filters.h"
#include "fspath.h"
#include "procinfo.h"
#include "hist.h"
#include "iospan_types.h"
#include "json.h"
#include "ksyms.h"
#include "mapmem.h"
#include "ops.h"
#include "perfetto.h"
#include "printable.h"
#include "probe.h"
#include "units.h"
#include "trace.skel.h"
#include "trace_compat.skel.h"
#include "skel.h"

#define NSEC_PER_SEC ((uint64_t)1000000000)
/* Perfetto tracks for bios and async requests: per process, lanes that never overlap. */
#define MAX_LANES   256
#define LANE_BIOS   0x40000000U
#define LANE_AIO    0x50000000U
#define LANE_WB	    0x60000000U
#define LANE_OFFCPU 0x20000000U
/* Writeback requests older than this with bios still missing are given up. */
#define WB_SWEEP_NS (60 * NSEC_PER_SEC)
/* Ring buffer for slow requests: bounds, and defaults with and without -t 0. */
#define RB_MIN	       (1ULL << 20)
#define RB_MAX	       (1ULL << 30)
#define RB_DEFAULT     (16ULL << 20)
#define RB_DEFAULT_ALL (64ULL << 20)
/* Bytes of a typical record in the ring buffer: the header, one bio, its 8-byte header. */
#define RB_TYPICAL_REC (offsetof(struct trace_rec, bios) + sizeof(struct trace_bio) + 8)

struct trace_opts {
	uint64_t threshold_ns;
	uint64_t interval_ns;
	uint64_t duration_ns; /* 0: until Ctrl-C */
	uint32_t pid, tid;
	char comm[TOP_COMM_LEN];
	bool have_comm;
	char cgroup_dir[PATH_MAX];
	char cgroup_rel[PATH_MAX];
	bool have_cgroup;
	uint32_t file_dev, dir_dev; /* kernel dev_t */
	uint64_t file_ino, dir_ino;
	struct disk disk;
	bool have_disk;
	uint32_t ops;
	const char *perfetto_path;
	bool offcpu_periods; /* sched_switch: time each off-CPU period */
	bool delayacct;	     /* kernel.task_delayacct on: exact iowait from counters */
	uint64_t rb_bytes;   /* ring buffer size (a power of two) */
};

/* Perfetto lanes of one (pid, kind): the end of the last span on each. */
struct lanes {
	uint32_t pid, base;
	uint64_t end[MAX_LANES];
	int nr;
	struct lanes *next;
};

struct trace_ctx {
	struct trace_opts *o;
	struct trace_bpf *skel;
	struct ring_buffer *rb;
	struct attach_hook *hooks;
	int nr_hooks;
	int ncpus;
	struct fspath_cache *paths;
	struct procinfo *procinfo;
	struct cgroup_map *cgmap;
	struct jw *jw;
	struct perfetto *pf;
	struct lanes *lanes;
	uint64_t lanes_full;
	int64_t mono_to_real;	     /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	struct trace_op_hists *pcpu; /* one map value per CPU, for reading */
	struct trace_op_hists *prev; /* cumulative histograms at the previous summary */
	uint64_t received, printed, malformed;
	uint64_t wb_swept, in_flight;
	uint64_t last_summary;
	/* Counts at the previous summary: the output's rate and the drops per interval. */
	uint64_t prev_printed, prev_emitted, prev_dropped;
	uint64_t yield_at; /* the loop's next deadline, checked while reading records */
	unsigned int since_yield;
	bool draining; /* programs stopped emitting: read everything */
};

static const char *const cnt_names[TRACE_CNT_NR] = {
	[TRACE_CNT_STARTED] = "started",
	[TRACE_CNT_DONE] = "completed",
	[TRACE_CNT_EMITTED] = "emitted",
	[TRACE_CNT_RINGBUF_FULL] = "ringbuf_full",
	[TRACE_CNT_REQS_FULL] = "request_map_full",
	[TRACE_CNT_ABANDONED] = "abandoned",
	[TRACE_CNT_ASYNC_COLLIDED] = "async_slot_collisions",
	[TRACE_CNT_BIO_UNMATCHED] = "bios_unmatched",
	[TRACE_CNT_BIO_LATE] = "bios_after_request_end",
	[TRACE_CNT_BIOS_TRUNC] = "bios_not_recorded",
	[TRACE_CNT_EVENTS_TRUNC] = "events_not_recorded",
	[TRACE_CNT_CHAIN_TRUNC] = "truncated_bio_chains",
	[TRACE_CNT_FAULTS_CACHED] = "faults_without_io",
	[TRACE_CNT_WB_SWEPT] = "writeback_given_up",
	[TRACE_CNT_PATHS_FULL] = "paths_map_full",
	[TRACE_CNT_HOOK_MISSED] = "hook_runs_missed",
	[TRACE_CNT_UNSEEN_DONE] = "bio_completions_not_seen",
	[TRACE_CNT_END_INFERRED] = "async_ends_inferred",
};

/* Requests lost: counted in "lost" (the others are informational). */
static bool cnt_is_loss(int i)
{
	return i == TRACE_CNT_RINGBUF_FULL || i == TRACE_CNT_REQS_FULL ||
	       i == TRACE_CNT_ABANDONED || i == TRACE_CNT_ASYNC_COLLIDED ||
	       i == TRACE_CNT_BIO_UNMATCHED || i == TRACE_CNT_WB_SWEPT;
}

static const char trace_usage[] =
	"Usage: iospan trace [OPTIONS]\n"
	"\n"
	"Follows each I/O request through the storage stack: syscall, page cache, every\n"
	"bio and block request (blktrace Q/M/X/G/I/D/C), off-CPU and iowait time. Requests\n"
	"slower than the threshold are printed with their stage breakdown and a timeline;\n"
	"every interval a summary per op gives count, average, p50 and p99 of each stage.\n"
	"Requests: read, write, pread64, pwrite64, readv, writev, preadv, pwritev, preadv2,\n"
	"pwritev2, fsync, fdatasync, sync_file_range on files; page faults on file\n"
	"mappings; writeback by kernel threads (credited to the process that dirtied the\n"
	"pages); asynchronous direct I/O (libaio, io_uring) through iomap.\n"
	"\n"
	"Options:\n"
	"  -t, --threshold D     print requests slower than D (default 10ms; a bare number\n"
	"                        is ms; 0 prints every request)\n"
	"  -i, --interval S      seconds between summaries (default 5)\n"
	"      --duration S      stop after S seconds (default: at Ctrl-C)\n"
	"  -p, --pid PID         only this process\n"
	"      --tid TID         only this thread\n"
	"      --comm NAME       only threads with this name\n"
	"      --cgroup PATH     only this cgroup v2 and its children\n"
	"      --file PATH       only requests on this file\n"
	"      --dir PATH        only requests on files below this directory (same fs)\n"
	"  -d, --disk DISK       only files on this disk or partition (sda, /dev/loop0, 7:0)\n"
	"      --ops LIST        only these ops, comma separated: read, write, pread64,\n"
	"                        pwrite64, readv, writev, preadv, pwritev, preadv2,\n"
	"                        pwritev2, fsync, fdatasync, sync_file_range, fault,\n"
	"                        writeback, aio_read, aio_write; or pread, pwrite, aio,\n"
	"                        sync, reads, writes, all (default all)\n"
	"      --buffer-size N   ring buffer for slow requests while the output catches\n"
	"                        up (1M to 1G, rounded up to a power of two; a bare\n"
	"                        number is MiB; default 16M, 64M with -t 0). Requests\n"
	"                        that find it full are counted as ringbuf_full (lost)\n"
	"      --perfetto FILE   also write the slow requests as a Chrome Trace Event file\n"
	"                        (open it in ui.perfetto.dev)\n"
	"      --offcpu-periods  time each off-CPU period on sched_switch (timeline entries,\n"
	"                        I/O sleeps told from other sleeps, fault ends seen); by\n"
	"                        default off-CPU comes from the thread's scheduler\n"
	"                        counters, which costs far less on busy machines\n"
	"      --json            one JSON object per slow request and per summary\n"
	"  -v, --verbose         attach plan and libbpf messages on stderr\n"
	"  -h, --help            this help\n"
	"Durations are decimal numbers with a unit (ns, us, ms, s, m, h); --interval and\n"
	"--duration are at least 1ms, the threshold may be anything from 0.\n"
	"\n"
	"Stages (us): total = pre_block + throttle + q2q + q2g + g2i + i2d + d2c +\n"
	"post_block for a request with bios (throttle: bios blk-throttle held); see\n"
	"iospan-trace(8) ('man iospan-trace').\n"
	"\n"
	"Examples:\n"
	"  iospan trace -t 50ms                 requests slower than 50 ms, system wide\n"
	"  iospan trace -p 1234 --ops read,fsync -t 0 --duration 10\n"
	"  iospan trace --dir /var/lib/mysql --perfetto slow.json\n"
	"\n"
	"Exit codes: 0 ok, 1 runtime failure, 2 bad usage. Manual: iospan-trace(8).\n";

/* ------------------------------------------------------------------ options */

enum {
	OPT_TID = 0x2000,
	OPT_COMM,
	OPT_CGROUP,
	OPT_FILE,
	OPT_DIR,
	OPT_OPS,
	OPT_PERFETTO,
	OPT_DURATION,
	OPT_OFFCPU_PERIODS,
	OPT_BUFFER_SIZE,
};

static int trace_parse(int argc, char **argv, struct trace_opts *o)
{
	static const struct option long_opts[] = {
		{"threshold", required_argument, NULL, 't'},
		{"interval", required_argument, NULL, 'i'},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"pid", required_argument, NULL, 'p'},
		{"tid", required_argument, NULL, OPT_TID},
		{"comm", required_argument, NULL, OPT_COMM},
		{"cgroup", required_argument, NULL, OPT_CGROUP},
		{"file", required_argument, NULL, OPT_FILE},
		{"dir", required_argument, NULL, OPT_DIR},
		{"disk", required_argument, NULL, 'd'},
		{"ops", required_argument, NULL, OPT_OPS},
		{"perfetto", required_argument, NULL, OPT_PERFETTO},
		{"offcpu-periods", no_argument, NULL, OPT_OFFCPU_PERIODS},
		{"buffer-size", required_argument, NULL, OPT_BUFFER_SIZE},
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	bool have_pid = false, have_tid = false, have_file = false, have_dir = false;
	const char *bad;
	size_t bad_len;
	int opt, err;

	o->threshold_ns = 10 * 1000000ULL;
	o->interval_ns = 5 * NSEC_PER_SEC;
	o->ops = TRACE_OPS_ALL;
	o->delayacct = read_int_file("/proc/sys/kernel/task_delayacct") == 1;
	while ((opt = getopt_long(argc, argv, "t:i:p:d:" COMMON_SHORT_OPTS, long_opts, NULL)) !=
	       -1) {
		if (args_common_opt(opt))
			continue;
		switch (opt) {
		case OPT_HELP:
			fputs(trace_usage, stdout);
			return 1;
		case 't':
			err = args_threshold("--threshold", optarg, &o->threshold_ns);
			if (err)
				return err;
			break;
		case 'i':
			err = args_period("--interval", optarg, &o->interval_ns);
			if (err)
				return err;
			break;
		case OPT_DURATION:
			err = args_period("--duration", optarg, &o->duration_ns);
			if (err)
				return err;
			break;
		case 'p':
			err = args_once("-p/--pid", &have_pid) ?: args_task_id(optarg, "pid", &o->pid);
			if (err)
				return err;
			break;
		case OPT_TID:
			err = args_once("--tid", &have_tid) ?: args_task_id(optarg, "tid", &o->tid);
			if (err)
				return err;
			break;
		case OPT_COMM:
			err = args_once("--comm", &o->have_comm);
			if (err)
				return err;
			if (!*optarg || strlen(optarg) >= TOP_COMM_LEN)
				return fail_usage(
					"invalid --comm '%s': give a thread name of 1 to %d "
					"characters",
					optarg, TOP_COMM_LEN - 1);
			strcpy(o->comm, optarg);
			break;
		case OPT_CGROUP:
			err = args_cgroup(optarg, o->cgroup_dir, sizeof(o->cgroup_dir),
					  o->cgroup_rel, sizeof(o->cgroup_rel), &o->have_cgroup);
			if (err)
				return err;
			break;
		case OPT_FILE:
			err = args_once("--file", &have_file) ?:
				      args_fs_object("--file", optarg, false, &o->file_dev,
						      &o->file_ino);
			if (err)
				return err;
			break;
		case OPT_DIR:
			err = args_once("--dir", &have_dir) ?:
				      args_fs_object("--dir", optarg, true, &o->dir_dev,
						      &o->dir_ino);
			if (err)
				return err;
			break;
		case 'd':
			err = args_disk("trace", optarg, &o->disk, &o->have_disk);
			if (err)
				return err;
			break;
		case OPT_OPS:
			if (trace_ops_parse(optarg, &o->ops, &bad, &bad_len))
				return fail_usage(
					"invalid --ops item '%.*s': use read, write, pread64, "
					"pwrite64, readv, writev, preadv, pwritev, preadv2, "
					"pwritev2, fsync, fdatasync, sync_file_range, fault, "
					"writeback, aio_read, aio_write, aio, sync, reads, "
					"writes or all",
					(int)bad_len, bad);
			break;
		case OPT_OFFCPU_PERIODS:
			o->offcpu_periods = true;
			break;
		case OPT_BUFFER_SIZE:
			if (parse_size_bytes(optarg, 1ULL << 20, &o->rb_bytes) ||
			    o->rb_bytes < RB_MIN || o->rb_bytes > RB_MAX)
				return fail_usage("invalid --buffer-size '%s': give a size from 1M "
						  "to 1G (e.g. 64M; a bare number is MiB)",
						  optarg);
			break;
		case OPT_PERFETTO:
			if (!*optarg)
				return fail_usage("--perfetto needs a file name");
			o->perfetto_path = optarg;
			break;
		default:
			return args_bad_option("trace", argv);
		}
	}
	if (optind < argc)
		return fail_usage("unexpected argument '%s': iospan trace takes options only "
				  "(see 'iospan trace --help')",
				  argv[optind]);
	if (!o->rb_bytes)
		o->rb_bytes = o->threshold_ns ? RB_DEFAULT : RB_DEFAULT_ALL;
	/* The kernel wants a power of two. */
	while (o->rb_bytes & (o->rb_bytes - 1))
		o->rb_bytes += o->rb_bytes & -o->rb_bytes;
	return 0;
}

/* ------------------------------------------------------------------ formatting */

static double us(uint64_t ns)
{
	return ns / 1000.0;
}

static const char *fmt_dur(uint64_t ns, char *buf, size_t len)
{
	return fmt_ns(ns, buf, len);
}

static const char *dev_name(uint32_t dev, char *buf, size_t len)
{
	return disk_name_of(KDEV_MAJOR(dev), KDEV_MINOR(dev), buf, len);
}

static const char *cgroup_name(struct trace_ctx *c, uint64_t cgid)
{
	const char *p = c->cgmap && cgid ? cgroup_map_path(c->cgmap, cgid) : NULL;

	return p ? p : "?";
}

static int lookup_title(void *arg, uint32_t tgid, struct proc_title *t)
{
	struct trace_ctx *c = arg;

	return bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.titles), &tgid, t) ? -errno : 0;
}

/*
 * Who the request's process is: *name its title if it set one ("postgres:
 * checkpointer"), else its comm; *cgroup its cgroup v2 path, or its cgroup v1 blkio
 * group for a process in the v2 root (blk-throttle limits it there).
 */
static void rec_ident(struct trace_ctx *c, const struct trace_rec *r, struct proc_ident *id,
		      const char **name, const char **cgroup, char *buf, size_t len)
{
	procinfo_get(c->procinfo, r->pid, r->comm, id);
	*name = id->title && id->cmdline ? id->cmdline : r->comm[0] ? r->comm : "?";
	*cgroup = cgroup_name(c, r->cgid);
	if (id->blkio && (!strcmp(*cgroup, "/") || !strcmp(*cgroup, "?"))) {
		snprintf(buf, len, "blkio:%s", id->blkio);
		*cgroup = buf;
	}
}

/* Where a request's off-CPU accounts come from: JSON "offcpu_from". */
static const char *offcpu_source(const struct trace_ctx *c, const struct trace_rec *r)
{
	if (!trace_op_in_thread(r->op) || r->flags & TRACE_F_NO_OFFCPU)
		return "none"; /* not run by a thread of its own, or a fault */
	if (c->o->offcpu_periods)
		return "sched_switch";
	return c->o->delayacct ? "counters_delayacct" : "counters";
}

static int lookup_path(void *arg, const struct top_file_key *key, struct top_path *p)
{
	struct trace_ctx *c = arg;

	return bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.paths), key, p) ? -errno : 0;
}

/*
 * The user-visible path of the request's file as it was when the request ended, or
 * NULL if it was not captured (r->file: the capture's id).
 */
static const char *rec_path(struct trace_ctx *c, const struct trace_rec *r, char *buf, size_t len)
{
	char name[DISK_NAME_LEN];

	if (r->flags & TRACE_F_BLKDEV) {
		snprintf(buf, len, "/dev/%s", dev_name(r->dev, name, sizeof(name)));
		return buf;
	}
	return fspath_of_id(c->paths, r->dev, r->ino, r->file);
}

static const char *const ev_names[TRACE_EV_NR] = {
	[TRACE_EV_PC_LOOKUP] = "pagecache_lookup",
	[TRACE_EV_PC_ADD] = "pagecache_add",
	[TRACE_EV_RA_SYNC] = "readahead_sync",
	[TRACE_EV_RA_ASYNC] = "readahead_async",
	[TRACE_EV_OFFCPU] = "offcpu",
	[TRACE_EV_DIO] = "direct_io",
	[TRACE_EV_WB_DONE] = "writeback_submitted",
	[TRACE_EV_FAULT] = "fault",
};

static const char *ev_name(uint32_t type)
{
	return type < TRACE_EV_NR && ev_names[type] ? ev_names[type] : "?";
}

static const struct {
	uint16_t bit;
	const char *name;
} bio_flag_names[] = {
	{TRACE_BIO_MERGED, "merged"},	       {TRACE_BIO_SPLIT, "split"},
	{TRACE_BIO_REQUEUED, "requeued"},      {TRACE_BIO_ERROR, "error"},
	{TRACE_BIO_KTHREAD, "kthread"},	       {TRACE_BIO_FLUSH, "flush"},
	{TRACE_BIO_NO_ISSUE, "no_issue_time"}, {TRACE_BIO_PARTIAL, "partial"},
	{TRACE_BIO_THROTTLED, "throttled"},
};

static const struct {
	uint32_t bit;
	const char *name;
} rec_flag_names[] = {
	{TRACE_F_DIRECT, "direct"},
	{TRACE_F_BLKDEV, "blockdev"},
	{TRACE_F_LATE_BIOS, "bios_in_flight_at_end"},
	{TRACE_F_UNSEEN_DONE, "bio_completion_not_seen"},
	{TRACE_F_END_APPROX, "end_approximate"},
	{TRACE_F_KTHREAD_BIO, "kthread_resubmitted"},
	{TRACE_F_NO_OFFCPU, "offcpu_unknown"},
	{TRACE_F_IOWAIT_BLOCKED, "iowait_is_blocked_time"},
};

static char bio_dir(const struct trace_bio *b)
{
	if (b->flags & TRACE_BIO_FLUSH && !b->bytes)
		return 'F';
	return b->flags & TRACE_BIO_WRITE ? 'W' : 'R';
}

/* Bios not recorded in the record (past TRACE_MAX_BIOS). */
static uint32_t bios_missing(const struct trace_rec *r)
{
	return r->nr_done > r->nr_bios ? r->nr_done - r->nr_bios : 0;
}

/* One line of the timeline, sortable by time. */
struct tl_item {
	uint64_t ts;
	int order; /* ties: in the order they were added */
	char text[96];
};

static int tl_cmp(const void *a, const void *b)
{
	const struct tl_item *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->order - y->order;
}

#define TL_MAX (TRACE_MAX_EVENTS + TRACE_MAX_BIOS * 6 + 4)

static void tl_add(struct tl_item *v, int *n, uint64_t ts, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void tl_add(struct tl_item *v, int *n, uint64_t ts, const char *fmt, ...)
{
	va_list ap;

	if (*n >= TL_MAX)
		return;
	v[*n].ts = ts;
	v[*n].order = *n;
	va_start(ap, fmt);
	vsnprintf(v[*n].text, sizeof(v[*n].text), fmt, ap);
	va_end(ap);
	(*n)++;
}

static const char *start_label(uint32_t op)
{
	switch (op) {
	case TRACE_OP_FAULT:
		return "page fault";
	case TRACE_OP_WRITEBACK:
		return "writeback start";
	case TRACE_OP_AIO_READ:
	case TRACE_OP_AIO_WRITE:
		return "direct I/O submitted";
	default:
		return "syscall enter";
	}
}

static const char *end_label(uint32_t op)
{
	switch (op) {
	case TRACE_OP_FAULT:
		return "fault done";
	case TRACE_OP_WRITEBACK:
		return "last bio completed";
	case TRACE_OP_AIO_READ:
	case TRACE_OP_AIO_WRITE:
		return "direct I/O completed";
	default:
		return "syscall exit";
	}
}

static int build_timeline(const struct trace_rec *r, struct tl_item *v)
{
	char dn[DISK_NAME_LEN], b1[UNITS_BUF];
	unsigned int i;
	int n = 0;

	tl_add(v, &n, r->start, "%s %s", start_label(r->op), trace_op_name(r->op));
	for (i = 0; i < r->nr_events && i < TRACE_MAX_EVENTS; i++) {
		const struct trace_evt *e = &r->events[i];

		switch (e->type) {
		case TRACE_EV_OFFCPU:
			tl_add(v, &n, e->ts, "off CPU %s%s", fmt_dur(e->arg, b1, sizeof(b1)),
			       e->arg2 ? " (iowait)" : "");
			break;
		case TRACE_EV_PC_LOOKUP:
		case TRACE_EV_PC_ADD:
		case TRACE_EV_RA_SYNC:
		case TRACE_EV_RA_ASYNC:
			tl_add(v, &n, e->ts, "%s index %" PRIu64 " pages %u", ev_name(e->type),
			       (uint64_t)e->arg, e->arg2);
			break;
		case TRACE_EV_DIO:
			tl_add(v, &n, e->ts, "direct I/O %s %s", e->arg2 ? "write" : "read",
			       fmt_bytes(e->arg, b1, sizeof(b1)));
			break;
		case TRACE_EV_WB_DONE:
			tl_add(v, &n, e->ts, "writeback submitted, %" PRIu64 " pages",
			       (uint64_t)e->arg);
			break;
		case TRACE_EV_FAULT:
			tl_add(v, &n, e->ts, "fault at page %" PRIu64, (uint64_t)e->arg);
			break;
		default:
			tl_add(v, &n, e->ts, "%s %" PRIu64, ev_name(e->type), (uint64_t)e->arg);
		}
	}
	for (i = 0; i < r->nr_bios && i < TRACE_MAX_BIOS; i++) {
		const struct trace_bio *b = &r->bios[i];

		dev_name(b->dev, dn, sizeof(dn));
		tl_add(v, &n, b->q, "Q bio#%u %s %c %" PRIu64 " + %u", i, printable(dn), bio_dir(b),
		       (uint64_t)b->sector, b->bytes / 512);
		if (b->flags & TRACE_BIO_SPLIT)
			tl_add(v, &n, b->q, "X bio#%u split", i);
		if (b->flags & TRACE_BIO_MERGED)
			tl_add(v, &n, b->g, "M bio#%u merged into a request", i);
		else
			tl_add(v, &n, b->g, "G bio#%u request allocated", i);
		if (b->h && b->q > b->h)
			tl_add(v, &n, b->h, "bio#%u held by blk-throttle from about here", i);
		if (b->i > b->g)
			tl_add(v, &n, b->i, "I bio#%u inserted", i);
		if (!(b->flags & TRACE_BIO_NO_ISSUE))
			tl_add(v, &n, b->d, "D bio#%u issued%s", i,
			       b->requeues ? " (after requeue)" : "");
		tl_add(v, &n, b->c, "C bio#%u completed%s", i, b->error ? " with error" : "");
	}
	tl_add(v, &n, r->end, "%s", end_label(r->op));
	qsort(v, n, sizeof(*v), tl_cmp);
	return n;
}

/* ------------------------------------------------------------------ text output */

static void print_text(struct trace_ctx *c, const struct trace_rec *r)
{
	char b[8][UNITS_BUF], tbuf[32], pbuf[PATH_MAX], dn[DISK_NAME_LEN], cgbuf[PATH_MAX];
	static struct tl_item tl[TL_MAX];
	const __u64 *st = r->stages;
	const char *path, *name, *cgroup;
	struct proc_ident id;
	struct tm tm;
	time_t secs;
	uint64_t real;
	unsigned int i;
	int n;

	real = r->start + c->mono_to_real;
	secs = real / NSEC_PER_SEC;
	localtime_r(&secs, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	printf("%s.%06" PRIu64 " %s ", tbuf, (real % NSEC_PER_SEC) / 1000, trace_op_name(r->op));
	if (r->op == TRACE_OP_WRITEBACK && !r->pid)
		/* The pages were dirtied before tracing started: nobody to credit. */
		printf("(dirtier unknown: pages dirtied before tracing began)");
	else {
		rec_ident(c, r, &id, &name, &cgroup, cgbuf, sizeof(cgbuf));
		printf("%s pid %u tid %u cgroup %s", printable(name), r->pid, r->tid,
		       printable(cgroup));
	}
	printf(" total %s ret %" PRId64 "\n", fmt_dur(st[TRACE_ST_TOTAL], b[0], sizeof(b[0])),
	       (int64_t)r->ret);
	path = rec_path(c, r, pbuf, sizeof(pbuf));
	printf("  file %s (%u:%u ino %" PRIu64 ")", path ? printable(path) : "?", KDEV_MAJOR(r->dev),
	       KDEV_MINOR(r->dev), (uint64_t)r->ino);
	if (r->offset >= 0)
		printf(" offset %" PRId64, (int64_t)r->offset);
	printf(" bytes %" PRIu64, (uint64_t)r->bytes);
	for (i = 0; i < sizeof(rec_flag_names) / sizeof(rec_flag_names[0]); i++)
		if (r->flags & rec_flag_names[i].bit)
			printf(" %s", rec_flag_names[i].name);
	if (r->op == TRACE_OP_WRITEBACK)
		printf(" flusher %u", r->flusher);
	printf("\n");
	if (r->nr_done)
		printf("  stages pre_block %s%s%s q2q %s q2g %s g2i %s i2d %s d2c %s post_block "
		       "%s\n",
		       fmt_dur(st[TRACE_ST_PRE_BLOCK], b[0], sizeof(b[0])),
		       st[TRACE_ST_THROTTLE] ? " throttle " : "",
		       st[TRACE_ST_THROTTLE] ? fmt_dur(st[TRACE_ST_THROTTLE], b[7], sizeof(b[7])) :
					       "",
		       fmt_dur(st[TRACE_ST_Q2Q], b[1], sizeof(b[1])),
		       fmt_dur(st[TRACE_ST_Q2G], b[2], sizeof(b[2])),
		       fmt_dur(st[TRACE_ST_G2I], b[3], sizeof(b[3])),
		       fmt_dur(st[TRACE_ST_I2D], b[4], sizeof(b[4])),
		       fmt_dur(st[TRACE_ST_D2C], b[5], sizeof(b[5])),
		       fmt_dur(st[TRACE_ST_POST_BLOCK], b[6], sizeof(b[6])));
	else if (r->nr_queued)
		/* sync_file_range(WRITE), readahead: it did not wait for its bios. */
		printf("  stages none: no bio completed before it ended (pre_block = total)\n");
	else
		printf("  stages no block I/O (pre_block = total)\n");
	if (r->flags & TRACE_F_NO_OFFCPU)
		printf("  off-CPU unknown (faults: see --offcpu-periods)\n");
	else
		printf("  off-CPU %s %s %s runq %s switches %u\n",
		       fmt_dur(r->offcpu_ns, b[0], sizeof(b[0])),
		       r->flags & TRACE_F_IOWAIT_BLOCKED ? "blocked" : "iowait",
		       fmt_dur(r->iowait_ns, b[1], sizeof(b[1])),
		       fmt_dur(r->runq_ns, b[2], sizeof(b[2])), r->nr_switches);
	printf("  page cache lookups %u (%" PRIu64 " pages) added %u pages, readahead %u sync "
	       "%u async\n",
	       r->pc_lookups, (uint64_t)r->pc_lookup_pages, r->pc_added, r->ra_sync, r->ra_async);
	if (r->nr_queued || r->nr_done)
		printf("  bios queued %u completed %u%s\n", r->nr_queued, r->nr_done,
		       bios_missing(r) ? " (first 16 shown)" : "");
	for (i = 0; i < r->nr_bios && i < TRACE_MAX_BIOS; i++) {
		const struct trace_bio *bi = &r->bios[i];
		unsigned int k;

		printf("    bio#%-2u %-8s %c sector %-10" PRIu64 " %5s q2g %s g2i %s i2d %s "
		       "d2c %s",
		       i, printable(dev_name(bi->dev, dn, sizeof(dn))), bio_dir(bi), (uint64_t)bi->sector,
		       fmt_bytes(bi->bytes, b[0], sizeof(b[0])),
		       fmt_dur(bi->g - bi->q, b[1], sizeof(b[1])),
		       fmt_dur(bi->i - bi->g, b[2], sizeof(b[2])),
		       fmt_dur(bi->d - bi->i, b[3], sizeof(b[3])),
		       fmt_dur(bi->c - bi->d, b[4], sizeof(b[4])));
		for (k = 0; k < sizeof(bio_flag_names) / sizeof(bio_flag_names[0]); k++)
			if (bi->flags & bio_flag_names[k].bit)
				printf(" %s", bio_flag_names[k].name);
		if (bi->h && bi->q >= bi->h)
			printf(" (held %s)", fmt_dur(bi->q - bi->h, b[5], sizeof(b[5])));
		printf("\n");
	}
	n = build_timeline(r, tl);
	printf("  timeline (ms from start):\n");
	for (i = 0; i < (unsigned int)n; i++)
		printf("    %10.3f  %s\n", tl[i].ts >= r->start ? (tl[i].ts - r->start) / 1e6 : 0.0,
		       tl[i].text);
	if (r->events_lost)
		printf("    ... %u more events not recorded\n", r->events_lost);
	printf("\n");
}

/* ------------------------------------------------------------------ JSON output */

static void json_flags(struct jw *jw, const char *key, uint32_t flags, bool bio)
{
	unsigned int i;

	jw_kv_array(jw, key);
	if (bio) {
		for (i = 0; i < sizeof(bio_flag_names) / sizeof(bio_flag_names[0]); i++)
			if (flags & bio_flag_names[i].bit)
				jw_string(jw, bio_flag_names[i].name);
	} else {
		for (i = 0; i < sizeof(rec_flag_names) / sizeof(rec_flag_names[0]); i++)
			if (flags & rec_flag_names[i].bit)
				jw_string(jw, rec_flag_names[i].name);
	}
	jw_end_array(jw);
}

static void json_devnum(struct jw *jw, const char *key, uint32_t dev)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%u:%u", KDEV_MAJOR(dev), KDEV_MINOR(dev));
	jw_kv_string(jw, key, buf);
}

/* Time of @ts relative to the request start, in µs (0 if unknown). */
static double rel_us(const struct trace_rec *r, uint64_t ts)
{
	return ts >= r->start ? us(ts - r->start) : 0;
}

static void print_json(struct trace_ctx *c, const struct trace_rec *r)
{
	char pbuf[PATH_MAX], dn[DISK_NAME_LEN], dirs[2] = {0};
	struct jw *jw = c->jw;
	struct proc_ident id;
	const char *path;
	unsigned int i;

	jw_start_object(jw);
	jw_kv_string(jw, "type", "request");
	jw_kv_uint(jw, "time_ns", r->start + c->mono_to_real);
	jw_kv_uint(jw, "start_mono_ns", r->start);
	jw_kv_string(jw, "op", trace_op_name(r->op));
	if (r->op == TRACE_OP_WRITEBACK && !r->pid) {
		/* Pages dirtied before tracing began: the owner is unknown, not pid 0. */
		jw_kv_null(jw, "pid");
		jw_kv_null(jw, "tid");
		jw_kv_null(jw, "comm");
		jw_kv_null(jw, "cgroup_id");
		jw_kv_null(jw, "cgroup");
		jw_kv_null(jw, "cmdline");
		jw_kv_null(jw, "blkio_cgroup");
	} else {
		jw_kv_uint(jw, "pid", r->pid);
		jw_kv_uint(jw, "tid", r->tid);
		jw_kv_string(jw, "comm", r->comm);
		jw_kv_uint(jw, "cgroup_id", r->cgid);
		jw_kv_string(jw, "cgroup", cgroup_name(c, r->cgid));
		procinfo_get(c->procinfo, r->pid, r->comm, &id);
		if (id.cmdline)
			jw_kv_string(jw, "cmdline", id.cmdline);
		else
			jw_kv_null(jw, "cmdline");
		if (id.blkio)
			jw_kv_string(jw, "blkio_cgroup", id.blkio);
		else
			jw_kv_null(jw, "blkio_cgroup");
	}
	if (r->op == TRACE_OP_WRITEBACK)
		jw_kv_uint(jw, "flusher_tid", r->flusher);
	json_devnum(jw, "dev", r->dev);
	jw_kv_uint(jw, "inode", r->ino);
	path = rec_path(c, r, pbuf, sizeof(pbuf));
	if (path)
		jw_kv_string(jw, "path", path);
	else
		jw_kv_null(jw, "path");
	jw_kv_int(jw, "offset", r->offset);
	jw_kv_uint(jw, "bytes", r->bytes);
	jw_kv_int(jw, "ret", r->ret);
	jw_kv_float(jw, "total_us", us(r->stages[TRACE_ST_TOTAL]), 3);
	json_flags(jw, "flags", r->flags, false);
	jw_kv_object(jw, "stages");
	for (i = 0; i < TRACE_ST_NR; i++)
		jw_kv_float(jw, trace_stage_name(i), us(r->stages[i]), 3);
	jw_end_object(jw);
	jw_kv_bool(jw, "has_block_io", r->nr_done > 0);
	jw_kv_uint(jw, "switches", r->nr_switches);
	jw_kv_float(jw, "runq_us", us(r->runq_ns), 3);
	jw_kv_string(jw, "offcpu_from", offcpu_source(c, r));
	jw_kv_object(jw, "page_cache");
	jw_kv_uint(jw, "lookups", r->pc_lookups);
	jw_kv_uint(jw, "lookup_pages", r->pc_lookup_pages);
	jw_kv_uint(jw, "added_pages", r->pc_added);
	jw_kv_uint(jw, "readahead_sync", r->ra_sync);
	jw_kv_uint(jw, "readahead_async", r->ra_async);
	jw_end_object(jw);
	jw_kv_uint(jw, "bios_queued", r->nr_queued);
	jw_kv_uint(jw, "bios_completed", r->nr_done);
	jw_kv_uint(jw, "bios_not_recorded", bios_missing(r));
	jw_kv_array(jw, "bios");
	for (i = 0; i < r->nr_bios && i < TRACE_MAX_BIOS; i++) {
		const struct trace_bio *b = &r->bios[i];

		jw_start_object(jw);
		json_devnum(jw, "dev", b->dev);
		jw_kv_string(jw, "disk", dev_name(b->dev, dn, sizeof(dn)));
		jw_kv_uint(jw, "sector", b->sector);
		jw_kv_uint(jw, "bytes", b->bytes);
		dirs[0] = bio_dir(b);
		jw_kv_string(jw, "op", dirs);
		jw_kv_float(jw, "held_us", b->h && b->q >= b->h ? us(b->q - b->h) : 0.0, 3);
		jw_kv_float(jw, "q_us", rel_us(r, b->q), 3);
		jw_kv_float(jw, "g_us", rel_us(r, b->g), 3);
		jw_kv_float(jw, "i_us", rel_us(r, b->i), 3);
		jw_kv_float(jw, "d_us", rel_us(r, b->d), 3);
		jw_kv_float(jw, "c_us", rel_us(r, b->c), 3);
		jw_kv_float(jw, "q2g_us", us(b->g - b->q), 3);
		jw_kv_float(jw, "g2i_us", us(b->i - b->g), 3);
		jw_kv_float(jw, "i2d_us", us(b->d - b->i), 3);
		jw_kv_float(jw, "d2c_us", us(b->c - b->d), 3);
		jw_kv_float(jw, "q2c_us", us(b->c - b->q), 3);
		json_flags(jw, "flags", b->flags, true);
		jw_kv_int(jw, "error", b->error);
		jw_kv_uint(jw, "requeues", b->requeues);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	jw_kv_array(jw, "events");
	for (i = 0; i < r->nr_events && i < TRACE_MAX_EVENTS; i++) {
		const struct trace_evt *e = &r->events[i];

		jw_start_object(jw);
		jw_kv_string(jw, "type", ev_name(e->type));
		jw_kv_float(jw, "t_us", rel_us(r, e->ts), 3);
		jw_kv_uint(jw, "arg", e->arg);
		jw_kv_uint(jw, "arg2", e->arg2);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	jw_kv_uint(jw, "events_not_recorded", r->events_lost);
	jw_end_object(jw);
}

/* ------------------------------------------------------------------ Perfetto */

/* A track of @pid (lanes of @base) free from @start on; -1 if all are busy. */
static int lane_get(struct trace_ctx *c, uint32_t pid, uint32_t base, uint64_t start, uint64_t end)
{
	struct lanes *l;
	int i;

	for (l = c->lanes; l; l = l->next)
		if (l->pid == pid && l->base == base)
			break;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l)
			return -1;
		l->pid = pid;
		l->base = base;
		l->next = c->lanes;
		c->lanes = l;
	}
	/* Every span already on the lane ends before this one starts: nothing overlaps. */
	for (i = 0; i < l->nr; i++) {
		if (l->end[i] <= start) {
			l->end[i] = end;
			return i;
		}
	}
	if (l->nr == MAX_LANES) {
		c->lanes_full++;
		return -1;
	}
	l->end[l->nr] = end;
	return l->nr++;
}

static void pf_span(struct trace_ctx *c, const char *name, const char *cat, uint32_t pid,
		    uint32_t tid, uint64_t from, uint64_t to)
{
	if (to < from)
		to = from;
	perfetto_span(c->pf, name, cat, pid, tid, from, to - from);
	perfetto_end(c->pf);
}

static void perfetto_bio(struct trace_ctx *c, const struct trace_rec *r, uint32_t pid,
			 const struct trace_bio *b, unsigned int idx)
{
	char name[64], tname[64], dn[DISK_NAME_LEN], sz[UNITS_BUF];
	struct jw *jw;
	int lane;

	lane = lane_get(c, pid, LANE_BIOS, b->q, b->c);
	if (lane < 0)
		return;
	snprintf(tname, sizeof(tname), "bios %d", lane);
	perfetto_thread(c->pf, pid, LANE_BIOS + lane, tname);
	snprintf(name, sizeof(name), "bio %s %c %s", dev_name(b->dev, dn, sizeof(dn)), bio_dir(b),
		 fmt_bytes(b->bytes, sz, sizeof(sz)));
	jw = perfetto_span(c->pf, name, "bio", pid, LANE_BIOS + lane, b->q, b->c - b->q);
	jw_kv_string(jw, "request", trace_op_name(r->op));
	jw_kv_uint(jw, "tid", r->tid);
	jw_kv_uint(jw, "bio", idx);
	jw_kv_uint(jw, "sector", b->sector);
	jw_kv_uint(jw, "bytes", b->bytes);
	json_flags(jw, "flags", b->flags, true);
	perfetto_end(c->pf);
	pf_span(c, "q2g", "bio", pid, LANE_BIOS + lane, b->q, b->g);
	pf_span(c, "g2i", "bio", pid, LANE_BIOS + lane, b->g, b->i);
	pf_span(c, "i2d", "bio", pid, LANE_BIOS + lane, b->i, b->d);
	pf_span(c, "d2c", "bio", pid, LANE_BIOS + lane, b->d, b->c);
}

static void write_perfetto(struct trace_ctx *c, const struct trace_rec *r)
{
	char name[64], pbuf[PATH_MAX], cgbuf[PATH_MAX];
	const char *path, *pname = "(unknown dirtier)", *cgroup;
	uint32_t pid = r->pid, tid = r->tid;
	struct proc_ident id;
	struct jw *jw;
	unsigned int i;
	int lane = 0;

	if (pid)
		rec_ident(c, r, &id, &pname, &cgroup, cgbuf, sizeof(cgbuf));
	perfetto_process(c->pf, pid, pname);
	if (r->op == TRACE_OP_WRITEBACK || r->op == TRACE_OP_AIO_READ ||
	    r->op == TRACE_OP_AIO_WRITE) {
		/* Several may be in flight at once: each on a lane of its own. */
		uint32_t base = r->op == TRACE_OP_WRITEBACK ? LANE_WB : LANE_AIO;

		lane = lane_get(c, pid, base, r->start, r->end);
		if (lane < 0)
			return;
		tid = base + lane;
		snprintf(name, sizeof(name), "%s %d", base == LANE_WB ? "writeback" : "async I/O",
			 lane);
		perfetto_thread(c->pf, pid, tid, name);
	} else {
		snprintf(name, sizeof(name), "%s %u", r->comm, tid);
		perfetto_thread(c->pf, pid, tid, name);
	}
	path = rec_path(c, r, pbuf, sizeof(pbuf));
	jw = perfetto_span(c->pf, trace_op_name(r->op), "request", pid, tid, r->start,
			   r->end - r->start);
	jw_kv_string(jw, "path", path ? path : "?");
	jw_kv_int(jw, "offset", r->offset);
	jw_kv_uint(jw, "bytes", r->bytes);
	jw_kv_int(jw, "ret", r->ret);
	jw_kv_uint(jw, "bios", r->nr_done);
	perfetto_end(c->pf);
	if (r->nr_done) {
		/* Children in time order; the block span holds the critical bio's stages. */
		uint64_t thr_first = r->held_q && r->held_q == r->first_q ? r->held_h : 0;

		pf_span(c, "pre_block", "stage", pid, tid, r->start, thr_first ?: r->first_q);
		if (thr_first)
			pf_span(c, "throttle", "stage", pid, tid, thr_first, r->first_q);
		pf_span(c, "block (q2c)", "stage", pid, tid, r->first_q, r->last_c);
		pf_span(c, "q2q", "stage", pid, tid, r->first_q, r->crit_q);
		pf_span(c, "q2g", "stage", pid, tid, r->crit_q, r->crit_g);
		pf_span(c, "g2i", "stage", pid, tid, r->crit_g, r->crit_i);
		pf_span(c, "i2d", "stage", pid, tid, r->crit_i, r->crit_d);
		pf_span(c, "d2c", "stage", pid, tid, r->crit_d, r->last_c);
		pf_span(c, "post_block", "stage", pid, tid, r->last_c, r->end);
	}
	for (i = 0; i < r->nr_events && i < TRACE_MAX_EVENTS; i++) {
		const struct trace_evt *e = &r->events[i];

		if (e->type == TRACE_EV_OFFCPU) {
			/* Off-CPU periods cross stage boundaries: a track of their own. */
			snprintf(name, sizeof(name), "%s %u off-CPU", r->comm, r->tid);
			perfetto_thread(c->pf, pid, LANE_OFFCPU | r->tid, name);
			jw = perfetto_span(c->pf, e->arg2 ? "iowait" : "off-CPU", "sched", pid,
					   LANE_OFFCPU | r->tid, e->ts, e->arg);
			perfetto_end(c->pf);
			continue;
		}
		if (e->ts < r->start || e->ts > r->end)
			continue;
		jw = perfetto_instant(c->pf, ev_name(e->type), "event", pid, tid, e->ts);
		jw_kv_uint(jw, "arg", e->arg);
		jw_kv_uint(jw, "arg2", e->arg2);
		perfetto_end(c->pf);
	}
	for (i = 0; i < r->nr_bios && i < TRACE_MAX_BIOS; i++)
		perfetto_bio(c, r, pid, &r->bios[i], i);
}

/*
 * A record as sent (the header, then only the bios and events it has) into @r; the
 * unused tail of @r is left as is (nr_bios and nr_events bound every reader).
 */
static int rec_unpack(const void *data, size_t size, struct trace_rec *r)
{
	const size_t hdr = offsetof(struct trace_rec, bios);
	size_t lb, le;

	if (size < hdr)
		return -EINVAL;
	memcpy(r, data, hdr);
	lb = (r->nr_bios < TRACE_MAX_BIOS ? r->nr_bios : TRACE_MAX_BIOS) * sizeof(r->bios[0]);
	le = (r->nr_events < TRACE_MAX_EVENTS ? r->nr_events : TRACE_MAX_EVENTS) *
	     sizeof(r->events[0]);
	if (size != hdr + lb + le)
		return -EINVAL;
	memcpy(r->bios, (const char *)data + hdr, lb);
	memcpy(r->events, (const char *)data + hdr + lb, le);
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	static struct trace_rec rec;
	struct trace_ctx *c = ctx;
	const struct trace_rec *r = &rec;

	c->received++;
	if (rec_unpack(data, size, &rec)) {
		c->malformed++; /* counted as lost */
		return 0;
	}
	if (c->jw)
		print_json(c, r);
	else
		print_text(c, r);
	if (c->pf)
		write_perfetto(c, r);
	c->printed++;
	/*
	 * A ring buffer read returns only once the buffer is empty: while requests come
	 * as fast as they are printed, give the loop its turn now and then (summaries,
	 * --duration, Ctrl-C). A negative return ends the read after this record.
	 */
	if (c->draining || ++c->since_yield < 64)
		return 0;
	c->since_yield = 0;
	return stop_requested || now_ns(CLOCK_MONOTONIC) >= c->yield_at ? -EINTR : 0;
}

/* ------------------------------------------------------------------ summaries */

static int read_hists(struct trace_ctx *c, uint32_t op, struct trace_op_hists *out)
{
	int fd = bpf_map__fd(c->skel->maps.hists), cpu, s, k;

	if (bpf_map_lookup_elem(fd, &op, c->pcpu))
		return -errno;
	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < c->ncpus; cpu++)
		for (s = 0; s < TRACE_ST_NR; s++) {
			struct hist *d = &out->st[s];
			const struct hist *h = &c->pcpu[cpu].st[s];

			d->count += h->count;
			d->sum += h->sum;
			if (h->max > d->max)
				d->max = h->max;
			for (k = 0; k < HIST_SLOTS; k++)
				d->slots[k] += h->slots[k];
		}
	return 0;
}

/* @cur - @prev, slot by slot (max stays cumulative: it cannot be subtracted). */
static void hist_delta(struct hist *out, const struct hist *cur, const struct hist *prev)
{
	int k;

	out->count = cur->count - prev->count;
	out->sum = cur->sum - prev->sum;
	out->max = cur->max;
	for (k = 0; k < HIST_SLOTS; k++)
		out->slots[k] = cur->slots[k] - prev->slots[k];
}

static int read_counters(struct trace_ctx *c, uint64_t *out);

/* Slow requests of the interval: sent, printed, and dropped because the buffer was full. */
struct output_counts {
	uint64_t emitted, printed, dropped;
};

static int output_counts(struct trace_ctx *c, struct output_counts *oc)
{
	uint64_t cnt[TRACE_CNT_NR];
	int err = read_counters(c, cnt);

	if (err)
		return fail(err, "cannot read the counters map: %s", strerror(-err));
	oc->emitted = cnt[TRACE_CNT_EMITTED] - c->prev_emitted;
	oc->printed = c->printed - c->prev_printed;
	oc->dropped = cnt[TRACE_CNT_RINGBUF_FULL] - c->prev_dropped;
	c->prev_emitted = cnt[TRACE_CNT_EMITTED];
	c->prev_printed = c->printed;
	c->prev_dropped = cnt[TRACE_CNT_RINGBUF_FULL];
	return 0;
}

/*
 * Says loudly that slow requests were dropped in the interval, with the rate the
 * output kept up with (it was busy all along: the buffer filled) and the rate they
 * came at.
 */
static void print_drops(struct trace_ctx *c, const struct output_counts *oc, double seconds)
{
	char size[UNITS_BUF];

	if (!oc->dropped || c->jw)
		return;
	fmt_bytes(c->o->rb_bytes, size, sizeof(size));
	printf("!! %" PRIu64 " slow requests dropped: the output printed %.0f/s, they came at "
	       "%.0f/s and the %s ring buffer filled (raise -t, filter, write to a file, or "
	       "use --buffer-size)\n",
	       oc->dropped, oc->printed / seconds, (oc->emitted + oc->dropped) / seconds, size);
	warn("%" PRIu64 " of %" PRIu64 " slow requests in the last %.1f s were dropped: the "
	     "output printed %.0f/s, they came at %.0f/s (ring buffer %s full)",
	     oc->dropped, oc->emitted + oc->dropped, seconds, oc->printed / seconds,
	     (oc->emitted + oc->dropped) / seconds, size);
}

static int summary(struct trace_ctx *c, double seconds, bool final)
{
	static struct trace_op_hists cur, delta;
	struct output_counts oc = {0};
	char b[3][UNITS_BUF];
	uint64_t total = 0;
	bool header = false;
	unsigned int op, s;
	int err;

	err = output_counts(c, &oc);
	if (err)
		return err;
	if (c->jw) {
		jw_start_object(c->jw);
		jw_kv_string(c->jw, "type", "summary");
		jw_kv_float(c->jw, "interval_s", seconds, 3);
		jw_kv_bool(c->jw, "final", final);
		jw_kv_uint(c->jw, "emitted", oc.emitted);
		jw_kv_uint(c->jw, "printed", oc.printed);
		jw_kv_uint(c->jw, "dropped", oc.dropped);
		jw_kv_object(c->jw, "ops");
	}
	for (op = 0; op < TRACE_OP_NR; op++) {
		err = read_hists(c, op, &cur);
		if (err)
			return fail(err, "cannot read the histogram map: %s", strerror(-err));
		for (s = 0; s < TRACE_ST_NR; s++)
			hist_delta(&delta.st[s], &cur.st[s], &c->prev[op].st[s]);
		c->prev[op] = cur;
		if (!delta.st[TRACE_ST_TOTAL].count)
			continue;
		total += delta.st[TRACE_ST_TOTAL].count;
		if (c->jw) {
			jw_kv_object(c->jw, trace_op_name(op));
			jw_kv_uint(c->jw, "count", delta.st[TRACE_ST_TOTAL].count);
			jw_kv_object(c->jw, "stages");
			for (s = 0; s < TRACE_ST_NR; s++) {
				const struct hist *h = &delta.st[s];

				if (!h->count)
					continue;
				jw_kv_object(c->jw, trace_stage_name(s));
				jw_kv_uint(c->jw, "count", h->count);
				jw_kv_float(c->jw, "avg_us", hist_mean(h) / 1e3, 3);
				jw_kv_float(c->jw, "p50_us", hist_percentile(h, 50) / 1e3, 3);
				jw_kv_float(c->jw, "p99_us", hist_percentile(h, 99) / 1e3, 3);
				jw_end_object(c->jw);
			}
			jw_end_object(c->jw);
			jw_end_object(c->jw);
			continue;
		}
		if (!header) {
			printf("--- summary over %.1f s ---\n", seconds);
			printf("%-16s %8s  %-11s %9s %9s %9s\n", "OP", "COUNT", "STAGE", "AVG",
			       "P50", "P99");
			header = true;
		}
		for (s = 0; s < TRACE_ST_NR; s++) {
			const struct hist *h = &delta.st[s];

			if (!h->count)
				continue;
			if (s == TRACE_ST_TOTAL)
				printf("%-16s %8" PRIu64 "  ", trace_op_name(op),
				       (uint64_t)h->count);
			else
				printf("%-16s %8s  ", "", h->count == delta.st[0].count ? "" : "");
			printf("%-11s %9s %9s %9s", trace_stage_name(s),
			       fmt_ns(hist_mean(h), b[0], sizeof(b[0])),
			       fmt_ns(hist_percentile(h, 50), b[1], sizeof(b[1])),
			       fmt_ns(hist_percentile(h, 99), b[2], sizeof(b[2])));
			if (s != TRACE_ST_TOTAL && h->count != delta.st[TRACE_ST_TOTAL].count)
				printf("  (%" PRIu64 " with it)", (uint64_t)h->count);
			printf("\n");
		}
	}
	if (c->jw) {
		jw_end_object(c->jw);
		jw_kv_uint(c->jw, "requests", total);
		jw_end_object(c->jw);
	} else if (!header) {
		printf("--- summary over %.1f s: no requests ---\n", seconds);
	} else {
		printf("\n");
	}
	print_drops(c, &oc, seconds);
	fflush(stdout);
	return 0;
}

/* ------------------------------------------------------------------ accounts */

static int read_counters(struct trace_ctx *c, uint64_t *out)
{
	int err = bpfmap_sum_percpu_u64(bpf_map__fd(c->skel->maps.counters), TRACE_CNT_NR, out);

	out[TRACE_CNT_HOOK_MISSED] = bpfobj_missed_runs(c->skel->obj);
	return err;
}

/*
 * Writeback requests whose bios never all completed would stay in the map until LRU
 * evicts them, silently: old ones are given up here and counted. At exit, also counts
 * the requests still in flight.
 */
static void sweep_writeback(struct trace_ctx *c, bool at_exit)
{
	int fd = bpf_map__fd(c->skel->maps.reqs);
	static struct trace_rec r;
	static struct trace_async_slot as;
	uint64_t key, next, now = now_ns(CLOCK_MONOTONIC);
	uint32_t idx;
	bool first = true;

	c->in_flight = 0;
	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &r) || r.state == TRACE_S_IDLE)
			continue;
		if ((key >> 60) == 2 && !at_exit && now - r.start > WB_SWEEP_NS) {
			if (!bpf_map_delete_elem(fd, &key))
				c->wb_swept++;
			continue;
		}
		c->in_flight++;
	}
	if (!at_exit)
		return;
	/* Syscalls and faults still in progress (a thread blocked in one, say). */
	fd = bpf_map__fd(c->skel->maps.thread_recs);
	for (idx = 0; idx < bpf_map__max_entries(c->skel->maps.thread_recs); idx++) {
		if (!bpf_map_lookup_elem(fd, &idx, &r) && r.state == TRACE_S_ACTIVE)
			c->in_flight++;
	}
	if (!c->skel->rodata->trace_aio)
		return;
	/* Async direct I/O still in flight (or whose completion was never seen). */
	fd = bpf_map__fd(c->skel->maps.async_slots);
	for (idx = 0; idx < bpf_map__max_entries(c->skel->maps.async_slots); idx++) {
		if (!bpf_map_lookup_elem(fd, &idx, &as) && as.rec.state == TRACE_S_ACTIVE)
			c->in_flight++;
	}
}

static void print_accounts(struct trace_ctx *c)
{
	uint64_t cnt[TRACE_CNT_NR], lost = 0, traced;
	int i;

	if (read_counters(c, cnt))
		memset(cnt, 0, sizeof(cnt));
	sweep_writeback(c, true);
	cnt[TRACE_CNT_WB_SWEPT] += c->wb_swept;
	for (i = 0; i < TRACE_CNT_NR; i++)
		if (cnt_is_loss(i))
			lost += cnt[i];
	/* A fault served from the page cache turned out not to be a request. */
	traced = cnt[TRACE_CNT_STARTED] - cnt[TRACE_CNT_FAULTS_CACHED];
	lost += c->malformed;
	if (cnt[TRACE_CNT_RINGBUF_FULL])
		warn("%" PRIu64 " of %" PRIu64 " slow requests (%.1f%%) were dropped because the "
		     "output did not keep up: see the '!!' lines, raise -t, filter, or use "
		     "--buffer-size",
		     cnt[TRACE_CNT_RINGBUF_FULL],
		     cnt[TRACE_CNT_RINGBUF_FULL] + cnt[TRACE_CNT_EMITTED],
		     100.0 * cnt[TRACE_CNT_RINGBUF_FULL] /
			     (cnt[TRACE_CNT_RINGBUF_FULL] + cnt[TRACE_CNT_EMITTED]));
	if (c->jw) {
		jw_start_object(c->jw);
		jw_kv_string(c->jw, "type", "totals");
		jw_kv_uint(c->jw, "traced", traced);
		jw_kv_uint(c->jw, "completed", cnt[TRACE_CNT_DONE]);
		jw_kv_uint(c->jw, "emitted", cnt[TRACE_CNT_EMITTED]);
		jw_kv_uint(c->jw, "printed", c->printed);
		jw_kv_uint(c->jw, "in_flight_at_exit", c->in_flight);
		jw_kv_uint(c->jw, "lost", lost);
		jw_kv_object(c->jw, "counters");
		for (i = 0; i < TRACE_CNT_NR; i++)
			jw_kv_uint(c->jw, cnt_names[i], cnt[i]);
		jw_kv_uint(c->jw, "perfetto_lanes_full", c->lanes_full);
		jw_kv_uint(c->jw, "records_malformed", c->malformed);
		jw_end_object(c->jw);
		attach_plan_unavailable(c->hooks, c->nr_hooks, c->jw, "unavailable", NULL, NULL);
		jw_end_object(c->jw);
		return;
	}
	printf("iospan trace: %" PRIu64 " requests traced, %" PRIu64 " completed, %" PRIu64
	       " emitted, %" PRIu64 " printed, %" PRIu64 " in flight, %" PRIu64 " lost\n",
	       traced, cnt[TRACE_CNT_DONE], cnt[TRACE_CNT_EMITTED], c->printed,
	       c->in_flight, lost);
	for (i = 0; i < TRACE_CNT_NR; i++) {
		if (i <= TRACE_CNT_EMITTED || !cnt[i])
			continue;
		printf("  %-24s %" PRIu64 "%s\n", cnt_names[i], cnt[i],
		       cnt_is_loss(i)		     ? " (lost)" :
		       i == TRACE_CNT_HOOK_MISSED ? " (events skipped by the kernel: some requests "
						    "may lack a stage or be missing)" :
						    "");
	}
	if (c->lanes_full)
		printf("  %-24s %" PRIu64 "\n", "perfetto_spans_dropped", c->lanes_full);
	if (c->malformed)
		printf("  %-24s %" PRIu64 " (lost)\n", "records_malformed", c->malformed);
	attach_plan_unavailable(c->hooks, c->nr_hooks, NULL, NULL, stdout, "  ");
}

/* ------------------------------------------------------------------ setup */

/*
 * The syscall programs serve several syscall tracepoints each, attached by hand, by
 * name: sys_enter<nargs> reads that many arguments (trace.bpf.c).
 */
#define SYS_HOOKS(s, nm, nargs)                                                  \
	{.name = "sys_enter_" #nm,                                               \
	 .optional = true,                                                       \
	 .v = {{.prog = s->progs.trace_sys_enter##nargs,                         \
		.mode = ATTACH_TRACEPOINT,                                       \
		.target = "syscalls/sys_enter_" #nm}}},                          \
	{                                                                        \
		.name = "sys_exit_" #nm, .optional = true,                       \
		.v = { {.prog = s->progs.trace_sys_exit,                         \
			.mode = ATTACH_TRACEPOINT,                               \
			.target = "syscalls/sys_exit_" #nm} }                    \
	}
#define TP_HOOK(s, nm, hook, opt)                            \
	{                                                    \
		.name = #hook, .optional = opt,              \
		.v = { {.prog = s->progs.trace_##nm},        \
		       {.prog = s->progs.trace_##nm##_raw} } \
	}

/* Programs of ops that are not traced are not loaded: they cost nothing. */
static void plan_drop(struct attach_hook *hooks, int *n, const char *name)
{
	int i, k;

	for (i = 0; i < *n; i++)
		if (!strcmp(hooks[i].name, name))
			break;
	if (i == *n)
		return;
	for (k = 0; k < ATTACH_MAX_VARIANTS && hooks[i].v[k].prog; k++)
		bpf_program__set_autoload(hooks[i].v[k].prog, false);
	memmove(&hooks[i], &hooks[i + 1], (*n - i - 1) * sizeof(hooks[0]));
	(*n)--;
}

/*
 * Whether some disk in scope has an I/O scheduler. Without one, requests go from the
 * plug or the submitter straight to the driver and I (block_rq_insert) adds nothing
 * that G and D do not say: its hook is left out (I = G, see the docs).
 */
static bool need_insert_hook(const struct trace_opts *o)
{
	char path[PATH_MAX], line[256];
	struct ds_snapshot ds;
	bool need = false;
	size_t i;
	FILE *f;

	ds_snapshot_init(&ds);
	if (ds_read("/proc/diskstats", &ds))
		return true;
	for (i = 0; i < ds.nr && !need; i++) {
		const struct ds_dev *d = &ds.devs[i];

		if (o->have_disk && strcmp(d->name, o->disk.disk_name))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", d->name);
		f = fopen(path, "r");
		if (!f)
			continue; /* partition, or no queue */
		if (fgets(line, sizeof(line), f) && !strstr(line, "[none]") && strchr(line, '['))
			need = true;
		fclose(f);
	}
	ds_snapshot_free(&ds);
	return need;
}

/* The hooks this run needs (c->hooks), with their variants; not chosen yet. */
static int build_hooks(struct trace_ctx *c)
{
	struct trace_bpf *s = c->skel;
	const struct trace_opts *o = c->o;
	struct attach_hook hooks[] = {
		SYS_HOOKS(s, read, 3),
		SYS_HOOKS(s, write, 3),
		SYS_HOOKS(s, pread64, 4),
		SYS_HOOKS(s, pwrite64, 4),
		SYS_HOOKS(s, readv, 3),
		SYS_HOOKS(s, writev, 3),
		SYS_HOOKS(s, preadv, 4),
		SYS_HOOKS(s, pwritev, 4),
		SYS_HOOKS(s, preadv2, 4),
		SYS_HOOKS(s, pwritev2, 4),
		SYS_HOOKS(s, fsync, 1),
		SYS_HOOKS(s, fdatasync, 1),
		SYS_HOOKS(s, sync_file_range, 4),
		FALLBACK_HOOK(s, "mm_filemap_fault", trace_fault,
			      "page fault requests (--ops fault)"),
		{.name = "writeback_dirty_folio",
		 .optional = true,
		 .figure = "writeback requests credited to dirtiers",
		 .v = {{.prog = s->progs.trace_dirty_folio}}},
		{.name = "writeback_single_inode_start",
		 .optional = true,
		 .v = {{.prog = s->progs.trace_wb_start}}},
		{.name = "writeback_single_inode",
		 .optional = true,
		 .v = {{.prog = s->progs.trace_wb_end}}},
		FALLBACK_HOOK(s, "iomap_dio_rw_begin", trace_dio_begin,
			      "async direct I/O requests (libaio, io_uring)"),
		FALLBACK_HOOK(s, "iomap_dio_complete", trace_dio_complete,
			      "completion of async direct I/O requests"),
		TP_HOOK(s, exit, sched_process_exit, true),
		/* Where missing, a dio's submission window ends later (see trace_dio_queued). */
		{.name = "iomap_dio_rw_queued",
		 .optional = true,
		 .v = {{.prog = s->progs.trace_dio_queued}}},
		{.name = "block_rq_issue",
		 .optional = true,
		 .v = {{.prog = s->progs.trace_rq_issue}, {.prog = s->progs.trace_rq_issue_raw}}},
		TP_HOOK(s, bio_queue, block_bio_queue, false),
		TP_HOOK(s, rq_complete, block_rq_complete, false),
		TP_HOOK(s, split, block_split, true),
		TP_HOOK(s, backmerge, block_bio_backmerge, true),
		TP_HOOK(s, frontmerge, block_bio_frontmerge, true),
		TP_HOOK(s, rq_insert, block_rq_insert, true),
		TP_HOOK(s, rq_requeue, block_rq_requeue, true),
		TP_HOOK(s, switch, sched_switch, true),
		{.name = "mm_filemap_get_pages",
		 .optional = true,
		 .figure = "page cache lookups",
		 .v = {{.prog = s->progs.trace_get_pages},
		       {.prog = s->progs.trace_get_pages_raw},
		       {.prog = s->progs.trace_get_pages_fentry},
		       {.prog = s->progs.trace_get_pages_kprobe}}},
		TP_HOOK(s, pc_add, mm_filemap_add_to_page_cache, true),
		FALLBACK_HOOK(s, "page_cache_sync_ra", trace_ra_sync, "synchronous readahead"),
		FALLBACK_HOOK(s, "page_cache_async_ra", trace_ra_async, "asynchronous readahead"),
	};
	int n = sizeof(hooks) / sizeof(hooks[0]), i;
	bool aio = o->ops & (1U << TRACE_OP_AIO_READ | 1U << TRACE_OP_AIO_WRITE);

	char name[64];

	if (!need_insert_hook(o))
		plan_drop(hooks, &n, "block_rq_insert");
	if (!aio) {
		plan_drop(hooks, &n, "iomap_dio_rw_begin");
		plan_drop(hooks, &n, "iomap_dio_complete");
		plan_drop(hooks, &n, "sched_process_exit");
	}
	if (!(o->ops & (1U << TRACE_OP_WRITEBACK))) {
		plan_drop(hooks, &n, "writeback_dirty_folio");
		plan_drop(hooks, &n, "writeback_single_inode_start");
		plan_drop(hooks, &n, "writeback_single_inode");
	}
	if (!(o->ops & (1U << TRACE_OP_FAULT)))
		plan_drop(hooks, &n, "mm_filemap_fault");
	if (!o->offcpu_periods)
		plan_drop(hooks, &n, "sched_switch");
	for (i = 0; i <= TRACE_OP_SYNC_FILE_RANGE; i++) {
		if (o->ops & (1U << i))
			continue;
		snprintf(name, sizeof(name), "sys_enter_%s", trace_op_name(i));
		plan_drop(hooks, &n, name);
		snprintf(name, sizeof(name), "sys_exit_%s", trace_op_name(i));
		plan_drop(hooks, &n, name);
	}
	c->nr_hooks = n;
	return attach_hooks_dup(hooks, n, &c->hooks);
}

static int build_plan(struct trace_ctx *c)
{
	int err = build_hooks(c);

	return err ? err : attach_plan_choose(c->hooks, c->nr_hooks);
}

static int trace_setup(struct trace_ctx *c);
static void trace_cleanup(struct trace_ctx *c);

int trace_plan(plan_show_fn show, void *arg)
{
	static struct trace_opts opts;
	static struct trace_ctx c;
	char *argv[] = {"trace", NULL};
	char why[256];
	int err;

	memset(&opts, 0, sizeof(opts));
	cmd_reset_getopt();
	err = trace_parse(1, argv, &opts);
	if (err)
		return err < 0 ? err : -EINVAL;
	/* Set up as the command would run: a plan that cannot load or attach is no plan. */
	memset(&c, 0, sizeof(c));
	c.o = &opts;
	err_capture(why, sizeof(why));
	err = trace_setup(&c);
	err_capture(NULL, 0);
	if (!err)
		show("trace", c.hooks, c.nr_hooks, NULL, arg);
	trace_cleanup(&c);
	if (!err)
		return 0;
	if (!why[0])
		snprintf(why, sizeof(why), "%s", strerror(-err));
	/* Then what it would try, evaluated without loading. */
	memset(&c, 0, sizeof(c));
	c.o = &opts;
	c.skel = SKEL_OPEN(trace);
	if (!c.skel)
		return -errno;
	err = build_hooks(&c);
	if (!err)
		show("trace", c.hooks, c.nr_hooks, why, arg);
	free(c.hooks);
	trace_bpf__destroy(c.skel);
	return err;
}

static int trace_setup(struct trace_ctx *c)
{
	/* Async direct I/O's end; bios blk-throttle held: its worker, submit_bio_wait()'s waiter. */
	static const char *const syms[] = {"iomap_dio_bio_end_io", "blk_throtl_dispatch_work_fn",
					   "submit_bio_wait_endio"};
	const struct trace_opts *o = c->o;
	char root[PATH_MAX];
	struct trace_bpf *s;
	uint64_t end_io, throtl_fn, wait_end_io, addrs[3];
	int err, i, nr;

	/* A file that cannot be written is said before anything is loaded. */
	if (o->perfetto_path) {
		err = perfetto_open(&c->pf, o->perfetto_path);
		if (err)
			return fail(err, "cannot write %s: %s", o->perfetto_path, strerror(-err));
	}
	probe_setup_libbpf_print();
	probe_prefetch();
	/* Say what is missing, before the attach plan blames the kernel for it. */
	err = probe_require_bpf_privileges("trace");
	if (err)
		return err;
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0)
		return fail(c->ncpus ? c->ncpus : -EINVAL, "cannot count the possible CPUs");
	c->pcpu = calloc(c->ncpus, sizeof(*c->pcpu));
	c->prev = calloc(TRACE_OP_NR, sizeof(*c->prev));
	if (!c->pcpu || !c->prev || fspath_cache_new(lookup_path, c, &c->paths) ||
	    /* Read for every record: titles change between requests. */
	    procinfo_new(lookup_title, c, 1, &c->procinfo))
		return fail(-ENOMEM, "out of memory");
	err = ksyms_lookup(NULL, syms, addrs, 3);
	end_io = addrs[0];
	throtl_fn = addrs[1];
	wait_end_io = addrs[2];
	if (err)
		warn("kernel symbols unavailable (%s): async direct I/O and direct I/O "
		     "re-submitted by kernel threads are not followed",
		     ksyms_strerror(err));
	if (!probe_cgroup2_mount(root, sizeof(root)))
		cgroup_map_new(root, &c->cgmap);
	c->mono_to_real = (int64_t)(now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC));

	s = SKEL_OPEN(trace);
	if (!s)
		return fail(-errno, "cannot open the BPF object: %s", strerror(errno));
	c->skel = s;
	s->rodata->threshold_ns = o->threshold_ns;
	s->rodata->self_tgid = getpid();
	s->rodata->filter_pid = o->pid;
	s->rodata->filter_tid = o->tid;
	s->rodata->filter_cgroup = o->have_cgroup;
	s->rodata->filter_dev = o->have_disk;
	s->rodata->filter_comm_on = o->have_comm;
	memcpy((char *)s->rodata->filter_comm, o->comm, sizeof(o->comm));
	s->rodata->file_dev = o->file_dev;
	s->rodata->file_ino = o->file_ino;
	s->rodata->dir_dev = o->dir_dev;
	s->rodata->dir_ino = o->dir_ino;
	s->rodata->trace_faults = o->ops & (1U << TRACE_OP_FAULT);
	s->rodata->trace_writeback = o->ops & (1U << TRACE_OP_WRITEBACK);
	s->rodata->aio_ops = (o->ops >> TRACE_OP_AIO_READ) & 3;
	s->rodata->trace_aio = s->rodata->aio_ops && end_io;
	s->rodata->iomap_dio_end_io = end_io;
	s->rodata->throtl_dispatch_fn = throtl_fn;
	s->rodata->submit_bio_wait_end_io = wait_end_io;
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	/* The syscall programs' table (trace.bpf.c): the op of each syscall. */
	for (i = 0; i <= TRACE_OP_SYNC_FILE_RANGE; i++)
		if ((nr = syscall_nr(trace_op_name(i))) >= 0)
			s->rodata->sys_op[nr] = i + 1;
	s->rodata->offcpu_periods = o->offcpu_periods;
	s->rodata->delayacct_on = o->delayacct;
	if (!s->rodata->trace_aio)
		bpf_map__set_max_entries(s->maps.async_slots, 1);
	if (!s->rodata->trace_writeback)
		bpf_map__set_max_entries(s->maps.dirtiers, 1);
	bpf_map__set_max_entries(s->maps.events, o->rb_bytes);

	/* Before anything is loaded: a size the machine cannot give is refused at once. */
	err = mapmem_check(s->obj, "trace",
			   "its maps have fixed sizes: free memory, or raise the memory "
			   "cgroup limit");
	if (err)
		return err;
	err = build_plan(c);
	if (err)
		return err == -ENOMEM ? fail(err, "out of memory") : err;
	err = trace_bpf__load(s);
	if (err)
		return fail(err, "cannot load the BPF programs: %s%s", strerror(-err),
			    geteuid() ? " (run as root)" :
					" (see 'iospan doctor', -v for details)");
	err = filter_maps_fill(bpf_map__fd(c->skel->maps.filter_devs),
			       c->o->have_disk ? &c->o->disk : NULL,
			       bpf_map__fd(c->skel->maps.filter_cgroups),
			       c->o->have_cgroup ? c->o->cgroup_dir : NULL);
	if (err)
		return err;
	err = trace_bpf__attach(s);
	if (err)
		return fail(err, "cannot attach the BPF programs: %s (see 'iospan doctor')",
			    strerror(-err));
	err = attach_plan_attach(c->hooks, c->nr_hooks);
	if (err)
		return err;
	attach_plan_unavailable(c->hooks, c->nr_hooks, NULL, NULL, stderr, "iospan trace: ");
	c->rb = ring_buffer__new(bpf_map__fd(s->maps.events), on_record, c, NULL);
	if (!c->rb)
		return fail(-errno, "cannot open the ring buffer: %s", strerror(errno));
	attach_plan_print(c->hooks, c->nr_hooks, NULL);
	return 0;
}

/*
 * Stops the programs' emitting, then reads the ring buffer until it has handed over
 * every record they sent: a record emitted after the last read would be neither printed
 * nor counted. A program still running on another CPU when the flag was set ends within
 * microseconds; the wait is bounded all the same.
 */
static int stop_and_drain(struct trace_ctx *c)
{
	uint64_t cnt[TRACE_CNT_NR];
	int i, err;

	/* Attached still (detaching takes long, trace_cleanup() does it), but silent. */
	__atomic_store_n(&c->skel->bss->emit_stopped, true, __ATOMIC_SEQ_CST);
	c->draining = true;
	for (i = 0; i < 1000; i++) {
		err = ring_buffer__consume(c->rb);
		if (err < 0)
			return fail(err, "cannot read the ring buffer: %s", strerror(-err));
		err = read_counters(c, cnt);
		if (err)
			return fail(err, "cannot read the counters map: %s", strerror(-err));
		if (c->received >= cnt[TRACE_CNT_EMITTED] && i)
			return 0;
		usleep(1000);
	}
	warn("%" PRIu64 " requests were sent but never arrived",
	     cnt[TRACE_CNT_EMITTED] - c->received);
	return 0;
}

static int trace_run(struct trace_ctx *c)
{
	const struct trace_opts *o = c->o;
	uint64_t start, next, end = 0, now;
	char ops[256], rb[UNITS_BUF];
	int err, ms;

	install_stop_handlers();
	start = now_ns(CLOCK_MONOTONIC);
	if (o->duration_ns)
		end = start + o->duration_ns;
	next = start + o->interval_ns;
	c->last_summary = start;
	fprintf(stderr,
		"iospan trace: tracing %s requests over %.3f ms, summary every %.1f s; "
		"Ctrl-C to stop\n"
		"iospan trace: the %s ring buffer holds about %" PRIu64 " slow requests (of one "
		"bio) while the output catches up; drops are reported as they happen\n",
		trace_ops_format(o->ops, ops, sizeof(ops)), o->threshold_ns / 1e6,
		o->interval_ns / 1e9, fmt_bytes(o->rb_bytes, rb, sizeof(rb)),
		(uint64_t)(o->rb_bytes / RB_TYPICAL_REC));
	while (!stop_requested) {
		now = now_ns(CLOCK_MONOTONIC);
		if (end && now >= end)
			break;
		if (now >= next) {
			err = summary(c, (now - c->last_summary) / 1e9, false);
			if (err)
				return err;
			c->last_summary = now;
			sweep_writeback(c, false);
			next += o->interval_ns;
			if (next <= now)
				next = now + o->interval_ns;
			continue;
		}
		ms = (next - now) / 1000000 + 1;
		if (end && (end - now) / 1000000 + 1 < (uint64_t)ms)
			ms = (end - now) / 1000000 + 1;
		if (ms > 100)
			ms = 100;
		c->yield_at = now + ms * 1000000ULL;
		err = ring_buffer__poll(c->rb, ms);
		if (err < 0 && err != -EINTR)
			return fail(err, "cannot read the ring buffer: %s", strerror(-err));
		/* A trace file that lost a write is broken: stop, with the report so far. */
		if (perfetto_error(c->pf))
			break;
	}
	err = stop_and_drain(c);
	if (err)
		return err;
	now = now_ns(CLOCK_MONOTONIC);
	err = summary(c, (now - c->last_summary) / 1e9, true);
	if (err)
		return err;
	print_accounts(c);
	err = perfetto_close(c->pf);
	c->pf = NULL;
	if (err)
		return fail(err, "cannot write %s: %s; the trace file is incomplete",
			    o->perfetto_path, strerror(-err));
	return 0;
}

static void trace_cleanup(struct trace_ctx *c)
{
	struct lanes *l, *next;

	ring_buffer__free(c->rb);
	skel_detach(c->skel ? c->skel->skeleton : NULL, c->hooks, c->nr_hooks);
	attach_plan_detach(c->hooks, c->nr_hooks);
	trace_bpf__destroy(c->skel);
	/* After a failure reported already: what the file lacks is no news. */
	perfetto_close(c->pf);
	for (l = c->lanes; l; l = next) {
		next = l->next;
		free(l);
	}
	free(c->hooks);
	free(c->pcpu);
	free(c->prev);
	fspath_cache_free(c->paths);
	procinfo_free(c->procinfo);
	cgroup_map_free(c->cgmap);
	jw_free(c->jw);
	probe_cleanup();
}

int cmd_trace(int argc, char **argv)
{
	static struct trace_opts opts;
	static struct trace_ctx ctx;
	int err;

	memset(&opts, 0, sizeof(opts));
	memset(&ctx, 0, sizeof(ctx));
	err = trace_parse(argc, argv, &opts);
	if (err)
		return err > 0 ? 0 : err;
	ctx.o = &opts;
	if (gopts.json) {
		ctx.jw = jw_new(stdout);
		if (!ctx.jw) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
	}
	err = trace_setup(&ctx);
	if (err)
		goto cleanup;
	err = trace_run(&ctx);
cleanup:
	trace_cleanup(&ctx);
	return err;
}
