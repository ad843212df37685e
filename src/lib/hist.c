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

void hist_merge(struct hist *dst, const struct hist *src)
{
	size_t i;

	for (i = 0; i < HIST_SLOTS; i++)
		dst->slots[i] += src->slots[i];
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
	__u64 total = 0, seen = 0, rank;
	double low, high, frac;
	__u32 i;

	for (i = 0; i < HIST_SLOTS; i++)
		total += h->slots[i];
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
	for (i = 0; i < HIST_SLOTS; i++) {
		if (!h->slots[i] || seen + h->slots[i] < rank) {
			seen += h->slots[i];
			continue;
		}
		low = hist_slot_low(i);
		high = i + 1 < HIST_SLOTS ? hist_slot_low(i + 1) : low * 2;
		/* Exact buckets, and never beyond the largest value seen. */
		if (i < HIST_SUB)
			return low;
		if (h->max && high > h->max + 1)
			high = h->max + 1;
		if (high < low)
			high = low;
		/* Values spread evenly in the bucket: the k-th of n sits at (k - 1/2) / n. */
		frac = ((double)(rank - seen) - 0.5) / h->slots[i];
		return low + (high - low) * frac;
	}
	return h->max;
}
