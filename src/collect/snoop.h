/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snoop's collector: one record per completed block request (src/bpf/snoop.bpf.c),
 * put in the words a user reads once (src/collect/snoop/format.c) and handed to the
 * consumer's sink. setup.c: the BPF side with the options, the ring buffer, the counts.
 */
#ifndef IOSPAN_COLLECT_SNOOP_H
#define IOSPAN_COLLECT_SNOOP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "counters.h"
#include "disks.h"
#include "filters.h"
#include "snoop_abi.h"
#include "blk_owner_abi.h"
#include "probe.h"

struct snoop_opts {
	struct filter_opts filter; /* -d, -p, --tid, --comm, --cgroup, --file, --dir */
	uint32_t ops_mask;	   /* 1 << REQ_OP_*, 0: all */
	uint64_t min_latency_ns;
	uint64_t rb_bytes;
	bool text; /* the records' names escaped for a terminal (struct snoop_line) */
};

#define SNOOP_RB_DEFAULT (16ULL << 20)

/* snoop's defaults: every request of every disk, names as they are. */
void snoop_opts_default(struct snoop_opts *o);

/*
 * One record in the words a user reads (format.c); strings valid until the next. The
 * *_text ones are escaped for a terminal (printable()), set only by a formatter made
 * for text; the others are the names themselves.
 */
struct snoop_line {
	double wall;	  /* CLOCK_REALTIME seconds of the completion */
	int64_t wall_ns;  /* the same in ns */
	const char *comm; /* submitter's name, "?" if unknown */
	const char *disk;
	char rwbs[16];	       /* 8 used; the rest lets the renderer copy it whole */
	const char *cgroup;    /* cgroup v2 path, NULL if unknown */
	const char *container; /* short container id, NULL if none */
	const char *kind;      /* enum blk_owner_kind's name */
	const char *path;      /* file path, NULL if none captured */
	int64_t queue_ns, device_ns, total_ns; /* -1: unknown */
	/*
	 * Of device_ns, the driver's view (-1: no driver hook saw it): from its submission
	 * of the command (the issue, if that came first) to its taking the completion.
	 */
	int64_t drv_ns;
	/* Escaped names, in arrays of at least 16 bytes, and their lengths. */
	const char *comm_text, *disk_text;
	size_t comm_text_len, disk_text_len;
	const char *group_text; /* the container id, else the cgroup, else "-" */
	const char *path_text;	/* NULL with path */
};

struct bpfcmd;
struct snoop_ctx;

/*
 * format.c: names are kept per submitter name, cgroup and path capture (a few recent
 * ones each), so that a run of records of the same process and file looks nothing up.
 */
struct snoop_format;
struct cgroup_map;
/* Paths read from map @paths_fd; cgroups named by @cgmap (NULL: none), which it borrows. */
int snoop_format_new(int paths_fd, bool text, struct cgroup_map *cgmap, struct snoop_format **out);
void snoop_format_free(struct snoop_format *f);
void snoop_format(struct snoop_format *f, const struct snoop_io *e, struct snoop_line *l);
/* "R", "WS", "FWFS", ... (blktrace's rwbs) of @op and @rq_flags into @buf (8 bytes). */
void snoop_rwbs(uint32_t op, uint32_t rq_flags, char *buf);

/* The closing counts. */
struct snoop_totals {
	uint64_t events, lost, malformed, sent;
	uint64_t cnt[SNOOP_CNT_NR]; /* the BPF side's counters, named by snoop_counters */
	uint64_t missed_runs;
	double seconds;
};

extern const struct counter_def snoop_counters[SNOOP_CNT_NR];
/* Where the collector delivers each record, in words, as it arrives. */
struct snoop_sink {
	void (*event)(void *arg, const struct snoop_io *e, const struct snoop_line *l);
	void *arg;
};

/*
 * setup.c: open sets up and attaches the BPF side with @o (which must outlive it),
 * delivering to @sink; the caller's loop runs its life cycle (snoop_collect_cmd()).
 * next_epoch makes files' paths checked again; stop ends the sending and takes in what
 * was sent; totals counts what was seen and lost. All report their failures.
 */
int snoop_collect_open(const struct snoop_opts *o, const struct snoop_sink *sink,
		       struct snoop_ctx **out);
struct bpfcmd *snoop_collect_cmd(struct snoop_ctx *c);
void snoop_collect_next_epoch(struct snoop_ctx *c);
int snoop_collect_stop(struct snoop_ctx *c);
int snoop_collect_totals(struct snoop_ctx *c, struct snoop_totals *t);
void snoop_collect_close(struct snoop_ctx *c);
/* As top_collect_plan() (src/collect/top.h). */
int snoop_collect_plan(plan_show_fn show, void *arg);

#endif
