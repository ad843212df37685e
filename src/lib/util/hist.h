/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user side of the log-linear histograms whose layout and slot arithmetic are
 * src/abi/hist_abi.h: sums, deltas, percentiles, log2 bars and cumulative buckets.
 */
#ifndef IOSPAN_HIST_H
#define IOSPAN_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hist_abi.h"

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
