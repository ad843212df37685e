// SPDX-License-Identifier: GPL-2.0
/* iospan trace: options, set-up (filters, attach plan), the main loop, clean-up. */
#include "trace.h"

/* Ring buffer for slow requests: bounds, and defaults with and without -t 0. */
#define RB_MIN	       (1ULL << 20)
#define RB_MAX	       (1ULL << 30)
#define RB_DEFAULT     (16ULL << 20)
#define RB_DEFAULT_ALL (64ULL << 20)
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
	OPT_OPS = 0x2000,
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
		FILTER_LONG_OPTS,
		{"ops", required_argument, NULL, OPT_OPS},
		{"perfetto", required_argument, NULL, OPT_PERFETTO},
		{"offcpu-periods", no_argument, NULL, OPT_OFFCPU_PERIODS},
		{"buffer-size", required_argument, NULL, OPT_BUFFER_SIZE},
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	const char *bad;
	size_t bad_len;
	int opt, err;

	o->threshold_ns = 10 * 1000000ULL;
	o->interval_ns = 5 * NSEC_PER_SEC;
	o->ops = TRACE_OPS_ALL;
	o->delayacct = read_int_file("/proc/sys/kernel/task_delayacct") == 1;
	while ((opt = getopt_long(argc, argv, "t:i:" FILTER_SHORT_OPTS COMMON_SHORT_OPTS, long_opts,
				  NULL)) != -1) {
		err = filter_parse_opt("trace", opt, optarg, &o->filter);
		if (err <= 0) {
			if (err)
				return err;
			continue;
		}
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

/* ------------------------------------------------------------------ setup */

/*
 * The two syscall programs serve every syscall tracepoint, attached by hand, by name
 * (trace.bpf.c).
 */
#define SYS_HOOKS(s, nm)                                      \
	{.name = "sys_enter_" #nm,                            \
	 .optional = true,                                    \
	 .v = {{.prog = s->progs.trace_sys_enter,             \
		.mode = ATTACH_TRACEPOINT,                    \
		.target = "syscalls/sys_enter_" #nm}}},       \
	{                                                     \
		.name = "sys_exit_" #nm, .optional = true,    \
		.v = { {.prog = s->progs.trace_sys_exit,      \
			.mode = ATTACH_TRACEPOINT,            \
			.target = "syscalls/sys_exit_" #nm} } \
	}
#define TP_HOOK(s, nm, hook, opt) TP_BTF_HOOK(s, #hook, trace_##nm, opt, NULL)

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

		if (o->filter.have_disk && strcmp(d->name, o->filter.disk.disk_name))
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

/* The most hooks trace_hooks() gives. */
#define TRACE_MAX_HOOKS 64

/* The hooks a run with options @o needs, with their variants, into @out: how many. */

static int trace_hooks(struct trace_bpf *s, const struct trace_opts *o, struct attach_hook *out)
{
	struct attach_hook hooks[] = {
		SYS_HOOKS(s, read),
		SYS_HOOKS(s, write),
		SYS_HOOKS(s, pread64),
		SYS_HOOKS(s, pwrite64),
		SYS_HOOKS(s, readv),
		SYS_HOOKS(s, writev),
		SYS_HOOKS(s, preadv),
		SYS_HOOKS(s, pwritev),
		SYS_HOOKS(s, preadv2),
		SYS_HOOKS(s, pwritev2),
		SYS_HOOKS(s, fsync),
		SYS_HOOKS(s, fdatasync),
		SYS_HOOKS(s, sync_file_range),
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
		TP_BTF_HOOK(s, "block_rq_issue", trace_rq_issue, true, NULL),
		TP_HOOK(s, bio_queue, block_bio_queue, false),
		TP_HOOK(s, rq_complete, block_rq_complete, false),
		TP_HOOK(s, split, block_split, true),
		TP_HOOK(s, getrq, block_getrq, true),
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

	_Static_assert(sizeof(hooks) / sizeof(hooks[0]) <= TRACE_MAX_HOOKS, "TRACE_MAX_HOOKS");

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
	memcpy(out, hooks, n * sizeof(*out));
	return n;
}

int trace_plan(plan_show_fn show, void *arg)
{
	static struct trace_opts opts;
	static struct trace_ctx c;
	struct attach_hook hooks[TRACE_MAX_HOOKS];
	char *argv[] = {"trace", NULL};
	struct trace_bpf *s;
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
		show("trace", c.cmd.hooks, c.cmd.nr_hooks, NULL, arg);
	trace_cleanup(&c);
	if (!err)
		return 0;
	if (!why[0])
		snprintf(why, sizeof(why), "%s", strerror(-err));
	/* Then what it would try, evaluated without loading. */
	s = SKEL_OPEN(trace);
	if (!s)
		return -errno;
	show("trace", hooks, trace_hooks(s, &opts, hooks), why, arg);
	trace_bpf__destroy(s);
	return 0;
}

int trace_setup(struct trace_ctx *c)
{
	/* Async direct I/O's end; bios blk-throttle held: its worker, submit_bio_wait()'s waiter.
	 */
	static const char *const syms[] = {"iomap_dio_bio_end_io", "blk_throtl_dispatch_work_fn",
					   "submit_bio_wait_endio"};
	const struct trace_opts *o = c->o;
	struct attach_hook hooks[TRACE_MAX_HOOKS];
	struct trace_bpf *s;
	uint64_t end_io, throtl_fn, wait_end_io, addrs[3];
	int err, i, nr;

	/* A file that cannot be written is said before anything is loaded. */
	if (o->perfetto_path) {
		err = perfetto_open(&c->pf, o->perfetto_path);
		if (err)
			return fail(err, "cannot write %s: %s", o->perfetto_path, strerror(-err));
	}
	bpfcmd_kernel_addrs_start(&c->cmd, syms, 3);
	err = bpfcmd_prepare(&c->cmd, "trace", BPFCMD_CGROUP_NAMES);
	if (err)
		return err;
	c->pcpu = calloc(c->cmd.ncpus, sizeof(*c->pcpu));
	c->prev = calloc(TRACE_OP_NR, sizeof(*c->prev));
	if (!c->pcpu || !c->prev || fspath_cache_new(trace_lookup_path, c, &c->paths) ||
	    /* Read for every record: titles change between requests. */
	    procinfo_new(trace_lookup_title, c, 1, &c->procinfo))
		return fail(-ENOMEM, "out of memory");
	bpfcmd_kernel_addrs(&c->cmd, syms, addrs, 3,
			    "async direct I/O and direct I/O re-submitted by kernel threads are "
			    "not followed");
	end_io = addrs[0];
	throtl_fn = addrs[1];
	wait_end_io = addrs[2];
	c->mono_to_real = mono_to_real_ns();

	s = BPFCMD_OPEN(&c->cmd, trace);
	if (!s)
		return -errno;
	c->skel = s;
	s->rodata->threshold_ns = o->threshold_ns;
	s->rodata->self_tgid = getpid();
	memcpy((void *)&s->rodata->tfilter, &o->filter.tf, sizeof(o->filter.tf));
	s->rodata->trace_faults = o->ops & (1U << TRACE_OP_FAULT);
	s->rodata->trace_writeback = o->ops & (1U << TRACE_OP_WRITEBACK);
	s->rodata->aio_ops = (o->ops >> TRACE_OP_AIO_READ) & 3;
	s->rodata->trace_aio = s->rodata->aio_ops && end_io;
	s->rodata->iomap_dio_end_io = end_io;
	s->rodata->throtl_dispatch_fn = throtl_fn;
	s->rodata->submit_bio_wait_end_io = wait_end_io;
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	/* IOSPAN_FAULT=bio_slots_contended (tests): bios take each other's slots. */
	if (fault_injected("bio_slots_contended"))
		s->rodata->bio_slots_nr = 16;
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

	return bpfcmd_plan(&c->cmd, hooks, trace_hooks(s, o, hooks),
			   "its maps have fixed sizes: free memory, or raise the memory cgroup "
			   "limit") ?:
		       bpfcmd_load_filter(&c->cmd, &o->filter) ?: trace_consume_open(c) ?:
		       bpfcmd_attach(&c->cmd);
}

/* A periodic summary: a tick of the main loop. */
static int trace_tick(void *arg, const struct bpfcmd_tick *t)
{
	struct trace_ctx *c = arg;
	int err = trace_summarize(c, t->seconds, false);

	if (err)
		return err;
	c->last_summary = t->now_ns;
	trace_sweep_writeback(c, false);
	return 0;
}

/* A trace file that lost a write is broken: stop, with the report so far. */
static int trace_after_read(void *arg)
{
	struct trace_ctx *c = arg;

	return perfetto_error(c->pf) ? 1 : 0;
}

static int trace_run(struct trace_ctx *c)
{
	const struct trace_opts *o = c->o;
	const struct bpfcmd_loop loop = {
		.interval_ns = o->interval_ns,
		.duration_ns = o->duration_ns,
		.max_wait_ms = 100,
		.tick = trace_tick,
		.after_read = trace_after_read,
		.arg = c,
	};
	char ops[256], rb[UNITS_BUF];
	int err;

	bpfcmd_start(&c->cmd,
		     "tracing %s requests over %.3f ms, summary every %.1f s; Ctrl-C to stop\n"
		     "iospan trace: the %s ring buffer holds about %" PRIu64 " slow requests (of "
		     "one bio) while the output catches up; drops are reported as they happen",
		     trace_ops_format(o->ops, ops, sizeof(ops)), o->threshold_ns / 1e6,
		     o->interval_ns / 1e9, fmt_bytes(o->rb_bytes, rb, sizeof(rb)),
		     (uint64_t)(o->rb_bytes / RB_TYPICAL_REC));
	c->last_summary = c->cmd.start_ns;
	err = bpfcmd_run(&c->cmd, &loop) ?: bpfcmd_stop(&c->cmd, &c->skel->bss->emit_stopped, 1000);
	if (err)
		return err;
	if (c->cmd.not_arrived)
		warn("%" PRIu64 " requests were sent but never arrived", c->cmd.not_arrived);
	err = trace_summarize(c, (now_ns(CLOCK_MONOTONIC) - c->last_summary) / 1e9, true);
	if (err)
		return err;
	trace_print_accounts(c);
	err = perfetto_close(c->pf);
	c->pf = NULL;
	if (err)
		return fail(err, "cannot write %s: %s; the trace file is incomplete",
			    o->perfetto_path, strerror(-err));
	return 0;
}

void trace_cleanup(struct trace_ctx *c)
{
	bpfcmd_close(&c->cmd);
	c->skel = NULL;
	/* After a failure reported already: what the file lacks is no news. */
	perfetto_close(c->pf);
	trace_perfetto_free_lanes(c);
	free(c->pcpu);
	free(c->prev);
	fspath_cache_free(c->paths);
	procinfo_free(c->procinfo);
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
	ctx.render = gopts.json ? &trace_json_renderer : &trace_text_renderer;
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
