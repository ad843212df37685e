// SPDX-License-Identifier: GPL-2.0
/*
 * watch.conf: "key = value" lines whose keys are iospan watch's long options. watch
 * applies every key; incidents (and every reader of the store) takes the database it
 * names. One table of the keys, watch's options, serves both.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "array.h"
#include "err.h"
#include "filters.h"
#include "incident/conf.h"
#include "units.h"

const struct option watch_conf_opts[] = {
	{ "disk", required_argument, NULL, 'd' },
	{ "util", required_argument, NULL, WATCH_OPT_RULE + WT_UTIL },
	{ "await", required_argument, NULL, WATCH_OPT_RULE + WT_AWAIT },
	{ "read-mbps", required_argument, NULL, WATCH_OPT_RULE + WT_READ_MBPS },
	{ "write-mbps", required_argument, NULL, WATCH_OPT_RULE + WT_WRITE_MBPS },
	{ "iops", required_argument, NULL, WATCH_OPT_RULE + WT_IOPS },
	{ "aqu", required_argument, NULL, WATCH_OPT_RULE + WT_AQU },
	{ "psi-some", required_argument, NULL, WATCH_OPT_RULE + WT_PSI_SOME },
	{ "psi-full", required_argument, NULL, WATCH_OPT_RULE + WT_PSI_FULL },
	{ "slow-request", required_argument, NULL, WATCH_OPT_RULE + WT_SLOW_REQUEST },
	{ "driver-errors", required_argument, NULL, WATCH_OPT_RULE + WT_DRIVER_ERRORS },
	{ "for", required_argument, NULL, WATCH_OPT_FOR },
	{ "interval", required_argument, NULL, WATCH_OPT_INTERVAL },
	{ "pre", required_argument, NULL, WATCH_OPT_PRE },
	{ "capture", required_argument, NULL, WATCH_OPT_CAPTURE },
	{ "cooldown", required_argument, NULL, WATCH_OPT_COOLDOWN },
	{ "max-per-hour", required_argument, NULL, WATCH_OPT_MAX_PER_HOUR },
	{ "db", required_argument, NULL, WATCH_OPT_DB },
	{ "config", required_argument, NULL, WATCH_OPT_CONFIG },
	{ "keep", required_argument, NULL, WATCH_OPT_KEEP },
	{ "max-age", required_argument, NULL, WATCH_OPT_MAX_AGE },
	{ "max-db-size", required_argument, NULL, WATCH_OPT_MAX_DB_SIZE },
	{ "duration", required_argument, NULL, WATCH_OPT_DURATION },
	{ "bpf", required_argument, NULL, WATCH_OPT_BPF },
	{ "no-bpf", no_argument, NULL, WATCH_OPT_NO_BPF },
	{ "capture-threshold", required_argument, NULL, WATCH_OPT_CAPTURE_THRESHOLD },
	{ "stall-threshold", required_argument, NULL, WATCH_OPT_STALL_THRESHOLD },
	{ "detail", required_argument, NULL, WATCH_OPT_DETAIL },
	{ "stalls", required_argument, NULL, WATCH_OPT_STALLS },
	{ "syscall-hooks", required_argument, NULL, WATCH_OPT_SYSCALL_HOOKS },
	{ "listen", required_argument, NULL, WATCH_OPT_LISTEN },
	{ "metrics-max-cgroups", required_argument, NULL, WATCH_OPT_METRICS_MAX_CGROUPS },
	{ "web-config", required_argument, NULL, WATCH_OPT_WEB_CONFIG },
	{ "otlp-endpoint", required_argument, NULL, WATCH_OPT_OTLP_ENDPOINT },
	{ "otlp-metrics", required_argument, NULL, WATCH_OPT_OTLP_METRICS },
	{ "otlp-metrics-interval", required_argument, NULL, WATCH_OPT_OTLP_METRICS_INTERVAL },
	{ "capture-now", no_argument, NULL, WATCH_OPT_CAPTURE_NOW },
	FILTER_LONG_TARGET,
	COMMON_LONG_OPTS,
	{ 0 },
};

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}


int conf_read(const char *path, bool given, char **text, conf_apply_fn apply, void *arg)
{
	const struct option *opt;
	char where[PATH_MAX + 32], *line, *next, *key, *value, *eq;
	unsigned int line_no = 0;
	struct stat sb;
	size_t n;
	FILE *f;
	int ret;

	*text = NULL;
	f = fopen(path, "r");
	if (!f) {
		if (!given && errno == ENOENT)
			return 0; /* the default file is optional */
		return fail_usage("cannot read config file '%s': %s", path, strerror(errno));
	}
	if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode) || sb.st_size > 1 << 20) {
		fclose(f);
		return fail_usage("config file '%s' is not a regular file under 1 MiB", path);
	}
	*text = calloc(1, sb.st_size + 1);
	if (!*text) {
		fclose(f);
		return fail(-ENOMEM, "out of memory");
	}
	n = fread(*text, 1, sb.st_size, f);
	fclose(f);
	(*text)[n] = '\0';
	if (memchr(*text, '\0', n))
		return fail_usage("config file '%s' holds binary data", path);
	for (line = *text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line_no++;
		snprintf(where, sizeof(where), "%s line %u: ", path, line_no);
		line = trim(line);
		if (!*line || *line == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq)
			return fail_usage(
				"%sexpected 'key = value' (keys are watch's long options, "
				"such as util, db, disk)",
				where);
		*eq = '\0';
		key = trim(line);
		value = trim(eq + 1);
		opt = TABLE_FIND(watch_conf_opts, key);
		if (!opt || opt->has_arg != required_argument || !strcmp(key, "config"))
			return fail_usage("%sunknown key '%s' (keys are watch's long options, such "
					  "as util, db, disk)",
					  where, key);
		ret = apply(arg, opt->val, key, value, where);
		if (ret)
			return ret;
	}
	return 0;
}

static int take_db(void *arg, int opt, const char *key, const char *value, const char *where)
{
	const char **db = arg;

	if (opt != WATCH_OPT_DB)
		return 0; /* watch's */
	return args_path(where, "--db", value, db);
}

int conf_reader_db(const char *db, const char *config, char **config_db, const char **path)
{
	int ret;

	/* A --config given is read (and checked) even with --db. */
	if (!db || config) {
		ret = conf_db_path(config, config_db);
		if (ret)
			return ret;
	}
	*path = db ?: *config_db ?: WATCH_DEFAULT_DB;
	return 0;
}

int conf_db_path(const char *path, char **db_path)
{
	const char *db = NULL;
	char *text = NULL;
	int ret;

	*db_path = NULL;
	ret = conf_read(path ?: WATCH_DEFAULT_CONFIG, path != NULL, &text, take_db, &db);
	if (!ret && db) {
		*db_path = strdup(db);
		if (!*db_path)
			ret = fail(-ENOMEM, "out of memory");
	}
	free(text);
	return ret;
}

/* A duration in seconds; @zero_ok: 0 is allowed. A "d" suffix counts days. */
int conf_parse_seconds(const char *where, const char *opt, const char *arg, bool zero_ok,
		       double *out)
{
	size_t len = strlen(arg);
	uint64_t ns;
	double days;

	if (len > 1 && arg[len - 1] == 'd' && isdigit((unsigned char)arg[len - 2])) {
		if (scan_decimal(arg, &days) == len - 1 && days <= 365 * 100) {
			*out = days * 86400;
			return 0;
		}
	} else if (!parse_duration_ns(arg, 1000000000ULL, &ns) &&
		   (ns >= ARGS_MIN_PERIOD_NS || (zero_ok && ns == 0))) {
		*out = ns / 1e9;
		return 0;
	}
	return fail_usage("%sinvalid --%s '%s': give a duration%s (a bare number is seconds: "
			  "60, 1.5m, 2h%s)",
			  where, opt, arg, zero_ok ? ", 0 or more" : " of at least 1ms",
			  strcmp(opt, "max-age") ? "" : ", 30d");
}


int conf_parse_retention(const char *where, const char *opt, const char *arg,
			 struct store_retention *r)
{
	if (!strcmp(opt, "keep"))
		return args_number_in(where, "--keep", arg, 0, 1000000000,
				      "a number of incidents, 0 for any number", &r->keep);
	if (!strcmp(opt, "max-age"))
		return conf_parse_seconds(where, opt, arg, true, &r->max_age_s);
	if (parse_size_bytes(arg, 1, &r->max_db_size))
		return fail_usage("%sinvalid --max-db-size '%s': give a size such as 512M or 2G "
				  "(0: no limit)",
				  where, arg);
	return 0;
}
