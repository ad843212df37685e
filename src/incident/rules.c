// SPDX-License-Identifier: GPL-2.0
/*
 * The decisions of iospan watch, as pure functions of their inputs so that the unit
 * tests can play any sequence of samples: which rule fires, whether an incident opens,
 * is extended or ends, and where the rise that led to a trigger began.
 */
#include <math.h>
#include <string.h>

#include "incident/rules.h"

static const struct {
	const char *name, *unit;
} metric_info[WT_NR_METRICS] = {
	[WT_UTIL] = {"util", "%"},
	[WT_AWAIT] = {"await", " ms"},
	[WT_READ_MBPS] = {"read-mbps", " MB/s"},
	[WT_WRITE_MBPS] = {"write-mbps", " MB/s"},
	[WT_IOPS] = {"iops", "/s"},
	[WT_AQU] = {"aqu", ""},
	[WT_SLOW_REQUEST] = {"slow-request", " ms"},
	[WT_DRIVER_ERRORS] = {"driver-errors", ""},
	[WT_PSI_SOME] = {"psi-some", "%"},
	[WT_PSI_FULL] = {"psi-full", "%"},
};

const char *wt_metric_name(enum wt_metric m)
{
	return m < WT_NR_METRICS ? metric_info[m].name : "?";
}

const char *wt_metric_unit(enum wt_metric m)
{
	return m < WT_NR_METRICS ? metric_info[m].unit : "";
}

int wt_metric_from_name(const char *name)
{
	int i;

	for (i = 0; i < WT_NR_METRICS; i++)
		if (!strcmp(metric_info[i].name, name))
			return i;
	return -1;
}

void wt_rules_default(struct wt_rules *r)
{
	memset(r, 0, sizeof(*r));
	r->threshold[WT_UTIL] = 90;
	r->threshold[WT_AWAIT] = 100;
	r->threshold[WT_READ_MBPS] = 2000;
	r->threshold[WT_WRITE_MBPS] = 1500;
	r->hold = 2;
}

void wt_values(const struct ds_metrics *m, const struct psi_io *psi, double v[WT_NR_METRICS])
{
	int i;

	for (i = 0; i < WT_NR_METRICS; i++)
		v[i] = NAN;
	if (m) {
		v[WT_UTIL] = m->util;
		v[WT_AWAIT] = fmax(m->r_await, m->w_await);
		v[WT_READ_MBPS] = m->rkB_s / 1024;
		v[WT_WRITE_MBPS] = m->wkB_s / 1024;
		v[WT_IOPS] = m->r_s + m->w_s + m->d_s + m->f_s;
		v[WT_AQU] = m->aqu_sz;
	}
	if (psi && psi->valid) {
		v[WT_PSI_SOME] = psi->some_avg10;
		v[WT_PSI_FULL] = psi->full_avg10;
	}
}

unsigned int wt_hold(const struct wt_rules *r, enum wt_metric m)
{
	/* One slow request or one error is the news: no --for. */
	return m == WT_SLOW_REQUEST || m == WT_DRIVER_ERRORS || !r->hold ? 1 : r->hold;
}

int wt_check(const struct wt_rules *rules, struct wt_counter *c, const double v[WT_NR_METRICS],
	     bool *fresh)
{
	bool reached[WT_NR_METRICS] = {};
	unsigned int hold;
	int i, fired = -1;

	for (i = 0; i < WT_NR_METRICS; i++) {
		hold = wt_hold(rules, i);
		/* NaN compares false: a value that does not apply never counts. */
		if (rules->threshold[i] > 0 && v[i] >= rules->threshold[i]) {
			if (c->over[i] < hold)
				reached[i] = ++c->over[i] == hold;
		} else {
			c->over[i] = 0;
		}
		if (c->over[i] < hold)
			continue;
		/* A rule that has just come to hold is news: it goes before older ones. */
		if (fired < 0 || (reached[i] && !reached[fired]))
			fired = i;
	}
	*fresh = fired >= 0 && reached[fired];
	return fired;
}

void wt_gate_init(struct wt_gate *g, double capture_s, double cooldown_s, unsigned int max_per_hour)
{
	memset(g, 0, sizeof(*g));
	g->capture_s = capture_s;
	g->cooldown_s = cooldown_s;
	g->max_per_hour = max_per_hour < WT_MAX_PER_HOUR ? max_per_hour : WT_MAX_PER_HOUR;
	g->phase = WT_IDLE;
}

/* Incidents opened in the hour before @now; older ones are forgotten. */
static unsigned int gate_last_hour(struct wt_gate *g, double now)
{
	while (g->nr_starts && now - g->starts[g->first_start] >= 3600) {
		g->first_start = (g->first_start + 1) % WT_MAX_PER_HOUR;
		g->nr_starts--;
	}
	return g->nr_starts;
}

static void gate_remember(struct wt_gate *g, double now)
{
	if (g->nr_starts == WT_MAX_PER_HOUR) {
		g->first_start = (g->first_start + 1) % WT_MAX_PER_HOUR;
		g->nr_starts--;
	}
	g->starts[(g->first_start + g->nr_starts) % WT_MAX_PER_HOUR] = now;
	g->nr_starts++;
}

void wt_gate_seed(struct wt_gate *g, double start)
{
	gate_remember(g, start);
}

enum wt_action wt_gate_step(struct wt_gate *g, double now, bool fired)
{
	double limit;

	if (g->phase == WT_CAPTURE) {
		if (fired) {
			limit = g->opened_at + WT_MAX_EXTENSION * g->capture_s;
			if (g->capture_end < limit) {
				g->capture_end = fmin(now + g->capture_s, limit);
				return WT_EXTEND;
			}
		}
		if (now < g->capture_end)
			return WT_NONE;
		g->phase = WT_COOLDOWN;
		g->cooldown_end = now + g->cooldown_s;
		return WT_CLOSE;
	}
	if (g->phase == WT_COOLDOWN && now >= g->cooldown_end)
		g->phase = WT_IDLE;
	if (!fired)
		return WT_NONE;
	if (g->phase == WT_COOLDOWN)
		return WT_HELD_COOLDOWN;
	if (g->max_per_hour && gate_last_hour(g, now) >= g->max_per_hour)
		return WT_HELD_HOURLY_CAP;
	gate_remember(g, now);
	g->phase = WT_CAPTURE;
	g->opened_at = now;
	g->capture_end = now + g->capture_s;
	return WT_OPEN;
}

int wt_onset(const double *v, int n, double threshold)
{
	double base, quiet;
	int i;

	if (n <= 0)
		return -1;
	base = v[0];
	for (i = 1; i < n; i++)
		if (v[i] < base)
			base = v[i];
	if (base >= threshold)
		return 0; /* over the threshold all along: the rise is older than the window */
	quiet = base + (v[n - 1] - base) * 0.1;
	for (i = n - 2; i >= 0; i--)
		if (v[i] <= quiet)
			return i + 1;
	return 0;
}
