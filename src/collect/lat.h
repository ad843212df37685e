/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lat's collector: block request latency and size distributions, kept in the kernel
 * per key (src/bpf/lat.bpf.c). The files of src/collect/lat/:
 *   setup.c   the BPF side with the options, and a read per window
 *   report.c  the kernel's histograms turned into a report (the changes of a window)
 *   kind.c    pure: what a request's queuing stack says it is (readahead, fault, ...)
 */
#ifndef IOSPAN_COLLECT_LAT_H
#define IOSPAN_COLLECT_LAT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "disks.h"
#include "filters.h"
#include "hist.h"
#include "lat_abi.h"
#include "probe.h"

struct bpfcmd;
struct cgroup_map;
struct lat_ctx;
struct fspath_cache;
struct ksyms;
struct jw;

struct lat_opts {
	uint32_t stage;		   /* enum lat_stage */
	uint32_t key_fields;	   /* enum lat_key_field */
	bool millis;		   /* -m */
	bool timestamps;	   /* -T */
	bool size;		   /* --size */
	struct filter_opts filter; /* -d and the target filters */
	uint64_t max_entries;
};

#define LAT_DEFAULT_ENTRIES 2048

/* lat's defaults: q2c per disk, LAT_DEFAULT_ENTRIES keys. */
void lat_opts_default(struct lat_opts *o);

/* One key's histogram for a report: the change since the previous report. */
struct lat_row {
	struct lat_key key;
	struct lat_hist h;
};

struct lat_report {
	struct lat_row *rows;
	size_t nr;
	uint64_t drops[LAT_DROP_NR]; /* since the previous report */
	/*
	 * Runs of lat's programs the kernel skipped since the previous report (fired while
	 * the same program ran on that CPU): requests missed, or their owner or issue.
	 */
	uint64_t skipped;
	/*
	 * Requests /proc/diskstats completed on the disk of -d that no program saw and
	 * nothing above declares (the kernel ran no program for them): a lower bound, since
	 * the previous report. Only where lat counts every request of one whole disk.
	 */
	uint64_t not_seen;
	bool not_seen_known;
	double seconds; /* the window */
};

/*
 * The queuing stacks by id (--by stack): the kernel keeps each stack with its id, keyed
 * by the stack (blk_owner_stack_ids); read again when an id is not known yet.
 */
struct lat_stack {
	int32_t id;
	struct blk_owner_stack st;
};

struct lat_stacks {
	int fd;		     /* blk_owner_stack_ids, -1 without --by stack */
	struct lat_stack *v; /* by id */
	size_t nr, cap;
};

/* The stack of @id, or NULL if the kernel kept none (report.c). */
const struct blk_owner_stack *lat_stacks_find(struct lat_stacks *s, int32_t id);
void lat_stacks_free(struct lat_stacks *s);

/* What the renderers need besides the report. */
struct lat_view {
	const struct lat_opts *o;
	struct cgroup_map *cgmap;
	struct ksyms *ksyms;
	struct lat_stacks *stacks;
	struct fspath_cache *paths; /* --by file: the files' paths */
	struct jw *jw;		    /* --json */
};

/* report.c */
struct lat_state {
	struct lat_row *prev; /* sorted by key */
	size_t nr_prev;
	uint64_t prev_drops[LAT_DROP_NR];
};
/*
 * Reads the hists and counters maps (@hists_fd, @counters_fd) into @r, as the change
 * since the previous call (@st keeps the totals). Rows sorted for display.
 */
int lat_report_read(struct lat_state *st, int hists_fd, int counters_fd, struct lat_report *r);

/* lat's counters (lat_abi.h: enum lat_drop): requests that are in no histogram. */
extern const struct counter_def lat_counters[LAT_DROP_NR];
void lat_report_free(struct lat_report *r);
void lat_state_free(struct lat_state *st);
/* The value (in the display unit) of a histogram's @pct percentile. */
double lat_percentile(const struct lat_hist *h, double pct);
#define LAT_LOG2_ROWS HIST_LOG2_ROWS(LAT_SCALE_SHIFT)

/* kind.c */
/*
 * What a request of kind @kind (lat_key.kind: enum blk_owner_kind, with
 * LAT_KIND_RA_ASYNC) is, by the @nr function names of the stack that queued it,
 * innermost first (NULL: unknown): a page cache read the block layer marks readahead
 * is "read" (a read's own miss), "readahead" (async readahead), "fault",
 * "readahead(2)", "fadvise" or "madvise" (WILLNEED), or "readahead" if the stack does
 * not say; other kinds keep their names ("direct", "buffered", ...).
 */
const char *lat_stack_kind(uint32_t kind, const char *const *frames, size_t nr);

/*
 * setup.c: open sets up and attaches the BPF side with @o (which must outlive it), read
 * gives the window since the previous read (@seconds long) into @r (lat_report_free()),
 * view fills what a renderer needs of it. All report their failures.
 */
int lat_collect_open(const struct lat_opts *o, struct lat_ctx **out);
int lat_collect_read(struct lat_ctx *c, double seconds, struct lat_report *r);
void lat_collect_view(struct lat_ctx *c, struct lat_view *v);
/* Its life cycle, for the caller's main loop (bpfcmd_start(), bpfcmd_run()). */
struct bpfcmd *lat_collect_cmd(struct lat_ctx *c);
void lat_collect_close(struct lat_ctx *c);
/* As top_collect_plan() (src/collect/top.h). */
int lat_collect_plan(plan_show_fn show, void *arg);

#endif
