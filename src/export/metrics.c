// SPDX-License-Identifier: GPL-2.0
/* What iospan watch exports at GET /metrics (metrics.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "bpfcmd.h"
#include "bpfmap.h"
#include "counters.h"
#include "collect/psi.h"
#include "export/metrics.h"
#include "probe.h"
#include "prom.h"

#ifndef IOSPAN_VERSION
#define IOSPAN_VERSION "unknown"
#endif

/* An op's counters in /proc/diskstats; -1: it has none of that kind. */
static const struct disk_op {
	const char *name;
	int ios, merges, sectors, ticks;
	int min_fields; /* kernels print the discard (15) and flush (17) groups since 4.18, 5.5 */
} disk_ops[] = {
	{"read", DS_RD_IOS, DS_RD_MERGES, DS_RD_SECTORS, DS_RD_TICKS, 11},
	{"write", DS_WR_IOS, DS_WR_MERGES, DS_WR_SECTORS, DS_WR_TICKS, 11},
	{"discard", DS_DC_IOS, DS_DC_MERGES, DS_DC_SECTORS, DS_DC_TICKS, 15},
	{"flush", DS_FL_IOS, -1, -1, DS_FL_TICKS, 17},
};

_Static_assert(ARRAY_SIZE(disk_ops) == TOP_DH_NR_OPS, "disk_ops[] in enum top_dh_op's order");

/* A time of day (Unix time) as exported: to the microsecond. */
static struct mw_num epoch_us(double epoch_s)
{
	return MW_SCALED((uint64_t)llround(epoch_s * 1e6), 6);
}

/* The counters the kernel prints as 32-bit milliseconds. */
static const int tick_fields[] = {
	DS_RD_TICKS, DS_WR_TICKS, DS_IO_TICKS, DS_TIME_IN_QUEUE, DS_DC_TICKS, DS_FL_TICKS,
};

int metrics_init(struct metrics *m, const struct disk_spec *disks, int nr, int max_cgroups)
{
	memset(m, 0, sizeof(*m));
	m->max_cgroups = max_cgroups;
	if (probe_cgroup2_mount(m->cgroup2, sizeof(m->cgroup2)))
		m->cgroup2[0] = '\0';
	m->sample = calloc(1, sizeof(*m->sample));
	if (!m->sample)
		return -ENOMEM;
	io_sampler_init(&m->sampler, disks, nr);
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->render_lock, NULL);
	return 0;
}

void metrics_free(struct metrics *m)
{
	if (!m->sample)
		return;
	io_sampler_free(&m->sampler);
	free(m->sample);
	m->sample = NULL;
	free(m->cgroups);
	m->cgroups = NULL;
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->render_lock);
}

void metrics_note_sample(struct metrics *m, double epoch_s)
{
	pthread_mutex_lock(&m->lock);
	m->samples++;
	m->last_sample_epoch_s = epoch_s;
	pthread_mutex_unlock(&m->lock);
}

static struct metrics_incidents *find_incidents(struct metrics *m, const char *disk,
						enum wt_metric rule)
{
	int i;

	for (i = 0; i < m->nr_incident_keys; i++)
		if (m->incidents[i].rule == rule && !strcmp(m->incidents[i].disk, disk))
			return &m->incidents[i];
	return NULL;
}

void metrics_note_incident(struct metrics *m, const char *disk, enum wt_metric rule, double epoch_s)
{
	struct metrics_incidents *k;

	pthread_mutex_lock(&m->lock);
	m->incident_open = true;
	m->last_incident_epoch_s = epoch_s;
	k = find_incidents(m, disk ? disk : "", rule);
	/*
	 * Disks come and go (loop devices): past the bound, their incidents add to disk
	 * "other", whose key of each rule has its place kept at the table's end.
	 */
	if (!k && m->nr_incident_keys >= METRICS_MAX_INCIDENT_KEYS - WT_NR_METRICS)
		disk = "other";
	if (!k)
		k = find_incidents(m, disk ? disk : "", rule);
	if (!k && m->nr_incident_keys < METRICS_MAX_INCIDENT_KEYS) {
		k = &m->incidents[m->nr_incident_keys++];
		snprintf(k->disk, sizeof(k->disk), "%s", disk ? disk : "");
		k->rule = rule;
	}
	if (k)
		k->count++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_note_incident_closed(struct metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->incident_open = false;
	pthread_mutex_unlock(&m->lock);
}

void metrics_collector_fill(struct metrics_collector *out, const char *name,
			    const struct bpfcmd *cmd, const struct counter_def *defs,
			    const uint64_t *totals, size_t nr)
{
	struct bpf_prog_stat st[METRICS_MAX_PROGS];
	const struct attach_hook *h;
	int i, n;
	size_t k;

	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	n = cmd->obj ? bpfobj_prog_stats(cmd->obj, st, METRICS_MAX_PROGS) : 0;
	for (i = 0; i < n; i++) {
		snprintf(out->progs[i].name, sizeof(out->progs[i].name), "%s", st[i].name);
		out->progs[i].run_ns = st[i].run_ns;
		out->progs[i].runs = st[i].runs;
	}
	out->nr_progs = n;
	for (i = 0; i < cmd->nr_hooks && i < METRICS_MAX_HOOKS; i++) {
		h = &cmd->hooks[i];
		snprintf(out->hooks[i].name, sizeof(out->hooks[i].name), "%s", h->name);
		out->hooks[i].mode =
			h->chosen >= 0 ? attach_mode_name(h->v[h->chosen].mode) : "none";
	}
	out->nr_hooks = i;
	for (k = 0; k < nr && out->nr_losses < METRICS_MAX_LOSSES; k++) {
		if (defs[k].info)
			continue;
		out->losses[out->nr_losses].reason = defs[k].name;
		out->losses[out->nr_losses++].count = totals[k];
	}
}

void metrics_note_collector(struct metrics *m, const char *name, const struct metrics_collector *c)
{
	int i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nr_collectors; i++)
		if (!strcmp(m->collectors[i].name, name))
			break;
	if (!c) {
		/* Closed: its programs and counters are gone, and so are its series. */
		if (i < m->nr_collectors)
			m->collectors[i] = m->collectors[--m->nr_collectors];
	} else if (i < m->nr_collectors || m->nr_collectors < METRICS_MAX_COLLECTORS) {
		if (i == m->nr_collectors)
			m->nr_collectors++;
		m->collectors[i] = *c;
	}
	pthread_mutex_unlock(&m->lock);
}

/* ------------------------------------------------------------------ cgroups */

static struct metrics_cgroup_io *cg_find(struct metrics *m, uint64_t cgid, const char *disk)
{
	int i;

	for (i = 0; i < m->nr_cgroups; i++)
		if (m->cgroups[i].cgid == cgid && (!disk || !strcmp(m->cgroups[i].disk, disk)))
			return &m->cgroups[i];
	return NULL;
}

/* A new place with @d's names and no counts; NULL without memory. */
static struct metrics_cgroup_io *cg_add(struct metrics *m, const struct metrics_cgroup_io *d,
					uint64_t cgid)
{
	struct metrics_cgroup_io *e;
	int cap;

	if (m->nr_cgroups == m->cap_cgroups) {
		cap = m->cap_cgroups ? 2 * m->cap_cgroups : 16;
		e = realloc(m->cgroups, cap * sizeof(*e));
		if (!e)
			return NULL;
		m->cgroups = e;
		m->cap_cgroups = cap;
	}
	e = &m->cgroups[m->nr_cgroups++];
	memset(e, 0, sizeof(*e));
	e->cgid = cgid;
	e->recent = -1; /* new: its first sample is its rate */
	memcpy(e->disk, d->disk, sizeof(e->disk));
	if (cgid == METRICS_CGID_OTHER) {
		snprintf(e->cgroup, sizeof(e->cgroup), "other");
	} else {
		memcpy(e->cgroup, d->cgroup, sizeof(e->cgroup));
		memcpy(e->container, d->container, sizeof(e->container));
	}
	return e;
}

/* Every place of cgroup @cgid goes, and with it its series. */
static void cg_drop(struct metrics *m, uint64_t cgid)
{
	int i = 0;

	while (i < m->nr_cgroups)
		if (m->cgroups[i].cgid == cgid)
			m->cgroups[i] = m->cgroups[--m->nr_cgroups];
		else
			i++;
}

/* A cgroup with a path: "unknown" and "other" are always there, and count for none. */
static bool cg_named(const struct metrics_cgroup_io *e)
{
	return e->cgroup[0] == '/';
}

/*
 * The cgroups with series of their own, and the least busy of them in *@least (false:
 * none). Quadratic in the places: what --metrics-max-cgroups bounds.
 */
static int cg_census(struct metrics *m, uint64_t *least, bool *found)
{
	double r, min = 0;
	int i, j, n = 0;

	*found = false;
	for (i = 0; i < m->nr_cgroups; i++) {
		if (!cg_named(&m->cgroups[i]) ||
		    cg_find(m, m->cgroups[i].cgid, NULL) != &m->cgroups[i])
			continue; /* unknown, other, or not the cgroup's first place */
		n++;
		for (r = 0, j = i; j < m->nr_cgroups; j++)
			if (m->cgroups[j].cgid == m->cgroups[i].cgid)
				r += m->cgroups[j].recent;
		if (!*found || r < min) {
			*least = m->cgroups[i].cgid;
			min = r;
			*found = true;
		}
	}
	return n;
}

static double cg_recent(struct metrics *m, uint64_t cgid)
{
	double r = 0;
	int i;

	for (i = 0; i < m->nr_cgroups; i++)
		if (m->cgroups[i].cgid == cgid)
			r += m->cgroups[i].recent;
	return r;
}

/* Where @d's changes go: its cgroup's place on its disk, or "other" there. */
static struct metrics_cgroup_io *cg_place(struct metrics *m, const struct metrics_cgroup_io *d,
					  double moved)
{
	struct metrics_cgroup_io *e = cg_find(m, d->cgid, d->disk);
	uint64_t least = 0;
	bool found;
	int i;

	if (e)
		return e;
	if (!cg_named(d))
		return cg_add(m, d, d->cgid); /* "unknown": one place per disk */
	/* A cgroup made anew at the same path (a restarted service): its series go on. */
	for (i = 0; i < m->nr_cgroups; i++)
		if (!strcmp(m->cgroups[i].cgroup, d->cgroup) &&
		    !strcmp(m->cgroups[i].disk, d->disk)) {
			m->cgroups[i].cgid = d->cgid;
			return &m->cgroups[i];
		}
	if (cg_find(m, d->cgid, NULL) || cg_census(m, &least, &found) < m->max_cgroups)
		return cg_add(m, d, d->cgid);
	if (found && moved > cg_recent(m, least)) {
		cg_drop(m, least);
		return cg_add(m, d, d->cgid);
	}
	return cg_find(m, METRICS_CGID_OTHER, d->disk) ?: cg_add(m, d, METRICS_CGID_OTHER);
}

/*
 * Whether cgroup @e is gone (a container that ended): no directory at its path, or
 * another one (the id of a cgroup is its directory's inode number). A path cut to fit
 * is not looked at.
 */
static bool cg_gone(const struct metrics *m, const struct metrics_cgroup_io *e)
{
	char path[sizeof(m->cgroup2) + METRICS_CGROUP_LEN + 1];
	struct stat st;

	if (!m->cgroup2[0] || !cg_named(e) || strlen(e->cgroup) >= sizeof(e->cgroup) - 1)
		return false;
	snprintf(path, sizeof(path), "%s/%s", m->cgroup2, e->cgroup);
	if (stat(path, &st))
		return errno == ENOENT;
	return st.st_ino != e->cgid;
}

/* Smoothing of the busiest: a sample's bytes weigh this much, the past the rest. */
#define CG_RECENT_WEIGHT 0.1

void metrics_note_cgroups(struct metrics *m, const struct metrics_cgroup_io *d, int nr)
{
	struct metrics_cgroup_io *e;
	double moved;
	int i, k;

	pthread_mutex_lock(&m->lock);
	m->have_cgroups = true;
	for (i = 0; i < m->nr_cgroups; i++)
		m->cgroups[i].recent *= 1 - CG_RECENT_WEIGHT;
	for (i = 0; i < nr; i++) {
		moved = d[i].disk_bytes[0] + d[i].disk_bytes[1] + d[i].fs_bytes[0] +
			d[i].fs_bytes[1];
		e = cg_place(m, &d[i], moved);
		if (!e)
			continue; /* no memory: the sample's changes are not kept */
		for (k = 0; k < 2; k++) {
			e->disk_bytes[k] += d[i].disk_bytes[k];
			e->fs_bytes[k] += d[i].fs_bytes[k];
		}
		e->writeback_bytes += d[i].writeback_bytes;
		for (k = 0; k < MCG_NR_OPS; k++) {
			e->requests[k] += d[i].requests[k];
			e->request_ns[k] += d[i].request_ns[k];
		}
		e->recent = e->recent < 0 ? moved : e->recent + CG_RECENT_WEIGHT * moved;
		e->note = m->cgroup_notes;
	}
	/* Cgroups gone: their series go (those idle in this sample are looked at). */
	for (i = 0; i < m->nr_cgroups; i++)
		if (m->cgroups[i].note != m->cgroup_notes && cg_gone(m, &m->cgroups[i])) {
			cg_drop(m, m->cgroups[i].cgid);
			i = -1;
		}
	m->cgroup_notes++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_note_disk_hists(struct metrics *m, const struct metrics_dhist *h, int nr)
{
	if (nr > METRICS_MAX_DHISTS)
		nr = METRICS_MAX_DHISTS;
	pthread_mutex_lock(&m->lock);
	memcpy(m->dhists, h, nr * sizeof(*h));
	m->nr_dhists = nr;
	m->have_dhists = true;
	pthread_mutex_unlock(&m->lock);
}

void metrics_note_disk_drivers(struct metrics *m, const struct metrics_ddrv *d, int nr, bool hooked)
{
	if (nr > (int)(sizeof(m->ddrvs) / sizeof(m->ddrvs[0])))
		nr = sizeof(m->ddrvs) / sizeof(m->ddrvs[0]);
	pthread_mutex_lock(&m->lock);
	memcpy(m->ddrvs, d, nr * sizeof(*d));
	m->nr_ddrvs = nr;
	m->have_ddrvs = true;
	m->ddrv_hooked = hooked;
	pthread_mutex_unlock(&m->lock);
}

/*
 * Keeps @d's time counters counting past the 2^32 ms the kernel prints them in (49.7
 * days of summed request time: days on a busy disk), so that each stays monotonic for
 * as long as its series exists; a disk that started again from zero starts again.
 */
static void unwrap_ticks(struct metrics_disk *md, const struct ds_dev *d, bool known)
{
	uint64_t raw, last;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(tick_fields); i++) {
		raw = d->f[tick_fields[i]];
		last = md->last.f[tick_fields[i]];
		if (!known)
			md->ticks[tick_fields[i]] = raw;
		else if (raw >= last)
			md->ticks[tick_fields[i]] += raw - last;
		else if (last <= UINT32_MAX)
			md->ticks[tick_fields[i]] += (uint32_t)(raw - last);
	}
	md->last = *d;
	md->seen = true;
}

static struct metrics_disk *find_disk(struct metrics *m, const struct ds_dev *d)
{
	int j;

	for (j = 0; j < m->nr_disks; j++)
		if (m->disks[j].last.major == d->major && m->disks[j].last.minor == d->minor &&
		    !strcmp(m->disks[j].last.name, d->name))
			return &m->disks[j];
	return NULL;
}

/*
 * The unwrapped counters of every disk of the sample: first the disks known, then the
 * new ones, in the places of disks gone (which stop being exported) or new places.
 */
static void update_disks(struct metrics *m)
{
	const struct io_sample *s = m->sample;
	bool known[SAMPLER_MAX_DISKS] = {};
	struct metrics_disk *md;
	int i, j;

	for (j = 0; j < m->nr_disks; j++)
		m->disks[j].seen = false;
	for (i = 0; i < s->nr; i++) {
		md = find_disk(m, &s->disks[i].dev);
		if (md && !md->seen) {
			unwrap_ticks(md, &s->disks[i].dev,
				     !ds_restarted(&md->last, &s->disks[i].dev));
			known[i] = true;
		}
	}
	for (i = 0, j = 0; i < s->nr; i++) {
		if (known[i])
			continue;
		while (j < m->nr_disks && m->disks[j].seen)
			j++;
		if (j == m->nr_disks && m->nr_disks < SAMPLER_MAX_DISKS)
			m->nr_disks++;
		if (j < m->nr_disks)
			unwrap_ticks(&m->disks[j], &s->disks[i].dev, false);
	}
	for (j = 0; j < m->nr_disks; j++)
		if (!m->disks[j].seen)
			memset(&m->disks[j].last, 0, sizeof(m->disks[j].last));
}

/* What a per-op family counts. */
enum op_figure { OP_REQUESTS, OP_BYTES, OP_MERGED, OP_TIME };

static void disk_op_family(struct metrics *m, struct mwriter *w, const char *name, const char *help,
			   enum op_figure what)
{
	const struct metrics_disk *md;
	const struct disk_op *op;
	struct prom_label l[2];
	int field, j;
	size_t k;

	mw_family(w, name, PROM_COUNTER, help);
	for (j = 0; j < m->nr_disks; j++) {
		md = &m->disks[j];
		for (k = 0; md->seen && k < ARRAY_SIZE(disk_ops); k++) {
			op = &disk_ops[k];
			field = what == OP_REQUESTS ? op->ios :
				what == OP_BYTES    ? op->sectors :
				what == OP_MERGED   ? op->merges :
						      op->ticks;
			if (field < 0 || md->last.nr_fields < op->min_fields)
				continue;
			l[0] = (struct prom_label){"disk", md->last.name};
			l[1] = (struct prom_label){"op", op->name};
			if (what == OP_TIME)
				mw_sample(w, l, 2, MW_SCALED(md->ticks[field], 3));
			else
				mw_sample(w, l, 2,
					  MW_INT(md->last.f[field] * (what == OP_BYTES ? 512 : 1)));
		}
	}
}

static void disk_family(struct metrics *m, struct mwriter *w, const char *name, enum prom_type type,
			const char *help, int field)
{
	const struct metrics_disk *md;
	struct prom_label l;
	int j;

	mw_family(w, name, type, help);
	for (j = 0; j < m->nr_disks; j++) {
		md = &m->disks[j];
		if (!md->seen)
			continue;
		l = (struct prom_label){"disk", md->last.name};
		if (type == PROM_GAUGE)
			mw_sample(w, &l, 1, MW_INT(md->last.f[field]));
		else
			mw_sample(w, &l, 1, MW_SCALED(md->ticks[field], 3));
	}
}

static void render_disks(struct metrics *m, struct mwriter *w)
{
	disk_op_family(m, w, "iospan_disk_requests_total",
		       "Requests completed, per disk and op (/proc/diskstats).", OP_REQUESTS);
	disk_op_family(m, w, "iospan_disk_bytes_total",
		       "Bytes of the requests completed, per disk and op (sectors x 512).",
		       OP_BYTES);
	disk_op_family(m, w, "iospan_disk_merged_total",
		       "Requests merged into others before they were issued, per disk and op.",
		       OP_MERGED);
	disk_op_family(m, w, "iospan_disk_request_time_seconds_total",
		       "Time the completed requests took, summed (from queue to completion).",
		       OP_TIME);
	disk_family(m, w, "iospan_disk_io_time_seconds_total", PROM_COUNTER,
		    "Time the disk had requests in flight (iostat's %util is its rate).",
		    DS_IO_TICKS);
	disk_family(m, w, "iospan_disk_io_time_weighted_seconds_total", PROM_COUNTER,
		    "Time in flight weighted by the requests in flight (aqu-sz is its rate).",
		    DS_TIME_IN_QUEUE);
	disk_family(m, w, "iospan_disk_in_flight", PROM_GAUGE,
		    "Requests in flight now (issued to the driver, not completed).", DS_IN_FLIGHT);
}

static void render_pressure(const struct psi_io *p, struct mwriter *w)
{
	const struct prom_label some = {"kind", "some"}, full = {"kind", "full"};

	if (!p->valid)
		return; /* a kernel without PSI: no series rather than zeros */
	mw_family(w, "iospan_pressure_io_stalled_seconds_total", PROM_COUNTER,
		  "Time some (or all: full) non-idle tasks were stalled on I/O "
		  "(/proc/pressure/io).");
	mw_sample(w, &some, 1, MW_SCALED(p->some_total_us, 6));
	mw_sample(w, &full, 1, MW_SCALED(p->full_total_us, 6));
}

/* Whether the kernel counts the programs' run time now (kernel.bpf_stats_enabled). */
static bool bpf_stats_on(void)
{
	return read_int_file("/proc/sys/kernel/bpf_stats_enabled") == 1;
}

static void render_losses(const struct metrics_collector *col, int nc, struct mwriter *w)
{
	const char *name = "iospan_events_lost_total";
	struct prom_label l[2] = {{"collector", NULL}, {"reason", NULL}};
	int i, j;

	mw_family(w, name, PROM_COUNTER,
		  "What a collector lost since it opened, by reason (its counters, "
		  "iospan-top(8) and iospan-trace(8)).");
	for (i = 0; i < nc; i++)
		for (l[0].value = col[i].name, j = 0; j < col[i].nr_losses; j++) {
			l[1].value = col[i].losses[j].reason;
			mw_sample(w, l, 2, MW_INT(col[i].losses[j].count));
		}
}

static void render_hooks(const struct metrics_collector *col, int nc, struct mwriter *w)
{
	struct prom_label l[3] = {{"collector", NULL}, {"hook", NULL}, {"mode", NULL}};
	int i, j;

	mw_family(w, "iospan_hook_info", PROM_GAUGE,
		  "1 for each hook of a collector, with the way it is attached here (tp_btf, "
		  "raw_tp, tracepoint, fentry, kprobe; none: not available).");
	for (i = 0; i < nc; i++) {
		l[0].value = col[i].name;
		for (j = 0; j < col[i].nr_hooks; j++) {
			l[1].value = col[i].hooks[j].name;
			l[2].value = col[i].hooks[j].mode;
			mw_sample(w, l, 3, MW_INT(1));
		}
	}
}

/* The programs' run time and runs: counted only while the sysctl is on, else no series. */
static void render_programs(const struct metrics_collector *col, int nc, struct mwriter *w)
{
	static const char *const names[] = {"iospan_bpf_program_run_seconds_total",
					    "iospan_bpf_program_runs_total"};
	static const char *const helps[] = {"Time a BPF program ran (kernel.bpf_stats_enabled).",
					    "Times a BPF program ran (kernel.bpf_stats_enabled)."};
	struct prom_label l[2] = {{"collector", NULL}, {"program", NULL}};
	int f, i, j;

	if (!bpf_stats_on())
		return;
	for (f = 0; f < 2; f++) {
		mw_family(w, names[f], PROM_COUNTER, helps[f]);
		for (i = 0; i < nc; i++) {
			l[0].value = col[i].name;
			for (j = 0; j < col[i].nr_progs; j++) {
				l[1].value = col[i].progs[j].name;
				if (f)
					mw_sample(w, l, 2, MW_INT(col[i].progs[j].runs));
				else
					mw_sample(w, l, 2, MW_SCALED(col[i].progs[j].run_ns, 9));
			}
		}
	}
}

/*
 * A copy of @n items of @size at @src, for rendering without the lock: NULL for none,
 * or without memory (then *@err is -ENOMEM).
 */
static void *copy_of(const void *src, int n, size_t size, int *err)
{
	void *p;

	if (!n)
		return NULL;
	p = malloc(n * size);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	return memcpy(p, src, n * size);
}

/* The kernel's log2 slots as exported: upper bounds 2^k (in 10^-scale units). */
struct log2_bounds {
	int first, last, scale;
};

/* Latency: 1.024 us to 34.4 s (slots of ns); sizes: 512 bytes to 1 GiB (top_abi.h's). */
static const struct log2_bounds lat_buckets = {10, 35, 9};
static const struct log2_bounds size_buckets = {9, 30, 0};

/*
 * A histogram of top_abi.h, whose slot k counts the values in (2^(k-1), 2^k] (slot 0:
 * 0 and 1): upper bounds 2^k for k from @b->first to @b->last, each exact (a value of
 * 2^k is in le=2^k), the slots below first in the first bucket, those past last in
 * +Inf only; @sum of the values, in the slots' unit.
 */
static void log2_hist(struct mwriter *w, const struct prom_label *l, int nr, const __u64 *slots,
		      int nr_slots, __u64 sum, const struct log2_bounds *b)
{
	uint64_t le[MW_MAX_BUCKETS], cum[MW_MAX_BUCKETS], count = 0;
	int k, n = 0;

	for (k = 0; k < nr_slots; k++) {
		count += slots[k];
		if (k >= b->first && k <= b->last && n < MW_MAX_BUCKETS) {
			le[n] = 1ULL << k;
			cum[n++] = count;
		}
	}
	w->ops->histogram(w, l, nr, le, b->scale, cum, n, MW_SCALED(sum, b->scale), count);
}

static const struct top_dhist *dhist_of(const struct metrics_dhist *h, int n,
					const struct metrics_disk *md, enum top_dh_op op)
{
	int i;

	for (i = 0; i < n; i++)
		if (h[i].major == md->last.major && h[i].minor == md->last.minor && h[i].op == op)
			return &h[i].h;
	return NULL;
}

/*
 * Top's histograms of each disk of this scrape and op: q2c and d2c latency, and the
 * size of all requests but flushes. Reads and writes are there from the start, at
 * zero (a series born with its first counts would hide them from increase()); discards
 * and flushes from the first one.
 */
static void render_disk_hists(struct metrics *m, const struct metrics_dhist *h, int n,
			      struct mwriter *w, bool sizes)
{
	static const struct top_dhist zero;
	const struct metrics_disk *md;
	const struct top_dhist *d;
	struct prom_label l[3];
	int j, op;

	for (j = 0; j < m->nr_disks; j++) {
		md = &m->disks[j];
		for (op = 0; md->seen && op < TOP_DH_NR_OPS; op++) {
			d = dhist_of(h, n, md, op);
			if (!d && op != TOP_DH_READ && op != TOP_DH_WRITE)
				continue;
			if (!d)
				d = &zero;
			l[0] = (struct prom_label){"disk", md->last.name};
			l[1] = (struct prom_label){"op", disk_ops[op].name};
			if (sizes) {
				if (op != TOP_DH_FLUSH)
					log2_hist(w, l, 2, d->size, TOP_DH_SIZE_SLOTS, d->bytes_sum,
						  &size_buckets);
				continue;
			}
			l[2] = (struct prom_label){"stage", "q2c"};
			log2_hist(w, l, 3, d->q2c, TOP_DH_LAT_SLOTS, d->q2c_sum, &lat_buckets);
			l[2].value = "d2c";
			log2_hist(w, l, 3, d->d2c, TOP_DH_LAT_SLOTS, d->d2c_sum, &lat_buckets);
		}
	}
}

/* The histograms, with top's collector (a copy taken under the lock). */
static int render_hists(struct metrics *m, struct mwriter *w)
{
	struct metrics_dhist *h;
	int n, err = 0;
	bool on;

	pthread_mutex_lock(&m->lock);
	on = m->have_dhists;
	n = m->nr_dhists;
	h = copy_of(m->dhists, n, sizeof(*h), &err);
	pthread_mutex_unlock(&m->lock);
	if (!on || err)
		return err;
	mw_family(w, "iospan_disk_latency_seconds", PROM_HISTOGRAM,
		  "Request latency per disk and op: stage q2c from the first bio's queue to "
		  "completion, d2c from the issue to the driver to completion.");
	render_disk_hists(m, h, n, w, false);
	mw_family(w, "iospan_disk_request_size_bytes", PROM_HISTOGRAM,
		  "Request size per disk and op, in bytes.");
	render_disk_hists(m, h, n, w, true);
	free(h);
	return 0;
}

/* What a driver family counts. */
enum drv_figure { DF_REQUEUES, DF_COMMANDS, DF_ERRORS, DF_TIMEOUTS, DF_REFUSED, DF_NR };

static uint64_t drv_figure(const struct drv_disk_stats *s, enum drv_figure f)
{
	switch (f) {
	case DF_REQUEUES:
		return s->requeues;
	case DF_COMMANDS:
		return s->cmds;
	case DF_ERRORS:
		return s->errors;
	case DF_TIMEOUTS:
		return s->timeouts;
	default:
		return s->dispatch_errors;
	}
}

/*
 * The driver's counters of each disk of this scrape, from zero for a disk none was
 * counted on yet (increase() sees the first). Requeues are the block layer's, on every
 * disk; the others only where a driver hook is attached (NVMe, SCSI).
 */
static void render_drivers(struct metrics *m, struct mwriter *w)
{
	static const struct {
		const char *name, *help;
	} fam[DF_NR] = {
		{"iospan_disk_requeues_total",
		 "Requests the block layer requeued (a driver's retry, or busy), per disk."},
		{"iospan_disk_driver_commands_total",
		 "Commands the disk's driver completed (each attempt), NVMe and SCSI."},
		{"iospan_disk_driver_errors_total",
		 "Of the driver's commands, those completed with an error status."},
		{"iospan_disk_driver_timeouts_total", "Commands whose driver timeout handler ran."},
		{"iospan_disk_driver_dispatch_errors_total",
		 "Commands the driver refused to queue (host busy), SCSI."},
	};
	static const struct drv_disk_stats zero;
	struct metrics_ddrv *v;
	struct prom_label l;
	int n, err = 0, i, j, f;
	bool on, hooked;

	pthread_mutex_lock(&m->lock);
	on = m->have_ddrvs;
	hooked = m->ddrv_hooked;
	n = m->nr_ddrvs;
	v = copy_of(m->ddrvs, n, sizeof(*v), &err);
	pthread_mutex_unlock(&m->lock);
	if (!on || err)
		return;
	for (f = 0; f < (hooked ? DF_NR : DF_COMMANDS); f++) {
		mw_family(w, fam[f].name, PROM_COUNTER, fam[f].help);
		for (j = 0; j < m->nr_disks; j++) {
			const struct metrics_disk *md = &m->disks[j];
			const struct drv_disk_stats *s = &zero;

			if (!md->seen)
				continue;
			for (i = 0; i < n; i++)
				if (v[i].major == md->last.major && v[i].minor == md->last.minor)
					s = &v[i].s;
			l = (struct prom_label){"disk", md->last.name};
			mw_sample(w, &l, 1, MW_INT(drv_figure(s, f)));
		}
	}
	free(v);
}

/* What a per-cgroup family counts. */
enum cg_figure { CG_DISK_BYTES, CG_REQUESTS, CG_REQUEST_TIME, CG_FS_BYTES, CG_WRITEBACK };

static const char *const cg_op_names[MCG_NR_OPS] = {"read", "write", "flush"};

static void cg_family(const struct metrics_cgroup_io *cg, int n, struct mwriter *w,
		      const char *name, const char *help, enum cg_figure what)
{
	struct prom_label l[4];
	int i, op, nr_ops;

	mw_family(w, name, PROM_COUNTER, help);
	nr_ops = what == CG_WRITEBACK				? 1 :
		 what == CG_REQUESTS || what == CG_REQUEST_TIME ? MCG_NR_OPS :
								  2;
	for (i = 0; i < n; i++) {
		l[0] = (struct prom_label){"cgroup", cg[i].cgroup};
		l[1] = (struct prom_label){"container", cg[i].container};
		l[2] = (struct prom_label){"disk", cg[i].disk};
		for (op = 0; op < nr_ops; op++) {
			l[3] = (struct prom_label){"op", cg_op_names[op]};
			switch (what) {
			case CG_DISK_BYTES:
				mw_sample(w, l, 4, MW_INT(cg[i].disk_bytes[op]));
				break;
			case CG_REQUESTS:
				mw_sample(w, l, 4, MW_INT(cg[i].requests[op]));
				break;
			case CG_REQUEST_TIME:
				mw_sample(w, l, 4, MW_SCALED(cg[i].request_ns[op], 9));
				break;
			case CG_FS_BYTES:
				mw_sample(w, l, 4, MW_INT(cg[i].fs_bytes[op]));
				break;
			case CG_WRITEBACK:
				mw_sample(w, l, 3, MW_INT(cg[i].writeback_bytes));
				break;
			}
		}
	}
}

/* Each cgroup's own io.pressure (cgroup v2 with PSI), read now; once per cgroup. */
static void cg_pressure(const struct metrics *m, const struct metrics_cgroup_io *cg, int n,
			struct mwriter *w)
{
	static const char *const name = "iospan_cgroup_pressure_io_stalled_seconds_total";
	char path[sizeof(m->cgroup2) + METRICS_CGROUP_LEN + 16];
	struct prom_label l[3];
	struct psi_io p;
	bool family = false;
	int i, j;

	for (i = 0; m->cgroup2[0] && i < n; i++) {
		if (!cg_named(&cg[i]))
			continue;
		for (j = 0; j < i && cg[j].cgid != cg[i].cgid; j++)
			;
		if (j < i)
			continue; /* its pressure is given with its first disk */
		snprintf(path, sizeof(path), "%s/%s/io.pressure", m->cgroup2, cg[i].cgroup);
		psi_read(path, &p);
		if (!p.valid)
			continue; /* no PSI, or the cgroup went: no series rather than zeros */
		if (!family)
			mw_family(w, name, PROM_COUNTER,
				  "Time some (all) of the cgroup's tasks stalled on I/O "
				  "(its io.pressure).");
		family = true;
		l[0] = (struct prom_label){"cgroup", cg[i].cgroup};
		l[1] = (struct prom_label){"container", cg[i].container};
		l[2] = (struct prom_label){"kind", "some"};
		mw_sample(w, l, 3, MW_SCALED(p.some_total_us, 6));
		l[2].value = "full";
		mw_sample(w, l, 3, MW_SCALED(p.full_total_us, 6));
	}
}

/* The cgroups' figures, with top's collector (a copy taken under the lock). */
static int render_cgroups(struct metrics *m, struct mwriter *w)
{
	struct metrics_cgroup_io *cg;
	int n, err = 0;
	bool on;

	pthread_mutex_lock(&m->lock);
	on = m->have_cgroups;
	n = m->nr_cgroups;
	cg = copy_of(m->cgroups, n, sizeof(*cg), &err);
	pthread_mutex_unlock(&m->lock);
	if (!on || err)
		return err;
	cg_family(cg, n, w, "iospan_cgroup_disk_bytes_total",
		  "Bytes the cgroup's processes read from and wrote to the disk (writeback "
		  "credited to the cgroup that dirtied the pages).",
		  CG_DISK_BYTES);
	cg_family(cg, n, w, "iospan_cgroup_disk_requests_total",
		  "Requests of the cgroup's processes completed on the disk.", CG_REQUESTS);
	cg_family(cg, n, w, "iospan_cgroup_disk_request_time_seconds_total",
		  "Time those requests took, from queue to completion, summed.", CG_REQUEST_TIME);
	cg_family(cg, n, w, "iospan_cgroup_fs_bytes_total",
		  "Bytes the cgroup's processes read and wrote through the file system "
		  "(syscalls, mmap; in whole pages unless watch follows syscalls), on "
		  "files of the disk.",
		  CG_FS_BYTES);
	cg_family(cg, n, w, "iospan_cgroup_writeback_bytes_total",
		  "Of the written bytes, those kernel threads wrote back for the cgroup.",
		  CG_WRITEBACK);
	cg_pressure(m, cg, n, w);
	free(cg);
	return 0;
}

/* Watch's own state: a copy taken under the lock, written without it. */
static int render_watch(struct metrics *m, struct mwriter *w)
{
	struct metrics_incidents *inc;
	struct metrics_collector *col;
	double last_sample, last_incident;
	struct prom_label l[2];
	uint64_t samples;
	bool open;
	int i, n, nc, err = 0;

	pthread_mutex_lock(&m->lock);
	samples = m->samples;
	last_sample = m->last_sample_epoch_s;
	open = m->incident_open;
	last_incident = m->last_incident_epoch_s;
	n = m->nr_incident_keys;
	inc = copy_of(m->incidents, n, sizeof(*inc), &err);
	nc = m->nr_collectors;
	col = copy_of(m->collectors, nc, sizeof(*col), &err);
	pthread_mutex_unlock(&m->lock);
	if (err) {
		free(inc);
		free(col);
		return err;
	}

	mw_family(w, "iospan_watch_samples_total", PROM_COUNTER,
		  "Samples watch took (one per --interval).");
	mw_sample(w, NULL, 0, MW_INT(samples));
	if (samples) {
		mw_family(w, "iospan_watch_last_sample_timestamp_seconds", PROM_GAUGE,
			  "When watch took its last sample (Unix time).");
		mw_sample(w, NULL, 0, epoch_us(last_sample));
	}
	mw_family(w, "iospan_watch_incidents_total", PROM_COUNTER,
		  "Incidents opened since watch started, per disk and the rule that fired.");
	for (i = 0; i < n; i++) {
		l[0] = (struct prom_label){"disk", inc[i].disk};
		l[1] = (struct prom_label){"rule", wt_metric_name(inc[i].rule)};
		mw_sample(w, l, 2, MW_INT(inc[i].count));
	}
	mw_family(w, "iospan_watch_incident_open", PROM_GAUGE,
		  "1 while an incident is being captured, else 0.");
	mw_sample(w, NULL, 0, MW_INT(open));
	if (last_incident > 0) {
		mw_family(w, "iospan_watch_last_incident_timestamp_seconds", PROM_GAUGE,
			  "When the last incident since watch started opened (Unix time).");
		mw_sample(w, NULL, 0, epoch_us(last_incident));
	}
	free(inc);
	render_losses(col, nc, w);
	render_hooks(col, nc, w);
	render_programs(col, nc, w);
	free(col);
	return 0;
}

void metrics_note_otlp(struct metrics *m, const struct otlp_stats *s)
{
	pthread_mutex_lock(&m->lock);
	m->otlp = *s;
	m->have_otlp = true;
	pthread_mutex_unlock(&m->lock);
}

static void render_otlp(struct metrics *m, struct mwriter *w)
{
	struct prom_label l[2];
	struct otlp_stats st;
	bool have;
	int s, d, nr;

	pthread_mutex_lock(&m->lock);
	st = m->otlp;
	have = m->have_otlp;
	pthread_mutex_unlock(&m->lock);
	if (!have)
		return;
	nr = st.metrics ? OTLP_NR_SIGNALS : OTLP_METRICS; /* signal "metrics" when pushed */
	mw_family(w, "iospan_otlp_exported_total", PROM_COUNTER,
		  "Items the OTLP receiver took: traces (a slow request with its stages), "
		  "logs (incidents), metrics (a family of a push, or a part of one).");
	for (s = 0; s < nr; s++) {
		l[0] = (struct prom_label){"signal", otlp_signal_name(s)};
		mw_sample(w, l, 1, MW_INT(st.sent[s]));
	}
	mw_family(w, "iospan_otlp_dropped_total", PROM_COUNTER,
		  "Items not exported, by reason: queue_full, rejected (the receiver refused "
		  "them), retries_exhausted, at_exit.");
	for (s = 0; s < nr; s++)
		for (d = 0; d < OTLP_NR_DROPS; d++) {
			l[0] = (struct prom_label){"signal", otlp_signal_name(s)};
			l[1] = (struct prom_label){"reason", otlp_drop_name(d)};
			mw_sample(w, l, 2, MW_INT(st.dropped[s][d]));
		}
	mw_family(w, "iospan_otlp_queued", PROM_GAUGE, "Items waiting to be exported.");
	for (s = 0; s < nr; s++) {
		l[0] = (struct prom_label){"signal", otlp_signal_name(s)};
		mw_sample(w, l, 1, MW_INT(st.queued[s]));
	}
	mw_family(w, "iospan_otlp_requests_total", PROM_COUNTER,
		  "Export requests made to the OTLP receiver.");
	mw_sample(w, NULL, 0, MW_INT(st.requests));
	mw_family(w, "iospan_otlp_request_failures_total", PROM_COUNTER,
		  "Export requests that failed (no answer, or not 2xx).");
	mw_sample(w, NULL, 0, MW_INT(st.failures));
}

int metrics_write(struct metrics *m, struct mwriter *w)
{
	const struct prom_label version = {"version", IOSPAN_VERSION};
	int ret;

	/* A scrape and a push may come at once: one at a time reads and unwraps the disks. */
	pthread_mutex_lock(&m->render_lock);
	ret = io_sampler_read(&m->sampler, m->sample);
	if (!ret) {
		update_disks(m);
		render_disks(m, w);
		ret = render_hists(m, w);
		render_drivers(m, w);
	}
	render_pressure(&m->sample->psi, w);
	ret = render_cgroups(m, w) ?: ret;
	ret = render_watch(m, w) ?: ret;
	render_otlp(m, w);
	mw_family(w, "iospan_build_info", PROM_GAUGE, "1, labelled with iospan's version.");
	mw_sample(w, &version, 1, MW_INT(1));
	pthread_mutex_unlock(&m->render_lock);
	return ret;
}

/* ------------------------------------------------ the Prometheus text writer */

struct prom_writer {
	struct mwriter w;
	struct prom_buf *b;
	const char *name; /* the family's */
};

static void pw_family(struct mwriter *w, const char *name, enum prom_type type, const char *help)
{
	struct prom_writer *pw = (struct prom_writer *)w;

	pw->name = name;
	prom_family(pw->b, name, type, help);
}

static void pw_sample(struct mwriter *w, const struct prom_label *labels, int nr, struct mw_num v)
{
	struct prom_writer *pw = (struct prom_writer *)w;

	if (v.scale)
		prom_sample(pw->b, pw->name, labels, nr, v.n / mw_pow10(v.scale));
	else
		prom_sample_u64(pw->b, pw->name, labels, nr, v.n);
}

static void pw_histogram(struct mwriter *w, const struct prom_label *labels, int nr,
			 const uint64_t *le, int le_scale, const uint64_t *cum, int nr_le,
			 struct mw_num sum, uint64_t count)
{
	struct prom_writer *pw = (struct prom_writer *)w;
	double bounds[MW_MAX_BUCKETS];
	int i;

	for (i = 0; i < nr_le && i < MW_MAX_BUCKETS; i++)
		bounds[i] = le[i] / mw_pow10(le_scale);
	prom_histogram(pw->b, pw->name, labels, nr, bounds, cum, i, sum.n / mw_pow10(sum.scale),
		       count);
}

static const struct mwriter_ops prom_writer_ops = {
	.family = pw_family,
	.sample = pw_sample,
	.histogram = pw_histogram,
};

int metrics_render(void *metrics, struct prom_buf *b)
{
	struct prom_writer pw = {.w = {&prom_writer_ops}, .b = b};
	int ret = metrics_write(metrics, &pw.w);

	return b->oom ? -ENOMEM : ret;
}
