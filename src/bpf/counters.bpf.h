/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A command's counters: what it lost or approximated, and what it did, each an index of
 * the command's enum in its ABI header (<CMD>_CNT_* or <CMD>_DROP_*). One per-CPU array,
 * `counters`, which user space sums and names (src/lib/bpf/counters.h); per-CPU, so no
 * program waits for a cache line another CPU writes. Include after the ABI header, once
 * per .bpf.c, with COUNTERS_NR defined as the enum's number of entries.
 */
#ifndef IOSPAN_COUNTERS_BPF_H
#define IOSPAN_COUNTERS_BPF_H

#ifndef COUNTERS_NR
#error "define COUNTERS_NR (the number of counters) before including counters.bpf.h"
#endif

DEFINE_MAP(counters, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, COUNTERS_NR);

static __always_inline void count_n(__u32 what, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &what);

	if (v)
		*v += n;
}

static __always_inline void count(__u32 what)
{
	count_n(what, 1);
}

#endif
