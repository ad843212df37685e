// SPDX-License-Identifier: GPL-2.0
/*
 * iospan trace: follow each request through the storage stack, in the kernel.
 *
 * A request starts where the kernel gives us its context: a read/write/fsync-family
 * syscall on a file (its record is keyed by thread id), a page fault on a file mapping
 * (same key), a writeback pass of a kernel thread over one inode (keyed by the inode),
 * or an asynchronous iomap direct I/O (keyed by its kiocb, in a direct-mapped table).
 * Filters run once, at the start. Events of the request append to its record: page
 * cache lookups and misses, readahead and off-CPU periods in the thread's own context;
 * bios through a slot table keyed by bio address, which names the owning request;
 * their request's insert/issue times through a slot table keyed by request address.
 * When the request ends its stages go into per-op histograms (per-CPU), and only a
 * request over the threshold travels to user space, through a ring buffer.
 */
#include "iospan.bpf.h"
#include "trace_abi.h"
#include "kptr.bpf.h"
#include "core_fixes.bpf.h"
#include "vfs.bpf.h"
#include "proc.bpf.h"
#include "fallback.bpf.h"
#include "driver.bpf.h"
#include "syscall.bpf.h"
#include "bio_slot.bpf.h"
/* The core's classification only: trace's bios belong to its traced requests. */
#define BLK_OWNER_NO_RECORD
#include "blk_owner.bpf.h"
#include "rbuf.bpf.h"
#include "filter.bpf.h"
#include "hist.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define NR_BIO_SLOTS   (1U << 16)
#define NR_RQ_SLOTS    (1U << 14)
#define NR_ASYNC_SLOTS (1U << 12)
#define NR_THREAD_RECS (1U << 12)
/* Longest bio chain walked per request completion; the rest is counted. */
#define MAX_CHAIN 1024

/* Request keys: the kind in the top bits, an id below. */
#define KEY_SYNC    (1ULL << 60) /* | tid: syscall or fault of that thread, in reqs */
#define KEY_WB	    (2ULL << 60) /* | a number of its own: a writeback request (wb_current) */
#define KEY_ASYNC   (3ULL << 60) /* | async slot index */
#define KEY_THREAD  (4ULL << 60) /* | thread_recs index: syscall or fault of a thread */
#define KEY_KIND(k) ((k) >> 60)
#define KEY_ID(k)   ((k) & ((1ULL << 60) - 1))

/* Load-time configuration: features that are off cost nothing. */
const volatile __u64 threshold_ns = 10000000;
const volatile __u32 self_tgid = 0;
const volatile bool trace_faults = false;
const volatile bool trace_writeback = false;
const volatile bool trace_aio = false;
const volatile __u32 aio_ops = 0; /* bit 0 aio_read, bit 1 aio_write */
const volatile __u64 iomap_dio_end_io = 0;
/* blk_throtl_dispatch_work_fn and submit_bio_wait_endio (kallsyms), 0 if unknown. */
const volatile __u64 throtl_dispatch_fn = 0;
const volatile __u64 submit_bio_wait_end_io = 0;
const volatile __u32 page_size = 4096;
/* By syscall number: TRACE_OP_* + 1 for the syscalls traced, 0 otherwise. */
const volatile __u8 sys_op[SYS_NR_TABLE] = {};
/* sched_switch is attached: each off-CPU period is timed (else: scheduler counters). */
const volatile bool offcpu_periods = false;
/* kernel.task_delayacct is on: the thread's delays->blkio_delay is kept up to date. */
const volatile bool delayacct_on = false;

/*
 * Set by user space when a stop is requested: nothing is sent after it, so what was
 * sent can be read to the end and the report printed without waiting for the
 * detaching (which takes a grace period per tracepoint).
 */
bool emit_stopped;

/* Per-thread state: the cheap "is this thread in a traced request" check. */
enum { TK_NONE, TK_SYNC, TK_FAULT };

#define TASK_OFF_EVENTS 8

/*
 * A thread's scheduler counters. Read at the start and the end of its request, their
 * differences give its switches, CPU time, run-queue wait and I/O wait without a
 * program on sched_switch, which runs several times per I/O.
 */
struct sched_counts {
	__u64 sw;    /* voluntary + involuntary context switches */
	__u64 exec;  /* se.sum_exec_runtime: CPU time accounted so far */
	__u64 runq;  /* sched_info.run_delay: time runnable but not running */
	__u64 blkio; /* delays->blkio_delay: time in io_schedule() (delay accounting) */
};

/* An off-CPU period, kept here until the request ends (no record lookup per switch). */
struct off_event {
	__u64 ts;
	__u64 dur; /* bit 63: waiting for I/O */
};

/*
 * What the thread's own context updates during its request lives here, not in the
 * record: a task storage lookup is cheaper than a hash lookup, and sched_switch and
 * block_bio_queue run often. finish_thread() folds it into the record.
 */
struct task_state {
	__u32 kind; /* TK_*: the thread's request in progress */
	__u32 off_iowait;
	__u64 off_ts; /* switched out at (while in a request) */
	__u64 offcpu, iowait;
	__u32 nsw;
	__u8 fault_io;	   /* the fault did I/O (miss, readahead, bio) */
	__u8 fault_waited; /* the fault slept waiting for I/O */
	__u8 nr_off;	   /* off-CPU periods seen (off[] holds the first ones) */
	__u8 pad;
	__u64 wb_key; /* a flusher inside writeback_single_inode: that request */
	/* The inode its request registered in inode_owners (once per request). */
	__u64 pend_inode;
	/*
	 * While it submits an async direct I/O (libaio, io_uring): the kiocb's tag. File
	 * systems that complete the bios through their own end_io (btrfs) leave no other
	 * trace of the request in the bio.
	 */
	__u64 dio_tag;
	__u64 rec_key; /* KEY_THREAD or KEY_SYNC: where its request's record is */
	__u32 async_noted; /* its process is in async_tgids */
	__u32 pad2;
	__u32 seq;     /* the record's seq for this request */
	__u32 nr_queued;
	__u64 first_q;
	struct sched_counts c0; /* at the start of the request */
	__u64 run_before;	/* CPU time since its last accounting, at the start (see below) */
	__u64 exit_ts, exit_es, exit_sw; /* at the end of its last request */
	__u64 io_calls;			 /* core_task_io_calls() at the entry of its syscall */
	struct off_event off[TASK_OFF_EVENTS];
};

DEFINE_TASK_STORAGE(tasks, struct task_state);

/*
 * Records of syscall and fault requests, direct-mapped by thread id: a thread reaches
 * its own with an array index where a hash lookup costs more, three times per request
 * (start, end, each bio's completion). A slot belongs to the thread whose request is
 * active in it, and passes to another thread of the same index once idle; a thread
 * that finds it active for another one uses reqs. Seqs stay unique per slot across
 * owners, so a late bio never matches a later owner's request.
 */
/* Mapped by user space, which counts the requests still open at exit. */
DEFINE_MAP_FLAGS(thread_recs, BPF_MAP_TYPE_ARRAY, __u32, struct trace_rec, NR_THREAD_RECS,
		 BPF_F_MMAPABLE);

/*
 * Records of writeback requests, and of syscall and fault requests whose thread_recs
 * slot was busy. A thread's element persists from one request to the next (reset, not
 * re-inserted); LRU evicts those of gone threads.
 */
DEFINE_MAP(reqs, BPF_MAP_TYPE_LRU_HASH, __u64, struct trace_rec, 2048);

/* Asynchronous direct I/O in flight, in one of two slots by kiocb address. */
#define async_slot trace_async_slot
#define ASYNC_LIVE(s) ((s)->rec.state == TRACE_S_ACTIVE)

DEFINE_MAP_FLAGS(async_slots, BPF_MAP_TYPE_ARRAY, __u32, struct async_slot, NR_ASYNC_SLOTS,
		 BPF_F_MMAPABLE);

/*
 * Processes that started async direct I/O (noted once per thread): when one exits, its
 * I/O is over (exit_aio() waits for it), so requests whose end no program saw can end.
 */
DEFINE_MAP(async_tgids, BPF_MAP_TYPE_HASH, __u32, __u8, 1024);

/* An all-zero record: the value inserted for a thread's first request. */
DEFINE_MAP(rec_zero, BPF_MAP_TYPE_ARRAY, __u32, struct trace_rec, 1);

/*
 * The writeback request of each inode (by pv() of the inode): its key in reqs. Each
 * request has a key of its own (wb_next), never reused: a request that ends while the
 * next pass of its inode starts on another CPU deletes its own element, not the next
 * one's, and a late bio finds no request rather than the next one.
 */
DEFINE_MAP(wb_current, BPF_MAP_TYPE_LRU_HASH, __u64, __u64, 2048);

__u64 wb_next = 0;

/* The owner of one bio in flight: which request, and when it was queued. */
struct bio_slot {
	__u64 tag;
	__u64 key;
	__u64 q;
	__u64 h; /* held by blk-throttle from about then, or 0 */
	__u64 g; /* its request allocated for it (block_getrq), or 0 */
	__u32 seq;
	__u16 flags; /* enum trace_bio_flags known at queue time */
	__u16 pad;
};

/* The slots used: all of them; 16 with IOSPAN_FAULT=bio_slots_contended (tests). */
const volatile __u32 bio_slots_nr = NR_BIO_SLOTS;

DEFINE_MAP(bio_slots, BPF_MAP_TYPE_ARRAY, __u32, struct bio_slot, NR_BIO_SLOTS);

/*
 * Insert / issue / requeue times of a request. Requests are preallocated and reused,
 * so a slot may hold an earlier life of the same request: times before the request's
 * start_time_ns belong to that earlier life and are ignored.
 */
struct rq_slot {
	__u64 tag;
	__u64 i, d, rq_ts;
	__u32 requeues;
	__u32 pad;
	/* The driver (driver.bpf.h): times of this life only where drv_life >= start. */
	__u64 ds, dc;
	__u64 drv_life; /* the request's start_time_ns at the driver's last submission */
	struct drv_status drv;
	__u16 drv_tag, hwq, cid;
	__u8 drv_fails;
	__u8 drv_flags; /* TRACE_BIO_DRV_TIMEOUT, TRACE_BIO_DRV_REFUSED >> 8 */
};

DEFINE_MAP(rq_slots, BPF_MAP_TYPE_ARRAY, __u32, struct rq_slot, NR_RQ_SLOTS);

DEFINE_MAP(hists, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct trace_op_hists, TRACE_OP_NR);

#define COUNTERS_NR TRACE_CNT_NR
#include "counters.bpf.h"

/* Slow requests; sized by user space (--buffer-size). */
DEFINE_RBUF(events, 16 * 1024 * 1024);

DEFINE_VFS_PATH_CACHE(8192);
DEFINE_PROC_TITLES(4096);

/* Who last dirtied each file: its writeback is that process's request. */
struct dirtier {
	__u32 pid, tid;
	__u64 cgid;
	char comm[IOSPAN_COMM_LEN];
};

DEFINE_MAP(dirtiers, BPF_MAP_TYPE_LRU_HASH, struct file_key, struct dirtier, 16384);

/*
 * The request that waits for the page cache I/O of an inode it started (fsync, a
 * O_DSYNC write, a read that missed), by inode address: blk-throttle holds such bios
 * and its worker queues them later, in a kernel thread that knows nothing of them.
 */
struct inode_owner {
	__u64 key;
	__u32 seq;
	__u32 tid;
};

DEFINE_MAP(inode_owners, BPF_MAP_TYPE_LRU_HASH, __u64, struct inode_owner, 4096);

/* ------------------------------------------------------------------ filters */

/*
 * The target filter (filter.bpf.h) for the current task, never iospan itself. *cgid:
 * its cgroup id if the filter needed it, else 0 (cgroup ids start at 1).
 */
static __always_inline bool task_ok(struct task_struct *task, __u64 *cgid)
{
	if (task->tgid == self_tgid)
		return false;
	return tfilter_current_ok(task->tgid, task->pid, cgid);
}

/* File filters (disk, file, dir) for @inode on @dev. @d: a dentry of it, for --dir. */
static __always_inline bool file_ok(__u32 dev, struct inode *inode, struct dentry *d)
{
	return tfilter_dev_ok(dev) &&
	       tfilter_file_ok(dev, INODE_GEN(inode), KR(struct inode, inode, i_ino), d);
}

/* ------------------------------------------------------------------ records */

static __always_inline void ev_add(struct trace_rec *r, __u32 type, __u64 ts, __u64 arg, __u32 arg2)
{
	__u32 n = r->nr_events;

	if (n >= TRACE_MAX_EVENTS) {
		r->events_lost++;
		count(TRACE_CNT_EVENTS_TRUNC);
		return;
	}
	r->events[n & (TRACE_MAX_EVENTS - 1)].ts = ts;
	r->events[n & (TRACE_MAX_EVENTS - 1)].arg = arg;
	r->events[n & (TRACE_MAX_EVENTS - 1)].type = type;
	r->events[n & (TRACE_MAX_EVENTS - 1)].arg2 = arg2;
	r->nr_events = n + 1;
}

/* Resets the header of a record for a new request (bios and events are appended). */
static __always_inline void rec_reset(struct trace_rec *r, __u32 op, __u64 now)
{
	r->seq++;
	r->state = TRACE_S_ACTIVE;
	r->op = op;
	r->flags = 0;
	r->flusher = 0;
	r->offset = -1;
	r->bytes = 0;
	r->ret = 0;
	r->start = now;
	r->end = 0;
	r->first_q = 0;
	r->last_c = 0;
	r->crit_h = 0;
	r->crit_ds = 0;
	r->crit_dc = 0;
	r->held_q = 0;
	r->held_h = 0;
	r->offcpu_ns = 0;
	r->iowait_ns = 0;
	r->runq_ns = 0;
	r->nr_switches = 0;
	r->nr_queued = 0;
	r->nr_done = 0;
	r->nr_bios = 0;
	r->nr_events = 0;
	r->events_lost = 0;
	r->pc_lookups = 0;
	r->pc_added = 0;
	r->ra_sync = 0;
	r->ra_async = 0;
	r->pc_lookup_pages = 0;
	r->file = 0;
}

/* A record of @task's on file (@dev, @ino) begins: who and where, the rest reset. */
static __always_inline void rec_begin(struct trace_rec *r, __u32 op, __u64 now,
				      struct task_struct *task, __u32 dev, __u64 ino)
{
	rec_reset(r, op, now);
	r->pid = task->tgid;
	r->tid = task->pid;
	r->dev = dev;
	r->ino = ino;
}

/*
 * The record's command and cgroup (@cgid where the filter read it), taken now in the
 * task: records that may end in another context (a fault, an async I/O).
 */
static __always_inline void rec_names_now(struct trace_rec *r, __u64 cgid)
{
	r->cgid = cgid ?: bpf_get_current_cgroup_id();
	bpf_get_current_comm(r->comm, sizeof(r->comm));
}

/* The thread_recs slot of thread @tid (whoever holds it), its key in *@key. */
static __always_inline struct trace_rec *thread_slot(__u32 tid, __u64 *key)
{
	__u32 idx = tid & (NR_THREAD_RECS - 1);

	*key = KEY_THREAD | idx;
	return bpf_map_lookup_elem(&thread_recs, &idx);
}

/*
 * The record for a new request of @task, and its key in *@key: its thread_recs slot,
 * unless another thread's request is active there, else its element of reqs (created
 * on its first request). Makes the task's state *@t if it has none. NULL if either
 * could not be had (reqs is full: counted).
 */
static __always_inline struct trace_rec *thread_rec_start(struct task_struct *task,
							  struct task_state **t, __u64 *key)
{
	__u32 tid = task->pid, zero = 0;
	struct trace_rec *r;

	if (!*t)
		*t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!*t)
		return NULL;
	r = thread_slot(tid, key);

	if (r && (r->tid == tid || r->state != TRACE_S_ACTIVE))
		return r;
	*key = KEY_SYNC | tid;
	r = bpf_map_lookup_elem(&reqs, key);
	if (r)
		return r;
	r = bpf_map_lookup_elem(&rec_zero, &zero);
	if (!r)
		return NULL;
	bpf_map_update_elem(&reqs, key, r, BPF_NOEXIST);
	r = bpf_map_lookup_elem(&reqs, key);
	if (!r)
		count(TRACE_CNT_REQS_FULL);
	else if (!r->seq)
		/* Evicted and back: its seqs must not restart where a late bio has one. */
		r->seq = bpf_get_prandom_u32();
	return r;
}

static __always_inline struct trace_rec *rec_of(__u64 key)
{
	struct async_slot *as;
	__u32 idx;

	if (KEY_KIND(key) == (KEY_THREAD >> 60)) {
		idx = KEY_ID(key);
		return bpf_map_lookup_elem(&thread_recs, &idx);
	}
	if (KEY_KIND(key) == (KEY_ASYNC >> 60)) {
		idx = KEY_ID(key);
		as = bpf_map_lookup_elem(&async_slots, &idx);
		return as ? &as->rec : NULL;
	}
	return bpf_map_lookup_elem(&reqs, &key);
}

/*
 * The record of the request thread @tid (with state @t) started last, if it is still
 * that request's: NULL if it was evicted from reqs or its slot went to another one.
 */
static __always_inline struct trace_rec *own_rec(struct task_state *t, __u32 tid)
{
	struct trace_rec *r = rec_of(t->rec_key);

	return r && r->tid == tid && r->seq == t->seq ? r : NULL;
}

/* The active request of thread @tid seen from another context, and its key in *@key. */
static __always_inline struct trace_rec *thread_rec_active(__u32 tid, __u64 *key)
{
	struct trace_rec *r = thread_slot(tid, key);

	/* Its slot holds its request if active there; else it can only be in reqs. */
	if (r && r->tid == tid && r->state == TRACE_S_ACTIVE)
		return r;
	*key = KEY_SYNC | tid;
	r = bpf_map_lookup_elem(&reqs, key);
	return r && r->state == TRACE_S_ACTIVE ? r : NULL;
}

/*
 * Makes the request of thread @tid (record @key, @seq) the waiter for the page cache
 * I/O of @inode, once per request: blk-throttle may hold its bios and queue them from
 * its worker. Nothing to do on kernels without blk-throttle.
 */
static __always_inline void own_inode(struct task_state *t, __u64 inode, __u64 key, __u32 seq,
				      __u32 tid)
{
	struct inode_owner o = {.key = key, .seq = seq, .tid = tid};

	if (!throtl_dispatch_fn || !inode || t->pend_inode == inode)
		return;
	t->pend_inode = inode;
	bpf_map_update_elem(&inode_owners, &inode, &o, BPF_ANY);
}

/*
 * Captures the path of the request's file as it is now (slow requests only). From here
 * on r->file is the path's id (vfs_path_capture()), for user space to find it.
 */
static __noinline int capture_path(struct trace_rec *r)
{
	/* Syscalls and async I/O hold a struct file; faults and writeback an inode. */
	__u32 from = r->op == TRACE_OP_FAULT || r->op == TRACE_OP_WRITEBACK ? VFS_FROM_INODE :
									      VFS_FROM_FILE;
	__u64 id;
	int err = vfs_path_capture(r->dev, r->ino, r->file, from, &id);

	r->file = id;
	/* The process's title as it is now, where this runs in it (not in a flusher). */
	if (r->pid == (__u32)(bpf_get_current_pid_tgid() >> 32))
		proc_title_note();
	if (!err)
		r->flags |= TRACE_F_PATH;
	else if (err == -ENOSPC)
		count(TRACE_CNT_PATHS_FULL);
	return 0;
}

/*
 * Sends a record as its header followed by the bios and events it has, not the whole
 * struct (a read with one bio is a fifth of it): the ring buffer holds five times as
 * many requests while the output catches up. Sent and lost are counted by rbuf.
 */
static __noinline int emit(struct trace_rec *r)
{
	const __u32 at = sizeof(struct rb_hdr), hdr = offsetof(struct trace_rec, bios);
	__u32 nb = r->nr_bios, ne = r->nr_events, lb, le;
	struct bpf_dynptr p;
	long err;

	if (emit_stopped)
		return 0;
	if (nb > TRACE_MAX_BIOS)
		nb = TRACE_MAX_BIOS;
	if (ne > TRACE_MAX_EVENTS)
		ne = TRACE_MAX_EVENTS;
	lb = nb * sizeof(struct trace_bio);
	le = ne * sizeof(struct trace_evt);
	err = rbuf_reserve_dynptr(events, TRACE_REC_REQUEST, at + hdr + lb + le, &p);
	if (!err)
		err = bpf_dynptr_write(&p, at, r, hdr, 0);
	if (!err && lb)
		err = bpf_dynptr_write(&p, at + hdr, r->bios, lb, 0);
	if (!err && le)
		err = bpf_dynptr_write(&p, at + hdr + lb, r->events, le, 0);
	if (err) {
		rbuf_discard_dynptr(events, &p);
		return 0;
	}
	rbuf_submit_dynptr(events, &p);
	return 0;
}

/*
 * Ends a request: derives its stages (see enum trace_stage for how they add up), adds
 * them to the per-op histograms and sends the record if it is slow.
 */
__noinline int finish(struct trace_rec *r, __u64 end, __s64 ret)
{
	struct trace_op_hists *h;
	__u64 *st;
	bool blk = false, drv;
	__u32 op;
	int i;

	/* Global, so verified once (a pointer argument may be NULL as far as it knows). */
	if (!r)
		return 0;
	st = r->stages;
	op = r->op;
	r->end = end;
	r->ret = ret;
	r->state = TRACE_S_IDLE;
	for (i = 0; i < TRACE_ST_NR; i++)
		st[i] = 0;
	st[TRACE_ST_TOTAL] = end > r->start ? end - r->start : 0;
	if (trace_rec_has_block_stages(r)) {
		__u64 held_first = 0, held_crit = 0;

		blk = true;
		/* Throttled time of the first and of the critical bio (see enum trace_stage). */
		if (r->held_q && r->held_q == r->first_q && r->held_h >= r->start &&
		    r->held_h <= r->first_q)
			held_first = r->first_q - r->held_h;
		if (r->crit_h && r->crit_q > r->first_q && r->crit_h <= r->crit_q)
			held_crit = r->crit_q - (r->crit_h > r->first_q ? r->crit_h : r->first_q);
		st[TRACE_ST_PRE_BLOCK] = r->first_q - r->start - held_first;
		st[TRACE_ST_THROTTLE] = held_first + held_crit;
		st[TRACE_ST_Q2Q] = r->crit_q - r->first_q - held_crit;
		st[TRACE_ST_Q2G] = r->crit_g - r->crit_q;
		st[TRACE_ST_G2I] = r->crit_i - r->crit_g;
		st[TRACE_ST_I2D] = r->crit_d - r->crit_i;
		st[TRACE_ST_D2C] = r->last_c - r->crit_d;
		st[TRACE_ST_Q2C] = r->last_c - r->first_q;
		st[TRACE_ST_POST_BLOCK] = end - r->last_c;
	} else {
		st[TRACE_ST_PRE_BLOCK] = st[TRACE_ST_TOTAL];
	}
	st[TRACE_ST_OFFCPU] = r->offcpu_ns;
	st[TRACE_ST_IOWAIT] = r->iowait_ns;
	drv = blk &&
	      trace_drv_split(r->crit_d, r->crit_ds, r->crit_dc, r->last_c, &st[TRACE_ST_DRV_IN]);
	/*
	 * Direct I/O ends after its last bio, and block_rq_complete fires before the bio
	 * ends: a bio still open here had a completion no program ran for (docs: a kernel
	 * gap not counted in recursion_misses). Others (readahead) may legitimately end later.
	 */
	if (r->nr_queued > r->nr_done) {
		if (r->flags & TRACE_F_WAITS_BIOS) {
			r->flags |= TRACE_F_UNSEEN_DONE;
			count_n(TRACE_CNT_UNSEEN_DONE, r->nr_queued - r->nr_done);
		} else {
			r->flags |= TRACE_F_LATE_BIOS;
		}
	}
	count(TRACE_CNT_DONE);

	h = bpf_map_lookup_elem(&hists, &op);
	if (h) {
		hist_put(&h->st[TRACE_ST_TOTAL], st[TRACE_ST_TOTAL]);
		hist_put(&h->st[TRACE_ST_PRE_BLOCK], st[TRACE_ST_PRE_BLOCK]);
		if (blk) {
			if (st[TRACE_ST_THROTTLE])
				hist_put(&h->st[TRACE_ST_THROTTLE], st[TRACE_ST_THROTTLE]);
			hist_put(&h->st[TRACE_ST_Q2Q], st[TRACE_ST_Q2Q]);
			hist_put(&h->st[TRACE_ST_Q2G], st[TRACE_ST_Q2G]);
			hist_put(&h->st[TRACE_ST_G2I], st[TRACE_ST_G2I]);
			hist_put(&h->st[TRACE_ST_I2D], st[TRACE_ST_I2D]);
			hist_put(&h->st[TRACE_ST_D2C], st[TRACE_ST_D2C]);
			hist_put(&h->st[TRACE_ST_Q2C], st[TRACE_ST_Q2C]);
			hist_put(&h->st[TRACE_ST_POST_BLOCK], st[TRACE_ST_POST_BLOCK]);
		}
		if (drv) {
			hist_put(&h->st[TRACE_ST_DRV_IN], st[TRACE_ST_DRV_IN]);
			hist_put(&h->st[TRACE_ST_DEVICE], st[TRACE_ST_DEVICE]);
			hist_put(&h->st[TRACE_ST_DRV_OUT], st[TRACE_ST_DRV_OUT]);
		}
		if (trace_op_in_thread(op) && !(r->flags & TRACE_F_NO_OFFCPU)) {
			hist_put(&h->st[TRACE_ST_OFFCPU], st[TRACE_ST_OFFCPU]);
			hist_put(&h->st[TRACE_ST_IOWAIT], st[TRACE_ST_IOWAIT]);
		}
	}
	if (st[TRACE_ST_TOTAL] < threshold_ns)
		return 0;
	capture_path(r);
	return emit(r);
}

static __always_inline void sched_counts_read(struct task_struct *task, struct sched_counts *c)
{
	c->sw = task->nvcsw + task->nivcsw;
	c->exec = task->se.sum_exec_runtime;
	c->runq = core_task_run_delay(task);
	c->blkio = 0;
	if (delayacct_on)
		c->blkio = core_task_blkio_delay(task);
}

/*
 * Off-CPU accounts of a request from the counters of its thread (@task, current at the
 * end). No switch: never off CPU. Otherwise off-CPU is the wall time minus the CPU time
 * the scheduler accounted meanwhile. It accounts at switches and ticks, so the first
 * switch also charges what the thread ran since its last accounting, before the request
 * began: when nothing was accounted since its previous request ended, that is the time
 * since then (run_before) plus the unaccounted tail of that request, which cancels the
 * unaccounted tail of this one. Else the error is bounded by a tick.
 */
static __always_inline void offcpu_from_counts(struct task_state *t, struct trace_rec *r,
					       struct task_struct *task, __u64 end)
{
	struct sched_counts c;
	__u64 wall = end > r->start ? end - r->start : 0, on, off = 0, io;

	sched_counts_read(task, &c);
	t->exit_ts = end;
	t->exit_es = task->se.exec_start;
	t->exit_sw = c.sw;
	r->runq_ns = c.runq - t->c0.runq;
	if (offcpu_periods)
		return; /* the sched_switch accounts are exact */
	r->nr_switches = c.sw - t->c0.sw;
	if (r->nr_switches) {
		on = c.exec - t->c0.exec;
		/* Accounted at the first switch, but run before the request began. */
		on = on > t->run_before ? on - t->run_before : 0;
		off = wall > on ? wall - on : 0;
	}
	if (r->runq_ns > off)
		r->runq_ns = off;
	if (delayacct_on) {
		io = c.blkio - t->c0.blkio;
	} else {
		io = off - r->runq_ns; /* blocked: mostly I/O in a request that did I/O */
		r->flags |= TRACE_F_IOWAIT_BLOCKED;
	}
	r->offcpu_ns = off;
	r->iowait_ns = io < off ? io : off;
}

/*
 * Copies the thread's off-CPU accounts into its record and ends the request. @task:
 * the thread if its counters tell about this request (it is running it now), or NULL.
 */
static __always_inline void finish_thread(struct task_state *t, struct trace_rec *r, __u64 end,
					  __s64 ret, struct task_struct *task)
{
	__u32 i;

	t->kind = TK_NONE;
	t->off_ts = 0;
	if (!r || r->state != TRACE_S_ACTIVE)
		return;
	r->offcpu_ns = t->offcpu;
	r->iowait_ns = t->iowait;
	r->nr_switches = t->nsw;
	r->runq_ns = 0;
	if (task)
		offcpu_from_counts(t, r, task, end);
	else if (!offcpu_periods)
		r->flags |= TRACE_F_NO_OFFCPU;
	r->nr_queued += t->nr_queued;
	if (t->first_q && (!r->first_q || t->first_q < r->first_q))
		r->first_q = t->first_q;
	for (i = 0; i < TASK_OFF_EVENTS && i < t->nr_off; i++)
		ev_add(r, TRACE_EV_OFFCPU, t->off[i].ts, t->off[i].dur & ~(1ULL << 63),
		       t->off[i].dur >> 63);
	if (t->nr_off > TASK_OFF_EVENTS) {
		r->events_lost += t->nr_off - TASK_OFF_EVENTS;
		count(TRACE_CNT_EVENTS_TRUNC);
	}
	/* A syscall ends in its thread: name it now, if it is slow enough to be sent. */
	if (task && end > r->start && end - r->start >= threshold_ns) {
		bpf_get_current_comm(r->comm, sizeof(r->comm));
		if (!r->cgid)
			r->cgid = bpf_get_current_cgroup_id();
	}
	finish(r, end, ret);
}

static __always_inline void thread_begin(struct task_state *t, struct trace_rec *r, __u64 key,
					 struct task_struct *task)
{
	t->rec_key = key;
	sched_counts_read(task, &t->c0);
	t->run_before = 0;
	if (t->exit_ts && t->exit_ts < r->start && t->exit_sw == t->c0.sw &&
	    t->exit_es == task->se.exec_start)
		t->run_before = r->start - t->exit_ts;
	t->seq = r->seq;
	t->nr_queued = 0;
	t->first_q = 0;
	t->pend_inode = 0;
	t->nr_off = 0;
	t->off_ts = 0;
	t->offcpu = 0;
	t->iowait = 0;
	t->nsw = 0;
	t->fault_io = 0;
	t->fault_waited = 0;
}

/*
 * A fault request ends at the thread's next event when nothing better came: with the
 * time of that event if it did I/O (flagged approximate), or not at all if it did none
 * (served from the page cache: counted, not traced; no tracepoint marks its end).
 */
static __always_inline void end_fault(struct task_state *t, __u32 tid, __u64 now)
{
	struct trace_rec *r;

	if (!t->fault_io && !t->fault_waited) {
		t->kind = TK_NONE;
		r = own_rec(t, tid);
		if (r && r->state == TRACE_S_ACTIVE)
			r->state = TRACE_S_IDLE;
		count(TRACE_CNT_FAULTS_CACHED);
		return;
	}
	r = own_rec(t, tid);
	if (r) {
		r->flags |= TRACE_F_END_APPROX;
		/*
		 * Without sched_switch nothing saw it run again: it ended soon after its
		 * last bio completed, if it had bios.
		 */
		if (!offcpu_periods && r->nr_done && r->last_c > r->start && r->last_c < now)
			now = r->last_c;
	}
	finish_thread(t, r, now, 0, NULL);
}

/* ------------------------------------------------------------------ syscalls */

/*
 * Whether the syscall exit of op @op ending the record @r is not the exit of the
 * syscall that started it: the kernel ran no program at that syscall's exit nor at the
 * entry of the thread's next traced one (a run skipped because another tracing program
 * or a bpf() map access was preempted on the CPU, as on PREEMPT_RT: hook_runs_missed),
 * so the record holds both calls. Told by the op, and by the thread's read and write
 * calls since the entry (core_task_io_calls()): one at most for a read or a write,
 * none for fsync, fdatasync and sync_file_range. Not told: a call of the same op after
 * a sync one, or after a read or write that failed before the kernel counted it.
 */
static __always_inline bool spans_syscalls(struct task_state *t, struct trace_rec *r,
					   struct task_struct *task, __u32 op)
{
	__u64 calls = core_task_io_calls(task) - t->io_calls;

	return op != r->op || calls > (op <= TRACE_OP_PWRITEV2 ? 1 : 0);
}

/*
 * A global function: the verifier checks it once, with its arguments unknown, rather
 * than along every path of its callers with each syscall's constants (three times
 * the instructions it checked when inlined).
 */
__noinline int sys_enter(long fd, __u32 op, __s64 offset, __u64 bytes, bool use_pos)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_state *t = NULL;
	struct trace_rec *r;
	struct inode *inode;
	struct file *file;
	__u64 cgid, now, key;
	bool blkdev;
	__u32 dev;

	if (trace_faults) {
		t = bpf_task_storage_get(&tasks, task, 0, 0);
		if (t && t->kind == TK_FAULT)
			end_fault(t, task->pid, bpf_ktime_get_ns());
	}
	if (!task_ok(task, &cgid))
		return 0;
	file = fd_disk_file(task, fd, false, &inode, &dev, &blkdev);
	if (!file || !file_ok(dev, inode, KR(struct file, file, f_path.dentry)))
		return 0;
	r = thread_rec_start(task, &t, &key);
	if (!r)
		return 0;
	if (r->state == TRACE_S_ACTIVE)
		count(TRACE_CNT_ABANDONED); /* the previous one never saw its exit */
	now = bpf_ktime_get_ns();
	rec_begin(r, op, now, task, dev, KR(struct inode, inode, i_ino));
	r->cgid = cgid;
	/* Name and cgroup (unless filtered by) are taken at the end, if it is sent. */
	r->offset = use_pos ? KR(struct file, file, f_pos) : offset;
	r->bytes = bytes;
	r->file = (__u64)file;
	/* A file system may fall back to buffered I/O (with readahead): iomap says when not. */
	if (KR(struct file, file, f_flags) & O_DIRECT)
		r->flags |= blkdev ? TRACE_F_DIRECT | TRACE_F_WAITS_BIOS : TRACE_F_DIRECT;
	if (blkdev)
		r->flags |= TRACE_F_BLKDEV;
	thread_begin(t, r, key, task);
	t->io_calls = core_task_io_calls(task);
	t->kind = TK_SYNC;
	/* It writes back and waits for the file's pages: blk-throttle may hold them. */
	if (op == TRACE_OP_FSYNC || op == TRACE_OP_FDATASYNC || op == TRACE_OP_SYNC_FILE_RANGE ||
	    (trace_op_writes(op) && KR(struct file, file, f_flags) & O_DSYNC))
		own_inode(t, (__u64)inode, key, r->seq, task->pid);
	count(TRACE_CNT_STARTED);
	return 0;
}

static __always_inline int sys_exit(__u32 op, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_state *t;
	struct trace_rec *r;

	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!t || t->kind != TK_SYNC)
		return 0;
	r = own_rec(t, task->pid);
	if (!r) {
		count(TRACE_CNT_REQS_FULL); /* evicted while in progress */
		t->kind = TK_NONE;
		return 0;
	}
	/* Two requests or more, with the bios and times of all: not one request. */
	if (r->state == TRACE_S_ACTIVE && spans_syscalls(t, r, task, op)) {
		count(TRACE_CNT_SPANNED);
		t->kind = TK_NONE;
		t->off_ts = 0;
		t->exit_ts = 0; /* no request's end for the next one's run_before */
		r->state = TRACE_S_IDLE;
		return 0;
	}
	/* Vectored calls do not say how much they asked for: the result does. */
	if (!r->bytes && ret > 0 && r->op != TRACE_OP_FSYNC && r->op != TRACE_OP_FDATASYNC)
		r->bytes = ret;
	finish_thread(t, r, bpf_ktime_get_ns(), ret, task);
	return 0;
}

/* A followed syscall begins: its op's arguments, by the op (syscall.bpf.h). */
static __always_inline int on_sys_enter(long nr, const __u64 *args)
{
	__u32 op = sys_op[nr] - 1;
	__s64 offset = -1;
	__u64 bytes = 0;
	bool use_pos = false;

	switch (op) {
	case TRACE_OP_READ:
	case TRACE_OP_WRITE:
		bytes = args[2];
		use_pos = true;
		break;
	case TRACE_OP_READV:
	case TRACE_OP_WRITEV:
		use_pos = true;
		break;
	case TRACE_OP_PREAD64:
	case TRACE_OP_PWRITE64:
		offset = args[3];
		bytes = args[2];
		break;
	case TRACE_OP_PREADV:
	case TRACE_OP_PWRITEV:
		offset = args[3];
		break;
	case TRACE_OP_PREADV2:
	case TRACE_OP_PWRITEV2:
		/* With offset -1 they use (and move) the file position. */
		offset = args[3];
		use_pos = offset == -1;
		break;
	case TRACE_OP_SYNC_FILE_RANGE:
		offset = args[1];
		bytes = args[2];
		break;
	default: /* fsync, fdatasync */
		break;
	}
	return sys_enter(args[0], op, offset, bytes, use_pos);
}

static __always_inline int on_sys_exit(long nr, long ret)
{
	return sys_exit(sys_op[nr] - 1, ret);
}

SYSCALL_PROGS(trace_sys, sys_op, 4, on_sys_enter, on_sys_exit)

/* ------------------------------------------------------------------ page cache */

/* The record of the current thread if it is in a request (syscall or fault). */
static __always_inline struct trace_rec *current_rec(struct task_state **tp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_state *t = bpf_task_storage_get(&tasks, task, 0, 0);
	struct trace_rec *r;

	if (!t || !t->kind)
		return NULL;
	r = own_rec(t, task->pid);
	if (!r || r->state != TRACE_S_ACTIVE)
		return NULL;
	*tp = t;
	return r;
}

static __always_inline int pc_lookup(unsigned long index, unsigned long last)
{
	struct task_state *t;
	struct trace_rec *r = current_rec(&t);
	__u64 pages = last >= index ? last - index + 1 : 1;

	if (!r)
		return 0;
	r->pc_lookups++;
	r->pc_lookup_pages += pages;
	ev_add(r, TRACE_EV_PC_LOOKUP, bpf_ktime_get_ns(), index, pages);
	return 0;
}

TP_PROGS(mm_filemap_get_pages, trace_get_pages, pc_lookup, TP_ARG(unsigned long, 1),
	 TP_ARG(unsigned long, 2))

/*
 * Without the tracepoint (before 6.11): filemap_read(), which calls
 * filemap_get_pages() per batch of folios, is seen once per read with its whole range.
 */
static __always_inline int filemap_read_lookup(struct kiocb *iocb, struct iov_iter *iter)
{
	__u64 pos = KR(struct kiocb, iocb, ki_pos), count = KR(struct iov_iter, iter, count);

	if (!count)
		return 0;
	return pc_lookup(pos / page_size, (pos + count - 1) / page_size);
}

FILEMAP_READ_PROGS(trace_get_pages, filemap_read_lookup)

static __always_inline int pc_add(struct folio *folio)
{
	struct task_state *t;
	struct trace_rec *r = current_rec(&t);
	__u32 pages;

	if (!r)
		return 0;
	pages = folio_bytes(folio, page_size) / page_size;
	r->pc_added += pages;
	t->fault_io = 1;
	/* A miss: its read bios may be held by blk-throttle. */
	if (folio->mapping)
		own_inode(t, (__u64)KR(struct address_space, folio->mapping, host), t->rec_key,
			  t->seq, r->tid);
	ev_add(r, TRACE_EV_PC_ADD, bpf_ktime_get_ns(), folio->index, pages);
	return 0;
}

TP_PROGS(mm_filemap_add_to_page_cache, trace_pc_add, pc_add, TP_VIEW(struct folio, 0))

static __always_inline int readahead(bool async, unsigned long index, unsigned long req)
{
	struct task_state *t;
	struct trace_rec *r = current_rec(&t);

	if (!r)
		return 0;
	if (async)
		r->ra_async++;
	else
		r->ra_sync++;
	t->fault_io = 1;
	ev_add(r, async ? TRACE_EV_RA_ASYNC : TRACE_EV_RA_SYNC, bpf_ktime_get_ns(), index, req);
	return 0;
}

static __always_inline int ra_sync(struct inode *inode, unsigned long index, unsigned long req)
{
	return readahead(false, index, req);
}

static __always_inline int ra_async(struct inode *inode, unsigned long index, unsigned long req)
{
	return readahead(true, index, req);
}

RA_SYNC_PROGS(trace_ra_sync, ra_sync)
RA_ASYNC_PROGS(trace_ra_async, ra_async)

/* ------------------------------------------------------------------ page faults */

/* A page fault on a file mapping: a request of its own unless inside a traced syscall. */
static __always_inline int fault(struct address_space *mapping, unsigned long index)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_state *t;
	struct trace_rec *r;
	struct inode *host;
	__u64 cgid, key, ino, now = bpf_ktime_get_ns();
	__u32 dev;

	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (t && t->kind == TK_SYNC) {
		/* A fault inside a traced syscall (a read into a mapped buffer) is part of it. */
		r = own_rec(t, task->pid);
		if (r)
			ev_add(r, TRACE_EV_FAULT, now, index, 0);
		return 0;
	}
	if (t && t->kind == TK_FAULT)
		end_fault(t, task->pid, now);
	if (!mapping)
		return 0;
	host = KR(struct address_space, mapping, host);
	if (!host || (KR(struct inode, host, i_mode) & S_IFMT) != S_IFREG || pseudo_fs(host))
		return 0;
	if (!task_ok(task, &cgid))
		return 0;
	dev = KR(struct super_block, INODE_SB(host), s_dev);
	ino = KR(struct inode, host, i_ino);
	if (!file_ok(dev, host, vfs_dentry((__u64)host, VFS_FROM_INODE)))
		return 0;
	r = thread_rec_start(task, &t, &key);
	if (!r)
		return 0;
	rec_begin(r, TRACE_OP_FAULT, now, task, dev, ino);
	rec_names_now(r, cgid);
	r->offset = (__s64)index * page_size;
	r->bytes = page_size;
	r->file = (__u64)host;
	ev_add(r, TRACE_EV_FAULT, now, index, 0);
	thread_begin(t, r, key, task);
	t->kind = TK_FAULT;
	count(TRACE_CNT_STARTED);
	return 0;
}

/* Without the tracepoint (before 6.11): the function it is in. */
FILEMAP_FAULT_PROGS(trace_fault, fault)

/* ------------------------------------------------------------------ scheduler */

/*
 * Off-CPU time of threads in a request: from being switched out to being switched
 * back in; waiting for I/O if in_iowait was set when it left (io_schedule()).
 */
static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next)
{
	struct task_state *t = NULL;
	struct trace_rec *r;
	__u64 now = 0, d;
	__u32 n;

	/*
	 * Kernel threads (idle, kworkers, the flusher) never wait inside a request of
	 * their own: skipping them saves a storage lookup on most switches.
	 * No storage is created here: allocating under the runqueue lock is unsafe.
	 */
	if (!(prev->flags & PF_KTHREAD))
		t = bpf_task_storage_get(&tasks, prev, 0, 0);
	if (t && t->kind) {
		now = bpf_ktime_get_ns();
		t->nsw++;
		t->off_ts = now;
		t->off_iowait = BPF_CORE_READ_BITFIELD(prev, in_iowait);
		if (t->kind == TK_FAULT) {
			if (t->off_iowait)
				t->fault_waited = 1;
			else if (!preempt)
				/* It ran on and now sleeps for another reason. */
				end_fault(t, prev->pid, now);
		}
	}
	if (next->flags & PF_KTHREAD)
		return 0;
	t = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!t || !t->kind || !t->off_ts)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	d = now - t->off_ts;
	t->offcpu += d;
	if (t->off_iowait)
		t->iowait += d;
	n = t->nr_off;
	if (n < TASK_OFF_EVENTS) {
		t->off[n & (TASK_OFF_EVENTS - 1)].ts = t->off_ts;
		t->off[n & (TASK_OFF_EVENTS - 1)].dur = d | ((__u64) !!t->off_iowait << 63);
	}
	if (n < 255)
		t->nr_off = n + 1;
	t->off_ts = 0;
	/* A fault ends when its thread runs again after waiting for the I/O. */
	if (t->kind == TK_FAULT && t->fault_waited) {
		r = own_rec(t, next->pid);
		finish_thread(t, r, now, 0, next);
	}
	return 0;
}

TP_PROGS(sched_switch, trace_switch, on_switch, TP_ARG(bool, 0), TP_PTR(struct task_struct, 1),
	 TP_PTR(struct task_struct, 2))

/* ------------------------------------------------------------------ async direct I/O */

static __always_inline bool sync_kiocb(struct kiocb *iocb)
{
	return !KR(struct kiocb, iocb, ki_complete);
}

/* An iomap direct I/O starts: a request of its own if asynchronous (libaio, io_uring). */
static __always_inline int dio_begin(struct kiocb *iocb, struct iov_iter *iter)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_state *t;
	struct async_slot *as;
	struct trace_rec *r;
	struct inode *inode;
	struct file *file;
	__u64 cgid, now = bpf_ktime_get_ns(), tag;
	__u32 op, dev;
	bool write = KR(struct iov_iter, iter, data_source);
	__u64 bytes = KR(struct iov_iter, iter, count), ino;

	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (t && t->kind == TK_SYNC) {
		r = own_rec(t, task->pid);
		if (r) {
			r->flags |= TRACE_F_DIRECT | TRACE_F_WAITS_BIOS;
			ev_add(r, TRACE_EV_DIO, now, bytes, write);
		}
		return 0;
	}
	if (sync_kiocb(iocb) || !(aio_ops & (write ? 2 : 1)))
		return 0;
	/* A fault whose end was not seen (no sleep since) is over: this thread moved on. */
	if (t && t->kind == TK_FAULT)
		end_fault(t, task->pid, now);
	file = KR(struct kiocb, iocb, ki_filp);
	inode = file ? KR(struct file, file, f_inode) : NULL;
	if (!inode)
		return 0;
	dev = KR(struct super_block, INODE_SB(inode), s_dev);
	ino = KR(struct inode, inode, i_ino);
	if (!task_ok(task, &cgid) || !file_ok(dev, inode, KR(struct file, file, f_path.dentry)))
		return 0;
	tag = pv_addr((__u64)iocb);
	/* Its own record (a retry) wherever it is; else a slot no live request holds. */
	as = slot_pick2_live(&async_slots, struct async_slot, tag, NR_ASYNC_SLOTS, ASYNC_LIVE);
	if (!as)
		return 0;
	if (!t)
		t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t) {
		t->dio_tag = tag;
		if (!t->async_noted) {
			__u32 tgid = task->tgid;
			__u8 one = 1;

			t->async_noted = !bpf_map_update_elem(&async_tgids, &tgid, &one, BPF_ANY);
		}
	}
	if (as->rec.state == TRACE_S_ACTIVE) {
		__u64 pos = KR(struct kiocb, iocb, ki_pos);

		/*
		 * iomap may start the same kiocb again for the rest of its range (a retry
		 * after a short or unaligned write): the same request. A kiocb reused for
		 * another range means the end of its last I/O was not seen (a completion
		 * run the kernel skipped): that one is abandoned, this one starts.
		 */
		if (as->tag == tag && pos >= as->rec.offset &&
		    pos + bytes == as->rec.offset + as->rec.bytes)
			return 0;
		/*
		 * A kiocb is reused only once freed, so its I/O is over: if all its bios
		 * completed, its end ran no program (a kprobe is skipped silently, before
		 * 6.7, while another BPF program runs on that CPU) and came with the last.
		 */
		if (as->tag == tag && as->rec.nr_queued && as->rec.nr_done >= as->rec.nr_queued) {
			as->rec.flags |= TRACE_F_END_APPROX;
			count(TRACE_CNT_END_INFERRED);
			finish(&as->rec, as->rec.last_c, as->rec.bytes);
		} else {
			count(as->tag == tag ? TRACE_CNT_ABANDONED : TRACE_CNT_ASYNC_COLLIDED);
		}
	}
	as->tag = tag;
	r = &as->rec;
	op = write ? TRACE_OP_AIO_WRITE : TRACE_OP_AIO_READ;
	rec_begin(r, op, now, task, dev, ino);
	rec_names_now(r, cgid);
	r->offset = KR(struct kiocb, iocb, ki_pos);
	r->bytes = bytes;
	r->file = (__u64)file;
	r->flags = TRACE_F_DIRECT | TRACE_F_WAITS_BIOS;
	count(TRACE_CNT_STARTED);
	return 0;
}

static __always_inline int dio_complete(struct kiocb *iocb, long result)
{
	__u64 tag = pv_addr((__u64)iocb);
	struct async_slot *as;
	__u32 idx;
	struct task_state *t;

	if (sync_kiocb(iocb))
		return 0;
	/* Completed inline, in the submitting task: its submission is over. */
	t = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
	if (t && t->dio_tag == tag)
		t->dio_tag = 0;
	as = slot_find_tag2(&async_slots, tag, NR_ASYNC_SLOTS, &idx);
	if (!as || as->rec.state != TRACE_S_ACTIVE)
		return 0;
	as->tag = 0;
	finish(&as->rec, bpf_ktime_get_ns(), result);
	return 0;
}

DIO_PROGS(trace_dio, dio_begin, dio_complete, tasks, struct task_state, dio_tag)

/*
 * Ends an async request of an exited process that is still open: its end ran no
 * program. At its last bio if they all completed, else now (bio_completion_not_seen).
 */
static long end_exited_async(__u32 idx, void *data)
{
	__u32 tgid = *(__u32 *)data;
	struct async_slot *as = bpf_map_lookup_elem(&async_slots, &idx);
	struct trace_rec *r;
	__u64 end;

	if (!as || as->rec.state != TRACE_S_ACTIVE || as->rec.pid != tgid)
		return 0;
	r = &as->rec;
	end = r->nr_queued && r->nr_done >= r->nr_queued ? r->last_c : bpf_ktime_get_ns();
	r->flags |= TRACE_F_END_APPROX;
	count(TRACE_CNT_END_INFERRED);
	as->tag = 0;
	finish(r, end, r->bytes);
	return 0;
}

static __always_inline int process_exit(struct task_struct *task)
{
	struct signal_struct *sig = KR(struct task_struct, task, signal);
	__u32 tgid = KR(struct task_struct, task, tgid);

	/* The last thread: its mm, with its aio context, is gone already. */
	if (!sig || KR(struct signal_struct, sig, live.counter) ||
	    !bpf_map_lookup_elem(&async_tgids, &tgid))
		return 0;
	bpf_map_delete_elem(&async_tgids, &tgid);
	bpf_loop(NR_ASYNC_SLOTS, end_exited_async, &tgid, 0);
	return 0;
}

TP_PROGS(sched_process_exit, trace_exit, process_exit, TP_VIEW(struct task_struct, 0))

/* ------------------------------------------------------------------ writeback */

/* Runs in the task that dirties a page cache folio: it owns the file's writeback. */
SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(trace_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file_key fk;
	struct dirtier *d, nd = {};
	struct inode *host;

	if (task->tgid == self_tgid)
		return 0;
	host = dirtied_inode(task, KVIEW(struct address_space, mapping));
	if (!host)
		return 0;
	fk = file_key_of(host);
	d = bpf_map_lookup_elem(&dirtiers, &fk);
	if (d && d->tid == task->pid)
		return 0;
	nd.pid = task->tgid;
	nd.tid = task->pid;
	nd.cgid = bpf_get_current_cgroup_id();
	bpf_get_current_comm(nd.comm, sizeof(nd.comm));
	bpf_map_update_elem(&dirtiers, &fk, &nd, BPF_ANY);
	return 0;
}

/* The writeback request in progress of the inode whose pv() is @tag, its key in *@key. */
static __always_inline struct trace_rec *wb_rec_of(__u64 tag, __u64 *key)
{
	__u64 *k = bpf_map_lookup_elem(&wb_current, &tag);

	if (!k)
		return NULL;
	*key = *k;
	return bpf_map_lookup_elem(&reqs, key);
}

/*
 * Drops one hold on writeback request @r (a pass in progress, or a bio in flight);
 * the last one ends it. Passes end and bios complete on different CPUs at once: the
 * holds are counted atomically, and exactly one of them sees the count reach zero.
 */
static __always_inline void wb_release(struct trace_rec *r, __u64 key, __u64 now)
{
	if (__sync_fetch_and_add(&r->wb_holds, -1) != 1)
		return;
	finish(r, now, 0);
	bpf_map_delete_elem(&reqs, &key);
}

/* Whether the (absent or known) dirtier passes the process filters. */
static __always_inline bool dirtier_ok(struct dirtier *d)
{
	if (!tfilter_proc_on())
		return true;
	return d && tfilter_proc_ok(d->pid, d->tid, d->comm, d->cgid);
}

SEC("tp_btf/writeback_single_inode_start")
int BPF_PROG(trace_wb_start, struct inode *inode, struct writeback_control *wbc,
	     unsigned long nr_to_write)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file_key fk;
	struct task_state *t;
	struct trace_rec *r;
	struct dirtier *d;
	__u64 key, now, tag;
	__u32 zero = 0;

	inode = KVIEW(struct inode, inode);
	if (!inode || (inode->i_mode & S_IFMT) != S_IFREG || task->tgid == self_tgid ||
	    metadata_inode(inode))
		return 0;
	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (t && t->kind)
		return 0; /* written back inside a traced request: its bios are that request's */
	fk = file_key_of(inode);
	d = bpf_map_lookup_elem(&dirtiers, &fk);
	if (!dirtier_ok(d) || !file_ok(fk.dev, inode, vfs_dentry((__u64)inode, VFS_FROM_INODE)))
		return 0;
	if (!t)
		t = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		count(TRACE_CNT_WB_UNFOLLOWED);
		return 0;
	}
	tag = pv(inode);
	r = wb_rec_of(tag, &key);
	/*
	 * An earlier pass still has bios in flight: the flusher writes a big file in
	 * chunks, pass after pass, without waiting. This pass goes on with the same
	 * request, which ends with the last bio of the last pass; unless that bio has
	 * just ended it (no hold left), then this pass starts the next one.
	 */
	if (r && __sync_fetch_and_add(&r->wb_holds, 1) > 0) {
		r->state = TRACE_S_ACTIVE;
		r->flusher = task->pid;
		t->wb_key = key;
		return 0;
	}
	r = bpf_map_lookup_elem(&rec_zero, &zero);
	if (!r)
		return 0;
	key = KEY_WB | (__sync_fetch_and_add(&wb_next, 1) & ((1ULL << 56) - 1));
	bpf_map_update_elem(&reqs, &key, r, BPF_NOEXIST);
	r = bpf_map_lookup_elem(&reqs, &key);
	if (!r) {
		count(TRACE_CNT_REQS_FULL);
		return 0;
	}
	if (bpf_map_update_elem(&wb_current, &tag, &key, BPF_ANY)) {
		bpf_map_delete_elem(&reqs, &key);
		count(TRACE_CNT_REQS_FULL);
		return 0;
	}
	now = bpf_ktime_get_ns();
	rec_reset(r, TRACE_OP_WRITEBACK, now);
	r->wb_holds = 1;
	/* The record started as a copy of rec_zero: no dirtier on record leaves no owner. */
	if (d) {
		r->pid = d->pid;
		r->tid = d->tid;
		r->cgid = d->cgid;
		__builtin_memcpy(r->comm, d->comm, sizeof(r->comm));
	}
	r->flusher = task->pid;
	r->dev = fk.dev;
	r->ino = fk.ino;
	r->file = (__u64)inode;
	t->wb_key = key;
	count(TRACE_CNT_STARTED);
	return 0;
}

SEC("tp_btf/writeback_single_inode")
int BPF_PROG(trace_wb_end, struct inode *inode, struct writeback_control *wbc,
	     unsigned long nr_to_write)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_state *t;
	struct trace_rec *r;
	__u64 key, now, wrote;

	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!t || !t->wb_key)
		return 0;
	key = t->wb_key;
	t->wb_key = 0;
	r = bpf_map_lookup_elem(&reqs, &key);
	if (!r || r->state != TRACE_S_ACTIVE)
		return 0;
	now = bpf_ktime_get_ns();
	wrote = nr_to_write > (unsigned long)wbc->nr_to_write ? nr_to_write - wbc->nr_to_write : 0;
	r->bytes += wrote * page_size; /* over all its passes */
	/*
	 * No data page of the file written in any pass (the inode's own metadata: its
	 * times, its size): not a data writeback, left out (counted). No bio of it is in
	 * flight, no other pass holds it (passes of an inode do not overlap).
	 */
	if (!r->bytes && !r->nr_queued) {
		r->state = TRACE_S_IDLE;
		bpf_map_delete_elem(&reqs, &key);
		count(TRACE_CNT_WB_NO_DATA);
		return 0;
	}
	ev_add(r, TRACE_EV_WB_DONE, now, wrote, 0);
	r->state = TRACE_S_SUBMITTED;
	/* Ends with its last bio; at once if all are done already. */
	wb_release(r, key, now);
	return 0;
}

/* ------------------------------------------------------------------ block: queue */

/*
 * The request a bio held by blk-throttle belongs to, and its key in *@key, or NULL: a
 * bio submitted with submit_bio_wait() (a flush) has its waiter on the wait list of
 * the completion in bi_private; a page cache bio, the request registered as waiting
 * for its inode (own_inode()), else the writeback of that inode in progress.
 */
static __noinline struct trace_rec *throttled_owner(struct bio *bio, __u64 *key)
{
	struct inode_owner *o;
	struct trace_rec *r;
	struct inode *inode;
	__u64 ino;

	if (submit_bio_wait_end_io && (__u64)bio->bi_end_io == submit_bio_wait_end_io) {
		struct completion *done = KPTR_AS(struct completion, bio->bi_private);
		struct list_head *first;
		__u64 w = 0;

		if (!done)
			return NULL;
		first = KR(struct completion, done, wait.task_list.next);
		if (!first || (__u64)first == (__u64)&done->wait.task_list)
			return NULL; /* nobody waits (yet) */
		/* The swait_queue entry holding @first, on the waiter's stack. */
		bpf_probe_read_kernel(&w, sizeof(w),
				      (void *)first -
					      bpf_core_field_offset(struct swait_queue, task_list) +
					      bpf_core_field_offset(struct swait_queue, task));
		return w ? thread_rec_active(
				   KR(struct task_struct, KPTR_AS(struct task_struct, w), pid),
				   key) :
			   NULL;
	}
	inode = bio_page_inode(bio);
	if (!inode)
		return NULL;
	ino = (__u64)inode;
	o = bpf_map_lookup_elem(&inode_owners, &ino);
	if (o) {
		r = rec_of(o->key);
		if (r && r->seq == o->seq && r->tid == o->tid && r->state == TRACE_S_ACTIVE) {
			*key = o->key;
			return r;
		}
	}
	r = wb_rec_of(pv_addr(ino), key); /* (a number without bpf_rdonly_cast) */
	return r && r->state == TRACE_S_ACTIVE ? r : NULL;
}

/*
 * When a throttled bio of @r was held from, about: the last thing the request was
 * seen doing before, its start, its last timeline event or its last bio completion.
 */
static __always_inline __u64 hold_start(struct trace_rec *r)
{
	__u32 n = r->nr_events;
	__u64 h = r->start, ts;

	if (n > TRACE_MAX_EVENTS)
		n = TRACE_MAX_EVENTS;
	if (n) {
		ts = r->events[(n - 1) & (TRACE_MAX_EVENTS - 1)].ts;
		if (ts > h)
			h = ts;
	}
	return r->last_c > h ? r->last_c : h;
}

/*
 * Bio slots change hands between CPUs: a bio queued on one may take the slot of a bio
 * completing on another. Whoever exchanges the tag away owns what the slot held: the
 * completion (compare-and-exchange with 0) or the bio that takes it (exchange with
 * SLOT_BUSY while it writes its owner, then its tag). So a bio in flight is released
 * once, by its completion or by the bio that took its slot, never by both nor neither.
 */
#define SLOT_BUSY 1ULL /* never a pv() */

/*
 * The slot for @bio (two-way, bio_slot.bpf.h), held SLOT_BUSY until bio_slot_publish().
 * A bio still in flight there (both slots taken) loses its slot: counted if its
 * request is still in progress, and a writeback request no longer waits for it.
 * Without that, its completion found no slot and its request never ended (2
 * writebacks of 128 MiB in 24 with another disk's writeback in flight, one slot per
 * bio then). NULL if another CPU is writing the slot: the bio is not followed.
 */
static __noinline struct bio_slot *bio_slot_take(struct bio *bio, __u64 now)
{
	struct bio_slot *s = slot_pick2(&bio_slots, struct bio_slot, pv(bio), bio_slots_nr, q);
	struct trace_rec *r;
	__u64 old;

	if (!s)
		return NULL;
	old = __sync_lock_test_and_set(&s->tag, SLOT_BUSY);
	if (old == SLOT_BUSY) {
		count(TRACE_CNT_BIO_UNMATCHED);
		return NULL;
	}
	if (old) {
		r = rec_of(s->key);
		if (r && r->seq == s->seq && r->state != TRACE_S_IDLE) {
			count(TRACE_CNT_BIO_UNMATCHED);
			if (KEY_KIND(s->key) == (KEY_WB >> 60))
				wb_release(r, s->key, now);
		}
	}
	return s;
}

/* Makes slot @s, its owner written, @bio's: its completion may take it from now on. */
static __always_inline void bio_slot_publish(struct bio_slot *s, struct bio *bio)
{
	__sync_lock_test_and_set(&s->tag, pv(bio));
}

static __always_inline int queue_bio(struct bio *bio)
{
	__u64 key = 0, now = bpf_ktime_get_ns(), held = 0; /* Q: first, before any lookup */
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_state *t = NULL;
	struct trace_rec *r = NULL;
	struct bio_slot *s;
	struct iomap_dio *dio;
	struct block_device *bdev;
	__u16 flags = 0;
	__u32 op, seq, idx;

	bdev = KRP(struct bio, bio, bi_bdev);
	/* Bio-based devices (dm, md) complete without a request: their clones are seen. */
	if (!bdev || !bdev->bd_disk->queue->mq_ops)
		return 0;
	dio = bio_iomap_dio(bio, iomap_dio_end_io);
	if (dio) {
		if (dio_async(dio)) {
			struct async_slot *as;

			if (!trace_aio)
				return 0;
			as = slot_find_tag2(&async_slots, pv_addr((__u64)DIO_IOCB(dio)),
					    NR_ASYNC_SLOTS, &idx);
			if (!as || as->rec.state != TRACE_S_ACTIVE)
				return 0;
			key = KEY_ASYNC | idx;
			r = &as->rec;
		} else if (task->flags & PF_KTHREAD) {
			/* Re-submitted by a kernel thread (blk-throttle): the waiting task's. */
			struct task_struct *w;
			bool waiter;

			w = blk_bio_submitter(task, dio, &waiter);
			if (!waiter)
				return 0;
			r = thread_rec_active(KR(struct task_struct, w, pid), &key);
			if (!r)
				return 0;
			flags |= TRACE_BIO_KTHREAD;
			r->flags |= TRACE_F_KTHREAD_BIO;
			if (throttle_worker(task, throtl_dispatch_fn))
				flags |= TRACE_BIO_THROTTLED;
		}
	}
	if (!key) {
		t = bpf_task_storage_get(&tasks, task, 0, 0);
		if (t && t->dio_tag && t->kind != TK_SYNC && !swap_bio(bio)) {
			/* Submitting an async direct I/O whose bios iomap does not end (btrfs). */
			struct async_slot *as = slot_find_tag2(&async_slots, t->dio_tag,
							       NR_ASYNC_SLOTS, &idx);

			if (as && as->rec.state == TRACE_S_ACTIVE) {
				key = KEY_ASYNC | idx;
				r = &as->rec;
				goto owned;
			}
		}
		if (!t || (!t->kind && !t->wb_key)) {
			/* Held by blk-throttle, queued by its worker: whose it is. */
			if (!throttle_worker(task, throtl_dispatch_fn))
				return 0;
			r = throttled_owner(bio, &key);
			if (!r)
				return 0;
			flags |= TRACE_BIO_KTHREAD | TRACE_BIO_THROTTLED;
			r->flags |= TRACE_F_KTHREAD_BIO;
			goto owned;
		}
		if (t->kind) {
			/* The thread's own request: counted in its storage, no record lookup. */
			key = t->rec_key;
			seq = t->seq;
			s = bio_slot_take(bio, now);
			if (!s)
				return 0;
			t->nr_queued++;
			if (!t->first_q)
				t->first_q = now;
			if (t->kind == TK_FAULT)
				t->fault_io = 1;
			goto claim;
		}
		if (!t->wb_key)
			return 0;
		key = t->wb_key;
		r = bpf_map_lookup_elem(&reqs, &key);
		if (!r || r->state != TRACE_S_ACTIVE)
			return 0;
	}
owned:
	if (!r)
		return 0;
	seq = r->seq;
	s = bio_slot_take(bio, now);
	if (!s)
		return 0;
	if (KEY_KIND(key) == (KEY_WB >> 60))
		__sync_fetch_and_add(&r->wb_holds, 1); /* released by its completion */
	__sync_fetch_and_add(&r->nr_queued, 1);
	if (!r->first_q)
		r->first_q = now;
	if (flags & TRACE_BIO_THROTTLED) {
		held = hold_start(r);
		if (!r->held_q) {
			r->held_q = now;
			r->held_h = held;
		}
	}
claim:
	op = bio->bi_opf & REQ_OP_MASK;
	if (op & 1)
		flags |= TRACE_BIO_WRITE;
	if (op == REQ_OP_FLUSH || !bio->bi_iter.bi_size)
		flags |= TRACE_BIO_FLUSH;
	s->key = key;
	s->seq = seq;
	s->q = now;
	s->h = held;
	s->g = 0;
	s->flags = flags;
	bio_slot_publish(s, bio);
	return 0;
}

TP_PROGS(block_bio_queue, trace_bio_queue, queue_bio, TP_PTR(struct bio, 0))

/* A split is one more bio of its original's request (X); Q is the original's. */
static __always_inline int split_bio(struct bio *split)
{
	struct bio_slot *s, *n, o;
	struct trace_rec *r;

	s = slot_find_split_parent2(&bio_slots, split, bio_slots_nr);
	if (!s)
		return 0;
	o = *s;
	r = rec_of(o.key);
	if (!r || r->seq != o.seq || r->state == TRACE_S_IDLE)
		return 0;
	s->flags |= TRACE_BIO_SPLIT;
	n = bio_slot_take(split, o.q);
	if (!n)
		return 0;
	if (KEY_KIND(o.key) == (KEY_WB >> 60))
		__sync_fetch_and_add(&r->wb_holds, 1); /* its original holds it meanwhile */
	__sync_fetch_and_add(&r->nr_queued, 1);
	n->key = o.key;
	n->seq = o.seq;
	n->q = o.q;
	n->h = o.h;
	n->g = 0;
	n->flags = o.flags | TRACE_BIO_SPLIT;
	bio_slot_publish(n, split);
	return 0;
}

TP_PROGS(block_split, trace_split, split_bio, TP_PTR(struct bio, 0))

/*
 * G: a request was allocated for an owned bio (blktrace's G). rq->start_time_ns is no
 * substitute: it is stamped before the allocation ends, and on recent kernels it can be
 * a time the submitter's plug cached for an earlier request.
 */
static __always_inline int getrq_bio(struct bio *bio)
{
	__u64 now = bpf_ktime_get_ns(); /* first: the slot's line may be on another CPU */
	struct bio_slot *s = slot_find2(&bio_slots, bio, bio_slots_nr);

	if (s)
		s->g = now;
	return 0;
}

TP_PROGS(block_getrq, trace_getrq, getrq_bio, TP_PTR(struct bio, 0))

static __always_inline int merge_bio(struct bio *bio)
{
	struct bio_slot *s = slot_find2(&bio_slots, bio, bio_slots_nr);

	if (s)
		s->flags |= TRACE_BIO_MERGED;
	return 0;
}

TP_PROGS(block_bio_backmerge, trace_backmerge, merge_bio, TP_PTR(struct bio, 0))

TP_PROGS(block_bio_frontmerge, trace_frontmerge, merge_bio, TP_PTR(struct bio, 0))

/* ------------------------------------------------------------------ block: request */

enum { RQ_INSERT, RQ_ISSUE, RQ_REQUEUE };

/* Blind stores: the completion checks them against the request's start time. */
static __always_inline int rq_event(struct request *rq, int what)
{
	__u64 now = bpf_ktime_get_ns(); /* first: the slot's line may be on another CPU */
	struct rq_slot *s = slot_claim(&rq_slots, rq, NR_RQ_SLOTS);

	if (!s)
		return 0;
	if (what == RQ_INSERT) {
		s->i = now;
	} else if (what == RQ_ISSUE) {
		s->d = now;
	} else {
		if (s->rq_ts < rq->start_time_ns)
			s->requeues = 0;
		s->requeues++;
		s->rq_ts = now;
	}
	return 0;
}

TP_PROGS(block_rq_insert, trace_rq_insert, rq_event, TP_PTR(struct request, 0), RQ_INSERT)
TP_PROGS(block_rq_issue, trace_rq_issue, rq_event, TP_PTR(struct request, 0), RQ_ISSUE)
TP_PROGS(block_rq_requeue, trace_rq_requeue, rq_event, TP_PTR(struct request, 0), RQ_REQUEUE)

/* ------------------------------------------------------------------ driver */

/*
 * A driver hook saw request @rq (a number): its times and status go into the request's
 * slot, for its completion (complete_rq) to give to its bios. A submission starts the
 * driver's record of the request's life (its start_time_ns); a requeued request's next
 * attempt keeps it, so failed attempts add up.
 */
static __always_inline int drv_seen(__u64 rq, __u32 what, struct drv_status *st, __u32 cid,
				    __u64 now)
{
	struct request *r = (void *)rq;
	struct rq_slot *s;
	__u64 life;

	if (!rq)
		return 0;
	s = slot_at_tag(&rq_slots, pv_addr(rq), NR_RQ_SLOTS);
	if (!s)
		return 0;
	if (what == DRV_SUBMIT) {
		life = BPF_CORE_READ(r, start_time_ns);
		if (s->tag != pv_addr(rq))
			s->tag = pv_addr(rq);
		if (s->drv_life != life) {
			s->drv_life = life;
			s->drv_fails = 0;
			s->drv_flags = 0;
			s->drv = *st;
		}
		s->ds = now;
		s->dc = 0;
		s->drv_tag = BPF_CORE_READ(r, tag);
		s->hwq = BPF_CORE_READ(r, mq_hctx, queue_num);
		s->cid = cid;
		return 0;
	}
	/*
	 * Completions and errors of a request whose submission (by the same driver: every
	 * blk-mq driver's completion passes virtio-blk's hook) this slot holds.
	 */
	if (s->tag != pv_addr(rq) || s->drv.kind != st->kind)
		return 0;
	if (what == DRV_DONE) {
		s->dc = now;
		if (st->status) {
			if (s->drv_fails < 255)
				s->drv_fails++;
			s->drv = *st;
		} else if (!s->drv_fails) {
			s->drv = *st;
		}
	} else if (what == DRV_TIMEOUT) {
		s->drv_flags |= TRACE_BIO_DRV_TIMEOUT >> 8;
	} else if (what == DRV_DISPATCH_ERROR) {
		s->drv_flags |= TRACE_BIO_DRV_REFUSED >> 8;
	}
	return 0;
}

DRIVER_PROGS(trace_drv)

/* ------------------------------------------------------------------ block: complete */

/* What one request completion knows, for each of its bios. */
struct done {
	struct bio *bio;
	__u64 now, g, i, d;
	__u64 ds, dc; /* the driver's, 0 if none (dc) or unseen (ds) */
	struct drv_status drv;
	__u32 left; /* completed bytes not yet given to a bio */
	__u16 flags;
	__s16 error;
	__u16 requeues;
	__u16 drv_tag, hwq, cid;
	__u8 drv_fails;
	__u8 pad[7];
};

/* The driver's part of a completion, from the request's slot @s (of this life). */
static __always_inline void driver_done(struct done *dn, struct rq_slot *s)
{
	dn->drv = s->drv;
	dn->drv_fails = s->drv_fails;
	dn->flags |= (__u16)s->drv_flags << 8;
	dn->drv_tag = s->drv_tag;
	dn->hwq = s->hwq;
	dn->cid = s->cid;
	/* Its stages: a completion the driver took after the issue, before this one. */
	if (s->dc && s->dc >= dn->d && s->dc <= dn->now && s->ds <= s->dc) {
		dn->ds = s->ds;
		dn->dc = s->dc;
	}
}

/*
 * Gives one completed bio, whose slot is @s, to its request; the writeback request may
 * end here.
 */
static __noinline int bio_done(struct done *dn, struct bio *bio, struct bio_slot *s, __u32 sz)
{
	struct bio_slot o;
	struct trace_rec *r;
	struct trace_bio *b;
	__u64 g, i, d;
	__u32 n;

	if (!bio || !s)
		return 0;
	o = *s;
	/* Completed: ours unless a bio queued meanwhile took the slot (and released it). */
	if (__sync_val_compare_and_swap(&s->tag, pv(bio), 0) != pv(bio))
		return 0;
	r = rec_of(o.key);
	if (!r) {
		count(TRACE_CNT_BIO_UNMATCHED);
		return 0;
	}
	if (r->seq != o.seq || r->state == TRACE_S_IDLE) {
		count(TRACE_CNT_BIO_LATE);
		return 0;
	}
	/* A merged bio joined a request allocated before it was queued. */
	g = dn->g > o.q ? dn->g : o.q;
	i = dn->i > g ? dn->i : g;
	d = dn->d > i ? dn->d : i;
	if (d > dn->now)
		d = dn->now;
	__sync_fetch_and_add(&r->nr_done, 1); /* completions run on several CPUs at once */
	if (dn->now >= r->last_c) {
		r->last_c = dn->now;
		r->crit_q = o.q;
		r->crit_g = g;
		r->crit_i = i;
		r->crit_d = d;
		r->crit_h = o.h;
		r->crit_ds = dn->ds;
		r->crit_dc = dn->dc;
	}
	n = r->nr_bios;
	if (n >= TRACE_MAX_BIOS) {
		count(TRACE_CNT_BIOS_TRUNC);
	} else {
		b = &r->bios[n & (TRACE_MAX_BIOS - 1)];
		b->sector = bio->bi_iter.bi_sector;
		b->dev = KRP(struct bio, bio, bi_bdev) ? KRP(struct bio, bio, bi_bdev)->bd_dev : 0;
		b->bytes = sz;
		b->q = o.q;
		b->g = g;
		b->i = i;
		b->d = d;
		b->c = dn->now;
		b->h = o.h;
		b->flags = o.flags | dn->flags;
		b->error = dn->error;
		b->requeues = dn->requeues;
		b->ds = dn->ds;
		b->dc = dn->dc;
		b->drv_tag = dn->drv_tag;
		b->hwq = dn->hwq;
		b->cid = dn->cid;
		b->drv_fails = dn->drv_fails;
		b->drv = dn->drv;
		r->nr_bios = n + 1;
	}
	if (KEY_KIND(o.key) == (KEY_WB >> 60))
		wb_release(r, o.key, dn->now);
	return 0;
}

/* The next bio of the chain, whose slot is @s: completed if the bytes cover it. 1: stop. */
static __always_inline int give_bio(struct done *dn, struct bio *bio, struct bio_slot *s)
{
	__u32 sz = bio->bi_iter.bi_size;

	if (sz > dn->left)
		return 1; /* completes in a later part */
	dn->left -= sz;
	dn->bio = bio->bi_next;
	bio_done(dn, bio, s, sz);
	return 0;
}

/* One bio of the chain (bpf_loop callback). */
static int walk_bio(__u32 idx, void *ctx)
{
	struct done *dn = ctx;
	struct bio *bio = dn->bio;

	if (!bio)
		return 1;
	return give_bio(dn, bio, slot_find2(&bio_slots, bio, bio_slots_nr));
}

static __always_inline int complete_rq(struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 now = bpf_ktime_get_ns(), start; /* C: first, before any lookup */
	struct bio_slot *only = NULL, *first;
	struct done dn = {};
	struct rq_slot *s;
	long n;

	if (!KRP(struct request, rq, bio))
		return 0;
	/* Most requests carry one bio that no traced request owns: done at once. */
	if (!KRP(struct request, rq, bio)->bi_next) {
		only = slot_find2(&bio_slots, KRP(struct request, rq, bio), bio_slots_nr);
		if (!only)
			return 0;
	}
	dn.now = now;
	start = rq->start_time_ns;
	/* G: stamped for the request's first bio where block_getrq ran for it. */
	first = only ?: slot_find2(&bio_slots, KRP(struct request, rq, bio), bio_slots_nr);
	dn.g = first && first->g >= first->q ? first->g : start;
	s = slot_find(&rq_slots, rq, NR_RQ_SLOTS);
	if (s) {
		if (s->i >= start)
			dn.i = s->i;
		/*
		 * D is our own stamp: rq->io_start_time_ns can be a time the submitter's
		 * plug cached before the insert (blk_time_get_ns()), which would put the
		 * scheduler's time into d2c. An issue before this insert is an earlier life's.
		 */
		if (s->d >= start && s->d >= dn.i)
			dn.d = s->d;
		if (s->rq_ts >= start && s->requeues) {
			dn.requeues = s->requeues;
			dn.flags |= TRACE_BIO_REQUEUED;
		}
	}
	if (!dn.d)
		dn.d = rq->io_start_time_ns; /* its slot was taken by another request */
	if (s && s->drv_life == start && start)
		driver_done(&dn, s);
	if (!dn.d)
		dn.flags |= TRACE_BIO_NO_ISSUE;
	if (error) {
		dn.flags |= TRACE_BIO_ERROR;
		dn.error = error;
	}
	if (nr_bytes < rq->__data_len)
		dn.flags |= TRACE_BIO_PARTIAL;
	dn.left = nr_bytes;
	dn.bio = KRP(struct request, rq, bio);
	/* The common single-bio request without a loop; chains through bpf_loop. */
	if (only) {
		give_bio(&dn, dn.bio, only);
		return 0;
	}
	n = bpf_loop(MAX_CHAIN, walk_bio, &dn, 0);
	if (n >= MAX_CHAIN && dn.bio)
		count(TRACE_CNT_CHAIN_TRUNC);
	return 0;
}

TP_PROGS(block_rq_complete, trace_rq_complete, complete_rq, TP_PTR(struct request, 0), TP_ARG(int, 1),
	 TP_ARG(__u32, 2))
