/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The target filter of a BPF command, as its programs read it: one read-only struct
 * (src/bpf/filter.bpf.h) that user space fills before loading, and two maps for the
 * sets (filter_devs: kernel dev_t, filter_cgroups: cgroup v2 ids; src/lib/bpf/filters.h).
 * A zero field filters nothing.
 */
#ifndef IOSPAN_FILTER_ABI_H
#define IOSPAN_FILTER_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define FILTER_COMM_LEN 16

struct target_filter {
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 file_dev; /* --file: its fs's dev_t and inode */
	__u32 dir_dev;	/* --dir: the same */
	__u64 file_ino;
	__u64 dir_ino;
	__u8 devs;    /* -d: filter_devs holds the devices */
	__u8 cgroups; /* --cgroup: filter_cgroups holds the ids */
	__u8 comm_on;
	/*
	 * --file's inode generation is known (FS_IOC_GETVERSION): a file that gets the
	 * inode number after the target is deleted is not the target.
	 */
	__u8 file_gen_on;
	__u32 file_gen;
	char comm[FILTER_COMM_LEN];
	/*
	 * Set with the fields they sum up (filters.c), so that a program with no filter
	 * pays one test for each kind: a process filter (pid, tid, comm, cgroups) is set;
	 * a file filter (--file, --dir) is set.
	 */
	__u8 proc_on;
	__u8 file_on;
	__u8 pad[6];
};

#endif
