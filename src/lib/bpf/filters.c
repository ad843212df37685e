// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/fs.h>
#include <bpf/bpf.h>

#include "cgroups.h"
#include "diskstats.h"
#include "err.h"
#include "filters.h"
#include "args.h"
#include "disks.h"
#include "fspath.h"
#include "mounts.h"
#include "probe.h"

/* Max. devices of one -d (a disk and its partitions) and of one multi-device fs. */
#define FILTER_MAX_DEVS 256
#define FILTER_FS_DEVS	64

static int args_disk(const char *cmd, const char *arg, struct disk *disk, bool *have)
{
	if (*have)
		return fail_usage("-d/--disk given twice: iospan %s follows one disk, or every "
				  "disk when -d is not given",
				  cmd);
	if (disk_lookup(arg, disk))
		return fail_usage("unknown disk '%s': give a block device such as sda, "
				  "/dev/loop0 or 7:0 (see /proc/diskstats)",
				  arg);
	*have = true;
	return 0;
}

static int args_cgroup(const char *arg, char *dir, size_t dir_len, char *rel, size_t rel_len,
		       bool *have)
{
	char root[PATH_MAX];
	int ret;

	ret = args_once("--cgroup", have);
	if (ret)
		return ret;
	if (!*arg)
		return fail_usage("--cgroup needs a path: give a cgroup v2 path, or '/' for the "
				  "root (every process)");
	if (probe_cgroup2_mount(root, sizeof(root)))
		return fail_usage(
			"--cgroup needs cgroup v2, and no cgroup2 file system is mounted");
	if (cgroup_resolve(root, arg, dir, dir_len, rel, rel_len))
		return fail_usage("unknown cgroup '%s': give a cgroup v2 path below %s", arg, root);
	return 0;
}

static int args_task_id(const char *arg, const char *what, uint32_t *out)
{
	char path[64];
	uint64_t v;

	if (parse_u64_range(arg, 1, INT32_MAX, &v))
		return fail_usage("invalid %s '%s': give a positive number", what, arg);
	snprintf(path, sizeof(path), "/proc/%" PRIu64, v);
	if (access(path, F_OK))
		return fail_usage("no %s %" PRIu64 " (see 'ps -eL')",
				  !strcmp(what, "pid") ? "process with pid" : "thread with tid", v);
	*out = v;
	return 0;
}

static int args_fs_object(const char *opt, const char *arg, bool dir, uint32_t *dev, uint64_t *ino)
{
	struct stat st;

	if (stat(arg, &st))
		return fail_usage("%s '%s': %s", opt, arg, strerror(errno));
	if (dir && !S_ISDIR(st.st_mode))
		return fail_usage("%s '%s' is not a directory", opt, arg);
	if (!dir && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return fail_usage("%s '%s' is not a regular file or block device", opt, arg);
	if (!dir && S_ISBLK(st.st_mode)) {
		*dev = KDEV(major(st.st_rdev), minor(st.st_rdev));
	} else if (mounts_path_dev(arg, dev)) {
		/* The super block's dev, not st_dev: they differ on btrfs. */
		*dev = KDEV(major(st.st_dev), minor(st.st_dev));
	}
	*ino = st.st_ino;
	return 0;
}

/*
 * File systems whose s_dev is anonymous (btrfs) name their files by it, not by the
 * disk their bios go to: add those stored on one of @devs, so their FS events pass.
 */
static int add_anon_fs(int map_fd, const uint32_t *devs, size_t nr)
{
	uint32_t back[FILTER_FS_DEVS], dev;
	struct mounts m;
	uint8_t one = 1;
	size_t i, j;
	int n, k, err = 0;

	if (mounts_load(NULL, &m))
		return 0; /* no mount table: block devices only */
	for (i = 0; !err && i < m.nr; i++) {
		n = mounts_backing_devs(&m.v[i], back, FILTER_FS_DEVS);
		for (k = 0; k < n; k++) {
			for (j = 0; j < nr && devs[j] != back[k]; j++)
				;
			if (j < nr)
				break;
		}
		if (k == n)
			continue;
		dev = KDEV(m.v[i].major, m.v[i].minor);
		err = bpf_map_update_elem(map_fd, &dev, &one, BPF_ANY);
	}
	mounts_free(&m);
	return err;
}

int filter_map_add_disk(int map_fd, const struct disk *disk)
{
	uint32_t devs[FILTER_MAX_DEVS];
	struct ds_snapshot ds;
	uint8_t one = 1;
	struct disk d;
	size_t i, nr = 0;
	int err;

	devs[nr++] = KDEV(disk->major, disk->minor);
	err = bpf_map_update_elem(map_fd, &devs[0], &one, BPF_ANY);
	if (err)
		return err;
	if (!disk->partition) {
		ds_snapshot_init(&ds);
		err = ds_read("/proc/diskstats", &ds);
		for (i = 0; !err && i < ds.nr && nr < FILTER_MAX_DEVS; i++) {
			const struct ds_dev *e = &ds.devs[i];

			if (!e->partition || disk_from_devnum(e->major, e->minor, &d) ||
			    d.disk_major != disk->major || d.disk_minor != disk->minor)
				continue;
			devs[nr] = KDEV(e->major, e->minor);
			err = bpf_map_update_elem(map_fd, &devs[nr], &one, BPF_ANY);
			nr++;
		}
		ds_snapshot_free(&ds);
		if (err)
			return err;
	}
	return add_anon_fs(map_fd, devs, nr);
}

int filter_map_add_cgroup_tree(int map_fd, const char *dir)
{
	uint64_t *ids = NULL;
	size_t nr = 0, i;
	uint8_t one = 1;
	int err;

	err = cgroup_subtree_ids(dir, &ids, &nr);
	if (err)
		return fail(err, "cannot list the cgroups below %s: %s", dir, strerror(-err));
	if (nr > FILTER_MAX_CGROUPS)
		warn("%zu cgroups below %s: only the first %d are followed", nr, dir,
		     FILTER_MAX_CGROUPS);
	for (i = 0; i < nr && i < FILTER_MAX_CGROUPS; i++) {
		err = bpf_map_update_elem(map_fd, &ids[i], &one, BPF_ANY);
		if (err) {
			err = fail(err, "cannot set the cgroup filter: %s", strerror(-err));
			break;
		}
	}
	free(ids);
	return err;
}

int filter_maps_fill(int devs_fd, const struct disk *disk, int cgroups_fd, const char *cgroup_dir)
{
	int err;

	if (disk) {
		err = filter_map_add_disk(devs_fd, disk);
		if (err)
			return fail(err, "cannot set the disk filter: %s", strerror(-err));
	}
	if (cgroup_dir)
		return filter_map_add_cgroup_tree(cgroups_fd, cgroup_dir);
	return 0;
}

/*
 * The inode generation of the regular file at @path (FS_IOC_GETVERSION: ext4, xfs,
 * btrfs), into *@gen: 0, or -errno where the file system does not say.
 */
static int file_generation(const char *path, uint32_t *gen)
{
	struct stat st;
	int fd, v, err = 0;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -ENOTTY;
	else if (ioctl(fd, FS_IOC_GETVERSION, &v))
		err = -errno;
	else
		*gen = (uint32_t)v;
	close(fd);
	return err;
}

static int parse_one(const char *cmd, int opt, const char *arg, struct filter_opts *f)
{
	struct target_filter *tf = &f->tf;
	uint64_t ino = 0;
	struct stat st;
	int err;

	switch (opt) {
	case 'p':
		return args_once("-p/--pid", &f->have_pid) ?: args_task_id(arg, "pid", &tf->pid);
	case FILTER_OPT_TID:
		return args_once("--tid", &f->have_tid) ?: args_task_id(arg, "tid", &tf->tid);
	case FILTER_OPT_COMM: {
		bool seen = tf->comm_on;

		err = args_once("--comm", &seen);

		if (err)
			return err;
		if (!*arg || strlen(arg) >= FILTER_COMM_LEN)
			return fail_usage("invalid --comm '%s': give a thread name of 1 to %d "
					  "characters",
					  arg, FILTER_COMM_LEN - 1);
		strcpy(tf->comm, arg);
		tf->comm_on = 1;
		return 0;
	}
	case FILTER_OPT_CGROUP:
		err = args_cgroup(arg, f->cgroup_dir, sizeof(f->cgroup_dir), f->cgroup_rel,
				  sizeof(f->cgroup_rel), &f->have_cgroup);
		tf->cgroups = f->have_cgroup;
		return err;
	case FILTER_OPT_FILE:
		err = args_once("--file", &f->have_file) ?:
			      args_fs_object("--file", arg, false, &tf->file_dev, &ino);
		tf->file_ino = ino;
		tf->file_gen_on = !err && !file_generation(arg, &tf->file_gen);
		f->file_blk = !err && !stat(arg, &st) && S_ISBLK(st.st_mode);
		f->file_arg = arg;
		return err;
	case FILTER_OPT_DIR:
		err = args_once("--dir", &f->have_dir) ?:
			      args_fs_object("--dir", arg, true, &tf->dir_dev, &ino);
		tf->dir_ino = ino;
		f->dir_arg = arg;
		return err;
	case 'd':
		err = args_disk(cmd, arg, &f->disk, &f->have_disk);
		tf->devs = f->have_disk;
		return err;
	default:
		return 1;
	}
}

int filter_parse_opt(const char *cmd, int opt, const char *arg, void *filter_opts)
{
	struct filter_opts *f = filter_opts;
	struct target_filter *tf = &f->tf;
	int ret = parse_one(cmd, opt, arg, f);

	/* What the programs test first: whether any filter of each kind is set. */
	tf->proc_on = tf->pid || tf->tid || tf->comm_on || tf->cgroups;
	tf->file_on = tf->file_dev || tf->dir_dev;
	return ret;
}

int filter_maps_fill_opts(int devs_fd, int cgroups_fd, const struct filter_opts *f)
{
	return filter_maps_fill(devs_fd, filter_opts_disk(f), cgroups_fd,
				filter_opts_cgroup_dir(f));
}
