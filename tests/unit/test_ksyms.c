// SPDX-License-Identifier: GPL-2.0
/* Kernel symbols from a kallsyms-format file: order, lookups, modules, hidden addresses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testutil.h"
#include "ksyms.h"

static char path[64];

static void write_file(const char *text)
{
	int fd;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/iospan-ksyms-XXXXXX");
	fd = mkstemp(path);

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_lookup(void **state)
{
	char buf[128];
	const struct ksym *s;
	struct ksyms *ks;
	uint64_t off;

	/* Out of order on purpose, with an alias and a module symbol. */
	write_file("ffffffff81002000 T io_schedule\n"
		   "ffffffff81000000 T _text\n"
		   "ffffffff81001000 t folio_wait_bit_common\n"
		   "ffffffff81001000 t another_alias\n"
		   "ffffffffc0001000 t ext4_file_read_iter\t[ext4]\n"
		   "garbage line\n");
	assert_int_equal(ksyms_load(path, &ks), 0);
	unlink(path);
	assert_int_equal(ksyms_count(ks), 5);

	s = ksyms_find(ks, 0xffffffff81002010ULL, &off);
	assert_non_null(s);
	assert_string_equal(s->name, "io_schedule");
	assert_int_equal(off, 0x10);
	/* Aliases: the first in name order, deterministically. */
	s = ksyms_find(ks, 0xffffffff81001004ULL, &off);
	assert_string_equal(s->name, "another_alias");
	assert_null(ksyms_find(ks, 0xffffffff80000000ULL, &off));

	assert_string_equal(ksyms_format(ks, 0xffffffffc0001020ULL, buf, sizeof(buf)),
			    "ext4_file_read_iter+0x20 [ext4]");
	assert_string_equal(ksyms_format(ks, 0x10, buf, sizeof(buf)), "0x10");
	assert_int_equal(ksyms_addr(ks, "io_schedule"), 0xffffffff81002000ULL);
	assert_int_equal(ksyms_addr(ks, "nope"), 0);
	ksyms_free(ks);
}

static void test_hidden(void **state)
{
	struct ksyms *ks = NULL;

	/* kptr_restrict: every address reads as zero. */
	write_file("0000000000000000 T _text\n0000000000000000 T io_schedule\n");
	assert_int_equal(ksyms_load(path, &ks), -EPERM);
	unlink(path);
	assert_null(ks);
	write_file("");
	assert_int_equal(ksyms_load(path, &ks), -ENOENT);
	unlink(path);
	assert_int_equal(ksyms_load("/nonexistent/kallsyms", &ks), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_hidden),
	};

	return cmocka_run_group_tests_name("ksyms", tests, NULL, NULL);
}
