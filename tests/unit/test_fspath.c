// SPDX-License-Identifier: GPL-2.0
/* Captured dentry components to paths, and the (dev, ino) path cache. */
#include <string.h>

#include "err.h"
#include "testutil.h"
#include "fspath.h"

/* Builds a top_path from components given root first (the kernel stores leaf first). */
static void make_path(struct top_path *p, const char *const *comp, int n, unsigned int flags)
{
	size_t pos = 0;
	int i;

	memset(p, 0, sizeof(*p));
	for (i = n - 1; i >= 0; i--) {
		strcpy(p->buf + pos, comp[i]);
		pos += strlen(comp[i]) + 1;
	}
	p->depth = n;
	p->flags = flags;
}

static void test_components(void **state)
{
	const char *const abc[] = {"a", "b", "c.txt"};
	struct top_path p;
	char out[64];

	make_path(&p, abc, 3, 0);
	fspath_from_components(&p, out, sizeof(out));
	assert_string_equal(out, "/a/b/c.txt");
	make_path(&p, abc, 0, 0);
	fspath_from_components(&p, out, sizeof(out));
	assert_string_equal(out, "/");
	make_path(&p, abc, 2, TOP_PATH_TRUNCATED);
	fspath_from_components(&p, out, sizeof(out));
	assert_string_equal(out, ".../a/b");
	/* A short buffer truncates, never overflows. */
	make_path(&p, abc, 3, 0);
	fspath_from_components(&p, out, 5);
	assert_string_equal(out, "/a/b");
}

static void test_cache(void **state)
{
	const char *const comp[] = {"x", "y"};
	struct fspath_cache *c = NULL;
	struct top_path p;
	const char *s;

	assert_int_equal(fspath_cache_new(&c), 0);
	assert_null(fspath_cache_get(c, KDEV(250, 7), 12));
	make_path(&p, comp, 2, TOP_PATH_DELETED);
	/* No such device is mounted: the path stays relative to its device. */
	s = fspath_cache_put(c, KDEV(250, 7), 12, &p);
	assert_string_equal(s, "250:7:/x/y (deleted)");
	assert_string_equal(fspath_cache_get(c, KDEV(250, 7), 12), "250:7:/x/y (deleted)");
	assert_null(fspath_cache_get(c, KDEV(250, 7), 13));
	assert_null(fspath_cache_get(c, KDEV(250, 8), 12));
	fspath_cache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_components),
		cmocka_unit_test(test_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
