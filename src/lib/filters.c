// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "cgroups.h"
#include "diskstats.h"
#include "err.h"
#include "filters.h"
#include "fspath.h"
#include "mounts.h"

/* Max. devices of one -d (a disk and its partitions) and of one multi-device fs. */
#define FILTER_MAX_DEVS 256
#define FILTER_FS_DEVS	64

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
