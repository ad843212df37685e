// SPDX-License-Identifier: GPL-2.0
/*
 * iospan snoop: options, set-up of the BPF side (src/bpf/snoop.bpf.c) and the main
 * loop, which reads the ring buffer in batches (src/lib/rbuf.h) and hands each record
 * to the formatter and the renderer. Nothing is allocated per record.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "iospan.h"
#include "args.h"
#include "bpfmap.h"
#include "err.h"
#include "filters.h"
#include "ksyms.h"
#include "mapmem.h"
#include "probe.h"
#include "rbuf.h"
#include "filter_abi.h"
#include "snoop.skel.h"
#include "snoop_compat.skel.h"
#include "skel.h"
#include "snoop.h"

#define NSEC_PER_SEC ((uint64_t)1000000000)
#define RB_MIN	     (1ULL << 20)
#define RB_MAX	     (1ULL << 30)
#define RB_DEFAULT   (16ULL << 20)
/* Output buffer: flushed after each batch to a terminal, else every OUT_FLUSH_NS. */
#define OUT_BUF	     (1 << 20)
#define OUT_FLUSH_NS (100 * 1000000ULL)

struct snoop_ctx {
	struct snoop_opts *o;
	struct snoop_bpf *skel;
	struct attach_hook *hooks;
	int nr_hooks;
	struct rbuf *rb;
	struct snoop_format *fmt;
	struct snoop_render *render;
	FILE *out;
	bool tty; /* out is a terminal */
	char *out_buf;
	uint64_t events;
};

static const char snoop_usage[] =
	"Usage: iospan snoop [OPTIONS]\n"
	"One line per completed block request: when, who submitted it (for writeback, the\n"
	"process that dirtied the pages), where, what, how long it queued and took.\n\n"
	"Options (filters run in the kernel):\n"
	"  -d, --disk DISK         one disk (sda, /dev/loop0, 7:0) or partition\n"
	"  -p, --pid PID           submitted by this process\n"
	"      --tid TID           submitted by this thread\n"
	"      --comm NAME         submitted by threads of this name\n"
	"      --cgroup PATH       submitted from this cgroup v2 or below it\n"
	"      --file PATH         of this file\n"
	"      --dir PATH          of files below this directory\n"
	"      --ops LIST          read, write, flush, discard, secure_erase, write_zeroes,\n"
	"                          zone_append, all (default all)\n"
	"      --min-latency DUR   only requests whose total time reaches DUR (bare: ms)\n"
	"      --duration DUR      stop after DUR (bare number: seconds); default Ctrl-C\n"
	"  -o, --output FILE       write the lines to FILE\n"
	"      --buffer-size SIZE  ring buffer (default 16M; 1M to 1G, bare number MiB)\n"
	"      --json              one JSON object per request, then a summary object\n"
	"  -v, --verbose           attach plan and libbpf messages\n"
	"  -h, --help              this help\n\n"
	"Columns: TIME (completion), COMM PID TID (submitter), DISK, RWBS (blktrace letters),\n"
	"SECTOR, BYTES, QUEUE (allocation to dispatch), DEVICE (dispatch to completion),\n"
	"TOTAL, QD (requests in flight on the disk at dispatch, this one included), BIOS\n"
	"(bios in the request: 1 + merged), CGROUP (or container), FILE.\n"
	"Lost records (ring buffer full) are counted and shown at the end. See iospan-snoop(8).\n";

enum {
	OPT_TID = 0x2000,
	OPT_COMM,
	OPT_CGROUP,
	OPT_FILE,
	OPT_DIR,
	OPT_OPS,
	OPT_MIN_LATENCY,
	OPT_DURATION,
	OPT_BUFFER_SIZE,
};

static const struct {
	const char *name;
	uint32_t mask;
} op_names[] = {
	{"read", 1U << SNOOP_OP_READ},
	{"write", 1U << SNOOP_OP_WRITE},
	{"flush", 1U << SNOOP_OP_FLUSH},
	{"discard", 1U << SNOOP_OP_DISCARD},
	{"secure_erase", 1U << SNOOP_OP_SECURE_ERASE},
	{"write_zeroes", 1U << SNOOP_OP_WRITE_ZEROES},
	{"zone_append", 1U << SNOOP_OP_ZONE_APPEND},
	{"all", 0xffffffffU},
};

static int parse_ops(const char *list, uint32_t *mask)
{
	const char *p = list, *end;
	size_t len, i;

	*mask = 0;
	do {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
			if (len == strlen(op_names[i].name) && !strncmp(p, op_names[i].name, len))
				break;
		if (!len || i == sizeof(op_names) / sizeof(op_names[0]))
			return fail_usage("invalid --ops item '%.*s': use read, write, flush, "
					  "discard, secure_erase, write_zeroes, zone_append or "
					  "all",
					  (int)len, p);
		*mask |= op_names[i].mask;
		p = end ? end + 1 : NULL;
	} while (p);
	if (*mask == 0xffffffffU)
		*mask = 0;
	return 0;
}

/* 0, 1 after --help, or -errno. */
static int snoop_parse(int argc, char **argv, struct snoop_opts *o)
{
	static const struct option long_opts[] = {
		{"disk", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},
		{"tid", required_argument, NULL, OPT_TID},
		{"comm", required_argument, NULL, OPT_COMM},
		{"cgroup", required_argument, NULL, OPT_CGROUP},
		{"file", required_argument, NULL, OPT_FILE},
		{"dir", required_argument, NULL, OPT_DIR},
		{"ops", required_argument, NULL, OPT_OPS},
		{"min-latency", required_argument, NULL, OPT_MIN_LATENCY},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"output", required_argument, NULL, 'o'},
		{"buffer-size", required_argument, NULL, OPT_BUFFER_SIZE},
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	bool have_pid = false, have_tid = false, have_file = false, have_dir = false;
	bool have_ops = false, have_out = false, have_lat = false;
	int opt, err = 0;

	o->rb_bytes = RB_DEFAULT;
	while ((opt = getopt_long(argc, argv, "d:p:o:" COMMON_SHORT_OPTS, long_opts, NULL)) != -1) {
		if (args_common_opt(opt))
			continue;
		switch (opt) {
		case OPT_HELP:
			fputs(snoop_usage, stdout);
			return 1;
		case 'd':
			err = args_disk("snoop", optarg, &o->disk, &o->have_disk);
			break;
		case 'p':
			err = args_once("-p/--pid", &have_pid) ?: args_task_id(optarg, "pid", &o->pid);
			break;
		case OPT_TID:
			err = args_once("--tid", &have_tid) ?: args_task_id(optarg, "tid", &o->tid);
			break;
		case OPT_COMM:
			err = args_once("--comm", &o->have_comm);
			if (!err && (!*optarg || strlen(optarg) >= SNOOP_COMM_LEN))
				err = fail_usage("invalid --comm '%s': give a thread name of 1 to "
						 "%d characters",
						 optarg, SNOOP_COMM_LEN - 1);
			if (!err)
				strcpy(o->comm, optarg);
			break;
		case OPT_CGROUP:
			err = args_cgroup(optarg, o->cgroup_dir, sizeof(o->cgroup_dir),
					  o->cgroup_rel, sizeof(o->cgroup_rel), &o->have_cgroup);
			break;
		case OPT_FILE:
			err = args_once("--file", &have_file) ?:
				      args_fs_object("--file", optarg, false, &o->file_dev,
						     &o->file_ino);
			break;
		case OPT_DIR:
			err = args_once("--dir", &have_dir) ?:
				      args_fs_object("--dir", optarg, true, &o->dir_dev,
						     &o->dir_ino);
			break;
		case OPT_OPS:
			err = args_once("--ops", &have_ops) ?: parse_ops(optarg, &o->ops_mask);
			break;
		case OPT_MIN_LATENCY:
			err = args_once("--min-latency", &have_lat) ?:
				      args_threshold("--min-latency", optarg, &o->min_latency_ns);
			break;
		case OPT_DURATION:
			err = args_period("--duration", optarg, &o->duration_ns);
			break;
		case 'o':
			err = args_once("-o/--output", &have_out);
			if (!err && !*optarg)
				err = fail_usage("-o needs a file name");
			o->out_path = optarg;
			break;
		case OPT_BUFFER_SIZE:
			if (parse_size_bytes(optarg, 1ULL << 20, &o->rb_bytes) ||
			    o->rb_bytes < RB_MIN || o->rb_bytes > RB_MAX)
				err = fail_usage("invalid --buffer-size '%s': give a size from 1M "
						 "to 1G (e.g. 64M; a bare number is MiB)",
						 optarg);
			break;
		default:
			return args_bad_option("snoop", argv);
		}
		if (err)
			return err;
	}
	if (optind < argc)
		return fail_usage("unexpected argument '%s': iospan snoop takes options only "
				  "(see 'iospan snoop --help')",
				  argv[optind]);
	/* The kernel wants a power of two. */
	while (o->rb_bytes & (o->rb_bytes - 1))
		o->rb_bytes += o->rb_bytes & -o->rb_bytes;
	return 0;
}

static int on_io(void *arg, const void *rec, uint32_t size)
{
	struct snoop_ctx *c = arg;
	struct snoop_line l;

	snoop_format(c->fmt, rec, &l);
	snoop_render_event(c->render, rec, &l);
	c->events++;
	return 0;
}

static const struct rbuf_handler handlers[] = {
	{.type = SNOOP_REC_IO, .min_size = sizeof(struct snoop_io), .fn = on_io},
};

static int build_hooks(struct snoop_ctx *c)
{
	struct snoop_bpf *s = c->skel;
	struct attach_hook hooks[] = {
		{.name = "block_bio_queue",
		 .v = {{.prog = s->progs.snoop_bio_queue}, {.prog = s->progs.snoop_bio_queue_raw}}},
		{.name = "block_split",
		 .v = {{.prog = s->progs.snoop_bio_split}, {.prog = s->progs.snoop_bio_split_raw}}},
		{.name = "writeback_dirty_folio",
		 .optional = true,
		 .figure = "writeback credited to the processes that dirtied the pages",
		 .v = {{.prog = s->progs.snoop_dirty_folio}}},
		{.name = "block_rq_issue",
		 .v = {{.prog = s->progs.snoop_rq_issue}, {.prog = s->progs.snoop_rq_issue_raw}}},
		{.name = "block_rq_requeue",
		 .optional = true,
		 .figure = "in-flight counts after a requeue",
		 .v = {{.prog = s->progs.snoop_rq_requeue},
		       {.prog = s->progs.snoop_rq_requeue_raw}}},
		{.name = "block_rq_complete",
		 .v = {{.prog = s->progs.snoop_rq_complete},
		       {.prog = s->progs.snoop_rq_complete_raw}}},
	};

	c->nr_hooks = sizeof(hooks) / sizeof(hooks[0]);
	return attach_hooks_dup(hooks, c->nr_hooks, &c->hooks);
}

static int snoop_setup(struct snoop_ctx *c)
{
	static const char *const syms[] = {"iomap_dio_bio_end_io", "mq_flush_data_end_io"};
	const struct snoop_opts *o = c->o;
	struct target_filter *tf;
	struct snoop_bpf *s;
	uint64_t addrs[2] = {};
	int err;

	probe_setup_libbpf_print();
	probe_prefetch();
	err = probe_require_bpf_privileges("snoop");
	if (err)
		return err;
	/* Without them direct I/O shows no file, and flush sequences go by a flag. */
	if (ksyms_lookup(NULL, syms, addrs, 2))
		memset(addrs, 0, sizeof(addrs));
	s = SKEL_OPEN(snoop);
	if (!s)
		return fail(-errno, "cannot open the BPF object: %s", strerror(errno));
	c->skel = s;
	tf = (struct target_filter *)&s->rodata->tfilter;
	tf->pid = o->pid;
	tf->tid = o->tid;
	tf->devs = o->have_disk;
	tf->cgroups = o->have_cgroup;
	tf->comm_on = o->have_comm;
	memcpy(tf->comm, o->comm, sizeof(tf->comm));
	tf->file_dev = o->file_dev;
	tf->file_ino = o->file_ino;
	tf->dir_dev = o->dir_dev;
	tf->dir_ino = o->dir_ino;
	s->rodata->ops_mask = o->ops_mask;
	s->rodata->min_latency_ns = o->min_latency_ns;
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	s->rodata->blk_owner_dio_end_io = addrs[0];
	s->rodata->flush_data_end_io = addrs[1];
	/* Stacks are lat's (--by stack): not taken here. */
	bpf_map__set_max_entries(s->maps.blk_owner_stacks, 1);
	bpf_map__set_max_entries(s->maps.events, o->rb_bytes);
	err = mapmem_check(s->obj, "snoop",
			   "its maps have fixed sizes: free memory, or lower --buffer-size");
	if (err)
		return err;
	err = build_hooks(c);
	if (err)
		return fail(err, "out of memory");
	err = attach_plan_choose(c->hooks, c->nr_hooks);
	if (err)
		return err;
	err = snoop_bpf__load(s);
	if (err)
		return fail(err, "cannot load the BPF programs: %s%s", strerror(-err),
			    geteuid() ? " (run as root)" :
					" (see 'iospan doctor', -v for details)");
	err = filter_maps_fill(bpf_map__fd(s->maps.filter_devs), o->have_disk ? &o->disk : NULL,
			       bpf_map__fd(s->maps.filter_cgroups),
			       o->have_cgroup ? o->cgroup_dir : NULL);
	if (err)
		return err;
	err = snoop_format_new(bpf_map__fd(s->maps.paths), !gopts.json, &c->fmt);
	if (!err)
		err = rbuf_new(bpf_map__fd(s->maps.events), bpf_map__fd(s->maps.events_counts),
			       handlers, 1, c, &c->rb);
	if (err)
		return fail(err, "cannot set up the ring buffer reader: %s", strerror(-err));
	err = snoop_bpf__attach(s);
	if (err)
		return fail(err, "cannot attach the BPF programs: %s (see 'iospan doctor')",
			    strerror(-err));
	err = attach_plan_attach(c->hooks, c->nr_hooks);
	if (err)
		return err;
	attach_plan_unavailable(c->hooks, c->nr_hooks, NULL, NULL, stderr, "iospan snoop: ");
	attach_plan_print(c->hooks, c->nr_hooks, NULL);
	return 0;
}

static void snoop_cleanup(struct snoop_ctx *c)
{
	if (c->skel)
		skel_detach(c->skel->skeleton, c->hooks, c->nr_hooks);
	rbuf_free(c->rb);
	snoop_render_free(c->render);
	snoop_format_free(c->fmt);
	if (c->out && c->out != stdout)
		fclose(c->out);
	free(c->out_buf);
	if (c->skel)
		snoop_bpf__destroy(c->skel);
	free(c->hooks);
	probe_cleanup();
}

int snoop_plan(plan_show_fn show, void *arg)
{
	static struct snoop_opts opts;
	static struct snoop_ctx c;
	char why[256];
	int err;

	memset(&opts, 0, sizeof(opts));
	memset(&c, 0, sizeof(c));
	opts.rb_bytes = RB_DEFAULT;
	c.o = &opts;
	err_capture(why, sizeof(why));
	err = snoop_setup(&c);
	err_capture(NULL, 0);
	if (!err)
		show("snoop", c.hooks, c.nr_hooks, NULL, arg);
	else if (c.hooks)
		show("snoop", c.hooks, c.nr_hooks, why[0] ? why : strerror(-err), arg);
	snoop_cleanup(&c);
	return err && !c.hooks ? err : 0;
}

static int read_totals(struct snoop_ctx *c, struct snoop_totals *t)
{
	uint64_t cnt[SNOOP_CNT_NR];
	struct rbuf_stats st;
	int err;

	err = rbuf_stats(c->rb, &st) ?:
		      bpfmap_sum_percpu_u64(bpf_map__fd(c->skel->maps.counts), SNOOP_CNT_NR, cnt);
	if (err)
		return fail(err, "cannot read the counters: %s", strerror(-err));
	t->events = c->events;
	t->lost = st.lost;
	t->malformed = st.malformed;
	t->sent = st.sent;
	t->no_owner = cnt[SNOOP_CNT_NO_OWNER];
	t->no_issue = cnt[SNOOP_CNT_NO_ISSUE];
	t->filtered = cnt[SNOOP_CNT_FILTERED];
	t->partial = cnt[SNOOP_CNT_PARTIAL];
	t->inflight_full = cnt[SNOOP_CNT_INFLIGHT_FULL];
	t->dirtier_full = cnt[SNOOP_CNT_DIRTIER_FULL];
	t->no_dirtier = cnt[SNOOP_CNT_NO_DIRTIER];
	t->completion_unseen = cnt[SNOOP_CNT_COMPLETION_UNSEEN];
	t->missed_runs = bpfobj_missed_runs(c->skel->obj);
	return 0;
}

static int snoop_run(struct snoop_ctx *c)
{
	const struct snoop_opts *o = c->o;
	struct snoop_totals t = {};
	const uint64_t epoch_ns = SNOOP_PATH_EPOCH_MS * 1000000ULL;
	uint64_t start, end = 0, now, next_epoch, next_flush;
	int err = 0, ms;

	install_stop_handlers();
	start = now_ns(CLOCK_MONOTONIC);
	if (o->duration_ns)
		end = start + o->duration_ns;
	next_epoch = start + epoch_ns;
	next_flush = start + OUT_FLUSH_NS;
	fprintf(stderr, "iospan snoop: tracing block requests%s; Ctrl-C to stop\n",
		o->out_path ? " into the file" : "");
	while (!stop_requested) {
		now = now_ns(CLOCK_MONOTONIC);
		if (end && now >= end)
			break;
		if (now >= next_epoch) {
			/* Files' paths are checked again at their next completion. */
			c->skel->bss->path_epoch++;
			next_epoch = now + epoch_ns;
		}
		/* A terminal gets each batch; a file or pipe large writes. */
		if (c->tty || now >= next_flush) {
			fflush(c->out);
			next_flush = now + OUT_FLUSH_NS;
		}
		ms = (next_epoch - now) / 1000000 + 1;
		if (end && (end - now) / 1000000 + 1 < (uint64_t)ms)
			ms = (end - now) / 1000000 + 1;
		err = rbuf_poll(c->rb, ms, next_epoch);
		if (err)
			break;
	}
	/* Nothing is sent after this; what was sent is read to the end. */
	__atomic_store_n(&c->skel->bss->stopped, true, __ATOMIC_SEQ_CST);
	if (!err) {
		err = rbuf_drain(c->rb, 1000);
		if (err == -ETIMEDOUT)
			err = 0; /* shown as not_arrived */
	}
	if (err)
		return fail(err, "cannot read the ring buffer: %s", strerror(-err));
	err = read_totals(c, &t);
	if (err)
		return err;
	t.seconds = (now_ns(CLOCK_MONOTONIC) - start) / 1e9;
	snoop_render_totals(c->render, &t);
	if (fflush(c->out) || ferror(c->out))
		return fail(-EIO, "cannot write %s", o->out_path ? o->out_path : "the output");
	return 0;
}

int cmd_snoop(int argc, char **argv)
{
	static struct snoop_opts opts;
	static struct snoop_ctx ctx;
	int err;

	memset(&opts, 0, sizeof(opts));
	memset(&ctx, 0, sizeof(ctx));
	err = snoop_parse(argc, argv, &opts);
	if (err)
		return err > 0 ? 0 : err;
	ctx.o = &opts;
	ctx.out = stdout;
	if (opts.out_path) {
		ctx.out = fopen(opts.out_path, "w");
		if (!ctx.out) {
			err = fail(-errno, "cannot write %s: %s", opts.out_path, strerror(errno));
			goto cleanup;
		}
	}
	/* Lines go out in batches (snoop_run()), not one write each. */
	ctx.tty = isatty(fileno(ctx.out));
	ctx.out_buf = malloc(OUT_BUF);
	if (ctx.out_buf)
		setvbuf(ctx.out, ctx.out_buf, _IOFBF, OUT_BUF);
	err = snoop_render_new(ctx.out, gopts.json, &ctx.render);
	if (err) {
		err = fail(err, "out of memory");
		goto cleanup;
	}
	err = snoop_setup(&ctx);
	if (err)
		goto cleanup;
	err = snoop_run(&ctx);
cleanup:
	snoop_cleanup(&ctx);
	return err;
}
