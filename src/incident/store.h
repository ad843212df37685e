/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The incident store (src/incident/store.c): a SQLite database of incidents, their
 * triggers, samples and what the collectors recorded (docs/iospan-watch.md). watch
 * writes it, incidents reads and prunes it.
 */
#ifndef IOSPAN_INCIDENT_STORE_H
#define IOSPAN_INCIDENT_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "collect/sampler.h"
#include "incident/rules.h"

struct jw;
struct sqlite3;
struct sqlite3_stmt;

struct watch_store;

/* The schema this build writes and reads (docs/iospan-watch.md); newer ones are refused. */
#define STORE_SCHEMA_VERSION 4
#define STORE_SCHEMA_TEXT    "4"

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
	const char *rule_name; /* NULL: rule's name; else what opened it ("capture") */
	double value, threshold;
	const double *held; /* the values of the held samples, oldest first */
	unsigned int nr_held;
};

/* What an incident's row says of the watcher that stored it. */
struct store_incident_info {
	const char *fs_bytes;	/* how FS bytes are counted: "syscalls", "pages"; NULL: no BPF */
	const char *collectors; /* JSON object: each BPF collector's state at the start */
	const char *target;	/* the collectors' target filter as given; NULL or "": none */
};

/* A new incident with its trigger: its id in @id. */
int store_incident_open(struct watch_store *st, const struct store_trigger *t, double pre_s,
			double capture_s, const struct store_incident_info *info, int64_t *id);
int store_trigger_add(struct watch_store *st, int64_t id, const struct store_trigger *t);
/* One sample of every disk in it; @phase "pre" or "capture". In the current transaction. */
int store_sample_add(struct watch_store *st, int64_t id, const struct io_sample *s,
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

/* An incident's samples in time order, and the columns of a row of them. */
#define STORE_SAMPLES_SQL "SELECT * FROM samples WHERE incident_id = ? ORDER BY time, rowid"

/* A samples row: its columns in table order (the schema of store.c). */
enum {
	SC_TIME = 1,
	SC_UPTIME,
	SC_INTERVAL,
	SC_PHASE,
	SC_DISK,
	SC_DEV,
	SC_R_S,
	SC_UTIL = SC_R_S + 21,
	SC_IN_FLIGHT,
	SC_PSI_SOME,
	SC_PSI_FULL,
	SC_PSI_SOME_TOTAL,
	SC_PSI_FULL_TOTAL,
	SC_DISKSTATS,
};

/* The columns of @s's current row as JSON fields, but incident_id and names from '_'. */
void store_json_fields(struct jw *jw, struct sqlite3_stmt *s);

#endif
