/* SPDX-License-Identifier: GPL-2.0 */
/*
 * When each bio was queued (block_bio_queue: blktrace's Q), so that a request's q2c
 * starts where btt's does, at its first bio's Q, and not at the request's allocation
 * (rq->start_time_ns, blktrace's G): between the two the submitter may wait for a tag,
 * be throttled by writeback throttling or merge into a plug, which is queueing too.
 *
 * A two-way table keyed by bio address (bio_slot.bpf.h): a bio takes the older of its
 * two slots. Every bio is stamped, on every disk, and a stamp lives from Q to its
 * request's end, so with one slot per address a bio queued meanwhile at a colliding
 * address took it (lat lost q2c of 3 requests in 10,000 at 64 in flight); with two,
 * the older of two is nearly always a stale stamp (a bio merged into a request, whose
 * stamp is never taken), not a live one. A stamp is taken away (zeroed, so it is the
 * first to be reused) when its request completes: bios are recycled by the slab, and a
 * bio whose queue ran no program (the kernel skips a program that fires while it runs
 * on that CPU) must not find the stamp of an earlier bio at its address. Include once
 * per .bpf.c, after bio_slot.bpf.h; BIO_Q_SLOTS (a power of two) may be defined before.
 *
 *   bio_q_stamp(bio, now)   at block_bio_queue, @now read first thing in the program
 *   bio_q_split(split)      at block_split: the split was queued with its original
 *   bio_q_seen(tag, take)   at completion: whether a bio's queue was seen (its stamp
 *                           is on record); taken away if @take
 *   rq_q_take(rq, last)     at completion: Q of the request's first bio, 0 if none is
 *                           on record (queued before tracing, its slot taken by another
 *                           bio, or its queue ran no program); taken away if @last, the
 *                           request's last completion (not a part, nor the data part of
 *                           a flush sequence, whose end completes the request again)
 */
#ifndef IOSPAN_BIO_Q_BPF_H
#define IOSPAN_BIO_Q_BPF_H

#ifndef BIO_Q_SLOTS
#define BIO_Q_SLOTS (1U << 16)
#endif

struct bio_q_slot {
	__u64 tag; /* pv() of the bio: first, as slot_* expects */
	__u64 q;   /* CLOCK_MONOTONIC ns at block_bio_queue */
};

DEFINE_MAP(bio_qs, BPF_MAP_TYPE_ARRAY, __u32, struct bio_q_slot, BIO_Q_SLOTS);

/* The slot of the bio tagged @tag: its own if either holds it, else the older one. */
static __noinline struct bio_q_slot *bio_q_claim(__u64 tag)
{
	struct bio_q_slot *s = slot_pick2(&bio_qs, struct bio_q_slot, tag, BIO_Q_SLOTS, q);

	if (s)
		s->tag = tag;
	return s;
}

/* The slot that holds the stamp of the bio tagged @tag, or NULL. */
static __noinline struct bio_q_slot *bio_q_find(__u64 tag)
{
	__u32 i;

	return slot_find_tag2(&bio_qs, tag, BIO_Q_SLOTS, &i);
}

static __always_inline void bio_q_stamp(struct bio *bio, __u64 now)
{
	struct bio_q_slot *s = bio_q_claim(pv(bio));

	if (s)
		s->q = now;
}

static __always_inline void bio_q_split(struct bio *split)
{
	__u64 parent = bio_split_parent(split), q;
	struct bio_q_slot *s;

	s = parent ? bio_q_find(parent) : NULL;
	if (!s)
		return;
	q = s->q;
	s = bio_q_claim(pv(split));
	if (s)
		s->q = q;
}

/* Whether the bio tagged @tag was seen queued (its stamp is on record); taken away if @take. */
static __always_inline int bio_q_seen(__u64 tag, __u32 take)
{
	__u32 i;
	struct bio_q_slot *s = slot_find_tag2(&bio_qs, tag, BIO_Q_SLOTS, &i);

	if (!s)
		return 0;
	if (take) {
		s->tag = 0;
		s->q = 0;
	}
	return 1;
}

static __always_inline __u64 rq_q_take(struct request *rq, bool last)
{
	struct bio *bio = KRP(struct request, rq, bio);
	struct bio_q_slot *s;
	__u64 q;

	if (!bio)
		return 0;
	s = bio_q_find(pv(bio));
	if (!s)
		return 0;
	q = s->q;
	if (last) {
		s->tag = 0;
		s->q = 0;
	}
	return q;
}

#endif
