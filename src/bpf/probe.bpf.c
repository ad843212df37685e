// SPDX-License-Identifier: GPL-2.0
/*
 * Feature probes: one tiny program per program kind or map type. src/lib/bpf/probe.c loads
 * exactly one of them per attempt (plus the one map it needs), so a failure names the
 * feature that is missing and nothing else.
 */
#include "iospan.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Sizes are set small by user space before load; these are placeholders. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} probe_ringbuf SEC(".maps");

DEFINE_TASK_STORAGE(probe_task_storage, __u64);

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 8 * sizeof(__u64));
} probe_stack_map SEC(".maps");

SEC("raw_tp/block_rq_complete")
int probe_raw_tp(void *ctx)
{
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int probe_tracepoint(void *ctx)
{
	return 0;
}

SEC("fentry/vfs_read")
int probe_fentry(void *ctx)
{
	return 0;
}

SEC("kprobe/vfs_read")
int probe_kprobe(void *ctx)
{
	return 0;
}

/* Counts uprobe hits, so user space can see the probe fire, not just attach. */
DEFINE_MAP(probe_hits, BPF_MAP_TYPE_ARRAY, __u32, __u64, 1);

/* Attached by user space to a function of our own binary. */
SEC("uprobe")
int probe_uprobe(void *ctx)
{
	__u32 key = 0;
	__u64 *hits = bpf_map_lookup_elem(&probe_hits, &key);

	if (hits)
		__sync_fetch_and_add(hits, 1);
	return 0;
}

/*
 * Map and helper probes are raw_tp programs without a target: they are only loaded, and
 * raw_tp is the oldest tracing kind that can call these helpers.
 */
SEC("raw_tp")
int probe_ringbuf_prog(void *ctx)
{
	__u64 *slot = bpf_ringbuf_reserve(&probe_ringbuf, sizeof(*slot), 0);

	if (slot)
		bpf_ringbuf_discard(slot, 0);
	return 0;
}

SEC("raw_tp")
int probe_task_storage_prog(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 *val;

	val = bpf_task_storage_get(&probe_task_storage, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (val)
		*val += 1;
	return 0;
}

SEC("raw_tp")
int probe_stack_map_prog(void *ctx)
{
	bpf_get_stackid(ctx, &probe_stack_map, 0);
	return 0;
}

SEC("raw_tp")
int probe_get_stack_prog(void *ctx)
{
	__u64 ips[8];

	bpf_get_stack(ctx, ips, sizeof(ips), 0);
	return 0;
}

static long probe_loop_step(__u32 i, void *ctx)
{
	return 0;
}

/* bpf_loop(): how the commands walk a request's bios and a bio's pages. */
SEC("raw_tp")
int probe_loop_prog(void *ctx)
{
	bpf_loop(1, probe_loop_step, NULL, 0);
	return 0;
}
