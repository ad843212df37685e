// SPDX-License-Identifier: GPL-2.0
/* Log-linear histograms: bucket boundaries and percentile accuracy. */
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
			assert_true(hist_slot_low(s + 1) - hist_slot_low(s) <= hist_slot_low(s) / 4 + 1);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_msb),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_exact_and_merge),
		cmocka_unit_test(test_fine),
	};

	return cmocka_run_group_tests_name("hist", tests, NULL, NULL);
}
