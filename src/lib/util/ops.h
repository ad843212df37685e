/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names of iospan trace's request kinds (ops) and stages, and the --ops list parser.
 * Pure functions: no BPF, no I/O, so they are unit tested on their own.
 */
#ifndef IOSPAN_OPS_H
#define IOSPAN_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "trace_abi.h"

/* All ops: what --ops defaults to. */
#define TRACE_OPS_ALL ((1U << TRACE_OP_NR) - 1)

/* "read", "pread64", "fault", "aio_read"...; "?" if out of range. */
const char *trace_op_name(unsigned int op);
/* "total", "pre_block", "q2q", ... (the JSON keys); "?" if out of range. */
const char *trace_stage_name(unsigned int stage);

/*
 * Parses a comma-separated list of op names into a bit mask (bit = enum trace_op).
 * Besides the op names: "pread" and "pwrite" (the 64 suffix dropped), "aio" (both aio
 * ops), "sync" (the three sync calls), "reads" and "writes" (every op of that
 * direction), "all". Empty items are errors. On error returns -EINVAL and points *bad
 * (if given) at the offending item inside @list (not NUL-terminated: *bad_len bytes).
 */
int trace_ops_parse(const char *list, uint32_t *mask, const char **bad, size_t *bad_len);

/* Writes the names in @mask as a comma-separated list; returns @buf. */
const char *trace_ops_format(uint32_t mask, char *buf, size_t len);

#endif
