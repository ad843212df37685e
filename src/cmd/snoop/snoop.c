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
#include "bpfcmd.h"
#include "bpfmap.h"
#include "err.h"
#include "filters.h"
#include "probe.h"
#include "rbuf.h"
#include "snoop.skel.h"
#include "snoop_compat.skel.h"
#include "skel.h"
#include "snoop.h"

#define RB_MIN	   (1ULL << 20)
#define RB_MAX	   (1ULL << 30)
#define RB_DEFAULT (16ULL << 20)
/*
 * Output buffer: flushed after each batch to a terminal, else at each housekeeping
 * (every path epoch, SNOOP_PATH_EPOCH_MS).
 */
#define OUT_BUF (1 << 20)

struct snoop_ctx {
	struct snoop_opts *o;
	struct bpfcmd cmd;
	struct snoop_bpf *skel; /* cmd's */
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
	OPT_OPS = 0x2000,
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
		FILTER_LONG_OPTS,
		{"ops", required_argument, NULL, OPT_OPS},
		{"min-latency", required_argument, NULL, OPT_MIN_LATENCY},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"output", required_argument, NULL, 'o'},
		{"buffer-size", required_argument, NULL, OPT_BUFFER_SIZE},
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	bool have_ops = false, have_out = false, have_lat = false;
	int opt, err = 0;

	o->rb_bytes = RB_DEFAULT;
	while ((opt = getopt_long(argc, argv, FILTER_SHORT_OPTS "o:" COMMON_SHORT_OPTS, long_opts,
				  NULL)) != -1) {
		err = filter_parse_opt("snoop", opt, optarg, &o->filter);
		if (err <= 0) {
			if (err)
				return err;
			continue;
		}
		switch (opt) {
		case OPT_HELP:
			fputs(snoop_usage, stdout);
			return 1;
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

/* The hooks, with their variants, into @c's plan. */
static int plan_hooks(struct snoop_ctx *c)
{
	struct snoop_bpf *s = c->skel;
	const struct attach_hook hooks[] = {
		TP_BTF_HOOK(s, "block_bio_queue", snoop_bio_queue, false, NULL),
		TP_BTF_HOOK(s, "block_split", snoop_bio_split, false, NULL),
		{.name = "writeback_dirty_folio",
		 .optional = true,
		 .figure = "writeback credited to the processes that dirtied the pages",
		 .v = {{.prog = s->progs.snoop_dirty_folio}}},
		TP_BTF_HOOK(s, "block_rq_issue", snoop_rq_issue, false, NULL),
		TP_BTF_HOOK(s, "block_rq_requeue", snoop_rq_requeue, true,
			    "in-flight counts after a requeue"),
		TP_BTF_HOOK(s, "block_rq_complete", snoop_rq_complete, false, NULL),
	};

	return bpfcmd_plan(&c->cmd, hooks, sizeof(hooks) / sizeof(hooks[0]),
			   "its maps have fixed sizes: free memory, or lower --buffer-size");
}

static int snoop_setup(struct snoop_ctx *c)
{
	static const char *const syms[] = {"iomap_dio_bio_end_io", "mq_flush_data_end_io"};
	const struct snoop_opts *o = c->o;
	struct snoop_bpf *s;
	uint64_t addrs[2];
	int err;

	bpfcmd_kernel_addrs_start(&c->cmd, syms, 2);
	err = bpfcmd_prepare(&c->cmd, "snoop", BPFCMD_CGROUP_NAMES);
	if (err)
		return err;
	/* Without them direct I/O shows no file, and flush sequences go by a flag. */
	bpfcmd_kernel_addrs(&c->cmd, syms, addrs, 2, NULL);
	s = BPFCMD_OPEN(&c->cmd, snoop);
	if (!s)
		return -errno;
	c->skel = s;
	memcpy((void *)&s->rodata->tfilter, &o->filter.tf, sizeof(o->filter.tf));
	s->rodata->ops_mask = o->ops_mask;
	s->rodata->min_latency_ns = o->min_latency_ns;
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	s->rodata->blk_owner_dio_end_io = addrs[0];
	s->rodata->flush_data_end_io = addrs[1];
	/* Stacks are lat's (--by stack): not taken here. */
	bpf_map__set_max_entries(s->maps.blk_owner_stack_ids, 1);
	bpf_map__set_max_entries(s->maps.events, o->rb_bytes);
	err = plan_hooks(c) ?: bpfcmd_load_filter(&c->cmd, &o->filter);
	if (err)
		return err;
	err = snoop_format_new(bpf_map__fd(s->maps.paths), !gopts.json, c->cmd.cgmap, &c->fmt);
	if (err)
		return fail(err, "cannot set up the formatter: %s", strerror(-err));
	err = bpfcmd_ringbuf(&c->cmd, bpf_map__fd(s->maps.events),
			     bpf_map__fd(s->maps.events_counts), handlers, 1, c);
	return err ? err : bpfcmd_attach(&c->cmd);
}

static void snoop_cleanup(struct snoop_ctx *c)
{
	bpfcmd_close(&c->cmd);
	/* Lines made before an error still go out, before their buffers are freed. */
	if (c->render)
		snoop_render_flush(c->render);
	else if (c->out)
		fflush(c->out);
	snoop_render_free(c->render);
	snoop_format_free(c->fmt);
	if (c->out && c->out != stdout)
		fclose(c->out);
	free(c->out_buf);
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
		show("snoop", c.cmd.hooks, c.cmd.nr_hooks, NULL, arg);
	else if (c.cmd.hooks)
		show("snoop", c.cmd.hooks, c.cmd.nr_hooks, why[0] ? why : strerror(-err), arg);
	err = err && !c.cmd.hooks ? err : 0;
	snoop_cleanup(&c);
	return err;
}

static int read_totals(struct snoop_ctx *c, struct snoop_totals *t)
{
	uint64_t cnt[SNOOP_CNT_NR];
	struct rbuf_stats st;
	int err;

	err = rbuf_stats(c->cmd.rb, &st) ?:
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
	t->no_queue = cnt[SNOOP_CNT_NO_QUEUE];
	t->missed_runs = bpfcmd_missed_runs(&c->cmd);
	return 0;
}

/* Each path epoch: files' paths are checked again at their next completion. */
static void snoop_housekeep(void *arg)
{
	struct snoop_ctx *c = arg;

	c->skel->bss->path_epoch++;
	/* A file or pipe gets large writes; a terminal each batch (snoop_after_read()). */
	snoop_render_flush(c->render);
}

static int snoop_after_read(void *arg)
{
	struct snoop_ctx *c = arg;

	if (c->tty)
		snoop_render_flush(c->render);
	return 0;
}

static int snoop_run(struct snoop_ctx *c)
{
	const struct snoop_opts *o = c->o;
	const struct bpfcmd_loop loop = {
		.duration_ns = o->duration_ns,
		.housekeeping_ns = SNOOP_PATH_EPOCH_MS * 1000000ULL,
		.housekeep = snoop_housekeep,
		.after_read = snoop_after_read,
		.arg = c,
	};
	struct snoop_totals t = {};
	int err;

	bpfcmd_start(&c->cmd, "tracing block requests%s; Ctrl-C to stop",
		     o->out_path ? " into the file" : "");
	err = bpfcmd_run(&c->cmd, &loop);
	/* Nothing is sent after this; what was sent is read to the end. */
	if (!err)
		err = bpfcmd_stop(&c->cmd, &c->skel->bss->stopped, 1000);
	if (!err)
		err = read_totals(c, &t);
	if (err)
		return err;
	t.seconds = (now_ns(CLOCK_MONOTONIC) - c->cmd.start_ns) / 1e9;
	snoop_render_totals(c->render, &t);
	if (snoop_render_flush(c->render) || ferror(c->out))
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
	/*
	 * Lines go out in batches (snoop_run()), not one write each: text lines are
	 * gathered by the renderer itself, JSON ones in stdio's buffer.
	 */
	ctx.tty = isatty(fileno(ctx.out));
	if (gopts.json) {
		ctx.out_buf = malloc(OUT_BUF);
		if (ctx.out_buf)
			setvbuf(ctx.out, ctx.out_buf, _IOFBF, OUT_BUF);
	}
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
