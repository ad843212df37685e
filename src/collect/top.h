/* SPDX-License-Identifier: GPL-2.0 */
/*
 * top's collector: who does I/O, to which file, how slow (per owner, device and file),
 * writeback credited to the dirtiers, cache flushes, I/O stalls, and the coverage of
 * /proc/diskstats. Its consumers: iospan top and watch's recorder.
 *
 * The BPF side (src/bpf/top.bpf.c) sums everything per (owner, device, inode) in
 * kernel maps. The files of src/collect/top/:
 *   setup.c    the BPF side: globals, map sizes, hooks, load, attach, the plan;
 *   collect.c  the collector API, and reading the maps once per read: rows summed over
 *              CPUs, deltas in periodic mode, I/O stalls and slow requests from the
 *              ring buffer; the names the model asks for (struct top_names);
 *   model.c    pure: rows grouped into processes (or files, directories), checked
 *              against /proc/diskstats (coverage). It reads nothing: what it needs to
 *              know of the world it asks through struct top_names.
 */
#ifndef IOSPAN_COLLECT_TOP_H
#define IOSPAN_COLLECT_TOP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroups.h"
#include "disks.h"
#include "diskstats.h"
#include "filters.h"
#include "units.h"
#include "bpfcmd.h"
#include "counters.h"
#include "syscalls.h"
#include "top_abi.h"

struct attach_hook;
struct cgroup_map;
struct fspath_cache;
struct jw;
struct ksyms;
struct procinfo;
struct rbuf;
struct top_bpf;

#define MAX_STALLS   512

enum sort_key { SORT_DISK, SORT_FS, SORT_READ, SORT_WRITE, SORT_LATENCY };

/* What the main table's rows are: processes, files, or directories (--by). */
enum top_by { BY_PROCESS, BY_FILE, BY_DIR };

struct top_opts {
	uint64_t interval_ns;	       /* periodic: reads give the changes since the previous one */
	struct filter_opts filter;     /* the target: -p, -d, --cgroup */
	uint64_t max_procs, max_files; /* rows a report shows */
	uint64_t max_entries;
	enum sort_key sort;
	bool threads;
	bool no_syscalls; /* FS bytes without syscall tracepoints */
	enum syscall_attach syscalls; /* how syscalls are followed (syscalls.h) */
	enum top_by by;
	uint64_t dir_depth; /* --by dir: path components the directories keep */
	uint64_t stall_ns;  /* 0: stalls not traced */
	/* Stalls only between top_collect_stalls(c, true) and (c, false): watch's captures. */
	bool stalls_on_demand;
	/* Requests slower than this (q2c; 0: none) go to the sink's slow_rq() (below). */
	uint64_t slow_rq_ns;
	/* Latency and size histograms per disk and op (top_collect_disk_hists()). */
	bool disk_hists;
};

/* A disk's histograms for one op (top_abi.h), summed over the CPUs since the start. */
struct top_disk_hist {
	uint32_t dev; /* KDEV of the disk */
	enum top_dh_op op;
	struct top_dhist h;
};

/* Where the collector delivers what arrives as it happens (top_collect_poll()). */
struct top_sink {
	/* A request slower than the options' slow_rq_ns; NULL: none wanted. */
	void (*slow_rq)(void *arg, const struct top_slow_rq *e);
	void *arg;
};

/* One (owner, device, inode) row of the stats map, summed over CPUs. */
struct row {
	struct top_key key;
	uint64_t fs_read, fs_write, disk_read, disk_write;
	uint64_t q2c_sum, d2c_sum, q2c_max, d2c_max;
	uint64_t nr_q2c, nr_d2c;
	uint64_t nr_q2c_write, q2c_write_sum; /* of nr_q2c and q2c_sum, the writes' */
	uint32_t flags, bdev;
	uint32_t path_epoch; /* the last path check of its file (top_stat) */
};

struct wbrow {
	struct top_wb_key key;
	uint64_t bytes, nr;
};

struct proc_agg {
	uint32_t pid;
	struct top_proc info;
	struct row sum;	  /* totals over the process's rows but flushes (key unused) */
	struct row flush; /* its cache flushes: nr_q2c of them, q2c_* their latency */
	uint64_t writeback_bytes;
	uint32_t nr_files;
	struct row **files; /* rows of this process but flushes, sorted */
	size_t nr_rows;
	struct row **flushes; /* its flush rows, one per disk */
	size_t nr_flush_rows;
};

struct stall_agg {
	uint32_t tid, tgid;
	uint64_t cgid;
	char comm[IOSPAN_COMM_LEN];
	uint64_t count, total_ns, max_ns;
	int nr_ips;
	uint64_t ips[TOP_STACK_DEPTH];
};

/*
 * Requests of one device issued before /proc/diskstats was read whose completion top
 * has not seen: in flight, or completed without its program running (found when the
 * request is issued again). /proc/diskstats may count these beyond top's numbers.
 */
struct rq_open {
	uint32_t dev; /* KDEV: the bios' device (a partition), or the disk (flushes) */
	uint64_t requests;
	uint64_t read_bytes, write_bytes;
	uint64_t flushes, flush_ns; /* flushes, and the most they can have taken */
};

struct dev_cov {
	unsigned int major, minor;
	char name[DISK_NAME_LEN];
	uint64_t ds_read, ds_write;	/* /proc/diskstats sectors * 512 in the window */
	uint64_t seen_read, seen_write; /* completed bytes iospan accounted */
	uint64_t unattr_read, unattr_write;
	uint64_t flushes, flush_ns; /* cache flushes the disk completed, their time */
	/* Of flushes, those not timed (completion unseen), and the most they took. */
	uint64_t flushes_untimed, flush_untimed_ns;
	uint64_t ds_flushes, ds_flush_ms; /* /proc/diskstats' flush fields in the window */
	struct rq_open unresolved;	  /* issued before ds_end, completion not seen */
	struct drv_disk_stats drv;	  /* the driver's counters in the window */
	bool traced; /* request-based (blk-mq): bio-based devices are not counted */
	bool ds_known;
	bool ds_flush_known; /* the kernel prints flush fields (5.5+) */
};

/* The cache flushes and the driver's counters of one disk (disk_counts map). */
struct disk_counts_row {
	uint32_t dev;
	uint64_t nr, ns;
	uint64_t untimed, untimed_ns; /* struct top_disk_counts */
	struct drv_disk_stats drv;
};

/*
 * What the model needs to know of the world, asked by name: the collector answers from
 * its maps, /proc and sysfs (top_collect_open() fills its ->names); a unit test from a
 * table. So the model itself reads nothing.
 */
struct top_names {
	void *arg;
	/* An owner's identity: recorded by BPF, else /proc while it lives. */
	void (*proc)(void *arg, uint32_t pid, struct top_proc *info);
	/* The path of a file (device, generation, inode) as it is now; NULL: not captured. */
	const char *(*file_path)(void *arg, uint32_t dev, uint32_t gen, uint64_t ino);
	/* The whole disk a block device (a partition, or a disk) belongs to; 0 or -errno. */
	int (*disk_of)(void *arg, unsigned int major, unsigned int minor, struct disk *d);
	/* A block device's kernel name, "" if it has none. */
	void (*dev_name)(void *arg, unsigned int major, unsigned int minor, char *buf, size_t len);
	/* Request-based (blk-mq), so its requests are traced: dm, md and zram are not. */
	bool (*request_based)(void *arg, unsigned int major, unsigned int minor);
};

/*
 * A collector of top's numbers (collect.c), and what the report needs besides. The
 * BPF life cycle is cmd's: skeleton, attach plan, stall ring buffer, cgroup names,
 * kernel symbols for the stall stacks.
 */
struct top_ctx {
	const struct top_opts *o;
	struct bpfcmd cmd;
	struct top_bpf *skel; /* cmd's */
	struct fspath_cache *fspaths;
	struct procinfo *procinfo;
	/* Cumulative values at the previous report (periodic mode). */
	struct row *prev;
	size_t nr_prev;
	struct wbrow *prev_wb;
	size_t nr_prev_wb;
	struct disk_counts_row *prev_fl;
	size_t nr_prev_fl;
	uint64_t prev_drops[TOP_DROP_NR];
	uint32_t gen;
	struct ds_snapshot ds_start, ds_end;
	struct stall_agg *stalls;
	size_t nr_stalls;
	uint64_t stalls_dropped;
	/* A snapshot has taken the stalls: the next one starts from none. */
	bool stalls_taken;
	struct top_sink sink;
	struct top_names names; /* the model's questions, answered from this collector */
	uint64_t reads;
	uint64_t pruned;
	/* CLOCK_MONOTONIC of the last map read: where the next report's window starts. */
	uint64_t window_start_ns;
	uint64_t next_housekeep_ns;	    /* top_collect_poll() */
	uint64_t ds_end_ns;		    /* CLOCK_MONOTONIC just after the last read of ds_end */
	const struct top_rq_slot *rq_slots; /* the rq_issues table, mapped; NULL: none */
	size_t nr_rq_slots;
	struct bpf_link *stall_link; /* stalls_on_demand: attached while asked */
};

/*
 * One read of the maps (top_collect_read()): the window since the previous read, or
 * since tracing started. @rows, @wb and @flushes are the snapshot's; the stalls and
 * the /proc/diskstats samples of the window (ds_start, ds_end) stay the collector's,
 * valid until its next poll or read.
 */
struct top_snapshot {
	double seconds;	  /* the window the numbers cover: from one map read to the next */
	double timestamp; /* wall clock of this read (the window's end) */
	bool deltas;	  /* changes in the window (periodic), else totals since the start */
	struct row *rows; /* sorted by key */
	size_t nr_rows;
	struct wbrow *wb;
	size_t nr_wb;
	struct disk_counts_row *flushes; /* per disk, in the window */
	size_t nr_flushes;
	struct rq_open *open; /* per device: issued before ds_end, completion not seen */
	size_t nr_open;
	uint64_t drops[TOP_DROP_NR];
	struct stall_agg *stalls;
	size_t nr_stalls;
	uint64_t stalls_dropped;
};

/* What one report shows: a snapshot's numbers (not owned), and the model built on them. */
struct report {
	struct top_snapshot *snap; /* rows and writeback rows (sorted by key), flushes... */
	bool stopped;
	struct proc_agg *procs;
	size_t nr_procs;
	struct dev_cov *devs;
	size_t nr_devs;
	struct by_group *groups; /* --by file / dir: the rows of the main table */
	size_t nr_groups;
};

/* A row of the file or directory table: the sum of its files' rows. */
struct by_group {
	struct row sum; /* key.dev, key.ino, key.gen: the file's, or a no-file kind's */
	char *name;	/* the file's path or the directory; NULL: none (a kind, uncaptured) */
	uint32_t nr_files;
	uint32_t *pids; /* the processes whose rows it sums, distinct */
	size_t nr_pids;
};

struct cg_desc {
	const char *path; /* relative to the cgroup2 mount, NULL if unknown */
	struct container ct;
	bool has_ct;
};

/*
 * The collection API (collect.c), for top and for commands that run collectors of
 * their own (watch): open sets up and attaches the BPF side with @o (top_opts_default()
 * then the caller's changes; @o must outlive the collector) and delivers to @sink (NULL:
 * nothing delivered), read takes a snapshot, poll reads stall events and slow requests
 * and does the housekeeping for callers with a loop of their own (top's loop runs them
 * through bpfcmd_run()). All report their failures.
 */
void top_opts_default(struct top_opts *o);
int top_collect_open(const struct top_opts *o, const struct top_sink *sink, struct top_ctx **out);
int top_collect_read(struct top_ctx *c, struct top_snapshot *snap);
void top_snapshot_free(struct top_snapshot *snap);
int top_collect_poll(struct top_ctx *c, int timeout_ms);
/*
 * Each disk's cache flushes and driver counters since the collector opened (cumulative),
 * in *@rows (free() it); none yet: NULL, 0.
 */
int top_collect_disk_counts(struct top_ctx *c, struct disk_counts_row **rows, size_t *nr);
/* With disk_hists: every disk and op's histograms so far, a new array in *@rows (free()). */
int top_collect_disk_hists(struct top_ctx *c, struct top_disk_hist **rows, size_t *nr);
/* Once a second: cgroups and titles of the processes seen named while they live. */
void top_collect_housekeep(void *ctx);
void top_collect_close(struct top_ctx *c);
/*
 * With stalls_on_demand: attaches (@on) or detaches the stall program, timing only the
 * sleeps that begin after it is attached. 0, or an error reported.
 */
int top_collect_stalls(struct top_ctx *c, bool on);
/*
 * The hooks top's collector with the defaults (top_opts_default()) attaches on this
 * machine, given to @show (doctor's plan): as set up and attached, or, where that
 * fails, what it would try and why not.
 */
int top_collect_plan(plan_show_fn show, void *arg);

/* setup.c: the BPF side of a collector, and the hooks of a plan (TOP_MAX_HOOKS). */
#define TOP_MAX_HOOKS 72
int top_hooks(struct top_bpf *s, const struct top_opts *o, struct attach_hook *hooks);
int top_setup(struct top_ctx *c);
void top_teardown(struct top_ctx *c);

/* collect.c: reading the maps, and the names of what the rows are about */
int top_lookup_path(void *arg, const struct file_key *key, struct file_path *p);
int top_lookup_title(void *arg, uint32_t tgid, struct proc_title *t);
int top_on_stall(void *ctx, const void *data, uint32_t size);
/* The ring buffer's handler of slow requests: on to the sink's slow_rq(). */
int top_on_slow_rq(void *ctx, const void *data, uint32_t size);
const char *top_file_path(struct top_ctx *c, const struct row *r);
void top_proc_info(struct top_ctx *c, uint32_t pid, struct top_proc *info);
void top_describe_cgroup(struct top_ctx *c, uint64_t cgid, struct cg_desc *d);
const char *top_row_disk_name(struct top_ctx *c, const struct row *r, char *buf, size_t len);
const char *top_wb_path(struct top_ctx *c, const struct report *rep, const struct wbrow *w);
/* A report of @snap (its numbers, not owned) as the options ask: processes, groups, coverage. */
int top_collect_report(struct top_ctx *c, struct top_snapshot *snap, bool stopped,
		       struct report *rep);

/* model.c: pure */
extern const struct counter_def top_counters[TOP_DROP_NR];
extern const char *const top_by_names[];
int top_key_cmp(const struct top_key *a, const struct top_key *b);
int top_row_cmp_key(const void *a, const void *b);
int top_wb_cmp_key(const void *a, const void *b);
uint64_t top_sub0(uint64_t a, uint64_t b);
bool top_ino_special(uint64_t ino);
const char *top_kind_name(uint64_t ino);
bool top_row_is_flush(const struct row *r);
const char *top_kind_label(uint64_t ino);
bool top_row_active(const struct row *r);
int top_row_ptr_cmp(const void *a, const void *b, void *key);
void top_row_add(struct row *sum, const struct row *r);
int top_stall_cmp(const void *a, const void *b);
double top_avg_us(uint64_t sum, uint64_t nr);
uint32_t top_proc_tgid(uint32_t pid, const struct top_proc *info);
int top_wb_bytes_cmp(const void *a, const void *b);
double top_pct(uint64_t part, uint64_t whole);
bool top_coverage_meaningful(const struct top_opts *o);
void top_groups_free(struct by_group *v, size_t n);
/* The active rows grouped per owner, sorted as @o says. */
int top_group_procs(const struct top_opts *o, const struct top_names *n, struct report *rep);
/* --by file or dir: the rows of the main table. */
int top_group_by(const struct top_opts *o, const struct top_names *n, struct report *rep);
/* Per device: what the rows and flushes account against /proc/diskstats' window. */
int top_compute_coverage(const struct top_opts *o, const struct top_names *n,
			 const struct ds_snapshot *ds_start, const struct ds_snapshot *ds_end,
			 struct report *rep);
void top_report_free(struct report *rep);

#endif
