/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan snoop: the ring buffer record of one completed block request, shared by
 * src/bpf/snoop.bpf.c and src/cmd/snoop/.
 */
#ifndef IOSPAN_SNOOP_ABI_H
#define IOSPAN_SNOOP_ABI_H

#include "driver_abi.h"
#include "rbuf_abi.h"

#define SNOOP_COMM_LEN 16
/*
 * How often user space advances path_epoch (snoop.bpf.c): a file's path is checked
 * again at its first completion in each epoch, so a rename shows within about this.
 */
#define SNOOP_PATH_EPOCH_MS 100
/* The sector of a request that has none (a cache flush): the kernel's (sector_t)-1. */
#define SNOOP_NO_SECTOR ((__u64)-1)

enum snoop_rec_type {
	SNOOP_REC_IO = 1,
};

/* The kernel's request ops (REQ_OP_*: the same numbers on every kernel). */
enum snoop_op {
	SNOOP_OP_READ = 0,
	SNOOP_OP_WRITE = 1,
	SNOOP_OP_FLUSH = 2,
	SNOOP_OP_DISCARD = 3,
	SNOOP_OP_SECURE_ERASE = 5,
	SNOOP_OP_ZONE_APPEND = 7,
	SNOOP_OP_WRITE_ZEROES = 9,
};

enum snoop_io_flags {
	SNOOP_IO_NO_OWNER = 1 << 0,  /* no submitter known (queued before tracing, or lost) */
	SNOOP_IO_NO_ISSUE = 1 << 1,  /* dispatched before tracing started: no d, inflight */
	SNOOP_IO_PATH = 1 << 2,	     /* path_id names a path in the paths map */
	SNOOP_IO_ERROR = 1 << 3,     /* completed with an error (error) */
	SNOOP_IO_WRITEBACK = 1 << 4, /* written back by flusher for the dirtier (pid) */
};

/* Counters of the snoop programs (per-CPU array). */
enum snoop_count {
	SNOOP_CNT_NO_OWNER,	 /* completed requests whose submitter was unknown */
	SNOOP_CNT_NO_ISSUE,	 /* completed requests not seen at dispatch */
	SNOOP_CNT_PARTIAL,	 /* partial completions folded into their request's line */
	SNOOP_CNT_FILTERED,	 /* completed requests the filters left out */
	SNOOP_CNT_INFLIGHT_FULL, /* a disk's in-flight counter had no room */
	SNOOP_CNT_DIRTIER_FULL,	 /* a page's dirtier not recorded (no room in the map) */
	SNOOP_CNT_NO_DIRTIER,	 /* page cache writes whose dirtier was not on record */
	/*
	 * Requests dispatched again while still counted in flight, with no requeue seen:
	 * their completion ran no program (a line is missing for each).
	 */
	SNOOP_CNT_COMPLETION_UNSEEN,
	/* Requests whose first bio's queue time was not on record: no queue or total time. */
	SNOOP_CNT_NO_QUEUE,
	SNOOP_CNT_NR,
};

struct snoop_io {
	struct rb_hdr hdr;
	__u64 ts;	/* completion, CLOCK_MONOTONIC ns */
	/*
	 * Its first bio queued (block_bio_queue: blktrace's Q); for the block layer's own
	 * flush request, which has no bio, its allocation (rq->start_time_ns). 0: unknown.
	 */
	__u64 start_ns;
	__u64 issue_ns; /* dispatched to the driver (block_rq_issue), 0 if unknown */
	__u64 sector;	/* first sector, on the device of dev */
	__u64 cgid;	/* submitter's cgroup v2 id */
	__u64 ino;	/* file's inode, 0 if none */
	__u64 path_id;	/* vfs_path_capture()'s id, if SNOOP_IO_PATH */
	__u32 pid, tid; /* the submitter (for writeback: the dirtier) */
	__u32 dev;	/* device the request went to (partition, else disk) */
	__u32 fs_dev;	/* the file's fs (its s_dev), 0 if none */
	__u32 bytes;
	__u32 op;	/* enum snoop_op */
	__u32 rq_flags; /* enum rq_fl */
	__u32 flags;	/* enum snoop_io_flags */
	__u32 kind;	/* enum blk_owner_kind */
	__u32 owner_flags;
	__u32 inflight; /* requests in flight on the disk at dispatch, this one included */
	__u32 nr_bios;	/* bios in the request (1 + merged) at dispatch */
	__s32 error;	/* blk_status_t */
	__u32 flusher;	/* writeback: the tid that submitted it for the dirtier */
	char comm[SNOOP_COMM_LEN];
	/*
	 * The driver (driver_abi.h; drv.kind DRV_NONE: no driver hook saw it): when it
	 * submitted the command (0: not seen; before issue_ns it was being built) and took
	 * its completion, the last failed attempt's status (else the last one's), and how
	 * many attempts failed.
	 */
	__u64 drv_submit_ns, drv_done_ns;
	struct drv_status drv;
	__u32 drv_fails;
	__u32 pad2;
};

#endif
