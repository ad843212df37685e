/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Opening a command's BPF skeleton with the object build this kernel can load. Each
 * command object exists twice (src/bpf/kptr.bpf.h): as built, using the kfunc
 * bpf_rdonly_cast, and built with IOSPAN_NO_KPTR_CAST for kernels without it (before
 * 6.2). Both have the same programs, maps and globals by name, so one skeleton struct
 * serves both: only the ELF it opens differs. Include <cmd>.skel.h and
 * <cmd>_compat.skel.h first.
 */
#ifndef IOSPAN_SKEL_H
#define IOSPAN_SKEL_H

#include <errno.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "probe.h"

/*
 * struct <name>_bpf *, opened (not loaded), or NULL with errno set. The compat ELF is
 * taken where the kernel lacks the kfunc; its global data has the layout the skeleton
 * was generated for (the build checks it: scripts/skel-layout.sh).
 */
#define SKEL_OPEN(name)                                                                        \
	({                                                                                     \
		struct name##_bpf *__o = calloc(1, sizeof(*__o));                              \
		int __e = __o ? name##_bpf__create_skeleton(__o) : -ENOMEM;                    \
		if (!__e && !probe_has(PROBE_KPTR_CAST))                                       \
			__o->skeleton->data =                                                  \
				(void *)name##_compat_bpf__elf_bytes(&__o->skeleton->data_sz); \
		if (!__e)                                                                      \
			__e = bpf_object__open_skeleton(__o->skeleton, NULL);                  \
		if (__e && __o) {                                                              \
			name##_bpf__destroy(__o);                                              \
			__o = NULL;                                                            \
		}                                                                              \
		if (__e)                                                                       \
			errno = -__e;                                                          \
		__o;                                                                           \
	})

/*
 * Loads skeleton @s (bpf_object__load_skeleton). With IOSPAN_VERIFIER_STATS=1 in the
 * environment it prints, per program, what the verifier took (instructions processed,
 * states, time): start-up is mostly verification, and a change that makes it slower
 * shows here first (bench/startup.py --verifier).
 */
int skel_load(struct bpf_object_skeleton *s);

/*
 * Detaching. Closing a classic tracepoint's perf event waits for RCU grace periods
 * (tracepoint_synchronize_unregister(), 30-150 ms each): one after the other, a command's
 * 30 hooks took 1.5 s to let go at exit. These destroy links side by side, in threads,
 * so the waits overlap.
 */

/* Destroys @links[0..n) (NULL entries skipped) and returns when all are gone. */
void links_destroy(struct bpf_link **links, size_t n);
/* Destroys @link in the background; skel_detach() waits for it. */
void link_destroy_async(struct bpf_link *link);
/*
 * Destroys every link of skeleton @s (may be NULL) and of @hooks, and those given to
 * link_destroy_async(), together; the pointers are left NULL, so the skeleton's
 * destroy and attach_plan_detach() have nothing left to do.
 */
void skel_detach(struct bpf_object_skeleton *s, struct attach_hook *hooks, int nr_hooks);

#endif
