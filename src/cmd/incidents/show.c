// SPDX-License-Identifier: GPL-2.0
/*
 * iospan incidents list and show: the incidents of the store as lines, one as its
 * trigger, onset, samples and what the collectors recorded (text or JSON).
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "args.h"
#include "err.h"
#include "json.h"
#include "outfile.h"
#include "perfetto.h"
#include "printable.h"
#include "units.h"
#include "incidents.h"

/* "15:40:01.3": the time of day with tenths, for samples. */
static void format_tenths(double epoch_s, char *buf, size_t len)
{
	char hms[16];

	fmt_local_time(epoch_s, false, hms, sizeof(hms));
	snprintf(buf, len, "%s.%01d", hms, (int)(fmod(epoch_s, 1) * 10) % 10);
}

int incidents_list(struct watch_store *st, struct jw *jw)
{
	sqlite3 *db = store_db(st);
	bool running = store_watcher_running(st);
	struct incident_row r;
	sqlite3_stmt *s = NULL;
	char when[32], trig[64], dur[24];
	int rc, ret = 0, n = 0;

	rc = sqlite3_prepare_v2(db, "SELECT " INCIDENT_COLUMNS " FROM incidents i ORDER BY id", -1,
				&s, NULL);
	if (rc != SQLITE_OK)
		return query_fail(st, "incidents");
	if (jw) {
		jw_start_object(jw);
		jw_kv_array(jw, "incidents");
	} else {
		printf("%-5s %-19s %-10s %-24s %8s %-10s %-20s %s\n", "ID", "START", "DISK",
		       "TRIGGER", "DURATION", "STATE", "TOP PROCESS", "TOP FILE");
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		incident_read_row(s, running, &r);
		n++;
		if (jw) {
			jw_start_object(jw);
			incident_json_fields(jw, db, &r, true);
			jw_end_object(jw);
			continue;
		}
		fmt_local_time(r.start, true, when, sizeof(when));
		snprintf(trig, sizeof(trig), "%s %.2f%s", r.rule, r.value,
			 wt_metric_unit(wt_metric_from_name(r.rule)));
		snprintf(dur, sizeof(dur), "%.1fs", incident_duration(db, &r));
		printf("%-5lld %-19s %-10s %-24s %8s %-10s %-20s %s\n", (long long)r.id, when,
		       r.disk[0] ? printable(r.disk) : "system", trig, dur, r.state,
		       r.top_process[0] ? printable(r.top_process) : "-",
		       r.top_file[0] ? printable(r.top_file) : "-");
	}
	if (rc != SQLITE_DONE)
		ret = query_fail(st, "incidents");
	if (jw) {
		jw_end_array(jw);
		jw_end_object(jw);
	} else if (!n && !ret) {
		printf("(no incident stored)\n");
	}
	sqlite3_finalize(s);
	return ret;
}

static void print_sample_header(void)
{
	printf("%-12s %-7s %-10s %8s %8s %8s %8s %8s %8s %7s %6s %6s\n", "TIME", "PHASE", "DISK",
	       "r/s", "rMB/s", "w/s", "wMB/s", "r_await", "w_await", "aqu-sz", "%util", "psi");
}

static const char *col_text(sqlite3_stmt *s, int col)
{
	const char *v = (const char *)sqlite3_column_text(s, col);

	return v ? printable(v) : "-";
}

/* The busiest processes (with the onset: each one's first row before the trigger), files. */
static int print_busiest(struct watch_store *st, const struct incident_row *r)
{
	sqlite3_stmt *s = NULL;
	char tm[32];
	int rc, n = 0;

	if (sqlite3_prepare_v2(store_db(st), busiest_procs_sql, -1, &s, NULL) != SQLITE_OK)
		return query_fail(st, "processes");
	sqlite3_bind_int64(s, 1, r->id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (!n++)
			printf("\nbusiest processes of the capture (DISK bytes, with the writeback "
			       "of the pages they dirtied: WB_MB%s):\n"
			       "%8s %-16s %10s %10s %10s %10s %10s  %s\n",
			       !strcmp(r->fs_bytes, "pages") ? "; FS bytes in whole pages" : "",
			       "PID", "COMM", "DISK_MB_R", "DISK_MB_W", "WB_MB", "FS_MB_R",
			       "FS_MB_W", "FIRST SEEN BEFORE THE TRIGGER");
		printf("%8lld %-16s %10.2f %10.2f %10.2f %10.2f %10.2f  ",
		       (long long)sqlite3_column_int64(s, 0), col_text(s, 1),
		       sqlite3_column_double(s, 6) / 1048576, sqlite3_column_double(s, 7) / 1048576,
		       sqlite3_column_double(s, 8) / 1048576, sqlite3_column_double(s, 9) / 1048576,
		       sqlite3_column_double(s, 10) / 1048576);
		if (sqlite3_column_type(s, 11) == SQLITE_NULL) {
			printf("-\n");
		} else {
			format_tenths(sqlite3_column_double(s, 11), tm, sizeof(tm));
			printf("%s (%.1f s before)\n", tm, r->start - sqlite3_column_double(s, 11));
		}
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return query_fail(st, "processes");
	if (!n) {
		printf("top processes and files: - (no collector ran: iostat and pressure "
		       "only)\n");
		return 0;
	}
	if (store_has_table(st, "threads")) {
		if (sqlite3_prepare_v2(store_db(st), busiest_threads_sql, -1, &s, NULL) !=
		    SQLITE_OK)
			return query_fail(st, "threads");
		sqlite3_bind_int64(s, 1, r->id);
		n = 0;
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			if (!n++)
				printf("\nbusiest threads of the capture:\n"
				       "%8s %8s %-16s %10s %10s %10s %10s %10s\n",
				       "PID", "TID", "COMM", "DISK_MB_R", "DISK_MB_W", "WB_MB",
				       "FS_MB_R", "FS_MB_W");
			printf("%8lld %8lld %-16s %10.2f %10.2f %10.2f %10.2f %10.2f\n",
			       (long long)sqlite3_column_int64(s, 0),
			       (long long)sqlite3_column_int64(s, 1), col_text(s, 2),
			       sqlite3_column_double(s, 4) / 1048576,
			       sqlite3_column_double(s, 5) / 1048576,
			       sqlite3_column_double(s, 6) / 1048576,
			       sqlite3_column_double(s, 7) / 1048576,
			       sqlite3_column_double(s, 8) / 1048576);
		}
		sqlite3_finalize(s);
		if (rc != SQLITE_DONE)
			return query_fail(st, "threads");
	}
	if (sqlite3_prepare_v2(store_db(st), busiest_files_sql, -1, &s, NULL) != SQLITE_OK)
		return query_fail(st, "files");
	sqlite3_bind_int64(s, 1, r->id);
	n = 0;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (!n++)
			printf("\nbusiest files of the capture:\n%10s %10s %10s %10s %-12s  %s\n",
			       "DISK_MB_R", "DISK_MB_W", "FS_MB_R", "FS_MB_W", "PIDS", "PATH");
		printf("%10.2f %10.2f %10.2f %10.2f %-12s  %s\n",
		       sqlite3_column_double(s, 5) / 1048576, sqlite3_column_double(s, 6) / 1048576,
		       sqlite3_column_double(s, 7) / 1048576, sqlite3_column_double(s, 8) / 1048576,
		       col_text(s, 4), col_text(s, 0));
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return query_fail(st, "files");
	return 0;
}

/* @sql with the incident's id as ?1 into *@s; 0 or the query's failure, said. */
static int prepare_for(struct watch_store *st, const char *what, const char *sql, int64_t id,
		       sqlite3_stmt **s)
{
	if (sqlite3_prepare_v2(store_db(st), sql, -1, s, NULL) != SQLITE_OK)
		return query_fail(st, what);
	sqlite3_bind_int64(*s, 1, id);
	return 0;
}

/* The stages of a slow request (its JSON object) that took time, on one line. */
static int print_stages(struct watch_store *st, const char *stages, double total_us)
{
	sqlite3_stmt *s = NULL;
	int rc, n = 0;

	/* total and q2c sum others; offcpu and iowait overlap them: said apart. */
	if (sqlite3_prepare_v2(store_db(st),
			       "SELECT key, value FROM json_each(?1) WHERE type IN ('real', "
			       "'integer') AND key NOT IN ('total', 'q2c', 'bios', 'switches',"
			       " 'pagecache_added_pages') AND value >= ?2",
			       -1, &s, NULL) != SQLITE_OK)
		return query_fail(st, "slow_requests");
	sqlite3_bind_text(s, 1, stages, -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 2, total_us / 100); /* what takes 1% or more */
	printf("%16s", "stages:");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		printf("%s %s %.2f ms", n++ ? "," : "", col_text(s, 0),
		       sqlite3_column_double(s, 1) / 1e3);
	printf("%s\n", n ? "" : " -");
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : query_fail(st, "slow_requests");
}

/* The slowest requests of the incident (window and capture), with their stages. */
static int print_slow_requests(struct watch_store *st, const struct incident_row *r)
{
	sqlite3_stmt *s = NULL;
	int rc, ret = 0, n = 0;

	ret = prepare_for(st, "slow_requests",
			  "SELECT total_us, op, pid, comm, disk, phase, path, stages, time"
			  " FROM slow_requests WHERE incident_id = ?1 ORDER BY total_us DESC"
			  " LIMIT 10",
			  r->id, &s);
	if (ret)
		return ret;
	while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (!n++)
			printf("\nslowest requests (window and capture):\n%13s %-10s %8s %-16s "
			       "%-10s %-7s %8s  %s\n",
			       "TOTAL", "OP", "PID", "COMM", "DISK", "PHASE", "AT", "PATH");
		printf("%10.2f ms %-10s %8s %-16s %-10s %-7s %+7.1fs  %s\n",
		       sqlite3_column_double(s, 0) / 1e3, col_text(s, 1), col_text(s, 2),
		       col_text(s, 3), col_text(s, 4), col_text(s, 5),
		       sqlite3_column_double(s, 8) - r->start, col_text(s, 6));
		if (sqlite3_column_text(s, 7))
			ret = print_stages(st, (const char *)sqlite3_column_text(s, 7),
					   sqlite3_column_double(s, 0));
	}
	sqlite3_finalize(s);
	if (ret)
		return ret;
	if (rc != SQLITE_DONE)
		return query_fail(st, "slow_requests");
	return 0;
}

/* The longest stalls: threads blocked on I/O, with the kernel stack they slept in. */
static int print_stalls(struct watch_store *st, const struct incident_row *r)
{
	sqlite3_stmt *s = NULL;
	int rc, n = 0;

	rc = prepare_for(st, "stalls",
			 "SELECT wait_us, pid, tid, comm, phase, time,"
			 " (SELECT group_concat(value, ' <- ') FROM json_each(stack))"
			 " FROM stalls WHERE incident_id = ?1 ORDER BY wait_us DESC LIMIT 10",
			 r->id, &s);
	if (rc)
		return rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (!n++)
			printf("\nlongest stalls (blocked on I/O; kernel stack, innermost "
			       "first):\n%13s %8s %8s %-16s %-7s %8s\n",
			       "WAIT", "PID", "TID", "COMM", "PHASE", "AT");
		printf("%10.2f ms %8s %8s %-16s %-7s %+7.1fs\n%16s %s\n",
		       sqlite3_column_double(s, 0) / 1e3, col_text(s, 1), col_text(s, 2),
		       col_text(s, 3), col_text(s, 4), sqlite3_column_double(s, 5) - r->start,
		       "stack:", col_text(s, 6));
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : query_fail(st, "stalls");
}

/*
 * What the collectors lost, or could not tell, over the incident (the dropped table:
 * rows over the caps, top's counters), one line; nothing when nothing was.
 */
static int print_dropped(struct watch_store *st, const struct incident_row *r)
{
	sqlite3_stmt *s = NULL;
	int rc, n = 0;

	if (!store_has_table(st, "dropped"))
		return 0; /* a database no watcher of schema 2 opened yet */
	if (sqlite3_prepare_v2(store_db(st),
			       "SELECT what, sum(count) FROM dropped WHERE incident_id = ?"
			       " GROUP BY what ORDER BY what",
			       -1, &s, NULL) != SQLITE_OK)
		return query_fail(st, "dropped");
	sqlite3_bind_int64(s, 1, r->id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		printf("%s %s %lld", n++ ? "," : "lost or unattributed (iospan-incidents(8)):",
		       printable(col_text(s, 0)), (long long)sqlite3_column_int64(s, 1));
	sqlite3_finalize(s);
	if (n)
		putchar('\n');
	return rc == SQLITE_DONE ? 0 : query_fail(st, "dropped");
}

int incident_text(struct watch_store *st, const struct incident_row *r)
{
	sqlite3_stmt *s = NULL;
	char a[32], b[32], tm[32];
	struct ds_metrics m;
	struct psi_io psi;
	struct onset on;
	double t;
	bool have;
	int rc, ret, rows = 0, pre = 0, i, nr_held;
	const char *unit = wt_metric_unit(wt_metric_from_name(r->rule));
	double held[64];

	ret = incident_onset(st, r, &on);
	if (ret)
		return ret;
	nr_held = incident_parse_held(r, held, ARRAY_SIZE(held));
	fmt_local_time(r->start, true, a, sizeof(a));
	fmt_local_time(r->start + incident_duration(store_db(st), r), false, b, sizeof(b));
	printf("incident %lld  %s - %s (%.1f s), %s%s%s%s\n", (long long)r->id, a, b,
	       incident_duration(store_db(st), r), r->state, r->end_reason[0] ? " (" : "",
	       r->end_reason[0] ? r->end_reason : "", r->end_reason[0] ? ")" : "");
	if (!strcmp(r->rule, "capture")) {
		printf("capture: %g s from its start, no rule (watch --capture-now, iospan "
		       "report --duration)\n",
		       r->capture_s);
	} else {
		printf("trigger: %s %s %.2f%s >= %.2f%s, held for %d sample%s:",
		       r->disk[0] ? printable(r->disk) : "system", r->rule, r->value, unit,
		       r->threshold, unit, nr_held, nr_held == 1 ? "" : "s");
		for (i = 0; i < nr_held; i++)
			printf("%s %.2f", i ? "," : "", held[i]);
		putchar('\n');
	}
	if (r->target[0])
		printf("target: %s (the processes, files, slow requests and stalls are its own; "
		       "the samples the disks')\n",
		       printable(r->target));
	if (r->triggers > 1)
		printf("triggers: %lld in all (each extended the capture)\n",
		       (long long)r->triggers);
	if (on.found && !on.have_before) {
		printf("onset: before the window: %s was already high in its first sample\n",
		       r->rule);
	} else if (on.found && on.trigger_time - on.time > 0) {
		format_tenths(on.time, a, sizeof(a));
		printf("onset: %s began to rise at %s (%.2f%s, after %.2f%s), %.1f s before the "
		       "trigger\n",
		       r->rule, a, on.value, unit, on.before, unit, on.trigger_time - on.time);
	} else if (on.found) {
		printf("onset: %s rose within the trigger's sample\n", r->rule);
	}
	ret = print_busiest(st, r);
	if (!ret)
		ret = print_slow_requests(st, r);
	if (!ret)
		ret = print_stalls(st, r);
	if (ret)
		return ret;
	printf("\nsamples%s%s (pre: before the trigger; capture: from it on):\n",
	       r->disk[0] ? " of " : "", r->disk[0] ? printable(r->disk) : "");
	print_sample_header();
	s = incident_samples(st, r, false);
	if (!s)
		return query_fail(st, "samples");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		incident_sample_metrics(s, &m, &psi, &have);
		t = sqlite3_column_double(s, SC_TIME);
		format_tenths(t, tm, sizeof(tm));
		rows++;
		pre += !strcmp((const char *)sqlite3_column_text(s, SC_PHASE), "pre");
		printf("%-12s %-7s %-10s ", tm, sqlite3_column_text(s, SC_PHASE),
		       printable((const char *)sqlite3_column_text(s, SC_DISK)));
		if (have)
			printf("%8.1f %8.2f %8.1f %8.2f %8.2f %8.2f %7.2f %6.1f", m.r_s,
			       m.rkB_s / 1024, m.w_s, m.wkB_s / 1024, m.r_await, m.w_await,
			       m.aqu_sz, m.util);
		else
			printf("%8s %8s %8s %8s %8s %8s %7s %6s", "-", "-", "-", "-", "-", "-", "-",
			       "-");
		if (psi.valid)
			printf(" %6.2f\n", psi.some_avg10);
		else
			printf(" %6s\n", "-");
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return query_fail(st, "samples");
	printf("(%d samples: %d before the trigger)\n", rows, pre);
	return print_dropped(st, r);
}
