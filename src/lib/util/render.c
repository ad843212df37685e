// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "json.h"
#include "printable.h"
#include "render.h"
#include "units.h"

/* Columns of one text line a table may have; fields placed further right are not shown. */
#define RENDER_MAX_COLS 64

struct render {
	FILE *out;
	struct jw *jw; /* NULL: text */
	uint64_t reports;
	bool list_open; /* the current report's JSON array is open */
};

int render_new(FILE *out, enum render_format format, struct render **rp)
{
	struct render *r = calloc(1, sizeof(*r));

	*rp = NULL;
	if (!r)
		return -ENOMEM;
	r->out = out;
	if (format == RENDER_JSON) {
		r->jw = jw_new(out);
		if (!r->jw) {
			free(r);
			return -ENOMEM;
		}
	}
	*rp = r;
	return 0;
}

void render_free(struct render *r)
{
	if (!r)
		return;
	jw_free(r->jw);
	free(r);
}

void render_flush(struct render *r)
{
	fflush(r->out);
}

static double unit_div(enum render_unit unit)
{
	static const double div[] = {[RU_NS] = 1, [RU_US] = 1e3, [RU_MS] = 1e6, [RU_S] = 1e9};

	return unit <= RU_S ? div[unit] : 1;
}

/* ------------------------------------------------------------------ text */

/* The text of one cell; @buf holds it unless it is a string kept elsewhere. */
static const char *cell_text(const struct render_field *f, const struct render_value *v, char *buf,
			     size_t len)
{
	if (v->state != RV_SET)
		return v->state == RV_ABSENT ? "-" : "";
	switch (f->type) {
	case RT_STR:
		return v->s ? v->s : "-";
	case RT_NAME:
		return v->s ? printable(v->s) : "-";
	case RT_UINT:
		snprintf(buf, len, "%llu", (unsigned long long)v->u);
		return buf;
	case RT_INT:
		snprintf(buf, len, "%lld", (long long)v->i);
		return buf;
	case RT_DOUBLE:
		if (!isfinite(v->d))
			return "-";
		snprintf(buf, len, "%.*f", f->prec, v->d);
		return buf;
	case RT_DURATION:
		if (f->flags & RF_TEXT_IN_UNIT) {
			snprintf(buf, len, "%.*f", f->prec, v->u / unit_div(f->unit));
			return buf;
		}
		return fmt_ns(v->u, buf, len);
	case RT_BYTES:
		return fmt_bytes(v->u, buf, len);
	case RT_BOOL:
		return v->b ? "yes" : "no";
	}
	return "?";
}

static bool value_is_zero(const struct render_field *f, const struct render_value *v)
{
	if (v->state != RV_SET)
		return true;
	switch (f->type) {
	case RT_INT:
		return !v->i;
	case RT_DOUBLE:
		return v->d == 0;
	case RT_BOOL:
		return !v->b;
	case RT_STR:
	case RT_NAME:
		return !v->s || !*v->s;
	default:
		return !v->u;
	}
}

static void text_cell(struct render *r, const struct render_table *t, size_t col, const char *s,
		      bool last)
{
	const struct render_col *c = &t->cols[col];

	if (col)
		fputs(t->sep ? t->sep : " ", r->out);
	if (c->align == RA_RIGHT)
		fprintf(r->out, "%*s", c->width, s);
	else if (last)
		fputs(s, r->out); /* no trailing blanks */
	else
		fprintf(r->out, "%-*s", c->width, s);
}

void render_header(struct render *r, const struct render_table *t)
{
	size_t c;

	if (r->jw || !t->nr_cols)
		return;
	for (c = 0; c < t->nr_cols; c++) {
		const char *h = t->cols[c].header;

		text_cell(r, t, c, h ? h : "", c + 1 == t->nr_cols);
	}
	fputc('\n', r->out);
}

/* The text lines of one record. */
static void text_row(struct render *r, const struct render_table *t, const struct render_value *v)
{
	const struct render_field *f;
	unsigned int line, nr_lines = 0;
	int at[RENDER_MAX_COLS], last;
	bool shown, hideable, nonzero;
	size_t i, c, ncols = t->nr_cols < RENDER_MAX_COLS ? t->nr_cols : RENDER_MAX_COLS;
	char buf[64];

	for (i = 0; i < t->nr_fields; i++)
		if (!(t->fields[i].flags & RF_JSON_ONLY) && t->fields[i].line >= nr_lines)
			nr_lines = t->fields[i].line + 1;
	for (line = 0; line < nr_lines; line++) {
		for (c = 0; c < ncols; c++)
			at[c] = -1;
		last = -1;
		shown = hideable = nonzero = false;
		for (i = 0; i < t->nr_fields; i++) {
			f = &t->fields[i];
			if ((f->flags & RF_JSON_ONLY) || f->line != line || f->col >= ncols)
				continue;
			if (f->flags & RF_HIDE_ZERO_LINE) {
				hideable = true;
				nonzero |= !value_is_zero(f, &v[i]);
			}
			if (v[i].state == RV_NONE || at[f->col] >= 0)
				continue;
			at[f->col] = i;
			shown = true;
			if ((int)f->col > last)
				last = f->col;
		}
		if (!shown || (hideable && !nonzero))
			continue;
		for (c = 0; (int)c <= last; c++)
			text_cell(r, t, c,
				  at[c] < 0 ?
					  "" :
					  cell_text(&t->fields[at[c]], &v[at[c]], buf, sizeof(buf)),
				  (int)c == last);
		fputc('\n', r->out);
	}
}

/* ------------------------------------------------------------------ JSON */

/* The fields of one record as members of the object open in @r->jw. */
static void json_fields(struct render *r, const struct render_table *t,
			const struct render_value *v)
{
	const struct render_field *f;
	struct jw *jw = r->jw;
	size_t i;

	for (i = 0; i < t->nr_fields; i++) {
		f = &t->fields[i];
		if (!f->key || v[i].state == RV_NONE)
			continue;
		if (v[i].state == RV_ABSENT) {
			if (!(f->flags & RF_OMIT_ABSENT))
				jw_kv_null(jw, f->key);
			continue;
		}
		switch (f->type) {
		case RT_STR:
		case RT_NAME:
			if (v[i].s)
				jw_kv_string(jw, f->key, v[i].s);
			else
				jw_kv_null(jw, f->key);
			break;
		case RT_UINT:
		case RT_BYTES:
			jw_kv_uint(jw, f->key, v[i].u);
			break;
		case RT_INT:
			jw_kv_int(jw, f->key, v[i].i);
			break;
		case RT_DOUBLE:
			jw_kv_float(jw, f->key, v[i].d, f->json_prec);
			break;
		case RT_DURATION:
			if (f->unit == RU_NS)
				jw_kv_uint(jw, f->key, v[i].u);
			else
				jw_kv_float(jw, f->key, v[i].u / unit_div(f->unit), f->json_prec);
			break;
		case RT_BOOL:
			jw_kv_bool(jw, f->key, v[i].b);
			break;
		}
	}
}

/* ------------------------------------------------------------------ both */

void render_report_begin(struct render *r, const char *title, const struct render_table *meta,
			 const struct render_value *meta_values, const char *list_key,
			 const struct render_table *rows)
{
	if (r->jw) {
		jw_start_object(r->jw);
		if (meta)
			json_fields(r, meta, meta_values);
		r->list_open = list_key != NULL;
		if (list_key)
			jw_kv_array(r->jw, list_key);
		r->reports++;
		return;
	}
	if (r->reports++)
		fputc('\n', r->out);
	if (title)
		fprintf(r->out, "%s\n", title);
	if (rows)
		render_header(r, rows);
}

void render_report_end(struct render *r)
{
	if (r->jw) {
		if (r->list_open)
			jw_end_array(r->jw);
		r->list_open = false;
		jw_end_object(r->jw);
	}
	fflush(r->out);
}

void render_row(struct render *r, const struct render_table *t, const struct render_value *v)
{
	if (!r->jw) {
		text_row(r, t, v);
		return;
	}
	jw_start_object(r->jw);
	json_fields(r, t, v);
	jw_end_object(r->jw);
}
