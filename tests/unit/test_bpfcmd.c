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
	uint64_t house_ns[8]; /* when the first ones came */
	double seconds[8];
	uint64_t now_ns[8]; /* when each tick came */
	int stop_after; /* request a stop in this tick (0: never) */
	int fail_at;	/* return an error from this tick (0: never) */
};

static int on_tick(void *arg, const struct bpfcmd_tick *t)
{
	struct ticks *k = arg;

	k->nr++;
	if (k->nr <= 8) {
		k->seconds[k->nr - 1] = t->seconds;
		k->now_ns[k->nr - 1] = t->now_ns;
	}
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
	struct ticks *k = arg;

	if (k->housekeeps < 8)
		k->house_ns[k->housekeeps] = now_ns(CLOCK_MONOTONIC);
	k->housekeeps++;
}

static int run(struct ticks *k, struct bpfcmd_loop l)
{
	struct bpfcmd c = {.name = "test"};

	stop_requested = 0;
	l.tick = on_tick;
	l.arg = k;
	return bpfcmd_run(&c, &l);
}

/*
 * Ticks come on the interval's cadence, never early (a late one does not move the
 * next), and each says the window since the one before. Only what the loop promises
 * is checked: how late a tick comes is the scheduler's (a loaded machine runs it late).
 */
static void test_interval_count(void **state)
{
	struct ticks k = {};
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	int i;

	assert_int_equal(
		run(&k,
		    (struct bpfcmd_loop){.interval_ns = 20 * MS, .count = 3, .tick_at_end = true}),
		0);
	assert_int_equal(k.nr, 3);
	assert_int_equal(k.last_at, 3);
	assert_int_equal(k.stopped_at, 0);
	for (i = 0; i < 3; i++) {
		uint64_t prev = i ? k.now_ns[i - 1] : start;

		assert_true(k.now_ns[i] >= start + (i + 1) * 20 * MS);
		/* The window: since the tick before (the start for the first). */
		assert_true(k.seconds[i] >= (k.now_ns[i] - prev) / 1e9 - 1e-3 &&
			    k.seconds[i] <= (k.now_ns[i] - prev) / 1e9);
	}
}

/* Without an interval: one tick, the last, when the duration ends. */
static void test_one_shot(void **state)
{
	struct ticks k = {};
	int i;

	assert_int_equal(run(&k, (struct bpfcmd_loop){.duration_ns = 30 * MS,
						      .tick_at_end = true,
						      .max_wait_ms = 5,
						      .housekeeping_ns = 10 * MS,
						      .housekeep = on_housekeep}),
			 0);
	assert_int_equal(k.nr, 1);
	assert_int_equal(k.last_at, 1);
	assert_true(k.seconds[0] >= 0.029);
	/*
	 * At the start, then each 10 ms after the one before (how many fit in the 30 ms is
	 * the scheduler's: up to 3 after the first).
	 */
	assert_true(k.housekeeps >= 1 && k.housekeeps <= 4);
	for (i = 1; i < k.housekeeps; i++)
		assert_true(k.house_ns[i] - k.house_ns[i - 1] >= 10 * MS);
}

/* A stop ends the run: with a last tick that says so, or none (the caller reports). */
static void test_stop(void **state)
{
	struct ticks k = {.stop_after = 2};
	uint64_t start;
	int i;

	assert_int_equal(run(&k, (struct bpfcmd_loop){.interval_ns = 10 * MS, .tick_at_end = true}),
			 0);
	assert_int_equal(k.nr, 3);
	assert_int_equal(k.stopped_at, 3);
	assert_int_equal(k.last_at, 3);

	k = (struct ticks){.stop_after = 2};
	assert_int_equal(run(&k, (struct bpfcmd_loop){.interval_ns = 10 * MS}), 0);
	assert_int_equal(k.nr, 2);
	assert_int_equal(k.stopped_at, 0);

	/*
	 * A duration ends a run with an interval too, at its end: the ticks due before it
	 * came on their cadence (at 20 and 40 ms, as the process ran: fewer on a loaded
	 * machine that ran it late), none after it.
	 */
	k = (struct ticks){};
	start = now_ns(CLOCK_MONOTONIC);
	assert_int_equal(
		run(&k, (struct bpfcmd_loop){.interval_ns = 20 * MS, .duration_ns = 50 * MS}), 0);
	assert_true(now_ns(CLOCK_MONOTONIC) >= start + 50 * MS);
	assert_true(k.nr <= 2);
	for (i = 0; i < k.nr; i++)
		assert_true(k.now_ns[i] >= start + (i + 1) * 20 * MS &&
			    k.now_ns[i] < start + 50 * MS);
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
