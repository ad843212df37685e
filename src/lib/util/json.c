// SPDX-License-Identifier: GPL-2.0
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "json.h"
#include "units.h"

#define JW_MAX_DEPTH 32
/* Output is gathered here and written a value at a time (or when this is full). */
#define JW_BUF_BYTES 16384

struct jw {
	FILE *out;
	size_t len;
	char buf[JW_BUF_BYTES];
	int depth;
	/* Whether the container at each depth already holds a member. */
	bool has_member[JW_MAX_DEPTH];
	/* A name was just written: the next value follows it without a comma. */
	bool after_name;
	/* Top-level values are not flushed each (jw_flush_lines()). */
	bool no_line_flush;
};

/*
 * What was gathered, to the stream: one stdio call per top-level value instead of one
 * per token (a snoop line in JSON went from 638 to ~300 ns, most of it stdio's locks).
 */
static void jw_drain(struct jw *jw)
{
	if (jw->len)
		fwrite(jw->buf, 1, jw->len, jw->out);
	jw->len = 0;
}

static void jw_put(struct jw *jw, const void *s, size_t n)
{
	if (n > JW_BUF_BYTES - jw->len) {
		jw_drain(jw);
		if (n > JW_BUF_BYTES) {
			fwrite(s, 1, n, jw->out);
			return;
		}
	}
	/* Mostly a few bytes (a name, a number): a loop, not a call. */
	if (n <= 16) {
		const char *from = s;
		char *to = jw->buf + jw->len;

		jw->len += n;
		while (n--)
			*to++ = *from++;
		return;
	}
	memcpy(jw->buf + jw->len, s, n);
	jw->len += n;
}

static void jw_putc(struct jw *jw, char c)
{
	if (jw->len == JW_BUF_BYTES)
		jw_drain(jw);
	jw->buf[jw->len++] = c;
}

static void jw_puts(struct jw *jw, const char *s)
{
	jw_put(jw, s, strlen(s));
}

struct jw *jw_new(FILE *out)
{
	/* Not calloc: the buffer needs no zeroing (a writer is made per slow request). */
	struct jw *jw = malloc(sizeof(*jw));

	if (!jw)
		return NULL;
	jw->out = out;
	jw->len = 0;
	jw->depth = 0;
	memset(jw->has_member, 0, sizeof(jw->has_member));
	jw->after_name = false;
	jw->no_line_flush = false;
	return jw;
}

/* Not a write: the stream may be closed already (an unfinished value is dropped). */
void jw_free(struct jw *jw)
{
	free(jw);
}

void jw_flush_lines(struct jw *jw, bool on)
{
	jw->no_line_flush = !on;
}

int jw_depth(const struct jw *jw)
{
	return jw->depth;
}

/* Separator before a new value or name at the current depth. */
static void jw_sep(struct jw *jw)
{
	if (jw->after_name) {
		jw->after_name = false;
		return;
	}
	if (jw->depth > 0 && jw->has_member[jw->depth])
		jw_putc(jw, ',');
	if (jw->depth > 0)
		jw->has_member[jw->depth] = true;
}

static void jw_value_done(struct jw *jw)
{
	if (jw->depth == 0) {
		jw_putc(jw, '\n');
		jw_drain(jw);
		if (!jw->no_line_flush)
			fflush(jw->out);
	}
}

static void jw_open(struct jw *jw, char c)
{
	jw_sep(jw);
	jw_putc(jw, c);
	if (jw->depth < JW_MAX_DEPTH - 1)
		jw->depth++;
	jw->has_member[jw->depth] = false;
}

static void jw_close(struct jw *jw, char c)
{
	jw_putc(jw, c);
	if (jw->depth > 0)
		jw->depth--;
	jw_value_done(jw);
}

void jw_start_object(struct jw *jw)
{
	jw_open(jw, '{');
}

void jw_end_object(struct jw *jw)
{
	jw_close(jw, '}');
}

void jw_start_array(struct jw *jw)
{
	jw_open(jw, '[');
}

void jw_end_array(struct jw *jw)
{
	jw_close(jw, ']');
}

size_t utf8_seq_len(const unsigned char *p)
{
	size_t n, i;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0; /* a continuation byte, or leading an overlong form or > U+10FFFF */
	}
	/* A NUL ends the string, and is no continuation byte: short sequences stop there. */
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool utf8_copy(char *dst, size_t len, const char *src)
{
	static const char mark[] = "...";
	size_t n = strlen(src);

	if (!len)
		return n > 0;
	if (n < len) {
		memcpy(dst, src, n + 1);
		return false;
	}
	if (len <= sizeof(mark)) {
		dst[0] = '\0';
		return true;
	}
	n = len - sizeof(mark);
	/* Back to the start of the character that would be cut. */
	while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
		n--;
	memcpy(dst, src, n);
	memcpy(dst + n, mark, sizeof(mark));
	return true;
}

/* The characters JSON escapes with a letter (the other controls: \uXXXX). */
static const char *const short_escapes['\\' + 1] = {
	['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\t'] = "\\t", ['\r'] = "\\r",
};

static void jw_quoted(struct jw *jw, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n;

	jw_putc(jw, '"');
	for (; *p; p++) {
		/* A run of bytes written as they are, in one go. */
		for (n = 0; p[n] >= 0x20 && p[n] < 0x7f && p[n] != '"' && p[n] != '\\'; n++)
			;
		if (n) {
			jw_put(jw, p, n);
			p += n - 1;
			continue;
		}
		if (*p < ARRAY_SIZE(short_escapes) && short_escapes[*p]) {
			jw_puts(jw, short_escapes[*p]);
		} else if (*p < 0x20 || *p == 0x7f) {
			char u[8];

			jw_put(jw, u, snprintf(u, sizeof(u), "\\u%04x", *p));
		} else if (*p < 0x80) {
			jw_putc(jw, *p);
		} else {
			n = utf8_seq_len(p);
			if (!n) {
				/* Not UTF-8 (a raw byte of a name): U+FFFD. */
				jw_puts(jw, "\\ufffd");
			} else {
				jw_put(jw, p, n);
				p += n - 1;
			}
		}
	}
	jw_putc(jw, '"');
}

void jw_name(struct jw *jw, const char *name)
{
	size_t n = 0;
	char *to;

	jw_sep(jw);
	jw->after_name = true;
	/* Plain characters (iospan's own names): with its quotes and colon, in one go. */
	while (name[n] >= 0x20 && name[n] < 0x7f && name[n] != '"' && name[n] != '\\')
		n++;
	if (!name[n] && n + 3 <= JW_BUF_BYTES - jw->len) {
		to = jw->buf + jw->len;
		*to++ = '"';
		memcpy(to, name, n);
		to[n] = '"';
		to[n + 1] = ':';
		jw->len += n + 3;
		return;
	}
	jw_quoted(jw, name);
	jw_putc(jw, ':');
}

void jw_string(struct jw *jw, const char *s)
{
	jw_sep(jw);
	jw_quoted(jw, s);
	jw_value_done(jw);
}

/* @v in decimal, "-" first if @neg; with @point (up to 18), its last @point digits after a dot. */
static void put_decimal(struct jw *jw, bool neg, uint64_t v, int point)
{
	uint64_t unit = 1;
	int i;
	char buf[48], *end = buf + sizeof(buf), *s;

	if (!point) {
		s = fmt_u64_back(end, v);
	} else {
		/* The fraction zero-padded to @point digits, the dot, the whole part. */
		for (i = 0; i < point; i++)
			unit *= 10;
		s = fmt_u64_back(end, v % unit);
		while (end - s < point)
			*--s = '0';
		*--s = '.';
		s = fmt_u64_back(s, v / unit);
	}
	if (neg)
		*--s = '-';
	jw_put(jw, s, end - s);
}

void jw_uint(struct jw *jw, uint64_t v)
{
	jw_sep(jw);
	put_decimal(jw, false, v, 0);
	jw_value_done(jw);
}

void jw_int(struct jw *jw, int64_t v)
{
	jw_sep(jw);
	put_decimal(jw, v < 0, v < 0 ? -(uint64_t)v : (uint64_t)v, 0);
	jw_value_done(jw);
}

void jw_fixed(struct jw *jw, int64_t v, int decimals)
{
	jw_sep(jw);
	if (decimals < 0 || decimals > 18)
		decimals = 0;
	put_decimal(jw, v < 0, v < 0 ? -(uint64_t)v : (uint64_t)v, decimals);
	jw_value_done(jw);
}

/* "%.*f" of @v: a finite double's digits can run to hundreds. */
static void jw_put_float(struct jw *jw, double v, int decimals)
{
	char buf[64], *big = NULL;
	int n = snprintf(buf, sizeof(buf), "%.*f", decimals, v);

	if (n < 0)
		return;
	if ((size_t)n < sizeof(buf)) {
		jw_put(jw, buf, n);
		return;
	}
	if (asprintf(&big, "%.*f", decimals, v) >= 0)
		jw_put(jw, big, strlen(big));
	free(big);
}

void jw_float(struct jw *jw, double v, int decimals)
{
	jw_sep(jw);
	if (!isfinite(v))
		jw_puts(jw, "null");
	else
		jw_put_float(jw, v == 0.0 ? 0.0 : v, decimals);
	jw_value_done(jw);
}

void jw_bool(struct jw *jw, bool v)
{
	jw_sep(jw);
	jw_puts(jw, v ? "true" : "false");
	jw_value_done(jw);
}

void jw_null(struct jw *jw)
{
	jw_sep(jw);
	jw_puts(jw, "null");
	jw_value_done(jw);
}

void jw_kv_string(struct jw *jw, const char *name, const char *s)
{
	jw_name(jw, name);
	jw_string(jw, s);
}

void jw_kv_uint(struct jw *jw, const char *name, uint64_t v)
{
	jw_name(jw, name);
	jw_uint(jw, v);
}

void jw_kv_int(struct jw *jw, const char *name, int64_t v)
{
	jw_name(jw, name);
	jw_int(jw, v);
}

void jw_kv_float(struct jw *jw, const char *name, double v, int decimals)
{
	jw_name(jw, name);
	jw_float(jw, v, decimals);
}

void jw_kv_fixed(struct jw *jw, const char *name, int64_t v, int decimals)
{
	jw_name(jw, name);
	jw_fixed(jw, v, decimals);
}

void jw_kv_bool(struct jw *jw, const char *name, bool v)
{
	jw_name(jw, name);
	jw_bool(jw, v);
}

void jw_kv_null(struct jw *jw, const char *name)
{
	jw_name(jw, name);
	jw_null(jw);
}

void jw_kv_string_or_null(struct jw *jw, const char *name, const char *s)
{
	if (s)
		jw_kv_string(jw, name, s);
	else
		jw_kv_null(jw, name);
}

void jw_kv_uint_or_null(struct jw *jw, const char *name, bool known, uint64_t v)
{
	if (known)
		jw_kv_uint(jw, name, v);
	else
		jw_kv_null(jw, name);
}

void jw_kv_object(struct jw *jw, const char *name)
{
	jw_name(jw, name);
	jw_start_object(jw);
}

void jw_kv_array(struct jw *jw, const char *name)
{
	jw_name(jw, name);
	jw_start_array(jw);
}

char *jw_text(void (*fill)(struct jw *jw, const void *arg), const void *arg, size_t *len)
{
	char *text = NULL;
	size_t n = 0;
	struct jw *jw;
	FILE *f;

	f = open_memstream(&text, &n);
	if (!f)
		return NULL;
	jw = jw_new(f);
	if (jw) {
		jw_flush_lines(jw, false);
		fill(jw, arg);
		jw_free(jw);
	}
	if (fclose(f) || !jw) {
		free(text);
		return NULL;
	}
	while (n && text[n - 1] == '\n')
		text[--n] = '\0';
	if (len)
		*len = n;
	return text;
}
