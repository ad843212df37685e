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
#include "lat.skel.h"
#include "lat_compat.skel.h"
#include "skel.h"

#define LAT_MAX_ENTRIES	    65536
#define LAT_DEFAULT_ENTRIES 2048
#define LAT_STACK_ENTRIES   16384

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
	"                    device to completed), q2d (queued to issued)\n"
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

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!strcmp(arg, keys[i].name)) {
			*fields |= keys[i].field;
			return 0;
		}
	}
	return fail_usage("invalid --by '%s': use pid, comm, cgroup, file or stack", arg);
}

static int lat_parse(int argc, char **argv, struct lat_opts *o)
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
	bool have_by = false, have_stage = false;
	int opt, err;

	o->stage = LAT_Q2C;
	o->max_entries = LAT_DEFAULT_ENTRIES;
	while ((opt = getopt_long(argc, argv, "mDF" FILTER_SHORT_OPTS "T" COMMON_SHORT_OPTS,
				  long_opts, NULL)) != -1) {
		err = filter_parse_opt("lat", opt, optarg, &o->filter);
		if (err <= 0) {
			if (err)
				return err;
			continue;
		}
		switch (opt) {
		case OPT_HELP:
			fputs(lat_usage, stdout);
			return 1;
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
			else
				return fail_usage("invalid --stage '%s': use q2c, d2c or q2d",
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
			if (parse_u64_range(optarg, 64, LAT_MAX_ENTRIES, &o->max_entries))
				return fail_usage("invalid --max-entries '%s': give 64 to %u",
						  optarg, LAT_MAX_ENTRIES);
			break;
		default:
			return args_bad_option("lat", argv);
		}
	}
	if (o->size && have_stage)
		return fail_usage("--size measures sizes, not a --stage: give one of them");
	if (o->size && o->millis)
		return fail_usage("-m is for latencies: --size is in KiB");
	if (o->size)
		o->stage = LAT_SIZE;
	return parse_interval_count(argc - optind, argv + optind, &o->interval_ns, &o->count);
}

struct lat_ctx {
	const struct lat_opts *o;
	struct bpfcmd cmd;
	struct lat_bpf *skel; /* cmd's */
	struct lat_state state;
	struct lat_stacks stacks;
	struct lat_view view;
	uint64_t skipped; /* the programs' recursion misses so far */
	/* The cross-check with /proc/diskstats (see struct lat_report's not_seen). */
	bool ds_check;
	uint64_t ds_start; /* the disk's completed requests when tracing began */
	uint64_t seen;	   /* requests counted or declared so far */
	uint64_t not_seen; /* the largest shortfall so far */
};

/*
 * Requests @d completed on the disk of -d (all kinds, as lat counts them), or -1 if
 * /proc/diskstats cannot say.
 */
static int64_t disk_requests(const struct disk *d)
{
	struct ds_snapshot snap;
	const struct ds_dev *dev;
	int64_t n = -1;

	ds_snapshot_init(&snap);
	if (!ds_read("/proc/diskstats", &snap)) {
		dev = ds_snapshot_find(&snap, d->major, d->minor, d->name);
		if (dev)
			n = dev->f[DS_RD_IOS] + dev->f[DS_WR_IOS] + dev->f[DS_DC_IOS] +
			    dev->f[DS_FL_IOS];
	}
	ds_snapshot_free(&snap);
	return n;
}

/*
 * Fills @r's not_seen: what /proc/diskstats completed since tracing began, less what
 * the programs counted or declared. Read before the maps, so it can only fall short of
 * the programs' window, never past it: a shortfall is a request no program ran for.
 */
static void check_diskstats(struct lat_ctx *c, struct lat_report *r, int64_t ds_now)
{
	uint64_t seen = r->skipped, done;
	size_t i;
	int d;

	for (i = 0; i < r->nr; i++)
		seen += r->rows[i].h.count;
	for (d = 0; d < LAT_DROP_NR; d++)
		seen += r->drops[d];
	c->seen += seen;
	if (!c->ds_check || ds_now < 0)
		return;
	r->not_seen_known = true;
	done = ds_now - c->ds_start;
	if (done > c->seen && done - c->seen > c->not_seen) {
		r->not_seen = done - c->seen - c->not_seen;
		c->not_seen = done - c->seen;
	}
}

static bool needs_owner(const struct lat_opts *o)
{
	return (o->key_fields & LAT_K_OWNER) || filter_opts_target(&o->filter);
}

static bool needs_issue(const struct lat_opts *o)
{
	return o->stage == LAT_D2C || o->stage == LAT_Q2D;
}

/* The stage starts at the first bio's queue time (block_bio_queue). */
static bool needs_queue(const struct lat_opts *o)
{
	return o->stage == LAT_Q2C || o->stage == LAT_Q2D;
}

#define RA_FIGURE "--by stack: a read's own misses told from the async readahead it sets off"

/* The hooks the options need, with their variants, into @c's plan. */
static int plan_hooks(struct lat_ctx *c)
{
	struct lat_bpf *s = c->skel;
	struct attach_hook hooks[] = {
		TP_BTF_HOOK(s, "block_rq_complete", lat_rq_complete, false, NULL),
		TP_BTF_HOOK(s, "block_rq_issue", lat_rq_issue, false, NULL),
		TP_BTF_HOOK(s, "block_bio_queue", lat_bio_queue, false, NULL),
		TP_BTF_HOOK(s, "block_split", lat_bio_split, false, NULL),
		/* --by stack: which readahead a read's requests come from (lat.bpf.c). */
		FALLBACK_HOOK(s, "page_cache_sync_ra", lat_ra_sync, RA_FIGURE),
		FALLBACK_HOOK(s, "page_cache_async_ra", lat_ra_async, RA_FIGURE),
		FALLBACK_HOOK(s, "mm_filemap_fault", lat_ra_fault, RA_FIGURE),
	};
	bool stacks = c->o->key_fields & LAT_K_STACK;
	int n = 0, i, j;

	/* Hooks the options do not need are neither planned nor loaded. */
	for (i = 0; i < (int)(sizeof(hooks) / sizeof(hooks[0])); i++) {
		bool ra = hooks[i].v[0].prog == s->progs.lat_ra_sync ||
			  hooks[i].v[0].prog == s->progs.lat_ra_async ||
			  hooks[i].v[0].prog == s->progs.lat_ra_fault;
		bool off = (!needs_issue(c->o) && !strcmp(hooks[i].name, "block_rq_issue")) ||
			   (!needs_owner(c->o) && !needs_queue(c->o) &&
			    strncmp(hooks[i].name, "block_rq_", 9)) ||
			   (ra && !stacks);

		if (off)
			for (j = 0; j < ATTACH_MAX_VARIANTS && hooks[i].v[j].prog; j++)
				bpf_program__set_autoload(hooks[i].v[j].prog, false);
		else
			hooks[n++] = hooks[i];
	}
	return bpfcmd_plan(&c->cmd, hooks, n, "give a smaller --max-entries");
}

static int lat_setup(struct lat_ctx *c)
{
	static const char *const syms[] = {"iomap_dio_bio_end_io"};
	const struct lat_opts *o = c->o;
	struct lat_bpf *s;
	uint64_t addr = 0;
	int err;

	/* Read while the probes and the kernel's BTF are parsed (bpfcmd_prepare()). */
	if (needs_owner(o))
		bpfcmd_kernel_addrs_start(&c->cmd, syms, 1);
	err = bpfcmd_prepare(&c->cmd, "lat",
			     o->key_fields & LAT_K_CGROUP ? BPFCMD_CGROUP_NAMES : 0);
	if (err)
		return err;
	c->view.cgmap = c->cmd.cgmap;
	if (needs_owner(o))
		bpfcmd_kernel_addrs(&c->cmd, syms, &addr, 1,
				    "direct I/O is told by its pages, without its file");
	s = BPFCMD_OPEN(&c->cmd, lat);
	if (!s)
		return -errno;
	c->skel = s;
	s->rodata->stage = o->stage;
	s->rodata->key_fields = o->key_fields;
	s->rodata->unit = o->stage == LAT_SIZE ? 1024 : o->millis ? 1000000 : 1000;
	memcpy((void *)&s->rodata->tfilter, &o->filter.tf, sizeof(o->filter.tf));
	s->rodata->want_owner = needs_owner(o);
	s->rodata->blk_owner_want_stack = o->key_fields & LAT_K_STACK;
	s->rodata->follow_ra = o->key_fields & LAT_K_STACK;
	s->rodata->blk_owner_dio_end_io = addr;
	bpf_map__set_max_entries(s->maps.hists, o->max_entries);
	bpf_map__set_max_entries(s->maps.blk_owner_stack_ids,
				 o->key_fields & LAT_K_STACK ? LAT_STACK_ENTRIES : 1);
	s->rodata->blk_owner_nr_cpus = c->cmd.ncpus;
	if (!needs_owner(o))
		bpf_map__set_max_entries(s->maps.blk_owner_slots, 1);
	if (!needs_issue(o))
		bpf_map__set_max_entries(s->maps.rq_issues, 1);
	if (o->stage != LAT_SIZE)
		bpf_map__set_max_entries(s->maps.rq_parts, 1);
	if (!needs_queue(o))
		bpf_map__set_max_entries(s->maps.bio_qs, 1);
	if (!(o->key_fields & LAT_K_FILE))
		bpf_map__set_max_entries(s->maps.paths, 1);
	err = plan_hooks(c) ?: bpfcmd_load_filter(&c->cmd, &o->filter) ?: bpfcmd_attach(&c->cmd);
	if (err)
		return err;
	if ((o->key_fields & LAT_K_FILE) &&
	    fspath_cache_new(fspath_lookup_bpf_map, FSPATH_MAP_ARG(bpf_map__fd(s->maps.paths)),
			     &c->view.paths))
		return fail(-ENOMEM, "out of memory");
	/*
	 * Every request of one whole disk is counted or declared: /proc/diskstats, read
	 * once the programs run, can tell whether the kernel skipped any silently.
	 */
	if (o->filter.have_disk && !o->filter.disk.partition && !filter_opts_target(&o->filter)) {
		int64_t n = disk_requests(&o->filter.disk);

		c->ds_check = n >= 0;
		c->ds_start = n;
	}
	c->view.o = o;
	c->stacks.fd = o->key_fields & LAT_K_STACK ? bpf_map__fd(s->maps.blk_owner_stack_ids) : -1;
	c->view.stacks = &c->stacks;
	return 0;
}

/* A report of the window that ends now (a tick of the main loop). */
static int lat_report(void *arg, const struct bpfcmd_tick *t)
{
	struct lat_ctx *c = arg;
	/* Before the maps: see check_diskstats(). */
	int64_t ds_now = c->ds_check ? disk_requests(&c->o->filter.disk) : -1;
	struct lat_report r;
	uint64_t skipped;
	int err;

	err = lat_report_read(&c->state, bpf_map__fd(c->skel->maps.hists),
			      bpf_map__fd(c->skel->maps.drops), c->cmd.ncpus, &r);
	if (err)
		return err;
	r.seconds = t->seconds;
	skipped = bpfcmd_missed_runs(&c->cmd);
	r.skipped = skipped - c->skipped;
	c->skipped = skipped;
	check_diskstats(c, &r, ds_now);
	err = lat_render(&c->view, &r);
	lat_report_free(&r);
	return err;
}

static int lat_run(struct lat_ctx *c)
{
	const struct lat_opts *o = c->o;
	const struct bpfcmd_loop loop = {
		.interval_ns = o->interval_ns,
		.count = o->count,
		.tick_at_end = true,
		.tick = lat_report,
		.arg = c,
	};

	c->cmd.want_ksyms = o->key_fields & LAT_K_STACK;
	if (o->interval_ns)
		bpfcmd_start(&c->cmd, "tracing %s, a report every %.1f s; Ctrl-C to stop",
			     lat_stage_name(o->stage), o->interval_ns / 1e9);
	else
		bpfcmd_start(&c->cmd, "tracing %s; Ctrl-C to report", lat_stage_name(o->stage));
	c->view.ksyms = c->cmd.ksyms;
	return bpfcmd_run(&c->cmd, &loop);
}

static void lat_cleanup(struct lat_ctx *c)
{
	bpfcmd_close(&c->cmd);
	fspath_cache_free(c->view.paths);
	lat_stacks_free(&c->stacks);
	lat_state_free(&c->state);
	jw_free(c->view.jw);
	probe_cleanup();
}

int lat_plan(plan_show_fn show, void *arg)
{
	static struct lat_opts opts;
	static struct lat_ctx c;
	char *argv[] = {"lat", NULL};
	char why[256];
	int err;

	memset(&opts, 0, sizeof(opts));
	cmd_reset_getopt();
	err = lat_parse(1, argv, &opts);
	if (err)
		return err < 0 ? err : -EINVAL;
	memset(&c, 0, sizeof(c));
	c.o = &opts;
	err_capture(why, sizeof(why));
	err = lat_setup(&c);
	err_capture(NULL, 0);
	if (!err)
		show("lat", c.cmd.hooks, c.cmd.nr_hooks, NULL, arg);
	else
		show("lat", c.cmd.hooks, c.cmd.nr_hooks, why[0] ? why : strerror(-err), arg);
	lat_cleanup(&c);
	return 0;
}

int cmd_lat(int argc, char **argv)
{
	static struct lat_opts opts;
	static struct lat_ctx ctx;
	int err;

	memset(&opts, 0, sizeof(opts));
	memset(&ctx, 0, sizeof(ctx));
	err = lat_parse(argc, argv, &opts);
	if (err)
		return err > 0 ? 0 : err;
	ctx.o = &opts;
	if (gopts.json) {
		ctx.view.jw = jw_new(stdout);
		if (!ctx.view.jw) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
	}
	err = lat_setup(&ctx);
	if (err)
		goto cleanup;
	err = lat_run(&ctx);
cleanup:
	lat_cleanup(&ctx);
	return err;
}
