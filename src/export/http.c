// SPDX-License-Identifier: GPL-2.0
/* The metrics endpoint's HTTP side, over libmicrohttpd (http.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "args.h"
#include "err.h"
#include "export/http.h"
#include "export/webconf.h"
#include "prom.h"

struct http_endpoint {
	struct MHD_Daemon *daemon;
	http_render_fn render;
	void *arg;
	struct web_config *web; /* TLS and users, or NULL */
	uint16_t port;
};

static int listen_fail(const char *where, const char *opt, const char *spec, const char *why)
{
	return fail_usage("%sinvalid %s '%s': %s (give [ADDR:]PORT: 9464, :9464, "
			  "192.0.2.1:9464, [::1]:9464)",
			  where, opt, spec, why);
}

int http_listen_parse(const char *where, const char *opt, const char *spec, struct http_listen *out)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG};
	const char *colon = strrchr(spec, ':'), *port_text = colon ? colon + 1 : spec;
	char host[64];
	struct addrinfo *res;
	uint64_t port;
	size_t n;
	int ret;

	memset(out, 0, sizeof(*out));
	if (parse_u64_range(port_text, 0, 65535, &port))
		return listen_fail(where, opt, spec, "the port is not a number from 0 to 65535");
	if (!colon) {
		snprintf(host, sizeof(host), "127.0.0.1");
	} else if (colon == spec) {
		snprintf(host, sizeof(host), "0.0.0.0");
	} else {
		n = colon - spec;
		if (spec[0] == '[') { /* [IPv6]:PORT */
			if (n < 3 || spec[n - 1] != ']')
				return listen_fail(where, opt, spec, "an IPv6 address goes in [ ]");
			spec++;
			n -= 2;
		}
		if (n >= sizeof(host))
			return listen_fail(where, opt, spec, "the address is too long");
		memcpy(host, spec, n);
		host[n] = 0;
	}
	ret = getaddrinfo(host, port_text, &hints, &res);
	if (ret)
		return listen_fail(where, opt, spec, gai_strerror(ret));
	memcpy(&out->addr, res->ai_addr, res->ai_addrlen);
	out->addr_len = res->ai_addrlen;
	freeaddrinfo(res);
	snprintf(out->text, sizeof(out->text), "%s%s%s:%u", strchr(host, ':') ? "[" : "", host,
		 strchr(host, ':') ? "]" : "", (unsigned int)port);
	return 0;
}

/*
 * What a TLS client may send before it is answered, read through tls_pull(): GnuTLS
 * keeps a handshake message until it has all of it, and one may say it is 16 MiB long,
 * before the handshake (a ClientHello) or after it (TLS 1.3's post-handshake messages).
 * So GnuTLS is given at most HTTP_TLS_HANDSHAKE_MAX bytes until the client's Finished,
 * then HTTP_TLS_REQUEST_MAX until its request is answered, and so on for the next one;
 * past them reading fails and the connection is closed.
 */
struct tls_peer {
	gnutls_session_t session; /* NULL: no memory for this, the connection is refused */
	int fd;
	bool handshaken;
	size_t received; /* since the handshake began, then since the last answer */
};

static struct tls_peer no_room;

static ssize_t tls_pull(gnutls_transport_ptr_t p, void *buf, size_t len)
{
	struct tls_peer *t = p;
	size_t budget = t->handshaken ? HTTP_TLS_REQUEST_MAX : HTTP_TLS_HANDSHAKE_MAX;
	ssize_t n;

	if (!t->session) {
		errno = ENOMEM;
		return -1;
	}
	if (t->received >= budget) {
		errno = EMSGSIZE;
		return -1;
	}
	n = recv(t->fd, buf, len < budget - t->received ? len : budget - t->received, 0);
	if (n > 0)
		t->received += n;
	return n;
}

/* GnuTLS's wait for data, on the connection's socket (not the pointer tls_pull has). */
static int tls_pull_timeout(gnutls_transport_ptr_t p, unsigned int ms)
{
	struct tls_peer *t = p;
	struct pollfd pfd = {.fd = t->fd, .events = POLLIN};

	if (!t->session)
		return 1; /* tls_pull says why */
	return poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
}

/* The client's Finished, the last of its handshake (TLS 1.2 and 1.3, resumed or not). */
static int tls_finished(gnutls_session_t session, unsigned int type, unsigned int when,
			unsigned int incoming, const gnutls_datum_t *msg)
{
	gnutls_transport_ptr_t recv_ptr, send_ptr;
	struct tls_peer *t;

	gnutls_transport_get_ptr2(session, &recv_ptr, &send_ptr);
	t = recv_ptr;
	if (incoming && t->session) {
		t->handshaken = true;
		t->received = 0;
	}
	return 0;
}

/* A request is answered: the client may send as much again. */
static void tls_answered(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;
	struct tls_peer *t;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	t = ci ? ci->socket_context : NULL;
	if (t && t->session)
		t->received = 0;
}

/* Each TLS connection, as it starts, reads through tls_pull(); and is forgotten. */
static void tls_peer_notify(void *cls, struct MHD_Connection *c, void **ctx,
			    enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *session, *fd;
	struct tls_peer *t;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (*ctx != &no_room)
			free(*ctx);
		*ctx = NULL;
		return;
	}
	session = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!session || !session->tls_session || !fd)
		return;
	t = calloc(1, sizeof(*t));
	if (t) {
		t->session = session->tls_session;
		t->fd = fd->connect_fd;
	} else {
		t = &no_room;
	}
	*ctx = t;
	gnutls_transport_set_ptr2(session->tls_session, t,
				  (gnutls_transport_ptr_t)(intptr_t)fd->connect_fd);
	gnutls_transport_set_pull_function(session->tls_session, tls_pull);
	gnutls_transport_set_pull_timeout_function(session->tls_session, tls_pull_timeout);
	gnutls_handshake_set_hook_function(session->tls_session, GNUTLS_HANDSHAKE_FINISHED,
					   GNUTLS_HOOK_POST, tls_finished);
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned int status, const char *type,
			      void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO; /* out of memory: the connection is closed */
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (status == MHD_HTTP_UNAUTHORIZED)
		ret = MHD_queue_basic_auth_fail_response(c, "iospan", r);
	else
		ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

#define ANSWER_TEXT(c, status, text) \
	answer(c, status, "text/plain", (void *)(text), sizeof(text) - 1, MHD_RESPMEM_PERSISTENT)

/*
 * The client's certificate, as client_auth_type asks: 0 if it may go on. MHD asks for
 * one (the CA list is set) but leaves verifying it to the application.
 */
static int check_client_cert(const struct web_config *w, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;
	unsigned int status = 0;
	int ret;

	if (!web_config_tls(w) || w->client_auth == WEB_CLIENT_NONE)
		return 0;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return -EACCES;
	ret = gnutls_certificate_verify_peers2(ci->tls_session, &status);
	if (ret == GNUTLS_E_NO_CERTIFICATE_FOUND)
		return w->client_auth == WEB_CLIENT_VERIFY_IF_GIVEN ? 0 : -EACCES;
	return ret < 0 || status ? -EACCES : 0;
}

/* basic_auth_users, if any: the request's user and password. */
static enum web_auth_result check_user(struct web_config *w, struct MHD_Connection *c)
{
	enum web_auth_result res;
	char *user, *password = NULL;

	if (!w || !w->nr_users)
		return WEB_AUTH_OK;
	user = MHD_basic_auth_get_username_password(c, &password);
	res = web_config_auth(w, user, password);
	if (password) {
		explicit_bzero(password, strlen(password));
		MHD_free(password);
	}
	if (user)
		MHD_free(user);
	return res;
}

static const char index_page[] =
	"<!DOCTYPE html>\n<html><head><title>iospan</title></head><body>\n"
	"<h1>iospan watch</h1>\n<p><a href=\"/metrics\">Metrics</a> (Prometheus text format; "
	"manual: iospan-watch(8), \"Metrics\")</p>\n</body></html>\n";

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req)
{
	static const char not_found[] = "404 not found: the metrics are at /metrics\n";
	static const char not_allowed[] = "405 method not allowed: GET or HEAD\n";
	static const char failed[] = "500 the metrics could not be gathered: see the log\n";
	static const char forbidden[] = "403 a client certificate the CA signed is needed\n";
	static const char unauthorized[] = "401 a user and password are needed\n";
	static const char busy[] = "503 too many password checks: try again in a second\n";
	struct http_endpoint *e = cls;
	enum web_auth_result auth;
	struct prom_buf b;
	size_t len;
	char *text;
	int err;

	tls_answered(c);
	if (check_client_cert(e->web, c))
		return ANSWER_TEXT(c, MHD_HTTP_FORBIDDEN, forbidden);
	auth = check_user(e->web, c);
	if (auth == WEB_AUTH_BUSY)
		return ANSWER_TEXT(c, MHD_HTTP_SERVICE_UNAVAILABLE, busy);
	if (auth != WEB_AUTH_OK)
		return ANSWER_TEXT(c, MHD_HTTP_UNAUTHORIZED, unauthorized);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return ANSWER_TEXT(c, MHD_HTTP_METHOD_NOT_ALLOWED, not_allowed);
	if (!strcmp(url, "/"))
		return answer(c, MHD_HTTP_OK, "text/html; charset=utf-8", (void *)index_page,
			      sizeof(index_page) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return ANSWER_TEXT(c, MHD_HTTP_NOT_FOUND, not_found);
	prom_buf_init(&b);
	err = e->render(e->arg, &b);
	text = err ? NULL : prom_buf_take(&b, &len);
	prom_buf_free(&b);
	if (!text)
		return ANSWER_TEXT(c, MHD_HTTP_INTERNAL_SERVER_ERROR, failed);
	return answer(c, MHD_HTTP_OK, PROM_CONTENT_TYPE, text, len, MHD_RESPMEM_MUST_FREE);
}

/* The listening socket, made here so that a bind that fails says why. */
static int listen_socket(const struct http_listen *l, uint16_t *port)
{
	struct sockaddr_storage bound;
	socklen_t len = sizeof(bound);
	int fd, one = 1, err;

	fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fail(-errno, "cannot listen on %s: %s", l->text, strerror(errno));
	/* A restart finds the port free while the last run's connections time out. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&l->addr, l->addr_len) ||
	    listen(fd, HTTP_MAX_CONNECTIONS) || getsockname(fd, (struct sockaddr *)&bound, &len)) {
		err = -errno;
		close(fd);
		return fail(err, "cannot listen on %s: %s", l->text, strerror(-err));
	}
	*port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port :
						    ((struct sockaddr_in *)&bound)->sin_port);
	return fd;
}

/* Room for every connection besides the files the daemon has open (as many again, at most). */
static void raise_open_files(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur >= 2 * HTTP_MAX_CONNECTIONS)
		return;
	r.rlim_cur = r.rlim_max < 2 * HTTP_MAX_CONNECTIONS ? r.rlim_max : 2 * HTTP_MAX_CONNECTIONS;
	setrlimit(RLIMIT_NOFILE, &r);
}

/* The daemon's options: limits, and TLS as the web configuration says. */
static void daemon_options(const struct web_config *w, int fd, struct MHD_OptionItem *o)
{
	int n = 0;

#define OPT(opt, v, p) (o[n++] = (struct MHD_OptionItem){opt, (intptr_t)(v), (void *)(p)})
	OPT(MHD_OPTION_LISTEN_SOCKET, fd, NULL);
	OPT(MHD_OPTION_CONNECTION_LIMIT, HTTP_MAX_CONNECTIONS, NULL);
	OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, HTTP_MAX_PER_ADDRESS, NULL);
	OPT(MHD_OPTION_CONNECTION_TIMEOUT, HTTP_IDLE_TIMEOUT_S, NULL);
	OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY, NULL);
	if (web_config_tls(w)) {
		OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, w->cert_pem);
		OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, w->key_pem);
		OPT(MHD_OPTION_HTTPS_PRIORITIES, 0, w->priorities);
		if (w->client_ca_pem)
			OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, w->client_ca_pem);
		OPT(MHD_OPTION_NOTIFY_CONNECTION, tls_peer_notify, NULL);
	}
	OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
}

int http_endpoint_start(const struct http_listen *l, struct web_config *web, http_render_fn render,
			void *arg, struct http_endpoint **out)
{
	struct MHD_OptionItem opts[HTTP_MAX_OPTIONS];
	sigset_t stops, was;
	struct http_endpoint *e;
	unsigned int flags;
	int fd, ret;

	*out = NULL;
	raise_open_files();
	e = calloc(1, sizeof(*e));
	if (!e)
		return fail(-ENOMEM, "out of memory");
	e->render = render;
	e->arg = arg;
	e->web = web;
	fd = listen_socket(l, &e->port);
	if (fd < 0) {
		ret = fd;
		goto cleanup;
	}
	/*
	 * The server's thread inherits these blocked: a stop request (SIGINT, SIGTERM) goes
	 * to the thread that waits for it, whose sleep it cuts short.
	 */
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stops, &was);
	daemon_options(web, fd, opts);
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	if (web_config_tls(web))
		flags |= MHD_USE_TLS;
	e->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, e, MHD_OPTION_ARRAY, opts,
				     MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (!e->daemon) {
		close(fd);
		ret = fail(-EIO, "cannot serve on %s: libmicrohttpd did not start", l->text);
		goto cleanup;
	}
	*out = e;
	return 0;
cleanup:
	free(e);
	return ret;
}

uint16_t http_endpoint_port(const struct http_endpoint *e)
{
	return e->port;
}

void http_endpoint_stop(struct http_endpoint *e)
{
	if (!e)
		return;
	MHD_stop_daemon(e->daemon);
	free(e);
}
