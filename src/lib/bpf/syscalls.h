/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hooks of the syscalls a command follows, in one of the two ways of
 * src/bpf/syscall.bpf.h: the raw sys_enter/sys_exit pair, or a classic tracepoint per
 * syscall and direction. Every command takes the pair by default (it exits at once);
 * watch takes the classic ones when asked (a syscall it does not follow costs less; its
 * exit waits about 20 ms per tracepoint for the kernel to let go).
 */
#ifndef IOSPAN_SYSCALLS_H
#define IOSPAN_SYSCALLS_H

#include <stdbool.h>

#include "probe.h"

enum syscall_attach {
	SYSCALL_ATTACH_RAW,	 /* sys_enter, sys_exit */
	SYSCALL_ATTACH_PER_CALL, /* syscalls:sys_enter_<name>, syscalls:sys_exit_<name> */
};

/* The programs of SYSCALL_PROGS(name, ...), by their skeleton's names. */
struct syscall_progs {
	struct bpf_program *enter, *enter_raw, *enter_tp;
	struct bpf_program *exit, *exit_raw, *exit_tp;
};

#define SYSCALL_PROGS_OF(s, name)                                         \
	((struct syscall_progs){.enter = (s)->progs.name##_enter,         \
				.enter_raw = (s)->progs.name##_enter_raw, \
				.enter_tp = (s)->progs.name##_enter_tp,   \
				.exit = (s)->progs.name##_exit,           \
				.exit_raw = (s)->progs.name##_exit_raw,   \
				.exit_tp = (s)->progs.name##_exit_tp})

/*
 * Appends to @hooks (*@n used, room for @max) the hooks that follow the syscalls
 * @names[0..@nr), the way @how; the first @nr_required of them must attach (a classic
 * tracepoint this kernel lacks is then not chosen, see attach_plan_choose()). The programs of the
 * other way are not loaded. -E2BIG if there is no room, -EINVAL for a syscall name not in the
 * table.
 */
int syscall_hooks_add(struct attach_hook *hooks, int *n, int max, enum syscall_attach how,
		      const struct syscall_progs *p, const char *const *names, int nr,
		      int nr_required);

/*
 * The number of syscall @name, one of those a command may follow (the syscall ops
 * "read" ... "sync_file_range", and "truncate", "ftruncate", "fallocate"); -1 for any
 * other name or a number the BPF syscall tables cannot hold (SYS_NR_TABLE).
 */
int syscall_nr(const char *name);

/* Leaves every syscall program of @p unloaded (a command that follows no syscall). */
void syscall_progs_off(const struct syscall_progs *p);

#endif
