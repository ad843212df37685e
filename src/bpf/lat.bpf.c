// SPDX-License-Identifier: GPL-2.0
/*
 * iospan lat: latency (or size) distributions of block requests, kept in the kernel.
 *
 * Everything happens at completion: q2c and q2d from the queue time of the request's
 * first bio (bio_q.bpf.h, stamped at block_bio_queue: blktrace's Q); d2c and q2d from
 * the issue time block_rq_issue writes into a direct-mapped slot (an array store, no
 * map insert: rq->io_start_time_ns is stamped only when the queue collects statistics,
 * and on recent kernels it can be the time a plug cached before the request existed).
 * Keys that need the submitter (--by, -p, --cgroup) read it from the block-attribution
 * core (blk_owner.bpf.h), recorded by the same queue and split programs.
 */
#include "iospan.bpf.h"
#include "common_abi.h"
#include "lat_abi.h"
#include "driver_abi.h"
#include "kptr.bpf.h"
#include "core_fixes.bpf.h"
#include "vfs.bpf.h"
#include "bio_slot.bpf.h"

/*
 * With --by stack, the readahead each thread entered last, to tell a read's own miss
 * from the async readahead it set off: both are queued from filemap_get_pages(), whose
 * calls into page_cache_sync_ra() and page_cache_async_ra() the compiler makes tail
 * calls, so neither shows on the stack. Every readahead from a read enters one of them
 * first; a fault enters filemap_fault(), and then page_cache_async_ra() if it sets off
 * async readahead.
 */
const volatile bool follow_ra = false;

struct ra_entry {
	__u64 ino;
	__u32 dev;
	__u32 async;
};

DEFINE_TASK_STORAGE(ra_entries, struct ra_entry);

/* Whether readahead bio @o of the current thread is async readahead of its file. */
static __always_inline bool ra_async_of(const struct blk_owner *o)
{
	struct ra_entry *e;

	if (!follow_ra)
		return false;
	e = bpf_task_storage_get(&ra_entries, bpf_get_current_task_btf(), 0, 0);
	return e && e->async && e->ino == o->ino && e->dev == o->dev;
}

#define BLK_OWNER_RA_ASYNC(o) ra_async_of(o)
#include "blk_owner.bpf.h"
#include "bio_q.bpf.h"
#include "filter.bpf.h"
#include "hist.bpf.h"
#include "fallback.bpf.h"
#include "driver.bpf.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline int ra_enter(struct inode *inode, __u32 async)
{
	struct ra_entry *e;

	if (!inode)
		return 0;
	e = bpf_task_storage_get(&ra_entries, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!e)
		return 0;
	e->ino = KR(struct inode, inode, i_ino);
	e->dev = KR(struct super_block, INODE_SB(inode), s_dev);
	e->async = async;
	return 0;
}

static __always_inline int ra_sync(struct inode *inode, unsigned long index, unsigned long req)
{
	return ra_enter(inode, 0);
}

static __always_inline int ra_async(struct inode *inode, unsigned long index, unsigned long req)
{
	return ra_enter(inode, 1);
}

static __always_inline int ra_fault(struct address_space *mapping, __u64 index)
{
	return mapping ? ra_enter(KR(struct address_space, mapping, host), 0) : 0;
}

RA_SYNC_PROGS(lat_ra_sync, ra_sync)
RA_ASYNC_PROGS(lat_ra_async, ra_async)
FILEMAP_FAULT_PROGS(lat_ra_fault, ra_fault)

const volatile __u32 stage = LAT_Q2C;
const volatile __u32 key_fields = 0;
const volatile __u64 unit = 1000; /* ns per display unit (1024 bytes for --size) */
/* The queue and split programs record the submitter (--by, the target filters). */
const volatile bool want_owner = false;

DEFINE_MAP(hists, BPF_MAP_TYPE_HASH, struct lat_key, struct lat_hist, 4096);

#define COUNTERS_NR LAT_DROP_NR
#include "counters.bpf.h"

/* Issue times, direct-mapped by request address (see bio_slot.bpf.h). */
#define NR_RQ_SLOTS (1U << 14)

struct rq_issue {
	__u64 tag;
	__u64 d;
	__u64 ds, dc; /* --stage device: the driver's submission and completion */
	__u32 drv;    /* enum drv_kind of the last submission seen */
	__u32 pad;
};

DEFINE_MAP(rq_issues, BPF_MAP_TYPE_ARRAY, __u32, struct rq_issue, NR_RQ_SLOTS);

/*
 * --size: the bytes a request ended before its end, by request address (same slots):
 * the data part of a write in a flush sequence, and partial completions. The request
 * ends later with what is left (none, after a flush sequence), and /proc/diskstats
 * counts the sectors when they end, the request when it ends. Tagged also with the
 * request's allocation time: a request whose end ran no program leaves a record that
 * the next use of its address must not take.
 */
struct rq_part {
	__u64 tag;
	__u64 alloc_ns;
	__u64 bytes;
};

/* Sized 1 without --size. */
DEFINE_MAP(rq_parts, BPF_MAP_TYPE_ARRAY, __u32, struct rq_part, NR_RQ_SLOTS);

static const struct lat_hist hist_zero;

/* Paths of the files of --by file (one entry otherwise: user space sizes it). */
DEFINE_VFS_PATH_CACHE(4096);
/* The owner shown for the block layer's own flush requests. */
static const struct blk_owner flush_owner = {
	.kind = BLK_OWN_NOFILE, .stack_id = -1, .comm = "[flush]"};

/*
 * The data part of a write in a flush sequence ends (blk-flush.c): its request will end
 * again, without bytes, once the post-flush is done, and /proc/diskstats counts it then.
 * In the sequence are writes whose bio asks for a preflush, or for FUA that the request
 * lost (blk_insert_flush() takes it off where the disk cannot do it: a post-flush);
 * without a write cache the bio lost both flags at submission. The flag RQF_FLUSH_SEQ
 * would tell directly, but its bit is in an anonymous enum on some kernels (6.12), which
 * CO-RE cannot name.
 */
static __always_inline bool flush_seq_data_end(struct request *rq, __u32 nr_bytes)
{
	struct bio *bio = KRP(struct request, rq, bio);
	__u32 opf;

	if (!nr_bytes || !bio)
		return false;
	opf = bio->bi_opf;
	return (opf & BLK_REQ_FLAG(__REQ_PREFLUSH)) ||
	       ((opf & BLK_REQ_FLAG(__REQ_FUA)) && !(rq->cmd_flags & BLK_REQ_FLAG(__REQ_FUA)));
}

static __always_inline int issue_rq(struct request *rq)
{
	__u64 now = bpf_ktime_get_ns(); /* first: the slot's line may be on another CPU */
	struct rq_issue *s = slot_claim(&rq_issues, rq, NR_RQ_SLOTS);

	if (s)
		s->d = now;
	return 0;
}

TP_PROGS(block_rq_issue, lat_rq_issue, issue_rq, TP_PTR(struct request, 0))

/*
 * --stage device: the driver's submission and completion of an issued request, on its
 * slot. Every blk-mq driver's completion passes virtio-blk's hook: it counts for a
 * request virtio-blk submitted.
 */
static __always_inline int drv_seen(__u64 rq, __u32 what, struct drv_status *st, __u32 cid,
				    __u64 now)
{
	struct rq_issue *s = slot_find_tag(&rq_issues, pv_addr(rq), NR_RQ_SLOTS);

	if (!s)
		return 0;
	if (what == DRV_SUBMIT) {
		s->ds = now;
		s->drv = st->kind;
	} else if (what == DRV_DONE &&
		   (st->kind != DRV_VIRTIO_BLK || drv_virtblk_major || s->drv == DRV_VIRTIO_BLK)) {
		s->dc = now;
	}
	return 0;
}

DRIVER_PROGS(lat_drv)

/* Whether the stage starts at the first bio's queue time. */
#define STAGE_FROM_Q (stage == LAT_Q2C || stage == LAT_Q2D)

static __always_inline int queue_bio(struct bio *bio, void *ctx)
{
	__u64 now = bpf_ktime_get_ns(); /* Q: first, before any lookup */

	if (STAGE_FROM_Q)
		bio_q_stamp(bio, now);
	return want_owner ? blk_owner_note_bio(bio, ctx) : 0;
}

TP_PROGS(block_bio_queue, lat_bio_queue, queue_bio, TP_PTR(struct bio, 0), ctx)

static __always_inline int split_bio(struct bio *split, void *ctx)
{
	if (STAGE_FROM_Q)
		bio_q_split(split);
	return want_owner ? blk_owner_note_split(split, ctx) : 0;
}

TP_PROGS(block_split, lat_bio_split, split_bio, TP_PTR(struct bio, 0), ctx)

/* The path of owner @o's file, from request @rq's pages or direct I/O (--by file). */
static __noinline void capture_path(struct request *rq, struct blk_owner *o)
{
	struct inode *inode;
	__u64 id;

	if (!rq || !o)
		return;
	inode = blk_owner_rq_inode(rq, o);
	if (inode)
		vfs_path_capture(o->dev, o->ino, (__u64)inode, VFS_FROM_INODE, &id);
}

/* --size: @rq ended @nr_bytes of its data, not all of it (rq_parts). */
static __always_inline void part_bytes_add(struct request *rq, __u32 nr_bytes)
{
	struct rq_part *p = slot_at(&rq_parts, rq, NR_RQ_SLOTS);
	__u64 alloc_ns = rq->start_time_ns;

	if (!p)
		return;
	if (p->tag != pv(rq) || p->alloc_ns != alloc_ns) {
		p->tag = pv(rq);
		p->alloc_ns = alloc_ns;
		p->bytes = 0;
	}
	p->bytes += nr_bytes;
}

/* --size: the bytes @rq ended before its end, taken once. */
static __always_inline __u64 part_bytes_take(struct request *rq)
{
	struct rq_part *p = slot_find(&rq_parts, rq, NR_RQ_SLOTS);

	if (!p || p->alloc_ns != rq->start_time_ns)
		return 0;
	p->tag = 0;
	return p->bytes;
}

static __always_inline int complete_rq(struct request *rq, unsigned int nr_bytes)
{
	struct lat_key k = {};
	struct blk_owner *o = NULL;
	struct rq_issue *is;
	struct lat_hist *h;
	struct gendisk *disk;
	__u64 now = bpf_ktime_get_ns(), t0, d, v; /* C: first, before any lookup */
	__u32 op, part;
	long err;

	op = rq->cmd_flags & REQ_OP_MASK;
	/* As /proc/diskstats: no passthrough; a request once, when it ends. */
	if (op == REQ_OP_DRV_IN || op == REQ_OP_DRV_OUT)
		return 0;
	if (op != REQ_OP_FLUSH && (nr_bytes < rq->__data_len || flush_seq_data_end(rq, nr_bytes))) {
		if (stage == LAT_SIZE)
			part_bytes_add(rq, nr_bytes);
		return 0;
	}
	disk = KRP(struct request, rq, q)->disk;
	if (!disk)
		return 0;
	k.disk = ((__u32)disk->major << 20) | disk->first_minor;
	if (tfilter.devs) {
		struct block_device *bdev = KRP(struct request, rq, part);

		part = bdev ? bdev->bd_dev : k.disk;
		if (!tfilter_dev_ok(part) && !tfilter_dev_ok(k.disk))
			return 0;
	}
	if ((key_fields & LAT_K_OWNER) || tfilter_proc_on() || tfilter_file_on()) {
		o = blk_owner_of_rq(rq);
		/* The flush the block layer sends for the writes waiting on it: no bio. */
		if (!o && op == REQ_OP_FLUSH && !tfilter_proc_on() && !tfilter_file_on())
			o = (struct blk_owner *)&flush_owner;
		if (!o) {
			count(LAT_DROP_NO_OWNER);
			return 0;
		}
		if (tfilter_proc_on() && !tfilter_proc_ok(o->pid, o->tid, o->comm, o->cgid))
			return 0;
		/* --dir needs a dentry of the file, from the request's pages or its dio. */
		if (tfilter_file_on() &&
		    (!o->ino ||
		     !tfilter_file_ok(o->dev, o->gen, o->ino,
				      tfilter.dir_dev ? vfs_dentry((__u64)blk_owner_rq_inode(rq, o),
								   VFS_FROM_INODE) :
							NULL)))
			return 0;
	}

	if (stage == LAT_SIZE) {
		v = (rq->__data_len ? rq->__data_len : nr_bytes) + part_bytes_take(rq);
	} else {
		/*
		 * Q of the first bio; the block layer's own flush request has no bio, and
		 * starts when it is allocated.
		 */
		t0 = !STAGE_FROM_Q		  ? rq->start_time_ns :
		     KRP(struct request, rq, bio) ? rq_q_take(rq, true) :
						    rq->start_time_ns;
		if (stage != LAT_D2C && stage != LAT_DEVICE && (!t0 || t0 > now)) {
			count(LAT_DROP_NO_START);
			return 0;
		}
		if (stage == LAT_Q2C) {
			v = now - t0;
		} else {
			is = slot_find(&rq_issues, rq, NR_RQ_SLOTS);
			d = is ? is->d : 0;
			/*
			 * No issue time of this use of the request (its slot holds an older
			 * one): the issue program did not run, issued before tracing, or
			 * skipped by the kernel because it fired while the same program ran
			 * on that CPU (a completion interrupt dispatching the next request).
			 * Then the kernel's own stamp, where the queue keeps one.
			 */
			if (!d || d > now || (t0 && d < t0))
				d = rq->io_start_time_ns;
			if (!d || d > now || (t0 && d < t0)) {
				count(LAT_DROP_NO_ISSUE);
				return 0;
			}
			if (stage == LAT_DEVICE) {
				/* A completion the driver took after this issue: its device time.
				 */
				if (!is || is->dc < d || is->dc > now) {
					count(LAT_DROP_NO_DRIVER);
					return 0;
				}
				v = is->dc - (is->ds > d ? is->ds : d);
			} else {
				v = stage == LAT_D2C ? now - d : d - t0;
			}
		}
	}
	/* In 1/1024 of the display unit: powers of two of the unit are slot boundaries. */
	v = (v << LAT_SCALE_SHIFT) / unit;

	if (!(key_fields & LAT_K_DISK))
		k.disk = 0;
	if (key_fields & LAT_K_OP)
		k.op = op | rq_flags_of(rq->cmd_flags, RQ_FL_ALL) << 8;
	if (o) {
		if (key_fields & (LAT_K_PID | LAT_K_STACK))
			k.pid = o->pid;
		if (key_fields & (LAT_K_PID | LAT_K_COMM | LAT_K_STACK))
			__builtin_memcpy(k.comm, o->comm, sizeof(k.comm));
		if (key_fields & LAT_K_CGROUP)
			k.cgid = o->cgid;
		if (key_fields & LAT_K_FILE) {
			k.fdev = o->dev;
			k.gen = o->gen;
			k.ino = o->ino;
			k.kind = o->kind;
		}
		if (key_fields & LAT_K_STACK) {
			k.stack_id = o->stack_id;
			k.kind = o->kind;
			if (o->flags & BLK_OWN_F_RA_ASYNC)
				k.kind |= LAT_KIND_RA_ASYNC;
		}
	}

	h = map_lookup_or_init(&hists, &k, &hist_zero, &err);
	if (!h) {
		count(LAT_DROP_MAP_FULL);
		return 0;
	}
	/* A file's first request: its path (user space follows renames). */
	if (!err && (key_fields & LAT_K_FILE) && k.ino)
		capture_path(rq, o);
	/* Shared by the CPUs (one hash map value per key): atomic sums. */
	hist_put_of(h, LAT_HIST_SUB_BITS, v, true);
	return 0;
}

TP_PROGS(block_rq_complete, lat_rq_complete, complete_rq, TP_PTR(struct request, 0),
	 TP_ARG(__u32, 2))
