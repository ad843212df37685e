// SPDX-License-Identifier: GPL-2.0
/*
 * The metrics endpoint's web configuration (src/export/webconf.c): what it accepts and
 * refuses, and the password checks (bcrypt at cost 4 here, to be quick).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "export/webconf.h"
#include "testutil.h"

/* crypt("right", "$2b$04$...") and crypt("pass:word", ...), cost 4. */
#define HASH_RIGHT "$2b$04$5jyTc3.m0DB.hCfOB.8aw.Z0nIJY88.Wujq5WNpBZVPXk.vxz/6Ze"
#define HASH_OTHER "$2b$04$ROm1VGr5GBEJ7CPHcyE69uQbiqO6O3dJnX1f4kcTHtSOhOxmRcZdK"

static char dir[] = "/tmp/iospan-webconf-XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static int load(const char *text, struct web_config *c)
{
	return web_config_load(write_file("web.yml", text), c);
}

static void test_users(void **state)
{
	struct web_config c;

	assert_int_equal(
		load("basic_auth_users:\n  prom: " HASH_RIGHT "\n  \"b\": '" HASH_OTHER "'\n", &c),
		0);
	assert_int_equal(c.nr_users, 2);
	assert_string_equal(c.users[0].name, "prom");
	assert_string_equal(c.users[1].hash, HASH_OTHER);
	assert_false(web_config_tls(&c));
	web_config_free(&c);
	/* An empty file: no TLS, no users (as exporter-toolkit). */
	assert_int_equal(load("", &c), 0);
	assert_int_equal(c.nr_users, 0);
	web_config_free(&c);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"basic_auth_users:\n  prom: plain\n",
		"basic_auth_users:\n  prom: "
		"$1$abc$defghijklmnopqrstuvwxyz01234567890123456789012345\n",
		"basic_auth_users: [a, b]\n",
		"basic_auth_users:\n  prom: " HASH_RIGHT "\n  prom: " HASH_OTHER "\n",
		"basic_auth_users:\n  \"a:b\": " HASH_RIGHT "\n",
		"basic_auth_users:\n  prom: [x]\n",
		"http_server_config:\n  http2: false\n",
		"tls_server_config:\n  cert_file: x.crt\n",
		"tls_server_config:\n  cert_file: nothere.crt\n  key_file: nothere.key\n",
		"tls_server_config: {prefer_server_cipher_suites: true}\n",
		"{ unclosed\n",
		"just a string\n",
	};
	struct web_config c;
	size_t i;

	err_capture((char[256]){0}, 256);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (load(bad[i], &c) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
	}
	assert_int_equal(web_config_load("/nonexistent/web.yml", &c), -ENOENT);
	err_capture(NULL, 0);
}

static void test_auth(void **state)
{
	struct web_config c;
	int i, denied = 0, busy = 0;
	struct timespec t0, t1;
	double elapsed;

	assert_int_equal(load("basic_auth_users:\n  prom: " HASH_RIGHT "\n", &c), 0);
	assert_int_equal(web_config_auth(&c, "prom", "right"), WEB_AUTH_OK);
	assert_true(c.users[0].have_good);
	assert_int_equal(web_config_auth(&c, NULL, NULL), WEB_AUTH_DENIED);
	assert_int_equal(web_config_auth(&c, "prom", NULL), WEB_AUTH_DENIED);
	/* Wrong passwords and unknown users: bcrypt runs, within the budget. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 40; i++) {
		enum web_auth_result r = web_config_auth(&c, i % 2 ? "nobody" : "prom", "wrong");

		assert_int_not_equal(r, WEB_AUTH_OK);
		denied += r == WEB_AUTH_DENIED;
		busy += r == WEB_AUTH_BUSY;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	elapsed = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* 8 at once (one spent above), and 4 a second as the budget refills meanwhile. */
	assert_true(denied >= 7 && denied <= 7 + 4 * elapsed + 1);
	assert_int_equal(denied + busy, 40);
	/* A password known good passes without a check, budget or not. */
	assert_int_equal(web_config_auth(&c, "prom", "right"), WEB_AUTH_OK);
	/* The same password for an unknown user is no good. */
	assert_int_not_equal(web_config_auth(&c, "nobody", "right"), WEB_AUTH_OK);
	web_config_free(&c);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_users),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_auth),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
