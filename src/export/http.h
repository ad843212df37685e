/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The metrics endpoint's HTTP side (libmicrohttpd, in its own thread): GET /metrics
 * answers what a render function writes at that moment, / a page naming it, any
 * other path 404 and any other method 405. Connections, their memory (a request's
 * line and headers) and their idle time are bounded, so a client can make the
 * daemon hold only so much.
 */
#ifndef IOSPAN_EXPORT_HTTP_H
#define IOSPAN_EXPORT_HTTP_H

#include <stdint.h>
#include <sys/socket.h>

struct prom_buf;
struct web_config;

/* Where to listen: --listen [ADDR:]PORT, resolved. */
struct http_listen {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	char text[80]; /* as given, the loopback default filled in: "127.0.0.1:9464" */
};

/*
 * Parses [ADDR:]PORT: a port alone listens on loopback (127.0.0.1), ":PORT" on every
 * IPv4 address, ADDR is an IPv4 address, [IPv6] or a host name. 0 or -EINVAL (said,
 * naming @opt and @where, a config file's line or "").
 */
int http_listen_parse(const char *where, const char *opt, const char *spec,
		      struct http_listen *out);

/* Writes the exposition into @out; 0, or -errno (answered 500). */
typedef int (*http_render_fn)(void *arg, struct prom_buf *out);

/*
 * Limits of what clients can make the daemon hold: connections (of one address: half,
 * so one client cannot shut out the others), memory per connection (its request line
 * and headers, and the answer's headers: 32 MiB in all), and the seconds a connection
 * may stay idle, its TLS handshake included. Over TLS, what a client may send before
 * its handshake is done (its hello and certificates: 1 to 8 KiB in practice), then
 * before each answer (a request, at most HTTP_CONN_MEMORY, and its records' headers):
 * GnuTLS keeps a handshake message until it is whole, and one may say it is 16 MiB
 * long. The open-files limit is raised to fit.
 */
#define HTTP_MAX_CONNECTIONS   2048
#define HTTP_MAX_PER_ADDRESS   (HTTP_MAX_CONNECTIONS / 2)
#define HTTP_CONN_MEMORY       (16 * 1024)
#define HTTP_IDLE_TIMEOUT_S    10
#define HTTP_TLS_HANDSHAKE_MAX (16 * 1024)
#define HTTP_TLS_REQUEST_MAX   (2 * HTTP_CONN_MEMORY)
#define HTTP_MAX_OPTIONS       12 /* of the daemon: limits and TLS */

struct http_endpoint;

/*
 * Listens on @l and serves from a thread of its own: @render runs in that thread, one
 * request at a time. With @web (webconf.h; kept by the caller until the endpoint
 * stops): HTTPS, client certificates and basic authentication as it says. 0, or -errno
 * said in one line (the address taken, not local...). The port actually bound (for port
 * 0: the kernel's choice) is in http_endpoint_port().
 */
int http_endpoint_start(const struct http_listen *l, struct web_config *web, http_render_fn render,
			void *arg, struct http_endpoint **out);
uint16_t http_endpoint_port(const struct http_endpoint *e);
/* Stops serving (open connections are closed) and frees @e; NULL is fine. */
void http_endpoint_stop(struct http_endpoint *e);

#endif
