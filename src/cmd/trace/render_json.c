// SPDX-License-Identifier: GPL-2.0
/* Slow requests as JSON Lines. */
#include "trace.h"

static void json_devnum(struct jw *jw, const char *key, uint32_t dev)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%u:%u", KDEV_MAJOR(dev), KDEV_MINOR(dev));
	jw_kv_string(jw, key, buf);
}

/* Time of @ts relative to the request start, in µs (0 if unknown). */
static double rel_us(const struct trace_rec *r, uint64_t ts)
{
	return ts >= r->start ? trace_us(ts - r->start) : 0;
}

static void print_json(struct trace_cmd *t, const struct trace_rec *r, const struct trace_names *n)
{
	char dn[DISK_NAME_LEN], dirs[2] = {0};
	struct jw *jw = t->jw;
	unsigned int i;

	jw_start_object(jw);
	jw_kv_string(jw, "type", "request");
	jw_kv_uint(jw, "time_ns", r->start + t->c.mono_to_real);
	jw_kv_uint(jw, "start_mono_ns", r->start);
	jw_kv_string(jw, "op", trace_op_name(r->op));
	if (!n->owner_known) {
		/* Pages dirtied before tracing began: the owner is unknown, not pid 0. */
		jw_kv_null(jw, "pid");
		jw_kv_null(jw, "tid");
		jw_kv_null(jw, "comm");
		jw_kv_null(jw, "cgroup_id");
		jw_kv_null(jw, "cgroup");
		jw_kv_null(jw, "cmdline");
		jw_kv_null(jw, "blkio_cgroup");
	} else {
		jw_kv_uint(jw, "pid", r->pid);
		jw_kv_uint(jw, "tid", r->tid);
		jw_kv_string(jw, "comm", r->comm);
		jw_kv_uint(jw, "cgroup_id", r->cgid);
		jw_kv_string(jw, "cgroup", n->cgroup);
		jw_kv_string_or_null(jw, "cmdline", n->id.cmdline);
		jw_kv_string_or_null(jw, "blkio_cgroup", n->id.blkio);
	}
	if (r->op == TRACE_OP_WRITEBACK)
		jw_kv_uint(jw, "flusher_tid", r->flusher);
	json_devnum(jw, "dev", r->dev);
	jw_kv_uint(jw, "inode", r->ino);
	jw_kv_string_or_null(jw, "path", n->path);
	jw_kv_int(jw, "offset", r->offset);
	jw_kv_uint(jw, "bytes", r->bytes);
	jw_kv_int(jw, "ret", r->ret);
	jw_kv_float(jw, "total_us", trace_us(r->stages[TRACE_ST_TOTAL]), 3);
	trace_json_flags(jw, "flags", r->flags, false);
	jw_kv_object(jw, "stages");
	for (i = 0; i < TRACE_ST_NR; i++)
		if (i >= TRACE_ST_DRV_IN && !trace_rec_has_drv_stages(r))
			jw_kv_null(jw, trace_stage_name(i)); /* no driver hook saw it */
		else
			jw_kv_float(jw, trace_stage_name(i), trace_us(r->stages[i]), 3);
	jw_end_object(jw);
	jw_kv_bool(jw, "has_block_io", r->nr_done > 0);
	jw_kv_uint(jw, "switches", r->nr_switches);
	jw_kv_float(jw, "runq_us", trace_us(r->runq_ns), 3);
	jw_kv_string(jw, "offcpu_from", n->offcpu_from);
	jw_kv_object(jw, "page_cache");
	jw_kv_uint(jw, "lookups", r->pc_lookups);
	jw_kv_uint(jw, "lookup_pages", r->pc_lookup_pages);
	jw_kv_uint(jw, "added_pages", r->pc_added);
	jw_kv_uint(jw, "readahead_sync", r->ra_sync);
	jw_kv_uint(jw, "readahead_async", r->ra_async);
	jw_end_object(jw);
	jw_kv_uint(jw, "bios_queued", r->nr_queued);
	jw_kv_uint(jw, "bios_completed", r->nr_done);
	jw_kv_uint(jw, "bios_not_recorded", trace_bios_missing(r));
	jw_kv_array(jw, "bios");
	for (i = 0; i < r->nr_bios && i < TRACE_MAX_BIOS; i++) {
		const struct trace_bio *b = &r->bios[i];

		jw_start_object(jw);
		json_devnum(jw, "dev", b->dev);
		jw_kv_string(jw, "disk", trace_dev_name(b->dev, dn, sizeof(dn)));
		jw_kv_uint(jw, "sector", b->sector);
		jw_kv_uint(jw, "bytes", b->bytes);
		dirs[0] = trace_bio_dir(b);
		jw_kv_string(jw, "op", dirs);
		jw_kv_float(jw, "held_us", b->h && b->q >= b->h ? trace_us(b->q - b->h) : 0.0, 3);
		jw_kv_float(jw, "q_us", rel_us(r, b->q), 3);
		jw_kv_float(jw, "g_us", rel_us(r, b->g), 3);
		jw_kv_float(jw, "i_us", rel_us(r, b->i), 3);
		jw_kv_float(jw, "d_us", rel_us(r, b->d), 3);
		jw_kv_float(jw, "c_us", rel_us(r, b->c), 3);
		jw_kv_float(jw, "q2g_us", trace_us(b->g - b->q), 3);
		jw_kv_float(jw, "g2i_us", trace_us(b->i - b->g), 3);
		jw_kv_float(jw, "i2d_us", trace_us(b->d - b->i), 3);
		jw_kv_float(jw, "d2c_us", trace_us(b->c - b->d), 3);
		jw_kv_float(jw, "q2c_us", trace_us(b->c - b->q), 3);
		trace_json_flags(jw, "flags", b->flags, true);
		jw_kv_int(jw, "error", b->error);
		jw_kv_uint(jw, "requeues", b->requeues);
		trace_json_driver(jw, b, r->start);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	jw_kv_array(jw, "events");
	for (i = 0; i < r->nr_events && i < TRACE_MAX_EVENTS; i++) {
		const struct trace_evt *e = &r->events[i];

		jw_start_object(jw);
		jw_kv_string(jw, "type", trace_ev_name(e->type));
		jw_kv_float(jw, "t_us", rel_us(r, e->ts), 3);
		jw_kv_uint(jw, "arg", e->arg);
		jw_kv_uint(jw, "arg2", e->arg2);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	jw_kv_uint(jw, "events_not_recorded", r->events_lost);
	jw_end_object(jw);
}

static void print_summary(struct trace_cmd *t, const struct trace_summary *sum)
{
	struct jw *jw = t->jw;
	unsigned int op, s;

	jw_start_object(jw);
	jw_kv_string(jw, "type", "summary");
	jw_kv_float(jw, "interval_s", sum->seconds, 3);
	jw_kv_bool(jw, "final", sum->final);
	jw_kv_uint(jw, "emitted", sum->emitted);
	jw_kv_uint(jw, "printed", sum->printed);
	jw_kv_uint(jw, "dropped", sum->dropped);
	jw_kv_object(jw, "ops");
	for (op = 0; op < TRACE_OP_NR; op++) {
		const struct trace_op_hists *delta = &sum->ops[op];

		if (!delta->st[TRACE_ST_TOTAL].count)
			continue;
		jw_kv_object(jw, trace_op_name(op));
		jw_kv_uint(jw, "count", delta->st[TRACE_ST_TOTAL].count);
		jw_kv_object(jw, "stages");
		for (s = 0; s < TRACE_ST_NR; s++) {
			const struct hist *h = &delta->st[s];

			if (!h->count)
				continue;
			jw_kv_object(jw, trace_stage_name(s));
			jw_kv_uint(jw, "count", h->count);
			jw_kv_float(jw, "avg_us", hist_mean(h) / 1e3, 3);
			jw_kv_float(jw, "p50_us", hist_percentile(h, 50) / 1e3, 3);
			jw_kv_float(jw, "p99_us", hist_percentile(h, 99) / 1e3, 3);
			jw_end_object(jw);
		}
		jw_end_object(jw);
		jw_end_object(jw);
	}
	jw_end_object(jw);
	jw_kv_uint(jw, "requests", sum->requests);
	jw_end_object(jw);
}

static void print_totals(struct trace_cmd *t, const struct trace_totals *tot)
{
	struct jw *jw = t->jw;

	jw_start_object(jw);
	jw_kv_string(jw, "type", "totals");
	jw_kv_uint(jw, "traced", tot->traced);
	jw_kv_uint(jw, "completed", tot->cnt[TRACE_CNT_DONE]);
	jw_kv_uint(jw, "emitted", tot->cnt[TRACE_CNT_EMITTED]);
	jw_kv_uint(jw, "printed", tot->printed);
	jw_kv_uint(jw, "in_flight_at_exit", tot->in_flight);
	jw_kv_uint(jw, "lost", tot->lost);
	jw_kv_object(jw, "counters");
	counters_json(jw, trace_counters, tot->cnt, TRACE_CNT_NR);
	jw_kv_uint(jw, "perfetto_lanes_full", t->lanes_full);
	jw_kv_uint(jw, "records_malformed", tot->malformed);
	jw_kv_uint(jw, "records_not_arrived", tot->not_arrived);
	jw_end_object(jw);
	attach_plan_unavailable(t->c.cmd.hooks, t->c.cmd.nr_hooks, jw, "unavailable", NULL, NULL);
	jw_end_object(jw);
}

const struct trace_renderer trace_json_renderer = {
	.request = print_json,
	.summary = print_summary,
	.totals = print_totals,
};
