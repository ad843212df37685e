// SPDX-License-Identifier: GPL-2.0
/*
 * BPF map memory, estimated the way the kernel accounts it (each map type's
 * map_mem_usage(), shown as memlock in /proc/PID/fdinfo): element and bucket sizes of
 * hash tables, per-CPU copies, pages of ring buffers. The structure sizes are those of
 * x86-64 Linux 6.x; they matter only for small maps.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "err.h"
#include "mapmem.h"
#include "mounts.h"
#include "probe.h"
#include "units.h"

#define HTAB_SIZE	   832 /* struct bpf_htab */
#define HTAB_ELEM_SIZE	   48  /* struct htab_elem, before key and value */
#define HTAB_BUCKET_SIZE   16  /* struct bucket */
#define HTAB_LOCKS	   8   /* HASHTAB_MAP_LOCK_COUNT ints per CPU */
#define BPF_ARRAY_HDR	   312 /* struct bpf_array */
#define RINGBUF_SIZE	   304 /* struct bpf_ringbuf_map */
#define RINGBUF_META_PAGES 3
#define STACK_BUCKET_SIZE  16 /* struct stack_map_bucket, before the ips */
#define LLIST_NODE_SIZE	   8

static uint64_t round_up8(uint64_t v)
{
	return (v + 7) & ~7ULL;
}

static uint64_t pow2_at_least(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static uint64_t page_align(uint64_t v, uint64_t page)
{
	return (v + page - 1) / page * page;
}

/* htab_map_mem_usage(): @at_most also counts the elements a NO_PREALLOC map grows to. */
static void htab_cost(const struct bpf_map *map, int ncpus, struct mapmem_cost *c)
{
	enum bpf_map_type type = bpf_map__type(map);
	bool percpu = type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
	bool lru = type == BPF_MAP_TYPE_LRU_HASH || type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
	bool prealloc = lru || !(bpf_map__map_flags(map) & BPF_F_NO_PREALLOC);
	uint64_t entries = bpf_map__max_entries(map), value = round_up8(bpf_map__value_size(map));
	uint64_t elem = HTAB_ELEM_SIZE + round_up8(bpf_map__key_size(map)) + (percpu ? 8 : value);
	uint64_t base, grown;

	base = HTAB_SIZE + HTAB_BUCKET_SIZE * pow2_at_least(entries) +
	       sizeof(int) * HTAB_LOCKS * (uint64_t)ncpus;
	if (prealloc) {
		/* A plain hash keeps one spare element per CPU for updates in place. */
		if (!percpu && !lru)
			entries += ncpus;
		base += elem * entries;
		if (percpu)
			base += value * ncpus * entries;
		else if (!lru)
			base += sizeof(void *) * ncpus;
		c->at_load += base;
		c->at_most += base;
		return;
	}
	grown = (elem + LLIST_NODE_SIZE) * entries;
	if (percpu)
		grown += (LLIST_NODE_SIZE + sizeof(void *) + value * ncpus) * entries;
	c->at_load += base;
	c->at_most += base + grown;
}

static void map_cost(const struct bpf_map *map, int ncpus, uint64_t page, struct mapmem_cost *c)
{
	uint64_t entries = bpf_map__max_entries(map), value = bpf_map__value_size(map), n;

	switch (bpf_map__type(map)) {
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
	case BPF_MAP_TYPE_PERCPU_HASH:
	case BPF_MAP_TYPE_LRU_PERCPU_HASH:
		htab_cost(map, ncpus, c);
		return;
	case BPF_MAP_TYPE_ARRAY:
		if (bpf_map__map_flags(map) & BPF_F_MMAPABLE)
			n = page_align(BPF_ARRAY_HDR, page) +
			    page_align(round_up8(value) * entries, page);
		else
			n = BPF_ARRAY_HDR + round_up8(value) * entries;
		break;
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		n = BPF_ARRAY_HDR + (sizeof(void *) + round_up8(value) * ncpus) * entries;
		break;
	case BPF_MAP_TYPE_RINGBUF:
		n = entries / page;
		n = RINGBUF_SIZE + (RINGBUF_META_PAGES + n) * page +
		    (RINGBUF_META_PAGES + 2 * n) * sizeof(void *);
		break;
	case BPF_MAP_TYPE_STACK_TRACE:
		n = pow2_at_least(entries) * sizeof(void *) + (STACK_BUCKET_SIZE + value) * entries;
		break;
	case BPF_MAP_TYPE_TASK_STORAGE:
	case BPF_MAP_TYPE_INODE_STORAGE:
	case BPF_MAP_TYPE_SK_STORAGE:
		return; /* grows with the objects it is attached to */
	default:
		n = (round_up8(bpf_map__key_size(map)) + round_up8(value)) * entries;
		break;
	}
	c->at_load += n;
	c->at_most += n;
}

void mapmem_estimate(const struct bpf_object *obj, int ncpus, struct mapmem_cost *cost)
{
	uint64_t page = sysconf(_SC_PAGESIZE);
	const struct bpf_map *map;

	memset(cost, 0, sizeof(*cost));
	bpf_object__for_each_map(map, obj) if (bpf_map__autocreate(map))
		map_cost(map, ncpus, page, cost);
}

/* The number after @key in /proc/meminfo, in bytes; 0 if absent. */
static uint64_t meminfo(const char *key)
{
	unsigned long long kib = 0;
	char line[256];
	size_t len = strlen(key);
	FILE *f;

	f = fopen("/proc/meminfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':') {
			sscanf(line + len + 1, "%llu", &kib);
			break;
		}
	fclose(f);
	return kib * 1024;
}

/* A counter or limit file of a cgroup: false if absent or "max" (no limit). */
static bool read_u64_file(const char *dir, const char *name, uint64_t *v)
{
	char path[PATH_MAX];
	unsigned long long val;
	bool ok;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fscanf(f, "%llu", &val) == 1;
	fclose(f);
	*v = val;
	return ok;
}

/*
 * The memory controller's mount point @mnt and this process's cgroup @dir in it: the
 * cgroup2 mount with "0::/path", or the v1 hierarchy whose options include "memory".
 */
static bool memcg_dir(bool v2, char mnt[PATH_MAX], char dir[PATH_MAX])
{
	char line[4096], *opts, *sep, cg[PATH_MAX] = "";
	FILE *f;

	mnt[0] = '\0';
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		opts = strchr(line, ':');
		sep = opts ? strchr(opts + 1, ':') : NULL;
		if (!sep)
			continue;
		/* "4:memory:/path" (v1) or "0::/path" (v2): split at both colons. */
		*opts = '\0';
		*sep = '\0';
		if (v2 ? !strcmp(line, "0") && opts[1] == '\0' : !!strstr(opts + 1, "memory")) {
			snprintf(cg, sizeof(cg), "%s", sep + 1);
			break;
		}
	}
	fclose(f);
	if (!cg[0])
		return false;
	if (mounts_find_fs(NULL, v2 ? "cgroup2" : "cgroup", v2 ? NULL : "memory", mnt, PATH_MAX))
		return false;
	return snprintf(dir, PATH_MAX, "%s%s", mnt, strcmp(cg, "/") ? cg : "") < PATH_MAX;
}

/* The least headroom (limit - usage) from this process's cgroup up to the mount root. */
static bool memcg_headroom(bool v2, uint64_t *headroom, char *what, size_t len)
{
	const char *max_file = v2 ? "memory.max" : "memory.limit_in_bytes";
	const char *cur_file = v2 ? "memory.current" : "memory.usage_in_bytes";
	char dir[PATH_MAX], mnt[PATH_MAX], *slash;
	uint64_t max, cur, room;
	bool found = false;

	if (!memcg_dir(v2, mnt, dir))
		return false;
	for (;;) {
		/* v1 reports "no limit" as a huge page-aligned number. */
		if (read_u64_file(dir, max_file, &max) && read_u64_file(dir, cur_file, &cur) &&
		    max < (1ULL << 60)) {
			room = max > cur ? max - cur : 0;
			if (!found || room < *headroom) {
				*headroom = room;
				snprintf(what, len, "%s of %s", max_file, dir);
			}
			found = true;
		}
		/* Up to the mount root: a limit anywhere above applies here too. */
		slash = strrchr(dir, '/');
		if (strlen(dir) <= strlen(mnt) || !slash || slash == dir)
			break;
		*slash = '\0';
	}
	return found;
}

int mapmem_available(uint64_t *bytes, char *what, size_t len)
{
	uint64_t room;
	char cg[PATH_MAX + 64];

	*bytes = meminfo("MemAvailable");
	if (!*bytes)
		return -ENOENT;
	snprintf(what, len, "MemAvailable");
	if (memcg_headroom(true, &room, cg, sizeof(cg)) && room < *bytes) {
		*bytes = room;
		snprintf(what, len, "%s", cg);
	}
	if (memcg_headroom(false, &room, cg, sizeof(cg)) && room < *bytes) {
		*bytes = room;
		snprintf(what, len, "%s", cg);
	}
	return 0;
}

int mapmem_check(const struct bpf_object *obj, const char *cmd, const char *hint)
{
	char load[UNITS_BUF], most[UNITS_BUF], avail[UNITS_BUF], what[PATH_MAX + 64];
	int ncpus = libbpf_num_possible_cpus();
	struct mapmem_cost cost;
	uint64_t bytes;

	if (ncpus <= 0)
		return 0; /* loading will say */
	mapmem_estimate(obj, ncpus, &cost);
	fmt_bytes(cost.at_load, load, sizeof(load));
	fmt_bytes(cost.at_most, most, sizeof(most));
	if (mapmem_available(&bytes, what, sizeof(what))) {
		info("BPF maps: %s of kernel memory at load (%" PRIu64
		     " bytes), up to %s when full "
		     "(%d CPUs)",
		     load, cost.at_load, most, ncpus);
		return 0;
	}
	fmt_bytes(bytes, avail, sizeof(avail));
	info("BPF maps: %s of kernel memory at load (%" PRIu64 " bytes), up to %s when full "
	     "(%d CPUs); %s available (%s), half of it allowed",
	     load, cost.at_load, most, ncpus, avail, what);
	/* Half: the machine must keep running while its tracer's maps fill up. */
	if (cost.at_most <= bytes / 2)
		return 0;
	return fail(-ENOMEM,
		    "%s's BPF maps would take up to %s of kernel memory (%s at load), more than "
		    "half of the %s this machine can give (%s): %s",
		    cmd, most, load, avail, what, hint);
}
