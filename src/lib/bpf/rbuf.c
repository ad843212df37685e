// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "args.h"
#include "bpfmap.h"
#include "rbuf.h"

/* Records between two looks at the clock and the stop flag during a long read. */
#define RBUF_YIELD_EVERY 64
/* What a handler's return asks for: end the read here (not an error). */
#define RBUF_YIELD 1

struct rbuf {
	struct ring_buffer *rb;
	int counts_fd;
	const struct rbuf_handler *handlers;
	size_t nr;
	void *arg;
	uint64_t received, malformed;
	uint64_t yield_ns;
	unsigned int since_check;
	bool yielded;
};

static const struct rbuf_handler *find_handler(const struct rbuf *r, uint32_t type)
{
	size_t i;

	for (i = 0; i < r->nr; i++)
		if (r->handlers[i].type == type)
			return &r->handlers[i];
	return NULL;
}

static int on_rec(void *ctx, void *data, size_t size)
{
	struct rbuf *r = ctx;
	const struct rb_hdr *h = data;
	const struct rbuf_handler *hd;
	uint32_t max;
	int err;

	r->received++;
	hd = size >= sizeof(*h) ? find_handler(r, h->type) : NULL;
	max = hd && hd->max_size ? hd->max_size : hd ? hd->min_size : 0;
	/* The ring buffer rounds sizes up to 8 bytes: the header has the exact one. */
	if (!hd || h->size > size || h->size < hd->min_size || h->size > max) {
		r->malformed++;
	} else {
		err = hd->fn(r->arg, data, h->size);
		if (err < 0)
			return err;
	}
	if (!r->yield_ns || ++r->since_check < RBUF_YIELD_EVERY)
		return 0;
	r->since_check = 0;
	if (!stop_requested && now_ns(CLOCK_MONOTONIC) < r->yield_ns)
		return 0;
	r->yielded = true;
	return -EINTR; /* ends ring_buffer__poll() after this record */
}

int rbuf_new(int rb_fd, int counts_fd, const struct rbuf_handler *handlers, size_t nr, void *arg,
	     struct rbuf **out)
{
	struct rbuf *r = calloc(1, sizeof(*r));
	int err = 0;

	if (!r)
		return -ENOMEM;
	r->counts_fd = counts_fd;
	r->handlers = handlers;
	r->nr = nr;
	r->arg = arg;
	r->rb = ring_buffer__new(rb_fd, on_rec, r, NULL);
	if (!r->rb) {
		err = -errno;
		free(r);
		r = NULL;
	}
	*out = r;
	return err;
}

void rbuf_free(struct rbuf *r)
{
	if (!r)
		return;
	ring_buffer__free(r->rb);
	free(r);
}

static int finish_read(struct rbuf *r, int ret)
{
	if (r->yielded || ret == -EINTR) {
		r->yielded = false;
		return 0;
	}
	return ret < 0 ? ret : 0;
}

int rbuf_poll(struct rbuf *r, int timeout_ms, uint64_t yield_ns)
{
	int ret;

	r->yield_ns = yield_ns;
	r->since_check = 0;
	ret = ring_buffer__poll(r->rb, timeout_ms);
	/* Records sent without a wake-up (rbuf_submit_batched()) are read at the timeout. */
	if (!ret)
		ret = ring_buffer__consume(r->rb);
	return finish_read(r, ret);
}

int rbuf_stats(struct rbuf *r, struct rbuf_stats *out)
{
	uint64_t c[RB_COUNT_NR] = {};
	int err = bpfmap_sum_percpu_u64(r->counts_fd, RB_COUNT_NR, c);

	out->received = r->received;
	out->malformed = r->malformed;
	out->sent = c[RB_SENT];
	out->lost = c[RB_LOST];
	return err;
}

int rbuf_drain(struct rbuf *r, int max_ms)
{
	struct rbuf_stats st;
	int i, err;

	r->yield_ns = 0;
	for (i = 0; i <= max_ms; i++) {
		err = finish_read(r, ring_buffer__consume(r->rb));
		if (err)
			return err;
		err = rbuf_stats(r, &st);
		if (err)
			return err;
		if (st.received >= st.sent)
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}
