// SPDX-License-Identifier: GPL-2.0
/*
 * iospan top: who does I/O to which file, and how slow.
 *
 * FS bytes come from read/write-family syscalls (fd resolved at entry), mmap faults,
 * pages dirtied outside write syscalls, and iomap direct I/O started outside them.
 * DISK bytes are counted when a request completes and credited to the owner recorded
 * when each of its bios was queued: the submitting process, the task waiting on an
 * iomap direct I/O that a kernel thread re-submitted (blk-throttle), or, for
 * writeback, the process that dirtied the file. Everything is summed in kernel maps;
 * user space reads them once per report. Only slow iowait episodes (stalls) travel
 * through a ring buffer.
 */
#include "iospan.bpf.h"
#include "top_abi.h"
#include "hist_abi.h"
#include "kptr.bpf.h"
#include "core_fixes.bpf.h"
#include "vfs.bpf.h"
#include "proc.bpf.h"
#include "fallback.bpf.h"
#include "driver.bpf.h"
#include "syscall.bpf.h"
#include "bio_slot.bpf.h"
#define BIO_Q_SLOTS (1U << 17)
#include "bio_q.bpf.h"
/* The core's classification only: top keeps its own records, keyed as its rows. */
#define BLK_OWNER_NO_RECORD
#include "blk_owner.bpf.h"
#include "rbuf.bpf.h"
#include "filter.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * The bio owner table: direct-mapped by bio address, 2^17 slots of 32 bytes (4 MiB).
 * Owners are written at queue time only if the slot holds something else, and only
 * read at completion, never released: any write pulls the slot's cache line back to
 * the submitting CPU, and the completing CPU (another one, with the loop driver and
 * many others) then has to fetch it again, which measured as a third of the
 * completion's cost. Bios are recycled by the slab, so the slot usually already holds
 * this exact record. Two bios in flight in one slot: the first one's completion finds
 * the other's tag and is counted as unattributed (TOP_DROP_UNMATCHED), never lost.
 */
#define SLOT_BITS 17
#define NR_SLOTS  (1U << SLOT_BITS)
/*
 * Longest bio chain walked per request (a 4 MiB request of 4 KiB bios has 1024); the
 * rest goes to the last owner (counted as approximate).
 */
#define MAX_CHAIN 4096
/* Owner of bios that the target filter excludes: their completion is skipped. */
#define PID_FILTERED 0xffffffffU

/* Load-time configuration: features that are off cost nothing. */
const volatile bool per_thread = false;
const volatile bool track_unattributed = true;
const volatile __u64 stall_ns = 0;
const volatile __u64 slow_rq_ns = 0; /* requests this slow are sent (0: none) */
/* Async direct I/O's FS bytes at its completion (else at its start: see top.c). */
const volatile bool dio_fs_at_complete = false;
const volatile __u64 iomap_dio_end_io = 0;   /* address of iomap_dio_bio_end_io, 0 if unknown */
const volatile __u64 throtl_dispatch_fn = 0; /* blk_throtl_dispatch_work_fn, 0 if unknown */
const volatile __u32 page_size = 4096;
/* IOSPAN_FAULT=map_nomem (tests): every new row takes the path of a failed allocation. */
const volatile bool fault_map_nomem = false;
/* IOSPAN_FAULT=skip_complete (tests): the completion program skips 1 run in 5. */
const volatile bool fault_skip_complete = false;
__u32 fault_runs;
/* Completions the kernel did not run the program for are found at the next issue. */
const volatile bool track_unseen = false;
const volatile bool disk_hists = false; /* per disk and op histograms (watch's metrics) */
const volatile __u32 self_tgid = 0; /* iospan itself: its reads of /proc are not news */
/* By syscall number: SYS_READ, SYS_WRITE or SYS_SYNC for the syscalls traced, else SYS_NONE. */
const volatile __u8 sys_op[SYS_NR_TABLE] = {};

/* Report generation, advanced by user space at each report (selects the max slot). */
__u32 max_gen;
/*
 * Path epoch, advanced by user space every second (from 1): each CPU's copy of a row
 * checks its file's path once per epoch, so renames and unlinks show within a second
 * of the next I/O to the file.
 */
__u32 path_epoch;
/*
 * Stalls are timed from this CLOCK_MONOTONIC time on: a program attached on demand
 * (watch, during a capture) must not time a sleep from a start it recorded while it
 * was attached before (its thread woke while it was detached).
 */
__u64 stalls_since;

/* Per-thread state: the traced syscall in progress, identity already recorded, iowait. */
struct top_task {
	__u64 ino;
	__u32 dev;
	__u32 gen; /* of that file's inode */
	__u8 op; /* SYS_READ/SYS_WRITE while inside a traced syscall on a file */
	__u8 direct;
	__u8 blk;
	__u8 syncing; /* in fsync-family: registered in syncers under (dev, ino) */
	/* In truncate, ftruncate or fallocate (resize_enter()) */
	__u8 resizing;
	__u64 file; /* struct file * of that syscall */
	__u64 seen_exec;
	__u64 seen_cgid;
	__u64 iowait_ts;
	/* The read --no-syscalls last counted: inode, first and last page of the request */
	__u64 rd_ino, rd_index, rd_last;
	/* Pages of one file mapped by this thread's recent faults, counted already */
	__u64 mm_ino, mm_lo, mm_hi;
	__u32 mm_dev, mm_gen;
	/*
	 * While an iomap direct I/O started outside a traced syscall is being submitted
	 * (libaio, io_uring): its inode and iocb. File systems that complete the bios
	 * through their own end_io (btrfs) leave no other trace of the file in the bio.
	 */
	__u64 dio_inode, dio_iocb;
};

/*
 * An async direct I/O between its start and its completion: the row its FS bytes go to
 * when it completes (the bytes done, as a syscall's return value counts them: a
 * NOWAIT attempt that io_uring retries is not counted twice, a short one not in full).
 * Indexed by the kiocb's address; a slot is taken over only once stale, after
 * DIO_STALE_NS (a start that ended in an error before any I/O has no completion).
 */
struct dio_slot {
	__u64 tag; /* pv_addr(iocb) */
	__u64 start_ns;
	struct top_key key;
	__u64 file;
	__u32 write;
	__u32 pad;
};

#define NR_DIO_SLOTS 4096
#define DIO_STALE_NS (30ULL * 1000000000)
/* A slot's I/O is in flight (in dio_begin(), whose `now` is the time). */
#define DIO_LIVE(s) ((s)->tag && now - (s)->start_ns < DIO_STALE_NS)

DEFINE_MAP(dio_slots, BPF_MAP_TYPE_ARRAY, __u32, struct dio_slot, NR_DIO_SLOTS);

DEFINE_TASK_STORAGE(tasks, struct top_task);

/* The owner of one in-flight bio, in a direct-mapped table indexed by its address. */
struct bio_slot {
	__u64 tag; /* pv(bio) */
	struct top_key key;
	__u32 flags;
	__u32 flusher; /* tid that issued a writeback write */
};

DEFINE_MAP(slots, BPF_MAP_TYPE_ARRAY, __u32, struct bio_slot, NR_SLOTS);

/* Sized by --max-entries. */
DEFINE_MAP_FLAGS(stats, BPF_MAP_TYPE_PERCPU_HASH, struct top_key, struct top_stat, 16384,
		 BPF_F_NO_PREALLOC);

/*
 * The unattributed row of each device (TOP_PID_NONE, TOP_INO_UNATTR): bytes whose owner
 * is unknown, and the bytes of owners the full stats map had no room for. Preallocated,
 * with a row for every traced device made by user space before tracing starts: the row
 * that must take the bytes when the stats map is full can neither be one of its rows
 * nor wait for an allocator, whose per-CPU cache can be empty (-ENOMEM). A device that
 * appears later gets its row at its first such bytes, from the room user space left
 * (it sizes the map: the devices traced, and room for more).
 */
DEFINE_MAP(unattr, BPF_MAP_TYPE_PERCPU_HASH, __u32, struct top_stat, 256);

/*
 * Rows the allocator of the maps above could not give at that moment (-ENOMEM: its
 * per-CPU cache ran empty, and on PREEMPT_RT it is refilled later from a thread;
 * -EBUSY: the bucket is held on this CPU) go here instead: preallocated, so an insert
 * fails only when it is full. User space adds these rows to those of the main map.
 */
DEFINE_MAP(stats_spill, BPF_MAP_TYPE_PERCPU_HASH, struct top_key, struct top_stat, 128);

DEFINE_MAP(procs, BPF_MAP_TYPE_HASH, __u32, struct top_proc, 8192);

DEFINE_VFS_PATH_CACHE(8192);
DEFINE_PROC_TITLES(8192);

/* Latency and size histograms per disk and op (user space sizes it 1 when off). */
DEFINE_MAP_FLAGS(dhists, BPF_MAP_TYPE_PERCPU_HASH, struct top_dhist_key, struct top_dhist,
		 TOP_DH_MAX_KEYS, BPF_F_NO_PREALLOC);

DEFINE_MAP(dhist_fast, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct top_dhist_slot, TOP_DH_FAST_SLOTS);

/* Cache flushes completed per disk (the flush request the block layer issues). */
DEFINE_MAP(disk_counts, BPF_MAP_TYPE_PERCPU_HASH, __u32, struct top_disk_counts, 256);

DEFINE_MAP_FLAGS(wb, BPF_MAP_TYPE_PERCPU_HASH, struct top_wb_key, struct top_wb_val, 4096,
		 BPF_F_NO_PREALLOC);

/* wb rows that could not be made for want of memory: as stats_spill. */
DEFINE_MAP(wb_spill, BPF_MAP_TYPE_PERCPU_HASH, struct top_wb_key, struct top_wb_val, 64);

#define COUNTERS_NR TOP_DROP_NR
#include "counters.bpf.h"

DEFINE_RBUF(stall_events, 256 * 1024);

/* iowait start of threads that have no task storage yet (never created in sched_switch). */
DEFINE_MAP(iowait_start, BPF_MAP_TYPE_HASH, __u32, __u64, 4096);

/*
 * A failed map insert: a hash bucket held elsewhere on this CPU (-EBUSY: a program
 * preempted under PREEMPT_RT, or re-entered from a nested hook) is not a full map, nor
 * is an empty allocator cache (-ENOMEM: the maps made without preallocation refill it
 * only once interrupts are enabled, so a burst of new rows in an interrupt can fail).
 */
static __always_inline void drop_insert(long err, __u32 full)
{
	count(err == -EBUSY ? TOP_DROP_MAP_BUSY : err == -ENOMEM ? TOP_DROP_MAP_NOMEM : full);
}

/* The target filter (filter.bpf.h): -d ... */
static __always_inline bool dev_ok(__u32 dev)
{
	return tfilter_dev_ok(dev);
}

/* ... --cgroup, for a cgroup id the caller has ... */
static __always_inline bool cgroup_ok(__u64 cgid)
{
	return !tfilter.cgroups || bpf_map_lookup_elem(&filter_cgroups, &cgid);
}

/* ... -p, --tid, --comm and --cgroup for the current task @task, never iospan itself ... */
static __always_inline bool current_ok(struct task_struct *task)
{
	__u64 cgid;

	return task->tgid != self_tgid && tfilter_current_ok(task->tgid, task->pid, &cgid);
}

/* ... -p, --tid and --comm for another task (its cgroup the caller checks) ... */
static __always_inline bool task_ok(struct task_struct *task)
{
	char comm[FILTER_COMM_LEN];

	if (!tfilter_proc_on())
		return true;
	if (tfilter.pid && KR(struct task_struct, task, tgid) != tfilter.pid)
		return false;
	if (tfilter.tid && KR(struct task_struct, task, pid) != tfilter.tid)
		return false;
	if (tfilter.comm_on &&
	    (bpf_core_read_str(comm, sizeof(comm), &task->comm) < 0 || !tfilter_comm_ok(comm)))
		return false;
	return true;
}

/*
 * ... and --file, --dir for the I/O of file @inode (NULL: of no file, which never
 * passes). A function of its own: its walk up the directories is verified only where
 * a file filter is set, not inlined into every caller.
 */
static __noinline bool file_ok(struct inode *inode, __u32 dev, __u32 gen, __u64 ino)
{
	struct dentry *d = NULL;

	if (!tfilter_file_on())
		return true;
	if (!inode)
		return false;
	if (tfilter.dir_dev)
		d = vfs_dentry((__u64)inode, VFS_FROM_INODE);
	return tfilter_file_ok(dev, gen, ino, d);
}

/*
 * Files whose bytes are not storage I/O: pseudo file systems (vfs.bpf.h), and
 * kernel-internal mounts (shared anonymous memory, memfd, SysV shm), which have no
 * path to show either.
 */
static __always_inline bool skip_fs(struct inode *inode)
{
	return (KR(struct super_block, INODE_SB(inode), s_flags) & SB_KERNMOUNT) ||
	       pseudo_fs(inode);
}

static __always_inline __u32 owner_of(struct task_struct *task)
{
	/* KR(): a blk-throttled direct I/O's waiter is known only by its address. */
	return per_thread ? KR(struct task_struct, task, pid) : KR(struct task_struct, task, tgid);
}

/* Records who @owner is, once per exec and cgroup move (@t may be NULL: always write). */
static __always_inline void note_proc(struct task_struct *task, struct top_task *t, __u32 owner,
				      __u64 cgid)
{
	struct top_proc p = {};
	__u64 exec = KR(struct task_struct, task, self_exec_id) + 1;
	struct task_struct *named = task;
	long err;

	if (t && t->seen_exec == exec && t->seen_cgid == cgid)
		return;
	p.tgid = KR(struct task_struct, task, tgid);
	p.kthread = !!(KR(struct task_struct, task, flags) & PF_KTHREAD);
	p.cgid = cgid;
	/* A process is named by its main thread; a thread (--threads) by itself. */
	if (!per_thread)
		named = KR(struct task_struct, KVIEW(struct task_struct, task), group_leader);
	bpf_probe_read_kernel_str(p.comm, sizeof(p.comm), named->comm);
	err = bpf_map_update_elem(&procs, &owner, &p, BPF_ANY);
	if (err) {
		drop_insert(err, TOP_DROP_PROCS_FULL);
		return;
	}
	if (t) {
		t->seen_exec = exec;
		t->seen_cgid = cgid;
	}
}

/* A new stats row (read-only data: not on the stack of the deep completion path). */
static const struct top_stat stat_zero;

/* The stats row of @k, created if missing (*created then set). NULL if the map is full. */
/* An insert that failed with @err for want of memory or of the bucket lock. */
static __always_inline bool insert_may_spill(long err)
{
	return err == -ENOMEM || err == -EBUSY;
}

static __always_inline struct top_stat *stat_spill_get(struct top_key *k, bool *created)
{
	struct top_stat *s;
	long err;

	s = map_lookup_or_init(&stats_spill, k, &stat_zero, &err);
	if (!s)
		drop_insert(err, TOP_DROP_STATS_FULL);
	*created = !err;
	return s;
}

static __always_inline struct top_stat *stat_get(struct top_key *k, bool *created)
{
	struct top_stat *s;
	long err;

	if (fault_map_nomem) { /* IOSPAN_FAULT=map_nomem: no row can be made */
		s = bpf_map_lookup_elem(&stats, k);
		err = s ? -EEXIST : -ENOMEM;
	} else {
		s = map_lookup_or_init(&stats, k, &stat_zero, &err);
	}
	if (s) {
		*created = !err;
		return s;
	}
	if (insert_may_spill(err))
		return stat_spill_get(k, created);
	drop_insert(err, TOP_DROP_STATS_FULL);
	return NULL;
}

/* The unattributed row of device @dev (KDEV), made if missing; NULL: bytes lost (counted). */
static __always_inline struct top_stat *unattr_get(__u32 dev)
{
	struct top_stat *s = bpf_map_lookup_elem(&unattr, &dev);

	if (s)
		return s;
	/* Under -p/--cgroup no bytes are unattributed: they are someone else's. */
	if (track_unattributed) {
		/* Preallocated: fails only when full, or on a bucket held on this CPU. */
		bpf_map_update_elem(&unattr, &dev, &stat_zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&unattr, &dev);
	}
	if (!s)
		count(TOP_DROP_LOST_BYTES);
	return s;
}

/* The row of @k, wherever stat_get() put it. */
static __always_inline struct top_stat *stat_find(struct top_key *k)
{
	struct top_stat *s = bpf_map_lookup_elem(&stats, k);

	return s ? s : bpf_map_lookup_elem(&stats_spill, k);
}

static __always_inline void add_fs(struct top_key *k, bool write, __u64 bytes, __u32 flags,
				   __u64 ptr, __u32 from)
{
	bool created = false;
	struct top_stat *s = stat_get(k, &created);

	if (!s)
		return;
	if (write)
		s->fs_write += bytes;
	else
		s->fs_read += bytes;
	/*
	 * Each CPU's copy of a row checks its file's path once per epoch (a row made at
	 * completion may have had no way to name its file).
	 */
	if (s->path_epoch != path_epoch) {
		__u64 id;

		s->path_epoch = path_epoch;
		vfs_path_capture(k->dev, k->ino, ptr, from, &id);
		/* FS events run in the process: its title as it is now (titles change). */
		proc_title_note();
	}
	s->flags |= flags;
}

/* ------------------------------------------------------------------ FS: syscalls */

static __always_inline int sys_enter(long fd, __u8 op)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct top_task *t;
	struct inode *inode;
	struct file *file;
	__u64 cgid;
	__u32 dev;
	bool blk;

	if (!current_ok(task))
		return 0;
	file = fd_disk_file(task, fd, true, &inode, &dev, &blk);
	if (!file || !dev_ok(dev))
		return 0;
	/* The file's identity is read only if filtered by. */
	if (tfilter_file_on() &&
	    !file_ok(inode, dev, INODE_GEN(inode), KR(struct inode, inode, i_ino)))
		return 0;
	cgid = bpf_get_current_cgroup_id();
	t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	t->op = op;
	t->dev = dev;
	t->ino = blk ? TOP_INO(TOP_INO_RAW) : KR(struct inode, inode, i_ino);
	t->gen = blk ? 0 : INODE_GEN(inode);
	t->blk = blk;
	t->direct = !!(KR(struct file, file, f_flags) & O_DIRECT);
	t->file = (__u64)file;
	note_proc(task, t, owner_of(task), cgid);
	return 0;
}

/* The end of a read or write sys_enter() took (@t->op set). */
static __always_inline int rw_exit(struct task_struct *task, struct top_task *t, long ret)
{
	struct top_key k;
	__u8 op;

	op = t->op;
	t->op = SYS_NONE;
	/* FS bytes are file bytes: raw block device reads and writes show as DISK only. */
	if (ret <= 0 || t->blk)
		return 0;
	k.pid = owner_of(task);
	k.dev = t->dev;
	k.ino = t->ino;
	k.gen = t->gen;
	k.pad = 0;
	add_fs(&k, op == SYS_WRITE, ret, t->direct ? TOP_F_DIRECT : 0, t->file, VFS_FROM_FILE);
	return 0;
}

/*
 * Who is syncing which file (fsync, fdatasync, sync_file_range): blk-throttle holds the
 * bios they submit and its worker queues them later, in a kernel thread; they are
 * still flushed by the process that synced.
 */
struct syncer {
	__u32 owner, tgid, tid;
	/* It failed the process filters (-p, --tid, --comm, --cgroup) when recorded. */
	__u32 filtered;
};

DEFINE_MAP(syncers, BPF_MAP_TYPE_LRU_HASH, struct file_key, struct syncer, 4096);

/*
 * Who reads which file through the page cache (readahead, in the reader's context):
 * blk-throttle holds the read bios too and its worker queues them; they are still the
 * reader's. The last reader of a file is taken.
 */
DEFINE_MAP(readers, BPF_MAP_TYPE_LRU_HASH, struct file_key, struct syncer, 4096);

static __always_inline int readahead_note(struct inode *inode)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file_key fk = {};
	struct syncer rd = {}, *last;

	if (!inode || task->tgid == self_tgid || (task->flags & PF_KTHREAD))
		return 0;
	fk.dev = KR(struct super_block, INODE_SB(inode), s_dev);
	fk.ino = KR(struct inode, inode, i_ino);
	fk.gen = INODE_GEN(inode);
	last = bpf_map_lookup_elem(&readers, &fk);
	if (last && last->tid == task->pid)
		return 0; /* written only when the reader changes */
	rd.owner = owner_of(task);
	rd.tgid = task->tgid;
	rd.tid = task->pid;
	rd.filtered = !current_ok(task);
	bpf_map_update_elem(&readers, &fk, &rd, BPF_ANY);
	return 0;
}

static __always_inline int ra_note(struct inode *inode, unsigned long index, unsigned long req)
{
	return readahead_note(inode);
}

RA_SYNC_PROGS(top_ra_sync, ra_note)
RA_ASYNC_PROGS(top_ra_async, ra_note)

static __always_inline int sync_enter(long fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file_key fk = {};
	struct syncer sy = {};
	struct inode *inode;
	struct file *file;
	struct top_task *t;

	if (!throtl_dispatch_fn || task->tgid == self_tgid)
		return 0;
	file = fd_file(task, fd);
	inode = file ? KR(struct file, file, f_inode) : NULL;
	if (!inode || (KR(struct inode, inode, i_mode) & S_IFMT) != S_IFREG)
		return 0;
	fk.dev = KR(struct super_block, INODE_SB(inode), s_dev);
	/* A file of another disk is none of ours: its syncer is not named either. */
	if (!dev_ok(fk.dev))
		return 0;
	t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	fk.ino = KR(struct inode, inode, i_ino);
	fk.gen = INODE_GEN(inode);
	sy.owner = owner_of(task);
	sy.tgid = task->tgid;
	sy.tid = task->pid;
	sy.filtered = !current_ok(task);
	t->dev = fk.dev;
	t->ino = fk.ino;
	t->gen = fk.gen;
	t->syncing = 1;
	bpf_map_update_elem(&syncers, &fk, &sy, BPF_ANY);
	note_proc(task, NULL, task->pid, bpf_get_current_cgroup_id()); /* as a flusher */
	return 0;
}

/* The end of a sync sync_enter() registered (@t->syncing set). */
static __always_inline int sync_exit(struct task_struct *task, struct top_task *t)
{
	struct file_key fk = {};
	struct syncer *sy;

	t->syncing = 0;
	fk.dev = t->dev;
	fk.ino = t->ino;
	fk.gen = t->gen;
	sy = bpf_map_lookup_elem(&syncers, &fk);
	if (sy && sy->tid == task->pid)
		bpf_map_delete_elem(&syncers, &fk);
	return 0;
}

/*
 * A truncate, ftruncate or fallocate begins: the pages the file system dirties in it
 * are its own zeroing of the partial block at an end (ext4, xfs and btrfs zero the
 * rest of the last block, even when the size does not change: an ftruncate to the
 * current size that drops blocks preallocated past it), not FS bytes the process
 * wrote. They are still its dirtied pages (their writeback is credited to it).
 */
static __always_inline int resize_enter(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct top_task *t;

	if (!current_ok(task))
		return 0;
	t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		t->resizing = 1;
	return 0;
}

static __always_inline int on_sys_enter(long nr, const __u64 *args)
{
	__u8 op = sys_op[nr];

	if (op == SYS_SYNC)
		return sync_enter(args[0]);
	if (op == SYS_RESIZE)
		return resize_enter();
	return sys_enter(args[0], op);
}

/* The thread's storage says what its enter began: a read or write, or a sync. */
static __always_inline int on_sys_exit(long nr, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct top_task *t;

	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!t)
		return 0;
	t->resizing = 0;
	if (t->op)
		return rw_exit(task, t, ret);
	return t->syncing ? sync_exit(task, t) : 0;
}

SYSCALL_PROGS(top_sys, sys_op, 1, on_sys_enter, on_sys_exit)

/* ------------------------------------------------------ FS: mmap, dirtying, async DIO */

/*
 * Filters and identity for an FS event of the current task on file @inode (key @k):
 * false if filtered out. *tp is the task's storage (NULL if it could not be created).
 */
static __always_inline bool fs_event_ok(struct task_struct *task, struct inode *inode,
					const struct top_key *k, struct top_task **tp)
{
	struct top_task *t;
	__u64 cgid;

	if (!current_ok(task) || !dev_ok(k->dev) || !file_ok(inode, k->dev, k->gen, k->ino))
		return false;
	cgid = bpf_get_current_cgroup_id();
	t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	note_proc(task, t, owner_of(task), cgid);
	*tp = t;
	return true;
}

/*
 * The regular file whose page cache @mapping is, with its key, or NULL. @mapping may be
 * typed or known only by its address (fentry and kprobe fallbacks): see KR().
 */
static __always_inline struct inode *mapping_file(struct address_space *mapping, struct top_key *k)
{
	struct inode *host;

	if (!mapping)
		return NULL;
	host = KR(struct address_space, mapping, host);
	if (!host || (KR(struct inode, host, i_mode) & S_IFMT) != S_IFREG || skip_fs(host))
		return NULL;
	k->dev = KR(struct super_block, INODE_SB(host), s_dev);
	k->ino = KR(struct inode, host, i_ino);
	k->gen = INODE_GEN(host);
	k->pad = 0;
	return host;
}

/* XArray internals (include/linux/xarray.h), as stable as the page cache itself. */
#define XA_CHUNK_SHIFT 6
#define XA_CHUNK_MASK  ((1U << XA_CHUNK_SHIFT) - 1)
#define XA_MAX_DEPTH   8
#define XA_IS_NODE(e)  (((e) & 3) == 2 && (e) > 4096)
#define XA_IS_SIBLING(e) (((e) & 3) == 2 && (e) < (((XA_CHUNK_MASK) << 2) | 2))

/*
 * The first and last page of the page cache folio holding page @index of @mapping, or
 * false if there is none: a walk down the mapping's XArray (a large folio fills
 * several slots, the first of them holding it, the others pointing there).
 */
static __noinline bool cache_folio_span(struct address_space *mapping, __u64 index, __u64 *first,
					__u64 *last)
{
	__u64 entry = (__u64)KR(struct address_space, mapping, i_pages.xa_head), slot, fi, nr;
	__u32 off, shift, i;

	if (!XA_IS_NODE(entry))
		return false; /* empty, or one page at index 0 */
	for (i = 0; i < XA_MAX_DEPTH && XA_IS_NODE(entry); i++) {
		entry -= 2;
		shift = BPF_CORE_READ((struct xa_node *)entry, shift);
		if (shift > 58 || (!i && (index >> shift) > XA_CHUNK_MASK))
			return false;
		off = (index >> shift) & XA_CHUNK_MASK;
		slot = 0;
		bpf_probe_read_kernel(&slot, sizeof(slot),
				      (void *)(entry +
					       bpf_core_field_offset(struct xa_node, slots) +
					       off * sizeof(__u64)));
		if (XA_IS_SIBLING(slot)) {
			off = slot >> 2;
			bpf_probe_read_kernel(
				&slot, sizeof(slot),
				(void *)(entry + bpf_core_field_offset(struct xa_node, slots) +
					 off * sizeof(__u64)));
		}
		entry = slot;
	}
	/* Value entries (shadows of evicted pages) and internal ones are no folio. */
	if (!entry || (entry & 3))
		return false;
	fi = BPF_CORE_READ((struct folio *)entry, index);
	nr = folio_bytes((struct folio *)entry, page_size) / page_size;
	if (fi > index || fi + nr <= index)
		return false; /* freed and reused meanwhile */
	*first = fi;
	*last = fi + nr - 1;
	return true;
}

/* Pages a thread's recent faults in one file may map again: counted once. */
#define MMAP_RECENT_PAGES 1024

/*
 * Pages @first..@last of @mapping were mapped by a fault: the faulting page, or a
 * fault-around range (@around). FS read bytes are the pages mapped, each counted once
 * while the thread keeps faulting nearby in the same file: a fault-around range and the
 * fault after it can cover the same pages. Newer kernels map whole large folios around
 * the range they report: the range is widened to the folios at its ends.
 */
static __always_inline int mmap_read(struct address_space *mapping, __u64 first, __u64 last,
				     bool around)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 eof, f_first, f_last, lo, hi, pages;
	struct top_task *t;
	struct inode *host;
	struct top_key k;
	loff_t size;

	host = mapping_file(mapping, &k);
	if (!host || last < first)
		return 0;
	/* The fallbacks see the range asked for, the tracepoint the one mapped. */
	size = KR(struct inode, host, i_size);
	if (size <= 0)
		return 0;
	eof = (size - 1) / page_size;
	if (first > eof)
		return 0;
	if (!fs_event_ok(task, host, &k, &t))
		return 0;
	if (around) {
		if (cache_folio_span(mapping, first, &f_first, &f_last) && f_first < first)
			first = f_first;
		if (cache_folio_span(mapping, last, &f_first, &f_last) && f_last > last)
			last = f_last;
	}
	if (last > eof)
		last = eof;
	pages = last - first + 1;
	if (t && t->mm_ino == k.ino && t->mm_dev == k.dev && t->mm_gen == k.gen &&
	    first <= t->mm_hi + 1 && last + 1 >= t->mm_lo) {
		lo = first > t->mm_lo ? first : t->mm_lo;
		hi = last < t->mm_hi ? last : t->mm_hi;
		if (hi >= lo)
			pages -= hi - lo + 1;
		/* The union, kept to the most recent pages. */
		lo = first < t->mm_lo ? first : t->mm_lo;
		hi = last > t->mm_hi ? last : t->mm_hi;
		if (hi - lo >= MMAP_RECENT_PAGES) {
			if (last >= t->mm_hi)
				lo = hi - MMAP_RECENT_PAGES + 1;
			else
				hi = lo + MMAP_RECENT_PAGES - 1;
		}
		t->mm_lo = lo;
		t->mm_hi = hi;
	} else if (t) {
		t->mm_ino = k.ino;
		t->mm_dev = k.dev;
		t->mm_gen = k.gen;
		t->mm_lo = first;
		t->mm_hi = last;
	}
	if (!pages)
		return 0;
	k.pid = owner_of(task);
	add_fs(&k, false, pages * page_size, TOP_F_MMAP_READ, (__u64)host, VFS_FROM_INODE);
	return 0;
}

static __always_inline int mmap_fault(struct address_space *mapping, __u64 index)
{
	return mmap_read(mapping, index, index, false);
}

FILEMAP_FAULT_PROGS(top_filemap_fault, mmap_fault)

SEC("tp_btf/mm_filemap_map_pages")
int BPF_PROG(top_filemap_map_pages, struct address_space *mapping, unsigned long start,
	     unsigned long last)
{
	return mmap_read(KVIEW(struct address_space, mapping), start, last, true);
}

/*
 * The fallbacks (before 6.5): filemap_map_pages() runs on every read fault, even with
 * nothing cached around it, while the tracepoint fires only when it found a cached
 * folio. Counted as the tracepoint would be: if the faulting page is in the page cache
 * (after a cold fault it is not, and the range maps nothing).
 */
static __always_inline int map_pages_fallback(struct address_space *mapping, __u64 pgoff,
					      __u64 start, __u64 last)
{
	__u64 f_first, f_last;

	if (!mapping || !cache_folio_span(mapping, pgoff, &f_first, &f_last))
		return 0;
	return mmap_read(mapping, start, last, true);
}

SEC("fexit/filemap_map_pages")
int BPF_PROG(top_filemap_map_pages_fentry, struct vm_fault *vmf, unsigned long start,
	     unsigned long last, vm_fault_t ret)
{
	return map_pages_fallback(vmf->vma->vm_file->f_mapping, vmf->pgoff, start, last);
}

SEC("kprobe/filemap_map_pages")
int BPF_KPROBE(top_filemap_map_pages_kprobe, struct vm_fault *vmf, unsigned long start,
	       unsigned long last)
{
	return map_pages_fallback(
		KPTR_AS(struct address_space, BPF_CORE_READ(vmf, vma, vm_file, f_mapping)),
		BPF_CORE_READ(vmf, pgoff), start, last);
}

/*
 * Buffered reads when syscalls are not traced (--no-syscalls): the pages a read asks
 * for, within the file size. filemap_read() calls filemap_get_pages() once per batch
 * of folios, each time with the rest of the request (current page up to the same last
 * page): only the first call of a read is counted. Not loaded otherwise (the syscalls
 * count exactly).
 */
static __always_inline int get_pages(struct address_space *mapping, __u64 index, __u64 last)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct top_task *t;
	struct inode *host;
	struct top_key k;
	__u64 eof;
	loff_t size;

	host = mapping_file(mapping, &k);
	if (!host || last < index)
		return 0;
	if (!fs_event_ok(task, host, &k, &t) || !t)
		return 0;
	if (t->rd_ino == k.ino && t->rd_last == last && index > t->rd_index &&
	    index <= t->rd_last) {
		t->rd_index = index; /* the same read, next batch */
		return 0;
	}
	t->rd_ino = k.ino;
	t->rd_index = index;
	t->rd_last = last;
	size = KR(struct inode, host, i_size);
	if (size <= 0)
		return 0;
	eof = (size - 1) / page_size;
	if (last > eof)
		last = eof;
	if (last < index)
		return 0;
	k.pid = owner_of(task);
	add_fs(&k, false, (last - index + 1) * page_size, TOP_F_PAGE_GRANULAR, (__u64)host,
	       VFS_FROM_INODE);
	return 0;
}

SEC("tp_btf/mm_filemap_get_pages")
int BPF_PROG(top_filemap_get_pages, struct address_space *mapping, unsigned long index,
	     unsigned long last)
{
	return get_pages(KVIEW(struct address_space, mapping), index, last);
}

/*
 * Without the tracepoint (before 6.11): filemap_read(), the buffered read that calls
 * filemap_get_pages(), once per read with the whole range.
 */
static __always_inline int filemap_read_pages(struct kiocb *iocb, struct iov_iter *iter)
{
	struct file *file = KR(struct kiocb, iocb, ki_filp);
	__u64 pos = KR(struct kiocb, iocb, ki_pos), count = KR(struct iov_iter, iter, count);

	if (!file || !count)
		return 0;
	return get_pages(KR(struct file, file, f_mapping), pos / page_size,
			 (pos + count - 1) / page_size);
}

FILEMAP_READ_PROGS(top_filemap_read, filemap_read_pages)

/* Who dirtied which page (src/bpf/dirtier.bpf.h), a full map counted as a drop. */
#define DIRTIER_INSERT_FAILED(err) drop_insert(err, TOP_DROP_DIRTIER_FULL)
#include "dirtier.bpf.h"

/*
 * Runs in the task that dirties a page cache folio: records it as the dirtier of the
 * folio's pages (their writeback is credited to it), and counts pages dirtied outside
 * a traced write syscall (mmap stores, io_uring or splice writes) as FS write bytes;
 * not those the file system zeroes in a truncate or fallocate (resize_enter()).
 */
SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(top_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct top_task *t;
	struct inode *host;
	struct top_key k;
	__u64 bytes, nr;

	folio = KVIEW(struct folio, folio);
	host = dirtied_inode(task, KVIEW(struct address_space, mapping));
	if (!host)
		return 0;
	k.dev = host->i_sb->s_dev;
	k.ino = host->i_ino;
	k.gen = host->i_generation;
	k.pad = 0;
	if (!fs_event_ok(task, host, &k, &t))
		return 0;
	k.pid = owner_of(task);

	bytes = folio_bytes(folio, page_size);
	nr = bytes / page_size;
	dirtier_mark(folio, k.dev, k.gen, k.ino, folio->index, nr, k.pid);

	if (t && (t->op == SYS_WRITE || t->resizing))
		return 0;
	add_fs(&k, true, bytes, TOP_F_PAGEDIRTY, (__u64)host, VFS_FROM_INODE);
	return 0;
}

/*
 * Direct I/O through iomap (ext4, xfs, btrfs...) started outside a traced read/write
 * syscall: libaio and io_uring. Inside one, the syscall's return value counts it.
 */
static __always_inline int dio_begin(struct kiocb *iocb, struct iov_iter *iter)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dio_slot *ds, *alt;
	struct top_task *t;
	struct inode *inode;
	struct file *file;
	struct top_key k;
	__u64 tag, now;

	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (t && t->op)
		return 0;
	file = KR(struct kiocb, iocb, ki_filp);
	if (!file)
		return 0;
	inode = KR(struct file, file, f_inode);
	if (!inode)
		return 0;
	k.dev = KR(struct super_block, INODE_SB(inode), s_dev);
	k.ino = KR(struct inode, inode, i_ino);
	k.gen = INODE_GEN(inode);
	k.pad = 0;
	if (!fs_event_ok(task, inode, &k, &t))
		return 0;
	k.pid = owner_of(task);
	tag = pv_addr((__u64)iocb);
	if (t) {
		t->dio_inode = (__u64)inode;
		t->dio_iocb = tag;
	}
	if (!dio_fs_at_complete) {
		add_fs(&k, KR(struct iov_iter, iter, data_source), KR(struct iov_iter, iter, count),
		       TOP_F_DIRECT | TOP_F_ASYNC_DIO, (__u64)file, VFS_FROM_FILE);
		return 0;
	}
	if (!slot_lookup2(&dio_slots, tag, NR_DIO_SLOTS, &ds, &alt))
		return 0;
	now = bpf_ktime_get_ns();
	/* Its own record (a retry) wherever it is; else a slot no live I/O holds. */
	if (slot_live_second(ds, alt, tag, DIO_LIVE))
		ds = alt;
	if (ds->tag != tag && DIO_LIVE(ds)) {
		count(TOP_DROP_DIO_SLOT_BUSY);
		return 0;
	}
	ds->tag = tag;
	ds->start_ns = now;
	ds->key = k;
	ds->file = (__u64)file;
	ds->write = KR(struct iov_iter, iter, data_source);
	return 0;
}

/* A direct I/O ends: an async one's FS bytes are the bytes it did. */
static __always_inline int dio_complete(struct kiocb *iocb, long result)
{
	__u64 tag = pv_addr((__u64)iocb);
	struct dio_slot *ds;
	struct top_task *t;
	struct top_key k;
	__u32 idx;

	/* Completed inline, in the submitting task: its submission is over. */
	t = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (t && t->dio_iocb == tag)
		t->dio_inode = 0;
	ds = slot_find_tag2(&dio_slots, tag, NR_DIO_SLOTS, &idx);
	if (!ds)
		return 0;
	ds->tag = 0;
	if (result <= 0)
		return 0;
	k = ds->key;
	add_fs(&k, ds->write, result, TOP_F_DIRECT | TOP_F_ASYNC_DIO, ds->file, VFS_FROM_FILE);
	return 0;
}

/*
 * Where neither iomap_dio_rw_queued nor iomap_dio_complete()'s fallbacks exist, a task's
 * submission window ends at its next direct I/O or traced syscall.
 */
DIO_PROGS(top_dio, dio_begin, dio_complete, tasks, struct top_task, dio_inode)

/* ----------------------------------------------------------------- DISK: queue */

/*
 * Records @o as the owner of @bio until its request completes. The slot is only
 * written if it holds something else: bios are recycled by the slab, so it mostly
 * holds this very record from the bio's previous use, and a line that nobody writes
 * stays cached on the completing CPU too (a write would make that CPU fetch it back).
 */
static __always_inline int claim_slot(struct bio *bio, struct bio_slot *o)
{
	struct bio_slot *s = slot_at(&slots, bio, NR_SLOTS);

	if (!s)
		return 0;
	o->tag = pv(bio);
	if (s->tag == o->tag && s->key.pid == o->key.pid && s->key.dev == o->key.dev &&
	    s->key.ino == o->key.ino && s->key.gen == o->key.gen && s->flags == o->flags &&
	    s->flusher == o->flusher)
		return 0;
	*s = *o;
	return 0;
}

/* The owner record of @bio, or NULL. */
static __always_inline struct bio_slot *find_slot(struct bio *bio)
{
	return slot_find(&slots, bio, NR_SLOTS);
}

/*
 * The inode of the file a bio's pages belong to, for capturing its path when its
 * stats row is created at completion (rare): page cache pages, or iomap direct I/O.
 */
static __noinline __u64 bio_inode(struct bio *bio, __u32 dev, __u32 gen, __u64 ino)
{
	struct iomap_dio *dio = bio_iomap_dio(bio, iomap_dio_end_io);
	struct inode *inode;

	inode = dio ? dio_inode(dio) : bio_page_inode(bio);
	/* Only the row's own file: a split clone's pages can be a user buffer's. */
	if (!inode || KR(struct inode, inode, i_ino) != ino || INODE_GEN(inode) != gen ||
	    KR(struct super_block, INODE_SB(inode), s_dev) != dev)
		return 0;
	return (__u64)inode;
}

/*
 * Slot flags of page cache writes, never shown: SLOT_MIXED, pages dirtied by several
 * processes (the completion splits the bio's bytes by page); SLOT_NO_DIRTIER, pages
 * without a dirtier record (credited to the submitter, counted in bytes).
 */
#define SLOT_MIXED	(1U << 30)
#define SLOT_NO_DIRTIER (1U << 31)
#define SLOT_INTERNAL	(SLOT_MIXED | SLOT_NO_DIRTIER)

/* Folios (bvec segments) walked per bio: 32 MiB of 4 KiB pages. */
#define MAX_SEGMENTS 8192

struct walk;

/*
 * A walk over the pages of a page cache write bio, one folio (or the part of it in one
 * bio_vec) per step, finding each page's dirtier: at queue time to tell whether one
 * process dirtied them all (@w NULL), at completion to split a mixed bio's bytes.
 */
struct page_walk {
	struct page_pos pos;
	/* Queue time: the first page's dirtier (0: unknown), and whether others differ. */
	__u32 owner;
	__u32 mixed;
	/* Completion: the request's walk, the bio's submitter's run, the bio. */
	struct walk *w;
	struct run *sub;
	struct bio *bio;
};

static __always_inline void page_walk_init(struct page_walk *pw, struct bio *bio, __u32 bytes,
					   struct top_key *k)
{
	page_pos_init(&pw->pos, bio, bytes, k->dev, k->gen, k->ino);
}

static __always_inline void split_segment(struct page_walk *pw, __u32 dirtier, __u32 bytes);

/* One step: the next folio segment of the bio, its dirtier. */
static int page_walk_step(__u32 i, void *ctx)
{
	struct page_walk *pw = ctx;

	if (page_walk_next(&pw->pos))
		return 1;
	if (pw->w) {
		split_segment(pw, pw->pos.dirtier, pw->pos.bytes);
	} else if (!i) {
		pw->owner = pw->pos.dirtier;
	} else if (pw->pos.dirtier != pw->owner) {
		pw->mixed = 1;
		return 1;
	}
	return 0;
}

/*
 * The process that dirtied every page of a page cache write @bio of file @k, 0 if none is
 * on record; *@mixed set if the pages have several dirtiers.
 */
static __noinline __u32 bio_dirtier(struct bio *bio, struct top_key *k, __u32 *mixed)
{
	struct page_walk pw = {};

	if (!bio || !k || !mixed)
		return 0;
	page_walk_init(&pw, bio, BPF_CORE_READ(bio, bi_iter.bi_size), k);
	bpf_loop(MAX_SEGMENTS, page_walk_step, &pw, 0);
	*mixed = pw.mixed;
	return pw.owner;
}

/* Owner of a bio that is about to be queued, from the submitting context. */
static __always_inline int queue_bio(struct bio *bio)
{
	struct task_struct *task = bpf_get_current_task_btf(), *otask = task;
	struct bio_slot o = {};
	struct block_device *bdev;
	struct inode *inode;
	struct top_task *t = NULL;
	__u32 dev, kind = TOP_INO_NOPAGE, src;
	__u64 cgid = 0, now = bpf_ktime_get_ns(); /* Q: first, before any lookup */
	bool kthread, write, waiter;

	/* Empty bios carry no bytes; an empty preflush is a cache flush: its owner counts. */
	if (!bio->bi_iter.bi_size && !(bio->bi_opf & BLK_REQ_FLAG(__REQ_PREFLUSH)))
		return 0;
	bdev = KRP(struct bio, bio, bi_bdev);
	if (!bdev)
		return 0;
	/* Bio-based devices (dm, md, zram) complete without a request: not counted here. */
	if (!bdev->bd_disk->queue->mq_ops)
		return 0;
	dev = bdev->bd_dev;
	if (!dev_ok(dev))
		return 0;
	bio_q_stamp(bio, now);
	kthread = task->flags & PF_KTHREAD;
	write = (bio->bi_opf & REQ_OP_MASK) & 1;

	src = blk_bio_src(bio, iomap_dio_end_io, &inode);
	switch (src) {
	case BLK_SRC_DIO:
		/* iomap direct I/O: the file and the waiting task are in the dio. */
		o.flags |= TOP_F_DIRECT;
		otask = blk_bio_submitter(task, bio_iomap_dio(bio, iomap_dio_end_io), &waiter);
		if (waiter)
			o.flags |= TOP_F_KTHREAD_OWNER;
		break;
	case BLK_SRC_BDEV:
		/* The block device's own cache: buffer heads, journal, raw access. */
		kind = TOP_INO_META;
		break;
	case BLK_SRC_CACHE:
		/*
		 * A file's page cache; on a file system with no single block device (btrfs:
		 * s_bdev is NULL on recent kernels, s_dev is anonymous) only regular files
		 * are files, other inodes (btrfs's btree) metadata.
		 */
		if (!KR(struct super_block, INODE_SB(inode), s_bdev) &&
		    ((KR(struct inode, inode, i_mode) & S_IFMT) != S_IFREG ||
		     metadata_inode(inode))) {
			inode = NULL;
			kind = TOP_INO_META;
		}
		break;
	case BLK_SRC_SWAP:
	case BLK_SRC_USER:
	case BLK_SRC_NOHOST:
		/* User memory, so direct I/O from a user buffer (or swap). */
		kind = TOP_INO_RAW;
		/*
		 * A user buffer's pages are direct I/O whether or not its syscall was seen:
		 * a preemptible kernel (PREEMPT_RT) skips a program run that lands on the
		 * CPU while another is preempted mid-run (1 read in 240 on 6.12-rt).
		 */
		if (src == BLK_SRC_USER)
			o.flags |= TOP_F_DIRECT;
		t = bpf_task_storage_get(&tasks, task, 0, 0);
		if (t && t->op && t->direct) {
			o.flags |= TOP_F_DIRECT;
			/* O_DIRECT read/write on a file by a non-iomap fs: that file. */
			if (!t->blk && t->file)
				inode = KR(struct file, KPTR_AS(struct file, t->file), f_inode);
		} else if (t && !t->op && t->dio_inode && !swap_bio(bio)) {
			/* Async iomap direct I/O being submitted (btrfs): its file. */
			o.flags |= TOP_F_DIRECT;
			inode = KPTR_AS(struct inode, t->dio_inode);
		}
		break;
	default:
		/* No page, or kernel memory: fs metadata buffers (xfs). */
		break;
	}
	if (inode) {
		o.key.dev = KR(struct super_block, INODE_SB(inode), s_dev);
		o.key.ino = KR(struct inode, inode, i_ino);
		o.key.gen = INODE_GEN(inode);
	} else {
		o.key.dev = dev;
		o.key.ino = TOP_INO(kind);
	}
	/* --file, --dir: the bio's file (a bio of no file never passes them). */
	if (tfilter_file_on() && !file_ok(inode, o.key.dev, o.key.gen, o.key.ino))
		goto filtered;

	/* A page cache write: credit each page to the process that dirtied it. */
	if (inode && write && !(o.flags & TOP_F_DIRECT)) {
		__u32 self = owner_of(task), flusher = task->pid, mixed = 0, dirtier;
		bool worker = kthread && throttle_worker(task, throtl_dispatch_fn);
		struct syncer *sy = NULL;

		dirtier = bio_dirtier(bio, &o.key, &mixed);
		if (worker) {
			/*
			 * Held by blk-throttle and queued by its worker: flushed by the
			 * process syncing the file, never by the worker; without one, the
			 * dirtier's own write.
			 */
			struct file_key fk = {.dev = o.key.dev, .gen = o.key.gen, .ino = o.key.ino};

			sy = bpf_map_lookup_elem(&syncers, &fk);
			if (sy) {
				self = sy->owner;
				flusher = sy->tid;
			} else if (dirtier && !mixed) {
				self = dirtier;
			}
		}
		if (mixed) {
			/* Split at completion; pages without a dirtier stay the submitter's. */
			o.flags |= SLOT_MIXED;
			o.flusher = flusher;
			if (!sy)
				note_proc(task, NULL, task->pid, bpf_get_current_cgroup_id());
		} else if (!dirtier) {
			o.flags |= SLOT_NO_DIRTIER;
		} else if (dirtier != self) {
			/* Dirtiers were recorded only if they passed the filters. */
			o.key.pid = dirtier;
			o.flags |= TOP_F_WRITEBACK;
			o.flusher = flusher;
			/* The flusher is named in the writeback section (a syncer already is). */
			if (!sy)
				note_proc(task, NULL, task->pid, bpf_get_current_cgroup_id());
			goto claim;
		} else if (worker) {
			o.key.pid = dirtier;
			goto claim;
		}
		if (sy) {
			/* The syncer's bytes, or the pages without a dirtier on record. */
			o.key.pid = sy->owner;
			if (sy->filtered)
				goto filtered;
			goto claim;
		}
	}

	/* A page cache read held by blk-throttle and queued by its worker: the reader's. */
	if (inode && !write && !(o.flags & TOP_F_DIRECT) && kthread &&
	    throttle_worker(task, throtl_dispatch_fn)) {
		struct file_key fk = {.dev = o.key.dev, .gen = o.key.gen, .ino = o.key.ino};
		struct syncer *rd = bpf_map_lookup_elem(&readers, &fk);

		if (rd) {
			o.key.pid = rd->owner;
			if (rd->filtered)
				goto filtered;
			goto claim;
		}
	}

	if (!task_ok(otask))
		goto filtered;
	o.key.pid = owner_of(otask);
	if (!(o.flags & TOP_F_KTHREAD_OWNER)) {
		cgid = bpf_get_current_cgroup_id();
		if (!cgroup_ok(cgid))
			goto filtered;
		if (!t)
			t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		note_proc(task, t, o.key.pid, cgid);
	} else {
		cgid = task_cgid(otask);
		if (!cgroup_ok(cgid))
			goto filtered;
		if (!bpf_map_lookup_elem(&procs, &o.key.pid))
			note_proc(otask, NULL, o.key.pid, cgid);
	}

claim:
	return claim_slot(bio, &o);
filtered:
	/* Still recorded: an older record of this bio address must not be used. */
	o.key.pid = PID_FILTERED;
	return claim_slot(bio, &o);
}

TP_PROGS(block_bio_queue, top_bio_queue, queue_bio, TP_PTR(struct bio, 0))

/*
 * A split bio is a new bio for the front part of one already queued, which keeps its
 * own record for the remainder. bio_chain() has made the original the split's
 * bi_private before the tracepoint fires, so the split inherits the original's owner
 * (a clone has neither pages of its own to look at nor the original's bi_end_io).
 */
static __always_inline int split_bio(struct bio *split)
{
	struct bio_slot o, *s;

	if (!split->bi_iter.bi_size)
		return 0;
	bio_q_split(split);
	s = slot_find_split_parent(&slots, split, NR_SLOTS);
	if (!s)
		return queue_bio(split);
	o = *s;
	return claim_slot(split, &o);
}

TP_PROGS(block_split, top_bio_split, split_bio, TP_PTR(struct bio, 0))

/* ---------------------------------------------------- DISK: requests in flight */

/*
 * Requests from their issue to their completion (struct top_rq_slot), direct-mapped by
 * request address. The issue time: rq->io_start_time_ns can be a time the submitter's
 * plug cached before the request was even inserted (blk_time_get_ns()), which would put
 * the scheduler's time into d2c. What is left to complete: a request issued again while
 * its slot is still open completed without the completion program running (see
 * rq_unseen()). User space maps the table to report the requests still open.
 */
#define NR_RQ_SLOTS (1U << 14)

DEFINE_MAP_FLAGS(rq_issues, BPF_MAP_TYPE_ARRAY, __u32, struct top_rq_slot, NR_RQ_SLOTS,
		 BPF_F_MMAPABLE);

/* -------------------------------------------------------------- DISK: complete */

/* Consecutive bios of one request with the same owner, accounted together. */
/* Only numbers: global functions (account_run(), run_extend()) take it. */
struct run {
	struct top_key key;
	__u64 bytes;
	__u32 flags;
	__u32 flusher;
	__u32 bdev;
	__u32 valid;
};

struct rq_info {
	__u64 q2c, d2c; /* from the first bio's queue (0: unknown) and from the issue */
	bool write;
};

/* One request's q2c and d2c on a stats row, with this interval's maxima. */
static __always_inline void add_latency(struct top_stat *s, struct rq_info *ri)
{
	__u32 g = max_gen, sl = g & 1;

	if (s->max_gen[sl] != g) {
		s->max_gen[sl] = g;
		s->q2c_max[sl] = 0;
		s->d2c_max[sl] = 0;
	}
	if (ri->q2c) {
		s->q2c_sum += ri->q2c;
		s->nr_q2c++;
		/* The writes' part without a branch: no verifier state forks here. */
		s->q2c_write_sum += ri->q2c & -(__u64)ri->write;
		s->nr_q2c_write += ri->write;
		if (ri->q2c > s->q2c_max[sl])
			s->q2c_max[sl] = ri->q2c;
	}
	if (ri->d2c) {
		s->d2c_sum += ri->d2c;
		s->nr_d2c++;
		if (ri->d2c > s->d2c_max[sl])
			s->d2c_max[sl] = ri->d2c;
	}
}

static const struct top_wb_val wb_zero;

static __always_inline void add_bytes(struct top_stat *s, struct run *r, struct rq_info *ri,
				      __u32 flags)
{
	if (ri->write)
		s->disk_write += r->bytes;
	else
		s->disk_read += r->bytes;
	s->flags |= r->flags | flags;
	s->bdev = r->bdev;
	add_latency(s, ri);
}

/*
 * Adds run @r to its owner's rows; true if it created the owner's stats row. No path
 * capture here: called from the page walk too, whose call chain is as deep as 6.1's
 * verifier allows (it counts bpf_loop callbacks as calls). A global function: verified
 * once, not again at each call site and state of the loops that call it; it leaves
 * the types of *@r unknown to its callers (it could have written anything there).
 */
__noinline bool account_run(struct run *r, struct rq_info *ri)
{
	bool created = false;
	union {
		struct top_key ua;
		struct top_wb_key wk;
	} k;
	struct top_wb_val *w;
	struct top_stat *s;
	long err;

	if (!r || !ri || !r->valid)
		return false;
	/* Bytes without an owner: the device's row, never one of the stats map's. */
	if (r->key.pid == TOP_PID_NONE && r->key.ino == TOP_INO(TOP_INO_UNATTR)) {
		s = unattr_get(r->bdev);
		if (s)
			add_bytes(s, r, ri, 0);
		return false;
	}
	/* The key on the stack: 6.1 takes no argument memory as a map key. */
	k.ua = r->key;
	s = stat_get(&k.ua, &created);
	if (!s) {
		/* No room: keep the bytes on the device's unattributed row (made at start). */
		s = unattr_get(r->bdev);
		/* There only: no path, no writeback detail of an owner without a row. */
		if (s)
			add_bytes(s, r, ri, TOP_F_LOST);
		return false;
	}
	add_bytes(s, r, ri, 0);
	if (r->flags & TOP_F_WRITEBACK) {
		k.wk.pid = r->key.pid;
		k.wk.dev = r->key.dev;
		k.wk.ino = r->key.ino;
		k.wk.flusher = r->flusher;
		k.wk.gen = r->key.gen;
		if (fault_map_nomem) { /* IOSPAN_FAULT=map_nomem: no row can be made */
			w = bpf_map_lookup_elem(&wb, &k.wk);
			err = -ENOMEM;
		} else {
			w = map_lookup_or_init(&wb, &k.wk, &wb_zero, &err);
		}
		if (!w) {
			if (insert_may_spill(err))
				w = map_lookup_or_init(&wb_spill, &k.wk, &wb_zero, &err);
			if (!w) {
				drop_insert(err, TOP_DROP_WB_FULL);
				return created;
			}
		}
		w->bytes += r->bytes;
		w->nr++;
	}
	return created;
}

/* State of one request's bio-chain walk (bpf_loop callback context). */
struct walk {
	struct bio *bio;
	struct rq_info ri;
	struct run r;
	struct bio *run_bio; /* first bio of the run: its pages name the file */
	/* The owner of the request's first run, for a slow request (first_valid). */
	struct top_key first;
	__u32 first_flags, first_valid;
	__u32 left;	     /* completed bytes not yet given to a bio */
	__u32 end;	     /* the request's last completion: the bios' stamps are taken away */
	bool counted;
};

/* account_run() of @w's run, and the path of the file of a row it created, from the
 * run's pages. */
static __always_inline void account_run_named(struct walk *w)
{
	struct run *r = &w->r;
	struct top_stat *s;
	__u64 inode, id;

	if (!account_run(r, &w->ri) || !w->run_bio || r->key.ino >= TOP_INO_SPECIAL)
		return;
	inode = bio_inode(w->run_bio, r->key.dev, r->key.gen, r->key.ino);
	/* No inode from user pages (non-iomap direct I/O): the FS event gets it. */
	if (!inode)
		return;
	vfs_path_capture(r->key.dev, r->key.ino, inode, VFS_FROM_INODE, &id);
	/* The row just created has its path now. */
	s = stat_find(&r->key);
	if (s)
		s->path_epoch = path_epoch;
}

/*
 * Adds @next to run @r if it has the same owner: returns 1 if it did, 0 if @next must
 * start a new run. Global: verified once, not at each state of the page walk.
 */
__noinline int run_extend(struct run *r, struct run *next)
{
	if (!r || !next || !r->valid || r->key.pid != next->key.pid ||
	    r->key.dev != next->key.dev || r->key.ino != next->key.ino ||
	    r->key.gen != next->key.gen || r->flusher != next->flusher || r->bdev != next->bdev)
		return 0;
	r->bytes += next->bytes;
	r->flags |= next->flags;
	return 1;
}

/*
 * @bytes of @bio for @key: extends the current run, or accounts it (capturing paths if
 * @named) and starts anew.
 */
static __always_inline void run_push(struct walk *w, struct run *next, struct bio *bio, bool named)
{
	if (slow_rq_ns && !w->first_valid) {
		w->first = next->key;
		w->first_flags = next->flags;
		w->first_valid = 1;
	}
	/* The first run of a request (most have one bio): nothing to extend or account. */
	if (w->r.valid) {
		if (run_extend(&w->r, next))
			return;
		if (named)
			account_run_named(w);
		else
			account_run(&w->r, &w->ri);
	}
	w->r = *next;
	w->run_bio = bio;
}

/*
 * One folio segment of a bio whose pages several processes dirtied: its bytes go to
 * the page's dirtier, or to the submitter if unknown (counted).
 */
static __always_inline void split_segment(struct page_walk *pw, __u32 dirtier, __u32 bytes)
{
	/* The run itself, not a key then a run: this is the deepest frame of the walk. */
	struct run next = {.bytes = bytes, .valid = 1};
	struct run *sub;

	if (!pw || !pw->w || !pw->sub)
		return;
	sub = pw->sub;
	next.key = sub->key;
	next.flags = sub->flags;
	next.bdev = sub->bdev;
	if (!dirtier) {
		count_n(TOP_DROP_WB_UNKNOWN_BYTES, bytes);
	} else if (dirtier != next.key.pid) {
		next.key.pid = dirtier;
		next.flags |= TOP_F_WRITEBACK;
		next.flusher = sub->flusher;
	}
	if (next.key.pid == PID_FILTERED)
		return;
	run_push(pw->w, &next, pw->bio, false);
}

/*
 * The bytes of @bio (its submitter's run @sub) completing now, the first ones left in
 * it, split by the pages' dirtiers.
 */
static __always_inline void split_mixed_bio(struct walk *w, struct bio *bio, struct run *sub)
{
	struct page_walk pw = {};

	if (!w || !bio || !sub)
		return;
	page_walk_init(&pw, bio, sub->bytes, &sub->key);
	pw.w = w;
	pw.sub = sub;
	pw.bio = bio;
	bpf_loop(MAX_SEGMENTS, page_walk_step, &pw, 0);
	/* Past the walk's bound: the submitter's, marked approximate (in its run, no copy). */
	if (pw.pos.left && sub->key.pid != PID_FILTERED) {
		sub->bytes = pw.pos.left;
		sub->flags |= TOP_F_APPROX;
		sub->flusher = 0;
		run_push(w, sub, bio, true);
	}
}

/*
 * One bio of the chain: find its owner, extend or flush the run. The owner's record is
 * read once, into the run: another bio can take the slot meanwhile.
 */
static int walk_bio(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	struct bio *bio = w->bio;
	struct run next = {.valid = 1};
	struct bio_slot *s;
	__u32 sz, bdev;

	if (!bio)
		return 1;
	w->bio = bio->bi_next;
	sz = bio->bi_iter.bi_size;
	if (!sz)
		return 0;
	if (!w->left) {
		w->bio = bio; /* not completed yet: the request ended in parts */
		return 1;
	}
	/* Requests can end in parts: a bio completes in several steps. */
	if (sz > w->left)
		sz = w->left;
	w->left -= sz;
	bdev = bio->bi_bdev ? bio->bi_bdev->bd_dev : 0;

	if (tfilter.devs && !dev_ok(bdev))
		return 0;
	next.bytes = sz;
	next.bdev = bdev;
	s = find_slot(bio);
	/*
	 * A bio whose queue ran no program (the kernel skips one that fires while the
	 * same program runs on that CPU, preempted) has no stamp: the owner slot at its
	 * address, never released, is an earlier bio's.
	 */
	if (s && !bio_q_seen(pv(bio), w->end))
		s = NULL;
	if (s) {
		next.key = s->key;
		next.flags = s->flags;
		next.flusher = s->flusher;
		if (next.flags & SLOT_MIXED) {
			next.flags &= ~SLOT_INTERNAL;
			if (w->counted)
				split_mixed_bio(w, bio, &next);
			return 0;
		}
		if (next.key.pid == PID_FILTERED)
			return 0;
		if ((next.flags & SLOT_NO_DIRTIER) && w->counted)
			count_n(TOP_DROP_WB_UNKNOWN_BYTES, sz);
		next.flags &= ~SLOT_INTERNAL;
	} else {
		/* Queued before tracing started, or its record was overwritten. */
		if (!track_unattributed)
			return 0;
		count(TOP_DROP_UNMATCHED);
		next.key.pid = TOP_PID_NONE;
		next.key.dev = bdev;
		next.key.ino = TOP_INO(TOP_INO_UNATTR);
	}
	if (!w->counted)
		return 0;
	run_push(w, &next, bio, true);
	return 0;
}

/*
 * A request that waited for a cache flush has completed: one flush for the owner of
 * its (last) bio, timed from the request's start.
 */
static __noinline void account_flush(struct request *rq, struct rq_info *ri)
{
	struct bio *bio = KRP(struct request, rq, bio);
	struct top_stat *s;
	struct bio_slot *o;
	struct top_key key;
	bool created = false;

	if (!bio || !ri)
		return;
	key.dev = bio->bi_bdev ? bio->bi_bdev->bd_dev : 0;
	if (tfilter.devs && !dev_ok(key.dev))
		return;
	o = find_slot(bio);
	if (o) {
		if (o->key.pid == PID_FILTERED)
			return;
		/* A page cache write's dirtier did not ask for the flush: its submitter did. */
		key.pid = (o->flags & TOP_F_WRITEBACK) ? o->flusher : o->key.pid;
	} else {
		if (!track_unattributed)
			return;
		count(TOP_DROP_UNMATCHED);
		key.pid = TOP_PID_NONE;
	}
	key.ino = TOP_INO(TOP_INO_FLUSH);
	key.gen = 0;
	key.pad = 0;
	s = stat_get(&key, &created);
	if (!s)
		return;
	s->bdev = key.dev;
	add_latency(s, ri);
}

static const struct top_disk_counts disk_counts_zero;

/* The flush row of disk @dev (KDEV), made if missing; NULL: not counted (counted). */
static __always_inline struct top_disk_counts *disk_counts_get(__u32 dev)
{
	struct top_disk_counts *f;
	long err;

	f = map_lookup_or_init(&disk_counts, &dev, &disk_counts_zero, &err);
	if (!f)
		count(TOP_DROP_FLUSH_LOST);
	return f;
}

static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	return ((__u32)disk->major << 20) | disk->first_minor;
}

/* A disk's own cache flush (the flush request the block layer issued) completed. */
static __noinline void account_dev_flush(struct request *rq, __u64 ns)
{
	struct gendisk *disk = KRP(struct request, rq, q)->disk;
	struct top_disk_counts *f;

	if (!disk)
		return;
	f = disk_counts_get(disk_dev(disk));
	if (!f)
		return;
	f->nr++;
	f->ns += ns;
}

static const struct top_dhist dhist_zero;

/* The slot of @v among @nr: (2^(k-1), 2^k] is slot k (top_abi.h). */
static __always_inline __u32 dhist_slot(__u64 v, __u32 nr)
{
	__u32 s = v > 1 ? hist_msb(v - 1) + 1 : 0;

	return s < nr ? s : nr - 1;
}

/* @v into slots[@nr] and its sum. */
static __always_inline void dhist_add(__u64 *slots, __u32 nr, __u64 *sum, __u64 v)
{
	__u32 s = dhist_slot(v, nr);

	asm volatile("" : "+r"(s));
	if (s < nr)
		slots[s]++;
	*sum += v;
}

/*
 * Request @rq ended (@op is its diskstats op, @nr_bytes what completed last): its q2c
 * and d2c (0: unknown) and its size at issue into its disk's histograms. Its own
 * lookups, not complete_rq()'s values: what that keeps live the verifier carries along
 * every path. A small frame: complete_rq()'s is large, and the kernel bounds the stack
 * of a chain of calls (6.1: 512 bytes with 4 calls deep).
 */
static __noinline void dhist_put(struct request *rq, __u32 op, __u64 q2c, __u64 d2c, __u32 nr_bytes)
{
	struct request_queue *q = KRP(struct request, rq, q);
	struct gendisk *disk = q->disk;
	struct top_dhist_slot *f;
	struct top_rq_slot *is;
	struct top_dhist_key k;
	struct top_dhist *h = NULL;
	__u32 size, i;

	if (!disk)
		return;
	k.dev = disk_dev(disk);
	k.op = op;
	if (tfilter.devs && !dev_ok(k.dev))
		return;
	/* This CPU's slot of the disk's queue (top_abi.h), taken if unused. */
	i = ((__u32)q->id % TOP_DH_FAST_QUEUES) * TOP_DH_NR_OPS + (op & 3);
	f = bpf_map_lookup_elem(&dhist_fast, &i);
	if (f && !f->key.dev) {
		f->key.dev = k.dev;
		f->key.op = k.op;
	}
	if (f && f->key.dev == k.dev && f->key.op == k.op)
		h = &f->h;
	if (!h)
		h = bpf_map_lookup_elem(&dhists, &k);
	if (!h) {
		bpf_map_update_elem(&dhists, &k, &dhist_zero, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&dhists, &k);
		if (!h) {
			count(TOP_DROP_DHIST_FULL);
			return;
		}
	}
	if (q2c)
		dhist_add(h->q2c, TOP_DH_LAT_SLOTS, &h->q2c_sum, q2c);
	if (d2c)
		dhist_add(h->d2c, TOP_DH_LAT_SLOTS, &h->d2c_sum, d2c);
	if (op == TOP_DH_FLUSH)
		return;
	/* Its size at issue: a request can end in parts, the last of them now. */
	is = slot_find(&rq_issues, rq, NR_RQ_SLOTS);
	size = is && is->d >= rq->start_time_ns ? is->size : nr_bytes;
	dhist_add(h->size, TOP_DH_SIZE_SLOTS, &h->bytes_sum, size);
}

/* diskstats' op of a request op (op_stat_group()). */
static __always_inline __u32 dhist_op(__u32 op)
{
	if (op == REQ_OP_DISCARD || op == REQ_OP_SECURE_ERASE)
		return TOP_DH_DISCARD;
	if (op == REQ_OP_FLUSH)
		return TOP_DH_FLUSH;
	return op & 1 ? TOP_DH_WRITE : TOP_DH_READ;
}

/*
 * A request slower than slow_rq_ns completed: sent with its owner (@w's first run; none
 * if its bios had no record), for watch's slow requests.
 */
static __noinline void send_slow_rq(struct request *rq, struct walk *w, __u32 nr_bytes, __u64 now)
{
	struct gendisk *disk = KRP(struct request, rq, q)->disk;
	struct top_slow_rq *e;
	__u32 bdev;

	/*
	 * A request none of whose bios had a record has no known owner: under a target
	 * filter (no unattributed row then) it is not shown to be the target's.
	 */
	if (!w || !disk || (!w->first_valid && !track_unattributed))
		return;
	bdev = ((__u32)disk->major << 20) | disk->first_minor;
	if (tfilter.devs && !dev_ok(bdev))
		return;
	e = rbuf_reserve(stall_events, TOP_REC_SLOW_RQ, sizeof(*e));
	if (!e) {
		count(TOP_DROP_RINGBUF_FULL);
		return;
	}
	e->end_ns = now;
	e->q2c_ns = w->ri.q2c;
	e->d2c_ns = w->ri.d2c;
	e->sector = KR(struct request, rq, __sector);
	e->bdev = bdev;
	e->bytes = nr_bytes;
	e->cmd_flags = KR(struct request, rq, cmd_flags);
	if (w->first_valid) {
		e->pid = w->first.pid;
		e->dev = w->first.dev;
		e->ino = w->first.ino;
		e->gen = w->first.gen;
		e->flags = w->first_flags;
	} else {
		e->pid = TOP_PID_NONE;
		e->dev = bdev;
		e->ino = TOP_INO(TOP_INO_UNATTR);
		e->gen = 0;
		e->flags = 0;
	}
	e->pad = 0;
	rbuf_submit(stall_events, e);
}

/* -------------------------------------------------------- DISK: issue, requeue */

/*
 * @bytes of the request of slot @s (issued at s->d; all of a flush) completed before
 * @now without the completion program running: the kernel does not always run it, and
 * does not always count that in its recursion_misses (6.18: every BPF program on
 * block_rq_complete, tp_btf and perf alike, missed the completions of one softirq pass
 * that ftrace recorded, with no miss counted). Found when the request is issued again,
 * or when a later completion of it finds fewer bytes left. Counted: the bytes on the
 * device's unattributed row (owner and latency unknown), a flush untimed with the most
 * it can have taken.
 */
static __noinline void rq_unseen(struct top_rq_slot *s, __u32 bytes, __u64 now)
{
	struct rq_info ri = {};
	struct top_disk_counts *f;
	struct run r = {};

	if (!s || !dev_ok(s->dev))
		return;
	count(TOP_DROP_RQ_UNSEEN);
	if (s->state & TOP_RQ_FLUSH) {
		f = disk_counts_get(s->dev);
		if (f) {
			f->nr++;
			f->untimed++;
			f->untimed_ns += now - s->d;
		}
		return;
	}
	if (!bytes)
		return;
	count_n(TOP_DROP_RQ_UNSEEN_BYTES, bytes);
	if (!track_unattributed)
		return;
	r.key.pid = TOP_PID_NONE;
	r.key.dev = s->dev;
	r.key.ino = TOP_INO(TOP_INO_UNATTR);
	r.bytes = bytes;
	r.bdev = s->dev;
	r.valid = 1;
	ri.write = s->state & TOP_RQ_WRITE;
	account_run(&r, &ri);
}

static __always_inline int issue_rq(struct request *rq)
{
	__u64 now = bpf_ktime_get_ns(); /* first: the slot's line may be on another CPU */
	struct top_rq_slot *s = slot_at(&rq_issues, rq, NR_RQ_SLOTS);
	struct gendisk *disk;
	struct bio *bio;
	__u32 op, state;

	if (!s)
		return 0;
	if (track_unseen && s->tag == pv(rq) && s->state)
		rq_unseen(s, s->left, now);
	op = rq->cmd_flags & REQ_OP_MASK;
	/* Passthrough and discards: not in diskstats' sectors, nor in top's bytes. */
	if (op == REQ_OP_DRV_IN || op == REQ_OP_DRV_OUT || op == REQ_OP_DISCARD ||
	    op == REQ_OP_SECURE_ERASE)
		state = 0;
	else if (op == REQ_OP_FLUSH)
		state = TOP_RQ_OPEN | TOP_RQ_FLUSH;
	else
		state = TOP_RQ_OPEN | (op & 1 ? TOP_RQ_WRITE : 0);
	/* Where its bytes go (its bios' device: a partition), before the state says open. */
	if (track_unseen && state) {
		bio = KRP(struct request, rq, bio);
		disk = KRP(struct request, rq, q)->disk;
		if (bio && bio->bi_bdev)
			s->dev = bio->bi_bdev->bd_dev;
		else
			s->dev = disk ? disk_dev(disk) : 0;
	}
	s->tag = pv(rq);
	/* A flush is timed from its start, as /proc/diskstats times it. */
	s->d = op == REQ_OP_FLUSH ? rq->start_time_ns : now;
	s->left = rq->__data_len;
	s->size = rq->__data_len;
	s->state = state;
	return 0;
}

TP_PROGS(block_rq_issue, top_rq_issue, issue_rq, TP_PTR(struct request, 0))

/* A request goes back to be issued again: not a completion; counted on its disk. */
static __always_inline int requeue_rq(struct request *rq)
{
	struct top_rq_slot *s = slot_find(&rq_issues, rq, NR_RQ_SLOTS);
	struct gendisk *disk = KRP(struct request, rq, q)->disk;
	struct top_disk_counts *f;

	if (s && s->state)
		s->state = 0;
	f = disk ? disk_counts_get(disk_dev(disk)) : NULL;
	if (f)
		f->drv.requeues++;
	return 0;
}

/*
 * The driver's completions, timeouts and refusals, on the request's disk
 * (driver.bpf.h): the disk's driver counters and its last error's status.
 */
static __always_inline int drv_seen(__u64 rq, __u32 what, struct drv_status *st, __u32 cid,
				    __u64 now)
{
	struct request *r = (void *)rq;
	struct top_disk_counts *f;
	__u32 major, minor;

	if (!rq || what == DRV_SUBMIT)
		return 0;
	major = BPF_CORE_READ(r, q, disk, major);
	minor = BPF_CORE_READ(r, q, disk, first_minor);
	if (!major)
		return 0;
	f = disk_counts_get(major << 20 | minor);
	if (!f)
		return 0;
	if (what == DRV_DONE) {
		f->drv.cmds++;
		if (f->drv.last.kind != st->kind)
			f->drv.last.kind = st->kind;
		if (st->status) {
			f->drv.errors++;
			f->drv.last = *st;
		}
	} else if (what == DRV_TIMEOUT) {
		f->drv.timeouts++;
	} else {
		f->drv.dispatch_errors++;
	}
	return 0;
}

DRIVER_ERROR_PROGS(top_drv)

TP_PROGS(block_rq_requeue, top_rq_requeue, requeue_rq, TP_PTR(struct request, 0))

/* -------------------------------------------------------- DISK: the completion */

static __always_inline int complete_rq(struct request *rq, unsigned int nr_bytes)
{
	__u64 now = bpf_ktime_get_ns(), t0; /* C: first, before any lookup */
	struct walk w = {};
	struct top_rq_slot *is;
	bool end;
	__u32 op;

	/* IOSPAN_FAULT=skip_complete (tests): a run the kernel did not make, 1 in 5. */
	if (fault_skip_complete && !(fault_runs++ % 5))
		return 0;
	op = rq->cmd_flags & REQ_OP_MASK;
	/*
	 * Passthrough requests (SG_IO, driver commands) are not in diskstats, and their
	 * bios never passed block_bio_queue: a stale slot must not name an owner for them.
	 */
	if (op == REQ_OP_DRV_IN || op == REQ_OP_DRV_OUT)
		return 0;
	/* Discards move no data and are not in the read/write sectors of diskstats. */
	w.counted = op != REQ_OP_DISCARD && op != REQ_OP_SECURE_ERASE;
	w.ri.write = op & 1;
	is = slot_find(&rq_issues, rq, NR_RQ_SLOTS);
	/* A slot issued before the request started was left by an earlier use of it. */
	t0 = is && is->d >= rq->start_time_ns ? is->d : rq->io_start_time_ns;
	if (t0 && t0 < now)
		w.ri.d2c = now - t0;
	/*
	 * Seen: open only while bytes are left (the request can end in parts). Fewer left
	 * than at the last look: a part completed unseen (the data of a flush sequence,
	 * whose request then ends again with no bytes).
	 */
	if (is && is->state) {
		__u32 len = rq->__data_len;

		if (track_unseen && is->left > len)
			rq_unseen(is, is->left - len, now);
		if (nr_bytes >= len)
			is->state = 0;
		else
			is->left = len - nr_bytes;
	}
	if (op == REQ_OP_FLUSH) {
		/*
		 * The flush the block layer sends the disk for the requests waiting on it:
		 * no bio, timed from its allocation as /proc/diskstats times it.
		 */
		t0 = rq->start_time_ns;
		t0 = t0 && t0 < now ? now - t0 : 0;
		account_dev_flush(rq, t0);
		if (disk_hists)
			dhist_put(rq, TOP_DH_FLUSH, t0, t0, 0);
		return 0;
	}
	w.bio = KRP(struct request, rq, bio);
	/*
	 * The request ends here unless this is a part of it, or the data part of a flush
	 * sequence (a write asking for a preflush or FUA), which ends without bytes later.
	 * Not in w: a stack slot callees may read splits the verifier's states in two.
	 */
	end = !nr_bytes ||
	      (nr_bytes >= rq->__data_len && w.bio &&
	       !(w.bio->bi_opf & (BLK_REQ_FLAG(__REQ_PREFLUSH) | BLK_REQ_FLAG(__REQ_FUA))));
	/* The walk takes the stamps away, the first bio's too (bio_q_seen()). */
	t0 = rq_q_take(rq, false);
	w.end = end | loop_opaque_zero; /* its value untracked: no state per value */
	if (t0 && t0 <= now)
		w.ri.q2c = now - t0;
	else if (w.counted && w.bio && dev_ok(w.bio->bi_bdev ? w.bio->bi_bdev->bd_dev : 0))
		count(TOP_DROP_NO_QUEUE_TIME);
	/* Counted once, at its end, as diskstats counts it (a flush sequence's last). */
	if (disk_hists && end)
		dhist_put(rq, dhist_op(op), w.ri.q2c, w.ri.d2c, nr_bytes);
	/*
	 * The end of a flush sequence: an empty preflush, or a write whose data completed
	 * before. The block layer took the flags off the request, not off its bio.
	 */
	if (!nr_bytes && w.bio &&
	    (w.bio->bi_opf & (BLK_REQ_FLAG(__REQ_PREFLUSH) | BLK_REQ_FLAG(__REQ_FUA)))) {
		account_flush(rq, &w.ri);
		return 0;
	}
	w.left = nr_bytes;
	/*
	 * The common single-bio request without a loop; chains of hundreds of merged bios
	 * through bpf_loop, without unrolling. What a step sets and the next reads is
	 * unknown to the verifier (loop_opaque_zero): 6.1's had removed the code that
	 * accounts a run when the next bio's owner differs, so of a request of several
	 * bios only the last one's bytes were counted, and no loss was.
	 */
	if (w.bio && !w.bio->bi_next) {
		walk_bio(0, &w);
	} else {
		w.r.valid = loop_opaque_zero;
		w.first_valid = loop_opaque_zero;
		bpf_loop(MAX_CHAIN, walk_bio, &w, 0);
	}
	if (!w.counted)
		return 0;
	if (w.left) {
		struct gendisk *disk;

		if (w.bio)
			count(TOP_DROP_CHAIN_TRUNC);
		if (w.r.valid) {
			w.r.bytes += w.left;
			w.r.flags |= TOP_F_APPROX;
		} else if (track_unattributed && (disk = KRP(struct request, rq, q)->disk)) {
			/* Bytes without any bio (passthrough): the disk's unattributed row. */
			w.r.key.pid = TOP_PID_NONE;
			w.r.key.dev = ((__u32)disk->major << 20) | disk->first_minor;
			if (!dev_ok(w.r.key.dev))
				return 0;
			w.r.key.ino = TOP_INO(TOP_INO_UNATTR);
			w.r.key.gen = 0;
			w.r.key.pad = 0;
			w.r.bdev = w.r.key.dev;
			w.r.bytes = w.left;
			w.r.valid = 1;
		}
	}
	account_run_named(&w);
	if (slow_rq_ns && w.ri.q2c >= slow_rq_ns)
		send_slow_rq(rq, &w, nr_bytes, now);
	return 0;
}

TP_PROGS(block_rq_complete, top_rq_complete, complete_rq, TP_PTR(struct request, 0), TP_ARG(__u32, 2))

/* ------------------------------------------------------------------- stalls */

/*
 * A thread blocked in io_schedule() has in_iowait set when it is switched out, and
 * still set when it is switched back in (io_schedule_finish() clears it afterwards):
 * the time between is the stall. Only slow ones are sent, with the sleeping stack.
 */
static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next)
{
	struct top_task *t;
	struct top_stall *e;
	__u64 now, start = 0, *st;
	__u32 tid;
	long err;

	if (!preempt && BPF_CORE_READ_BITFIELD(prev, in_iowait)) {
		if (!task_ok(prev))
			goto next;
		now = bpf_ktime_get_ns();
		/* No storage is created here: allocating under the runqueue lock is unsafe. */
		t = bpf_task_storage_get(&tasks, prev, 0, 0);
		if (t) {
			t->iowait_ts = now;
		} else {
			tid = prev->pid;
			err = bpf_map_update_elem(&iowait_start, &tid, &now, BPF_ANY);
			if (err)
				drop_insert(err, TOP_DROP_IOWAIT_FULL);
		}
	}
next:
	if (!BPF_CORE_READ_BITFIELD(next, in_iowait))
		return 0;
	t = bpf_task_storage_get(&tasks, next, 0, 0);
	if (t && t->iowait_ts) {
		start = t->iowait_ts;
		t->iowait_ts = 0;
	} else {
		tid = next->pid;
		st = bpf_map_lookup_elem(&iowait_start, &tid);
		if (!st)
			return 0;
		start = *st;
		bpf_map_delete_elem(&iowait_start, &tid);
	}
	now = bpf_ktime_get_ns();
	if (!start || start < stalls_since || now - start < stall_ns)
		return 0;
	if (tfilter.cgroups && !cgroup_ok(task_cgid(next)))
		return 0;
	e = rbuf_reserve(stall_events, TOP_REC_STALL, sizeof(*e));
	if (!e) {
		count(TOP_DROP_RINGBUF_FULL);
		return 0;
	}
	e->tid = next->pid;
	e->tgid = next->tgid;
	e->cgid = task_cgid(next);
	e->dur_ns = now - start;
	e->end_ns = now;
	e->pad = 0;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), next->comm);
	e->stack_bytes = bpf_get_task_stack(next, e->stack, sizeof(e->stack), 0);
	rbuf_submit(stall_events, e);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(top_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next);
}
