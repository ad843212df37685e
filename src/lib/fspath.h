/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Paths captured in the kernel (struct top_path: dentry names, leaf first, inside the
 * file's own file system) turned into the paths a user types, with a cache keyed by
 * (dev, ino). The mount table is re-read once when a device is not found in it.
 */
#ifndef IOSPAN_FSPATH_H
#define IOSPAN_FSPATH_H

#include <stddef.h>
#include <stdint.h>

#include "iospan_types.h"
#include "mounts.h"

/* Kernel dev_t (20 minor bits), as the BPF programs store it. */
#define KDEV_MAJOR(d) ((unsigned int)((d) >> 20))
#define KDEV_MINOR(d) ((unsigned int)((d)&0xfffff))
#define KDEV(ma, mi)  ((uint32_t)(((ma) << 20) | (mi)))

/* "/a/b/c" inside the fs ("..." in front if truncated, "/" for the root). */
void fspath_from_components(const struct top_path *p, char *out, size_t len);

struct fspath_cache;

int fspath_cache_new(struct fspath_cache **out);
void fspath_cache_free(struct fspath_cache *c);
/* The cached path of (dev, ino), or NULL. */
const char *fspath_cache_get(struct fspath_cache *c, uint32_t dev, uint64_t ino);
/*
 * Resolves @p (captured for a file on @dev) through the mount table, caches and
 * returns it: "<mount>/<path>", or "MAJ:MIN:<path>" if the fs is not mounted where we
 * can see it; " (deleted)" is appended for unlinked files. NULL only without memory.
 */
const char *fspath_cache_put(struct fspath_cache *c, uint32_t dev, uint64_t ino,
			     const struct top_path *p);

/*
 * The block device whose name the files of the file system on @dev go under: @dev
 * unless anonymous (btrfs), else its first backing device from the mount table
 * (re-read once if unknown); 0 if there is none.
 */
uint32_t fspath_cache_fs_disk(struct fspath_cache *c, uint32_t dev);

#endif
