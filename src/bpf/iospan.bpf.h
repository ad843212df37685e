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

#endif
