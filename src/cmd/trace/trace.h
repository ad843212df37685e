/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan trace: each request followed through the whole storage stack; the slow ones
 * logged with a stage breakdown and a timeline, all of them summarised per op. A
 * front-end of trace's collector (src/collect/trace.h):
 *   trace.c        options, the main loop, the summaries and the accounts
 *   render_text.c  requests, summaries and accounts as text   } one struct
 *   render_json.c  the same as JSON Lines                      } trace_renderer each
 *   perfetto.c     slow requests as a Chrome Trace Event file (with either renderer)
 */
#ifndef IOSPAN_CMD_TRACE_H
#define IOSPAN_CMD_TRACE_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cgroups.h"
#include "collect/trace.h"
#include "disks.h"
#include "err.h"
#include "fspath.h"
#include "json.h"
#include "ops.h"
#include "perfetto.h"
#include "printable.h"
#include "procinfo.h"
#include "units.h"

struct jw;
struct lanes;
struct perfetto;
struct trace_cmd;

/* How the output is written (text or JSON Lines), chosen once at start. */
struct trace_renderer {
	void (*request)(struct trace_cmd *t, const struct trace_rec *r,
			const struct trace_names *n);
	void (*summary)(struct trace_cmd *t, const struct trace_summary *s);
	void (*totals)(struct trace_cmd *t, const struct trace_totals *tot);
};

extern const struct trace_renderer trace_text_renderer, trace_json_renderer;

/* --merge-guest: the three records of a VM's virtio-blk requests (merge.c). */
struct trace_merge_opts {
	const char *guest, *qemu_log, *host; /* the files */
	const char *image;		     /* the image's path in the host trace, or NULL */
	const char *guest_disk;		     /* the guest's disk of the image, or NULL */
	int64_t image_offset;		     /* where the disk's sector 0 is in the file */
};

int trace_merge_run(const struct trace_merge_opts *o, uint64_t threshold_ns,
		    const char *perfetto_path);

struct trace_cmd {
	struct trace_ctx c; /* the collector */
	struct trace_merge_opts merge;
	bool kernel_opts; /* options of a live trace given (not with --merge-guest) */
	struct trace_opts o;
	uint64_t interval_ns;
	uint64_t duration_ns; /* 0: until Ctrl-C */
	const char *perfetto_path;
	const struct trace_renderer *render;
	struct jw *jw;
	struct perfetto *pf;
	struct lanes *lanes;
	uint64_t lanes_full;
	uint64_t last_summary;
};

/* perfetto.c */
void trace_perfetto_free_lanes(struct trace_cmd *t);
void trace_perfetto_write(struct trace_cmd *t, const struct trace_rec *r,
			  const struct trace_names *n);

#endif
