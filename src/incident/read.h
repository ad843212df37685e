/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The reader of watch's incident store (src/incident/read.c): an incident's row, its
 * onset, and the whole of it as JSON (what incidents show --json prints and iospan
 * report draws).
 */
#ifndef IOSPAN_INCIDENT_READ_H
#define IOSPAN_INCIDENT_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "disks.h"
#include "diskstats.h"
#include "collect/psi.h"
#include "incident/store.h"

struct jw;
struct sqlite3;
struct sqlite3_stmt;

/* One incident's row of the incidents table. */
struct incident_row {
	int64_t id;
	double start, end; /* end NAN: still open */
	char disk[DISK_NAME_LEN], dev[24];
	char rule[16], state[16];
	char held[1600], end_reason[128];
	double value, threshold, pre_s, capture_s;
	int64_t triggers;
	char top_process[64], top_file[256];
	char fs_bytes[16]; /* how FS bytes were counted: "syscalls", "pages", "" unknown */
	char kernel[80];
	char collectors[1024]; /* JSON object, "" if not stored */
	char hostname[256], version[32];
	char target[512]; /* the collectors' target filter ("--comm mysqld"), "" if none */
};

/* The columns incident_read_row() reads, of "incidents i". */
#define INCIDENT_COLUMNS                                                                     \
	"id, start_time, end_time, disk, dev, rule, value, threshold, held_values, state,"   \
	" end_reason, pre_s, capture_s, triggers,"                                           \
	" (SELECT comm || ' (' || pid || ')' FROM processes p WHERE p.incident_id = i.id"    \
	"  AND phase = 'capture' GROUP BY pid, comm ORDER BY"                                \
	"  sum(disk_read_bytes + disk_write_bytes) DESC,"                                    \
	"  sum(fs_read_bytes + fs_write_bytes) DESC LIMIT 1),"                               \
	" (SELECT max(path) FROM files f WHERE f.incident_id = i.id AND phase = 'capture'"   \
	"  GROUP BY dev, inode, generation"                                                  \
	"  ORDER BY sum(disk_read_bytes + disk_write_bytes) DESC,"                           \
	"  sum(fs_read_bytes + fs_write_bytes) DESC LIMIT 1), fs_bytes, kernel, collectors," \
	" hostname, version, target"

struct onset {
	bool found, have_before;
	double time, value, trigger_time;
	double before; /* the last quiet sample's value */
};

/* A failed read of @what, said with the store's error: -EIO. */
int query_fail(struct watch_store *st, const char *what);
/* The row of a statement selecting INCIDENT_COLUMNS into @r. */
void incident_read_row(struct sqlite3_stmt *s, bool watcher_running, struct incident_row *r);
/* Seconds an incident covers: to its end, or to its last sample while open. */
double incident_duration(struct sqlite3 *db, const struct incident_row *r);
/* The values of the samples its rule held for, at most @max. */
int incident_parse_held(const struct incident_row *r, double *out, int max);
/*
 * Its row's fields as JSON (list, show, report); @trigger_count: with "triggers", the
 * number of triggers (show gives them as a list of that name instead).
 */
void incident_json_fields(struct jw *jw, struct sqlite3 *db, const struct incident_row *r,
			  bool trigger_count);
/* Incident @id of @path into @r; an unknown one is a usage error, said. */
int find_incident(struct watch_store *st, const char *path, int64_t id, struct incident_row *r);
/* A samples row's iostat figures and pressure; @have: the disk's figures are there. */
void incident_sample_metrics(struct sqlite3_stmt *s, struct ds_metrics *m, struct psi_io *psi,
			     bool *have);
/* Its samples (of its disk, up to its trigger if @to_trigger), to step; NULL on failure. */
struct sqlite3_stmt *incident_samples(struct watch_store *st, const struct incident_row *r,
				      bool to_trigger);
/* Where its trigger's metric began to rise, in the samples up to the trigger. */
int incident_onset(struct watch_store *st, const struct incident_row *r, struct onset *o);
/* Its onset as the JSON object "onset" (empty if none was found). */
void incident_json_onset(struct jw *jw, const struct onset *on);
/*
 * The incident's JSON object opened, with its fields and onset (show's and the
 * report's start): the caller adds its tables and closes it. 0, or the error said.
 */
int incident_json_open(struct watch_store *st, struct jw *jw, const struct incident_row *r,
		       bool trigger_count);
/* The capture's busiest processes, threads and files (ranked as list ranks them). */
extern const char busiest_procs_sql[], busiest_threads_sql[], busiest_files_sql[];
/* The whole incident as one JSON object (docs/iospan-incidents.md). */
int incident_json(struct watch_store *st, struct jw *jw, const struct incident_row *r);

#endif
