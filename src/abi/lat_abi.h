/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan lat: the kernel/user ABI of src/bpf/lat.bpf.c. A histogram per key, filled at
 * request completion; fixed-size types, no implicit padding.
 */
#ifndef IOSPAN_LAT_ABI_H
#define IOSPAN_LAT_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "hist_abi.h"
#include "blk_owner_abi.h"

/* What is measured (rodata `stage`). */
enum lat_stage {
	LAT_Q2C,  /* the first bio's queue (block_bio_queue) to completion */
	LAT_D2C,  /* issue (block_rq_issue) to completion */
	LAT_Q2D,  /* the first bio's queue to issue */
	LAT_SIZE, /* bytes of the request (--size) */
	/*
	 * The device, as its driver sees it (driver.bpf.h): from the driver's submission of
	 * the command (the issue, if that came first) to its taking the completion.
	 */
	LAT_DEVICE,
};

/* Which fields of struct lat_key are set (rodata `key_fields`). */
enum lat_key_field {
	LAT_K_DISK = 1 << 0,   /* -D */
	LAT_K_OP = 1 << 1,     /* -F */
	LAT_K_PID = 1 << 2,    /* --by pid (with comm) */
	LAT_K_COMM = 1 << 3,   /* --by comm */
	LAT_K_CGROUP = 1 << 4, /* --by cgroup */
	LAT_K_FILE = 1 << 5,   /* --by file (fs dev, inode, kind) */
	LAT_K_STACK = 1 << 6,  /* --by stack (with pid and comm) */
	/* Keys that need the submitter, recorded at block_bio_queue. */
	LAT_K_OWNER = LAT_K_PID | LAT_K_COMM | LAT_K_CGROUP | LAT_K_FILE | LAT_K_STACK,
};

struct lat_key {
	__u32 disk;	/* whole disk, kernel MAJ << 20 | MIN */
	__u32 op;	/* REQ_OP_* | enum rq_fl << 8 */
	__u32 pid;	/* tgid of the submitter */
	__s32 stack_id; /* blk_owner_stacks */
	__u64 cgid;
	__u64 ino;  /* file */
	__u32 fdev; /* file's fs */
	__u32 kind; /* enum blk_owner_kind (--by file, stack), | LAT_KIND_RA_ASYNC */
	__u32 gen;  /* file's inode generation: a reused inode number is another file */
	__u32 pad;
	char comm[BLK_OWNER_COMM_LEN];
};

/*
 * In lat_key.kind with --by stack: a readahead request its thread submitted after
 * entering async readahead last (page_cache_async_ra), not a read's own miss
 * (page_cache_sync_ra) or a fault's (filemap_fault). The kind is the rest.
 */
#define LAT_KIND_RA_ASYNC (1U << 16)
#define LAT_KIND_MASK	  (LAT_KIND_RA_ASYNC - 1)

/*
 * Log-linear, 32 sub-buckets per power of two (see hist.h): a bucket is at most 1/32 of
 * its low bound wide, so a percentile read in it is within 3.2% of the true value.
 */
#define LAT_HIST_SUB_BITS 5
#define LAT_HIST_SLOTS	  HIST_SLOTS_OF(LAT_HIST_SUB_BITS)

/*
 * Values are kept in 1/1024 of the display unit (LAT_SCALE_SHIFT): 1 us, 1 ms or 1 KiB
 * (rodata `unit`), so a power of two of the value is one of the unit, as biolatency's
 * and bitesize's log2 rows are, with no rounding between them.
 */
#define LAT_SCALE_SHIFT 10

/* sum and max are of the scaled values. */
struct lat_hist {
	HIST_HEAD;
	__u32 slots[LAT_HIST_SLOTS];
};

/* Requests the histograms could not take (the drops array map). */
enum lat_drop {
	LAT_DROP_NO_OWNER,  /* --by, -p, --cgroup: no owner record for the request's bio */
	LAT_DROP_MAP_FULL,  /* a new key found the map full */
	LAT_DROP_NO_START,  /* no queue time: queued before tracing, or its queue ran no program */
	LAT_DROP_NO_ISSUE,  /* d2c, q2d: no issue time (issued before tracing started) */
	LAT_DROP_NO_DRIVER, /* device: no driver hook saw the request (its disk's has none) */
	LAT_DROP_NR,
};

#endif
