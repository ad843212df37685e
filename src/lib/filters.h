/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filling the in-kernel filter maps shared by the BPF commands: a set of kernel dev_t
 * (u32 -> u8) for -d, a set of cgroup v2 ids (u64 -> u8) for --cgroup.
 */
#ifndef IOSPAN_FILTERS_H
#define IOSPAN_FILTERS_H

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>

#include "disks.h"
#include "filter_abi.h"

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

/*
 * The target filter options of a BPF command, parsed once (filter_parse_opt): what its
 * programs read (@tf, their read-only tfilter) and what fills their two maps.
 */
struct filter_opts {
	struct target_filter tf;
	struct disk disk;
	bool have_disk, have_cgroup, have_pid, have_tid, have_file, have_dir;
	char cgroup_dir[PATH_MAX];
	char cgroup_rel[PATH_MAX]; /* as given, relative to the cgroup v2 mount */
};

enum filter_opt {
	FILTER_OPT_TID = 0x1800,
	FILTER_OPT_COMM,
	FILTER_OPT_CGROUP,
	FILTER_OPT_FILE,
	FILTER_OPT_DIR,
};

/* -p, --tid, --comm, --cgroup, --file, --dir, -d for getopt_long(). */
#define FILTER_LONG_OPTS                                                                         \
	{"pid", required_argument, NULL, 'p'}, {"tid", required_argument, NULL, FILTER_OPT_TID}, \
		{"comm", required_argument, NULL, FILTER_OPT_COMM},                              \
		{"cgroup", required_argument, NULL, FILTER_OPT_CGROUP},                          \
		{"file", required_argument, NULL, FILTER_OPT_FILE},                              \
		{"dir", required_argument, NULL, FILTER_OPT_DIR},                                \
	{                                                                                        \
		"disk", required_argument, NULL, 'd'                                             \
	}
#define FILTER_SHORT_OPTS "p:d:"

/*
 * Takes getopt's @opt and @arg into @f if it is a filter option of command @cmd.
 * Returns 0, 1 if it is not a filter option, or -errno (said: bad usage).
 */
int filter_parse_opt(const char *cmd, int opt, const char *arg, struct filter_opts *f);

/* filter_maps_fill() from the options. */
int filter_maps_fill_opts(int devs_fd, int cgroups_fd, const struct filter_opts *f);

#endif
