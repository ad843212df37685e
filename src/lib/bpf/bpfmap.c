// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfmap.h"

int bpfmap_sum_percpu_u64(int map_fd, uint32_t nr, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus(), cpu;
	uint64_t *vals;
	uint32_t i;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(map_fd, &i, vals))
			continue;
		for (cpu = 0; cpu < ncpus; cpu++)
			out[i] += vals[cpu];
	}
	free(vals);
	return 0;
}

int bpfmap_warm_alloc(int map_fd, size_t key_size, size_t val_size, bool percpu)
{
	int ncpus = libbpf_num_possible_cpus(), cpu, err = 0;
	size_t nvals = percpu ? (size_t)ncpus : 1;
	cpu_set_t allowed, one;
	void *key, *vals;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;
	key = calloc(1, key_size);
	/* A per-CPU value is passed as one 8-byte aligned copy per possible CPU. */
	vals = calloc(nvals, (val_size + 7) & ~(size_t)7);
	if (!key || !vals) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (cpu = 0; cpu < ncpus && cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			continue; /* offline */
		if (!bpf_map_update_elem(map_fd, key, vals, BPF_NOEXIST))
			bpf_map_delete_elem(map_fd, key);
	}
	if (sched_setaffinity(0, sizeof(allowed), &allowed))
		err = -errno;
cleanup:
	free(key);
	free(vals);
	return err;
}

/* Entries read per BPF_MAP_LOOKUP_BATCH call: a thousand entries in a few syscalls. */
#define WALK_BATCH 256
/* The kernel's own ENOTSUPP, which bpf() returns for a command a map type lacks. */
#define KERNEL_ENOTSUPP 524

size_t bpfmap_array_stride(const struct bpf_map *map)
{
	return ((size_t)bpf_map__value_size(map) + 7) & ~(size_t)7;
}

static size_t array_bytes(const struct bpf_map *map)
{
	return bpfmap_array_stride(map) * bpf_map__max_entries(map);
}

int bpfmap_array_map(const struct bpf_map *map, const void **values)
{
	void *p = mmap(NULL, array_bytes(map), PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);

	if (p == MAP_FAILED)
		return -errno;
	*values = p;
	return 0;
}

void bpfmap_array_unmap(const struct bpf_map *map, const void *values)
{
	if (values)
		munmap((void *)values, array_bytes(map));
}

/*
 * The batched walk (5.6+): -EINVAL or -EOPNOTSUPP before any entry if the kernel or the
 * map type has no batch lookup, which the caller then walks key by key (*@seen says
 * whether any entry was given to @fn).
 */
static int walk_batched(int map_fd, size_t key_size, size_t val_bytes, bpfmap_entry_fn fn,
			void *arg, bool *seen)
{
	uint64_t in_batch = 0, out_batch = 0;
	__u32 count, batch = WALK_BATCH, i;
	char *keys = NULL, *vals = NULL;
	bool first = true;
	int err = 0;

	for (;;) {
		if (!keys) {
			keys = calloc(batch, key_size);
			vals = calloc(batch, val_bytes);
			if (!keys || !vals) {
				err = -ENOMEM;
				goto cleanup;
			}
		}
		count = batch;
		err = bpf_map_lookup_batch(map_fd, first ? NULL : &in_batch, &out_batch, keys, vals,
					   &count, NULL);
		if (err == -ENOSPC && !count) {
			/* One bucket holds more entries than the buffer: a bigger one. */
			free(keys);
			free(vals);
			keys = vals = NULL;
			batch *= 2;
			continue;
		}
		if (err && err != -ENOENT)
			goto cleanup;
		for (i = 0; i < count; i++) {
			*seen = true;
			if (fn(keys + i * key_size, vals + i * val_bytes, arg)) {
				err = -ECANCELED;
				goto cleanup;
			}
		}
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		in_batch = out_batch;
		first = false;
	}
cleanup:
	free(keys);
	free(vals);
	return err;
}

int bpfmap_walk(int map_fd, size_t key_size, size_t val_size, bool percpu, bpfmap_entry_fn fn,
		void *arg)
{
	int ncpus = libbpf_num_possible_cpus(), err;
	/* A per-CPU map's values come 8-byte aligned, one per possible CPU. */
	size_t val_bytes = percpu ? ((val_size + 7) & ~(size_t)7) * ncpus : val_size;
	char *keys = NULL, *key, *next;
	void *vals = NULL;
	bool first = true, seen = false;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	err = walk_batched(map_fd, key_size, val_bytes, fn, arg, &seen);
	if (err == -ECANCELED)
		return 0;
	if (!err || (err != -EINVAL && err != -EOPNOTSUPP && err != -KERNEL_ENOTSUPP) || seen)
		return err;
	/* Key by key (kernels before 5.6). */
	err = 0;
	vals = calloc(1, val_bytes);
	keys = calloc(2, key_size);
	if (!vals || !keys) {
		err = -ENOMEM;
		goto cleanup;
	}
	key = keys;
	next = keys + key_size;
	while (!bpf_map_get_next_key(map_fd, first ? NULL : key, next)) {
		memcpy(key, next, key_size);
		first = false;
		if (bpf_map_lookup_elem(map_fd, key, vals))
			continue; /* deleted meanwhile */
		if (fn(key, vals, arg))
			break;
	}
cleanup:
	free(keys);
	free(vals);
	return err;
}

/* bpfmap_collect_percpu()'s rows as the walk gives it entries. */
struct collect {
	size_t row_size;
	int ncpus;
	bpfmap_fold_fn fold;
	void *arg;
	char *rows;
	size_t cap, n;
	int err;
};

static int collect_entry(const void *key, const void *vals, void *arg)
{
	struct collect *c = arg;
	size_t want = c->cap ? c->cap : 256;
	char *grown;

	if (c->n == c->cap) {
		while (want <= c->n)
			want *= 2;
		grown = realloc(c->rows, want * c->row_size);
		if (!grown) {
			c->err = -ENOMEM;
			return 1;
		}
		c->rows = grown;
		c->cap = want;
	}
	memset(c->rows + c->n * c->row_size, 0, c->row_size);
	c->fold(c->rows + c->n * c->row_size, key, vals, c->ncpus, c->arg);
	c->n++;
	return 0;
}

int bpfmap_collect_percpu(int map_fd, size_t key_size, size_t val_size, size_t row_size,
			  bpfmap_fold_fn fold, void *arg, void **rows_out, size_t *nr_out)
{
	struct collect c = {
		.row_size = row_size,
		.ncpus = libbpf_num_possible_cpus(),
		.fold = fold,
		.arg = arg,
	};
	int err = bpfmap_walk(map_fd, key_size, val_size, true, collect_entry, &c) ?: c.err;

	if (err) {
		free(c.rows);
		return err;
	}
	*rows_out = c.rows;
	*nr_out = c.n;
	return 0;
}

int bpfmap_collect_percpu_spilled(int map_fd, int spill_fd, size_t key_size, size_t val_size,
				  size_t row_size, bpfmap_fold_fn fold, void *arg,
				  int (*cmp)(const void *, const void *), bpfmap_merge_fn merge,
				  void **rows_out, size_t *nr_out)
{
	char *rows = NULL, *spill = NULL, *grown;
	size_t nr = 0, nr_spill = 0, i, n;
	int err;

	err = bpfmap_collect_percpu(map_fd, key_size, val_size, row_size, fold, arg, (void **)&rows,
				    &nr);
	if (err)
		goto cleanup;
	err = bpfmap_collect_percpu(spill_fd, key_size, val_size, row_size, fold, arg,
				    (void **)&spill, &nr_spill);
	if (err)
		goto cleanup;
	if (nr_spill) {
		grown = realloc(rows, (nr + nr_spill) * row_size);
		if (!grown) {
			err = -ENOMEM;
			goto cleanup;
		}
		rows = grown;
		memcpy(rows + nr * row_size, spill, nr_spill * row_size);
		nr += nr_spill;
	}
	if (nr)
		qsort(rows, nr, row_size, cmp);
	/* Only keys in both maps repeat (each map has a key once). */
	for (i = 1, n = nr ? 1 : 0; i < nr; i++) {
		if (!cmp(rows + (n - 1) * row_size, rows + i * row_size))
			merge(rows + (n - 1) * row_size, rows + i * row_size);
		else if (n++ != i)
			memcpy(rows + (n - 1) * row_size, rows + i * row_size, row_size);
	}
	*rows_out = rows;
	*nr_out = n;
	rows = NULL;
cleanup:
	free(rows);
	free(spill);
	return err;
}

int bpfobj_prog_stats(const struct bpf_object *obj, struct bpf_prog_stat *out, int max)
{
	struct bpf_program *prog;
	int n = 0;

	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (n == max || fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		out[n++] = (struct bpf_prog_stat){
			.name = bpf_program__name(prog),
			.run_ns = info.run_time_ns,
			.runs = info.run_cnt,
			.missed = info.recursion_misses,
		};
	}
	return n;
}

uint64_t bpfobj_missed_runs(const struct bpf_object *obj)
{
	struct bpf_prog_stat st[128];
	uint64_t sum = 0;
	int i, n = bpfobj_prog_stats(obj, st, 128);

	for (i = 0; i < n; i++)
		sum += st[i].missed;
	return sum;
}
