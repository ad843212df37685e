// SPDX-License-Identifier: GPL-2.0
/* A command's counters: growth since the last read, losses, JSON and text names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "counters.h"
#include "json.h"

static const struct counter_def defs[] = {
	{.name = "map_full"},
	{.name = "completions_unseen", .words = "completions no program saw"},
	{.name = "bios_unmatched", .info = true},
};
#define NR (sizeof(defs) / sizeof(defs[0]))

static void test_since(void **state)
{
	uint64_t prev[NR] = {0}, v[NR] = {5, 0, 7};

	counters_since(v, prev, NR);
	assert_int_equal(v[0], 5);
	assert_int_equal(v[2], 7);
	assert_int_equal(prev[0], 5);
	v[0] = 9, v[1] = 3, v[2] = 7;
	counters_since(v, prev, NR);
	assert_int_equal(v[0], 4);
	assert_int_equal(v[1], 3);
	assert_int_equal(v[2], 0);
	/* Less than before: the count started again (a map re-created), all of it is new. */
	v[0] = 2, v[1] = 3, v[2] = 7;
	counters_since(v, prev, NR);
	assert_int_equal(v[0], 2);
	assert_int_equal(prev[0], 2);
	assert_int_equal(v[1], 0);
}

static void test_lost_leaves_out_information(void **state)
{
	uint64_t v[NR] = {2, 3, 1000};

	assert_int_equal(counters_lost(defs, v, NR), 5);
	v[0] = v[1] = 0;
	assert_int_equal(counters_lost(defs, v, NR), 0);
}

static void test_json_and_words(void **state)
{
	uint64_t v[NR] = {1, 0, 18446744073709551615ULL};
	char *data = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);
	struct jw *jw = jw_new(f);

	jw_start_object(jw);
	counters_json(jw, defs, v, NR);
	jw_end_object(jw);
	jw_free(jw);
	fclose(f);
	assert_string_equal(data, "{\"map_full\":1,\"completions_unseen\":0,"
				  "\"bios_unmatched\":18446744073709551615}\n");
	free(data);
	assert_string_equal(counter_words(&defs[0]), "map_full");
	assert_string_equal(counter_words(&defs[1]), "completions no program saw");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_since),
		cmocka_unit_test(test_lost_leaves_out_information),
		cmocka_unit_test(test_json_and_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
