/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Structs shared by the BPF programs and user space: map keys, map values and ring
 * buffer records. Only fixed-size __u* types, laid out without implicit padding, so
 * both compilers agree on every offset.
 *
 * Note: the Makefile rebuilds BPF objects when headers in src/bpf or src change, not when
 * this file does; touch the .bpf.c (or make clean) after editing it.
 */
#ifndef IOSPAN_TYPES_H
#define IOSPAN_TYPES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "rbuf_abi.h"

#define TOP_COMM_LEN 16

/*
 * What ps shows of a process, captured in its own context (the titles map, keyed by
 * tgid): its argument area, NUL-separated arguments or a title the process wrote over
 * them ("postgres: checkpointer"), and its cgroup for the io (blkio) controller.
 */
#define PROC_ARGS_LEN 256
struct proc_title {
	__u64 blkio_cgid; /* kernfs id (directory inode number) of that cgroup, 0 if none */
	__u32 len;	  /* bytes of args (the area may be longer) */
	__u32 pad;
	char args[PROC_ARGS_LEN];
};

/* ---------------------------------------------------------------- iospan top */

/*
 * Inode numbers at or above TOP_INO_SPECIAL are not files: they name the kinds of
 * I/O that belong to no file, so such I/O is kept (per owner and device) instead of
 * being dropped. Real inode numbers never come this close to 2^64.
 */
#define TOP_INO_SPECIAL 0xffffffffffffff00ULL
enum top_ino_kind {
	/* Pages of a block device's own page cache: fs metadata, journal, buffered raw access */
	TOP_INO_META = 1,
	/* User or anonymous memory with no file: direct I/O to a block device, swap */
	TOP_INO_RAW = 2,
	/* No data pages or kernel-owned memory (xfs buffers, zeroing, flush requests) */
	TOP_INO_NOPAGE = 3,
	/* Owner unknown: queued before tracing started, or the owner record was lost */
	TOP_INO_UNATTR = 4,
	/*
	 * Cache flushes the owner waited for (empty preflush bios, and writes with
	 * REQ_PREFLUSH or REQ_FUA that went through the block layer's flush sequence):
	 * no bytes; nr_q2c counts them and q2c_* is their time from start to completion.
	 */
	TOP_INO_FLUSH = 5,
};
#define TOP_INO(kind) (TOP_INO_SPECIAL | (kind))

/* Owner 0 is the "(unattributed)" pseudo-process of each device. */
#define TOP_PID_NONE 0

/*
 * One BPF program serves all syscall tracepoints of a command and tells them apart by
 * syscall number, through a table of SYS_NR_TABLE entries (above every traced syscall's
 * number on every architecture) that user space fills before loading.
 */
#define SYS_NR_TABLE 512

/*
 * What a syscall traced by top does: its entry in top's table (SYS_NONE: not traced);
 * SYS_SYNC: fsync, fdatasync, sync_file_range.
 */
enum top_sys_op { SYS_NONE, SYS_READ, SYS_WRITE, SYS_SYNC };

/* top_stat.flags and top_owner.flags */
enum top_flags {
	TOP_F_DIRECT = 1 << 0,	  /* direct I/O (O_DIRECT or iomap DIO) */
	TOP_F_WRITEBACK = 1 << 1, /* disk write issued by another thread for this dirtier */
	TOP_F_PAGEDIRTY = 1 << 2, /* FS write bytes counted from dirtied pages (mmap, ...) */
	TOP_F_MMAP_READ = 1 << 3, /* FS read bytes counted from mmap page faults */
	TOP_F_APPROX = 1 << 4,	  /* bytes past the bio-chain walk bound were added here */
	TOP_F_ASYNC_DIO = 1 << 5, /* FS bytes counted at iomap_dio_complete (aio, io_uring) */
	TOP_F_LOST = 1 << 6,	  /* bytes of rows the stats map had no room for */
	TOP_F_KTHREAD_OWNER = 1 << 7, /* submitted by a kernel thread for a user task */
	TOP_F_PAGE_GRANULAR = 1 << 9, /* FS read bytes counted in pages (--no-syscalls) */
};

struct top_key {
	__u32 pid; /* tgid, or tid with --threads; TOP_PID_NONE for unattributed */
	__u32 dev; /* kernel dev_t (MAJ << 20 | MIN) of the file's fs, or of the disk */
	__u64 ino; /* inode number, or TOP_INO(kind) */
};

/* Per-CPU value of the stats map: user space sums the CPUs (max for the maxima). */
struct top_stat {
	__u64 fs_read, fs_write;     /* bytes through syscalls, mmap faults, dirtied pages */
	__u64 disk_read, disk_write; /* bytes completed on the device */
	__u64 q2c_sum, d2c_sum;	     /* ns, summed per request */
	/*
	 * Maxima per report interval: slot (gen & 1) holds the interval whose generation is
	 * max_gen[slot]; user space flips the generation, then reads the other slot.
	 */
	__u64 q2c_max[2], d2c_max[2];
	__u32 max_gen[2];
	__u32 nr_q2c, nr_d2c; /* requests with a queue / device start time */
	__u32 flags;	      /* enum top_flags seen on this row */
	__u32 bdev;	      /* block device of the last DISK bytes (coverage per disk) */
	/*
	 * The file's generation (its key in the paths map) as of this CPU's last check of
	 * the path, in path epoch path_epoch (top.bpf.c): user space takes the latest.
	 */
	__u32 gen, path_epoch;
};

/* Who did it: one per owner, written on first sight and when comm or cgroup change. */
struct top_proc {
	__u32 tgid;
	__u32 kthread;
	__u64 cgid; /* cgroup v2 id (the cgroup directory's inode number) */
	char comm[TOP_COMM_LEN];
};

/* Writeback credited to a dirtier: which thread flushed which file for whom. */
struct top_wb_key {
	__u32 pid;     /* the dirtier (owner) */
	__u32 dev;     /* file's device */
	__u64 ino;     /* file */
	__u32 flusher; /* tid of the thread that issued the write */
	__u32 pad;
};

struct top_wb_val {
	__u64 bytes;
	__u64 nr; /* requests */
};

/*
 * A file. In the paths map, gen is the inode's generation: a number the file system
 * gives each new inode, so that a deleted file and a new one that got its inode number
 * have different keys. Other maps leave it 0.
 */
struct top_file_key {
	__u32 dev;
	__u32 gen;
	__u64 ino;
};

/*
 * A file's path inside its file system, captured by walking the dentries up to the fs
 * root: NUL-terminated components, leaf first. User space reverses them and joins the
 * result with the mount point from /proc/self/mountinfo. Captured again when the stamp
 * of the dentries changes (rename or unlink of the file or a directory above it).
 */
#define TOP_PATH_BUF	  768
#define TOP_PATH_NAME_MAX 256
#define TOP_PATH_DEPTH	  32
enum top_path_flags {
	TOP_PATH_TRUNCATED = 1 << 0, /* deeper than TOP_PATH_DEPTH or longer than the buffer */
	TOP_PATH_DELETED = 1 << 1,   /* unlinked when captured */
};

struct top_path {
	__u32 depth; /* components in buf */
	__u32 flags;
	__u64 stamp; /* of the dentries when captured (vfs_path_stamp()) */
	char buf[TOP_PATH_BUF];
};

/*
 * A thread that waited for I/O longer than --stall-threshold: a record of type
 * TOP_REC_STALL in the stall_events ring buffer (src/lib/rbuf.h).
 */
#define TOP_STACK_DEPTH 32
#define TOP_REC_STALL	1
struct top_stall {
	struct rb_hdr hdr;
	__u32 tid, tgid;
	__u64 cgid;
	__u64 dur_ns;
	__u64 end_ns; /* CLOCK_MONOTONIC when it ran again */
	char comm[TOP_COMM_LEN];
	__s32 stack_bytes; /* from bpf_get_task_stack: bytes written, or negative errno */
	__u32 pad;
	__u64 stack[TOP_STACK_DEPTH];
};

/* Every way an event can be lost or approximated is counted (per-CPU array). */
enum top_drop {
	TOP_DROP_STATS_FULL,	/* stats map full: row not created (disk bytes kept) */
	TOP_DROP_LOST_BYTES,	/* disk bytes not kept anywhere (no row, no device row) */
	TOP_DROP_PROCS_FULL,	/* process identity not recorded */
	TOP_DROP_WB_FULL,	/* writeback detail row not created */
	/*
	 * Completed bio without an owner record: queued before tracing started, or its
	 * record was overwritten by another bio in flight with the same slot. Its bytes
	 * go to the device's unattributed row.
	 */
	TOP_DROP_UNMATCHED,
	TOP_DROP_CHAIN_TRUNC,	/* request with more bios than the walk bound */
	TOP_DROP_RINGBUF_FULL,	/* stall record lost */
	TOP_DROP_IOWAIT_FULL,	/* iowait start not recorded */
	TOP_DROP_MAP_BUSY,	/* a map insert failed on a bucket held on this CPU (-EBUSY) */
	TOP_DROP_DIO_SLOT_BUSY,	/* async direct I/O's FS bytes lost: its slot held another */
	TOP_DROP_DIRTIER_FULL,	/* a page's dirtier not recorded (no room in the map) */
	/*
	 * Informational, in bytes: page cache writes whose pages had no dirtier record
	 * (dirtied before tracing started, by a kernel thread, or their record was
	 * recycled by the LRU map), credited to the thread that wrote them.
	 */
	TOP_DROP_WB_UNKNOWN_BYTES,
	TOP_DROP_HOOK_MISSED,	/* user space: program runs the kernel skipped (nesting) */
	TOP_DROP_MAP_NOMEM,	/* a map insert found no memory (-ENOMEM): not a full map */
	TOP_DROP_NR,
};

/* Cache flushes a disk completed (what /proc/diskstats counts in its flush fields). */
struct top_dev_flush {
	__u64 nr;
	__u64 ns; /* summed from each flush request's start to its completion */
};

/* -------------------------------------------------------------- iospan trace */

#include "hist.h"

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
	TRACE_ST_NR,
};

/* Per-op histograms of every stage (per-CPU array indexed by enum trace_op). */
struct trace_op_hists {
	struct hist st[TRACE_ST_NR];
};

/* trace_bio.flags */
enum trace_bio_flags {
	TRACE_BIO_WRITE = 1 << 0,
	TRACE_BIO_MERGED = 1 << 1,    /* merged into a request another bio started (M) */
	TRACE_BIO_SPLIT = 1 << 2,     /* split off a larger bio (X) */
	TRACE_BIO_REQUEUED = 1 << 3,  /* its request was requeued at least once */
	TRACE_BIO_ERROR = 1 << 4,     /* completed with an error (see error) */
	TRACE_BIO_KTHREAD = 1 << 5,   /* queued by a kernel thread (blk-throttle re-submit) */
	TRACE_BIO_FLUSH = 1 << 6,     /* preflush / FUA / empty flush */
	TRACE_BIO_NO_ISSUE = 1 << 7,  /* device start time unknown: d = i */
	TRACE_BIO_PARTIAL = 1 << 8,
	TRACE_BIO_THROTTLED = 1 << 9, /* held by blk-throttle, queued by its worker (h..q) */   /* its request completed in parts */
};

/* One bio of a request with its block life cycle (CLOCK_MONOTONIC ns; 0 = unknown). */
struct trace_bio {
	__u64 sector; /* on the device it was queued to (partition-relative: bi_sector) */
	__u32 dev;    /* kernel dev_t of the bio's block device */
	__u32 bytes;
	__u64 q, g, i, d, c; /* queued, request allocated/merged, inserted, issued, completed */
	__u64 h;	     /* throttled: held from about then (see TRACE_ST_THROTTLE), else 0 */
	__u16 flags;	     /* enum trace_bio_flags */
	__s16 error;	     /* blk_status_t, 0 if fine */
	__u16 requeues;
	__u16 pad;
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
	TRACE_F_DIRECT = 1 << 0,     /* O_DIRECT or iomap direct I/O */
	TRACE_F_BLKDEV = 1 << 1,     /* on a block device file, not a file system file */
	TRACE_F_LATE_BIOS = 1 << 2,  /* bios still in flight when it ended (readahead...) */
	TRACE_F_END_APPROX = 1 << 3,   /* end inferred: a fault's, an async one's (see docs) */
	TRACE_F_KTHREAD_BIO = 1 << 4,  /* some bios were re-submitted by a kernel thread */
	TRACE_F_PATH = 1 << 5,	       /* the path was captured (paths map) */
	TRACE_F_NO_OFFCPU = 1 << 6,    /* off-CPU unknown (a fault, without --offcpu-periods) */
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
	__u32 seq;   /* bumped at each start: bios of an earlier request do not match */
	__u32 state; /* enum trace_state */
	__u32 op;    /* enum trace_op */
	__u32 flags; /* enum trace_rec_flags */
	__u32 pid, tid;	    /* for writeback: the process that dirtied the file */
	__u32 flusher;	    /* writeback: the kernel thread that wrote it */
	__u32 dev;	    /* file's fs (s_dev) or block device (i_rdev) */
	__u64 ino;
	__u64 cgid;
	char comm[TOP_COMM_LEN];
	__s64 offset; /* -1 if the syscall has none (read/write use the file position) */
	__u64 bytes;  /* requested */
	__s64 ret;
	__u64 start, end;
	__u64 first_q, last_c;
	__u64 crit_q, crit_g, crit_i, crit_d; /* the bio that completed last */
	__u64 crit_h;		/* its hold start if it was throttled, else 0 */
	__u64 held_q, held_h;	/* Q and hold start of its first throttled bio */
	__u64 offcpu_ns, iowait_ns;
	__u64 runq_ns; /* of offcpu: runnable, waiting for a CPU (sched_info.run_delay) */
	__u64 stages[TRACE_ST_NR];
	__u32 nr_switches;
	__u32 nr_queued;     /* bios queued for it (including those not recorded) */
	__u32 nr_done;	     /* bios completed while it was in progress */
	__u32 nr_bios;	     /* bios[] used */
	__u32 nr_events;     /* events[] used */
	__u32 events_lost;   /* events past TRACE_MAX_EVENTS */
	__u32 pc_lookups;    /* mm_filemap_get_pages calls */
	__u32 pc_added;	     /* pages added to the page cache (misses) */
	__u32 ra_sync, ra_async;
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
 * Ring buffer records (struct rb_hdr first, src/lib/rbuf_abi.h): a slow request is
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
 * struct top_path keyed by struct top_file_key (same layout and meaning as for top).
 */

/* Counters (per-CPU array): everything lost or approximated is counted. */
enum trace_cnt {
	TRACE_CNT_STARTED,	/* requests that passed the filters */
	TRACE_CNT_DONE,		/* requests that ended (stages in the histograms) */
	/* These two are the ring buffer's (events_counts, src/lib/rbuf.h): */
	TRACE_CNT_EMITTED,	/* slow requests sent to user space */
	TRACE_CNT_RINGBUF_FULL, /* slow requests lost: ring buffer full */
	TRACE_CNT_REQS_FULL,	/* requests not traced: request map full */
	TRACE_CNT_ABANDONED,	/* requests that never ended (thread gone, exit missed) */
	TRACE_CNT_ASYNC_COLLIDED, /* async requests overwritten in their slot before ending */
	TRACE_CNT_BIO_UNMATCHED, /* owned bios whose slot was overwritten before completion */
	TRACE_CNT_BIO_LATE,	/* bios that completed after their request ended */
	TRACE_CNT_BIOS_TRUNC,	/* bios beyond TRACE_MAX_BIOS (counted, not recorded) */
	TRACE_CNT_EVENTS_TRUNC, /* timeline events beyond TRACE_MAX_EVENTS */
	TRACE_CNT_CHAIN_TRUNC,	/* requests with more bios than the walk bound */
	TRACE_CNT_FAULTS_CACHED, /* faults that did no I/O (not requests, see docs) */
	TRACE_CNT_WB_SWEPT,	/* writeback requests whose bios never all completed */
	TRACE_CNT_PATHS_FULL,	/* path not captured */
	TRACE_CNT_HOOK_MISSED,	/* user space: program runs the kernel skipped (nesting) */
	TRACE_CNT_UNSEEN_DONE,	/* bios of direct requests whose completion ran no program */
	TRACE_CNT_END_INFERRED,	/* async requests ended at their last bio: their end ran no program */
	TRACE_CNT_NR,
};

#endif
