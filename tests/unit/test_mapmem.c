// SPDX-License-Identifier: GPL-2.0
/*
 * BPF map memory as estimated before load (src/lib/bpf/mapmem.c) against what the kernel
 * charges for the same map: each case reshapes one map of the probe object (opened, not
 * loaded), estimates it alone, then creates that map with bpf_map_create() and reads its
 * "memlock" from /proc/self/fdinfo. Needs CAP_BPF (the tests run as root).
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "mapmem.h"
#include "probe.skel.h"

struct map_case {
	const char *what;
	enum bpf_map_type type;
	uint32_t key, value, entries, flags;
};

static const struct map_case cases[] = {
	{"hash, preallocated", BPF_MAP_TYPE_HASH, 16, 64, 10000, 0},
	{"hash, 1 CPU's spare elements matter", BPF_MAP_TYPE_HASH, 8, 8, 4096, 0},
	{"hash, not preallocated (empty)", BPF_MAP_TYPE_HASH, 16, 64, 10000, BPF_F_NO_PREALLOC},
	{"LRU hash", BPF_MAP_TYPE_LRU_HASH, 24, 48, 16384, 0},
	{"per-CPU hash", BPF_MAP_TYPE_PERCPU_HASH, 8, 16, 4096, 0},
	{"array", BPF_MAP_TYPE_ARRAY, 4, 24, 10000, 0},
	{"mmapable array", BPF_MAP_TYPE_ARRAY, 4, 40, 5000, BPF_F_MMAPABLE},
	{"per-CPU array", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 4096, 0},
	{"ring buffer", BPF_MAP_TYPE_RINGBUF, 0, 0, 1 << 20, 0},
	{"stack traces", BPF_MAP_TYPE_STACK_TRACE, 4, 127 * 8, 1024, 0},
};

/* The "memlock:" of map @fd in /proc/self/fdinfo: what the kernel charges for it. */
static long long memlock_of(int fd)
{
	char path[64], line[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void test_estimates_match_the_kernel(void **state)
{
	int ncpus = libbpf_num_possible_cpus();
	const struct map_case *c;
	struct bpf_object *obj;
	struct bpf_map *map, *m;
	struct mapmem_cost cost;
	const void *elf;
	size_t i, sz;

	if (geteuid()) {
		print_message("skipped: creating maps needs CAP_BPF\n");
		skip();
	}
	assert_true(ncpus > 0);
	elf = probe_bpf__elf_bytes(&sz);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = cases[i].flags);
		long long kernel;
		double est;
		int fd;

		c = &cases[i];
		obj = bpf_object__open_mem(elf, sz, NULL);
		assert_non_null(obj);
		map = bpf_object__find_map_by_name(obj, "probe_hits");
		assert_non_null(map);
		/* Only this map counts, reshaped as the case says. */
		bpf_object__for_each_map(m, obj) if (m != map) bpf_map__set_autocreate(m, false);
		assert_int_equal(bpf_map__set_type(map, c->type), 0);
		assert_int_equal(bpf_map__set_key_size(map, c->key), 0);
		assert_int_equal(bpf_map__set_value_size(map, c->value), 0);
		assert_int_equal(bpf_map__set_max_entries(map, c->entries), 0);
		assert_int_equal(bpf_map__set_map_flags(map, c->flags), 0);
		mapmem_estimate(obj, ncpus, &cost);
		bpf_object__close(obj);

		fd = bpf_map_create(c->type, NULL, c->key, c->value, c->entries, &opts);
		assert_true(fd >= 0);
		kernel = memlock_of(fd);
		close(fd);
		assert_true(kernel > 0);
		/* What the map holds when created: an empty map made on demand has no elements. */
		est = cost.at_load;
		print_message("%-40s estimated %10.0f, kernel %10lld (%+.2f%%)\n", c->what, est,
			      kernel, 100.0 * (est - kernel) / kernel);
		/*
		 * Within 0.1%: on 6.18 the estimate is exact but for the stack map's
		 * buckets (0.03%), so a page or an element size missed fails. Other
		 * kernels' struct sizes differ by a few bytes (a few percent on tiny maps).
		 */
		if (est < kernel * 0.999 || est > kernel * 1.001) {
			print_error("%s: estimated %.0f bytes, the kernel charges %lld\n", c->what,
				    est, kernel);
			fail();
		}
		/* Preallocated maps are full from the start. */
		if (c->type != BPF_MAP_TYPE_HASH || !(c->flags & BPF_F_NO_PREALLOC))
			assert_int_equal(cost.at_load, cost.at_most);
		else
			assert_true(cost.at_most > cost.at_load + (uint64_t)c->entries * c->value);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimates_match_the_kernel),
	};

	libbpf_set_print(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
