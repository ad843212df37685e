// SPDX-License-Identifier: GPL-2.0
/* iospan lat: the report model, from the kernel's histograms. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "array.h"
#include "bpfmap.h"
#include "err.h"
#include "collect/lat.h"

/* hist_slots() finds the slots right after the head. */
_Static_assert(offsetof(struct lat_hist, slots) == sizeof(struct hist_head),
	       "slots follow the head");

static int key_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct lat_row *)a)->key, &((const struct lat_row *)b)->key,
		      sizeof(struct lat_key));
}

/* Display order: by disk, op, then the busiest first. */
static int row_cmp(const void *a, const void *b)
{
	const struct lat_row *x = a, *y = b;

	if (x->key.disk != y->key.disk)
		return x->key.disk < y->key.disk ? -1 : 1;
	if (x->key.op != y->key.op)
		return x->key.op < y->key.op ? -1 : 1;
	if (x->h.count != y->h.count)
		return x->h.count > y->h.count ? -1 : 1;
	return key_cmp(a, b);
}

double lat_percentile(const struct lat_hist *h, double pct)
{
	return hist_percentile_of(h->slots, LAT_HIST_SLOTS, LAT_HIST_SUB_BITS, h->max, pct) /
	       (double)(1 << LAT_SCALE_SHIFT);
}

/* What each counter of lat's programs says: every one is requests not in a histogram. */
const struct counter_def lat_counters[LAT_DROP_NR] = {
	[LAT_DROP_NO_OWNER] = {"no_owner", "owner unknown"},
	[LAT_DROP_MAP_FULL] = {"map_full", "histogram map full"},
	[LAT_DROP_NO_START] = {"no_start", "no queue time"},
	[LAT_DROP_NO_ISSUE] = {"no_issue", "no issue time"},
	[LAT_DROP_NO_DRIVER] = {"no_driver", "no driver hook saw it"},
};

/* The rows read so far from the kernel's histograms map. */
struct row_list {
	struct lat_row *rows;
	size_t nr, cap;
	int err;
};

static int add_row(const void *key, const void *val, void *arg)
{
	struct row_list *l = arg;

	if (ARRAY_RESERVE(l->rows, l->nr, l->cap, 64)) {
		l->err = -ENOMEM;
		return 1; /* stops the walk */
	}
	memcpy(&l->rows[l->nr].key, key, sizeof(struct lat_key));
	memcpy(&l->rows[l->nr].h, val, sizeof(struct lat_hist));
	l->nr++;
	return 0;
}

int lat_report_read(struct lat_state *st, int hists_fd, int counters_fd, struct lat_report *r)
{
	struct row_list l = {0};
	struct lat_row *rows = NULL, *cur = NULL, *p;
	size_t nr = 0, i, n_out = 0;
	int err = 0;

	memset(r, 0, sizeof(*r));
	err = bpfmap_walk(hists_fd, sizeof(struct lat_key), sizeof(struct lat_hist), false, add_row,
			  &l);
	rows = l.rows;
	nr = l.nr;
	if (!err)
		err = l.err;
	if (err) {
		err = fail(err, "cannot read lat's histograms: %s", strerror(-err));
		goto cleanup;
	}
	qsort(rows, nr, sizeof(*rows), key_cmp);
	cur = nr ? malloc(nr * sizeof(*cur)) : NULL;
	if (nr && !cur) {
		err = fail(-ENOMEM, "out of memory");
		goto cleanup;
	}
	for (i = 0; i < nr; i++) {
		cur[n_out] = rows[i];
		p = st->nr_prev ? bsearch(&rows[i], st->prev, st->nr_prev, sizeof(*p), key_cmp) :
				  NULL;
		if (p)
			hist_delta_of(&cur[n_out].h.head, &cur[n_out].h.head, &p->h.head,
				      LAT_HIST_SLOTS);
		if (cur[n_out].h.count)
			n_out++;
	}
	err = counters_read(counters_fd, LAT_DROP_NR, r->drops);
	if (err) {
		err = fail(err, "cannot read the counters: %s", strerror(-err));
		goto cleanup;
	}
	counters_since(r->drops, st->prev_drops, LAT_DROP_NR);
	qsort(cur, n_out, sizeof(*cur), row_cmp);
	r->rows = cur;
	r->nr = n_out;
	cur = NULL;
	free(st->prev);
	st->prev = rows;
	st->nr_prev = nr;
	rows = NULL;
cleanup:
	free(rows);
	free(cur);
	return err;
}

void lat_report_free(struct lat_report *r)
{
	free(r->rows);
	r->rows = NULL;
	r->nr = 0;
}

void lat_state_free(struct lat_state *st)
{
	free(st->prev);
	st->prev = NULL;
	st->nr_prev = 0;
}

static int stack_cmp(const void *a, const void *b)
{
	int32_t x = ((const struct lat_stack *)a)->id, y = ((const struct lat_stack *)b)->id;

	return x < y ? -1 : x > y;
}

/* One entry of the kernel's map (a stack, its id) into the table (@arg). */
static int stack_take(const void *key, const void *val, void *arg)
{
	struct lat_stacks *s = arg;
	struct lat_stack *e;

	if (ARRAY_RESERVE(s->v, s->nr, s->cap, 64))
		return -ENOMEM;
	e = &s->v[s->nr++];
	memcpy(&e->id, val, sizeof(e->id));
	memcpy(&e->st, key, sizeof(e->st));
	return 0;
}

/* Reads the whole map again (stacks are only added: ids never change). */
static int stacks_reload(struct lat_stacks *s)
{
	int err;

	s->nr = 0;
	err = bpfmap_walk(s->fd, sizeof(struct blk_owner_stack), sizeof(int32_t), false, stack_take,
			  s);
	if (err)
		return err;
	qsort(s->v, s->nr, sizeof(*s->v), stack_cmp);
	return 0;
}

const struct blk_owner_stack *lat_stacks_find(struct lat_stacks *s, int32_t id)
{
	struct lat_stack k = {.id = id}, *e;

	if (s->fd < 0 || id < 0)
		return NULL;
	e = bsearch(&k, s->v, s->nr, sizeof(*s->v), stack_cmp);
	/* A stack first seen since the last read. */
	if (!e && !stacks_reload(s))
		e = bsearch(&k, s->v, s->nr, sizeof(*s->v), stack_cmp);
	return e ? &e->st : NULL;
}

void lat_stacks_free(struct lat_stacks *s)
{
	free(s->v);
	s->v = NULL;
	s->nr = s->cap = 0;
}
