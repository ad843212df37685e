/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who a process is beyond its comm, shared by top and trace: its command line as ps
 * shows it, or the title it wrote over its arguments ("postgres: checkpointer"), and
 * its cgroup v1 blkio group, where blk-throttle's limits apply. Taken from the
 * kernel's capture (the titles map, filled in the process's own context at its I/O,
 * so a process that has exited keeps its name), else from /proc/PID. Cached per pid
 * and read again once per round.
 */
#ifndef IOSPAN_PROCINFO_H
#define IOSPAN_PROCINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common_abi.h"

struct proc_ident {
	const char *cmdline; /* as ps shows it; NULL if none is known (kernel threads) */
	bool title;	     /* set by the process: its first argument is not its name */
	const char *blkio;   /* cgroup v1 blkio group below the root, NULL if none */
};

/* Reads the kernel's capture for @tgid: 0, or -ENOENT if there is none. */
typedef int (*procinfo_lookup_fn)(void *arg, uint32_t tgid, struct proc_title *t);

struct procinfo;

/*
 * @lookup reads the BPF titles map (NULL: /proc only). What is known of a process is
 * read again at a new round, and, if @max_age_ns is not 0, when older than that.
 */
int procinfo_new(procinfo_lookup_fn lookup, void *arg, uint64_t max_age_ns, struct procinfo **out);
void procinfo_free(struct procinfo *c);

/*
 * Starts a round: each process's capture is read again at its next procinfo_get().
 * Processes not asked about for 64 rounds are forgotten.
 */
void procinfo_round(struct procinfo *c);

/*
 * Whether @pid is known already (it then counts as asked about this round): callers that
 * only want a process read while it lives skip the known ones.
 */
bool procinfo_known(struct procinfo *c, uint32_t pid);

/* How many processes are known (tests). */
size_t procinfo_count(const struct procinfo *c);

/*
 * Who @pid (a tgid) is; @comm is the name the kernel has for it (which tells a title
 * from arguments). The strings live until the next procinfo_get() of the same pid.
 */
void procinfo_get(struct procinfo *c, uint32_t pid, const char *comm, struct proc_ident *out);

/*
 * An argument area (@len bytes: NUL-separated arguments, or a title) as ps shows it:
 * arguments joined by spaces, control characters and invalid UTF-8 as '?', trailing
 * blanks dropped. Empty if there is nothing.
 */
void procinfo_format_args(const char *args, size_t len, char *out, size_t out_len);

/*
 * Whether the first argument of @args is a title the process set rather than the name
 * of the program @comm names: it has a space in it, or it is not that program's name.
 */
bool procinfo_is_title(const char *args, size_t len, const char *comm);

/* The path of @pid's group in the cgroup v1 hierarchy of @controller, from /proc/PID/cgroup. */
int procinfo_v1_cgroup(uint32_t pid, const char *controller, char *out, size_t len);

#endif
