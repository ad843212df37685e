// SPDX-License-Identifier: GPL-2.0
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "printable.h"

/* Unicode code point of a well-formed UTF-8 character of @n bytes. */
static uint32_t utf8_decode(const unsigned char *s, size_t n)
{
	static const unsigned char first_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	uint32_t c = s[0] & first_mask[n];
	size_t i;

	for (i = 1; i < n; i++)
		c = c << 6 | (s[i] & 0x3f);
	return c;
}

/* Characters that change how a terminal shows the text around them. */
static bool is_format_control(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
	       (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

char *printable_buf(const char *str, char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	char unit[32]; /* the escaped form of one character (at most 4 bytes of \xHH) */
	size_t used = 0, n, k, w;

	if (!len)
		return buf;
	while (*s) {
		n = utf8_seq_len(s);
		if (n == 1 && *s == '\\') {
			w = snprintf(unit, sizeof(unit), "\\\\");
		} else if (n == 1 && (*s == '\n' || *s == '\t' || *s == '\r')) {
			w = snprintf(unit, sizeof(unit), "\\%c",
				     *s == '\n' ? 'n' :
				     *s == '\t' ? 't' :
						  'r');
		} else if (n == 1 && (*s < 0x20 || *s == 0x7f)) {
			w = snprintf(unit, sizeof(unit), "\\x%02x", *s);
		} else if (!n) {
			n = 1; /* not UTF-8: that one byte */
			w = snprintf(unit, sizeof(unit), "\\x%02x", *s);
		} else if (n > 1 && is_format_control(utf8_decode(s, n))) {
			for (k = w = 0; k < n; k++)
				w += snprintf(unit + w, sizeof(unit) - w, "\\x%02x", s[k]);
		} else {
			memcpy(unit, s, n);
			w = n;
		}
		if (used + w >= len)
			break;
		memcpy(buf + used, unit, w);
		used += w;
		s += n;
	}
	buf[used] = '\0';
	return buf;
}

const char *printable(const char *s)
{
	/* Every byte of a path may take 4 ("\xff"). */
	static char slots[PRINTABLE_SLOTS][4 * PATH_MAX + 1];
	static unsigned int next;
	char *buf = slots[next++ % PRINTABLE_SLOTS];

	return printable_buf(s, buf, sizeof(slots[0]));
}
