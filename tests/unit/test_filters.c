// SPDX-License-Identifier: GPL-2.0
/* The target filter options, parsed once for every BPF command (filter_parse_opt). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* Before cmocka.h, whose fail() macro would rename our fail(). */
#include "args.h"
#include "filters.h"
#include "fspath.h"
#include "err.h"
#include "testutil.h"

static void test_not_a_filter_option(void **state)
{
	struct filter_opts f = {0};

	assert_int_equal(filter_parse_opt("trace", 't', "5ms", &f), 1);
	assert_int_equal(filter_parse_opt("trace", 'i', "1", &f), 1);
	assert_int_equal(f.tf.pid, 0);
}

/* The options every command has are taken too: a command's loop asks one function. */
/* What is not a filter option is the command's (or args_next()'s): left alone. */
static void test_not_filter_options(void **state)
{
	struct filter_opts f = {0};

	assert_int_equal(filter_parse_opt("trace", OPT_VERBOSE, NULL, &f), 1);
	assert_int_equal(filter_parse_opt("trace", OPT_HELP, NULL, &f), 1);
	assert_int_equal(filter_parse_opt("trace", 't', "5", &f), 1);
	assert_false(f.tf.proc_on || f.tf.file_on);
}

static void test_ids(void **state)
{
	struct filter_opts f = {0};
	char self[16];

	/* Ids of tasks that exist: this process, and its main thread. */
	snprintf(self, sizeof(self), "%d", (int)getpid());
	assert_int_equal(filter_parse_opt("trace", 'p', self, &f), 0);
	assert_int_equal(f.tf.pid, getpid());
	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_TID, self, &f), 0);
	assert_int_equal(f.tf.tid, getpid());
	/* Each once; a bad id is a usage error. */
	assert_int_equal(filter_parse_opt("trace", 'p', "1", &f), -EINVAL);
	assert_int_equal(f.tf.pid, getpid());
	memset(&f, 0, sizeof(f));
	assert_int_equal(filter_parse_opt("trace", 'p', "0", &f), -EINVAL);
	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_TID, "abc", &f), -EINVAL);
}

static void test_comm(void **state)
{
	struct filter_opts f = {0};

	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_COMM, "fio", &f), 0);
	assert_int_equal(f.tf.comm_on, 1);
	assert_string_equal(f.tf.comm, "fio");
	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_COMM, "dd", &f), -EINVAL);
	memset(&f, 0, sizeof(f));
	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_COMM, "", &f), -EINVAL);
	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_COMM, "0123456789abcdef", &f),
			 -EINVAL);
	assert_int_equal(f.tf.comm_on, 0);
	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_COMM, "0123456789abcde", &f), 0);
	assert_string_equal(f.tf.comm, "0123456789abcde");
}

static void test_dir(void **state)
{
	struct filter_opts f = {0};
	struct stat st;

	assert_int_equal(stat("/", &st), 0);
	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_DIR, "/", &f), 0);
	assert_int_equal(f.tf.dir_dev, KDEV(major(st.st_dev), minor(st.st_dev)));
	assert_true(f.tf.dir_ino == st.st_ino);
	assert_int_equal(f.tf.file_dev, 0);
	/* A directory is no --file, a missing path neither. */
	assert_int_equal(filter_parse_opt("trace", FILTER_OPT_FILE, "/", &f), -EINVAL);
	assert_true(filter_parse_opt("trace", FILTER_OPT_FILE, "/nonexistent/x", &f) < 0);
	assert_int_equal(f.tf.file_dev, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_a_filter_option),
		cmocka_unit_test(test_not_filter_options),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_comm),
		cmocka_unit_test(test_dir),
	};

	return cmocka_run_group_tests_name("filters", tests, NULL, NULL);
}
