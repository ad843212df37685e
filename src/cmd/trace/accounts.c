// SPDX-License-Identifier: GPL-2.0
/* The counters, the requests still in flight, and the accounts printed at exit. */
#include "trace.h"

static const char *const cnt_names[TRACE_CNT_NR] = {
	[TRACE_CNT_STARTED] = "started",
	[TRACE_CNT_DONE] = "completed",
	[TRACE_CNT_EMITTED] = "emitted",
	[TRACE_CNT_RINGBUF_FULL] = "ringbuf_full",
	[TRACE_CNT_REQS_FULL] = "request_map_full",
	[TRACE_CNT_ABANDONED] = "abandoned",
	[TRACE_CNT_ASYNC_COLLIDED] = "async_slot_collisions",
	[TRACE_CNT_BIO_UNMATCHED] = "bios_unmatched",
	[TRACE_CNT_BIO_LATE] = "bios_after_request_end",
	[TRACE_CNT_BIOS_TRUNC] = "bios_not_recorded",
	[TRACE_CNT_EVENTS_TRUNC] = "events_not_recorded",
	[TRACE_CNT_CHAIN_TRUNC] = "truncated_bio_chains",
	[TRACE_CNT_FAULTS_CACHED] = "faults_without_io",
	[TRACE_CNT_WB_SWEPT] = "writeback_given_up",
	[TRACE_CNT_PATHS_FULL] = "paths_map_full",
	[TRACE_CNT_HOOK_MISSED] = "hook_runs_missed",
	[TRACE_CNT_UNSEEN_DONE] = "bio_completions_not_seen",
	[TRACE_CNT_END_INFERRED] = "async_ends_inferred",
};

/* Requests lost: counted in "lost" (the others are informational). */
static bool cnt_is_loss(int i)
{
	return i == TRACE_CNT_RINGBUF_FULL || i == TRACE_CNT_REQS_FULL ||
	       i == TRACE_CNT_ABANDONED || i == TRACE_CNT_ASYNC_COLLIDED ||
	       i == TRACE_CNT_BIO_UNMATCHED || i == TRACE_CNT_WB_SWEPT;
}

int read_counters(struct trace_ctx *c, uint64_t *out)
{
	int err = bpfmap_sum_percpu_u64(bpf_map__fd(c->skel->maps.counters), TRACE_CNT_NR, out);

	out[TRACE_CNT_HOOK_MISSED] = bpfobj_missed_runs(c->skel->obj);
	return err;
}

/*
 * Writeback requests whose bios never all completed would stay in the map until LRU
 * evicts them, silently: old ones are given up here and counted. At exit, also counts
 * the requests still in flight.
 */
void sweep_writeback(struct trace_ctx *c, bool at_exit)
{
	int fd = bpf_map__fd(c->skel->maps.reqs);
	static struct trace_rec r;
	static struct trace_async_slot as;
	uint64_t key, next, now = now_ns(CLOCK_MONOTONIC);
	uint32_t idx;
	bool first = true;

	c->in_flight = 0;
	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &r) || r.state == TRACE_S_IDLE)
			continue;
		if ((key >> 60) == 2 && !at_exit && now - r.start > WB_SWEEP_NS) {
			if (!bpf_map_delete_elem(fd, &key))
				c->wb_swept++;
			continue;
		}
		c->in_flight++;
	}
	if (!at_exit)
		return;
	/* Syscalls and faults still in progress (a thread blocked in one, say). */
	fd = bpf_map__fd(c->skel->maps.thread_recs);
	for (idx = 0; idx < bpf_map__max_entries(c->skel->maps.thread_recs); idx++) {
		if (!bpf_map_lookup_elem(fd, &idx, &r) && r.state == TRACE_S_ACTIVE)
			c->in_flight++;
	}
	if (!c->skel->rodata->trace_aio)
		return;
	/* Async direct I/O still in flight (or whose completion was never seen). */
	fd = bpf_map__fd(c->skel->maps.async_slots);
	for (idx = 0; idx < bpf_map__max_entries(c->skel->maps.async_slots); idx++) {
		if (!bpf_map_lookup_elem(fd, &idx, &as) && as.rec.state == TRACE_S_ACTIVE)
			c->in_flight++;
	}
}

void print_accounts(struct trace_ctx *c)
{
	uint64_t cnt[TRACE_CNT_NR], lost = 0, traced;
	int i;

	if (read_counters(c, cnt))
		memset(cnt, 0, sizeof(cnt));
	sweep_writeback(c, true);
	cnt[TRACE_CNT_WB_SWEPT] += c->wb_swept;
	for (i = 0; i < TRACE_CNT_NR; i++)
		if (cnt_is_loss(i))
			lost += cnt[i];
	/* A fault served from the page cache turned out not to be a request. */
	traced = cnt[TRACE_CNT_STARTED] - cnt[TRACE_CNT_FAULTS_CACHED];
	lost += c->malformed;
	if (cnt[TRACE_CNT_RINGBUF_FULL])
		warn("%" PRIu64 " of %" PRIu64 " slow requests (%.1f%%) were dropped because the "
		     "output did not keep up: see the '!!' lines, raise -t, filter, or use "
		     "--buffer-size",
		     cnt[TRACE_CNT_RINGBUF_FULL],
		     cnt[TRACE_CNT_RINGBUF_FULL] + cnt[TRACE_CNT_EMITTED],
		     100.0 * cnt[TRACE_CNT_RINGBUF_FULL] /
			     (cnt[TRACE_CNT_RINGBUF_FULL] + cnt[TRACE_CNT_EMITTED]));
	if (c->jw) {
		jw_start_object(c->jw);
		jw_kv_string(c->jw, "type", "totals");
		jw_kv_uint(c->jw, "traced", traced);
		jw_kv_uint(c->jw, "completed", cnt[TRACE_CNT_DONE]);
		jw_kv_uint(c->jw, "emitted", cnt[TRACE_CNT_EMITTED]);
		jw_kv_uint(c->jw, "printed", c->printed);
		jw_kv_uint(c->jw, "in_flight_at_exit", c->in_flight);
		jw_kv_uint(c->jw, "lost", lost);
		jw_kv_object(c->jw, "counters");
		for (i = 0; i < TRACE_CNT_NR; i++)
			jw_kv_uint(c->jw, cnt_names[i], cnt[i]);
		jw_kv_uint(c->jw, "perfetto_lanes_full", c->lanes_full);
		jw_kv_uint(c->jw, "records_malformed", c->malformed);
		jw_end_object(c->jw);
		attach_plan_unavailable(c->hooks, c->nr_hooks, c->jw, "unavailable", NULL, NULL);
		jw_end_object(c->jw);
		return;
	}
	printf("iospan trace: %" PRIu64 " requests traced, %" PRIu64 " completed, %" PRIu64
	       " emitted, %" PRIu64 " printed, %" PRIu64 " in flight, %" PRIu64 " lost\n",
	       traced, cnt[TRACE_CNT_DONE], cnt[TRACE_CNT_EMITTED], c->printed, c->in_flight, lost);
	for (i = 0; i < TRACE_CNT_NR; i++) {
		if (i <= TRACE_CNT_EMITTED || !cnt[i])
			continue;
		printf("  %-24s %" PRIu64 "%s\n", cnt_names[i], cnt[i],
		       cnt_is_loss(i)		  ? " (lost)" :
		       i == TRACE_CNT_HOOK_MISSED ? " (events skipped by the kernel: some requests "
						    "may lack a stage or be missing)" :
						    "");
	}
	if (c->lanes_full)
		printf("  %-24s %" PRIu64 "\n", "perfetto_spans_dropped", c->lanes_full);
	if (c->malformed)
		printf("  %-24s %" PRIu64 " (lost)\n", "records_malformed", c->malformed);
	attach_plan_unavailable(c->hooks, c->nr_hooks, NULL, NULL, stdout, "  ");
}
