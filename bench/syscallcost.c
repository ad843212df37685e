// SPDX-License-Identifier: GPL-2.0
/*
 * syscallcost: the time of one cheap system call, best of several runs. Any syscall
 * tracepoint puts every task's syscalls on the kernel's tracing path, so run it alone
 * and next to a tracer (or bench/hookfloor) to see what a tracer costs every syscall
 * of every process: `getppid` (default) is one no tracer looks at, `pread` a 1-byte
 * read of a file in /dev/shm (page cache only), one that syscall tracepoints of the
 * read family fire on.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define CALLS_PER_RUN 2000000L
#define RUNS	      7
#define PREAD_FILE    "/dev/shm/iospan-syscallcost"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "getppid";
	double best = 0, t0, ns;
	int r, fd = -1;
	char byte;
	long i;

	if (argc > 2 || (strcmp(what, "getppid") && strcmp(what, "pread"))) {
		fprintf(stderr, "usage: syscallcost [getppid|pread] (pin it with taskset)\n");
		return 2;
	}
	if (!strcmp(what, "pread")) {
		fd = open(PREAD_FILE, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, "x", 1) != 1) {
			perror("syscallcost: " PREAD_FILE);
			return 1;
		}
		unlink(PREAD_FILE);
	}
	for (r = 0; r < RUNS; r++) {
		t0 = now_ns();
		for (i = 0; i < CALLS_PER_RUN; i++) {
			if (fd >= 0)
				(void)!pread(fd, &byte, 1, 0);
			else
				syscall(SYS_getppid);
		}
		ns = (now_ns() - t0) / CALLS_PER_RUN;
		if (!best || ns < best)
			best = ns;
	}
	printf("%.1f ns per syscall (%s, best of %d x %ld)\n", best, what, RUNS, CALLS_PER_RUN);
	if (fd >= 0)
		close(fd);
	return 0;
}
