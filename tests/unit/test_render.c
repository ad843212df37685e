// SPDX-License-Identifier: GPL-2.0
/* The renderer: one table of typed fields written as aligned text or as JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "render.h"

struct buf {
	char *data;
	size_t len;
	FILE *f;
	struct render *r;
};

static void buf_open(struct buf *b, enum render_format format)
{
	b->f = open_memstream(&b->data, &b->len);
	assert_non_null(b->f);
	assert_int_equal(render_new(b->f, format, &b->r), 0);
	assert_non_null(b->r);
}

static const char *buf_text(struct buf *b)
{
	fflush(b->f);
	return b->data;
}

static void buf_close(struct buf *b)
{
	render_free(b->r);
	fclose(b->f);
	free(b->data);
}

/* A process table: name, count, latency, size, a text-only and a JSON-only field. */
enum { F_NAME, F_PID, F_DELTA, F_LAT, F_BYTES, F_RATE, F_NOTE, F_TID, F_OK, F_NR };

static const struct render_col cols[] = {
	{"COMM", 8, RA_LEFT},  {"PID", 5, RA_RIGHT},  {"DELTA", 6, RA_RIGHT}, {"LAT", 6, RA_RIGHT},
	{"SIZE", 5, RA_RIGHT}, {"RATE", 6, RA_RIGHT}, {"NOTE", 4, RA_LEFT},
};

static const struct render_field fields[F_NR] = {
	[F_NAME] = {.key = "comm", .type = RT_NAME, .col = 0},
	[F_PID] = {.key = "pid", .type = RT_UINT, .col = 1},
	[F_DELTA] = {.key = "delta", .type = RT_INT, .col = 2},
	[F_LAT] = {.key = "lat_us", .type = RT_DURATION, .unit = RU_US, .json_prec = 3, .col = 3},
	[F_BYTES] = {.key = "bytes", .type = RT_BYTES, .col = 4, .flags = RF_OMIT_ABSENT},
	[F_RATE] = {.key = "rate", .type = RT_DOUBLE, .prec = 1, .json_prec = 3, .col = 5},
	[F_NOTE] = {.type = RT_STR, .col = 6},
	[F_TID] = {.key = "tid", .type = RT_UINT, .flags = RF_JSON_ONLY},
	[F_OK] = {.key = "ok", .type = RT_BOOL, .flags = RF_JSON_ONLY},
};

static const struct render_table table = {
	.cols = cols,
	.nr_cols = sizeof(cols) / sizeof(cols[0]),
	.fields = fields,
	.nr_fields = F_NR,
};

static void fill(struct render_value *v, const char *name, uint64_t pid)
{
	memset(v, 0, F_NR * sizeof(*v));
	v[F_NAME] = rv_str(name);
	v[F_PID] = rv_uint(pid);
	v[F_DELTA] = rv_int(-42);
	v[F_LAT] = rv_uint(1500000); /* 1.5 ms */
	v[F_BYTES] = rv_uint(1536);
	v[F_RATE] = rv_double(2.25);
	v[F_TID] = rv_uint(pid + 1);
	v[F_OK] = rv_bool(true);
}

static void test_text_columns(void **state)
{
	struct render_value v[F_NR];
	struct buf b;

	buf_open(&b, RENDER_TEXT);
	render_header(b.r, &table);
	fill(v, "fio", 123);
	v[F_NOTE] = rv_str("hot");
	render_row(b.r, &table, v);
	/* Absent: "-"; nothing: an empty cell, and the line ends at the last value. */
	fill(v, "dd", 7);
	v[F_DELTA] = rv_absent();
	v[F_LAT] = (struct render_value){.state = RV_NONE};
	v[F_RATE] = rv_double(NAN);
	render_row(b.r, &table, v);
	/* Wider than its column: the cell grows, the next ones move right. */
	fill(v, "kworker/u16:2", 99999999);
	render_row(b.r, &table, v);
	assert_string_equal(buf_text(&b), "COMM       PID  DELTA    LAT  SIZE   RATE NOTE\n"
					  "fio        123    -42  1.5ms  1.5K    2.2 hot\n"
					  "dd           7      -         1.5K      -\n"
					  "kworker/u16:2 99999999    -42  1.5ms  1.5K    2.2\n");
	buf_close(&b);
}

static void test_json_fields(void **state)
{
	struct render_value v[F_NR];
	struct buf b;

	buf_open(&b, RENDER_JSON);
	render_header(b.r, &table); /* nothing in JSON */
	fill(v, "fio", 123);
	v[F_NOTE] = rv_str("text only");
	render_row(b.r, &table, v);
	/* Absent: null, or no key with RF_OMIT_ABSENT; nothing: no key. */
	fill(v, "dd", 7);
	v[F_DELTA] = rv_absent();
	v[F_BYTES] = rv_absent();
	v[F_LAT] = (struct render_value){.state = RV_NONE};
	v[F_RATE] = rv_double(INFINITY);
	v[F_OK] = rv_flag(false);
	render_row(b.r, &table, v);
	assert_string_equal(buf_text(&b),
			    "{\"comm\":\"fio\",\"pid\":123,\"delta\":-42,\"lat_us\":1500.000,"
			    "\"bytes\":1536,\"rate\":2.250,\"tid\":124,\"ok\":true}\n"
			    "{\"comm\":\"dd\",\"pid\":7,\"delta\":null,\"rate\":null,\"tid\":8}\n");
	buf_close(&b);
}

static void test_untrusted_names(void **state)
{
	struct render_value v[F_NR];
	struct buf b;

	/* Text: escaped as ls -b does; JSON: valid UTF-8, the raw byte as U+FFFD. */
	buf_open(&b, RENDER_TEXT);
	fill(v, "a\x1b[2J\xff\xc3\xa9", 1);
	render_row(b.r, &table, v);
	assert_string_equal(buf_text(&b),
			    "a\\x1b[2J\\xff\xc3\xa9     1    -42  1.5ms  1.5K    2.2\n");
	buf_close(&b);

	buf_open(&b, RENDER_JSON);
	render_row(b.r, &table, v);
	assert_non_null(strstr(buf_text(&b), "{\"comm\":\"a\\u001b[2J\\ufffd\xc3\xa9\","));
	buf_close(&b);
}

static void test_units(void **state)
{
	static const struct render_field f[] = {
		{.key = "ns", .type = RT_DURATION, .col = 0},
		{.key = "ms", .type = RT_DURATION, .unit = RU_MS, .json_prec = 1, .col = 1},
		{.key = "s",
		 .type = RT_DURATION,
		 .unit = RU_S,
		 .prec = 3,
		 .json_prec = 2,
		 .col = 2,
		 .flags = RF_TEXT_IN_UNIT},
		{.key = "bytes", .type = RT_BYTES, .col = 3},
		{.key = "yes", .type = RT_BOOL, .col = 4},
	};
	static const struct render_col c[] = {
		{"NS", 6, RA_RIGHT}, {"MS", 6, RA_RIGHT}, {"S", 6, RA_RIGHT},
		{"B", 5, RA_RIGHT},  {"Y", 3, RA_LEFT},
	};
	static const struct render_table t = {
		.cols = c, .nr_cols = 5, .fields = f, .nr_fields = 5, .sep = " | "};
	struct render_value v[] = {rv_uint(850), rv_uint(2500000), rv_uint(1234567890),
				   rv_uint(3ULL << 30), rv_bool(false)};
	struct buf b;

	buf_open(&b, RENDER_TEXT);
	render_header(b.r, &t);
	render_row(b.r, &t, v);
	assert_string_equal(buf_text(&b), "    NS |     MS |      S |     B | Y\n"
					  " 850ns |  2.5ms |  1.235 |  3.0G | no\n");
	buf_close(&b);

	buf_open(&b, RENDER_JSON);
	render_row(b.r, &t, v);
	assert_string_equal(buf_text(&b), "{\"ns\":850,\"ms\":2.5,\"s\":1.23,\"bytes\":3221225472,"
					  "\"yes\":false}\n");
	buf_close(&b);
}

/*
 * One record over several text lines (stat: a line per operation); a line whose
 * RF_HIDE_ZERO_LINE fields are all zero, or that has no value, is left out.
 */
enum { M_DEV, M_R, M_W, M_D, M_UTIL, M_OP_R, M_OP_W, M_OP_D, M_NOTE, M_NR };

static const struct render_col mcols[] = {
	{"Device", 6, RA_LEFT}, {"op", 5, RA_LEFT}, {"ops/s", 6, RA_RIGHT}, {"%util", 5, RA_RIGHT}};

static const struct render_field mfields[M_NR] = {
	[M_DEV] = {.key = "disk", .type = RT_NAME, .col = 0},
	[M_R] = {.key = "r_s", .type = RT_DOUBLE, .prec = 1, .json_prec = 2, .col = 2},
	[M_W] = {.key = "w_s", .type = RT_DOUBLE, .prec = 1, .json_prec = 2, .col = 2, .line = 1},
	[M_D] = {.key = "d_s",
		 .type = RT_DOUBLE,
		 .prec = 1,
		 .json_prec = 2,
		 .col = 2,
		 .line = 2,
		 .flags = RF_HIDE_ZERO_LINE},
	[M_UTIL] = {.key = "util", .type = RT_DOUBLE, .prec = 0, .json_prec = 0, .col = 3},
	[M_OP_R] = {.type = RT_STR, .col = 1},
	[M_OP_W] = {.type = RT_STR, .col = 1, .line = 1},
	[M_OP_D] = {.type = RT_STR, .col = 1, .line = 2},
	[M_NOTE] = {.type = RT_STR, .col = 1, .line = 3},
};

static const struct render_table mtable = {
	.cols = mcols, .nr_cols = 4, .fields = mfields, .nr_fields = M_NR};

static void mfill(struct render_value *v, const char *dev, double d, const char *note)
{
	memset(v, 0, M_NR * sizeof(*v));
	v[M_DEV] = rv_str(dev);
	v[M_R] = rv_double(1);
	v[M_W] = rv_double(2);
	v[M_D] = rv_double(d);
	v[M_UTIL] = rv_double(50);
	v[M_OP_R] = rv_str("read");
	v[M_OP_W] = rv_str("write");
	v[M_OP_D] = rv_str("trim");
	if (note)
		v[M_NOTE] = rv_str(note);
}

static const struct render_field meta_fields[] = {
	{.key = "time", .type = RT_UINT, .flags = RF_JSON_ONLY},
	{.key = "partial", .type = RT_BOOL, .flags = RF_JSON_ONLY},
};

static const struct render_table meta = {.fields = meta_fields, .nr_fields = 2};

static void reports(struct buf *b)
{
	struct render_value v[M_NR], mv[2] = {rv_uint(100), rv_flag(false)};

	render_report_begin(b->r, "report one", &meta, mv, "devices", &mtable);
	mfill(v, "sda", 0, NULL);
	render_row(b->r, &mtable, v);
	mfill(v, "sdb", 3, "(restarted)");
	render_row(b->r, &mtable, v);
	render_report_end(b->r);
	mv[0] = rv_uint(101);
	mv[1] = rv_flag(true);
	render_report_begin(b->r, "report two", &meta, mv, "devices", &mtable);
	render_report_end(b->r);
}

static void test_report_text(void **state)
{
	struct buf b;

	buf_open(&b, RENDER_TEXT);
	reports(&b);
	assert_string_equal(buf_text(&b), "report one\n"
					  "Device op     ops/s %util\n"
					  "sda    read     1.0    50\n"
					  "       write    2.0\n"
					  "sdb    read     1.0    50\n"
					  "       write    2.0\n"
					  "       trim     3.0\n"
					  "       (restarted)\n"
					  "\n"
					  "report two\n"
					  "Device op     ops/s %util\n");
	buf_close(&b);
}

static void test_report_json(void **state)
{
	struct buf b;

	buf_open(&b, RENDER_JSON);
	reports(&b);
	assert_string_equal(
		buf_text(&b),
		"{\"time\":100,\"devices\":["
		"{\"disk\":\"sda\",\"r_s\":1.00,\"w_s\":2.00,\"d_s\":0.00,\"util\":50},"
		"{\"disk\":\"sdb\",\"r_s\":1.00,\"w_s\":2.00,\"d_s\":3.00,\"util\":50}]}\n"
		"{\"time\":101,\"partial\":true,\"devices\":[]}\n");
	buf_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_columns),	cmocka_unit_test(test_json_fields),
		cmocka_unit_test(test_untrusted_names), cmocka_unit_test(test_units),
		cmocka_unit_test(test_report_text),	cmocka_unit_test(test_report_json),
	};

	return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
