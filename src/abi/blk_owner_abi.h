/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who submitted a block request, as src/bpf/blk_owner.bpf.h records it at
 * block_bio_queue and finds it again at completion. Shared by the BPF programs and user
 * space: fixed-size integer types, no implicit padding.
 */
#ifndef IOSPAN_BLK_OWNER_ABI_H
#define IOSPAN_BLK_OWNER_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define BLK_OWNER_COMM_LEN 16
/* Frames kept per stack. */
#define BLK_OWNER_STACK_DEPTH 32

/* A kernel stack (innermost first, 0 after its last frame): the key of its id. */
struct blk_owner_stack {
	__u64 ips[BLK_OWNER_STACK_DEPTH];
};

/* What the bio carries. */
enum blk_owner_kind {
	BLK_OWN_NONE,	   /* not classified (no record) */
	BLK_OWN_DIRECT,	   /* direct I/O: iomap dio (dev/ino: its file), or a user buffer */
	BLK_OWN_BUFFERED,  /* a file's page cache: write-out (incl. writeback), or a read
			    * of it outside readahead */
	BLK_OWN_READAHEAD, /* a file's page cache read with REQ_RAHEAD */
	BLK_OWN_META,	   /* REQ_META, the block device's own cache, btrfs's btree */
	BLK_OWN_SWAP,	   /* REQ_SWAP */
	BLK_OWN_NOFILE,	   /* no page or kernel memory: fs buffers, zeroing, empty flushes */
	BLK_OWN_NR,
};

enum blk_owner_flags {
	BLK_OWN_F_KTHREAD = 1 << 0,    /* submitted by a kernel thread */
	BLK_OWN_F_WAITER = 1 << 1,     /* a dio re-submitted by a kthread: its waiting task */
	BLK_OWN_F_SPLIT = 1 << 2,      /* inherited from the bio it was split from */
	BLK_OWN_F_STACK_LOST = 1 << 3, /* stacks on, but the stack map refused this one */
	BLK_OWN_F_RA_ASYNC = 1 << 4,   /* readahead: its thread last entered async readahead
					* (where the includer follows it: lat --by stack) */
};

struct blk_owner {
	__u32 pid, tid; /* tgid and thread id of the submitter */
	__u64 cgid;	/* its cgroup v2 id */
	__u32 dev;	/* the file's fs dev (kernel MAJ << 20 | MIN), 0 if none */
	__u32 gen;	/* the file's inode generation (a reused number is another file) */
	__u64 ino;	/* the file's inode number, 0 if none */
	__s32 stack_id; /* its id in blk_owner_stack_ids when stacks are on, else -1;
			 * another negative value: it could not be kept (an errno) */
	__u16 kind;	/* enum blk_owner_kind */
	__u16 flags;	/* enum blk_owner_flags */
	char comm[BLK_OWNER_COMM_LEN];
};

#ifndef __VMLINUX_H__
/* Short names of the kinds, as shown ("direct", "buffered"...). */
static inline const char *blk_owner_kind_name(__u32 kind)
{
	static const char *const names[BLK_OWN_NR] = {
		"unknown", "direct", "buffered", "readahead", "meta", "swap", "nofile",
	};

	return kind < BLK_OWN_NR ? names[kind] : "unknown";
}
#endif

#endif
