// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

const char *fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (v < 9.95)
		snprintf(buf, len, "%.1f%c", v, units[u]);
	else if (v < 1023.5 || u == 5)
		snprintf(buf, len, "%.0f%c", v, units[u]);
	else /* would round to "1024": the next unit */
		snprintf(buf, len, "1.0%c", units[u + 1]);
	return buf;
}

const char *fmt_rate(uint64_t bytes, double seconds, char *buf, size_t len)
{
	if (seconds <= 0)
		return fmt_bytes(0, buf, len);
	return fmt_bytes((uint64_t)(bytes / seconds + 0.5), buf, len);
}

const char *fmt_ns(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		double div;
		const char *unit;
	} steps[] = {{1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
	double v;
	int i;

	if (ns < 1000) {
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
		return buf;
	}
	for (i = 0; i < 3; i++) {
		v = ns / steps[i].div;
		/* Move up a unit when this one would print 1000 or more (after rounding). */
		if (i < 2 && v >= 999.5)
			continue;
		if (v < 9.95)
			snprintf(buf, len, "%.1f%s", v, steps[i].unit);
		else
			snprintf(buf, len, "%.0f%s", v, steps[i].unit);
		break;
	}
	return buf;
}

size_t scan_decimal(const char *s, double *v)
{
	char buf[64];
	size_t int_digits = 0, frac_digits = 0, n;

	while (isdigit((unsigned char)s[int_digits]))
		int_digits++;
	n = int_digits;
	if (s[n] == '.')
		while (isdigit((unsigned char)s[n + 1 + frac_digits]))
			frac_digits++;
	if (!int_digits && !frac_digits)
		return 0;
	if (frac_digits || s[n] == '.')
		n += 1 + frac_digits;
	/* strtod on a copy: on the original it would go on into "e5" or "x10". */
	if (n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*v = strtod(buf, NULL);
	return n;
}
