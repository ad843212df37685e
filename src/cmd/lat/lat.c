// SPDX-License-Identifier: GPL-2.0
/*
 * iospan lat: distributions of block request latency (q2c, d2c, q2d) or size, kept in
 * the kernel per key, printed as log2 bars with percentiles. Options and the BPF life
 * cycle; report.c reads the maps, render.c prints.
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

#include "array.h"
#include "iospan.h"
#include "args.h"
#include "bpfcmd.h"
#include "cgroups.h"
#include "diskstats.h"
#include "err.h"
#include "json.h"
#include "fspath.h"
#include "ksyms.h"
#include "probe.h"
#include "lat.h"

#define LAT_MAX_ENTRIES 65536

static const char lat_usage[] =
	"Usage: iospan lat [OPTIONS] [interval [count]]\n"
	"\n"
	"Distributions of block request latency, kept in the kernel: log2 bars as\n"
	"biolatency prints them, and p50, p90, p99, p99.9 from finer buckets (within 3.2%).\n"
	"Without an interval: one report when Ctrl-C is pressed. With one: a report of\n"
	"that interval every interval, count times or until Ctrl-C.\n"
	"\n"
	"Options:\n"
	"  --stage STAGE     q2c (default: queued to completed), d2c (issued to the\n"
	"                    device to completed), q2d (queued to issued), device\n"
	"                    (of d2c, the driver's submission of the command to its\n"
	"                    taking the completion: NVMe, SCSI, virtio-blk where their\n"
	"                    hooks attach; see iospan doctor)\n"
	"  --size            the request sizes instead (bitesize), in KiB\n"
	"  -m, --milliseconds  latency in ms (default us)\n"
	"  -D, --disks       a histogram per disk\n"
	"  -F, --flags       a histogram per op and flags (Sync-Write...)\n"
	"  --by KEY          a histogram per pid, comm, cgroup, file (fs dev, inode, kind:\n"
	"                    direct, buffered, readahead, meta, swap, nofile), or stack\n"
	"                    (the kernel stack that queued the I/O, with its process;\n"
	"                    reads by what it shows: read, readahead, fault,\n"
	"                    readahead(2), fadvise, madvise)\n"
	"  -d, --disk DISK   only this disk or partition (sda, /dev/loop0, 8:0)\n"
	"  -p, --pid PID     only requests this process submitted\n"
	"      --tid TID     only requests this thread submitted\n"
	"      --comm NAME   only requests threads of this name submitted\n"
	"      --cgroup PATH only requests submitted from this cgroup v2 (and below)\n"
	"      --file PATH   only requests on this file\n"
	"      --dir PATH    only requests on files below this directory (same fs)\n"
	"  -T, --timestamp   a time above each report\n"
	"  --max-entries N   histograms kept in the kernel (default 2048, 5 KiB each)\n"
	"  --json            one JSON object per report: bucket bounds, counts, percentiles\n"
	"  -v, --verbose     attach plan and libbpf messages\n"
	"  -h, --help        this help\n";

enum lat_opt {
	OPT_STAGE = 0x2000,
	OPT_SIZE,
	OPT_BY,
	OPT_MAX_ENTRIES,
};

static int parse_by(const char *arg, uint32_t *fields)
{
	static const struct {
		const char *name;
		uint32_t field;
	} keys[] = {
		{"pid", LAT_K_PID},   {"comm", LAT_K_COMM},   {"cgroup", LAT_K_CGROUP},
		{"file", LAT_K_FILE}, {"stack", LAT_K_STACK},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		if (!strcmp(arg, keys[i].name)) {
			*fields |= keys[i].field;
			return 0;
		}
	}
	return fail_usage("invalid --by '%s': use pid, comm, cgroup, file or stack", arg);
}

static int lat_parse(int argc, char **argv, struct lat_cmd *l)
{
	static const struct option long_opts[] = {
		{"stage", required_argument, NULL, OPT_STAGE},
		{"size", no_argument, NULL, OPT_SIZE},
		{"milliseconds", no_argument, NULL, 'm'},
		{"disks", no_argument, NULL, 'D'},
		{"flags", no_argument, NULL, 'F'},
		{"by", required_argument, NULL, OPT_BY},
		FILTER_LONG_OPTS,
		{"timestamp", no_argument, NULL, 'T'},
		{"max-entries", required_argument, NULL, OPT_MAX_ENTRIES},
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	struct lat_opts *o = &l->o;
	const struct args_spec spec =
		FILTER_ARGS_SPEC("lat", lat_usage, "mDFT", long_opts, &o->filter, false, NULL);
	bool have_by = false, have_stage = false;
	int opt, err;

	lat_opts_default(o);
	while ((opt = args_next(&spec, argc, argv)) > ARGS_HELP) {
		switch (opt) {
		case OPT_STAGE:
			err = args_once("--stage", &have_stage);
			if (err)
				return err;
			if (!strcmp(optarg, "q2c"))
				o->stage = LAT_Q2C;
			else if (!strcmp(optarg, "d2c"))
				o->stage = LAT_D2C;
			else if (!strcmp(optarg, "q2d"))
				o->stage = LAT_Q2D;
			else if (!strcmp(optarg, "device"))
				o->stage = LAT_DEVICE;
			else
				return fail_usage(
					"invalid --stage '%s': use q2c, d2c, q2d or device",
					optarg);
			break;
		case OPT_SIZE:
			o->size = true;
			break;
		case 'm':
			o->millis = true;
			break;
		case 'D':
			o->key_fields |= LAT_K_DISK;
			break;
		case 'F':
			o->key_fields |= LAT_K_OP;
			break;
		case OPT_BY:
			err = args_once("--by", &have_by) ?: parse_by(optarg, &o->key_fields);
			if (err)
				return err;
			break;
		case 'T':
			o->timestamps = true;
			break;
		case OPT_MAX_ENTRIES:
			err = args_number_in("", "--max-entries", optarg, 64, LAT_MAX_ENTRIES,
					     "64 to " ARGS_STR(LAT_MAX_ENTRIES), &o->max_entries);
			if (err)
				return err;
			break;
		}
	}
	if (opt)
		return opt;
	if (o->size && have_stage)
		return fail_usage("--size measures sizes, not a --stage: give one of them");
	if (o->size && o->millis)
		return fail_usage("-m is for latencies: --size is in KiB");
	if (o->size)
		o->stage = LAT_SIZE;
	return parse_interval_count(argc - optind, argv + optind, &l->interval_ns, &l->count);
}

/* A report of the window that ends now (a tick of the main loop). */
static int lat_report(void *arg, const struct bpfcmd_tick *t)
{
	struct lat_cmd *l = arg;
	struct lat_report r;
	int err;

	err = lat_collect_read(l->c, t->seconds, &r);
	if (err)
		return err;
	err = lat_render(&l->view, &r);
	lat_report_free(&r);
	return err;
}

static int lat_run(struct lat_cmd *l)
{
	const struct lat_opts *o = &l->o;
	const struct bpfcmd_loop loop = {
		.interval_ns = l->interval_ns,
		.count = l->count,
		.tick_at_end = true,
		.tick = lat_report,
		.arg = l,
	};
	struct bpfcmd *cmd = lat_collect_cmd(l->c);

	cmd->want_ksyms = o->key_fields & LAT_K_STACK;
	if (l->interval_ns)
		bpfcmd_start(cmd, "tracing %s, a report every %.1f s; Ctrl-C to stop",
			     lat_stage_name(o->stage), l->interval_ns / 1e9);
	else
		bpfcmd_start(cmd, "tracing %s; Ctrl-C to report", lat_stage_name(o->stage));
	lat_collect_view(l->c, &l->view);
	l->view.ksyms = cmd->ksyms;
	return bpfcmd_run(cmd, &loop);
}

int cmd_lat(int argc, char **argv)
{
	static struct lat_cmd l;
	int err;

	memset(&l, 0, sizeof(l));
	err = lat_parse(argc, argv, &l);
	if (err)
		return err > 0 ? 0 : err;
	if (gopts.json) {
		l.view.jw = jw_new(stdout);
		if (!l.view.jw) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
	}
	err = lat_collect_open(&l.o, &l.c);
	if (err)
		goto cleanup;
	err = lat_run(&l);
cleanup:
	lat_collect_close(l.c);
	jw_free(l.view.jw);
	probe_cleanup();
	return err;
}
