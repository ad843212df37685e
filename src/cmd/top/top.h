/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan top: who is doing I/O, to which file, and how slow. A front-end of top's
 * collector (src/collect/top.h), which does the tracing and builds the report:
 *   top.c          options, the main loop (src/lib/bpf/bpfcmd.h), a report per tick;
 *   render_text.c  the report as tables, render_json.c as one JSON document.
 */
#ifndef IOSPAN_CMD_TOP_H
#define IOSPAN_CMD_TOP_H

#include <stdbool.h>
#include <stdint.h>

#include "collect/top.h"

struct jw;

struct top_cmd {
	struct top_opts o;    /* the collector's and the report's */
	uint64_t duration_ns; /* one-shot window */
	uint64_t count;	      /* periodic reports, 0: until stopped */
	struct top_ctx *c;
	struct jw *jw; /* --json */
};

void top_render_text(struct top_ctx *c, struct report *rep);
void top_render_json(struct top_ctx *c, struct jw *jw, struct report *rep);

#endif
