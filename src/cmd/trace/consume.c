// SPDX-License-Identifier: GPL-2.0
/*
 * Records from the kernel: the ring buffer of slow requests, read through the shared
 * consumer (src/lib/rbuf.h: batches, size checks, losses counted per CPU) and drained
 * at the end.
 */
#include "trace.h"

/*
 * A request's record as sent (struct trace_rec up to its bios, then only the bios and
 * events it has) into @r; the unused tail of @r is left as is (nr_bios and nr_events
 * bound every reader).
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

static int on_request(void *arg, const void *data, uint32_t size)
{
	static struct trace_rec rec;
	struct trace_ctx *c = arg;

	if (rec_unpack((const char *)data + sizeof(struct rb_hdr), size - sizeof(struct rb_hdr),
		       &rec)) {
		c->malformed++; /* counted as lost */
		return 0;
	}
	c->render->request(c, &rec);
	if (c->pf)
		trace_perfetto_write(c, &rec);
	c->printed++;
	return 0;
}

static const struct rbuf_handler handlers[] = {
	{.type = TRACE_REC_REQUEST,
	 .min_size = sizeof(struct rb_hdr) + offsetof(struct trace_rec, bios),
	 .max_size = sizeof(struct rb_hdr) + sizeof(struct trace_rec),
	 .fn = on_request},
};

int trace_consume_open(struct trace_ctx *c)
{
	int err = rbuf_new(bpf_map__fd(c->skel->maps.events),
			   bpf_map__fd(c->skel->maps.events_counts), handlers,
			   sizeof(handlers) / sizeof(handlers[0]), c, &c->rb);

	return err ? fail(err, "cannot open the ring buffer: %s", strerror(-err)) : 0;
}

int trace_consume(struct trace_ctx *c, int timeout_ms, uint64_t yield_at)
{
	int err = rbuf_poll(c->rb, timeout_ms, yield_at);

	return err ? fail(err, "cannot read the ring buffer: %s", strerror(-err)) : 0;
}

/*
 * Stops the programs' emitting, then reads the ring buffer until it has handed over
 * every record they sent: a record emitted after the last read would be neither printed
 * nor counted. A program still running on another CPU when the flag was set ends within
 * microseconds; the wait is bounded all the same.
 */
int trace_stop_and_drain(struct trace_ctx *c)
{
	struct rbuf_stats st;
	int err;

	/* Attached still (detaching takes long, trace_cleanup() does it), but silent. */
	__atomic_store_n(&c->skel->bss->emit_stopped, true, __ATOMIC_SEQ_CST);
	usleep(1000);
	err = rbuf_drain(c->rb, 1000);
	if (err != -ETIMEDOUT)
		return err ? fail(err, "cannot read the ring buffer: %s", strerror(-err)) : 0;
	err = rbuf_stats(c->rb, &st);
	if (err)
		return fail(err, "cannot read the counters map: %s", strerror(-err));
	c->not_arrived = st.sent > st.received ? st.sent - st.received : 0;
	warn("%" PRIu64 " requests were sent but never arrived", c->not_arrived);
	return 0;
}
