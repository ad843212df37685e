/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan snoop: one line per completed block request. snoop.c parses the options and
 * runs the BPF side (src/bpf/snoop.bpf.c); format.c turns a record into the fields a
 * user reads; render.c writes them as text or JSON Lines, and the closing counts.
 */
#ifndef IOSPAN_SNOOP_H
#define IOSPAN_SNOOP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "disks.h"
#include "filters.h"
#include "lib/snoop_abi.h"
#include "lib/blk_owner_abi.h"

struct snoop_opts {
	struct filter_opts filter; /* -d, -p, --tid, --comm, --cgroup, --file, --dir */
	uint32_t ops_mask;	   /* 1 << REQ_OP_*, 0: all */
	uint64_t min_latency_ns;
	uint64_t duration_ns; /* 0: until Ctrl-C */
	uint64_t rb_bytes;
	const char *out_path; /* -o FILE, NULL: stdout */
};

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
	char rwbs[16]; /* 8 used; the rest lets the renderer copy it whole */
	const char *cgroup;		       /* cgroup v2 path, NULL if unknown */
	const char *container;		       /* short container id, NULL if none */
	const char *kind;		       /* enum blk_owner_kind's name */
	const char *path;		       /* file path, NULL if none captured */
	int64_t queue_ns, device_ns, total_ns; /* -1: unknown */
	/* Escaped names, in arrays of at least 16 bytes, and their lengths. */
	const char *comm_text, *disk_text;
	size_t comm_text_len, disk_text_len;
	const char *group_text; /* the container id, else the cgroup, else "-" */
	const char *path_text;	/* NULL with path */
};

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

/* render.c */
struct snoop_render;
/* Writes to @out: text (a header line first), or JSON Lines with @json. */
int snoop_render_new(FILE *out, bool json, struct snoop_render **outp);
void snoop_render_free(struct snoop_render *r);
void snoop_render_event(struct snoop_render *r, const struct snoop_io *e,
			const struct snoop_line *l);
/* Writes the lines kept so far and flushes @out: 0 or -EIO. */
int snoop_render_flush(struct snoop_render *r);

/* The closing counts. */
struct snoop_totals {
	uint64_t events, lost, malformed, sent;
	uint64_t no_owner, no_issue, filtered, partial, inflight_full;
	uint64_t dirtier_full, no_dirtier, completion_unseen, no_queue;
	uint64_t missed_runs;
	double seconds;
};
/* JSON: the trailer object on @out; text: a summary on stderr. */
void snoop_render_totals(struct snoop_render *r, const struct snoop_totals *t);

#endif
