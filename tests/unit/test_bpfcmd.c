// SPDX-License-Identifier: GPL-2.0
/* The main loop of the BPF command life cycle: when ticks come, and when the run ends. */
#include <errno.h>
#include <stdio.h>
#include <time.h>

/* Before cmocka.h, whose fail() macro would rename our fail(). */
#include "args.h"
#include "bpfcmd.h"
#include "err.h"
#include "testutil.h"

#define MS 1000000ULL

struct ticks {
	int nr, last_at, stopped_at; /* tick numbers (1-based), 0: none */
	int housekeeps;
	double seconds[8];
	int stop_after; /* request a stop in this tick (0: never) */
	int fail_at;	/* return an error from this tick (0: never) */
};

static int on_tick(void *arg, const struct bpfcmd_tick *t)
{
	struct ticks *k = arg;

	k->nr++;
	if (k->nr <= 8)
		k->seconds[k->nr - 1] = t->seconds;
	if (t->last && !k->last_at)
		k->last_at = k->nr;
	if (t->stopped && !k->stopped_at)
		k->stopped_at = k->nr;
	if (k->stop_after == k->nr)
		stop_requested = 1;
	return k->fail_at == k->nr ? -EIO : 0;
}

static void on_housekeep(void *arg)
{
	((struct ticks *)arg)->housekeeps++;
}

static int run(struct ticks *k, struct bpfcmd_loop l)
{
	struct bpfcmd c = {.name = "test"};

	stop_requested = 0;
	l.tick = on_tick;
	l.arg = k;
	return bpfcmd_run(&c, &l);
}

static void test_interval_count(void **state)
{
	struct ticks k = {};
	uint64_t start = now_ns(CLOCK_MONOTONIC);

	assert_int_equal(
		run(&k,
		    (struct bpfcmd_loop){.interval_ns = 20 * MS, .count = 3, .tick_at_end = true}),
		0);
	assert_int_equal(k.nr, 3);
	assert_int_equal(k.last_at, 3);
	assert_int_equal(k.stopped_at, 0);
	assert_true(now_ns(CLOCK_MONOTONIC) - start >= 60 * MS);
	assert_true(k.seconds[1] >= 0.015 && k.seconds[1] < 1);
}

/* Without an interval: one tick, the last, when the duration ends. */
static void test_one_shot(void **state)
{
	struct ticks k = {};

	assert_int_equal(run(&k, (struct bpfcmd_loop){.duration_ns = 30 * MS,
						      .tick_at_end = true,
						      .max_wait_ms = 5,
						      .housekeeping_ns = 10 * MS,
						      .housekeep = on_housekeep}),
			 0);
	assert_int_equal(k.nr, 1);
	assert_int_equal(k.last_at, 1);
	assert_true(k.seconds[0] >= 0.029);
	/* At the start and every 10 ms of the 30. */
	assert_true(k.housekeeps >= 3);
}

/* A stop ends the run: with a last tick that says so, or none (the caller reports). */
static void test_stop(void **state)
{
	struct ticks k = {.stop_after = 2};

	assert_int_equal(run(&k, (struct bpfcmd_loop){.interval_ns = 10 * MS, .tick_at_end = true}),
			 0);
	assert_int_equal(k.nr, 3);
	assert_int_equal(k.stopped_at, 3);
	assert_int_equal(k.last_at, 3);

	k = (struct ticks){.stop_after = 2};
	assert_int_equal(run(&k, (struct bpfcmd_loop){.interval_ns = 10 * MS}), 0);
	assert_int_equal(k.nr, 2);
	assert_int_equal(k.stopped_at, 0);

	/* A duration ends a run with an interval too. */
	k = (struct ticks){};
	assert_int_equal(
		run(&k, (struct bpfcmd_loop){.interval_ns = 20 * MS, .duration_ns = 50 * MS}), 0);
	assert_int_equal(k.nr, 2);
	stop_requested = 0;
}

static void test_tick_error(void **state)
{
	struct ticks k = {.fail_at = 2};

	assert_int_equal(run(&k, (struct bpfcmd_loop){.interval_ns = 5 * MS, .count = 5}), -EIO);
	assert_int_equal(k.nr, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_count),
		cmocka_unit_test(test_one_shot),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_tick_error),
	};

	return cmocka_run_group_tests_name("bpfcmd", tests, NULL, NULL);
}
