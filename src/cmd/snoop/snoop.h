/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan snoop: one line per completed block request. A front-end of snoop's collector
 * (src/collect/snoop.h): snoop.c parses the options and runs the loop; render.c writes
 * the records as text or JSON Lines, and the closing counts.
 */
#ifndef IOSPAN_CMD_SNOOP_H
#define IOSPAN_CMD_SNOOP_H

#include <stdbool.h>
#include <stdio.h>

#include "collect/snoop.h"

/* render.c */
struct snoop_render;
/* Writes to @out: text (a header line first), or JSON Lines with @json. */
int snoop_render_new(FILE *out, bool json, struct snoop_render **outp);
void snoop_render_free(struct snoop_render *r);
void snoop_render_event(struct snoop_render *r, const struct snoop_io *e,
			const struct snoop_line *l);
/* Writes the lines kept so far and flushes @out: 0 or -EIO. */
int snoop_render_flush(struct snoop_render *r);

/* JSON: the trailer object on @out; text: a summary on stderr. */
void snoop_render_totals(struct snoop_render *r, const struct snoop_totals *t);

#endif
