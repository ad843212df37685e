// SPDX-License-Identifier: GPL-2.0
/* Records from the kernel: the ring buffer of slow requests, read and drained. */
#include "trace.h"

/*
 * A record as sent (the header, then only the bios and events it has) into @r; the
 * unused tail of @r is left as is (nr_bios and nr_events bound every reader).
 */
static int rec_unpack(const void *data, size_t size, struct trace_rec *r)
{
	const size_t hdr = offsetof(struct trace_rec, bios);
	size_t lb, le;

	if (size < hdr)
		return -EINVAL;
	memcpy(r, data, hdr);
	lb = (r->nr_bios < TRACE_MAX_BIOS ? r->nr_bios : TRACE_MAX_BIOS) * sizeof(r->bios[0]);
	le = (r->nr_events < TRACE_MAX_EVENTS ? r->nr_events : TRACE_MAX_EVENTS) *
	     sizeof(r->events[0]);
	if (size != hdr + lb + le)
		return -EINVAL;
	memcpy(r->bios, (const char *)data + hdr, lb);
	memcpy(r->events, (const char *)data + hdr + lb, le);
	return 0;
}

int on_record(void *ctx, void *data, size_t size)
{
	static struct trace_rec rec;
	struct trace_ctx *c = ctx;
	const struct trace_rec *r = &rec;

	c->received++;
	if (rec_unpack(data, size, &rec)) {
		c->malformed++; /* counted as lost */
		return 0;
	}
	if (c->jw)
		print_json(c, r);
	else
		print_text(c, r);
	if (c->pf)
		write_perfetto(c, r);
	c->printed++;
	/*
	 * A ring buffer read returns only once the buffer is empty: while requests come
	 * as fast as they are printed, give the loop its turn now and then (summaries,
	 * --duration, Ctrl-C). A negative return ends the read after this record.
	 */
	if (c->draining || ++c->since_yield < 64)
		return 0;
	c->since_yield = 0;
	return stop_requested || now_ns(CLOCK_MONOTONIC) >= c->yield_at ? -EINTR : 0;
}

/*
 * Stops the programs' emitting, then reads the ring buffer until it has handed over
 * every record they sent: a record emitted after the last read would be neither printed
 * nor counted. A program still running on another CPU when the flag was set ends within
 * microseconds; the wait is bounded all the same.
 */
int stop_and_drain(struct trace_ctx *c)
{
	uint64_t cnt[TRACE_CNT_NR];
	int i, err;

	/* Attached still (detaching takes long, trace_cleanup() does it), but silent. */
	__atomic_store_n(&c->skel->bss->emit_stopped, true, __ATOMIC_SEQ_CST);
	c->draining = true;
	for (i = 0; i < 1000; i++) {
		err = ring_buffer__consume(c->rb);
		if (err < 0)
			return fail(err, "cannot read the ring buffer: %s", strerror(-err));
		err = read_counters(c, cnt);
		if (err)
			return fail(err, "cannot read the counters map: %s", strerror(-err));
		if (c->received >= cnt[TRACE_CNT_EMITTED] && i)
			return 0;
		usleep(1000);
	}
	warn("%" PRIu64 " requests were sent but never arrived",
	     cnt[TRACE_CNT_EMITTED] - c->received);
	return 0;
}
