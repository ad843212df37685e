/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The incident rules, pure (src/incident/rules.c): which rule fires on a sample, the
 * gate that opens, extends and closes incidents, and the onset of a rise. iospan watch
 * decides with them; incidents and the report name rules with them.
 */
#ifndef IOSPAN_INCIDENT_RULES_H
#define IOSPAN_INCIDENT_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "collect/psi.h"
#include "diskstats.h"

/* What a rule measures; disk rules first, then the system-wide pressure ones. */
enum wt_metric {
	WT_UTIL,	  /* %util */
	WT_AWAIT,	  /* max(r_await, w_await), ms */
	WT_READ_MBPS,	  /* rkB/s / 1024 */
	WT_WRITE_MBPS,	  /* wkB/s / 1024 */
	WT_IOPS,	  /* completed requests of every kind per second */
	WT_AQU,		  /* aqu-sz */
	WT_SLOW_REQUEST,  /* the slowest request on the disk in the sample (--detail), ms */
	WT_DRIVER_ERRORS, /* the driver's errors, timeouts, refusals on the disk in the sample */
	WT_PSI_SOME,	  /* /proc/pressure/io some avg10, % */
	WT_PSI_FULL,	  /* full avg10, % */
	WT_NR_METRICS,
};
#define WT_NR_DISK_METRICS WT_PSI_SOME

/* The rule's name as the option and the store spell it ("util", "read-mbps", ...). */
const char *wt_metric_name(enum wt_metric m);
/* Its unit for messages, to follow a number: "%", " ms", " MB/s", "/s", "". */
const char *wt_metric_unit(enum wt_metric m);
/* The rule named @name, or -1. */
int wt_metric_from_name(const char *name);

struct wt_rules {
	double threshold[WT_NR_METRICS]; /* 0: the rule is off */
	unsigned int hold;		 /* --for: consecutive samples over the threshold */
};

/*
 * The samples in a row @m must hold under @r: --for, but one for the slow-request rule,
 * where a single request over the threshold is the event.
 */
unsigned int wt_hold(const struct wt_rules *r, enum wt_metric m);

/* HUATUO's defaults: util 90%, await 100 ms, read 2000 MB/s, write 1500 MB/s, hold 2. */
void wt_rules_default(struct wt_rules *r);

/* How many samples in a row each rule has been over its threshold, for one disk. */
struct wt_counter {
	unsigned int over[WT_NR_METRICS];
};

/*
 * The values rules check for one sample: @m a disk's metrics (NULL: none) and @psi the
 * pressure (NULL: none). What does not apply is NaN and never fires; the slow-request
 * value is not in either (the caller sets it).
 */
void wt_values(const struct ds_metrics *m, const struct psi_io *psi, double v[WT_NR_METRICS]);

/*
 * Counts one sample into @c. Returns the rule that is over its threshold for at least
 * rules->hold samples now, or -1: the first in enum order that has just come to hold
 * (then *@fresh is true), else the first that still holds. A value under the threshold
 * (or NaN) starts that rule's count again.
 */
int wt_check(const struct wt_rules *rules, struct wt_counter *c, const double v[WT_NR_METRICS],
	     bool *fresh);

/* The incident gate: at most one incident open; capture, cooldown, per-hour cap. */
enum wt_phase { WT_IDLE, WT_CAPTURE, WT_COOLDOWN };

enum wt_action {
	WT_NONE,
	WT_OPEN,	    /* a trigger opened an incident */
	WT_EXTEND,	    /* a trigger during the capture moved its end */
	WT_CLOSE,	    /* the capture ended */
	WT_HELD_COOLDOWN,   /* a trigger during the cooldown: no incident */
	WT_HELD_HOURLY_CAP, /* a trigger past the per-hour cap: no incident */
};

/* Incidents opened within the last hour are remembered for the cap. */
#define WT_MAX_PER_HOUR 3600

struct wt_gate {
	/* configuration */
	double capture_s, cooldown_s;
	unsigned int max_per_hour; /* 0: no cap */
	/* state */
	enum wt_phase phase;
	double opened_at, capture_end, cooldown_end;
	double starts[WT_MAX_PER_HOUR]; /* ring of the start times of recent incidents */
	unsigned int nr_starts, first_start;
};

/* A capture is extended to at most this many times --capture in all. */
#define WT_MAX_EXTENSION 10

void wt_gate_init(struct wt_gate *g, double capture_s, double cooldown_s,
		  unsigned int max_per_hour);
/* An incident that opened at @start (before this watcher): it counts for the cap. */
void wt_gate_seed(struct wt_gate *g, double start);
/*
 * One sample at @now (seconds, any monotonic clock) where a rule fired or not: the
 * action to take. A capture ends when a sample comes at or after its end with no
 * trigger; a trigger during it moves the end to @now + capture_s, up to
 * WT_MAX_EXTENSION x capture_s after it opened.
 */
enum wt_action wt_gate_step(struct wt_gate *g, double now, bool fired);

/*
 * The onset in a series of one metric before a trigger (@v[0..n-1], the last one the
 * trigger's sample): the index of the first sample of the rise that led to the
 * trigger. The baseline is the lowest value of the series; the rise starts after the
 * last sample, before the trigger, that was within 10% of the way from the baseline to
 * the trigger's value. 0 when every sample is at or over @threshold: the rise began
 * before the series. -1 for an empty series.
 */
int wt_onset(const double *v, int n, double threshold);

#endif
