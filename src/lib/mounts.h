/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Mounts from /proc/self/mountinfo, to turn a path inside a file system (what the
 * kernel's dentries give) into the path a user types: mount point + the part of the
 * path below the mount's root.
 */
#ifndef IOSPAN_MOUNTS_H
#define IOSPAN_MOUNTS_H

#include <stddef.h>

struct mount_entry {
	unsigned int major, minor;
	char *root; /* path inside the fs that is mounted ("/" usually, or a bind source) */
	char *mnt;  /* mount point */
	char *fstype;
};

struct mounts {
	struct mount_entry *v;
	size_t nr;
};

/* Loads @path (NULL: /proc/self/mountinfo). */
int mounts_load(const char *path, struct mounts *m);
void mounts_free(struct mounts *m);

/*
 * The user-visible path of @fs_path (absolute, inside the fs on MAJ:MIN): through the
 * mount whose root is the longest prefix of it (the first such mount if several).
 * -ENOENT if the fs is not mounted where this process can see it.
 */
int mounts_join(const struct mounts *m, unsigned int major, unsigned int minor, const char *fs_path,
		char *out, size_t len);

#endif
