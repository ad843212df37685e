/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel differences, in one place: each reader below names the kernels (or the build
 * option) whose layout it works around and gives the same answer on all of them.
 * Probed by CO-RE when the program loads, never by version. A new difference goes
 * here, not into the code that needs the figure. Task readers take a BTF (trusted)
 * task pointer; needs kptr.bpf.h.
 */
#ifndef IOSPAN_CORE_FIXES_BPF_H
#define IOSPAN_CORE_FIXES_BPF_H

/*
 * The first word of a folio (or page), its flags. Its type changed in 6.18 ("mm:
 * introduce memdesc_flags_t": unsigned long, then a struct around one), which CO-RE
 * cannot relocate from one to the other; the word is first on every kernel, so it is
 * read by position.
 */
static __always_inline unsigned long core_folio_flags(const void *folio)
{
	unsigned long fl = 0;

	bpf_probe_read_kernel(&fl, sizeof(fl), folio);
	return fl;
}

/* 6.1 to 6.16 name the page count of a large folio _folio_nr_pages (6.17: _nr_pages). */
struct folio___nr_pages_old {
	unsigned int _folio_nr_pages;
} __attribute__((preserve_access_index));

/* The bytes of a large folio (PG_head set: the caller checks) of @page_size pages. */
static __always_inline __u64 core_large_folio_bytes(struct folio *folio, __u32 page_size)
{
	struct folio___nr_pages_old *old = (void *)folio;
	unsigned long f1 = 0;

	if (bpf_core_field_exists(folio->_nr_pages))
		return (__u64)BPF_CORE_READ(folio, _nr_pages) * page_size;
	if (bpf_core_field_exists(old->_folio_nr_pages))
		return (__u64)BPF_CORE_READ(old, _folio_nr_pages) * page_size;
	/* Without either (32-bit kernels), the order is in the first tail page's flags. */
	bpf_core_read(&f1, sizeof(f1), &folio->_flags_1);
	return ((__u64)1 << (f1 & 0xff)) * page_size;
}

/*
 * Whether @page is kernel memory whose fields overlay page->mapping: slab, large
 * kmalloc and zsmalloc pages. 6.12+ keep a page's type in the top byte of page_type
 * (enum pagetype, PGTY_*); each type is checked where BTF has it (6.12 has PGTY_slab
 * but not PGTY_large_kmalloc). Older kernels mark slab pages in the flags, and their
 * page->mapping is not read as a mapping by any caller for them: false.
 */
static __always_inline bool core_page_kernel_type(struct page *page)
{
	__u32 ty;

	if (!bpf_core_enum_value_exists(enum pagetype, PGTY_slab))
		return false;
	ty = KR(struct page, page, page_type) >> 24;
	return ty == bpf_core_enum_value(enum pagetype, PGTY_slab) ||
	       (bpf_core_enum_value_exists(enum pagetype, PGTY_large_kmalloc) &&
		ty == bpf_core_enum_value(enum pagetype, PGTY_large_kmalloc)) ||
	       (bpf_core_enum_value_exists(enum pagetype, PGTY_zsmalloc) &&
		ty == bpf_core_enum_value(enum pagetype, PGTY_zsmalloc));
}

/*
 * The bit of RQF_FLUSH_SEQ in rq->rq_flags: numbered by enum rqf_flags where BTF has it
 * (6.9+ define it, but not every kernel's BTF keeps it), else its old bit 4 (6.1).
 */
static __always_inline __u32 core_rqf_flush_seq_bit(void)
{
	if (bpf_core_enum_value_exists(enum rqf_flags, __RQF_FLUSH_SEQ))
		return bpf_core_enum_value(enum rqf_flags, __RQF_FLUSH_SEQ);
	return 4;
}

/* The io controller's (cgroup v1 blkio) subsystem id, -1 without CONFIG_BLK_CGROUP. */
static __always_inline int core_io_cgrp_id(void)
{
	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, io_cgrp_id))
		return -1;
	return bpf_core_enum_value(enum cgroup_subsys_id, io_cgrp_id);
}

/* Time @task waited on a run queue (CONFIG_SCHED_INFO), 0 without it. */
static __always_inline __u64 core_task_run_delay(struct task_struct *task)
{
	return bpf_core_field_exists(task->sched_info) ? task->sched_info.run_delay : 0;
}

/*
 * Time @task waited for block I/O (CONFIG_TASK_DELAY_ACCT; counted only while the
 * kernel's delayacct is on, which the caller checks), 0 without it.
 */
static __always_inline __u64 core_task_blkio_delay(struct task_struct *task)
{
	struct task_delay_info *d;

	if (!bpf_core_field_exists(task->delays))
		return 0;
	d = task->delays;
	return d ? d->blkio_delay : 0;
}

/*
 * The read- and write-family syscalls @task has made (task_io_accounting's syscr and
 * syscw, CONFIG_TASK_XACCT), 0 without it: each call counted once, in the call, once
 * past its first checks (vfs_read(), do_readv(), ...); kernel_read() and kernel_write()
 * in the task too (eCryptfs calls them during a read).
 */
static __always_inline __u64 core_task_io_calls(struct task_struct *task)
{
	if (!bpf_core_field_exists(task->ioac.syscr) || !bpf_core_field_exists(task->ioac.syscw))
		return 0;
	return task->ioac.syscr + task->ioac.syscw;
}

#endif
