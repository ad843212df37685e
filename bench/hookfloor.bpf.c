// SPDX-License-Identifier: GPL-2.0
/*
 * Empty programs on the hooks iospan's commands use. Attached alone (bench/hookfloor),
 * they measure what merely having a program on a hook costs a workload: the floor
 * under any tracer that needs that hook, whatever its program does.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* An empty program @name in section @sec (the program names are the hook names). */
#define EMPTY_PROG(sec, name)   \
	SEC(sec)                \
	int name(void *ctx)     \
	{                       \
		return 0;       \
	}

EMPTY_PROG("tp_btf/sched_switch", sched_switch)
EMPTY_PROG("tp_btf/block_bio_queue", block_bio_queue)
EMPTY_PROG("tp_btf/block_rq_insert", block_rq_insert)
EMPTY_PROG("tp_btf/block_rq_issue", block_rq_issue)
EMPTY_PROG("tp_btf/block_rq_complete", block_rq_complete)
/* The per-syscall tracepoints iospan uses, and the raw pair it could use instead. */
EMPTY_PROG("tracepoint/syscalls/sys_enter_pread64", sys_enter_pread64)
EMPTY_PROG("tracepoint/syscalls/sys_exit_pread64", sys_exit_pread64)
EMPTY_PROG("tp_btf/sys_enter", sys_enter)
EMPTY_PROG("tp_btf/sys_exit", sys_exit)
