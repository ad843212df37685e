// SPDX-License-Identifier: GPL-2.0
/*
 * iospan top: options, set-up of the BPF side (src/bpf/top.bpf.c) and the main loop.
 * See top.h for the files of this command.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "probe.h"
#include "procinfo.h"
#include "rbuf.h"
#include "top.h"
#include "top.skel.h"
#include "top_compat.skel.h"
#include "skel.h"

/*
 * Largest --max-entries: about 0.8 GiB of kernel memory at load (paths and procs are
 * preallocated), more per CPU as rows fill; mapmem_check() refuses what the machine
 * cannot give below that.
 */
/*
 * Largest --max-entries: about 0.8 GiB of kernel memory at load (paths and procs are
 * preallocated), more per CPU as rows fill; mapmem_check() refuses what the machine
 * cannot give below that.
 */
#define TOP_MAX_ENTRIES (1U << 20)

static const char *const sort_names[] = {"disk", "fs", "read", "write", "latency"};

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

/* ------------------------------------------------------------------ reports */

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
	err = top_read_stats(c, slot, gen, &cur, &nr);
	if (!err)
		err = top_read_wb(c, &wb, &nr_wb);
	if (!err)
		err = top_read_dev_flushes(c, &fl_cum, &nr_fl, &rep.flushes);
	if (!err)
		err = top_read_drops(c, drops);
	if (err) {
		err = fail(err, "cannot read the BPF maps: %s", strerror(-err));
		goto cleanup;
	}
	rep.seconds = (read_ns - c->window_start_ns) / 1e9;
	rep.rates = periodic;
	rep.stopped = stopped;
	if (periodic) {
		err = top_rows_delta(c, cur, nr, &delta);
		if (err)
			goto cleanup;
		wb_cum = malloc((nr_wb ? nr_wb : 1) * sizeof(*wb_cum));
		if (!wb_cum) {
			err = -ENOMEM;
			goto cleanup;
		}
		memcpy(wb_cum, wb, nr_wb * sizeof(*wb));
		top_wb_delta(c, wb, nr_wb);
		for (i = 0; i < TOP_DROP_NR; i++) {
			uint64_t d = top_sub0(drops[i], c->prev_drops[i]);

			c->prev_drops[i] = drops[i];
			drops[i] = d;
		}
		top_prune_idle(c, cur, delta, nr);
		rep.rows = delta;
	} else {
		rep.rows = cur;
	}
	rep.nr_rows = nr;
	rep.nr_flushes = nr_fl;
	rep.wb = wb;
	rep.nr_wb = nr_wb;
	memcpy(rep.drops, drops, sizeof(drops));
	err = top_group_procs(c, &rep);
	if (!err && c->o->by != BY_PROCESS)
		err = top_group_by(c, &rep);
	if (!err)
		err = top_compute_coverage(c, &rep);
	if (err) {
		err = fail(err, "cannot build the report: %s", strerror(-err));
		goto cleanup;
	}
	if (gopts.json)
		top_render_json(c, &rep);
	else
		top_render_text(c, &rep);

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
	top_report_free(&rep);
	free(cur);
	free(delta);
	free(wb);
	free(wb_cum);
	free(fl_cum);
	return err;
}

/* ------------------------------------------------------------------ set-up */

/* Both syscall programs serve every syscall tracepoint: attached by hand, by name. */
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
	err = fspath_cache_new(top_lookup_path, c, &c->fspaths);
	if (!err)
		err = procinfo_new(top_lookup_title, c, 0, &c->procinfo);
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
			{.type = TOP_REC_STALL, .min_size = sizeof(struct top_stall), .fn = top_on_stall},
		};

		err = rbuf_new(bpf_map__fd(s->maps.stall_events),
			       bpf_map__fd(s->maps.stall_events_counts), handlers, 1, c, &c->rb);
		if (err)
			return fail(err, "cannot open the stall ring buffer: %s", strerror(-err));
	}
	attach_plan_print(c->hooks, c->nr_hooks, NULL);
	return 0;
}

/* Waits until @deadline (CLOCK_MONOTONIC), consuming stall events; true if stopped. */
static int wait_until(struct top_ctx *c, uint64_t deadline)
{
	uint64_t now, next_refresh = 0;
	int err, ms;

	while (!stop_requested) {
		now = now_ns(CLOCK_MONOTONIC);
		if (now >= next_refresh) {
			top_refresh_cgroups(c);
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
	top_sort = opts.sort;
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
