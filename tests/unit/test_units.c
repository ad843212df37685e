// SPDX-License-Identifier: GPL-2.0
/* Human-readable sizes and durations: boundaries and rounding. */
#include <stdio.h>
#include <string.h>

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
	/* Ties: printf rounds the double nearest (1.25 is one: to even; 1.35 is not). */
	assert_string_equal(fmt_ns(1250, b, sizeof(b)), "1.2us");
	assert_string_equal(fmt_ns(1350, b, sizeof(b)), "1.4us");
	assert_string_equal(fmt_ns(10500, b, sizeof(b)), "10us");
	assert_string_equal(fmt_ns(9950, b, sizeof(b)), "10us");
}

/* fmt_ns() as it was written first, with printf: the integer one must say the same. */
static const char *fmt_ns_ref(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		double div;
		const char *unit;
	} steps[] = {{1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
	double v;
	int i;

	if (ns < 1000) {
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
		return buf;
	}
	for (i = 0; i < 3; i++) {
		v = ns / steps[i].div;
		if (i < 2 && v >= 999.5)
			continue;
		snprintf(buf, len, v < 9.95 ? "%.1f%s" : "%.0f%s", v, steps[i].unit);
		break;
	}
	return buf;
}

static void test_fmt_ns_same_as_printf(void **state)
{
	char a[UNITS_BUF], b[UNITS_BUF];
	uint64_t ns, x = 88172645463325252ULL;
	int i;

	/* Every value to 2 ms, then each unit's edges, then random ones of all sizes. */
	for (ns = 0; ns < 2000000; ns++)
		if (strcmp(fmt_ns(ns, a, sizeof(a)), fmt_ns_ref(ns, b, sizeof(b))))
			fail_msg("%llu: %s, printf %s", (unsigned long long)ns, a, b);
	for (ns = 9940000; ns < 10060000; ns++)
		if (strcmp(fmt_ns(ns, a, sizeof(a)), fmt_ns_ref(ns, b, sizeof(b))))
			fail_msg("%llu: %s, printf %s", (unsigned long long)ns, a, b);
	for (ns = 999400000; ns < 999600000; ns += 7)
		if (strcmp(fmt_ns(ns, a, sizeof(a)), fmt_ns_ref(ns, b, sizeof(b))))
			fail_msg("%llu: %s, printf %s", (unsigned long long)ns, a, b);
	for (i = 0; i < 2000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ns = x >> (i % 64);
		if (strcmp(fmt_ns(ns, a, sizeof(a)), fmt_ns_ref(ns, b, sizeof(b))))
			fail_msg("%llu: %s, printf %s", (unsigned long long)ns, a, b);
		/* fmt_ns_n() says how long, ties (printf's way) included. */
		assert_int_equal(fmt_ns_n(ns, a, sizeof(a)), strlen(a));
	}
	assert_int_equal(fmt_ns_n(1250, a, sizeof(a)), 5);
	/* Cut short as snprintf would. */
	assert_string_equal(fmt_ns(1500, a, 3), "1.");
	assert_int_equal(fmt_ns_n(1500, a, 3), 2);
	assert_int_equal(fmt_ns_n(1500, a, 0), 0);
}

/* Integers as printf's %llu writes them: every edge of two digits and 32 bits, random. */
static void test_fmt_u64_back(void **state)
{
	static const uint64_t edges[] = {0,
					 9,
					 10,
					 99,
					 100,
					 101,
					 999,
					 1000,
					 4294967295ULL,
					 4294967296ULL,
					 9999999999ULL,
					 10000000000ULL,
					 UINT64_MAX};
	char buf[UNITS_U64_DIGITS + 1], ref[32];
	uint64_t v, x = 88172645463325252ULL;
	char *s;
	size_t i;

	buf[UNITS_U64_DIGITS] = 0;
	for (i = 0; i < 2000000; i++) {
		if (i < sizeof(edges) / sizeof(edges[0])) {
			v = edges[i];
		} else {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v = x >> (i % 64);
		}
		s = fmt_u64_back(buf + UNITS_U64_DIGITS, v);
		snprintf(ref, sizeof(ref), "%llu", (unsigned long long)v);
		if (strcmp(s, ref))
			fail_msg("%s: %s", ref, s);
	}
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
		cmocka_unit_test(test_fmt_ns_same_as_printf),
		cmocka_unit_test(test_fmt_u64_back),
		cmocka_unit_test(test_scan_decimal),
	};

	return cmocka_run_group_tests_name("units", tests, NULL, NULL);
}
