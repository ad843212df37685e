/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The block-attribution core: who submitted a bio and what it carries, for every
 * command that attributes block I/O (top, trace, lat, snoop).
 *
 * What a bio carries and who submitted it, for any includer (no maps):
 *   blk_bio_src(bio, dio_end_io, &inode)  where its data is (enum blk_src), its file
 *   blk_bio_submitter(task, dio, &waiter) the task it is credited to
 *
 * The owner records (struct blk_owner, src/abi/blk_owner_abi.h) of lat and snoop,
 * recorded at block_bio_queue in the submitter's context and found at completion from
 * the request's first bio; left out where BLK_OWNER_NO_RECORD is defined (top keeps
 * its own, smaller records keyed as its rows are, from the same blk_bio_src()):
 *   blk_owner_note_bio(bio, ctx)     at block_bio_queue (task context)
 *   blk_owner_note_split(split, ctx) at block_split: the split inherits its parent's
 *   blk_owner_of_rq(rq)              at completion: the owner of rq->bio, or NULL
 *   blk_owner_rq_inode(rq, o)        at completion: the inode of owner o's file, from
 *                                    the request's first bio (or the bio it was split
 *                                    from), or NULL
 *   blk_owner_bio_kind(bio, &dev, &gen, &ino)  what a bio carries (enum blk_owner_kind)
 *
 * Merges need nothing: a request keeps its first bio, whose owner it shows.
 *
 * Maps and configuration live here, once per including .bpf.c (include this header in
 * one place only, after iospan.bpf.h, kptr.bpf.h, vfs.bpf.h and bio_slot.bpf.h):
 *   blk_owner_slots   array of BLK_OWNER_SLOTS struct blk_owner_slot, direct-mapped by
 *                     bio address (slot_* of bio_slot.bpf.h); define BLK_OWNER_SLOTS
 *                     (a power of two) before including to change its size;
 *   blk_owner_stack_ids  the queuing stacks (BLK_OWNER_STACK_DEPTH frames), each with
 *                     its id, keyed by the stack itself: user space sets its
 *                     max_entries (1 when stacks are off) and reads it to name the ids;
 *   rodata blk_owner_want_stack (take the queuing stack) and blk_owner_dio_end_io
 *   (address of iomap_dio_bio_end_io from kallsyms, 0 if unknown: direct I/O is then
 *   told by its anonymous pages, without its file).
 * An includer that follows readahead defines BLK_OWNER_RA_ASYNC(o) before including:
 * true if readahead bio @o (its dev and ino set) was submitted by async readahead
 * (BLK_OWN_F_RA_ASYNC); by default false.
 * Two bios in flight in one slot: the older one's lookup finds the other's tag and
 * gets NULL (the caller counts it). Slots are written only when their record changes
 * (bios are recycled: the slot mostly holds this bio's previous, identical record).
 */
#ifndef IOSPAN_BLK_OWNER_BPF_H
#define IOSPAN_BLK_OWNER_BPF_H

#include "blk_owner_abi.h"

#define BLK_REQ_FLAG(bit) ((__u32)1 << bpf_core_enum_value(enum req_flag_bits, bit))

/*
 * The flags iospan shows (enum rq_fl) of a request's or bio's REQ_* flags @opf, of
 * those in @want (a constant: the others cost no instruction).
 */
static __always_inline __u32 rq_flags_of(__u32 opf, __u32 want)
{
	__u32 f = 0;

	if ((want & RQ_FL_SYNC) && (opf & BLK_REQ_FLAG(__REQ_SYNC)))
		f |= RQ_FL_SYNC;
	if ((want & RQ_FL_META) && (opf & BLK_REQ_FLAG(__REQ_META)))
		f |= RQ_FL_META;
	if ((want & RQ_FL_FUA) && (opf & BLK_REQ_FLAG(__REQ_FUA)))
		f |= RQ_FL_FUA;
	if ((want & RQ_FL_PREFLUSH) && (opf & BLK_REQ_FLAG(__REQ_PREFLUSH)))
		f |= RQ_FL_PREFLUSH;
	if ((want & RQ_FL_RAHEAD) && (opf & BLK_REQ_FLAG(__REQ_RAHEAD)))
		f |= RQ_FL_RAHEAD;
	if ((want & RQ_FL_BACKGROUND) && (opf & BLK_REQ_FLAG(__REQ_BACKGROUND)))
		f |= RQ_FL_BACKGROUND;
	return f;
}

#ifndef BLK_OWNER_RA_ASYNC
#define BLK_OWNER_RA_ASYNC(o) false
#endif

/* Where a bio's data is (blk_bio_src()): what tells its kind and its file. */
enum blk_src {
	BLK_SRC_NONE,	/* no data page: empty bios (flushes) */
	BLK_SRC_KERNEL, /* kernel memory without a mapping: slab, vmalloc, fs buffers (xfs) */
	BLK_SRC_SWAP,	/* REQ_SWAP */
	BLK_SRC_DIO,	/* iomap direct I/O: its file */
	BLK_SRC_USER,	/* user memory: anonymous, KSM, a memory fs's pages (tmpfs, shmem,
			 * hugetlbfs): direct I/O from a user buffer */
	BLK_SRC_NOHOST, /* a mapping without a host */
	BLK_SRC_BDEV,	/* the block device's own page cache: buffer heads, journal, raw */
	BLK_SRC_CACHE,	/* a file system's page cache: its host, of any type (directories,
			 * btrfs's btree inode: the caller tells) */
};

/*
 * Where @bio's data is, and *@inode the file it belongs to for BLK_SRC_DIO and
 * BLK_SRC_CACHE (else NULL): REQ_SWAP, then iomap direct I/O (@dio_end_io: address of
 * iomap_dio_bio_end_io, 0 if unknown), then the first page: kernel memory, user
 * memory, or a page cache. Typed, or a number: KR().
 */
static __always_inline __u32 blk_bio_src(struct bio *bio, __u64 dio_end_io, struct inode **inode)
{
	struct address_space *mapping;
	struct iomap_dio *dio;
	struct inode *host;
	struct page *page;

	*inode = NULL;
	if (bio->bi_opf & BLK_REQ_FLAG(__REQ_SWAP))
		return BLK_SRC_SWAP;
	dio = bio_iomap_dio(bio, dio_end_io);
	if (dio) {
		*inode = dio_inode(dio);
		return BLK_SRC_DIO;
	}
	/* Clones (bi_vcnt 0) share the vector of the bio they were cloned from. */
	if (!KRP(struct bio, bio, bi_io_vec) || !bio->bi_iter.bi_size)
		return BLK_SRC_NONE;
	page = KRP(struct bio, bio, bi_io_vec)->bv_page;
	if (!page)
		return BLK_SRC_NONE;
	page = page_head(page);
	if (core_page_kernel_type(page))
		return BLK_SRC_KERNEL;
	mapping = KR(struct page, page, mapping);
	if (!mapping)
		return BLK_SRC_KERNEL;
	if (KLOW(mapping) & 3)
		return BLK_SRC_USER; /* anonymous or KSM */
	host = KR(struct address_space, mapping, host);
	if (!host)
		return BLK_SRC_NOHOST;
	if ((KR(struct inode, host, i_mode) & S_IFMT) == S_IFBLK)
		return BLK_SRC_BDEV;
	if (memory_fs(host))
		return BLK_SRC_USER;
	*inode = host;
	return BLK_SRC_CACHE;
}

/*
 * The task @bio is credited to: the submitting @task, or, when @task is a kernel
 * thread re-submitting a synchronous iomap direct I/O @dio (blk-throttle's worker),
 * the task waiting for it (*@waiter set; an async one may have no waiter left). Typed,
 * or a number: KR().
 */
static __always_inline struct task_struct *blk_bio_submitter(struct task_struct *task,
							     struct iomap_dio *dio, bool *waiter)
{
	struct task_struct *w;

	*waiter = false;
	if (!dio || !(task->flags & PF_KTHREAD))
		return task;
	w = dio_waiter(dio);
	if (!w)
		return task;
	*waiter = true;
	return w;
}

#ifndef BLK_OWNER_NO_RECORD

#ifndef BLK_OWNER_SLOTS
#define BLK_OWNER_SLOTS (1U << 16)
#endif

struct blk_owner_slot {
	__u64 tag; /* pv() of the bio: first, as slot_* expects */
	struct blk_owner o;
};

DEFINE_MAP(blk_owner_slots, BPF_MAP_TYPE_ARRAY, __u32, struct blk_owner_slot, BLK_OWNER_SLOTS);

/*
 * Stacks are kept by their content, each with an id of its own: a stack trace map
 * (bpf_get_stackid()) keeps one stack per hash bucket and refuses a new one whose
 * bucket is taken, so with a few dozen stacks one in a few hundred was lost at random.
 * Here a stack is lost only when the map is full (counted per request).
 */
DEFINE_MAP(blk_owner_stack_ids, BPF_MAP_TYPE_HASH, struct blk_owner_stack, __s32, 1024);

/* The stack being looked up (too large for the BPF stack beside the rest). */
DEFINE_MAP(blk_owner_stack_buf, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct blk_owner_stack, 1);

/*
 * Ids given to stacks by each CPU: a stack's id is (n * blk_owner_nr_cpus + cpu + 1)
 * for the n-th one its CPU gave, unique without an atomic counter (the return value of
 * an atomic add needs BPF v3 instructions).
 */
DEFINE_MAP(blk_owner_stacks_given, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u32, 1);

const volatile __u32 blk_owner_nr_cpus = 1;

const volatile bool blk_owner_want_stack = false;
const volatile __u64 blk_owner_dio_end_io = 0;

/*
 * What @bio carries (blk_bio_src()), and the file (fs dev, inode generation and number)
 * where it is one:
 * a regular file's page cache is readahead if REQ_RAHEAD; the block device's cache,
 * btrfs's btree, other inodes' pages and REQ_META are metadata; kernel memory is no
 * file's; user memory is direct I/O from a user buffer (raw block devices, non-iomap
 * file systems).
 */
static __always_inline __u32 blk_owner_bio_kind(struct bio *bio, __u32 *dev, __u32 *gen, __u64 *ino)
{
	__u32 meta = bio->bi_opf & BLK_REQ_FLAG(__REQ_META), kind;
	struct inode *inode;

	*dev = 0;
	*gen = 0;
	*ino = 0;
	switch (blk_bio_src(bio, blk_owner_dio_end_io, &inode)) {
	case BLK_SRC_SWAP:
		return BLK_OWN_SWAP;
	case BLK_SRC_DIO:
		kind = BLK_OWN_DIRECT;
		break;
	case BLK_SRC_USER:
		return BLK_OWN_DIRECT;
	case BLK_SRC_NOHOST:
		return BLK_OWN_NOFILE;
	case BLK_SRC_BDEV:
		return BLK_OWN_META;
	case BLK_SRC_CACHE:
		if ((KR(struct inode, inode, i_mode) & S_IFMT) != S_IFREG ||
		    metadata_inode(inode) || meta)
			return BLK_OWN_META;
		kind = bio->bi_opf & BLK_REQ_FLAG(__REQ_RAHEAD) ? BLK_OWN_READAHEAD :
								  BLK_OWN_BUFFERED;
		break;
	default: /* BLK_SRC_NONE, BLK_SRC_KERNEL */
		return meta ? BLK_OWN_META : BLK_OWN_NOFILE;
	}
	if (inode) {
		*dev = KR(struct super_block, INODE_SB(inode), s_dev);
		*gen = INODE_GEN(inode);
		*ino = KR(struct inode, inode, i_ino);
	}
	return kind;
}

/*
 * The id of the current kernel stack, given when first seen; a negative errno if it
 * could not be taken or kept (the map is full).
 */
static __noinline __s32 blk_owner_stack_id(void *ctx)
{
	struct blk_owner_stack *st;
	__u32 zero = 0, *given;
	__s32 *found, id;
	long n;

	st = bpf_map_lookup_elem(&blk_owner_stack_buf, &zero);
	given = bpf_map_lookup_elem(&blk_owner_stacks_given, &zero);
	if (!st || !given)
		return -ENOENT;
	/* The frames past the stack's end are zeroed: the key is the stack alone. */
	n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), 0);
	if (n < 0)
		return n;
	found = bpf_map_lookup_elem(&blk_owner_stack_ids, st);
	if (found)
		return *found;
	id = (__s32)(*given * blk_owner_nr_cpus + bpf_get_smp_processor_id() + 1);
	(*given)++;
	n = bpf_map_update_elem(&blk_owner_stack_ids, st, &id, BPF_NOEXIST);
	if (n == -EEXIST) {
		/* Another CPU gave it an id meanwhile (this one stays unused). */
		found = bpf_map_lookup_elem(&blk_owner_stack_ids, st);
		return found ? *found : -ENOENT;
	}
	return n ? n : id;
}

/* Writes @o into @bio's slot unless it already holds exactly that record. */
static __always_inline void blk_owner_claim(struct bio *bio, struct blk_owner *o)
{
	struct blk_owner_slot *s = slot_at(&blk_owner_slots, bio, BLK_OWNER_SLOTS);
	__u64 tag = pv(bio);

	if (!s)
		return;
	if (s->tag == tag && s->o.tid == o->tid && s->o.ino == o->ino && s->o.dev == o->dev &&
	    s->o.gen == o->gen && s->o.kind == o->kind && s->o.stack_id == o->stack_id &&
	    s->o.flags == o->flags && s->o.cgid == o->cgid)
		return;
	s->o = *o;
	s->tag = tag;
}

/* Records the submitter of @bio (block_bio_queue, in its context). */
static __always_inline int blk_owner_note_bio(struct bio *bio, void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf(), *w;
	struct blk_owner o = {};
	bool waiter;
	__u64 id;

	o.kind = blk_owner_bio_kind(bio, &o.dev, &o.gen, &o.ino);
	if (o.kind == BLK_OWN_READAHEAD && BLK_OWNER_RA_ASYNC(&o))
		o.flags |= BLK_OWN_F_RA_ASYNC;
	o.stack_id = -1;
	if (blk_owner_want_stack) {
		o.stack_id = blk_owner_stack_id(ctx);
		if (o.stack_id < 0)
			o.flags |= BLK_OWN_F_STACK_LOST;
	}
	if (task->flags & PF_KTHREAD) {
		o.flags |= BLK_OWN_F_KTHREAD;
		w = blk_bio_submitter(
			task,
			o.kind == BLK_OWN_DIRECT ? bio_iomap_dio(bio, blk_owner_dio_end_io) : NULL,
			&waiter);
		if (waiter) {
			o.flags |= BLK_OWN_F_WAITER;
			o.pid = KR(struct task_struct, w, tgid);
			o.tid = KR(struct task_struct, w, pid);
			o.cgid = task_cgid(KPTR_AS(struct task_struct, w));
			BPF_CORE_READ_STR_INTO(&o.comm, KPTR_AS(struct task_struct, w), comm);
			goto claim;
		}
	}
	id = bpf_get_current_pid_tgid();
	o.pid = id >> 32;
	o.tid = (__u32)id;
	o.cgid = bpf_get_current_cgroup_id();
	bpf_get_current_comm(o.comm, sizeof(o.comm));
claim:
	blk_owner_claim(bio, &o);
	return 0;
}

/*
 * A split (block_split): the front part of a queued bio, as a new bio whose bi_private
 * is the original (bio_chain()). It inherits the original's owner; a parent without a
 * record is noted as a new bio.
 */
static __always_inline int blk_owner_note_split(struct bio *split, void *ctx)
{
	struct blk_owner_slot *s;
	struct blk_owner o;

	s = slot_find_split_parent(&blk_owner_slots, split, BLK_OWNER_SLOTS);
	if (!s)
		return blk_owner_note_bio(split, ctx);
	o = s->o;
	o.flags |= BLK_OWN_F_SPLIT;
	blk_owner_claim(split, &o);
	return 0;
}

/* The owner of @rq (of its first bio), or NULL: no bio, or its record was overwritten. */
static __always_inline struct blk_owner *blk_owner_of_rq(struct request *rq)
{
	struct blk_owner_slot *s;
	struct bio *bio = KRP(struct request, rq, bio);

	if (!bio)
		return NULL;
	s = slot_find(&blk_owner_slots, bio, BLK_OWNER_SLOTS);
	return s ? &s->o : NULL;
}

/* Whether @inode is the file of owner @o. */
static __always_inline bool blk_owner_file(struct inode *inode, struct blk_owner *o)
{
	return inode && KR(struct inode, inode, i_ino) == o->ino && INODE_GEN(inode) == o->gen;
}

/*
 * The inode of owner @o's file, whose data request @rq carries (page cache or iomap
 * DIO), or NULL.
 */
static __always_inline struct inode *blk_owner_rq_inode(struct request *rq, struct blk_owner *o)
{
	struct bio *bio = KRP(struct request, rq, bio), *pbio;
	struct iomap_dio *dio;
	struct inode *inode;
	__u64 parent;

	if (!bio)
		return NULL;
	dio = bio_iomap_dio(bio, blk_owner_dio_end_io);
	if (dio)
		return dio_inode(dio);
	/* Page cache pages of the file; not a user buffer's (anonymous, or shmem). */
	inode = bio_page_inode(bio);
	if (blk_owner_file(inode, o))
		return inode;
	/* Its first bio split off a larger one? */
	if (!(o->flags & BLK_OWN_F_SPLIT))
		return NULL;
	/* The front part of a split direct I/O: its bi_private is the bio it was cut from. */
	parent = (__u64)bio->bi_private;
	if (!parent || !blk_owner_dio_end_io)
		return NULL;
	pbio = AS_BIO(parent);
	if ((__u64)KR(struct bio, pbio, bi_end_io) != blk_owner_dio_end_io)
		return NULL;
	parent = (__u64)KR(struct bio, pbio, bi_private);
	inode = parent ? dio_inode(KPTR_AS(struct iomap_dio, parent)) : NULL;
	return blk_owner_file(inode, o) ? inode : NULL;
}

#endif /* BLK_OWNER_NO_RECORD */

#endif
