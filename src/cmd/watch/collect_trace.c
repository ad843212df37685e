// SPDX-License-Identifier: GPL-2.0
/*
 * iospan watch's second BPF collector, for --detail full: trace's slow requests
 * (src/collect/trace.h: its BPF object and ring-buffer consumer). Before the rules are
 * checked, every sample reads the requests trace sent since the previous one; the
 * slowest on each watched disk is the slow-request rule's value. Requests over
 * --capture-threshold (or over --slow-request if lower) are kept with their stages
 * (coll_slow_slot(): the slowest of each sample, more during a capture); those past
 * the cap are counted, as those the ring buffer had no room for.
 * The last --pre seconds are kept in memory and written into slow_requests while an
 * incident is open.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "args.h"
#include "collect/trace.h"
#include "collector.h"
#include "export/metrics.h"
#include "fspath.h"
#include "json.h"
#include "ops.h"
#include "rbuf.h"
#include "units.h"
#include "watch.h"

/* Trace's ring buffer: a second of slow requests while watch samples. */
#define SLOWC_RB_BYTES (4ULL << 20)
/* Writeback requests whose bios never completed are given up this often (trace's). */
#define SLOWC_SWEEP_NS (5 * NSEC_PER_SEC)

struct slowc {
	struct trace_ctx c;
	bool slow_fresh; /* the newest sample's slow requests were not handed out yet */
	struct trace_opts o;
	uint64_t keep_ns; /* requests kept: this slow or slower */
	struct coll_devs devs;
	struct io_sample *cur; /* the sample being observed */
	double slowest_ns[WATCH_MAX_DISKS];
	struct coll_slow_sample pending; /* read since the last sample */
	bool capturing;			 /* an incident is open: the larger cap */
	uint64_t prev_lost, next_sweep;
	struct coll_ring ring; /* of struct coll_slow_sample */
};

struct stages_arg {
	const struct trace_rec *r;
	const struct coll_slow_req *q;
};

static void fill_stages(struct jw *jw, const void *arg)
{
	const struct stages_arg *a = arg;
	const struct trace_rec *r = a->r;
	unsigned int i;

	jw_start_object(jw);
	for (i = 0; i < TRACE_ST_NR; i++)
		if (i >= TRACE_ST_DRV_IN && !trace_rec_has_drv_stages(r))
			jw_kv_null(jw, trace_stage_name(i)); /* no driver hook saw it */
		else
			jw_kv_float(jw, trace_stage_name(i), trace_us(r->stages[i]), 3);
	jw_kv_uint(jw, "bios", r->nr_done);
	jw_kv_uint(jw, "switches", r->nr_switches);
	jw_kv_uint(jw, "pagecache_added_pages", r->pc_added);
	trace_json_flags(jw, "flags", r->flags, false);
	coll_json_parts(jw, a->q);
	jw_end_object(jw);
}

/* The block device a request went to: its first bio's, else its file system's. */
static uint32_t req_bdev(struct slowc *t, const struct trace_rec *r)
{
	uint32_t fs_disk;

	if (r->nr_bios)
		return r->bios[0].dev;
	/* A file system without a device of its own (btrfs): its disk, if known. */
	fs_disk = KDEV_MAJOR(r->dev) ? 0 : fspath_cache_fs_disk(t->c.paths, r->dev);
	return fs_disk ? fs_disk : r->dev;
}

/*
 * The stages that add up to the total (iospan-trace(8)), laid end to end: without bios,
 * the request is all pre_block; where the driver's hooks split d2c, its three parts
 * stand in its place.
 */
static void trace_stages(struct coll_slow_req *q, const struct trace_rec *r)
{
	static const int order[] = {TRACE_ST_PRE_BLOCK, TRACE_ST_THROTTLE,  TRACE_ST_Q2Q,
				    TRACE_ST_Q2G,	TRACE_ST_G2I,	    TRACE_ST_I2D,
				    TRACE_ST_D2C,	TRACE_ST_DRV_IN,    TRACE_ST_DEVICE,
				    TRACE_ST_DRV_OUT,	TRACE_ST_POST_BLOCK};
	bool drv = trace_rec_has_drv_stages(r);
	unsigned int i;
	int st;

	_Static_assert(sizeof(order) / sizeof(order[0]) <= COLL_SLOW_STAGES, "stages");
	q->nr_stages = 0;
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		st = order[i];
		if (drv ? st == TRACE_ST_D2C : st >= TRACE_ST_DRV_IN && st <= TRACE_ST_DRV_OUT)
			continue;
		if (!r->stages[order[i]])
			continue; /* a stage it did not go through */
		q->stage[q->nr_stages].name = trace_stage_name(order[i]);
		q->stage[q->nr_stages].ns = r->stages[order[i]];
		q->nr_stages++;
	}
}

/* trace's collector hands each slow request here (its sink). */
static void on_request(void *arg, const struct trace_rec *r, const struct trace_names *n)
{
	struct slowc *t = arg;
	struct trace_ctx *c = &t->c;
	uint64_t total = r->stages[TRACE_ST_TOTAL];
	struct coll_slow_req *q;
	int disk;

	if (!t->cur)
		return;
	disk = coll_devs_disk(&t->devs, req_bdev(t, r));
	if (disk < 0)
		return; /* an incident is about the watched disks */
	if (total > t->slowest_ns[disk])
		t->slowest_ns[disk] = total;
	if (total < t->keep_ns)
		return;
	q = coll_slow_slot(&t->pending, t->capturing, total);
	if (!q)
		return;
	q->time = (r->start + c->mono_to_real) / 1e9;
	q->owner_known = r->op != TRACE_OP_WRITEBACK || r->pid;
	q->pid = r->pid;
	q->tid = r->tid;
	memcpy(q->comm, r->comm, sizeof(q->comm));
	q->comm[sizeof(q->comm) - 1] = '\0';
	snprintf(q->disk, sizeof(q->disk), "%s", t->cur->disks[disk].dev.name);
	q->op = trace_op_name(r->op);
	q->offset = r->offset;
	q->bytes = r->bytes;
	q->total_ns = total;
	q->path = n->path ? strdup(n->path) : NULL;
	trace_stages(q, r);
	q->stages = coll_json(fill_stages, &(struct stages_arg){.r = r, .q = q});
	if (n->cgroup && strcmp(n->cgroup, "?")) {
		struct container ct;

		q->cgroup = strdup(n->cgroup);
		if (cgroup_container(n->cgroup, &ct))
			memcpy(q->container, ct.id, sizeof(q->container));
	}
}

static int slowc_open(const struct watch_opts *wo, void **priv)
{
	struct trace_sink sink;
	struct slowc *t;
	int ret;

	*priv = NULL;
	if (!wo->full_detail || !watch_slow_keep_ns(wo))
		return 1; /* off by the options */
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	coll_ring_init(&t->ring, sizeof(struct coll_slow_sample), coll_slow_clear);
	t->keep_ns = watch_slow_keep_ns(wo);
	trace_opts_default(&t->o);
	t->o.threshold_ns = t->keep_ns;
	t->o.filter = wo->filter;
	t->o.syscalls = watch_syscall_attach(wo);
	t->o.rb_bytes = SLOWC_RB_BYTES;
	sink.request = on_request;
	sink.arg = t;
	ret = trace_collect_open(&t->c, &t->o, &sink);
	if (ret) {
		trace_collect_close(&t->c);
		free(t);
		return ret;
	}
	*priv = t;
	return 0;
}

static void slowc_observe(void *priv, struct io_sample *s)
{
	struct slowc *t = priv;
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	int i;

	t->cur = s;
	coll_devs_reset(&t->devs, s);
	for (i = 0; i < s->nr; i++)
		t->slowest_ns[i] = 0;
	/* What arrived since the last sample; a failure is said, the sample goes on. */
	bpfcmd_poll(&t->c.cmd, 0);
	for (i = 0; i < s->nr; i++)
		s->disks[i].slowest_ms = t->slowest_ns[i] / 1e6;
	t->cur = NULL;
	if (now >= t->next_sweep) {
		trace_sweep_writeback(&t->c, false);
		t->next_sweep = now + SLOWC_SWEEP_NS;
	}
}

static int slowc_sample(void *priv, const struct watch_tick *tick)
{
	struct slowc *t = priv;
	struct coll_slow_sample *s;
	struct rbuf_stats rs;
	uint64_t lost;

	s = coll_ring_push(&t->ring);
	if (!s)
		return -ENOMEM;
	*s = t->pending;
	memset(&t->pending, 0, sizeof(t->pending));
	s->time = tick->sample->epoch_s;
	t->slow_fresh = true;
	if (!rbuf_stats(t->c.cmd.rb, &rs)) {
		lost = rs.lost + t->c.malformed;
		s->lost = lost - t->prev_lost;
		t->prev_lost = lost;
	}
	coll_ring_trim(&t->ring, s->time, tick->pre_s);
	/* From the next sample on, the cap of a capture (or no longer). */
	t->capturing = tick->incident_id && !tick->closing;
	return coll_ring_write(&t->ring, tick, coll_slow_write, t);
}

static void slowc_close(void *priv)
{
	struct slowc *t = priv;

	if (!t)
		return;
	coll_ring_free(&t->ring);
	coll_slow_clear(&t->pending);
	trace_collect_close(&t->c);
	free(t);
}

static void slowc_export(void *priv, struct metrics *m, struct metrics_collector *out)
{
	struct slowc *t = priv;
	uint64_t cnt[TRACE_CNT_NR];

	if (trace_read_counters(&t->c, cnt))
		memset(cnt, 0, sizeof(cnt));
	metrics_collector_fill(out, "trace", &t->c.cmd, trace_counters, cnt, TRACE_CNT_NR);
}

static const struct coll_slow_sample *slowc_slow_requests(void *priv)
{
	struct slowc *t = priv;

	if (!t->slow_fresh || !t->ring.nr)
		return NULL;
	t->slow_fresh = false;
	return coll_ring_at(&t->ring, t->ring.nr - 1);
}

const struct watch_collector_ops watch_collector_trace = {
	.name = "trace",
	.open = slowc_open,
	.observe = slowc_observe,
	.sample = slowc_sample,
	.export = slowc_export,
	.slow_requests = slowc_slow_requests,
	.close = slowc_close,
};
