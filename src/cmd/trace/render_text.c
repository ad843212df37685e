// SPDX-License-Identifier: GPL-2.0
/* Slow requests as text. */
#include "trace.h"
#include "drvstatus.h"

/* A bio's driver: " nvme q1 tag 4 cid 4992 drv_in 0ns device 5us drv_out 1us error ...". */
static void print_bio_driver(const struct trace_bio *bi)
{
	char b[3][UNITS_BUF], text[160];
	uint64_t st[3];

	if (bi->drv.kind == DRV_NONE)
		return;
	printf(" %s hwq %u tag %u", drv_kind_name(bi->drv.kind) ?: "driver", bi->hwq, bi->drv_tag);
	if (bi->drv.kind == DRV_NVME)
		printf(" cid %u", bi->cid);
	if (trace_bio_drv_stages(bi, st))
		printf(" drv_in %s device %s drv_out %s", trace_fmt_dur(st[0], b[0], sizeof(b[0])),
		       trace_fmt_dur(st[1], b[1], sizeof(b[1])),
		       trace_fmt_dur(st[2], b[2], sizeof(b[2])));
	if (bi->drv.status)
		printf(" driver error: %s", drv_status_text(&bi->drv, text, sizeof(text)));
	if (bi->drv_fails)
		printf(" (%u failed attempt%s)", bi->drv_fails, bi->drv_fails == 1 ? "" : "s");
}

static void print_text(struct trace_cmd *t, const struct trace_rec *r, const struct trace_names *n)
{
	char b[8][UNITS_BUF], tbuf[32], dn[DISK_NAME_LEN], drv[3 * UNITS_BUF + 40] = "";
	static struct tl_item tl[TL_MAX];
	const __u64 *st = r->stages;
	struct tm tm;
	time_t secs;
	uint64_t real;
	unsigned int i;
	int nr_tl;

	real = r->start + t->c.mono_to_real;
	secs = real / NSEC_PER_SEC;
	localtime_r(&secs, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	printf("%s.%06" PRIu64 " %s ", tbuf, (real % NSEC_PER_SEC) / 1000, trace_op_name(r->op));
	if (!n->owner_known)
		/* The pages were dirtied before tracing started: nobody to credit. */
		printf("(dirtier unknown: pages dirtied before tracing began)");
	else
		printf("%s pid %u tid %u cgroup %s", printable(n->name), r->pid, r->tid,
		       printable(n->group));
	printf(" total %s ret %" PRId64 "\n", trace_fmt_dur(st[TRACE_ST_TOTAL], b[0], sizeof(b[0])),
	       (int64_t)r->ret);
	printf("  file %s (%u:%u ino %" PRIu64 ")", n->path ? printable(n->path) : "?",
	       KDEV_MAJOR(r->dev), KDEV_MINOR(r->dev), (uint64_t)r->ino);
	if (r->offset >= 0)
		printf(" offset %" PRId64, (int64_t)r->offset);
	printf(" bytes %" PRIu64, (uint64_t)r->bytes);
	for (i = 0; trace_rec_flag_names[i].name; i++)
		if (r->flags & trace_rec_flag_names[i].bit)
			printf(" %s", trace_rec_flag_names[i].name);
	if (r->op == TRACE_OP_WRITEBACK)
		printf(" flusher %u", r->flusher);
	printf("\n");
	if (trace_rec_has_drv_stages(r))
		snprintf(drv, sizeof(drv), " (drv_in %s device %s drv_out %s)",
			 trace_fmt_dur(st[TRACE_ST_DRV_IN], b[0], sizeof(b[0])),
			 trace_fmt_dur(st[TRACE_ST_DEVICE], b[1], sizeof(b[1])),
			 trace_fmt_dur(st[TRACE_ST_DRV_OUT], b[2], sizeof(b[2])));
	if (r->nr_done)
		printf("  stages pre_block %s%s%s q2q %s q2g %s g2i %s i2d %s d2c %s%s post_block "
		       "%s\n",
		       trace_fmt_dur(st[TRACE_ST_PRE_BLOCK], b[0], sizeof(b[0])),
		       st[TRACE_ST_THROTTLE] ? " throttle " : "",
		       st[TRACE_ST_THROTTLE] ?
			       trace_fmt_dur(st[TRACE_ST_THROTTLE], b[7], sizeof(b[7])) :
			       "",
		       trace_fmt_dur(st[TRACE_ST_Q2Q], b[1], sizeof(b[1])),
		       trace_fmt_dur(st[TRACE_ST_Q2G], b[2], sizeof(b[2])),
		       trace_fmt_dur(st[TRACE_ST_G2I], b[3], sizeof(b[3])),
		       trace_fmt_dur(st[TRACE_ST_I2D], b[4], sizeof(b[4])),
		       trace_fmt_dur(st[TRACE_ST_D2C], b[5], sizeof(b[5])), drv,
		       trace_fmt_dur(st[TRACE_ST_POST_BLOCK], b[6], sizeof(b[6])));
	else if (r->nr_queued)
		/* sync_file_range(WRITE), readahead: it did not wait for its bios. */
		printf("  stages none: no bio completed before it ended (pre_block = total)\n");
	else
		printf("  stages no block I/O (pre_block = total)\n");
	if (r->flags & TRACE_F_NO_OFFCPU)
		printf("  off-CPU unknown (faults: see --offcpu-periods)\n");
	else
		printf("  off-CPU %s %s %s runq %s switches %u\n",
		       trace_fmt_dur(r->offcpu_ns, b[0], sizeof(b[0])),
		       r->flags & TRACE_F_IOWAIT_BLOCKED ? "blocked" : "iowait",
		       trace_fmt_dur(r->iowait_ns, b[1], sizeof(b[1])),
		       trace_fmt_dur(r->runq_ns, b[2], sizeof(b[2])), r->nr_switches);
	printf("  page cache lookups %u (%" PRIu64 " pages) added %u pages, readahead %u sync "
	       "%u async\n",
	       r->pc_lookups, (uint64_t)r->pc_lookup_pages, r->pc_added, r->ra_sync, r->ra_async);
	if (r->nr_queued || r->nr_done)
		printf("  bios queued %u completed %u%s\n", r->nr_queued, r->nr_done,
		       trace_bios_missing(r) ? " (first 16 shown)" : "");
	for (i = 0; i < r->nr_bios && i < TRACE_MAX_BIOS; i++) {
		const struct trace_bio *bi = &r->bios[i];
		unsigned int k;

		printf("    bio#%-2u %-8s %c sector %-10" PRIu64 " %5s q2g %s g2i %s i2d %s "
		       "d2c %s",
		       i, printable(trace_dev_name(bi->dev, dn, sizeof(dn))), trace_bio_dir(bi),
		       (uint64_t)bi->sector, fmt_bytes(bi->bytes, b[0], sizeof(b[0])),
		       trace_fmt_dur(bi->g - bi->q, b[1], sizeof(b[1])),
		       trace_fmt_dur(bi->i - bi->g, b[2], sizeof(b[2])),
		       trace_fmt_dur(bi->d - bi->i, b[3], sizeof(b[3])),
		       trace_fmt_dur(bi->c - bi->d, b[4], sizeof(b[4])));
		for (k = 0; trace_bio_flag_names[k].name; k++)
			if (bi->flags & trace_bio_flag_names[k].bit)
				printf(" %s", trace_bio_flag_names[k].name);
		if (bi->h && bi->q >= bi->h)
			printf(" (held %s)", trace_fmt_dur(bi->q - bi->h, b[5], sizeof(b[5])));
		print_bio_driver(bi);
		printf("\n");
	}
	nr_tl = trace_timeline(r, tl);
	printf("  timeline (ms from start):\n");
	for (i = 0; i < (unsigned int)nr_tl; i++)
		printf("    %10.3f  %s\n", tl[i].ts >= r->start ? (tl[i].ts - r->start) / 1e6 : 0.0,
		       tl[i].text);
	if (r->events_lost)
		printf("    ... %u more events not recorded\n", r->events_lost);
	printf("\n");
}

/*
 * Says loudly that slow requests were dropped in the interval, with the rate the
 * output kept up with (it was busy all along: the buffer filled) and the rate they
 * came at.
 */
static void print_drops(struct trace_cmd *t, const struct trace_summary *sum)
{
	double seconds = sum->seconds;
	char size[UNITS_BUF];

	if (!sum->dropped)
		return;
	fmt_bytes(t->c.o->rb_bytes, size, sizeof(size));
	printf("!! %" PRIu64 " slow requests dropped: the output printed %.0f/s, they came at "
	       "%.0f/s and the %s ring buffer filled (raise -t, filter, write to a file, or "
	       "use --buffer-size)\n",
	       sum->dropped, sum->printed / seconds, (sum->emitted + sum->dropped) / seconds, size);
	warn("%" PRIu64 " of %" PRIu64 " slow requests in the last %.1f s were dropped: the "
	     "output printed %.0f/s, they came at %.0f/s (ring buffer %s full)",
	     sum->dropped, sum->emitted + sum->dropped, seconds, sum->printed / seconds,
	     (sum->emitted + sum->dropped) / seconds, size);
}

static void print_summary(struct trace_cmd *t, const struct trace_summary *sum)
{
	char b[3][UNITS_BUF];
	bool header = false;
	unsigned int op, s;

	for (op = 0; op < TRACE_OP_NR; op++) {
		const struct trace_op_hists *delta = &sum->ops[op];

		if (!delta->st[TRACE_ST_TOTAL].count)
			continue;
		if (!header) {
			printf("--- summary over %.1f s ---\n", sum->seconds);
			printf("%-16s %8s  %-11s %9s %9s %9s\n", "OP", "COUNT", "STAGE", "AVG",
			       "P50", "P99");
			header = true;
		}
		for (s = 0; s < TRACE_ST_NR; s++) {
			const struct hist *h = &delta->st[s];

			if (!h->count)
				continue;
			if (s == TRACE_ST_TOTAL)
				printf("%-16s %8" PRIu64 "  ", trace_op_name(op),
				       (uint64_t)h->count);
			else
				printf("%-16s %8s  ", "", "");
			printf("%-11s %9s %9s %9s", trace_stage_name(s),
			       fmt_ns(hist_mean(h), b[0], sizeof(b[0])),
			       fmt_ns(hist_percentile(h, 50), b[1], sizeof(b[1])),
			       fmt_ns(hist_percentile(h, 99), b[2], sizeof(b[2])));
			if (s != TRACE_ST_TOTAL && h->count != delta->st[TRACE_ST_TOTAL].count)
				printf("  (%" PRIu64 " with it)", (uint64_t)h->count);
			printf("\n");
		}
	}
	if (!header)
		printf("--- summary over %.1f s: no requests ---\n", sum->seconds);
	else
		printf("\n");
	print_drops(t, sum);
}

static void print_totals(struct trace_cmd *t, const struct trace_totals *tot)
{
	const uint64_t *cnt = tot->cnt;
	int i;

	printf("iospan trace: %" PRIu64 " requests traced, %" PRIu64 " completed, %" PRIu64
	       " emitted, %" PRIu64 " printed, %" PRIu64 " in flight, %" PRIu64 " lost\n",
	       tot->traced, cnt[TRACE_CNT_DONE], cnt[TRACE_CNT_EMITTED], tot->printed,
	       tot->in_flight, tot->lost);
	for (i = 0; i < TRACE_CNT_NR; i++) {
		if (i <= TRACE_CNT_EMITTED || !cnt[i])
			continue;
		printf("  %-24s %" PRIu64 "%s\n", trace_counters[i].name, cnt[i],
		       !trace_counters[i].info	  ? " (lost)" :
		       i == TRACE_CNT_HOOK_MISSED ? " (events skipped by the kernel: some requests "
						    "may lack a stage or be missing)" :
						    "");
	}
	if (t->lanes_full)
		printf("  %-24s %" PRIu64 "\n", "perfetto_spans_dropped", t->lanes_full);
	if (tot->malformed)
		printf("  %-24s %" PRIu64 " (lost)\n", "records_malformed", tot->malformed);
	if (tot->not_arrived)
		printf("  %-24s %" PRIu64 " (lost)\n", "records_not_arrived", tot->not_arrived);
	attach_plan_unavailable(t->c.cmd.hooks, t->c.cmd.nr_hooks, NULL, NULL, stdout, "  ");
}

const struct trace_renderer trace_text_renderer = {
	.request = print_text,
	.summary = print_summary,
	.totals = print_totals,
};
