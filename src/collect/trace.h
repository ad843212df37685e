/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trace's collector: each request followed through the whole storage stack. The BPF
 * side (src/bpf/trace.bpf.c) correlates everything in the kernel and keeps per-op stage
 * histograms; only requests over the threshold arrive, through a ring buffer, and go to
 * the consumer's sink. Its consumers: iospan trace and watch's recorder. The files of
 * src/collect/trace/:
 *   setup.c     the BPF side with the options: hooks, globals, load, attach, the plan
 *   consume.c   records from the kernel: unpacked, checked, handed to the sink
 *   record.c    what a record says: who, which file, flag and event names, timeline
 *   summary.c   the per-op summary of an interval from the kernel's histograms
 *   accounts.c  counters, requests still in flight, the accounts at exit
 */
#ifndef IOSPAN_COLLECT_TRACE_H
#define IOSPAN_COLLECT_TRACE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpfcmd.h"
#include "counters.h"
#include "filters.h"
#include "units.h"
#include "hist.h"
#include "probe.h"
#include "procinfo.h"
#include "syscalls.h"
#include "trace_abi.h"

struct file_key;
struct file_path;
struct fspath_cache;
struct jw;
struct procinfo;
struct trace_bpf;

struct trace_opts {
	uint64_t threshold_ns;	   /* requests slower than this go to the sink */
	struct filter_opts filter; /* -p, --tid, --comm, --cgroup, --file, --dir, -d */
	uint32_t ops;
	bool offcpu_periods; /* sched_switch: time each off-CPU period */
	bool delayacct;	     /* kernel.task_delayacct on: exact iowait from counters */
	uint64_t rb_bytes;   /* ring buffer size (a power of two) */
	enum syscall_attach syscalls; /* how syscalls are followed (syscalls.h) */
};

#define TRACE_RB_DEFAULT (16ULL << 20)
#define TRACE_RB_ALL	 (64ULL << 20) /* every request to the sink (threshold 0) */

/* trace's defaults: requests over 10 ms, every op, exact iowait where the kernel counts it. */
void trace_opts_default(struct trace_opts *o);

/* One periodic summary: the interval's slow requests and stage histograms per op. */
struct trace_summary {
	double seconds;
	bool final;
	/* Slow requests the kernel sent, the sink was given, lost (buffer full). */
	uint64_t emitted, printed, dropped;
	uint64_t requests; /* completed, all ops */
	struct trace_op_hists ops[TRACE_OP_NR];
};

/* The accounts at exit. */
struct trace_totals {
	uint64_t cnt[TRACE_CNT_NR];
	uint64_t traced, lost, printed, in_flight, lanes_full, malformed, not_arrived;
};

/*
 * What a record names, resolved once per record (trace_rec_names()) before it goes to
 * the sink, so each renderer prints it without looking anything up again. Strings are
 * valid until the next record.
 */
struct trace_names {
	/* false: writeback of pages dirtied before tracing began, an owner nobody knows */
	bool owner_known;
	struct proc_ident id; /* its process: title, command line, blkio group */
	const char *name;     /* its title if it set one ("postgres: checkpointer"), else comm */
	const char *cgroup;   /* its cgroup v2 path, "?" if unknown */
	/* The cgroup, or "blkio:GROUP" for a process in the v2 root that has a blkio group. */
	const char *group;
	const char *path; /* its file, NULL if not captured */
	const char *offcpu_from;
	char group_buf[PATH_MAX], path_buf[PATH_MAX];
};

/* Where the collector delivers each slow request as it arrives (bpfcmd_poll/run). */
struct trace_sink {
	void (*request)(void *arg, const struct trace_rec *r, const struct trace_names *n);
	void *arg;
};

struct trace_ctx {
	const struct trace_opts *o;
	struct trace_sink sink;
	struct bpfcmd cmd;	/* the life cycle: plan, ring buffer, CPUs, cgroup names */
	struct trace_bpf *skel; /* cmd's */
	struct fspath_cache *paths;
	struct procinfo *procinfo;
	int64_t mono_to_real;	     /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	struct trace_op_hists *pcpu; /* one map value per CPU, for reading */
	struct trace_op_hists *prev; /* cumulative histograms at the previous summary */
	uint64_t delivered;	     /* slow requests given to the sink */
	uint64_t malformed;	     /* records whose bios and events do not add up to their size */
	uint64_t wb_swept, in_flight;
	/* thread_recs and async_slots, mapped read-only: counted at exit. */
	const void *thread_recs, *async_slots;
	/* Counts at the previous summary: the output's rate and the drops per interval. */
	uint64_t prev_delivered, prev_emitted, prev_dropped;
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

#define TL_MAX (TRACE_MAX_EVENTS + TRACE_MAX_BIOS * 8 + 4)

double trace_us(uint64_t ns);
const char *trace_fmt_dur(uint64_t ns, char *buf, size_t len);
const char *trace_dev_name(uint32_t dev, char *buf, size_t len);
const char *trace_cgroup_name(struct trace_ctx *c, uint64_t cgid);
int trace_lookup_title(void *arg, uint32_t tgid, struct proc_title *t);
/* What @r names: its process, cgroup and file, where off-CPU time comes from. */
void trace_rec_names(struct trace_ctx *c, const struct trace_rec *r, struct trace_names *n);
int trace_lookup_path(void *arg, const struct file_key *key, struct file_path *p);
const char *trace_rec_path(struct trace_ctx *c, const struct trace_rec *r, char *buf, size_t len);
const char *trace_ev_name(uint32_t type);
char trace_bio_dir(const struct trace_bio *b);
uint32_t trace_bios_missing(const struct trace_rec *r);
int trace_timeline(const struct trace_rec *r, struct tl_item *v);
/* Whether the record's stages include d2c's driver split (drv_in, device, drv_out). */
bool trace_rec_has_drv_stages(const struct trace_rec *r);
/* A bio's driver split of its d2c into @st (drv_in, device, drv_out): false if none. */
bool trace_bio_drv_stages(const struct trace_bio *b, uint64_t st[3]);
/* A bio's "driver" member (null if no driver hook saw it), times from @start. */
void trace_json_driver(struct jw *jw, const struct trace_bio *b, uint64_t start);

/* JSON of a flag word: an array of the names of its bits (watch's, trace's renderer). */
void trace_json_flags(struct jw *jw, const char *key, uint32_t flags, bool bio);

/*
 * setup.c: the BPF side with @o (which must outlive it), delivering to @sink (NULL:
 * nothing wanted), and the reader of its ring buffer; @c zeroed by the caller. Failures
 * are reported. trace_collect_close() undoes any part of it.
 */
#define TRACE_MAX_HOOKS 72
int trace_collect_open(struct trace_ctx *c, const struct trace_opts *o,
		       const struct trace_sink *sink);
/* Stops the kernel's sending and takes in what it sent. 0 or -errno, said. */
int trace_collect_stop(struct trace_ctx *c);
void trace_collect_close(struct trace_ctx *c);
/* As top_collect_plan() (src/collect/top.h). */
int trace_collect_plan(plan_show_fn show, void *arg);

/* consume.c: the reader of the slow requests' ring buffer (c->cmd.rb). 0 or -errno, said. */
int trace_consume_open(struct trace_ctx *c);

/* summary.c: the histograms and counts of the interval since the previous summary. */
int trace_collect_summary(struct trace_ctx *c, double seconds, bool final,
			  struct trace_summary *sum);

/* accounts.c */
extern const struct counter_def trace_counters[TRACE_CNT_NR];
int trace_read_counters(struct trace_ctx *c, uint64_t *out);
void trace_sweep_writeback(struct trace_ctx *c, bool at_exit);
/* The accounts at exit: counters, what is still in flight, what was lost. */
void trace_collect_totals(struct trace_ctx *c, struct trace_totals *t);

#endif
