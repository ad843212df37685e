/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Paths captured in the kernel (struct file_path: dentry names, leaf first, inside the
 * file's own file system, keyed by (dev, generation, ino) in a BPF map) turned into the
 * paths a user types, and kept right when files are renamed or deleted: each one is
 * checked against the file itself (its file handle) when it is shown.
 */
#ifndef IOSPAN_FSPATH_H
#define IOSPAN_FSPATH_H

#include <stddef.h>
#include <stdint.h>

#include "common_abi.h"
#include "mounts.h"

/* The mark of a deleted file, as /proc/PID/fd shows it. */
#define FSPATH_DELETED " (deleted)"

/* "/a/b/c" inside the fs ("..." in front if truncated, "/" for the root). */
void fspath_from_components(const struct file_path *p, char *out, size_t len);

/* Reads the captured path of @key into @p: 0, or -ENOENT if there is none. */
typedef int (*fspath_lookup_fn)(void *arg, const struct file_key *key, struct file_path *p);

/* The lookup in a BPF paths map (DEFINE_VFS_PATH_CACHE): @arg is FSPATH_MAP_ARG(fd). */
int fspath_lookup_bpf_map(void *arg, const struct file_key *key, struct file_path *p);
#define FSPATH_MAP_ARG(fd) ((void *)(intptr_t)(fd))

struct fspath_cache;

/* @lookup reads the BPF paths map (called with @arg). */
int fspath_cache_new(fspath_lookup_fn lookup, void *arg, struct fspath_cache **out);
void fspath_cache_free(struct fspath_cache *c);

/* Starts a report: fspath_current() reads and checks each path again, once. */
void fspath_cache_round(struct fspath_cache *c);

/*
 * The path of file (@dev, @gen, @ino) as it is now, or NULL if it was never captured:
 * the latest capture, "<mount>/<path>" (or "MAJ:MIN:<path>" if the fs is not mounted
 * where we can see it), checked once per round against the file itself. A file whose
 * captured name no longer leads to it is looked up by its file handle: its new name,
 * or its last name marked " (deleted)" once it is unlinked; where the file system has
 * no handles we know, " (moved or deleted)".
 */
const char *fspath_current(struct fspath_cache *c, uint32_t dev, uint32_t gen, uint64_t ino);

/*
 * The path of a file as captured with @id (a trace record's: generation and stamp,
 * see vfs_path_capture()), or NULL: the map is read again only when the stamp changed.
 * Not checked against the file: the kernel captured it when the request ended.
 */
const char *fspath_of_id(struct fspath_cache *c, uint32_t dev, uint64_t ino, uint64_t id);

/*
 * The block device whose name the files of the file system on @dev go under: @dev
 * unless anonymous (btrfs), else its first backing device from the mount table
 * (re-read once if unknown); 0 if there is none.
 */
uint32_t fspath_cache_fs_disk(struct fspath_cache *c, uint32_t dev);

#endif
