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

/* Index of the most significant set bit of a non-zero value, without a loop. */
static inline __u32 hist_msb(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5;
	v >>= shift;
	r = shift;
	shift = (v > 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
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
