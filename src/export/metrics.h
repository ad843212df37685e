/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What iospan watch exports at GET /metrics (docs/iospan-watch.md, "Metrics"): each
 * disk's counters from /proc/diskstats and the I/O pressure, read when scraped (so
 * increase() over any window is the kernel's own), and watch's own state (samples,
 * incidents), which its loop notes here. The loop and the endpoint's thread (or the
 * OTLP pusher's, --otlp-metrics) share only that state, under a lock held for a copy.
 * Every family is written once, through a writer (export/mwriter.h): the Prometheus
 * text here, OTLP's JSON in otlp.c.
 */
#ifndef IOSPAN_EXPORT_METRICS_H
#define IOSPAN_EXPORT_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "collect/sampler.h"
#include "disks.h"
#include "cgroups.h"
#include "export/mwriter.h"
#include "export/otlp.h"
#include "incident/rules.h"
#include "top_abi.h"

struct bpfcmd;
struct counter_def;
struct prom_buf;

/* Incidents counted per disk and rule: at most this many pairs (the rest: disk "other"). */
#define METRICS_MAX_INCIDENT_KEYS 256

struct metrics_incidents {
	char disk[DISK_NAME_LEN]; /* "" for a system-wide rule (pressure) */
	enum wt_metric rule;
	uint64_t count;
};

/* What the endpoint tells of a BPF collector: its programs, hooks and losses. */
#define METRICS_MAX_COLLECTORS 4
#define METRICS_MAX_PROGS      64
#define METRICS_MAX_HOOKS      64
#define METRICS_MAX_LOSSES     64

struct metrics_collector {
	char name[16];
	int nr_progs;
	struct {
		char name[48];	       /* libbpf's (the kernel keeps 15 characters) */
		uint64_t run_ns, runs; /* counted while kernel.bpf_stats_enabled is 1 */
	} progs[METRICS_MAX_PROGS];
	int nr_hooks;
	struct {
		char name[48];
		const char *mode; /* attach_mode_name(), "none": attached in no way */
	} hooks[METRICS_MAX_HOOKS];
	int nr_losses;
	struct {
		const char *reason; /* a counter's name (its table outlives the collector) */
		uint64_t count;	    /* since the collector opened */
	} losses[METRICS_MAX_LOSSES];
};

/*
 * Fills @out for collector @name: the programs of @cmd loaded now with their run time
 * and count, its hooks with their attach modes, and of its @nr counters @totals (since
 * it opened) those @defs call losses.
 */
void metrics_collector_fill(struct metrics_collector *out, const char *name,
			    const struct bpfcmd *cmd, const struct counter_def *defs,
			    const uint64_t *totals, size_t nr);

/* A disk's latency and size histograms for one op (top's collector), since the start. */
#define METRICS_MAX_DHISTS TOP_DH_MAX_KEYS
struct metrics_dhist {
	unsigned int major, minor;
	enum top_dh_op op;
	struct top_dhist h;
};

/* A disk's driver counters since top's collector opened (driver_abi.h). */
struct metrics_ddrv {
	unsigned int major, minor;
	struct drv_disk_stats s;
};

/*
 * What the processes of one cgroup did on one disk (top's collector): a sample's
 * changes for metrics_note_cgroups(), and the totals the endpoint keeps. Requests and
 * their time are those whose queue time is known; writeback bytes are the part of the
 * written bytes that kernel threads wrote back for the cgroup's processes.
 */
#define METRICS_CGROUP_LEN	256
#define METRICS_DEFAULT_CGROUPS 100
#define METRICS_MAX_CGROUPS	2000
enum metrics_cg_op { MCG_READ, MCG_WRITE, MCG_FLUSH, MCG_NR_OPS };

struct metrics_cgroup_io {
	uint64_t cgid;			 /* METRICS_CGID_OTHER: those past the bound */
	char cgroup[METRICS_CGROUP_LEN]; /* relative to the cgroup2 mount, "unknown", "other" */
	char container[CONTAINER_ID_LEN + 1];
	char disk[DISK_NAME_LEN];
	uint64_t disk_bytes[2], fs_bytes[2], writeback_bytes; /* read, write */
	uint64_t requests[MCG_NR_OPS], request_ns[MCG_NR_OPS];
	double recent; /* bytes a sample, smoothed: the busiest keep their series */
	uint64_t note; /* the last metrics_note_cgroups() that changed it */
};
#define METRICS_CGID_OTHER   UINT64_MAX
#define METRICS_CGID_UNKNOWN (UINT64_MAX - 1) /* a cgroup whose path is not known */

/* A disk's time counters (32-bit milliseconds in /proc/diskstats) kept counting past 2^32. */
struct metrics_disk {
	struct ds_dev last;
	uint64_t ticks[DS_NR_FIELDS];
	bool seen; /* in the last scrape */
};

struct metrics {
	/* The scrape's side (a scrape or a push, one at a time: @render_lock). */
	pthread_mutex_t render_lock;
	struct io_sampler sampler;
	struct io_sample *sample;
	struct metrics_disk disks[SAMPLER_MAX_DISKS];
	int nr_disks;
	/* The loop's side, under @lock. */
	pthread_mutex_t lock;
	uint64_t samples;
	double last_sample_epoch_s;
	bool incident_open;
	double last_incident_epoch_s; /* 0: none since the start */
	struct metrics_incidents incidents[METRICS_MAX_INCIDENT_KEYS];
	int nr_incident_keys;
	struct metrics_collector collectors[METRICS_MAX_COLLECTORS];
	int nr_collectors;
	struct metrics_dhist dhists[METRICS_MAX_DHISTS];
	int nr_dhists;
	/* Per cgroup and disk (at most max_cgroups cgroups, then "other" per disk). */
	struct metrics_cgroup_io *cgroups;
	int nr_cgroups, cap_cgroups, max_cgroups;
	uint64_t cgroup_notes;
	bool have_cgroups;
	char cgroup2[256]; /* the cgroup2 mount: io.pressure, and whether a cgroup is gone */
	bool have_dhists;  /* top's collector gave them (it may have none yet) */
	struct metrics_ddrv ddrvs[SAMPLER_MAX_DISKS * 2];
	int nr_ddrvs;
	bool have_ddrvs, ddrv_hooked; /* top gave them; a driver's hook is attached */
	struct otlp_stats otlp; /* OTLP export's figures, with --otlp-endpoint */
	bool have_otlp;
};

/*
 * For watch's disks (@disks, or every whole disk when @nr is 0), and at most
 * @max_cgroups cgroups with series of their own. 0 or -ENOMEM.
 */
int metrics_init(struct metrics *m, const struct disk_spec *disks, int nr, int max_cgroups);
void metrics_free(struct metrics *m);

/* The loop's notes: a sample taken, an incident opened (its trigger's disk and rule), closed. */
void metrics_note_sample(struct metrics *m, double epoch_s);
void metrics_note_incident(struct metrics *m, const char *disk, enum wt_metric rule,
			   double epoch_s);
void metrics_note_incident_closed(struct metrics *m);
/* A collector's figures (a copy, kept by its name); a NULL @c with @name: it closed. */
void metrics_note_collector(struct metrics *m, const char *name, const struct metrics_collector *c);

/*
 * A sample's changes per cgroup and disk (@nr of them), added to the totals: a cgroup
 * new to them gets its series while fewer than max_cgroups have some, or when it moved
 * more than the least busy of them (whose series then go); otherwise it adds to
 * cgroup "other" of its disk. A cgroup whose directory is gone loses its series.
 */
void metrics_note_cgroups(struct metrics *m, const struct metrics_cgroup_io *d, int nr);

/* The disks' histograms now (@nr of them, at most METRICS_MAX_DHISTS). */
void metrics_note_disk_hists(struct metrics *m, const struct metrics_dhist *h, int nr);
/*
 * Top's driver counters of each disk (@nr of them), and whether any driver hook is
 * attached (else only the requeues are there).
 */
void metrics_note_disk_drivers(struct metrics *m, const struct metrics_ddrv *d, int nr,
			       bool hooked);

/* OTLP export's figures now. */
void metrics_note_otlp(struct metrics *m, const struct otlp_stats *s);

/*
 * Every family, written to @w (the Prometheus text, an OTLP push): reads
 * /proc/diskstats and the pressure now. 0 or -errno (what could be read is written).
 */
int metrics_write(struct metrics *m, struct mwriter *w);

/* The exposition (an http_render_fn): metrics_write() as Prometheus text. */
int metrics_render(void *metrics, struct prom_buf *out);

#endif
