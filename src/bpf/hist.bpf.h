/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hist_put(): the BPF side of the histograms of src/lib/util/hist.h, for every program that
 * fills one. User space reads them with the functions of src/lib/util/hist.c.
 */
#ifndef IOSPAN_HIST_BPF_H
#define IOSPAN_HIST_BPF_H

#include "hist_abi.h"

/*
 * The head's part of hist_put_of(): counts @v in @h and returns its slot among @nr
 * slots of 2^@sub_bits sub-buckets. max is a plain store even when @shared: a race
 * loses only a maximum another CPU raised at the same moment.
 */
static __always_inline __u32 hist_put_head(struct hist_head *h, __u32 nr, __u32 sub_bits, __u64 v,
					   bool shared)
{
	__u32 s = hist_slot_of(v, sub_bits);

	/* Keep the bound check on the register used for the access (clang reloads it). */
	asm volatile("" : "+r"(s));
	if (s >= nr)
		s = nr - 1;
	asm volatile("" : "+r"(s));
	if (shared) {
		__sync_fetch_and_add(&h->count, 1);
		__sync_fetch_and_add(&h->sum, v);
	} else {
		h->count++;
		h->sum += v;
	}
	if (v > h->max)
		h->max = v;
	return s;
}

/*
 * Adds @v to @h, a histogram of any type (HIST_HEAD, then slots[] of 2^@sub_bits
 * sub-buckets). @shared: written by several CPUs at once (a hash map value), so every
 * sum is atomic; per-CPU histograms need none. A macro so that the slot is addressed
 * through the type's own array: through a pointer to it, clang adds an instruction.
 */
#define hist_put_of(h, sub_bits, v, shared)                                       \
	do {                                                                      \
		const __u32 nr__ = sizeof((h)->slots) / sizeof((h)->slots[0]);    \
		__u32 s__ = hist_put_head(&(h)->head, nr__, sub_bits, v, shared); \
                                                                                  \
		if (s__ < nr__) {                                                 \
			if (shared)                                               \
				__sync_fetch_and_add(&(h)->slots[s__], 1);        \
			else                                                      \
				(h)->slots[s__]++;                                \
		}                                                                 \
	} while (0)

/* A per-CPU struct hist (trace's). */
static __always_inline void hist_put(struct hist *h, __u64 v)
{
	hist_put_of(h, HIST_SUB_BITS, v, false);
}

#endif
