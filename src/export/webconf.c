// SPDX-License-Identifier: GPL-2.0
/* The metrics endpoint's web configuration (webconf.h): libyaml, GnuTLS, libcrypt. */
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <yaml.h>

#include "err.h"
#include "export/webconf.h"

/* bcrypt runs allowed per second for passwords not yet known good, and in a burst. */
#define WEB_AUTH_RATE  4.0
#define WEB_AUTH_BURST 8.0

/* A password checked against no user still costs one bcrypt run (cost 10). */
static const char dummy_hash[] = "$2b$10$RMjxvEdrant5k.8Zds0y.ekSIJEL4/9qjatYLZ4db7lBKngVqGQvS";

struct web_parse {
	const char *path; /* the configuration file, for messages */
	char dir[4096];	  /* its folder: relative paths start there */
	yaml_document_t *doc;
	struct web_config *out;
};

static int web_fail(const struct web_parse *p, const yaml_node_t *n, const char *fmt,
		    const char *what)
{
	if (n)
		return fail(-EINVAL, "web config %s line %lu: %s%s", p->path,
			    (unsigned long)n->start_mark.line + 1, fmt, what);
	return fail(-EINVAL, "web config %s: %s%s", p->path, fmt, what);
}

/* A regular file of at most WEB_MAX_FILE bytes, NUL-terminated, into *@out. */
static int read_small_file(const char *path, char **out, size_t *len)
{
	struct stat sb;
	ssize_t n;
	char *buf;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size > WEB_MAX_FILE) {
		close(fd);
		return S_ISREG(sb.st_mode) ? -EFBIG : -EINVAL;
	}
	buf = calloc(1, sb.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, buf, sb.st_size);
	close(fd);
	if (n != sb.st_size) {
		free(buf);
		return n < 0 ? -errno : -EIO;
	}
	*out = buf;
	*len = n;
	return 0;
}

static const char *read_error(int err)
{
	return err == -EFBIG  ? "larger than 1 MiB" :
	       err == -EINVAL ? "not a regular file" :
				strerror(-err);
}

static const yaml_node_t *node(const struct web_parse *p, int idx)
{
	return yaml_document_get_node(p->doc, idx);
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A PEM file named by @n, relative to the configuration's folder, into *@out. */
static int read_pem(const struct web_parse *p, const yaml_node_t *n, char **out)
{
	const char *name = scalar(n);
	char path[8192], msg[8400];
	size_t len;
	int ret;

	if (!name || !*name)
		return web_fail(p, n, "give a file path", "");
	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", p->dir, name);
	free(*out);
	ret = read_small_file(path, out, &len);
	if (ret) {
		snprintf(msg, sizeof(msg), "cannot read '%s': %s", path, read_error(ret));
		return web_fail(p, n, msg, "");
	}
	return 0;
}

static int tls_version(const struct web_parse *p, const yaml_node_t *n, int *out)
{
	static const char *const names[] = {"TLS10", "TLS11", "TLS12", "TLS13"};
	const char *v = scalar(n);
	int i;

	for (i = 0; v && i < 4; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	}
	return web_fail(p, n, "give TLS10, TLS11, TLS12 or TLS13, not ", v ?: "a list");
}

static int client_auth(const struct web_parse *p, const yaml_node_t *n)
{
	const char *v = scalar(n);

	if (v && !strcmp(v, "NoClientCert"))
		p->out->client_auth = WEB_CLIENT_NONE;
	else if (v && !strcmp(v, "VerifyClientCertIfGiven"))
		p->out->client_auth = WEB_CLIENT_VERIFY_IF_GIVEN;
	else if (v && !strcmp(v, "RequireAndVerifyClientCert"))
		p->out->client_auth = WEB_CLIENT_REQUIRE_VERIFY;
	else
		return web_fail(p, n,
				"client_auth_type: give NoClientCert, VerifyClientCertIfGiven "
				"or RequireAndVerifyClientCert, not ",
				v ?: "a list");
	return 0;
}

/* Walks a mapping's pairs: each key once, a scalar. */
#define for_each_pair(p, map, pair) \
	for (pair = (map)->data.mapping.pairs.start; pair < (map)->data.mapping.pairs.top; pair++)

static int check_mapping(const struct web_parse *p, const yaml_node_t *map, const char *what)
{
	const yaml_node_pair_t *a, *b;

	if (!map || map->type != YAML_MAPPING_NODE)
		return web_fail(p, map, what, " must be a mapping of keys to values");
	for_each_pair(p, map, a)
	{
		if (!scalar(node(p, a->key)))
			return web_fail(p, node(p, a->key), what, ": a key must be a plain name");
		for (b = map->data.mapping.pairs.start; b < a; b++)
			if (!strcmp(scalar(node(p, a->key)), scalar(node(p, b->key))))
				return web_fail(p, node(p, a->key),
						"a key given twice: ", scalar(node(p, a->key)));
	}
	return 0;
}

/* The GnuTLS priority string allowing versions @min to @max (0: TLS 1.0 .. 3: 1.3). */
static int set_priorities(const struct web_parse *p, int min, int max)
{
	static const char *const vers[] = {"+VERS-TLS1.0", "+VERS-TLS1.1", "+VERS-TLS1.2",
					   "+VERS-TLS1.3"};
	char *s = p->out->priorities;
	size_t len = sizeof(p->out->priorities);
	int i, n;

	if (min > max)
		return web_fail(p, NULL, "min_version is above max_version", "");
	n = snprintf(s, len, "NORMAL:-VERS-ALL");
	for (i = min; i <= max; i++)
		n += snprintf(s + n, len - n, ":%s", vers[i]);
	return 0;
}

static int parse_tls(struct web_parse *p, const yaml_node_t *map)
{
	const yaml_node_t *cert = NULL, *key = NULL;
	const yaml_node_pair_t *pair;
	int min = 2, max = 3, ret; /* TLS 1.2 and 1.3, as exporter-toolkit's default */
	struct web_config *c = p->out;

	ret = check_mapping(p, map, "tls_server_config");
	if (ret)
		return ret;
	for_each_pair(p, map, pair)
	{
		const yaml_node_t *k = node(p, pair->key), *v = node(p, pair->value);
		const char *name = scalar(k);

		if (!strcmp(name, "cert_file"))
			ret = read_pem(p, cert = v, &c->cert_pem);
		else if (!strcmp(name, "key_file"))
			ret = read_pem(p, key = v, &c->key_pem);
		else if (!strcmp(name, "client_ca_file"))
			ret = read_pem(p, v, &c->client_ca_pem);
		else if (!strcmp(name, "client_auth_type"))
			ret = client_auth(p, v);
		else if (!strcmp(name, "min_version"))
			ret = tls_version(p, v, &min);
		else if (!strcmp(name, "max_version"))
			ret = tls_version(p, v, &max);
		else
			ret = web_fail(p, k,
				       "tls_server_config: a key iospan does not implement "
				       "(cert_file, key_file, client_auth_type, client_ca_file, "
				       "min_version, max_version): ",
				       name);
		if (ret)
			return ret;
	}
	if (!cert || !key)
		return web_fail(p, map, "tls_server_config needs cert_file and key_file", "");
	if (c->client_auth != WEB_CLIENT_NONE && !c->client_ca_pem)
		return web_fail(p, map,
				"client_auth_type verifies client certificates: give "
				"client_ca_file",
				"");
	if (c->client_auth == WEB_CLIENT_NONE && c->client_ca_pem)
		return web_fail(p, map,
				"client_ca_file is given but client_auth_type is "
				"NoClientCert",
				"");
	return set_priorities(p, min, max);
}

/* A bcrypt hash crypt(3) takes: "$2a$", "$2b$" or "$2y$", a cost, 53 characters. */
static bool bcrypt_hash(const char *h)
{
	return strlen(h) == 60 && h[0] == '$' && h[1] == '2' && strchr("aby", h[2]) &&
	       h[3] == '$' && h[6] == '$';
}

static int parse_users(struct web_parse *p, const yaml_node_t *map)
{
	struct web_config *c = p->out;
	const yaml_node_pair_t *pair;
	int ret;

	ret = check_mapping(p, map, "basic_auth_users");
	if (ret)
		return ret;
	if (map->data.mapping.pairs.top - map->data.mapping.pairs.start > WEB_MAX_USERS)
		return web_fail(p, map, "basic_auth_users: more than 256 users", "");
	for_each_pair(p, map, pair)
	{
		const char *name = scalar(node(p, pair->key)), *hash = scalar(node(p, pair->value));
		struct web_user *u;

		if (!*name || strchr(name, ':'))
			return web_fail(p, node(p, pair->key),
					"a user name is not empty and has no ':': ", name);
		if (!hash || !bcrypt_hash(hash))
			return web_fail(p, node(p, pair->value),
					"not a bcrypt hash (htpasswd -nB USER makes one) for user ",
					name);
		u = realloc(c->users, (c->nr_users + 1) * sizeof(*u));
		if (!u)
			return fail(-ENOMEM, "out of memory");
		c->users = u;
		u += c->nr_users;
		memset(u, 0, sizeof(*u));
		u->name = strdup(name);
		u->hash = strdup(hash);
		c->nr_users++;
		if (!u->name || !u->hash)
			return fail(-ENOMEM, "out of memory");
	}
	return 0;
}

/* The certificate and key load together (GnuTLS says why not), the CA list has one. */
static int check_tls(const struct web_parse *p)
{
	const struct web_config *c = p->out;
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert = {(unsigned char *)c->cert_pem, strlen(c->cert_pem)};
	gnutls_datum_t key = {(unsigned char *)c->key_pem, strlen(c->key_pem)};
	const char *bad = NULL;
	int ret;

	if (gnutls_certificate_allocate_credentials(&cred))
		return fail(-ENOMEM, "out of memory");
	ret = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (ret < 0)
		bad = "cert_file and key_file";
	if (!bad && c->client_ca_pem) {
		gnutls_datum_t ca = {(unsigned char *)c->client_ca_pem, strlen(c->client_ca_pem)};

		ret = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
		if (ret <= 0) {
			bad = "client_ca_file";
			ret = ret ?: GNUTLS_E_NO_CERTIFICATE_FOUND;
		}
	}
	gnutls_certificate_free_credentials(cred);
	if (bad)
		return fail(-EINVAL, "web config %s: %s: %s", p->path, bad, gnutls_strerror(ret));
	return 0;
}

static int parse_root(struct web_parse *p)
{
	const yaml_node_t *root = yaml_document_get_root_node(p->doc);
	const yaml_node_pair_t *pair;
	int ret;

	if (!root) /* an empty file: plain HTTP, no passwords, as exporter-toolkit */
		return 0;
	ret = check_mapping(p, root, "the file");
	if (ret)
		return ret;
	for_each_pair(p, root, pair)
	{
		const yaml_node_t *k = node(p, pair->key), *v = node(p, pair->value);
		const char *name = scalar(k);

		if (!strcmp(name, "tls_server_config"))
			ret = parse_tls(p, v);
		else if (!strcmp(name, "basic_auth_users"))
			ret = parse_users(p, v);
		else
			ret = web_fail(p, k,
				       "a key iospan does not implement (tls_server_config, "
				       "basic_auth_users): ",
				       name);
		if (ret)
			return ret;
	}
	return p->out->cert_pem ? check_tls(p) : 0;
}

int web_config_load(const char *path, struct web_config *out)
{
	struct web_parse p = {.path = path, .out = out};
	yaml_document_t doc;
	yaml_parser_t parser;
	char *text = NULL, *dir;
	bool have_doc = false;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	pthread_mutex_init(&out->lock, NULL);
	out->tokens = WEB_AUTH_BURST;
	ret = read_small_file(path, &text, &len);
	if (ret) {
		ret = fail(ret, "cannot read web config '%s': %s", path, read_error(ret));
		goto cleanup;
	}
	snprintf(p.dir, sizeof(p.dir), "%s", path);
	dir = dirname(p.dir);
	memmove(p.dir, dir, strlen(dir) + 1);
	if (!yaml_parser_initialize(&parser)) {
		ret = fail(-ENOMEM, "out of memory");
		goto cleanup;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	have_doc = yaml_parser_load(&parser, &doc);
	if (!have_doc)
		ret = fail(-EINVAL, "web config %s line %lu: %s", path,
			   (unsigned long)parser.problem_mark.line + 1,
			   parser.problem ?: "not YAML");
	yaml_parser_delete(&parser);
	if (!have_doc)
		goto cleanup;
	p.doc = &doc;
	ret = parse_root(&p);
	yaml_document_delete(&doc);
cleanup:
	free(text);
	if (ret)
		web_config_free(out);
	return ret;
}

void web_config_free(struct web_config *c)
{
	int i;

	free(c->cert_pem);
	free(c->key_pem);
	free(c->client_ca_pem);
	for (i = 0; i < c->nr_users; i++) {
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	free(c->users);
	pthread_mutex_destroy(&c->lock);
	memset(c, 0, sizeof(*c));
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* One more bcrypt run, if the budget has it (called with the lock held). */
static bool take_token(struct web_config *c)
{
	uint64_t now = now_ns();

	c->tokens += (now - c->refilled_ns) / 1e9 * WEB_AUTH_RATE;
	if (c->tokens > WEB_AUTH_BURST)
		c->tokens = WEB_AUTH_BURST;
	c->refilled_ns = now;
	if (c->tokens < 1)
		return false;
	c->tokens -= 1;
	return true;
}

static bool bcrypt_matches(const char *hash, const char *password)
{
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	const char *out;
	bool ok;

	if (!cd)
		return false;
	out = crypt_r(password, hash, cd);
	ok = out && out[0] != '*' && strlen(out) == strlen(hash) &&
	     !gnutls_memcmp(out, hash, strlen(hash));
	free(cd);
	return ok;
}

enum web_auth_result web_config_auth(struct web_config *c, const char *user, const char *password)
{
	enum web_auth_result res = WEB_AUTH_DENIED;
	struct web_user *u = NULL;
	unsigned char digest[32];
	const char *hash;
	int i;

	if (!user || !password)
		return WEB_AUTH_DENIED;
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, password, strlen(password), digest))
		return WEB_AUTH_DENIED;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->nr_users && !u; i++)
		if (!strcmp(c->users[i].name, user))
			u = &c->users[i];
	if (u && u->have_good && !gnutls_memcmp(u->good, digest, sizeof(digest))) {
		res = WEB_AUTH_OK;
		goto cleanup;
	}
	if (!take_token(c)) {
		res = WEB_AUTH_BUSY;
		goto cleanup;
	}
	hash = u ? u->hash : dummy_hash;
	/* bcrypt runs outside the lock: known-good passwords pass meanwhile. */
	pthread_mutex_unlock(&c->lock);
	res = bcrypt_matches(hash, password) && u ? WEB_AUTH_OK : WEB_AUTH_DENIED;
	pthread_mutex_lock(&c->lock);
	if (res == WEB_AUTH_OK) {
		memcpy(u->good, digest, sizeof(digest));
		u->have_good = true;
	}
cleanup:
	pthread_mutex_unlock(&c->lock);
	return res;
}
