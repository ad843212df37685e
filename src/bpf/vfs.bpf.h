/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files, inodes and page cache pages as the iospan BPF programs see them: fd to
 * struct file, pseudo file systems, the file a page belongs to, folio sizes, and paths
 * captured by a bounded walk up the dentries. No maps here: callers own their maps
 * and buffers. Needs kptr.bpf.h and core_fixes.bpf.h.
 */
#ifndef IOSPAN_VFS_BPF_H
#define IOSPAN_VFS_BPF_H

#define S_IFMT	 00170000
#define S_IFREG	 0100000
#define S_IFDIR	 0040000
#define S_IFBLK	 0060000
#define O_DIRECT 00040000
#define O_DSYNC	 00010000

/* Path walk bounds; an includer may define its own before including this header. */
#ifndef VFS_PATH_BUF
#define VFS_PATH_BUF 768
#endif
#ifndef VFS_PATH_NAME_MAX
#define VFS_PATH_NAME_MAX 256
#endif
#ifndef VFS_PATH_DEPTH
#define VFS_PATH_DEPTH 32
#endif

enum vfs_path_flags {
	VFS_PATH_TRUNCATED = 1 << 0, /* deeper than VFS_PATH_DEPTH or longer than the buffer */
	VFS_PATH_DELETED = 1 << 1,   /* unlinked when captured */
};

/*
 * The struct file of @fd in @task (current, from a syscall tracepoint), or NULL. Read
 * its fields with KR(struct file, ...): without bpf_rdonly_cast it is only a number.
 */
static __always_inline struct file *fd_file(struct task_struct *task, int fd)
{
	struct fdtable *fdt = KVIEW(struct task_struct, task)->files->fdt;
	__u64 fds, f = 0;

	if (!fdt || fd < 0 || fd >= fdt->max_fds)
		return NULL;
	fds = (__u64)BPF_CORE_READ(fdt, fd);
	if (!fds)
		return NULL;
	bpf_probe_read_kernel(&f, sizeof(f), (void *)(fds + (__u64)fd * sizeof(void *)));
	if (!f)
		return NULL;
	return KPTR_AS(struct file, f);
}

/* The super block of @inode (typed, or a number: see KR()). */
#define INODE_SB(ip) KR(struct inode, ip, i_sb)

/*
 * Pseudo file systems (proc, sysfs, cgroup, tracefs...) are not storage I/O: their
 * files are skipped by magic number. tmpfs, overlayfs, network and FUSE are kept.
 */
static __always_inline bool pseudo_fs(struct inode *inode)
{
	unsigned long magic = KR(struct super_block, INODE_SB(inode), s_magic);

	switch (magic) {
	case 0x9fa0:	 /* proc */
	case 0x62656572: /* sysfs */
	case 0x27e0eb:	 /* cgroup */
	case 0x63677270: /* cgroup2 */
	case 0x64626720: /* debugfs */
	case 0x74726163: /* tracefs */
	case 0x73636673: /* securityfs */
	case 0xcafe4a11: /* bpf */
	case 0x62656570: /* configfs */
	case 0x6165676c: /* pstore */
	case 0xde5e81e4: /* efivarfs */
		return true;
	default:
		return false;
	}
}

#define SB_KERNMOUNT (1UL << 22)

/*
 * The file of @task's descriptor @fd if its I/O can reach a disk: a regular file of a
 * file system that is not a pseudo one (nor, with @no_kernmount, mounted by the kernel
 * for itself), or a block device; NULL for anything else. Its inode in @inode, the
 * device (the file system's, or the block device's own) in @dev, whether it is a block
 * device in @blkdev.
 */
static __always_inline struct file *fd_disk_file(struct task_struct *task, long fd,
						 bool no_kernmount, struct inode **inode,
						 __u32 *dev, bool *blkdev)
{
	struct file *file = fd_file(task, fd);
	struct inode *ip;
	__u32 mode;

	if (!file)
		return NULL;
	ip = KR(struct file, file, f_inode);
	if (!ip)
		return NULL;
	mode = KR(struct inode, ip, i_mode) & S_IFMT;
	*blkdev = mode == S_IFBLK;
	if (*blkdev) {
		*dev = KR(struct inode, ip, i_rdev);
	} else {
		if (mode != S_IFREG || pseudo_fs(ip) ||
		    (no_kernmount &&
		     (KR(struct super_block, INODE_SB(ip), s_flags) & SB_KERNMOUNT)))
			return NULL;
		*dev = KR(struct super_block, INODE_SB(ip), s_dev);
	}
	*inode = ip;
	return file;
}

/*
 * File systems whose pages live in memory only (tmpfs and shmem, memfd, hugetlbfs,
 * ramfs, and other kernel-internal mounts): a bio carrying such a page is I/O from a
 * user buffer, never of that file.
 */
static __always_inline bool memory_fs(struct inode *inode)
{
	struct super_block *sb = INODE_SB(inode);

	if (!sb || KR(struct super_block, sb, s_flags) & SB_KERNMOUNT)
		return true;
	switch (KR(struct super_block, sb, s_magic)) {
	case 0x01021994: /* tmpfs */
	case 0x958458f6: /* hugetlbfs */
	case 0x858458f6: /* ramfs */
		return true;
	default:
		return false;
	}
}

#define BTRFS_SUPER_MAGIC	   0x9123683e
#define BTRFS_BTREE_INODE_OBJECTID 1

/* The identity of the file of @inode (a trusted BTF pointer): its key in the maps. */
static __always_inline struct file_key file_key_of(struct inode *inode)
{
	struct file_key k = {
		.dev = inode->i_sb->s_dev,
		.gen = inode->i_generation,
		.ino = inode->i_ino,
	};

	return k;
}

/*
 * An inode whose page cache is file system metadata although it is a regular file:
 * btrfs's btree inode (its extent buffers). Tests the inode number first, so other
 * files cost one compare (of a field the callers read anyway).
 */
static __always_inline bool metadata_inode(struct inode *inode)
{
	return KR(struct inode, inode, i_ino) == BTRFS_BTREE_INODE_OBJECTID &&
	       KR(struct super_block, INODE_SB(inode), s_magic) == BTRFS_SUPER_MAGIC;
}

/*
 * The regular file whose page cache @task dirties through @mapping (a typed pointer:
 * writeback_dirty_folio), or NULL: kernel threads re-dirty pages during writeback and
 * are never the source, and a file system's metadata is no process's data.
 */
static __always_inline struct inode *dirtied_inode(struct task_struct *task,
						   struct address_space *mapping)
{
	struct inode *host;

	if (task->flags & PF_KTHREAD || !mapping)
		return NULL;
	host = mapping->host;
	if (!host || (host->i_mode & S_IFMT) != S_IFREG || metadata_inode(host))
		return NULL;
	return host;
}

/* The head page of a compound page (the page itself otherwise). */
static __always_inline struct page *page_head(struct page *page)
{
#if HAVE_KPTR_CAST
	/* Typed, compound_head reads as the pointer it shares a union with. */
	void *head = (void *)page->compound_head;

	return pv(head) & 1 ? KPTR_AS(struct page, head - 1) : page;
#else
	__u64 head = BPF_CORE_READ(page, compound_head);

	return head & 1 ? (struct page *)(head - 1) : page;
#endif
}

/*
 * The mapping of a page cache page, or NULL for kernel memory and anonymous / KSM /
 * movable pages (the low bits of page->mapping tag those). Typed, or a number: KR().
 */
static __always_inline struct address_space *page_mapping(struct page *page)
{
	struct address_space *mapping;

	page = page_head(page);
	if (core_page_kernel_type(page))
		return NULL;
	mapping = KR(struct page, page, mapping);
	if (!mapping || (KLOW(mapping) & 3))
		return NULL;
	return mapping;
}

/* The inode whose page cache holds @page, or NULL (see page_mapping()). */
static __always_inline struct inode *page_inode(struct page *page)
{
	struct address_space *mapping = page_mapping(page);

	return mapping ? KR(struct address_space, mapping, host) : NULL;
}

/* Size of a page cache folio in bytes. */
static __always_inline __u64 folio_bytes(struct folio *folio, __u32 page_size)
{
	unsigned long fl = 0;

	/* core_folio_flags() written out: the verifier walks this copy in fewer steps. */
	bpf_probe_read_kernel(&fl, sizeof(fl), folio);
	if (!(fl & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return page_size;
	return core_large_folio_bytes(folio, page_size);
}

/* How to find the dentry given to vfs_dentry(). */
enum { VFS_FROM_DENTRY, VFS_FROM_FILE, VFS_FROM_INODE };

static __always_inline struct dentry *vfs_dentry(__u64 ptr, __u32 from)
{
	__u64 first;

	if (!ptr)
		return NULL;
	if (from == VFS_FROM_FILE)
		return BPF_CORE_READ((struct file *)ptr, f_path.dentry);
	if (from == VFS_FROM_INODE) {
		/* Any alias will do: hard links have several, all valid. */
		first = (__u64)BPF_CORE_READ((struct inode *)ptr, i_dentry.first);
		if (!first)
			return NULL;
		return (struct dentry *)(first - bpf_core_field_offset(struct dentry, d_u.d_alias));
	}
	return (struct dentry *)ptr;
}

/*
 * The inode's generation: a number the file system gives each new inode (ext4, xfs,
 * btrfs, tmpfs), so that a file created with the number of one deleted before is told
 * apart from it. Typed, or a number: KR().
 */
#define INODE_GEN(ip) ((__u32)KR(struct inode, ip, i_generation))

/* The generation of the inode found from @ptr (it tells a reused inode number apart). */
static __always_inline __u32 vfs_generation(__u64 ptr, __u32 from)
{
	struct inode *inode;

	if (from == VFS_FROM_FILE)
		inode = BPF_CORE_READ((struct file *)ptr, f_inode);
	else if (from == VFS_FROM_INODE)
		inode = (struct inode *)ptr;
	else
		inode = BPF_CORE_READ((struct dentry *)ptr, d_inode);
	return inode ? BPF_CORE_READ(inode, i_generation) : 0;
}

/*
 * A stamp of the dentries from @d up to its fs root: each one's address and sequence
 * count (d_seq), which the kernel bumps when it moves a dentry (rename) and when it
 * drops one or takes its inode away (unlink). A rename or unlink of the file or of any
 * directory above it changes the stamp; read before the names, so a rename during a
 * capture shows at the next check.
 */
static __always_inline __u64 vfs_path_stamp(struct dentry *d)
{
	struct dentry *parent;
	__u64 stamp = 0;
	int i;

	for (i = 0; i < VFS_PATH_DEPTH; i++) {
		stamp ^= (__u64)d + BPF_CORE_READ(d, d_seq.seqcount.sequence);
		stamp *= 0x9e3779b97f4a7c15ULL;
		stamp ^= stamp >> 29;
		parent = BPF_CORE_READ(d, d_parent);
		if (!parent || parent == d)
			break;
		d = parent;
	}
	return stamp;
}

/*
 * Writes the path of the dentry found from @ptr inside its file system into @buf
 * (VFS_PATH_BUF bytes): NUL-terminated components, leaf first. Sets *depth
 * (components) and *flags (enum vfs_path_flags). Returns 0, or -ENOENT if there is no
 * dentry. Not inlined: callers run it once per file, off their hot paths.
 */
static __noinline int vfs_path_walk(char *buf, __u32 *depth, __u32 *flags, __u64 ptr, __u32 from)
{
	struct dentry *d = vfs_dentry(ptr, from), *parent;
	__u32 pos = 0, n_depth = 0, fl = 0;
	const unsigned char *name;
	long n;
	int i;

	if (!d || !buf || !depth || !flags)
		return -2;
	if (!BPF_CORE_READ(d, d_hash.pprev) && BPF_CORE_READ(d, d_parent) != d)
		fl |= VFS_PATH_DELETED;
	for (i = 0; i < VFS_PATH_DEPTH; i++) {
		parent = BPF_CORE_READ(d, d_parent);
		if (!parent || parent == d)
			break;
		if (pos > VFS_PATH_BUF - VFS_PATH_NAME_MAX) {
			fl |= VFS_PATH_TRUNCATED;
			break;
		}
		name = BPF_CORE_READ(d, d_name.name);
		n = bpf_probe_read_kernel_str(&buf[pos], VFS_PATH_NAME_MAX, name);
		if (n <= 0 || n > VFS_PATH_NAME_MAX)
			break;
		pos += n;
		n_depth++;
		d = parent;
	}
	if (i == VFS_PATH_DEPTH)
		fl |= VFS_PATH_TRUNCATED;
	*depth = n_depth;
	*flags = fl;
	return 0;
}

/*
 * Whether the file of @dentry lies below the directory (@dev, @ino) of the same file
 * system, looking at most @max_depth parents up (bounded: deeper files do not match).
 * Mount points are not crossed: the directory must be in the file's own fs.
 */
static __always_inline bool vfs_under_dir(struct dentry *d, __u32 dev, __u64 ino, int max_depth)
{
	struct dentry *parent;
	struct inode *inode;
	int i;

	if (!d)
		return false;
	inode = BPF_CORE_READ(d, d_inode);
	if (!inode || BPF_CORE_READ(inode, i_sb, s_dev) != dev)
		return false;
	for (i = 0; i < max_depth; i++) {
		parent = BPF_CORE_READ(d, d_parent);
		if (!parent || parent == d)
			return false;
		if (BPF_CORE_READ(parent, d_inode, i_ino) == ino)
			return true;
		d = parent;
	}
	return false;
}

/*
 * The per-file path cache of a BPF command: (dev, generation, ino) -> struct file_path,
 * filled by vfs_path_capture(). Expand once per .bpf.c (maps live in each object).
 * Scratch buffers are per nesting level: a capture in process context can be
 * interrupted by a completion that captures another path on the same CPU.
 */
#define VFS_PATH_NEST 4
#define DEFINE_VFS_PATH_CACHE(nr_files)                                                    \
	DEFINE_MAP(paths, BPF_MAP_TYPE_LRU_HASH, struct file_key, struct file_path, nr_files); \
	DEFINE_MAP(path_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct file_path,           \
		   VFS_PATH_NEST);                                                          \
	DEFINE_MAP(path_nest, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u32, 1);                  \
                                                                                           \
	/*                                                                                 \
	 * Makes sure the paths map holds the path of file (@dev, @ino) as it is now: a   \
	 * cached path is checked against the dentries' stamp and captured again if the   \
	 * file or a directory above it was renamed or unlinked since. *@id gets the      \
	 * key's generation (low 32 bits) and the low 32 bits of the stamp of the path    \
	 * cached (high 32 bits: 0 if none), which tells user space when it changed.       \
	 * Returns 0 if a path is cached, -ENOSPC if the map refused it, -ENOENT if there  \
	 * was nothing to walk, -EINVAL without @id.                                      \
	 * A global function, verified once per program rather than at every call site   \
	 * and state (completions capture from inside bpf_loop callbacks): it takes no     \
	 * typed pointer, vfs_path_capture() gives it @ptr as a number.                    \
	 */                                                                                \
	__noinline int vfs_path_capture_addr(__u32 dev, __u64 ino, __u64 ptr, __u32 from,   \
					     __u64 *id)                                    \
	{                                                                                  \
		struct file_key fk = { .dev = dev, .ino = ino };                       \
		struct file_path *p, *cached;                                               \
		__u32 zero = 0, lvl;                                                       \
		struct dentry *d;                                                          \
		int ret = -ENOENT;                                                         \
		__u64 stamp;                                                               \
		__u32 *nest;                                                               \
                                                                                           \
		if (!id)                                                                   \
			return -EINVAL;                                                    \
		*id = 0;                                                                   \
		if (!ptr)                                                                  \
			return -ENOENT;                                                    \
		fk.gen = vfs_generation(ptr, from);                                        \
		*id = fk.gen;                                                              \
		cached = bpf_map_lookup_elem(&paths, &fk);                                 \
		d = vfs_dentry(ptr, from);                                                 \
		if (!d)                                                                    \
			return cached ? 0 : -ENOENT;                                       \
		stamp = vfs_path_stamp(d);                                                 \
		if (cached && cached->stamp == stamp) {                                    \
			*id |= stamp << 32;                                                \
			return 0;                                                          \
		}                                                                          \
		nest = bpf_map_lookup_elem(&path_nest, &zero);                             \
		if (!nest || *nest >= VFS_PATH_NEST)                                       \
			return cached ? 0 : -ENOENT;                                       \
		lvl = *nest;                                                               \
		*nest = lvl + 1;                                                           \
		p = bpf_map_lookup_elem(&path_scratch, &lvl);                              \
		/* A file is never its fs root: a walk of no component found nothing. */ \
		if (p && !vfs_path_walk(p->buf, &p->depth, &p->flags, ptr, from) &&       \
		    p->depth) {                                                            \
			p->stamp = stamp;                                                  \
			/* Several CPUs may capture at once: they write the same. */       \
			if (bpf_map_update_elem(&paths, &fk, p, BPF_ANY)) {                \
				ret = -ENOSPC;                                             \
			} else {                                                           \
				*id |= stamp << 32;                                        \
				ret = 0;                                                   \
			}                                                                  \
		}                                                                          \
		*nest = lvl;                                                               \
		return ret;                                                                \
	}                                                                                  \
                                                                                           \
	static __always_inline int vfs_path_capture(__u32 dev, __u64 ino, __u64 ptr,       \
						    __u32 from, __u64 *id)                 \
	{                                                                                  \
		return vfs_path_capture_addr(dev, ino, kaddr(ptr), from, id);              \
	}

#endif
