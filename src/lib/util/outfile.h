/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Output files whose write failures are kept with their errno (ENOSPC, EIO...), which
 * stdio loses, and, when asked, written whole or not at all: the data goes to a
 * temporary file beside the target, renamed over it once every byte is written, so a
 * failed write leaves no cut file (and whatever was there untouched).
 */
#ifndef IOSPAN_OUTFILE_H
#define IOSPAN_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

struct outfile;

/*
 * Opens @path for writing (NULL: stdout). @whole: through a temporary file (mode 0600)
 * renamed at the end; a path that exists and is not a regular file (/dev/full, a FIFO,
 * /dev/stdout) is written directly. -errno if it cannot be created.
 */
int outfile_open(struct outfile **of, const char *path, bool whole);
FILE *outfile_stream(struct outfile *of);
/* The -errno of the first write that failed so far, 0 if none. */
int outfile_error(const struct outfile *of);
/*
 * Flushes and closes @of; the -errno of the first write (or the rename) that failed, 0
 * if the file is complete. @keep false (the caller failed) or a failed write: a @whole
 * file is discarded.
 */
int outfile_close(struct outfile *of, bool keep);

#endif
