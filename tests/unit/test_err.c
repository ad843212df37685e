// SPDX-License-Identifier: GPL-2.0
/*
 * The one error path (src/lib/util/err.c): doctor's capture keeps the first failure and
 * shows nothing, an error under --json is one valid object on stdout with its exit
 * code, only the first error is shown, and the exit code follows the first one.
 * The module's state is the process's: the tests run in this order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h" /* before cmocka: its fail() macro */
#include "testutil.h"

/* What @fd received while @fn ran, NUL-terminated (malloc'd). */
static char *captured(int fd, void (*fn)(void))
{
	char path[] = "/tmp/iospan-test-err-XXXXXX";
	int tmp = mkstemp(path), saved = dup(fd);
	char *buf = calloc(1, 4096);
	FILE *f;

	assert_true(tmp >= 0 && saved >= 0 && buf);
	fflush(NULL);
	dup2(tmp, fd);
	fn();
	fflush(NULL);
	dup2(saved, fd);
	close(saved);
	close(tmp);
	f = fopen(path, "r");
	assert_non_null(f);
	if (!fread(buf, 1, 4095, f))
		buf[0] = '\0';
	fclose(f);
	unlink(path);
	return buf;
}

static char capture_buf[64];

static void fail_twice_captured(void)
{
	assert_int_equal((fail)(-ENOENT, "first %d", 1), -ENOENT);
	assert_int_equal(fail_usage("second"), -EINVAL);
	warn("dropped while capturing");
}

static void test_capture_keeps_the_first_and_shows_nothing(void **state)
{
	char *out, *err;

	err_init("iospan", false);
	err_capture(capture_buf, sizeof(capture_buf));
	err = captured(2, fail_twice_captured);
	err_capture(capture_buf, sizeof(capture_buf));
	out = captured(1, fail_twice_captured);
	err_capture(NULL, 0);
	assert_string_equal(capture_buf, "first 1");
	assert_string_equal(err, "");
	assert_string_equal(out, "");
	/* Nothing was reported: the exit code is the command's own. */
	assert_int_equal(err_exit_code(0), EXIT_OK);
	assert_int_equal(err_exit_code(-EIO), EXIT_RUNTIME);
	free(err);
	free(out);
}

static void fail_usage_json(void)
{
	assert_int_equal(fail_usage("bad \"%s\"\n\tend", "x"), -EINVAL);
	/* Consequences of the first error are not shown. */
	assert_int_equal((fail)(5, "later"), -EIO);
}

static void test_json_error_is_one_object_with_its_exit_code(void **state)
{
	char *out;

	err_init("iospan", true);
	out = captured(1, fail_usage_json);
	assert_string_equal(out, "{\"error\":\"bad \\\"x\\\"\\n\\tend\",\"exit_code\":2}\n");
	/* The first error decides the exit code, whatever the command returns. */
	assert_int_equal(err_exit_code(-EIO), EXIT_USAGE);
	assert_int_equal(err_exit_code(0), EXIT_USAGE);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_keeps_the_first_and_shows_nothing),
		cmocka_unit_test(test_json_error_is_one_object_with_its_exit_code),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
