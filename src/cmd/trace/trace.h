/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan trace: each request followed through the whole storage stack; the slow ones
 * logged with a stage breakdown and a timeline, all of them summarised per op.
 *
 * The BPF side (src/bpf/trace.bpf.c) correlates everything in the kernel and keeps
 * per-op stage histograms; only requests over the threshold arrive here, through a
 * ring buffer. The files of this folder:
 *   trace.c        options, set-up (filters, attach plan), the main loop, clean-up
 *   consume.c      records from the kernel: unpacked, handed to the renderer
 *   record.c       what a record says: who, which file, flag and event names, timeline
 *   summary.c      the periodic per-op summary (struct trace_summary) from the kernel's
 *                  histograms
 *   accounts.c     counters, requests still in flight, the exit accounts (trace_totals)
 *   render_text.c  requests, summaries and accounts as text   } one struct
 *   render_json.c  the same as JSON Lines                      } trace_renderer each
 *   perfetto.c     slow requests as a Chrome Trace Event file (with either renderer)
 */
#ifndef IOSPAN_CMD_TRACE_H
#define IOSPAN_CMD_TRACE_H

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "iospan.h"
#include "args.h"
#include "bpfcmd.h"
#include "bpfmap.h"
#include "cgroups.h"
#include "disks.h"
#include "diskstats.h"
#include "err.h"
#include "filters.h"
#include "fspath.h"
#include "procinfo.h"
#include "hist.h"
#include "trace_abi.h"
#include "json.h"
#include "ksyms.h"
#include "mapmem.h"
#include "ops.h"
#include "perfetto.h"
#include "printable.h"
#include "probe.h"
#include "rbuf.h"
#include "units.h"
#include "trace.skel.h"
#include "trace_compat.skel.h"
#include "skel.h"

#define NSEC_PER_SEC ((uint64_t)1000000000)
struct trace_opts {
	uint64_t threshold_ns;
	uint64_t interval_ns;
	uint64_t duration_ns;	   /* 0: until Ctrl-C */
	struct filter_opts filter; /* -p, --tid, --comm, --cgroup, --file, --dir, -d */
	uint32_t ops;
	const char *perfetto_path;
	bool offcpu_periods; /* sched_switch: time each off-CPU period */
	bool delayacct;	     /* kernel.task_delayacct on: exact iowait from counters */
	uint64_t rb_bytes;   /* ring buffer size (a power of two) */
};

/* One periodic summary: the interval's slow requests and stage histograms per op. */
struct trace_summary {
	double seconds;
	bool final;
	uint64_t emitted, printed, dropped; /* slow requests sent, printed, lost (buffer full) */
	uint64_t requests;		    /* completed, all ops */
	struct trace_op_hists ops[TRACE_OP_NR];
};

/* The accounts at exit. */
struct trace_totals {
	uint64_t cnt[TRACE_CNT_NR];
	uint64_t traced, lost, printed, in_flight, lanes_full, malformed, not_arrived;
};

struct trace_ctx;

/* How the output is written (text or JSON Lines), chosen once at start. */
struct trace_renderer {
	void (*request)(struct trace_ctx *c, const struct trace_rec *r);
	void (*summary)(struct trace_ctx *c, const struct trace_summary *s);
	void (*totals)(struct trace_ctx *c, const struct trace_totals *t);
};

extern const struct trace_renderer trace_text_renderer, trace_json_renderer;

struct trace_ctx {
	const struct trace_renderer *render;
	struct trace_opts *o;
	struct bpfcmd cmd;	/* the life cycle: plan, ring buffer, CPUs, cgroup names */
	struct trace_bpf *skel; /* cmd's */
	struct fspath_cache *paths;
	struct procinfo *procinfo;
	struct jw *jw;
	struct perfetto *pf;
	struct lanes *lanes;
	uint64_t lanes_full;
	int64_t mono_to_real;	     /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	struct trace_op_hists *pcpu; /* one map value per CPU, for reading */
	struct trace_op_hists *prev; /* cumulative histograms at the previous summary */
	uint64_t printed;
	uint64_t malformed; /* records whose bios and events do not add up to their size */
	uint64_t wb_swept, in_flight;
	uint64_t last_summary;
	/* Counts at the previous summary: the output's rate and the drops per interval. */
	uint64_t prev_printed, prev_emitted, prev_dropped;
};

/* record.c */
struct proc_ident;
struct proc_title;

/* A flag bit and its name; tables end with a NULL name. */
struct trace_flag_name {
	uint32_t bit;
	const char *name;
};

extern const struct trace_flag_name trace_bio_flag_names[], trace_rec_flag_names[];

/* One line of the timeline, sortable by time. */
struct tl_item {
	uint64_t ts;
	int order; /* ties: in the order they were added */
	char text[96];
};

#define TL_MAX (TRACE_MAX_EVENTS + TRACE_MAX_BIOS * 6 + 4)

double trace_us(uint64_t ns);
const char *trace_fmt_dur(uint64_t ns, char *buf, size_t len);
const char *trace_dev_name(uint32_t dev, char *buf, size_t len);
const char *trace_cgroup_name(struct trace_ctx *c, uint64_t cgid);
int trace_lookup_title(void *arg, uint32_t tgid, struct proc_title *t);
void trace_rec_ident(struct trace_ctx *c, const struct trace_rec *r, struct proc_ident *id,
		     const char **name, const char **cgroup, char *buf, size_t len);
const char *trace_offcpu_source(const struct trace_ctx *c, const struct trace_rec *r);
int trace_lookup_path(void *arg, const struct file_key *key, struct file_path *p);
const char *trace_rec_path(struct trace_ctx *c, const struct trace_rec *r, char *buf, size_t len);
const char *trace_ev_name(uint32_t type);
char trace_bio_dir(const struct trace_bio *b);
uint32_t trace_bios_missing(const struct trace_rec *r);
int trace_timeline(const struct trace_rec *r, struct tl_item *v);

/* render_json.c (also for Perfetto's arguments), perfetto.c */
void trace_json_flags(struct jw *jw, const char *key, uint32_t flags, bool bio);
void trace_perfetto_free_lanes(struct trace_ctx *c);
void trace_perfetto_write(struct trace_ctx *c, const struct trace_rec *r);

/*
 * trace.c: the BPF side with @c->o, and the reader of its ring buffer, for trace and
 * for commands that consume its requests themselves (watch's collector: @c->render's
 * request() is then theirs). Failures are reported. trace_cleanup() undoes any part.
 */
int trace_setup(struct trace_ctx *c);
void trace_cleanup(struct trace_ctx *c);

/* consume.c */
/* The reader of the slow requests' ring buffer (c->cmd.rb). 0 or -errno, said. */
int trace_consume_open(struct trace_ctx *c);

/* summary.c: reads the interval's histograms and hands them to the renderer. */
int trace_summarize(struct trace_ctx *c, double seconds, bool final);

/* accounts.c */
extern const char *const trace_cnt_names[TRACE_CNT_NR];
/* Requests lost: counted in "lost" (the others are informational). */
bool trace_cnt_is_loss(int i);
int trace_read_counters(struct trace_ctx *c, uint64_t *out);
void trace_sweep_writeback(struct trace_ctx *c, bool at_exit);
void trace_print_accounts(struct trace_ctx *c);

#endif
