/* SPDX-License-Identifier: GPL-2.0 */
/*
 * watch.conf, the daemon's config file (src/incident/conf.c): its keys are watch's long
 * options, in one table that watch's command line uses too.
 */
#ifndef IOSPAN_INCIDENT_CONF_H
#define IOSPAN_INCIDENT_CONF_H

#include <getopt.h>
#include <stdbool.h>

#include "incident/rules.h"
#include "incident/store.h"

#define WATCH_DEFAULT_DB     "/var/lib/iospan/incidents.db"
#define WATCH_DEFAULT_CONFIG "/etc/iospan/watch.conf"

enum watch_opt {
	WATCH_OPT_FOR = 0x2000,
	WATCH_OPT_INTERVAL,
	WATCH_OPT_PRE,
	WATCH_OPT_CAPTURE,
	WATCH_OPT_COOLDOWN,
	WATCH_OPT_MAX_PER_HOUR,
	WATCH_OPT_DB,
	WATCH_OPT_CONFIG,
	WATCH_OPT_KEEP,
	WATCH_OPT_MAX_AGE,
	WATCH_OPT_MAX_DB_SIZE,
	WATCH_OPT_DURATION,
	WATCH_OPT_BPF,
	WATCH_OPT_NO_BPF,
	WATCH_OPT_CAPTURE_THRESHOLD,
	WATCH_OPT_STALL_THRESHOLD,
	WATCH_OPT_DETAIL,
	WATCH_OPT_STALLS,
	WATCH_OPT_SYSCALL_HOOKS,
	WATCH_OPT_LISTEN,
	WATCH_OPT_METRICS_MAX_CGROUPS,
	WATCH_OPT_WEB_CONFIG,
	WATCH_OPT_OTLP_ENDPOINT,
	WATCH_OPT_OTLP_METRICS,
	WATCH_OPT_OTLP_METRICS_INTERVAL,
	WATCH_OPT_CAPTURE_NOW,
	WATCH_OPT_RULE, /* + enum wt_metric */
};

/* watch's long options: also the keys of its config file. */
extern const struct option watch_conf_opts[];

/* One "key = value" line of the file; @where names it for messages ("FILE line N: "). */
typedef int (*conf_apply_fn)(void *arg, int opt, const char *key, const char *value,
			     const char *where);

/*
 * Reads @path into *@text (which the values point into; the caller frees it) and
 * applies each line with @apply; a key that is not one of watch's is an error. A
 * missing file is no error unless @given (the default file is optional); then *@text
 * stays NULL. 0, or the error reported (2: usage).
 */
int conf_read(const char *path, bool given, char **text, conf_apply_fn apply, void *arg);
/* The database the file at @path (NULL: the default, if present) names, or NULL. */
int conf_db_path(const char *path, char **db_path);
/*
 * The incident database a reader opens, into *@path: @db (--db), else the one the
 * config file @config (NULL: the default, if present) names (kept in *@config_db, which
 * the caller frees), else WATCH_DEFAULT_DB. 0, or the file's error reported.
 */
int conf_reader_db(const char *db, const char *config, char **config_db, const char **path);
/* A duration in seconds; @zero_ok: 0 is allowed. A "d" suffix counts days. */
int conf_parse_seconds(const char *where, const char *opt, const char *arg, bool zero_ok,
		       double *out);
/* --keep, --max-age, --max-db-size (@opt without dashes) into @r. */
int conf_parse_retention(const char *where, const char *opt, const char *arg,
			 struct store_retention *r);

#endif
