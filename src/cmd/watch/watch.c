// SPDX-License-Identifier: GPL-2.0
/*
 * iospan watch: every interval, one iostat sample of the watched disks and the I/O
 * pressure; the last --pre seconds stay in memory; a rule held for --for samples opens
 * an incident, stored with that window and --capture seconds after it. Events go to
 * stderr one line each, so journald keeps them.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "iospan.h"
#include "args.h"
#include "err.h"
#include "json.h"
#include "printable.h"
#include <sqlite3.h>
#include "collector.h"
#include "export/metrics.h"
#include "export/otlp.h"
#include "export/webconf.h"
#include "watch.h"

/* The BPF collectors (collector.h). */
const struct watch_collector_ops *const watch_collectors[] = { &watch_collector_top,
							       &watch_collector_trace, NULL };

#define WATCH_MAX_COLLECTORS 8

/* A disk's rule counters, kept across samples by its identity. */
struct disk_counter {
	unsigned int major, minor;
	char name[DISK_NAME_LEN];
	struct wt_counter c;
};

struct watch_ctx {
	struct watch_opts *o;
	struct io_sampler sampler;
	struct watch_window window;
	struct watch_store *store;
	struct wt_gate gate;
	struct disk_counter counters[WATCH_MAX_DISKS];
	int nr_counters;
	struct wt_counter psi_counter;
	/* The open incident: 0 when none, or when it could not be stored. */
	int64_t incident_id;
	bool incident_open;	   /* the gate is capturing (even if storing failed) */
	unsigned int lost_samples; /* samples of it the store refused */
	unsigned int stored_samples;
	bool held_logged;   /* the trigger held back now was logged */
	bool captured;	    /* --capture-now: its incident was opened */
	double capture_end; /* --capture-now: the boot-clock time its capture ends */
	char *collectors;   /* what each BPF collector did at the start (JSON object) */
	bool store_failing; /* the last write failed (logged once until one succeeds) */
	int left_out_logged; /* disks past WATCH_MAX_DISKS last said */
	void *collector_priv[WATCH_MAX_COLLECTORS];
	bool collector_on[WATCH_MAX_COLLECTORS];
	struct jw *jw;
	/* --listen: the metrics endpoint and what the loop tells it. */
	struct metrics *metrics;
	struct http_endpoint *endpoint;
	struct web_config *web; /* --web-config, read at start */
	/* --otlp-endpoint: the exporter, and what was last said of it. */
	struct otlp_exporter *otlp;
	bool otlp_failing_logged;
	struct metrics_collector *self_scratch; /* a collector's figures, on their way */
};

/*
 * How the stored processes' and files' FS bytes are counted (incidents.fs_bytes): by
 * top's collector at the syscalls, or from the page cache; NULL without it.
 */
static const char *fs_bytes_counted(const struct watch_ctx *ctx)
{
	int i;

	for (i = 0; watch_collectors[i] && i < WATCH_MAX_COLLECTORS; i++)
		if (watch_collectors[i] == &watch_collector_top && ctx->collector_on[i])
			return watch_top_follows_syscalls(ctx->o) ? "syscalls" : "pages";
	return NULL;
}

static struct jw *log_jw;

static void log_event(const char *event, const char *fmt, va_list ap)
{
	char when[32], *msg = NULL;
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (vasprintf(&msg, fmt, ap) < 0)
		return;
	if (log_jw) {
		jw_start_object(log_jw);
		jw_kv_float(log_jw, "time", ts.tv_sec + ts.tv_nsec / 1e9, 3);
		jw_kv_string(log_jw, "event", event);
		jw_kv_string(log_jw, "message", msg);
		jw_end_object(log_jw);
		fflush(stdout);
	} else {
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		fprintf(stderr, "iospan watch: %s %s: %s\n", when, event, msg);
	}
	free(msg);
}

static void watch_event(const char *event, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void watch_event(const char *event, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_event(event, fmt, ap);
	va_end(ap);
}

void watch_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_event("info", fmt, ap);
	va_end(ap);
}

/* The rule counters of this sample's disks; counters of disks gone are dropped. */
static struct wt_counter *counter_of(struct watch_ctx *ctx, struct disk_counter *next, int *nr,
				     const struct ds_dev *d)
{
	struct disk_counter *dc = &next[(*nr)++];
	int i;

	memset(dc, 0, sizeof(*dc));
	dc->major = d->major;
	dc->minor = d->minor;
	snprintf(dc->name, sizeof(dc->name), "%s", d->name);
	for (i = 0; i < ctx->nr_counters; i++) {
		if (ctx->counters[i].major == d->major && ctx->counters[i].minor == d->minor &&
		    !strcmp(ctx->counters[i].name, d->name)) {
			dc->c = ctx->counters[i].c;
			break;
		}
	}
	return &dc->c;
}

/* The values the rules check on disk @d: its iostat metrics and its slowest request. */
static void disk_values(const struct io_disk_sample *d, double v[WT_NR_METRICS])
{
	wt_values(&d->m, NULL, v);
	v[WT_SLOW_REQUEST] = d->slowest_ms;
	/* No value where no driver hook completed a command on the disk (loop, virtio). */
	v[WT_DRIVER_ERRORS] =
		d->have_drv && d->drv.last.kind ?
			(double)(d->drv.errors + d->drv.timeouts + d->drv.dispatch_errors) :
			NAN;
}

/* The values of @rule on disk @disk (-1: pressure) over the last @n samples. */
static unsigned int held_values(const struct watch_ctx *ctx, int disk_idx, const char *name,
				enum wt_metric rule, double *out, double *times, unsigned int n)
{
	const struct watch_window *w = &ctx->window;
	const struct io_sample *s;
	double v[WT_NR_METRICS];
	unsigned int got = 0, i, start;
	int j;

	start = w->nr > n ? w->nr - n : 0;
	for (i = start; i < w->nr; i++) {
		s = watch_window_at(w, i);
		if (disk_idx < 0) {
			wt_values(NULL, &s->psi, v);
		} else {
			for (j = 0; j < s->nr; j++)
				if (!strcmp(s->disks[j].dev.name, name) && s->disks[j].have_metrics)
					break;
			if (j == s->nr)
				continue;
			disk_values(&s->disks[j], v);
		}
		if (times)
			times[got] = s->epoch_s;
		out[got++] = v[rule];
	}
	return got;
}

/*
 * Checks every rule on this sample: a disk (in /proc/diskstats order) and rule that has
 * just come to hold, else one that still holds; the pressure rules after the disks'.
 * Fills @t (strings point into @s) and @fresh.
 */
static bool check_rules(struct watch_ctx *ctx, const struct io_sample *s,
			struct store_trigger *t, bool *fresh, char *dev, size_t dev_len)
{
	struct disk_counter next[WATCH_MAX_DISKS];
	double v[WT_NR_METRICS];
	int i, nr = 0, rule, fired_rule = -1, fired_disk = -1;
	bool rule_fresh;
	struct wt_counter *c;

	*fresh = false;
	for (i = 0; i < s->nr; i++) {
		c = counter_of(ctx, next, &nr, &s->disks[i].dev);
		if (!s->disks[i].have_metrics)
			continue;
		disk_values(&s->disks[i], v);
		rule = wt_check(&ctx->o->rules, c, v, &rule_fresh);
		if (rule >= 0 && (fired_rule < 0 || (rule_fresh && !*fresh))) {
			fired_rule = rule;
			fired_disk = i;
			*fresh = rule_fresh;
		}
	}
	memcpy(ctx->counters, next, nr * sizeof(next[0]));
	ctx->nr_counters = nr;
	wt_values(NULL, &s->psi, v);
	rule = wt_check(&ctx->o->rules, &ctx->psi_counter, v, &rule_fresh);
	if (rule >= 0 && (fired_rule < 0 || (rule_fresh && !*fresh))) {
		fired_rule = rule;
		fired_disk = -1;
		*fresh = rule_fresh;
	}
	if (fired_rule < 0)
		return false;
	memset(t, 0, sizeof(*t));
	t->epoch_s = s->epoch_s;
	t->rule = fired_rule;
	t->threshold = ctx->o->rules.threshold[fired_rule];
	if (fired_disk >= 0) {
		t->disk = s->disks[fired_disk].dev.name;
		snprintf(dev, dev_len, "%u:%u", s->disks[fired_disk].dev.major,
			 s->disks[fired_disk].dev.minor);
		t->dev = dev;
		disk_values(&s->disks[fired_disk], v);
	} else {
		wt_values(NULL, &s->psi, v);
	}
	t->value = v[fired_rule];
	return true;
}

static void format_trigger(const struct watch_ctx *ctx, const struct store_trigger *t, char *buf,
			   size_t len)
{
	const char *unit = wt_metric_unit(t->rule);
	unsigned int hold, i;
	size_t n;

	if (t->rule_name) {
		snprintf(buf, len, "%s of %g s, opened at the start (--capture-now)", t->rule_name,
			 ctx->o->capture_s);
		return;
	}
	hold = wt_hold(&ctx->o->rules, t->rule);
	n = snprintf(buf, len, "%s %s %.2f%s >= %.2f%s for %u sample%s (",
		     t->disk ? printable(t->disk) : "system", wt_metric_name(t->rule), t->value,
		     unit, t->threshold, unit, hold, hold == 1 ? "" : "s");
	for (i = 0; i < t->nr_held && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%.2f", i ? ", " : "", t->held[i]);
	if (n < len)
		snprintf(buf + n, len - n, ")");
}

/* A sample's slow requests, each a trace (--otlp-endpoint). */
static void otlp_slow(struct watch_ctx *ctx, const struct coll_slow_sample *s)
{
	struct otlp_stage st[COLL_SLOW_STAGES];
	unsigned int i, k;

	for (i = 0; s && i < s->nr; i++) {
		const struct coll_slow_req *q = &s->reqs[i];
		struct otlp_request r = {
			.start_unix_ns = (uint64_t)(q->time * 1e9),
			.total_ns = q->total_ns,
			.op = q->op,
			.disk = q->disk,
			.comm = q->owner_known ? q->comm : NULL,
			.path = q->path,
			.cgroup = q->cgroup,
			.container = q->container,
			.detail = ctx->o->full_detail ? "full" : "block",
			.pid = q->owner_known ? q->pid : 0,
			.tid = q->owner_known ? q->tid : 0,
			.offset = q->offset,
			.bytes = q->bytes,
			.stages = st,
			.nr_stages = q->nr_stages,
		};

		for (k = 0; k < q->nr_stages; k++)
			st[k] = (struct otlp_stage){q->stage[k].name, q->stage[k].ns};
		otlp_add_request(ctx->otlp, &r);
	}
}

/* The exporter's figures to the endpoint, a failure said once until it ends. */
static void otlp_note(struct watch_ctx *ctx, const struct otlp_stats *st)
{
	if (ctx->metrics)
		metrics_note_otlp(ctx->metrics, st);
	if (st->failing && !ctx->otlp_failing_logged)
		watch_event("error",
			    "OTLP export: %s (retried as the protocol allows; what cannot wait "
			    "is dropped and counted)",
			    st->last_error);
	else if (!st->failing && ctx->otlp_failing_logged)
		watch_event("info", "OTLP export works again");
	ctx->otlp_failing_logged = st->failing;
}

static void otlp_tick(struct watch_ctx *ctx)
{
	struct otlp_stats st;

	if (!ctx->otlp)
		return;
	otlp_get_stats(ctx->otlp, &st);
	otlp_note(ctx, &st);
}

/* The incident's opening as a log record: the trigger, and the onset of its rise. */
static void otlp_incident_opened(struct watch_ctx *ctx, const struct store_trigger *t, int disk_idx,
				 const char *msg)
{
	unsigned int n = ctx->window.nr, got;
	double *v, *times, onset = 0;
	struct otlp_attr a[8];
	char body[640], value[32], threshold[32];
	unsigned int nr = 0;
	int idx;

	if (!ctx->otlp)
		return;
	v = calloc(n + 1, sizeof(*v));
	times = calloc(n + 1, sizeof(*times));
	if (v && times && !t->rule_name) {
		got = held_values(ctx, disk_idx, t->disk, t->rule, v, times, n);
		idx = wt_onset(v, (int)got, t->threshold);
		onset = idx >= 0 ? times[idx] : 0;
	}
	free(v);
	free(times);
	snprintf(body, sizeof(body), "incident %lld opened: %s", (long long)ctx->incident_id, msg);
	snprintf(value, sizeof(value), "%.2f", t->value);
	snprintf(threshold, sizeof(threshold), "%.2f", t->threshold);
	a[nr++] = (struct otlp_attr){"iospan.incident.id", NULL, ctx->incident_id};
	a[nr++] = (struct otlp_attr){"iospan.incident.event", "opened", 0};
	a[nr++] = (struct otlp_attr){"iospan.disk", t->disk ?: "system", 0};
	a[nr++] = (struct otlp_attr){"iospan.rule", t->rule_name ?: wt_metric_name(t->rule), 0};
	a[nr++] = (struct otlp_attr){"iospan.value", value, 0};
	a[nr++] = (struct otlp_attr){"iospan.threshold", threshold, 0};
	if (onset > 0)
		a[nr++] = (struct otlp_attr){"iospan.onset_unix_ms", NULL, (int64_t)(onset * 1000)};
	otlp_add_log(ctx->otlp, (uint64_t)(t->epoch_s * 1e9), OTLP_SEVERITY_WARN, body, a, nr);
}

/* The incident's end as a log record, with its busiest processes. */
static void otlp_incident_closed(struct watch_ctx *ctx, double end_epoch_s, const char *what)
{
	static const char busiest_sql[] =
		"SELECT comm, pid, sum(disk_read_bytes + disk_write_bytes) FROM processes"
		" WHERE incident_id = ?1 AND phase = 'capture' GROUP BY pid, comm ORDER BY"
		" sum(disk_read_bytes + disk_write_bytes) DESC,"
		" sum(fs_read_bytes + fs_write_bytes) DESC LIMIT 5";
	char top[512] = "", body[640];
	struct otlp_attr a[4];
	sqlite3_stmt *s = NULL;
	unsigned int nr = 0;
	size_t n = 0;

	if (!ctx->otlp)
		return;
	if (sqlite3_prepare_v2(store_db(ctx->store), busiest_sql, -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(s, 1, ctx->incident_id);
		while (sqlite3_step(s) == SQLITE_ROW && n < sizeof(top))
			n += snprintf(top + n, sizeof(top) - n, "%s%s (%lld) %lld bytes",
				      n ? ", " : "",
				      printable((const char *)sqlite3_column_text(s, 0) ?: "?"),
				      (long long)sqlite3_column_int64(s, 1),
				      (long long)sqlite3_column_int64(s, 2));
	}
	sqlite3_finalize(s);
	snprintf(body, sizeof(body), "incident %lld %s", (long long)ctx->incident_id, what);
	a[nr++] = (struct otlp_attr){"iospan.incident.id", NULL, ctx->incident_id};
	a[nr++] = (struct otlp_attr){"iospan.incident.event", "closed", 0};
	a[nr++] = (struct otlp_attr){"iospan.samples", NULL, ctx->stored_samples};
	if (top[0])
		a[nr++] = (struct otlp_attr){"iospan.top_processes", top, 0};
	otlp_add_log(ctx->otlp, (uint64_t)(end_epoch_s * 1e9), OTLP_SEVERITY_INFO, body, a, nr);
}

/* Collectors see every sample; with an incident open, inside its transaction. */
static void run_collectors(struct watch_ctx *ctx, const struct io_sample *s, bool opened,
			   bool closing)
{
	struct watch_tick tick = {
		.sample = s,
		.pre_s = ctx->o->pre_s,
		.incident_id = ctx->incident_id,
		.opened = opened,
		.closing = closing,
		.db = ctx->incident_id ? store_db(ctx->store) : NULL,
	};
	int i, ret;

	for (i = 0; watch_collectors[i] && i < WATCH_MAX_COLLECTORS; i++) {
		if (!ctx->collector_on[i])
			continue;
		ret = watch_collectors[i]->sample(ctx->collector_priv[i], &tick);
		if (ret)
			watch_event("error", "collector %s: %s", watch_collectors[i]->name,
				    strerror(-ret));
		if (ctx->otlp && watch_collectors[i]->slow_requests)
			otlp_slow(ctx, watch_collectors[i]->slow_requests(ctx->collector_priv[i]));
		if (ctx->metrics && watch_collectors[i]->export) {
			watch_collectors[i]->export(ctx->collector_priv[i], ctx->metrics,
						    ctx->self_scratch);
			metrics_note_collector(ctx->metrics, watch_collectors[i]->name,
					       ctx->self_scratch);
		}
	}
}

static void store_failed(struct watch_ctx *ctx, const char *what, int ret)
{
	store_rollback(ctx->store);
	ctx->lost_samples++;
	/* One line until a write succeeds again: a full disk would log every second. */
	if (ctx->store_failing)
		return;
	ctx->store_failing = true;
	watch_event("error",
		    "cannot store %s in '%s': %s; the watcher keeps running (what it cannot "
		    "store is lost; an incident cut short is marked incomplete)",
		    what, ctx->o->db_path,
		    ret == -ENOSPC ? "the file system is full" : store_errmsg(ctx->store));
}

static void store_succeeded(struct watch_ctx *ctx)
{
	if (!ctx->store_failing)
		return;
	ctx->store_failing = false;
	watch_event("info", "'%s' accepts writes again", ctx->o->db_path);
}

/* A new incident: its row, the pre-trigger window and this sample, in one transaction. */
static void incident_open(struct watch_ctx *ctx, const struct io_sample *s, struct store_trigger *t,
			  int disk_idx)
{
	const struct watch_window *w = &ctx->window;
	struct store_incident_info info = {
		.fs_bytes = fs_bytes_counted(ctx),
		.collectors = ctx->collectors,
		.target = ctx->o->target,
	};
	char msg[512];
	unsigned int i;
	int ret;

	ctx->incident_open = true;
	ctx->incident_id = 0;
	if (ctx->metrics && !t->rule_name)
		metrics_note_incident(ctx->metrics, t->disk, t->rule, t->epoch_s);
	ctx->lost_samples = ctx->stored_samples = 0;
	format_trigger(ctx, t, msg, sizeof(msg));
	ret = store_begin(ctx->store);
	if (!ret)
		ret = store_incident_open(ctx->store, t, ctx->o->pre_s, ctx->o->capture_s, &info,
					  &ctx->incident_id);
	/* The window's last sample is this one: the capture's first. */
	for (i = 0; !ret && i < w->nr; i++)
		ret = store_sample_add(ctx->store, ctx->incident_id, watch_window_at(w, i),
				       i + 1 < w->nr ? "pre" : "capture");
	if (!ret) {
		run_collectors(ctx, s, true, false);
		ret = store_commit(ctx->store);
	}
	if (ret) {
		ctx->incident_id = 0;
		watch_event("trigger", "%s: incident not stored", msg);
		store_failed(ctx, "a new incident", ret);
		return;
	}
	ctx->stored_samples = w->nr;
	store_succeeded(ctx);
	watch_event("trigger", "incident %lld opened: %s; capturing %g s",
		    (long long)ctx->incident_id, msg, ctx->o->capture_s);
	otlp_incident_opened(ctx, t, disk_idx, msg);
}

/* One more sample of the open incident (and a trigger that extended it), on its own. */
static void incident_sample(struct watch_ctx *ctx, const struct io_sample *s,
			    const struct store_trigger *extend, bool closing)
{
	int ret;

	if (!ctx->incident_id) {
		ctx->lost_samples++;
		return;
	}
	ret = store_begin(ctx->store);
	if (!ret && extend)
		ret = store_trigger_add(ctx->store, ctx->incident_id, extend);
	if (!ret)
		ret = store_sample_add(ctx->store, ctx->incident_id, s, "capture");
	if (!ret) {
		run_collectors(ctx, s, false, closing);
		ret = store_commit(ctx->store);
	}
	if (ret) {
		store_failed(ctx, "a sample", ret);
		return;
	}
	store_succeeded(ctx);
	ctx->stored_samples++;
}

static void apply_retention(struct watch_ctx *ctx)
{
	struct timespec ts;
	int deleted, ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	ret = store_prune(ctx->store, &ctx->o->retention, ts.tv_sec + ts.tv_nsec / 1e9, &deleted);
	if (ret)
		watch_event("error", "retention: cannot delete old incidents in '%s': %s",
			    ctx->o->db_path,
			    ret == -ENOSPC ? "the file system is full" : store_errmsg(ctx->store));
	else if (deleted)
		watch_event("retention", "deleted %d old incident%s", deleted,
			    deleted == 1 ? "" : "s");
}

static void incident_close(struct watch_ctx *ctx, double end_epoch_s, const char *reason)
{
	bool complete = !ctx->lost_samples && !strcmp(reason, "capture ended");
	int ret;

	ctx->incident_open = false;
	if (ctx->metrics)
		metrics_note_incident_closed(ctx->metrics);
	if (!ctx->incident_id)
		return;
	ret = store_incident_close(ctx->store, ctx->incident_id, end_epoch_s, complete, reason);
	if (ret) {
		/* It stays "open" in the file; the next watcher marks it incomplete. */
		watch_event("error", "cannot close incident %lld in '%s': %s",
			    (long long)ctx->incident_id, ctx->o->db_path,
			    ret == -ENOSPC ? "the file system is full" : store_errmsg(ctx->store));
	} else if (complete) {
		watch_event("stored", "incident %lld stored: %u samples",
			    (long long)ctx->incident_id, ctx->stored_samples);
		otlp_incident_closed(ctx, end_epoch_s, "stored");
	} else {
		watch_event("stored", "incident %lld stored incomplete (%s): %u samples, %u lost",
			    (long long)ctx->incident_id, reason, ctx->stored_samples,
			    ctx->lost_samples);
		otlp_incident_closed(ctx, end_epoch_s, "stored incomplete");
	}
	ctx->incident_id = 0;
	apply_retention(ctx);
}

/*
 * --capture-now: one incident, opened at the first sample with the rule "capture" and
 * captured for --capture seconds, whatever the rules say; then the watcher stops.
 */
static void capture_now_sample(struct watch_ctx *ctx, const struct io_sample *s)
{
	struct store_trigger t = {
		.epoch_s = s->epoch_s,
		.rule = WT_NR_METRICS,
		.rule_name = "capture",
	};
	bool closing;

	watch_window_push(&ctx->window, s);
	if (ctx->metrics)
		metrics_note_sample(ctx->metrics, s->epoch_s);
	if (!ctx->captured) {
		ctx->captured = true;
		/* Half an interval early: a sample late by scheduling still ends it. */
		ctx->capture_end = s->uptime_s + ctx->o->capture_s - ctx->o->interval_ns / 2e9;
		incident_open(ctx, s, &t, -1);
		return;
	}
	if (!ctx->incident_open) {
		run_collectors(ctx, s, false, false);
		return;
	}
	closing = s->uptime_s >= ctx->capture_end;
	incident_sample(ctx, s, NULL, closing);
	if (closing)
		incident_close(ctx, s->epoch_s, "capture ended");
}

static void handle_sample(struct watch_ctx *ctx, const struct io_sample *s)
{
	struct store_trigger t;
	double held[64];
	char dev[24], msg[512];
	bool fired, fresh;
	int disk_idx = -1, i;
	unsigned int hold;
	enum wt_action act;

	/* Never silently: disks past the limit are named by number, when that changes. */
	if (s->nr_left_out != ctx->left_out_logged) {
		if (s->nr_left_out)
			watch_event("error",
				    "%d disk%s not watched: at most %d at once (name them with -d)",
				    s->nr_left_out, s->nr_left_out == 1 ? "" : "s", WATCH_MAX_DISKS);
		ctx->left_out_logged = s->nr_left_out;
	}
	watch_window_push(&ctx->window, s);
	if (ctx->metrics)
		metrics_note_sample(ctx->metrics, s->epoch_s);
	fired = check_rules(ctx, s, &t, &fresh, dev, sizeof(dev));
	if (fired) {
		for (i = 0; t.disk && i < s->nr; i++)
			if (t.disk == s->disks[i].dev.name)
				disk_idx = i;
		t.held = held;
		hold = wt_hold(&ctx->o->rules, t.rule);
		t.nr_held = held_values(ctx, disk_idx, t.disk, t.rule, held, NULL,
					hold < 64 ? hold : 64);
	}
	act = wt_gate_step(&ctx->gate, s->uptime_s, fired);
	switch (act) {
	case WT_OPEN:
		ctx->held_logged = false;
		incident_open(ctx, s, &t, disk_idx);
		return;
	case WT_EXTEND:
		/* A rule still holding extends quietly; one that comes to hold is logged. */
		if (fresh) {
			format_trigger(ctx, &t, msg, sizeof(msg));
			watch_event("trigger", "incident %lld extended: %s",
				    (long long)ctx->incident_id, msg);
		}
		incident_sample(ctx, s, fresh ? &t : NULL, false);
		return;
	case WT_CLOSE:
		incident_sample(ctx, s, NULL, true);
		incident_close(ctx, s->epoch_s, "capture ended");
		return;
	case WT_HELD_COOLDOWN:
	case WT_HELD_HOURLY_CAP:
		if (!ctx->held_logged) {
			format_trigger(ctx, &t, msg, sizeof(msg));
			watch_event("held", "no incident: %s: %s", msg,
				    act == WT_HELD_COOLDOWN ? "in the cooldown after the last one" :
							      "the per-hour cap is reached");
			ctx->held_logged = true;
		}
		break;
	case WT_NONE:
		if (ctx->incident_open)
			incident_sample(ctx, s, NULL, false);
		break;
	}
	/* A trigger held back is logged once, until its rules stop holding. */
	if (!fired)
		ctx->held_logged = false;
	if (!ctx->incident_open)
		run_collectors(ctx, s, false, false);
}

/* Every -d must name a device of this machine. */
static int check_disks(const struct watch_opts *o, const struct ds_snapshot *snap)
{
	int i;
	size_t j;

	for (i = 0; i < o->nr_disks; i++) {
		for (j = 0; j < snap->nr; j++)
			if (disk_spec_matches(&o->disks[i], snap->devs[j].major,
					      snap->devs[j].minor, snap->devs[j].name))
				break;
		if (j == snap->nr)
			return fail_usage("unknown disk '%s': name a device listed in "
					  "/proc/diskstats (sda, /dev/loop0, 7:0)",
					  o->disk_text[i]);
	}
	return 0;
}

static void log_start(struct watch_ctx *ctx, const struct io_sample *s)
{
	const struct watch_opts *o = ctx->o;
	char disks[256] = "", rules[256] = "";
	size_t n = 0;
	int i;

	if (o->nr_disks) {
		for (i = 0; i < s->nr && n < sizeof(disks); i++)
			n += snprintf(disks + n, sizeof(disks) - n, "%s%s", i ? ", " : "",
				      printable(s->disks[i].dev.name));
	} else {
		snprintf(disks, sizeof(disks), "every disk (%d now)", s->nr);
	}
	for (i = 0, n = 0; i < WT_NR_METRICS && n < sizeof(rules); i++)
		if (o->rules.threshold[i] > 0)
			n += snprintf(rules + n, sizeof(rules) - n, "%s%s>=%g%s", n ? " " : "",
				      wt_metric_name(i), o->rules.threshold[i], wt_metric_unit(i));
	watch_event("start",
		    "watching %s every %g s; rules %s for %u samples%s; pre %g s, capture %g s, "
		    "cooldown %g s, at most %u per hour; store %s%s",
		    disks, o->interval_ns / 1e9, rules, o->rules.hold,
		    o->rules.threshold[WT_SLOW_REQUEST] > 0 ? " (slow-request: one request)" : "",
		    o->pre_s, o->capture_s,
		    o->cooldown_s, o->max_per_hour, o->db_path,
		    o->config_path ? "" : " (no config file)");
	if (store_stale_closed(ctx->store))
		watch_event("start",
			    "%d incident%s left open by a previous watcher marked incomplete",
			    store_stale_closed(ctx->store),
			    store_stale_closed(ctx->store) == 1 ? "" : "s");
}

/* What each collector did at the start, for incidents.collectors. */
struct collector_states {
	char text[WATCH_MAX_COLLECTORS][640];
	int nr;
};

static void fill_collector_states(struct jw *jw, const void *arg)
{
	const struct collector_states *cs = arg;
	int i;

	jw_start_object(jw);
	for (i = 0; i < cs->nr; i++)
		jw_kv_string(jw, watch_collectors[i]->name, cs->text[i]);
	jw_end_object(jw);
}

static void collectors_open(struct watch_ctx *ctx)
{
	struct collector_states cs = {};
	char why[512], *state;
	int i, ret;

	if (ctx->o->no_bpf) {
		watch_event("info", "BPF collectors off (--bpf off): iostat and pressure only");
		for (i = 0; watch_collectors[i] && i < WATCH_MAX_COLLECTORS; i++)
			snprintf(cs.text[cs.nr++], sizeof(cs.text[0]), "off (--bpf off)");
		ctx->collectors = coll_json(fill_collector_states, &cs);
		return;
	}
	if (ctx->o->target[0])
		watch_event("info",
			    "target %s: the collectors record its processes, files, slow requests "
			    "and stalls only (the rules, samples and histograms are the whole "
			    "disks')%s",
			    printable(ctx->o->target),
			    ctx->o->filter.have_file || ctx->o->filter.have_dir ?
				    "; stalls not traced (a stall belongs to no file)" :
				    "");
	for (i = 0; watch_collectors[i] && i < WATCH_MAX_COLLECTORS; i++) {
		state = cs.text[cs.nr++];
		/* A collector that cannot load is one log line, not a failure of watch. */
		err_capture(why, sizeof(why));
		ret = watch_collectors[i]->open(ctx->o, &ctx->collector_priv[i]);
		err_capture(NULL, 0);
		if (ret > 0)
			snprintf(state, sizeof(cs.text[0]), "off by the options");
		else if (ret)
			snprintf(state, sizeof(cs.text[0]), "unavailable: %s",
				 why[0] ? why : strerror(-ret));
		else if (watch_collectors[i] == &watch_collector_top)
			snprintf(state, sizeof(cs.text[0]), "loaded (FS bytes %s)",
				 watch_top_follows_syscalls(ctx->o) ?
					 "from the syscalls" :
					 "from the page cache, in whole pages: --syscall-hooks "
					 "none");
		else
			snprintf(state, sizeof(cs.text[0]), "loaded");
		if (ret < 0)
			watch_event("error", "collector %s %s; watching without it%s",
				    watch_collectors[i]->name, state,
				    watch_collectors[i] == (ctx->o->full_detail ?
								    &watch_collector_trace :
								    &watch_collector_top) &&
						    ctx->o->rules.threshold[WT_SLOW_REQUEST] > 0 ?
					    " (the slow-request rule cannot fire)" :
					    "");
		else
			watch_event("info", "collector %s %s", watch_collectors[i]->name, state);
		ctx->collector_on[i] = !ret;
	}
	ctx->collectors = coll_json(fill_collector_states, &cs);
}

/* What the rules need from the collectors goes into the sample before they are checked. */
static void collectors_observe(struct watch_ctx *ctx, struct io_sample *s)
{
	int i;

	for (i = 0; watch_collectors[i] && i < WATCH_MAX_COLLECTORS; i++)
		if (ctx->collector_on[i] && watch_collectors[i]->observe)
			watch_collectors[i]->observe(ctx->collector_priv[i], s);
}

static void collectors_close(struct watch_ctx *ctx)
{
	int i;

	for (i = 0; watch_collectors[i] && i < WATCH_MAX_COLLECTORS; i++) {
		if (!ctx->collector_on[i])
			continue;
		if (ctx->metrics)
			metrics_note_collector(ctx->metrics, watch_collectors[i]->name, NULL);
		watch_collectors[i]->close(ctx->collector_priv[i]);
	}
}

/*
 * The per-hour cap counts the incidents of the last hour that are stored, also those a
 * watcher before this one opened: a restart does not reset it.
 */
static void seed_hourly_cap(struct watch_ctx *ctx, const struct io_sample *s)
{
	static double starts[WT_MAX_PER_HOUR];
	int i, nr;

	if (store_recent_starts(ctx->store, s->epoch_s - 3600, starts, WT_MAX_PER_HOUR, &nr))
		return;
	/* The gate counts on the boot clock: each start as the same age on it. */
	for (i = 0; i < nr; i++)
		wt_gate_seed(&ctx->gate, s->uptime_s - (s->epoch_s - starts[i]));
}

/* A push of --otlp-metrics: what GET /metrics tells (an otlp_collect_fn). */
static int push_collect(void *metrics, struct mwriter *w)
{
	return metrics_write(metrics, w);
}

/* --otlp-endpoint (or the OTEL_ variables): the exporter's thread, and the pusher's. */
static int otlp_open(struct watch_ctx *ctx)
{
	const struct otlp_config *c = &ctx->o->otlp;
	int ret;

	if (!ctx->o->otlp_on)
		return 0;
	ret = otlp_start(c, &ctx->otlp);
	if (ret)
		return ret;
	if (ctx->o->otlp_metrics) {
		ret = otlp_start_metrics(ctx->otlp, push_collect, ctx->metrics);
		if (ret) {
			otlp_stop(ctx->otlp);
			ctx->otlp = NULL;
			return ret;
		}
	}
	watch_event("info", "slow requests (traces) and incidents (logs) exported to %s and %s",
		    c->url[OTLP_TRACES], c->url[OTLP_LOGS]);
	if (ctx->o->otlp_metrics)
		watch_event("info", "metrics pushed to %s every %g s", c->url[OTLP_METRICS],
			    c->metrics_interval_ms / 1e3);
	return 0;
}

/* Sends what waits (for a few seconds at most), then says what was sent and dropped. */
static void otlp_close(struct watch_ctx *ctx)
{
	uint64_t dropped[OTLP_NR_SIGNALS] = {}, by_reason[OTLP_NR_DROPS] = {};
	char metrics[96] = "";
	struct otlp_stats st;
	int s, d;

	if (!ctx->otlp)
		return;
	otlp_finish(ctx->otlp, &st);
	otlp_stop(ctx->otlp);
	otlp_note(ctx, &st); /* what the flush at exit changed */
	ctx->otlp = NULL;
	for (s = 0; s < OTLP_NR_SIGNALS; s++)
		for (d = 0; d < OTLP_NR_DROPS; d++) {
			dropped[s] += st.dropped[s][d];
			by_reason[d] += st.dropped[s][d];
		}
	if (st.metrics)
		snprintf(metrics, sizeof(metrics), "; %llu metrics sent, %llu dropped",
			 (unsigned long long)st.sent[OTLP_METRICS],
			 (unsigned long long)dropped[OTLP_METRICS]);
	watch_event(
		"info",
		"OTLP export: %llu traces and %llu log records sent, %llu and %llu dropped%s "
		"(queue full %llu, refused %llu, retries exhausted %llu, at exit %llu, "
		"superseded %llu)",
		(unsigned long long)st.sent[OTLP_TRACES], (unsigned long long)st.sent[OTLP_LOGS],
		(unsigned long long)dropped[OTLP_TRACES], (unsigned long long)dropped[OTLP_LOGS],
		metrics, (unsigned long long)by_reason[OTLP_DROP_QUEUE_FULL],
		(unsigned long long)by_reason[OTLP_DROP_REJECTED],
		(unsigned long long)by_reason[OTLP_DROP_RETRIES],
		(unsigned long long)by_reason[OTLP_DROP_AT_EXIT],
		(unsigned long long)by_reason[OTLP_DROP_SUPERSEDED]);
}

/* --web-config, read before anything is opened: a mistake in it stops the start. */
static int web_config_read(struct watch_ctx *ctx)
{
	int ret;

	if (!ctx->o->web_config_path)
		return 0;
	ctx->web = calloc(1, sizeof(*ctx->web));
	if (!ctx->web)
		return fail(-ENOMEM, "out of memory");
	ret = web_config_load(ctx->o->web_config_path, ctx->web);
	if (ret) {
		free(ctx->web);
		ctx->web = NULL;
	}
	return ret;
}

/*
 * The metrics, for --listen or --otlp-metrics; --listen: serving before the collectors
 * load, so a port taken fails the start alone.
 */
static int endpoint_start(struct watch_ctx *ctx)
{
	const struct watch_opts *o = ctx->o;
	int ret;

	if (!o->have_listen && !o->otlp_metrics)
		return 0;
	ctx->metrics = calloc(1, sizeof(*ctx->metrics));
	ctx->self_scratch = calloc(1, sizeof(*ctx->self_scratch));
	if (!ctx->metrics || !ctx->self_scratch ||
	    metrics_init(ctx->metrics, o->disks, o->nr_disks, o->metrics_max_cgroups))
		return fail(-ENOMEM, "out of memory");
	if (!o->have_listen)
		return 0;
	ret = http_endpoint_start(&o->listen, ctx->web, metrics_render, ctx->metrics,
				  &ctx->endpoint);
	if (ret)
		return ret;
	watch_event("info", "metrics at http%s://%.*s:%u/metrics%s%s",
		    web_config_tls(ctx->web) ? "s" : "",
		    (int)(strrchr(o->listen.text, ':') - o->listen.text), o->listen.text,
		    http_endpoint_port(ctx->endpoint),
		    ctx->web && ctx->web->nr_users ? " (basic authentication)" : "",
		    ctx->web && ctx->web->client_auth == WEB_CLIENT_REQUIRE_VERIFY ?
			    " (client certificates)" :
			    "");
	return 0;
}

static void endpoint_stop(struct watch_ctx *ctx)
{
	http_endpoint_stop(ctx->endpoint);
	ctx->endpoint = NULL;
	if (ctx->web)
		web_config_free(ctx->web);
	free(ctx->web);
	ctx->web = NULL;
	if (ctx->metrics)
		metrics_free(ctx->metrics);
	free(ctx->metrics);
	ctx->metrics = NULL;
	free(ctx->self_scratch);
	ctx->self_scratch = NULL;
}

static int watch_run(struct watch_ctx *ctx)
{
	const struct watch_opts *o = ctx->o;
	struct io_sample *s;
	uint64_t start, k, end = 0;
	bool stopped = false;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return fail(-ENOMEM, "out of memory");
	/* Before the start line: a stop from then on is a clean one. */
	install_stop_handlers();
	ret = io_sampler_read(&ctx->sampler, s);
	if (ret) {
		ret = fail(ret, "cannot read /proc/diskstats: %s", strerror(-ret));
		goto cleanup;
	}
	ret = check_disks(o, &ctx->sampler.prev);
	if (ret)
		goto cleanup;
	ret = web_config_read(ctx);
	if (ret)
		goto cleanup;
	/* Samples of the window: --pre seconds before the trigger's sample, and that one. */
	ret = watch_window_init(&ctx->window,
				(unsigned int)ceil(o->pre_s * 1e9 / o->interval_ns) + 1);
	if (ret) {
		ret = fail(ret, "out of memory");
		goto cleanup;
	}
	ret = store_open(o->db_path, STORE_WATCHER, &ctx->store);
	if (ret)
		goto cleanup;
	ret = endpoint_start(ctx);
	if (ret)
		goto cleanup;
	ret = otlp_open(ctx);
	if (ret)
		goto cleanup;
	/* Loading BPF takes a while: "start" means sampling with the collectors on. */
	collectors_open(ctx);
	log_start(ctx, s);
	seed_hourly_cap(ctx, s);
	apply_retention(ctx);

	start = now_ns(CLOCK_MONOTONIC);
	if (o->duration_ns)
		end = start + o->duration_ns;
	for (k = 1; !stopped; k++) {
		/* Absolute deadlines: samples do not drift by the time spent storing. */
		if (end && start + k * o->interval_ns > end)
			break;
		stopped = sleep_until_ns(start + k * o->interval_ns);
		if (stopped)
			break;
		ret = io_sampler_read(&ctx->sampler, s);
		if (ret) {
			watch_event("error", "cannot read /proc/diskstats: %s; sampling goes on",
				    strerror(-ret));
			continue;
		}
		collectors_observe(ctx, s);
		if (o->capture_now)
			capture_now_sample(ctx, s);
		else
			handle_sample(ctx, s);
		otlp_tick(ctx);
		if (o->capture_now && ctx->captured && !ctx->incident_open)
			break;
	}
	ret = 0;
	if (ctx->incident_open)
		incident_close(ctx, s->epoch_s, "the watcher was stopped during the capture");
	watch_event("stop", "stopped%s",
		    stopped	   ? " by a signal" :
		    o->capture_now ? " (the capture ended)" :
				     " (--duration)");
	if (ctx->otlp)
		otlp_stop_metrics(ctx->otlp); /* the last push, with the collectors' figures */
	collectors_close(ctx);
	otlp_close(ctx);
cleanup:
	free(s);
	return ret;
}

int cmd_watch(int argc, char **argv)
{
	struct watch_opts opts;
	struct watch_ctx ctx = {};
	int ret;

	ret = watch_parse(argc, argv, &opts);
	if (ret)
		goto cleanup;
	ctx.o = &opts;
	if (gopts.json) {
		ctx.jw = jw_new(stdout);
		if (!ctx.jw) {
			ret = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
		log_jw = ctx.jw;
	}
	/* The database, its -wal and -shm: readable by root only (paths, command lines). */
	umask(077);
	wt_gate_init(&ctx.gate, opts.capture_s, opts.cooldown_s, opts.max_per_hour);
	io_sampler_init(&ctx.sampler, opts.disks, opts.nr_disks);
	ret = watch_run(&ctx);
	endpoint_stop(&ctx);
	io_sampler_free(&ctx.sampler);
	watch_window_free(&ctx.window);
	store_close(ctx.store);
	free(ctx.collectors);
cleanup:
	log_jw = NULL;
	jw_free(ctx.jw);
	watch_opts_free(&opts);
	return ret > 0 ? 0 : ret;
}
