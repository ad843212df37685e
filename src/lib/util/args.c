// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "err.h"
#include "units.h"

struct global_opts gopts;
volatile sig_atomic_t stop_requested;

bool args_common_opt(int opt)
{
	switch (opt) {
	case OPT_JSON:
		gopts.json = true;
		err_init("iospan", true);
		return true;
	case OPT_VERBOSE:
		gopts.verbose = true;
		err_set_verbose(true);
		return true;
	default:
		return false;
	}
}

int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_u64_range(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (parse_u64(s, &v) || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A number's unit: its suffix and what one of it is worth (ns, bytes). */
struct unit {
	const char *suffix;
	uint64_t value;
};

static const struct unit duration_units[] = {
	{"ns", 1},
	{"us", 1000},
	{"ms", 1000000},
	{"s", 1000000000ULL},
	{"m", 60000000000ULL},
	{"h", 3600000000000ULL},
	{NULL, 0},
};

static const struct unit size_units[] = {
	{"K", 1ULL << 10},   {"M", 1ULL << 20},	  {"G", 1ULL << 30}, {"KiB", 1ULL << 10},
	{"MiB", 1ULL << 20}, {"GiB", 1ULL << 30}, {NULL, 0},
};

/* The worth of unit @suffix of @units ("": @bare), 0 if it is none of them. */
static uint64_t unit_value(const struct unit *units, const char *suffix, uint64_t bare)
{
	if (!*suffix)
		return bare;
	for (; units->suffix; units++)
		if (!strcmp(suffix, units->suffix))
			return units->value;
	return 0;
}

int parse_duration_ns(const char *s, uint64_t bare_unit_ns, uint64_t *ns)
{
	uint64_t unit;
	size_t n;
	double v;

	if (!s)
		return -EINVAL;
	n = scan_decimal(s, &v);
	unit = n ? unit_value(duration_units, s + n, bare_unit_ns) : 0;
	if (!unit)
		return -EINVAL;
	v *= unit;
	if (!isfinite(v) || v > 1e18)
		return -EINVAL;
	*ns = (uint64_t)llround(v);
	return 0;
}

int parse_size_bytes(const char *s, uint64_t bare_unit, uint64_t *bytes)
{
	uint64_t v, unit;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	unit = errno ? 0 : unit_value(size_units, end, bare_unit);
	if (!unit || v > UINT64_MAX / unit)
		return -EINVAL;
	*bytes = v * unit;
	return 0;
}

int args_duration_in(const char *where, const char *opt, const char *arg, uint64_t min_ns,
		     uint64_t max_ns, const char *range, uint64_t *ns)
{
	uint64_t v;

	if (parse_duration_ns(arg, 1000000000ULL, &v) || v < min_ns || v > max_ns)
		return fail_usage("%sinvalid %s '%s': give a duration %s (a bare number is "
				  "seconds: 5, 0.5, 250ms)",
				  where, opt, arg, range);
	*ns = v;
	return 0;
}

int args_number_in(const char *where, const char *opt, const char *arg, uint64_t min, uint64_t max,
		   const char *range, uint64_t *v)
{
	if (parse_u64_range(arg, min, max, v))
		return fail_usage("%sinvalid %s '%s': give %s", where, opt, arg, range);
	return 0;
}

int args_path(const char *where, const char *opt, const char *arg, const char **path)
{
	if (!*arg)
		return fail_usage("%sinvalid %s '': give a file path", where, opt);
	*path = arg;
	return 0;
}

int args_period(const char *opt, const char *arg, uint64_t *ns)
{
	return args_duration_in("", opt, arg, ARGS_MIN_PERIOD_NS, UINT64_MAX, "of at least 1ms",
				ns);
}

int args_threshold(const char *opt, const char *arg, uint64_t *ns)
{
	if (parse_duration_ns(arg, 1000000ULL, ns))
		return fail_usage("invalid %s '%s': give a duration such as 10ms, 500us or 0 "
				  "(a bare number is ms)",
				  opt, arg);
	return 0;
}

int parse_interval_count(int argc, char **argv, uint64_t *interval_ns, uint64_t *count)
{
	uint64_t v = 0;
	int ret;

	if (argc > 2)
		return fail_usage("unexpected argument '%s': expected [interval [count]]", argv[2]);
	if (argc >= 1) {
		ret = args_period("interval", argv[0], &v);
		if (ret)
			return ret;
		*interval_ns = v;
	}
	if (argc == 2) {
		if (parse_u64(argv[1], &v) || v == 0)
			return fail_usage("invalid count '%s': give a positive integer", argv[1]);
		*count = v;
	}
	return 0;
}

int args_once(const char *opt, bool *seen)
{
	if (*seen)
		return fail_usage("%s given twice: the filter takes one value, give it once", opt);
	*seen = true;
	return 0;
}

static void on_stop(int sig)
{
	stop_requested = 1;
}

void install_stop_handlers(void)
{
	/*
	 * SA_RESTART: a write to a full stdout pipe interrupted by the signal would fail and
	 * stdio would drop that line. Sleeps and polls (clock_nanosleep, epoll_wait) still
	 * return at once on a signal, whatever SA_RESTART says, so the loops notice the stop.
	 */
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

uint64_t now_ns(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int64_t mono_to_real_ns(void)
{
	uint64_t m0, r, m1, width = UINT64_MAX;
	int64_t best = 0;
	int i;

	for (i = 0; i < 8; i++) {
		m0 = now_ns(CLOCK_MONOTONIC);
		r = now_ns(CLOCK_REALTIME);
		m1 = now_ns(CLOCK_MONOTONIC);
		if (m1 - m0 < width) {
			width = m1 - m0;
			best = (int64_t)(r - (m0 + width / 2));
		}
	}
	return best;
}

bool sleep_until_ns(uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = deadline_ns / 1000000000ULL,
		.tv_nsec = deadline_ns % 1000000000ULL,
	};

	while (!stop_requested) {
		int ret = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);

		if (ret == 0)
			return false;
		if (ret != EINTR)
			return stop_requested;
	}
	return true;
}

int args_buffer_size(const char *arg, uint64_t *bytes)
{
	uint64_t v;

	if (parse_size_bytes(arg, 1ULL << 20, &v) || v < (1ULL << 20) || v > (1ULL << 30))
		return fail_usage("invalid --buffer-size '%s': give a size from 1M to 1G (e.g. "
				  "64M; a bare number is MiB)",
				  arg);
	while (v & (v - 1))
		v += v & -v;
	*bytes = v;
	return 0;
}

int args_bad_option(const char *cmd, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (arg[0] == '-' && (isdigit((unsigned char)arg[1]) || arg[1] == '.'))
		return fail_usage("invalid interval or count '%s': it must be positive "
				  "(see 'iospan %s --help')",
				  arg, cmd);
	if (optopt && strchr(arg, optopt) && arg[0] == '-' && arg[1] != '-' &&
	    !strchr(arg + 1, '='))
		return fail_usage(
			"option '-%c' is unknown or needs a value: see 'iospan %s --help'", optopt,
			cmd);
	return fail_usage("option '%s' is unknown or needs a value: see 'iospan %s --help'", arg,
			  cmd);
}

/* Takes @opt if it is one of struct args_run's: 0 (taken), 1 (not one) or -errno. */
static int args_run_opt(struct args_run *run, int opt, const char *arg)
{
	if (opt == OPT_DURATION && run->duration_ns) {
		run->duration_set = true;
		return args_period("--duration", arg, run->duration_ns);
	}
	if (opt == OPT_BUFFER_SIZE && run->rb_bytes) {
		run->rb_set = true;
		return args_buffer_size(arg, run->rb_bytes);
	}
	return 1;
}

int args_next(const struct args_spec *spec, int argc, char **argv)
{
	int opt, ret;

	while ((opt = getopt_long(argc, argv, spec->short_opts, spec->long_opts,
				  spec->longindex)) != -1) {
		if (args_common_opt(opt))
			continue;
		if (opt == OPT_HELP) {
			fputs(spec->usage, stdout);
			return ARGS_HELP;
		}
		if (opt == '?' || opt == ':')
			return args_bad_option(spec->cmd, argv);
		ret = spec->run ? args_run_opt(spec->run, opt, optarg) : 1;
		if (ret > 0)
			ret = spec->shared ? spec->shared(spec->cmd, opt, optarg, spec->ctx) : 1;
		if (ret < 0)
			return ret;
		if (ret > 0)
			return opt;
	}
	if (spec->options_only && optind < argc)
		return fail_usage("unexpected argument '%s': iospan %s takes options only (see "
				  "'iospan %s --help')",
				  argv[optind], spec->cmd, spec->cmd);
	return 0;
}
