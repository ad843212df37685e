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
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* Options every command takes, in its getopt_long table. */
enum common_opt {
	OPT_JSON = 0x1000,
	OPT_DURATION,	 /* struct args_run */
	OPT_BUFFER_SIZE, /* struct args_run */
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

/*
 * Numbers are decimal, as in sysstat's tools: no sign, hex or exponent ("0x10" and
 * "1e-9" are refused, not read as 16 and 0).
 */
/* Decimal unsigned integer, whole string, no overflow. */
int parse_u64(const char *s, uint64_t *out);
/* Like parse_u64, within [min, max]. */
int parse_u64_range(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/*
 * Duration: a decimal number with an optional unit (ns, us, ms, s, m, h); a bare
 * number is in @bare_unit_ns (1e9 for seconds, 1e6 for milliseconds).
 */
int parse_duration_ns(const char *s, uint64_t bare_unit_ns, uint64_t *ns);
/*
 * Size: an integer with an optional unit (K, M, G or KiB, MiB, GiB: powers of 1024); a
 * bare number is in @bare_unit bytes.
 */
int parse_size_bytes(const char *s, uint64_t bare_unit, uint64_t *bytes);

/*
 * Shortest interval or duration of a report: the clocks are precise to a microsecond,
 * but a window shorter than a millisecond measures only the cost of reporting.
 */
#define ARGS_MIN_PERIOD_NS 1000000ULL

/*
 * The options below report their own usage error, naming @opt, and return -EINVAL.
 * An interval or duration (bare number: seconds), at least ARGS_MIN_PERIOD_NS.
 */
int args_period(const char *opt, const char *arg, uint64_t *ns);
/*
 * A duration (bare number: seconds) from @min_ns to @max_ns, which @range says in words
 * ("from 10ms to 1h"); the error starts with @where (a config file's line, or "").
 */
int args_duration_in(const char *where, const char *opt, const char *arg, uint64_t min_ns,
		     uint64_t max_ns, const char *range, uint64_t *ns);
/*
 * A whole number from @min to @max, which @range says in words after "give" ("1 or
 * more"); the error starts with @where (a config file's line, or "").
 */
int args_number_in(const char *where, const char *opt, const char *arg, uint64_t min, uint64_t max,
		   const char *range, uint64_t *v);
/* A file path: any but the empty one, kept in @path. */
int args_path(const char *where, const char *opt, const char *arg, const char **path);
/* A constant's value as a string, for a @range ("from 0 to " ARGS_STR(MAX)). */
#define ARGS_STR(x)  ARGS_STR_(x)
#define ARGS_STR_(x) #x
/* A latency threshold (bare number: milliseconds); 0 is allowed. */
int args_threshold(const char *opt, const char *arg, uint64_t *ns);
/*
 * --buffer-size: a BPF ring buffer of 1 MiB to 1 GiB (bare number: MiB), rounded up to
 * the power of two the kernel wants.
 */
int args_buffer_size(const char *arg, uint64_t *bytes);

/*
 * `[interval [count]]`: interval as args_period(), count a positive integer. Missing
 * values leave the outputs untouched.
 */
int parse_interval_count(int argc, char **argv, uint64_t *interval_ns, uint64_t *count);

struct disk;
/* A filter option given a second time: refused, as the filter holds one value. */
int args_once(const char *opt, bool *seen);

/* SIGINT/SIGTERM set stop_requested; periodic commands finish their report and exit. */
extern volatile sig_atomic_t stop_requested;
void install_stop_handlers(void);
/* Sleeps until CLOCK_MONOTONIC @deadline_ns or a stop request; true if stopped. */
bool sleep_until_ns(uint64_t deadline_ns);
uint64_t now_ns(int clock_id);
/*
 * CLOCK_REALTIME - CLOCK_MONOTONIC in ns: what turns the kernel's monotonic stamps
 * (bpf_ktime_get_ns()) into wall-clock times. Its realtime read is taken between two
 * monotonic ones, and of a few tries the one they bracket most tightly counts: a
 * preemption between two reads would shift every time shown by its length.
 */
int64_t mono_to_real_ns(void);

/* Reports the option getopt_long just refused ('?' or ':') as a usage error. */
int args_bad_option(const char *cmd, char **argv);

/*
 * Options of the commands that trace for a while into a ring buffer, taken by
 * args_next() with one meaning and one error everywhere: --duration (as
 * args_period()) and --buffer-size (as args_buffer_size()) into what the command
 * points at, noting that they were given. A NULL pointer: the command has no such
 * option (its long_opts do not list it either).
 */
struct args_run {
	uint64_t *duration_ns;
	uint64_t *rb_bytes;
	bool duration_set, rb_set;
};
/* clang-format off */
#define DURATION_LONG_OPT    {"duration", required_argument, NULL, OPT_DURATION}
#define BUFFER_SIZE_LONG_OPT {"buffer-size", required_argument, NULL, OPT_BUFFER_SIZE}
/* clang-format on */

/* One command's options, for args_next(). */
struct args_spec {
	const char *cmd;		/* named in usage errors: "top" */
	const char *usage;		/* what -h/--help prints */
	const char *short_opts;		/* getopt_long()'s, COMMON_SHORT_OPTS included */
	const struct option *long_opts; /* COMMON_LONG_OPTS included */
	/*
	 * Options several commands share (the target filter), taken before the command's
	 * own: returns 0 (taken), 1 (not one of them) or -errno (said). NULL: none.
	 */
	int (*shared)(const char *cmd, int opt, const char *arg, void *ctx);
	void *ctx;
	struct args_run *run; /* NULL: none of its options */
	int *longindex;	      /* getopt_long()'s, where the command wants it */
	bool options_only;    /* an argument after the options is refused */
};

#define ARGS_HELP 1
/*
 * getopt_long() over @spec: the common options (--json, -v) and the shared ones are
 * taken here. Returns the next of the command's own options (> ARGS_HELP), 0 after
 * the last (optind: the first argument), ARGS_HELP once -h/--help printed the usage,
 * or -errno of bad usage (said).
 */
int args_next(const struct args_spec *spec, int argc, char **argv);
#endif
