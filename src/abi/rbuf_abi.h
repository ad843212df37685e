/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ring buffer records shared by the BPF programs and user space (src/lib/bpf/rbuf.h,
 * src/bpf/rbuf.bpf.h): every record starts with this header, so one consumer can
 * check its size and hand it to the handler of its type.
 */
#ifndef IOSPAN_RBUF_ABI_H
#define IOSPAN_RBUF_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct rb_hdr {
	__u32 type; /* the command's record type (its own enum, from 1) */
	__u32 size; /* of the whole record, this header included */
};

/* The per-CPU counters that go with a ring buffer (a PERCPU_ARRAY of __u64). */
enum rb_count {
	RB_SENT, /* records submitted */
	RB_LOST, /* records the buffer had no room for */
	RB_COUNT_NR,
};

#endif
