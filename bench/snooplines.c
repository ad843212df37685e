// SPDX-License-Identifier: GPL-2.0
/*
 * snooplines: the user-space cost of one `iospan snoop` line, best of several runs.
 * Formats and renders records like those of the overhead harness's workload (4 KiB
 * random reads by one fio thread on one loop device, no file) through snoop's own
 * format.c and render.c into /dev/null (default) or a file, and prints ns per line.
 * What it leaves out is the ring buffer read and, with /dev/null, the file write.
 *
 * usage: snooplines [text|json] [OUTPUT] [LINES_PER_RUN]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/snoop/snoop.h"

#define LINES_PER_RUN 1000000L
#define RUNS	      7

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	bool json = argc > 1 && !strcmp(argv[1], "json");
	const char *path = argc > 2 ? argv[2] : "/dev/null";
	long lines = argc > 3 ? atol(argv[3]) : LINES_PER_RUN;
	struct snoop_format *fmt = NULL;
	struct snoop_render *r = NULL;
	double best = 1e30, t0, dt;
	struct snoop_line l;
	struct snoop_io e;
	uint64_t seed = 88172645463325252ULL;
	FILE *out;
	long i;
	int run;

	if (lines <= 0) {
		fprintf(stderr, "snooplines: LINES_PER_RUN must be a positive number\n");
		return 2;
	}
	out = fopen(path, "w");
	if (!out || snoop_format_new(-1, !json, NULL, &fmt) || snoop_render_new(out, json, &r)) {
		fprintf(stderr, "snooplines: cannot set up output to %s\n", path);
		return 1;
	}
	memset(&e, 0, sizeof(e));
	e.dev = 7 << 20; /* loop0 */
	e.bytes = 4096;
	e.op = SNOOP_OP_READ;
	e.pid = e.tid = 412345;
	e.kind = BLK_OWN_DIRECT;
	e.inflight = 32;
	e.nr_bios = 1;
	strcpy(e.comm, "fio");
	e.ts = 1000000000000ULL;
	for (run = 0; run < RUNS; run++) {
		t0 = now_s();
		for (i = 0; i < lines; i++) {
			/* xorshift: sectors and times vary as a random read's do. */
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			e.sector = (seed >> 20) % (2 << 20) * 8;
			e.ts += 5000 + (seed & 0xfff);
			/* Queued 2-18 us, on the device 112-194 us. */
			e.start_ns = e.ts - 130000 - (seed >> 40 & 0xffff);
			e.issue_ns = e.start_ns + 2000 + (seed >> 24 & 0x3fff);
			snoop_format(fmt, &e, &l);
			snoop_render_event(r, &e, &l);
		}
		snoop_render_flush(r);
		dt = now_s() - t0;
		if (dt < best)
			best = dt;
	}
	printf("%s: %.0f ns per line (best of %d runs of %ld lines)\n", json ? "json" : "text",
	       best * 1e9 / lines, RUNS, lines);
	snoop_render_free(r);
	snoop_format_free(fmt);
	fclose(out);
	return 0;
}
