// SPDX-License-Identifier: GPL-2.0
/* Slow requests as a Chrome Trace Event file (Perfetto), on lanes that never overlap. */
#include "trace.h"

/* Perfetto tracks for bios and async requests: per process, lanes that never overlap. */
#define MAX_LANES   256
#define LANE_BIOS   0x40000000U
#define LANE_AIO    0x50000000U
#define LANE_WB	    0x60000000U
#define LANE_OFFCPU 0x20000000U

/* Perfetto lanes of one (pid, kind): the end of the last span on each. */
struct lanes {
	uint32_t pid, base;
	uint64_t end[MAX_LANES];
	int nr;
	struct lanes *next;
};

/* A track of @pid (lanes of @base) free from @start on; -1 if all are busy. */
static int lane_get(struct trace_cmd *t, uint32_t pid, uint32_t base, uint64_t start, uint64_t end)
{
	struct lanes *l;
	int i;

	for (l = t->lanes; l; l = l->next)
		if (l->pid == pid && l->base == base)
			break;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l)
			return -1;
		l->pid = pid;
		l->base = base;
		l->next = t->lanes;
		t->lanes = l;
	}
	/* Every span already on the lane ends before this one starts: nothing overlaps. */
	for (i = 0; i < l->nr; i++) {
		if (l->end[i] <= start) {
			l->end[i] = end;
			return i;
		}
	}
	if (l->nr == MAX_LANES) {
		t->lanes_full++;
		return -1;
	}
	l->end[l->nr] = end;
	return l->nr++;
}

/* d2c split by the driver, nested in the d2c slice: drv_in, device, drv_out. */
static void drv_slices(struct trace_cmd *t, const char *cat, uint32_t pid, uint32_t tid, uint64_t d,
		       uint64_t ds, uint64_t dc, uint64_t c)
{
	__u64 st[3];

	if (!trace_drv_split(d, ds, dc, c, st))
		return;
	perfetto_slice(t->pf, "drv_in", cat, pid, tid, d, d + st[0]);
	perfetto_slice(t->pf, "device", cat, pid, tid, d + st[0], dc);
	perfetto_slice(t->pf, "drv_out", cat, pid, tid, dc, c);
}

static void perfetto_bio(struct trace_cmd *t, const struct trace_rec *r, uint32_t pid,
			 const struct trace_bio *b, unsigned int idx)
{
	char name[64], tname[64], dn[DISK_NAME_LEN], sz[UNITS_BUF];
	struct jw *jw;
	int lane;

	lane = lane_get(t, pid, LANE_BIOS, b->q, b->c);
	if (lane < 0)
		return;
	snprintf(tname, sizeof(tname), "bios %d", lane);
	perfetto_thread(t->pf, pid, LANE_BIOS + lane, tname);
	snprintf(name, sizeof(name), "bio %s %c %s", trace_dev_name(b->dev, dn, sizeof(dn)),
		 trace_bio_dir(b), fmt_bytes(b->bytes, sz, sizeof(sz)));
	jw = perfetto_span(t->pf, name, "bio", pid, LANE_BIOS + lane, b->q, b->c - b->q);
	jw_kv_string(jw, "request", trace_op_name(r->op));
	jw_kv_uint(jw, "tid", r->tid);
	jw_kv_uint(jw, "bio", idx);
	jw_kv_uint(jw, "sector", b->sector);
	jw_kv_uint(jw, "bytes", b->bytes);
	trace_json_flags(jw, "flags", b->flags, true);
	perfetto_end(t->pf);
	perfetto_slice(t->pf, "q2g", "bio", pid, LANE_BIOS + lane, b->q, b->g);
	perfetto_slice(t->pf, "g2i", "bio", pid, LANE_BIOS + lane, b->g, b->i);
	perfetto_slice(t->pf, "i2d", "bio", pid, LANE_BIOS + lane, b->i, b->d);
	perfetto_slice(t->pf, "d2c", "bio", pid, LANE_BIOS + lane, b->d, b->c);
	drv_slices(t, "bio", pid, LANE_BIOS + lane, b->d, b->ds, b->dc, b->c);
}

void trace_perfetto_write(struct trace_cmd *t, const struct trace_rec *r,
			  const struct trace_names *n)
{
	const char *pname = r->pid ? n->name : "(unknown dirtier)";
	uint32_t pid = r->pid, tid = r->tid;
	char name[64];
	struct jw *jw;
	unsigned int i;
	int lane = 0;

	perfetto_process(t->pf, pid, pname);
	if (r->op == TRACE_OP_WRITEBACK || r->op == TRACE_OP_AIO_READ ||
	    r->op == TRACE_OP_AIO_WRITE) {
		/* Several may be in flight at once: each on a lane of its own. */
		uint32_t base = r->op == TRACE_OP_WRITEBACK ? LANE_WB : LANE_AIO;

		lane = lane_get(t, pid, base, r->start, r->end);
		if (lane < 0)
			return;
		tid = base + lane;
		snprintf(name, sizeof(name), "%s %d", base == LANE_WB ? "writeback" : "async I/O",
			 lane);
		perfetto_thread(t->pf, pid, tid, name);
	} else {
		snprintf(name, sizeof(name), "%s %u", r->comm, tid);
		perfetto_thread(t->pf, pid, tid, name);
	}
	jw = perfetto_span(t->pf, trace_op_name(r->op), "request", pid, tid, r->start,
			   r->end - r->start);
	jw_kv_string(jw, "path", n->path ? n->path : "?");
	jw_kv_int(jw, "offset", r->offset);
	jw_kv_uint(jw, "bytes", r->bytes);
	jw_kv_int(jw, "ret", r->ret);
	jw_kv_uint(jw, "bios", r->nr_done);
	perfetto_end(t->pf);
	if (trace_rec_has_block_stages(r)) {
		/* Children in time order; the block span holds the critical bio's stages. */
		uint64_t thr_first = r->held_q && r->held_q == r->first_q ? r->held_h : 0;

		perfetto_slice(t->pf, "pre_block", "stage", pid, tid, r->start,
			       thr_first ?: r->first_q);
		if (thr_first)
			perfetto_slice(t->pf, "throttle", "stage", pid, tid, thr_first, r->first_q);
		perfetto_slice(t->pf, "block (q2c)", "stage", pid, tid, r->first_q, r->last_c);
		perfetto_slice(t->pf, "q2q", "stage", pid, tid, r->first_q, r->crit_q);
		perfetto_slice(t->pf, "q2g", "stage", pid, tid, r->crit_q, r->crit_g);
		perfetto_slice(t->pf, "g2i", "stage", pid, tid, r->crit_g, r->crit_i);
		perfetto_slice(t->pf, "i2d", "stage", pid, tid, r->crit_i, r->crit_d);
		perfetto_slice(t->pf, "d2c", "stage", pid, tid, r->crit_d, r->last_c);
		drv_slices(t, "stage", pid, tid, r->crit_d, r->crit_ds, r->crit_dc, r->last_c);
		perfetto_slice(t->pf, "post_block", "stage", pid, tid, r->last_c, r->end);
	}
	for (i = 0; i < r->nr_events && i < TRACE_MAX_EVENTS; i++) {
		const struct trace_evt *e = &r->events[i];

		if (e->type == TRACE_EV_OFFCPU) {
			/* Off-CPU periods cross stage boundaries: a track of their own. */
			snprintf(name, sizeof(name), "%s %u off-CPU", r->comm, r->tid);
			perfetto_thread(t->pf, pid, LANE_OFFCPU | r->tid, name);
			jw = perfetto_span(t->pf, e->arg2 ? "iowait" : "off-CPU", "sched", pid,
					   LANE_OFFCPU | r->tid, e->ts, e->arg);
			perfetto_end(t->pf);
			continue;
		}
		if (e->ts < r->start || e->ts > r->end)
			continue;
		jw = perfetto_instant(t->pf, trace_ev_name(e->type), "event", pid, tid, e->ts);
		jw_kv_uint(jw, "arg", e->arg);
		jw_kv_uint(jw, "arg2", e->arg2);
		perfetto_end(t->pf);
	}
	for (i = 0; i < r->nr_bios && i < TRACE_MAX_BIOS; i++)
		perfetto_bio(t, r, pid, &r->bios[i], i);
}

void trace_perfetto_free_lanes(struct trace_cmd *t)
{
	struct lanes *l, *next;

	for (l = t->lanes; l; l = next) {
		next = l->next;
		free(l);
	}
	t->lanes = NULL;
}
