// SPDX-License-Identifier: GPL-2.0
/* iospan stat: one report, the devices it selects as rows of the shared renderer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diskstats.h"
#include "disks.h"
#include "err.h"
#include "render.h"
#include "units.h"
#include "stat.h"

/* Which devices a report shows. @named is set when the device was asked for with -d. */
static bool stat_selects(const struct stat_opts *o, const struct ds_dev *d, int *order)
{
	int i;

	if (o->nr_disks) {
		for (i = 0; i < o->nr_disks; i++) {
			if (disk_spec_matches(&o->disks[i], d->major, d->minor, d->name)) {
				*order = i;
				return true;
			}
		}
		return false;
	}
	*order = 0;
	if (d->partition && !o->partitions)
		return false;
	/* Like iostat, devices that never did any I/O are left out unless named. */
	return d->f[DS_RD_IOS] || d->f[DS_WR_IOS] || d->f[DS_DC_IOS] || d->f[DS_FL_IOS];
}

/* The text grid of a device: one line per operation, the device's own metrics on the first. */
enum stat_col {
	SC_DEVICE,
	SC_OP,
	SC_OPS,
	SC_KB,
	SC_RQM,
	SC_RQM_PCT,
	SC_AWAIT,
	SC_AREQ,
	SC_AQU,
	SC_UTIL,
	SC_INFLIGHT,
	SC_NR
};

static const struct render_col stat_cols[SC_NR] = {
	[SC_DEVICE] = {"Device", 12, RA_LEFT},	   [SC_OP] = {"op", 7, RA_LEFT},
	[SC_OPS] = {"ops/s", 9, RA_RIGHT},	   [SC_KB] = {"kB/s", 10, RA_RIGHT},
	[SC_RQM] = {"rqm/s", 8, RA_RIGHT},	   [SC_RQM_PCT] = {"%rqm", 6, RA_RIGHT},
	[SC_AWAIT] = {"await", 8, RA_RIGHT},	   [SC_AREQ] = {"areq-sz", 8, RA_RIGHT},
	[SC_AQU] = {"aqu-sz", 7, RA_RIGHT},	   [SC_UTIL] = {"%util", 6, RA_RIGHT},
	[SC_INFLIGHT] = {"inflight", 8, RA_RIGHT},
};

/* The text lines of a device. */
enum stat_line { SL_READ, SL_WRITE, SL_DISCARD, SL_FLUSH, SL_NOTE };

/* A device's fields, in the order of its JSON object; text-only ones at the end. */
enum stat_field {
	SF_DISK,
	SF_DEV,
	SF_PARTITION,
	SF_R_S,
	SF_W_S,
	SF_D_S,
	SF_F_S,
	SF_RKB_S,
	SF_WKB_S,
	SF_DKB_S,
	SF_RRQM_S,
	SF_WRQM_S,
	SF_DRQM_S,
	SF_RRQM_PCT,
	SF_WRQM_PCT,
	SF_DRQM_PCT,
	SF_R_AWAIT,
	SF_W_AWAIT,
	SF_D_AWAIT,
	SF_F_AWAIT,
	SF_RAREQ_SZ,
	SF_WAREQ_SZ,
	SF_DAREQ_SZ,
	SF_AQU_SZ,
	SF_UTIL,
	SF_IN_FLIGHT,
	SF_RESTARTED,
	/* Text only: the operations' names, what flushes lack, the note of a restart. */
	SF_OP_READ,
	SF_OP_WRITE,
	SF_OP_DISCARD,
	SF_OP_FLUSH,
	SF_FLUSH_KB,
	SF_FLUSH_RQM,
	SF_FLUSH_RQM_PCT,
	SF_FLUSH_AREQ,
	SF_NOTE,
	SF_NR
};

/* A rate, a percentage or a size: 2 digits in both outputs. */
#define STAT_NUM(k, c, l, ...)                                                               \
	{                                                                                    \
		.key = k, .type = RT_DOUBLE, .prec = 2, .json_prec = 2, .col = c, .line = l, \
		__VA_ARGS__                                                                  \
	}
/* A time or a queue size: 3 digits in JSON. */
#define STAT_MS(k, c, l, ...)                                                                \
	{                                                                                    \
		.key = k, .type = RT_DOUBLE, .prec = 2, .json_prec = 3, .col = c, .line = l, \
		__VA_ARGS__                                                                  \
	}
#define STAT_TEXT(c, l)                             \
	{                                           \
		.type = RT_STR, .col = c, .line = l \
	}

static const struct render_field stat_fields[SF_NR] = {
	[SF_DISK] = {.key = "disk", .type = RT_NAME, .col = SC_DEVICE, .line = SL_READ},
	[SF_DEV] = {.key = "dev", .type = RT_STR, .flags = RF_JSON_ONLY},
	[SF_PARTITION] = {.key = "partition", .type = RT_BOOL, .flags = RF_JSON_ONLY},
	[SF_R_S] = STAT_NUM("r_s", SC_OPS, SL_READ),
	[SF_W_S] = STAT_NUM("w_s", SC_OPS, SL_WRITE),
	/* Discard and flush lines only when such requests completed. */
	[SF_D_S] = STAT_NUM("d_s", SC_OPS, SL_DISCARD, .flags = RF_HIDE_ZERO_LINE),
	[SF_F_S] = STAT_NUM("f_s", SC_OPS, SL_FLUSH, .flags = RF_HIDE_ZERO_LINE),
	[SF_RKB_S] = STAT_NUM("rkB_s", SC_KB, SL_READ),
	[SF_WKB_S] = STAT_NUM("wkB_s", SC_KB, SL_WRITE),
	[SF_DKB_S] = STAT_NUM("dkB_s", SC_KB, SL_DISCARD, .flags = RF_HIDE_ZERO_LINE),
	[SF_RRQM_S] = STAT_NUM("rrqm_s", SC_RQM, SL_READ),
	[SF_WRQM_S] = STAT_NUM("wrqm_s", SC_RQM, SL_WRITE),
	[SF_DRQM_S] = STAT_NUM("drqm_s", SC_RQM, SL_DISCARD),
	[SF_RRQM_PCT] = STAT_NUM("rrqm_pct", SC_RQM_PCT, SL_READ),
	[SF_WRQM_PCT] = STAT_NUM("wrqm_pct", SC_RQM_PCT, SL_WRITE),
	[SF_DRQM_PCT] = STAT_NUM("drqm_pct", SC_RQM_PCT, SL_DISCARD),
	[SF_R_AWAIT] = STAT_MS("r_await", SC_AWAIT, SL_READ),
	[SF_W_AWAIT] = STAT_MS("w_await", SC_AWAIT, SL_WRITE),
	[SF_D_AWAIT] = STAT_MS("d_await", SC_AWAIT, SL_DISCARD),
	[SF_F_AWAIT] = STAT_MS("f_await", SC_AWAIT, SL_FLUSH),
	[SF_RAREQ_SZ] = STAT_NUM("rareq_sz", SC_AREQ, SL_READ),
	[SF_WAREQ_SZ] = STAT_NUM("wareq_sz", SC_AREQ, SL_WRITE),
	[SF_DAREQ_SZ] = STAT_NUM("dareq_sz", SC_AREQ, SL_DISCARD),
	[SF_AQU_SZ] = STAT_MS("aqu_sz", SC_AQU, SL_READ),
	[SF_UTIL] = STAT_NUM("util", SC_UTIL, SL_READ),
	[SF_IN_FLIGHT] = {.key = "in_flight", .type = RT_UINT, .col = SC_INFLIGHT},
	[SF_RESTARTED] = {.key = "restarted", .type = RT_BOOL, .flags = RF_JSON_ONLY},
	[SF_OP_READ] = STAT_TEXT(SC_OP, SL_READ),
	[SF_OP_WRITE] = STAT_TEXT(SC_OP, SL_WRITE),
	[SF_OP_DISCARD] = STAT_TEXT(SC_OP, SL_DISCARD),
	[SF_OP_FLUSH] = STAT_TEXT(SC_OP, SL_FLUSH),
	/* Flushes move no data and are never merged. */
	[SF_FLUSH_KB] = STAT_TEXT(SC_KB, SL_FLUSH),
	[SF_FLUSH_RQM] = STAT_TEXT(SC_RQM, SL_FLUSH),
	[SF_FLUSH_RQM_PCT] = STAT_TEXT(SC_RQM_PCT, SL_FLUSH),
	[SF_FLUSH_AREQ] = STAT_TEXT(SC_AREQ, SL_FLUSH),
	[SF_NOTE] = STAT_TEXT(SC_OP, SL_NOTE),
};

static const struct render_table stat_devices = {
	.cols = stat_cols,
	.nr_cols = SC_NR,
	.fields = stat_fields,
	.nr_fields = SF_NR,
};

/* What a report says about the times it covers (JSON; the text has it in the title). */
enum stat_report_field {
	SR_TIME,
	SR_INTERVAL,
	SR_SINCE_BOOT,
	SR_PARTIAL,
	SR_REBOOT,
	SR_CLOCK_SET_BACK,
	SR_NR
};

static const struct render_field stat_report_fields[SR_NR] = {
	[SR_TIME] = {.key = "time", .type = RT_DOUBLE, .json_prec = 3, .flags = RF_JSON_ONLY},
	[SR_INTERVAL] = {.key = "interval_s",
			 .type = RT_DOUBLE,
			 .json_prec = 3,
			 .flags = RF_JSON_ONLY},
	[SR_SINCE_BOOT] = {.key = "since_boot", .type = RT_BOOL, .flags = RF_JSON_ONLY},
	[SR_PARTIAL] = {.key = "partial", .type = RT_BOOL, .flags = RF_JSON_ONLY},
	[SR_REBOOT] = {.key = "reboot", .type = RT_BOOL, .flags = RF_JSON_ONLY},
	[SR_CLOCK_SET_BACK] = {.key = "clock_set_back", .type = RT_BOOL, .flags = RF_JSON_ONLY},
};

static const struct render_table stat_report_meta = {
	.fields = stat_report_fields,
	.nr_fields = SR_NR,
};

static void stat_device_row(struct render *r, const struct ds_dev *d, const struct ds_metrics *m)
{
	struct render_value v[SF_NR] = {};
	char devnum[24];

	snprintf(devnum, sizeof(devnum), "%u:%u", d->major, d->minor);
	v[SF_DISK] = rv_str(d->name);
	v[SF_DEV] = rv_str(devnum);
	v[SF_PARTITION] = rv_bool(d->partition);
	v[SF_R_S] = rv_double(m->r_s);
	v[SF_W_S] = rv_double(m->w_s);
	v[SF_D_S] = rv_double(m->d_s);
	v[SF_F_S] = rv_double(m->f_s);
	v[SF_RKB_S] = rv_double(m->rkB_s);
	v[SF_WKB_S] = rv_double(m->wkB_s);
	v[SF_DKB_S] = rv_double(m->dkB_s);
	v[SF_RRQM_S] = rv_double(m->rrqm_s);
	v[SF_WRQM_S] = rv_double(m->wrqm_s);
	v[SF_DRQM_S] = rv_double(m->drqm_s);
	v[SF_RRQM_PCT] = rv_double(m->rrqm_pct);
	v[SF_WRQM_PCT] = rv_double(m->wrqm_pct);
	v[SF_DRQM_PCT] = rv_double(m->drqm_pct);
	v[SF_R_AWAIT] = rv_double(m->r_await);
	v[SF_W_AWAIT] = rv_double(m->w_await);
	v[SF_D_AWAIT] = rv_double(m->d_await);
	v[SF_F_AWAIT] = rv_double(m->f_await);
	v[SF_RAREQ_SZ] = rv_double(m->rareq_sz);
	v[SF_WAREQ_SZ] = rv_double(m->wareq_sz);
	v[SF_DAREQ_SZ] = rv_double(m->dareq_sz);
	v[SF_AQU_SZ] = rv_double(m->aqu_sz);
	v[SF_UTIL] = rv_double(m->util);
	v[SF_IN_FLIGHT] = rv_uint(m->in_flight);
	v[SF_RESTARTED] = rv_flag(m->restarted);
	v[SF_OP_READ] = rv_str("read");
	v[SF_OP_WRITE] = rv_str("write");
	v[SF_OP_DISCARD] = rv_str("discard");
	v[SF_OP_FLUSH] = rv_str("flush");
	v[SF_FLUSH_KB] = rv_absent();
	v[SF_FLUSH_RQM] = rv_absent();
	v[SF_FLUSH_RQM_PCT] = rv_absent();
	v[SF_FLUSH_AREQ] = rv_absent();
	if (m->restarted)
		v[SF_NOTE] = rv_str("(counters restarted: the device was registered again; this "
				    "interval counts from zero)");
	render_row(r, &stat_devices, v);
}

int stat_report(struct stat_ctx *ctx, const struct ds_snapshot *prev, const struct ds_snapshot *cur,
		enum report_note note)
{
	const struct stat_opts *o = ctx->opts;
	double interval_s = prev ? cur->uptime_s - prev->uptime_s : cur->uptime_s;
	struct render_value meta[SR_NR] = {};
	const struct ds_dev *d, *before;
	struct ds_metrics m;
	char when[64], title[192];
	int order, pass, npass;
	size_t i;

	if (interval_s <= 0)
		return 0; /* two snapshots at the same instant: nothing to say */
	ctx->reports++;
	fmt_local_time(cur->epoch_s, true, when, sizeof(when));
	if (prev)
		snprintf(title, sizeof(title), "%s  interval %.2f s%s", when, interval_s,
			 note == NOTE_PARTIAL	 ? " (partial: interrupted)" :
			 note == NOTE_CLOCK_BACK ? " (the wall clock was set back)" :
						   "");
	else
		snprintf(title, sizeof(title), "%s  since boot (%.0f s)%s", when, interval_s,
			 note == NOTE_REBOOT ? ": the system rebooted, reports start again" : "");
	meta[SR_TIME] = rv_double(cur->epoch_s);
	meta[SR_INTERVAL] = rv_double(interval_s);
	meta[SR_SINCE_BOOT] = rv_bool(prev == NULL);
	meta[SR_PARTIAL] = rv_flag(note == NOTE_PARTIAL);
	meta[SR_REBOOT] = rv_flag(note == NOTE_REBOOT);
	meta[SR_CLOCK_SET_BACK] = rv_flag(note == NOTE_CLOCK_BACK);
	render_report_begin(ctx->render, title, &stat_report_meta, meta, "devices", &stat_devices);
	/* With -d, devices come in the order the user named them. */
	npass = o->nr_disks ? o->nr_disks : 1;
	for (pass = 0; pass < npass; pass++) {
		for (i = 0; i < cur->nr; i++) {
			d = &cur->devs[i];
			if (!stat_selects(o, d, &order) || order != pass)
				continue;
			before = prev ? ds_snapshot_find(prev, d->major, d->minor, d->name) : NULL;
			ds_compute(before, d, interval_s, &m);
			if (o->omit_idle && !m.ios)
				continue;
			stat_device_row(ctx->render, d, &m);
		}
	}
	render_report_end(ctx->render);
	return 0;
}
