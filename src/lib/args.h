/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Argument parsing shared by every command: strict numbers, durations, the
 * `[interval [count]]` positionals, and the options every command accepts.
 * Parsers return 0 or -EINVAL and print nothing: callers report through fail_usage().
 */
#ifndef IOSPAN_ARGS_H
#define IOSPAN_ARGS_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Options every command takes, in its getopt_long table. */
enum common_opt {
	OPT_JSON = 0x1000,
	OPT_HELP = 'h',
	OPT_VERBOSE = 'v',
};
#define COMMON_LONG_OPTS                                                                           \
	{ "json", no_argument, NULL, OPT_JSON }, { "help", no_argument, NULL, OPT_HELP },          \
	{                                                                                          \
		"verbose", no_argument, NULL, OPT_VERBOSE                                          \
	}
#define COMMON_SHORT_OPTS "hv"

struct global_opts {
	bool json;
	bool verbose;
};
extern struct global_opts gopts;

/* Handles a common option; returns true if @opt was one. */
bool args_common_opt(int opt);

/* Decimal unsigned integer, whole string, no sign, no overflow. */
int parse_u64(const char *s, uint64_t *out);
/* Like parse_u64, within [min, max]. */
int parse_u64_range(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/*
 * Duration: a positive number with an optional unit (ns, us, ms, s, m, h); a bare
 * number is in @bare_unit_ns (1e9 for seconds, 1e6 for milliseconds).
 */
int parse_duration_ns(const char *s, uint64_t bare_unit_ns, uint64_t *ns);
/*
 * Size: an integer with an optional unit (K, M, G or KiB, MiB, GiB: powers of 1024); a
 * bare number is in @bare_unit bytes.
 */
int parse_size_bytes(const char *s, uint64_t bare_unit, uint64_t *bytes);

/*
 * `[interval [count]]`: interval is a duration in seconds (> 0), count a positive
 * integer. Missing values leave the outputs untouched. Reports usage errors itself
 * and returns -EINVAL.
 */
int parse_interval_count(int argc, char **argv, uint64_t *interval_ns, uint64_t *count);

/* SIGINT/SIGTERM set stop_requested; periodic commands finish their report and exit. */
extern volatile sig_atomic_t stop_requested;
void install_stop_handlers(void);
/* Sleeps until CLOCK_MONOTONIC @deadline_ns or a stop request; true if stopped. */
bool sleep_until_ns(uint64_t deadline_ns);
uint64_t now_ns(int clock_id);



/* Reports the option getopt_long just refused ('?' or ':') as a usage error. */
int args_bad_option(const char *cmd, char **argv);
#endif
