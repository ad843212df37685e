// SPDX-License-Identifier: GPL-2.0
/*
 * OTLP export (src/export/otlp.c): its configuration (the option and the SDK's
 * variables), and its metrics writer (Prometheus' families as OTLP JSON metrics).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "export/otlp.h"
#include "json.h"
#include "testutil.h"

static const char *const vars[] = {
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_TIMEOUT",
	"OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_SERVICE_NAME",
	"OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_EXPORTER_OTLP_CERTIFICATE",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_METRIC_EXPORT_INTERVAL",
};

static int clear_env(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	return 0;
}

static void test_off_unless_asked(void **state)
{
	struct otlp_config c;
	bool on = true;

	assert_int_equal(otlp_config_parse(NULL, false, &c, &on), 0);
	assert_false(on);
	setenv("OTEL_SERVICE_NAME", "x", 1); /* naming a service asks for nothing */
	assert_int_equal(otlp_config_parse(NULL, false, &c, &on), 0);
	assert_false(on);
}

static void test_urls(void **state)
{
	struct otlp_config c;
	bool on;

	assert_int_equal(otlp_config_parse("http://collector:4318", false, &c, &on), 0);
	assert_true(on);
	assert_string_equal(c.url[OTLP_TRACES], "http://collector:4318/v1/traces");
	assert_string_equal(c.url[OTLP_LOGS], "http://collector:4318/v1/logs");
	assert_int_equal(c.timeout_ms, 10000);
	otlp_config_free(&c);
	/* The variable, a trailing slash, a signal's own URL taken as it is. */
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example:4318/base/", 1);
	setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://logs.example/ingest", 1);
	assert_int_equal(otlp_config_parse(NULL, false, &c, &on), 0);
	assert_string_equal(c.url[OTLP_TRACES], "https://otel.example:4318/base/v1/traces");
	assert_string_equal(c.url[OTLP_LOGS], "http://logs.example/ingest");
	otlp_config_free(&c);
	/* The option wins over the variable. */
	assert_int_equal(otlp_config_parse("http://opt:1", false, &c, &on), 0);
	assert_string_equal(c.url[OTLP_TRACES], "http://opt:1/v1/traces");
	otlp_config_free(&c);
}

static void test_headers_and_resource(void **state)
{
	struct otlp_config c;
	bool on;

	setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=abc%20def, X-Tenant = storage ", 1);
	setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=fromattrs,team=storage%2Cops", 1);
	setenv("OTEL_SERVICE_NAME", "iospan-db1", 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2500", 1);
	assert_int_equal(otlp_config_parse("http://c:4318", false, &c, &on), 0);
	assert_int_equal(c.nr_headers, 2);
	assert_string_equal(c.headers[0], "api-key: abc def");
	assert_string_equal(c.headers[1], "X-Tenant: storage");
	assert_int_equal(c.timeout_ms, 2500);
	/* OTEL_SERVICE_NAME wins, once; the attribute's comma decoded. */
	assert_non_null(strstr(c.resource, "\"service.name\",\"value\":{\"stringValue\":"
					   "\"iospan-db1\"}"));
	assert_null(strstr(c.resource, "fromattrs"));
	assert_non_null(strstr(c.resource, "\"stringValue\":\"storage,ops\""));
	assert_non_null(strstr(c.resource, "\"host.name\""));
	otlp_config_free(&c);
}

static void test_refused(void **state)
{
	static const struct {
		const char *opt, *var, *val;
	} bad[] = {
		{"ftp://c:21", NULL, NULL},
		{"collector", NULL, NULL},
		{"http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
		{"http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS", "novalue"},
		{"http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS", "a=b\r\nInjected: 1"},
		{"http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS", "bad:name=1"},
		{"http://c:4318", "OTEL_RESOURCE_ATTRIBUTES", "a=%zz"},
		{"http://c:4318", "OTEL_EXPORTER_OTLP_TIMEOUT", "0"},
		{"http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "nowhere"},
		{NULL, "OTEL_EXPORTER_OTLP_ENDPOINT", "file:///etc/passwd"},
	};
	struct otlp_config c;
	size_t i;
	bool on;

	err_capture((char[256]){0}, 256);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear_env(NULL);
		if (bad[i].var)
			setenv(bad[i].var, bad[i].val, 1);
		if (otlp_config_parse(bad[i].opt, false, &c, &on) != -EINVAL)
			fail_msg("accepted: %s %s=%s", bad[i].opt, bad[i].var, bad[i].val);
	}
	err_capture(NULL, 0);
}

static void test_metrics_config(void **state)
{
	struct otlp_config c;
	bool on;

	assert_int_equal(otlp_config_parse("http://c:4318", false, &c, &on), 0);
	assert_string_equal(c.url[OTLP_METRICS], "http://c:4318/v1/metrics");
	assert_int_equal(otlp_config_metrics(&c, 0), 0);
	assert_int_equal(c.metrics_interval_ms, 60000); /* the specification's default */
	setenv("OTEL_METRIC_EXPORT_INTERVAL", "15000", 1);
	assert_int_equal(otlp_config_metrics(&c, 0), 0);
	assert_int_equal(c.metrics_interval_ms, 15000);
	assert_int_equal(otlp_config_metrics(&c, 2500), 0); /* the option wins */
	assert_int_equal(c.metrics_interval_ms, 2500);
	err_capture((char[256]){0}, 256);
	setenv("OTEL_METRIC_EXPORT_INTERVAL", "1m", 1);
	assert_int_equal(otlp_config_metrics(&c, 0), -EINVAL);
	setenv("OTEL_METRIC_EXPORT_INTERVAL", "0", 1);
	assert_int_equal(otlp_config_metrics(&c, 0), -EINVAL);
	err_capture(NULL, 0);
	otlp_config_free(&c);
	/*
	 * Its own variable, as it is; it turns export on for a push only (other SDKs of a
	 * pod read it too: traces and logs do not follow it to the default endpoint).
	 */
	clear_env(NULL);
	setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m.example/in", 1);
	assert_int_equal(otlp_config_parse(NULL, false, &c, &on), 0);
	assert_false(on);
	otlp_config_free(&c);
	assert_int_equal(otlp_config_parse(NULL, true, &c, &on), 0);
	assert_true(on);
	assert_string_equal(c.url[OTLP_METRICS], "http://m.example/in");
	otlp_config_free(&c);
}

/* One push of the writer: the items joined (each a line), NULL when none. */
static char *push(struct otlp_metrics *om, uint64_t now, void (*fill)(struct mwriter *w, int arg),
		  int arg, unsigned int *nr_items)
{
	struct otlp_blob *items;
	char *text = NULL;
	size_t len = 0;
	unsigned int i, nr;
	FILE *f;

	fill(otlp_metrics_begin(om, now), arg);
	assert_int_equal(otlp_metrics_end(om, &items, &nr), 0);
	*nr_items = nr;
	if (!nr)
		return NULL;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	for (i = 0; i < nr; i++) {
		assert_true(items[i].len == strlen(items[i].json));
		assert_true(items[i].json[items[i].len - 1] == '\n');
		fputs(items[i].json, f);
		free(items[i].json);
	}
	free(items);
	fclose(f);
	return text;
}

static void fill_hist(struct mwriter *w, int arg)
{
	static const uint64_t le[] = {1024, 2048, 4096}; /* ns: 1.024 us... */
	static const uint64_t cum[] = {1, 1, 3};
	const struct prom_label l[] = {{"disk", "sda"}, {"op", "read"}};

	mw_family(w, "t_latency_seconds", PROM_HISTOGRAM, "Latency.");
	/* Cumulative 1, 1, 3 of 5: per bucket 1, 0, 2, and 2 past the last bound (+Inf). */
	w->ops->histogram(w, l, 2, le, 9, cum, 3, MW_SCALED(1500000000, 9), 5);
	mw_family(w, "t_empty", PROM_HISTOGRAM, "No series: no metric.");
	mw_family(w, "t_bare", PROM_HISTOGRAM, "No bounds: +Inf only.");
	w->ops->histogram(w, NULL, 0, NULL, 0, NULL, 0, MW_INT(7), 2);
}

static void test_metrics_histogram(void **state)
{
	struct otlp_metrics *om = otlp_metrics_new();
	unsigned int nr;
	char *text;

	assert_non_null(om);
	text = push(om, 1000, fill_hist, 0, &nr);
	assert_int_equal(nr, 2);
	assert_non_null(strstr(text,
			       "{\"name\":\"t_latency_seconds\",\"description\":"
			       "\"Latency.\",\"unit\":\"s\",\"histogram\":{\"dataPoints\":[{"));
	assert_non_null(strstr(text, "\"count\":\"5\",\"sum\":1.500000000,"
				     "\"bucketCounts\":[\"1\",\"0\",\"2\",\"2\"],"
				     "\"explicitBounds\":[0.000001024,0.000002048,0.000004096]}"));
	assert_non_null(strstr(text, "\"aggregationTemporality\":2}}\n"));
	assert_null(strstr(text, "isMonotonic"));
	assert_null(strstr(text, "t_empty"));
	assert_non_null(strstr(text, "\"count\":\"2\",\"sum\":7,\"bucketCounts\":[\"2\"],"
				     "\"explicitBounds\":[]}"));
	free(text);
	otlp_metrics_free(om);
}

static const char raw_label[] = "a\"b\\c\nd\xff\xfe\xc3\xa9";

/* A counter (its value @arg), a gauge and a time in ms; the counter's label @arg odd: raw bytes. */
static void fill_counter(struct mwriter *w, int arg)
{
	struct prom_label l[] = {{"disk", "sda"}, {"container", ""}};

	mw_family(w, "t_disk_bytes_total", PROM_COUNTER, "Bytes.");
	mw_sample(w, l, 2, MW_INT(arg));
	mw_family(w, "t_in_flight", PROM_GAUGE, "Now.");
	l[0].value = raw_label;
	mw_sample(w, l, 1, MW_INT(3));
	mw_family(w, "t_time_seconds_total", PROM_COUNTER, "Time.");
	mw_sample(w, NULL, 0, MW_SCALED(1234, 3));
}

/* Whether @s is valid UTF-8 throughout. */
static bool valid_utf8(const char *s)
{
	size_t n;

	for (; *s; s += n) {
		n = utf8_seq_len((const unsigned char *)s);
		if (!n)
			return false;
	}
	return true;
}

static void test_metrics_counters_and_labels(void **state)
{
	struct otlp_metrics *om = otlp_metrics_new();
	unsigned int nr;
	char *text;

	text = push(om, 1000, fill_counter, 10, &nr);
	assert_int_equal(nr, 3);
	/* _total dropped, the unit from the suffix; an empty label is no attribute. */
	assert_non_null(strstr(text, "{\"name\":\"t_disk_bytes\",\"description\":\"Bytes.\","
				     "\"unit\":\"By\",\"sum\":{\"dataPoints\":[{\"attributes\":[{"
				     "\"key\":\"disk\",\"value\":{\"stringValue\":\"sda\"}}],"
				     "\"startTimeUnixNano\":\"1000\",\"timeUnixNano\":\"1000\","
				     "\"asInt\":\"10\"}],\"aggregationTemporality\":2,"
				     "\"isMonotonic\":true}}\n"));
	/* A gauge: no start, no unit; a label's bytes escaped, those not UTF-8 as U+FFFD. */
	assert_non_null(strstr(text,
			       "{\"name\":\"t_in_flight\",\"description\":\"Now.\","
			       "\"gauge\":{\"dataPoints\":[{\"attributes\":[{\"key\":\"disk\","
			       "\"value\":{\"stringValue\":\"a\\\"b\\\\c\\nd\\ufffd\\ufffd"
			       "\xc3\xa9\"}}],\"timeUnixNano\":\"1000\",\"asInt\":\"3\"}]}}\n"));
	assert_true(valid_utf8(text));
	assert_non_null(strstr(text, "\"name\":\"t_time_seconds\",\"description\":\"Time.\","
				     "\"unit\":\"s\",\"sum\":{\"dataPoints\":[{\"attributes\":[],"
				     "\"startTimeUnixNano\":\"1000\",\"timeUnixNano\":\"1000\","
				     "\"asDouble\":1.234}]"));
	free(text);
	/* The series' start is kept while it counts on... */
	text = push(om, 2000, fill_counter, 15, &nr);
	assert_non_null(strstr(text, "\"startTimeUnixNano\":\"1000\",\"timeUnixNano\":\"2000\","
				     "\"asInt\":\"15\""));
	free(text);
	/* ...and is the push's own once it went back (a reset)... */
	text = push(om, 3000, fill_counter, 4, &nr);
	assert_non_null(strstr(text, "\"startTimeUnixNano\":\"3000\",\"timeUnixNano\":\"3000\","
				     "\"asInt\":\"4\""));
	free(text);
	text = push(om, 4000, fill_counter, 4, &nr);
	assert_non_null(strstr(text, "\"startTimeUnixNano\":\"3000\",\"timeUnixNano\":\"4000\""));
	free(text);
	otlp_metrics_free(om);
}

static void fill_many(struct mwriter *w, int arg)
{
	struct prom_label l = {"i", NULL};
	char v[16];
	int i;

	mw_family(w, "t_many_total", PROM_COUNTER, "Many.");
	for (i = 0; i < arg; i++) {
		snprintf(v, sizeof(v), "%d", i);
		l.value = v;
		mw_sample(w, &l, 1, MW_INT(i));
	}
}

static void test_metrics_cut_and_gone(void **state)
{
	struct otlp_metrics *om = otlp_metrics_new();
	unsigned int nr;
	char *text;

	/* Past OTLP_METRIC_POINTS points, a family comes in parts, each a whole metric. */
	text = push(om, 1000, fill_many, OTLP_METRIC_POINTS + 1, &nr);
	assert_int_equal(nr, 2);
	free(text);
	/* A series gone from a push and back starts again. */
	text = push(om, 2000, fill_many, 1, &nr);
	free(text);
	text = push(om, 3000, fill_many, 2, &nr);
	assert_non_null(strstr(text, "\"stringValue\":\"0\"}}],\"startTimeUnixNano\":\"1000\""));
	assert_non_null(strstr(text, "\"stringValue\":\"1\"}}],\"startTimeUnixNano\":\"3000\""));
	free(text);
	/* No family written: nothing to send. */
	text = push(om, 4000, fill_many, 0, &nr);
	assert_int_equal(nr, 0);
	assert_null(text);
	otlp_metrics_free(om);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_off_unless_asked, clear_env),
		cmocka_unit_test_setup(test_urls, clear_env),
		cmocka_unit_test_setup(test_headers_and_resource, clear_env),
		cmocka_unit_test_setup(test_refused, clear_env),
		cmocka_unit_test_setup(test_metrics_config, clear_env),
		cmocka_unit_test(test_metrics_histogram),
		cmocka_unit_test(test_metrics_counters_and_labels),
		cmocka_unit_test(test_metrics_cut_and_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
