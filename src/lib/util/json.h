/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Streaming JSON writer (in the spirit of bpftool's json_writer): commas and nesting are
 * tracked for the caller; each top-level value ends with a newline so streams are JSON Lines.
 */
#ifndef IOSPAN_JSON_H
#define IOSPAN_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct jw;

struct jw *jw_new(FILE *out);
void jw_free(struct jw *jw);
/*
 * Whether each top-level value is flushed to the stream (the default: a reader sees
 * each line as it ends). A writer of many lines turns it off and flushes itself.
 */
void jw_flush_lines(struct jw *jw, bool on);

void jw_start_object(struct jw *jw);
void jw_end_object(struct jw *jw);
void jw_start_array(struct jw *jw);
void jw_end_array(struct jw *jw);
void jw_name(struct jw *jw, const char *name);

void jw_string(struct jw *jw, const char *s);
void jw_uint(struct jw *jw, uint64_t v);
void jw_int(struct jw *jw, int64_t v);
/* Non-finite values are written as null; @decimals digits after the point. */
void jw_float(struct jw *jw, double v, int decimals);
/* @v / 10^@decimals, exactly, with @decimals (0 to 18) digits after the point. */
void jw_fixed(struct jw *jw, int64_t v, int decimals);
void jw_bool(struct jw *jw, bool v);
void jw_null(struct jw *jw);

void jw_kv_string(struct jw *jw, const char *name, const char *s);
void jw_kv_uint(struct jw *jw, const char *name, uint64_t v);
void jw_kv_int(struct jw *jw, const char *name, int64_t v);
void jw_kv_float(struct jw *jw, const char *name, double v, int decimals);
void jw_kv_fixed(struct jw *jw, const char *name, int64_t v, int decimals);
void jw_kv_bool(struct jw *jw, const char *name, bool v);
void jw_kv_null(struct jw *jw, const char *name);
/* @s, or null where there is none (@s NULL). */
void jw_kv_string_or_null(struct jw *jw, const char *name, const char *s);
/* @v where it is @known, else null. (A float that is not known is NaN: jw_kv_float.) */
void jw_kv_uint_or_null(struct jw *jw, const char *name, bool known, uint64_t v);
void jw_kv_object(struct jw *jw, const char *name);
void jw_kv_array(struct jw *jw, const char *name);

/*
 * UTF-8: the length of the well-formed sequence at @p (1 to 4), 0 if the bytes there
 * are not one (stray continuation, overlong form, surrogate, past U+10FFFF, cut short).
 * JSON strings are always valid UTF-8: such bytes are written as U+FFFD.
 */
size_t utf8_seq_len(const unsigned char *p);
/*
 * Copies @src into @dst (@len bytes with the NUL); if it does not fit, it is cut at a
 * character boundary and ends with "...". Returns true if it was cut.
 */
bool utf8_copy(char *dst, size_t len, const char *src);

/*
 * The JSON text @fill writes, malloc'ed (each top-level value ends with a newline, the
 * last one's trimmed), its length in *@len if not NULL; NULL: no memory.
 */
char *jw_text(void (*fill)(struct jw *jw, const void *arg), const void *arg, size_t *len);

/* Depth of open containers, for callers that must close what they opened on error. */
int jw_depth(const struct jw *jw);

#endif
