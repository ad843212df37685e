// SPDX-License-Identifier: GPL-2.0
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define JW_MAX_DEPTH 32

struct jw {
	FILE *out;
	int depth;
	/* Whether the container at each depth already holds a member. */
	bool has_member[JW_MAX_DEPTH];
	/* A name was just written: the next value follows it without a comma. */
	bool after_name;
	/* Top-level values are not flushed each (jw_flush_lines()). */
	bool no_line_flush;
};

struct jw *jw_new(FILE *out)
{
	struct jw *jw = calloc(1, sizeof(*jw));

	if (jw)
		jw->out = out;
	return jw;
}

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
		fputc(',', jw->out);
	if (jw->depth > 0)
		jw->has_member[jw->depth] = true;
}

static void jw_value_done(struct jw *jw)
{
	if (jw->depth == 0) {
		fputc('\n', jw->out);
		if (!jw->no_line_flush)
			fflush(jw->out);
	}
}

static void jw_open(struct jw *jw, char c)
{
	jw_sep(jw);
	fputc(c, jw->out);
	if (jw->depth < JW_MAX_DEPTH - 1)
		jw->depth++;
	jw->has_member[jw->depth] = false;
}

static void jw_close(struct jw *jw, char c)
{
	fputc(c, jw->out);
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

static void jw_quoted(struct jw *jw, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n;

	fputc('"', jw->out);
	for (; *p; p++) {
		/* A run of bytes written as they are, in one go. */
		for (n = 0; p[n] >= 0x20 && p[n] < 0x7f && p[n] != '"' && p[n] != '\\'; n++)
			;
		if (n) {
			fwrite(p, 1, n, jw->out);
			p += n - 1;
			continue;
		}
		switch (*p) {
		case '"':
			fputs("\\\"", jw->out);
			break;
		case '\\':
			fputs("\\\\", jw->out);
			break;
		case '\n':
			fputs("\\n", jw->out);
			break;
		case '\t':
			fputs("\\t", jw->out);
			break;
		case '\r':
			fputs("\\r", jw->out);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(jw->out, "\\u%04x", *p);
			} else if (*p < 0x80) {
				fputc(*p, jw->out);
			} else {
				n = utf8_seq_len(p);
				if (!n) {
					/* Not UTF-8 (a raw byte of a name): U+FFFD. */
					fputs("\\ufffd", jw->out);
				} else {
					fwrite(p, 1, n, jw->out);
					p += n - 1;
				}
			}
		}
	}
	fputc('"', jw->out);
}

void jw_name(struct jw *jw, const char *name)
{
	jw_sep(jw);
	jw_quoted(jw, name);
	fputc(':', jw->out);
	jw->after_name = true;
}

void jw_string(struct jw *jw, const char *s)
{
	jw_sep(jw);
	jw_quoted(jw, s);
	jw_value_done(jw);
}

/* @v in decimal, "-" first if @neg; with @point, its last @point digits after a dot. */
static void put_decimal(struct jw *jw, bool neg, uint64_t v, int point)
{
	char buf[48];
	size_t i = sizeof(buf);
	int n = 0;

	do {
		if (point && n == point)
			buf[--i] = '.';
		buf[--i] = '0' + v % 10;
		v /= 10;
		n++;
	} while (v || n <= point);
	if (neg)
		buf[--i] = '-';
	fwrite(buf + i, 1, sizeof(buf) - i, jw->out);
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

void jw_float(struct jw *jw, double v, int decimals)
{
	jw_sep(jw);
	if (!isfinite(v))
		fputs("null", jw->out);
	else
		fprintf(jw->out, "%.*f", decimals, v == 0.0 ? 0.0 : v);
	jw_value_done(jw);
}

void jw_bool(struct jw *jw, bool v)
{
	jw_sep(jw);
	fputs(v ? "true" : "false", jw->out);
	jw_value_done(jw);
}

void jw_null(struct jw *jw)
{
	jw_sep(jw);
	fputs("null", jw->out);
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
