/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log-linear histograms, shared by the BPF programs (which fill them) and user space
 * (which reads percentiles). Each power of two is split into 2^sub_bits linear
 * sub-buckets, so a bucket is at most 2^-sub_bits wide relative to its values:
 * percentiles interpolated in it are within half that of the truth, where plain log2
 * buckets can be off by a factor of two. Values 0..2^sub_bits-1 have exact buckets.
 * The number of sub-buckets is a parameter of each histogram type: struct hist (trace)
 * has HIST_SUB_BITS = 2 (25% wide, ~12%); iospan lat uses LAT_HIST_SUB_BITS = 5. The
 * *_of() functions take it; hist_slot() and friends are struct hist's. The slot arithmetic is
 * here so both compilers share it; the BPF update is hist_put() (src/bpf/hist.bpf.h),
 * sums, deltas, percentiles, log2 bars and cumulative buckets are in hist.c.
 */
#ifndef IOSPAN_HIST_ABI_H
#define IOSPAN_HIST_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define HIST_SUB_BITS 2
#define HIST_SUB      (1 << HIST_SUB_BITS)
/* Up to 2^42 ns (73 minutes); larger values land in the last bucket. */
#define HIST_MAX_MSB 42
/* Slots of a histogram with 2^@sub_bits sub-buckets up to 2^HIST_MAX_MSB. */
#define HIST_SLOTS_OF(sub_bits) ((HIST_MAX_MSB - (sub_bits) + 2) * (1 << (sub_bits)))
#define HIST_SLOTS		HIST_SLOTS_OF(HIST_SUB_BITS)

/*
 * What every histogram type starts with; its slots follow at once. The user-space
 * functions below take this head and the number of slots, so they serve every type.
 */
struct hist_head {
	__u64 count;
	__u64 sum; /* of the values */
	__u64 max; /* the largest value seen */
};

/* A histogram type's first member: its head, by name (h->head) and by field (h->count). */
#define HIST_HEAD                      \
	union {                        \
		struct hist_head head; \
		struct {               \
			__u64 count;   \
			__u64 sum;     \
			__u64 max;     \
		};                     \
	}

struct hist {
	HIST_HEAD;
	__u32 slots[HIST_SLOTS];
};

/* Bit index of (1 << k) * HIST_DEBRUIJN >> 58, for k = 0..63 (a de Bruijn sequence). */
#define HIST_DEBRUIJN 0x03f79d71b4cb0a89ULL
static const __u8 hist_debruijn_msb[64] = {
	0,  1,	48, 2,	57, 49, 28, 3,	61, 58, 50, 42, 38, 29, 17, 4,
	62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
	63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
	46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,	13, 8,	7,  6,
};

/*
 * Index of the most significant set bit of a non-zero value, without a branch: BPF
 * has no conditional set, so comparisons would be jumps, mispredicted on latencies
 * that vary. Smear the top bit down, keep only it, and look its position up.
 */
static inline __u32 hist_msb(__u64 v)
{
	v |= v >> 1;
	v |= v >> 2;
	v |= v >> 4;
	v |= v >> 8;
	v |= v >> 16;
	v |= v >> 32;
	v -= v >> 1;
	return hist_debruijn_msb[(v * HIST_DEBRUIJN) >> 58];
}

/* The slot of @v in a histogram of 2^@sub_bits sub-buckets (HIST_SLOTS_OF(@sub_bits)). */
static inline __u32 hist_slot_of(__u64 v, __u32 sub_bits)
{
	__u32 sub = 1U << sub_bits, nr = HIST_SLOTS_OF(sub_bits), msb, slot;

	if (v < sub)
		return (__u32)v;
	msb = hist_msb(v);
	if (msb > HIST_MAX_MSB)
		return nr - 1;
	slot = (msb - sub_bits + 1) * sub + ((v >> (msb - sub_bits)) & (sub - 1));
	return slot < nr ? slot : nr - 1;
}

/* Smallest value of a slot; the slot covers [low(s), low(s + 1)). */
static inline __u64 hist_slot_low_of(__u32 slot, __u32 sub_bits)
{
	__u32 sub = 1U << sub_bits, msb;

	if (slot < sub)
		return slot;
	msb = slot / sub + sub_bits - 1;
	return (1ULL << msb) + ((__u64)(slot % sub) << (msb - sub_bits));
}

static inline __u32 hist_slot(__u64 v)
{
	return hist_slot_of(v, HIST_SUB_BITS);
}

static inline __u64 hist_slot_low(__u32 slot)
{
	return hist_slot_low_of(slot, HIST_SUB_BITS);
}

#endif
