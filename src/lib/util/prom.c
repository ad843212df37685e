// SPDX-License-Identifier: GPL-2.0
/* The Prometheus text exposition format 0.0.4 (prom.h). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h" /* utf8_seq_len() */
#include "prom.h"

void prom_buf_init(struct prom_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void prom_buf_free(struct prom_buf *b)
{
	free(b->data);
	prom_buf_init(b);
}

char *prom_buf_take(struct prom_buf *b, size_t *len)
{
	char *text = b->oom ? NULL : b->data;

	if (!text)
		free(b->data);
	*len = text ? b->len : 0;
	prom_buf_init(b);
	return text;
}

/* Room for @n more bytes and the NUL; false (and oom) if there is none. */
static bool reserve(struct prom_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->oom)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	while (cap < b->len + n + 1)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

static void put(struct prom_buf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = 0;
}

static void puts_(struct prom_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/*
 * @s escaped as the format wants it: a backslash and a newline always, a double quote
 * in label values (@quote); bytes that are not UTF-8 (a raw byte of a cgroup's name)
 * as U+FFFD, since Prometheus refuses them.
 */
static void put_escaped(struct prom_buf *b, const char *s, bool quote)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	while (*p) {
		if (*p == '\\') {
			put(b, "\\\\", 2);
			p++;
		} else if (*p == '\n') {
			put(b, "\\n", 2);
			p++;
		} else if (*p == '"' && quote) {
			put(b, "\\\"", 2);
			p++;
		} else if (*p < 0x80) {
			put(b, (const char *)p, 1);
			p++;
		} else {
			n = utf8_seq_len(p);
			if (n)
				put(b, (const char *)p, n);
			else
				put(b, "\xef\xbf\xbd", 3);
			p += n ? n : 1;
		}
	}
}

/* A decimal that reads back as @v, short where it can be (Go's ParseFloat reads C's). */
static void format_value(double v, char *buf, size_t len)
{
	int prec;

	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* 15 significant digits hold most values exactly; 17 hold every double. */
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, len, "%.17g", v);
}

static const char *const type_names[] = {
	[PROM_COUNTER] = "counter",
	[PROM_GAUGE] = "gauge",
	[PROM_HISTOGRAM] = "histogram",
};

void prom_family(struct prom_buf *b, const char *name, enum prom_type type, const char *help)
{
	puts_(b, "# HELP ");
	puts_(b, name);
	puts_(b, " ");
	put_escaped(b, help, false);
	puts_(b, "\n# TYPE ");
	puts_(b, name);
	puts_(b, " ");
	puts_(b, type_names[type]);
	puts_(b, "\n");
}

/* "name{a="x",b="y"" without the closing brace: the histogram adds le. */
static void open_sample(struct prom_buf *b, const char *name, const char *suffix,
			const struct prom_label *labels, int nr)
{
	int i;

	puts_(b, name);
	puts_(b, suffix);
	for (i = 0; i < nr; i++) {
		puts_(b, i ? "," : "{");
		puts_(b, labels[i].name);
		puts_(b, "=\"");
		put_escaped(b, labels[i].value ? labels[i].value : "", true);
		puts_(b, "\"");
	}
}

static void close_sample(struct prom_buf *b, int nr, const char *value)
{
	puts_(b, nr ? "} " : " ");
	puts_(b, value);
	puts_(b, "\n");
}

void prom_sample(struct prom_buf *b, const char *name, const struct prom_label *labels, int nr,
		 double v)
{
	char value[32];

	format_value(v, value, sizeof(value));
	open_sample(b, name, "", labels, nr);
	close_sample(b, nr, value);
}

void prom_sample_u64(struct prom_buf *b, const char *name, const struct prom_label *labels, int nr,
		     uint64_t v)
{
	char value[24];

	snprintf(value, sizeof(value), "%" PRIu64, v);
	open_sample(b, name, "", labels, nr);
	close_sample(b, nr, value);
}

static void bucket(struct prom_buf *b, const char *name, const struct prom_label *labels, int nr,
		   const char *le, uint64_t cum)
{
	char value[24];

	snprintf(value, sizeof(value), "%" PRIu64, cum);
	open_sample(b, name, "_bucket", labels, nr);
	puts_(b, nr ? ",le=\"" : "{le=\"");
	puts_(b, le);
	puts_(b, "\"");
	close_sample(b, 1, value);
}

void prom_histogram(struct prom_buf *b, const char *name, const struct prom_label *labels, int nr,
		    const double *le, const uint64_t *cum, int nr_le, double sum, uint64_t count)
{
	char bound[32], value[32];
	int i;

	for (i = 0; i < nr_le; i++) {
		format_value(le[i], bound, sizeof(bound));
		bucket(b, name, labels, nr, bound, cum[i]);
	}
	bucket(b, name, labels, nr, "+Inf", count);
	format_value(sum, value, sizeof(value));
	open_sample(b, name, "_sum", labels, nr);
	close_sample(b, nr, value);
	snprintf(value, sizeof(value), "%" PRIu64, count);
	open_sample(b, name, "_count", labels, nr);
	close_sample(b, nr, value);
}
