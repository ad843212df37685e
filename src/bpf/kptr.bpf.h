/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel pointers as numbers and typed views of untyped pointers, shared by the iospan
 * BPF programs. Include after iospan.bpf.h, in exactly one place per BPF object: it
 * defines the global `anchor`.
 */
#ifndef IOSPAN_KPTR_BPF_H
#define IOSPAN_KPTR_BPF_H

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

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

/* A typed, read-only view of a pointer the verifier knows nothing about. */
#define KPTR_AS(type, p) ((type *)bpf_rdonly_cast((void *)(p), bpf_core_type_id_kernel(type)))
#define AS_BIO(p)	 KPTR_AS(struct bio, p)
#define AS_RQ(p)	 KPTR_AS(struct request, p)
#define AS_FILE(p)	 KPTR_AS(struct file, p)
#define AS_INODE(p)	 KPTR_AS(struct inode, p)

#define PF_KTHREAD 0x00200000

/* cgroup v2 id of a task (what bpf_get_current_cgroup_id() gives for current). */
static __always_inline __u64 task_cgid(struct task_struct *task)
{
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

#endif
