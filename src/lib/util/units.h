/* SPDX-License-Identifier: GPL-2.0 */
/* Human-readable sizes and durations for tables: short, fixed units, never garbage. */
#ifndef IOSPAN_UNITS_H
#define IOSPAN_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NSEC_PER_SEC ((uint64_t)1000000000)

/* Longest result of either function, including the NUL. */
#define UNITS_BUF 16

/*
 * Bytes in binary units: "0", "512", "1.5K", "12M", "1.2G", "3T"; one decimal below 10
 * of a unit, none above, so the result fits in 5 characters up to 999 exbibytes.
 */
const char *fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* Like fmt_bytes() for a rate: @bytes over @seconds (0 seconds gives "0"). */
const char *fmt_rate(uint64_t bytes, double seconds, char *buf, size_t len);
/*
 * A decimal number at the start of @s, as people and /proc write them: digits with an
 * optional fraction ("12", "0.5", ".5"). No sign, exponent, hex, inf or nan: "0x10" and
 * "1e-9" read as "0" and "1" with the rest left over. Returns the characters read (0:
 * no number) and the value in @v.
 */
size_t scan_decimal(const char *s, double *v);

/*
 * @v in decimal, written backwards so that it ends just before @end (no NUL): returns
 * where it starts. Two digits a division, in 32 bits once it fits: per-event output
 * (snoop lines, JSON) writes millions of numbers. UNITS_U64_DIGITS bytes suffice.
 */
#define UNITS_U64_DIGITS 20
char *fmt_u64_back(char *end, uint64_t v);

/* The digits of @v in decimal: where fmt_u64_back() must end to start at a place. */
static inline unsigned int fmt_u64_digits(uint64_t v)
{
	unsigned int n = 1;

	for (; v >= 10; v /= 10)
		n++;
	return n;
}

/* Nanoseconds as "850ns", "12us", "1.5ms", "2.0s", "95s": one decimal below 10. */
const char *fmt_ns(uint64_t ns, char *buf, size_t len);
/* The same, returning the length written (for output built without strlen). */
size_t fmt_ns_n(uint64_t ns, char *buf, size_t len);

/*
 * Seconds since 1970 as local time, "2026-11-23 15:38:37" (@with_date) or "15:38:37"
 * (fractions dropped); "-" for a time at or before 1970 or one that cannot be shown.
 */
const char *fmt_local_time(double epoch_s, bool with_date, char *buf, size_t len);

#endif
