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

#include <bpf/libbpf.h>

#include "array.h"
#include "iospan.h"
#include "args.h"
#include "bpfcmd.h"
#include "err.h"
#include "json.h"
#include "probe.h"
#include "top.h"
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
	"      --tid TID             only this thread\n"
	"      --comm NAME           only threads with this name\n"
	"      --cgroup PATH         only this cgroup v2 and its children (path below the\n"
	"                            cgroup2 mount, or absolute)\n"
	"      --file PATH           only I/O of this file (a regular file: -d follows a\n"
	"                            block device)\n"
	"      --dir PATH            only I/O of files below this directory (same fs)\n"
	"                            (with --file or --dir, stalls are not traced: a\n"
	"                            stall belongs to no file)\n"
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
	"  iospan top --comm postgres --by file 5   a database's files, every 5 s\n"
	"  iospan top --by dir 6 2         which database directory, every 2 s\n"
	"\n"
	"Exit codes: 0 ok, 1 runtime failure, 2 bad usage. Manual: iospan-top(8).\n";

/* ------------------------------------------------------------------ options */

enum {
	OPT_MAX_FILES = 0x2000,
	OPT_SORT,
	OPT_THREADS,
	OPT_STALL,
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
		    parse_u64_range(argv[optind], 1, FILE_PATH_DEPTH, &o->dir_depth))
			return fail_usage("--by dir needs a DEPTH after it: how many path "
					  "components the directories keep, 1 to %d (e.g. --by "
					  "dir 3)",
					  FILE_PATH_DEPTH);
		optind++;
		o->by = BY_DIR;
	} else {
		return fail_usage("invalid --by '%s': use process, file or dir DEPTH", arg);
	}
	return 0;
}

static int top_parse(int argc, char **argv, struct top_cmd *t)
{
	static const struct option long_opts[] = {
		FILTER_LONG_OPTS,
		{"max-processes", required_argument, NULL, 'n'},
		{"max-files", required_argument, NULL, OPT_MAX_FILES},
		{"sort", required_argument, NULL, OPT_SORT},
		{"threads", no_argument, NULL, OPT_THREADS},
		{"stall-threshold", required_argument, NULL, OPT_STALL},
		DURATION_LONG_OPT,
		{"max-entries", required_argument, NULL, OPT_MAX_ENTRIES},
		{"no-syscalls", no_argument, NULL, OPT_NO_SYSCALLS},
		{"by", required_argument, NULL, OPT_BY},
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	struct top_opts *o = &t->o;
	struct args_run run = {.duration_ns = &t->duration_ns};
	const struct args_spec spec =
		FILTER_ARGS_SPEC("top", top_usage, "n:", long_opts, &o->filter, false, &run);
	bool stall_set = false;
	int opt, err;
	size_t i;

	memset(t, 0, sizeof(*t));
	top_opts_default(o);
	t->duration_ns = 8 * NSEC_PER_SEC;
	while ((opt = args_next(&spec, argc, argv)) > ARGS_HELP) {
		err = 0;
		switch (opt) {
		case 'n':
			err = args_number_in("", "--max-processes", optarg, 1, 100000, "1 or more",
					     &o->max_procs);
			break;
		case OPT_MAX_FILES:
			err = args_number_in("", "--max-files", optarg, 0, 100000, "0 or more",
					     &o->max_files);
			break;
		case OPT_SORT:
			for (i = 0; i < ARRAY_SIZE(sort_names); i++)
				if (!strcmp(optarg, sort_names[i]))
					break;
			if (i == ARRAY_SIZE(sort_names))
				err = fail_usage(
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
			break;
		case OPT_STALL:
			err = args_threshold("--stall-threshold", optarg, &o->stall_ns);
			stall_set = true;
			break;
		case OPT_MAX_ENTRIES:
			if (parse_u64_range(optarg, 64, TOP_MAX_ENTRIES, &o->max_entries))
				err = fail_usage("invalid --max-entries '%s': give 64 to %u (each "
						 "costs about 0.8 KiB of kernel memory)",
						 optarg, TOP_MAX_ENTRIES);
			break;
		}
		if (err)
			return err;
	}
	if (opt)
		return opt;
	err = parse_interval_count(argc - optind, argv + optind, &o->interval_ns, &t->count);
	if (err)
		return err;
	if (o->filter.file_blk)
		return fail_usage("--file names a block device: top's --file takes a regular "
				  "file, -d follows a block device's I/O");
	if (o->filter.have_file || o->filter.have_dir) {
		if (stall_set && o->stall_ns)
			return fail_usage("--stall-threshold with --file or --dir: a stall belongs "
					  "to no file, so none is traced there");
		o->stall_ns = 0;
	}
	if (o->interval_ns && run.duration_set)
		return fail_usage("--duration is for the one-shot report: give either --duration "
				  "or an interval");
	return 0;
}

/* ------------------------------------------------------------------ reports */

/* A report of the window that ends now: a tick of the main loop. */
static int top_report(void *arg, const struct bpfcmd_tick *tick)
{
	struct top_cmd *t = arg;
	struct top_snapshot snap;
	struct report rep = {};
	int err;

	err = top_collect_read(t->c, &snap);
	if (err)
		return err;
	err = top_collect_report(t->c, &snap, tick->stopped, &rep);
	if (err)
		goto cleanup;
	if (t->jw)
		top_render_json(t->c, t->jw, &rep);
	else
		top_render_text(t->c, &rep);
cleanup:
	top_report_free(&rep);
	top_snapshot_free(&snap);
	return err;
}

static void top_housekeep(void *arg)
{
	struct top_cmd *t = arg;

	top_collect_housekeep(t->c);
}

static int top_run(struct top_cmd *t)
{
	const struct top_opts *o = &t->o;
	const struct bpfcmd_loop loop = {
		.interval_ns = o->interval_ns,
		.duration_ns = o->interval_ns ? 0 : t->duration_ns,
		.count = t->count,
		.tick_at_end = true,
		.max_wait_ms = 200,
		.tick = top_report,
		.housekeeping_ns = NSEC_PER_SEC,
		.housekeep = top_housekeep,
		.arg = t,
	};

	if (o->interval_ns)
		bpfcmd_start(&t->c->cmd, "tracing, a report every %.1f s; Ctrl-C to stop",
			     o->interval_ns / 1e9);
	else
		bpfcmd_start(&t->c->cmd, "tracing for %.1f s; Ctrl-C to report early",
			     t->duration_ns / 1e9);
	return bpfcmd_run(&t->c->cmd, &loop);
}

int cmd_top(int argc, char **argv)
{
	struct top_cmd *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return fail(-ENOMEM, "out of memory");
	err = top_parse(argc, argv, t);
	if (err) {
		err = err > 0 ? 0 : err;
		goto cleanup;
	}
	if (gopts.json) {
		t->jw = jw_new(stdout);
		if (!t->jw) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
	}
	err = top_collect_open(&t->o, NULL, &t->c);
	if (err)
		goto cleanup;
	err = top_run(t);
cleanup:
	top_collect_close(t->c);
	jw_free(t->jw);
	free(t);
	probe_cleanup();
	return err;
}
