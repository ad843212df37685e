// SPDX-License-Identifier: GPL-2.0
/* The counters, the requests still in flight, and the accounts at exit. */
#include "priv.h"

/* Writeback requests older than this with bios still missing are given up. */
#define WB_SWEEP_NS (60 * NSEC_PER_SEC)

/*
 * What each counter of trace's programs says. Losses are requests lost, summed in
 * "lost"; the others are information (a stage or bio a request may lack is said there).
 */
const struct counter_def trace_counters[TRACE_CNT_NR] = {
	[TRACE_CNT_STARTED] = {"started", .info = true},
	[TRACE_CNT_DONE] = {"completed", .info = true},
	[TRACE_CNT_EMITTED] = {"emitted", .info = true},
	[TRACE_CNT_RINGBUF_FULL] = {"ringbuf_full"},
	[TRACE_CNT_REQS_FULL] = {"request_map_full"},
	[TRACE_CNT_ABANDONED] = {"abandoned"},
	[TRACE_CNT_ASYNC_COLLIDED] = {"async_slot_collisions"},
	[TRACE_CNT_BIO_UNMATCHED] = {"bios_unmatched"},
	[TRACE_CNT_BIO_LATE] = {"bios_after_request_end", .info = true},
	[TRACE_CNT_BIOS_TRUNC] = {"bios_not_recorded", .info = true},
	[TRACE_CNT_EVENTS_TRUNC] = {"events_not_recorded", .info = true},
	[TRACE_CNT_CHAIN_TRUNC] = {"truncated_bio_chains", .info = true},
	[TRACE_CNT_FAULTS_CACHED] = {"faults_without_io", .info = true},
	[TRACE_CNT_WB_SWEPT] = {"writeback_given_up"},
	[TRACE_CNT_PATHS_FULL] = {"paths_map_full", .info = true},
	[TRACE_CNT_HOOK_MISSED] = {"hook_runs_missed", .info = true},
	[TRACE_CNT_UNSEEN_DONE] = {"bio_completions_not_seen", .info = true},
	[TRACE_CNT_END_INFERRED] = {"async_ends_inferred", .info = true},
	[TRACE_CNT_WB_NO_DATA] = {"writeback_without_data", .info = true},
	[TRACE_CNT_SPANNED] = {"syscall_spans"},
	[TRACE_CNT_WB_UNFOLLOWED] = {"writeback_passes_unfollowed"},
};

int trace_read_counters(struct trace_ctx *c, uint64_t *out)
{
	int err = counters_read(bpf_map__fd(c->skel->maps.counters), TRACE_CNT_NR, out);
	struct rbuf_stats st;

	out[TRACE_CNT_HOOK_MISSED] = bpfcmd_missed_runs(&c->cmd);
	if (!err)
		err = rbuf_stats(c->cmd.rb, &st);
	out[TRACE_CNT_EMITTED] = err ? 0 : st.sent;
	out[TRACE_CNT_RINGBUF_FULL] = err ? 0 : st.lost;
	return err;
}

/* Records lost on the way: malformed (by rbuf or by their layout) and never read. */
static uint64_t records_malformed(struct trace_ctx *c)
{
	struct rbuf_stats st;

	return c->malformed + (rbuf_stats(c->cmd.rb, &st) ? 0 : st.malformed);
}

/* What a sweep of the requests map needs per entry. */
struct sweep {
	struct trace_ctx *c;
	int fd;
	uint64_t now;
	bool at_exit;
};

static int sweep_req(const void *key, const void *val, void *arg)
{
	const struct trace_rec *r = val;
	struct sweep *sw = arg;
	uint64_t k;

	if (r->state == TRACE_S_IDLE)
		return 0;
	memcpy(&k, key, sizeof(k));
	if ((k >> 60) == 2 && !sw->at_exit && sw->now - r->start > WB_SWEEP_NS) {
		if (!bpf_map_delete_elem(sw->fd, &k))
			sw->c->wb_swept++;
		return 0;
	}
	sw->c->in_flight++;
	return 0;
}

/* The records of mapped array @map (@values) whose state, at @state_off, is active. */
static uint64_t count_active(const struct bpf_map *map, const void *values, size_t state_off)
{
	size_t stride = bpfmap_array_stride(map);
	const char *v = values;
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; v && i < bpf_map__max_entries(map); i++, v += stride)
		n += *(const volatile uint32_t *)(v + state_off) == TRACE_S_ACTIVE;
	return n;
}

/*
 * Writeback requests whose bios never all completed would stay in the map until LRU
 * evicts them, silently: old ones are given up here and counted. At exit, also counts
 * the requests still in flight.
 */
void trace_sweep_writeback(struct trace_ctx *c, bool at_exit)
{
	struct sweep sw = {
		.c = c,
		.fd = bpf_map__fd(c->skel->maps.reqs),
		.now = now_ns(CLOCK_MONOTONIC),
		.at_exit = at_exit,
	};

	c->in_flight = 0;
	/* Read in batches; a failed read leaves the count as far as it got. */
	bpfmap_walk(sw.fd, sizeof(uint64_t), sizeof(struct trace_rec), false, sweep_req, &sw);
	if (!at_exit)
		return;
	/*
	 * Syscalls and faults still in progress (a thread blocked in one, say), and async
	 * direct I/O still in flight (or whose completion was never seen), from the tables
	 * mapped: copying their 18 MB out took 80 ms of the exit here.
	 */
	c->in_flight += count_active(c->skel->maps.thread_recs, c->thread_recs,
				     offsetof(struct trace_rec, state));
	if (c->skel->rodata->trace_aio)
		c->in_flight += count_active(c->skel->maps.async_slots, c->async_slots,
					     offsetof(struct trace_async_slot, rec.state));
}

void trace_collect_totals(struct trace_ctx *c, struct trace_totals *t)
{
	uint64_t *cnt = t->cnt;

	memset(t, 0, sizeof(*t));
	if (trace_read_counters(c, cnt))
		memset(t->cnt, 0, sizeof(t->cnt));
	trace_sweep_writeback(c, true);
	cnt[TRACE_CNT_WB_SWEPT] += c->wb_swept;
	t->lost = counters_lost(trace_counters, cnt, TRACE_CNT_NR);
	/* A fault served from the page cache, an inode-only writeback: not requests. */
	t->traced =
		cnt[TRACE_CNT_STARTED] - cnt[TRACE_CNT_FAULTS_CACHED] - cnt[TRACE_CNT_WB_NO_DATA];
	t->malformed = records_malformed(c);
	t->not_arrived = c->cmd.not_arrived;
	t->lost += t->malformed + t->not_arrived;
	t->printed = c->delivered;
	t->in_flight = c->in_flight;
}
