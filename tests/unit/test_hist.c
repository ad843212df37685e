// SPDX-License-Identifier: GPL-2.0
/*
 * Log-linear histograms: bucket boundaries, percentile accuracy, deltas, log2 bars and
 * cumulative buckets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "hist.h"

static void test_slots(void **state)
{
	__u64 v;

	/* Exact below HIST_SUB, then four buckets per power of two. */
	assert_int_equal(hist_slot(0), 0);
	assert_int_equal(hist_slot(3), 3);
	assert_int_equal(hist_slot(4), 4);
	assert_int_equal(hist_slot(7), 7);
	assert_int_equal(hist_slot(8), 8);
	assert_int_equal(hist_slot(9), 8);
	assert_int_equal(hist_slot(10), 9);
	assert_int_equal(hist_slot(15), 11);
	assert_int_equal(hist_slot(16), 12);
	assert_int_equal(hist_slot(~0ULL), HIST_SLOTS - 1);
	assert_int_equal(hist_slot_low(12), 16);
	assert_int_equal(hist_slot_low(13), 20);

	/* Every value lies in [low(slot), low(slot + 1)) and buckets are at most 25% wide. */
	for (v = 1; v < (1ULL << 40); v = v * 3 / 2 + 1) {
		__u32 s = hist_slot(v);

		assert_true(hist_slot_low(s) <= v);
		assert_true(v < hist_slot_low(s + 1));
		if (v >= HIST_SUB)
			assert_true(hist_slot_low(s + 1) - hist_slot_low(s) <=
				    hist_slot_low(s) / 4 + 1);
	}
	for (v = 1; v < 4096; v++)
		assert_true(hist_msb(v) == (__u32)(63 - __builtin_clzll(v)));
}

/* The branch-free msb against the compiler's, on every bit position and random values. */
static void test_msb(void **state)
{
	__u64 x = 0x9e3779b97f4a7c15ULL, v;
	int k, i;

	for (k = 0; k < 64; k++) {
		v = 1ULL << k;
		assert_int_equal(hist_msb(v), k);
		assert_int_equal(hist_msb(v | (v - 1)), k);
		assert_int_equal(hist_msb(v | 1), k);
	}
	for (i = 0; i < 100000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		v = x >> (i % 64);
		if (v)
			assert_int_equal(hist_msb(v), 63 - __builtin_clzll(v));
	}
}

static void test_percentiles(void **state)
{
	struct hist *h = calloc(1, sizeof(*h));
	__u64 i;

	assert_near(hist_percentile(h, 50), 0, 0);
	/* 1..1000 us in ns: p50 = 500 us, p99 = 990 us, mean 500.5 us. */
	for (i = 1; i <= 1000; i++)
		hist_add(h, i * 1000);
	assert_int_equal(h->count, 1000);
	assert_int_equal(h->max, 1000000);
	assert_near(hist_mean(h), 500500, 1e-6);
	assert_near(hist_percentile(h, 50), 500000, 500000 * 0.12);
	assert_near(hist_percentile(h, 99), 990000, 990000 * 0.12);
	/* Never above the largest value seen. */
	assert_true(hist_percentile(h, 100) <= 1000000);
	assert_true(hist_percentile(h, 100) >= 1000000 * 0.88);
	free(h);
}

static void test_exact_and_merge(void **state)
{
	struct hist *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));

	hist_add(a, 2);
	hist_add(a, 2);
	hist_add(b, 3);
	hist_merge(a, b);
	assert_int_equal(a->count, 3);
	assert_int_equal(a->sum, 7);
	assert_int_equal(a->max, 3);
	assert_near(hist_percentile(a, 50), 2, 0);
	assert_near(hist_percentile(a, 100), 3, 0);
	free(a);
	free(b);
}

/*
 * 16 sub-buckets (iospan lat): every bucket is within one power of two and at most
 * 1/16 of its low bound wide, so a percentile is within 1/16 of the true value.
 */
static void test_fine(void **state)
{
	const __u32 bits = 4, nr = HIST_SLOTS_OF(4);
	__u32 *slots = calloc(nr, sizeof(*slots)), s;
	__u64 v, low, high, max = 0;
	double p, truth;
	int i;

	assert_non_null(slots);
	assert_int_equal(nr, (HIST_MAX_MSB - 4 + 2) * 16);
	assert_int_equal(hist_slot_of(15, bits), 15);
	assert_int_equal(hist_slot_of(16, bits), 16);
	assert_int_equal(hist_slot_of(17, bits), 17);
	assert_int_equal(hist_slot_of(32, bits), 32);
	assert_int_equal(hist_slot_of(34, bits), 33);
	for (v = 16; v < (1ULL << 40); v = v * 5 / 4 + 1) {
		s = hist_slot_of(v, bits);
		low = hist_slot_low_of(s, bits);
		high = hist_slot_low_of(s + 1, bits);
		assert_true(low <= v && v < high);
		assert_true((high - low) * 16 <= low);
		assert_int_equal(hist_msb(low), hist_msb(high - 1));
	}
	/* 1000 values spread from 1000 to 100000: percentiles within 6.25%. */
	for (i = 0; i < 1000; i++) {
		v = 1000 + (__u64)i * 99;
		slots[hist_slot_of(v, bits)]++;
		max = v;
	}
	for (i = 1; i <= 999; i += 7) {
		truth = 1000 + (i / 1000.0 * 1000 - 1) * 99;
		p = hist_percentile_of(slots, nr, bits, max, i / 10.0);
		assert_true(p > truth * (1 - 1 / 16.0) - 99 && p < truth * (1 + 1 / 16.0) + 99);
	}
	free(slots);
}

/* What came in between two reads: slot by slot, count and sum; max is the later one's. */
static void test_delta(void **state)
{
	struct hist *prev = calloc(1, sizeof(*prev)), *cur = calloc(1, sizeof(*cur));
	struct hist *out = calloc(1, sizeof(*out)), *want = calloc(1, sizeof(*want));
	__u64 v;

	for (v = 1; v <= 500; v++)
		hist_add(prev, v * 37);
	*cur = *prev;
	for (v = 1; v <= 300; v++) {
		hist_add(cur, v * 101);
		hist_add(want, v * 101);
	}
	hist_delta(out, cur, prev);
	assert_int_equal(out->count, 300);
	assert_int_equal(out->sum, want->sum);
	assert_int_equal(out->max, cur->max);
	assert_memory_equal(out->slots, want->slots, sizeof(want->slots));
	/* In place (iospan lat subtracts into the histogram it read). */
	hist_delta_of(&cur->head, &cur->head, &prev->head, HIST_SLOTS);
	assert_memory_equal(cur, out, sizeof(*out));
	/* Nothing new: an empty delta. */
	hist_delta(out, prev, prev);
	assert_int_equal(out->count, 0);
	assert_int_equal(out->sum, 0);
	for (v = 0; v < HIST_SLOTS; v++)
		assert_int_equal(out->slots[v], 0);
	free(prev);
	free(cur);
	free(out);
	free(want);
}

/* A histogram like iospan lat's: 32 sub-buckets, values in 1/1024 of the unit. */
struct fine_hist {
	HIST_HEAD;
	__u32 slots[HIST_SLOTS_OF(5)];
};

static void fine_add(struct fine_hist *h, __u64 v, __u32 times)
{
	h->slots[hist_slot_of(v, 5)] += times;
	h->count += times;
	h->sum += v * times;
	if (v > h->max)
		h->max = v;
}

/* biolatency's layout, byte for byte: 0.5 us once, 1.5 us three times, 5 us eight times. */
static void test_log2_bars(void **state)
{
	static const char want[] =
		"     usecs               : count    distribution\n"
		"         0 -> 1          : 4        |********************                    |\n"
		"         2 -> 3          : 0        |                                        |\n"
		"         4 -> 7          : 8        |****************************************|\n";
	struct fine_hist *h = calloc(1, sizeof(*h));
	uint64_t rows[HIST_LOG2_ROWS(10)];
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	__u32 nr;

	assert_int_equal(hist_log2_rows(h->slots, HIST_SLOTS_OF(5), 5, 10, rows), 0);
	fine_add(h, 512, 1);
	fine_add(h, 1536, 3);
	fine_add(h, 5120, 8);
	nr = hist_log2_rows(h->slots, HIST_SLOTS_OF(5), 5, 10, rows);
	assert_int_equal(nr, 3);
	assert_int_equal(rows[0], 4);
	assert_int_equal(rows[1], 0);
	assert_int_equal(rows[2], 8);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	hist_log2_print(f, rows, nr, "usecs");
	fclose(f);
	assert_string_equal(text, want);
	free(text);
	/* Beyond 2^HIST_MAX_MSB: the last row. */
	fine_add(h, 1ULL << 60, 1);
	nr = hist_log2_rows(h->slots, HIST_SLOTS_OF(5), 5, 10, rows);
	assert_int_equal(nr, HIST_LOG2_ROWS(10));
	assert_int_equal(rows[nr - 1], 1);
	free(h);
}

static void test_cumulative(void **state)
{
	struct fine_hist *h = calloc(1, sizeof(*h));
	struct hist *ns = calloc(1, sizeof(*ns));
	struct hist_cumulative c;
	__u32 k;

	fine_add(h, 512, 1);	    /* 0.5 units */
	fine_add(h, 1536, 3);	    /* 1.5 */
	fine_add(h, 2048, 2);	    /* exactly 2: below le 4, not le 2 */
	fine_add(h, 5120, 8);	    /* 5 */
	fine_add(h, 1ULL << 60, 1); /* beyond every finite bound: +Inf only */
	assert_int_equal(hist_cumulative_of(&h->head, HIST_SLOTS_OF(5), 5, 10, &c), 0);
	assert_int_equal(c.count, 15);
	assert_near(c.sum, (512 + 3 * 1536 + 2 * 2048 + 8 * 5120 + (double)(1ULL << 60)) / 1024,
		    1e-3);
	assert_int_equal(c.nr, HIST_MAX_MSB - 10 + 1);
	for (k = 0; k < c.nr; k++)
		assert_near(c.buckets[k].le, (double)(1ULL << k), 0);
	assert_int_equal(c.buckets[0].count, 1);
	assert_int_equal(c.buckets[1].count, 4);
	assert_int_equal(c.buckets[2].count, 6);
	assert_int_equal(c.buckets[3].count, 14);
	/* Cumulative: never decreasing, and the overflow value in no finite bucket. */
	for (k = 4; k < c.nr; k++)
		assert_int_equal(c.buckets[k].count, 14);

	/* Unit = value (trace's ns histograms): exact small buckets. */
	hist_add(ns, 0);
	hist_add(ns, 1);
	hist_add(ns, 3);
	hist_add(ns, 1000);
	assert_int_equal(hist_cumulative_of(&ns->head, HIST_SLOTS, HIST_SUB_BITS, 0, &c), 0);
	assert_int_equal(c.nr, HIST_MAX_MSB + 1);
	assert_int_equal(c.buckets[0].count, 1);  /* < 1 */
	assert_int_equal(c.buckets[1].count, 2);  /* < 2 */
	assert_int_equal(c.buckets[2].count, 3);  /* < 4 */
	assert_int_equal(c.buckets[9].count, 3);  /* < 512 */
	assert_int_equal(c.buckets[10].count, 4); /* < 1024 */
	assert_near(c.sum, 1004, 0);
	assert_int_equal(
		hist_cumulative_of(&ns->head, HIST_SLOTS, HIST_SUB_BITS, HIST_MAX_MSB + 1, &c),
		-EINVAL);
	free(h);
	free(ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots),	    cmocka_unit_test(test_msb),
		cmocka_unit_test(test_percentiles), cmocka_unit_test(test_exact_and_merge),
		cmocka_unit_test(test_fine),	    cmocka_unit_test(test_delta),
		cmocka_unit_test(test_log2_bars),   cmocka_unit_test(test_cumulative),
	};

	return cmocka_run_group_tests_name("hist", tests, NULL, NULL);
}
