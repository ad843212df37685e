// SPDX-License-Identifier: GPL-2.0
/*
 * iospan watch's decisions as pure functions: rules held for N samples, the incident
 * gate (capture, extension, cooldown, per-hour cap) and the onset of a rise.
 */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "incident/rules.h"

/* One sample's values with only @m set to @v (others NaN: they never count). */
static void one_value(double v[WT_NR_METRICS], enum wt_metric m, double value)
{
	int i;

	for (i = 0; i < WT_NR_METRICS; i++)
		v[i] = NAN;
	v[m] = value;
}

static void test_defaults_are_huatuo(void **state)
{
	struct wt_rules r;

	wt_rules_default(&r);
	assert_near(r.threshold[WT_UTIL], 90, 0);
	assert_near(r.threshold[WT_AWAIT], 100, 0);
	assert_near(r.threshold[WT_READ_MBPS], 2000, 0);
	assert_near(r.threshold[WT_WRITE_MBPS], 1500, 0);
	assert_near(r.threshold[WT_IOPS], 0, 0);
	assert_near(r.threshold[WT_AQU], 0, 0);
	assert_near(r.threshold[WT_PSI_SOME], 0, 0);
	assert_int_equal(r.hold, 2);
}

static void test_hold_needs_consecutive_samples(void **state)
{
	struct wt_rules r;
	struct wt_counter c = {};
	double v[WT_NR_METRICS];
	bool fresh;

	wt_rules_default(&r);
	r.hold = 3;
	one_value(v, WT_UTIL, 95);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	/* A dip under the threshold starts the count again. */
	one_value(v, WT_UTIL, 89.9);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	one_value(v, WT_UTIL, 90); /* at the threshold counts */
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	assert_int_equal(wt_check(&r, &c, v, &fresh), WT_UTIL);
	assert_true(fresh);
	/* Still holding: fires, but it is not news. */
	assert_int_equal(wt_check(&r, &c, v, &fresh), WT_UTIL);
	assert_false(fresh);
}

static void test_await_is_the_worse_of_read_and_write(void **state)
{
	struct ds_metrics m = {};
	double v[WT_NR_METRICS];
	struct psi_io psi = { .valid = true, .some_avg10 = 12.5, .full_avg10 = 3 };

	m.r_await = 4;
	m.w_await = 250;
	m.rkB_s = 2048;
	m.wkB_s = 1024;
	m.r_s = 10;
	m.w_s = 20;
	m.d_s = 1;
	m.f_s = 2;
	wt_values(&m, NULL, v);
	assert_near(v[WT_AWAIT], 250, 0);
	assert_near(v[WT_READ_MBPS], 2, 1e-12);
	assert_near(v[WT_WRITE_MBPS], 1, 1e-12);
	assert_near(v[WT_IOPS], 33, 0);
	assert_true(isnan(v[WT_PSI_SOME]));
	wt_values(NULL, &psi, v);
	assert_true(isnan(v[WT_UTIL]));
	assert_near(v[WT_PSI_SOME], 12.5, 0);
	assert_near(v[WT_PSI_FULL], 3, 0);
}

static void test_off_rules_and_nan_never_fire(void **state)
{
	struct wt_rules r;
	struct wt_counter c = {};
	double v[WT_NR_METRICS];
	bool fresh;
	int i;

	wt_rules_default(&r);
	r.hold = 1;
	one_value(v, WT_IOPS, 1e9); /* --iops is off by default */
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	for (i = 0; i < WT_NR_METRICS; i++)
		v[i] = NAN;
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	r.threshold[WT_UTIL] = 0; /* 0 turns a rule off */
	one_value(v, WT_UTIL, 100);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
}

static void test_a_fresh_rule_goes_first(void **state)
{
	struct wt_rules r;
	struct wt_counter c = {};
	double v[WT_NR_METRICS];
	bool fresh;

	wt_rules_default(&r);
	r.hold = 1;
	one_value(v, WT_AWAIT, 500);
	assert_int_equal(wt_check(&r, &c, v, &fresh), WT_AWAIT);
	assert_true(fresh);
	/* await still holds, util comes to hold: util is the news, though later in order. */
	v[WT_UTIL] = 99;
	v[WT_AWAIT] = 500;
	assert_int_equal(wt_check(&r, &c, v, &fresh), WT_UTIL);
	assert_true(fresh);
}

static void test_gate_capture_extend_close(void **state)
{
	struct wt_gate g;

	wt_gate_init(&g, 40, 300, 0);
	assert_int_equal(wt_gate_step(&g, 100, false), WT_NONE);
	assert_int_equal(wt_gate_step(&g, 101, true), WT_OPEN);
	assert_int_equal(wt_gate_step(&g, 102, false), WT_NONE);
	/* A trigger at 130 moves the end to 170. */
	assert_int_equal(wt_gate_step(&g, 130, true), WT_EXTEND);
	assert_int_equal(wt_gate_step(&g, 141, false), WT_NONE);
	assert_int_equal(wt_gate_step(&g, 169.9, false), WT_NONE);
	assert_int_equal(wt_gate_step(&g, 170, false), WT_CLOSE);
	assert_int_equal(g.phase, WT_COOLDOWN);
}

static void test_gate_extension_is_bounded(void **state)
{
	struct wt_gate g;
	double t;
	enum wt_action a = WT_NONE;

	wt_gate_init(&g, 10, 0, 0);
	assert_int_equal(wt_gate_step(&g, 0, true), WT_OPEN);
	/*
	 * A problem that never ends: the incident still ends, 10 x capture after it
	 * opened; it is extended until then, and the last extensions change nothing.
	 */
	for (t = 1; t < 1000; t++) {
		a = wt_gate_step(&g, t, true);
		if (a == WT_CLOSE)
			break;
		assert_int_equal(a, t <= WT_MAX_EXTENSION * 10 - 10 ? WT_EXTEND : WT_NONE);
	}
	assert_int_equal(a, WT_CLOSE);
	assert_near(t, WT_MAX_EXTENSION * 10, 0);
	/* No cooldown: the next trigger opens the next incident. */
	assert_int_equal(wt_gate_step(&g, t + 1, true), WT_OPEN);
}

static void test_gate_cooldown(void **state)
{
	struct wt_gate g;

	wt_gate_init(&g, 5, 60, 0);
	assert_int_equal(wt_gate_step(&g, 0, true), WT_OPEN);
	assert_int_equal(wt_gate_step(&g, 5, false), WT_CLOSE);
	assert_int_equal(wt_gate_step(&g, 6, true), WT_HELD_COOLDOWN);
	assert_int_equal(wt_gate_step(&g, 64.9, true), WT_HELD_COOLDOWN);
	assert_int_equal(wt_gate_step(&g, 65, true), WT_OPEN);
}

static void test_gate_hourly_cap(void **state)
{
	struct wt_gate g;

	wt_gate_init(&g, 1, 0, 2);
	assert_int_equal(wt_gate_step(&g, 0, true), WT_OPEN);
	assert_int_equal(wt_gate_step(&g, 1, false), WT_CLOSE);
	assert_int_equal(wt_gate_step(&g, 10, true), WT_OPEN);
	assert_int_equal(wt_gate_step(&g, 11, false), WT_CLOSE);
	assert_int_equal(wt_gate_step(&g, 20, true), WT_HELD_HOURLY_CAP);
	assert_int_equal(wt_gate_step(&g, 3599, true), WT_HELD_HOURLY_CAP);
	/* The first one is an hour old: one more may open. */
	assert_int_equal(wt_gate_step(&g, 3600, true), WT_OPEN);
	assert_int_equal(wt_gate_step(&g, 3601, false), WT_CLOSE);
	assert_int_equal(wt_gate_step(&g, 3605, true), WT_HELD_HOURLY_CAP);
}

static void test_onset(void **state)
{
	/* Quiet at 1-2, rising from index 4, trigger at index 7. */
	const double rise[] = { 1, 2, 1, 1.5, 20, 50, 80, 95 };
	/* Already high at the start of the window. */
	const double high[] = { 90, 92, 95 };
	/* Up within the trigger's sample. */
	const double jump[] = { 1, 1, 1, 99 };

	assert_int_equal(wt_onset(rise, 8, 90), 4);
	assert_int_equal(wt_onset(high, 3, 90), 0);
	/* Lower threshold than the series' values: the same rule, the lowest is the base. */
	assert_int_equal(wt_onset(high, 3, 91), 1);
	assert_int_equal(wt_onset(jump, 4, 90), 3);
	assert_int_equal(wt_onset(jump, 1, 90), 0);
	assert_int_equal(wt_onset(NULL, 0, 90), -1);
}

/* One request over the threshold is the event: it fires at once, whatever --for says. */
static void test_slow_request_fires_on_one_sample(void **state)
{
	struct wt_rules r;
	struct wt_counter c = {};
	double v[WT_NR_METRICS];
	bool fresh;

	wt_rules_default(&r);
	assert_near(r.threshold[WT_SLOW_REQUEST], 0, 0); /* off by default */
	r.hold = 3;
	r.threshold[WT_SLOW_REQUEST] = 200;
	assert_int_equal(wt_hold(&r, WT_SLOW_REQUEST), 1);
	assert_int_equal(wt_hold(&r, WT_UTIL), 3);
	/* No request seen (0) or no collector (NaN): nothing. */
	one_value(v, WT_SLOW_REQUEST, 0);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	one_value(v, WT_SLOW_REQUEST, NAN);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	one_value(v, WT_SLOW_REQUEST, 199.9);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	one_value(v, WT_SLOW_REQUEST, 250);
	assert_int_equal(wt_check(&r, &c, v, &fresh), WT_SLOW_REQUEST);
	assert_true(fresh);
	/* Another slow one in the next sample still holds, not news... */
	assert_int_equal(wt_check(&r, &c, v, &fresh), WT_SLOW_REQUEST);
	assert_false(fresh);
	/* ...and after a sample without one, the next is news again. */
	one_value(v, WT_SLOW_REQUEST, 5);
	assert_int_equal(wt_check(&r, &c, v, &fresh), -1);
	one_value(v, WT_SLOW_REQUEST, 300);
	assert_int_equal(wt_check(&r, &c, v, &fresh), WT_SLOW_REQUEST);
	assert_true(fresh);
	/* The other rules still need their --for samples alongside it. */
	v[WT_UTIL] = 95;
	assert_int_equal(wt_check(&r, &c, v, &fresh), WT_SLOW_REQUEST);
	assert_false(fresh);
}

static void test_metric_names(void **state)
{
	int i;

	for (i = 0; i < WT_NR_METRICS; i++)
		assert_int_equal(wt_metric_from_name(wt_metric_name(i)), i);
	assert_int_equal(wt_metric_from_name("nosuch"), -1);
	assert_string_equal(wt_metric_name(WT_READ_MBPS), "read-mbps");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_are_huatuo),
		cmocka_unit_test(test_hold_needs_consecutive_samples),
		cmocka_unit_test(test_await_is_the_worse_of_read_and_write),
		cmocka_unit_test(test_off_rules_and_nan_never_fire),
		cmocka_unit_test(test_a_fresh_rule_goes_first),
		cmocka_unit_test(test_gate_capture_extend_close),
		cmocka_unit_test(test_gate_extension_is_bounded),
		cmocka_unit_test(test_gate_cooldown),
		cmocka_unit_test(test_gate_hourly_cap),
		cmocka_unit_test(test_onset),
		cmocka_unit_test(test_slow_request_fires_on_one_sample),
		cmocka_unit_test(test_metric_names),
	};

	return cmocka_run_group_tests_name("watch_trigger", tests, NULL, NULL);
}
