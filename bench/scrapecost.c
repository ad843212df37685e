// SPDX-License-Identifier: GPL-2.0
/*
 * scrapecost: the CPU one scrape of `iospan watch --listen` costs, for a given number of
 * series. Fills the endpoint's figures (src/export/metrics.c) as top's collector would:
 * CGROUPS cgroups with I/O on every disk of this machine (reads, writes, flushes,
 * writeback, a container id for half of them), then renders the exposition RUNS times
 * as the HTTP thread does (reading /proc/diskstats and the pressure files now) and
 * prints the series and the CPU time of a scrape (median and worst, thread CPU time).
 *
 * usage: scrapecost [CGROUPS] [RUNS]     (CGROUPS at most 2000, default 200)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/metrics.h"
#include "prom.h"

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int nr_cg = argc > 1 ? atoi(argv[1]) : 200, runs = argc > 2 ? atoi(argv[2]) : 50;
	struct metrics_cgroup_io *d;
	struct metrics *m;
	double *t;
	size_t series = 0, len;
	int i, k, nd;
	char *text;

	if (nr_cg < 1 || nr_cg > METRICS_MAX_CGROUPS || runs < 1) {
		fprintf(stderr, "usage: scrapecost [CGROUPS (1-%d)] [RUNS]\n", METRICS_MAX_CGROUPS);
		return 2;
	}
	m = calloc(1, sizeof(*m));
	t = calloc(runs, sizeof(*t));
	if (!m || !t || metrics_init(m, NULL, 0, nr_cg))
		return 1;
	/* The disks the sampler sees: each cgroup did I/O on each. */
	{
		struct prom_buf b;

		prom_buf_init(&b);
		metrics_render(m, &b);
		prom_buf_free(&b);
	}
	nd = m->nr_disks ? m->nr_disks : 1;
	d = calloc((size_t)nr_cg * nd, sizeof(*d));
	if (!d)
		return 1;
	for (i = 0; i < nr_cg; i++)
		for (k = 0; k < nd; k++) {
			struct metrics_cgroup_io *e = &d[i * nd + k];

			e->cgid = 1000 + i;
			snprintf(e->cgroup, sizeof(e->cgroup), "/system.slice/app-%04d.service", i);
			if (i % 2)
				snprintf(e->container, sizeof(e->container), "%012x", i);
			snprintf(e->disk, sizeof(e->disk), "%s",
				 m->nr_disks ? m->disks[k].last.name : "sda");
			e->disk_bytes[0] = e->disk_bytes[1] = 4096ULL * (i + 1);
			e->fs_bytes[0] = e->fs_bytes[1] = 8192ULL * (i + 1);
			e->writeback_bytes = 4096;
			e->requests[MCG_READ] = e->requests[MCG_WRITE] = e->requests[MCG_FLUSH] = 1;
			e->request_ns[MCG_READ] = e->request_ns[MCG_WRITE] = 1000000;
		}
	metrics_note_cgroups(m, d, nr_cg * nd);
	for (i = 0; i < runs; i++) {
		struct prom_buf b;
		double t0 = cpu_s();

		prom_buf_init(&b);
		if (metrics_render(m, &b))
			return 1;
		text = prom_buf_take(&b, &len);
		prom_buf_free(&b);
		t[i] = cpu_s() - t0;
		if (!i)
			for (k = 0; text && k < (int)len; k++)
				series += text[k] == '\n' && k + 1 < (int)len && text[k + 1] != '#';
		free(text);
	}
	qsort(t, runs, sizeof(*t), cmp_double);
	printf("{\"cgroups\": %d, \"disks\": %d, \"series\": %zu, \"scrape_cpu_ms_median\": %.3f, "
	       "\"scrape_cpu_ms_max\": %.3f, \"runs\": %d}\n",
	       nr_cg, nd, series + 1, t[runs / 2] * 1e3, t[runs - 1] * 1e3, runs);
	metrics_free(m);
	free(d);
	free(m);
	free(t);
	return 0;
}
