// SPDX-License-Identifier: GPL-2.0
/* What watch's BPF collectors share: the ring of their pre-trigger window, SQLite helpers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "collector.h"
#include "disks.h"
#include "fspath.h"
#include "json.h"
#include "watch.h"

void coll_ring_init(struct coll_ring *r, size_t size, void (*clear)(void *rec))
{
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->clear = clear;
}

void *coll_ring_at(const struct coll_ring *r, unsigned int i)
{
	return r->slots + (size_t)((r->head + i) % r->cap) * r->size;
}

void *coll_ring_push(struct coll_ring *r)
{
	unsigned int cap = r->cap ? 2 * r->cap : 8, i;
	char *grown;
	void *rec;

	if (r->nr == r->cap) {
		grown = calloc(cap, r->size);
		if (!grown)
			return NULL;
		for (i = 0; i < r->nr; i++)
			memcpy(grown + (size_t)i * r->size, coll_ring_at(r, i), r->size);
		free(r->slots);
		r->slots = grown;
		r->cap = cap;
		r->head = 0;
	}
	rec = coll_ring_at(r, r->nr++);
	memset(rec, 0, r->size);
	return rec;
}

void coll_ring_trim(struct coll_ring *r, double now, double pre_s)
{
	while (r->nr > 1 && *(const double *)coll_ring_at(r, 0) < now - pre_s - 1e-6) {
		r->clear(coll_ring_at(r, 0));
		r->head = (r->head + 1) % r->cap;
		r->nr--;
	}
}

void coll_ring_free(struct coll_ring *r)
{
	unsigned int i;

	for (i = 0; i < r->nr; i++)
		r->clear(coll_ring_at(r, i));
	free(r->slots);
	r->slots = NULL;
	r->nr = r->cap = r->head = 0;
}

int coll_ring_write(const struct coll_ring *r, const struct watch_tick *tick,
		    int (*write)(void *priv, struct sqlite3 *db, int64_t id, const void *rec,
				 const char *phase),
		    void *priv)
{
	unsigned int i;
	int ret = 0;

	if (!tick->incident_id || !r->nr)
		return 0;
	if (tick->opened)
		for (i = 0; i + 1 < r->nr && !ret; i++)
			ret = write(priv, tick->db, tick->incident_id, coll_ring_at(r, i), "pre");
	if (!ret)
		ret = write(priv, tick->db, tick->incident_id, coll_ring_at(r, r->nr - 1),
			    "capture");
	return ret;
}

void coll_devs_reset(struct coll_devs *d, const struct io_sample *ws)
{
	d->ws = ws;
	d->nr = 0;
}

int coll_devs_disk(struct coll_devs *d, uint32_t dev)
{
	unsigned int maj = KDEV_MAJOR(dev), min = KDEV_MINOR(dev), i;
	const struct io_sample *ws = d->ws;
	struct disk dk;
	int k, disk = -1;

	for (i = 0; i < d->nr; i++)
		if (d->v[i].dev == dev)
			return d->v[i].disk;
	/* A partition counts for its disk. */
	if (disk_from_devnum(maj, min, &dk)) {
		dk.disk_major = maj;
		dk.disk_minor = min;
	}
	for (k = 0; k < ws->nr && disk < 0; k++)
		if ((ws->disks[k].dev.major == maj && ws->disks[k].dev.minor == min) ||
		    (ws->disks[k].dev.major == dk.disk_major &&
		     ws->disks[k].dev.minor == dk.disk_minor))
			disk = k;
	if (d->nr < COLL_DEV_CACHE) {
		d->v[d->nr].dev = dev;
		d->v[d->nr++].disk = disk;
	}
	return disk;
}

void coll_bind_key(sqlite3_stmt *s, int64_t id, double time, const char *phase)
{
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_double(s, 2, time);
	sqlite3_bind_text(s, 3, phase, -1, SQLITE_STATIC);
}

void coll_bind_text(sqlite3_stmt *s, int col, const char *v)
{
	if (v && *v)
		sqlite3_bind_text(s, col, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, col);
}

int coll_step_reset(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int coll_write_dropped(sqlite3 *db, int64_t id, double time, const char *phase, const char *what,
		       uint64_t count)
{
	sqlite3_stmt *s = NULL;
	int ret = -EIO;

	if (!count)
		return 0;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO dropped (incident_id, time, phase, what, count)"
			       " VALUES (?1, ?2, ?3, ?4, ?5)",
			       -1, &s, NULL) != SQLITE_OK)
		goto cleanup;
	coll_bind_key(s, id, time, phase);
	sqlite3_bind_text(s, 4, what, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)count);
	ret = coll_step_reset(s);
cleanup:
	sqlite3_finalize(s);
	return ret;
}

void coll_json_parts(struct jw *jw, const struct coll_slow_req *q)
{
	unsigned int i;

	jw_kv_array(jw, "parts");
	for (i = 0; i < q->nr_stages; i++) {
		jw_start_array(jw);
		jw_string(jw, q->stage[i].name);
		jw_float(jw, q->stage[i].ns / 1e3, 3);
		jw_end_array(jw);
	}
	jw_end_array(jw);
}

char *coll_json(void (*fill)(struct jw *jw, const void *arg), const void *arg)
{
	return jw_text(fill, arg, NULL);
}

static void slow_req_clear(struct coll_slow_req *q)
{
	free(q->path);
	free(q->cgroup);
	free(q->stages);
	memset(q, 0, sizeof(*q));
}

void coll_slow_clear(void *rec)
{
	struct coll_slow_sample *s = rec;
	unsigned int i;

	for (i = 0; i < s->nr; i++)
		slow_req_clear(&s->reqs[i]);
	free(s->reqs);
	memset(s, 0, sizeof(*s));
}

struct coll_slow_req *coll_slow_slot(struct coll_slow_sample *p, bool capturing, uint64_t total_ns)
{
	unsigned int i, fastest = 0;

	if (!p->reqs) {
		p->cap = capturing ? COLL_SLOW_CAPTURE_MAX : COLL_SLOW_PRE_MAX;
		p->reqs = calloc(p->cap, sizeof(*p->reqs));
		if (!p->reqs)
			return NULL;
	}
	if (p->nr < p->cap)
		return &p->reqs[p->nr++];
	/* Full: the slowest are kept, the one it displaces (or itself) counted. */
	for (i = 1; i < p->nr; i++)
		if (p->reqs[i].total_ns < p->reqs[fastest].total_ns)
			fastest = i;
	p->dropped++;
	if (p->reqs[fastest].total_ns >= total_ns)
		return NULL;
	slow_req_clear(&p->reqs[fastest]);
	return &p->reqs[fastest];
}

int coll_slow_write(void *priv, sqlite3 *db, int64_t id, const void *rec, const char *phase)
{
	const struct coll_slow_sample *s = rec;
	sqlite3_stmt *st = NULL;
	unsigned int i;
	int ret = -EIO;

	(void)priv;
	if (sqlite3_prepare_v2(
		    db,
		    "INSERT INTO slow_requests (incident_id, time, phase, pid, tid, comm,"
		    " disk, op, offset, bytes, path, total_us, stages) VALUES (?1, ?2,"
		    " ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
		    -1, &st, NULL) != SQLITE_OK)
		goto cleanup;
	for (i = 0; i < s->nr; i++) {
		const struct coll_slow_req *q = &s->reqs[i];

		coll_bind_key(st, id, q->time, phase);
		if (q->owner_known) {
			sqlite3_bind_int64(st, 4, q->pid);
			if (q->tid)
				sqlite3_bind_int64(st, 5, q->tid);
			coll_bind_text(st, 6, q->comm);
		}
		coll_bind_text(st, 7, q->disk);
		sqlite3_bind_text(st, 8, q->op, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 9, q->offset);
		sqlite3_bind_int64(st, 10, (sqlite3_int64)q->bytes);
		coll_bind_text(st, 11, q->path);
		sqlite3_bind_double(st, 12, q->total_ns / 1e3);
		coll_bind_text(st, 13, q->stages);
		if (coll_step_reset(st))
			goto cleanup;
	}
	ret = coll_write_dropped(db, id, s->time, phase, "slow_requests", s->dropped);
	if (!ret)
		ret = coll_write_dropped(db, id, s->time, phase, "slow_requests_lost", s->lost);
cleanup:
	sqlite3_finalize(st);
	return ret;
}
