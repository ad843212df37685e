// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>

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
