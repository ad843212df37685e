/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Mounts from /proc/self/mountinfo, its one reader: to turn a path inside a file
 * system (what the kernel's dentries give) into the path a user types (mount point +
 * the part of the path below the mount's root), and to find where a file system type
 * is mounted (cgroup hierarchies).
 */
#ifndef IOSPAN_MOUNTS_H
#define IOSPAN_MOUNTS_H

#include <stddef.h>
#include <stdint.h>

struct mount_entry {
	unsigned int id;	   /* mount ID (statx STATX_MNT_ID) */
	unsigned int major, minor; /* the super block's s_dev: anonymous (0:N) for btrfs */
	char *root; /* path inside the fs that is mounted ("/" usually, or a bind source) */
	char *mnt;  /* mount point */
	char *fstype;
	char *source; /* "/dev/loop0", or whatever the fs was mounted from */
	char *super_opts; /* the super block's options: "rw,blkio" for a cgroup v1 hierarchy */
};

struct mounts {
	struct mount_entry *v;
	size_t nr;
};

/* Loads @path (NULL: /proc/self/mountinfo). */
int mounts_load(const char *path, struct mounts *m);
void mounts_free(struct mounts *m);

/*
 * The mount point of the first mount of @fstype in @mountinfo (NULL:
 * /proc/self/mountinfo) whose super options include @super_opt (NULL: any), into
 * @buf: a cgroup v2 hierarchy ("cgroup2", NULL), a cgroup v1 controller's ("cgroup",
 * "blkio"). -ENOENT if there is none, -ENAMETOOLONG if @len is too short.
 */
int mounts_find_fs(const char *mountinfo, const char *fstype, const char *super_opt, char *buf,
		   size_t len);

/*
 * The user-visible path of @fs_path (absolute, inside the fs on MAJ:MIN): through the
 * mount whose root is the longest prefix of it (the first such mount if several).
 * -ENOENT if the fs is not mounted where this process can see it.
 */
int mounts_join(const struct mounts *m, unsigned int major, unsigned int minor, const char *fs_path,
		char *out, size_t len);

/*
 * The kernel dev_t (20 minor bits) of the super block of the file system holding
 * @path, as the BPF programs read it (inode->i_sb->s_dev) and mountinfo shows it. That
 * is stat()'s st_dev except on btrfs, whose st_dev is the subvolume's own anonymous
 * device. Found through the mount ID; st_dev if the kernel has no STATX_MNT_ID.
 */
int mounts_path_dev(const char *path, uint32_t *dev);

/*
 * The block devices (kernel dev_t) that hold the file system mounted as @e: none if its
 * s_dev is a block device already (ext4, xfs); for an anonymous s_dev (btrfs), the
 * device it was mounted from and every other device of the same btrfs (from
 * /sys/fs/btrfs/<fsid>/devices). Fills up to @max; returns how many.
 */
int mounts_backing_devs(const struct mount_entry *e, uint32_t *devs, int max);

/*
 * The block device to name for files of the file system on @dev (kernel dev_t): @dev
 * itself unless it is anonymous, else its first backing device (0 if unknown).
 */
uint32_t mounts_fs_disk(const struct mounts *m, uint32_t dev);

/*
 * Undoes mountinfo's escapes in place: space, tab, newline and backslash are written as
 * \ooo (three octal digits of a byte, so the first is 0-3).
 */
void mounts_unescape(char *s);

#endif
