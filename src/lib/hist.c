// SPDX-License-Identifier: GPL-2.0
#include <string.h>

#include "hist.h"

void hist_add(struct hist *h, __u64 v)
{
	h->slots[hist_slot(v)]++;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

void hist_slots_merge(__u32 *dst, const __u32 *src, __u32 nr)
{
	__u32 i;

	for (i = 0; i < nr; i++)
		dst[i] += src[i];
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	hist_slots_merge(dst->slots, src->slots, HIST_SLOTS);
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
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
