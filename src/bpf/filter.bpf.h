/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The target filter (-p, --tid, --comm, --cgroup, -d, --file, --dir), checked in the
 * kernel from one read-only struct (src/abi/filter_abi.h) and the two set maps that
 * src/lib/bpf/filters.c fills. Include once per .bpf.c (it defines them). Needs
 * vfs.bpf.h for --dir.
 */
#ifndef IOSPAN_FILTER_BPF_H
#define IOSPAN_FILTER_BPF_H

#include "filter_abi.h"

/* How far up --dir looks for the directory (deeper files do not match). */
#define FILTER_DIR_DEPTH 32

/* The filter itself, filled by user space before loading, and its two sets. */
const volatile struct target_filter tfilter = {};

DEFINE_MAP(filter_cgroups, BPF_MAP_TYPE_HASH, __u64, __u8, 4096);

DEFINE_MAP(filter_devs, BPF_MAP_TYPE_HASH, __u32, __u8, 256);

/* Whether any process filter is set (pid, tid, comm, cgroup). */
#define tfilter_proc_on() (tfilter.proc_on)

/* --comm for a thread named @comm. */
static __always_inline bool tfilter_comm_ok(const char *comm)
{
	int i;

	for (i = 0; i < FILTER_COMM_LEN; i++) {
		if (comm[i] != tfilter.comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

/* -p and --tid for thread @tid of process @pid. */
static __always_inline bool tfilter_ids_ok(__u32 pid, __u32 tid)
{
	return (!tfilter.pid || pid == tfilter.pid) && (!tfilter.tid || tid == tfilter.tid);
}

/* The process filters for a known owner: thread @tid of @pid, named @comm, in @cgid. */
static __always_inline bool tfilter_proc_ok(__u32 pid, __u32 tid, const char *comm, __u64 cgid)
{
	if (!tfilter_proc_on())
		return true;
	if (!tfilter_ids_ok(pid, tid))
		return false;
	if (tfilter.comm_on && !tfilter_comm_ok(comm))
		return false;
	if (tfilter.cgroups && !bpf_map_lookup_elem(&filter_cgroups, &cgid))
		return false;
	return true;
}

/*
 * The same for the current task, thread @tid of @pid: its name and cgroup are read only
 * if filtered by. *cgid: its cgroup id if it was read, else 0 (ids start at 1).
 */
static __always_inline bool tfilter_current_ok(__u32 pid, __u32 tid, __u64 *cgid)
{
	char comm[FILTER_COMM_LEN];

	*cgid = 0;
	if (!tfilter_proc_on())
		return true;
	if (!tfilter_ids_ok(pid, tid))
		return false;
	if (tfilter.comm_on) {
		bpf_get_current_comm(comm, sizeof(comm));
		if (!tfilter_comm_ok(comm))
			return false;
	}
	if (tfilter.cgroups) {
		*cgid = bpf_get_current_cgroup_id();
		if (!bpf_map_lookup_elem(&filter_cgroups, cgid))
			return false;
	}
	return true;
}

static __always_inline bool tfilter_dev_ok(__u32 dev)
{
	return !tfilter.devs || bpf_map_lookup_elem(&filter_devs, &dev);
}

/* Whether a file filter (--file, --dir) is set: I/O of no file then never passes. */
#define tfilter_file_on() (tfilter.file_on)

/*
 * --file and --dir for file (@dev, @gen, @ino), @d one of its dentries (NULL if
 * unknown).
 */
static __always_inline bool tfilter_file_ok(__u32 dev, __u32 gen, __u64 ino, struct dentry *d)
{
	if (tfilter.file_dev && (dev != tfilter.file_dev || ino != tfilter.file_ino ||
				 (tfilter.file_gen_on && gen != tfilter.file_gen)))
		return false;
	if (tfilter.dir_dev &&
	    (!d || !vfs_under_dir(d, tfilter.dir_dev, tfilter.dir_ino, FILTER_DIR_DEPTH)))
		return false;
	return true;
}

#endif
