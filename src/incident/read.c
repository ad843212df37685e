// SPDX-License-Identifier: GPL-2.0
/*
 * The reader of watch's incident store: what incidents show and iospan report read of
 * an incident (read.h).
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "err.h"
#include "json.h"
#include "incident/read.h"
#include "incident/rules.h"

/* One incident row, as list and show read it. */

static void copy_text(char *dst, size_t len, sqlite3_stmt *s, int col)
{
	const char *v = (const char *)sqlite3_column_text(s, col);

	snprintf(dst, len, "%s", v ? v : "");
}

void incident_read_row(sqlite3_stmt *s, bool watcher_running, struct incident_row *r)
{
	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(s, 0);
	r->start = sqlite3_column_double(s, 1);
	r->end = sqlite3_column_type(s, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 2);
	copy_text(r->disk, sizeof(r->disk), s, 3);
	copy_text(r->dev, sizeof(r->dev), s, 4);
	copy_text(r->rule, sizeof(r->rule), s, 5);
	r->value = sqlite3_column_double(s, 6);
	r->threshold = sqlite3_column_double(s, 7);
	copy_text(r->held, sizeof(r->held), s, 8);
	copy_text(r->state, sizeof(r->state), s, 9);
	copy_text(r->end_reason, sizeof(r->end_reason), s, 10);
	r->pre_s = sqlite3_column_double(s, 11);
	r->capture_s = sqlite3_column_double(s, 12);
	r->triggers = sqlite3_column_int64(s, 13);
	copy_text(r->top_process, sizeof(r->top_process), s, 14);
	copy_text(r->top_file, sizeof(r->top_file), s, 15);
	copy_text(r->fs_bytes, sizeof(r->fs_bytes), s, 16);
	copy_text(r->kernel, sizeof(r->kernel), s, 17);
	copy_text(r->collectors, sizeof(r->collectors), s, 18);
	copy_text(r->hostname, sizeof(r->hostname), s, 19);
	copy_text(r->version, sizeof(r->version), s, 20);
	copy_text(r->target, sizeof(r->target), s, 21);
	/*
	 * "open" with no watcher holding the database: the watcher died during the
	 * capture, and the next one will mark it so.
	 */
	if (!strcmp(r->state, "open") && !watcher_running) {
		snprintf(r->state, sizeof(r->state), "incomplete");
		snprintf(r->end_reason, sizeof(r->end_reason),
			 "the watcher stopped during the capture (killed or crashed)");
	}
}

/* Seconds an incident covers: to its end, or to its last sample while open. */
double incident_duration(sqlite3 *db, const struct incident_row *r)
{
	sqlite3_stmt *s = NULL;
	double last = r->start;

	if (!isnan(r->end))
		return r->end - r->start;
	if (sqlite3_prepare_v2(db, "SELECT max(time) FROM samples WHERE incident_id = ?", -1, &s,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int64(s, 1, r->id);
		if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
			last = sqlite3_column_double(s, 0);
	}
	sqlite3_finalize(s);
	return last - r->start;
}

/* The values of the samples a rule held for (stored as a JSON array of numbers). */
int incident_parse_held(const struct incident_row *r, double *out, int max)
{
	const char *p = r->held[0] == '[' ? r->held + 1 : r->held;
	char *end;
	int n = 0;

	while (*p && *p != ']' && n < max) {
		out[n] = strtod(p, &end);
		if (end == p)
			break;
		n++;
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

void incident_json_fields(struct jw *jw, sqlite3 *db, const struct incident_row *r,
			  bool trigger_count)
{
	double held[64];
	int i, n;

	jw_kv_int(jw, "id", r->id);
	jw_kv_float(jw, "start", r->start, 3);
	jw_kv_float(jw, "end", r->end, 3); /* NaN (null): open */
	jw_kv_float(jw, "duration_s", incident_duration(db, r), 3);
	jw_kv_string_or_null(jw, "disk", r->disk[0] ? r->disk : NULL);
	jw_kv_string_or_null(jw, "dev", r->disk[0] ? r->dev : NULL);
	jw_kv_string(jw, "rule", r->rule);
	jw_kv_float(jw, "value", r->value, 3);
	jw_kv_float(jw, "threshold", r->threshold, 3);
	jw_name(jw, "held_values");
	jw_start_array(jw);
	n = incident_parse_held(r, held, ARRAY_SIZE(held));
	for (i = 0; i < n; i++)
		jw_float(jw, held[i], 3);
	jw_end_array(jw);
	jw_kv_string(jw, "state", r->state);
	jw_kv_string_or_null(jw, "end_reason", r->end_reason[0] ? r->end_reason : NULL);
	if (trigger_count)
		jw_kv_int(jw, "triggers", r->triggers);
	jw_kv_float(jw, "pre_s", r->pre_s, 3);
	jw_kv_float(jw, "capture_s", r->capture_s, 3);
	jw_kv_string_or_null(jw, "top_process", r->top_process[0] ? r->top_process : NULL);
	jw_kv_string_or_null(jw, "top_file", r->top_file[0] ? r->top_file : NULL);
	jw_kv_string_or_null(jw, "fs_bytes", r->fs_bytes[0] ? r->fs_bytes : NULL);
	jw_kv_string_or_null(jw, "hostname", r->hostname[0] ? r->hostname : NULL);
	jw_kv_string_or_null(jw, "kernel", r->kernel[0] ? r->kernel : NULL);
	jw_kv_string_or_null(jw, "version", r->version[0] ? r->version : NULL);
	jw_kv_string_or_null(jw, "collectors", r->collectors[0] ? r->collectors : NULL);
	jw_kv_string_or_null(jw, "target", r->target[0] ? r->target : NULL);
}

int query_fail(struct watch_store *st, const char *what)
{
	return fail(-EIO, "cannot read %s: %s", what, store_errmsg(st));
}

int find_incident(struct watch_store *st, const char *path, int64_t id, struct incident_row *r)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(store_db(st),
				"SELECT " INCIDENT_COLUMNS " FROM incidents i WHERE id = ?", -1, &s,
				NULL);
	if (rc != SQLITE_OK)
		return query_fail(st, "incidents");
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		incident_read_row(s, store_watcher_running(st), r);
	sqlite3_finalize(s);
	if (rc == SQLITE_DONE)
		return fail_usage("no incident %lld in '%s' (see 'iospan incidents list')",
				  (long long)id, path);
	return rc == SQLITE_ROW ? 0 : query_fail(st, "incidents");
}

void incident_sample_metrics(sqlite3_stmt *s, struct ds_metrics *m, struct psi_io *psi, bool *have)
{
	double *f[] = {
		&m->r_s,      &m->w_s,	    &m->d_s,	 &m->f_s,     &m->rkB_s,    &m->wkB_s,
		&m->dkB_s,    &m->rrqm_s,   &m->wrqm_s,	 &m->drqm_s,  &m->rrqm_pct, &m->wrqm_pct,
		&m->drqm_pct, &m->r_await,  &m->w_await, &m->d_await, &m->f_await,  &m->rareq_sz,
		&m->wareq_sz, &m->dareq_sz, &m->aqu_sz,	 &m->util,
	};
	size_t i;

	memset(m, 0, sizeof(*m));
	*have = sqlite3_column_type(s, SC_R_S) != SQLITE_NULL;
	for (i = 0; i < ARRAY_SIZE(f); i++)
		*f[i] = sqlite3_column_double(s, SC_R_S + i);
	m->in_flight = sqlite3_column_int64(s, SC_IN_FLIGHT);
	memset(psi, 0, sizeof(*psi));
	psi->valid = sqlite3_column_type(s, SC_PSI_SOME) != SQLITE_NULL;
	psi->some_avg10 = sqlite3_column_double(s, SC_PSI_SOME);
	psi->full_avg10 = sqlite3_column_double(s, SC_PSI_FULL);
}

/* Every column of every row of @s as a JSON object: the store's tables, generically. */
static int json_rows(struct jw *jw, sqlite3_stmt *s)
{
	int rc;

	jw_start_array(jw);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		jw_start_object(jw);
		store_json_fields(jw, s);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int json_table(struct watch_store *st, struct jw *jw, const char *name, const char *sql,
		      int64_t id)
{
	sqlite3_stmt *s = NULL;
	int ret;

	if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) != SQLITE_OK)
		return query_fail(st, name);
	sqlite3_bind_int64(s, 1, id);
	jw_name(jw, name);
	ret = json_rows(jw, s);
	sqlite3_finalize(s);
	return ret ? query_fail(st, name) : 0;
}

/*
 * The samples of incident @r on its disk (all disks for a system-wide rule) in time
 * order, up to its trigger if @to_trigger: a statement to step, NULL if it fails.
 */
sqlite3_stmt *incident_samples(struct watch_store *st, const struct incident_row *r,
			       bool to_trigger)
{
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(store_db(st),
			       "SELECT * FROM samples WHERE incident_id = ?1 AND (?2 IS NULL OR"
			       " time <= ?2) AND (?3 IS NULL OR disk = ?3) ORDER BY time, rowid",
			       -1, &s, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(s, 1, r->id);
	if (to_trigger)
		sqlite3_bind_double(s, 2, r->start);
	if (r->disk[0])
		sqlite3_bind_text(s, 3, r->disk, -1, SQLITE_TRANSIENT);
	return s;
}

/*
 * The onset: where the trigger's metric began to rise on its disk, in the samples up to
 * the trigger (the pre-trigger window and the trigger's sample).
 */
int incident_onset(struct watch_store *st, const struct incident_row *r, struct onset *o)
{
	sqlite3_stmt *s = NULL;
	double *vals = NULL, *times = NULL, v[WT_NR_METRICS];
	int rule = wt_metric_from_name(r->rule), n = 0, cap = 0, rc, idx, ret = 0;
	struct ds_metrics m;
	struct psi_io psi;
	bool have;

	memset(o, 0, sizeof(*o));
	if (rule < 0)
		return 0;
	s = incident_samples(st, r, true);
	if (!s)
		return query_fail(st, "samples");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		incident_sample_metrics(s, &m, &psi, &have);
		wt_values(have ? &m : NULL, &psi, v);
		if (isnan(v[rule]))
			continue;
		if (n == cap) {
			double *nv, *nt;

			cap = cap ? cap * 2 : 64;
			nv = realloc(vals, cap * sizeof(*vals));
			if (nv)
				vals = nv;
			nt = realloc(times, cap * sizeof(*times));
			if (nt)
				times = nt;
			if (!nv || !nt) {
				ret = fail(-ENOMEM, "out of memory");
				goto cleanup;
			}
		}
		vals[n] = v[rule];
		times[n++] = sqlite3_column_double(s, SC_TIME);
	}
	idx = wt_onset(vals, n, r->threshold);
	if (idx >= 0) {
		o->found = true;
		o->time = times[idx];
		o->value = vals[idx];
		o->trigger_time = times[n - 1];
		o->have_before = idx > 0;
		o->before = idx > 0 ? vals[idx - 1] : 0;
	}
cleanup:
	sqlite3_finalize(s);
	free(vals);
	free(times);
	return ret;
}

/*
 * The busiest processes and files of the capture (its samples summed), as list ranks
 * them: DISK bytes (a process's include the writeback of the pages it dirtied, which
 * writeback_bytes counts apart), then FS bytes. A
 * process's first_pre_time is its first row in the pre-trigger window: the onset.
 */
const char busiest_procs_sql[] =
	"SELECT pid, comm, max(cmdline) AS cmdline, max(cgroup) AS cgroup,"
	" max(container) AS container, max(disk) AS disk,"
	" sum(disk_read_bytes) AS disk_read_bytes, sum(disk_write_bytes) AS disk_write_bytes,"
	" sum(writeback_bytes) AS writeback_bytes, sum(fs_read_bytes) AS fs_read_bytes,"
	" sum(fs_write_bytes) AS fs_write_bytes,"
	" (SELECT min(q.time) FROM processes q WHERE q.incident_id = ?1 AND q.phase = 'pre'"
	"  AND q.pid = p.pid) AS first_pre_time"
	" FROM processes p WHERE incident_id = ?1 AND phase = 'capture' GROUP BY pid, comm"
	" ORDER BY sum(disk_read_bytes + disk_write_bytes) DESC,"
	" sum(fs_read_bytes + fs_write_bytes) DESC LIMIT 10";
/* The busiest threads of the capture, as the processes (threads came with schema 3). */
const char busiest_threads_sql[] =
	"SELECT pid, tid, comm, max(disk) AS disk,"
	" sum(disk_read_bytes) AS disk_read_bytes, sum(disk_write_bytes) AS disk_write_bytes,"
	" sum(writeback_bytes) AS writeback_bytes, sum(fs_read_bytes) AS fs_read_bytes,"
	" sum(fs_write_bytes) AS fs_write_bytes"
	" FROM threads WHERE incident_id = ?1 AND phase = 'capture' GROUP BY pid, tid, comm"
	" ORDER BY sum(disk_read_bytes + disk_write_bytes) DESC,"
	" sum(fs_read_bytes + fs_write_bytes) DESC LIMIT 10";
const char busiest_files_sql[] =
	"SELECT max(path) AS path, max(disk) AS disk, dev, inode,"
	" group_concat(DISTINCT pid) AS pids,"
	" sum(disk_read_bytes) AS disk_read_bytes, sum(disk_write_bytes) AS disk_write_bytes,"
	" sum(fs_read_bytes) AS fs_read_bytes, sum(fs_write_bytes) AS fs_write_bytes,"
	" max(direct) AS direct, max(writeback) AS writeback, generation"
	" FROM files WHERE incident_id = ?1 AND phase = 'capture'"
	" GROUP BY dev, inode, generation"
	" ORDER BY sum(disk_read_bytes + disk_write_bytes) DESC,"
	" sum(fs_read_bytes + fs_write_bytes) DESC LIMIT 10";

void incident_json_onset(struct jw *jw, const struct onset *on)
{
	jw_kv_object(jw, "onset");
	if (on->found) {
		jw_kv_float(jw, "time", on->time, 3);
		jw_kv_float(jw, "value", on->value, 3);
		jw_kv_float(jw, "before_trigger_s", on->trigger_time - on->time, 3);
		jw_kv_float(jw, "quiet_value", on->have_before ? on->before : NAN, 3);
	}
	jw_end_object(jw);
}

int incident_json_open(struct watch_store *st, struct jw *jw, const struct incident_row *r,
		       bool trigger_count)
{
	struct onset on;
	int ret;

	ret = incident_onset(st, r, &on);
	if (ret)
		return ret;
	jw_start_object(jw);
	incident_json_fields(jw, store_db(st), r, trigger_count);
	incident_json_onset(jw, &on);
	return 0;
}

int incident_json(struct watch_store *st, struct jw *jw, const struct incident_row *r)
{
	static const char *const collector_tables[] = {
		"processes", "threads", "files", "slow_requests", "stalls", "dropped", "histograms",
	};
	char sql[128];
	size_t i;
	int ret;

	ret = incident_json_open(st, jw, r, false);
	if (ret)
		return ret;
	ret = json_table(st, jw, "triggers",
			 "SELECT * FROM triggers WHERE incident_id = ? ORDER BY time, rowid",
			 r->id);
	if (!ret)
		ret = json_table(st, jw, "busiest_processes", busiest_procs_sql, r->id);
	if (!ret && store_has_table(st, "threads"))
		ret = json_table(st, jw, "busiest_threads", busiest_threads_sql, r->id);
	else if (!ret) {
		jw_kv_array(jw, "busiest_threads");
		jw_end_array(jw);
	}
	if (!ret)
		ret = json_table(st, jw, "busiest_files", busiest_files_sql, r->id);
	if (!ret)
		ret = json_table(st, jw, "samples", STORE_SAMPLES_SQL, r->id);
	/* Filled by BPF collectors when they run (collector.h): empty until then. */
	for (i = 0; !ret && i < ARRAY_SIZE(collector_tables); i++) {
		/* A database no watcher of schema 2 opened yet: nothing was dropped. */
		if (!store_has_table(st, collector_tables[i])) {
			jw_kv_array(jw, collector_tables[i]);
			jw_end_array(jw);
			continue;
		}
		snprintf(sql, sizeof(sql), "SELECT * FROM %s WHERE incident_id = ? ORDER BY time",
			 collector_tables[i]);
		ret = json_table(st, jw, collector_tables[i], sql, r->id);
	}
	jw_end_object(jw);
	return ret;
}
