// SPDX-License-Identifier: GPL-2.0
/* The metrics endpoint's HTTP side (src/export/http.c), over real sockets on loopback. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"
#include "export/http.h"
#include "prom.h"
#include "testutil.h"

static void test_listen_parse(void **state)
{
	struct http_listen l;
	struct sockaddr_in *in = (struct sockaddr_in *)&l.addr;

	/* A port alone: loopback, never every address by surprise. */
	assert_int_equal(http_listen_parse("", "--listen", "9464", &l), 0);
	assert_string_equal(l.text, "127.0.0.1:9464");
	assert_int_equal(in->sin_family, AF_INET);
	assert_int_equal(ntohl(in->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(ntohs(in->sin_port), 9464);
	assert_int_equal(http_listen_parse("", "--listen", ":9464", &l), 0);
	assert_string_equal(l.text, "0.0.0.0:9464");
	assert_int_equal(http_listen_parse("", "--listen", "192.0.2.1:80", &l), 0);
	assert_string_equal(l.text, "192.0.2.1:80");
	assert_int_equal(http_listen_parse("", "--listen", "0", &l), 0);
	/* Malformed: one usage error each. */
	assert_int_equal(http_listen_parse("", "--listen", "", &l), -EINVAL);
	assert_int_equal(http_listen_parse("", "--listen", "65536", &l), -EINVAL);
	assert_int_equal(http_listen_parse("", "--listen", "1.2.3.4:", &l), -EINVAL);
	assert_int_equal(http_listen_parse("", "--listen", "1.2.3.4:x", &l), -EINVAL);
	assert_int_equal(http_listen_parse("", "--listen", "[::1:9464", &l), -EINVAL);
	assert_int_equal(http_listen_parse("", "--listen", "300.1.1.1:9464", &l), -EINVAL);
}

static int renders;

static int render(void *arg, struct prom_buf *out)
{
	renders++;
	prom_sample(out, "up", NULL, 0, 1);
	return *(int *)arg;
}

/* One request, its whole answer (the server closes the connection after it). */
static char *request(uint16_t port, const char *req)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	size_t len = 0, cap = 65536;
	char *buf = calloc(1, cap);
	ssize_t n;
	int fd;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += n;
	close(fd);
	return buf;
}

static void test_endpoint(void **state)
{
	struct http_endpoint *e, *e2;
	struct http_listen l, taken;
	int result = 0;
	uint16_t port;
	char *r;

	assert_int_equal(http_listen_parse("", "--listen", "0", &l), 0);
	assert_int_equal(http_endpoint_start(&l, NULL, render, &result, &e), 0);
	port = http_endpoint_port(e);
	assert_true(port > 0);

	r = request(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "Content-Type: " PROM_CONTENT_TYPE "\r\n"));
	assert_non_null(strstr(r, "\r\n\r\nup 1\n"));
	free(r);
	/* HEAD: the headers, no body; the page at /; anything else 404, other methods 405. */
	r = request(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_null(strstr(r, "up 1"));
	free(r);
	r = request(port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "href=\"/metrics\""));
	free(r);
	r = request(port, "GET /metrics/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404"));
	free(r);
	r = request(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
			  "Connection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 405"));
	assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
	free(r);
	/* A render that fails: 500, nothing half-written. */
	result = -EIO;
	r = request(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 500"));
	assert_null(strstr(r, "up 1"));
	free(r);
	assert_int_equal(renders, 3); /* GET, HEAD and the failed one */

	/* The port is taken: one error, nothing started. */
	snprintf(l.text, sizeof(l.text), "127.0.0.1:%u", port);
	assert_int_equal(http_listen_parse("", "--listen", l.text, &taken), 0);
	assert_int_equal(http_endpoint_start(&taken, NULL, render, &result, &e2), -EADDRINUSE);
	assert_null(e2);
	http_endpoint_stop(e);
	/* Stopped: the port is free again. */
	assert_int_equal(http_endpoint_start(&taken, NULL, render, &result, &e2), 0);
	http_endpoint_stop(e2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_parse),
		cmocka_unit_test(test_endpoint),
	};

	err_init("iospan", false);
	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
