// SPDX-License-Identifier: GPL-2.0
/*
 * Guest, QEMU and host records of the same virtio-blk requests, matched: pure
 * functions, unit-tested without QEMU (tests/unit/test_vm_merge.c). Nothing is matched
 * by guess: a record with two candidates is left unmatched and counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collect/vm.h"

const char *vm_part_name(enum vm_part p)
{
	static const char *const names[VP_NR] = {
		[VP_PRE_BLOCK] = "guest_pre_block",
		[VP_BLOCK] = "guest_block",
		[VP_TO_QEMU] = "to_qemu",
		[VP_QEMU_IN] = "qemu_in",
		[VP_HOST] = "host_io",
		[VP_QEMU_OUT] = "qemu_out",
		[VP_TO_GUEST] = "to_guest",
		[VP_GUEST_DONE] = "guest_drv_out",
		[VP_POST_BLOCK] = "guest_post_block",
	};

	return p < VP_NR ? names[p] : "?";
}

const char *vm_why_name(enum vm_why w)
{
	static const char *const names[VM_NR_WHY] = {
		[VM_MATCHED] = "matched",	  [VM_NOT_DISK] = "other_disk",
		[VM_NO_QEMU] = "no_qemu_request", [VM_AMBIGUOUS] = "ambiguous",
		[VM_NO_HOST_IO] = "no_host_io",
	};

	return w < VM_NR_WHY ? names[w] : "?";
}

/* The guest's submission and completion of the critical bio: the driver's, else D, C. */
static int64_t g_sub(const struct vm_guest_req *g)
{
	return g->ds ? g->ds : g->d;
}

static int64_t g_done(const struct vm_guest_req *g)
{
	return g->dc ? g->dc : g->c;
}

/* A request's disk range and direction, the key guest and QEMU requests meet by. */
struct io_key {
	uint64_t sector, bytes;
	bool write;
	int idx;
};

static int key_cmp(const void *x, const void *y)
{
	const struct io_key *a = x, *b = y;

	if (a->sector != b->sector)
		return a->sector < b->sector ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	return (int)a->write - (int)b->write;
}

/* The keys of the QEMU requests on the image's device (completed), sorted: *@n of them. */
static struct io_key *qemu_keys(const struct vm_merge *m, size_t *n)
{
	struct io_key *k = malloc((m->nr_q ? m->nr_q : 1) * sizeof(*k));
	size_t i;

	*n = 0;
	if (!k)
		return NULL;
	for (i = 0; i < m->nr_q; i++)
		if (m->q[i].vdev == m->vdev && m->q[i].done)
			k[(*n)++] = (struct io_key){m->q[i].sector, m->q[i].nsectors * 512,
						    m->q[i].write, (int)i};
	qsort(k, *n, sizeof(*k), key_cmp);
	return k;
}

static struct io_key *guest_keys(const struct vm_merge *m)
{
	struct io_key *k = malloc((m->nr_g ? m->nr_g : 1) * sizeof(*k));
	size_t i;

	if (!k)
		return NULL;
	for (i = 0; i < m->nr_g; i++)
		k[i] = (struct io_key){m->g[i].sector, m->g[i].bio_bytes, m->g[i].write, (int)i};
	qsort(k, m->nr_g, sizeof(*k), key_cmp);
	return k;
}

/* The run of @keys (@n, sorted) equal to @want: its first index, and its length. */
static size_t key_range(const struct io_key *keys, size_t n, const struct io_key *want,
			size_t *first)
{
	size_t lo = 0, hi = n, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_cmp(&keys[mid], want) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	for (end = lo; end < n && !key_cmp(&keys[end], want); end++)
		;
	return end - lo;
}

bool vm_host_serves(const struct vm_merge *m, const struct vm_qemu_req *q,
		    const struct vm_host_io *h)
{
	int64_t lo = m->image_offset + (int64_t)(q->sector * 512);
	int64_t hi = lo + (int64_t)(q->nsectors * 512);

	return h->write == q->write && h->offset < hi && h->offset + (int64_t)h->bytes > lo &&
	       h->start >= q->take && h->end <= q->done;
}

static int host_cmp(const void *x, const void *y)
{
	const struct vm_host_io *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

int vm_match_host(struct vm_merge *m, int64_t image_offset)
{
	struct {
		uint64_t vdev, n;
	} devs[16] = {};
	size_t i, j, nr_devs = 0, best = 0;

	free(m->q_host_first);
	free(m->q_host_last);
	m->q_host_first = malloc((m->nr_q ? m->nr_q : 1) * sizeof(int));
	m->q_host_last = malloc((m->nr_q ? m->nr_q : 1) * sizeof(int));
	if (!m->q_host_first || !m->q_host_last)
		return -ENOMEM;
	/* By start: each request's I/O is looked up from its take-up on. */
	qsort(m->h, m->nr_h, sizeof(*m->h), host_cmp);
	m->image_offset = image_offset;
	for (i = 0; i < m->nr_q; i++) {
		const struct vm_qemu_req *q = &m->q[i];
		size_t a = 0, b = m->nr_h;

		m->q_host_first[i] = m->q_host_last[i] = -1;
		if (!q->done)
			continue;
		while (a < b) {
			size_t mid = a + (b - a) / 2;

			if (m->h[mid].start < q->take)
				a = mid + 1;
			else
				b = mid;
		}
		for (j = a; j < m->nr_h && m->h[j].start <= q->done; j++) {
			if (!vm_host_serves(m, q, &m->h[j]))
				continue;
			if (m->q_host_first[i] < 0)
				m->q_host_first[i] = j;
			if (m->q_host_last[i] < 0 || m->h[j].end > m->h[m->q_host_last[i]].end)
				m->q_host_last[i] = j;
		}
		if (m->q_host_first[i] < 0)
			continue;
		/* The image's device: the one whose requests its I/O served most. */
		for (j = 0; j < nr_devs && devs[j].vdev != q->vdev; j++)
			;
		if (j == nr_devs && nr_devs < sizeof(devs) / sizeof(devs[0]))
			devs[nr_devs++].vdev = q->vdev;
		if (j < nr_devs)
			devs[j].n++;
	}
	for (j = 0; j < nr_devs; j++)
		if (devs[j].n > devs[best].n)
			best = j;
	m->vdev = nr_devs ? devs[best].vdev : 0;
	return 0;
}

int vm_fit_clock(struct vm_merge *m)
{
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	struct io_key *qk, *gk, want;
	size_t i, nq, first, gfirst;
	int pairs = 0, err = 0;

	memset(&m->clock, 0, sizeof(m->clock));
	qk = qemu_keys(m, &nq);
	gk = guest_keys(m);
	if (!qk || !gk) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < m->nr_g; i++) {
		const struct vm_guest_req *g = &m->g[i];
		const struct vm_qemu_req *q;

		want = (struct io_key){g->sector, g->bio_bytes, g->write, 0};
		/* One QEMU request of its key, and that one of no other guest request. */
		if (key_range(qk, nq, &want, &first) != 1 ||
		    key_range(gk, m->nr_g, &want, &gfirst) != 1)
			continue;
		q = &m->q[qk[first].idx];
		/* take + offset >= the guest's submission; done + offset <= its completion. */
		if (g_sub(g) - q->take > lo)
			lo = g_sub(g) - q->take;
		if (g_done(g) - q->done < hi)
			hi = g_done(g) - q->done;
		pairs++;
	}
	m->clock.pairs = pairs;
	if (!pairs) {
		err = -EINVAL;
	} else if (lo > hi) {
		err = -ERANGE;
	} else {
		m->clock.offset = lo + (hi - lo) / 2;
		m->clock.err = (hi - lo + 1) / 2;
		m->clock.ok = true;
	}
cleanup:
	free(qk);
	free(gk);
	return err;
}

int vm_match_guest(struct vm_merge *m, const char *disk)
{
	struct io_key *qk, want;
	size_t i, k, nq, first, n;
	int found;

	free(m->g_qemu);
	free(m->why);
	m->g_qemu = malloc((m->nr_g ? m->nr_g : 1) * sizeof(int));
	m->why = malloc((m->nr_g ? m->nr_g : 1) * sizeof(*m->why));
	qk = qemu_keys(m, &nq);
	if (!m->g_qemu || !m->why || !qk) {
		free(qk);
		return -ENOMEM;
	}
	memset(m->count, 0, sizeof(m->count));
	for (i = 0; i < m->nr_g; i++) {
		const struct vm_guest_req *g = &m->g[i];
		int64_t from = g_sub(g) - m->clock.err, to = g_done(g) + m->clock.err;

		m->g_qemu[i] = -1;
		found = 0;
		if (disk && strcmp(g->disk, disk)) {
			m->why[i] = VM_NOT_DISK;
			m->count[VM_NOT_DISK]++;
			continue;
		}
		want = (struct io_key){g->sector, g->bio_bytes, g->write, 0};
		n = m->clock.ok ? key_range(qk, nq, &want, &first) : 0;
		for (k = first; k < first + n; k++) {
			const struct vm_qemu_req *q = &m->q[qk[k].idx];

			if (q->take + m->clock.offset < from || q->done + m->clock.offset > to)
				continue;
			if (!found++)
				m->g_qemu[i] = qk[k].idx;
		}
		if (found > 1)
			m->g_qemu[i] = -1;
		m->why[i] = !found			      ? VM_NO_QEMU :
			    found > 1			      ? VM_AMBIGUOUS :
			    m->q_host_first[m->g_qemu[i]] < 0 ? VM_NO_HOST_IO :
								VM_MATCHED;
		m->count[m->why[i]]++;
	}
	free(qk);
	return 0;
}

bool vm_parts(const struct vm_merge *m, size_t i, int64_t p[VP_NR])
{
	const struct vm_guest_req *g = &m->g[i];
	const struct vm_qemu_req *q;
	const struct vm_host_io *first, *last;
	int64_t off = m->clock.offset, sub = g_sub(g), done = g_done(g);

	if (m->why[i] != VM_MATCHED)
		return false;
	q = &m->q[m->g_qemu[i]];
	first = &m->h[m->q_host_first[m->g_qemu[i]]];
	last = &m->h[m->q_host_last[m->g_qemu[i]]];
	/* Guest up to its submission: the request's stages before the first Q, then the bio. */
	p[VP_PRE_BLOCK] = g->q - g->start;
	p[VP_BLOCK] = sub - g->q;
	p[VP_TO_QEMU] = q->take + off - sub;
	p[VP_QEMU_IN] = first->start - q->take;
	p[VP_HOST] = last->end - first->start;
	p[VP_QEMU_OUT] = q->done - last->end;
	p[VP_TO_GUEST] = done - (q->done + off);
	p[VP_GUEST_DONE] = g->c - done;
	p[VP_POST_BLOCK] = g->end - g->c;
	return true;
}

void vm_merge_free(struct vm_merge *m)
{
	free(m->g);
	free(m->q);
	free(m->h);
	free(m->g_qemu);
	free(m->q_host_first);
	free(m->q_host_last);
	free(m->why);
	memset(m, 0, sizeof(*m));
}
