/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filling the in-kernel filter maps shared by the BPF commands: a set of kernel dev_t
 * (u32 -> u8) for -d, a set of cgroup v2 ids (u64 -> u8) for --cgroup.
 */
#ifndef IOSPAN_FILTERS_H
#define IOSPAN_FILTERS_H

#include "disks.h"

/* Entries of a BPF command's filter_cgroups map. */
#define FILTER_MAX_CGROUPS 4096

/* Adds @disk and, for a whole disk, its partitions (file systems live there). */
int filter_map_add_disk(int map_fd, const struct disk *disk);
/*
 * Adds the cgroup at @dir and every cgroup below it, up to FILTER_MAX_CGROUPS (a
 * warning names the rest). Reports its own errors (fail()).
 */
int filter_map_add_cgroup_tree(int map_fd, const char *dir);
/*
 * The filter maps of a BPF command from its options: @disk (NULL: no -d) into
 * @devs_fd, the cgroup tree at @cgroup_dir (NULL: no --cgroup) into @cgroups_fd.
 * Reports its own errors (fail()).
 */
int filter_maps_fill(int devs_fd, const struct disk *disk, int cgroups_fd, const char *cgroup_dir);

#endif
