/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log-linear latency histograms, shared by the BPF programs (which fill them) and user
 * space (which reads percentiles). Each power of two is split into HIST_SUB linear
 * sub-buckets, so a bucket is at most 25% wide: percentiles read from it are within
 * about 12% of the truth, where plain log2 buckets can be off by a factor of two.
 * Values 0..HIST_SUB-1 have exact buckets. Header-only so both compilers share it.
 */
#ifndef IOSPAN_HIST_H
#define IOSPAN_HIST_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define HIST_SUB_BITS 2
#define HIST_SUB      (1 << HIST_SUB_BITS)
/* Up to 2^42 ns (73 minutes); larger values land in the last bucket. */
#define HIST_MAX_MSB 42
#define HIST_SLOTS   ((HIST_MAX_MSB - HIST_SUB_BITS + 2) * HIST_SUB)

struct hist {
	__u64 count;
	__u64 sum;
	__u64 max;
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

static inline __u32 hist_slot(__u64 v)
{
	__u32 msb, slot;

	if (v < HIST_SUB)
		return (__u32)v;
	msb = hist_msb(v);
	if (msb > HIST_MAX_MSB)
		return HIST_SLOTS - 1;
	slot = (msb - HIST_SUB_BITS + 1) * HIST_SUB + ((v >> (msb - HIST_SUB_BITS)) & (HIST_SUB - 1));
	return slot < HIST_SLOTS ? slot : HIST_SLOTS - 1;
}

/* Smallest value of a slot; the slot covers [hist_slot_low(s), hist_slot_low(s + 1)). */
static inline __u64 hist_slot_low(__u32 slot)
{
	__u32 msb;

	if (slot < HIST_SUB)
		return slot;
	msb = slot / HIST_SUB + HIST_SUB_BITS - 1;
	return (1ULL << msb) + ((__u64)(slot % HIST_SUB) << (msb - HIST_SUB_BITS));
}

#ifndef __VMLINUX_H__
#include <stdbool.h>
#include <stddef.h>

/* Adds @v to @h (user space; the BPF side updates slots with atomics). */
void hist_add(struct hist *h, __u64 v);
/* Adds all of @src to @dst (summing per-CPU copies). */
void hist_merge(struct hist *dst, const struct hist *src);
/* The @pct percentile (0..100), interpolated within its bucket; 0 if empty. */
double hist_percentile(const struct hist *h, double pct);
double hist_mean(const struct hist *h);
#endif

#endif
