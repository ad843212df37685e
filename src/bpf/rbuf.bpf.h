/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ring buffers that count what they lose: DEFINE_RBUF(name, bytes) makes the buffer
 * `name` and its per-CPU counters `name_counts` (enum rb_count), which user space
 * (src/lib/bpf/rbuf.h) sums to show the records lost and to know when it has read every
 * record sent, and `name_woken_ns` (see rbuf_submit_batched()). Records start with
 * struct rb_hdr (src/abi/rbuf_abi.h).
 */
#ifndef IOSPAN_RBUF_BPF_H
#define IOSPAN_RBUF_BPF_H

#include "rbuf_abi.h"

#define DEFINE_RBUF(name, bytes)                                   \
	struct {                                                   \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                \
		__uint(max_entries, bytes);                        \
	} name SEC(".maps");                                       \
	DEFINE_MAP(name##_counts, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, RB_COUNT_NR); \
	__u64 name##_woken_ns

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

/*
 * The same for a record of a size known only at run time, assembled in dynptr @p with
 * bpf_dynptr_write() after the header (offset sizeof(struct rb_hdr)). 0 or -errno;
 * either way @p must then go to rbuf_submit_dynptr() or rbuf_discard_dynptr().
 */
#define rbuf_reserve_dynptr(name, type_, size_, p) rbuf_reserve_dyn(&name, type_, size_, p)

static __always_inline long rbuf_reserve_dyn(void *rb, __u32 type, __u32 size, struct bpf_dynptr *p)
{
	struct rb_hdr h = {.type = type, .size = size};
	long err = bpf_ringbuf_reserve_dynptr(rb, size, 0, p);

	return err ?: bpf_dynptr_write(p, 0, &h, sizeof(h), 0);
}

/* Gives up a record reserved (or not) with rbuf_reserve_dynptr(): counted as lost. */
#define rbuf_discard_dynptr(name, p)                         \
	({                                                   \
		bpf_ringbuf_discard_dynptr(p, 0);            \
		rbuf_count(&name##_counts, RB_LOST);         \
	})

#define rbuf_submit_dynptr(name, p)                          \
	({                                                   \
		rbuf_count(&name##_counts, RB_SENT);         \
		bpf_ringbuf_submit_dynptr(p, 0);             \
	})

#define rbuf_submit(name, rec)                               \
	({                                                   \
		rbuf_count(&name##_counts, RB_SENT);         \
		bpf_ringbuf_submit(rec, 0);                  \
	})

/*
 * The consumer is woken at most once per RBUF_WAKE_NS: a wake-up costs the producer
 * an interrupt (a self-IPI, a VM exit in a guest) and the consumer a context switch,
 * which at one per record cost more than the record itself. Records sent between two
 * wake-ups are read with the next batch, or when the consumer's poll times out
 * (rbuf_poll() then reads what is there): it must poll with a timeout.
 */
#define RBUF_WAKE_NS (5 * 1000 * 1000)

/* rbuf_submit(), waking the consumer if RBUF_WAKE_NS passed since the last wake-up. */
#define rbuf_submit_batched(name, rec, now_ns)                                        \
	({                                                                           \
		__u64 __now = (now_ns);                                              \
		__u64 __flags = BPF_RB_NO_WAKEUP;                                    \
                                                                                     \
		rbuf_count(&name##_counts, RB_SENT);                                 \
		/* Signed: another CPU's clock may be a little ahead. */           \
		if ((__s64)(__now - name##_woken_ns) >= RBUF_WAKE_NS) {              \
			name##_woken_ns = __now;                                     \
			__flags = BPF_RB_FORCE_WAKEUP;                               \
		}                                                                    \
		bpf_ringbuf_submit(rec, __flags);                                    \
	})

#endif
