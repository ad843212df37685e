/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stdout and stderr that a stop request (SIGINT, SIGTERM) can always get through.
 *
 * A reader that stops reading (`iospan top 1 | less`, left alone; a stopped job) would
 * otherwise block a write forever, and the signal handler (SA_RESTART) cannot end it.
 * Here every write first waits for room with ppoll(), which a stop request wakes, and
 * writes no more than the descriptor is known to take without blocking. Until a stop is
 * requested, output waits for the reader as long as it takes. After one, it waits at
 * most OUT_STOP_GRACE_MS in all: what the reader has not taken by then is dropped, so
 * the command can end (the final report goes out only if the reader takes it).
 */
#ifndef IOSPAN_OUTPUT_H
#define IOSPAN_OUTPUT_H

/* How long, in total, output may still wait for the reader once a stop is requested. */
#define OUT_STOP_GRACE_MS 500

/* Replaces stdout (line-buffered) and stderr (unbuffered) with such writers. */
int out_init(void);

/*
 * Flushes both streams and, if output was dropped, says so on stderr (even under
 * --json: stdout is what failed) and returns EXIT_RUNTIME; otherwise @exit_code.
 */
int out_finish(int exit_code);

#endif
