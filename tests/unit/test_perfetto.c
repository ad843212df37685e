// SPDX-License-Identifier: GPL-2.0
/* The Chrome Trace Event writer: structure, µs times, one name per track. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "perfetto.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);

	assert_non_null(f);
	assert_true(fread(buf, 1, 65535, f) > 0);
	fclose(f);
	return buf;
}

static void test_file(void **state)
{
	char path[] = "/tmp/iospan-perfetto-XXXXXX";
	struct perfetto *pf;
	struct jw *jw;
	char *text;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(perfetto_open(&pf, path), 0);
	perfetto_process(pf, 10, "fio");
	perfetto_thread(pf, 10, 11, "fio");
	perfetto_thread(pf, 10, 11, "fio"); /* named once */
	jw = perfetto_span(pf, "read", "request", 10, 11, 1500, 2000000);
	jw_kv_uint(jw, "bytes", 4096);
	perfetto_end(pf);
	perfetto_instant(pf, "Q", "block", 10, 11, 2000);
	perfetto_end(pf);
	assert_int_equal(perfetto_close(pf), 0);

	text = slurp(path);
	assert_string_equal(
		text,
		"{\"displayTimeUnit\":\"ns\",\"traceEvents\":["
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":10,\"args\":{\"name\":\"fio\"}},"
		"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":10,\"tid\":11,\"args\":{\"name\":\"fio\"}},"
		"{\"name\":\"read\",\"cat\":\"request\",\"ph\":\"X\",\"ts\":1.500,\"pid\":10,\"tid\":11,"
		"\"dur\":2000.000,\"args\":{\"bytes\":4096}},"
		"{\"name\":\"Q\",\"cat\":\"block\",\"ph\":\"i\",\"ts\":2.000,\"pid\":10,\"tid\":11,"
		"\"s\":\"t\",\"args\":{}}]}\n");
	free(text);
	unlink(path);
}

static void test_unwritable(void **state)
{
	struct perfetto *pf;

	assert_true(perfetto_open(&pf, "/nonexistent-dir/x.json") < 0);
}

/* A full device: the error is the write's own (ENOSPC), while writing and at close. */
static void test_full(void **state)
{
	struct perfetto *pf;
	int i;

	assert_int_equal(perfetto_open(&pf, "/dev/full"), 0);
	for (i = 0; i < 2000 && !perfetto_error(pf); i++) {
		perfetto_instant(pf, "event", "cat", 1, 2, i);
		perfetto_end(pf);
	}
	assert_int_equal(perfetto_error(pf), -ENOSPC);
	assert_int_equal(perfetto_close(pf), -ENOSPC);
	assert_int_equal(perfetto_open(&pf, "/dev/full"), 0);
	assert_int_equal(perfetto_close(pf), -ENOSPC); /* even a short file */
}

/* Counters and argument-less slices; written whole: nothing at the path until closed. */
static void test_counter_slice_whole(void **state)
{
	char dir[] = "/tmp/iospan-perfetto-XXXXXX", path[64];
	struct perfetto *pf;
	struct jw *jw;
	char *text;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.json", dir);
	assert_int_equal(perfetto_create(&pf, path, true), 0);
	jw = perfetto_counter(pf, "sda", 7, 1000);
	jw_kv_float(jw, "util", 12.5, 1);
	perfetto_end(pf);
	perfetto_slice(pf, "d2c", "stage", 1, 2, 3000, 2000); /* backwards: empty */
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(perfetto_close(pf), 0);
	text = slurp(path);
	assert_string_equal(text, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["
				  "{\"name\":\"sda\",\"ph\":\"C\",\"ts\":1.000,\"pid\":7,"
				  "\"tid\":0,\"args\":{\"util\":12.5}},"
				  "{\"name\":\"d2c\",\"cat\":\"stage\",\"ph\":\"X\",\"ts\":3.000,"
				  "\"pid\":1,\"tid\":2,\"dur\":0.000,\"args\":{}}]}\n");
	free(text);
	/* Discarded: the file there before is untouched, no temporary file is left. */
	assert_int_equal(perfetto_create(&pf, path, true), 0);
	perfetto_slice(pf, "x", "y", 1, 2, 0, 1);
	perfetto_discard(pf);
	text = slurp(path);
	assert_non_null(strstr(text, "\"d2c\""));
	free(text);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0); /* empty: no temporary file */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_unwritable),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_counter_slice_whole),
	};

	return cmocka_run_group_tests_name("perfetto", tests, NULL, NULL);
}
