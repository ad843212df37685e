// SPDX-License-Identifier: GPL-2.0
/* iospan trace ops and stages: names, the --ops parser and its error reporting. */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "testutil.h"
#include "ops.h"

static void test_names(void **state)
{
	assert_string_equal(trace_op_name(TRACE_OP_READ), "read");
	assert_string_equal(trace_op_name(TRACE_OP_SYNC_FILE_RANGE), "sync_file_range");
	assert_string_equal(trace_op_name(TRACE_OP_AIO_WRITE), "aio_write");
	assert_string_equal(trace_op_name(TRACE_OP_NR), "?");
	assert_string_equal(trace_stage_name(TRACE_ST_TOTAL), "total");
	assert_string_equal(trace_stage_name(TRACE_ST_POST_BLOCK), "post_block");
	assert_string_equal(trace_stage_name(TRACE_ST_NR), "?");
}

static void test_parse(void **state)
{
	uint32_t m = 0;

	assert_int_equal(trace_ops_parse("read", &m, NULL, NULL), 0);
	assert_int_equal(m, 1U << TRACE_OP_READ);
	assert_int_equal(trace_ops_parse("read,fsync,fault", &m, NULL, NULL), 0);
	assert_int_equal(m, 1U << TRACE_OP_READ | 1U << TRACE_OP_FSYNC | 1U << TRACE_OP_FAULT);
	assert_int_equal(trace_ops_parse("pread,pwrite", &m, NULL, NULL), 0);
	assert_int_equal(m, 1U << TRACE_OP_PREAD64 | 1U << TRACE_OP_PWRITE64);
	assert_int_equal(trace_ops_parse("aio", &m, NULL, NULL), 0);
	assert_int_equal(m, 1U << TRACE_OP_AIO_READ | 1U << TRACE_OP_AIO_WRITE);
	assert_int_equal(trace_ops_parse("all", &m, NULL, NULL), 0);
	assert_int_equal(m, TRACE_OPS_ALL);
	assert_int_equal(trace_ops_parse("reads", &m, NULL, NULL), 0);
	assert_true(m & (1U << TRACE_OP_FAULT));
	assert_false(m & (1U << TRACE_OP_WRITE));
	/* Repeats are harmless. */
	assert_int_equal(trace_ops_parse("read,read", &m, NULL, NULL), 0);
	assert_int_equal(m, 1U << TRACE_OP_READ);
}

static void test_parse_errors(void **state)
{
	const char *list = "read,bogus,write", *bad = NULL;
	uint32_t m = 42;
	size_t len = 0;

	assert_int_equal(trace_ops_parse(list, &m, &bad, &len), -EINVAL);
	assert_ptr_equal(bad, list + 5);
	assert_int_equal(len, 5);
	assert_int_equal(m, 42); /* untouched on error */
	assert_int_equal(trace_ops_parse("", &m, &bad, &len), -EINVAL);
	assert_int_equal(len, 0);
	assert_int_equal(trace_ops_parse("read,", &m, &bad, &len), -EINVAL);
	assert_int_equal(trace_ops_parse(",read", &m, &bad, &len), -EINVAL);
	assert_int_equal(trace_ops_parse("READ", &m, NULL, NULL), -EINVAL);
	assert_int_equal(trace_ops_parse("rea", &m, NULL, NULL), -EINVAL);
	assert_int_equal(trace_ops_parse("reads2", &m, NULL, NULL), -EINVAL);
	assert_int_equal(trace_ops_parse(NULL, &m, NULL, NULL), -EINVAL);
}

static void test_format(void **state)
{
	char buf[256];

	assert_string_equal(trace_ops_format(TRACE_OPS_ALL, buf, sizeof(buf)), "all");
	assert_string_equal(
		trace_ops_format(1U << TRACE_OP_READ | 1U << TRACE_OP_FSYNC, buf, sizeof(buf)),
		"read,fsync");
	assert_string_equal(trace_ops_format(0, buf, sizeof(buf)), "");
	/* Truncation keeps whole names. */
	assert_string_equal(trace_ops_format(1U << TRACE_OP_READ | 1U << TRACE_OP_WRITE, buf, 8),
			    "read");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
