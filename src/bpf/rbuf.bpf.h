/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ring buffers that count what they lose: DEFINE_RBUF(name, bytes) makes the buffer
 * `name` and its per-CPU counters `name_counts` (enum rb_count), which user space
 * (src/lib/rbuf.h) sums to show the records lost and to know when it has read every
 * record sent. Records start with struct rb_hdr (src/lib/rbuf_abi.h).
 */
#ifndef IOSPAN_RBUF_BPF_H
#define IOSPAN_RBUF_BPF_H

#include "lib/rbuf_abi.h"

#define DEFINE_RBUF(name, bytes)                                   \
	struct {                                                   \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                \
		__uint(max_entries, bytes);                        \
	} name SEC(".maps");                                       \
	struct {                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);           \
		__uint(max_entries, RB_COUNT_NR);                  \
		__type(key, __u32);                                \
		__type(value, __u64);                              \
	} name##_counts SEC(".maps")

static __always_inline void rbuf_count(void *counts, __u32 what)
{
	__u64 *v = bpf_map_lookup_elem(counts, &what);

	if (v)
		*v += 1;
}

/*
 * Room for a record of @size bytes (a constant) of @type with its header filled in, or
 * NULL (counted as lost). Submit it with rbuf_submit().
 */
#define rbuf_reserve(name, type_, size_)                                      \
	({                                                                    \
		struct rb_hdr *__h = bpf_ringbuf_reserve(&name, size_, 0);    \
		if (__h) {                                                    \
			__h->type = type_;                                    \
			__h->size = size_;                                    \
		} else {                                                      \
			rbuf_count(&name##_counts, RB_LOST);                  \
		}                                                             \
		(void *)__h;                                                  \
	})

#define rbuf_submit(name, rec)                               \
	({                                                   \
		rbuf_count(&name##_counts, RB_SENT);         \
		bpf_ringbuf_submit(rec, 0);                  \
	})

#endif
