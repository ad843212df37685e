// SPDX-License-Identifier: GPL-2.0
/* Strict numbers, durations and the [interval [count]] positionals. */
#include <errno.h>
#include <stdio.h>
#include <time.h>

/* Before cmocka.h, whose fail() macro would rename our fail(). */
#include "args.h"
#include "err.h"
#include "testutil.h"

static void test_parse_u64(void **state)
{
	uint64_t v = 7;

	assert_int_equal(parse_u64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(parse_u64("18446744073709551616", &v), -EINVAL);
	assert_int_equal(parse_u64("-1", &v), -EINVAL);
	assert_int_equal(parse_u64("+1", &v), -EINVAL);
	assert_int_equal(parse_u64(" 1", &v), -EINVAL);
	assert_int_equal(parse_u64("12a", &v), -EINVAL);
	assert_int_equal(parse_u64("", &v), -EINVAL);
	assert_int_equal(parse_u64(NULL, &v), -EINVAL);
	assert_int_equal(parse_u64_range("5", 1, 10, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(parse_u64_range("0", 1, 10, &v), -EINVAL);
	assert_int_equal(parse_u64_range("11", 1, 10, &v), -EINVAL);
}

static void test_parse_duration(void **state)
{
	uint64_t ns;

	assert_int_equal(parse_duration_ns("1", 1000000000ULL, &ns), 0);
	assert_int_equal(ns, 1000000000ULL);
	assert_int_equal(parse_duration_ns("0.5", 1000000000ULL, &ns), 0);
	assert_int_equal(ns, 500000000ULL);
	assert_int_equal(parse_duration_ns("250ms", 1000000000ULL, &ns), 0);
	assert_int_equal(ns, 250000000ULL);
	assert_int_equal(parse_duration_ns("10", 1000000ULL, &ns), 0); /* bare ms */
	assert_int_equal(ns, 10000000ULL);
	assert_int_equal(parse_duration_ns("1.5s", 1, &ns), 0);
	assert_int_equal(ns, 1500000000ULL);
	assert_int_equal(parse_duration_ns("2m", 1, &ns), 0);
	assert_int_equal(ns, 120000000000ULL);
	assert_int_equal(parse_duration_ns("1h", 1, &ns), 0);
	assert_int_equal(ns, 3600000000000ULL);
	assert_int_equal(parse_duration_ns("10us", 1, &ns), 0);
	assert_int_equal(ns, 10000ULL);
	assert_int_equal(parse_duration_ns("7ns", 1, &ns), 0);
	assert_int_equal(ns, 7ULL);
	assert_int_equal(parse_duration_ns("0", 1, &ns), 0);
	assert_int_equal(ns, 0);

	assert_int_equal(parse_duration_ns("abc", 1, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("-1", 1, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("1x", 1, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("1 s", 1, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("ms", 1, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("", 1, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("inf", 1, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("1e30", 1000000000ULL, &ns), -EINVAL);
	/* Decimal only, as sysstat: strtod's hex, exponents and words are refused. */
	assert_int_equal(parse_duration_ns("0x10", 1000000000ULL, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("1e-9", 1000000000ULL, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("1E3", 1000000000ULL, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("nan", 1000000000ULL, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("+1", 1000000000ULL, &ns), -EINVAL);
	assert_int_equal(parse_duration_ns(".5s", 1, &ns), 0);
	assert_int_equal(ns, 500000000ULL);
}

static void test_period_and_threshold(void **state)
{
	uint64_t ns;

	/* Intervals and durations: at least 1 ms, whatever the unit. */
	assert_int_equal(args_period("--duration", "1ms", &ns), 0);
	assert_int_equal(ns, 1000000ULL);
	assert_int_equal(args_period("--duration", "0.001", &ns), 0);
	assert_int_equal(args_period("--duration", "999us", &ns), -EINVAL);
	assert_int_equal(args_period("--duration", "1ns", &ns), -EINVAL);
	assert_int_equal(args_period("--duration", "0", &ns), -EINVAL);
	/* Thresholds may be anything from 0. */
	assert_int_equal(args_threshold("-t", "0", &ns), 0);
	assert_int_equal(ns, 0);
	assert_int_equal(args_threshold("-t", "1.5", &ns), 0);
	assert_int_equal(ns, 1500000ULL);
	assert_int_equal(args_threshold("-t", "0x5", &ns), -EINVAL);
}

static void test_duration_in_and_buffer_size(void **state)
{
	uint64_t v = 7;

	/* Both ends are in the range; outside it nothing is written. */
	assert_int_equal(args_duration_in("", "--interval", "10ms", 10000000, 3600000000000ULL,
					  "from 10ms to 1h", &v),
			 0);
	assert_int_equal(v, 10000000);
	assert_int_equal(args_duration_in("", "--interval", "1h", 10000000, 3600000000000ULL,
					  "from 10ms to 1h", &v),
			 0);
	assert_int_equal(v, 3600000000000ULL);
	v = 7;
	assert_int_equal(args_duration_in("", "--interval", "9ms", 10000000, 3600000000000ULL,
					  "from 10ms to 1h", &v),
			 -EINVAL);
	assert_int_equal(args_duration_in("", "--interval", "61m", 10000000, 3600000000000ULL,
					  "from 10ms to 1h", &v),
			 -EINVAL);
	assert_int_equal(v, 7);
	/* Ring buffers: 1 MiB to 1 GiB, rounded up to a power of two. */
	assert_int_equal(args_buffer_size("1", &v), 0);
	assert_int_equal(v, 1ULL << 20);
	assert_int_equal(args_buffer_size("3M", &v), 0);
	assert_int_equal(v, 4ULL << 20);
	assert_int_equal(args_buffer_size("1G", &v), 0);
	assert_int_equal(v, 1ULL << 30);
	assert_int_equal(args_buffer_size("1023K", &v), -EINVAL);
	assert_int_equal(args_buffer_size("1025M", &v), -EINVAL);
	assert_int_equal(args_buffer_size("64X", &v), -EINVAL);
}

/* A shared option parser as the target filter's: takes 'p', nothing else. */
static int take_p(const char *cmd, int opt, const char *arg, void *ctx)
{
	if (opt != 'p')
		return 1;
	if (!*arg)
		return -EINVAL;
	*(const char **)ctx = arg;
	return 0;
}

static void test_args_next(void **state)
{
	static const struct option long_opts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"size", required_argument, NULL, 's'},
		COMMON_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	const char *pid = NULL;
	const struct args_spec spec = {
		.cmd = "t",
		.usage = "",
		.short_opts = ":p:s:" COMMON_SHORT_OPTS,
		.long_opts = long_opts,
		.shared = take_p,
		.ctx = &pid,
		.options_only = true,
	};
	char *ok[] = {"t", "-v", "--pid", "12", "-s", "4", NULL};
	char *extra[] = {"t", "-s", "4", "x", NULL};
	char *unknown[] = {"t", "--bogus", NULL};
	char *bad_shared[] = {"t", "--pid=", NULL};
	char *help[] = {"t", "-p", "1", "--help", "-s", "4", NULL};

	/* Common and shared options are taken; the command's own come back in order. */
	optind = 0;
	assert_int_equal(args_next(&spec, 6, ok), 's');
	assert_string_equal(optarg, "4");
	assert_true(gopts.verbose);
	assert_string_equal(pid, "12");
	assert_int_equal(args_next(&spec, 6, ok), 0);
	/* An argument after the options, an unknown option, a shared one refused. */
	optind = 0;
	assert_int_equal(args_next(&spec, 4, extra), 's');
	assert_int_equal(args_next(&spec, 4, extra), -EINVAL);
	optind = 0;
	assert_int_equal(args_next(&spec, 2, unknown), -EINVAL);
	optind = 0;
	assert_int_equal(args_next(&spec, 2, bad_shared), -EINVAL);
	/* --help stops the parse at once. */
	optind = 0;
	assert_int_equal(args_next(&spec, 6, help), ARGS_HELP);
}

static void test_parse_size(void **state)
{
	uint64_t b;

	assert_int_equal(parse_size_bytes("64", 1ULL << 20, &b), 0); /* bare MiB */
	assert_int_equal(b, 64ULL << 20);
	assert_int_equal(parse_size_bytes("512K", 1, &b), 0);
	assert_int_equal(b, 512ULL << 10);
	assert_int_equal(parse_size_bytes("16M", 1, &b), 0);
	assert_int_equal(b, 16ULL << 20);
	assert_int_equal(parse_size_bytes("1GiB", 1, &b), 0);
	assert_int_equal(b, 1ULL << 30);
	assert_int_equal(parse_size_bytes("0", 1, &b), 0);
	assert_int_equal(b, 0);

	assert_int_equal(parse_size_bytes("", 1, &b), -EINVAL);
	assert_int_equal(parse_size_bytes("M", 1, &b), -EINVAL);
	assert_int_equal(parse_size_bytes("-1M", 1, &b), -EINVAL);
	assert_int_equal(parse_size_bytes("1.5M", 1, &b), -EINVAL);
	assert_int_equal(parse_size_bytes("1T", 1, &b), -EINVAL);
	assert_int_equal(parse_size_bytes("99999999999999999G", 1, &b), -EINVAL);
}

static void test_interval_count(void **state)
{
	uint64_t interval = 0, count = 0;
	char *ok[] = { "2", "5" };
	char *half[] = { "500ms" };
	char *zero[] = { "0" };
	char *bad[] = { "abc" };
	char *zero_count[] = { "1", "0" };
	char *too_many[] = { "1", "2", "3" };

	assert_int_equal(parse_interval_count(2, ok, &interval, &count), 0);
	assert_int_equal(interval, 2000000000ULL);
	assert_int_equal(count, 5);
	count = 0;
	assert_int_equal(parse_interval_count(1, half, &interval, &count), 0);
	assert_int_equal(interval, 500000000ULL);
	assert_int_equal(count, 0);
	assert_int_equal(parse_interval_count(0, NULL, &interval, &count), 0);

	/* The rejections report a usage error (on stderr) and return -EINVAL. */
	assert_int_equal(parse_interval_count(1, zero, &interval, &count), -EINVAL);
	assert_int_equal(parse_interval_count(1, bad, &interval, &count), -EINVAL);
	assert_int_equal(parse_interval_count(2, zero_count, &interval, &count), -EINVAL);
	assert_int_equal(parse_interval_count(3, too_many, &interval, &count), -EINVAL);
	assert_int_equal(err_exit_code(-EINVAL), EXIT_USAGE);
}

/*
 * The offset lies where one realtime read between two monotonic ones puts it, and two
 * estimates agree: each is off by half its tightest bracket at most (ns on an idle
 * machine; 1 ms allowed for a loaded one whose every try was preempted).
 */
static void test_mono_to_real(void **state)
{
	const int64_t ms = 1000000;
	int64_t off, again;
	uint64_t m0, r, m1;

	m0 = now_ns(CLOCK_MONOTONIC);
	r = now_ns(CLOCK_REALTIME);
	m1 = now_ns(CLOCK_MONOTONIC);
	off = mono_to_real_ns();
	again = mono_to_real_ns();
	assert_true(off >= (int64_t)(r - m1) - ms && off <= (int64_t)(r - m0) + ms);
	assert_true(again - off < ms && off - again < ms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_interval_count),
		cmocka_unit_test(test_period_and_threshold),
		cmocka_unit_test(test_duration_in_and_buffer_size),
		cmocka_unit_test(test_args_next),
		cmocka_unit_test(test_mono_to_real),
	};

	return cmocka_run_group_tests_name("args", tests, NULL, NULL);
}
