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

int filter_map_add_disk(int map_fd, const struct disk *disk)
{
	struct ds_snapshot ds;
	uint32_t dev = KDEV(disk->major, disk->minor);
	uint8_t one = 1;
	struct disk d;
	size_t i;
	int err;

	err = bpf_map_update_elem(map_fd, &dev, &one, BPF_ANY);
	if (err || disk->partition)
		return err;
	ds_snapshot_init(&ds);
	err = ds_read("/proc/diskstats", &ds);
	for (i = 0; !err && i < ds.nr; i++) {
		const struct ds_dev *e = &ds.devs[i];

		if (!e->partition || disk_from_devnum(e->major, e->minor, &d) ||
		    d.disk_major != disk->major || d.disk_minor != disk->minor)
			continue;
		dev = KDEV(e->major, e->minor);
		err = bpf_map_update_elem(map_fd, &dev, &one, BPF_ANY);
	}
	ds_snapshot_free(&ds);
	return err;
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
