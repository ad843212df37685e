// SPDX-License-Identifier: GPL-2.0
/* The Prometheus text exposition writer (src/lib/util/prom.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"
#include "testutil.h"

/* The text written so far (the buffer keeps it NUL-terminated). */
static const char *text(struct prom_buf *b)
{
	return b->data ? b->data : "";
}

static void test_family_and_samples(void **state)
{
	const struct prom_label l[] = {{"disk", "sda"}, {"op", "read"}};
	struct prom_buf b;

	prom_buf_init(&b);
	prom_family(&b, "x_total", PROM_COUNTER, "What x counts.");
	prom_sample_u64(&b, "x_total", l, 2, UINT64_MAX);
	prom_sample(&b, "y", NULL, 0, 0.1);
	prom_sample(&b, "y", l, 1, 1.0 / 3);
	prom_sample(&b, "y", NULL, 0, 1e21);
	assert_string_equal(text(&b), "# HELP x_total What x counts.\n"
				      "# TYPE x_total counter\n"
				      "x_total{disk=\"sda\",op=\"read\"} 18446744073709551615\n"
				      "y 0.1\n"
				      "y{disk=\"sda\"} 0.3333333333333333\n"
				      "y 1e+21\n");
	prom_buf_free(&b);
}

static void test_special_values(void **state)
{
	struct prom_buf b;

	prom_buf_init(&b);
	prom_sample(&b, "v", NULL, 0, NAN);
	prom_sample(&b, "v", NULL, 0, INFINITY);
	prom_sample(&b, "v", NULL, 0, -INFINITY);
	prom_sample(&b, "v", NULL, 0, -0.5);
	assert_string_equal(text(&b), "v NaN\nv +Inf\nv -Inf\nv -0.5\n");
	prom_buf_free(&b);
}

/* Label values and help texts come from the kernel and users: escaped, valid UTF-8. */
static void test_escaping(void **state)
{
	const struct prom_label l[] = {{"cgroup", "a\"b\\c\nd\xff\xc3\xa9"}};
	struct prom_buf b;

	prom_buf_init(&b);
	prom_family(&b, "g", PROM_GAUGE, "back\\slash \"quoted\"\nnext");
	prom_sample(&b, "g", l, 1, 1);
	assert_string_equal(text(&b), "# HELP g back\\\\slash \"quoted\"\\nnext\n"
				      "# TYPE g gauge\n"
				      "g{cgroup=\"a\\\"b\\\\c\\nd\xef\xbf\xbd\xc3\xa9\"} 1\n");
	prom_buf_free(&b);
}

static void test_histogram(void **state)
{
	const struct prom_label l[] = {{"disk", "sda"}};
	const double le[] = {0.001, 0.002};
	const uint64_t cum[] = {3, 5};
	struct prom_buf b;

	prom_buf_init(&b);
	prom_histogram(&b, "h_seconds", l, 1, le, cum, 2, 0.0075, 6);
	prom_histogram(&b, "n", NULL, 0, le, cum, 1, 2, 3);
	assert_string_equal(text(&b), "h_seconds_bucket{disk=\"sda\",le=\"0.001\"} 3\n"
				      "h_seconds_bucket{disk=\"sda\",le=\"0.002\"} 5\n"
				      "h_seconds_bucket{disk=\"sda\",le=\"+Inf\"} 6\n"
				      "h_seconds_sum{disk=\"sda\"} 0.0075\n"
				      "h_seconds_count{disk=\"sda\"} 6\n"
				      "n_bucket{le=\"0.001\"} 3\n"
				      "n_bucket{le=\"+Inf\"} 3\n"
				      "n_sum 2\n"
				      "n_count 3\n");
	prom_buf_free(&b);
}

/* The text is handed over whole, or not at all. */
static void test_take(void **state)
{
	struct prom_buf b;
	size_t len;
	char *t;

	prom_buf_init(&b);
	prom_sample(&b, "a", NULL, 0, 1);
	t = prom_buf_take(&b, &len);
	assert_non_null(t);
	assert_int_equal(len, 4);
	assert_string_equal(t, "a 1\n");
	assert_null(b.data);
	free(t);
	b.oom = true;
	assert_null(prom_buf_take(&b, &len));
	assert_int_equal(len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family_and_samples),
		cmocka_unit_test(test_special_values),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_take),
	};

	return cmocka_run_group_tests_name("prom", tests, NULL, NULL);
}
