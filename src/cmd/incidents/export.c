// SPDX-License-Identifier: GPL-2.0
/*
 * iospan incidents export: a stat recording that `iospan stat --replay` turns back
 * into the incident's iostat reports, JSON (show's), or a Perfetto trace
 * (export_perfetto.c).
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "err.h"
#include "json.h"
#include "outfile.h"
#include "perfetto.h"
#include "printable.h"
#include "units.h"
#include "incidents.h"

/*
 * A stat recording of the incident: every sample's raw /proc/diskstats counters as one
 * snapshot, written by stat's own recording writer, so `iospan stat --replay` computes
 * the numbers watch stored (each sample against the one before).
 */
static int export_stat(struct watch_store *st, const struct incident_row *r, FILE *out)
{
	struct ds_snapshot snap;
	sqlite3_stmt *s = NULL;
	struct ds_dev dev;
	double uptime;
	int rc, ret = 0;

	ds_snapshot_init(&snap);
	rc = sqlite3_prepare_v2(store_db(st), STORE_SAMPLES_SQL, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return query_fail(st, "samples");
	sqlite3_bind_int64(s, 1, r->id);
	ret = ds_record_header(out);
	if (!ret)
		fprintf(out, "# iospan incident %lld: %s %s %.3f (threshold %.3f)\n",
			(long long)r->id, r->disk[0] ? r->disk : "system", r->rule, r->value,
			r->threshold);
	while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		uptime = sqlite3_column_double(s, SC_UPTIME);
		if (snap.nr && uptime != snap.uptime_s) {
			ret = ds_record_snapshot(out, &snap, false);
			ds_snapshot_clear(&snap);
		}
		snap.uptime_s = uptime;
		snap.epoch_s = sqlite3_column_double(s, SC_TIME);
		if (ds_parse_line((const char *)sqlite3_column_text(s, SC_DISKSTATS), &dev)) {
			ret = fail(-EUCLEAN, "incident %lld: a sample holds no diskstats line",
				   (long long)r->id);
			break;
		}
		if (!ret)
			ret = ds_snapshot_add(&snap, &dev);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = query_fail(st, "samples");
	if (!ret && snap.nr)
		ret = ds_record_snapshot(out, &snap, false);
	sqlite3_finalize(s);
	ds_snapshot_free(&snap);
	return ret;
}

/* A failed export: one line; a file written whole or not at all is not left behind. */
static int export_write_fail(const char *path, int err)
{
	if (!path)
		return fail(err, "cannot write the export to stdout: %s", strerror(-err));
	return fail(err, "cannot write '%s': %s", path, strerror(-err));
}

int incidents_export(struct watch_store *st, const struct incidents_opts *o,
		     const struct incident_row *r)
{
	struct perfetto *pf = NULL;
	struct outfile *of = NULL;
	struct jw *jw = NULL;
	int ret, err;

	if (!strcmp(o->format, "perfetto")) {
		ret = perfetto_create(&pf, o->output, true);
		if (ret)
			return export_write_fail(o->output, ret);
		ret = export_perfetto(st, r->id, r->state, r->end_reason, pf);
		if (ret) {
			perfetto_discard(pf);
			return ret;
		}
		err = perfetto_close(pf);
		return err ? export_write_fail(o->output, err) : 0;
	}
	ret = outfile_open(&of, o->output, true);
	if (ret)
		return export_write_fail(o->output, ret);
	if (!strcmp(o->format, "json")) {
		jw = jw_new(outfile_stream(of));
		ret = jw ? incident_json(st, jw, r) : fail(-ENOMEM, "out of memory");
		jw_free(jw);
	} else {
		ret = export_stat(st, r, outfile_stream(of));
	}
	/* A write that failed is said as such, not as what it broke on the way. */
	err = outfile_error(of);
	err = outfile_close(of, !ret && !err) ?: err;
	if (err)
		return export_write_fail(o->output, err);
	return ret;
}
