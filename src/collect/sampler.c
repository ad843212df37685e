// SPDX-License-Identifier: GPL-2.0
/*
 * The iostat sampler: what iospan watch samples every interval, /proc/diskstats, turned into iostat's
 * metrics by the functions stat uses (ds_read, ds_compute), and /proc/pressure/io.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "units.h"
#include "collect/sampler.h"

void io_sampler_init(struct io_sampler *s, const struct disk_spec *disks, int nr_disks)
{
	memset(s, 0, sizeof(*s));
	s->disks = nr_disks ? disks : NULL;
	s->nr_disks = nr_disks;
	s->diskstats_path = "/proc/diskstats";
	s->psi_path = "/proc/pressure/io";
	ds_snapshot_init(&s->prev);
	ds_snapshot_init(&s->cur);
}

void io_sampler_free(struct io_sampler *s)
{
	ds_snapshot_free(&s->prev);
	ds_snapshot_free(&s->cur);
}

/* -d names the disks; without it every whole disk, as a trigger on a partition would
 * repeat its disk's. */
static bool sampler_selects(const struct io_sampler *s, const struct ds_dev *d)
{
	int i;

	if (!s->disks)
		return !d->partition;
	for (i = 0; i < s->nr_disks; i++)
		if (disk_spec_matches(&s->disks[i], d->major, d->minor, d->name))
			return true;
	return false;
}

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" */
int io_sampler_read(struct io_sampler *s, struct io_sample *out)
{
	struct ds_snapshot tmp;
	const struct ds_dev *d, *before;
	struct io_disk_sample *ds;
	size_t i;
	int ret;

	ret = ds_read(s->diskstats_path, &s->cur);
	if (ret)
		return ret;
	psi_read(s->psi_path, &out->psi);
	out->uptime_s = s->cur.uptime_s;
	out->epoch_s = s->cur.epoch_s;
	out->interval_s = s->have_prev ? s->cur.uptime_s - s->prev.uptime_s : 0;
	out->nr = out->nr_left_out = 0;
	for (i = 0; i < s->cur.nr; i++) {
		d = &s->cur.devs[i];
		if (!sampler_selects(s, d))
			continue;
		if (out->nr == SAMPLER_MAX_DISKS) {
			out->nr_left_out++;
			continue;
		}
		ds = &out->disks[out->nr++];
		ds->dev = *d;
		before = s->have_prev ? ds_snapshot_find(&s->prev, d->major, d->minor, d->name) :
					NULL;
		/* A disk seen for the first time has no interval yet: no metrics. */
		ds->have_metrics = before && out->interval_s > 0;
		ds->slowest_ms = NAN; /* the collector timing slow requests, when one runs, says */
		if (ds->have_metrics)
			ds_compute(before, d, out->interval_s, &ds->m);
		else
			memset(&ds->m, 0, sizeof(ds->m));
	}
	/* Double buffering, as sysstat does: this sample is the next one's base. */
	tmp = s->prev;
	s->prev = s->cur;
	s->cur = tmp;
	s->have_prev = true;
	return 0;
}

void io_diskstats_line(const struct ds_dev *d, char *buf, size_t len)
{
	size_t n;
	int j;

	n = snprintf(buf, len, "%4u %7u %s", d->major, d->minor, d->name);
	for (j = 0; j < d->nr_fields && n < len; j++)
		n += snprintf(buf + n, len - n, " %llu", (unsigned long long)d->f[j]);
}
