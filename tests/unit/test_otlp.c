// SPDX-License-Identifier: GPL-2.0
/* OTLP export's configuration (src/export/otlp.c): the option and the SDK's variables. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "export/otlp.h"
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

	assert_int_equal(otlp_config_parse(NULL, &c, &on), 0);
	assert_false(on);
	setenv("OTEL_SERVICE_NAME", "x", 1); /* naming a service asks for nothing */
	assert_int_equal(otlp_config_parse(NULL, &c, &on), 0);
	assert_false(on);
}

static void test_urls(void **state)
{
	struct otlp_config c;
	bool on;

	assert_int_equal(otlp_config_parse("http://collector:4318", &c, &on), 0);
	assert_true(on);
	assert_string_equal(c.url[OTLP_TRACES], "http://collector:4318/v1/traces");
	assert_string_equal(c.url[OTLP_LOGS], "http://collector:4318/v1/logs");
	assert_int_equal(c.timeout_ms, 10000);
	otlp_config_free(&c);
	/* The variable, a trailing slash, a signal's own URL taken as it is. */
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example:4318/base/", 1);
	setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://logs.example/ingest", 1);
	assert_int_equal(otlp_config_parse(NULL, &c, &on), 0);
	assert_string_equal(c.url[OTLP_TRACES], "https://otel.example:4318/base/v1/traces");
	assert_string_equal(c.url[OTLP_LOGS], "http://logs.example/ingest");
	otlp_config_free(&c);
	/* The option wins over the variable. */
	assert_int_equal(otlp_config_parse("http://opt:1", &c, &on), 0);
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
	assert_int_equal(otlp_config_parse("http://c:4318", &c, &on), 0);
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
		if (otlp_config_parse(bad[i].opt, &c, &on) != -EINVAL)
			fail_msg("accepted: %s %s=%s", bad[i].opt, bad[i].var, bad[i].val);
	}
	err_capture(NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_off_unless_asked, clear_env),
		cmocka_unit_test_setup(test_urls, clear_env),
		cmocka_unit_test_setup(test_headers_and_resource, clear_env),
		cmocka_unit_test_setup(test_refused, clear_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
