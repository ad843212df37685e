/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /proc/diskstats: parsing, snapshots, recordings, and the iostat -x metrics.
 * The calculation (diskstats_compute) is pure so it can be tested against
 * hand-computed fixtures; readers and writers are separate.
 */
#ifndef IOSPAN_DISKSTATS_H
#define IOSPAN_DISKSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "disks.h"

/*
 * The counters after major, minor and name; kernels print 11, 15 or 17 of them. A line
 * is read by its longest complete group, as sysstat does: 11 to 14 counters are the
 * classic 11, 15 or 16 the classic and discards, 17 or more all of them.
 */
enum ds_field {
	DS_RD_IOS,
	DS_RD_MERGES,
	DS_RD_SECTORS,
	DS_RD_TICKS,
	DS_WR_IOS,
	DS_WR_MERGES,
	DS_WR_SECTORS,
	DS_WR_TICKS,
	DS_IN_FLIGHT, /* a gauge, not a counter */
	DS_IO_TICKS,
	DS_TIME_IN_QUEUE,
	DS_DC_IOS, /* discards: since Linux 4.18 */
	DS_DC_MERGES,
	DS_DC_SECTORS,
	DS_DC_TICKS,
	DS_FL_IOS, /* flushes: since Linux 5.5 */
	DS_FL_TICKS,
	DS_NR_FIELDS,
};

struct ds_dev {
	unsigned int major, minor;
	char name[DISK_NAME_LEN];
	bool partition;
	uint64_t f[DS_NR_FIELDS];
	int nr_fields; /* counters kept from the line: 11, 15 or 17 */
};

struct ds_snapshot {
	double uptime_s; /* CLOCK_BOOTTIME, as /proc/uptime: the since-boot interval */
	double epoch_s;	 /* wall clock, for display */
	size_t nr, cap;
	struct ds_dev *devs;
};

/* The iostat -x metrics of one device over one interval. */
struct ds_metrics {
	double r_s, w_s, d_s, f_s;
	double rkB_s, wkB_s, dkB_s;
	double rrqm_s, wrqm_s, drqm_s;
	double rrqm_pct, wrqm_pct, drqm_pct;
	double r_await, w_await, d_await, f_await;
	double rareq_sz, wareq_sz, dareq_sz;
	double aqu_sz, util;
	uint64_t in_flight;
	uint64_t ios;	/* completed I/Os of all kinds in the interval: 0 means idle */
	bool restarted; /* counters started again from zero in the interval (ds_restarted) */
};

/* One /proc/diskstats line; -EINVAL if it is not one. */
int ds_parse_line(const char *line, struct ds_dev *dev);

void ds_snapshot_init(struct ds_snapshot *s);
void ds_snapshot_free(struct ds_snapshot *s);
void ds_snapshot_clear(struct ds_snapshot *s);
int ds_snapshot_add(struct ds_snapshot *s, const struct ds_dev *dev);
const struct ds_dev *ds_snapshot_find(const struct ds_snapshot *s, unsigned int major,
				      unsigned int minor, const char *name);

/* Reads @path (normally /proc/diskstats) into @s, stamped now; partitions from sysfs. */
int ds_read(const char *path, struct ds_snapshot *s);

/*
 * Whether @cur's counters started again from zero since @prev: the device was removed
 * and registered again under the same name and number (a disk re-added, a driver
 * reloaded). Any counter lower than before means that, except a time counter (ms) that
 * wrapped: the kernel prints those as 32-bit numbers, which wrap after 49.7 days of
 * summed time (days on a busy disk for time_in_queue); a wrap is a fall of more than
 * half their range.
 */
bool ds_restarted(const struct ds_dev *prev, const struct ds_dev *cur);

/*
 * Metrics of @cur against @prev over @interval_s. @prev NULL (a device that did not
 * exist before), or counters that restarted, are computed against zero counters, as
 * sysstat does; m->restarted says which.
 */
void ds_compute(const struct ds_dev *prev, const struct ds_dev *cur, double interval_s,
		struct ds_metrics *m);

/*
 * Recordings: a text format anyone can write by hand (docs/recording-format.md):
 *   iospan-diskstats 1
 *   partition MAJ MIN            (optional: this device is a partition)
 *   snapshot UPTIME_S EPOCH_S
 *   <verbatim /proc/diskstats lines>
 * '#' lines and blank lines are ignored.
 */
int ds_record_header(FILE *out);
int ds_record_snapshot(FILE *out, const struct ds_snapshot *s, bool with_partitions);

/* Longest line a recording may hold: a /proc/diskstats line is under 400 bytes. */
#define DS_MAX_LINE 65536

struct ds_reader {
	FILE *in;
	const char *path;
	unsigned int line_no;
	bool header_seen;
	char *line; /* the line being read (DS_MAX_LINE at most) */
	size_t line_cap;
	char *pending; /* the next "snapshot" line, read ahead */
	/* The last snapshot's times, which the next one's are checked against. */
	bool have_prev;
	double prev_uptime_s, prev_epoch_s;
	/* Of the snapshot just read: uptime went back while the wall clock went on. */
	bool rebooted;
	/* Of the snapshot just read: the wall clock went back while uptime went on. */
	bool clock_set_back;
	/* Devices declared partitions so far (MAJ << 20 | MIN). */
	uint64_t *parts;
	size_t nr_parts, cap_parts;
	char error[256];
};

int ds_reader_open(struct ds_reader *r, const char *path);
/*
 * 1 with a snapshot, 0 at the end, -EINVAL on a malformed file (r->error says where):
 * times that are no decimal numbers, a snapshot at the time of the one before, times
 * that both go back, a line longer than DS_MAX_LINE or holding a NUL byte.
 */
int ds_reader_next(struct ds_reader *r, struct ds_snapshot *s);
void ds_reader_close(struct ds_reader *r);

#endif
