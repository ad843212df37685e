// SPDX-License-Identifier: GPL-2.0
/*
 * iospan report: one HTML file that draws an incident watch stored, a capture made now,
 * or a stat recording; it opens offline, anywhere (page.c). A capture is an incident
 * too: watch records it (--capture-now) into a database of its own, which is drawn as
 * a stored one and removed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iospan.h"
#include "args.h"
#include "err.h"
#include "json.h"
#include "incident/conf.h"
#include "incident/read.h"
#include "incident/store.h"
#include "report.h"

static const char report_usage[] =
	"Usage: iospan report --incident ID [--db PATH | --config FILE] -o FILE.html\n"
	"       iospan report [-d DISK]... [TARGET] --duration D [--capture-threshold T]\n"
	"                     [--detail full|block] -o FILE.html\n"
	"       iospan report --recording FILE [-d DISK]... -o FILE.html\n"
	"\n"
	"One HTML file that draws what iospan saw: throughput, latency and pressure over\n"
	"time, a latency heatmap, who did the I/O (processes, files, cgroups), where on the\n"
	"disk (offsets), request sizes, slow requests stage by stage and stalls. It holds\n"
	"everything it shows (scripts, styles, data): it opens offline, from a ticket or a\n"
	"mail, in any current browser.\n"
	"  --incident ID   an incident iospan watch stored (see 'iospan incidents list')\n"
	"  --duration D    a capture made now, D long, with watch's collectors (needs root)\n"
	"  --recording F   a recording of 'iospan stat --record' (iostat figures only)\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE      the page to write (written whole, or not at all)\n"
	"  -d, --disk DISK        the disks a capture or recording shows (sda, /dev/loop0,\n"
	"                         8:0); repeatable; default every whole disk\n"
	"  -p, --pid PID, --tid TID, --comm NAME, --cgroup PATH, --file PATH, --dir PATH\n"
	"                         a capture's target: its processes, files, slow requests\n"
	"                         and stalls only (the samples and histograms stay the\n"
	"                         disks')\n"
	"      --db PATH          the incident database (default: the config file's db,\n"
	"                         else " WATCH_DEFAULT_DB ")\n"
	"      --config FILE      watch's config file, for its db\n"
	"      --capture-threshold T  a capture's requests slower than T are kept one by\n"
	"                         one, with their stages (the waterfall and the offset\n"
	"                         plot; a bare number is ms; default 1ms)\n"
	"      --detail full|block  a capture's requests timed from the syscall, stage by\n"
	"                         stage (pre-block, throttle, queue, device, off-CPU: trace's\n"
	"                         collector), or at the block layer only (queue and device:\n"
	"                         top's; cheaper) (default full)\n"
	"  -v, --verbose          (accepted; nothing more to say)\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit codes: 0 ok, 1 runtime failure, 2 bad usage. Manual: iospan-report(8).\n";

/* A target filter option by its watch name (watch takes the same). */
static const char *target_option(int opt)
{
	switch (opt) {
	case 'p':
		return "--pid";
	case FILTER_OPT_TID:
		return "--tid";
	case FILTER_OPT_COMM:
		return "--comm";
	case FILTER_OPT_CGROUP:
		return "--cgroup";
	case FILTER_OPT_FILE:
		return "--file";
	default:
		return "--dir";
	}
}

static int report_parse(int argc, char **argv, struct report_opts *o)
{
	enum {
		OPT_INCIDENT = 0x2000,
		OPT_DB,
		OPT_CONFIG,
		OPT_DURATION,
		OPT_RECORDING,
		OPT_THRESHOLD,
		OPT_DETAIL
	};
	static const struct option long_opts[] = {
		{"incident", required_argument, NULL, OPT_INCIDENT},
		{"db", required_argument, NULL, OPT_DB},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"recording", required_argument, NULL, OPT_RECORDING},
		{"capture-threshold", required_argument, NULL, OPT_THRESHOLD},
		{"detail", required_argument, NULL, OPT_DETAIL},
		{"output", required_argument, NULL, 'o'},
		{"disk", required_argument, NULL, 'd'},
		FILTER_LONG_TARGET,
		COMMON_LONG_OPTS,
		{0},
	};
	const struct args_spec spec = {
		.cmd = "report",
		.usage = report_usage,
		.short_opts = ":o:d:p:" COMMON_SHORT_OPTS,
		.long_opts = long_opts,
		.options_only = true,
	};
	const char *config = NULL, *db = NULL;
	bool threshold_given = false, detail_given = false;
	int opt, ret, sources;
	uint64_t id;

	o->threshold_ns = 1000000;
	o->threshold_text = "1ms";
	o->detail = "full";
	while ((opt = args_next(&spec, argc, argv)) > ARGS_HELP) {
		switch (opt) {
		case OPT_INCIDENT:
			if (parse_u64_range(optarg, 1, INT64_MAX, &id))
				return fail_usage(
					"invalid --incident '%s': give a positive integer "
					"(see 'iospan incidents list')",
					optarg);
			o->id = id;
			break;
		case OPT_DB:
			ret = args_path("", "--db", optarg, &db);
			if (ret)
				return ret;
			break;
		case OPT_CONFIG:
			config = optarg;
			break;
		case OPT_DURATION:
			ret = args_duration_in("", "--duration", optarg, 1000000000ULL,
					       7 * 86400 * 1000000000ULL, "from 1s to 7d",
					       &o->duration_ns);
			if (ret)
				return ret;
			break;
		case OPT_RECORDING:
			ret = args_path("", "--recording", optarg, &o->recording);
			if (ret)
				return ret;
			break;
		case OPT_THRESHOLD:
			if (parse_duration_ns(optarg, 1000000ULL, &o->threshold_ns))
				return fail_usage(
					"invalid --capture-threshold '%s': give a duration "
					"(200us, 5ms; a bare number is ms)",
					optarg);
			o->threshold_text = optarg;
			threshold_given = true;
			break;
		case OPT_DETAIL:
			if (strcmp(optarg, "full") && strcmp(optarg, "block"))
				return fail_usage("invalid --detail '%s': block or full", optarg);
			o->detail = optarg;
			detail_given = true;
			break;
		case 'o':
			ret = args_path("", "--output", optarg, &o->output);
			if (ret)
				return ret;
			break;
		case 'd':
			ret = disk_spec_add("", optarg, o->disks, o->disk_text, &o->nr_disks,
					    REPORT_MAX_DISKS);
			if (ret)
				return ret;
			break;
		case 'p':
		case FILTER_OPT_TID:
		case FILTER_OPT_COMM:
		case FILTER_OPT_CGROUP:
		case FILTER_OPT_FILE:
		case FILTER_OPT_DIR:
			/* Checked here (one line, exit 2), then given to watch as they are. */
			ret = filter_parse_opt("report", opt, optarg, &o->filter);
			if (ret)
				return ret;
			o->target_argv[o->nr_target_argv++] = target_option(opt);
			o->target_argv[o->nr_target_argv++] = optarg;
			break;
		}
	}
	if (opt)
		return opt;
	sources = !!o->id + !!o->duration_ns + !!o->recording;
	if (sources != 1)
		return fail_usage("%s: give one of --incident ID, --duration D (a capture now) or "
				  "--recording FILE",
				  sources ? "more than one source" : "nothing to report");
	if (!o->output)
		return fail_usage("no output: give -o FILE.html");
	if (o->id && o->nr_disks)
		return fail_usage("-d is for a capture or a recording: an incident has its disks");
	if ((db || config) && !o->id)
		return fail_usage("--db and --config are for --incident");
	if ((threshold_given || detail_given || o->nr_target_argv) && !o->duration_ns)
		return fail_usage(
			"--capture-threshold, --detail and the target (-p, --tid, --comm, "
			"--cgroup, --file, --dir) are for a capture (--duration)");
	return o->id ? conf_reader_db(db, config, &o->config_db, &o->db_path) : 0;
}

struct incident_doc {
	struct watch_store *st;
	const struct incident_row *row;
	const char *kind, *source;
};

static int fill_incident(struct jw *jw, const void *arg)
{
	const struct incident_doc *d = arg;

	return report_doc_incident(jw, d->st, d->row, d->kind, d->source);
}

static int fill_recording(struct jw *jw, const void *arg)
{
	return report_doc_recording(jw, arg);
}

/* Incident @id of @db_path drawn into the page. */
static int report_incident(const struct report_opts *o, const char *db_path, int64_t id,
			   const char *kind, const char *source)
{
	struct incident_row *row = calloc(1, sizeof(*row));
	struct watch_store *st = NULL;
	struct incident_doc d;
	int ret;

	if (!row)
		return fail(-ENOMEM, "out of memory");
	ret = store_open(db_path, STORE_READER, &st);
	if (!ret)
		ret = find_incident(st, db_path, id, row);
	if (ret)
		goto cleanup;
	d = (struct incident_doc){.st = st, .row = row, .kind = kind, .source = source};
	ret = report_page_write(o->output, fill_incident, &d);
cleanup:
	store_close(st);
	free(row);
	return ret;
}

/*
 * A capture: watch's collectors record one incident from now (watch --capture-now)
 * into a database of its own in a new temporary directory, drawn, then removed.
 */
static int report_capture(const struct report_opts *o)
{
	char dir[PATH_MAX], db[PATH_MAX + 32], wal[PATH_MAX + 40], shm[PATH_MAX + 40];
	char capture[32], *argv[32 + 2 * REPORT_MAX_DISKS];
	const char *tmp = getenv("TMPDIR");
	int argc = 0, i, ret;

	snprintf(dir, sizeof(dir), "%s/iospan-report.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return fail(-errno, "cannot make a temporary directory in %s: %s",
			    tmp && *tmp ? tmp : "/tmp", strerror(errno));
	snprintf(db, sizeof(db), "%s/capture.db", dir);
	snprintf(wal, sizeof(wal), "%s-wal", db);
	snprintf(shm, sizeof(shm), "%s-shm", db);
	snprintf(capture, sizeof(capture), "%.3f", o->duration_ns / 1e9);
	argv[argc++] = "watch";
	argv[argc++] = "--config="; /* none: a capture is made with the defaults */
	argv[argc++] = "--db";
	argv[argc++] = db;
	argv[argc++] = "--capture-now";
	argv[argc++] = "--capture";
	argv[argc++] = capture;
	argv[argc++] = "--capture-threshold";
	argv[argc++] = (char *)o->threshold_text;
	argv[argc++] = "--detail";
	argv[argc++] = (char *)o->detail;
	for (i = 0; i < o->nr_disks; i++) {
		argv[argc++] = "-d";
		argv[argc++] = (char *)o->disk_text[i];
	}
	for (i = 0; i < o->nr_target_argv; i++)
		argv[argc++] = (char *)o->target_argv[i];
	argv[argc] = NULL;
	cmd_reset_getopt();
	ret = cmd_watch(argc, argv);
	if (!ret)
		ret = report_incident(o, db, 1, "capture", "capture");
	unlink(db);
	unlink(wal);
	unlink(shm);
	rmdir(dir);
	return ret;
}

int cmd_report(int argc, char **argv)
{
	struct report_opts opts = {};
	int ret;

	ret = report_parse(argc, argv, &opts);
	if (ret)
		goto cleanup;
	if (opts.id)
		ret = report_incident(&opts, opts.db_path, opts.id, "incident", opts.db_path);
	else if (opts.recording)
		ret = report_page_write(opts.output, fill_recording, &opts);
	else
		ret = report_capture(&opts);
cleanup:
	free(opts.config_db);
	return ret > 0 ? 0 : ret;
}
