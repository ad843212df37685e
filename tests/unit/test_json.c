// SPDX-License-Identifier: GPL-2.0
/* The streaming JSON writer: commas, nesting, escaping, non-finite numbers, JSON Lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "json.h"

struct buf {
	char *data;
	size_t len;
	FILE *f;
	struct jw *jw;
};

static void buf_open(struct buf *b)
{
	b->f = open_memstream(&b->data, &b->len);
	assert_non_null(b->f);
	b->jw = jw_new(b->f);
	assert_non_null(b->jw);
}

static const char *buf_text(struct buf *b)
{
	fflush(b->f);
	return b->data;
}

static void buf_close(struct buf *b)
{
	jw_free(b->jw);
	fclose(b->f);
	free(b->data);
}

static void test_nested(void **state)
{
	struct buf b;

	buf_open(&b);
	jw_start_object(b.jw);
	jw_kv_string(b.jw, "name", "loop0");
	jw_kv_uint(b.jw, "ops", 18446744073709551615ULL);
	jw_kv_int(b.jw, "delta", -5);
	jw_kv_array(b.jw, "list");
	jw_uint(b.jw, 1);
	jw_start_object(b.jw);
	jw_kv_bool(b.jw, "ok", true);
	jw_end_object(b.jw);
	jw_start_array(b.jw);
	jw_end_array(b.jw);
	jw_end_array(b.jw);
	jw_kv_object(b.jw, "empty");
	jw_end_object(b.jw);
	jw_kv_null(b.jw, "none");
	jw_end_object(b.jw);
	assert_string_equal(buf_text(&b),
			    "{\"name\":\"loop0\",\"ops\":18446744073709551615,\"delta\":-5,"
			    "\"list\":[1,{\"ok\":true},[]],\"empty\":{},\"none\":null}\n");
	assert_int_equal(jw_depth(b.jw), 0);
	buf_close(&b);
}

static void test_escaping(void **state)
{
	struct buf b;

	buf_open(&b);
	jw_string(b.jw, "a\"b\\c\nd\te\x01/\x7f");
	assert_string_equal(buf_text(&b), "\"a\\\"b\\\\c\\nd\\te\\u0001/\\u007f\"\n");
	buf_close(&b);

	/* Names are escaped as strings are (a plain one takes a shorter way). */
	buf_open(&b);
	jw_start_object(b.jw);
	jw_kv_uint(b.jw, "plain", 1);
	jw_kv_uint(b.jw, "q\"\\\n", 2);
	jw_kv_uint(b.jw, "\xc3\xa9t\xe9", 3);
	jw_kv_uint(b.jw, "", 4);
	jw_end_object(b.jw);
	assert_string_equal(buf_text(&b),
			    "{\"plain\":1,\"q\\\"\\\\\\n\":2,\"\xc3\xa9t\\ufffd\":3,\"\":4}\n");
	buf_close(&b);
}

/* Strings are always valid UTF-8: a byte that is not part of a character becomes U+FFFD. */
static void test_utf8(void **state)
{
	struct buf b;

	buf_open(&b);
	jw_string(b.jw, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"); /* valid: kept */
	jw_string(b.jw, "E\xffVIL\xfe");				/* bytes of no character */
	jw_string(b.jw, "\xc0\x80|\xed\xa0\x80|\xf4\x90\x80\x80");	/* overlong, surrogate, > U+10FFFF */
	jw_string(b.jw, "cut \xe2\x82");				/* cut short at the end */
	jw_string(b.jw, "\x80x");					/* stray continuation byte */
	assert_string_equal(buf_text(&b),
			    "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n"
			    "\"E\\ufffdVIL\\ufffd\"\n"
			    "\"\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd\"\n"
			    "\"cut \\ufffd\\ufffd\"\n"
			    "\"\\ufffdx\"\n");
	buf_close(&b);
}

/* A cut copy ends at a character boundary, marked. */
static void test_utf8_copy(void **state)
{
	char dst[8];

	assert_false(utf8_copy(dst, sizeof(dst), "abc"));
	assert_string_equal(dst, "abc");
	assert_false(utf8_copy(dst, sizeof(dst), "abcdefg"));
	assert_true(utf8_copy(dst, sizeof(dst), "abcdefgh"));
	assert_string_equal(dst, "abcd...");
	/* "ab" then U+20AC (3 bytes) straddling the cut: the whole character goes. */
	assert_true(utf8_copy(dst, sizeof(dst), "abc\xe2\x82\xacxyz"));
	assert_string_equal(dst, "abc...");
	assert_true(utf8_copy(dst, sizeof(dst), "a\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"));
	assert_string_equal(dst, "a\xe2\x82\xac...");
}

static void test_floats(void **state)
{
	struct buf b;

	buf_open(&b);
	jw_start_array(b.jw);
	jw_float(b.jw, 1.0 / 3.0, 3);
	jw_float(b.jw, NAN, 2);
	jw_float(b.jw, INFINITY, 2);
	jw_float(b.jw, -0.0, 2);
	jw_float(b.jw, 2.5, 0);
	jw_end_array(b.jw);
	assert_string_equal(buf_text(&b), "[0.333,null,null,0.00,2]\n");
	buf_close(&b);
}

static void test_lines(void **state)
{
	struct buf b;

	/* Each top-level value is one line: streams are JSON Lines. */
	buf_open(&b);
	jw_start_object(b.jw);
	jw_kv_uint(b.jw, "n", 1);
	jw_end_object(b.jw);
	jw_start_object(b.jw);
	jw_kv_uint(b.jw, "n", 2);
	jw_end_object(b.jw);
	assert_string_equal(buf_text(&b), "{\"n\":1}\n{\"n\":2}\n");
	buf_close(&b);
}

static void test_integers(void **state)
{
	struct buf b;

	buf_open(&b);
	jw_start_array(b.jw);
	jw_uint(b.jw, 0);
	jw_uint(b.jw, UINT64_MAX);
	jw_int(b.jw, INT64_MIN);
	jw_int(b.jw, -7);
	jw_fixed(b.jw, 5, 3);
	jw_fixed(b.jw, 12345, 3);
	jw_fixed(b.jw, -1500, 3);
	jw_fixed(b.jw, 1795436924476279, 6);
	jw_fixed(b.jw, 42, 0);
	jw_fixed(b.jw, 0, 6);
	jw_fixed(b.jw, 1, 18);
	jw_fixed(b.jw, INT64_MAX, 18);
	jw_fixed(b.jw, INT64_MIN, 18);
	jw_end_array(b.jw);
	assert_string_equal(buf_text(&b), "[0,18446744073709551615,-9223372036854775808,-7,"
					  "0.005,12.345,-1.500,1795436924.476279,42,0.000000,"
					  "0.000000000000000001,9.223372036854775807,"
					  "-9.223372036854775808]\n");
	buf_close(&b);
}

static void test_no_line_flush(void **state)
{
	struct buf b = {};

	/* Off, lines stay in the stream's buffer until it is flushed (len is set then). */
	buf_open(&b);
	jw_flush_lines(b.jw, false);
	jw_start_object(b.jw);
	jw_kv_string(b.jw, "s", "a \"b\" c");
	jw_end_object(b.jw);
	assert_int_equal(b.len, 0);
	assert_string_equal(buf_text(&b), "{\"s\":\"a \\\"b\\\" c\"}\n");
	buf_close(&b);
}

/*
 * A value is gathered and written whole: beyond the writer's own buffer (a long
 * string, a long array) it goes out in order, and two writers on one stream (the main
 * output and an error) interleave only between values.
 */
static void test_gathered_values(void **state)
{
	char *big = malloc(40001), *want, *p;
	struct buf b;
	struct jw *other;
	int i;

	memset(big, 'x', 40000);
	big[40000] = 0;
	buf_open(&b);
	jw_start_array(b.jw);
	for (i = 0; i < 5000; i++)
		jw_uint(b.jw, i);
	jw_string(b.jw, big);
	jw_end_array(b.jw);
	other = jw_new(b.f);
	assert_non_null(other);
	jw_start_object(other);
	jw_kv_string(other, "error", "e");
	jw_end_object(other);
	jw_free(other);
	want = malloc(100000);
	p = want;
	*p++ = '[';
	for (i = 0; i < 5000; i++)
		p += sprintf(p, "%d,", i);
	p += sprintf(p, "\"%s\"]\n{\"error\":\"e\"}\n", big);
	assert_string_equal(buf_text(&b), want);
	/* An unfinished value is not written, not even when the writer is freed. */
	jw_start_object(b.jw);
	jw_kv_uint(b.jw, "n", 1);
	assert_string_equal(buf_text(&b), want);
	buf_close(&b);
	free(want);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_utf8_copy),
		cmocka_unit_test(test_floats),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_no_line_flush),
		cmocka_unit_test(test_gathered_values),
	};

	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
