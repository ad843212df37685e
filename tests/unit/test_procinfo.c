// SPDX-License-Identifier: GPL-2.0
/* Argument areas and titles as ps shows them, and the kernel's capture preferred. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "procinfo.h"

static void test_format_args(void **state)
{
	char out[64];

	procinfo_format_args("dd\0if=/dev/zero\0of=x\0", 21, out, sizeof(out));
	assert_string_equal(out, "dd if=/dev/zero of=x");
	/* A title written over the arguments, padded with NULs. */
	procinfo_format_args("postgres: checkpointer \0\0\0\0", 27, out, sizeof(out));
	assert_string_equal(out, "postgres: checkpointer");
	/* Control characters and invalid UTF-8 as '?', valid UTF-8 kept. */
	procinfo_format_args("a\nb\xff\0c\xc3\xa9", 9, out, sizeof(out));
	assert_string_equal(out, "a?b? c\xc3\xa9");
	procinfo_format_args("", 0, out, sizeof(out));
	assert_string_equal(out, "");
	/* A short buffer cuts, never overflows. */
	procinfo_format_args("abcdefgh", 8, out, 6);
	assert_true(strlen(out) < 6);
}

static void test_is_title(void **state)
{
	assert_false(procinfo_is_title("/usr/bin/python3\0x.py", 21, "python3"));
	assert_false(procinfo_is_title("dd\0if=x", 7, "dd"));
	assert_true(procinfo_is_title("postgres: checkpointer", 22, "postgres"));
	assert_true(procinfo_is_title("custom-name\0arg", 15, "sleep"));
	/* comm is the name cut to 15 bytes: the program, not a title. */
	assert_false(procinfo_is_title("/lib/systemd/systemd-journald", 29, "systemd-journal"));
	/* Renamed by the process itself (perl's $0), with a space: a title. */
	assert_true(procinfo_is_title("iospan-title: worker one", 24, "iospan-title: w"));
	assert_false(procinfo_is_title("", 0, "x"));
}

static int fake_lookup(void *arg, uint32_t tgid, struct proc_title *t)
{
	int *calls = arg;

	(*calls)++;
	if (tgid != 4242)
		return -ENOENT;
	memset(t, 0, sizeof(*t));
	memcpy(t->args, "postgres: walwriter\0\0", 21);
	t->len = 21;
	return 0;
}

static void test_cache(void **state)
{
	struct procinfo *c = NULL;
	struct proc_ident id;
	int calls = 0;

	assert_int_equal(procinfo_new(fake_lookup, &calls, 0, &c), 0);
	procinfo_get(c, 4242, "postgres", &id);
	assert_string_equal(id.cmdline, "postgres: walwriter");
	assert_true(id.title);
	/* Cached within a round; read again in the next. */
	procinfo_get(c, 4242, "postgres", &id);
	assert_int_equal(calls, 1);
	procinfo_round(c);
	procinfo_get(c, 4242, "postgres", &id);
	assert_int_equal(calls, 2);
	/* Not captured: /proc, while the process lives (this test itself). */
	procinfo_get(c, getpid(), "test_procinfo", &id);
	assert_non_null(id.cmdline);
	assert_non_null(strstr(id.cmdline, "test_procinfo"));
	assert_false(id.title);
	procinfo_free(c);
}

/* A long-running watcher forgets the processes nobody asks about any more. */
static void test_forgets_unused(void **state)
{
	struct procinfo *c = NULL;
	struct proc_ident id;
	int calls = 0, round;
	uint32_t pid;

	assert_int_equal(procinfo_new(fake_lookup, &calls, 0, &c), 0);
	/* 1,000 short-lived processes, gone (nothing in /proc, nothing captured). */
	for (pid = 4000000; pid < 4001000; pid++)
		procinfo_get(c, pid, "gone", &id);
	procinfo_get(c, 4242, "postgres", &id);
	assert_int_equal(procinfo_count(c), 1001);
	assert_true(procinfo_known(c, 4000000));
	for (round = 0; round < 200; round++) {
		procinfo_round(c);
		/* Still asked about: kept, and known without being read again. */
		assert_true(procinfo_known(c, 4242));
	}
	assert_int_equal(procinfo_count(c), 1);
	assert_false(procinfo_known(c, 4000000));
	procinfo_get(c, 4242, "postgres", &id);
	assert_string_equal(id.cmdline, "postgres: walwriter");
	procinfo_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_args),
		cmocka_unit_test(test_is_title),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_forgets_unused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
