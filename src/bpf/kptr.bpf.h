/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel pointers as numbers and typed views of untyped pointers, shared by the iospan
 * BPF programs. Include after iospan.bpf.h, in exactly one place per BPF object: it
 * defines the global `anchor` and the `has_rdonly_cast` switch.
 */
#ifndef IOSPAN_KPTR_BPF_H
#define IOSPAN_KPTR_BPF_H

/*
 * bpf_rdonly_cast() came with Linux 6.2. It is weak so that objects still load where it
 * is missing; user space sets has_rdonly_cast (probe.c, PROBE_KPTR_CAST) before load,
 * and the verifier drops the branches that read through it as dead code there.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
const volatile bool has_rdonly_cast = false;

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

/*
 * One field of a kernel object of @type at @p, a pointer the verifier may know only as
 * a number (read from memory, or from a KR() before it): a direct load through a typed
 * view where bpf_rdonly_cast exists (the verifier inlines the cast to a move), a probe
 * read elsewhere. Chains nest: KR(struct super_block, KR(struct inode, i, i_sb), s_dev).
 */
#define KR(type, p, field)                                                              \
	({                                                                              \
		__u64 __kr_p = (__u64)(p);                                              \
		has_rdonly_cast ? KPTR_AS(type, __kr_p)->field                          \
				: BPF_CORE_READ((type *)__kr_p, field);                 \
	})

/*
 * pv() of an address the verifier may know only as a number (a bio's bi_private, a
 * dio's kiocb, a kprobe's argument): the same tag pv() gives for the typed pointer.
 * Without the cast, the anchor's address and @addr (which may still be typed) are
 * made numbers by copying them through the stack.
 */
static __always_inline __u64 pv_addr(__u64 addr)
{
	void *a = &anchor;
	__u64 n[2] = {};

	if (has_rdonly_cast)
		return pv(KPTR_AS(struct bio, addr));
	bpf_probe_read_kernel(&n[0], sizeof(n[0]), &a);
	bpf_probe_read_kernel(&n[1], sizeof(n[1]), &addr);
	return n[1] - n[0];
}

#define PF_KTHREAD 0x00200000

/* cgroup v2 id of a task (what bpf_get_current_cgroup_id() gives for current). */
static __always_inline __u64 task_cgid(struct task_struct *task)
{
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

#endif
