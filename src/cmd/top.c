// SPDX-License-Identifier: GPL-2.0
/*
 * iospan top: who is doing I/O, to which file, and how slow.
 *
 * The BPF side (src/bpf/top.bpf.c) sums everything per (owner, device, inode) in
 * kernel maps. Here the maps are read once per report: rows are summed over CPUs,
 * turned into deltas in periodic mode, grouped into processes, joined with paths,
 * cgroups and containers, and checked against /proc/diskstats (coverage). Only I/O
 * stalls arrive as events, through a ring buffer, and are aggregated per stack.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
#include "iospan_types.h"
#include "json.h"
#include "ksyms.h"
#include "mapmem.h"
#include "ops.h"
#include "printable.h"
#include "probe.h"
#include "procinfo.h"
#include "rbuf.h"
#include "units.h"
#include "top.skel.h"
#include "top_compat.skel.h"
#include "skel.h"

#define NSEC_PER_SEC 1000000000ULL
#define MAX_STALLS   512
/*
 * Largest --max-entries: about 0.8 GiB of kernel memory at load (paths and procs are
 * preallocated), more per CPU as rows fill; mapmem_check() refuses what the machine
 * cannot give below that.
 */
#define TOP_MAX_ENTRIES (1U << 20)

enum sort_key { SORT_DISK, SORT_FS, SORT_READ, SORT_WRITE, SORT_LATENCY };

/* What the main table's rows are: processes, files, or directories (--by). */
enum top_by { BY_PROCESS, BY_FILE, BY_DIR };

static const char *const sort_names[] = {"disk", "fs", "read", "write", "latency"};

struct top_opts {
	uint64_t duration_ns; /* one-shot window */
	uint64_t interval_ns; /* periodic: > 0 */
	uint64_t count;	      /* periodic reports, 0: until stopped */
	bool duration_set;
	struct disk disk;
	bool have_disk;
	uint32_t pid;
	char cgroup_dir[PATH_MAX];
	char cgroup_rel[PATH_MAX];
	bool have_cgroup;
	uint64_t max_procs, max_files, max_entries;
	enum sort_key sort;
	bool threads;
	bool no_syscalls; /* FS bytes without syscall tracepoints */
	enum top_by by;
	uint64_t dir_depth; /* --by dir: path components the directories keep */
	uint64_t stall_ns;  /* 0: stalls not traced */
};

/* One (owner, device, inode) row of the stats map, summed over CPUs. */
struct row {
	struct top_key key;
	uint64_t fs_read, fs_write, disk_read, disk_write;
	uint64_t q2c_sum, d2c_sum, q2c_max, d2c_max;
	uint64_t nr_q2c, nr_d2c;
	uint32_t flags, bdev;
	uint32_t gen, path_epoch; /* the file's generation as last seen (paths map key) */
};

struct wbrow {
	struct top_wb_key key;
	uint64_t bytes, nr;
};

struct proc_agg {
	uint32_t pid;
	struct top_proc info;
	struct row sum;	  /* totals over the process's rows but flushes (key unused) */
	struct row flush; /* its cache flushes: nr_q2c of them, q2c_* their latency */
	uint64_t writeback_bytes;
	uint32_t nr_files;
	struct row **files; /* rows of this process but flushes, sorted */
	size_t nr_rows;
	struct row **flushes; /* its flush rows, one per disk */
	size_t nr_flush_rows;
};

struct stall_agg {
	uint32_t tid, tgid;
	uint64_t cgid;
	char comm[TOP_COMM_LEN];
	uint64_t count, total_ns, max_ns;
	int nr_ips;
	uint64_t ips[TOP_STACK_DEPTH];
};

struct dev_cov {
	unsigned int major, minor;
	char name[DISK_NAME_LEN];
	uint64_t ds_read, ds_write;	/* /proc/diskstats sectors * 512 in the window */
	uint64_t seen_read, seen_write; /* completed bytes iospan accounted */
	uint64_t unattr_read, unattr_write;
	uint64_t flushes, flush_ns;	  /* cache flushes the disk completed, their time */
	uint64_t ds_flushes, ds_flush_ms; /* /proc/diskstats' flush fields in the window */
	bool traced; /* request-based (blk-mq): bio-based devices are not counted */
	bool ds_known;
	bool ds_flush_known; /* the kernel prints flush fields (5.5+) */
};

/* The cache flushes of one disk, cumulative (dev_flushes map). */
struct dev_flush_row {
	uint32_t dev;
	uint64_t nr, ns;
};

struct top_ctx {
	struct top_opts *o;
	struct top_bpf *skel;
	struct rbuf *rb; /* stall records */
	struct attach_hook *hooks;
	int nr_hooks;
	int ncpus;
	struct ksyms *ksyms;
	bool ksyms_wanted; /* stall stacks to symbolize: read once tracing runs */
	struct cgroup_map *cgmap;
	struct fspath_cache *fspaths;
	struct procinfo *procinfo;
	/* Cumulative values at the previous report (periodic mode). */
	struct row *prev;
	size_t nr_prev;
	struct wbrow *prev_wb;
	size_t nr_prev_wb;
	struct dev_flush_row *prev_fl;
	size_t nr_prev_fl;
	uint64_t prev_drops[TOP_DROP_NR];
	uint32_t gen;
	struct ds_snapshot ds_start, ds_end;
	struct stall_agg *stalls;
	size_t nr_stalls;
	uint64_t stalls_dropped;
	struct jw *jw;
	uint64_t reports;
	uint64_t pruned;
	/* CLOCK_MONOTONIC of the last map read: where the next report's window starts. */
	uint64_t window_start_ns;
};

/* What one report shows. */
struct report {
	double seconds;	  /* the window the numbers cover: from one map read to the next */
	double timestamp; /* wall clock of this report's map read (the window's end) */
	bool rates;
	bool stopped;
	struct row *rows;
	size_t nr_rows;
	struct wbrow *wb;
	size_t nr_wb;
	struct proc_agg *procs;
	size_t nr_procs;
	struct dev_cov *devs;
	size_t nr_devs;
	struct dev_flush_row *flushes; /* per disk, in the window */
	size_t nr_flushes;
	struct by_group *groups; /* --by file / dir: the rows of the main table */
	size_t nr_groups;
	uint64_t drops[TOP_DROP_NR];
};

static const char *const drop_names[TOP_DROP_NR] = {
	[TOP_DROP_STATS_FULL] = "stats_map_full", [TOP_DROP_LOST_BYTES] = "lost_bytes_events",
	[TOP_DROP_PROCS_FULL] = "procs_map_full", [TOP_DROP_WB_FULL] = "writeback_map_full",
	[TOP_DROP_UNMATCHED] = "unmatched_bios",  [TOP_DROP_CHAIN_TRUNC] = "truncated_bio_chains",
	[TOP_DROP_RINGBUF_FULL] = "ringbuf_full", [TOP_DROP_IOWAIT_FULL] = "iowait_map_full",
	[TOP_DROP_DIRTIER_FULL] = "dirtier_map_full",
	[TOP_DROP_WB_UNKNOWN_BYTES] = "writeback_dirtier_unknown_bytes",
	[TOP_DROP_MAP_BUSY] = "map_insert_busy", [TOP_DROP_DIO_SLOT_BUSY] = "async_dio_slot_busy",
	[TOP_DROP_HOOK_MISSED] = "hook_runs_missed", [TOP_DROP_MAP_NOMEM] = "map_alloc_failed",
};

/* Informational counters: they do not mean anything was lost. */
static bool drop_is_info(int i)
{
	return i == TOP_DROP_UNMATCHED || i == TOP_DROP_WB_UNKNOWN_BYTES;
}

static const char top_usage[] =
	"Usage: iospan top [OPTIONS] [interval [count]]\n"
	"\n"
	"Who is doing I/O, to which file, and how slow. Per process (busiest first): FS\n"
	"bytes (read/write syscalls, mmap, dirtied pages, async direct I/O) and DISK bytes\n"
	"(completed requests, credited to the process that queued them, or to the process\n"
	"that dirtied the pages for writeback), files, q2c and d2c latency; under each\n"
	"process its busiest files with full paths. Also: writeback done by other threads,\n"
	"I/O that belongs to no file, threads stalled on I/O with their kernel stacks, and\n"
	"per-disk coverage against /proc/diskstats.\n"
	"\n"
	"Without an interval: one report of totals after --duration. With one: a report\n"
	"of rates per second every interval, count times or until Ctrl-C.\n"
	"\n"
	"Options:\n"
	"  -d, --disk DISK           only this disk or partition (sda, /dev/loop0, 7:0)\n"
	"  -p, --pid PID             only this process\n"
	"      --cgroup PATH         only this cgroup v2 and its children (path below the\n"
	"                            cgroup2 mount, or absolute)\n"
	"  -n, --max-processes N     processes shown (default 10)\n"
	"      --max-files N         files shown per process (default 5)\n"
	"      --sort KEY            disk (default), fs, read, write or latency\n"
	"      --threads             one row per thread instead of per process\n"
	"      --by file             rows are files, busiest first, across all processes\n"
	"      --by dir DEPTH        rows are directories: files rolled up by the first\n"
	"                            DEPTH components of their paths\n"
	"      --stall-threshold D   report threads waiting for I/O longer than D (default\n"
	"                            100ms; 0 turns stall tracing off)\n"
	"      --duration S          length of the one-shot report (default 8 s)\n"
	"      --max-entries N       rows of the stats map (default 16384, at most 1048576);\n"
	"                            each costs about 0.8 KiB of kernel memory at start\n"
	"                            and 0.1 KiB more per CPU once used (-v shows the\n"
	"                            total); overflow is counted and shown\n"
	"      --no-syscalls         cheaper: no read/write syscall tracepoints (which put\n"
	"                            every syscall of every task on the slow path); FS\n"
	"                            reads then count whole pages looked up in the page\n"
	"                            cache, FS writes newly dirtied pages\n"
	"      --json                one JSON document (one object per line when periodic)\n"
	"  -v, --verbose             attach plan and libbpf messages on stderr\n"
	"  -h, --help                this help\n"
	"Durations are decimal numbers with a unit (ns, us, ms, s, m, h); --duration and\n"
	"the interval are at least 1ms.\n"
	"\n"
	"Examples:\n"
	"  iospan top                      8 s of totals\n"
	"  iospan top -d sda 2 5           five 2-second reports for sda\n"
	"  iospan top --cgroup /docker --json --duration 30\n"
	"  iospan top --by dir 6 2         which database directory, every 2 s\n"
	"\n"
	"Exit codes: 0 ok, 1 runtime failure, 2 bad usage. Manual: iospan-top(8).\n";

/* ------------------------------------------------------------------ options */

enum {
	OPT_CGROUP = 0x2000,
	OPT_MAX_FILES,
	OPT_SORT,
	OPT_THREADS,
	OPT_STALL,
	OPT_DURATION,
	OPT_MAX_ENTRIES,
	OPT_NO_SYSCALLS,
	OPT_BY,
};

/* --by process|file|dir DEPTH: DEPTH is the word after "dir". */
static int parse_by(struct top_opts *o, const char *arg, int argc, char **argv)
{
	if (!strcmp(arg, "process")) {
		o->by = BY_PROCESS;
	} else if (!strcmp(arg, "file")) {
		o->by = BY_FILE;
	} else if (!strcmp(arg, "dir")) {
		if (optind >= argc ||
		    parse_u64_range(argv[optind], 1, TOP_PATH_DEPTH, &o->dir_depth))
			return fail_usage("--by dir needs a DEPTH after it: how many path "
					  "components the directories keep, 1 to %d (e.g. --by "
					  "dir 3)",
					  TOP_PATH_DEPTH);
		optind++;
		o->by = BY_DIR;
	} else {
		return fail_usage("invalid --by '%s': use process, file or dir DEPTH", arg);
	}
	return 0;
}

static int top_parse(int argc, char **argv, struct top_opts *o)
{
	static const struct option long_opts[] = {
		{"disk", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},
		{"cgroup", required_argument, NULL, OPT_CGROUP},
		{"max-processes", required_argument, NULL, 'n'},
		{"max-files", required_argument, NULL, OPT_MAX_FILES},
		{"sort", required_argument, NULL, OPT_SORT},
		{"threads", no_argument, NULL, OPT_THREADS},
		{"stall-threshold", required_argument, NULL, OPT_STALL},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"max-entries", required_argument, NULL, OPT_MAX_ENTRIES},
		{"no-syscalls", no_argument, NULL, OPT_NO_SYSCALLS},
		{"by", required_argument, NULL, OPT_BY},
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	bool have_pid = false;
	int opt, err;
	size_t i;

	o->duration_ns = 8 * NSEC_PER_SEC;
	o->max_procs = 10;
	o->max_files = 5;
	o->max_entries = 16384;
	o->stall_ns = 100 * 1000000ULL;
	while ((opt = getopt_long(argc, argv, "d:p:n:" COMMON_SHORT_OPTS, long_opts, NULL)) != -1) {
		if (args_common_opt(opt))
			continue;
		switch (opt) {
		case OPT_HELP:
			fputs(top_usage, stdout);
			return 1;
		case 'd':
			err = args_disk("top", optarg, &o->disk, &o->have_disk);
			if (err)
				return err;
			break;
		case 'p':
			err = args_once("-p/--pid", &have_pid) ?: args_task_id(optarg, "pid", &o->pid);
			if (err)
				return err;
			break;
		case OPT_CGROUP:
			err = args_cgroup(optarg, o->cgroup_dir, sizeof(o->cgroup_dir),
					  o->cgroup_rel, sizeof(o->cgroup_rel), &o->have_cgroup);
			if (err)
				return err;
			break;
		case 'n':
			if (parse_u64_range(optarg, 1, 100000, &o->max_procs))
				return fail_usage("invalid --max-processes '%s': give 1 or more",
						  optarg);
			break;
		case OPT_MAX_FILES:
			if (parse_u64_range(optarg, 0, 100000, &o->max_files))
				return fail_usage("invalid --max-files '%s': give 0 or more",
						  optarg);
			break;
		case OPT_SORT:
			for (i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++)
				if (!strcmp(optarg, sort_names[i]))
					break;
			if (i == sizeof(sort_names) / sizeof(sort_names[0]))
				return fail_usage(
					"invalid --sort '%s': use disk, fs, read, write or "
					"latency",
					optarg);
			o->sort = i;
			break;
		case OPT_THREADS:
			o->threads = true;
			break;
		case OPT_NO_SYSCALLS:
			o->no_syscalls = true;
			break;
		case OPT_BY:
			err = parse_by(o, optarg, argc, argv);
			if (err)
				return err;
			break;
		case OPT_STALL:
			err = args_threshold("--stall-threshold", optarg, &o->stall_ns);
			if (err)
				return err;
			break;
		case OPT_DURATION:
			err = args_period("--duration", optarg, &o->duration_ns);
			if (err)
				return err;
			o->duration_set = true;
			break;
		case OPT_MAX_ENTRIES:
			if (parse_u64_range(optarg, 64, TOP_MAX_ENTRIES, &o->max_entries))
				return fail_usage("invalid --max-entries '%s': give 64 to %u (each "
						  "costs about 0.8 KiB of kernel memory)",
						  optarg, TOP_MAX_ENTRIES);
			break;
		default:
			return args_bad_option("top", argv);
		}
	}
	err = parse_interval_count(argc - optind, argv + optind, &o->interval_ns, &o->count);
	if (err)
		return err;
	if (o->interval_ns && o->duration_set)
		return fail_usage("--duration is for the one-shot report: give either --duration "
				  "or an interval");
	return 0;
}

/* ------------------------------------------------------------------ paths */

static int lookup_path(void *arg, const struct top_file_key *key, struct top_path *p)
{
	struct top_ctx *c = arg;

	return bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.paths), key, p) ? -errno : 0;
}

/* The user-visible path of a row's file as it is now; NULL if not captured. */
static const char *file_path(struct top_ctx *c, const struct row *r)
{
	return fspath_current(c->fspaths, r->key.dev, r->gen, r->key.ino);
}

static bool ino_special(uint64_t ino)
{
	return ino >= TOP_INO_SPECIAL;
}

static const char *kind_name(uint64_t ino)
{
	if (!ino_special(ino))
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

static bool row_is_flush(const struct row *r)
{
	return r->key.ino == TOP_INO(TOP_INO_FLUSH);
}

static const char *kind_label(uint64_t ino)
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

/* ------------------------------------------------------------------ reading maps */

static int key_cmp(const struct top_key *a, const struct top_key *b)
{
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return 0;
}

static int row_cmp_key(const void *a, const void *b)
{
	return key_cmp(&((const struct row *)a)->key, &((const struct row *)b)->key);
}

static int wb_cmp_key(const void *a, const void *b)
{
	const struct top_wb_key *x = &((const struct wbrow *)a)->key;
	const struct top_wb_key *y = &((const struct wbrow *)b)->key;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->flusher != y->flusher)
		return x->flusher < y->flusher ? -1 : 1;
	return 0;
}

/* The folds step through per-CPU values by struct size: libbpf lays them 8-byte aligned. */
_Static_assert(sizeof(struct top_stat) % 8 == 0, "per-CPU stride of top_stat");
_Static_assert(sizeof(struct top_wb_val) % 8 == 0, "per-CPU stride of top_wb_val");

/* Maxima are taken from this slot of the CPUs whose generation there is gen. */
struct max_slot {
	uint32_t slot, gen;
};

static void row_add(struct row *sum, const struct row *r);

/* The part of a row that stats_spill held (see top.bpf.c). */
static void row_merge(void *into, const void *from)
{
	const struct row *f = from;
	struct row *r = into;

	row_add(r, f);
	if (f->bdev)
		r->bdev = f->bdev;
	if (f->path_epoch > r->path_epoch) {
		r->path_epoch = f->path_epoch;
		r->gen = f->gen;
	}
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
		r->flags |= v->flags;
		if (v->bdev)
			r->bdev = v->bdev;
		/* The generation the file had when a CPU last looked (a reused inode). */
		if (v->path_epoch > r->path_epoch) {
			r->path_epoch = v->path_epoch;
			r->gen = v->gen;
		}
		if (v->max_gen[ms->slot] == ms->gen) {
			if (v->q2c_max[ms->slot] > r->q2c_max)
				r->q2c_max = v->q2c_max[ms->slot];
			if (v->d2c_max[ms->slot] > r->d2c_max)
				r->d2c_max = v->d2c_max[ms->slot];
		}
	}
}

/*
 * All rows of the stats map, summed over CPUs. Maxima are taken from @slot of the
 * CPUs whose generation there is @gen (the interval that just ended).
 */
static int read_stats(struct top_ctx *c, uint32_t slot, uint32_t gen, struct row **out, size_t *nr)
{
	struct max_slot ms = {.slot = slot, .gen = gen};
	void *rows;
	int err;

	err = bpfmap_collect_percpu_spilled(bpf_map__fd(c->skel->maps.stats),
					    bpf_map__fd(c->skel->maps.stats_spill),
					    sizeof(struct top_key), sizeof(struct top_stat),
					    sizeof(struct row), fold_stat, &ms, row_cmp_key,
					    row_merge, &rows, nr);
	if (err)
		return err;
	*out = rows;
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

	err = bpfmap_collect_percpu_spilled(bpf_map__fd(c->skel->maps.wb),
					    bpf_map__fd(c->skel->maps.wb_spill),
					    sizeof(struct top_wb_key), sizeof(struct top_wb_val),
					    sizeof(struct wbrow), fold_wb, NULL, wb_cmp_key, wb_merge,
					    &rows, nr);
	if (err)
		return err;
	*out = rows;
	return 0;
}

static int read_drops(struct top_ctx *c, uint64_t *out)
{
	int err = bpfmap_sum_percpu_u64(bpf_map__fd(c->skel->maps.drops), TOP_DROP_NR, out);

	out[TOP_DROP_HOOK_MISSED] = bpfobj_missed_runs(c->skel->obj);
	return err;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	/* A counter that went backwards (row deleted and re-created) counts from zero. */
	return a >= b ? a - b : a;
}

static void fold_dev_flush(void *row, const void *key, const void *vals, int ncpus, void *arg)
{
	const struct top_dev_flush *v = vals;
	struct dev_flush_row *r = row;
	int cpu;

	r->dev = *(const uint32_t *)key;
	for (cpu = 0; cpu < ncpus; cpu++) {
		r->nr += v[cpu].nr;
		r->ns += v[cpu].ns;
	}
}

/* The disks' cache flushes: cumulative in *@cum, in the window in *@out (periodic). */
static int read_dev_flushes(struct top_ctx *c, struct dev_flush_row **cum, size_t *nr,
			    struct dev_flush_row **out)
{
	struct dev_flush_row *d;
	void *rows;
	size_t i, j;
	int err;

	err = bpfmap_collect_percpu(bpf_map__fd(c->skel->maps.dev_flushes), sizeof(uint32_t),
				    sizeof(struct top_dev_flush), sizeof(struct dev_flush_row),
				    fold_dev_flush, NULL, &rows, nr);
	if (err)
		return err;
	*cum = rows;
	d = malloc((*nr ? *nr : 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	memcpy(d, rows, *nr * sizeof(*d));
	for (i = 0; i < *nr; i++)
		for (j = 0; j < c->nr_prev_fl; j++)
			if (c->prev_fl[j].dev == d[i].dev) {
				d[i].nr = sub0(d[i].nr, c->prev_fl[j].nr);
				d[i].ns = sub0(d[i].ns, c->prev_fl[j].ns);
			}
	*out = d;
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
		p = c->prev ? bsearch(&cur[i], c->prev, c->nr_prev, sizeof(*p), row_cmp_key) : NULL;
		if (!p)
			continue;
		d[i].fs_read = sub0(cur[i].fs_read, p->fs_read);
		d[i].fs_write = sub0(cur[i].fs_write, p->fs_write);
		d[i].disk_read = sub0(cur[i].disk_read, p->disk_read);
		d[i].disk_write = sub0(cur[i].disk_write, p->disk_write);
		d[i].q2c_sum = sub0(cur[i].q2c_sum, p->q2c_sum);
		d[i].d2c_sum = sub0(cur[i].d2c_sum, p->d2c_sum);
		d[i].nr_q2c = sub0(cur[i].nr_q2c, p->nr_q2c);
		d[i].nr_d2c = sub0(cur[i].nr_d2c, p->nr_d2c);
	}
	*out = d;
	return 0;
}

static int wb_delta(struct top_ctx *c, struct wbrow *cur, size_t nr)
{
	struct wbrow *p;
	size_t i;

	for (i = 0; i < nr; i++) {
		p = c->prev_wb ?
			    bsearch(&cur[i], c->prev_wb, c->nr_prev_wb, sizeof(*p), wb_cmp_key) :
			    NULL;
		if (!p)
			continue;
		cur[i].bytes = sub0(cur[i].bytes, p->bytes);
		cur[i].nr = sub0(cur[i].nr, p->nr);
	}
	return 0;
}

static bool row_active(const struct row *r)
{
	return r->fs_read || r->fs_write || r->disk_read || r->disk_write ||
	       (row_is_flush(r) && r->nr_q2c);
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
		if (row_active(&delta[i]) || cur[i].key.pid == TOP_PID_NONE)
			continue;
		/* Both parts of the row, or its next total would count the rest again. */
		bpf_map_delete_elem(spill_fd, &cur[i].key);
		if (!bpf_map_delete_elem(fd, &cur[i].key))
			c->pruned++;
	}
}

/* ------------------------------------------------------------------ grouping */

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

static enum sort_key g_sort; /* for qsort comparators */

static int row_ptr_cmp(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;
	uint64_t tx, ty, vx = row_sort_value(x, g_sort, &tx), vy = row_sort_value(y, g_sort, &ty);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return key_cmp(&x->key, &y->key);
}

static int proc_cmp(const void *a, const void *b)
{
	const struct proc_agg *x = a, *y = b;
	uint64_t tx, ty, vx = row_sort_value(&x->sum, g_sort, &tx),
			 vy = row_sort_value(&y->sum, g_sort, &ty);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void row_add(struct row *sum, const struct row *r)
{
	sum->fs_read += r->fs_read;
	sum->fs_write += r->fs_write;
	sum->disk_read += r->disk_read;
	sum->disk_write += r->disk_write;
	sum->q2c_sum += r->q2c_sum;
	sum->d2c_sum += r->d2c_sum;
	sum->nr_q2c += r->nr_q2c;
	sum->nr_d2c += r->nr_d2c;
	if (r->q2c_max > sum->q2c_max)
		sum->q2c_max = r->q2c_max;
	if (r->d2c_max > sum->d2c_max)
		sum->d2c_max = r->d2c_max;
	sum->flags |= r->flags;
}

static void proc_info(struct top_ctx *c, uint32_t pid, struct top_proc *info)
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

/* Groups the active rows by owner (rows are sorted by key, so owners are contiguous). */
static int group_procs(struct top_ctx *c, struct report *rep)
{
	struct proc_agg *procs = NULL, *p = NULL;
	size_t i, j, n = 0;
	int err = 0;

	procs = calloc(rep->nr_rows ? rep->nr_rows : 1, sizeof(*procs));
	if (!procs)
		return -ENOMEM;
	for (i = 0; i < rep->nr_rows; i++) {
		struct row *r = &rep->rows[i];

		if (!row_active(r))
			continue;
		if (!p || p->pid != r->key.pid) {
			p = &procs[n++];
			p->pid = r->key.pid;
			p->files = calloc(rep->nr_rows - i, sizeof(*p->files));
			p->flushes = calloc(rep->nr_rows - i, sizeof(*p->flushes));
			if (!p->files || !p->flushes) {
				err = -ENOMEM;
				goto cleanup;
			}
			proc_info(c, p->pid, &p->info);
		}
		/* Flushes move no bytes: their latency is not the data requests'. */
		if (row_is_flush(r)) {
			p->flushes[p->nr_flush_rows++] = r;
			row_add(&p->flush, r);
			continue;
		}
		p->files[p->nr_rows++] = r;
		row_add(&p->sum, r);
		if (!ino_special(r->key.ino))
			p->nr_files++;
	}
	for (i = 0; i < n; i++) {
		qsort(procs[i].files, procs[i].nr_rows, sizeof(*procs[i].files), row_ptr_cmp);
		for (j = 0; j < rep->nr_wb; j++)
			if (rep->wb[j].key.pid == procs[i].pid)
				procs[i].writeback_bytes += rep->wb[j].bytes;
	}
	qsort(procs, n, sizeof(*procs), proc_cmp);
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

/* ------------------------------------------------------------------ coverage */

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
static void cov_target(const struct top_opts *o, unsigned int major, unsigned int minor,
		       unsigned int *tmaj, unsigned int *tmin)
{
	struct disk d;

	*tmaj = major;
	*tmin = minor;
	if (o->have_disk && o->disk.partition)
		return;
	if (!disk_from_devnum(major, minor, &d)) {
		*tmaj = d.disk_major;
		*tmin = d.disk_minor;
	}
}

static bool cov_selected(const struct top_opts *o, unsigned int major, unsigned int minor)
{
	if (!o->have_disk)
		return true;
	return o->disk.major == major && o->disk.minor == minor;
}

static int compute_coverage(struct top_ctx *c, struct report *rep)
{
	const struct top_opts *o = c->o;
	unsigned int tmaj, tmin;
	struct dev_cov *d;
	char sys[PATH_MAX];
	size_t i;

	for (i = 0; i < rep->nr_rows; i++) {
		const struct row *r = &rep->rows[i];
		uint32_t bdev = r->bdev ? r->bdev : r->key.dev;

		if (!r->disk_read && !r->disk_write)
			continue;
		cov_target(o, KDEV_MAJOR(bdev), KDEV_MINOR(bdev), &tmaj, &tmin);
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
	for (i = 0; i < rep->nr_flushes; i++) {
		const struct dev_flush_row *f = &rep->flushes[i];

		if (!f->nr || !cov_selected(o, KDEV_MAJOR(f->dev), KDEV_MINOR(f->dev)))
			continue;
		d = cov_get(rep, KDEV_MAJOR(f->dev), KDEV_MINOR(f->dev));
		if (!d)
			return -ENOMEM;
		d->flushes = f->nr;
		d->flush_ns = f->ns;
	}
	for (i = 0; i < c->ds_end.nr; i++) {
		const struct ds_dev *e = &c->ds_end.devs[i], *s;
		uint64_t rd, wr, fl = 0, fl_ms = 0;
		bool want;

		want = o->have_disk ? cov_selected(o, e->major, e->minor) : !e->partition;
		if (!want)
			continue;
		s = ds_snapshot_find(&c->ds_start, e->major, e->minor, e->name);
		rd = (e->f[DS_RD_SECTORS] - (s ? s->f[DS_RD_SECTORS] : 0)) * 512;
		wr = (e->f[DS_WR_SECTORS] - (s ? s->f[DS_WR_SECTORS] : 0)) * 512;
		if (s && (e->f[DS_RD_SECTORS] < s->f[DS_RD_SECTORS] ||
			  e->f[DS_WR_SECTORS] < s->f[DS_WR_SECTORS]))
			rd = wr = 0;
		if (e->nr_fields > DS_FL_TICKS && s) {
			fl = sub0(e->f[DS_FL_IOS], s->f[DS_FL_IOS]);
			fl_ms = sub0(e->f[DS_FL_TICKS], s->f[DS_FL_TICKS]);
		}
		d = NULL;
		if (rd || wr || fl || o->have_disk) {
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
			disk_name_of(d->major, d->minor, d->name, sizeof(d->name));
		cov_target(o, d->major, d->minor, &tmaj, &tmin);
		if (o->have_disk && o->disk.partition) {
			tmaj = o->disk.disk_major;
			tmin = o->disk.disk_minor;
		}
		/* Request-based (blk-mq) disks have an mq directory; dm, md, zram do not. */
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/mq", tmaj, tmin);
		d->traced = !access(sys, F_OK);
	}
	return 0;
}

/* ------------------------------------------------------------------ stalls */

static int on_stall(void *ctx, const void *data, uint32_t size)
{
	const struct top_stall *e = data;
	struct top_ctx *c = ctx;
	struct stall_agg *a;
	int nr, i;

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

static int stall_cmp(const void *a, const void *b)
{
	const struct stall_agg *x = a, *y = b;

	if (x->max_ns != y->max_ns)
		return x->max_ns > y->max_ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* ------------------------------------------------------------------ rendering */

struct cg_desc {
	const char *path; /* relative to the cgroup2 mount, NULL if unknown */
	struct container ct;
	bool has_ct;
};

static void describe_cgroup(struct top_ctx *c, uint64_t cgid, struct cg_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->path = cgroup_map_path(c->cgmap, cgid);
	d->has_ct = d->path && cgroup_container(d->path, &d->ct);
}

/* @s cut from the left to @width characters ("...tail"), into @buf. */
static const char *trunc_left(const char *s, size_t width, char *buf, size_t len)
{
	size_t n = strlen(s);

	if (n <= width || width < 4)
		return s;
	snprintf(buf, len, "...%s", s + n - (width - 3));
	return buf;
}

static int lookup_title(void *arg, uint32_t tgid, struct proc_title *t)
{
	struct top_ctx *c = arg;

	return bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.titles), &tgid, t) ? -errno : 0;
}

/*
 * The CGROUP/CONTAINER cell of process @pid (a tgid) named @comm: a container's short
 * id, else the cgroup path's tail; for a process in the cgroup v2 root, its cgroup v1
 * blkio group if it is in one (that is where blk-throttle limits it).
 */
static const char *cgroup_cell(struct top_ctx *c, uint32_t pid, const char *comm, uint64_t cgid,
			       size_t width, char *buf, size_t len)
{
	struct proc_ident id;
	char tmp[64];
	struct cg_desc d;

	describe_cgroup(c, cgid, &d);
	procinfo_get(c->procinfo, pid, comm, &id);
	if (d.has_ct)
		snprintf(buf, len, "%s", printable(d.ct.id));
	else if (id.blkio && (!d.path || !strcmp(d.path, "/")))
		snprintf(buf, len, "blkio:%.57s",
			 trunc_left(printable(id.blkio), width - 6, tmp, sizeof(tmp)));
	else if (!d.path)
		snprintf(buf, len, "cgid:%" PRIu64, cgid);
	else
		snprintf(buf, len, "%s", trunc_left(printable(d.path), width, tmp, sizeof(tmp)));
	return buf;
}

/*
 * Milliseconds in at most 4 characters, so "avg/max" fits the table: ".05", "4.2",
 * "120", "1.5k" (1.5 s), "12k".
 */
static void fmt_ms(double ms, char *buf, size_t len)
{
	if (ms < 0.995) {
		snprintf(buf, len, "%.2f", ms);
		memmove(buf, buf + 1, strlen(buf)); /* "0.05" -> ".05" */
	} else if (ms < 9.95) {
		snprintf(buf, len, "%.1f", ms);
	} else if (ms < 999.5) {
		snprintf(buf, len, "%.0f", ms);
	} else if (ms < 9950) {
		snprintf(buf, len, "%.1fk", ms / 1000);
	} else {
		snprintf(buf, len, "%.0fk", ms / 1000);
	}
}

/* "avg/max" in ms, or "-" without samples. */
static const char *lat_cell(uint64_t sum, uint64_t nr, uint64_t max, char *buf, size_t len)
{
	char a[16], m[16];

	if (!nr)
		return "-";
	fmt_ms(sum / 1e6 / nr, a, sizeof(a));
	fmt_ms(max / 1e6, m, sizeof(m));
	snprintf(buf, len, "%s/%s", a, m);
	return buf;
}

/* A byte column's header: periodic reports show rates, and say so ("/s"). */
#define BYTES_HDR(rep, total, rate) ((rep)->rates ? (rate) : (total))

static const char *bytes_cell(const struct report *rep, uint64_t v, char *buf, size_t len)
{
	return rep->rates ? fmt_rate(v, rep->seconds, buf, len) : fmt_bytes(v, buf, len);
}

/* A count (or its rate per second) in at most 5 characters: "12", "4.5", "1234", "56k". */
static const char *count_cell(const struct report *rep, uint64_t n, char *buf, size_t len)
{
	double v = rep->rates && rep->seconds > 0 ? n / rep->seconds : n;

	if (rep->rates && v < 9.95)
		snprintf(buf, len, "%.1f", v);
	else if (v < 99999.5)
		snprintf(buf, len, "%.0f", v);
	else if (v < 9999.5e3)
		snprintf(buf, len, "%.0fk", v / 1e3);
	else
		snprintf(buf, len, "%.0fM", v / 1e6);
	return buf;
}

static void marks(uint32_t flags, char *buf)
{
	char *p = buf;

	if (flags & TOP_F_DIRECT)
		*p++ = 'D';
	if (flags & TOP_F_WRITEBACK)
		*p++ = 'W';
	if (flags & TOP_F_MMAP_READ)
		*p++ = 'M';
	if (flags & TOP_F_PAGEDIRTY)
		*p++ = 'P';
	if (flags & (TOP_F_APPROX | TOP_F_LOST))
		*p++ = '~';
	*p = '\0';
}

static double avg_us(uint64_t sum, uint64_t nr)
{
	return nr ? sum / 1e3 / nr : 0;
}

/*
 * The disk a file row is on: the one its requests went to, or for a file system named
 * by an anonymous device (btrfs) that has moved no DISK bytes yet, its backing device.
 */
static const char *row_disk_name(struct top_ctx *c, const struct row *r, char *buf, size_t len)
{
	uint32_t dev = r->key.dev;

	if (!KDEV_MAJOR(dev) && !ino_special(r->key.ino)) {
		if (r->bdev)
			dev = r->bdev;
		else if (fspath_cache_fs_disk(c->fspaths, dev))
			dev = fspath_cache_fs_disk(c->fspaths, dev);
	}
	return disk_name_of(KDEV_MAJOR(dev), KDEV_MINOR(dev), buf, len);
}

static void print_file_row(struct top_ctx *c, const struct report *rep, const struct row *r)
{
	char b[4][UNITS_BUF], q[40], d[40], id[112], mk[8], pbuf[PATH_MAX], dname[DISK_NAME_LEN];
	const char *path;

	row_disk_name(c, r, dname, sizeof(dname));
	marks(r->flags, mk);
	if (ino_special(r->key.ino))
		snprintf(id, sizeof(id), "%s %s", printable(dname), kind_name(r->key.ino));
	else
		snprintf(id, sizeof(id), "%s ino %" PRIu64, printable(dname), (uint64_t)r->key.ino);
	printf("  %-31.31s %-3s %7s %8s %9s %10s %5s %8s %8s\n", id, mk,
	       bytes_cell(rep, r->fs_read, b[0], UNITS_BUF),
	       bytes_cell(rep, r->fs_write, b[1], UNITS_BUF),
	       bytes_cell(rep, r->disk_read, b[2], UNITS_BUF),
	       bytes_cell(rep, r->disk_write, b[3], UNITS_BUF), "",
	       lat_cell(r->q2c_sum, r->nr_q2c, r->q2c_max, q, sizeof(q)),
	       lat_cell(r->d2c_sum, r->nr_d2c, r->d2c_max, d, sizeof(d)));
	if (ino_special(r->key.ino))
		path = kind_label(r->key.ino);
	else
		path = file_path(c, r);
	if (!path)
		path = "(path not captured)";
	printf("      %s\n", trunc_left(printable(path), 93, pbuf, sizeof(pbuf)));
}

/* A process's cache flushes on one disk: how many (FILES column) and how long (Q2C). */
static void print_flush_row(struct top_ctx *c, const struct report *rep, const struct row *r)
{
	char n[UNITS_BUF], q[40], d[40], id[112], dname[DISK_NAME_LEN];

	row_disk_name(c, r, dname, sizeof(dname));
	snprintf(id, sizeof(id), "%s flush", dname);
	printf("  %-31.31s %-3s %7s %8s %9s %10s %5s %8s %8s\n", id, "", "-", "-", "-", "-",
	       count_cell(rep, r->nr_q2c, n, sizeof(n)),
	       lat_cell(r->q2c_sum, r->nr_q2c, r->q2c_max, q, sizeof(q)),
	       lat_cell(r->d2c_sum, r->nr_d2c, r->d2c_max, d, sizeof(d)));
	printf("      %s\n", kind_label(r->key.ino));
}

/* The process of owner @pid (a thread with --threads). */
static uint32_t proc_tgid(uint32_t pid, const struct top_proc *info)
{
	return info->tgid ? info->tgid : pid;
}

/* A title the process set ("postgres: checkpointer"), on a line of its own. */
static void print_title(struct top_ctx *c, uint32_t pid, const char *comm)
{
	struct proc_ident id;

	procinfo_get(c->procinfo, pid, comm, &id);
	if (id.title && id.cmdline)
		printf("  \"%.91s\"\n", printable(id.cmdline));
}

static void render_processes(struct top_ctx *c, const struct report *rep)
{
	const struct top_opts *o = c->o;
	char b[4][UNITS_BUF], q[40], d[40], cg[64];
	uint64_t shown = 0, j;
	size_t i;

	printf("%-7s %-12s %-16s %7s %8s %9s %10s %5s %8s %8s\n", o->threads ? "TID" : "PID",
	       "COMMAND", "CGROUP/CONTAINER", BYTES_HDR(rep, "FS_READ", "FS_RD/s"),
	       BYTES_HDR(rep, "FS_WRITE", "FS_WR/s"), BYTES_HDR(rep, "DISK_READ", "DISK_RD/s"),
	       BYTES_HDR(rep, "DISK_WRITE", "DISK_WR/s"), "FILES", "Q2C_MS", "D2C_MS");
	for (i = 0; i < rep->nr_procs && shown < o->max_procs; i++) {
		const struct proc_agg *p = &rep->procs[i];

		if (p->pid == TOP_PID_NONE)
			continue;
		shown++;
		printf("%-7u %-12.12s %-16s %7s %8s %9s %10s %5u %8s %8s\n", p->pid,
		       printable(p->info.comm),
		       cgroup_cell(c, proc_tgid(p->pid, &p->info), p->info.comm, p->info.cgid, 16,
				   cg, sizeof(cg)),
		       bytes_cell(rep, p->sum.fs_read, b[0], UNITS_BUF),
		       bytes_cell(rep, p->sum.fs_write, b[1], UNITS_BUF),
		       bytes_cell(rep, p->sum.disk_read, b[2], UNITS_BUF),
		       bytes_cell(rep, p->sum.disk_write, b[3], UNITS_BUF), p->nr_files,
		       lat_cell(p->sum.q2c_sum, p->sum.nr_q2c, p->sum.q2c_max, q, sizeof(q)),
		       lat_cell(p->sum.d2c_sum, p->sum.nr_d2c, p->sum.d2c_max, d, sizeof(d)));
		print_title(c, proc_tgid(p->pid, &p->info), p->info.comm);
		for (j = 0; j < p->nr_flush_rows; j++)
			print_flush_row(c, rep, p->flushes[j]);
		for (j = 0; j < p->nr_rows && j < o->max_files; j++)
			print_file_row(c, rep, p->files[j]);
		if (p->nr_rows > o->max_files && o->max_files)
			printf("  ... %zu more\n", p->nr_rows - (size_t)o->max_files);
	}
	if (!shown)
		printf("(no I/O by any process)\n");
}

static int wb_bytes_cmp(const void *a, const void *b)
{
	const struct wbrow *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return wb_cmp_key(a, b);
}

/* The path of a writeback row's file: the one its dirtier's row of the file names. */
static const char *wb_path(struct top_ctx *c, const struct report *rep, const struct wbrow *w)
{
	struct row k = {.key = {.pid = w->key.pid, .dev = w->key.dev, .ino = w->key.ino}};
	const struct row *r = bsearch(&k, rep->rows, rep->nr_rows, sizeof(k), row_cmp_key);

	return r ? file_path(c, r) : fspath_current(c->fspaths, w->key.dev, 0, w->key.ino);
}

static void render_writeback(struct top_ctx *c, const struct report *rep, struct wbrow *wb,
			     size_t nr)
{
	char b[UNITS_BUF], cg[64], fl[40], pbuf[PATH_MAX];
	struct top_proc src, flusher;
	const char *path;
	size_t i, shown = 0;

	for (i = 0; i < nr; i++)
		if (wb[i].bytes)
			shown++;
	if (!shown)
		return;
	printf("\nWRITEBACK: pages written by another thread, credited to the process that "
	       "dirtied them\n");
	printf("%-7s %-12s %-16s %-24s %10s\n", "PID", "COMMAND", "CGROUP/CONTAINER", "FLUSHED BY",
	       BYTES_HDR(rep, "DISK_WRITE", "DISK_WR/s"));
	for (i = 0, shown = 0; i < nr && shown < 2 * c->o->max_procs; i++) {
		if (!wb[i].bytes)
			continue;
		shown++;
		proc_info(c, wb[i].key.pid, &src);
		proc_info(c, wb[i].key.flusher, &flusher);
		snprintf(fl, sizeof(fl), "%s (%u)", printable(flusher.comm), wb[i].key.flusher);
		printf("%-7u %-12.12s %-16s %-24.24s %10s\n", wb[i].key.pid, printable(src.comm),
		       cgroup_cell(c, proc_tgid(wb[i].key.pid, &src), src.comm, src.cgid, 16, cg,
				   sizeof(cg)),
		       fl, bytes_cell(rep, wb[i].bytes, b, sizeof(b)));
		path = wb_path(c, rep, &wb[i]);
		printf("      %s\n",
		       trunc_left(path ? printable(path) : "(path not captured)", 93, pbuf,
				  sizeof(pbuf)));
	}
}

static int nofile_cmp(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;
	uint64_t vx = x->disk_read + x->disk_write, vy = y->disk_read + y->disk_write;

	if (vx != vy)
		return vx > vy ? -1 : 1;
	return key_cmp(&x->key, &y->key);
}

static int render_nofile(struct top_ctx *c, const struct report *rep)
{
	char b[2][UNITS_BUF], q[40], d[40], dname[DISK_NAME_LEN];
	struct top_proc info;
	struct row **v;
	size_t i, n = 0;

	v = calloc(rep->nr_rows ? rep->nr_rows : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < rep->nr_rows; i++)
		if (ino_special(rep->rows[i].key.ino) &&
		    (rep->rows[i].disk_read || rep->rows[i].disk_write))
			v[n++] = &rep->rows[i];
	if (n) {
		qsort(v, n, sizeof(*v), nofile_cmp);
		printf("\nNO FILE: I/O that belongs to no file (kept, never dropped)\n");
		printf("%-7s %-14s %-8s %-13s %9s %10s %8s %8s\n", "PID", "COMMAND", "DEVICE",
		       "KIND", BYTES_HDR(rep, "DISK_READ", "DISK_RD/s"),
		       BYTES_HDR(rep, "DISK_WRITE", "DISK_WR/s"), "Q2C_MS", "D2C_MS");
	}
	for (i = 0; i < n && i < 2 * c->o->max_procs; i++) {
		const struct row *r = v[i];
		char pid[16];

		proc_info(c, r->key.pid, &info);
		if (r->key.pid == TOP_PID_NONE)
			snprintf(pid, sizeof(pid), "-");
		else
			snprintf(pid, sizeof(pid), "%u", r->key.pid);
		disk_name_of(KDEV_MAJOR(r->key.dev), KDEV_MINOR(r->key.dev), dname, sizeof(dname));
		printf("%-7s %-14.14s %-8.8s %-13s %9s %10s %8s %8s\n", pid, printable(info.comm),
		       printable(dname),
		       kind_name(r->key.ino), bytes_cell(rep, r->disk_read, b[0], UNITS_BUF),
		       bytes_cell(rep, r->disk_write, b[1], UNITS_BUF),
		       lat_cell(r->q2c_sum, r->nr_q2c, r->q2c_max, q, sizeof(q)),
		       lat_cell(r->d2c_sum, r->nr_d2c, r->d2c_max, d, sizeof(d)));
	}
	free(v);
	return 0;
}

static void render_stalls(struct top_ctx *c)
{
	char cg[64], tot[UNITS_BUF], max[UNITS_BUF], thr[UNITS_BUF], sym[256];
	size_t i;
	int j;

	if (!c->o->stall_ns)
		return;
	fmt_ns(c->o->stall_ns, thr, sizeof(thr));
	if (!c->nr_stalls) {
		printf("\nI/O STALLS: no thread waited for I/O longer than %s\n", thr);
		return;
	}
	qsort(c->stalls, c->nr_stalls, sizeof(*c->stalls), stall_cmp);
	printf("\nI/O STALLS: threads that waited for I/O longer than %s\n", thr);
	printf("%-7s %-7s %-15s %-16s %5s %8s %8s\n", "TID", "PID", "COMMAND", "CGROUP/CONTAINER",
	       "COUNT", "TOTAL", "MAX");
	for (i = 0; i < c->nr_stalls && i < c->o->max_procs; i++) {
		const struct stall_agg *a = &c->stalls[i];

		printf("%-7u %-7u %-15.15s %-16s %5" PRIu64 " %8s %8s\n", a->tid, a->tgid,
		       printable(a->comm),
		       cgroup_cell(c, a->tgid, a->comm, a->cgid, 16, cg, sizeof(cg)), a->count,
		       fmt_ns(a->total_ns, tot, sizeof(tot)), fmt_ns(a->max_ns, max, sizeof(max)));
		for (j = 0; j < a->nr_ips; j++)
			printf("        %s\n", ksyms_format(c->ksyms, a->ips[j], sym, sizeof(sym)));
		if (!a->nr_ips)
			printf("        (no stack)\n");
	}
	if (c->nr_stalls > c->o->max_procs)
		printf("... %zu more\n", c->nr_stalls - (size_t)c->o->max_procs);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0;
}

static bool coverage_meaningful(const struct top_opts *o)
{
	/* With -p or --cgroup the other processes' I/O is deliberately not counted. */
	return !o->pid && !o->have_cgroup;
}

static void render_coverage(struct top_ctx *c, const struct report *rep)
{
	char b[4][UNITS_BUF];
	size_t i;

	if (!rep->nr_devs)
		return;
	printf("\nCOVERAGE: bytes iospan counted vs /proc/diskstats in the same window; the\n"
	       "disk's cache flushes\n");
	printf("%-8s %10s %11s %9s %10s %8s %10s %7s %8s\n", "DISK",
	       BYTES_HDR(rep, "DS_READ", "DS_RD/s"), BYTES_HDR(rep, "DS_WRITE", "DS_WR/s"),
	       BYTES_HDR(rep, "SEEN_READ", "SEEN_RD/s"), BYTES_HDR(rep, "SEEN_WRITE", "SEEN_WR/s"),
	       "COVERAGE", "ATTRIBUTED", BYTES_HDR(rep, "FLUSHES", "FLUSH/s"), "FLUSH_MS");
	for (i = 0; i < rep->nr_devs; i++) {
		const struct dev_cov *d = &rep->devs[i];
		uint64_t ds = d->ds_read + d->ds_write, seen = d->seen_read + d->seen_write;
		uint64_t attr = seen - d->unattr_read - d->unattr_write;
		char cov[16], att[16], fl[UNITS_BUF], flms[40];

		if (!d->traced) {
			snprintf(cov, sizeof(cov), "untraced");
			snprintf(att, sizeof(att), "-");
		} else if (!coverage_meaningful(c->o)) {
			snprintf(cov, sizeof(cov), "filtered");
			snprintf(att, sizeof(att), "-");
		} else if (!ds) {
			snprintf(cov, sizeof(cov), seen ? "-" : "idle");
			snprintf(att, sizeof(att), "-");
		} else {
			snprintf(cov, sizeof(cov), "%.1f%%", pct(seen, ds));
			snprintf(att, sizeof(att), "%.1f%%", pct(attr, ds));
		}
		if (d->flushes)
			fmt_ms(d->flush_ns / 1e6 / d->flushes, flms, sizeof(flms));
		else
			snprintf(flms, sizeof(flms), "-");
		printf("%-8.8s %10s %11s %9s %10s %8s %10s %7s %8s\n", printable(d->name),
		       bytes_cell(rep, d->ds_read, b[0], UNITS_BUF),
		       bytes_cell(rep, d->ds_write, b[1], UNITS_BUF),
		       bytes_cell(rep, d->seen_read, b[2], UNITS_BUF),
		       bytes_cell(rep, d->seen_write, b[3], UNITS_BUF), cov, att,
		       count_cell(rep, d->flushes, fl, sizeof(fl)), flms);
	}
}

static void render_drops(struct top_ctx *c, const struct report *rep)
{
	bool any = false;
	int i;

	printf("\nLOST:");
	for (i = 0; i < TOP_DROP_NR; i++) {
		if (!rep->drops[i] || drop_is_info(i))
			continue;
		printf("%s %s %" PRIu64, any ? "," : "", drop_names[i], rep->drops[i]);
		any = true;
	}
	if (c->stalls_dropped) {
		printf("%s stalls_not_kept %" PRIu64, any ? "," : "", c->stalls_dropped);
		any = true;
	}
	printf("%s\n", any ? "" : " nothing");
	attach_plan_unavailable(c->hooks, c->nr_hooks, NULL, NULL, stdout, "");
	if (rep->drops[TOP_DROP_UNMATCHED])
		printf("(bios completed without an owner record: %" PRIu64
		       ", counted as unattributed)\n",
		       rep->drops[TOP_DROP_UNMATCHED]);
	if (rep->drops[TOP_DROP_WB_UNKNOWN_BYTES]) {
		char b[UNITS_BUF];

		printf("(page cache writes with no dirtier on record: %s, credited to the thread "
		       "that wrote them:\n dirtied before tracing, by a kernel thread, or records "
		       "recycled)\n",
		       fmt_bytes(rep->drops[TOP_DROP_WB_UNKNOWN_BYTES], b, sizeof(b)));
	}
	printf("Marks: D direct I/O, W written back by another thread, M mmap faults, "
	       "P dirtied pages,\n~ approximate. Q2C/D2C: avg/max ms (k = seconds), from request "
	       "start / issue.\nFlush rows: requests that waited for a cache flush (FILES "
	       "column), their time (Q2C).\n");
}

static void render_by(struct top_ctx *c, const struct report *rep);

static void render_text(struct top_ctx *c, struct report *rep)
{
	char when[64];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (rep->rates && isatty(STDOUT_FILENO))
		printf("\033[H\033[2J");
	printf("iospan top  %s  %.1f s%s%s\n\n", when, rep->seconds,
	       rep->rates ? ", rates per second" : ", totals",
	       rep->stopped ? " (stopped early)" : "");
	if (c->o->by == BY_PROCESS)
		render_processes(c, rep);
	else
		render_by(c, rep);
	render_writeback(c, rep, rep->wb, rep->nr_wb);
	render_nofile(c, rep);
	render_stalls(c);
	render_coverage(c, rep);
	render_drops(c, rep);
	if (rep->rates)
		printf("\n");
	fflush(stdout);
}

/* cgroup, container and who process @pid (a tgid) named @comm is beyond its comm. */
static void json_cgroup(struct top_ctx *c, struct jw *jw, uint32_t pid, const char *comm,
			uint64_t cgid)
{
	struct proc_ident id;
	struct cg_desc d;

	procinfo_get(c->procinfo, pid, comm, &id);
	if (id.cmdline)
		jw_kv_string(jw, "cmdline", id.cmdline);
	else
		jw_kv_null(jw, "cmdline");
	if (id.blkio)
		jw_kv_string(jw, "blkio_cgroup", id.blkio);
	else
		jw_kv_null(jw, "blkio_cgroup");
	describe_cgroup(c, cgid, &d);
	if (d.path)
		jw_kv_string(jw, "cgroup", d.path);
	else
		jw_kv_null(jw, "cgroup");
	jw_kv_uint(jw, "cgroup_id", cgid);
	if (d.has_ct) {
		jw_kv_string(jw, "container", d.ct.id);
		jw_kv_string(jw, "container_runtime", d.ct.runtime);
	} else {
		jw_kv_null(jw, "container");
		jw_kv_null(jw, "container_runtime");
	}
}

static void json_dev(struct jw *jw, const char *key, uint32_t dev)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%u:%u", KDEV_MAJOR(dev), KDEV_MINOR(dev));
	jw_kv_string(jw, key, buf);
}

static void json_latency(struct jw *jw, const struct row *r)
{
	jw_kv_float(jw, "q2c_avg_us", avg_us(r->q2c_sum, r->nr_q2c), 1);
	jw_kv_float(jw, "q2c_max_us", r->q2c_max / 1e3, 1);
	jw_kv_float(jw, "d2c_avg_us", avg_us(r->d2c_sum, r->nr_d2c), 1);
	jw_kv_float(jw, "d2c_max_us", r->d2c_max / 1e3, 1);
	jw_kv_uint(jw, "requests", r->nr_q2c > r->nr_d2c ? r->nr_q2c : r->nr_d2c);
}

static void json_bytes(struct jw *jw, const struct row *r)
{
	jw_kv_uint(jw, "fs_read_bytes", r->fs_read);
	jw_kv_uint(jw, "fs_write_bytes", r->fs_write);
	jw_kv_uint(jw, "disk_read_bytes", r->disk_read);
	jw_kv_uint(jw, "disk_write_bytes", r->disk_write);
}

static void json_file(struct top_ctx *c, struct jw *jw, const struct row *r)
{
	char dname[DISK_NAME_LEN];
	const char *path;

	jw_start_object(jw);
	json_dev(jw, "dev", r->key.dev);
	jw_kv_string(jw, "disk", row_disk_name(c, r, dname, sizeof(dname)));
	jw_kv_string(jw, "kind", kind_name(r->key.ino));
	if (ino_special(r->key.ino)) {
		jw_kv_null(jw, "inode");
		jw_kv_null(jw, "path");
	} else {
		jw_kv_uint(jw, "inode", r->key.ino);
		path = file_path(c, r);
		if (path)
			jw_kv_string(jw, "path", path);
		else
			jw_kv_null(jw, "path");
	}
	json_bytes(jw, r);
	json_latency(jw, r);
	jw_kv_bool(jw, "direct", r->flags & TOP_F_DIRECT);
	jw_kv_bool(jw, "writeback", r->flags & TOP_F_WRITEBACK);
	/* Without syscall tracing, dirtied pages are every buffered write, not just mmap. */
	jw_kv_bool(jw, "mmap",
		   (r->flags & TOP_F_MMAP_READ) ||
			   (!c->o->no_syscalls && (r->flags & TOP_F_PAGEDIRTY)));
	jw_kv_bool(jw, "fs_bytes_in_pages", r->flags & (TOP_F_PAGEDIRTY | TOP_F_PAGE_GRANULAR));
	jw_kv_bool(jw, "approximate", r->flags & (TOP_F_APPROX | TOP_F_LOST));
	jw_end_object(jw);
}

/* A process's cache flushes: totals, and per disk. */
static void json_flushes(struct top_ctx *c, struct jw *jw, const struct proc_agg *p)
{
	char dname[DISK_NAME_LEN];
	size_t i;

	jw_kv_uint(jw, "flush_requests", p->flush.nr_q2c);
	jw_kv_float(jw, "flush_avg_us", avg_us(p->flush.q2c_sum, p->flush.nr_q2c), 1);
	jw_kv_float(jw, "flush_max_us", p->flush.q2c_max / 1e3, 1);
	jw_kv_array(jw, "flushes");
	for (i = 0; i < p->nr_flush_rows; i++) {
		const struct row *r = p->flushes[i];

		jw_start_object(jw);
		json_dev(jw, "dev", r->key.dev);
		jw_kv_string(jw, "disk", row_disk_name(c, r, dname, sizeof(dname)));
		jw_kv_uint(jw, "requests", r->nr_q2c);
		jw_kv_float(jw, "avg_us", avg_us(r->q2c_sum, r->nr_q2c), 1);
		jw_kv_float(jw, "max_us", r->q2c_max / 1e3, 1);
		jw_end_object(jw);
	}
	jw_end_array(jw);
}

/* ------------------------------------------------------------------ --by file / dir */

static const char *const by_names[] = {"process", "file", "dir"};

/* A row of the file or directory table: the sum of its files' rows. */
struct by_group {
	struct row sum; /* key.dev, key.ino, gen: the file's, or a no-file kind's */
	char *name;	/* the file's path or the directory; NULL: none (a kind, uncaptured) */
	uint32_t nr_files;
	uint32_t *pids; /* the processes whose rows it sums, distinct */
	size_t nr_pids;
};

static int file_key_cmp(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;

	if (x->key.dev != y->key.dev)
		return x->key.dev < y->key.dev ? -1 : 1;
	if (x->key.ino != y->key.ino)
		return x->key.ino < y->key.ino ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return 0;
}

static int group_cmp(const void *a, const void *b)
{
	const struct by_group *x = a, *y = b;

	return row_ptr_cmp(&(const struct row *){&x->sum}, &(const struct row *){&y->sum});
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
	row_add(&into->sum, &g->sum);
	return 0;
}

static void groups_free(struct by_group *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].pids);
	}
	free(v);
}

/* The active rows summed per file (device, generation, inode), or per no-file kind. */
static int group_files(struct top_ctx *c, const struct report *rep, struct by_group **out,
		       size_t *nr)
{
	struct by_group *v = NULL, *g = NULL;
	const struct row **rows;
	const char *path;
	size_t i, j, n = 0, k = 0;
	int err = -ENOMEM;

	rows = calloc(rep->nr_rows ? rep->nr_rows : 1, sizeof(*rows));
	v = calloc(rep->nr_rows ? rep->nr_rows : 1, sizeof(*v));
	if (!rows || !v)
		goto cleanup;
	for (i = 0; i < rep->nr_rows; i++)
		if (row_active(&rep->rows[i]))
			rows[k++] = &rep->rows[i];
	qsort(rows, k, sizeof(*rows), file_key_cmp);
	for (i = 0; i < k; i++) {
		if (!g || file_key_cmp(&rows[i], &rows[i - 1])) {
			for (j = i + 1; j < k && !file_key_cmp(&rows[i], &rows[j]); j++)
				;
			g = &v[n++];
			g->sum.key = rows[i]->key;
			g->sum.key.pid = TOP_PID_NONE;
			g->sum.gen = rows[i]->gen;
			g->nr_files = !ino_special(rows[i]->key.ino);
			g->pids = calloc(j - i, sizeof(*g->pids));
			path = g->nr_files ? file_path(c, rows[i]) : NULL;
			g->name = path ? strdup(path) : NULL;
			if (!g->pids || (path && !g->name))
				goto cleanup;
		}
		row_add(&g->sum, rows[i]);
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
		groups_free(v, n);
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
static int group_dirs(struct top_ctx *c, struct by_group *files, size_t nr_files,
		      struct by_group **out, size_t *nr)
{
	struct by_group *v, *g = NULL;
	char dir[PATH_MAX], *d;
	size_t i, j, k, n = 0;
	int err = 0;

	for (i = 0; i < nr_files; i++) {
		if (!files[i].name)
			continue;
		dir_prefix(files[i].name, c->o->dir_depth, dir, sizeof(dir));
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
			g->sum.gen = files[i].sum.gen;
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
		groups_free(v, n);
		return err;
	}
	*out = v;
	*nr = n;
	return 0;
}

/* The rows of the main table for --by file or dir, busiest first (rep->groups). */
static int group_by(struct top_ctx *c, struct report *rep)
{
	struct by_group *files, *dirs;
	size_t nr_files, nr_dirs;
	int err;

	err = group_files(c, rep, &files, &nr_files);
	if (err)
		return err;
	if (c->o->by == BY_DIR) {
		err = group_dirs(c, files, nr_files, &dirs, &nr_dirs);
		groups_free(files, nr_files);
		if (err)
			return err;
		files = dirs;
		nr_files = nr_dirs;
	}
	qsort(files, nr_files, sizeof(*files), group_cmp);
	rep->groups = files;
	rep->nr_groups = nr_files;
	return 0;
}

/* The first cell of a file or directory row: where it is, or how many files. */
static const char *group_id(struct top_ctx *c, const struct by_group *g, char *buf, size_t len)
{
	char dname[DISK_NAME_LEN];

	row_disk_name(c, &g->sum, dname, sizeof(dname));
	if (ino_special(g->sum.key.ino))
		snprintf(buf, len, "%s %s", dname, kind_name(g->sum.key.ino));
	else if (c->o->by == BY_FILE)
		snprintf(buf, len, "%s ino %" PRIu64, dname, (uint64_t)g->sum.key.ino);
	else
		snprintf(buf, len, "%u file%s", g->nr_files, g->nr_files == 1 ? "" : "s");
	return buf;
}

static const char *group_name(const struct by_group *g)
{
	if (ino_special(g->sum.key.ino))
		return kind_label(g->sum.key.ino);
	return g->name ? g->name : "(path not captured)";
}

/* The file or directory table (text). */
static void render_by(struct top_ctx *c, const struct report *rep)
{
	char b[4][UNITS_BUF], q[40], d[40], id[112], mk[8], pbuf[PATH_MAX], head[40];
	const struct top_opts *o = c->o;
	size_t i;

	if (o->by == BY_FILE)
		snprintf(head, sizeof(head), "FILE");
	else
		snprintf(head, sizeof(head), "DIRECTORY (depth %" PRIu64 ")", o->dir_depth);
	printf("%-31s %-3s %7s %8s %9s %10s %5s %8s %8s\n", head, "MK", "FS_READ", "FS_WRITE",
	       "DISK_READ", "DISK_WRITE", "PROCS", "Q2C_MS", "D2C_MS");
	for (i = 0; i < rep->nr_groups && i < o->max_procs; i++) {
		const struct by_group *g = &rep->groups[i];

		marks(g->sum.flags, mk);
		printf("%-31.31s %-3s %7s %8s %9s %10s %5zu %8s %8s\n",
		       group_id(c, g, id, sizeof(id)), mk,
		       bytes_cell(rep, g->sum.fs_read, b[0], UNITS_BUF),
		       bytes_cell(rep, g->sum.fs_write, b[1], UNITS_BUF),
		       bytes_cell(rep, g->sum.disk_read, b[2], UNITS_BUF),
		       bytes_cell(rep, g->sum.disk_write, b[3], UNITS_BUF), g->nr_pids,
		       lat_cell(g->sum.q2c_sum, g->sum.nr_q2c, g->sum.q2c_max, q, sizeof(q)),
		       lat_cell(g->sum.d2c_sum, g->sum.nr_d2c, g->sum.d2c_max, d, sizeof(d)));
		printf("      %s\n", trunc_left(group_name(g), 93, pbuf, sizeof(pbuf)));
	}
	if (rep->nr_groups > o->max_procs)
		printf("... %zu more\n", rep->nr_groups - (size_t)o->max_procs);
	if (!rep->nr_groups)
		printf("(no I/O to any file)\n");
}

/* The file or directory table (JSON): "files" or "dirs". */
static void json_by(struct top_ctx *c, struct jw *jw, const struct report *rep)
{
	char dname[DISK_NAME_LEN];
	size_t i, j;

	if (c->o->by == BY_DIR)
		jw_kv_uint(jw, "dir_depth", c->o->dir_depth);
	jw_kv_array(jw, c->o->by == BY_FILE ? "files" : "dirs");
	for (i = 0; i < rep->nr_groups; i++) {
		const struct by_group *g = &rep->groups[i];
		bool special = ino_special(g->sum.key.ino);

		jw_start_object(jw);
		if (special)
			jw_kv_string(jw, "kind", kind_name(g->sum.key.ino));
		else
			jw_kv_string(jw, "kind", c->o->by == BY_DIR ? "dir" : "file");
		if (g->name)
			jw_kv_string(jw, "path", g->name);
		else
			jw_kv_null(jw, "path");
		/* A directory may span file systems: only files and kinds have a device. */
		if (special || c->o->by == BY_FILE) {
			json_dev(jw, "dev", g->sum.key.dev);
			jw_kv_string(jw, "disk", row_disk_name(c, &g->sum, dname, sizeof(dname)));
		}
		if (c->o->by == BY_FILE && !special)
			jw_kv_uint(jw, "inode", g->sum.key.ino);
		if (c->o->by == BY_DIR)
			jw_kv_uint(jw, "nr_files", g->nr_files);
		json_bytes(jw, &g->sum);
		json_latency(jw, &g->sum);
		jw_kv_bool(jw, "direct", g->sum.flags & TOP_F_DIRECT);
		jw_kv_bool(jw, "writeback", g->sum.flags & TOP_F_WRITEBACK);
		jw_kv_bool(jw, "approximate", g->sum.flags & (TOP_F_APPROX | TOP_F_LOST));
		jw_kv_uint(jw, "nr_processes", g->nr_pids);
		jw_kv_array(jw, "pids");
		for (j = 0; j < g->nr_pids; j++)
			jw_uint(jw, g->pids[j]);
		jw_end_array(jw);
		jw_end_object(jw);
	}
	jw_end_array(jw);
}

static void render_json(struct top_ctx *c, struct report *rep)
{
	const struct top_opts *o = c->o;
	struct jw *jw = c->jw;
	struct top_proc info, fl;
	char dname[DISK_NAME_LEN], sym[256];
	uint64_t j;
	size_t i;
	int k;

	jw_start_object(jw);
	jw_kv_string(jw, "mode", rep->rates ? "rate" : "total");
	jw_kv_float(jw, "duration_s", rep->seconds, 3);
	jw_kv_float(jw, "timestamp", rep->timestamp, 3);
	jw_kv_bool(jw, "stopped_early", rep->stopped);
	jw_kv_bool(jw, "threads", o->threads);
	jw_kv_bool(jw, "syscalls_traced", !o->no_syscalls);

	jw_kv_object(jw, "filters");
	if (o->pid)
		jw_kv_uint(jw, "pid", o->pid);
	else
		jw_kv_null(jw, "pid");
	if (o->have_cgroup)
		jw_kv_string(jw, "cgroup", o->cgroup_rel);
	else
		jw_kv_null(jw, "cgroup");
	if (o->have_disk)
		jw_kv_string(jw, "disk", o->disk.name);
	else
		jw_kv_null(jw, "disk");
	jw_end_object(jw);

	/* --by file / dir: the files or directories, and the processes as always. */
	jw_kv_string(jw, "by", by_names[o->by]);
	if (o->by != BY_PROCESS)
		json_by(c, jw, rep);

	jw_kv_array(jw, "processes");
	for (i = 0; i < rep->nr_procs; i++) {
		const struct proc_agg *p = &rep->procs[i];

		if (p->pid == TOP_PID_NONE)
			continue;
		jw_start_object(jw);
		if (o->threads) {
			jw_kv_uint(jw, "pid", p->info.tgid ? p->info.tgid : p->pid);
			jw_kv_uint(jw, "tid", p->pid);
		} else {
			jw_kv_uint(jw, "pid", p->pid);
		}
		jw_kv_string(jw, "comm", p->info.comm);
		jw_kv_bool(jw, "kernel_thread", p->info.kthread);
		json_cgroup(c, jw, proc_tgid(p->pid, &p->info), p->info.comm, p->info.cgid);
		json_bytes(jw, &p->sum);
		jw_kv_uint(jw, "writeback_bytes", p->writeback_bytes);
		jw_kv_uint(jw, "nr_files", p->nr_files);
		json_latency(jw, &p->sum);
		json_flushes(c, jw, p);
		jw_kv_array(jw, "files");
		for (j = 0; j < p->nr_rows && j < o->max_files; j++)
			json_file(c, jw, p->files[j]);
		jw_end_array(jw);
		jw_kv_uint(jw, "files_omitted",
			   p->nr_rows > o->max_files ? p->nr_rows - o->max_files : 0);
		jw_end_object(jw);
	}
	jw_end_array(jw);

	qsort(rep->wb, rep->nr_wb, sizeof(*rep->wb), wb_bytes_cmp);
	jw_kv_array(jw, "writeback");
	for (i = 0; i < rep->nr_wb; i++) {
		const struct wbrow *w = &rep->wb[i];
		const char *path;

		if (!w->bytes)
			continue;
		proc_info(c, w->key.pid, &info);
		proc_info(c, w->key.flusher, &fl);
		jw_start_object(jw);
		jw_kv_uint(jw, "pid", w->key.pid);
		jw_kv_string(jw, "comm", info.comm);
		json_cgroup(c, jw, proc_tgid(w->key.pid, &info), info.comm, info.cgid);
		jw_kv_uint(jw, "flusher_tid", w->key.flusher);
		jw_kv_string(jw, "flusher_comm", fl.comm);
		json_dev(jw, "dev", w->key.dev);
		jw_kv_uint(jw, "inode", w->key.ino);
		path = wb_path(c, rep, w);
		if (path)
			jw_kv_string(jw, "path", path);
		else
			jw_kv_null(jw, "path");
		jw_kv_uint(jw, "disk_write_bytes", w->bytes);
		jw_kv_uint(jw, "requests", w->nr);
		jw_end_object(jw);
	}
	jw_end_array(jw);

	jw_kv_array(jw, "unattributed");
	for (i = 0; i < rep->nr_rows; i++) {
		const struct row *r = &rep->rows[i];

		if (r->key.pid != TOP_PID_NONE || !row_active(r))
			continue;
		jw_start_object(jw);
		json_dev(jw, "dev", r->key.dev);
		jw_kv_string(jw, "disk",
			     disk_name_of(KDEV_MAJOR(r->key.dev), KDEV_MINOR(r->key.dev), dname,
					  sizeof(dname)));
		/* "flush": cache flushes whose requester is unknown (requests, latency). */
		jw_kv_string(jw, "kind", kind_name(r->key.ino));
		jw_kv_uint(jw, "disk_read_bytes", r->disk_read);
		jw_kv_uint(jw, "disk_write_bytes", r->disk_write);
		json_latency(jw, r);
		jw_kv_bool(jw, "includes_lost_rows", r->flags & TOP_F_LOST);
		jw_end_object(jw);
	}
	jw_end_array(jw);

	qsort(c->stalls, c->nr_stalls, sizeof(*c->stalls), stall_cmp);
	jw_kv_array(jw, "stalls");
	for (i = 0; i < c->nr_stalls; i++) {
		const struct stall_agg *a = &c->stalls[i];

		jw_start_object(jw);
		jw_kv_uint(jw, "tid", a->tid);
		jw_kv_uint(jw, "pid", a->tgid);
		jw_kv_string(jw, "comm", a->comm);
		json_cgroup(c, jw, a->tgid, a->comm, a->cgid);
		jw_kv_uint(jw, "count", a->count);
		jw_kv_float(jw, "total_ms", a->total_ns / 1e6, 3);
		jw_kv_float(jw, "max_ms", a->max_ns / 1e6, 3);
		jw_kv_array(jw, "stack");
		for (k = 0; k < a->nr_ips; k++)
			jw_string(jw, ksyms_format(c->ksyms, a->ips[k], sym, sizeof(sym)));
		jw_end_array(jw);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	if (o->stall_ns)
		jw_kv_float(jw, "stall_threshold_ms", o->stall_ns / 1e6, 3);
	else
		jw_kv_null(jw, "stall_threshold_ms");

	jw_kv_array(jw, "devices");
	for (i = 0; i < rep->nr_devs; i++) {
		const struct dev_cov *d = &rep->devs[i];
		uint64_t ds = d->ds_read + d->ds_write, seen = d->seen_read + d->seen_write;
		uint64_t unattr = d->unattr_read + d->unattr_write;
		char dev[32];

		jw_start_object(jw);
		snprintf(dev, sizeof(dev), "%u:%u", d->major, d->minor);
		jw_kv_string(jw, "dev", dev);
		jw_kv_string(jw, "disk", d->name);
		jw_kv_bool(jw, "traced", d->traced);
		jw_kv_uint(jw, "disk_read_bytes", d->seen_read);
		jw_kv_uint(jw, "disk_write_bytes", d->seen_write);
		jw_kv_uint(jw, "unattributed_bytes", unattr);
		if (d->ds_known) {
			jw_kv_uint(jw, "diskstats_read_bytes", d->ds_read);
			jw_kv_uint(jw, "diskstats_write_bytes", d->ds_write);
		} else {
			jw_kv_null(jw, "diskstats_read_bytes");
			jw_kv_null(jw, "diskstats_write_bytes");
		}
		jw_kv_uint(jw, "flush_requests", d->flushes);
		jw_kv_float(jw, "flush_time_ms", d->flush_ns / 1e6, 3);
		if (d->ds_known && d->ds_flush_known) {
			jw_kv_uint(jw, "diskstats_flush_requests", d->ds_flushes);
			jw_kv_uint(jw, "diskstats_flush_ms", d->ds_flush_ms);
		} else {
			jw_kv_null(jw, "diskstats_flush_requests");
			jw_kv_null(jw, "diskstats_flush_ms");
		}
		if (ds && d->traced && coverage_meaningful(o)) {
			jw_kv_float(jw, "coverage_pct", pct(seen, ds), 2);
			jw_kv_float(jw, "attributed_pct", pct(seen - unattr, ds), 2);
		} else {
			jw_kv_null(jw, "coverage_pct");
			jw_kv_null(jw, "attributed_pct");
		}
		jw_end_object(jw);
	}
	jw_end_array(jw);

	attach_plan_unavailable(c->hooks, c->nr_hooks, jw, "unavailable", NULL, NULL);
	jw_kv_object(jw, "dropped");
	for (k = 0; k < TOP_DROP_NR; k++)
		jw_kv_uint(jw, drop_names[k], rep->drops[k]);
	jw_kv_uint(jw, "stalls_not_kept", c->stalls_dropped);
	jw_kv_uint(jw, "idle_rows_pruned", c->pruned);
	jw_end_object(jw);

	jw_name(jw, "attach_plan");
	attach_plan_print(c->hooks, c->nr_hooks, jw);
	jw_end_object(jw);
	fflush(stdout);
}

/* ------------------------------------------------------------------ reports */

static void report_free(struct report *rep)
{
	size_t i;

	for (i = 0; i < rep->nr_procs; i++) {
		free(rep->procs[i].files);
		free(rep->procs[i].flushes);
	}
	free(rep->procs);
	free(rep->devs);
	free(rep->flushes);
	groups_free(rep->groups, rep->nr_groups);
	memset(rep, 0, sizeof(*rep));
}

static int top_report(struct top_ctx *c, bool stopped)
{
	bool periodic = c->o->interval_ns;
	uint32_t gen = c->gen, slot = gen & 1;
	struct row *cur = NULL, *delta = NULL;
	struct wbrow *wb = NULL, *wb_cum = NULL;
	struct dev_flush_row *fl_cum = NULL;
	uint64_t drops[TOP_DROP_NR];
	struct report rep = {};
	size_t nr = 0, nr_wb = 0, nr_fl = 0;
	int err, i;

	uint64_t read_ns;

	err = ds_read("/proc/diskstats", &c->ds_end);
	if (err)
		return fail(err, "cannot read /proc/diskstats: %s", strerror(-err));
	/*
	 * The window ends here, whenever the previous report finished printing (output
	 * to a pipe nobody reads can block it for long): the numbers cover this span.
	 */
	read_ns = now_ns(CLOCK_MONOTONIC);
	rep.timestamp = now_ns(CLOCK_REALTIME) / 1e9;
	/* New samples go to the other max slot while this interval's is read. */
	if (periodic)
		c->skel->bss->max_gen = ++c->gen;
	fspath_cache_round(c->fspaths);
	procinfo_round(c->procinfo);
	err = read_stats(c, slot, gen, &cur, &nr);
	if (!err)
		err = read_wb(c, &wb, &nr_wb);
	if (!err)
		err = read_dev_flushes(c, &fl_cum, &nr_fl, &rep.flushes);
	if (!err)
		err = read_drops(c, drops);
	if (err) {
		err = fail(err, "cannot read the BPF maps: %s", strerror(-err));
		goto cleanup;
	}
	rep.seconds = (read_ns - c->window_start_ns) / 1e9;
	rep.rates = periodic;
	rep.stopped = stopped;
	if (periodic) {
		err = rows_delta(c, cur, nr, &delta);
		if (err)
			goto cleanup;
		wb_cum = malloc((nr_wb ? nr_wb : 1) * sizeof(*wb_cum));
		if (!wb_cum) {
			err = -ENOMEM;
			goto cleanup;
		}
		memcpy(wb_cum, wb, nr_wb * sizeof(*wb));
		wb_delta(c, wb, nr_wb);
		for (i = 0; i < TOP_DROP_NR; i++) {
			uint64_t d = sub0(drops[i], c->prev_drops[i]);

			c->prev_drops[i] = drops[i];
			drops[i] = d;
		}
		prune_idle(c, cur, delta, nr);
		rep.rows = delta;
	} else {
		rep.rows = cur;
	}
	rep.nr_rows = nr;
	rep.nr_flushes = nr_fl;
	rep.wb = wb;
	rep.nr_wb = nr_wb;
	memcpy(rep.drops, drops, sizeof(drops));
	err = group_procs(c, &rep);
	if (!err && c->o->by != BY_PROCESS)
		err = group_by(c, &rep);
	if (!err)
		err = compute_coverage(c, &rep);
	if (err) {
		err = fail(err, "cannot build the report: %s", strerror(-err));
		goto cleanup;
	}
	if (gopts.json)
		render_json(c, &rep);
	else
		render_text(c, &rep);

	if (periodic) {
		free(c->prev);
		c->prev = cur;
		c->nr_prev = nr;
		cur = NULL;
		free(c->prev_wb);
		c->prev_wb = wb_cum;
		c->nr_prev_wb = nr_wb;
		wb_cum = NULL;
		free(c->prev_fl);
		c->prev_fl = fl_cum;
		c->nr_prev_fl = nr_fl;
		fl_cum = NULL;
	}
	c->nr_stalls = 0;
	c->stalls_dropped = 0;
	cgroup_map_round(c->cgmap);
	/* This window's end is the next one's start. */
	c->window_start_ns = read_ns;
	{
		struct ds_snapshot t = c->ds_start;

		c->ds_start = c->ds_end;
		c->ds_end = t;
	}
cleanup:
	report_free(&rep);
	free(cur);
	free(delta);
	free(wb);
	free(wb_cum);
	free(fl_cum);
	return err;
}

/* ------------------------------------------------------------------ set-up */

/* Both syscall programs serve every syscall tracepoint: attached by hand, by name. */
#define SYSCALL_HOOKS(s, nm, req)                                                \
	{.name = "sys_enter_" #nm,                                               \
	 .optional = !(req),                                                     \
	 .v = {{.prog = s->progs.top_sys_enter,                                  \
		.mode = ATTACH_TRACEPOINT,                                       \
		.target = "syscalls/sys_enter_" #nm}}},                          \
	{                                                                        \
		.name = "sys_exit_" #nm, .optional = !(req),                     \
		.v = { {.prog = s->progs.top_sys_exit,                           \
			.mode = ATTACH_TRACEPOINT,                               \
			.target = "syscalls/sys_exit_" #nm} }                    \
	}

/* The syscall programs' table (top.bpf.c): which syscall reads, writes or syncs. */
static void fill_sys_ops(struct top_bpf *s)
{
	static const struct {
		const char *name;
		enum top_sys_op op;
	} ops[] = {
		{"read", SYS_READ},	 {"pread64", SYS_READ},	   {"readv", SYS_READ},
		{"preadv", SYS_READ},	 {"preadv2", SYS_READ},	   {"write", SYS_WRITE},
		{"pwrite64", SYS_WRITE}, {"writev", SYS_WRITE},	   {"pwritev", SYS_WRITE},
		{"pwritev2", SYS_WRITE}, {"fsync", SYS_SYNC},	   {"fdatasync", SYS_SYNC},
		{"sync_file_range", SYS_SYNC},
	};
	size_t i;
	int nr;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		nr = syscall_nr(ops[i].name);
		if (nr >= 0)
			s->rodata->sys_op[nr] = ops[i].op;
	}
}

/*
 * Whether async direct I/O's FS bytes can wait for its completion: a kprobe on
 * iomap_dio_complete() is skipped when the completion interrupts another kprobe or
 * syscall program on its CPU (kprobes do not nest), so with one the bytes are counted
 * when the I/O starts instead.
 */
static bool dio_complete_is_reliable(const struct top_ctx *c)
{
	const struct attach_hook *h;
	int i;

	for (i = 0; i < c->nr_hooks; i++) {
		h = &c->hooks[i];
		if (strcmp(h->name, "iomap_dio_complete"))
			continue;
		return h->chosen >= 0 && h->v[h->chosen].prog != c->skel->progs.top_dio_complete_kprobe;
	}
	return false;
}

/* The hooks this run needs (c->hooks), with their variants; not chosen yet. */
static int build_hooks(struct top_ctx *c)
{
	struct top_bpf *s = c->skel;
	struct attach_hook hooks[] = {
		{.name = "block_bio_queue",
		 .v = {{.prog = s->progs.top_bio_queue}, {.prog = s->progs.top_bio_queue_raw}}},
		{.name = "block_split",
		 .v = {{.prog = s->progs.top_bio_split}, {.prog = s->progs.top_bio_split_raw}}},
		{.name = "block_rq_complete",
		 .v = {{.prog = s->progs.top_rq_complete}, {.prog = s->progs.top_rq_complete_raw}}},
		{.name = "block_rq_issue",
		 .optional = true,
		 .figure = "d2c from the issue (else from io_start_time_ns)",
		 .v = {{.prog = s->progs.top_rq_issue}, {.prog = s->progs.top_rq_issue_raw}}},
		{.name = "writeback_dirty_folio",
		 .optional = true,
		 .figure = "writeback credit to dirtiers, FS bytes of mmap writes",
		 .v = {{.prog = s->progs.top_dirty_folio}}},
		FALLBACK_HOOK(s, "mm_filemap_fault", top_filemap_fault,
			      "mmap FS read bytes (faults)"),
		FALLBACK_HOOK(s, "mm_filemap_map_pages", top_filemap_map_pages,
			      "mmap FS read bytes (fault-around)"),
		FALLBACK_HOOK(s, "iomap_dio_rw_begin", top_dio_begin,
			      "FS bytes of async direct I/O (libaio, io_uring)"),
		FALLBACK_HOOK(s, "iomap_dio_complete", top_dio_complete,
			      "FS bytes of async direct I/O (libaio, io_uring)"),
		/* Where missing, a dio's submission window ends later (see top_dio_complete). */
		{.name = "iomap_dio_rw_queued",
		 .optional = true,
		 .v = {{.prog = s->progs.top_dio_queued}}},
		{.name = "sched_switch",
		 .optional = true,
		 .figure = "I/O stalls",
		 .v = {{.prog = s->progs.top_sched_switch}}},
		SYSCALL_HOOKS(s, read, true),
		SYSCALL_HOOKS(s, write, true),
		SYSCALL_HOOKS(s, pread64, false),
		SYSCALL_HOOKS(s, pwrite64, false),
		SYSCALL_HOOKS(s, readv, false),
		SYSCALL_HOOKS(s, writev, false),
		SYSCALL_HOOKS(s, preadv, false),
		SYSCALL_HOOKS(s, pwritev, false),
		SYSCALL_HOOKS(s, preadv2, false),
		SYSCALL_HOOKS(s, pwritev2, false),
		/* Who reads which file: the owner of read bios blk-throttle held. */
		FALLBACK_HOOK(s, "page_cache_sync_ra", top_ra_sync,
			      "owners of buffered reads blk-throttle held"),
		FALLBACK_HOOK(s, "page_cache_async_ra", top_ra_async,
			      "owners of buffered reads blk-throttle held"),
		/* Who syncs which file: the flusher of bios blk-throttle held. */
		SYSCALL_HOOKS(s, fsync, false),
		SYSCALL_HOOKS(s, fdatasync, false),
		SYSCALL_HOOKS(s, sync_file_range, false),
		{.name = NULL}, /* room for mm_filemap_get_pages */
	};
	int n = sizeof(hooks) / sizeof(hooks[0]) - 1, i, j;

	/* Features turned off are neither planned nor loaded. */
	bpf_program__set_autoload(s->progs.top_filemap_get_pages, c->o->no_syscalls);
	bpf_program__set_autoload(s->progs.top_filemap_read_fentry, c->o->no_syscalls);
	bpf_program__set_autoload(s->progs.top_filemap_read_kprobe, c->o->no_syscalls);
	for (i = j = 0; i < n; i++) {
		bool off = (!c->o->stall_ns && !strcmp(hooks[i].name, "sched_switch")) ||
			   (c->o->no_syscalls && !strncmp(hooks[i].name, "sys_", 4)) ||
			   /* Readers matter only for bios blk-throttle's worker queues. */
			   (!s->rodata->throtl_dispatch_fn &&
			    !strncmp(hooks[i].name, "page_cache_", 11));
		int k;

		if (!off) {
			hooks[j++] = hooks[i];
			continue;
		}
		for (k = 0; k < ATTACH_MAX_VARIANTS && hooks[i].v[k].prog; k++)
			bpf_program__set_autoload(hooks[i].v[k].prog, false);
	}
	n = j;
	if (c->o->no_syscalls)
		hooks[n++] = (struct attach_hook){
			.name = "mm_filemap_get_pages",
			.optional = true,
			.figure = "FS read bytes (--no-syscalls)",
			.v = {{.prog = s->progs.top_filemap_get_pages},
			      {.prog = s->progs.top_filemap_read_fentry},
			      {.prog = s->progs.top_filemap_read_kprobe}},
		};
	c->nr_hooks = n;
	return attach_hooks_dup(hooks, n, &c->hooks);
}

static int build_plan(struct top_ctx *c)
{
	int err = build_hooks(c);

	return err ? err : attach_plan_choose(c->hooks, c->nr_hooks);
}

static int top_setup(struct top_ctx *c);
static void top_cleanup(struct top_ctx *c);

int top_plan(plan_show_fn show, void *arg)
{
	static struct top_opts opts;
	static struct top_ctx c;
	char *argv[] = {"top", NULL};
	char why[256];
	int err;

	memset(&opts, 0, sizeof(opts));
	cmd_reset_getopt();
	err = top_parse(1, argv, &opts);
	if (err)
		return err < 0 ? err : -EINVAL;
	/* Set up as the command would run: a plan that cannot load or attach is no plan. */
	memset(&c, 0, sizeof(c));
	c.o = &opts;
	ds_snapshot_init(&c.ds_start);
	ds_snapshot_init(&c.ds_end);
	err_capture(why, sizeof(why));
	err = top_setup(&c);
	err_capture(NULL, 0);
	if (!err)
		show("top", c.hooks, c.nr_hooks, NULL, arg);
	top_cleanup(&c);
	if (!err)
		return 0;
	if (!why[0])
		snprintf(why, sizeof(why), "%s", strerror(-err));
	/* Then what it would try, evaluated without loading. */
	memset(&c, 0, sizeof(c));
	c.o = &opts;
	c.skel = SKEL_OPEN(top);
	if (!c.skel)
		return -errno;
	err = build_hooks(&c);
	if (!err)
		show("top", c.hooks, c.nr_hooks, why, arg);
	free(c.hooks);
	top_bpf__destroy(c.skel);
	return err;
}

/*
 * Every device gets its "(unattributed)" row before tracing starts, so the disk bytes
 * of rows the full stats map cannot take still land somewhere (and in coverage).
 */
static void preinsert_unattributed(struct top_ctx *c)
{
	int fd = bpf_map__fd(c->skel->maps.stats);
	struct top_stat *zero;
	struct top_key k;
	size_t i;

	if (c->o->pid || c->o->have_cgroup)
		return;
	zero = calloc(c->ncpus, sizeof(*zero));
	if (!zero)
		return;
	for (i = 0; i < c->ds_start.nr; i++) {
		k.pid = TOP_PID_NONE;
		k.dev = KDEV(c->ds_start.devs[i].major, c->ds_start.devs[i].minor);
		k.ino = TOP_INO(TOP_INO_UNATTR);
		bpf_map_update_elem(fd, &k, zero, BPF_NOEXIST);
	}
	free(zero);
}

static int top_setup(struct top_ctx *c)
{
	/* Async direct I/O's end, and blk-throttle's worker (the bios it held). */
	static const char *const syms[] = {"iomap_dio_bio_end_io", "blk_throtl_dispatch_work_fn"};
	const struct top_opts *o = c->o;
	char root[PATH_MAX];
	struct top_bpf *s;
	uint64_t addrs[2];
	int err;

	probe_setup_libbpf_print();
	probe_prefetch();
	/* Say what is missing, before the attach plan blames the kernel for it. */
	err = probe_require_bpf_privileges("top");
	if (err)
		return err;
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0)
		return fail(c->ncpus ? c->ncpus : -EINVAL, "cannot count the possible CPUs");
	c->stalls = calloc(MAX_STALLS, sizeof(*c->stalls));
	if (!c->stalls)
		return fail(-ENOMEM, "out of memory");
	/* Two addresses now; the symbols for stacks later, for the report. */
	err = ksyms_lookup(NULL, syms, addrs, 2);
	if (err)
		warn("kernel symbols unavailable (%s): stacks stay numeric, and direct I/O "
		     "re-submitted by kernel threads is credited to them",
		     ksyms_strerror(err));
	else
		c->ksyms_wanted = o->stall_ns;
	if (!probe_cgroup2_mount(root, sizeof(root)))
		cgroup_map_new(root, &c->cgmap);
	err = fspath_cache_new(lookup_path, c, &c->fspaths);
	if (!err)
		err = procinfo_new(lookup_title, c, 0, &c->procinfo);
	if (err)
		return fail(err, "out of memory");
	err = ds_read("/proc/diskstats", &c->ds_start);
	if (err)
		return fail(err, "cannot read /proc/diskstats: %s", strerror(-err));

	s = SKEL_OPEN(top);
	if (!s)
		return fail(-errno, "cannot open the BPF object: %s", strerror(errno));
	c->skel = s;
	s->rodata->filter_pid = o->pid;
	s->rodata->filter_cgroup = o->have_cgroup;
	s->rodata->filter_dev = o->have_disk;
	s->rodata->per_thread = o->threads;
	s->rodata->track_unattributed = !o->pid && !o->have_cgroup;
	s->rodata->stall_ns = o->stall_ns;
	s->rodata->iomap_dio_end_io = addrs[0];
	s->rodata->throtl_dispatch_fn = addrs[1];
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	s->rodata->self_tgid = getpid();
	fill_sys_ops(s);
	bpf_map__set_max_entries(s->maps.stats, o->max_entries);
	bpf_map__set_max_entries(s->maps.wb, o->max_entries / 4 > 1024 ? o->max_entries / 4 : 1024);
	bpf_map__set_max_entries(s->maps.procs,
				 o->max_entries / 2 > 1024 ? o->max_entries / 2 : 1024);
	bpf_map__set_max_entries(s->maps.titles,
				 o->max_entries / 2 > 1024 ? o->max_entries / 2 : 1024);
	bpf_map__set_max_entries(s->maps.paths,
				 o->max_entries / 2 > 1024 ? o->max_entries / 2 : 1024);
	/* Dirtier records of 16 pages each: 4 GiB of dirty data by default. */
	bpf_map__set_max_entries(s->maps.dirtiers, o->max_entries * 4 < 65536 ? 65536 :
						   o->max_entries * 4 > (1U << 20) ? (1U << 20) :
										     o->max_entries * 4);
	if (!o->stall_ns)
		bpf_map__set_max_entries(s->maps.stall_events, sysconf(_SC_PAGESIZE));

	/* Before anything is loaded: a size the machine cannot give is refused at once. */
	err = mapmem_check(s->obj, "top", "give a smaller --max-entries");
	if (err)
		return err;
	err = build_plan(c);
	if (err)
		return err == -ENOMEM ? fail(err, "out of memory") : err;
	s->rodata->dio_fs_at_complete = dio_complete_is_reliable(c);
	s->rodata->fault_map_nomem = fault_injected("map_nomem");
	err = top_bpf__load(s);
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
	/* While both maps are empty, before any program runs (see bpfmap.h). */
	bpfmap_warm_alloc(bpf_map__fd(s->maps.stats), sizeof(struct top_key),
			  sizeof(struct top_stat), true);
	bpfmap_warm_alloc(bpf_map__fd(s->maps.wb), sizeof(struct top_wb_key),
			  sizeof(struct top_wb_val), true);
	preinsert_unattributed(c);
	s->bss->path_epoch = 1;
	err = top_bpf__attach(s);
	if (err)
		return fail(err, "cannot attach the BPF programs: %s (see 'iospan doctor')",
			    strerror(-err));
	err = attach_plan_attach(c->hooks, c->nr_hooks);
	if (err)
		return err;
	attach_plan_unavailable(c->hooks, c->nr_hooks, NULL, NULL, stderr, "iospan top: ");
	if (o->stall_ns) {
		static const struct rbuf_handler handlers[] = {
			{.type = TOP_REC_STALL, .min_size = sizeof(struct top_stall), .fn = on_stall},
		};

		err = rbuf_new(bpf_map__fd(s->maps.stall_events),
			       bpf_map__fd(s->maps.stall_events_counts), handlers, 1, c, &c->rb);
		if (err)
			return fail(err, "cannot open the stall ring buffer: %s", strerror(-err));
	}
	attach_plan_print(c->hooks, c->nr_hooks, NULL);
	return 0;
}

/*
 * Names the cgroups of the processes seen so far while they still exist: a container
 * that did its I/O and went away before the report is still named in it. Runs about
 * once a second; a rescan of the hierarchy happens only for ids not seen before.
 */
static void refresh_cgroups(struct top_ctx *c)
{
	int fd = bpf_map__fd(c->skel->maps.procs);
	uint32_t key, next, *prev = NULL;
	struct proc_ident id;
	struct top_proc info;

	if (!c->cgmap)
		return;
	cgroup_map_round(c->cgmap);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &info))
			continue;
		cgroup_map_path(c->cgmap, info.cgid);
		/* Read /proc while it lives, in case the kernel has no title for it. */
		procinfo_get(c->procinfo, proc_tgid(key, &info), info.comm, &id);
	}
	cgroup_map_round(c->cgmap);
}

/* Waits until @deadline (CLOCK_MONOTONIC), consuming stall events; true if stopped. */
static int wait_until(struct top_ctx *c, uint64_t deadline)
{
	uint64_t now, next_refresh = 0;
	int err, ms;

	while (!stop_requested) {
		now = now_ns(CLOCK_MONOTONIC);
		if (now >= next_refresh) {
			refresh_cgroups(c);
			/* Rows check their files' paths again at their next I/O. */
			c->skel->bss->path_epoch++;
			next_refresh = now + NSEC_PER_SEC;
		}
		if (now >= deadline)
			break;
		ms = (deadline - now) / 1000000 + 1;
		if (ms > 200)
			ms = 200;
		if (!c->rb) {
			if (sleep_until_ns(now + ms * 1000000ULL))
				break;
			continue;
		}
		err = rbuf_poll(c->rb, ms, 0);
		if (err)
			return fail(err, "cannot read the stall ring buffer: %s", strerror(-err));
	}
	/* Whatever arrived until now belongs to this report. */
	if (c->rb)
		rbuf_poll(c->rb, 0, 0);
	return stop_requested;
}

static int top_run(struct top_ctx *c)
{
	const struct top_opts *o = c->o;
	uint64_t now, deadline, step;
	int stopped, err;

	step = o->interval_ns ? o->interval_ns : o->duration_ns;
	install_stop_handlers();
	err = ds_read("/proc/diskstats", &c->ds_start);
	if (err)
		return fail(err, "cannot read /proc/diskstats: %s", strerror(-err));
	c->window_start_ns = now_ns(CLOCK_MONOTONIC);
	deadline = c->window_start_ns + step;
	if (o->interval_ns)
		fprintf(stderr, "iospan top: tracing, a report every %.1f s; Ctrl-C to stop\n",
			o->interval_ns / 1e9);
	else
		fprintf(stderr, "iospan top: tracing for %.1f s; Ctrl-C to report early\n",
			o->duration_ns / 1e9);
	/*
	 * Reading /proc/kallsyms takes the kernel 0.1 s of CPU: in a thread once tracing
	 * runs, not while the programs load (the report waits for it if it must).
	 */
	if (c->ksyms_wanted)
		ksyms_load_async(NULL, &c->ksyms);
	for (;;) {
		stopped = wait_until(c, deadline);
		if (stopped < 0)
			return stopped;
		err = top_report(c, stopped);
		if (err)
			return err;
		c->reports++;
		if (!o->interval_ns || stopped || (o->count && c->reports >= o->count))
			return 0;
		now = now_ns(CLOCK_MONOTONIC);
		deadline += step;
		if (deadline < now)
			deadline = now + step; /* the report took longer than an interval */
	}
}

static void top_cleanup(struct top_ctx *c)
{
	rbuf_free(c->rb);
	skel_detach(c->skel ? c->skel->skeleton : NULL, c->hooks, c->nr_hooks);
	attach_plan_detach(c->hooks, c->nr_hooks);
	top_bpf__destroy(c->skel);
	free(c->hooks);
	ksyms_free(c->ksyms);
	cgroup_map_free(c->cgmap);
	fspath_cache_free(c->fspaths);
	procinfo_free(c->procinfo);
	free(c->prev);
	free(c->prev_wb);
	free(c->prev_fl);
	free(c->stalls);
	ds_snapshot_free(&c->ds_start);
	ds_snapshot_free(&c->ds_end);
	jw_free(c->jw);
	probe_cleanup();
}

int cmd_top(int argc, char **argv)
{
	static struct top_opts opts;
	static struct top_ctx ctx;
	int err;

	memset(&opts, 0, sizeof(opts));
	memset(&ctx, 0, sizeof(ctx));
	err = top_parse(argc, argv, &opts);
	if (err)
		return err > 0 ? 0 : err;
	ctx.o = &opts;
	g_sort = opts.sort;
	ds_snapshot_init(&ctx.ds_start);
	ds_snapshot_init(&ctx.ds_end);
	if (gopts.json) {
		ctx.jw = jw_new(stdout);
		if (!ctx.jw) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
	}
	err = top_setup(&ctx);
	if (err)
		goto cleanup;
	err = top_run(&ctx);
cleanup:
	top_cleanup(&ctx);
	return err;
}
