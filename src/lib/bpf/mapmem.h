/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a command's BPF maps cost in kernel memory, and whether this machine can give
 * it, checked between skeleton open and load: a size option that asks too much is
 * refused in one line before anything is allocated, instead of the kernel locking
 * gigabytes (or failing the load with a bare ENOMEM).
 */
#ifndef IOSPAN_MAPMEM_H
#define IOSPAN_MAPMEM_H

#include <stddef.h>
#include <stdint.h>

struct bpf_object;

struct mapmem_cost {
	uint64_t at_load; /* allocated when the maps are created (preallocated elements) */
	uint64_t at_most; /* with every map full, on @ncpus CPUs */
};

/*
 * Kernel memory of the maps @obj will create (opened, not loaded: sizes as set by
 * bpf_map__set_max_entries()), by the kernel's own accounting (what /proc/PID/fdinfo
 * shows as memlock) to within a few percent. Task storage grows with the tasks seen
 * and is not counted.
 */
void mapmem_estimate(const struct bpf_object *obj, int ncpus, struct mapmem_cost *cost);

/*
 * Memory this process can still be given: the smaller of MemAvailable and the headroom
 * of its memory cgroup (limit minus usage, the tightest of its ancestors; v2 or v1).
 * @what says which ("MemAvailable", "memory cgroup /a/b"). 0 or a negative errno.
 */
int mapmem_available(uint64_t *bytes, char *what, size_t len);

/*
 * The check commands run before loading: under -v, what the maps cost; a runtime
 * failure (-ENOMEM, exit 1) naming @cmd, the cost and the limit when the maps could
 * take more than half of what this machine can give, with @hint ("give a smaller
 * --max-entries") to say what to change.
 */
int mapmem_check(const struct bpf_object *obj, const char *cmd, const char *hint);

#endif
