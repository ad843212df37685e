/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel pointers as numbers and typed views of untyped pointers, shared by the iospan
 * BPF programs. Include after iospan.bpf.h, in exactly one place per BPF object: it
 * defines the global `anchor`.
 *
 * Every command object is built twice (Makefile): as is, for kernels with the kfunc
 * bpf_rdonly_cast (6.2+), where a pointer known only as a number gets a typed view and
 * fields are direct loads; and with IOSPAN_NO_KPTR_CAST, for older kernels, where such
 * pointers stay numbers and their fields are probe reads. User space opens the build the
 * kernel can load (probe.c, PROBE_KPTR_CAST). One source, and no cost in the first.
 */
#ifndef IOSPAN_KPTR_BPF_H
#define IOSPAN_KPTR_BPF_H

/*
 * Pointers to kernel objects cannot be used as numbers by the verifier, but the
 * difference of two pointers can (for privileged programs). The address of this
 * variable is the constant subtracted: tags and low-bit tests use ptr - &anchor.
 */
__u64 anchor;

static __always_inline __u64 pv(const void *p)
{
	__u64 a = (__u64)&anchor;

	/* Hide the anchor's alignment from clang, or it folds away the subtraction. */
	asm volatile("" : "+r"(a));
	return (__u64)p - a;
}

#ifndef IOSPAN_NO_KPTR_CAST
#define HAVE_KPTR_CAST 1
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

/* A typed, read-only view of a pointer the verifier knows only as a number. */
#define KPTR_AS(type, p) ((type *)bpf_rdonly_cast((void *)(p), bpf_core_type_id_kernel(type)))
/* One field of a kernel object: a direct load (the pointer is typed in this build). */
#define KR(type, p, field) (((type *)(p))->field)
/* The low bits of a pointer KR() gave (tags that kernel structures keep there). */
#define KLOW(p) pv(p)
#else
#define HAVE_KPTR_CAST 0
#define KPTR_AS(type, p) ((type *)(p))
/* The address is evaluated first: a nested KR() must not sit inside another's CO-RE read. */
#define KR(type, p, field)                              \
	({                                              \
		__u64 __kr_p = (__u64)(p);              \
		BPF_CORE_READ((type *)__kr_p, field);   \
	})
#define KLOW(p) ((__u64)(p))
#endif

/*
 * An untrusted view of a trusted pointer (a tp_btf or fentry argument, the current task)
 * for reading. The verifier (6.4+) checks every load of a pointer field from a trusted
 * pointer, at every visit of that load, with up to four linear searches of the kernel
 * BTF's type names (btf_nested_type_is_trusted): 1-150 ms of verification per program,
 * most of iospan's start-up. Loads through the view are the same at run time (the cast
 * becomes a register move). Helpers that want a trusted pointer (bpf_task_storage_get)
 * are given the original.
 */
#define KVIEW(type, p) KPTR_AS(type, p)
/*
 * A pointer field of a trusted pointer, through the view. On the hot block path the
 * pointer itself stays trusted: its scalar fields are then plain loads, where loads
 * through a view are checked ones (a few instructions more each).
 */
#define KRP(type, p, field) (KVIEW(type, p)->field)

#define AS_BIO(p) KPTR_AS(struct bio, p)
#define AS_RQ(p)  KPTR_AS(struct request, p)

/*
 * pv() of an address the verifier may know only as a number (a bio's bi_private, a
 * dio's kiocb, a kprobe's argument): the same tag pv() gives for the typed pointer.
 * Without the cast, the anchor's address and @addr (which may still be typed) are made
 * numbers by copying them through the stack.
 */
static __always_inline __u64 pv_addr(__u64 addr)
{
#if HAVE_KPTR_CAST
	return pv(KPTR_AS(struct bio, addr));
#else
	void *a = &anchor;
	__u64 n[2] = {};

	bpf_probe_read_kernel(&n[0], sizeof(n[0]), &a);
	bpf_probe_read_kernel(&n[1], sizeof(n[1]), &addr);
	return n[1] - n[0];
#endif
}

/*
 * @addr, which the verifier may know as a typed pointer, as a number: the argument
 * global BPF functions take (they accept no kernel pointers). Copied through the stack.
 */
static __always_inline __u64 kaddr(__u64 addr)
{
	__u64 n = 0;

	bpf_probe_read_kernel(&n, sizeof(n), &addr);
	return n;
}

#define PF_KTHREAD   0x00200000
#define PF_WQ_WORKER 0x00000020

/* cgroup v2 id of a task (what bpf_get_current_cgroup_id() gives for current). */
static __always_inline __u64 task_cgid(struct task_struct *task)
{
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

#endif
