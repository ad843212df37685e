/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What ps shows of a process and which cgroup v1 blkio group it is in, captured in the
 * process's own context (only there can its memory be read), so that processes that
 * have exited by the time user space looks are still named. Needs kptr.bpf.h and
 * core_fixes.bpf.h.
 */
#ifndef IOSPAN_PROC_BPF_H
#define IOSPAN_PROC_BPF_H

/*
 * Id of the cgroup of @task for the io controller (blkio under cgroup v1, where
 * blk-throttle's limits are set): its kernfs node id, which is the inode number of its
 * directory in that hierarchy. 0 without the controller.
 */
static __always_inline __u64 task_blkio_cgid(struct task_struct *task)
{
	struct cgroup_subsys_state *css = NULL;
	struct css_set *cset;
	int id;

	id = core_io_cgrp_id();
	if (id < 0)
		return 0;
	cset = BPF_CORE_READ(task, cgroups);
	if (!cset || id >= 32)
		return 0;
	bpf_core_read(&css, sizeof(css), &cset->subsys[id]);
	return css ? BPF_CORE_READ(css, cgroup, kn, id) : 0;
}

/*
 * The titles map (tgid -> struct proc_title) and proc_title_note(), which captures the
 * current process's argument area (its arguments, or the title it wrote over them,
 * "postgres: checkpointer") and blkio group. Expand once per .bpf.c. Callers run it
 * at most once per file and second (top) or per reported request (trace): titles change.
 */
#define DEFINE_PROC_TITLES(nr)                                                             \
	DEFINE_MAP(titles, BPF_MAP_TYPE_LRU_HASH, __u32, struct proc_title, nr);           \
	DEFINE_MAP(title_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct proc_title, 1); \
                                                                                           \
	static __noinline int proc_title_note(void)                                        \
	{                                                                                  \
		struct task_struct *task = bpf_get_current_task_btf();                     \
		__u32 zero = 0, tgid = BPF_CORE_READ(task, tgid);                          \
		unsigned long start, end;                                                  \
		struct proc_title *t;                                                      \
		struct mm_struct *mm;                                                      \
		__u64 len;                                                                 \
                                                                                           \
		mm = BPF_CORE_READ(task, mm);                                              \
		t = bpf_map_lookup_elem(&title_scratch, &zero);                            \
		if (!mm || !t || BPF_CORE_READ(task, flags) & PF_KTHREAD)                  \
			return 0;                                                          \
		start = BPF_CORE_READ(mm, arg_start);                                      \
		end = BPF_CORE_READ(mm, arg_end);                                          \
		len = end > start ? end - start : 0;                                       \
		if (len > PROC_ARGS_LEN)                                                   \
			len = PROC_ARGS_LEN;                                               \
		/* Not resident (this context cannot fault it in): keep the last one. */   \
		if (!len || bpf_probe_read_user(t->args, len, (void *)start))              \
			return 0;                                                          \
		t->len = len;                                                              \
		t->blkio_cgid = task_blkio_cgid(task);                                     \
		bpf_map_update_elem(&titles, &tgid, t, BPF_ANY);                           \
		return 0;                                                                  \
	}

#endif
