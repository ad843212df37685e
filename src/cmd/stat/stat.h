/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan stat: the iostat -x report from /proc/diskstats, with sysstat's formulas
 * (src/lib/sys/diskstats.h), recording of the raw snapshots and replay of a recording.
 *   stat.c    options, the live loop, recording, replay
 *   report.c  one report: the devices it selects, as rows of the shared renderer
 */
#ifndef IOSPAN_CMD_STAT_H
#define IOSPAN_CMD_STAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "diskstats.h"
#include "disks.h"

#define STAT_MAX_DISKS 64

struct stat_opts {
	struct disk_spec disks[STAT_MAX_DISKS];
	const char *disk_text[STAT_MAX_DISKS];
	int nr_disks;
	bool omit_idle;	 /* -z */
	bool skip_boot;	 /* -y */
	bool partitions; /* -p */
	const char *record_path;
	const char *replay_path;
	uint64_t interval_ns; /* 0: one since-boot report */
	uint64_t count;	      /* 0: until interrupted */
};

struct stat_ctx {
	struct stat_opts *opts;
	struct render *render;
	FILE *record;
	uint64_t reports;
};

/* What a report says about the times it covers, besides the interval. */
enum report_note {
	NOTE_NONE,
	NOTE_PARTIAL,	/* interrupted before the interval ended */
	NOTE_REBOOT,	/* since boot, after a reboot within the recording */
	NOTE_CLOCK_BACK /* the wall clock was set back during the interval */
};

/* One report (report.c): @cur against @prev (NULL: since boot). */
int stat_report(struct stat_ctx *ctx, const struct ds_snapshot *prev, const struct ds_snapshot *cur,
		enum report_note note);

#endif
