// SPDX-License-Identifier: GPL-2.0
/* Names made safe for a terminal: escapes, invalid UTF-8, format controls, cutting. */
#include <string.h>

#include "testutil.h"
#include "json.h"
#include "printable.h"

/* The bytes of a string literal, as utf8_seq_len() takes them. */
#define B(s) ((const unsigned char *)(s))

/* The characters printable() keeps (json.c's reader, shared). */
static void test_utf8_seq_len(void **state)
{
	assert_int_equal(utf8_seq_len(B("a")), 1);
	assert_int_equal(utf8_seq_len(B("\xc3\xa9")), 2);
	assert_int_equal(utf8_seq_len(B("\xe2\x82\xac")), 3);
	assert_int_equal(utf8_seq_len(B("\xf0\x9f\x98\x80")), 4);
	assert_int_equal(utf8_seq_len(B("\xff")), 0);
	assert_int_equal(utf8_seq_len(B("\x80")), 0);	       /* a continuation byte */
	assert_int_equal(utf8_seq_len(B("\xc0\xaf")), 0);	       /* overlong '/' */
	assert_int_equal(utf8_seq_len(B("\xe0\x80\xaf")), 0);    /* overlong '/' */
	assert_int_equal(utf8_seq_len(B("\xed\xa0\x80")), 0);    /* a UTF-16 surrogate */
	assert_int_equal(utf8_seq_len(B("\xf4\x90\x80\x80")), 0); /* above U+10FFFF */
	assert_int_equal(utf8_seq_len(B("\xe2\x82")), 0);	       /* cut short by the NUL */
}

static void test_escapes(void **state)
{
	char buf[256];

	/* The names of the e2e test: a file and a thread that try to drive the terminal. */
	assert_string_equal(printable_buf("\x1b[31mred\nfake line \xff\xfe", buf, sizeof(buf)),
			    "\\x1b[31mred\\nfake line \\xff\\xfe");
	assert_string_equal(printable_buf("\x1b[2J\nE\xffVIL", buf, sizeof(buf)),
			    "\\x1b[2J\\nE\\xffVIL");
	assert_string_equal(printable_buf("a\\b\tc\rd\x7f", buf, sizeof(buf)),
			    "a\\\\b\\tc\\rd\\x7f");
	/* Letters in valid UTF-8 stay; C1 and bidi controls do not. */
	assert_string_equal(printable_buf("donn\xc3\xa9" "es", buf, sizeof(buf)),
			    "donn\xc3\xa9" "es");
	assert_string_equal(printable_buf("x\xc2\x9b" "2J", buf, sizeof(buf)), "x\\xc2\\x9b2J");
	assert_string_equal(printable_buf("abc\xe2\x80\xae" "fdp.exe", buf, sizeof(buf)),
			    "abc\\xe2\\x80\\xaefdp.exe");
	assert_string_equal(printable_buf(NULL, buf, sizeof(buf)), "");
}

static void test_cut(void **state)
{
	char buf[8];

	/* Never half an escape or half a character: "ab" + "\x1b" needs 7 with the NUL. */
	assert_string_equal(printable_buf("ab\x1b" "cd", buf, 6), "ab");
	assert_string_equal(printable_buf("ab\x1b" "cd", buf, 7), "ab\\x1b");
	assert_string_equal(printable_buf("ab\x1b" "cd", buf, 8), "ab\\x1bc");
	assert_string_equal(printable_buf("abcde\xc3\xa9", buf, 7), "abcde");
	assert_string_equal(printable_buf("abcd", buf, 1), "");
}

static void test_rotating_slots(void **state)
{
	const char *first = printable("one\n");
	int i;

	for (i = 1; i < PRINTABLE_SLOTS; i++)
		assert_ptr_not_equal(printable("other"), first);
	assert_string_equal(first, "one\\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_seq_len),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_rotating_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
