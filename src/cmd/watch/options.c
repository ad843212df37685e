// SPDX-License-Identifier: GPL-2.0
/*
 * iospan watch's options. The config file (default /etc/iospan/watch.conf, if present;
 * src/incident/conf.h) holds "key = value" lines whose keys are the long options'
 * names; the command line is read after it and wins (its first -d replaces the file's
 * disks).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "array.h"
#include "err.h"
#include "units.h"
#include "export/metrics.h"
#include "watch.h"

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
	"      --driver-errors N  N errors, timeouts or refused commands of the disk's\n"
	"                         driver in one sample (NVMe, SCSI); fires on one sample;\n"
	"                         needs BPF (default off)\n"
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
	"  -p, --pid PID, --tid TID, --comm NAME, --cgroup PATH, --file PATH, --dir PATH\n"
	"                         the collectors record only this target's processes,\n"
	"                         files, slow requests and stalls; the rules, samples and\n"
	"                         histograms stay the whole disks' (each at most once)\n"
	"      --capture-now      store one incident now: opened at the first sample (rule\n"
	"                         \"capture\", no rule checked, nothing before), --capture\n"
	"                         long; then stop (iospan report --duration records so)\n"
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
	"      --syscall-hooks none|raw|per-call  whether and how top's collector follows\n"
	"                         the file syscalls: none, FS bytes counted from the page\n"
	"                         cache in whole pages (no syscall runs a program: the\n"
	"                         cheapest); raw, byte-exact at the sys_enter/sys_exit pair\n"
	"                         (every syscall runs one); per-call, at a classic\n"
	"                         tracepoint each (about 1 s to let go at exit). --detail\n"
	"                         full takes the raw pair with none (default none)\n"
	"Metrics:\n"
	"      --listen [ADDR:]PORT  serve them at http://ADDR:PORT/metrics for Prometheus\n"
	"                         (a port alone: on loopback; :PORT on every address)\n"
	"      --metrics-max-cgroups N  cgroups with series of their own (the busiest; the\n"
	"                         rest add to cgroup \"other\"), 0 to 2000 (default 100)\n"
	"      --otlp-endpoint URL  send slow requests (traces, their stages as child\n"
	"                         spans) and incidents (log records) to an OpenTelemetry\n"
	"                         collector, OTLP/HTTP JSON (http://collector:4318); the\n"
	"                         OTEL_EXPORTER_OTLP_* variables are read too\n"
	"      --otlp-metrics on|off  push the metrics of /metrics there too (no --listen\n"
	"                         needed), OTLP JSON to /v1/metrics (default off)\n"
	"      --otlp-metrics-interval D  their push period (default\n"
	"                         OTEL_METRIC_EXPORT_INTERVAL ms, else 60s)\n"
	"      --web-config FILE  HTTPS, client certificates and basic authentication for\n"
	"                         --listen, in the web configuration file of Prometheus'\n"
	"                         exporters (tls_server_config, basic_auth_users)\n"
	"Store:\n"
	"      --db PATH          the database (default " WATCH_DEFAULT_DB ")\n"
	"      --keep N           keep the newest N incidents, 0: any number (default 500)\n"
	"      --max-age D        delete incidents older than D (30d, 12h), 0: never\n"
	"                         (default 30d)\n"
	"      --max-db-size SIZE delete the oldest incidents past SIZE (K, M, G), 0: no\n"
	"                         limit (default 1G)\n"
	"      --config FILE      options as 'key = value' lines (default\n"
	"                         " WATCH_DEFAULT_CONFIG " if present; '': none); the command\n"
	"                         line wins\n"
	"      --json             events as JSON lines on stdout instead of text on stderr\n"
	"  -v, --verbose          (accepted; watch logs every event anyway)\n"
	"  -h, --help             this help\n"
	"Durations are decimal with a unit (ns, us, ms, s, m, h; d for --max-age); a bare\n"
	"number is seconds.\n"
	"\n"
	"Examples:\n"
	"  iospan watch                          every disk, default rules, default store\n"
	"  iospan watch -d sda --await 50 --util 0   only sda: await over 50 ms, no util rule\n"
	"  iospan watch --listen 9464            and the metrics at 127.0.0.1:9464/metrics\n"
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

/* An option of two values, @a or @b: *@is_b whether it is @b. */
static int parse_pair(const char *where, const char *opt, const char *arg, const char *a,
		      const char *b, bool *is_b)
{
	if (strcmp(arg, a) && strcmp(arg, b))
		return fail_usage("%sinvalid --%s '%s': give %s or %s", where, opt, arg, a, b);
	*is_b = !strcmp(arg, b);
	return 0;
}

/* The values of --syscall-hooks. */
static const struct {
	const char *name;
	enum watch_syscalls how;
} syscall_hooks[] = {
	{"none", WATCH_SYSCALLS_NONE},
	{"raw", WATCH_SYSCALLS_RAW},
	{"per-call", WATCH_SYSCALLS_PER_CALL},
	{NULL},
};

/* Applies one option from the command line (@where "") or the config file. */
static int watch_apply(struct watch_opts *o, int opt, const char *name, const char *arg,
		       const char *where, bool cmdline)
{
	uint64_t v = 0;
	bool off;
	int ret;

	if (opt >= WATCH_OPT_RULE && opt < WATCH_OPT_RULE + WT_NR_METRICS)
		return parse_rule(opt - WATCH_OPT_RULE, where, arg, &o->rules.threshold[opt - WATCH_OPT_RULE]);
	switch (opt) {
	case 'd':
		if (cmdline && !o->disks_from_cmdline) {
			o->nr_disks = 0; /* the command line's disks replace the file's */
			o->disks_from_cmdline = true;
		}
		return disk_spec_add(where, arg, o->disks, o->disk_text, &o->nr_disks,
				     WATCH_MAX_DISKS);
	case WATCH_OPT_FOR:
		ret = args_number_in(where, "--for", arg, 1, 3600,
				     "a number of samples from 1 to 3600", &v);
		if (ret)
			return ret;
		o->rules.hold = v;
		return 0;
	case WATCH_OPT_INTERVAL:
		return args_duration_in(where, "--interval", arg, 10 * ARGS_MIN_PERIOD_NS,
					3600 * NSEC_PER_SEC, "from 10ms to 1h", &o->interval_ns);
	case WATCH_OPT_PRE:
		return conf_parse_seconds(where, name, arg, true, &o->pre_s);
	case WATCH_OPT_CAPTURE:
		return conf_parse_seconds(where, name, arg, false, &o->capture_s);
	case WATCH_OPT_COOLDOWN:
		return conf_parse_seconds(where, name, arg, true, &o->cooldown_s);
	case WATCH_OPT_DURATION:
		return args_duration_in(where, "--duration", arg, ARGS_MIN_PERIOD_NS, UINT64_MAX,
					"of at least 1ms", &o->duration_ns);
	case WATCH_OPT_BPF:
		return parse_pair(where, name, arg, "on", "off", &o->no_bpf);
	case WATCH_OPT_NO_BPF:
		o->no_bpf = true;
		return 0;
	case 'p':
	case FILTER_OPT_TID:
	case FILTER_OPT_COMM:
	case FILTER_OPT_CGROUP:
	case FILTER_OPT_FILE:
	case FILTER_OPT_DIR: {
		size_t n = strlen(o->target);

		ret = filter_parse_opt("watch", opt, arg, &o->filter);
		if (ret)
			return ret;
		snprintf(o->target + n, sizeof(o->target) - n, "%s--%s %s", n ? " " : "",
			 opt == 'p' ? "pid" : name, arg);
		return 0;
	}
	case WATCH_OPT_CAPTURE_NOW:
		if (!cmdline)
			return fail_usage(
				"%s--capture-now is for the command line: a watcher started "
				"from this file would store one incident and stop",
				where);
		o->capture_now = true;
		return 0;
	case WATCH_OPT_CAPTURE_THRESHOLD:
		return parse_request_ns(where, name, arg, &o->capture_threshold_ns);
	case WATCH_OPT_STALL_THRESHOLD:
		return parse_request_ns(where, name, arg, &o->stall_threshold_ns);
	case WATCH_OPT_DETAIL:
		return parse_pair(where, name, arg, "block", "full", &o->full_detail);
	case WATCH_OPT_STALLS:
		return parse_pair(where, name, arg, "capture", "always", &o->stalls_always);
	case WATCH_OPT_LISTEN:
		o->have_listen = true;
		return http_listen_parse(where, "--listen", arg, &o->listen);
	case WATCH_OPT_OTLP_ENDPOINT:
		o->otlp_endpoint = arg;
		return 0;
	case WATCH_OPT_OTLP_METRICS:
		ret = parse_pair(where, name, arg, "on", "off", &off);
		o->otlp_metrics = !ret && !off;
		return ret;
	case WATCH_OPT_OTLP_METRICS_INTERVAL:
		o->otlp_metrics_interval_given = cmdline;
		return args_duration_in(where, "--otlp-metrics-interval", arg, 100000000ULL,
					86400 * NSEC_PER_SEC, "from 100ms to 24h",
					&o->otlp_metrics_interval_ns);
	case WATCH_OPT_WEB_CONFIG:
		return args_path(where, "--web-config", arg, &o->web_config_path);
	case WATCH_OPT_SYSCALL_HOOKS: {
		__typeof__(&syscall_hooks[0]) h = TABLE_FIND(syscall_hooks, arg);

		if (!h)
			return fail_usage("%sinvalid --%s '%s': give none, raw or per-call", where,
					  name, arg);
		o->syscalls = h->how;
		return 0;
	}
	case WATCH_OPT_METRICS_MAX_CGROUPS:
		ret = args_number_in(where, "--metrics-max-cgroups", arg, 0, METRICS_MAX_CGROUPS,
				     "a number from 0 to " ARGS_STR(METRICS_MAX_CGROUPS), &v);
		o->metrics_max_cgroups = v; /* on an error, nothing that is used */
		return ret;
	case WATCH_OPT_DB:
		return args_path(where, "--db", arg, &o->db_path);
	case WATCH_OPT_KEEP:
	case WATCH_OPT_MAX_AGE:
	case WATCH_OPT_MAX_DB_SIZE:
		return conf_parse_retention(where, name, arg, &o->retention);
	case WATCH_OPT_MAX_PER_HOUR:
		ret = args_number_in(where, "--max-per-hour", arg, 0, WT_MAX_PER_HOUR,
				     "a number from 0 (no cap) to " ARGS_STR(WT_MAX_PER_HOUR), &v);
		o->max_per_hour = v; /* on an error, nothing that is used */
		return ret;
	default:
		return fail_usage("%sunknown option '%s'", where, name);
	}
}

/* A line of the config file: applied as its option, the command line coming after. */
static int apply_conf_line(void *arg, int opt, const char *key, const char *value,
			   const char *where)
{
	return watch_apply(arg, opt, key, value, where, false);
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
	int opt, idx, ret;
	const struct args_spec spec = {
		.cmd = "watch",
		.usage = watch_usage,
		.short_opts = ":d:p:" COMMON_SHORT_OPTS,
		.long_opts = watch_conf_opts,
		.longindex = &idx,
		.options_only = true,
	};
	const char *name;
	bool given;

	memset(o, 0, sizeof(*o));
	wt_rules_default(&o->rules);
	o->interval_ns = 1000000000ULL;
	o->pre_s = 60;
	o->capture_s = 40;
	o->cooldown_s = 300;
	o->max_per_hour = 10;
	o->metrics_max_cgroups = METRICS_DEFAULT_CGROUPS;
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
	/* --config '': no file at all (iospan report's captures: the defaults only). */
	ret = *o->config_path ?
		      conf_read(o->config_path, given, &o->config_text, apply_conf_line, o) :
		      0;
	if (ret)
		return ret;
	if (!o->config_text)
		o->config_path = NULL;

	while ((opt = args_next(&spec, argc, argv)) > ARGS_HELP) {
		if (opt == WATCH_OPT_CONFIG)
			continue; /* read above */
		name = opt == 'd' ? "disk" : opt == 'p' ? "pid" : watch_conf_opts[idx].name;
		ret = watch_apply(o, opt, name, optarg, "", true);
		if (ret)
			return ret;
	}
	if (opt)
		return opt;
	if (o->capture_s * 1e9 < o->interval_ns)
		return fail_usage("--capture (%.3g s) is shorter than --interval (%.3g s)",
				  o->capture_s, o->interval_ns / 1e9);
	ret = otlp_config_parse(o->otlp_endpoint, o->otlp_metrics, &o->otlp, &o->otlp_on);
	if (ret)
		return ret;
	if (o->otlp_metrics_interval_given && !o->otlp_metrics)
		return fail_usage("--otlp-metrics-interval sets the period of --otlp-metrics on: "
				  "give that too");
	if (o->otlp_metrics && !o->otlp_on)
		return fail_usage("--otlp-metrics pushes the metrics to the OTLP receiver: give "
				  "--otlp-endpoint URL (or OTEL_EXPORTER_OTLP_ENDPOINT)");
	if (o->otlp_metrics) {
		ret = otlp_config_metrics(&o->otlp, o->otlp_metrics_interval_ns / 1000000);
		if (ret)
			return ret;
	}
	if (o->web_config_path && !o->have_listen)
		return fail_usage("--web-config secures the metrics endpoint: it needs --listen");
	/* Said now, not found out when no incident ever opens. */
	if (o->rules.threshold[WT_SLOW_REQUEST] > 0 && o->no_bpf)
		return fail_usage("--slow-request needs a BPF collector: it cannot be used with "
				  "--bpf off");
	if (o->rules.threshold[WT_DRIVER_ERRORS] > 0 && o->no_bpf)
		return fail_usage("--driver-errors needs a BPF collector: it cannot be used with "
				  "--bpf off");
	if (o->filter.file_blk)
		return fail_usage("--file names a block device: watch's --file takes a regular "
				  "file, -d watches a disk");
	/* A stall belongs to no file: none is traced under --file or --dir (as top). */
	if (o->filter.have_file || o->filter.have_dir)
		o->stall_threshold_ns = 0;
	/* One incident from the first sample: the rules have no say, and nothing comes before. */
	if (o->capture_now) {
		o->pre_s = 0;
		return 0;
	}
	for (idx = 0; idx < WT_NR_METRICS; idx++)
		if (o->rules.threshold[idx] > 0)
			return 0;
	return fail_usage(
		"every rule is off: give at least one of --util, --await, --read-mbps, "
		"--write-mbps, --iops, --aqu, --slow-request, --driver-errors, --psi-some, "
		"--psi-full");
}

uint64_t watch_slow_keep_ns(const struct watch_opts *o)
{
	double rule_ms = o->rules.threshold[WT_SLOW_REQUEST];
	uint64_t keep = o->capture_threshold_ns;

	if (rule_ms > 0 && (!keep || rule_ms * 1e6 < keep))
		keep = rule_ms * 1e6;
	return keep;
}

enum syscall_attach watch_syscall_attach(const struct watch_opts *o)
{
	return o->syscalls == WATCH_SYSCALLS_PER_CALL ? SYSCALL_ATTACH_PER_CALL :
							SYSCALL_ATTACH_RAW;
}

bool watch_top_follows_syscalls(const struct watch_opts *o)
{
	return o->syscalls != WATCH_SYSCALLS_NONE;
}

void watch_opts_free(struct watch_opts *o)
{
	otlp_config_free(&o->otlp);
	free(o->config_text);
	o->config_text = NULL;
}
