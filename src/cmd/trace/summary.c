// SPDX-License-Identifier: GPL-2.0
/* The periodic per-op summary, from the kernel's stage histograms. */
#include "trace.h"

static int read_hists(struct trace_ctx *c, uint32_t op, struct trace_op_hists *out)
{
	int fd = bpf_map__fd(c->skel->maps.hists), cpu, s, k;

	if (bpf_map_lookup_elem(fd, &op, c->pcpu))
		return -errno;
	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < c->ncpus; cpu++)
		for (s = 0; s < TRACE_ST_NR; s++) {
			struct hist *d = &out->st[s];
			const struct hist *h = &c->pcpu[cpu].st[s];

			d->count += h->count;
			d->sum += h->sum;
			if (h->max > d->max)
				d->max = h->max;
			for (k = 0; k < HIST_SLOTS; k++)
				d->slots[k] += h->slots[k];
		}
	return 0;
}

/* @cur - @prev, slot by slot (max stays cumulative: it cannot be subtracted). */
static void hist_delta(struct hist *out, const struct hist *cur, const struct hist *prev)
{
	int k;

	out->count = cur->count - prev->count;
	out->sum = cur->sum - prev->sum;
	out->max = cur->max;
	for (k = 0; k < HIST_SLOTS; k++)
		out->slots[k] = cur->slots[k] - prev->slots[k];
}

/* Slow requests of the interval: sent, printed, and dropped because the buffer was full. */
struct output_counts {
	uint64_t emitted, printed, dropped;
};

static int output_counts(struct trace_ctx *c, struct output_counts *oc)
{
	uint64_t cnt[TRACE_CNT_NR];
	int err = read_counters(c, cnt);

	if (err)
		return fail(err, "cannot read the counters map: %s", strerror(-err));
	oc->emitted = cnt[TRACE_CNT_EMITTED] - c->prev_emitted;
	oc->printed = c->printed - c->prev_printed;
	oc->dropped = cnt[TRACE_CNT_RINGBUF_FULL] - c->prev_dropped;
	c->prev_emitted = cnt[TRACE_CNT_EMITTED];
	c->prev_printed = c->printed;
	c->prev_dropped = cnt[TRACE_CNT_RINGBUF_FULL];
	return 0;
}

/*
 * Says loudly that slow requests were dropped in the interval, with the rate the
 * output kept up with (it was busy all along: the buffer filled) and the rate they
 * came at.
 */
static void print_drops(struct trace_ctx *c, const struct output_counts *oc, double seconds)
{
	char size[UNITS_BUF];

	if (!oc->dropped || c->jw)
		return;
	fmt_bytes(c->o->rb_bytes, size, sizeof(size));
	printf("!! %" PRIu64 " slow requests dropped: the output printed %.0f/s, they came at "
	       "%.0f/s and the %s ring buffer filled (raise -t, filter, write to a file, or "
	       "use --buffer-size)\n",
	       oc->dropped, oc->printed / seconds, (oc->emitted + oc->dropped) / seconds, size);
	warn("%" PRIu64 " of %" PRIu64 " slow requests in the last %.1f s were dropped: the "
	     "output printed %.0f/s, they came at %.0f/s (ring buffer %s full)",
	     oc->dropped, oc->emitted + oc->dropped, seconds, oc->printed / seconds,
	     (oc->emitted + oc->dropped) / seconds, size);
}

int summary(struct trace_ctx *c, double seconds, bool final)
{
	static struct trace_op_hists cur, delta;
	struct output_counts oc = {0};
	char b[3][UNITS_BUF];
	uint64_t total = 0;
	bool header = false;
	unsigned int op, s;
	int err;

	err = output_counts(c, &oc);
	if (err)
		return err;
	if (c->jw) {
		jw_start_object(c->jw);
		jw_kv_string(c->jw, "type", "summary");
		jw_kv_float(c->jw, "interval_s", seconds, 3);
		jw_kv_bool(c->jw, "final", final);
		jw_kv_uint(c->jw, "emitted", oc.emitted);
		jw_kv_uint(c->jw, "printed", oc.printed);
		jw_kv_uint(c->jw, "dropped", oc.dropped);
		jw_kv_object(c->jw, "ops");
	}
	for (op = 0; op < TRACE_OP_NR; op++) {
		err = read_hists(c, op, &cur);
		if (err)
			return fail(err, "cannot read the histogram map: %s", strerror(-err));
		for (s = 0; s < TRACE_ST_NR; s++)
			hist_delta(&delta.st[s], &cur.st[s], &c->prev[op].st[s]);
		c->prev[op] = cur;
		if (!delta.st[TRACE_ST_TOTAL].count)
			continue;
		total += delta.st[TRACE_ST_TOTAL].count;
		if (c->jw) {
			jw_kv_object(c->jw, trace_op_name(op));
			jw_kv_uint(c->jw, "count", delta.st[TRACE_ST_TOTAL].count);
			jw_kv_object(c->jw, "stages");
			for (s = 0; s < TRACE_ST_NR; s++) {
				const struct hist *h = &delta.st[s];

				if (!h->count)
					continue;
				jw_kv_object(c->jw, trace_stage_name(s));
				jw_kv_uint(c->jw, "count", h->count);
				jw_kv_float(c->jw, "avg_us", hist_mean(h) / 1e3, 3);
				jw_kv_float(c->jw, "p50_us", hist_percentile(h, 50) / 1e3, 3);
				jw_kv_float(c->jw, "p99_us", hist_percentile(h, 99) / 1e3, 3);
				jw_end_object(c->jw);
			}
			jw_end_object(c->jw);
			jw_end_object(c->jw);
			continue;
		}
		if (!header) {
			printf("--- summary over %.1f s ---\n", seconds);
			printf("%-16s %8s  %-11s %9s %9s %9s\n", "OP", "COUNT", "STAGE", "AVG",
			       "P50", "P99");
			header = true;
		}
		for (s = 0; s < TRACE_ST_NR; s++) {
			const struct hist *h = &delta.st[s];

			if (!h->count)
				continue;
			if (s == TRACE_ST_TOTAL)
				printf("%-16s %8" PRIu64 "  ", trace_op_name(op),
				       (uint64_t)h->count);
			else
				printf("%-16s %8s  ", "", h->count == delta.st[0].count ? "" : "");
			printf("%-11s %9s %9s %9s", trace_stage_name(s),
			       fmt_ns(hist_mean(h), b[0], sizeof(b[0])),
			       fmt_ns(hist_percentile(h, 50), b[1], sizeof(b[1])),
			       fmt_ns(hist_percentile(h, 99), b[2], sizeof(b[2])));
			if (s != TRACE_ST_TOTAL && h->count != delta.st[TRACE_ST_TOTAL].count)
				printf("  (%" PRIu64 " with it)", (uint64_t)h->count);
			printf("\n");
		}
	}
	if (c->jw) {
		jw_end_object(c->jw);
		jw_kv_uint(c->jw, "requests", total);
		jw_end_object(c->jw);
	} else if (!header) {
		printf("--- summary over %.1f s: no requests ---\n", seconds);
	} else {
		printf("\n");
	}
	print_drops(c, &oc, seconds);
	fflush(stdout);
	return 0;
}
