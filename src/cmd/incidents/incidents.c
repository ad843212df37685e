// SPDX-License-Identifier: GPL-2.0
/*
 * iospan incidents: what iospan watch stored. Options, the table of sub-verbs, prune
 * (retention on demand); list and show are show.c's, export export.c's.
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iospan.h"
#include "args.h"
#include "array.h"
#include "err.h"
#include "json.h"
#include "outfile.h"
#include "perfetto.h"
#include "printable.h"
#include "units.h"
#include "incidents.h"
#include "incident/conf.h"

static const char incidents_usage[] =
	"Usage: iospan incidents [--db PATH | --config FILE] [--json] list\n"
	"       iospan incidents [--db PATH | --config FILE] [--json] show ID\n"
	"       iospan incidents [--db PATH | --config FILE] export ID\n"
	"                        [--format stat|json|perfetto] [-o FILE]\n"
	"       iospan incidents [--db PATH | --config FILE] [--json] prune [--keep N]\n"
	"                        [--max-age D] [--max-db-size SIZE]\n"
	"\n"
	"The incidents `iospan watch` stored.\n"
	"  list      one line each: start, disk, trigger, duration, state, top process, file\n"
	"  show ID   the trigger, the onset (where the rise began, from the pre-trigger\n"
	"            window) and the samples\n"
	"  export ID --format stat: a recording for `iospan stat --replay` (default);\n"
	"            --format json: the whole incident; --format perfetto: a trace for\n"
	"            ui.perfetto.dev (counters, phases, triggers, processes, files)\n"
	"  prune     deletes incidents past the retention limits (default as watch's: keep\n"
	"            500, 30d, 1G)\n"
	"\n"
	"Options:\n"
	"      --db PATH       the database (default: the config file's db, else\n"
	"                      " WATCH_DEFAULT_DB ")\n"
	"      --config FILE   watch's config file, for its db (default\n"
	"                      " WATCH_DEFAULT_CONFIG " if present)\n"
	"      --format F      export format: stat, json or perfetto\n"
	"  -o, --output FILE   export to FILE instead of stdout\n"
	"      --keep N, --max-age D, --max-db-size SIZE   prune's limits\n"
	"      --json          machine output\n"
	"  -v, --verbose       (accepted; nothing more to say)\n"
	"  -h, --help          this help\n"
	"\n"
	"Exit codes: 0 ok, 1 runtime failure, 2 bad usage. Manual: iospan-incidents(8).\n";

static const struct incidents_verb *find_verb(const char *name);

static int incidents_parse(int argc, char **argv, struct incidents_opts *o)
{
	enum { OPT_DB = 0x2000, OPT_CONFIG, OPT_FORMAT, OPT_KEEP, OPT_MAX_AGE, OPT_MAX_DB_SIZE };
	static const struct option long_opts[] = {
		{"db", required_argument, NULL, OPT_DB},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"output", required_argument, NULL, 'o'},
		{"keep", required_argument, NULL, OPT_KEEP},
		{"max-age", required_argument, NULL, OPT_MAX_AGE},
		{"max-db-size", required_argument, NULL, OPT_MAX_DB_SIZE},
		COMMON_LONG_OPTS,
		{0},
	};
	int opt, idx, ret, nargs;
	const struct args_spec spec = {
		.cmd = "incidents",
		.usage = incidents_usage,
		.short_opts = ":o:" COMMON_SHORT_OPTS,
		.long_opts = long_opts,
		.longindex = &idx,
	};
	const char *config = NULL, *db = NULL;
	uint64_t id;

	o->retention.keep = 500;
	o->retention.max_age_s = 30 * 86400;
	o->retention.max_db_size = 1ULL << 30;
	while ((opt = args_next(&spec, argc, argv)) > ARGS_HELP) {
		switch (opt) {
		case OPT_DB:
			ret = args_path("", "--db", optarg, &db);
			if (ret)
				return ret;
			break;
		case OPT_CONFIG:
			config = optarg;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "stat") && strcmp(optarg, "json") &&
			    strcmp(optarg, "perfetto"))
				return fail_usage("invalid --format '%s': stat, json or perfetto",
						  optarg);
			o->format = optarg;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_KEEP:
		case OPT_MAX_AGE:
		case OPT_MAX_DB_SIZE:
			ret = conf_parse_retention("", long_opts[idx].name, optarg, &o->retention);
			if (ret)
				return ret;
			o->have_retention = true;
			break;
		}
	}
	if (opt)
		return opt;
	nargs = argc - optind;
	if (!nargs)
		return fail_usage("no subcommand: list, show ID, export ID or prune (see 'iospan "
				  "incidents --help')");
	o->subcmd = argv[optind];
	o->verb = find_verb(o->subcmd);
	if (!o->verb)
		return fail_usage("unknown subcommand '%s': list, show ID, export ID or prune",
				  o->subcmd);
	if (o->verb->takes_id) {
		if (nargs != 2)
			return fail_usage("%s needs one incident ID (see 'iospan incidents list')",
					  o->subcmd);
		if (parse_u64_range(argv[optind + 1], 1, INT64_MAX, &id))
			return fail_usage("invalid incident ID '%s': give a positive integer",
					  argv[optind + 1]);
		o->id = id;
	} else if (nargs != 1) {
		return fail_usage("unexpected argument '%s' after %s", argv[optind + 1], o->subcmd);
	}
	if ((o->format || o->output) && strcmp(o->subcmd, "export"))
		return fail_usage("--format and --output are for export");
	if (o->have_retention && strcmp(o->subcmd, "prune"))
		return fail_usage("--keep, --max-age and --max-db-size are for prune");
	if (!o->format)
		o->format = "stat";
	return conf_reader_db(db, config, &o->config_db, &o->db_path);
}

int incidents_prune(struct watch_store *st, const struct incidents_opts *o, struct jw *jw)
{
	struct timespec ts;
	int deleted, ret;
	int64_t left = -1;
	sqlite3_stmt *s = NULL;

	clock_gettime(CLOCK_REALTIME, &ts);
	ret = store_prune(st, &o->retention, ts.tv_sec + ts.tv_nsec / 1e9, &deleted);
	if (ret)
		return fail(ret, "cannot prune '%s': %s", o->db_path,
			    ret == -ENOSPC ? "the file system is full" : store_errmsg(st));
	if (sqlite3_prepare_v2(store_db(st), "SELECT count(*) FROM incidents", -1, &s, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		left = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (jw) {
		jw_start_object(jw);
		jw_kv_int(jw, "deleted", deleted);
		jw_kv_int(jw, "left", left);
		jw_end_object(jw);
	} else {
		printf("deleted %d incident%s, %lld left\n", deleted, deleted == 1 ? "" : "s",
		       (long long)left);
	}
	return 0;
}

static int verb_list(struct incidents_ctx *x)
{
	return incidents_list(x->st, x->jw);
}

static int verb_show(struct incidents_ctx *x)
{
	return x->jw ? incident_json(x->st, x->jw, &x->row) : incident_text(x->st, &x->row);
}

static int verb_export(struct incidents_ctx *x)
{
	return incidents_export(x->st, x->o, &x->row);
}

static int verb_prune(struct incidents_ctx *x)
{
	return incidents_prune(x->st, x->o, x->jw);
}

/* The sub-verbs, as bpftool's command tables: a name, whether it takes an ID, its run. */
static const struct incidents_verb verbs[] = {
	{ "list", false, verb_list },
	{ "show", true, verb_show },
	{ "export", true, verb_export },
	{ "prune", false, verb_prune },
	{ NULL },
};

static const struct incidents_verb *find_verb(const char *name)
{
	return TABLE_FIND(verbs, name);
}

int cmd_incidents(int argc, char **argv)
{
	struct incidents_opts o = {};
	struct incidents_ctx x = { .o = &o };
	int ret;

	ret = incidents_parse(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : ret;
	if (gopts.json) {
		x.jw = jw_new(stdout);
		if (!x.jw) {
			ret = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
	}
	ret = store_open(o.db_path, STORE_READER, &x.st);
	if (ret)
		goto cleanup;
	if (o.verb->takes_id) {
		ret = find_incident(x.st, o.db_path, o.id, &x.row);
		if (ret)
			goto cleanup;
	}
	ret = o.verb->run(&x);
cleanup:
	store_close(x.st);
	jw_free(x.jw);
	free(o.config_db);
	return ret;
}
