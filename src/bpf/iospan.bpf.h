/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Common includes for every iospan BPF program. Each .bpf.c still defines its own
 * LICENSE section: a definition here would clash with one in the including file.
 */
#ifndef IOSPAN_BPF_H
#define IOSPAN_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* vmlinux.h has no errno macros: the few BPF code returns or compares. */
#ifndef ENOENT
#define ENOENT 2
#endif
#ifndef EEXIST
#define EEXIST 17
#endif
#ifndef EINVAL
#define EINVAL 22
#endif
#ifndef EBUSY
#define EBUSY 16
#endif
#ifndef ENOSPC
#define ENOSPC 28
#endif

#endif
