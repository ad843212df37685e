/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The metrics endpoint's web configuration: the file Prometheus' own exporters take
 * (exporter-toolkit's --web.config.file), YAML:
 *
 *   tls_server_config:
 *     cert_file: server.crt          # PEM; paths relative to this file's folder
 *     key_file: server.key
 *     client_auth_type: RequireAndVerifyClientCert   # or NoClientCert (default),
 *     client_ca_file: clients-ca.crt                 #  VerifyClientCertIfGiven
 *     min_version: TLS12             # TLS10 .. TLS13 (default TLS12)
 *     max_version: TLS13
 *   basic_auth_users:
 *     prometheus: $2y$10$...         # bcrypt hashes only
 *
 * A key iospan does not implement is refused, never ignored: a setting that looks
 * applied but is not would weaken what its writer meant.
 */
#ifndef IOSPAN_EXPORT_WEBCONF_H
#define IOSPAN_EXPORT_WEBCONF_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum web_client_auth {
	WEB_CLIENT_NONE,	    /* NoClientCert */
	WEB_CLIENT_VERIFY_IF_GIVEN, /* VerifyClientCertIfGiven */
	WEB_CLIENT_REQUIRE_VERIFY,  /* RequireAndVerifyClientCert */
};

#define WEB_MAX_FILE  (1 << 20) /* the web configuration, and each PEM file it names */
#define WEB_MAX_USERS 256

struct web_user {
	char *name;
	char *hash;		/* bcrypt: $2a$, $2b$ or $2y$ */
	unsigned char good[32]; /* SHA-256 of the last password that matched */
	bool have_good;
};

struct web_config {
	/* TLS: all NULL without a tls_server_config. */
	char *cert_pem;
	char *key_pem;
	char *client_ca_pem;
	enum web_client_auth client_auth;
	char priorities[96]; /* GnuTLS priority string for the TLS versions allowed */
	struct web_user *users;
	int nr_users;
	/* Password checks: the cache of good ones, and the budget of bcrypt runs. */
	pthread_mutex_t lock;
	double tokens;
	uint64_t refilled_ns;
};

/*
 * Reads @path; 0, or -errno said in one line naming the file and what is wrong (a file
 * that cannot be read, YAML that does not parse, an unknown key, a key that does not
 * match its certificate, a hash that is not bcrypt).
 */
int web_config_load(const char *path, struct web_config *out);
void web_config_free(struct web_config *c);

static inline bool web_config_tls(const struct web_config *c)
{
	return c && c->cert_pem;
}

enum web_auth_result {
	WEB_AUTH_OK,
	WEB_AUTH_DENIED,
	WEB_AUTH_BUSY, /* too many password checks this second: try again later */
};

/*
 * Checks a basic-auth pair against basic_auth_users. bcrypt is slow by design (tens of
 * ms), so a password that matched is remembered (its SHA-256) and checks of others are
 * limited to a few per second: a client guessing passwords cannot take the endpoint's
 * thread from the scrapers. An unknown user costs a bcrypt run as a known one does.
 */
enum web_auth_result web_config_auth(struct web_config *c, const char *user, const char *password);

#endif
