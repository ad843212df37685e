/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Programs for the tracepoints older kernels lack, with their fallbacks: the tracepoint
 * (tp_btf), then fentry, then a kprobe on the kernel function it stands in, all calling
 * one handler of the includer's; and the tp_btf/raw_tp pairs of the tracepoints all
 * kernels have (TP_PROGS). Names: <name>, <name>_fentry, <name>_kprobe, as
 * FALLBACK_HOOK() in src/lib/bpf/probe.h expects. A kprobe's arguments are numbers: they are
 * given their type with KPTR_AS() (kptr.bpf.h) before the handler reads them with KR().
 */
#ifndef IOSPAN_FALLBACK_BPF_H
#define IOSPAN_FALLBACK_BPF_H

/*
 * A tracepoint's tp_btf program @name and its raw_tp fallback @name_raw (kernels whose
 * BTF the tp_btf program cannot use), both returning handler(...). The arguments are
 * TP_PTR(type, i) and TP_ARG(type, i), the tracepoint's i-th argument: a pointer, typed
 * in both (a raw_tp's are numbers, given their type with KPTR_AS()), or a value;
 * TP_VIEW(type, i), a pointer read through an untrusted view in both (cheaper to verify). User
 * space lists the pair with TP_BTF_HOOK() (src/lib/bpf/probe.h).
 */
#define TP_PROGS(tp, name, handler, ...)                           \
	SEC("tp_btf/" #tp)                                         \
	int name(__u64 *ctx)                                       \
	{                                                          \
		const bool tp_raw __attribute__((unused)) = false; \
                                                                   \
		return handler(__VA_ARGS__);                       \
	}                                                          \
	SEC("raw_tp/" #tp)                                         \
	int name##_raw(__u64 *ctx)                                 \
	{                                                          \
		const bool tp_raw __attribute__((unused)) = true;  \
                                                                   \
		return handler(__VA_ARGS__);                       \
	}
#define TP_PTR(type, i) (tp_raw ? KPTR_AS(type, ctx[i]) : (type *)ctx[i])
/* A pointer argument the handler reads through an untrusted view (KVIEW, kptr.bpf.h). */
#define TP_VIEW(type, i) KVIEW(type, ctx[i])
#define TP_ARG(type, i) ((type)ctx[i])

/*
 * The fentry and kprobe programs @name_fentry and @name_kprobe on kernel function @func,
 * whose first arguments are (struct kiocb *, struct iov_iter *): handler(iocb, iter).
 */
#define KIOCB_ITER_FALLBACKS(name, func, handler)                                        \
	SEC("fentry/" #func)                                                             \
	int BPF_PROG(name##_fentry, struct kiocb *iocb, struct iov_iter *iter)           \
	{                                                                                \
		return handler(iocb, iter);                                              \
	}                                                                                \
	SEC("kprobe/" #func)                                                             \
	int BPF_KPROBE(name##_kprobe, struct kiocb *iocb, struct iov_iter *iter)         \
	{                                                                                \
		return handler(KVIEW(struct kiocb, iocb), KVIEW(struct iov_iter, iter)); \
	}

/* A page fault on a file mapping: handler(struct address_space *, __u64 index). */
#define FILEMAP_FAULT_PROGS(name, handler)                                           \
	SEC("tp_btf/mm_filemap_fault")                                               \
	int BPF_PROG(name, struct address_space *mapping, unsigned long index)       \
	{                                                                            \
		return handler(KVIEW(struct address_space, mapping), index);       \
	}                                                                            \
	SEC("fentry/filemap_fault")                                                  \
	int BPF_PROG(name##_fentry, struct vm_fault *vmf)                            \
	{                                                                            \
		return handler(vmf->vma->vm_file->f_mapping, vmf->pgoff);            \
	}                                                                            \
	SEC("kprobe/filemap_fault")                                                  \
	int BPF_KPROBE(name##_kprobe, struct vm_fault *vmf)                          \
	{                                                                            \
		return handler(KPTR_AS(struct address_space,                         \
				       BPF_CORE_READ(vmf, vma, vm_file, f_mapping)), \
			       BPF_CORE_READ(vmf, pgoff));                           \
	}

/*
 * An iomap direct I/O starts (the tracepoint is in __iomap_dio_rw(), whose first
 * arguments it has): handler(struct kiocb *, struct iov_iter *).
 */
#define DIO_BEGIN_PROGS(name, handler)                                                    \
	SEC("tp_btf/iomap_dio_rw_begin")                                                  \
	int BPF_PROG(name, struct kiocb *iocb, struct iov_iter *iter, unsigned int flags, \
		     size_t done_before)                                                  \
	{                                                                                 \
		return handler(KVIEW(struct kiocb, iocb), KVIEW(struct iov_iter, iter));  \
	}                                                                                 \
	KIOCB_ITER_FALLBACKS(name, __iomap_dio_rw, handler)

/*
 * The submission of an async direct I/O ends with -EIOCBQUEUED, in the submitting task
 * (6.5+; before, its window ends at the I/O's end or the task's next one): @name sets
 * @field of the task's @type in task storage @tasks to 0, what closes the window.
 */
#define DIO_QUEUED_PROG(name, tasks, type, field)                                         \
	SEC("tp_btf/iomap_dio_rw_queued")                                                 \
	int BPF_PROG(name)                                                                \
	{                                                                                 \
		type *t = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0); \
                                                                                          \
		if (t)                                                                    \
			t->field = 0;                                                     \
		return 0;                                                                 \
	}

/*
 * The programs of an iomap direct I/O's life: @name_begin (begin(kiocb, iov_iter)),
 * @name_queued (closing the task's window, DIO_QUEUED_PROG()) and @name_complete
 * (complete(kiocb, result)), each with its fallbacks.
 */
#define DIO_PROGS(name, begin, complete, tasks, type, field) \
	DIO_BEGIN_PROGS(name##_begin, begin)                 \
	DIO_QUEUED_PROG(name##_queued, tasks, type, field)   \
	DIO_COMPLETE_PROGS(name##_complete, complete)

/*
 * An iomap direct I/O ends: handler(struct kiocb *, long result), the result being the
 * error, else the bytes done. The fallbacks enter iomap_dio_complete(), which frees the
 * dio before it returns (a read that ran past the end of the file is cut there by the
 * kernel only after: shown uncut).
 */
#define DIO_COMPLETE_PROGS(name, handler)                                                \
	SEC("tp_btf/iomap_dio_complete")                                                 \
	int BPF_PROG(name, struct kiocb *iocb, int error, ssize_t ret)                   \
	{                                                                                \
		return handler(KVIEW(struct kiocb, iocb), error ? error : ret);        \
	}                                                                                \
	SEC("fentry/iomap_dio_complete")                                                 \
	int BPF_PROG(name##_fentry, struct iomap_dio *dio)                               \
	{                                                                                \
		int error = dio->error;                                                  \
                                                                                         \
		return handler(dio->iocb, error ? error : (long)dio->size);              \
	}                                                                                \
	SEC("kprobe/iomap_dio_complete")                                                 \
	int BPF_KPROBE(name##_kprobe, struct iomap_dio *dio)                             \
	{                                                                                \
		int error = BPF_CORE_READ(dio, error);                                   \
                                                                                         \
		return handler(KPTR_AS(struct kiocb, BPF_CORE_READ(dio, iocb)),          \
			       error ? error : (long)BPF_CORE_READ(dio, size));          \
	}

/*
 * The fallbacks of mm_filemap_get_pages (whose tp_btf program differs per command):
 * filemap_read(), once per buffered read: handler(struct kiocb *, struct iov_iter *).
 */
#define FILEMAP_READ_PROGS(name, handler) KIOCB_ITER_FALLBACKS(name, filemap_read, handler)

/*
 * Readahead starts, in the reading task: the tracepoints (6.11+) are in
 * page_cache_sync_ra() and page_cache_async_ra(), whose arguments differ (the async
 * one has the folio that triggered it): handler(struct inode *, pgoff_t index,
 * unsigned long req).
 */
#define RA_PROGS(name, func, handler, ...)                                                     \
	SEC("tp_btf/" #func)                                                                   \
	int BPF_PROG(name, struct inode *inode, unsigned long index, struct file_ra_state *ra, \
		     unsigned long req)                                                        \
	{                                                                                      \
		return handler(KVIEW(struct inode, inode), index, req);                        \
	}                                                                                      \
	SEC("fentry/" #func)                                                                   \
	int BPF_PROG(name##_fentry, struct readahead_control *ractl, __VA_ARGS__)              \
	{                                                                                      \
		return handler(ractl->mapping->host, ractl->_index, req);                      \
	}                                                                                      \
	SEC("kprobe/" #func)                                                                   \
	int BPF_KPROBE(name##_kprobe, struct readahead_control *ractl, __VA_ARGS__)            \
	{                                                                                      \
		return handler(KPTR_AS(struct inode, BPF_CORE_READ(ractl, mapping, host)),     \
			       BPF_CORE_READ(ractl, _index), req);                             \
	}

#define RA_SYNC_PROGS(name, handler) RA_PROGS(name, page_cache_sync_ra, handler, unsigned long req)
#define RA_ASYNC_PROGS(name, handler) \
	RA_PROGS(name, page_cache_async_ra, handler, struct folio *folio, unsigned long req)

#endif
