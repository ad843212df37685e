/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Prometheus text exposition format, version 0.0.4 (what GET /metrics answers):
 * families with their HELP and TYPE lines, samples with escaped labels, histograms
 * with cumulative buckets. Pure: it writes into a growable buffer and reads nothing.
 */
#ifndef IOSPAN_PROM_H
#define IOSPAN_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Its Content-Type header. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The exposition being written; oom once memory ran out (the text is then cut). */
struct prom_buf {
	char *data;
	size_t len, cap;
	bool oom;
};

void prom_buf_init(struct prom_buf *b);
void prom_buf_free(struct prom_buf *b);
/* The text, handed over (NUL-terminated; the caller frees it); NULL after oom. */
char *prom_buf_take(struct prom_buf *b, size_t *len);

/* A label of a sample; its value is any text (escaped, and made valid UTF-8). */
struct prom_label {
	const char *name;
	const char *value;
};

enum prom_type {
	PROM_COUNTER,
	PROM_GAUGE,
	PROM_HISTOGRAM,
};

/* The HELP and TYPE lines of the family @name: once, before its samples. */
void prom_family(struct prom_buf *b, const char *name, enum prom_type type, const char *help);
/* A sample "name{labels} value"; a value that is not finite as NaN, +Inf or -Inf. */
void prom_sample(struct prom_buf *b, const char *name, const struct prom_label *labels, int nr,
		 double v);
/* A sample of a count: exact beyond 2^53, where a double is not. */
void prom_sample_u64(struct prom_buf *b, const char *name, const struct prom_label *labels, int nr,
		     uint64_t v);
/*
 * A histogram's samples: name_bucket{labels,le} for each of the @nr_le upper bounds
 * @le (ascending) with @cum[i] observations at most le[i] (cumulative), then le="+Inf"
 * with @count, name_sum and name_count.
 */
void prom_histogram(struct prom_buf *b, const char *name, const struct prom_label *labels, int nr,
		    const double *le, const uint64_t *cum, int nr_le, double sum, uint64_t count);

#endif
