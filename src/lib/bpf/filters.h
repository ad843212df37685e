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
	bool file_blk;			/* --file names a block device */
	const char *file_arg, *dir_arg; /* --file's and --dir's paths as given (argv's) */
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

/*
 * The filter options for getopt_long(), one macro each: a command lists those it
 * supports (an option it lacks stays unknown to getopt, abbreviations of its other
 * long options unchanged), or FILTER_LONG_OPTS for all of them.
 */
/* clang-format off */
#define FILTER_LONG_PID    {"pid", required_argument, NULL, 'p'}
#define FILTER_LONG_TID    {"tid", required_argument, NULL, FILTER_OPT_TID}
#define FILTER_LONG_COMM   {"comm", required_argument, NULL, FILTER_OPT_COMM}
#define FILTER_LONG_CGROUP {"cgroup", required_argument, NULL, FILTER_OPT_CGROUP}
#define FILTER_LONG_FILE   {"file", required_argument, NULL, FILTER_OPT_FILE}
#define FILTER_LONG_DIR    {"dir", required_argument, NULL, FILTER_OPT_DIR}
#define FILTER_LONG_DISK   {"disk", required_argument, NULL, 'd'}
/* Whose or which file's I/O: every filter but -d (watch and report have their own -d). */
#define FILTER_LONG_TARGET                                                                 \
	FILTER_LONG_PID, FILTER_LONG_TID, FILTER_LONG_COMM, FILTER_LONG_CGROUP,             \
	FILTER_LONG_FILE, FILTER_LONG_DIR
#define FILTER_LONG_OPTS FILTER_LONG_TARGET, FILTER_LONG_DISK
/* clang-format on */
#define FILTER_SHORT_OPTS "p:d:"

/*
 * Takes getopt's @opt and @arg if it is a target filter option of command @cmd (into
 * @filter_opts, a struct filter_opts): args_spec.shared of every BPF command. Returns 0,
 * 1 if it is not one, or -errno (said: bad usage).
 */
int filter_parse_opt(const char *cmd, int opt, const char *arg, void *filter_opts);

/*
 * The args_spec of BPF command @name: its own short options @own_short (the filter's
 * and the common ones added) and @long_opts (FILTER_LONG_OPTS and COMMON_LONG_OPTS in
 * it), the filter options into @filter_opts; @opts_only: no arguments after them;
 * @run_opts its struct args_run (NULL: none).
 */
#define FILTER_ARGS_SPEC(name, usage_text, own_short, long_opts_, filter_opts, opts_only,    \
			 run_opts)                                                           \
	{                                                                                    \
		.cmd = (name), .usage = (usage_text),                                        \
		.short_opts = own_short FILTER_SHORT_OPTS COMMON_SHORT_OPTS,                 \
		.long_opts = (long_opts_), .shared = filter_parse_opt, .ctx = (filter_opts), \
		.run = (run_opts), .options_only = (opts_only)                               \
	}

/*
 * BPFCMD_OPEN() (bpfcmd.h) of BPF command @name into @c, with the target of @filter_opts
 * (a struct filter_opts) set in its read-only data: where every collector's filter
 * reaches the kernel (filter.bpf.h).
 */
#define BPFCMD_OPEN_TARGETED(c, name, filter_opts)                                \
	({                                                                        \
		struct name##_bpf *__t = BPFCMD_OPEN(c, name);                    \
		if (__t)                                                          \
			memcpy((void *)&__t->rodata->tfilter, &(filter_opts)->tf, \
			       sizeof((filter_opts)->tf));                        \
		__t;                                                              \
	})

/* The disk of -d and the cgroup directory of --cgroup; NULL without them. */
static inline const struct disk *filter_opts_disk(const struct filter_opts *f)
{
	return f->have_disk ? &f->disk : NULL;
}

static inline const char *filter_opts_cgroup_dir(const struct filter_opts *f)
{
	return f->have_cgroup ? f->cgroup_dir : NULL;
}

/*
 * Whether a filter names whose or which file's I/O (-p, --tid, --comm, --cgroup, --file,
 * --dir): a request is then kept by its submitter's record, and a disk-wide figure
 * (every request of the disk) no longer applies.
 */
static inline bool filter_opts_target(const struct filter_opts *f)
{
	return f->have_pid || f->have_tid || f->tf.comm_on || f->have_cgroup || f->have_file ||
	       f->have_dir;
}

/* filter_maps_fill() from the options. */
int filter_maps_fill_opts(int devs_fd, int cgroups_fd, const struct filter_opts *f);

#endif
