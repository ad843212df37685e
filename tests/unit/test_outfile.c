// SPDX-License-Identifier: GPL-2.0
/*
 * Output files (src/lib/util/outfile.c): a whole file appears only complete, a failed
 * one leaves nothing (and what was there untouched), a device that fails a write says
 * so with its errno.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h" /* before cmocka: its fail() macro */
#include "outfile.h"
#include "testutil.h"

static char dir[] = "/tmp/iospan-test-outfile-XXXXXX";

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static int entries(void)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	char *buf = calloc(1, 256);
	FILE *f = fopen(path, "r");

	if (!f) {
		free(buf);
		return NULL;
	}
	if (!fread(buf, 1, 255, f))
		buf[0] = '\0';
	fclose(f);
	return buf;
}

static void test_whole_file_appears_complete(void **state)
{
	struct outfile *of;
	char path[128], *got;

	snprintf(path, sizeof(path), "%s/a", dir);
	assert_int_equal(outfile_open(&of, path, true), 0);
	fputs("hello", outfile_stream(of));
	/* Not there until it is whole: the bytes are in a temporary file beside it. */
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(outfile_close(of, true), 0);
	got = slurp(path);
	assert_string_equal(got, "hello");
	assert_int_equal(entries(), 1); /* no temporary file left */
	free(got);
}

static void test_failed_whole_file_leaves_the_old_one(void **state)
{
	struct outfile *of;
	char path[128], *got;

	snprintf(path, sizeof(path), "%s/a", dir);
	assert_int_equal(outfile_open(&of, path, true), 0);
	fputs("half", outfile_stream(of));
	assert_int_equal(outfile_close(of, false), 0);
	got = slurp(path);
	assert_string_equal(got, "hello");
	assert_int_equal(entries(), 1);
	free(got);
}

static void test_device_write_failure_keeps_its_errno(void **state)
{
	struct outfile *of;
	char big[8192];

	memset(big, 'x', sizeof(big));
	/* Not a regular file: written directly, and its failure is ENOSPC, not lost. */
	assert_int_equal(outfile_open(&of, "/dev/full", true), 0);
	fwrite(big, 1, sizeof(big), outfile_stream(of));
	assert_int_equal(outfile_close(of, true), -ENOSPC);
}

static void test_missing_directory_is_refused(void **state)
{
	struct outfile *of;
	char path[128];

	snprintf(path, sizeof(path), "%s/none/a", dir);
	assert_int_equal(outfile_open(&of, path, true), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_file_appears_complete),
		cmocka_unit_test(test_failed_whole_file_leaves_the_old_one),
		cmocka_unit_test(test_device_write_failure_keeps_its_errno),
		cmocka_unit_test(test_missing_directory_is_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
