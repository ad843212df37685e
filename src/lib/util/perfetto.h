/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Chrome Trace Event JSON files, which the Perfetto UI (ui.perfetto.dev) and
 * chrome://tracing open: one track per thread, complete events ("X") nest by time;
 * counters ("C") per process.
 * Times are given in ns (CLOCK_MONOTONIC) and written in µs as the format wants.
 */
#ifndef IOSPAN_PERFETTO_H
#define IOSPAN_PERFETTO_H

#include <stdbool.h>
#include <stdint.h>

#include "json.h"

struct perfetto;

/* Creates @path; -errno if it cannot be written. */
int perfetto_open(struct perfetto **pf, const char *path);
/* Or @path NULL: stdout; @whole: written whole or not at all (outfile.h). */
int perfetto_create(struct perfetto **pf, const char *path, bool whole);
/*
 * Writes the closing brackets and closes the file; the -errno of the first write that
 * failed (ENOSPC on a full disk...), 0 if the file is complete.
 */
int perfetto_close(struct perfetto *pf);
/* Closes the file and, if it was opened @whole, removes it. */
void perfetto_discard(struct perfetto *pf);
/* The -errno of the first write that failed so far, 0 if none. */
int perfetto_error(const struct perfetto *pf);

/* Names a process / thread track (once per id; repeated calls are ignored). */
void perfetto_process(struct perfetto *pf, uint32_t pid, const char *name);
void perfetto_thread(struct perfetto *pf, uint32_t pid, uint32_t tid, const char *name);

/*
 * A span [ts, ts + dur) on a thread's track, or an instant event. Both leave the event's
 * "args" object open on the returned writer for the caller's fields; perfetto_end() closes
 * it. Spans on one track nest when one lies inside the other: write parents first.
 */
struct jw *perfetto_span(struct perfetto *pf, const char *name, const char *cat, uint32_t pid,
			 uint32_t tid, uint64_t ts_ns, uint64_t dur_ns);
struct jw *perfetto_instant(struct perfetto *pf, const char *name, const char *cat, uint32_t pid,
			    uint32_t tid, uint64_t ts_ns);
/* A span with no args from @from to @to (none before @from: an empty one). */
void perfetto_slice(struct perfetto *pf, const char *name, const char *cat, uint32_t pid,
		    uint32_t tid, uint64_t from, uint64_t to);
/*
 * A counter event: each field the caller writes in the returned "args" object is a
 * counter of process @pid's, named "@name field" in Perfetto, that holds the value from
 * @ts_ns until its next event. perfetto_end() closes it.
 */
struct jw *perfetto_counter(struct perfetto *pf, const char *name, uint32_t pid, uint64_t ts_ns);
void perfetto_end(struct perfetto *pf);

#endif
