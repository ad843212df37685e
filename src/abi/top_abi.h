/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan top: the kernel/user ABI of src/bpf/top.bpf.c (map keys and values, the stall
 * record). Fixed-size types, no implicit padding.
 */
#ifndef IOSPAN_TOP_ABI_H
#define IOSPAN_TOP_ABI_H

#include "common_abi.h"
#include "driver_abi.h"
#include "rbuf_abi.h"

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
 * What a syscall traced by top does: its entry in top's table (SYS_NONE: not traced);
 * SYS_SYNC: fsync, fdatasync, sync_file_range; SYS_RESIZE: truncate, ftruncate,
 * fallocate, in which the file system zeroes the partial block at an end (pages it
 * dirties itself, not data the process wrote).
 */
enum top_sys_op { SYS_NONE, SYS_READ, SYS_WRITE, SYS_SYNC, SYS_RESIZE };

/* top_stat.flags and top_owner.flags */
enum top_flags {
	TOP_F_DIRECT = 1 << 0,	      /* direct I/O (O_DIRECT or iomap DIO) */
	TOP_F_WRITEBACK = 1 << 1,     /* disk write issued by another thread for this dirtier */
	TOP_F_PAGEDIRTY = 1 << 2,     /* FS write bytes counted from dirtied pages (mmap, ...) */
	TOP_F_MMAP_READ = 1 << 3,     /* FS read bytes counted from mmap page faults */
	TOP_F_APPROX = 1 << 4,	      /* bytes past the bio-chain walk bound were added here */
	TOP_F_ASYNC_DIO = 1 << 5,     /* FS bytes counted at iomap_dio_complete (aio, io_uring) */
	TOP_F_LOST = 1 << 6,	      /* bytes of rows the stats map had no room for */
	TOP_F_KTHREAD_OWNER = 1 << 7, /* submitted by a kernel thread for a user task */
	TOP_F_PAGE_GRANULAR = 1 << 9, /* FS read bytes counted in pages (--no-syscalls) */
};

struct top_key {
	__u32 pid; /* tgid, or tid with --threads; TOP_PID_NONE for unattributed */
	__u32 dev; /* kernel dev_t (MAJ << 20 | MIN) of the file's fs, or of the disk */
	__u64 ino; /* inode number, or TOP_INO(kind) */
	/*
	 * The inode's generation (0 for the kinds): a file that got the number of one
	 * deleted before it is another row, with its own bytes and path.
	 */
	__u32 gen;
	__u32 pad;
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
	__u32 path_epoch;     /* this CPU's last check of the file's path (top.bpf.c) */
	__u32 nr_q2c_write;   /* of nr_q2c, the writes (the rest are reads) */
	__u64 q2c_write_sum;  /* of q2c_sum, the writes' */
};

/* Who did it: one per owner, written on first sight and when comm or cgroup change. */
struct top_proc {
	__u32 tgid;
	__u32 kthread;
	__u64 cgid; /* cgroup v2 id (the cgroup directory's inode number) */
	char comm[IOSPAN_COMM_LEN];
};

/* Writeback credited to a dirtier: which thread flushed which file for whom. */
struct top_wb_key {
	__u32 pid;     /* the dirtier (owner) */
	__u32 dev;     /* file's device */
	__u64 ino;     /* file */
	__u32 flusher; /* tid of the thread that issued the write */
	__u32 gen;     /* the file's generation (top_key) */
};

struct top_wb_val {
	__u64 bytes;
	__u64 nr; /* requests */
};

/*
 * A thread that waited for I/O longer than --stall-threshold: a record of type
 * TOP_REC_STALL in the stall_events ring buffer (src/lib/bpf/rbuf.h).
 */
#define TOP_STACK_DEPTH 32
#define TOP_REC_STALL	1
struct top_stall {
	struct rb_hdr hdr;
	__u32 tid, tgid;
	__u64 cgid;
	__u64 dur_ns;
	__u64 end_ns; /* CLOCK_MONOTONIC when it ran again */
	char comm[IOSPAN_COMM_LEN];
	__s32 stack_bytes; /* from bpf_get_task_stack: bytes written, or negative errno */
	__u32 pad;
	__u64 stack[TOP_STACK_DEPTH];
};

/*
 * A request slower than slow_rq_ns (q2c, from its allocation or insertion to its end):
 * a record of type TOP_REC_SLOW_RQ in the same ring buffer, with its owner as the rows
 * credit it (its first bio's: the submitter, or the dirtier of writeback).
 */
#define TOP_REC_SLOW_RQ 2
struct top_slow_rq {
	struct rb_hdr hdr;
	__u64 end_ns; /* CLOCK_MONOTONIC at its completion */
	__u64 q2c_ns;
	__u64 d2c_ns; /* issue to completion (0: not known) */
	__u64 sector;
	__u64 ino;	 /* key.ino of the owner's row: a file, or TOP_INO(kind) */
	__u32 pid;	 /* key.pid of the owner's row (TOP_PID_NONE: no owner) */
	__u32 dev;	 /* key.dev of that row: the file's device, or the disk's */
	__u32 bdev;	 /* the disk (KDEV) */
	__u32 bytes;	 /* completed */
	__u32 cmd_flags; /* rq->cmd_flags: op and flags */
	__u32 flags;	 /* TOP_F_* of the owner's row */
	__u32 gen;	 /* key.gen of that row */
	__u32 pad;
};

/* Every way an event can be lost or approximated is counted (per-CPU array). */
enum top_drop {
	TOP_DROP_STATS_FULL, /* stats map full: row not created (disk bytes kept) */
	TOP_DROP_LOST_BYTES, /* disk bytes not kept anywhere (no row, no device row) */
	TOP_DROP_PROCS_FULL, /* process identity not recorded */
	TOP_DROP_WB_FULL,    /* writeback detail row not created */
	/*
	 * Completed bio without an owner record: queued before tracing started, or its
	 * record was overwritten by another bio in flight with the same slot. Its bytes
	 * go to the device's unattributed row.
	 */
	TOP_DROP_UNMATCHED,
	TOP_DROP_CHAIN_TRUNC,	/* request with more bios than the walk bound */
	TOP_DROP_RINGBUF_FULL,	/* stall or slow-request record lost */
	TOP_DROP_IOWAIT_FULL,	/* iowait start not recorded */
	TOP_DROP_MAP_BUSY,	/* a map insert failed on a bucket held on this CPU (-EBUSY) */
	TOP_DROP_DIO_SLOT_BUSY, /* async direct I/O's FS bytes lost: its slot held another */
	TOP_DROP_DIRTIER_FULL,	/* a page's dirtier not recorded (no room in the map) */
	/*
	 * Informational, in bytes: page cache writes whose pages had no dirtier record
	 * (dirtied before tracing started, by a kernel thread, or their record was
	 * recycled by the LRU map), credited to the thread that wrote them.
	 */
	TOP_DROP_WB_UNKNOWN_BYTES,
	TOP_DROP_HOOK_MISSED, /* user space: program runs the kernel skipped (nesting) */
	TOP_DROP_MAP_NOMEM,   /* a map insert found no memory (-ENOMEM): not a full map */
	/*
	 * Informational: completed requests whose first bio's queue time was not on
	 * record (queued before tracing, or its queue ran no program): their bytes are
	 * counted, their q2c is not.
	 */
	TOP_DROP_NO_QUEUE_TIME,
	/*
	 * Requests that completed without top's completion program running, found when the
	 * request was issued again: the kernel does not always run it, nor always count
	 * that in the program's recursion_misses. Their bytes are on the device's
	 * unattributed row (their owner and latency are lost), a flush is counted untimed.
	 */
	TOP_DROP_RQ_UNSEEN,
	TOP_DROP_RQ_UNSEEN_BYTES, /* informational: the bytes of those requests */
	TOP_DROP_FLUSH_LOST,	  /* a disk's flush not counted: no row for the disk */
	TOP_DROP_DHIST_FULL,	  /* a request not in its disk's histograms: no room */
	TOP_DROP_NR,
};

/*
 * A disk's counters (per-CPU hash keyed by its dev_t): the cache flushes it completed
 * (what /proc/diskstats counts in its flush fields), and its driver's (driver_abi.h).
 */
struct top_disk_counts {
	__u64 nr;
	__u64 ns; /* summed from each flush request's start to its completion */
	/*
	 * Of nr, the flushes whose completion was not seen (TOP_DROP_RQ_UNSEEN): not in
	 * ns; untimed_ns is the most they can have taken, from each one's start to the next
	 * issue of its request.
	 */
	__u64 untimed;
	__u64 untimed_ns;
	struct drv_disk_stats drv;
};

/*
 * A request from its issue to its completion: a slot of the rq_issues table,
 * direct-mapped by request address (top.bpf.c); user space reads the table (mmap) for
 * the requests still open when it reads /proc/diskstats.
 */
struct top_rq_slot {
	__u64 tag;  /* pv(rq) */
	__u64 d;    /* issue time (CLOCK_MONOTONIC ns); a flush request's start, as diskstats */
	__u32 dev;  /* KDEV where its bytes go: its first bio's device (a partition), or the disk */
	__u32 left; /* bytes not completed yet */
	__u32 state; /* enum top_rq_state while open; 0 once completed or requeued */
	__u32 size;  /* bytes at its issue */
};

/*
 * Per disk and op (struct top_dhist_key), with disk_hists on (watch's metrics): log2
 * histograms of each request's q2c and d2c (ns) and size (bytes), counted at its end
 * as /proc/diskstats counts it. Slot k holds the values in (2^(k-1), 2^k] (slot 0: 0
 * and 1), so that 2^k is an exact inclusive upper bound ("le"); the last slot also holds
 * every larger value: user space gives no bound for it.
 */
#define TOP_DH_LAT_SLOTS  40 /* up to 2^39 ns, 9 minutes */
#define TOP_DH_SIZE_SLOTS 32 /* up to 2^31 bytes */
#define TOP_DH_MAX_KEYS	  256

/* The ops of /proc/diskstats' fields, as the kernel's op_stat_group() sorts them. */
enum top_dh_op { TOP_DH_READ, TOP_DH_WRITE, TOP_DH_DISCARD, TOP_DH_FLUSH, TOP_DH_NR_OPS };

struct top_dhist_key {
	__u32 dev; /* KDEV of the disk */
	__u32 op;  /* enum top_dh_op */
};

struct top_dhist {
	__u64 q2c_sum, d2c_sum, bytes_sum; /* ns, ns, bytes */
	__u64 q2c[TOP_DH_LAT_SLOTS];	   /* requests with a known queue start */
	__u64 d2c[TOP_DH_LAT_SLOTS];	   /* requests with a known issue */
	__u64 size[TOP_DH_SIZE_SLOTS];	   /* every request but flushes */
};

/*
 * The histograms of the first TOP_DH_FAST_QUEUES disks, per CPU, in an array indexed by
 * the disk's request queue id (a small number the kernel gives each queue) and op, so
 * that a completion finds them without a hash lookup (about 30 ns of the 60 the
 * histograms cost a request here). A slot holds the key it counts (dev 0: unused yet):
 * a disk whose slot another one holds on that CPU counts in the hash map. User space
 * adds the two.
 */
#define TOP_DH_FAST_QUEUES 64
#define TOP_DH_FAST_SLOTS  (TOP_DH_FAST_QUEUES * TOP_DH_NR_OPS)

struct top_dhist_slot {
	struct top_dhist_key key;
	struct top_dhist h;
};

enum top_rq_state {
	TOP_RQ_OPEN = 1,
	TOP_RQ_WRITE = 2, /* its bytes are written */
	TOP_RQ_FLUSH = 4, /* a cache flush of the disk (REQ_OP_FLUSH) */
};

#endif
