// SPDX-License-Identifier: GPL-2.0
/* iospan trace: options, set-up (filters, attach plan), the main loop, clean-up. */
#include "iospan.h"
#include "trace.h"

/* Ring buffer for slow requests: bounds, and defaults with and without -t 0. */
/* Bytes of a typical record in the ring buffer: its headers (rbuf's, the kernel's), one bio. */
#define RB_TYPICAL_REC \
	(sizeof(struct rb_hdr) + offsetof(struct trace_rec, bios) + sizeof(struct trace_bio) + 8)

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
	"A VM's virtio-blk requests, guest to host (reads files, loads nothing):\n"
	"      --merge-guest FILE  the guest's iospan trace --json, with\n"
	"      --qemu-log FILE   QEMU's trace log (-msg timestamp=on\n"
	"                        -trace enable=virtio_blk_*,file=FILE), and\n"
	"      --host-trace FILE the host's iospan trace --json --file IMAGE\n"
	"      --image PATH      the image's path in the host trace (default: any file)\n"
	"      --guest-disk DISK the guest's disk of the image (vdb; default any)\n"
	"      --image-offset N  where the disk's sector 0 is in the file (default 0: raw)\n"
	"                        each guest request over -t with its way: guest, QEMU,\n"
	"                        the host's read or write; --json, --perfetto FILE\n"
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
	"  iospan trace --merge-guest guest.json --qemu-log qemu.log --host-trace host.json\n"
	"\n"
	"Exit codes: 0 ok, 1 runtime failure, 2 bad usage. Manual: iospan-trace(8).\n";

/* ------------------------------------------------------------------ options */

enum {
	OPT_OPS = 0x2000,
	OPT_PERFETTO,
	OPT_OFFCPU_PERIODS,
	OPT_MERGE_GUEST,
	OPT_QEMU_LOG,
	OPT_HOST_TRACE,
	OPT_IMAGE,
	OPT_GUEST_DISK,
	OPT_IMAGE_OFFSET,
};

/* --merge-guest reads files: its own options, -t, --json and --perfetto; nothing live. */
static int merge_check(struct trace_cmd *t, const struct trace_opts *o)
{
	const struct filter_opts *f = &o->filter;

	if (!t->merge.guest)
		return fail_usage("--qemu-log, --host-trace, --image, --guest-disk and "
				  "--image-offset go with --merge-guest GUEST.json");
	if (!t->merge.qemu_log || !t->merge.host)
		return fail_usage("--merge-guest needs QEMU's trace log (--qemu-log FILE) and "
				  "the host's trace of the image (--host-trace FILE)");
	if (t->kernel_opts || t->duration_ns || f->have_disk || f->have_cgroup || f->have_pid ||
	    f->have_tid || f->have_file || f->have_dir || f->tf.comm_on || o->ops != TRACE_OPS_ALL)
		return fail_usage("--merge-guest reads files: of the live trace's options only "
				  "-t, --json and --perfetto apply");
	return 0;
}

static int trace_parse(int argc, char **argv, struct trace_cmd *t)
{
	static const struct option long_opts[] = {
		{"threshold", required_argument, NULL, 't'},
		{"interval", required_argument, NULL, 'i'},
		DURATION_LONG_OPT,
		FILTER_LONG_OPTS,
		{"ops", required_argument, NULL, OPT_OPS},
		{"perfetto", required_argument, NULL, OPT_PERFETTO},
		{"offcpu-periods", no_argument, NULL, OPT_OFFCPU_PERIODS},
		{"merge-guest", required_argument, NULL, OPT_MERGE_GUEST},
		{"qemu-log", required_argument, NULL, OPT_QEMU_LOG},
		{"host-trace", required_argument, NULL, OPT_HOST_TRACE},
		{"image", required_argument, NULL, OPT_IMAGE},
		{"guest-disk", required_argument, NULL, OPT_GUEST_DISK},
		{"image-offset", required_argument, NULL, OPT_IMAGE_OFFSET},
		BUFFER_SIZE_LONG_OPT,
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	struct trace_opts *o = &t->o;
	struct args_run run = {.duration_ns = &t->duration_ns, .rb_bytes = &o->rb_bytes};
	uint64_t image_offset;
	const struct args_spec spec =
		FILTER_ARGS_SPEC("trace", trace_usage, "t:i:", long_opts, &o->filter, true, &run);
	const char *bad;
	size_t bad_len;
	int opt, err;

	trace_opts_default(o);
	t->interval_ns = 5 * NSEC_PER_SEC;
	while ((opt = args_next(&spec, argc, argv)) > ARGS_HELP) {
		switch (opt) {
		case 't':
			err = args_threshold("--threshold", optarg, &o->threshold_ns);
			if (err)
				return err;
			break;
		case 'i':
			err = args_period("--interval", optarg, &t->interval_ns);
			if (err)
				return err;
			t->kernel_opts = true;
			break;
		case OPT_MERGE_GUEST:
			t->merge.guest = optarg;
			break;
		case OPT_QEMU_LOG:
			t->merge.qemu_log = optarg;
			break;
		case OPT_HOST_TRACE:
			t->merge.host = optarg;
			break;
		case OPT_IMAGE:
			t->merge.image = optarg;
			break;
		case OPT_GUEST_DISK:
			t->merge.guest_disk = optarg;
			break;
		case OPT_IMAGE_OFFSET:
			err = args_number_in("", "--image-offset", optarg, 0, INT64_MAX,
					     "a byte offset from 0", &image_offset);
			if (err)
				return err;
			t->merge.image_offset = (int64_t)image_offset;
			break;
		case OPT_OPS:
			t->kernel_opts = true;
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
			t->kernel_opts = true;
			break;
		case OPT_PERFETTO:
			err = args_path("", "--perfetto", optarg, &t->perfetto_path);
			if (err)
				return err;
			break;
		}
	}
	if (opt)
		return opt;
	if (t->merge.guest || t->merge.qemu_log || t->merge.host || t->merge.image ||
	    t->merge.guest_disk || t->merge.image_offset)
		return merge_check(t, o);
	/* Every request goes to the output with -t 0: room for a longer burst. */
	if (!run.rb_set && !o->threshold_ns)
		o->rb_bytes = TRACE_RB_ALL;
	return 0;
}

/* A slow request from the collector: to the renderer, and to the trace file. */
static void on_request(void *arg, const struct trace_rec *r, const struct trace_names *n)
{
	struct trace_cmd *t = arg;

	t->render->request(t, r, n);
	if (t->pf)
		trace_perfetto_write(t, r, n);
}

static int trace_summarize(struct trace_cmd *t, double seconds, bool final)
{
	struct trace_summary sum;
	int err = trace_collect_summary(&t->c, seconds, final, &sum);

	if (err)
		return err;
	t->render->summary(t, &sum);
	fflush(stdout);
	return 0;
}

/* A periodic summary: a tick of the main loop. */
static int trace_tick(void *arg, const struct bpfcmd_tick *tick)
{
	struct trace_cmd *t = arg;
	int err = trace_summarize(t, tick->seconds, false);

	if (err)
		return err;
	t->last_summary = tick->now_ns;
	trace_sweep_writeback(&t->c, false);
	return 0;
}

/* A trace file that lost a write is broken: stop, with the report so far. */
static int trace_after_read(void *arg)
{
	struct trace_cmd *t = arg;

	return perfetto_error(t->pf) ? 1 : 0;
}

static void trace_accounts(struct trace_cmd *t)
{
	struct trace_totals tot;
	const uint64_t *cnt = tot.cnt;

	trace_collect_totals(&t->c, &tot);
	tot.lanes_full = t->lanes_full;
	if (cnt[TRACE_CNT_RINGBUF_FULL])
		warn("%" PRIu64 " of %" PRIu64 " slow requests (%.1f%%) were dropped because the "
		     "output did not keep up: see the '!!' lines, raise -t, filter, or use "
		     "--buffer-size",
		     cnt[TRACE_CNT_RINGBUF_FULL],
		     cnt[TRACE_CNT_RINGBUF_FULL] + cnt[TRACE_CNT_EMITTED],
		     100.0 * cnt[TRACE_CNT_RINGBUF_FULL] /
			     (cnt[TRACE_CNT_RINGBUF_FULL] + cnt[TRACE_CNT_EMITTED]));
	t->render->totals(t, &tot);
}

static int trace_run(struct trace_cmd *t)
{
	const struct trace_opts *o = &t->o;
	const struct bpfcmd_loop loop = {
		.interval_ns = t->interval_ns,
		.duration_ns = t->duration_ns,
		.max_wait_ms = 100,
		.tick = trace_tick,
		.after_read = trace_after_read,
		.arg = t,
	};
	char ops[256], rb[UNITS_BUF];
	int err;

	bpfcmd_start(&t->c.cmd,
		     "tracing %s requests over %.3f ms, summary every %.1f s; Ctrl-C to stop\n"
		     "iospan trace: the %s ring buffer holds about %" PRIu64 " slow requests (of "
		     "one bio) while the output catches up; drops are reported as they happen",
		     trace_ops_format(o->ops, ops, sizeof(ops)), o->threshold_ns / 1e6,
		     t->interval_ns / 1e9, fmt_bytes(o->rb_bytes, rb, sizeof(rb)),
		     (uint64_t)(o->rb_bytes / RB_TYPICAL_REC));
	t->last_summary = t->c.cmd.start_ns;
	err = bpfcmd_run(&t->c.cmd, &loop) ?: trace_collect_stop(&t->c);
	if (err)
		return err;
	if (t->c.cmd.not_arrived)
		warn("%" PRIu64 " requests were sent but never arrived", t->c.cmd.not_arrived);
	err = trace_summarize(t, (now_ns(CLOCK_MONOTONIC) - t->last_summary) / 1e9, true);
	if (err)
		return err;
	trace_accounts(t);
	err = perfetto_close(t->pf);
	t->pf = NULL;
	if (err)
		return fail(err, "cannot write %s: %s; the trace file is incomplete",
			    t->perfetto_path, strerror(-err));
	return 0;
}

int cmd_trace(int argc, char **argv)
{
	static struct trace_cmd t;
	const struct trace_sink sink = {.request = on_request, .arg = &t};
	int err;

	memset(&t, 0, sizeof(t));
	err = trace_parse(argc, argv, &t);
	if (err)
		return err > 0 ? 0 : err;
	if (t.merge.guest)
		return trace_merge_run(&t.merge, t.o.threshold_ns, t.perfetto_path);
	t.render = gopts.json ? &trace_json_renderer : &trace_text_renderer;
	if (gopts.json) {
		t.jw = jw_new(stdout);
		if (!t.jw) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
	}
	/* A file that cannot be written is said before anything is loaded. */
	if (t.perfetto_path) {
		err = perfetto_open(&t.pf, t.perfetto_path);
		if (err) {
			err = fail(err, "cannot write %s: %s", t.perfetto_path, strerror(-err));
			goto cleanup;
		}
	}
	err = trace_collect_open(&t.c, &t.o, &sink);
	if (err)
		goto cleanup;
	err = trace_run(&t);
cleanup:
	trace_collect_close(&t.c);
	/* After a failure reported already: what the file lacks is no news. */
	perfetto_close(t.pf);
	trace_perfetto_free_lanes(&t);
	jw_free(t.jw);
	return err;
}
