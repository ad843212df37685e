// SPDX-License-Identifier: GPL-2.0
/*
 * Records from the kernel: the ring buffer of slow requests, read through the shared
 * consumer (src/lib/bpf/rbuf.h: batches, size checks, losses counted per CPU) that the
 * command's life cycle (src/lib/bpf/bpfcmd.h) runs and drains.
 */
#include "array.h"
#include "priv.h"

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
	static struct trace_names names;
	static struct trace_rec rec;
	struct trace_ctx *c = arg;

	if (rec_unpack((const char *)data + sizeof(struct rb_hdr), size - sizeof(struct rb_hdr),
		       &rec)) {
		c->malformed++; /* counted as lost */
		return 0;
	}
	if (c->sink.request) {
		trace_rec_names(c, &rec, &names);
		c->sink.request(c->sink.arg, &rec, &names);
	}
	c->delivered++;
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
	return bpfcmd_ringbuf(&c->cmd, bpf_map__fd(c->skel->maps.events),
			      bpf_map__fd(c->skel->maps.events_counts), handlers,
			      ARRAY_SIZE(handlers), c);
}
