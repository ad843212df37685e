/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The block-attribution core: who submitted a block request (struct blk_owner,
 * src/lib/blk_owner_abi.h), recorded at block_bio_queue in the submitter's context and
 * found at completion from the request's first bio.
 *
 *   blk_owner_note_bio(ctx, bio)     at block_bio_queue (task context)
 *   blk_owner_note_split(ctx, split) at block_split: the split inherits its parent's
 *   blk_owner_of_rq(rq)              at completion: the owner of rq->bio, or NULL
 *   blk_owner_bio_kind(bio, &dev, &ino)  what a bio carries (enum blk_owner_kind)
 *
 * Merges need nothing: a request keeps its first bio, whose owner it shows.
 *
 * Maps and configuration live here, once per including .bpf.c (include this header in
 * one place only, after iospan.bpf.h, kptr.bpf.h, vfs.bpf.h and bio_slot.bpf.h):
 *   blk_owner_slots   array of BLK_OWNER_SLOTS struct blk_owner_slot, direct-mapped by
 *                     bio address (slot_* of bio_slot.bpf.h); define BLK_OWNER_SLOTS
 *                     (a power of two) before including to change its size;
 *   blk_owner_stacks  stack trace map (BLK_OWNER_STACK_DEPTH frames): user space sets
 *                     its max_entries (1 when stacks are off);
 *   rodata blk_owner_want_stack (take the queuing stack) and blk_owner_dio_end_io
 *   (address of iomap_dio_bio_end_io from kallsyms, 0 if unknown: direct I/O is then
 *   told by its anonymous pages, without its file).
 * Two bios in flight in one slot: the older one's lookup finds the other's tag and
 * gets NULL (the caller counts it). Slots are written only when their record changes
 * (bios are recycled: the slot mostly holds this bio's previous, identical record).
 *
 * `top` finds a bio's owner its own way (dirtiers for writeback, syscall state for the
 * file of non-iomap direct I/O); its queue_bio() could adopt blk_owner_bio_kind() later.
 */
#ifndef IOSPAN_BLK_OWNER_BPF_H
#define IOSPAN_BLK_OWNER_BPF_H

#include "lib/blk_owner_abi.h"

#ifndef BLK_OWNER_SLOTS
#define BLK_OWNER_SLOTS (1U << 16)
#endif

struct blk_owner_slot {
	__u64 tag; /* pv() of the bio: first, as slot_* expects */
	struct blk_owner o;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BLK_OWNER_SLOTS);
	__type(key, __u32);
	__type(value, struct blk_owner_slot);
} blk_owner_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, BLK_OWNER_STACK_DEPTH * sizeof(__u64));
} blk_owner_stacks SEC(".maps");

const volatile bool blk_owner_want_stack = false;
const volatile __u64 blk_owner_dio_end_io = 0;

#define BLK_REQ_FLAG(bit) ((__u32)1 << bpf_core_enum_value(enum req_flag_bits, bit))

/*
 * What @bio carries, and the file (fs dev and inode) where it is one: REQ_SWAP, then
 * iomap direct I/O (its file from the dio), then the first page: a file's page cache
 * (readahead if REQ_RAHEAD), the block device's cache or btrfs's btree (metadata),
 * kernel memory (no file; metadata if REQ_META), user memory (direct I/O from a user
 * buffer: raw block devices, non-iomap file systems).
 */
static __always_inline __u32 blk_owner_bio_kind(struct bio *bio, __u32 *dev, __u64 *ino)
{
	__u32 opf = bio->bi_opf;
	struct inode *inode = NULL, *host = NULL;
	struct address_space *mapping;
	struct iomap_dio *dio;
	struct page *page;
	__u32 kind;

	*dev = 0;
	*ino = 0;
	if (opf & BLK_REQ_FLAG(__REQ_SWAP))
		return BLK_OWN_SWAP;
	dio = bio_iomap_dio(bio, blk_owner_dio_end_io);
	if (dio) {
		inode = dio_inode(dio);
		kind = BLK_OWN_DIRECT;
		goto file;
	}
	if (!bio->bi_io_vec || !bio->bi_iter.bi_size)
		return opf & BLK_REQ_FLAG(__REQ_META) ? BLK_OWN_META : BLK_OWN_NOFILE;
	page = bio->bi_io_vec->bv_page;
	if (!page)
		return BLK_OWN_NOFILE;
	page = page_head(page);
	if (kernel_page(page))
		return opf & BLK_REQ_FLAG(__REQ_META) ? BLK_OWN_META : BLK_OWN_NOFILE;
	mapping = KR(struct page, page, mapping);
	if (!mapping)
		return opf & BLK_REQ_FLAG(__REQ_META) ? BLK_OWN_META : BLK_OWN_NOFILE;
	if (KLOW(mapping) & 3)
		return BLK_OWN_DIRECT; /* anonymous or KSM: a user buffer */
	host = KR(struct address_space, mapping, host);
	if (!host)
		return BLK_OWN_NOFILE;
	if ((KR(struct inode, host, i_mode) & S_IFMT) == S_IFBLK)
		return BLK_OWN_META;
	if (memory_fs(host))
		return BLK_OWN_DIRECT; /* tmpfs/shmem/hugetlbfs pages: a user buffer */
	if ((KR(struct inode, host, i_mode) & S_IFMT) != S_IFREG || metadata_inode(host) ||
	    (opf & BLK_REQ_FLAG(__REQ_META)))
		return BLK_OWN_META;
	inode = host;
	kind = opf & BLK_REQ_FLAG(__REQ_RAHEAD) ? BLK_OWN_READAHEAD : BLK_OWN_BUFFERED;
file:
	if (inode) {
		*dev = KR(struct super_block, INODE_SB(inode), s_dev);
		*ino = KR(struct inode, inode, i_ino);
	}
	return kind;
}

/* Writes @o into @bio's slot unless it already holds exactly that record. */
static __always_inline void blk_owner_claim(struct bio *bio, struct blk_owner *o)
{
	struct blk_owner_slot *s = slot_at(&blk_owner_slots, bio, BLK_OWNER_SLOTS);
	__u64 tag = pv(bio);

	if (!s)
		return;
	if (s->tag == tag && s->o.tid == o->tid && s->o.ino == o->ino && s->o.dev == o->dev &&
	    s->o.kind == o->kind && s->o.stack_id == o->stack_id && s->o.flags == o->flags &&
	    s->o.cgid == o->cgid)
		return;
	s->o = *o;
	s->tag = tag;
}

/* Records the submitter of @bio (block_bio_queue, in its context). */
static __always_inline void blk_owner_note_bio(void *ctx, struct bio *bio)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct blk_owner o = {};
	struct iomap_dio *dio;
	struct task_struct *w;
	__u64 id;

	o.kind = blk_owner_bio_kind(bio, &o.dev, &o.ino);
	o.stack_id = -1;
	if (blk_owner_want_stack) {
		o.stack_id = bpf_get_stackid(ctx, &blk_owner_stacks, 0);
		if (o.stack_id < 0)
			o.flags |= BLK_OWN_F_STACK_LOST;
	}
	if (task->flags & PF_KTHREAD) {
		o.flags |= BLK_OWN_F_KTHREAD;
		/* A synchronous dio re-submitted by a kernel thread (blk-throttle): its waiter. */
		dio = o.kind == BLK_OWN_DIRECT ? bio_iomap_dio(bio, blk_owner_dio_end_io) : NULL;
		w = dio ? dio_waiter(dio) : NULL;
		if (w) {
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
}

/*
 * A split (block_split): the front part of a queued bio, as a new bio whose bi_private
 * is the original (bio_chain()). It inherits the original's owner; a parent without a
 * record is noted as a new bio.
 */
static __always_inline void blk_owner_note_split(void *ctx, struct bio *split)
{
	struct blk_owner_slot *s;
	struct blk_owner o;
	__u64 parent;

	parent = bio_split_parent(split);
	s = parent ? slot_find_tag(&blk_owner_slots, parent, BLK_OWNER_SLOTS) : NULL;
	if (!s) {
		blk_owner_note_bio(ctx, split);
		return;
	}
	o = s->o;
	o.flags |= BLK_OWN_F_SPLIT;
	blk_owner_claim(split, &o);
}

/* The owner of @rq (of its first bio), or NULL: no bio, or its record was overwritten. */
static __always_inline struct blk_owner *blk_owner_of_rq(struct request *rq)
{
	struct blk_owner_slot *s;
	struct bio *bio = rq->bio;

	if (!bio)
		return NULL;
	s = slot_find(&blk_owner_slots, bio, BLK_OWNER_SLOTS);
	return s ? &s->o : NULL;
}

#endif
