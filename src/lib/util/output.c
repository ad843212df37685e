// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "err.h"
#include "output.h"

struct out_stream {
	int fd;
	/* Whether a write can block (pipe, socket, terminal): then ppoll() first. */
	bool can_block;
	/* The largest write the descriptor takes without blocking once it polls writable. */
	size_t chunk;
	/* The first failure; everything written after it is dropped. */
	int err;
	uint64_t dropped;
};

static struct out_stream out_streams[2] = {
	{.fd = STDOUT_FILENO, .chunk = SIZE_MAX},
	{.fd = STDERR_FILENO, .chunk = SIZE_MAX},
};

/* What is left of OUT_STOP_GRACE_MS, shared by both streams. */
static uint64_t grace_left_ns = OUT_STOP_GRACE_MS * 1000000ULL;

/*
 * Waits until @fd takes output. 0 when it does (or may: the caller writes and sees),
 * -ETIMEDOUT once a stop was requested and the grace is used up.
 */
static int wait_writable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	struct timespec ts;
	sigset_t stop_sigs, old;
	uint64_t start, spent;
	bool stopping;
	int n;

	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	for (;;) {
		if (!stop_requested && poll(&pfd, 1, 0) > 0)
			return 0;
		/* Blocked from the check until ppoll() waits: a stop cannot slip between. */
		sigprocmask(SIG_BLOCK, &stop_sigs, &old);
		stopping = stop_requested;
		ts.tv_sec = grace_left_ns / 1000000000ULL;
		ts.tv_nsec = grace_left_ns % 1000000000ULL;
		start = now_ns(CLOCK_MONOTONIC);
		/* With the grace used up, a zero timeout still takes what is writable now. */
		n = ppoll(&pfd, 1, stopping ? &ts : NULL, &old);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (!stopping) {
			if (n > 0)
				return 0;
			continue; /* a stop request (or another signal) woke it: look again */
		}
		spent = now_ns(CLOCK_MONOTONIC) - start;
		grace_left_ns = n == 0 || spent >= grace_left_ns ? 0 : grace_left_ns - spent;
		if (n > 0)
			return 0;
		if (!grace_left_ns)
			return -ETIMEDOUT;
	}
}

/* fopencookie() write: always "accepts" everything; what it could not write is counted. */
static ssize_t out_write(void *cookie, const char *buf, size_t size)
{
	struct out_stream *o = cookie;
	size_t done = 0, len;
	ssize_t n;

	while (done < size && !o->err) {
		if (o->can_block) {
			o->err = wait_writable(o->fd);
			if (o->err)
				break;
		}
		len = size - done < o->chunk ? size - done : o->chunk;
		n = write(o->fd, buf + done, len);
		if (n > 0) {
			done += n;
		} else if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
			continue;
		} else {
			o->err = n < 0 ? -errno : -EIO;
			/* With SIGPIPE ignored, a reader that went away still ends the command. */
			if (o->err == -EPIPE)
				stop_requested = 1;
		}
	}
	o->dropped += size - done;
	return size;
}

static FILE *out_open(struct out_stream *o, int buf_mode)
{
	cookie_io_functions_t fns = {.write = out_write};
	struct stat st;
	FILE *f;

	if (!fstat(o->fd, &st) && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		o->can_block = true;
		/* A pipe that polls writable has a free page: PIPE_BUF bytes fit at once. */
		o->chunk = PIPE_BUF;
	}
	f = fopencookie(o, "w", fns);
	if (f)
		setvbuf(f, NULL, buf_mode, 0);
	return f;
}

int out_init(void)
{
	FILE *out, *errs;

	out = out_open(&out_streams[0], _IOLBF);
	errs = out_open(&out_streams[1], _IONBF);
	if (!out || !errs) {
		if (out)
			fclose(out);
		if (errs)
			fclose(errs);
		return -ENOMEM;
	}
	fflush(stdout);
	fflush(stderr);
	stdout = out;
	stderr = errs;
	return 0;
}

int out_finish(int exit_code)
{
	struct out_stream *o = &out_streams[0];

	fflush(stdout);
	fflush(stderr);
	if (!o->dropped)
		return exit_code;
	if (o->err == -ETIMEDOUT)
		fprintf(stderr,
			"iospan: %" PRIu64 " bytes of output not written: the reader did not "
			"take them within %.1f s of the stop request\n",
			o->dropped, OUT_STOP_GRACE_MS / 1000.0);
	else
		fprintf(stderr, "iospan: cannot write the output: %s (%" PRIu64 " bytes lost)\n",
			strerror(-o->err), o->dropped);
	return exit_code ? exit_code : EXIT_RUNTIME;
}
