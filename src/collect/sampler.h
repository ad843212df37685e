/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The iostat sampler (src/collect/sampler.c): /proc/diskstats turned into iostat's
 * metrics per disk by the functions stat uses (ds_read, ds_compute), with the I/O
 * pressure, once per interval. Its consumers: watch, and the store's samples.
 */
#ifndef IOSPAN_COLLECT_SAMPLER_H
#define IOSPAN_COLLECT_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "collect/psi.h"
#include "disks.h"
#include "diskstats.h"
#include "driver_abi.h"

/* Disks a sample holds at most. */
#define SAMPLER_MAX_DISKS 64

/* One disk's sample: the raw counters and what they give against the sample before. */
struct io_disk_sample {
	struct ds_dev dev; /* raw counters now */
	struct ds_metrics m;
	bool have_metrics; /* false for the first sample of a disk */
	/* The slowest request on it in the sample, ms; NaN without a collector timing them. */
	double slowest_ms;
	/*
	 * Its driver's counters in the sample (top's collector; have_drv false without):
	 * drv.last.kind DRV_NONE where no driver hook completed a command on it.
	 */
	struct drv_disk_stats drv;
	bool have_drv;
};

struct io_sample {
	double uptime_s, epoch_s, interval_s;
	struct psi_io psi;
	int nr;
	int nr_left_out; /* disks selected past SAMPLER_MAX_DISKS: not watched */
	struct io_disk_sample disks[SAMPLER_MAX_DISKS];
};

struct io_sampler {
	const struct disk_spec *disks; /* -d, or NULL: every whole disk */
	int nr_disks;
	const char *diskstats_path, *psi_path;
	struct ds_snapshot prev, cur;
	bool have_prev;
};

void io_sampler_init(struct io_sampler *s, const struct disk_spec *disks, int nr_disks);
void io_sampler_free(struct io_sampler *s);
/* Reads the files and fills @out with the selected disks; 0 or negative errno. */
int io_sampler_read(struct io_sampler *s, struct io_sample *out);
/* One /proc/diskstats line of @d's counters (as ds_record_snapshot writes it). */
void io_diskstats_line(const struct ds_dev *d, char *buf, size_t len);

#endif
