// SPDX-License-Identifier: GPL-2.0
/*
 * The data a report page draws, as one JSON object (docs/iospan-report.md, "DATA"):
 * what it is ("kind"), when and by which iospan it was made, and either the incident
 * as `iospan incidents show ID --json` gives it (an incident, or a capture: an incident
 * recorded for the report) or the samples of a stat recording, in the rows of the
 * incident store's samples table.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "diskstats.h"
#include "err.h"
#include "json.h"
#include "incident/read.h"
#include "report.h"

static void doc_head(struct jw *jw, const char *kind, const char *source)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	jw_kv_string(jw, "format", "iospan-report");
	jw_kv_int(jw, "format_version", 1);
	jw_kv_string(jw, "kind", kind);
	jw_kv_string(jw, "source", source);
	jw_kv_float(jw, "generated", ts.tv_sec + ts.tv_nsec / 1e9, 3);
	jw_kv_string(jw, "iospan_version", IOSPAN_VERSION);
}

/*
 * The rows of @sql (?1: the incident's id, ?2: its start) as {"columns": [names],
 * "rows": [[values]]}: the compact form of the page's tables, where times ("t") are
 * seconds from the incident's start ("t0"), so that an hour stays a few MB.
 */
static int json_query(struct jw *jw, struct watch_store *st, const char *name, const char *sql,
		      int64_t id, double t0)
{
	sqlite3_stmt *s = NULL;
	int i, n, rc;

	if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) != SQLITE_OK)
		return query_fail(st, name);
	sqlite3_bind_int64(s, 1, id);
	if (sqlite3_bind_parameter_count(s) >= 2)
		sqlite3_bind_double(s, 2, t0);
	n = sqlite3_column_count(s);
	jw_kv_object(jw, name);
	jw_kv_array(jw, "columns");
	for (i = 0; i < n; i++)
		jw_string(jw, sqlite3_column_name(s, i));
	jw_end_array(jw);
	jw_kv_array(jw, "rows");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		jw_start_array(jw);
		for (i = 0; i < n; i++) {
			switch (sqlite3_column_type(s, i)) {
			case SQLITE_INTEGER:
				jw_int(jw, sqlite3_column_int64(s, i));
				break;
			case SQLITE_FLOAT:
				/* An interval to the µs: a rate times it gives bytes, exactly. */
				jw_float(jw, sqlite3_column_double(s, i),
					 strcmp(sqlite3_column_name(s, i), "interval_s") ? 3 : 6);
				break;
			case SQLITE_NULL:
				jw_null(jw);
				break;
			default:
				jw_string(jw, (const char *)sqlite3_column_text(s, i));
			}
		}
		jw_end_array(jw);
	}
	jw_end_array(jw);
	jw_end_object(jw);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : query_fail(st, name);
}

/*
 * "Who" over time: the DISK bytes of the TOP_KEYS busiest of @what in each sample, the
 * rest summed as key -1 (other); @key and @label are SQL over @table's rows. With its
 * keys' labels and totals (all of them, for "other"'s count).
 */
#define WHO_SQL(table, key, label, where)                                                      \
	"WITH r AS (SELECT round(time - ?2, 3) AS t, " key " AS k, " label " AS label,"        \
	" coalesce(disk_read_bytes, 0) + coalesce(disk_write_bytes, 0) AS b FROM " table       \
	" WHERE incident_id = ?1 AND " where "),"                                              \
	" t AS (SELECT k, max(label) AS label, sum(b) AS total FROM r GROUP BY k"              \
	"  HAVING sum(b) > 0),"                                                                \
	" top AS (SELECT k, label, total, row_number() OVER (ORDER BY total DESC, k) - 1 AS i" \
	"  FROM t)"                                                                            \
	" SELECT t, coalesce((SELECT i FROM top WHERE top.k = r.k AND i < 8), -1) AS key,"     \
	" sum(b) AS bytes FROM r WHERE k IN (SELECT k FROM t) GROUP BY t, key ORDER BY t, key"
#define WHO_KEYS_SQL(table, key, label, where)                                                    \
	"SELECT " key " AS k, max(" label ") AS label,"                                           \
	" sum(coalesce(disk_read_bytes, 0) + coalesce(disk_write_bytes, 0)) AS total FROM " table \
	" WHERE incident_id = ?1 AND " where " GROUP BY k HAVING total > 0"                       \
	" ORDER BY total DESC, k"

static const struct {
	const char *name, *series_sql, *keys_sql;
} who_sql[] = {
	{"processes", WHO_SQL("processes", "pid || ' ' || comm", "comm || ' (' || pid || ')'", "1"),
	 WHO_KEYS_SQL("processes", "pid || ' ' || comm", "comm || ' (' || pid || ')'", "1")},
	{"files",
	 WHO_SQL("files", "dev || ':' || inode || ':' || coalesce(generation, 0)",
		 "coalesce(path, 'inode ' || inode)", "1"),
	 WHO_KEYS_SQL("files", "dev || ':' || inode || ':' || coalesce(generation, 0)",
		      "coalesce(path, 'inode ' || inode)", "1")},
	{"cgroups",
	 WHO_SQL("processes", "cgroup", "cgroup || coalesce(' (' || container || ')', '')",
		 "cgroup IS NOT NULL"),
	 WHO_KEYS_SQL("processes", "cgroup", "cgroup || coalesce(' (' || container || ')', '')",
		      "cgroup IS NOT NULL")},
};

/* The capture's processes with their q2c and d2c (sample averages weighted by bytes). */
static const char procs_latency_sql[] =
	"SELECT pid, comm, sum(coalesce(disk_read_bytes, 0) + coalesce(disk_write_bytes, 0))"
	" AS bytes, sum((coalesce(disk_read_bytes, 0) + coalesce(disk_write_bytes, 0))"
	"  * q2c_avg_us) / nullif(sum(CASE WHEN q2c_avg_us IS NULL THEN 0 ELSE"
	"  coalesce(disk_read_bytes, 0) + coalesce(disk_write_bytes, 0) END), 0) AS q2c_avg_us,"
	" max(q2c_max_us) AS q2c_max_us,"
	" sum((coalesce(disk_read_bytes, 0) + coalesce(disk_write_bytes, 0)) * d2c_avg_us)"
	"  / nullif(sum(CASE WHEN d2c_avg_us IS NULL THEN 0 ELSE"
	"  coalesce(disk_read_bytes, 0) + coalesce(disk_write_bytes, 0) END), 0) AS d2c_avg_us,"
	" max(d2c_max_us) AS d2c_max_us"
	" FROM processes WHERE incident_id = ?1 AND phase = 'capture' GROUP BY pid, comm";

static const char cgroups_sql[] =
	"SELECT cgroup, max(container) AS container, count(DISTINCT pid) AS processes,"
	" sum(disk_read_bytes) AS disk_read_bytes, sum(disk_write_bytes) AS disk_write_bytes,"
	" sum(writeback_bytes) AS writeback_bytes, sum(fs_read_bytes) AS fs_read_bytes,"
	" sum(fs_write_bytes) AS fs_write_bytes FROM processes WHERE incident_id = ?1"
	" AND phase = 'capture' AND cgroup IS NOT NULL GROUP BY cgroup"
	" ORDER BY sum(disk_read_bytes + disk_write_bytes) DESC, cgroup LIMIT 20";

/* The latency heatmap: each sample's q2c requests per log2 bucket, the ops of a disk summed. */
static const char heatmap_sql[] =
	"SELECT t, disk, group_concat(bucket || ':' || count) AS counts FROM"
	" (SELECT round(time - ?2, 3) AS t, disk, CAST(j.key AS INTEGER) AS bucket,"
	"  sum(j.value) AS count FROM histograms h, json_each(h.buckets) j"
	"  WHERE incident_id = ?1 AND kind = 'q2c' AND j.value > 0"
	"  GROUP BY t, disk, bucket ORDER BY t, disk, bucket)"
	" GROUP BY t, disk ORDER BY t, disk";

/* Request sizes: the capture's requests per log2 bucket, per disk and op. */
static const char sizes_sql[] =
	"SELECT disk, op, CAST(j.key AS INTEGER) AS bucket, sum(j.value) AS count"
	" FROM histograms h, json_each(h.buckets) j WHERE incident_id = ?1 AND kind = 'size'"
	" AND phase = 'capture' AND j.value > 0 GROUP BY disk, op, bucket"
	" ORDER BY disk, op, bucket";

/* What the collectors lost or could not attribute, summed over the incident. */
static const char dropped_sql[] =
	"SELECT what, sum(count) AS count FROM dropped WHERE incident_id = ?1"
	" GROUP BY what HAVING sum(count) > 0 ORDER BY what";

/* The slowest requests kept (the waterfall, the offset plot), and the longest stalls. */
#define REPORT_MAX_REQUESTS 2000
#define REPORT_MAX_STALLS   100
#define STR_(x)		    #x
#define STR(x)		    STR_(x)
static const char slow_sql[] =
	"SELECT round(time - ?2, 3) AS t, phase, pid, tid, comm, disk, op, offset, bytes, path,"
	" total_us, json_extract(stages, '$.parts') AS parts,"
	" json_extract(stages, '$.offcpu') AS offcpu_us FROM slow_requests WHERE incident_id = ?1 "
	"ORDER BY total_us DESC, time"
	" LIMIT " STR(REPORT_MAX_REQUESTS);
static const char stalls_sql[] =
	"SELECT round(time - ?2, 3) AS t, phase, pid, tid, comm, wait_us, count, stack FROM stalls"
	" WHERE incident_id = ?1 ORDER BY wait_us DESC, time LIMIT " STR(REPORT_MAX_STALLS);

static const char samples_sql[] =
	"SELECT round(time - ?2, 3) AS t, interval_s, phase, disk, r_s, w_s, d_s, f_s, rkB_s,"
	" wkB_s, dkB_s, r_await, w_await, aqu_sz, util, psi_some_avg10, psi_full_avg10"
	" FROM samples WHERE incident_id = ?1 ORDER BY time, rowid";

/* A table of a newer schema than the database's: empty, as a query of it would be. */
static void empty_table(struct jw *jw, const char *name)
{
	jw_kv_object(jw, name);
	jw_kv_array(jw, "columns");
	jw_end_array(jw);
	jw_kv_array(jw, "rows");
	jw_end_array(jw);
	jw_end_object(jw);
}

static int doc_incident(struct jw *jw, struct watch_store *st, const struct incident_row *r)
{
	size_t i;
	int ret;

	ret = incident_json_open(st, jw, r, true);
	if (ret)
		return ret;
	jw_kv_float(jw, "t0", r->start, 3);
	ret = json_query(jw, st, "trigger_list",
			 "SELECT round(time - ?2, 3) AS t, disk, rule, value, threshold FROM triggers"
			 " WHERE incident_id = ?1 ORDER BY time, rowid",
			 r->id, r->start) ?:
	      json_query(jw, st, "samples", samples_sql, r->id, r->start) ?:
	      json_query(jw, st, "busiest_processes", busiest_procs_sql, r->id, r->start) ?:
	      json_query(jw, st, "busiest_files", busiest_files_sql, r->id, r->start) ?:
	      json_query(jw, st, "process_latency", procs_latency_sql, r->id, r->start) ?:
	      json_query(jw, st, "cgroups", cgroups_sql, r->id, r->start) ?:
	      json_query(jw, st, "slow_requests", slow_sql, r->id, r->start) ?:
	      json_query(jw, st, "stalls", stalls_sql, r->id, r->start) ?:
	      json_query(jw, st, "slow_requests_kept",
			 "SELECT count(*) AS count FROM slow_requests WHERE incident_id = ?1",
			 r->id, r->start);
	if (ret)
		goto out;
	if (store_has_table(st, "threads"))
		ret = json_query(jw, st, "busiest_threads", busiest_threads_sql, r->id, r->start);
	else
		empty_table(jw, "busiest_threads");
	if (!ret && store_has_table(st, "dropped"))
		ret = json_query(jw, st, "dropped", dropped_sql, r->id, r->start);
	else if (!ret)
		empty_table(jw, "dropped");
	if (!ret && store_has_table(st, "histograms"))
		ret = json_query(jw, st, "heatmap", heatmap_sql, r->id, r->start) ?:
			      json_query(jw, st, "sizes", sizes_sql, r->id, r->start);
	else if (!ret) {
		empty_table(jw, "heatmap");
		empty_table(jw, "sizes");
	}
	jw_kv_object(jw, "who");
	for (i = 0; !ret && i < sizeof(who_sql) / sizeof(who_sql[0]); i++) {
		jw_kv_object(jw, who_sql[i].name);
		ret = json_query(jw, st, "keys", who_sql[i].keys_sql, r->id, r->start) ?:
			      json_query(jw, st, "series", who_sql[i].series_sql, r->id, r->start);
		jw_end_object(jw);
	}
	jw_end_object(jw);
out:
	jw_end_object(jw);
	return ret;
}

int report_doc_incident(struct jw *jw, struct watch_store *st, const struct incident_row *r,
			const char *kind, const char *source)
{
	int ret;

	jw_start_object(jw);
	doc_head(jw, kind, source);
	jw_name(jw, "incident");
	ret = doc_incident(jw, st, r);
	jw_end_object(jw);
	return ret;
}

/* Whether a recording's device is one the report shows: a named one, or a used disk. */
static bool dev_wanted(const struct report_opts *o, const struct ds_dev *d)
{
	int i;

	/* As iostat and iospan stat: whole disks that did some I/O since boot. */
	if (!o->nr_disks)
		return !d->partition &&
		       (d->f[DS_RD_IOS] || d->f[DS_WR_IOS] || d->f[DS_DC_IOS] || d->f[DS_FL_IOS]);
	for (i = 0; i < o->nr_disks; i++)
		if (disk_spec_matches(&o->disks[i], d->major, d->minor, d->name))
			return true;
	return false;
}

/* The columns of a recording's samples: those of an incident's (samples_sql). */
static const char *const sample_columns[] = {
	"t",	"interval_s",	  "phase",	    "disk",  "r_s",	"w_s",	   "d_s",
	"f_s",	"rkB_s",	  "wkB_s",	    "dkB_s", "r_await", "w_await", "aqu_sz",
	"util", "psi_some_avg10", "psi_full_avg10",
};

/* One interval of one device, as a row of an incident's samples (no pressure in it). */
static void sample_row(struct jw *jw, double t, const struct ds_dev *d, const struct ds_metrics *m,
		       double interval_s)
{
	const double v[] = {
		m->r_s,	  m->w_s,     m->d_s,	  m->f_s,    m->rkB_s, m->wkB_s,
		m->dkB_s, m->r_await, m->w_await, m->aqu_sz, m->util,
	};
	size_t i;

	jw_start_array(jw);
	jw_float(jw, t, 3);
	jw_float(jw, interval_s, 6);
	jw_string(jw, "capture");
	jw_string(jw, d->name);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		jw_float(jw, v[i], 3);
	jw_null(jw);
	jw_null(jw);
	jw_end_array(jw);
}

/*
 * A stat recording's intervals, snapshot to snapshot, as iospan stat --replay computes
 * them (a reboot inside it starts the counters again: that interval is left out).
 */
int report_doc_recording(struct jw *jw, const struct report_opts *o)
{
	struct ds_snapshot snaps[2], *prev = &snaps[0], *cur = &snaps[1], *tmp;
	const struct ds_dev *was;
	struct ds_metrics m;
	struct ds_reader r;
	bool have_prev = false;
	uint64_t nr_snaps = 0, nr_rows = 0;
	double t0 = 0;
	size_t i;
	int ret;

	ds_snapshot_init(&snaps[0]);
	ds_snapshot_init(&snaps[1]);
	ret = ds_reader_open(&r, o->recording);
	if (ret) {
		ret = fail_usage("cannot open recording '%s': %s", o->recording, strerror(-ret));
		goto cleanup;
	}
	jw_start_object(jw);
	doc_head(jw, "recording", o->recording);
	jw_kv_object(jw, "recording");
	jw_kv_object(jw, "samples");
	jw_kv_array(jw, "columns");
	for (i = 0; i < sizeof(sample_columns) / sizeof(sample_columns[0]); i++)
		jw_string(jw, sample_columns[i]);
	jw_end_array(jw);
	jw_kv_array(jw, "rows");
	while ((ret = ds_reader_next(&r, cur)) == 1) {
		if (!nr_snaps++)
			t0 = cur->epoch_s;
		for (i = 0; have_prev && !r.rebooted && i < cur->nr; i++) {
			if (!dev_wanted(o, &cur->devs[i]))
				continue;
			was = ds_snapshot_find(prev, cur->devs[i].major, cur->devs[i].minor,
					       cur->devs[i].name);
			if (!was)
				continue;
			ds_compute(was, &cur->devs[i], cur->uptime_s - prev->uptime_s, &m);
			sample_row(jw, cur->epoch_s - t0, &cur->devs[i], &m,
				   cur->uptime_s - prev->uptime_s);
			nr_rows++;
		}
		tmp = prev;
		prev = cur;
		cur = tmp;
		have_prev = true;
	}
	jw_end_array(jw);
	jw_end_object(jw);
	jw_kv_float(jw, "t0", t0, 3);
	jw_kv_uint(jw, "snapshots", nr_snaps);
	jw_end_object(jw);
	jw_end_object(jw);
	if (ret < 0) {
		if (ret == -EINVAL)
			ret = fail_usage("malformed recording '%s': %s", o->recording, r.error);
		else
			ret = fail(ret, "reading %s: %s", o->recording, strerror(-ret));
	} else if (nr_snaps < 2) {
		ret = fail_usage("recording '%s' holds %s snapshot: a report needs two at least",
				 o->recording, nr_snaps ? "one" : "no");
	} else if (o->nr_disks && !nr_rows) {
		ret = fail_usage("no device of recording '%s' is one -d names", o->recording);
	}
cleanup:
	ds_reader_close(&r);
	ds_snapshot_free(&snaps[0]);
	ds_snapshot_free(&snaps[1]);
	return ret;
}
