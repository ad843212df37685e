// SPDX-License-Identifier: GPL-2.0
/*
 * iospan watch's options. The config file (default /etc/iospan/watch.conf, if present)
 * holds "key = value" lines whose keys are the long options' names; the command line
 * is read after it and wins (its first -d replaces the file's disks).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "err.h"
#include "units.h"
#include "watch.h"

enum {
	OPT_FOR = 0x2000,
	OPT_INTERVAL,
	OPT_PRE,
	OPT_CAPTURE,
	OPT_COOLDOWN,
	OPT_MAX_PER_HOUR,
	OPT_DB,
	OPT_CONFIG,
	OPT_KEEP,
	OPT_MAX_AGE,
	OPT_MAX_DB_SIZE,
	OPT_DURATION,
	OPT_BPF,
	OPT_NO_BPF,
	OPT_CAPTURE_THRESHOLD,
	OPT_STALL_THRESHOLD,
	OPT_DETAIL,
	OPT_STALLS,
	OPT_RULE, /* + enum wt_metric */
};

static const struct option watch_long_opts[] = {
	{ "disk", required_argument, NULL, 'd' },
	{ "util", required_argument, NULL, OPT_RULE + WT_UTIL },
	{ "await", required_argument, NULL, OPT_RULE + WT_AWAIT },
	{ "read-mbps", required_argument, NULL, OPT_RULE + WT_READ_MBPS },
	{ "write-mbps", required_argument, NULL, OPT_RULE + WT_WRITE_MBPS },
	{ "iops", required_argument, NULL, OPT_RULE + WT_IOPS },
	{ "aqu", required_argument, NULL, OPT_RULE + WT_AQU },
	{ "psi-some", required_argument, NULL, OPT_RULE + WT_PSI_SOME },
	{ "psi-full", required_argument, NULL, OPT_RULE + WT_PSI_FULL },
	{ "slow-request", required_argument, NULL, OPT_RULE + WT_SLOW_REQUEST },
	{ "for", required_argument, NULL, OPT_FOR },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "pre", required_argument, NULL, OPT_PRE },
	{ "capture", required_argument, NULL, OPT_CAPTURE },
	{ "cooldown", required_argument, NULL, OPT_COOLDOWN },
	{ "max-per-hour", required_argument, NULL, OPT_MAX_PER_HOUR },
	{ "db", required_argument, NULL, OPT_DB },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "keep", required_argument, NULL, OPT_KEEP },
	{ "max-age", required_argument, NULL, OPT_MAX_AGE },
	{ "max-db-size", required_argument, NULL, OPT_MAX_DB_SIZE },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "bpf", required_argument, NULL, OPT_BPF },
	{ "no-bpf", no_argument, NULL, OPT_NO_BPF },
	{ "capture-threshold", required_argument, NULL, OPT_CAPTURE_THRESHOLD },
	{ "stall-threshold", required_argument, NULL, OPT_STALL_THRESHOLD },
	{ "detail", required_argument, NULL, OPT_DETAIL },
	{ "stalls", required_argument, NULL, OPT_STALLS },
	COMMON_LONG_OPTS,
	{ 0 },
};

static const char watch_usage[] =
	"Usage: iospan watch [OPTIONS]\n"
	"\n"
	"A flight recorder for I/O incidents. Samples /proc/diskstats and /proc/pressure/io\n"
	"every interval, keeps the last --pre seconds in memory, and when a rule holds for\n"
	"--for samples on a disk, stores an incident: the trigger, the samples before it and\n"
	"--capture seconds after it, in an SQLite database. Read it with `iospan incidents`.\n"
	"One line per event on stderr (start, trigger, incident stored, errors).\n"
	"\n"
	"Rules (0 turns one off; defaults as HUATUO's):\n"
	"      --util PCT         %util at or over PCT (default 90)\n"
	"      --await MS         r_await or w_await at or over MS (default 100)\n"
	"      --read-mbps MB     read MB/s (MiB, as iostat -m) (default 2000)\n"
	"      --write-mbps MB    written MB/s (default 1500)\n"
	"      --iops N           completed requests per second (default off)\n"
	"      --aqu N            average queue size, aqu-sz (default off)\n"
	"      --psi-some PCT     /proc/pressure/io some avg10, system-wide (default off)\n"
	"      --psi-full PCT     full avg10 (default off)\n"
	"      --slow-request D   one request slower than D on a disk (200ms, 1s; a bare\n"
	"                         number is ms), timed as --detail says; fires on one\n"
	"                         sample, whatever --for says; needs BPF (default off)\n"
	"      --for N            samples in a row a rule must hold (default 2)\n"
	"Watching:\n"
	"  -d, --disk DISK        watch this disk (sda, /dev/loop0, 7:0); repeatable;\n"
	"                         default every whole disk\n"
	"      --interval D       sampling interval (default 1s)\n"
	"      --pre D            pre-trigger window kept in memory (default 60s)\n"
	"      --capture D        capture after a trigger; a trigger during it extends it\n"
	"                         (default 40s)\n"
	"      --cooldown D       no new incident this long after one ends (default 300s)\n"
	"      --max-per-hour N   at most N incidents opened per hour, 0: no cap (default 10)\n"
	"      --duration D       stop after D (default: until SIGINT/SIGTERM)\n"
	"      --bpf on|off       the BPF collectors (top's processes, files and stalls,\n"
	"                         trace's slow requests) (default on; one that cannot load\n"
	"                         is logged and watch goes on without it)\n"
	"      --no-bpf           --bpf off: iostat and pressure only\n"
	"      --capture-threshold D  slow requests kept, with their stages: those slower\n"
	"                         than D (a bare number is ms; default 100ms, 0: none)\n"
	"      --detail block|full  how slow requests are timed: block, from top's\n"
	"                         completion program (queue and device time, as iostat's\n"
	"                         await; cheap); full, by trace's collector, from the\n"
	"                         syscall (page cache, throttle, off-CPU; costs more)\n"
	"                         (default block)\n"
	"      --stall-threshold D  tasks blocked on I/O longer than D kept, with their\n"
	"                         kernel stacks (a bare number is ms; default 100ms, 0: none)\n"
	"      --stalls capture|always  when stalls are timed: during captures only (no\n"
	"                         cost otherwise), or always, for the pre-trigger window too\n"
	"                         (costs more than watching alone: see iospan-watch(8))\n"
	"                         (default capture)\n"
	"Store:\n"
	"      --db PATH          the database (default " WATCH_DEFAULT_DB ")\n"
	"      --keep N           keep the newest N incidents, 0: any number (default 500)\n"
	"      --max-age D        delete incidents older than D (30d, 12h), 0: never\n"
	"                         (default 30d)\n"
	"      --max-db-size SIZE delete the oldest incidents past SIZE (K, M, G), 0: no\n"
	"                         limit (default 1G)\n"
	"      --config FILE      options as 'key = value' lines (default\n"
	"                         " WATCH_DEFAULT_CONFIG " if present); the command line wins\n"
	"      --json             events as JSON lines on stdout instead of text on stderr\n"
	"  -v, --verbose          (accepted; watch logs every event anyway)\n"
	"  -h, --help             this help\n"
	"Durations are decimal with a unit (ns, us, ms, s, m, h; d for --max-age); a bare\n"
	"number is seconds.\n"
	"\n"
	"Examples:\n"
	"  iospan watch                          every disk, default rules, default store\n"
	"  iospan watch -d sda --await 50 --util 0   only sda: await over 50 ms, no util rule\n"
	"  iospan incidents list                 what it caught\n"
	"\n"
	"Exit codes: 0 ok (stopped), 1 runtime failure, 2 bad usage. Manual: iospan-watch(8).\n";

/* A request's duration: "200ms", "1s", a bare number is ms; 0 is allowed (off). */
static int parse_request_ns(const char *where, const char *opt, const char *arg, uint64_t *out)
{
	if (parse_duration_ns(arg, 1000000ULL, out))
		return fail_usage("%sinvalid --%s '%s': give a duration (200ms, 1s; a bare "
				  "number is ms; 0 turns it off)",
				  where, opt, arg);
	return 0;
}

/* A rule's threshold: a decimal number, 0 (off) or more; percentages at most 100. */
static int parse_rule(enum wt_metric m, const char *where, const char *arg, double *out)
{
	bool pct = m == WT_UTIL || m == WT_PSI_SOME || m == WT_PSI_FULL;
	uint64_t ns;
	double v;
	size_t n;

	if (m == WT_SLOW_REQUEST) {
		if (parse_request_ns(where, wt_metric_name(m), arg, &ns))
			return -EINVAL;
		*out = ns / 1e6; /* its value and threshold are ms, as await's */
		return 0;
	}
	n = scan_decimal(arg, &v);

	if (!n || arg[n] || (pct && v > 100))
		return fail_usage("%sinvalid --%s '%s': give a decimal number%s (0 turns the "
				  "rule off)",
				  where, wt_metric_name(m), arg, pct ? " from 0 to 100" : "");
	*out = v;
	return 0;
}

/* A duration in seconds; @zero_ok: 0 is allowed. A "d" suffix counts days. */
static int parse_seconds_opt(const char *where, const char *opt, const char *arg, bool zero_ok,
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

int watch_parse_retention(const char *where, const char *opt, const char *arg,
			  struct store_retention *r)
{
	if (!strcmp(opt, "keep")) {
		if (parse_u64_range(arg, 0, 1000000000, &r->keep))
			return fail_usage("%sinvalid --keep '%s': give a number of incidents, 0 "
					  "for any number",
					  where, arg);
		return 0;
	}
	if (!strcmp(opt, "max-age"))
		return parse_seconds_opt(where, opt, arg, true, &r->max_age_s);
	if (parse_size_bytes(arg, 1, &r->max_db_size))
		return fail_usage("%sinvalid --max-db-size '%s': give a size such as 512M or 2G "
				  "(0: no limit)",
				  where, arg);
	return 0;
}

/* Applies one option from the command line (@where "") or the config file. */
static int watch_apply(struct watch_opts *o, int opt, const char *name, const char *arg,
		       const char *where, bool cmdline)
{
	uint64_t v;
	int ret;

	if (opt >= OPT_RULE && opt < OPT_RULE + WT_NR_METRICS)
		return parse_rule(opt - OPT_RULE, where, arg, &o->rules.threshold[opt - OPT_RULE]);
	switch (opt) {
	case 'd':
		if (cmdline && !o->disks_from_cmdline) {
			o->nr_disks = 0; /* the command line's disks replace the file's */
			o->disks_from_cmdline = true;
		}
		if (o->nr_disks == WATCH_MAX_DISKS)
			return fail_usage("%stoo many disks (at most %d)", where, WATCH_MAX_DISKS);
		ret = disk_spec_parse(arg, &o->disks[o->nr_disks]);
		if (ret == -ENOTBLK)
			return fail_usage("%s'%s' is not a block device", where, arg);
		if (ret)
			return fail_usage("%sunknown disk '%s': name a device listed in "
					  "/proc/diskstats (sda, /dev/loop0, 7:0)",
					  where, arg);
		o->disk_text[o->nr_disks++] = arg;
		return 0;
	case OPT_FOR:
		if (parse_u64_range(arg, 1, 3600, &v))
			return fail_usage(
				"%sinvalid --for '%s': give a number of samples from 1 to "
				"3600",
				where, arg);
		o->rules.hold = v;
		return 0;
	case OPT_INTERVAL:
		if (parse_duration_ns(arg, 1000000000ULL, &v) || v < 10 * ARGS_MIN_PERIOD_NS ||
		    v > 3600000000000ULL)
			return fail_usage("%sinvalid --interval '%s': give a duration from 10ms to "
					  "1h (a bare number is seconds: 1, 0.5, 250ms)",
					  where, arg);
		o->interval_ns = v;
		return 0;
	case OPT_PRE:
		return parse_seconds_opt(where, name, arg, true, &o->pre_s);
	case OPT_CAPTURE:
		return parse_seconds_opt(where, name, arg, false, &o->capture_s);
	case OPT_COOLDOWN:
		return parse_seconds_opt(where, name, arg, true, &o->cooldown_s);
	case OPT_DURATION:
		if (parse_duration_ns(arg, 1000000000ULL, &v) || v < ARGS_MIN_PERIOD_NS)
			return fail_usage("%sinvalid --duration '%s': give a duration of at least "
					  "1ms",
					  where, arg);
		o->duration_ns = v;
		return 0;
	case OPT_BPF:
		if (strcmp(arg, "on") && strcmp(arg, "off"))
			return fail_usage("%sinvalid --bpf '%s': give on or off", where, arg);
		o->no_bpf = !strcmp(arg, "off");
		return 0;
	case OPT_NO_BPF:
		o->no_bpf = true;
		return 0;
	case OPT_CAPTURE_THRESHOLD:
		return parse_request_ns(where, name, arg, &o->capture_threshold_ns);
	case OPT_STALL_THRESHOLD:
		return parse_request_ns(where, name, arg, &o->stall_threshold_ns);
	case OPT_DETAIL:
		if (strcmp(arg, "block") && strcmp(arg, "full"))
			return fail_usage("%sinvalid --detail '%s': give block or full", where, arg);
		o->full_detail = !strcmp(arg, "full");
		return 0;
	case OPT_STALLS:
		if (strcmp(arg, "capture") && strcmp(arg, "always"))
			return fail_usage("%sinvalid --stalls '%s': give capture or always", where,
					  arg);
		o->stalls_always = !strcmp(arg, "always");
		return 0;
	case OPT_MAX_PER_HOUR:
		if (parse_u64_range(arg, 0, WT_MAX_PER_HOUR, &v))
			return fail_usage("%sinvalid --max-per-hour '%s': give a number from 0 (no "
					  "cap) to %d",
					  where, arg, WT_MAX_PER_HOUR);
		o->max_per_hour = v;
		return 0;
	case OPT_DB:
		if (!*arg)
			return fail_usage("%sinvalid --db '': give a file path", where);
		o->db_path = arg;
		return 0;
	case OPT_KEEP:
	case OPT_MAX_AGE:
	case OPT_MAX_DB_SIZE:
		return watch_parse_retention(where, name, arg, &o->retention);
	default:
		return fail_usage("%sunknown option '%s'", where, name);
	}
}

static const struct option *find_long(const char *name)
{
	const struct option *opt;

	for (opt = watch_long_opts; opt->name; opt++)
		if (!strcmp(opt->name, name))
			return opt;
	return NULL;
}

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

/*
 * Reads the config file into o->config_text and applies each "key = value" line, or
 * only @only_key's (for incidents, which wants the database): the others are checked as
 * keys, their values left to watch.
 */
static int watch_read_config(struct watch_opts *o, const char *path, bool given,
			     const char *only_key)
{
	const struct option *opt;
	char where[PATH_MAX + 32], *line, *next, *key, *value, *eq;
	unsigned int line_no = 0;
	struct stat sb;
	size_t n;
	FILE *f;
	int ret;

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
	o->config_text = calloc(1, sb.st_size + 1);
	if (!o->config_text) {
		fclose(f);
		return fail(-ENOMEM, "out of memory");
	}
	n = fread(o->config_text, 1, sb.st_size, f);
	fclose(f);
	o->config_text[n] = '\0';
	if (memchr(o->config_text, '\0', n))
		return fail_usage("config file '%s' holds binary data", path);
	for (line = o->config_text; line; line = next) {
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
		opt = find_long(key);
		if (!opt || opt->has_arg != required_argument || !strcmp(key, "config"))
			return fail_usage("%sunknown key '%s' (keys are watch's long options, such "
					  "as util, db, disk)",
					  where, key);
		if (only_key && strcmp(key, only_key))
			continue;
		ret = watch_apply(o, opt->val, key, value, where, false);
		if (ret)
			return ret;
	}
	return 0;
}

/* --config must be known before anything else is read: the file comes first. */
static const char *find_config_arg(int argc, char **argv, bool *given)
{
	int i;

	*given = false;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			*given = true;
			return argv[i + 1];
		}
		if (!strncmp(argv[i], "--config=", 9)) {
			*given = true;
			return argv[i] + 9;
		}
	}
	return WATCH_DEFAULT_CONFIG;
}

int watch_parse(int argc, char **argv, struct watch_opts *o)
{
	const char *name;
	bool given;
	int opt, idx, ret;

	memset(o, 0, sizeof(*o));
	wt_rules_default(&o->rules);
	o->interval_ns = 1000000000ULL;
	o->pre_s = 60;
	o->capture_s = 40;
	o->cooldown_s = 300;
	o->max_per_hour = 10;
	o->retention.keep = 500;
	o->retention.max_age_s = 30 * 86400;
	o->retention.max_db_size = 1ULL << 30;
	o->db_path = WATCH_DEFAULT_DB;
	/*
	 * Slow requests at block detail cost a comparison at each completion; trace's
	 * collector and top's sched_switch program cost more than biolatency together
	 * (bench/README.md), which a watcher with no incident open must not: asked for, or
	 * (stalls) attached during captures only.
	 */
	o->capture_threshold_ns = 100000000; /* 100 ms */
	o->full_detail = false;
	o->stall_threshold_ns = 100000000;
	o->stalls_always = false;

	/* --help needs no config file. */
	for (idx = 1; idx < argc && strcmp(argv[idx], "--"); idx++) {
		if (!strcmp(argv[idx], "-h") || !strcmp(argv[idx], "--help")) {
			fputs(watch_usage, stdout);
			return 1;
		}
	}
	o->config_path = find_config_arg(argc, argv, &given);
	ret = watch_read_config(o, o->config_path, given, NULL);
	if (ret)
		return ret;
	if (!o->config_text)
		o->config_path = NULL;

	while ((opt = getopt_long(argc, argv, ":d:" COMMON_SHORT_OPTS, watch_long_opts, &idx)) !=
	       -1) {
		if (args_common_opt(opt))
			continue;
		if (opt == '?' || opt == ':')
			return args_bad_option("watch", argv);
		if (opt == 'h') {
			fputs(watch_usage, stdout);
			return 1;
		}
		if (opt == OPT_CONFIG)
			continue; /* read above */
		name = opt == 'd' ? "disk" : watch_long_opts[idx].name;
		ret = watch_apply(o, opt, name, optarg, "", true);
		if (ret)
			return ret;
	}
	if (optind < argc)
		return fail_usage("unexpected argument '%s': watch takes options only (see 'iospan "
				  "watch --help')",
				  argv[optind]);
	if (o->capture_s * 1e9 < o->interval_ns)
		return fail_usage("--capture (%.3g s) is shorter than --interval (%.3g s)",
				  o->capture_s, o->interval_ns / 1e9);
	/* Said now, not found out when no incident ever opens. */
	if (o->rules.threshold[WT_SLOW_REQUEST] > 0 && o->no_bpf)
		return fail_usage("--slow-request needs a BPF collector: it cannot be used with "
				  "--bpf off");
	for (idx = 0; idx < WT_NR_METRICS; idx++)
		if (o->rules.threshold[idx] > 0)
			return 0;
	return fail_usage("every rule is off: give at least one of --util, --await, --read-mbps, "
			  "--write-mbps, --iops, --aqu, --slow-request, --psi-some, --psi-full");
}

uint64_t watch_slow_keep_ns(const struct watch_opts *o)
{
	double rule_ms = o->rules.threshold[WT_SLOW_REQUEST];
	uint64_t keep = o->capture_threshold_ns;

	if (rule_ms > 0 && (!keep || rule_ms * 1e6 < keep))
		keep = rule_ms * 1e6;
	return keep;
}

int watch_config_db(const char *path, char **db_path)
{
	struct watch_opts *o = calloc(1, sizeof(*o));
	int ret;

	*db_path = NULL;
	if (!o)
		return fail(-ENOMEM, "out of memory");
	ret = watch_read_config(o, path ?: WATCH_DEFAULT_CONFIG, path != NULL, "db");
	if (!ret && o->db_path) {
		*db_path = strdup(o->db_path);
		if (!*db_path)
			ret = fail(-ENOMEM, "out of memory");
	}
	watch_opts_free(o);
	free(o);
	return ret;
}

void watch_opts_free(struct watch_opts *o)
{
	free(o->config_text);
	o->config_text = NULL;
}
