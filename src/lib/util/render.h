/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One renderer for every command's reports: records of typed fields described once by a
 * table, written as aligned text columns or as JSON (json.c), the backend chosen once when
 * the renderer is made. A command fills an array of values and calls render_row(); it
 * never asks which output it writes.
 *
 * A table has columns (the text grid: header, width, alignment) and fields (the typed
 * values of one record, in JSON order). Each field names its JSON key (NULL: text only)
 * and the text column it goes in (RF_JSON_ONLY: none). A record is usually one text line;
 * a field may go on a later line of the same record (stat: one line per operation, the
 * JSON one flat object per device).
 *
 * A value is either nothing (RV_NONE: an empty cell, no key), a value (RV_SET), or known to
 * be absent (RV_ABSENT: "-" in text, null in JSON, or no key with RF_OMIT_ABSENT).
 */
#ifndef IOSPAN_RENDER_H
#define IOSPAN_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum render_format {
	RENDER_TEXT,
	RENDER_JSON,
};

enum render_type {
	RT_STR,	     /* a string the program chose: written as it is */
	RT_NAME,     /* a name anyone may have chosen: escaped in text (printable.h) */
	RT_UINT,     /* .u */
	RT_INT,	     /* .i */
	RT_DOUBLE,   /* .d, with .prec digits in text and .json_prec in JSON */
	RT_DURATION, /* .u nanoseconds: text "1.5ms" (units.h); JSON in .unit */
	RT_BYTES,    /* .u bytes: text "1.5K" (units.h); JSON a number of bytes */
	RT_BOOL,     /* .b: text "yes" or "no" */
};

/* The unit of a duration in JSON (and in text with RF_TEXT_IN_UNIT). */
enum render_unit {
	RU_NS, /* a whole number of nanoseconds */
	RU_US, /* the others: a decimal number with .json_prec (.prec in text) digits */
	RU_MS,
	RU_S,
};

enum render_align {
	RA_LEFT,
	RA_RIGHT,
};

enum render_field_flags {
	RF_JSON_ONLY = 1 << 0,	 /* no text column */
	RF_OMIT_ABSENT = 1 << 1, /* JSON: no key when absent, rather than null */
	/*
	 * Text: the record's line of this field is left out when every field of the line
	 * with this flag is zero (stat's discard and flush lines).
	 */
	RF_HIDE_ZERO_LINE = 1 << 2,
	RF_TEXT_IN_UNIT = 1 << 3, /* text: a duration as a number in .unit with .prec */
};

struct render_col {
	const char *header; /* NULL: none */
	int width;	    /* at least this many bytes, padded; the last cell of a line is not */
	enum render_align align;
};

struct render_field {
	const char *key; /* JSON key; NULL: text only */
	enum render_type type;
	int prec;      /* RT_DOUBLE, RF_TEXT_IN_UNIT: digits after the point in text */
	int json_prec; /* RT_DOUBLE, RT_DURATION not in RU_NS: digits after the point in JSON */
	enum render_unit unit;
	unsigned int col;  /* text column (index into the table's columns) */
	unsigned int line; /* text line within the record, from 0 */
	unsigned int flags;
};

struct render_table {
	const struct render_col *cols;
	size_t nr_cols;
	const struct render_field *fields;
	size_t nr_fields;
	const char *sep; /* between text columns; NULL: one space */
};

enum render_state {
	RV_NONE,
	RV_SET,
	RV_ABSENT,
};

struct render_value {
	enum render_state state;
	union {
		const char *s;
		uint64_t u;
		int64_t i;
		double d;
		bool b;
	};
};

static inline struct render_value rv_str(const char *s)
{
	return (struct render_value){.state = RV_SET, .s = s};
}

static inline struct render_value rv_uint(uint64_t u)
{
	return (struct render_value){.state = RV_SET, .u = u};
}

static inline struct render_value rv_int(int64_t i)
{
	return (struct render_value){.state = RV_SET, .i = i};
}

static inline struct render_value rv_double(double d)
{
	return (struct render_value){.state = RV_SET, .d = d};
}

static inline struct render_value rv_bool(bool b)
{
	return (struct render_value){.state = RV_SET, .b = b};
}

static inline struct render_value rv_absent(void)
{
	return (struct render_value){.state = RV_ABSENT};
}

/* A flag that only appears when set: RV_NONE (no key, empty cell) when false. */
static inline struct render_value rv_flag(bool b)
{
	return b ? rv_bool(true) : (struct render_value){.state = RV_NONE};
}

struct render;

int render_new(FILE *out, enum render_format format, struct render **rp);
void render_free(struct render *r);

/*
 * A report: in text, a blank line before every report but the first, @title (NULL: none)
 * and the header line of @rows (NULL: none); in JSON, an object with @meta's fields from
 * @meta_values, then an array @list_key holding the rows up to render_report_end().
 */
void render_report_begin(struct render *r, const char *title, const struct render_table *meta,
			 const struct render_value *meta_values, const char *list_key,
			 const struct render_table *rows);
/* Closes the report and flushes the output. */
void render_report_end(struct render *r);

/* Text: the header line of @t. JSON: nothing. */
void render_header(struct render *r, const struct render_table *t);

/*
 * One record, @v holding a value for each field of @t: its text lines, or a JSON object
 * (an element of the report's list, or one JSON line outside a report).
 */
void render_row(struct render *r, const struct render_table *t, const struct render_value *v);

void render_flush(struct render *r);

#endif
