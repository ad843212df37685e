/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan trace: the kernel/user ABI of src/bpf/trace.bpf.c (the request being built,
 * its ring buffer record, the per-op stage histograms, the counters). Fixed-size types,
 * no implicit padding.
 */
#ifndef IOSPAN_TRACE_ABI_H
#define IOSPAN_TRACE_ABI_H

#ifndef __VMLINUX_H__
#include <stdbool.h>
#endif
#include "common_abi.h"
#include "driver_abi.h"
#include "hist_abi.h"
#include "rbuf_abi.h"

/*
 * What a request is. Synchronous syscalls are numbered like their --ops names; the
 * rest start in other places: a page fault on a file mapping (mm_filemap_fault), a
 * writeback pass over one inode by a kernel thread, and iomap direct I/O submitted
 * asynchronously (libaio, io_uring).
 */
enum trace_op {
	TRACE_OP_READ,
	TRACE_OP_WRITE,
	TRACE_OP_PREAD64,
	TRACE_OP_PWRITE64,
	TRACE_OP_READV,
	TRACE_OP_WRITEV,
	TRACE_OP_PREADV,
	TRACE_OP_PWRITEV,
	TRACE_OP_PREADV2,
	TRACE_OP_PWRITEV2,
	TRACE_OP_FSYNC,
	TRACE_OP_FDATASYNC,
	TRACE_OP_SYNC_FILE_RANGE,
	TRACE_OP_FAULT,
	TRACE_OP_WRITEBACK,
	TRACE_OP_AIO_READ,
	TRACE_OP_AIO_WRITE,
	TRACE_OP_NR,
};

/*
 * Whether a request of @op runs in a thread of its own from start to end, so that the
 * thread's time off CPU is the request's. Writeback runs in a flusher for many files,
 * asynchronous I/O in no thread at all. Used by the BPF side (which off-CPU
 * histograms to fill) and by user space (what to print) alike.
 */
static inline bool trace_op_in_thread(__u32 op)
{
	return op != TRACE_OP_WRITEBACK && op != TRACE_OP_AIO_READ && op != TRACE_OP_AIO_WRITE;
}

/* Whether @op is a write-family syscall (write, pwrite64, writev, pwritev, pwritev2). */
static inline bool trace_op_writes(__u32 op)
{
	return op <= TRACE_OP_PWRITEV2 && (op & 1);
}

/*
 * Derived stages of one request, in ns. For a request whose bios completed while it
 * was in progress, these add up exactly:
 *   total = pre_block + throttle + q2q + q2g + g2i + i2d + d2c + post_block
 * where pre_block runs from the start to the first bio queued (Q), q2q from that Q to
 * the Q of the bio that completed last (the critical bio), q2g..d2c are the critical
 * bio's block stages, and post_block runs from its completion (C) to the end. q2c is
 * first Q to last C (= q2q + q2g + g2i + i2d + d2c). Without bios, pre_block = total.
 * throttle is the time the first and the critical bio were held (blk-throttle) before a
 * kernel thread queued them for the request, taken out of pre_block and q2q: from the
 * last thing the request was seen doing before (its start, a timeline event, a bio
 * completion) to the Q.
 * offcpu and iowait overlap the others (time the thread was not running). Off-CPU
 * comes from sched_switch (--offcpu-periods: each period timed) or, by default, from
 * the thread's scheduler counters read at the start and the end of the request.
 */
enum trace_stage {
	TRACE_ST_TOTAL,
	TRACE_ST_PRE_BLOCK,
	TRACE_ST_THROTTLE,
	TRACE_ST_Q2Q,
	TRACE_ST_Q2G,
	TRACE_ST_G2I,
	TRACE_ST_I2D,
	TRACE_ST_D2C,
	TRACE_ST_Q2C,
	TRACE_ST_POST_BLOCK,
	TRACE_ST_OFFCPU,
	TRACE_ST_IOWAIT,
	/*
	 * d2c split by the driver's hooks, where the critical bio's request had them
	 * (src/bpf/driver.bpf.h): d2c = drv_in + device + drv_out, from the block issue (D)
	 * to the driver's submission of the command, from there to the driver taking its
	 * completion, and from there to the block completion (C). A driver that builds the
	 * command before blk-mq starts the request (NVMe) has drv_in 0: its device time
	 * starts at D.
	 */
	TRACE_ST_DRV_IN,
	TRACE_ST_DEVICE,
	TRACE_ST_DRV_OUT,
	TRACE_ST_NR,
};

/* Per-op histograms of every stage (per-CPU array indexed by enum trace_op). */
struct trace_op_hists {
	struct hist st[TRACE_ST_NR];
};

/* trace_bio.flags */
enum trace_bio_flags {
	TRACE_BIO_WRITE = 1 << 0,
	TRACE_BIO_MERGED = 1 << 1,	 /* merged into a request another bio started (M) */
	TRACE_BIO_SPLIT = 1 << 2,	 /* split off a larger bio (X) */
	TRACE_BIO_REQUEUED = 1 << 3,	 /* its request was requeued at least once */
	TRACE_BIO_ERROR = 1 << 4,	 /* completed with an error (see error) */
	TRACE_BIO_KTHREAD = 1 << 5,	 /* queued by a kernel thread (blk-throttle re-submit) */
	TRACE_BIO_FLUSH = 1 << 6,	 /* preflush / FUA / empty flush */
	TRACE_BIO_NO_ISSUE = 1 << 7,	 /* device start time unknown: d = i */
	TRACE_BIO_PARTIAL = 1 << 8,	 /* its request completed in parts */
	TRACE_BIO_THROTTLED = 1 << 9,	 /* held by blk-throttle, queued by its worker (h..q) */
	TRACE_BIO_DRV_TIMEOUT = 1 << 10, /* the driver's timeout handler ran for it */
	TRACE_BIO_DRV_REFUSED = 1 << 11, /* the driver refused to queue it at least once */
};

/* One bio of a request with its block life cycle (CLOCK_MONOTONIC ns; 0 = unknown). */
struct trace_bio {
	__u64 sector; /* on the device it was queued to (partition-relative: bi_sector) */
	__u32 dev;    /* kernel dev_t of the bio's block device */
	__u32 bytes;
	__u64 q, g, i, d, c; /* queued, request allocated/merged, inserted, issued, completed */
	__u64 h;	     /* throttled: held from about then (see TRACE_ST_THROTTLE), else 0 */
	/* The driver (enum drv_kind in drv.kind, DRV_NONE: no hook saw it) */
	__u64 ds, dc;	     /* submitted the command (0: not seen), took its completion */
	__u16 flags;	     /* enum trace_bio_flags */
	__s16 error;	     /* blk_status_t, 0 if fine */
	__u16 requeues;
	__u16 drv_tag;	/* its request's tag (rq->tag) */
	__u16 hwq;	/* hardware queue (blk-mq hctx) */
	__u16 cid;	/* NVMe command id (generation bits in the top 4) */
	__u8 drv_fails; /* driver attempts that completed with an error status */
	__u8 pad[3];
	struct drv_status drv; /* the last failed attempt's status, else the last one's */
};

enum trace_ev_type {
	TRACE_EV_PC_LOOKUP = 1, /* mm_filemap_get_pages: arg index, arg2 pages */
	TRACE_EV_PC_ADD,	/* mm_filemap_add_to_page_cache: arg index, arg2 pages */
	TRACE_EV_RA_SYNC,	/* page_cache_sync_ra: arg index, arg2 pages requested */
	TRACE_EV_RA_ASYNC,	/* page_cache_async_ra */
	TRACE_EV_OFFCPU,	/* switched out: arg ns off CPU, arg2 1 if waiting for I/O */
	TRACE_EV_DIO,		/* iomap_dio_rw_begin: arg bytes, arg2 1 if write */
	TRACE_EV_WB_DONE,	/* the flusher finished submitting this inode: arg pages written */
	TRACE_EV_FAULT,		/* mm_filemap_fault: arg page index */
	TRACE_EV_NR,
};

struct trace_evt {
	__u64 ts;
	__u64 arg;
	__u32 type; /* enum trace_ev_type */
	__u32 arg2;
};

#define TRACE_MAX_BIOS	 16
#define TRACE_MAX_EVENTS 32

/* trace_rec.flags */
enum trace_rec_flags {
	TRACE_F_DIRECT = 1 << 0,	 /* O_DIRECT or iomap direct I/O */
	TRACE_F_BLKDEV = 1 << 1,	 /* on a block device file, not a file system file */
	TRACE_F_LATE_BIOS = 1 << 2,	 /* bios still in flight when it ended (readahead...) */
	TRACE_F_END_APPROX = 1 << 3,	 /* end inferred: a fault's, an async one's (see docs) */
	TRACE_F_KTHREAD_BIO = 1 << 4,	 /* some bios were re-submitted by a kernel thread */
	TRACE_F_PATH = 1 << 5,		 /* the path was captured (paths map) */
	TRACE_F_NO_OFFCPU = 1 << 6,	 /* off-CPU unknown (a fault, without --offcpu-periods) */
	TRACE_F_IOWAIT_BLOCKED = 1 << 7, /* iowait is all blocked time (no delay accounting) */
	TRACE_F_UNSEEN_DONE = 1 << 8,	 /* direct: a bio whose completion no program saw */
	TRACE_F_WAITS_BIOS = 1 << 9,	 /* internal: direct I/O, ends after all its bios */
};

enum trace_state { TRACE_S_IDLE, TRACE_S_ACTIVE, TRACE_S_SUBMITTED };

/*
 * One request: the map value it is built in, and the ring buffer record of a slow one
 * (the whole struct). Times are CLOCK_MONOTONIC ns.
 */
struct trace_rec {
	__u32 seq;	/* bumped at each start: bios of an earlier request do not match */
	__u32 state;	/* enum trace_state */
	__u32 op;	/* enum trace_op */
	__u32 flags;	/* enum trace_rec_flags */
	__u32 pid, tid; /* for writeback: the process that dirtied the file */
	__u32 flusher;	/* writeback: the kernel thread that wrote it */
	__u32 dev;	/* file's fs (s_dev) or block device (i_rdev) */
	__u64 ino;
	__u64 cgid;
	char comm[IOSPAN_COMM_LEN];
	__s64 offset; /* -1 if the syscall has none (read/write use the file position) */
	__u64 bytes;  /* requested */
	__s64 ret;
	__u64 start, end;
	__u64 first_q, last_c;
	__u64 crit_q, crit_g, crit_i, crit_d; /* the bio that completed last */
	__u64 crit_h;			      /* its hold start if it was throttled, else 0 */
	__u64 crit_ds, crit_dc;		      /* its driver submission, completion; 0 unknown */
	__u64 held_q, held_h;		      /* Q and hold start of its first throttled bio */
	__u64 offcpu_ns, iowait_ns;
	__u64 runq_ns; /* of offcpu: runnable, waiting for a CPU (sched_info.run_delay) */
	__u64 stages[TRACE_ST_NR];
	__u32 nr_switches;
	__u32 nr_queued;   /* bios queued for it (including those not recorded) */
	__u32 nr_done;	   /* bios completed while it was in progress */
	__u32 nr_bios;	   /* bios[] used */
	__u32 nr_events;   /* events[] used */
	__u32 events_lost; /* events past TRACE_MAX_EVENTS */
	__u32 pc_lookups;  /* mm_filemap_get_pages calls */
	__u32 pc_added;	   /* pages added to the page cache (misses) */
	__u32 ra_sync, ra_async;
	/* Writeback: its passes in progress plus its bios in flight; 0 once ended. */
	__u32 wb_holds;
	__u32 pad;
	__u64 pc_lookup_pages;
	/*
	 * struct file * (sync) or inode * for the path capture; in an emitted record, the
	 * id of the captured path: generation (low 32 bits) and stamp (high 32 bits).
	 */
	__u64 file;
	struct trace_bio bios[TRACE_MAX_BIOS];
	struct trace_evt events[TRACE_MAX_EVENTS];
};

/*
 * Whether a finished record's block stages add up: its first bio queued after it
 * started and its last completion stamped before it ended. A completion racing the
 * end on another CPU can be stamped after it; then the record has no block breakdown
 * (all pre_block). BPF decides its stages with it, the Perfetto export its spans, on
 * the record as emitted: one landing between the two leaves stages without spans,
 * never a span past its request.
 */
static inline bool trace_rec_has_block_stages(const struct trace_rec *r)
{
	return r->nr_done && r->first_q >= r->start && r->crit_q >= r->first_q &&
	       r->last_c >= r->crit_d && r->last_c <= r->end;
}

/*
 * d2c split by the driver (TRACE_ST_DRV_IN, DEVICE, DRV_OUT) of a request issued at
 * @d and completed at @c, whose driver submitted it at @ds (0: not seen) and took its
 * completion at @dc: false without a completion the driver took within [d, c]. The
 * submission counts from @d at the earliest (before it, the command was being built).
 * BPF (the critical bio's stages) and user space (each bio's) split alike.
 */
static inline bool trace_drv_split(__u64 d, __u64 ds, __u64 dc, __u64 c, __u64 out[3])
{
	__u64 sub = ds > d ? ds : d;

	if (!dc || dc < d || dc > c || sub > dc)
		return false;
	out[0] = sub - d;
	out[1] = dc - sub;
	out[2] = c - dc;
	return true;
}

/*
 * Ring buffer records (struct rb_hdr first, src/abi/rbuf_abi.h): a slow request is
 * its struct trace_rec up to bios[], then only the bios and events it has.
 */
enum trace_rec_type {
	TRACE_REC_REQUEST = 1,
};

/* An asynchronous direct I/O in flight: direct-mapped by kiocb address (tag = pv). */
struct trace_async_slot {
	__u64 tag;
	struct trace_rec rec;
};

/*
 * Paths of the files of emitted requests are captured once per file into a map of
 * struct file_path keyed by struct file_key (common_abi.h).
 */

/* Counters (per-CPU array): everything lost or approximated is counted. */
enum trace_cnt {
	TRACE_CNT_STARTED, /* requests that passed the filters */
	TRACE_CNT_DONE,	   /* requests that ended (stages in the histograms) */
	/* These two are the ring buffer's (events_counts, src/lib/bpf/rbuf.h): */
	TRACE_CNT_EMITTED,	  /* slow requests sent to user space */
	TRACE_CNT_RINGBUF_FULL,	  /* slow requests lost: ring buffer full */
	TRACE_CNT_REQS_FULL,	  /* requests not traced: request map full */
	TRACE_CNT_ABANDONED,	  /* requests that never ended (thread gone, exit missed) */
	TRACE_CNT_ASYNC_COLLIDED, /* async requests overwritten in their slot before ending */
	TRACE_CNT_BIO_UNMATCHED,  /* owned bios whose slot was overwritten before completion */
	TRACE_CNT_BIO_LATE,	  /* bios that completed after their request ended */
	TRACE_CNT_BIOS_TRUNC,	  /* bios beyond TRACE_MAX_BIOS (counted, not recorded) */
	TRACE_CNT_EVENTS_TRUNC,	  /* timeline events beyond TRACE_MAX_EVENTS */
	TRACE_CNT_CHAIN_TRUNC,	  /* requests with more bios than the walk bound */
	TRACE_CNT_FAULTS_CACHED,  /* faults that did no I/O (not requests, see docs) */
	TRACE_CNT_WB_SWEPT,	  /* writeback requests whose bios never all completed */
	TRACE_CNT_PATHS_FULL,	  /* path not captured */
	TRACE_CNT_HOOK_MISSED,	  /* user space: program runs the kernel skipped (nesting) */
	TRACE_CNT_UNSEEN_DONE,	  /* bios of direct requests whose completion ran no program */
	TRACE_CNT_END_INFERRED, /* async requests ended at their last bio: their end ran no program
				 */
	/* writebacks of a file that wrote none of its data pages (not requests, see docs) */
	TRACE_CNT_WB_NO_DATA,
	TRACE_CNT_SPANNED, /* records of two syscalls or more (an end and a start skipped) */
	/* writeback passes not followed: no task storage for the flusher (lost) */
	TRACE_CNT_WB_UNFOLLOWED,
	TRACE_CNT_NR,
};

#endif
