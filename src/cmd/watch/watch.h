/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan watch: a flight recorder for I/O incidents, and iospan incidents, its reader.
 *
 *   options.c    options, the config file (key = value, as the long options)
 *   trigger.c    pure: rule checks held for N samples, the incident gate (capture,
 *                cooldown, per-hour cap), the onset found in a pre-trigger window
 *   sampler.c    /proc/diskstats and /proc/pressure/io into per-disk iostat metrics
 *   window.c     the rolling pre-trigger window, in memory
 *   store.c      the SQLite store: schema, writes, retention, the watcher's lock
 *   watch.c      the loop: sample, check, open / extend / close incidents, collectors
 *   incidents.c  iospan incidents: list, show, export, prune
 *   export_perfetto.c  incidents export --format perfetto
 *   collector.h  the seam BPF collectors (top, trace) plug into
 */
#ifndef IOSPAN_WATCH_H
#define IOSPAN_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "diskstats.h"
#include "disks.h"

#define WATCH_MAX_DISKS	     64
#define WATCH_DEFAULT_DB     "/var/lib/iospan/incidents.db"
#define WATCH_DEFAULT_CONFIG "/etc/iospan/watch.conf"

/* ------------------------------------------------------------------ trigger.c (pure) */

/* What a rule measures; disk rules first, then the system-wide pressure ones. */
enum wt_metric {
	WT_UTIL,	 /* %util */
	WT_AWAIT,	 /* max(r_await, w_await), ms */
	WT_READ_MBPS,	 /* rkB/s / 1024 */
	WT_WRITE_MBPS,	 /* wkB/s / 1024 */
	WT_IOPS,	 /* completed requests of every kind per second */
	WT_AQU,		 /* aqu-sz */
	WT_SLOW_REQUEST, /* the slowest request on the disk in the sample (--detail), ms */
	WT_PSI_SOME,	 /* /proc/pressure/io some avg10, % */
	WT_PSI_FULL,	 /* full avg10, % */
	WT_NR_METRICS,
};
#define WT_NR_DISK_METRICS WT_PSI_SOME

/* The rule's name as the option and the store spell it ("util", "read-mbps", ...). */
const char *wt_metric_name(enum wt_metric m);
/* Its unit for messages, to follow a number: "%", " ms", " MB/s", "/s", "". */
const char *wt_metric_unit(enum wt_metric m);
/* The rule named @name, or -1. */
int wt_metric_from_name(const char *name);

struct wt_rules {
	double threshold[WT_NR_METRICS]; /* 0: the rule is off */
	unsigned int hold;		 /* --for: consecutive samples over the threshold */
};

/*
 * The samples in a row @m must hold under @r: --for, but one for the slow-request rule,
 * where a single request over the threshold is the event.
 */
unsigned int wt_hold(const struct wt_rules *r, enum wt_metric m);

/* HUATUO's defaults: util 90%, await 100 ms, read 2000 MB/s, write 1500 MB/s, hold 2. */
void wt_rules_default(struct wt_rules *r);

/* How many samples in a row each rule has been over its threshold, for one disk. */
struct wt_counter {
	unsigned int over[WT_NR_METRICS];
};

struct psi_io {
	bool valid;
	double some_avg10, full_avg10;
	uint64_t some_total_us, full_total_us;
};

/*
 * The values rules check for one sample: @m a disk's metrics (NULL: none) and @psi the
 * pressure (NULL: none). What does not apply is NaN and never fires; the slow-request
 * value is not in either (the caller sets it).
 */
void wt_values(const struct ds_metrics *m, const struct psi_io *psi, double v[WT_NR_METRICS]);

/*
 * Counts one sample into @c. Returns the rule that is over its threshold for at least
 * rules->hold samples now, or -1: the first in enum order that has just come to hold
 * (then *@fresh is true), else the first that still holds. A value under the threshold
 * (or NaN) starts that rule's count again.
 */
int wt_check(const struct wt_rules *rules, struct wt_counter *c, const double v[WT_NR_METRICS],
	     bool *fresh);

/* The incident gate: at most one incident open; capture, cooldown, per-hour cap. */
enum wt_phase { WT_IDLE, WT_CAPTURE, WT_COOLDOWN };

enum wt_action {
	WT_NONE,
	WT_OPEN,	    /* a trigger opened an incident */
	WT_EXTEND,	    /* a trigger during the capture moved its end */
	WT_CLOSE,	    /* the capture ended */
	WT_HELD_COOLDOWN,   /* a trigger during the cooldown: no incident */
	WT_HELD_HOURLY_CAP, /* a trigger past the per-hour cap: no incident */
};

/* Incidents opened within the last hour are remembered for the cap. */
#define WT_MAX_PER_HOUR 3600

struct wt_gate {
	/* configuration */
	double capture_s, cooldown_s;
	unsigned int max_per_hour; /* 0: no cap */
	/* state */
	enum wt_phase phase;
	double opened_at, capture_end, cooldown_end;
	double starts[WT_MAX_PER_HOUR]; /* ring of the start times of recent incidents */
	unsigned int nr_starts, first_start;
};

/* A capture is extended to at most this many times --capture in all. */
#define WT_MAX_EXTENSION 10

void wt_gate_init(struct wt_gate *g, double capture_s, double cooldown_s,
		  unsigned int max_per_hour);
/* An incident that opened at @start (before this watcher): it counts for the cap. */
void wt_gate_seed(struct wt_gate *g, double start);
/*
 * One sample at @now (seconds, any monotonic clock) where a rule fired or not: the
 * action to take. A capture ends when a sample comes at or after its end with no
 * trigger; a trigger during it moves the end to @now + capture_s, up to
 * WT_MAX_EXTENSION x capture_s after it opened.
 */
enum wt_action wt_gate_step(struct wt_gate *g, double now, bool fired);

/*
 * The onset in a series of one metric before a trigger (@v[0..n-1], the last one the
 * trigger's sample): the index of the first sample of the rise that led to the
 * trigger. The baseline is the lowest value of the series; the rise starts after the
 * last sample, before the trigger, that was within 10% of the way from the baseline to
 * the trigger's value. 0 when every sample is at or over @threshold: the rise began
 * before the series. -1 for an empty series.
 */
int wt_onset(const double *v, int n, double threshold);

/* ------------------------------------------------------------------ sampler.c */

/* One disk's sample: the raw counters and what they give against the sample before. */
struct watch_disk_sample {
	struct ds_dev dev; /* raw counters now */
	struct ds_metrics m;
	bool have_metrics; /* false for the first sample of a disk */
	/* The slowest request on it in the sample, ms; NaN without a collector timing them. */
	double slowest_ms;
};

struct watch_sample {
	double uptime_s, epoch_s, interval_s;
	struct psi_io psi;
	int nr;
	int nr_left_out; /* disks selected past WATCH_MAX_DISKS: not watched */
	struct watch_disk_sample disks[WATCH_MAX_DISKS];
};

struct watch_sampler {
	const struct disk_spec *disks; /* -d, or NULL: every whole disk */
	int nr_disks;
	const char *diskstats_path, *psi_path;
	struct ds_snapshot prev, cur;
	bool have_prev;
};

void watch_sampler_init(struct watch_sampler *s, const struct disk_spec *disks, int nr_disks);
void watch_sampler_free(struct watch_sampler *s);
/* Reads the files and fills @out with the selected disks; 0 or negative errno. */
int watch_sampler_read(struct watch_sampler *s, struct watch_sample *out);
/* Reads /proc/pressure/io (or @path) into @p; p->valid false if the kernel has no PSI. */
void psi_read(const char *path, struct psi_io *p);
/* One /proc/diskstats line of @d's counters (as ds_record_snapshot writes it). */
void watch_diskstats_line(const struct ds_dev *d, char *buf, size_t len);

/* ------------------------------------------------------------------ window.c */

/* The last samples, oldest first, in a ring. */
struct watch_window {
	struct watch_sample *slots;
	unsigned int cap, nr, head; /* head: index of the oldest */
};

int watch_window_init(struct watch_window *w, unsigned int cap);
void watch_window_free(struct watch_window *w);
void watch_window_push(struct watch_window *w, const struct watch_sample *s);
/* The @i-th oldest sample (0 <= i < nr). */
const struct watch_sample *watch_window_at(const struct watch_window *w, unsigned int i);
void watch_window_clear(struct watch_window *w);

/* ------------------------------------------------------------------ store.c */

struct watch_store;

enum store_open {
	STORE_WATCHER, /* create if needed, lock for the one watcher, close stale ones */
	STORE_READER,  /* must exist; reads (and prune) */
};

/* Opens @path; on failure reports one clear error line (fail()) and returns it. */
int store_open(const char *path, enum store_open how, struct watch_store **out);
void store_close(struct watch_store *st);
struct sqlite3 *store_db(struct watch_store *st);
/* Whether a watcher held this database when it was opened (its open incident is live). */
bool store_watcher_running(struct watch_store *st);
/* Whether the database has @table (dropped came with schema 2). */
bool store_has_table(struct watch_store *st, const char *table);
/* Incidents a previous watcher left open, marked incomplete at open (STORE_WATCHER). */
int store_stale_closed(const struct watch_store *st);

struct store_trigger {
	double epoch_s;
	const char *disk; /* NULL: system-wide (pressure) */
	const char *dev;
	enum wt_metric rule;
	double value, threshold;
	const double *held; /* the values of the held samples, oldest first */
	unsigned int nr_held;
};

/* A new incident with its trigger: its id in @id. */
int store_incident_open(struct watch_store *st, const struct store_trigger *t, double pre_s,
			double capture_s, int64_t *id);
int store_trigger_add(struct watch_store *st, int64_t id, const struct store_trigger *t);
/* One sample of every disk in it; @phase "pre" or "capture". In the current transaction. */
int store_sample_add(struct watch_store *st, int64_t id, const struct watch_sample *s,
		     const char *phase);
int store_incident_close(struct watch_store *st, int64_t id, double end_epoch_s, bool complete,
			 const char *end_reason);
int store_begin(struct watch_store *st);
int store_commit(struct watch_store *st);
void store_rollback(struct watch_store *st);
/* The last SQLite error of @st, for messages. */
const char *store_errmsg(struct watch_store *st);

/* Start times (epoch) of the incidents that opened after @since, oldest first. */
int store_recent_starts(struct watch_store *st, double since, double *out, int max, int *nr);

struct store_retention {
	uint64_t keep;	      /* incidents kept, newest first; 0: any number */
	double max_age_s;     /* 0: any age */
	uint64_t max_db_size; /* bytes; 0: any size */
};

/* Deletes the oldest incidents past @r (never an open one); how many in @deleted. */
int store_prune(struct watch_store *st, const struct store_retention *r, double now_epoch_s,
		int *deleted);

/* ------------------------------------------------------------------ options.c */

struct watch_opts {
	struct disk_spec disks[WATCH_MAX_DISKS];
	const char *disk_text[WATCH_MAX_DISKS];
	int nr_disks;
	bool disks_from_cmdline;
	struct wt_rules rules;
	uint64_t interval_ns;
	double pre_s, capture_s, cooldown_s;
	unsigned int max_per_hour;
	struct store_retention retention;
	uint64_t duration_ns;	       /* 0: until stopped (tests and trials) */
	bool no_bpf;		       /* --bpf off: no BPF collector, iostat and pressure only */
	uint64_t capture_threshold_ns; /* slow requests kept over it; 0: none (but --slow-request's) */
	bool full_detail;	       /* --detail full: trace's collector times slow requests */
	uint64_t stall_threshold_ns;   /* stalls kept over it; 0: none traced */
	bool stalls_always;	       /* --stalls always: timed outside captures too */
	const char *db_path;
	const char *config_path;
	char *config_text; /* the config file's contents, which option values point into */
};

/*
 * Slow requests are kept from this q2c (or total, --detail full) on: the lower of
 * --capture-threshold and --slow-request, of those set; 0: none.
 */
uint64_t watch_slow_keep_ns(const struct watch_opts *o);
/* Parses the config file then the command line; 1: --help printed, else 0 or error. */
int watch_parse(int argc, char **argv, struct watch_opts *o);
void watch_opts_free(struct watch_opts *o);
/*
 * The database named by watch's config file @path (NULL: the default file, if it
 * exists), for iospan incidents: a copy in *@db_path, NULL when the file names none.
 * The file's lines are checked as watch checks them, other keys' values left to it.
 */
int watch_config_db(const char *path, char **db_path);
/* A retention option of watch and incidents prune (--keep, --max-age, --max-db-size). */
int watch_parse_retention(const char *where, const char *opt, const char *arg,
			  struct store_retention *r);

/* ------------------------------------------------------------------ incidents.c */

struct jw;
struct sqlite3_stmt;

/* The columns of @s's current row as JSON fields, but incident_id and names from '_'. */
void store_json_fields(struct jw *jw, struct sqlite3_stmt *s);

/* ------------------------------------------------------------------ export_perfetto.c */

struct perfetto;

/*
 * Writes incident @id (@state and @end_reason as incidents shows them) into @pf:
 * counters, spans and events (docs/iospan-incidents.md). 0, or an error reported.
 */
int export_perfetto(struct watch_store *st, int64_t id, const char *state, const char *end_reason,
		    struct perfetto *pf);

/* ------------------------------------------------------------------ watch.c */

/* Logs one event line on stderr: "iospan watch: <time> <message>". */
void watch_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
