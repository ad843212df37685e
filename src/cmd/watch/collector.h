/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The seam BPF collectors plug into iospan watch: top's per-process and per-file
 * attribution and its I/O stalls (collect_top.c), trace's slow requests
 * (collect_trace.c). A collector keeps its own
 * pre-trigger window in memory (as watch keeps the iostat one) and writes rows into
 * the processes, files, slow_requests and stalls tables (docs/iospan-watch.md) only
 * while an incident is open.
 *
 * Every sample, after the iostat sample is taken, watch calls ->sample() of each
 * collector. When an incident is open, a transaction is open on the database around
 * the calls, so a collector's rows of that sample land together with the iostat ones,
 * or not at all.
 */
#ifndef IOSPAN_WATCH_COLLECTOR_H
#define IOSPAN_WATCH_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroups.h"
#include "common_abi.h"
#include "disks.h"

struct jw;
struct metrics;
struct metrics_collector;
struct sqlite3;
struct sqlite3_stmt;
struct watch_opts;
struct io_sample;

/* What a collector learns each sample. */
struct watch_tick {
	const struct io_sample *sample; /* the iostat sample just taken */
	double pre_s;			   /* the pre-trigger window to keep, seconds */
	int64_t incident_id;		   /* the open incident, 0 if none */
	/*
	 * The incident opened at this sample: write the pre-trigger window kept so far
	 * (phase 'pre'), then this sample (phase 'capture').
	 */
	bool opened;
	bool closing;	    /* this is the incident's last sample */
	struct sqlite3 *db; /* with a transaction open when incident_id != 0; else NULL */
};

struct watch_collector_ops {
	const char *name;
	/*
	 * Load and attach with watch's options @o (they outlive the collector); 0, or a
	 * negative errno and watch goes on without it (logged). 1: off by its options,
	 * not loaded and not logged as a failure.
	 */
	int (*open)(const struct watch_opts *o, void **priv);
	/*
	 * Optional: called with each sample before the rules are checked, to put in it
	 * what a rule needs from this collector (the slowest request of each disk).
	 */
	void (*observe)(void *priv, struct io_sample *s);
	/*
	 * Read the kernel's maps, keep the window, write rows when an incident is open.
	 * A negative errno is logged and the sample stays stored without this collector's
	 * rows (the transaction is still committed).
	 */
	int (*sample)(void *priv, const struct watch_tick *tick);
	/*
	 * Optional, with --listen, after ->sample(): what the metrics endpoint tells of
	 * this collector (src/export/metrics.h): its programs, hooks and losses so far into
	 * @self, and what it measured noted in @m (top's: the disks' histograms).
	 */
	void (*export)(void *priv, struct metrics *m, struct metrics_collector *self);
	/*
	 * Optional, after ->sample(): the slow requests read for that sample, each handed
	 * out once (for OTLP export); NULL if none.
	 */
	const struct coll_slow_sample *(*slow_requests)(void *priv);
	void (*close)(void *priv);
};

/* The collectors watch runs, in order; the list ends with a NULL name. */
extern const struct watch_collector_ops *const watch_collectors[];

/* collect_top.c, collect_trace.c */
extern const struct watch_collector_ops watch_collector_top, watch_collector_trace;

/*
 * collector.c: what collectors share. A ring of their per-sample records, oldest first:
 * each record starts with its sample's time (a double); @clear frees what one holds.
 */
struct coll_ring {
	char *slots;
	size_t size; /* of a record */
	unsigned int cap, nr, head;
	void (*clear)(void *rec);
};

void coll_ring_init(struct coll_ring *r, size_t size, void (*clear)(void *rec));
void *coll_ring_at(const struct coll_ring *r, unsigned int i);
/* A zeroed record at the end (the ring grows while --pre holds more); NULL: no memory. */
void *coll_ring_push(struct coll_ring *r);
/* Drops the records older than @pre_s before @now (the newest always stays). */
void coll_ring_trim(struct coll_ring *r, double now, double pre_s);
void coll_ring_free(struct coll_ring *r);
/*
 * The rows of @tick's incident: the window kept ('pre') when it opened, then the
 * newest record ('capture'), each through @write. 0 or the first error.
 */
int coll_ring_write(const struct coll_ring *r, const struct watch_tick *tick,
		    int (*write)(void *priv, struct sqlite3 *db, int64_t id, const void *rec,
				 const char *phase),
		    void *priv);

/*
 * Which watched disk of a sample a block device (kernel dev_t: a disk, or a partition
 * of one) is, remembered for the sample (sysfs is read once per device).
 */
#define COLL_DEV_CACHE 64
struct coll_devs {
	const struct io_sample *ws;
	struct {
		uint32_t dev;
		int disk;
	} v[COLL_DEV_CACHE];
	unsigned int nr;
};

void coll_devs_reset(struct coll_devs *d, const struct io_sample *ws);
/* The index of @dev's disk in the sample's disks, or -1 if it is not watched. */
int coll_devs_disk(struct coll_devs *d, uint32_t dev);

/*
 * The slow requests kept of one sample's window, for slow_requests: top's (block
 * detail) or trace's (full detail). While no incident is open the slowest
 * COLL_SLOW_PRE_MAX of a sample are kept, during a capture COLL_SLOW_CAPTURE_MAX;
 * those past the cap are counted in ->dropped.
 */
#define COLL_SLOW_PRE_MAX     20
#define COLL_SLOW_CAPTURE_MAX 500
#define COLL_SLOW_STAGES      11 /* stages of a request that add up to its total */

struct coll_slow_req {
	double time;	   /* its start, wall clock */
	uint32_t pid, tid; /* tid 0: not known (NULL in the table) */
	bool owner_known;  /* writeback of pages dirtied before tracing: no owner */
	char comm[IOSPAN_COMM_LEN];
	char disk[DISK_NAME_LEN];
	const char *op; /* a static name: trace's op, or the block op */
	int64_t offset;
	uint64_t bytes, total_ns;
	char *path;
	char *cgroup; /* its cgroup v2 path, NULL if not known */
	char container[CONTAINER_ID_LEN + 1];
	char *stages; /* JSON object: each stage in µs, and what the collector says of it */
	/* The stages that add up to total_ns, in time order (names are static). */
	struct {
		const char *name;
		uint64_t ns;
	} stage[COLL_SLOW_STAGES];
	unsigned int nr_stages;
	/* The file (fs device, inode, generation) for a collector that names it later. */
	uint32_t fs_dev, gen;
	uint64_t ino;
};

struct coll_slow_sample {
	double time; /* the iostat sample's */
	struct coll_slow_req *reqs;
	unsigned int nr, cap;
	uint64_t dropped; /* slower than the threshold, past the cap */
	uint64_t lost;	  /* the ring buffer had no room (or malformed records) */
};

/*
 * A slot of @p for a request of @total_ns: a free one, or the fastest kept's if this
 * one is slower (counted as dropped), or NULL (it is dropped). @capturing: the cap.
 */
struct coll_slow_req *coll_slow_slot(struct coll_slow_sample *p, bool capturing, uint64_t total_ns);
/* Frees what the requests of sample @rec (a struct coll_slow_sample) hold. */
void coll_slow_clear(void *rec);
/* Sample @rec's requests (and what it dropped or lost) into slow_requests. */
int coll_slow_write(void *priv, struct sqlite3 *db, int64_t id, const void *rec, const char *phase);

/*
 * SQLite helpers: a row's first columns, incident_id, time and phase (each collector
 * table starts with them); NULL for an empty or absent text; a step then a reset (0 or
 * -EIO).
 */
void coll_bind_key(struct sqlite3_stmt *s, int64_t id, double time, const char *phase);
void coll_bind_text(struct sqlite3_stmt *s, int col, const char *v);
int coll_step_reset(struct sqlite3_stmt *s);
/*
 * A slow request's "parts": its stage[] in time order, as [name, µs] pairs (what adds up
 * to its total: iospan report's waterfall), into the stages object being written.
 */
void coll_json_parts(struct jw *jw, const struct coll_slow_req *q);
/* The JSON text @fill writes (one value), malloc'ed; NULL: no memory. */
char *coll_json(void (*fill)(struct jw *jw, const void *arg), const void *arg);
/* A 'dropped' row: @count records of @what the collector could not keep. */
int coll_write_dropped(struct sqlite3 *db, int64_t id, double time, const char *phase,
		       const char *what, uint64_t count);

#endif
