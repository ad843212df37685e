// SPDX-License-Identifier: GPL-2.0
/* The periodic per-op summary, from the kernel's stage histograms. */
#include "priv.h"

static int read_hists(struct trace_ctx *c, uint32_t op, struct trace_op_hists *out)
{
	int fd = bpf_map__fd(c->skel->maps.hists), cpu, s;

	if (bpf_map_lookup_elem(fd, &op, c->pcpu))
		return -errno;
	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < c->cmd.ncpus; cpu++)
		for (s = 0; s < TRACE_ST_NR; s++)
			hist_merge(&out->st[s], &c->pcpu[cpu].st[s]);
	return 0;
}

static int output_counts(struct trace_ctx *c, struct trace_summary *sum)
{
	uint64_t cnt[TRACE_CNT_NR];
	int err = trace_read_counters(c, cnt);

	if (err)
		return fail(err, "cannot read the counters map: %s", strerror(-err));
	sum->emitted = cnt[TRACE_CNT_EMITTED] - c->prev_emitted;
	sum->printed = c->delivered - c->prev_delivered;
	sum->dropped = cnt[TRACE_CNT_RINGBUF_FULL] - c->prev_dropped;
	c->prev_emitted = cnt[TRACE_CNT_EMITTED];
	c->prev_delivered = c->delivered;
	c->prev_dropped = cnt[TRACE_CNT_RINGBUF_FULL];
	return 0;
}

int trace_collect_summary(struct trace_ctx *c, double seconds, bool final,
			  struct trace_summary *out)
{
	static struct trace_summary sum;
	static struct trace_op_hists cur;
	unsigned int op, s;
	int err;

	memset(&sum, 0, sizeof(sum));
	sum.seconds = seconds;
	sum.final = final;
	err = output_counts(c, &sum);
	if (err)
		return err;
	for (op = 0; op < TRACE_OP_NR; op++) {
		err = read_hists(c, op, &cur);
		if (err)
			return fail(err, "cannot read the histogram map: %s", strerror(-err));
		for (s = 0; s < TRACE_ST_NR; s++)
			hist_delta(&sum.ops[op].st[s], &cur.st[s], &c->prev[op].st[s]);
		c->prev[op] = cur;
		sum.requests += sum.ops[op].st[TRACE_ST_TOTAL].count;
	}
	*out = sum;
	return 0;
}
