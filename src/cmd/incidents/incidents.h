/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan incidents: the reader of watch's incident store.
 *   incidents.c        options, the table of sub-verbs, prune
 *   show.c             list, show ID (text or JSON)
 *   export.c           export ID: a stat recording, JSON
 *   export_perfetto.c  export --format perfetto
 */
#ifndef IOSPAN_CMD_INCIDENTS_H
#define IOSPAN_CMD_INCIDENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "disks.h"

#include "incident/read.h"
#include "incident/store.h"

struct jw;
struct perfetto;
struct incidents_ctx;

struct incidents_opts {
	const char *db_path;
	char *config_db;    /* the database the config file names */
	const char *format; /* export: stat, json or perfetto */
	const char *output; /* export: -o FILE */
	struct store_retention retention;
	bool have_retention;
	const char *subcmd;
	const struct incidents_verb *verb;
	int64_t id;
};

/* A sub-verb: its name, whether it takes an incident ID, and what it does. */
struct incidents_verb {
	const char *name;
	bool takes_id;
	int (*run)(struct incidents_ctx *x);
};

/* What a sub-verb runs with: the options, the store, the incident (with an ID). */
struct incidents_ctx {
	const struct incidents_opts *o;
	struct watch_store *st;
	struct jw *jw; /* --json */
	struct incident_row row;
};

/* show.c */
int incidents_list(struct watch_store *st, struct jw *jw);
int incident_text(struct watch_store *st, const struct incident_row *r);

/* export.c */
int incidents_export(struct watch_store *st, const struct incidents_opts *o,
		     const struct incident_row *r);

/* incidents.c */
int incidents_prune(struct watch_store *st, const struct incidents_opts *o, struct jw *jw);

/*
 * Writes incident @id (@state and @end_reason as incidents shows them) into @pf:
 * counters, spans and events (docs/iospan-incidents.md). 0, or an error reported.
 */
int export_perfetto(struct watch_store *st, int64_t id, const char *state, const char *end_reason,
		    struct perfetto *pf);

#endif
