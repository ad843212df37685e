// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* fmt_ns() through printf: its reference, used where the quick way cannot round alike. */
static const char *fmt_ns_printf(uint64_t ns, char *buf, size_t len)
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

char *fmt_u64_back(char *end, uint64_t v)
{
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
				       "25262728293031323334353637383940414243444546474849"
				       "50515253545556575859606162636465666768697071727374"
				       "75767778798081828384858687888990919293949596979899";
	char *p = end;
	uint32_t v32;

	while (v > UINT32_MAX) {
		p -= 2;
		memcpy(p, pairs + v % 100 * 2, 2);
		v /= 100;
	}
	v32 = v;
	while (v32 >= 100) {
		p -= 2;
		memcpy(p, pairs + v32 % 100 * 2, 2);
		v32 /= 100;
	}
	if (v32 >= 10) {
		p -= 2;
		memcpy(p, pairs + v32 * 2, 2);
	} else {
		*--p = '0' + v32;
	}
	return p;
}

/* @v in decimal at @p (no NUL): returns the digits written. */
static size_t put_decimal(char *p, uint64_t v)
{
	size_t n = fmt_u64_digits(v);

	fmt_u64_back(p + n, v);
	return n;
}

/* @v / 10^(3 * (@step + 1)): a constant divisor each, which compilers multiply by. */
static inline uint64_t div_step(uint64_t v, int step)
{
	switch (step) {
	case 0:
		return v / 1000;
	case 1:
		return v / 1000000;
	default:
		return v / 1000000000;
	}
}

/*
 * The same text as fmt_ns_printf() in integers (per-event output calls it a million
 * times): v = ns / div as a fraction is exact, so the unit and decimals chosen by
 * comparing v with 999.5 and 9.95 are the same, and so is rounding, except on an exact
 * tie, where printf rounds the double nearest v (to even): those go through printf.
 */
size_t fmt_ns_n(uint64_t ns, char *buf, size_t len)
{
	static const char units[3][3] = {"us", "ms", "s"};
	static const uint64_t divs[3] = {1000, 1000000, 1000000000};
	char tmp[UNITS_BUF];
	uint64_t div, q, r;
	size_t n;
	int i;

	/* Beyond this, ns * 100 could overflow: a run of years, printed the slow way. */
	if (ns >= 100000000000000000ULL)
		goto slow;
	for (i = 0; i < 2; i++)
		if (ns * 2 < 1999 * divs[i])
			break;
	div = divs[i];
	if (ns < 1000) {
		n = put_decimal(tmp, ns);
		memcpy(tmp + n, "ns", 2);
		n += 2;
	} else if (ns * 100 < 995 * div) {
		q = div_step(ns * 10, i);
		r = ns * 10 - q * div;
		if (r * 2 == div)
			goto slow;
		q += r * 2 > div; /* tenths, rounded */
		n = put_decimal(tmp, q / 10);
		tmp[n++] = '.';
		tmp[n++] = '0' + q % 10;
		tmp[n++] = units[i][0];
		if (units[i][1])
			tmp[n++] = units[i][1];
	} else {
		q = div_step(ns, i);
		r = ns - q * div;
		if (r * 2 == div)
			goto slow;
		n = put_decimal(tmp, q + (r * 2 > div));
		tmp[n++] = units[i][0];
		if (units[i][1])
			tmp[n++] = units[i][1];
	}
	if (!len)
		return 0;
	if (n >= len)
		n = len - 1;
	/* Mostly a buffer of UNITS_BUF: one move of that size, no call. */
	if (len >= sizeof(tmp))
		memcpy(buf, tmp, sizeof(tmp));
	else
		memcpy(buf, tmp, n);
	buf[n] = 0;
	return n;
slow:
	fmt_ns_printf(ns, buf, len);
	return len ? strlen(buf) : 0;
}

const char *fmt_ns(uint64_t ns, char *buf, size_t len)
{
	fmt_ns_n(ns, buf, len);
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

const char *fmt_local_time(double epoch_s, bool with_date, char *buf, size_t len)
{
	time_t t = (time_t)epoch_s;
	struct tm tm;

	if (epoch_s <= 0 || !localtime_r(&t, &tm))
		snprintf(buf, len, "-");
	else
		strftime(buf, len, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
	return buf;
}
