/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF programs of several commands and user space share: the comm length,
 * device numbers, a process's title, the syscall table size, and files with their
 * paths (key and captured path). Each command's own structs are in its <cmd>_abi.h.
 * Only fixed-size __u* types, laid out without implicit padding, so both compilers
 * agree on every offset.
 */
#ifndef IOSPAN_COMMON_ABI_H
#define IOSPAN_COMMON_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* A task's comm, as the kernel keeps it (TASK_COMM_LEN). */
#define IOSPAN_COMM_LEN 16

/* Kernel dev_t (20 minor bits), as the BPF programs store it. */
#define KDEV_MAJOR(d) ((unsigned int)((d) >> 20))
#define KDEV_MINOR(d) ((unsigned int)((d)&0xfffff))
#define KDEV(ma, mi)  ((__u32)(((ma) << 20) | (mi)))

/*
 * What ps shows of a process, captured in its own context (the titles map, keyed by
 * tgid): its argument area, NUL-separated arguments or a title the process wrote over
 * them ("postgres: checkpointer"), and its cgroup for the io (blkio) controller.
 */
#define PROC_ARGS_LEN 256
struct proc_title {
	__u64 blkio_cgid; /* kernfs id (directory inode number) of that cgroup, 0 if none */
	__u32 len;	  /* bytes of args (the area may be longer) */
	__u32 pad;
	char args[PROC_ARGS_LEN];
};

/*
 * A request's flags as iospan shows them (blktrace's rwbs letters in snoop, lat's -F
 * keys), in bits of its own: the kernel numbers its REQ_* flags differently from
 * version to version (blk_owner.bpf.h translates, by CO-RE).
 */
enum rq_fl {
	RQ_FL_SYNC = 1 << 0,
	RQ_FL_META = 1 << 1,
	RQ_FL_FUA = 1 << 2,
	RQ_FL_PREFLUSH = 1 << 3,
	RQ_FL_RAHEAD = 1 << 4,
	RQ_FL_BACKGROUND = 1 << 5,
	RQ_FL_ALL = (1 << 6) - 1,
};

/*
 * One BPF program serves all syscall tracepoints of a command and tells them apart by
 * syscall number, through a table of SYS_NR_TABLE entries (above every traced syscall's
 * number on every architecture) that user space fills before loading.
 */
#define SYS_NR_TABLE 512

/*
 * A file. In the paths map, gen is the inode's generation: a number the file system
 * gives each new inode, so that a deleted file and a new one that got its inode number
 * have different keys. Other maps leave it 0.
 */
struct file_key {
	__u32 dev;
	__u32 gen;
	__u64 ino;
};

/*
 * A file's path inside its file system, captured by walking the dentries up to the fs
 * root: NUL-terminated components, leaf first. User space reverses them and joins the
 * result with the mount point from /proc/self/mountinfo. Captured again when the stamp
 * of the dentries changes (rename or unlink of the file or a directory above it).
 */
#define FILE_PATH_BUF	   768
#define FILE_PATH_NAME_MAX 256
#define FILE_PATH_DEPTH	   32
enum file_path_flags {
	FILE_PATH_TRUNCATED = 1 << 0, /* deeper than FILE_PATH_DEPTH or longer than the buffer */
	FILE_PATH_DELETED = 1 << 1,   /* unlinked when captured */
};

struct file_path {
	__u32 depth; /* components in buf */
	__u32 flags;
	__u64 stamp; /* of the dentries when captured (vfs_path_stamp()) */
	char buf[FILE_PATH_BUF];
};

#endif
