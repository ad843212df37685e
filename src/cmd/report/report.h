/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan report: one self-contained HTML file that draws an incident, a capture made
 * now, or a stat recording (docs/iospan-report.md).
 *   report.c    options and the three sources
 *   document.c  the data the page draws, as JSON (an incident, a recording)
 *   page.c      the page: the template and its assets (web/, embedded by assets.S)
 *               with the data put in
 */
#ifndef IOSPAN_CMD_REPORT_H
#define IOSPAN_CMD_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "disks.h"
#include "filters.h"

#define REPORT_MAX_DISKS 32

struct jw;
struct watch_store;
struct incident_row;

struct report_opts {
	int64_t id;	       /* --incident */
	const char *db_path;   /* with --incident */
	char *config_db;       /* the database watch's config file names */
	const char *recording; /* --recording */
	uint64_t duration_ns;  /* a capture made now */
	uint64_t threshold_ns; /* a capture's slow requests: those slower */
	const char *threshold_text;
	const char *detail; /* a capture's: watch's --detail */
	const char *output; /* -o */
	/* A capture's target (-p, --tid, --comm, --cgroup, --file, --dir), for watch. */
	struct filter_opts filter;
	const char *target_argv[2 * 6];
	int nr_target_argv;
	struct disk_spec disks[REPORT_MAX_DISKS];
	const char *disk_text[REPORT_MAX_DISKS];
	int nr_disks;
};

/* document.c: the page's data (docs/iospan-report.md, "DATA"). */
int report_doc_incident(struct jw *jw, struct watch_store *st, const struct incident_row *r,
			const char *kind, const char *source);
int report_doc_recording(struct jw *jw, const struct report_opts *o);

/*
 * page.c: writes the page to @path (whole or not at all) with the JSON @fill writes as
 * its data; 0, or the error reported.
 */
int report_page_write(const char *path, int (*fill)(struct jw *jw, const void *arg),
		      const void *arg);

#endif
