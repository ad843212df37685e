/* SPDX-License-Identifier: GPL-2.0 */
/* Reading BPF maps from user space: helpers the commands share. */
#ifndef IOSPAN_BPFMAP_H
#define IOSPAN_BPFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Sums each of the first @nr entries of a BPF_MAP_TYPE_PERCPU_ARRAY of u64 over the
 * possible CPUs into out[0..nr). An entry that cannot be read counts as 0.
 */
int bpfmap_sum_percpu_u64(int map_fd, uint32_t nr, uint64_t *out);

struct bpf_map;

/*
 * Maps the values of @map, a BPF_MAP_TYPE_ARRAY created with BPF_F_MMAPABLE, read-only
 * into *@values (value i at i * bpfmap_array_stride()): a table read whole costs no
 * syscall and no copy. Unmap with bpfmap_array_unmap(). 0 or -errno.
 */
int bpfmap_array_map(const struct bpf_map *map, const void **values);
void bpfmap_array_unmap(const struct bpf_map *map, const void *values);
/* The bytes from one value of a mapped array to the next (the kernel's element size). */
size_t bpfmap_array_stride(const struct bpf_map *map);

/* One entry of a walk: nonzero stops it (bpfmap_walk() then returns 0). */
typedef int (*bpfmap_entry_fn)(const void *key, const void *vals, void *arg);

/*
 * Gives every entry of a hash map to @fn: @vals is its value, or for a per-CPU map
 * (@percpu) one value per possible CPU, each 8-byte aligned. Read in batches of a few
 * hundred entries a syscall where the kernel can (5.6+), key by key before. Entries
 * deleted during the walk are skipped. 0 or -errno.
 */
int bpfmap_walk(int map_fd, size_t key_size, size_t val_size, bool percpu, bpfmap_entry_fn fn,
		void *arg);

/* Folds one entry of a per-CPU hash map (@vals: one value per possible CPU) into @row. */
typedef void (*bpfmap_fold_fn)(void *row, const void *key, const void *vals, int ncpus, void *arg);

/*
 * Reads every entry of a BPF_MAP_TYPE_PERCPU_HASH into a new array of rows of
 * @row_size bytes (zeroed, then given to @fold), returned in *@rows (free() it) with
 * its length in *@nr. Entries deleted during the walk are skipped. 0 or -errno.
 */
int bpfmap_collect_percpu(int map_fd, size_t key_size, size_t val_size, size_t row_size,
			  bpfmap_fold_fn fold, void *arg, void **rows, size_t *nr);

/* Adds the row @from to @into, the row of the same key. */
typedef void (*bpfmap_merge_fn)(void *into, const void *from);

/*
 * bpfmap_collect_percpu() of @map_fd and of @spill_fd, a map of the same types that
 * takes the entries the BPF side could not create in the first (its allocator had no
 * memory at that moment): rows sorted by @cmp, which compares keys, and the rows of one
 * key combined by @merge.
 */
int bpfmap_collect_percpu_spilled(int map_fd, int spill_fd, size_t key_size, size_t val_size,
				  size_t row_size, bpfmap_fold_fn fold, void *arg,
				  int (*cmp)(const void *, const void *), bpfmap_merge_fn merge,
				  void **rows, size_t *nr);

/*
 * Readies each CPU's cache of the BPF memory allocator behind a hash map made with
 * BPF_F_NO_PREALLOC, before any program runs: one insert and delete of a zero key on
 * each CPU this thread may run on (the map must be empty). The kernel fills a new
 * cache with a few objects and refills it only when interrupts are enabled, so the
 * first burst of inserts in an interrupt would fail; the first use refills it to its
 * working size at once. 0 or -errno.
 */
int bpfmap_warm_alloc(int map_fd, size_t key_size, size_t val_size, bool percpu);

struct bpf_object;

/*
 * Runs of @obj's loaded programs the kernel skipped (bpf_prog_info.recursion_misses):
 * a tracing program is not run inside itself on the same CPU, so a hook that fires
 * in an interrupt while its program runs in a task on that CPU loses that event.
 * 0 where the kernel does not count them (before 5.12).
 */
uint64_t bpfobj_missed_runs(const struct bpf_object *obj);

/* What the kernel says of one loaded program. */
struct bpf_prog_stat {
	const char *name;      /* the program's, valid while @obj is */
	uint64_t run_ns, runs; /* counted while kernel.bpf_stats_enabled is 1 */
	uint64_t missed;       /* recursion_misses, as above */
};

/* The loaded programs of @obj, at most @max of them into @out; how many. */
int bpfobj_prog_stats(const struct bpf_object *obj, struct bpf_prog_stat *out, int max);

#endif
