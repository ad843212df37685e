// SPDX-License-Identifier: GPL-2.0
/*
 * iospan stat: the iostat -x report from /proc/diskstats, with sysstat's formulas,
 * recording of the raw snapshots and replay of a recording.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iospan.h"
#include "args.h"
#include "diskstats.h"
#include "disks.h"
#include "err.h"
#include "render.h"
#include "units.h"
#include "stat.h"

static const char stat_usage[] =
	"Usage: iospan stat [OPTIONS] [interval [count]]\n"
	"\n"
	"Extended disk statistics from /proc/diskstats, as `iostat -x` computes them.\n"
	"Without an interval: one report since boot. With one: a report every interval\n"
	"(the first since boot unless -y), count times or until Ctrl-C.\n"
	"\n"
	"Options:\n"
	"  -d, --disk DISK     only this disk or partition (sda, /dev/loop0, 7:0); repeatable\n"
	"  -z, --omit-idle     omit devices that completed no I/O in the interval\n"
	"  -y, --skip-boot     skip the first report (statistics since boot)\n"
	"  -p, --partitions    include partitions\n"
	"      --record FILE   also save the raw snapshots sampled, for --replay\n"
	"      --replay FILE   compute the reports from a recording instead of this machine;\n"
	"                      an interval then selects snapshots at least that far apart\n"
	"      --json          one JSON object per report\n"
	"  -v, --verbose       (accepted; stat has nothing more to say)\n"
	"  -h, --help          this help\n"
	"The interval is a decimal number of seconds (or with a unit: 250ms, 2m), at least\n"
	"1ms; the count a decimal integer.\n"
	"\n"
	"Per device and operation (read, write; discard and flush when they occur):\n"
	"  ops/s  kB/s  rqm/s (merged requests)  %rqm  await (ms)  areq-sz (kB)\n"
	"  and per device aqu-sz (average queue size), %util, inflight (requests now).\n"
	"\n"
	"Examples:\n"
	"  iospan stat -y -d sda 1 5          five one-second reports for sda\n"
	"  iospan stat -z --json 2            every 2 s, busy devices only, JSON lines\n"
	"  iospan stat --record incident.rec 1   record while watching\n"
	"  iospan stat --replay incident.rec 10  the same recording in 10 s steps\n"
	"\n"
	"Exit codes: 0 ok, 1 runtime failure, 2 bad usage. Manual: iospan-stat(8).\n";

static int stat_parse(int argc, char **argv, struct stat_opts *o)
{
	enum { OPT_RECORD = 0x2000, OPT_REPLAY };
	static const struct option long_opts[] = {
		{ "disk", required_argument, NULL, 'd' },
		{ "omit-idle", no_argument, NULL, 'z' },
		{ "skip-boot", no_argument, NULL, 'y' },
		{ "partitions", no_argument, NULL, 'p' },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "replay", required_argument, NULL, OPT_REPLAY },
		COMMON_LONG_OPTS,
		{ 0 },
	};
	const struct args_spec spec = {
		.cmd = "stat",
		.usage = stat_usage,
		.short_opts = ":d:zyp" COMMON_SHORT_OPTS,
		.long_opts = long_opts,
	};
	int opt, ret;

	while ((opt = args_next(&spec, argc, argv)) > ARGS_HELP) {
		ret = 0;
		switch (opt) {
		case 'd':
			ret = disk_spec_add("", optarg, o->disks, o->disk_text, &o->nr_disks,
					    STAT_MAX_DISKS);
			break;
		case 'z':
			o->omit_idle = true;
			break;
		case 'y':
			o->skip_boot = true;
			break;
		case 'p':
			o->partitions = true;
			break;
		case OPT_RECORD:
			ret = args_path("", "--record", optarg, &o->record_path);
			break;
		case OPT_REPLAY:
			ret = args_path("", "--replay", optarg, &o->replay_path);
			break;
		}
		if (ret)
			return ret;
	}
	if (opt)
		return opt;
	ret = parse_interval_count(argc - optind, argv + optind, &o->interval_ns, &o->count);
	if (ret)
		return ret;
	if (o->count && !o->interval_ns)
		return fail_usage("a count needs an interval");
	if (o->record_path && o->replay_path)
		return fail_usage("--record and --replay cannot be combined");
	return 0;
}

/* Every -d must name a device of @s (this machine's, or the recording's). */
static int stat_check_disks(const struct stat_opts *o, const struct ds_snapshot *s)
{
	int i;
	size_t j;

	for (i = 0; i < o->nr_disks; i++) {
		for (j = 0; j < s->nr; j++)
			if (disk_spec_matches(&o->disks[i], s->devs[j].major, s->devs[j].minor,
					      s->devs[j].name))
				break;
		if (j == s->nr) {
			if (o->replay_path)
				return fail_usage("unknown disk '%s': not in recording %s",
						  o->disk_text[i], o->replay_path);
			return fail_usage("unknown disk '%s': name a device listed in "
					  "/proc/diskstats (sda, /dev/loop0, 7:0)",
					  o->disk_text[i]);
		}
	}
	return 0;
}

static int stat_replay(struct stat_ctx *ctx)
{
	const struct stat_opts *o = ctx->opts;
	struct ds_snapshot snaps[2], *prev = &snaps[0], *cur = &snaps[1], *tmp;
	double min_gap = o->interval_ns / 1e9;
	struct ds_reader r;
	bool have_prev = false, clock_set_back = false;
	uint64_t emitted = 0;
	int ret;

	ds_snapshot_init(&snaps[0]);
	ds_snapshot_init(&snaps[1]);
	ret = ds_reader_open(&r, o->replay_path);
	if (ret) {
		ret = fail_usage("cannot open recording '%s': %s", o->replay_path, strerror(-ret));
		goto cleanup;
	}
	while ((ret = ds_reader_next(&r, cur)) == 1) {
		if (!have_prev) {
			ret = stat_check_disks(o, cur);
			if (ret)
				goto cleanup;
			if (!o->skip_boot) {
				stat_report(ctx, NULL, cur, NOTE_NONE);
				emitted++;
			}
		} else if (r.rebooted) {
			/*
			 * Uptime went back while the wall clock went on (ds_reader_next): the
			 * counters restarted with the new boot, and its since-boot report is
			 * the only one that covers the gap, so -y does not skip it.
			 */
			stat_report(ctx, NULL, cur, NOTE_REBOOT);
			emitted++;
		} else {
			/* A snapshot skipped below may be the one that saw the clock set back. */
			clock_set_back |= r.clock_set_back;
			/* With an interval, skip snapshots closer than it to the last one used
			 * (1% slack for sampling jitter). */
			if (cur->uptime_s - prev->uptime_s < min_gap * 0.99)
				continue;
			stat_report(ctx, prev, cur, clock_set_back ? NOTE_CLOCK_BACK : NOTE_NONE);
			emitted++;
		}
		clock_set_back = false;
		if (o->count && emitted >= o->count)
			break;
		tmp = prev;
		prev = cur;
		cur = tmp;
		have_prev = true;
	}
	if (ret < 0) {
		if (ret == -EINVAL)
			ret = fail_usage("malformed recording: %s", r.error);
		else
			ret = fail(ret, "reading %s: %s", o->replay_path, strerror(-ret));
		goto cleanup;
	}
	if (!have_prev && ret == 0) {
		ret = fail_usage("recording '%s' holds no snapshot", o->replay_path);
		goto cleanup;
	}
	ret = 0;
cleanup:
	ds_reader_close(&r);
	ds_snapshot_free(&snaps[0]);
	ds_snapshot_free(&snaps[1]);
	return ret;
}

static int stat_sample(struct stat_ctx *ctx, struct ds_snapshot *s)
{
	int ret = ds_read("/proc/diskstats", s);

	if (ret)
		return fail(ret, "cannot read /proc/diskstats: %s", strerror(-ret));
	if (ctx->record) {
		ret = ds_record_snapshot(ctx->record, s, ctx->reports == 0);
		if (ret)
			return fail(ret, "cannot write recording '%s'", ctx->opts->record_path);
	}
	return 0;
}

static int stat_live(struct stat_ctx *ctx)
{
	const struct stat_opts *o = ctx->opts;
	struct ds_snapshot snaps[2], *prev = &snaps[0], *cur = &snaps[1], *tmp;
	uint64_t start, emitted = 0, k;
	bool stopped;
	int ret;

	ds_snapshot_init(&snaps[0]);
	ds_snapshot_init(&snaps[1]);
	ret = stat_sample(ctx, prev);
	if (ret)
		goto cleanup;
	ret = stat_check_disks(o, prev);
	if (ret)
		goto cleanup;
	if (!o->interval_ns || !o->skip_boot) {
		stat_report(ctx, NULL, prev, NOTE_NONE);
		emitted++;
	}
	if (!o->interval_ns)
		goto cleanup;

	install_stop_handlers();
	start = now_ns(CLOCK_MONOTONIC);
	for (k = 1; !o->count || emitted < o->count; k++) {
		/* Absolute deadlines: reports do not drift by the time spent printing. */
		stopped = sleep_until_ns(start + k * o->interval_ns);
		ret = stat_sample(ctx, cur);
		if (ret)
			goto cleanup;
		/* Interrupted: report the part of the interval that passed, if any. */
		if (stopped && cur->uptime_s - prev->uptime_s < 0.01)
			break;
		stat_report(ctx, prev, cur, stopped ? NOTE_PARTIAL : NOTE_NONE);
		emitted++;
		if (stopped)
			break;
		tmp = prev;
		prev = cur;
		cur = tmp;
	}
cleanup:
	ds_snapshot_free(&snaps[0]);
	ds_snapshot_free(&snaps[1]);
	return ret;
}

int cmd_stat(int argc, char **argv)
{
	struct stat_opts opts = {};
	struct stat_ctx ctx = { .opts = &opts };
	int ret;

	ret = stat_parse(argc, argv, &opts);
	if (ret)
		return ret > 0 ? 0 : ret;

	ret = render_new(stdout, gopts.json ? RENDER_JSON : RENDER_TEXT, &ctx.render);
	if (ret)
		return fail(ret, "out of memory");
	if (opts.replay_path) {
		ret = stat_replay(&ctx);
		goto cleanup;
	}
	if (opts.record_path) {
		ctx.record = fopen(opts.record_path, "w");
		if (!ctx.record) {
			ret = fail_usage("cannot create recording '%s': %s", opts.record_path,
					 strerror(errno));
			goto cleanup;
		}
		ret = ds_record_header(ctx.record);
		if (ret) {
			ret = fail(ret, "cannot write recording '%s'", opts.record_path);
			goto cleanup;
		}
	}
	ret = stat_live(&ctx);
cleanup:
	if (ctx.record && fclose(ctx.record) && !ret)
		ret = fail(-errno, "cannot write recording '%s'", opts.record_path);
	render_free(ctx.render);
	return ret;
}
