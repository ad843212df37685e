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

static const struct {
	const char *suffix;
	double ns;
} duration_units[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 },
};

int parse_duration_ns(const char *s, uint64_t bare_unit_ns, uint64_t *ns)
{
	double v, unit = bare_unit_ns;
	const char *end;
	size_t i, n;

	if (!s)
		return -EINVAL;
	n = scan_decimal(s, &v);
	if (!n)
		return -EINVAL;
	end = s + n;
	if (*end) {
		for (i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++)
			if (!strcmp(end, duration_units[i].suffix))
				break;
		if (i == sizeof(duration_units) / sizeof(duration_units[0]))
			return -EINVAL;
		unit = duration_units[i].ns;
	}
	v *= unit;
	if (!isfinite(v) || v > 1e18)
		return -EINVAL;
	*ns = (uint64_t)llround(v);
	return 0;
}

static const struct {
	const char *suffix;
	uint64_t bytes;
} size_units[] = {
	{"K", 1ULL << 10},   {"M", 1ULL << 20},	  {"G", 1ULL << 30},
	{"KiB", 1ULL << 10}, {"MiB", 1ULL << 20}, {"GiB", 1ULL << 30},
};

int parse_size_bytes(const char *s, uint64_t bare_unit, uint64_t *bytes)
{
	uint64_t v, unit = bare_unit;
	char *end;
	size_t i;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end) {
		for (i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++)
			if (!strcmp(end, size_units[i].suffix))
				break;
		if (i == sizeof(size_units) / sizeof(size_units[0]))
			return -EINVAL;
		unit = size_units[i].bytes;
	}
	if (unit && v > UINT64_MAX / unit)
		return -EINVAL;
	*bytes = v * unit;
	return 0;
}

int args_period(const char *opt, const char *arg, uint64_t *ns)
{
	if (parse_duration_ns(arg, 1000000000ULL, ns) || *ns < ARGS_MIN_PERIOD_NS)
		return fail_usage("invalid %s '%s': give a duration of at least 1ms (a bare "
				  "number is seconds: 5, 0.5, 250ms)",
				  opt, arg);
	return 0;
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
	uint64_t v;
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

int args_bad_option(const char *cmd, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (arg[0] == '-' && (isdigit((unsigned char)arg[1]) || arg[1] == '.'))
		return fail_usage("invalid interval or count '%s': it must be positive "
				  "(see 'iospan %s --help')",
				  arg, cmd);
	if (optopt && strchr(arg, optopt) && arg[0] == '-' && arg[1] != '-' &&
	    !strchr(arg + 1, '='))
		return fail_usage("option '-%c' is unknown or needs a value: see 'iospan %s --help'",
				  optopt, cmd);
	return fail_usage("option '%s' is unknown or needs a value: see 'iospan %s --help'", arg,
			  cmd);
}

