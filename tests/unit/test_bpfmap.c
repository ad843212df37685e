// SPDX-License-Identifier: GPL-2.0
/* Reading per-CPU hash maps in batches (needs CAP_BPF: the tests run as root). */
#include "testutil.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfmap.h"

struct row {
	uint32_t key;
	uint64_t sum;
};

static void fold_sum(void *row, const void *key, const void *vals, int ncpus, void *arg)
{
	const uint64_t *v = vals;
	struct row *r = row;
	int c;

	(void)arg;
	r->key = *(const uint32_t *)key;
	for (c = 0; c < ncpus; c++)
		r->sum += v[c];
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* More entries than one batch, every CPU's value of each summed: exactly what was put. */
static void test_collect_percpu(void **state)
{
	int ncpus = libbpf_num_possible_cpus(), fd, c;
	uint32_t key, n = 1000;
	struct row *rows = NULL;
	uint64_t *vals;
	size_t nr = 0;

	(void)state;
	assert_true(ncpus > 0);
	fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_HASH, "test_collect", sizeof(uint32_t),
			    sizeof(uint64_t), 4096, NULL);
	if (fd < 0 && geteuid()) {
		skip(); /* no CAP_BPF: the suite runs it as root */
		return;
	}
	assert_true(fd >= 0);
	vals = calloc(ncpus, sizeof(*vals));
	assert_non_null(vals);
	for (key = 0; key < n; key++) {
		for (c = 0; c < ncpus; c++)
			vals[c] = key * 10 + c;
		assert_int_equal(bpf_map_update_elem(fd, &key, vals, BPF_ANY), 0);
	}
	assert_int_equal(bpfmap_collect_percpu(fd, sizeof(uint32_t), sizeof(uint64_t),
					       sizeof(struct row), fold_sum, NULL, (void **)&rows,
					       &nr),
			 0);
	assert_int_equal(nr, n);
	qsort(rows, nr, sizeof(*rows), row_cmp);
	for (key = 0; key < n; key++) {
		assert_int_equal(rows[key].key, key);
		assert_int_equal(rows[key].sum,
				 (uint64_t)key * 10 * ncpus + (uint64_t)ncpus * (ncpus - 1) / 2);
	}
	free(rows);
	/* An empty map: no rows, no error. */
	for (key = 0; key < n; key++)
		assert_int_equal(bpf_map_delete_elem(fd, &key), 0);
	rows = NULL;
	assert_int_equal(bpfmap_collect_percpu(fd, sizeof(uint32_t), sizeof(uint64_t),
					       sizeof(struct row), fold_sum, NULL, (void **)&rows,
					       &nr),
			 0);
	assert_int_equal(nr, 0);
	free(rows);
	free(vals);
	close(fd);
}

struct walk_seen {
	uint8_t seen[1000];
	unsigned int n, stop_after;
	uint64_t bad;
};

static int walk_note(const void *key, const void *val, void *arg)
{
	uint32_t k = *(const uint32_t *)key;
	struct walk_seen *w = arg;

	if (k >= 1000 || w->seen[k]++ || *(const uint64_t *)val != (uint64_t)k * 7 + 1)
		w->bad++;
	return ++w->n == w->stop_after;
}

/* A plain hash map, more entries than one batch: each once with its value; a stop. */
static void test_walk_hash(void **state)
{
	struct walk_seen w = {};
	uint32_t key, n = 1000;
	uint64_t val;
	int fd;

	(void)state;
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "test_walk", sizeof(uint32_t), sizeof(uint64_t),
			    4096, NULL);
	if (fd < 0 && geteuid()) {
		skip();
		return;
	}
	assert_true(fd >= 0);
	for (key = 0; key < n; key++) {
		val = (uint64_t)key * 7 + 1;
		assert_int_equal(bpf_map_update_elem(fd, &key, &val, BPF_ANY), 0);
	}
	assert_int_equal(bpfmap_walk(fd, sizeof(uint32_t), sizeof(uint64_t), false, walk_note, &w),
			 0);
	assert_int_equal(w.n, n);
	assert_int_equal(w.bad, 0);
	/* The callback stops it: no more entries after its nonzero return. */
	memset(&w, 0, sizeof(w));
	w.stop_after = 10;
	assert_int_equal(bpfmap_walk(fd, sizeof(uint32_t), sizeof(uint64_t), false, walk_note, &w),
			 0);
	assert_int_equal(w.n, 10);
	assert_int_equal(w.bad, 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_collect_percpu),
		cmocka_unit_test(test_walk_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
