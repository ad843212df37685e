// SPDX-License-Identifier: GPL-2.0
/*
 * iospan snoop: options, set-up of the BPF side (src/bpf/snoop.bpf.c) and the main
 * loop, which reads the ring buffer in batches (src/lib/bpf/rbuf.h) and hands each record
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

#include "array.h"
#include "iospan.h"
#include "args.h"
#include "bpfcmd.h"
#include "bpfmap.h"
#include "err.h"
#include "filters.h"
#include "probe.h"
#include "rbuf.h"
#include "snoop.h"

/*
 * Output buffer: flushed after each batch to a terminal, else at each housekeeping
 * (every path epoch, SNOOP_PATH_EPOCH_MS).
 */
#define OUT_BUF (1 << 20)

struct snoop_cmd {
	struct snoop_opts o;
	uint64_t duration_ns; /* 0: until Ctrl-C */
	const char *out_path; /* -o FILE, NULL: stdout */
	struct snoop_ctx *c;
	struct snoop_render *render;
	FILE *out;
	bool tty; /* out is a terminal */
	char *out_buf;
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
		for (i = 0; i < ARRAY_SIZE(op_names); i++)
			if (len == strlen(op_names[i].name) && !strncmp(p, op_names[i].name, len))
				break;
		if (!len || i == ARRAY_SIZE(op_names))
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
static int snoop_parse(int argc, char **argv, struct snoop_cmd *t)
{
	static const struct option long_opts[] = {
		FILTER_LONG_OPTS,
		{"ops", required_argument, NULL, OPT_OPS},
		{"min-latency", required_argument, NULL, OPT_MIN_LATENCY},
		DURATION_LONG_OPT,
		{"output", required_argument, NULL, 'o'},
		BUFFER_SIZE_LONG_OPT,
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	struct snoop_opts *o = &t->o;
	struct args_run run = {.duration_ns = &t->duration_ns, .rb_bytes = &o->rb_bytes};
	const struct args_spec spec =
		FILTER_ARGS_SPEC("snoop", snoop_usage, "o:", long_opts, &o->filter, true, &run);
	bool have_ops = false, have_out = false, have_lat = false;
	int opt, err = 0;

	snoop_opts_default(o);
	while ((opt = args_next(&spec, argc, argv)) > ARGS_HELP) {
		switch (opt) {
		case OPT_OPS:
			err = args_once("--ops", &have_ops) ?: parse_ops(optarg, &o->ops_mask);
			break;
		case OPT_MIN_LATENCY:
			err = args_once("--min-latency", &have_lat) ?:
				      args_threshold("--min-latency", optarg, &o->min_latency_ns);
			break;
		case 'o':
			err = args_once("-o/--output", &have_out) ?:
				      args_path("", "-o/--output", optarg, &t->out_path);
			break;
		}
		if (err)
			return err;
	}
	if (opt)
		return opt;
	/* The kernel wants a power of two. */
	return 0;
}

static void snoop_cleanup(struct snoop_cmd *t)
{
	snoop_collect_close(t->c);
	/* Lines made before an error still go out, before their buffers are freed. */
	if (t->render)
		snoop_render_flush(t->render);
	else if (t->out)
		fflush(t->out);
	snoop_render_free(t->render);
	if (t->out && t->out != stdout)
		fclose(t->out);
	free(t->out_buf);
	probe_cleanup();
}

/* A record from the collector, in words: to the renderer. */
static void on_event(void *arg, const struct snoop_io *e, const struct snoop_line *l)
{
	struct snoop_cmd *t = arg;

	snoop_render_event(t->render, e, l);
}

/* Each path epoch: files' paths are checked again at their next completion. */
static void snoop_housekeep(void *arg)
{
	struct snoop_cmd *t = arg;

	snoop_collect_next_epoch(t->c);
	/* A file or pipe gets large writes; a terminal each batch (snoop_after_read()). */
	snoop_render_flush(t->render);
}

static int snoop_after_read(void *arg)
{
	struct snoop_cmd *t = arg;

	if (t->tty)
		snoop_render_flush(t->render);
	return 0;
}

static int snoop_run(struct snoop_cmd *t)
{
	const struct bpfcmd_loop loop = {
		.duration_ns = t->duration_ns,
		.housekeeping_ns = SNOOP_PATH_EPOCH_MS * 1000000ULL,
		.housekeep = snoop_housekeep,
		.after_read = snoop_after_read,
		.arg = t,
	};
	struct bpfcmd *cmd = snoop_collect_cmd(t->c);
	struct snoop_totals tot = {};
	int err;

	bpfcmd_start(cmd, "tracing block requests%s; Ctrl-C to stop",
		     t->out_path ? " into the file" : "");
	err = bpfcmd_run(cmd, &loop);
	/* Nothing is sent after this; what was sent is read to the end. */
	if (!err)
		err = snoop_collect_stop(t->c);
	if (!err)
		err = snoop_collect_totals(t->c, &tot);
	if (err)
		return err;
	tot.seconds = (now_ns(CLOCK_MONOTONIC) - cmd->start_ns) / 1e9;
	snoop_render_totals(t->render, &tot);
	if (snoop_render_flush(t->render) || ferror(t->out))
		return fail(-EIO, "cannot write %s", t->out_path ? t->out_path : "the output");
	return 0;
}

int cmd_snoop(int argc, char **argv)
{
	static struct snoop_cmd t;
	const struct snoop_sink sink = {.event = on_event, .arg = &t};
	int err;

	memset(&t, 0, sizeof(t));
	err = snoop_parse(argc, argv, &t);
	if (err)
		return err > 0 ? 0 : err;
	t.o.text = !gopts.json;
	t.out = stdout;
	if (t.out_path) {
		t.out = fopen(t.out_path, "w");
		if (!t.out) {
			err = fail(-errno, "cannot write %s: %s", t.out_path, strerror(errno));
			goto cleanup;
		}
	}
	/*
	 * Lines go out in batches (snoop_run()), not one write each: text lines are
	 * gathered by the renderer itself, JSON ones in stdio's buffer.
	 */
	t.tty = isatty(fileno(t.out));
	if (gopts.json) {
		t.out_buf = malloc(OUT_BUF);
		if (t.out_buf)
			setvbuf(t.out, t.out_buf, _IOFBF, OUT_BUF);
	}
	err = snoop_render_new(t.out, gopts.json, &t.render);
	if (err) {
		err = fail(err, "out of memory");
		goto cleanup;
	}
	err = snoop_collect_open(&t.o, &sink, &t.c);
	if (err)
		goto cleanup;
	err = snoop_run(&t);
cleanup:
	snoop_cleanup(&t);
	return err;
}
