// SPDX-License-Identifier: GPL-2.0
/*
 * The attach plan chooser (src/lib/bpf/probe.c) on this kernel's real features: the
 * first variant that works here is chosen, a missing target or a mode turned off
 * (IOSPAN_ATTACH_OFF) moves the choice down the list, an optional hook with none left
 * is dropped and its figure said "not available", a required one fails the plan with
 * one error; the chosen programs load and the others do not. Needs root (the feature
 * probes load programs); skips otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

/* Before cmocka.h, whose fail() macro would rename our fail(). */
#include "err.h"
#include "probe.h"
#include "probe.skel.h"
#include "testutil.h"

#define TP "block_rq_complete" /* a block tracepoint every kernel has */

static void need_root(void)
{
	if (geteuid())
		skip(); /* the suite runs it as root */
}

static struct attach_hook hook(const char *name, bool optional, const char *figure,
			       enum attach_mode m1, const char *t1, enum attach_mode m2,
			       const char *t2)
{
	return (struct attach_hook){.name = name,
				    .optional = optional,
				    .figure = figure,
				    .v = {{.mode = m1, .target = t1}, {.mode = m2, .target = t2}}};
}

static void test_first_working_variant(void **state)
{
	struct attach_hook h[] = {
		hook("a", false, NULL, ATTACH_TP_BTF, TP, ATTACH_RAW_TP, TP),
		hook("b", false, NULL, ATTACH_RAW_TP, TP, ATTACH_TP_BTF, TP),
	};

	(void)state;
	need_root();
	assert_int_equal(attach_plan_choose(h, 2), 0);
	assert_int_equal(h[0].chosen, 0);
	assert_int_equal(h[1].chosen, 0);
	assert_int_equal(h[0].backup, -1);
}

static void test_missing_target_falls_back(void **state)
{
	struct attach_hook h[] = {
		hook("a", false, NULL, ATTACH_TP_BTF, "iospan_no_such_tracepoint", ATTACH_RAW_TP,
		     TP),
		hook("b", false, NULL, ATTACH_TRACEPOINT, "block/iospan_no_such_event",
		     ATTACH_TRACEPOINT, "block/" TP),
	};

	(void)state;
	need_root();
	assert_int_equal(attach_plan_choose(h, 2), 0);
	assert_int_equal(h[0].chosen, 1);
	assert_int_equal(h[1].chosen, 1);
}

static void test_mode_turned_off_falls_back(void **state)
{
	struct attach_hook h[] = {hook("a", false, NULL, ATTACH_TP_BTF, TP, ATTACH_RAW_TP, TP)};

	(void)state;
	need_root();
	setenv("IOSPAN_ATTACH_OFF", "fentry,tp_btf", 1);
	assert_int_equal(attach_plan_choose(h, 1), 0);
	unsetenv("IOSPAN_ATTACH_OFF");
	assert_int_equal(h[0].chosen, 1);
	assert_int_equal(h[0].v[1].mode, ATTACH_RAW_TP);
}

static void test_optional_hook_dropped_and_said(void **state)
{
	struct attach_hook h[] = {
		hook("gone", true, "FS read bytes", ATTACH_TP_BTF, "iospan_no_such_tracepoint",
		     ATTACH_RAW_TP, "iospan_no_such_tracepoint"),
		hook("there", true, "device time", ATTACH_TP_BTF, TP, ATTACH_AUTO, NULL),
	};
	char buf[256] = "";
	FILE *out;

	(void)state;
	need_root();
	assert_int_equal(attach_plan_choose(h, 2), 0);
	assert_int_equal(h[0].chosen, -1);
	assert_int_equal(h[1].chosen, 0);
	out = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(out);
	assert_int_equal(attach_plan_unavailable(h, 2, NULL, NULL, out, "  "), 1);
	fclose(out);
	assert_string_equal(buf, "  FS read bytes: not available on this kernel (gone)\n");
}

static void test_required_hook_fails_the_plan(void **state)
{
	struct attach_hook h[] = {
		hook("there", false, NULL, ATTACH_TP_BTF, TP, ATTACH_AUTO, NULL),
		hook("needed", false, NULL, ATTACH_TP_BTF, "iospan_no_such_tracepoint",
		     ATTACH_TRACEPOINT, "block/iospan_no_such_event"),
	};
	char why[512];
	const char *needs = "x";

	(void)state;
	need_root();
	err_capture(why, sizeof(why));
	assert_int_equal(attach_plan_choose(h, 2), -EOPNOTSUPP);
	err_capture(NULL, 0);
	assert_non_null(strstr(why, "missing kernel feature: cannot attach 'needed' here"));
	assert_non_null(strstr(why, "tp_btf iospan_no_such_tracepoint: target not found"));
	assert_non_null(strstr(why, "tracepoint block/iospan_no_such_event: target not found"));
	/* Evaluated (doctor): no error, nothing chosen, no privilege in the way. */
	attach_plan_evaluate(h, 2, &needs);
	assert_int_equal(h[1].chosen, -1);
	assert_null(needs);
}

/* With programs: the chosen ones load, the others stay unloaded. */
static void test_only_chosen_programs_load(void **state)
{
	struct probe_bpf *skel = probe_bpf__open();
	struct attach_hook h[1];

	(void)state;
	need_root();
	assert_non_null(skel);
	h[0] = (struct attach_hook){
		.name = TP,
		.v = {{.prog = skel->progs.probe_raw_tp}, {.prog = skel->progs.probe_tracepoint}},
	};
	setenv("IOSPAN_ATTACH_OFF", "raw_tp", 1);
	assert_int_equal(attach_plan_choose(h, 1), 0);
	unsetenv("IOSPAN_ATTACH_OFF");
	/* Modes and targets from the sections: raw_tp/block_rq_complete was turned off. */
	assert_int_equal(h[0].chosen, 1);
	assert_int_equal(h[0].v[0].mode, ATTACH_RAW_TP);
	assert_string_equal(h[0].v[1].target, "block/" TP);
	assert_false(bpf_program__autoload(skel->progs.probe_raw_tp));
	assert_true(bpf_program__autoload(skel->progs.probe_tracepoint));
	probe_bpf__destroy(skel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_working_variant),
		cmocka_unit_test(test_missing_target_falls_back),
		cmocka_unit_test(test_mode_turned_off_falls_back),
		cmocka_unit_test(test_optional_hook_dropped_and_said),
		cmocka_unit_test(test_required_hook_fails_the_plan),
		cmocka_unit_test(test_only_chosen_programs_load),
	};
	int ret;

	libbpf_set_print(NULL);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	probe_cleanup();
	return ret;
}
