// SPDX-License-Identifier: GPL-2.0
/* Captured dentry components to paths, and the (dev, ino) path cache. */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "testutil.h"
#include "fspath.h"

/* Builds a file_path from components given root first (the kernel stores leaf first). */
static void make_path(struct file_path *p, const char *const *comp, int n, unsigned int flags)
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
	struct file_path p;
	char out[64];

	make_path(&p, abc, 3, 0);
	fspath_from_components(&p, out, sizeof(out));
	assert_string_equal(out, "/a/b/c.txt");
	make_path(&p, abc, 0, 0);
	fspath_from_components(&p, out, sizeof(out));
	assert_string_equal(out, "/");
	make_path(&p, abc, 2, FILE_PATH_TRUNCATED);
	fspath_from_components(&p, out, sizeof(out));
	assert_string_equal(out, ".../a/b");
	/* A short buffer truncates, never overflows. */
	make_path(&p, abc, 3, 0);
	fspath_from_components(&p, out, 5);
	assert_string_equal(out, "/a/b");
}

/* A paths map of one entry, for the cache to read. */
struct fake_map {
	struct file_key key;
	struct file_path path;
	int lookups;
};

static int fake_lookup(void *arg, const struct file_key *key, struct file_path *p)
{
	struct fake_map *m = arg;

	m->lookups++;
	if (memcmp(key, &m->key, sizeof(*key)))
		return -ENOENT;
	*p = m->path;
	return 0;
}

static void test_cache(void **state)
{
	const char *const comp[] = {"x", "y"}, *const moved[] = {"x", "z"};
	struct fake_map m = {.key = {.dev = KDEV(250, 7), .gen = 5, .ino = 12}};
	struct fspath_cache *c = NULL;
	const char *s;

	assert_int_equal(fspath_cache_new(fake_lookup, &m, &c), 0);
	make_path(&m.path, comp, 2, FILE_PATH_DELETED);
	m.path.stamp = 0x1234567800000001ULL;
	/* Another generation of the same inode number is another file. */
	assert_null(fspath_current(c, KDEV(250, 7), 6, 12));
	assert_null(fspath_of_id(c, KDEV(250, 7), 12, 6));
	/* No such device is mounted: the path stays relative to its device, unchecked. */
	s = fspath_of_id(c, KDEV(250, 7), 12, 5 | (1ULL << 32));
	assert_string_equal(s, "250:7:/x/y (deleted)");
	s = fspath_current(c, KDEV(250, 7), 5, 12);
	assert_string_equal(s, "250:7:/x/y (deleted)");
	/* The same stamp: no lookup. */
	m.lookups = 0;
	assert_string_equal(fspath_of_id(c, KDEV(250, 7), 12, 5 | (1ULL << 32)),
			    "250:7:/x/y (deleted)");
	assert_int_equal(m.lookups, 0);
	/* Captured again (renamed): a record with the new stamp reads it, a report too. */
	make_path(&m.path, moved, 2, 0);
	m.path.stamp = 2;
	assert_string_equal(fspath_of_id(c, KDEV(250, 7), 12, 5 | (2ULL << 32)), "250:7:/x/z");
	assert_int_equal(m.lookups, 1);
	fspath_cache_round(c);
	assert_string_equal(fspath_current(c, KDEV(250, 7), 5, 12), "250:7:/x/z");
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
