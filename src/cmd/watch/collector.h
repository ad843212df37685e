/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The seam BPF collectors plug into iospan watch: top's per-process and per-file
 * attribution (collect_top.c), and to come trace's slow requests and stalls. A collector keeps its own
 * pre-trigger window in memory (as watch keeps the iostat one) and writes rows into
 * the processes, files, slow_requests and stalls tables (docs/iospan-watch.md) only
 * while an incident is open.
 *
 * Every sample, after the iostat sample is taken, watch calls ->sample() of each
 * collector. When an incident is open, a transaction is open on the database around
 * the calls, so a collector's rows of that sample land together with the iostat ones,
 * or not at all.
 */
#ifndef IOSPAN_WATCH_COLLECTOR_H
#define IOSPAN_WATCH_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

struct sqlite3;
struct watch_sample;

/* What a collector learns each sample. */
struct watch_tick {
	const struct watch_sample *sample; /* the iostat sample just taken */
	double pre_s;			   /* the pre-trigger window to keep, seconds */
	int64_t incident_id;		   /* the open incident, 0 if none */
	/*
	 * The incident opened at this sample: write the pre-trigger window kept so far
	 * (phase 'pre'), then this sample (phase 'capture').
	 */
	bool opened;
	bool closing;	    /* this is the incident's last sample */
	struct sqlite3 *db; /* with a transaction open when incident_id != 0; else NULL */
};

struct watch_collector_ops {
	const char *name;
	/* Load and attach; 0, or a negative errno and watch goes on without it (logged). */
	int (*open)(void **priv);
	/*
	 * Read the kernel's maps, keep the window, write rows when an incident is open.
	 * A negative errno is logged and the sample stays stored without this collector's
	 * rows (the transaction is still committed).
	 */
	int (*sample)(void *priv, const struct watch_tick *tick);
	void (*close)(void *priv);
};

/* The collectors watch runs, in order; the list ends with a NULL name. */
extern const struct watch_collector_ops *const watch_collectors[];

/* collect_top.c */
extern const struct watch_collector_ops watch_collector_top;

#endif
