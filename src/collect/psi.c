// SPDX-License-Identifier: GPL-2.0
/* I/O pressure: the "some" and "full" lines of /proc/pressure/io (or a cgroup's). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "collect/psi.h"
#include "units.h"

static bool psi_parse_line(const char *line, const char *kind, double *avg10, uint64_t *total)
{
	unsigned long long t;
	const char *p;
	size_t n;

	if (strncmp(line, kind, strlen(kind)))
		return false;
	p = strstr(line, "avg10=");
	if (!p)
		return false;
	n = scan_decimal(p + 6, avg10);
	if (!n)
		return false;
	p = strstr(line, "total=");
	if (!p || sscanf(p + 6, "%llu", &t) != 1)
		return false;
	*total = t;
	return true;
}

void psi_read(const char *path, struct psi_io *p)
{
	char line[256];
	bool some = false, full = false;
	FILE *f;

	memset(p, 0, sizeof(*p));
	f = fopen(path, "r");
	if (!f)
		return; /* no CONFIG_PSI, or psi=0 on the command line */
	while (fgets(line, sizeof(line), f)) {
		some |= psi_parse_line(line, "some ", &p->some_avg10, &p->some_total_us);
		full |= psi_parse_line(line, "full ", &p->full_avg10, &p->full_total_us);
	}
	fclose(f);
	p->valid = some; /* "full" came with Linux 5.13 for io; older kernels: 0 */
}
