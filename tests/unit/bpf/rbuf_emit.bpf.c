// SPDX-License-Identifier: GPL-2.0
/*
 * Records for the ring buffer consumer's unit test (tests/unit/test_rbuf.c), sent by
 * the kernel's own ring buffer through the iospan helpers (src/bpf/rbuf.bpf.h): one
 * run (BPF_PROG_TEST_RUN) sends what the globals ask for, in this order.
 */
#include "iospan.bpf.h"
#include "rbuf.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define EMIT_TYPE 7 /* the type the test's handler takes */

struct emit_rec {
	struct rb_hdr h;
	__u64 seq;
};

DEFINE_RBUF(events, 64 * 1024);

__u32 nr_valid;	    /* well-formed records, seq 0, 1, ... */
__u32 nr_bad_type;  /* records of a type no handler takes */
__u32 nr_too_short; /* EMIT_TYPE records whose header says fewer bytes than the type has */
__u32 nr_too_long;  /* ... more bytes than were reserved */
__u32 batched;	    /* valid records sent without a wake-up (rbuf_submit_batched()) */

struct batch {
	__u32 type, size;
};

/* One record of @b, whose sequence number is @seq (a bpf_loop() step). */
static long send(__u32 seq, void *b_)
{
	struct batch *b = b_;
	struct emit_rec *r = rbuf_reserve(events, b->type, sizeof(*r));

	if (!r)
		return 0;
	r->h.size = b->size;
	r->seq = seq;
	if (batched)
		rbuf_submit_batched(events, r, bpf_ktime_get_ns());
	else
		rbuf_submit(events, r);
	return 0;
}

SEC("raw_tp")
int emit(void *ctx)
{
	struct batch valid = {EMIT_TYPE, sizeof(struct emit_rec)};
	struct batch bad_type = {EMIT_TYPE + 1, sizeof(struct emit_rec)};
	struct batch too_short = {EMIT_TYPE, sizeof(struct rb_hdr)};
	struct batch too_long = {EMIT_TYPE, sizeof(struct emit_rec) + 64};

	bpf_loop(nr_valid, send, &valid, 0);
	bpf_loop(nr_bad_type, send, &bad_type, 0);
	bpf_loop(nr_too_short, send, &too_short, 0);
	bpf_loop(nr_too_long, send, &too_long, 0);
	return 0;
}
