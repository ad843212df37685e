/* SPDX-License-Identifier: GPL-2.0 */
/* Reading BPF maps from user space: helpers the commands share. */
#ifndef IOSPAN_BPFMAP_H
#define IOSPAN_BPFMAP_H

#include <stdint.h>

/*
 * Sums each of the first @nr entries of a BPF_MAP_TYPE_PERCPU_ARRAY of u64 over the
 * possible CPUs into out[0..nr). An entry that cannot be read counts as 0.
 */
int bpfmap_sum_percpu_u64(int map_fd, uint32_t nr, uint64_t *out);

#endif
