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

#endif
