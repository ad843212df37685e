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
#ifndef ENOMEM
#define ENOMEM 12
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
#ifndef E2BIG
#define E2BIG 7
#endif

/*
 * Zero that the verifier does not know (a writable global, read at run time). Before 6.7
 * (commit ab5cfac139ab, "bpf: verify callbacks as if they are called unknown number of
 * times") the verifier walks a bpf_loop() callback once, from the state at the call:
 * a field of the loop's context that is a known 0 there but set by an earlier step (a
 * "have one" flag) makes every branch that needs it set look dead, and the verifier
 * removes that code. Storing loop_opaque_zero in such a field before the loop keeps
 * both branches. One definition per .bpf.c (each is its own object).
 */
__u32 loop_opaque_zero;

#include "maps.bpf.h"

#endif
