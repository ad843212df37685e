// SPDX-License-Identifier: GPL-2.0
/*
 * Empty programs on the hooks iospan's commands use. Attached alone (bench/hookfloor),
 * they measure what merely having a program on a hook costs a workload: the floor
 * under any tracer that needs that hook, whatever its program does.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch)
{
	return 0;
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(block_bio_queue)
{
	return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(block_rq_insert)
{
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_rq_issue)
{
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete)
{
	return 0;
}

/* The per-syscall tracepoints iospan uses, and the raw pair it could use instead. */
SEC("tracepoint/syscalls/sys_enter_pread64")
int sys_enter_pread64(void *ctx)
{
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_pread64")
int sys_exit_pread64(void *ctx)
{
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit)
{
	return 0;
}
