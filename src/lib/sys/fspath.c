// SPDX-License-Identifier: GPL-2.0
/*
 * Captured dentry paths to user-visible paths, cached per (dev, generation, ino) and
 * checked against the files themselves through their file handles: name_to_handle_at()
 * of the name says whether it still leads to this very inode (number and generation),
 * open_by_handle_at() finds the inode when it does not, and /proc/self/fd names it as
 * the kernel does, " (deleted)" included. Handles are built here for the layouts of
 * ext4, xfs, btrfs and tmpfs, which are stable: NFS clients keep handles across
 * server reboots. Needs CAP_DAC_READ_SEARCH, which the tracers run with.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "array.h"
#include "fspath.h"

#define BUCKETS 4096

/* How a file system lays out a file's handle, for those we can build one for. */
enum fh_layout {
	FH_NONE,      /* no handles, or a layout not known here: names checked by stat */
	FH_INO32_GEN, /* type 1, {u32 ino, u32 gen}: ext4, xfs with 32-bit inode numbers */
	FH_SHMEM,     /* type 1, {u32 gen, u32 ino low, u32 ino high}: tmpfs */
	FH_XFS64,     /* type 0x81, {u64 ino, u32 gen}: xfs */
	FH_BTRFS,     /* type 0x4d, {u64 objectid, u64 root, u32 gen}: btrfs */
};

/* A file system's handle layout, found from its mount point's own handle. */
struct fs_handles {
	uint32_t dev;
	bool local; /* names may be checked: no call can hang on a server */
	enum fh_layout layout;
	int type;
	uint64_t root; /* btrfs: the subvolume of the mount (files of others are not told) */
	char *mnt;     /* opened only while in use: an open fd would keep it from unmounting */
	struct fs_handles *next;
};

union fh_buf {
	struct file_handle h;
	char raw[sizeof(struct file_handle) + MAX_HANDLE_SZ];
};

struct entry {
	uint32_t dev, gen;
	uint64_t ino;
	uint64_t stamp; /* of the capture resolved into captured */
	uint32_t flags; /* of that capture (enum file_path_flags) */
	uint64_t round; /* when last read and checked (fspath_current) */
	bool gone;	/* its inode is freed: deleted for good, never checked again */
	char *captured; /* the capture, or the name the file was last found under */
	char *path;	/* what is shown */
	struct entry *next;
};

struct fspath_cache {
	fspath_lookup_fn lookup;
	void *lookup_arg;
	struct mounts mounts;
	int reloaded; /* the mount table was re-read for an unknown device */
	uint64_t round;
	struct fs_handles *fs;
	struct entry *b[BUCKETS];
};

void fspath_from_components(const struct file_path *p, char *out, size_t len)
{
	const char *comp[FILE_PATH_DEPTH];
	size_t pos = 0, used = 0, n;
	unsigned int i, depth = 0;

	if (!len)
		return;
	while (depth < p->depth && depth < FILE_PATH_DEPTH && pos < FILE_PATH_BUF) {
		comp[depth] = p->buf + pos;
		n = strnlen(p->buf + pos, FILE_PATH_BUF - pos);
		pos += n + 1;
		depth++;
	}
	out[0] = '\0';
	if (p->flags & FILE_PATH_TRUNCATED)
		used = snprintf(out, len, "...");
	for (i = depth; i > 0 && used < len; i--)
		used += snprintf(out + used, len - used, "/%s", comp[i - 1]);
	if (!depth && used < len)
		snprintf(out + used, len - used, "/");
}

int fspath_lookup_bpf_map(void *arg, const struct file_key *key, struct file_path *p)
{
	return bpf_map_lookup_elem((int)(intptr_t)arg, key, p) ? -errno : 0;
}

int fspath_cache_new(fspath_lookup_fn lookup, void *arg, struct fspath_cache **out)
{
	struct fspath_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->lookup = lookup;
	c->lookup_arg = arg;
	c->round = 1;
	/* Without a mount table paths stay relative to their device: not fatal. */
	mounts_load(NULL, &c->mounts);
	*out = c;
	return 0;
}

void fspath_cache_free(struct fspath_cache *c)
{
	struct fs_handles *f, *fnext;
	struct entry *e, *next;
	int i;

	if (!c)
		return;
	for (i = 0; i < BUCKETS; i++) {
		for (e = c->b[i]; e; e = next) {
			next = e->next;
			free(e->captured);
			free(e->path);
			free(e);
		}
	}
	for (f = c->fs; f; f = fnext) {
		fnext = f->next;
		free(f->mnt);
		free(f);
	}
	mounts_free(&c->mounts);
	free(c);
}

void fspath_cache_round(struct fspath_cache *c)
{
	c->round++;
}

static void reload_mounts(struct fspath_cache *c)
{
	mounts_free(&c->mounts);
	mounts_load(NULL, &c->mounts);
	c->reloaded = 1;
}

/* "<mount>/<path>" of a capture, or "MAJ:MIN:<path>"; no mark. NULL without memory. */
static char *join_mount(struct fspath_cache *c, uint32_t dev, const struct file_path *p)
{
	char fs_path[PATH_MAX], full[PATH_MAX + 32];
	int err;

	fspath_from_components(p, fs_path, sizeof(fs_path));
	err = mounts_join(&c->mounts, KDEV_MAJOR(dev), KDEV_MINOR(dev), fs_path, full,
			  sizeof(full));
	if (err == -ENOENT && !c->reloaded) {
		/* Mounted after we started: read mountinfo again, once. */
		reload_mounts(c);
		err = mounts_join(&c->mounts, KDEV_MAJOR(dev), KDEV_MINOR(dev), fs_path, full,
				  sizeof(full));
	}
	if (err)
		snprintf(full, sizeof(full), "%u:%u:%s", KDEV_MAJOR(dev), KDEV_MINOR(dev), fs_path);
	return strdup(full);
}

static int set_str(char **dst, const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, "%s%s", a, b ? b : "") < 0)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* ------------------------------------------------------------------ handles */

static enum fh_layout layout_of(const struct file_handle *h, uint64_t *root)
{
	if (h->handle_type == 1 && h->handle_bytes == 8)
		return FH_INO32_GEN;
	if (h->handle_type == 1 && h->handle_bytes == 12)
		return FH_SHMEM;
	if (h->handle_type == 0x81 && h->handle_bytes == 12)
		return FH_XFS64;
	if (h->handle_type == 0x4d && h->handle_bytes == 20) {
		memcpy(root, h->f_handle + 8, sizeof(*root));
		return FH_BTRFS;
	}
	return FH_NONE;
}

/*
 * Whether a file system keeps its names locally: a stat(2) on a network or FUSE file
 * system can wait for a server for ever, and a report must not.
 */
static bool local_fs(const char *fstype)
{
	static const char *const local[] = {
		"ext2",	   "ext3",     "ext4",	 "xfs",	  "btrfs",     "tmpfs",
		"f2fs",	   "vfat",     "msdos",	 "exfat", "ntfs3",     "jfs",
		"overlay", "bcachefs", "zfs",	 "udf",	  "iso9660",   "squashfs",
		"erofs",   "hfsplus",  "nilfs2", "ramfs", "hugetlbfs",
	};
	size_t i;

	for (i = 0; fstype && i < ARRAY_SIZE(local); i++)
		if (!strcmp(fstype, local[i]))
			return true;
	return false;
}

/* The handle layout of the file system on @dev (looked at once). */
static struct fs_handles *fs_handles_of(struct fspath_cache *c, uint32_t dev)
{
	const struct mount_entry *m = NULL;
	struct fs_handles *f;
	union fh_buf fh;
	size_t i;
	int mnt_id;

	for (f = c->fs; f; f = f->next)
		if (f->dev == dev)
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev = dev;
	for (i = 0; i < c->mounts.nr; i++) {
		if (c->mounts.v[i].major != KDEV_MAJOR(dev) ||
		    c->mounts.v[i].minor != KDEV_MINOR(dev))
			continue;
		if (!m || !strcmp(c->mounts.v[i].root, "/"))
			m = &c->mounts.v[i];
	}
	f->local = m && local_fs(m->fstype);
	fh.h.handle_bytes = MAX_HANDLE_SZ;
	/* The mount point must be that mount, not one mounted over it. */
	if (f->local && !name_to_handle_at(AT_FDCWD, m->mnt, &fh.h, &mnt_id, AT_SYMLINK_FOLLOW) &&
	    (unsigned int)mnt_id == m->id) {
		f->layout = layout_of(&fh.h, &f->root);
		f->type = fh.h.handle_type;
		f->mnt = strdup(m->mnt);
		if (!f->mnt)
			f->layout = FH_NONE;
	}
	f->next = c->fs;
	c->fs = f;
	return f;
}

/* The handle of inode (@ino, @gen) of @f, or false if it has none we can build. */
static bool fh_build(const struct fs_handles *f, uint64_t ino, uint32_t gen, union fh_buf *fh)
{
	unsigned char *b = fh->h.f_handle;
	uint32_t w[3];

	fh->h.handle_type = f->type;
	switch (f->layout) {
	case FH_INO32_GEN:
		if (ino > UINT32_MAX)
			return false;
		w[0] = ino;
		w[1] = gen;
		fh->h.handle_bytes = 8;
		memcpy(b, w, 8);
		return true;
	case FH_SHMEM:
		w[0] = gen;
		w[1] = ino;
		w[2] = ino >> 32;
		fh->h.handle_bytes = 12;
		memcpy(b, w, 12);
		return true;
	case FH_XFS64:
		fh->h.handle_bytes = 12;
		memcpy(b, &ino, 8);
		memcpy(b + 8, &gen, 4);
		return true;
	case FH_BTRFS:
		fh->h.handle_bytes = 20;
		memcpy(b, &ino, 8);
		memcpy(b + 8, &f->root, 8);
		memcpy(b + 16, &gen, 4);
		return true;
	default:
		return false;
	}
}

/* Whether @path names the inode of handle @want (not following a last symlink). */
static bool names_handle(const char *path, const union fh_buf *want)
{
	union fh_buf fh;
	int mnt_id;

	fh.h.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, path, &fh.h, &mnt_id, 0))
		return false;
	return fh.h.handle_type == want->h.handle_type &&
	       fh.h.handle_bytes == want->h.handle_bytes &&
	       !memcmp(fh.h.f_handle, want->h.f_handle, fh.h.handle_bytes);
}

/* Whether @path names inode @ino of @dev, as far as stat tells (no generation). */
static bool names_inode(const char *path, uint32_t dev, uint64_t ino)
{
	struct stat st;

	if (stat(path, &st) || st.st_ino != ino)
		return false;
	/* An anonymous device (btrfs, overlayfs) is not what stat reports. */
	return !KDEV_MAJOR(dev) ||
	       (major(st.st_dev) == KDEV_MAJOR(dev) && minor(st.st_dev) == KDEV_MINOR(dev));
}

/*
 * Finds where the file of @fh is now, knowing @e->captured no longer leads to it: its
 * new name (kept as e->captured), or its last name marked deleted.
 */
static int find_moved(struct fs_handles *f, const union fh_buf *fh, struct entry *e)
{
	char link[PATH_MAX + 16], proc[64];
	int mfd, fd, err = 0;
	struct stat st;
	ssize_t n;

	mfd = open(f->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return set_str(&e->path, e->captured, " (moved or deleted)");
	fd = open_by_handle_at(mfd, (struct file_handle *)&fh->h, O_PATH | O_CLOEXEC);
	close(mfd);
	if (fd < 0) {
		if (errno != ESTALE && errno != ENOENT)
			return set_str(&e->path, e->captured, " (moved or deleted)");
		e->gone = true; /* no such inode any more */
		return set_str(&e->path, e->captured, FSPATH_DELETED);
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	if (fstat(fd, &st)) {
		err = set_str(&e->path, e->captured, " (moved or deleted)");
	} else if (!st.st_nlink) {
		/* Unlinked but open somewhere: the kernel's name for it, if it has one. */
		n = (ssize_t)strlen(link) - (ssize_t)strlen(FSPATH_DELETED);
		if (link[0] == '/' && n > 1 && !strcmp(link + n, FSPATH_DELETED))
			err = set_str(&e->path, link, NULL);
		else
			err = set_str(&e->path, e->captured, FSPATH_DELETED);
	} else if (link[0] == '/' && names_handle(link, fh)) {
		err = set_str(&e->captured, link, NULL);
		if (!err)
			err = set_str(&e->path, link, NULL);
	} else {
		/* Renamed, and no longer in the dentry cache: its new name is unknown. */
		err = set_str(&e->path, e->captured, " (moved)");
	}
	close(fd);
	return err;
}

/* Sets e->path to where the file of @e is now, starting from e->captured. */
static int check_entry(struct fspath_cache *c, struct entry *e)
{
	struct fs_handles *f;
	union fh_buf fh;

	f = fs_handles_of(c, e->dev);
	/* Not mounted here, or on a network or FUSE file system: as captured. */
	if (e->captured[0] != '/' || !f || !f->local)
		return set_str(&e->path, e->captured,
			       e->flags & FILE_PATH_DELETED ? FSPATH_DELETED : NULL);
	if (f && fh_build(f, e->ino, e->gen, &fh)) {
		if (names_handle(e->captured, &fh))
			return set_str(&e->path, e->captured, NULL);
		return find_moved(f, &fh, e);
	}
	if (names_inode(e->captured, e->dev, e->ino))
		return set_str(&e->path, e->captured, NULL);
	return set_str(&e->path, e->captured,
		       e->flags & FILE_PATH_DELETED ? FSPATH_DELETED : " (moved or deleted)");
}

/* ------------------------------------------------------------------ the cache */

static unsigned int hash(uint32_t dev, uint32_t gen, uint64_t ino)
{
	uint64_t h = (ino * 0x9e3779b97f4a7c15ULL) ^ dev ^ ((uint64_t)gen << 20);

	return (h >> 32 ^ h) % BUCKETS;
}

static struct entry *entry_get(struct fspath_cache *c, uint32_t dev, uint32_t gen, uint64_t ino)
{
	unsigned int h = hash(dev, gen, ino);
	struct entry *e;

	for (e = c->b[h]; e; e = e->next)
		if (e->dev == dev && e->gen == gen && e->ino == ino)
			return e;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->dev = dev;
	e->gen = gen;
	e->ino = ino;
	e->next = c->b[h];
	c->b[h] = e;
	return e;
}

/* Reads the capture of @e from the map; 1 if it changed, 0 if not, or -errno. */
static int read_capture(struct fspath_cache *c, struct entry *e)
{
	struct file_key k = {.dev = e->dev, .gen = e->gen, .ino = e->ino};
	struct file_path p;
	char *s;

	if (c->lookup(c->lookup_arg, &k, &p))
		return 0; /* evicted, or never captured: keep what we have */
	if (e->captured && p.stamp == e->stamp)
		return 0;
	s = join_mount(c, e->dev, &p);
	if (!s)
		return -ENOMEM;
	free(e->captured);
	e->captured = s;
	e->stamp = p.stamp;
	e->flags = p.flags;
	return 1;
}

const char *fspath_current(struct fspath_cache *c, uint32_t dev, uint32_t gen, uint64_t ino)
{
	struct entry *e = entry_get(c, dev, gen, ino);

	if (!e)
		return NULL;
	if (e->round == c->round || e->gone)
		return e->path;
	e->round = c->round;
	if (read_capture(c, e) < 0 || !e->captured)
		return e->path;
	if (check_entry(c, e))
		return NULL;
	return e->path;
}

const char *fspath_of_id(struct fspath_cache *c, uint32_t dev, uint64_t ino, uint64_t id)
{
	struct entry *e = entry_get(c, dev, (uint32_t)id, ino);
	int changed;

	if (!e)
		return NULL;
	if (e->path && (uint32_t)e->stamp == (uint32_t)(id >> 32))
		return e->path;
	changed = read_capture(c, e);
	if (changed > 0 || (!changed && e->captured && !e->path)) {
		if (set_str(&e->path, e->captured,
			    e->flags & FILE_PATH_DELETED ? FSPATH_DELETED : NULL))
			return NULL;
	}
	return e->path;
}

uint32_t fspath_cache_fs_disk(struct fspath_cache *c, uint32_t dev)
{
	uint32_t disk = mounts_fs_disk(&c->mounts, dev);

	if (!disk && !c->reloaded) {
		reload_mounts(c);
		disk = mounts_fs_disk(&c->mounts, dev);
	}
	return disk;
}
