/* SPDX-License-Identifier: GPL-2.0 */
/* I/O pressure (PSI): /proc/pressure/io, or a cgroup's io.pressure (src/collect/psi.c). */
#ifndef IOSPAN_COLLECT_PSI_H
#define IOSPAN_COLLECT_PSI_H

#include <stdbool.h>
#include <stdint.h>

struct psi_io {
	bool valid;
	double some_avg10, full_avg10;
	uint64_t some_total_us, full_total_us;
};

/* Reads /proc/pressure/io (or @path) into @p; p->valid false if the kernel has no PSI. */
void psi_read(const char *path, struct psi_io *p);

#endif
