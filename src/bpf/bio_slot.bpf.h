/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Direct-mapped slot tables keyed by a kernel pointer (bio, request, kiocb), and the
 * owner clues a bio carries. A table is a BPF_MAP_TYPE_ARRAY of the caller's slot
 * type, whose first member must be `__u64 tag` (pv() of the pointer); the map stays
 * in the including .bpf.c. Slots are claimed with stores (slot_claim), or written only
 * when their content changes (slot_at and compare, for records that repeat), and
 * checked by tag on lookup; never released: every write pulls the slot's cache line
 * from the completing CPU back to the submitting one. Two live objects in one slot:
 * the older one's lookup finds the other's tag and the caller counts it as unmatched.
 * Needs kptr.bpf.h.
 */
#ifndef IOSPAN_BIO_SLOT_BPF_H
#define IOSPAN_BIO_SLOT_BPF_H

/* @nr slots, a power of two. Objects are at least 64-byte aligned: skip those bits. */
static __always_inline __u32 slot_index(__u64 tag, __u32 nr)
{
	return ((tag >> 6) ^ (tag >> 23)) & (nr - 1);
}

/* The slot of the object tagged @tag in @map (whatever it holds), or NULL. */
static __always_inline void *slot_at_tag(void *map, __u64 tag, __u32 nr)
{
	__u32 idx = slot_index(tag, nr);

	return bpf_map_lookup_elem(map, &idx);
}

/* The slot of @ptr in @map (whatever it holds), or NULL. */
static __always_inline void *slot_at(void *map, const void *ptr, __u32 nr)
{
	return slot_at_tag(map, pv(ptr), nr);
}

/* Claims the slot of @ptr: writes its tag, returns the slot for the caller's fields. */
static __always_inline void *slot_claim(void *map, const void *ptr, __u32 nr)
{
	__u64 tag = pv(ptr);
	__u32 idx = slot_index(tag, nr);
	__u64 *s = bpf_map_lookup_elem(map, &idx);

	if (s)
		*s = tag;
	return s;
}

/* The slot of the object tagged @tag if it still holds its record, or NULL. */
static __always_inline void *slot_find_tag(void *map, __u64 tag, __u32 nr)
{
	__u32 idx = slot_index(tag, nr);
	__u64 *s = bpf_map_lookup_elem(map, &idx);

	return s && *s == tag ? s : NULL;
}

/*
 * Two-way tables (the async direct I/O ones, where a collision loses an I/O's bytes
 * or record): an object whose slot holds another live one takes its second slot, a
 * different one. With k objects live, a collision costs about (k/nr)^2 per object
 * instead of k/nr (a libaio queue of 8 lost an I/O in one test of four at 4096 slots).
 */
static __always_inline __u32 slot_index_alt(__u64 tag, __u32 nr)
{
	return slot_index(tag, nr) ^ ((((__u32)(tag >> 17)) & (nr - 1)) | 1);
}

/*
 * The slot (of its two) of the object tagged @tag if one holds its record, or NULL;
 * its index in *@idx.
 */
static __always_inline void *slot_find_tag2(void *map, __u64 tag, __u32 nr, __u32 *idx)
{
	__u64 *s;

	*idx = slot_index(tag, nr);
	s = bpf_map_lookup_elem(map, idx);
	if (s && *s == tag)
		return s;
	*idx = slot_index_alt(tag, nr);
	s = bpf_map_lookup_elem(map, idx);
	return s && *s == tag ? s : NULL;
}

/* The slot of @ptr if it still holds @ptr's record, or NULL. */
static __always_inline void *slot_find(void *map, const void *ptr, __u32 nr)
{
	return slot_find_tag(map, pv(ptr), nr);
}

/* slot_find_tag2() of @ptr, without the index. */
static __always_inline void *slot_find2(void *map, const void *ptr, __u32 nr)
{
	__u32 idx;

	return slot_find_tag2(map, pv(ptr), nr, &idx);
}

/* The two slots of the object tagged @tag_ in @map, in *@a and *@b: false if none. */
#define slot_lookup2(map, tag_, nr, a, b)                                       \
	({                                                                      \
		__u64 t__ = (tag_);                                             \
		__u32 i__ = slot_index(t__, nr), j__ = slot_index_alt(t__, nr); \
		*(a) = bpf_map_lookup_elem(map, &i__);                          \
		*(b) = bpf_map_lookup_elem(map, &j__);                          \
		*(a) && *(b);                                                   \
	})

/*
 * Of the two slots of the object tagged @tag_ in @map (slots of @type, whose first
 * member is the tag): the second where take_second(first, second, tag, @arg), else the
 * first; NULL if the map has no such slots.
 */
#define slot_pick2_if(map, type, tag_, nr, take_second, arg)                    \
	({                                                                      \
		__u64 t__ = (tag_);                                             \
		__u32 i__ = slot_index(t__, nr), j__ = slot_index_alt(t__, nr); \
		type *a__ = bpf_map_lookup_elem(map, &i__);                     \
		type *b__ = bpf_map_lookup_elem(map, &j__);                     \
                                                                                \
		if (a__ && b__ && take_second(a__, b__, t__, arg))              \
			a__ = b__;                                              \
		b__ ? a__ : NULL;                                               \
	})

/*
 * slot_pick2_if() for slots zeroed when their object ends: the object's own if either
 * holds it, else an empty one, else the one whose @age member is older. The caller sees
 * what the slot held before it writes @tag.
 */
#define slot_older_second(a, b, t, age) \
	((a)->tag != (t) && ((b)->tag == (t) || ((a)->tag && (!(b)->tag || (b)->age < (a)->age))))
#define slot_pick2(map, type, tag_, nr, age) \
	slot_pick2_if(map, type, tag_, nr, slot_older_second, age)

/*
 * slot_pick2_if() for records that outlive a cleared tag, or go stale: the second if it
 * holds the object's tag or the first holds another live object. @live(slot) says
 * whether a slot's object is still in flight. The caller sees what the slot held: a live
 * one not its own is a collision, which it counts.
 */
#define slot_live_second(a, b, t, live) ((b)->tag == (t) || ((a)->tag != (t) && live(a)))
#define slot_pick2_live(map, type, tag_, nr, live) \
	slot_pick2_if(map, type, tag_, nr, slot_live_second, live)

#define REQ_OP_MASK	    0xff
#define REQ_OP_FLUSH	    2
#define REQ_OP_DISCARD	    3
#define REQ_OP_SECURE_ERASE 5

/* Swap I/O (anonymous pages, like a user buffer's, but no process's file I/O). */
static __always_inline bool swap_bio(struct bio *bio)
{
	return bio->bi_opf & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_SWAP));
}

/*
 * The iomap direct I/O a bio belongs to, or NULL: its bi_end_io is
 * iomap_dio_bio_end_io (@end_io_addr, from kallsyms; 0 if unknown) and bi_private the
 * struct iomap_dio. Read it with KR(struct iomap_dio, ...).
 */
static __always_inline struct iomap_dio *bio_iomap_dio(struct bio *bio, __u64 end_io_addr)
{
	if (!end_io_addr || (__u64)bio->bi_end_io != end_io_addr || !bio->bi_private)
		return NULL;
	return KPTR_AS(struct iomap_dio, bio->bi_private);
}

/* The kiocb of an iomap direct I/O (typed, or a number: KR()). */
#define DIO_IOCB(dio) KR(struct iomap_dio, dio, iocb)
/* The inode of the file of an iomap direct I/O, or NULL. */
static __always_inline struct inode *dio_inode(struct iomap_dio *dio)
{
	struct file *f = KR(struct kiocb, DIO_IOCB(dio), ki_filp);

	return f ? KR(struct file, f, f_inode) : NULL;
}

/*
 * Whether an iomap direct I/O is asynchronous (libaio, io_uring): its kiocb has a
 * completion callback. dio->wait_for_completion cannot tell: it is only written after
 * the bios have been submitted.
 */
static __always_inline bool dio_async(struct iomap_dio *dio)
{
	struct kiocb *iocb = DIO_IOCB(dio);

	return iocb && KR(struct kiocb, iocb, ki_complete);
}

/*
 * The task that submitted a synchronous iomap direct I/O and waits for it, or NULL for
 * an asynchronous one (submit.waiter later shares its memory with the aio work). Typed,
 * or a number: KR().
 */
static __always_inline struct task_struct *dio_waiter(struct iomap_dio *dio)
{
	if (dio_async(dio))
		return NULL;
	return KR(struct iomap_dio, dio, submit.waiter);
}

/*
 * Whether @task is blk-throttle's worker, queuing bios the throttle held: a workqueue
 * worker running @dispatch_fn (blk_throtl_dispatch_work_fn, from kallsyms; 0 if
 * unknown). A kthread's worker_private is its struct kthread, whose data is the worker.
 */
static __always_inline bool throttle_worker(struct task_struct *task, __u64 dispatch_fn)
{
	__u64 k, w;

	if (!dispatch_fn || !(task->flags & PF_WQ_WORKER))
		return false;
	k = (__u64)task->worker_private;
	w = k ? (__u64)KR(struct kthread, KPTR_AS(struct kthread, k), data) : 0;
	return w &&
	       (__u64)KR(struct worker, KPTR_AS(struct worker, w), current_func) == dispatch_fn;
}

/*
 * The tag (pv()) of the bio a split was cut from, or 0: bio_chain() has made it the
 * split's bi_private before block_split fires. A split has neither pages of its own to
 * look at nor the original's bi_end_io, so it inherits the original's owner.
 */
static __always_inline __u64 bio_split_parent(struct bio *split)
{
	void *parent = split->bi_private;

	return parent ? pv_addr((__u64)parent) : 0;
}

/* The slot in @map of the bio @split was cut from, if it still holds its record, or NULL. */
static __always_inline void *slot_find_split_parent(void *map, struct bio *split, __u32 nr)
{
	__u64 parent = bio_split_parent(split);

	return parent ? slot_find_tag(map, parent, nr) : NULL;
}

/* slot_find_split_parent() in a two-way table. */
static __always_inline void *slot_find_split_parent2(void *map, struct bio *split, __u32 nr)
{
	__u64 parent = bio_split_parent(split);
	__u32 idx;

	return parent ? slot_find_tag2(map, parent, nr, &idx) : NULL;
}

/* The file inode whose page cache pages a bio carries, or NULL (uses vfs.bpf.h). */
#ifdef IOSPAN_VFS_BPF_H
static __always_inline struct inode *bio_page_inode(struct bio *bio)
{
	struct page *page;

	if (!KRP(struct bio, bio, bi_io_vec))
		return NULL;
	page = KRP(struct bio, bio, bi_io_vec)->bv_page;
	return page ? page_inode(page) : NULL;
}
#endif

#endif
