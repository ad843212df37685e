/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan watch: a flight recorder for I/O incidents (iospan incidents reads them).
 *
 *   options.c    options (the config file's keys: src/incident/conf.h)
 *   window.c     the rolling pre-trigger window, in memory
 *   watch.c      the loop: sample (src/collect/sampler.h), check the rules
 *                (src/incident/rules.h), open / extend / close incidents in the store
 *                (src/incident/store.h), run the recorders
 *   collector.h  the seam where the recorders of top's and trace's collectors
 *                (collect_top.c, collect_trace.c) plug in
 */
#ifndef IOSPAN_WATCH_H
#define IOSPAN_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "collect/sampler.h"
#include "disks.h"
#include "diskstats.h"
#include "export/http.h"
#include "export/otlp.h"
#include "incident/conf.h"
#include "incident/rules.h"
#include "incident/store.h"
#include "filters.h"
#include "syscalls.h"

#define WATCH_MAX_DISKS SAMPLER_MAX_DISKS

/* ------------------------------------------------------------------ window.c */

/* The last samples, oldest first, in a ring. */
struct watch_window {
	struct io_sample *slots;
	unsigned int cap, nr, head; /* head: index of the oldest */
};

int watch_window_init(struct watch_window *w, unsigned int cap);
void watch_window_free(struct watch_window *w);
void watch_window_push(struct watch_window *w, const struct io_sample *s);
/* The @i-th oldest sample (0 <= i < nr). */
const struct io_sample *watch_window_at(const struct watch_window *w, unsigned int i);
void watch_window_clear(struct watch_window *w);

/* ------------------------------------------------------------------ options.c */

/* --syscall-hooks */
enum watch_syscalls {
	WATCH_SYSCALLS_NONE,	 /* top's collector follows none (the default) */
	WATCH_SYSCALLS_RAW,	 /* the sys_enter/sys_exit pair */
	WATCH_SYSCALLS_PER_CALL, /* a classic tracepoint per syscall and direction */
};

struct watch_opts {
	struct disk_spec disks[WATCH_MAX_DISKS];
	const char *disk_text[WATCH_MAX_DISKS];
	int nr_disks;
	bool disks_from_cmdline;
	struct wt_rules rules;
	uint64_t interval_ns;
	double pre_s, capture_s, cooldown_s;
	unsigned int max_per_hour;
	struct store_retention retention;
	uint64_t duration_ns;	       /* 0: until stopped (tests and trials) */
	bool no_bpf;		       /* --bpf off: no BPF collector, iostat and pressure only */
	bool capture_now;	       /* --capture-now: one incident from the first sample */
	/* -p, --tid, --comm, --cgroup, --file, --dir: whose I/O the collectors record */
	struct filter_opts filter;
	char target[512];	       /* those options as given ("--comm mysqld"), "" if none */
	uint64_t capture_threshold_ns; /* slow requests kept over it; 0: none (but --slow-request's) */
	bool full_detail;	       /* --detail full: trace's collector times slow requests */
	uint64_t stall_threshold_ns;   /* stalls kept over it; 0: none traced */
	bool stalls_always;	       /* --stalls always: timed outside captures too */
	enum watch_syscalls syscalls;  /* --syscall-hooks */
	bool have_listen;	       /* --listen: the metrics endpoint is on */
	int metrics_max_cgroups;       /* cgroups with series of their own */
	struct http_listen listen;
	const char *web_config_path; /* --web-config: TLS and users of the endpoint */
	const char *otlp_endpoint;   /* --otlp-endpoint, NULL if not given */
	struct otlp_config otlp;     /* it and the OTEL_ variables */
	bool otlp_on;
	bool otlp_metrics;		   /* --otlp-metrics on: the metrics pushed too */
	uint64_t otlp_metrics_interval_ns; /* --otlp-metrics-interval, 0 if not given */
	bool otlp_metrics_interval_given;  /* on the command line (a config's is a default) */
	const char *db_path;
	const char *config_path;
	char *config_text; /* the config file's contents, which option values point into */
};

/*
 * Slow requests are kept from this q2c (or total, --detail full) on: the lower of
 * --capture-threshold and --slow-request, of those set; 0: none.
 */
uint64_t watch_slow_keep_ns(const struct watch_opts *o);
/*
 * How the collectors follow syscalls (--syscall-hooks): the raw pair (the exit does not
 * wait for the kernel to let go of each hook), or a classic tracepoint each (the
 * syscalls no collector follows cost less that way, syscalls.h). Trace's collector
 * cannot do without them: with none, it takes the raw pair.
 */
enum syscall_attach watch_syscall_attach(const struct watch_opts *o);
/*
 * Whether top's collector follows the file syscalls (byte-exact FS figures); without,
 * FS bytes are counted from the page cache (iospan-top(8), --no-syscalls), and no
 * syscall runs a program: the default, for the cost of an always-on watcher.
 */
bool watch_top_follows_syscalls(const struct watch_opts *o);
/* Parses the config file then the command line; 1: --help printed, else 0 or error. */
int watch_parse(int argc, char **argv, struct watch_opts *o);
void watch_opts_free(struct watch_opts *o);

/* ------------------------------------------------------------------ watch.c */

/* Logs one event line on stderr: "iospan watch: <time> <message>". */
void watch_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
