// SPDX-License-Identifier: GPL-2.0
/*
 * iospan incidents export --format perfetto: an incident as a Chrome Trace Event file
 * for the Perfetto UI (src/lib/util/perfetto.c, as trace --perfetto writes). Times are the
 * samples' uptime (CLOCK_BOOTTIME), so the file lines up with a `trace --perfetto` file
 * of the same boot (CLOCK_MONOTONIC: the same while the machine was not suspended).
 *
 *   "incident N"   the incident span and its phases (pre-trigger window, capture), the
 *                  triggers as instant events, the I/O pressure as counters
 *   "disk NAME"    the iostat metrics as counters, each sample's value from the start
 *                  of its interval
 *   a process      its I/O of each sample as slices over the interval ("I/O" track),
 *                  one track per file it used, its slow requests with their stages on
 *                  the thread that made them
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "array.h"
#include "err.h"
#include "perfetto.h"
#include "units.h"
#include "incidents.h"

/* Tracks of what is not a process: past any pid the kernel gives (at most 2^22). */
#define PF_PID_INCIDENT 0x7ff00000U
#define PF_PID_DISK	(PF_PID_INCIDENT + 1) /* + the disk's index */
#define PF_TID_SPANS	1
#define PF_TID_TRIGGERS 2
/* A process's tracks besides its threads': past any tid. */
#define PF_TID_IO   0x7ff00000U
#define PF_TID_FILE 0x7ff10000U /* + the file's index in the process */

/* The sequential stages of a slow request (trace's), in time order. */
/* (q2d: the queue part of a block-detail request, which has no finer stages.) */
static const char *const request_stages[] = {
	"pre_block", "throttle", "q2q", "q2g", "g2i", "i2d", "q2d", "d2c", "post_block",
};

struct pf_export {
	struct watch_store *st;
	struct perfetto *pf;
	int64_t id;
	double boot_epoch; /* epoch - uptime: the wall-clock time of boot */
};

static uint64_t uptime_ns(double uptime_s)
{
	return uptime_s > 0 ? (uint64_t)llround(uptime_s * 1e9) : 0;
}

/* The store keeps times to the µs: so are they converted. */
static uint64_t epoch_ns(const struct pf_export *x, double epoch_s)
{
	double up = epoch_s - x->boot_epoch;

	return up > 0 ? (uint64_t)llround(up * 1e6) * 1000 : 0;
}

static int prepare(struct pf_export *x, const char *sql, sqlite3_stmt **s)
{
	if (sqlite3_prepare_v2(store_db(x->st), sql, -1, s, NULL) != SQLITE_OK)
		return fail(-EIO, "cannot read incident %lld: %s", (long long)x->id,
			    store_errmsg(x->st));
	sqlite3_bind_int64(*s, 1, x->id);
	return 0;
}

static int step_done(struct pf_export *x, sqlite3_stmt *s, int rc)
{
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return fail(-EIO, "cannot read incident %lld: %s", (long long)x->id,
			    store_errmsg(x->st));
	return 0;
}

static const char *col_str(sqlite3_stmt *s, int col)
{
	const char *v = (const char *)sqlite3_column_text(s, col);

	return v ? v : "";
}

/* The iostat metrics of each disk as counters, psi on the incident's process. */
static int export_samples(struct pf_export *x, uint64_t *first, uint64_t *last)
{
	static const char sql[] =
		"SELECT disk, uptime AS _uptime, interval_s AS _interval, r_s, w_s, d_s, f_s,"
		" rkB_s, wkB_s, dkB_s, rrqm_s, wrqm_s, drqm_s, rrqm_pct, wrqm_pct, drqm_pct,"
		" r_await, w_await, d_await, f_await, rareq_sz, wareq_sz, dareq_sz, aqu_sz, util,"
		" in_flight, psi_some_avg10, psi_full_avg10,"
		" dense_rank() OVER (ORDER BY disk) - 1 AS _disk_index"
		" FROM samples WHERE incident_id = ?1 ORDER BY time, rowid";
	enum {
		COL_DISK,
		COL_UPTIME,
		COL_INTERVAL,
		COL_R_S,
		COL_IN_FLIGHT = 25,
		COL_PSI_SOME,
		COL_PSI_FULL,
		COL_INDEX
	};
	char name[DISK_NAME_LEN + 8];
	sqlite3_stmt *s;
	uint64_t start, end;
	struct jw *jw;
	uint32_t pid;
	int rc, ret, i;

	ret = prepare(x, sql, &s);
	if (ret)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		end = uptime_ns(sqlite3_column_double(s, COL_UPTIME));
		start = uptime_ns(sqlite3_column_double(s, COL_UPTIME) -
				  sqlite3_column_double(s, COL_INTERVAL));
		if (!*first || start < *first)
			*first = start;
		if (end > *last)
			*last = end;
		pid = PF_PID_DISK + sqlite3_column_int(s, COL_INDEX);
		snprintf(name, sizeof(name), "disk %s", col_str(s, COL_DISK));
		perfetto_process(x->pf, pid, name);
		/* The first sample of a disk has no interval, no metrics. */
		if (sqlite3_column_type(s, COL_R_S) != SQLITE_NULL) {
			jw = perfetto_counter(x->pf, col_str(s, COL_DISK), pid, start);
			for (i = COL_R_S; i <= COL_IN_FLIGHT; i++)
				jw_kv_float(jw, sqlite3_column_name(s, i),
					    sqlite3_column_double(s, i), 3);
			perfetto_end(x->pf);
		}
		/* Pressure is system-wide: once per sample, with the first disk's row. */
		if (sqlite3_column_type(s, COL_PSI_SOME) != SQLITE_NULL &&
		    sqlite3_column_int(s, COL_INDEX) == 0) {
			jw = perfetto_counter(x->pf, "io pressure", PF_PID_INCIDENT, end);
			jw_kv_float(jw, "some_avg10", sqlite3_column_double(s, COL_PSI_SOME), 2);
			jw_kv_float(jw, "full_avg10", sqlite3_column_double(s, COL_PSI_FULL), 2);
			perfetto_end(x->pf);
		}
	}
	return step_done(x, s, rc);
}

/* The incident span, its phases, and each trigger as an instant event. */
static int export_incident(struct pf_export *x, const char *state, const char *end_reason,
			   uint64_t first, uint64_t last)
{
	static const char inc_sql[] = "SELECT start_time, end_time, disk, rule, value, threshold"
				      " FROM incidents WHERE id = ?1";
	static const char trig_sql[] = "SELECT time, disk, rule, value, threshold, dev"
				       " FROM triggers WHERE incident_id = ?1 ORDER BY time, rowid";
	char name[128];
	sqlite3_stmt *s;
	uint64_t start, end;
	struct jw *jw;
	int rc, ret;

	ret = prepare(x, inc_sql, &s);
	if (ret)
		return ret;
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW)
		return step_done(x, s, rc == SQLITE_DONE ? SQLITE_ERROR : rc);
	start = epoch_ns(x, sqlite3_column_double(s, 0));
	/* Open (or cut): it ends with its last sample. */
	end = sqlite3_column_type(s, 1) == SQLITE_NULL ? last :
							 epoch_ns(x, sqlite3_column_double(s, 1));
	if (end < start)
		end = start;
	if (!first || first > start)
		first = start;
	snprintf(name, sizeof(name), "incident %lld", (long long)x->id);
	perfetto_process(x->pf, PF_PID_INCIDENT, name);
	perfetto_thread(x->pf, PF_PID_INCIDENT, PF_TID_SPANS, "phases");
	perfetto_thread(x->pf, PF_PID_INCIDENT, PF_TID_TRIGGERS, "triggers");
	snprintf(name, sizeof(name), "incident %lld: %s %s", (long long)x->id,
		 sqlite3_column_type(s, 2) == SQLITE_NULL ? "system" : col_str(s, 2),
		 col_str(s, 3));
	jw = perfetto_span(x->pf, name, "incident", PF_PID_INCIDENT, PF_TID_SPANS, first,
			   end - first);
	jw_kv_string(jw, "rule", col_str(s, 3));
	jw_kv_float(jw, "value", sqlite3_column_double(s, 4), 3);
	jw_kv_float(jw, "threshold", sqlite3_column_double(s, 5), 3);
	jw_kv_string(jw, "state", state);
	if (end_reason && *end_reason)
		jw_kv_string(jw, "end_reason", end_reason);
	perfetto_end(x->pf);
	sqlite3_finalize(s);
	perfetto_slice(x->pf, "pre-trigger window", "incident", PF_PID_INCIDENT, PF_TID_SPANS,
		       first, start);
	perfetto_slice(x->pf, "capture", "incident", PF_PID_INCIDENT, PF_TID_SPANS, start, end);

	ret = prepare(x, trig_sql, &s);
	if (ret)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *rule = col_str(s, 2);
		const char *unit = wt_metric_unit(wt_metric_from_name(rule));

		snprintf(name, sizeof(name), "trigger: %s %s %.2f%s >= %.2f%s",
			 sqlite3_column_type(s, 1) == SQLITE_NULL ? "system" : col_str(s, 1), rule,
			 sqlite3_column_double(s, 3), unit, sqlite3_column_double(s, 4), unit);
		jw = perfetto_instant(x->pf, name, "trigger", PF_PID_INCIDENT, PF_TID_TRIGGERS,
				      epoch_ns(x, sqlite3_column_double(s, 0)));
		store_json_fields(jw, s);
		perfetto_end(x->pf);
	}
	return step_done(x, s, rc);
}

/*
 * Each process's I/O of each sample, a slice over the sample's interval; each file it
 * used on a track of its own. @sql's first columns: pid, comm (files: NULL), uptime,
 * interval, the track index (files), a label (the disk; the file's path), DISK bytes
 * read and written; every column goes to the slice's args.
 */
static int export_rows(struct pf_export *x, const char *sql, bool files)
{
	char name[PATH_MAX + 64], r[UNITS_BUF], w[UNITS_BUF];
	sqlite3_stmt *s;
	uint32_t pid, tid;
	uint64_t start, end;
	struct jw *jw;
	int rc, ret;

	ret = prepare(x, sql, &s);
	if (ret)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		pid = sqlite3_column_int64(s, 0);
		end = uptime_ns(sqlite3_column_double(s, 2));
		start = uptime_ns(sqlite3_column_double(s, 2) - sqlite3_column_double(s, 3));
		if (files) {
			tid = PF_TID_FILE + sqlite3_column_int(s, 4);
			perfetto_thread(x->pf, pid, tid, col_str(s, 5));
		} else {
			snprintf(name, sizeof(name), "%s (%u)", col_str(s, 1), pid);
			perfetto_process(x->pf, pid, name);
			tid = PF_TID_IO;
			perfetto_thread(x->pf, pid, tid, "I/O of each sample");
		}
		snprintf(name, sizeof(name), "%s%sdisk read %s, written %s",
			 files ? "" : col_str(s, 5), files ? "" : ": ",
			 fmt_bytes(sqlite3_column_int64(s, 6), r, sizeof(r)),
			 fmt_bytes(sqlite3_column_int64(s, 7), w, sizeof(w)));
		jw = perfetto_span(x->pf, name, files ? "file" : "process", pid, tid, start,
				   end - start);
		store_json_fields(jw, s);
		perfetto_end(x->pf);
	}
	return step_done(x, s, rc);
}

/* The sample (uptime, interval) of a collector's row, which has the sample's time. */
#define SAMPLE_OF(t)                                                                 \
	" LEFT JOIN (SELECT time AS _stime, max(uptime) AS _uptime,"                 \
	" max(interval_s) AS _interval FROM samples WHERE incident_id = ?1 GROUP BY" \
	" time) ON _stime = " t

static const char processes_sql[] =
	"SELECT pid AS _pid, comm AS _comm, _uptime, _interval, 0 AS _index,"
	" disk AS _label, disk_read_bytes AS _r, disk_write_bytes AS _w, *"
	" FROM processes p" SAMPLE_OF("p.time") " WHERE incident_id = ?1 AND _uptime IS NOT NULL"
						" ORDER BY p.time, p.rowid";
static const char files_sql[] =
	"SELECT pid AS _pid, NULL AS _comm, _uptime, _interval,"
	" dense_rank() OVER (PARTITION BY pid ORDER BY dev, inode, generation) - 1 AS _index,"
	" coalesce(path, dev || ' inode ' || inode) AS _label, disk_read_bytes AS _r,"
	" disk_write_bytes AS _w, *"
	" FROM files f" SAMPLE_OF("f.time") " WHERE incident_id = ?1 AND _uptime IS NOT NULL"
					    " ORDER BY f.time, f.rowid";

/*
 * Slow requests (top's at block detail, trace's at full detail): a span on the thread
 * that made the request, from its time (its start) for its total, its stages in order
 * inside it.
 */
static int export_slow_requests(struct pf_export *x)
{
	static const char sql[] =
		"SELECT pid AS _pid, tid AS _tid, comm AS _comm, time AS _start,"
		" total_us AS _total, op AS _op, json_extract(stages, '$.pre_block') AS _s0,"
		" json_extract(stages, '$.throttle') AS _s1, json_extract(stages, '$.q2q') AS _s2,"
		" json_extract(stages, '$.q2g') AS _s3, json_extract(stages, '$.g2i') AS _s4,"
		" json_extract(stages, '$.i2d') AS _s5, json_extract(stages, '$.q2d') AS _s6,"
		" json_extract(stages, '$.d2c') AS _s7,"
		" json_extract(stages, '$.post_block') AS _s8, *"
		" FROM slow_requests WHERE incident_id = ?1 AND json_valid(coalesce(stages, '{}'))"
		" ORDER BY time, rowid";
	enum { COL_PID, COL_TID, COL_COMM, COL_START, COL_TOTAL, COL_OP, COL_STAGE0 };
	char name[64];
	sqlite3_stmt *s;
	uint64_t start, end, at, dur;
	uint32_t pid, tid;
	struct jw *jw;
	size_t i;
	int rc, ret;

	ret = prepare(x, sql, &s);
	if (ret)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		pid = sqlite3_column_int64(s, COL_PID);
		tid = sqlite3_column_int64(s, COL_TID) ?: pid;
		start = epoch_ns(x, sqlite3_column_double(s, COL_START));
		dur = (uint64_t)llround(fmax(sqlite3_column_double(s, COL_TOTAL), 0) * 1e3);
		end = start + dur;
		snprintf(name, sizeof(name), "%s %u", col_str(s, COL_COMM), tid);
		perfetto_thread(x->pf, pid, tid, name);
		jw = perfetto_span(x->pf, col_str(s, COL_OP), "request", pid, tid, start,
				   end - start);
		store_json_fields(jw, s);
		perfetto_end(x->pf);
		/* The stages one after the other, cut at the request's end: they nest. */
		at = start;
		for (i = 0; i < ARRAY_SIZE(request_stages); i++) {
			if (sqlite3_column_type(s, COL_STAGE0 + i) == SQLITE_NULL)
				continue;
			dur = (uint64_t)llround(fmax(sqlite3_column_double(s, COL_STAGE0 + i), 0) *
						1e3);
			if (at + dur > end)
				dur = end - at;
			perfetto_slice(x->pf, request_stages[i], "stage", pid, tid, at, at + dur);
			at += dur;
		}
	}
	return step_done(x, s, rc);
}

int export_perfetto(struct watch_store *st, int64_t id, const char *state, const char *end_reason,
		    struct perfetto *pf)
{
	struct pf_export x = {.st = st, .pf = pf, .id = id};
	uint64_t first = 0, last = 0;
	sqlite3_stmt *s;
	int ret;

	/* The clock of the file: uptime, from the first sample's two times. */
	ret = prepare(&x,
		      "SELECT time - uptime FROM samples WHERE incident_id = ?1"
		      " ORDER BY time, rowid LIMIT 1",
		      &s);
	if (ret)
		return ret;
	if (sqlite3_step(s) == SQLITE_ROW)
		x.boot_epoch = sqlite3_column_double(s, 0);
	sqlite3_finalize(s);
	ret = export_samples(&x, &first, &last);
	if (!ret)
		ret = export_incident(&x, state, end_reason, first, last);
	if (!ret)
		ret = export_rows(&x, processes_sql, false);
	if (!ret)
		ret = export_rows(&x, files_sql, true);
	if (!ret)
		ret = export_slow_requests(&x);
	return ret;
}
