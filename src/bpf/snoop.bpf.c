// SPDX-License-Identifier: GPL-2.0
/*
 * iospan snoop: one record per completed block request, through a ring buffer.
 *
 * The submitter of each bio is noted at block_bio_queue by the shared attribution
 * core (blk_owner.bpf.h) and found again from the request at completion. The kernel's
 * own stamps give the request's start (rq->start_time_ns); its dispatch time, the
 * disk's requests in flight then and the bios it carries are kept at block_rq_issue
 * in a direct-mapped slot of the request. Filters run at completion, before a record
 * is reserved.
 */
#include "iospan.bpf.h"
#include "common_abi.h"
#include "snoop_abi.h"
#include "kptr.bpf.h"
#include "core_fixes.bpf.h"
#include "vfs.bpf.h"
#include "bio_slot.bpf.h"
#include "rbuf.bpf.h"
#include "filter.bpf.h"
#include "blk_owner.bpf.h"
#include "bio_q.bpf.h"
#include "fallback.bpf.h"
#include "driver.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Load-time configuration. */
const volatile __u32 ops_mask = 0;	   /* bit (1 << REQ_OP_*) of the ops shown; 0: all */
const volatile __u64 min_latency_ns = 0;   /* requests faster than this are not sent */
const volatile bool want_paths = true;
const volatile __u32 page_size = 4096;
const volatile __u64 flush_data_end_io = 0; /* mq_flush_data_end_io, 0 if unknown */

/* Set by user space at the end: no record is sent after it (the rest is drained). */
bool stopped;

DEFINE_RBUF(events, 8 << 20); /* --buffer-size */
DEFINE_VFS_PATH_CACHE(8192);

#define COUNTERS_NR SNOOP_CNT_NR
#include "counters.bpf.h"

/*
 * Advanced by user space every SNOOP_PATH_EPOCH_MS: a file's path is checked again (its
 * dentries' stamp, vfs_path_capture()) at its first completion in each epoch only.
 */
__u32 path_epoch;

/* The path id (vfs_path_capture()) last captured per file, and the epoch it was. */
struct file_path_id {
	__u64 id;
	__u32 epoch;
	__u32 pad;
};

/*
 * Also names the file of a request whose bios do not lead to the inode (the front part
 * of a split direct I/O).
 */
DEFINE_MAP(file_ids, BPF_MAP_TYPE_LRU_HASH, struct file_key, struct file_path_id, 8192);

/* Who dirtied which page (dirtier.bpf.h): writeback is credited to them. */
#define DIRTIER_INSERT_FAILED(err) ((void)(err), count(SNOOP_CNT_DIRTIER_FULL))
#include "dirtier.bpf.h"

/* The dirtiers by tgid: the thread that last dirtied pages, its cgroup and name. */
struct dirtier_proc {
	__u32 tid;
	__u32 pad;
	__u64 cgid;
	char comm[SNOOP_COMM_LEN];
};

DEFINE_MAP(dirtier_procs, BPF_MAP_TYPE_LRU_HASH, __u32, struct dirtier_proc, 8192);

/* Requests in flight per disk (dev_t of the whole disk), counted from their dispatch. */
DEFINE_MAP(inflight, BPF_MAP_TYPE_HASH, __u32, __u32, 1024);

/*
 * What block_rq_issue saw of a request, direct-mapped by its address. Two requests in
 * flight in one slot: the older one's completion finds the other's tag and shows no
 * dispatch time (counted). 2^14 slots: more than the tags of a few busy disks.
 */
#define NR_RQ_SLOTS (1U << 14)
/* Bios counted per request at dispatch; longer chains show this many. */
#define MAX_BIOS 256

struct rq_slot {
	__u64 tag;
	__u64 issue_ns;
	__u64 sector;
	__u32 bytes;
	__u32 inflight;
	__u32 nr_bios;
	__u32 counted; /* added to its disk's in-flight count */
	__u32 done;    /* bytes of partial completions so far */
	__u32 drv_fails;
	/* The driver's, of the life (start_time_ns) in drv_life (driver.bpf.h). */
	__u64 drv_life, ds, dc;
	struct drv_status drv;
};

DEFINE_MAP(rq_slots, BPF_MAP_TYPE_ARRAY, __u32, struct rq_slot, NR_RQ_SLOTS);

#define REQ_OP_WRITE_NR	  1
#define REQ_OP_DRV_IN_NR  34
#define REQ_OP_DRV_OUT_NR 35

static __always_inline __u32 rq_disk_dev(struct request *rq)
{
	struct gendisk *disk = KRP(struct request, rq, q)->disk;

	return disk ? ((__u32)disk->major << 20) | disk->first_minor : 0;
}

/* The device a request's bios were queued to: its partition, else the disk. */
static __always_inline __u32 rq_part_dev(struct request *rq)
{
	struct block_device *part = KRP(struct request, rq, part);

	return part ? part->bd_dev : rq_disk_dev(rq);
}

/* ------------------------------------------------------------------ submit */

static __always_inline int queue_bio(struct bio *bio, void *ctx)
{
	bio_q_stamp(bio, bpf_ktime_get_ns()); /* Q: first, before any lookup */
	return blk_owner_note_bio(bio, ctx);
}

TP_PROGS(block_bio_queue, snoop_bio_queue, queue_bio, TP_PTR(struct bio, 0), ctx)

static __always_inline int split_bio(struct bio *split, void *ctx)
{
	bio_q_split(split);
	return blk_owner_note_split(split, ctx);
}

TP_PROGS(block_split, snoop_bio_split, split_bio, TP_PTR(struct bio, 0), ctx)

/*
 * Runs in the task that dirties a page cache folio: it becomes the dirtier of the
 * folio's pages, whose writeback is credited to it.
 */
SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(snoop_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dirtier_proc *p, np = {};
	struct inode *host;
	__u32 tgid = task->tgid;
	__u64 cgid;

	folio = KVIEW(struct folio, folio);
	host = dirtied_inode(task, KVIEW(struct address_space, mapping));
	if (!host)
		return 0;
	dirtier_mark(folio, host->i_sb->s_dev, host->i_generation, host->i_ino, folio->index,
		     folio_bytes(folio, page_size) / page_size, tgid);
	/* Written only when the thread or its cgroup changes. */
	cgid = bpf_get_current_cgroup_id();
	p = bpf_map_lookup_elem(&dirtier_procs, &tgid);
	if (p && p->tid == task->pid && p->cgid == cgid)
		return 0;
	np.tid = task->pid;
	np.cgid = cgid;
	bpf_get_current_comm(np.comm, sizeof(np.comm));
	bpf_map_update_elem(&dirtier_procs, &tgid, &np, BPF_ANY);
	return 0;
}

/* ------------------------------------------------------------------ dispatch */

static int count_bio(__u32 i, void *ctx)
{
	struct bio **b = ctx;

	if (!*b)
		return 1;
	*b = (*b)->bi_next;
	return 0;
}

static __always_inline __u32 *disk_inflight(__u32 disk)
{
	__u32 zero = 0, *n;
	long err;

	n = map_lookup_or_init(&inflight, &disk, &zero, &err);
	if (!n && err == -E2BIG)
		count(SNOOP_CNT_INFLIGHT_FULL);
	return n;
}

static __always_inline int issue_rq(struct request *rq)
{
	struct rq_slot *s = slot_at(&rq_slots, rq, NR_RQ_SLOTS);
	struct bio *bio = KRP(struct request, rq, bio);
	__u32 *n, nr = 0;

	if (!s)
		return 0;
	/*
	 * A slot still counted: its request's completion ran no program (this request
	 * again, dispatched anew: no requeue was seen either), or another request that
	 * shared the slot has not completed yet. Either way it stops counting here.
	 */
	if (s->counted) {
		if (s->tag == pv(rq))
			count(SNOOP_CNT_COMPLETION_UNSEEN);
		n = bpf_map_lookup_elem(&inflight, &s->counted);
		if (n)
			__sync_fetch_and_add(n, -1);
	}
	s->tag = pv(rq);
	s->issue_ns = bpf_ktime_get_ns();
	/*
	 * A new life of the request; a requeued one keeps its driver attempts. The driver's
	 * kind stays: virtio-blk's kprobe (at its queue function's entry) comes first.
	 */
	if (s->drv_life != rq->start_time_ns) {
		s->drv_life = rq->start_time_ns;
		s->ds = 0;
		s->dc = 0;
		s->drv_fails = 0;
		s->drv = (struct drv_status){.kind = s->drv.kind};
	}
	s->sector = rq->__sector;
	s->bytes = rq->__data_len;
	if (bio && !bio->bi_next)
		nr = 1;
	else if (bio)
		nr = bpf_loop(MAX_BIOS, count_bio, &bio, 0);
	s->nr_bios = nr;
	s->counted = 0;
	s->done = 0;
	s->inflight = 0;
	n = disk_inflight(rq_disk_dev(rq));
	if (n) {
		/* Read after the add (the return of an atomic add needs -mcpu=v3). */
		__sync_fetch_and_add(n, 1);
		s->inflight = *n;
		s->counted = rq_disk_dev(rq);
	}
	return 0;
}

TP_PROGS(block_rq_issue, snoop_rq_issue, issue_rq, TP_PTR(struct request, 0))

/* A request sent back to be dispatched again: no longer in flight on the disk. */
static __always_inline int requeue_rq(struct request *rq)
{
	struct rq_slot *s = slot_find(&rq_slots, rq, NR_RQ_SLOTS);
	__u32 *n;

	if (!s || !s->counted)
		return 0;
	n = bpf_map_lookup_elem(&inflight, &s->counted);
	if (n)
		__sync_fetch_and_add(n, -1);
	s->counted = 0;
	return 0;
}

TP_PROGS(block_rq_requeue, snoop_rq_requeue, requeue_rq, TP_PTR(struct request, 0))

/*
 * The driver's submission and completion of a dispatched request, on its slot. NVMe
 * builds its command before blk-mq starts the request: that first submission is not
 * seen here (the slot is the issue's), nor needed (the device time counts from the
 * issue). Every blk-mq driver's completion passes virtio-blk's hook: it counts only for
 * a request virtio-blk submitted.
 */
static __always_inline int drv_seen(__u64 rq, __u32 what, struct drv_status *st, __u32 cid,
				    __u64 now)
{
	struct rq_slot *s = slot_find_tag(&rq_slots, pv_addr(rq), NR_RQ_SLOTS);

	if (!s)
		return 0;
	if (what == DRV_SUBMIT) {
		s->ds = now;
		s->drv.kind = st->kind;
		return 0;
	}
	/* virtio-blk's completions are its disks' where its major is known (driver.bpf.h). */
	if (what != DRV_DONE ||
	    (st->kind == DRV_VIRTIO_BLK && !drv_virtblk_major && s->drv.kind != DRV_VIRTIO_BLK))
		return 0;
	s->dc = now;
	if (st->status) {
		s->drv_fails++;
		s->drv = *st;
	} else if (!s->drv_fails) {
		s->drv = *st;
	}
	return 0;
}

DRIVER_PROGS(snoop_drv)

/* ------------------------------------------------------------------ complete */

/*
 * Whether a completion is the data part of a flush sequence (a write with PREFLUSH or
 * FUA the device cannot do at once): the request ends again, with no bytes, when the
 * sequence is done, and only then does diskstats count it. Until then the flush
 * machinery has made its end_io mq_flush_data_end_io (@flush_data_end_io, from
 * kallsyms); without it, the RQF_FLUSH_SEQ flag (core_rqf_flush_seq_bit()).
 */
static __always_inline bool in_flush_seq(struct request *rq)
{
	if (flush_data_end_io)
		return (__u64)rq->end_io == flush_data_end_io;
	return rq->rq_flags & (1U << core_rqf_flush_seq_bit());
}

/*
 * A page cache write: credits it to the process that dirtied its first page, if that
 * is not the submitter (a flusher, `sync`, another process's fsync). Returns the
 * submitter's tid (the flusher) when it did, else 0.
 */
static __noinline __u32 credit_dirtier(struct request *rq, struct blk_owner *o)
{
	struct page_pos pp = {};
	struct dirtier_proc *p;
	struct bio *bio = KRP(struct request, rq, bio);
	__u32 dirtier, flusher;

	if (!bio || !o)
		return 0;
	page_pos_init(&pp, bio, BPF_CORE_READ(bio, bi_iter.bi_size), o->dev, o->gen, o->ino);
	if (page_walk_next(&pp))
		return 0;
	dirtier = pp.dirtier;
	if (!dirtier) {
		count(SNOOP_CNT_NO_DIRTIER);
		return 0;
	}
	if (dirtier == o->pid)
		return 0;
	flusher = o->tid;
	o->pid = dirtier;
	p = bpf_map_lookup_elem(&dirtier_procs, &dirtier);
	if (p) {
		o->tid = p->tid;
		o->cgid = p->cgid;
		__builtin_memcpy(o->comm, p->comm, sizeof(o->comm));
	} else {
		o->tid = dirtier;
		o->cgid = 0;
		__builtin_memset(o->comm, 0, sizeof(o->comm));
	}
	return flusher;
}

/*
 * The path of the request's file into @e: as captured in this epoch, else captured
 * again from @inode (the file's, if the caller looked it up: @have_inode) or, where
 * the request does not lead to its inode, as last captured.
 */
static __always_inline void note_path(struct snoop_io *e, struct request *rq, struct blk_owner *o,
				      struct inode *inode, bool have_inode)
{
	struct file_key fk = {.dev = e->fs_dev, .gen = o->gen, .ino = e->ino};
	struct file_path_id *last, np = {};
	__u32 epoch = path_epoch;
	__u64 id = 0;

	last = bpf_map_lookup_elem(&file_ids, &fk);
	if (last && last->epoch == epoch) {
		id = last->id;
		goto found;
	}
	if (!have_inode)
		inode = blk_owner_rq_inode(rq, o);
	if (inode && !vfs_path_capture(e->fs_dev, e->ino, (__u64)inode, VFS_FROM_INODE, &id)) {
		if (last) {
			/* Racing CPUs write the same; the epoch last, as the mark. */
			last->id = id;
			last->epoch = epoch;
		} else {
			np.id = id;
			np.epoch = epoch;
			bpf_map_update_elem(&file_ids, &fk, &np, BPF_ANY);
		}
	} else if (last) {
		id = last->id;
	} else {
		return;
	}
found:
	e->path_id = id;
	e->flags |= SNOOP_IO_PATH;
}

/*
 * When request @rq started: its first bio's queue (taken away), or the allocation of
 * the block layer's own flush request, which has no bio. 0 (counted) if unknown.
 */
static __always_inline __u64 first_queued(struct request *rq)
{
	__u64 q;

	if (!KRP(struct request, rq, bio))
		return rq->start_time_ns;
	q = rq_q_take(rq, true);
	if (!q)
		count(SNOOP_CNT_NO_QUEUE);
	return q;
}

static __always_inline int complete_rq(struct request *rq, int error, unsigned int nr_bytes)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK, dev, disk, *n;
	struct rq_slot *s, slot = {};
	struct inode *inode = NULL;
	bool have_inode = false;
	struct snoop_io *e;
	struct bio *first;
	struct blk_owner *o, who;
	__u32 wb_flusher = 0;
	__u64 now = bpf_ktime_get_ns(), q, lat; /* C: first, before any lookup */

	/* Passthrough requests (SG_IO, driver commands) are not block I/O in diskstats. */
	if (op == REQ_OP_DRV_IN_NR || op == REQ_OP_DRV_OUT_NR)
		return 0;
	s = slot_find(&rq_slots, rq, NR_RQ_SLOTS);
	/* A slot left by an earlier use of this request, whose dispatch ran no program. */
	if (s && rq->start_time_ns && s->issue_ns < rq->start_time_ns)
		s = NULL;
	/* A request completed in parts: diskstats counts it once, at its end. */
	if (nr_bytes < rq->__data_len || (op != REQ_OP_FLUSH && in_flush_seq(rq))) {
		count(SNOOP_CNT_PARTIAL);
		if (s)
			s->done += nr_bytes;
		return 0;
	}
	if (s) {
		slot = *s;
		if (s->counted) {
			n = bpf_map_lookup_elem(&inflight, &s->counted);
			if (n)
				__sync_fetch_and_add(n, -1);
			s->counted = 0;
		}
	}
	/* Taken at the end of the request even if filtered: a stale stamp misleads. */
	q = first_queued(rq);
	if (stopped)
		return 0;
	disk = rq_disk_dev(rq);
	dev = rq_part_dev(rq);
	if (tfilter.devs && !tfilter_dev_ok(dev) && !tfilter_dev_ok(disk))
		goto filtered;
	if (ops_mask && op < 32 && !(ops_mask & (1U << op)))
		goto filtered;
	if (min_latency_ns) {
		__u64 t0 = q ?: slot.issue_ns;

		lat = t0 && t0 < now ? now - t0 : 0;
		if (lat < min_latency_ns)
			goto filtered;
	}
	o = blk_owner_of_rq(rq);
	if (!o) {
		count(SNOOP_CNT_NO_OWNER);
		if (tfilter_proc_on() || tfilter_file_on())
			goto filtered;
	} else {
		who = *o;
		o = &who;
		if (op == REQ_OP_WRITE_NR && who.kind == BLK_OWN_BUFFERED)
			wb_flusher = credit_dirtier(rq, &who);
		if (tfilter_proc_on() && !tfilter_proc_ok(who.pid, who.tid, who.comm, who.cgid))
			goto filtered;
	}
	/* --dir needs the file's dentry; paths need the inode only once per epoch. */
	if (o && o->ino && tfilter.dir_dev) {
		inode = blk_owner_rq_inode(rq, o);
		have_inode = true;
	}
	if (tfilter_file_on() &&
	    (!o || !o->ino ||
	     !tfilter_file_ok(o->dev, o->gen, o->ino, vfs_dentry((__u64)inode, VFS_FROM_INODE))))
		goto filtered;

	if (!s)
		count(SNOOP_CNT_NO_ISSUE);
	e = rbuf_reserve(events, SNOOP_REC_IO, sizeof(struct snoop_io));
	if (!e)
		return 0;
	e->ts = now;
	e->start_ns = q;
	e->issue_ns = slot.issue_ns;
	e->sector = s ? slot.sector : rq->__sector;
	/* What the kernel completed, as diskstats counts it (the parts before included). */
	e->bytes = nr_bytes + slot.done;
	e->dev = disk;
	e->op = op;
	/* The flush machinery takes PREFLUSH and FUA off the request, not off its bio. */
	first = KRP(struct request, rq, bio);
	e->rq_flags = rq_flags_of(rq->cmd_flags | (first ? first->bi_opf : 0),
				   RQ_FL_ALL & ~RQ_FL_BACKGROUND);
	e->flags = (s ? 0 : SNOOP_IO_NO_ISSUE) | (o ? 0 : SNOOP_IO_NO_OWNER) |
		   (error ? SNOOP_IO_ERROR : 0);
	e->inflight = slot.inflight;
	e->nr_bios = slot.nr_bios;
	/* The driver's of this dispatch: a completion after the issue, before this one. */
	if (s && slot.dc >= slot.issue_ns && slot.dc <= now && slot.drv.kind) {
		e->drv_submit_ns = slot.ds;
		e->drv_done_ns = slot.dc;
		e->drv = slot.drv;
		e->drv_fails = slot.drv_fails;
	} else {
		e->drv_submit_ns = 0;
		e->drv_done_ns = 0;
		e->drv = (struct drv_status){};
		e->drv_fails = 0;
	}
	e->pad2 = 0;
	e->error = error;
	e->path_id = 0;
	e->flusher = wb_flusher;
	if (wb_flusher)
		e->flags |= SNOOP_IO_WRITEBACK;
	if (o) {
		e->pid = o->pid;
		e->tid = o->tid;
		e->cgid = o->cgid;
		e->fs_dev = o->dev;
		e->ino = o->ino;
		e->kind = o->kind;
		e->owner_flags = o->flags;
		__builtin_memcpy(e->comm, o->comm, sizeof(e->comm));
	} else {
		e->pid = 0;
		e->tid = 0;
		e->cgid = 0;
		e->fs_dev = 0;
		e->ino = 0;
		e->kind = 0;
		e->owner_flags = 0;
		__builtin_memset(e->comm, 0, sizeof(e->comm));
	}
	if (want_paths && o && o->ino)
		note_path(e, rq, o, inode, have_inode);
	rbuf_submit_batched(events, e, now);
	return 0;
filtered:
	count(SNOOP_CNT_FILTERED);
	return 0;
}

TP_PROGS(block_rq_complete, snoop_rq_complete, complete_rq, TP_PTR(struct request, 0),
	 TP_ARG(int, 1), TP_ARG(__u32, 2))
