/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan lat: block request latency and size distributions, printed as log2 bars with
 * percentiles. A front-end of lat's collector (src/collect/lat.h): lat.c parses the
 * options and runs the loop, render.c prints each report as text or JSON.
 */
#ifndef IOSPAN_CMD_LAT_H
#define IOSPAN_CMD_LAT_H

#include <stdint.h>

#include "collect/lat.h"

struct lat_cmd {
	struct lat_opts o;
	uint64_t interval_ns, count;
	struct lat_ctx *c;
	struct lat_view view;
};

/* render.c */
int lat_render(const struct lat_view *v, const struct lat_report *r);
const char *lat_stage_name(uint32_t stage);

#endif
