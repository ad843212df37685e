// SPDX-License-Identifier: GPL-2.0
/* Human-readable sizes and durations: boundaries and rounding. */
#include "testutil.h"
#include "units.h"

static void test_bytes(void **state)
{
	char b[UNITS_BUF];

	assert_string_equal(fmt_bytes(0, b, sizeof(b)), "0");
	assert_string_equal(fmt_bytes(1023, b, sizeof(b)), "1023");
	assert_string_equal(fmt_bytes(1024, b, sizeof(b)), "1.0K");
	assert_string_equal(fmt_bytes(1536, b, sizeof(b)), "1.5K");
	assert_string_equal(fmt_bytes(10 * 1024, b, sizeof(b)), "10K");
	assert_string_equal(fmt_bytes(8 << 20, b, sizeof(b)), "8.0M");
	assert_string_equal(fmt_bytes(123ULL << 20, b, sizeof(b)), "123M");
	/* Rounding to 1024 of a unit moves to the next unit. */
	assert_string_equal(fmt_bytes((1ULL << 20) - 1, b, sizeof(b)), "1.0M");
	assert_string_equal(fmt_bytes(3ULL << 40, b, sizeof(b)), "3.0T");
	assert_string_equal(fmt_bytes(UINT64_MAX, b, sizeof(b)), "16E");
}

static void test_rate(void **state)
{
	char b[UNITS_BUF];

	assert_string_equal(fmt_rate(8 << 20, 2.0, b, sizeof(b)), "4.0M");
	assert_string_equal(fmt_rate(100, 0, b, sizeof(b)), "0");
}

static void test_ns(void **state)
{
	char b[UNITS_BUF];

	assert_string_equal(fmt_ns(0, b, sizeof(b)), "0ns");
	assert_string_equal(fmt_ns(850, b, sizeof(b)), "850ns");
	assert_string_equal(fmt_ns(1500, b, sizeof(b)), "1.5us");
	assert_string_equal(fmt_ns(120000, b, sizeof(b)), "120us");
	assert_string_equal(fmt_ns(999600, b, sizeof(b)), "1.0ms");
	assert_string_equal(fmt_ns(100000000, b, sizeof(b)), "100ms");
	assert_string_equal(fmt_ns(2500000000ULL, b, sizeof(b)), "2.5s");
	assert_string_equal(fmt_ns(95000000000ULL, b, sizeof(b)), "95s");
}

static void test_scan_decimal(void **state)
{
	double v = -1;

	assert_int_equal(scan_decimal("12", &v), 2);
	assert_near(v, 12, 0);
	assert_int_equal(scan_decimal("0.25s", &v), 4);
	assert_near(v, 0.25, 1e-12);
	assert_int_equal(scan_decimal(".5", &v), 2);
	assert_near(v, 0.5, 1e-12);
	/* Only the decimal part is read: the rest is left for the caller to refuse. */
	assert_int_equal(scan_decimal("0x10", &v), 1);
	assert_near(v, 0, 0);
	assert_int_equal(scan_decimal("1e5", &v), 1);
	assert_near(v, 1, 0);
	assert_int_equal(scan_decimal("nan", &v), 0);
	assert_int_equal(scan_decimal("inf", &v), 0);
	assert_int_equal(scan_decimal("-1", &v), 0);
	assert_int_equal(scan_decimal(".", &v), 0);
	assert_int_equal(scan_decimal("", &v), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_ns),
		cmocka_unit_test(test_scan_decimal),
	};

	return cmocka_run_group_tests_name("units", tests, NULL, NULL);
}
