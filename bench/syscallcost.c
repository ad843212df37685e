// SPDX-License-Identifier: GPL-2.0
/*
 * syscallcost: the time of one trivial system call (getppid), best of several runs.
 * Any syscall tracepoint puts every task's syscalls on the kernel's tracing path, so
 * run it once alone and once next to a tracer (or bench/hookfloor) to see what a
 * tracer costs every syscall of every process, even those it never traces.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define CALLS_PER_RUN 2000000L
#define RUNS	      7

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	double best = 0, t0, ns;
	long i;
	int r;

	if (argc > 1) {
		fprintf(stderr, "usage: syscallcost (no arguments; pin it with taskset)\n");
		return 2;
	}
	for (r = 0; r < RUNS; r++) {
		t0 = now_ns();
		for (i = 0; i < CALLS_PER_RUN; i++)
			syscall(SYS_getppid);
		ns = (now_ns() - t0) / CALLS_PER_RUN;
		if (!best || ns < best)
			best = ns;
	}
	printf("%.1f ns per syscall (getppid, best of %d x %ld)\n", best, RUNS, CALLS_PER_RUN);
	return 0;
}
