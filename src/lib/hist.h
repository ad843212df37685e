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
#ifndef IOSPAN_HIST_H
#define IOSPAN_HIST_H

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

#ifndef __VMLINUX_H__
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The slots that follow @h (every histogram type puts them right after its head). */
static inline __u32 *hist_slots(struct hist_head *h)
{
	return (__u32 *)(h + 1);
}

static inline const __u32 *hist_slots_const(const struct hist_head *h)
{
	return (const __u32 *)(h + 1);
}

/* Adds @v to @h (user space; the BPF side is hist_put() in src/bpf/hist.bpf.h). */
void hist_add(struct hist *h, __u64 v);
/* Adds all of @src to @dst, histograms of @nr slots (summing per-CPU copies). */
void hist_merge_of(struct hist_head *dst, const struct hist_head *src, __u32 nr);
/*
 * @out = @cur - @prev, histograms of @nr slots: what came in between two reads of
 * the same counters. max stays @cur's (a maximum cannot be subtracted). @out may be
 * @cur.
 */
void hist_delta_of(struct hist_head *out, const struct hist_head *cur, const struct hist_head *prev,
		   __u32 nr);
/* The @pct percentile (0..100), interpolated within its bucket; 0 if empty. */
double hist_percentile(const struct hist *h, double pct);
/*
 * The same for any histogram: @nr slots of 2^@sub_bits sub-buckets, @max the largest
 * value seen (0: unknown).
 */
double hist_percentile_of(const __u32 *slots, __u32 nr, __u32 sub_bits, __u64 max, double pct);
double hist_mean(const struct hist *h);

static inline void hist_merge(struct hist *dst, const struct hist *src)
{
	hist_merge_of(&dst->head, &src->head, HIST_SLOTS);
}

static inline void hist_delta(struct hist *out, const struct hist *cur, const struct hist *prev)
{
	hist_delta_of(&out->head, &cur->head, &prev->head, HIST_SLOTS);
}

/*
 * Log2 rows, as biolatency and bitesize print them: row 0 holds values below 2 units,
 * row r > 0 those in [2^r, 2^(r+1)) units, where a unit is 2^@unit_shift of the
 * histogram's values (values kept finer than they are shown). Powers of two of the unit
 * are slot boundaries, so the rows are exact sums of slots. Values at or above
 * 2^HIST_MAX_MSB land in the last row, HIST_LOG2_ROWS(@unit_shift) - 1.
 */
#define HIST_LOG2_ROWS(unit_shift) (HIST_MAX_MSB - (unit_shift) + 1)
/*
 * Sums @nr slots of 2^@sub_bits sub-buckets into @rows (HIST_LOG2_ROWS(@unit_shift)
 * of them); returns how many are worth showing (up to the last non-empty one), 0 if
 * the histogram is empty.
 */
__u32 hist_log2_rows(const __u32 *slots, __u32 nr, __u32 sub_bits, __u32 unit_shift,
		     uint64_t *rows);
/*
 * Prints @nr log2 rows with bars of stars scaled to the largest, under a header
 * "usecs : count distribution" naming @unit ("usecs", "msecs", "kbytes").
 */
void hist_log2_print(FILE *out, const uint64_t *rows, __u32 nr, const char *unit);

/*
 * Cumulative buckets, as Prometheus and OpenTelemetry exporters want them: for each
 * upper bound le = 2^k units (k = 0..HIST_LE_BOUNDS - 1, units as for the log2 rows),
 * how many values lie below it, and the count and sum of all values (the +Inf bucket
 * is the count). The bounds are always the same, so a series keeps its buckets from
 * one read to the next. A value exactly at a bound counts in the next bucket: slots
 * end below their upper bound, and values are kept 2^unit_shift times finer than
 * the bounds, so this only moves values that equal the bound at that resolution.
 */
/* 1 unit, then the upper end of every log2 row but the last. */
#define HIST_LE_BOUNDS(unit_shift) HIST_LOG2_ROWS(unit_shift)
struct hist_cumulative {
	uint64_t count; /* every value: the +Inf bucket */
	double sum;	/* in units */
	__u32 nr;	/* bounds */
	struct {
		double le;	/* upper bound, in units */
		uint64_t count; /* values below le */
	} buckets[HIST_MAX_MSB + 1];
};
/*
 * Fills @out from @h, a histogram of @nr slots of 2^@sub_bits sub-buckets whose unit
 * is 2^@unit_shift of its values. Returns 0 or -EINVAL (@unit_shift above
 * HIST_MAX_MSB).
 */
int hist_cumulative_of(const struct hist_head *h, __u32 nr, __u32 sub_bits, __u32 unit_shift,
		       struct hist_cumulative *out);
#endif

#endif
