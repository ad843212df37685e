// SPDX-License-Identifier: GPL-2.0
/* Growable arrays (src/lib/util/array.h): room made by doubling, nothing lost on failure. */
#include <stdint.h>
#include <stdlib.h>

#include "array.h"
#include "testutil.h"

static void test_grows_from_first_then_doubles(void **state)
{
	uint64_t *v = NULL;
	size_t nr, cap = 0;

	(void)state;
	for (nr = 0; nr < 100; nr++) {
		assert_int_equal(ARRAY_RESERVE(v, nr, cap, 8), 0);
		assert_true(cap > nr);
		v[nr] = nr;
	}
	assert_int_equal(cap, 128); /* 8, 16, 32, 64, 128 */
	for (nr = 0; nr < 100; nr++)
		assert_int_equal(v[nr], nr);
	/* Room left: nothing changes. */
	assert_int_equal(ARRAY_RESERVE(v, 100, cap, 8), 0);
	assert_int_equal(cap, 128);
	free(v);
}

static void test_too_large_leaves_the_array(void **state)
{
	uint64_t *v = malloc(4 * sizeof(*v)), *before = v;
	size_t cap = SIZE_MAX / 8; /* doubling it overflows the byte count */

	(void)state;
	assert_non_null(v);
	v[0] = 42;
	assert_int_equal(ARRAY_RESERVE(v, cap, cap, 8), -ENOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, SIZE_MAX / 8);
	assert_int_equal(v[0], 42);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grows_from_first_then_doubles),
		cmocka_unit_test(test_too_large_leaves_the_array),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
