// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "hist.h"

/* hist_slots() finds the slots right after the head. */
_Static_assert(offsetof(struct hist, slots) == sizeof(struct hist_head), "slots follow the head");

/* Bars of biolatency's width, scaled so that the largest row fills them. */
#define HIST_BAR_WIDTH 40

void hist_add(struct hist *h, __u64 v)
{
	h->slots[hist_slot(v)]++;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

void hist_merge_of(struct hist_head *dst, const struct hist_head *src, __u32 nr)
{
	const __u32 *from = hist_slots_const(src);
	__u32 *to = hist_slots(dst), i;

	for (i = 0; i < nr; i++)
		to[i] += from[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
}

void hist_delta_of(struct hist_head *out, const struct hist_head *cur, const struct hist_head *prev,
		   __u32 nr)
{
	const __u32 *c = hist_slots_const(cur), *p = hist_slots_const(prev);
	__u32 *o = hist_slots(out), i;

	for (i = 0; i < nr; i++)
		o[i] = c[i] - p[i];
	out->count = cur->count - prev->count;
	out->sum = cur->sum - prev->sum;
	out->max = cur->max;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / h->count : 0.0;
}

double hist_percentile(const struct hist *h, double pct)
{
	return hist_percentile_of(h->slots, HIST_SLOTS, HIST_SUB_BITS, h->max, pct);
}

double hist_percentile_of(const __u32 *slots, __u32 nr, __u32 sub_bits, __u64 max, double pct)
{
	__u64 total = 0, seen = 0, rank;
	double low, high, frac;
	__u32 i;

	for (i = 0; i < nr; i++)
		total += slots[i];
	if (!total)
		return 0.0;
	if (pct <= 0)
		pct = 0;
	if (pct > 100)
		pct = 100;
	/* The rank-th smallest value (1-based), as "nearest rank" defines it. */
	rank = (__u64)(pct / 100.0 * total + 0.999999);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < nr; i++) {
		if (!slots[i] || seen + slots[i] < rank) {
			seen += slots[i];
			continue;
		}
		low = hist_slot_low_of(i, sub_bits);
		high = i + 1 < nr ? hist_slot_low_of(i + 1, sub_bits) : low * 2;
		/* Exact buckets, and never beyond the largest value seen. */
		if (i < (1U << sub_bits))
			return low;
		if (max && high > max + 1)
			high = max + 1;
		if (high < low)
			high = low;
		/* Values spread evenly in the bucket: the k-th of n sits at (k - 1/2) / n. */
		frac = ((double)(rank - seen) - 0.5) / slots[i];
		return low + (high - low) * frac;
	}
	return max;
}

__u32 hist_log2_rows(const __u32 *slots, __u32 nr, __u32 sub_bits, __u32 unit_shift, uint64_t *rows)
{
	__u32 nr_rows = HIST_LOG2_ROWS(unit_shift), used = 0, s, msb, r;
	__u64 low;

	memset(rows, 0, nr_rows * sizeof(*rows));
	for (s = 0; s < nr; s++) {
		if (!slots[s])
			continue;
		low = hist_slot_low_of(s, sub_bits);
		msb = low ? hist_msb(low) : 0;
		/* Whole units below 2 are row 0 ("0 -> 1"). */
		r = msb <= unit_shift ? 0 : msb - unit_shift;
		if (r >= nr_rows)
			r = nr_rows - 1;
		rows[r] += slots[s];
		if (r + 1 > used)
			used = r + 1;
	}
	return used;
}

void hist_log2_print(FILE *out, const uint64_t *rows, __u32 nr, const char *unit)
{
	/* Wider columns once the bounds pass 2^32, as biolatency's. */
	int wide = nr > 33, width = wide ? 20 : 10, stars, i;
	char bar[HIST_BAR_WIDTH + 1];
	uint64_t top = 0;
	__u32 r;

	for (r = 0; r < nr; r++)
		if (rows[r] > top)
			top = rows[r];
	fprintf(out, "%*s%-*s : count    distribution\n", wide ? 15 : 5, "", wide ? 29 : 19, unit);
	for (r = 0; r < nr; r++) {
		stars = top ? (int)(rows[r] * HIST_BAR_WIDTH / top) : 0;
		for (i = 0; i < HIST_BAR_WIDTH; i++)
			bar[i] = i < stars ? '*' : ' ';
		bar[HIST_BAR_WIDTH] = 0;
		fprintf(out, "%*" PRIu64 " -> %-*" PRIu64 " : %-8" PRIu64 " |%s|\n", width,
			(uint64_t)(r ? 1ULL << r : 0), width, (uint64_t)((2ULL << r) - 1), rows[r],
			bar);
	}
}

int hist_cumulative_of(const struct hist_head *h, __u32 nr, __u32 sub_bits, __u32 unit_shift,
		       struct hist_cumulative *out)
{
	const __u32 *slots = hist_slots_const(h);
	uint64_t below = 0;
	__u32 k, s = 0, end;

	if (unit_shift > HIST_MAX_MSB)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->count = h->count;
	out->sum = (double)h->sum / (double)(1ULL << unit_shift);
	out->nr = HIST_LE_BOUNDS(unit_shift);
	for (k = 0; k < out->nr; k++) {
		/* Powers of two are slot boundaries: the slots below 2^k units end there. */
		end = hist_slot_of(1ULL << (k + unit_shift), sub_bits);
		for (; s < end && s < nr; s++)
			below += slots[s];
		out->buckets[k].le = (double)(1ULL << k);
		out->buckets[k].count = below;
	}
	return 0;
}
