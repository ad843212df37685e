// SPDX-License-Identifier: GPL-2.0
/*
 * snoop's collector: the BPF side (src/bpf/snoop.bpf.c) with the options, and the
 * reader of its ring buffer: each record is put in words once (format.c) and handed to
 * the consumer's sink, with nothing allocated per record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "bpfcmd.h"
#include "bpfmap.h"
#include "collect/snoop.h"
#include "counters.h"
#include "err.h"
#include "probe.h"
#include "driver_hooks.h"
#include "rbuf.h"
#include "snoop.skel.h"
#include "snoop_compat.skel.h"
#include "skel.h"

struct snoop_ctx {
	const struct snoop_opts *o;
	struct snoop_sink sink;
	struct bpfcmd cmd;
	struct snoop_bpf *skel; /* cmd's */
	struct snoop_format *fmt;
	uint64_t events;
};

static int on_io(void *arg, const void *rec, uint32_t size)
{
	struct snoop_ctx *c = arg;
	struct snoop_line l;

	snoop_format(c->fmt, rec, &l);
	if (c->sink.event)
		c->sink.event(c->sink.arg, rec, &l);
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
		OPTIONAL_HOOK(s, "writeback_dirty_folio", snoop_dirty_folio,
			      "writeback credited to the processes that dirtied the pages"),
		TP_BTF_HOOK(s, "block_rq_issue", snoop_rq_issue, false, NULL),
		TP_BTF_HOOK(s, "block_rq_requeue", snoop_rq_requeue, true,
			    "in-flight counts after a requeue"),
		TP_BTF_HOOK(s, "block_rq_complete", snoop_rq_complete, false, NULL),
		DRIVER_HOOKS(s, snoop_drv),
	};

	return bpfcmd_plan(&c->cmd, hooks, ARRAY_SIZE(hooks),
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
	s = BPFCMD_OPEN_TARGETED(&c->cmd, snoop, &o->filter);
	if (!s)
		return -errno;
	c->skel = s;
	s->rodata->ops_mask = o->ops_mask;
	s->rodata->min_latency_ns = o->min_latency_ns;
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	s->rodata->drv_virtblk_major = driver_virtblk_major();
	s->rodata->blk_owner_dio_end_io = addrs[0];
	s->rodata->flush_data_end_io = addrs[1];
	/* Stacks are lat's (--by stack): not taken here. */
	bpf_map__set_max_entries(s->maps.blk_owner_stack_ids, 1);
	bpf_map__set_max_entries(s->maps.events, o->rb_bytes);
	err = plan_hooks(c) ?: bpfcmd_load_filter(&c->cmd, &o->filter);
	if (err)
		return err;
	err = snoop_format_new(bpf_map__fd(s->maps.paths), o->text, c->cmd.cgmap, &c->fmt);
	if (err)
		return fail(err, "cannot set up the formatter: %s", strerror(-err));
	err = bpfcmd_ringbuf(&c->cmd, bpf_map__fd(s->maps.events),
			     bpf_map__fd(s->maps.events_counts), handlers, 1, c);
	return err ? err : bpfcmd_attach(&c->cmd);
}

int snoop_collect_open(const struct snoop_opts *o, const struct snoop_sink *sink,
		       struct snoop_ctx **out)
{
	struct snoop_ctx *c = calloc(1, sizeof(*c));

	*out = c;
	if (!c)
		return fail(-ENOMEM, "out of memory");
	c->o = o;
	if (sink)
		c->sink = *sink;
	return snoop_setup(c);
}

struct bpfcmd *snoop_collect_cmd(struct snoop_ctx *c)
{
	return &c->cmd;
}

void snoop_collect_next_epoch(struct snoop_ctx *c)
{
	c->skel->bss->path_epoch++;
}

int snoop_collect_stop(struct snoop_ctx *c)
{
	return bpfcmd_stop(&c->cmd, &c->skel->bss->stopped, 1000);
}

int snoop_collect_totals(struct snoop_ctx *c, struct snoop_totals *t)
{
	struct rbuf_stats st;
	int err;

	err = rbuf_stats(c->cmd.rb, &st) ?:
		      counters_read(bpf_map__fd(c->skel->maps.counters), SNOOP_CNT_NR, t->cnt);
	if (err)
		return fail(err, "cannot read the counters: %s", strerror(-err));
	t->events = c->events;
	t->lost = st.lost;
	t->malformed = st.malformed;
	t->sent = st.sent;
	t->missed_runs = bpfcmd_missed_runs(&c->cmd);
	return 0;
}

void snoop_collect_close(struct snoop_ctx *c)
{
	if (!c)
		return;
	bpfcmd_close(&c->cmd);
	snoop_format_free(c->fmt);
	free(c);
}

void snoop_opts_default(struct snoop_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rb_bytes = SNOOP_RB_DEFAULT;
}

int snoop_collect_plan(plan_show_fn show, void *arg)
{
	struct snoop_opts o;
	struct snoop_ctx *c;
	char why[256];
	int err;

	snoop_opts_default(&o);
	err_capture(why, sizeof(why));
	err = snoop_collect_open(&o, NULL, &c);
	if (!c) {
		err_capture(NULL, 0);
		return err;
	}
	err = bpfcmd_plan_opened(&c->cmd, "snoop", err, why, sizeof(why), show, arg);
	snoop_collect_close(c);
	return err;
}
