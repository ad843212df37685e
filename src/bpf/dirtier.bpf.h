/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who dirtied each page cache page, for crediting writeback to the process that wrote
 * the data rather than to the flusher that wrote it out: the dirtiers map, its update
 * in the dirtying task (writeback_dirty_folio) and the walk over a bio's pages that
 * finds each one's dirtier. Shared by top and snoop. Include once per .bpf.c, after
 * vfs.bpf.h and kptr.bpf.h, with defined before it: `page_size` (the kernel's page
 * size, a global) and DIRTIER_INSERT_FAILED(err), what to do when a record cannot be
 * made (err from the map update).
 */
#ifndef IOSPAN_DIRTIER_BPF_H
#define IOSPAN_DIRTIER_BPF_H

/*
 * Who dirtied each page cache page, for crediting its writeback: one record per file
 * and run of DIRTY_CHUNK_PAGES pages, holding each page's dirtier (0: unknown), written
 * in the dirtying task when a folio goes from clean to dirty (all its pages). Runs keep
 * the cost per chunk, not per page: dirtying consecutive pages finds the record made
 * for the first, and a writeback bio's pages are resolved with one lookup per chunk.
 * LRU: the records of files deleted or truncated while dirty would otherwise stay.
 *
 * A page dirtied again while it is being written back (another thread appending to a
 * shared log) has two dirtiers at once: the one whose data the write in flight carries
 * and the new one. The first is kept in a small map of its own (rare: no cost to the
 * records or their lookups), and a completion that finds the page dirty again under
 * writeback credits it, not the new one (whose own write comes later).
 */
#define DIRTY_CHUNK_SHIFT 4
#define DIRTY_CHUNK_PAGES (1U << DIRTY_CHUNK_SHIFT)

struct dirty_key {
	__u32 dev;
	__u32 gen; /* the inode's generation: a reused inode number is another file */
	__u64 ino;
	__u64 chunk; /* page index >> DIRTY_CHUNK_SHIFT */
};

struct dirty_chunk {
	__u32 owner[DIRTY_CHUNK_PAGES];
};

#define FOLIO_FLAG(fl, bit) ((fl) & (1UL << bpf_core_enum_value(enum pageflags, bit)))

/* Sized by --max-entries. */
DEFINE_MAP(dirtiers, BPF_MAP_TYPE_LRU_HASH, struct dirty_key, struct dirty_chunk, 65536);

/* The dirtiers whose data writes in flight carry, of pages dirtied again meanwhile. */
DEFINE_MAP(redirtied, BPF_MAP_TYPE_LRU_HASH, struct dirty_key, struct dirty_chunk, 4096);

/*
 * Pages @first..@end - 1 of the chunk @dk->chunk were dirtied by @owner, while under
 * writeback if @wb. A global function: verified once, not at each call site and loop
 * state. Map keys are copied to its stack: 6.1 takes no argument memory as a key.
 */
__noinline int mark_chunk(struct dirty_key *dk, __u64 first, __u64 end, __u32 owner, __u32 wb)
{
	struct dirty_chunk *c, *p = NULL, zero = {};
	struct dirty_key key, *k = &key;
	long err;
	__u64 base;
	__u32 i, lo, hi;

	if (!dk)
		return 0;
	key = *dk;
	c = map_lookup_or_init(&dirtiers, k, &zero, &err);
	if (!c) {
		DIRTIER_INSERT_FAILED(err);
		return 0;
	}
	/* Without room, the new dirtier is credited: what it was before this map. */
	if (wb)
		p = map_lookup_or_init(&redirtied, k, &zero, &err);
	base = k->chunk << DIRTY_CHUNK_SHIFT;
	lo = first > base ? first - base : 0;
	hi = end - base < DIRTY_CHUNK_PAGES ? end - base : DIRTY_CHUNK_PAGES;
#pragma unroll
	for (i = 0; i < DIRTY_CHUNK_PAGES; i++) {
		if (i < lo || i >= hi)
			continue;
		/* The write in flight carries the last dirtier's data (same or not). */
		if (p)
			p->owner[i] = c->owner[i];
		/* Stores only when it changes: the line stays shared with readers. */
		if (c->owner[i] != owner)
			c->owner[i] = owner;
	}
	return 0;
}

struct mark_folio {
	struct dirty_key k;
	__u64 first, end;
	__u32 owner, wb;
};

static int mark_chunk_cb(__u32 i, void *ctx)
{
	struct mark_folio *m = ctx;

	mark_chunk(&m->k, m->first, m->end, m->owner, m->wb);
	m->k.chunk++;
	return 0;
}

/*
 * Folio @folio of file (@dev, @gen, @ino) was dirtied by @owner (it went from clean to
 * dirty, in the dirtying task): its @nr pages from @first.
 */
static __always_inline void dirtier_mark(struct folio *folio, __u32 dev, __u32 gen, __u64 ino,
					 __u64 first, __u64 nr, __u32 owner)
{
	struct mark_folio m = {};

	m.wb = !!FOLIO_FLAG(core_folio_flags(folio), PG_writeback);
	m.k.dev = dev;
	m.k.gen = gen;
	m.k.ino = ino;
	m.first = first;
	m.end = m.first + nr;
	m.owner = owner;
	m.k.chunk = m.first >> DIRTY_CHUNK_SHIFT;
	if (((m.end - 1) >> DIRTY_CHUNK_SHIFT) == m.k.chunk)
		mark_chunk(&m.k, m.first, m.end, m.owner, m.wb);
	else
		bpf_loop(((m.end - 1) >> DIRTY_CHUNK_SHIFT) - m.k.chunk + 1, mark_chunk_cb, &m, 0);
}

/*
 * A walk over the pages of a page cache write bio, one folio (or the part of it in one
 * bio_vec) per step (page_walk_next()), finding each page's dirtier.
 */
struct page_pos {
	__u64 vec;	     /* address of the next bio_vec */
	__u64 page0;	     /* first page of the current bio_vec (address) */
	__u32 off;	     /* byte offset from page0 */
	__u32 vec_left;	     /* bytes left in the current bio_vec */
	__u32 skip;	     /* bytes of the first bio_vec already done (bi_bvec_done) */
	__u32 left;	     /* bytes still to walk */
	struct dirty_key dk; /* the file (the chunk is set per lookup) */
	/* The last step: its bytes and their dirtier (0: unknown). */
	__u32 bytes;
	__u32 dirtier;
};

/*
 * Starts a walk over the first @bytes of @bio, whose pages belong to file (@dev, @gen,
 * @ino).
 */
static __always_inline void page_pos_init(struct page_pos *pp, struct bio *bio, __u32 bytes,
					  __u32 dev, __u32 gen, __u64 ino)
{
	__u32 idx = BPF_CORE_READ(bio, bi_iter.bi_idx);

	pp->vec = (__u64)BPF_CORE_READ(bio, bi_io_vec) + idx * bpf_core_type_size(struct bio_vec);
	pp->skip = BPF_CORE_READ(bio, bi_iter.bi_bvec_done);
	pp->left = bytes;
	pp->dk.dev = dev;
	pp->dk.gen = gen;
	pp->dk.ino = ino;
}

/*
 * The dirtier of page @index of the walk's file whose data the write in flight
 * carries, 0 if unknown: its previous one if the folio (flags @fl) is dirty again
 * under writeback. One lookup per folio: remembering a chunk across steps makes the
 * loop's states too many to verify.
 */
static __always_inline __u32 page_dirtier(struct page_pos *pp, __u64 index, unsigned long fl)
{
	struct dirty_key k = pp->dk; /* on the stack: 6.1 takes no argument memory as key */
	struct dirty_chunk *c;
	__u32 i = index & (DIRTY_CHUNK_PAGES - 1);

	k.chunk = index >> DIRTY_CHUNK_SHIFT;
	if (FOLIO_FLAG(fl, PG_dirty) && FOLIO_FLAG(fl, PG_writeback)) {
		c = bpf_map_lookup_elem(&redirtied, &k);
		if (c && c->owner[i])
			return c->owner[i];
	}
	c = bpf_map_lookup_elem(&dirtiers, &k);
	return c ? c->owner[i] : 0;
}

/* The folio of the page struct at @page (an address), and the page's place in it. */
static __always_inline struct folio *page_folio_pos(__u64 page, __u64 *pos)
{
	__u64 head = BPF_CORE_READ((struct page *)page, compound_head);

	/* A number in both builds: the page is known by its address. */
	head = head & 1 ? head - 1 : page;
	*pos = (page - head) / bpf_core_type_size(struct page);
	return KPTR_AS(struct folio, head);
}

/*
 * Moves @pp over the next folio segment of the bio: its bytes and their dirtier in
 * pp->bytes and pp->dirtier. Returns 0, or -ENOENT at the end of the bio. A global
 * function (verified once, not at each state of the loops that walk), so it sees only
 * numbers.
 */
__noinline int page_walk_next(struct page_pos *pp)
{
	__u64 page, index, nr, pos, room;
	struct folio *folio;
	struct bio_vec *bv;
	__u32 n, psz = bpf_core_type_size(struct page);

	if (!pp || !pp->left)
		return -ENOENT;
	if (!pp->vec_left) {
		bv = (struct bio_vec *)pp->vec;
		pp->page0 = (__u64)BPF_CORE_READ(bv, bv_page);
		pp->off = BPF_CORE_READ(bv, bv_offset) + pp->skip;
		pp->vec_left = BPF_CORE_READ(bv, bv_len);
		if (!pp->page0 || pp->vec_left <= pp->skip)
			return -ENOENT;
		pp->vec_left -= pp->skip;
		pp->skip = 0;
		pp->vec += bpf_core_type_size(struct bio_vec);
	}
	/* Multi-page bio_vecs: page structs are contiguous (vmemmap). */
	page = pp->page0 + (__u64)(pp->off / page_size) * psz;
	folio = page_folio_pos(page, &pos);
	index = KR(struct folio, folio, index) + pos;
	nr = folio_bytes(folio, page_size) / page_size;
	room = nr > pos ? (nr - pos) * page_size - pp->off % page_size : page_size;
	n = pp->vec_left < pp->left ? pp->vec_left : pp->left;
	if (room < n)
		n = room;
	pp->dirtier = page_dirtier(pp, index, core_folio_flags(folio));
	pp->bytes = n;
	pp->off += n;
	pp->vec_left -= n;
	pp->left -= n;
	return 0;
}

#endif
