// SPDX-License-Identifier: GPL-2.0
/* OTLP/HTTP JSON export of watch's slow requests and incidents (otlp.h), over libcurl. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>

#include <curl/curl.h>

#include "err.h"
#include "export/otlp.h"
#include "json.h"

static const char *const signal_names[OTLP_NR_SIGNALS] = {"traces", "logs", "metrics"};
static const char *const drop_names[OTLP_NR_DROPS] = {"queue_full", "rejected", "retries_exhausted",
						      "at_exit", "superseded"};

const char *otlp_signal_name(enum otlp_signal s)
{
	return signal_names[s];
}

const char *otlp_drop_name(enum otlp_drop d)
{
	return drop_names[d];
}

/* ---- configuration ---- */

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* An http(s) URL libcurl can parse; @what names it in the message. */
static int check_url(const char *what, const char *url)
{
	CURLU *h = curl_url();
	char *scheme = NULL;
	int ret = 0;

	if (!h)
		return fail(-ENOMEM, "out of memory");
	if (strlen(url) >= sizeof(((struct otlp_config *)0)->url[0]) ||
	    curl_url_set(h, CURLUPART_URL, url, 0) ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) ||
	    (strcmp(scheme, "http") && strcmp(scheme, "https")))
		ret = fail_usage("invalid %s '%s': give an http:// or https:// URL "
				 "(http://collector:4318)",
				 what, url);
	curl_free(scheme);
	curl_url_cleanup(h);
	return ret;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : isxdigit(c) ? tolower(c) - 'a' + 10 : -1;
}

/* Percent-decodes @s[0..@len) into a new string; NULL if malformed or no memory. */
static char *pct_decode(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		if (i + 2 >= len || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0) {
			free(out);
			return NULL;
		}
		*o++ = (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
		i += 2;
	}
	*o = '\0';
	return out;
}

/*
 * A "key=value,key=value" list (W3C Baggage's form, as the SDK's variables take it):
 * @each is called with each trimmed key and percent-decoded value. 0 or -EINVAL.
 */
static int parse_kv_list(const char *list, int (*each)(void *arg, const char *k, const char *v),
			 void *arg)
{
	const char *p = list;
	int ret = 0;

	while (*p && !ret) {
		const char *end = strchr(p, ','), *eq;
		char *key, *val;
		size_t klen;

		end = end ?: p + strlen(p);
		eq = memchr(p, '=', end - p);
		if (!eq)
			return -EINVAL;
		while (p < eq && isspace((unsigned char)*p))
			p++;
		klen = eq - p;
		while (klen && isspace((unsigned char)p[klen - 1]))
			klen--;
		if (!klen)
			return -EINVAL;
		key = strndup(p, klen);
		eq++;
		while (eq < end && isspace((unsigned char)*eq))
			eq++;
		klen = end - eq;
		while (klen && isspace((unsigned char)eq[klen - 1]))
			klen--;
		val = pct_decode(eq, klen);
		ret = key && val ? each(arg, key, val) : -EINVAL;
		free(key);
		free(val);
		p = *end ? end + 1 : end;
	}
	return ret;
}

static int add_header(void *arg, const char *k, const char *v)
{
	struct otlp_config *c = arg;
	const char *q;

	for (q = k; *q; q++)
		if (!isgraph((unsigned char)*q) || *q == ':')
			return -EINVAL;
	for (q = v; *q; q++)
		if (*q == '\r' || *q == '\n')
			return -EINVAL;
	if (c->nr_headers >= OTLP_MAX_HEADERS)
		return -EINVAL;
	if (asprintf(&c->headers[c->nr_headers], "%s: %s", k, v) < 0)
		return -ENOMEM;
	c->nr_headers++;
	return 0;
}

/* An attribute: {"key": @key, "value": {@type: @v}}; none if @v is NULL or empty. */
static void attr(struct jw *jw, const char *key, const char *type, const char *v)
{
	if (!v || !*v)
		return;
	jw_start_object(jw);
	jw_kv_string(jw, "key", key);
	jw_kv_object(jw, "value");
	jw_kv_string(jw, type, v);
	jw_end_object(jw);
	jw_end_object(jw);
}

static void attr_string(struct jw *jw, const char *key, const char *v)
{
	attr(jw, key, "stringValue", v);
}

/* 64-bit integers go as decimal strings in OTLP/JSON (protobuf's JSON mapping). */
static void attr_int(struct jw *jw, const char *key, int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%lld", (long long)v);
	attr(jw, key, "intValue", num);
}

/* The resource's attributes, collected before they are written. */
struct resource_attrs {
	char *key[64], *val[64];
	int nr;
};

static int add_resource_attr(void *arg, const char *k, const char *v)
{
	struct resource_attrs *r = arg;
	int i;

	for (i = 0; i < r->nr; i++) /* a later one wins, as the SDKs do */
		if (!strcmp(r->key[i], k)) {
			free(r->val[i]);
			r->val[i] = strdup(v);
			return r->val[i] ? 0 : -ENOMEM;
		}
	if (r->nr >= 64)
		return -EINVAL;
	r->key[r->nr] = strdup(k);
	r->val[r->nr] = strdup(v);
	r->nr++;
	return r->key[r->nr - 1] && r->val[r->nr - 1] ? 0 : -ENOMEM;
}

static void fill_resource(struct jw *jw, const void *arg)
{
	const struct resource_attrs *r = arg;
	int i;

	jw_start_array(jw);
	for (i = 0; i < r->nr; i++)
		attr_string(jw, r->key[i], r->val[i]);
	jw_end_array(jw);
}

/* service.name and host.name, then OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME. */
static int make_resource(struct otlp_config *c)
{
	struct resource_attrs r = {};
	struct utsname u;
	int ret, i;

	uname(&u);
	ret = add_resource_attr(&r, "service.name", "iospan");
	ret = ret ?: add_resource_attr(&r, "service.version", IOSPAN_VERSION);
	ret = ret ?: add_resource_attr(&r, "host.name", u.nodename);
	if (!ret && env("OTEL_RESOURCE_ATTRIBUTES")) {
		ret = parse_kv_list(env("OTEL_RESOURCE_ATTRIBUTES"), add_resource_attr, &r);
		if (ret == -EINVAL)
			ret = fail_usage("invalid OTEL_RESOURCE_ATTRIBUTES '%s': give "
					 "key=value,key=value (values percent-encoded)",
					 env("OTEL_RESOURCE_ATTRIBUTES"));
	}
	if (!ret && env("OTEL_SERVICE_NAME"))
		ret = add_resource_attr(&r, "service.name", env("OTEL_SERVICE_NAME"));
	if (!ret) {
		c->resource = jw_text(fill_resource, &r, NULL);
		ret = c->resource ? 0 : -ENOMEM;
	}
	if (ret == -ENOMEM)
		ret = fail(-ENOMEM, "out of memory");
	for (i = 0; i < r.nr; i++) {
		free(r.key[i]);
		free(r.val[i]);
	}
	return ret;
}

/* The URL of @s: its own variable as it is, else the base with v1/SIGNAL appended. */
static int signal_url(struct otlp_config *c, enum otlp_signal s, const char *base)
{
	static const char *const vars[] = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
					   "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
					   "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"};
	const char *own = env(vars[s]);
	size_t n;

	if (own) {
		snprintf(c->url[s], sizeof(c->url[s]), "%s", own);
		return check_url(vars[s], own);
	}
	n = strlen(base);
	snprintf(c->url[s], sizeof(c->url[s]), "%s%sv1/%s", base,
		 n && base[n - 1] == '/' ? "" : "/", signal_names[s]);
	return 0;
}

int otlp_config_parse(const char *endpoint, bool metrics, struct otlp_config *c, bool *on)
{
	const char *base = endpoint ?: env("OTEL_EXPORTER_OTLP_ENDPOINT");
	const char *what = endpoint ? "--otlp-endpoint" : "OTEL_EXPORTER_OTLP_ENDPOINT";
	const char *v;
	char *end;
	int ret, s;

	memset(c, 0, sizeof(*c));
	/* The metrics' own endpoint (set for other SDKs, often) turns on only a push. */
	*on = base || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") ||
	      env("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") ||
	      (metrics && env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"));
	if (!*on)
		return 0;
	if (base) {
		ret = check_url(what, base);
		if (ret)
			return ret;
	} else {
		base = "http://localhost:4318"; /* the specification's default */
	}
	for (s = 0; s < OTLP_NR_SIGNALS; s++) {
		ret = signal_url(c, s, base);
		if (ret)
			goto cleanup;
	}
	v = env("OTEL_EXPORTER_OTLP_PROTOCOL");
	if (v && strcmp(v, "http/json")) {
		ret = fail_usage("OTEL_EXPORTER_OTLP_PROTOCOL '%s': iospan sends http/json only",
				 v);
		goto cleanup;
	}
	c->timeout_ms = 10000;
	v = env("OTEL_EXPORTER_OTLP_TIMEOUT");
	if (v) {
		errno = 0;
		c->timeout_ms = strtol(v, &end, 10);
		if (errno || *end || c->timeout_ms <= 0 || c->timeout_ms > 600000) {
			ret = fail_usage("invalid OTEL_EXPORTER_OTLP_TIMEOUT '%s': give "
					 "milliseconds, 1 to 600000",
					 v);
			goto cleanup;
		}
	}
	v = env("OTEL_EXPORTER_OTLP_CERTIFICATE");
	if (v)
		snprintf(c->ca_file, sizeof(c->ca_file), "%s", v);
	v = env("OTEL_EXPORTER_OTLP_HEADERS");
	if (v && parse_kv_list(v, add_header, c)) {
		ret = fail_usage("invalid OTEL_EXPORTER_OTLP_HEADERS: give name=value,name=value "
				 "(values percent-encoded, at most %d)",
				 OTLP_MAX_HEADERS);
		goto cleanup;
	}
	ret = make_resource(c);
cleanup:
	if (ret)
		otlp_config_free(c);
	return ret;
}

int otlp_config_metrics(struct otlp_config *c, long opt_ms)
{
	const char *v = env("OTEL_METRIC_EXPORT_INTERVAL");
	char *end;

	c->metrics_interval_ms = opt_ms ?: 60000; /* the specification's default */
	if (opt_ms || !v)
		return 0;
	errno = 0;
	c->metrics_interval_ms = strtol(v, &end, 10);
	if (errno || *end || c->metrics_interval_ms < 100 || c->metrics_interval_ms > 86400000)
		return fail_usage("invalid OTEL_METRIC_EXPORT_INTERVAL '%s': give milliseconds, "
				  "100 to 86400000",
				  v);
	return 0;
}

void otlp_config_free(struct otlp_config *c)
{
	int i;

	for (i = 0; i < c->nr_headers; i++)
		free(c->headers[i]);
	free(c->resource);
	memset(c, 0, sizeof(*c));
}

/* ---- what is sent ---- */

static void random_hex(char *out, size_t bytes)
{
	unsigned char b[16] = {};
	size_t i;

	/* Never all zero: an all-zero id is invalid in OTLP. */
	while (getrandom(b, bytes, 0) != (ssize_t)bytes || !memcmp(b, (char[16]){}, bytes))
		;
	for (i = 0; i < bytes; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* A 64-bit count as a decimal string (fixed64 in protobuf's JSON mapping). */
static void u64_string(struct jw *jw, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	jw_string(jw, num);
}

static void kv_u64(struct jw *jw, const char *name, uint64_t v)
{
	jw_name(jw, name);
	u64_string(jw, v);
}

static void span_start(struct jw *jw, const char *trace, const char *id, const char *parent,
		       const char *name, uint64_t start, uint64_t end)
{
	jw_start_object(jw);
	jw_kv_string(jw, "traceId", trace);
	jw_kv_string(jw, "spanId", id);
	if (parent)
		jw_kv_string(jw, "parentSpanId", parent);
	jw_kv_string(jw, "name", name);
	jw_kv_int(jw, "kind", 1); /* SPAN_KIND_INTERNAL */
	kv_u64(jw, "startTimeUnixNano", start);
	kv_u64(jw, "endTimeUnixNano", end);
}

/* One request: its span, then a child span per stage, end to end from its start. */
static void fill_request(struct jw *jw, const void *arg)
{
	const struct otlp_request *r = arg;
	char trace[33], root[17], child[17];
	uint64_t at = r->start_unix_ns;
	unsigned int i;

	random_hex(trace, 16);
	random_hex(root, 8);
	span_start(jw, trace, root, NULL, r->op, r->start_unix_ns, r->start_unix_ns + r->total_ns);
	jw_kv_array(jw, "attributes");
	if (r->pid) {
		attr_int(jw, "process.pid", r->pid);
		attr_string(jw, "process.executable.name", r->comm);
	}
	if (r->tid)
		attr_int(jw, "thread.id", r->tid);
	attr_string(jw, "iospan.cgroup", r->cgroup);
	attr_string(jw, "container.id", r->container);
	attr_string(jw, "file.path", r->path);
	attr_string(jw, "iospan.disk", r->disk);
	attr_string(jw, "iospan.op", r->op);
	attr_int(jw, "iospan.bytes", (int64_t)r->bytes);
	attr_int(jw, "iospan.offset", r->offset);
	attr_int(jw, "iospan.total_ns", (int64_t)r->total_ns);
	attr_string(jw, "iospan.detail", r->detail);
	jw_end_array(jw);
	jw_end_object(jw);
	for (i = 0; i < r->nr_stages; i++) {
		random_hex(child, 8);
		span_start(jw, trace, child, root, r->stages[i].name, at, at + r->stages[i].ns);
		jw_kv_array(jw, "attributes");
		attr_string(jw, "iospan.stage", r->stages[i].name);
		jw_end_array(jw);
		jw_end_object(jw);
		at += r->stages[i].ns;
	}
}

struct log_arg {
	uint64_t time;
	int severity;
	const char *body;
	const struct otlp_attr *attrs;
	unsigned int nr;
};

static void fill_log(struct jw *jw, const void *arg)
{
	const struct log_arg *l = arg;
	unsigned int i;

	jw_start_object(jw);
	kv_u64(jw, "timeUnixNano", l->time);
	kv_u64(jw, "observedTimeUnixNano", l->time);
	jw_kv_int(jw, "severityNumber", l->severity);
	jw_kv_string(jw, "severityText", l->severity >= OTLP_SEVERITY_WARN ? "WARN" : "INFO");
	jw_kv_object(jw, "body");
	jw_kv_string(jw, "stringValue", l->body);
	jw_end_object(jw);
	jw_kv_array(jw, "attributes");
	for (i = 0; i < l->nr; i++) {
		if (l->attrs[i].str)
			attr_string(jw, l->attrs[i].key, l->attrs[i].str);
		else
			attr_int(jw, l->attrs[i].key, l->attrs[i].num);
	}
	jw_end_array(jw);
	jw_end_object(jw);
}

/* ---- metrics: the OTLP JSON writer ---- */

/* A series seen in a push: when its cumulative count started, and the count. */
struct otlp_series {
	uint64_t key; /* 0: a free place */
	uint64_t start_ns, last;
};

/* Open addressing, a power of two places, at most half of them taken. */
struct series_table {
	struct otlp_series *s;
	size_t cap, nr;
};

struct otlp_metrics {
	struct mwriter w;
	uint64_t now;
	struct series_table prev, seen; /* the last push's series, this one's */
	/* The family being written, and its name and unit in OTLP. */
	const char *name, *help;
	enum prom_type type;
	char oname[128];
	const char *unit;
	/* The metric (an item) being written: no jw while none is. */
	char *text;
	size_t len;
	FILE *f;
	struct jw *jw;
	unsigned int points;
	struct otlp_blob *items;
	unsigned int nr, cap;
	bool oom;
};

static struct otlp_series *series_slot(struct series_table *t, uint64_t key)
{
	size_t i;

	for (i = key & (t->cap - 1); t->s[i].key && t->s[i].key != key; i = (i + 1) & (t->cap - 1))
		;
	return &t->s[i];
}

static const struct otlp_series *series_find(const struct series_table *t, uint64_t key)
{
	const struct otlp_series *p;

	if (!t->cap)
		return NULL;
	p = series_slot((struct series_table *)t, key);
	return p->key ? p : NULL;
}

static int series_put(struct series_table *t, const struct otlp_series *v)
{
	struct series_table big;
	struct otlp_series *p;
	size_t i;

	if (2 * (t->nr + 1) > t->cap) {
		big.cap = t->cap ? 2 * t->cap : 64;
		big.nr = 0;
		big.s = calloc(big.cap, sizeof(*big.s));
		if (!big.s)
			return -ENOMEM;
		for (i = 0; i < t->cap; i++)
			if (t->s[i].key) {
				*series_slot(&big, t->s[i].key) = t->s[i];
				big.nr++;
			}
		free(t->s);
		*t = big;
	}
	p = series_slot(t, v->key);
	t->nr += !p->key;
	*p = *v;
	return 0;
}

/*
 * The series' identity: its family and labels (FNV-1a, 64 bits; never 0). Two series
 * of one hash would share a start time: at 10^5 series, a chance in 10^9.
 */
static uint64_t series_key(const char *name, const struct prom_label *l, int nr)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *parts[2 * 16 + 1];
	const unsigned char *p;
	int i, n = 0;

	parts[n++] = name;
	for (i = 0; i < nr && i < 16; i++) {
		parts[n++] = l[i].name;
		parts[n++] = l[i].value ?: "";
	}
	for (i = 0; i < n; i++)
		for (p = (const unsigned char *)parts[i];; p++) {
			h = (h ^ *p) * 0x100000001b3ULL;
			if (!*p)
				break;
		}
	return h ?: 1;
}

/*
 * The start of a cumulative series now at @count: that of the last push, unless the
 * series is new or went back (a counter reset), when it starts now.
 */
static uint64_t series_start(struct otlp_metrics *om, const struct prom_label *l, int nr,
			     uint64_t count)
{
	struct otlp_series v = {series_key(om->name, l, nr), om->now, count};
	const struct otlp_series *old = series_find(&om->prev, v.key);

	if (old && count >= old->last)
		v.start_ns = old->start_ns;
	if (series_put(&om->seen, &v))
		om->oom = true;
	return v.start_ns;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* The metric being written ends: its JSON an item. */
static void omw_close(struct otlp_metrics *om)
{
	struct otlp_blob *items;

	if (!om->jw)
		return;
	jw_end_array(om->jw); /* dataPoints */
	if (om->type != PROM_GAUGE)
		jw_kv_int(om->jw, "aggregationTemporality", 2); /* CUMULATIVE */
	if (om->type == PROM_COUNTER)
		jw_kv_bool(om->jw, "isMonotonic", true);
	jw_end_object(om->jw);
	jw_end_object(om->jw);
	jw_free(om->jw);
	om->jw = NULL;
	if (fclose(om->f) || !om->text) {
		om->oom = true;
		free(om->text);
		return;
	}
	if (om->nr == om->cap) {
		items = realloc(om->items, (om->cap ? 2 * om->cap : 32) * sizeof(*items));
		if (!items) {
			om->oom = true;
			free(om->text);
			return;
		}
		om->items = items;
		om->cap = om->cap ? 2 * om->cap : 32;
	}
	om->items[om->nr++] = (struct otlp_blob){om->text, om->len};
}

/*
 * The OTLP name of a Prometheus family as the specification's compatibility rules
 * would have it (a counter without "_total"; the unit from the suffix left), so that a
 * Prometheus fed through OTLP gets back the names of /metrics.
 */
static void omw_family(struct mwriter *w, const char *name, enum prom_type type, const char *help)
{
	struct otlp_metrics *om = (struct otlp_metrics *)w;
	size_t n = strlen(name);

	omw_close(om); /* the last family's */
	if (type == PROM_COUNTER && ends_with(name, n, "_total"))
		n -= strlen("_total");
	snprintf(om->oname, sizeof(om->oname), "%.*s", (int)n, name);
	om->unit = ends_with(name, n, "_seconds") ? "s" : ends_with(name, n, "_bytes") ? "By" : "";
	om->name = name;
	om->type = type;
	om->help = help;
}

/* A point of the family: in the metric being written, or a new one. False: no memory. */
static bool omw_point(struct otlp_metrics *om, const struct prom_label *l, int nr)
{
	static const char *const kinds[] = {
		[PROM_COUNTER] = "sum", [PROM_GAUGE] = "gauge", [PROM_HISTOGRAM] = "histogram"};
	int i;

	if (om->points >= OTLP_METRIC_POINTS)
		omw_close(om);
	if (!om->jw) {
		om->text = NULL;
		om->f = open_memstream(&om->text, &om->len);
		om->jw = om->f ? jw_new(om->f) : NULL;
		if (!om->jw) {
			if (om->f)
				fclose(om->f);
			free(om->text);
			om->oom = true;
			return false;
		}
		jw_flush_lines(om->jw, false);
		jw_start_object(om->jw);
		jw_kv_string(om->jw, "name", om->oname);
		jw_kv_string(om->jw, "description", om->help);
		if (*om->unit)
			jw_kv_string(om->jw, "unit", om->unit);
		jw_kv_object(om->jw, kinds[om->type]);
		jw_kv_array(om->jw, "dataPoints");
		om->points = 0;
	}
	om->points++;
	jw_start_object(om->jw);
	jw_kv_array(om->jw, "attributes");
	for (i = 0; i < nr; i++)
		attr_string(om->jw, l[i].name, l[i].value);
	jw_end_array(om->jw);
	return true;
}

/* An exact decimal as a JSON number (a double in OTLP). */
static void kv_num(struct jw *jw, const char *name, struct mw_num v)
{
	jw_kv_fixed(jw, name, v.n > INT64_MAX ? INT64_MAX : (int64_t)v.n, v.scale);
}

static void omw_sample(struct mwriter *w, const struct prom_label *l, int nr, struct mw_num v)
{
	struct otlp_metrics *om = (struct otlp_metrics *)w;
	if (!omw_point(om, l, nr))
		return;
	if (om->type != PROM_GAUGE)
		kv_u64(om->jw, "startTimeUnixNano", series_start(om, l, nr, v.n));
	kv_u64(om->jw, "timeUnixNano", om->now);
	if (v.scale) {
		kv_num(om->jw, "asDouble", v);
	} else {
		kv_u64(om->jw, "asInt", v.n > INT64_MAX ? INT64_MAX : v.n); /* sfixed64 */
	}
	jw_end_object(om->jw);
}

/* Prometheus' cumulative le buckets as OTLP's: each bucket's own count, +Inf's last. */
static void omw_histogram(struct mwriter *w, const struct prom_label *l, int nr, const uint64_t *le,
			  int le_scale, const uint64_t *cum, int nr_le, struct mw_num sum,
			  uint64_t count)
{
	struct otlp_metrics *om = (struct otlp_metrics *)w;
	uint64_t below = 0;
	int i;

	if (!omw_point(om, l, nr))
		return;
	kv_u64(om->jw, "startTimeUnixNano", series_start(om, l, nr, count));
	kv_u64(om->jw, "timeUnixNano", om->now);
	kv_u64(om->jw, "count", count);
	kv_num(om->jw, "sum", sum);
	jw_kv_array(om->jw, "bucketCounts");
	for (i = 0; i <= nr_le; i++) {
		/* Cumulative counts never go down; were they to, the bucket counts 0. */
		uint64_t upto = i < nr_le ? cum[i] : count;

		u64_string(om->jw, upto > below ? upto - below : 0);
		below = upto > below ? upto : below;
	}
	jw_end_array(om->jw);
	jw_kv_array(om->jw, "explicitBounds");
	for (i = 0; i < nr_le; i++)
		jw_fixed(om->jw, (int64_t)le[i], le_scale);
	jw_end_array(om->jw);
	jw_end_object(om->jw);
}

static const struct mwriter_ops otlp_writer_ops = {
	.family = omw_family,
	.sample = omw_sample,
	.histogram = omw_histogram,
};

struct otlp_metrics *otlp_metrics_new(void)
{
	struct otlp_metrics *om = calloc(1, sizeof(*om));

	if (om)
		om->w.ops = &otlp_writer_ops;
	return om;
}

static void drop_items(struct otlp_metrics *om)
{
	unsigned int i;

	for (i = 0; i < om->nr; i++)
		free(om->items[i].json);
	free(om->items);
	om->items = NULL;
	om->nr = om->cap = 0;
}

void otlp_metrics_free(struct otlp_metrics *om)
{
	if (!om)
		return;
	if (om->jw) {
		jw_free(om->jw);
		fclose(om->f);
		free(om->text);
	}
	drop_items(om);
	free(om->prev.s);
	free(om->seen.s);
	free(om);
}

struct mwriter *otlp_metrics_begin(struct otlp_metrics *om, uint64_t now_unix_ns)
{
	om->now = now_unix_ns;
	om->oom = false;
	om->points = OTLP_METRIC_POINTS;
	return &om->w;
}

int otlp_metrics_end(struct otlp_metrics *om, struct otlp_blob **items, unsigned int *nr)
{
	int ret = 0;

	omw_close(om);
	/* The series of this push are those the next one looks back at; the rest are gone. */
	free(om->prev.s);
	om->prev = om->seen;
	memset(&om->seen, 0, sizeof(om->seen));
	*items = NULL;
	*nr = 0;
	if (om->oom) {
		drop_items(om);
		ret = -ENOMEM;
	} else {
		*items = om->items;
		*nr = om->nr;
		om->items = NULL;
		om->nr = om->cap = 0;
	}
	return ret;
}

/* ---- the queue and the sender ---- */

/* An item of a queue: one or more JSON values, each ending with a newline. */
struct otlp_queue {
	struct otlp_blob items[OTLP_QUEUE_ITEMS];
	unsigned int head, nr;
	size_t bytes;
};

struct otlp_exporter {
	struct otlp_config c;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping, started;
	struct timespec flush_by; /* stopping: give up then */
	struct otlp_queue q[OTLP_NR_SIGNALS];
	struct otlp_stats st;
	CURL *curl;
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	/* Metrics pushed (otlp_start_metrics()): the pusher's thread, woken to stop. */
	otlp_collect_fn collect;
	void *collect_arg;
	struct otlp_metrics *om;
	pthread_t pusher;
	pthread_cond_t push_wake; /* on CLOCK_MONOTONIC */
	bool pushing, push_stop;
};

/* Takes @json (malloc'ed) into @s's queue, or counts it dropped. */
static void enqueue(struct otlp_exporter *e, enum otlp_signal s, char *json, size_t len)
{
	struct otlp_queue *q = &e->q[s];

	pthread_mutex_lock(&e->lock);
	if (e->stopping) {
		e->st.dropped[s][OTLP_DROP_AT_EXIT]++;
		free(json);
	} else if (!json || q->nr == OTLP_QUEUE_ITEMS || q->bytes + len > OTLP_QUEUE_BYTES) {
		e->st.dropped[s][OTLP_DROP_QUEUE_FULL]++;
		free(json);
	} else {
		q->items[(q->head + q->nr) % OTLP_QUEUE_ITEMS] = (struct otlp_blob){json, len};
		q->nr++;
		q->bytes += len;
		if (q->nr >= OTLP_BATCH_ITEMS)
			pthread_cond_signal(&e->wake);
	}
	pthread_mutex_unlock(&e->lock);
}

void otlp_add_request(struct otlp_exporter *e, const struct otlp_request *r)
{
	size_t len = 0;
	char *json = jw_text(fill_request, r, &len);

	enqueue(e, OTLP_TRACES, json, len);
}

void otlp_add_log(struct otlp_exporter *e, uint64_t time_unix_ns, int severity, const char *body,
		  const struct otlp_attr *attrs, unsigned int nr)
{
	struct log_arg l = {time_unix_ns, severity, body, attrs, nr};
	size_t len = 0;
	char *json = jw_text(fill_log, &l, &len);

	enqueue(e, OTLP_LOGS, json, len);
}

void otlp_get_stats(struct otlp_exporter *e, struct otlp_stats *out)
{
	int s;

	pthread_mutex_lock(&e->lock);
	*out = e->st;
	out->metrics = e->collect != NULL;
	for (s = 0; s < OTLP_NR_SIGNALS; s++)
		out->queued[s] = e->q[s].nr;
	pthread_mutex_unlock(&e->lock);
}

/* The export request's body: the batch's items within the resource and scope. */
static char *batch_body(const struct otlp_exporter *e, enum otlp_signal s,
			const struct otlp_blob *items, unsigned int nr, size_t *len)
{
	static const char *const outer[] = {"resourceSpans", "resourceLogs", "resourceMetrics"};
	static const char *const inner[] = {"scopeSpans", "scopeLogs", "scopeMetrics"};
	static const char *const list[] = {"spans", "logRecords", "metrics"};
	char *body = NULL;
	bool first = true;
	unsigned int i;
	size_t n = 0;
	FILE *f;

	f = open_memstream(&body, &n);
	if (!f)
		return NULL;
	fprintf(f,
		"{\"%s\":[{\"resource\":{\"attributes\":%s},\"%s\":[{\"scope\":{\"name\":"
		"\"iospan\",\"version\":\"%s\"},\"%s\":[",
		outer[s], e->c.resource, inner[s], IOSPAN_VERSION, list[s]);
	for (i = 0; i < nr; i++) {
		const char *p = items[i].json;

		/* The values of an item are lines: a comma between each. */
		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t l = nl ? (size_t)(nl - p) : strlen(p);

			if (l) {
				fputs(first ? "" : ",", f);
				fwrite(p, 1, l, f);
				first = false;
			}
			p += l + (nl != NULL);
		}
	}
	fputs("]}]}]}", f);
	if (fclose(f)) {
		free(body);
		return NULL;
	}
	*len = n;
	return body;
}

/* The sender's state, for watch to log when it changes (@why NULL: it works). */
static void set_failing(struct otlp_exporter *e, const char *why)
{
	pthread_mutex_lock(&e->lock);
	e->st.failing = why != NULL;
	e->st.failures += why != NULL;
	if (why)
		snprintf(e->st.last_error, sizeof(e->st.last_error), "%s", why);
	pthread_mutex_unlock(&e->lock);
}

static bool past(const struct timespec *t);

/* A transfer still running when the flush time at exit is up is cut off. */
static int cut_off_late(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			curl_off_t ulnow)
{
	struct otlp_exporter *e = arg;
	bool late;

	pthread_mutex_lock(&e->lock);
	late = e->stopping && past(&e->flush_by);
	pthread_mutex_unlock(&e->lock);
	return late;
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *arg)
{
	return size * nmemb; /* the answer is not kept: a receiver cannot make us hold it */
}

enum send_result { SENT, REJECTED, RETRY, SUPERSEDED };

/* One POST; *@retry_after: the seconds the receiver asked to wait, 0 if none. */
static enum send_result post(struct otlp_exporter *e, enum otlp_signal s, const char *body,
			     size_t len, long *retry_after)
{
	char why[sizeof(e->st.last_error)];
	curl_off_t after = 0;
	long status = 0;
	CURLcode rc;

	curl_easy_setopt(e->curl, CURLOPT_URL, e->c.url[s]);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	e->errbuf[0] = '\0';
	rc = curl_easy_perform(e->curl);
	pthread_mutex_lock(&e->lock);
	e->st.requests++;
	pthread_mutex_unlock(&e->lock);
	*retry_after = 0;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			set_failing(e, NULL);
			return SENT;
		}
		curl_easy_getinfo(e->curl, CURLINFO_RETRY_AFTER, &after);
		*retry_after = after > 0 && after <= 60 ? (long)after : 0;
	}
	if (rc == CURLE_OK)
		snprintf(why, sizeof(why), "%s: HTTP %ld", e->c.url[s], status);
	else
		snprintf(why, sizeof(why), "%s: %s", e->c.url[s],
			 e->errbuf[0] ? e->errbuf : curl_easy_strerror(rc));
	set_failing(e, why);
	if (rc != CURLE_OK)
		return RETRY; /* no connection, a timeout: the receiver may come back */
	return status == 429 || status == 502 || status == 503 || status == 504 ? RETRY : REJECTED;
}

/* Waits until @deadline (lock held); a stop asked meanwhile ends the wait early. */
static void wait_until(struct otlp_exporter *e, const struct timespec *deadline)
{
	bool was_stopping = e->stopping;

	while (e->stopping == was_stopping &&
	       pthread_cond_timedwait(&e->wake, &e->lock, deadline) != ETIMEDOUT)
		;
}

static struct timespec in_seconds(double s)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += (time_t)s;
	t.tv_nsec += (long)((s - (time_t)s) * 1e9);
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static bool past(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* Sends the oldest batch of @s (lock held; dropped while sending). */
static void send_batch(struct otlp_exporter *e, enum otlp_signal s)
{
	struct otlp_blob batch[OTLP_BATCH_ITEMS];
	struct otlp_queue *q = &e->q[s];
	enum send_result res = RETRY;
	unsigned int nr = 0, i, attempt;
	size_t len = 0, bytes = 0;
	long retry_after;
	struct timespec t;
	char *body;

	while (nr < OTLP_BATCH_ITEMS && q->nr &&
	       (!nr || bytes + q->items[q->head].len <= OTLP_BATCH_BYTES)) {
		bytes += q->items[q->head].len;
		batch[nr++] = q->items[q->head];
		q->bytes -= q->items[q->head].len;
		q->head = (q->head + 1) % OTLP_QUEUE_ITEMS;
		q->nr--;
	}
	pthread_mutex_unlock(&e->lock);
	body = batch_body(e, s, batch, nr, &len);
	for (i = 0; i < nr; i++)
		free(batch[i].json);
	for (attempt = 0; body && attempt <= OTLP_RETRIES; attempt++) {
		res = post(e, s, body, len, &retry_after);
		if (res != RETRY)
			break;
		pthread_mutex_lock(&e->lock);
		/* Metrics are cumulative: a newer push waiting says all this one would. */
		if (s == OTLP_METRICS && q->nr) {
			res = SUPERSEDED;
			pthread_mutex_unlock(&e->lock);
			break;
		}
		if (attempt == OTLP_RETRIES || (e->stopping && past(&e->flush_by))) {
			pthread_mutex_unlock(&e->lock);
			break;
		}
		/* Backoff 1, 2, 4... s, or what the receiver asked; cut short by a stop. */
		t = in_seconds(retry_after ?: 1 << attempt);
		if (e->stopping && (t.tv_sec > e->flush_by.tv_sec))
			t = e->flush_by;
		wait_until(e, &t);
		pthread_mutex_unlock(&e->lock);
	}
	free(body);
	pthread_mutex_lock(&e->lock);
	if (res == SENT)
		e->st.sent[s] += nr;
	else
		e->st.dropped[s][!body || res == REJECTED	     ? OTLP_DROP_REJECTED :
				 res == SUPERSEDED		     ? OTLP_DROP_SUPERSEDED :
				 (e->stopping && past(&e->flush_by)) ? OTLP_DROP_AT_EXIT :
								       OTLP_DROP_RETRIES] += nr;
}

static void *sender(void *arg)
{
	struct otlp_exporter *e = arg;
	struct timespec t;
	int s;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		for (s = 0; s < OTLP_NR_SIGNALS; s++)
			while (e->q[s].nr && !(e->stopping && past(&e->flush_by)))
				send_batch(e, s);
		if (e->stopping)
			break;
		/* Until the next batch's time, or a full batch, a push or a stop. */
		t = in_seconds(OTLP_BATCH_WAIT_S);
		pthread_cond_timedwait(&e->wake, &e->lock, &t);
	}
	for (s = 0; s < OTLP_NR_SIGNALS; s++) {
		e->st.dropped[s][OTLP_DROP_AT_EXIT] += e->q[s].nr;
		while (e->q[s].nr) {
			free(e->q[s].items[e->q[s].head].json);
			e->q[s].head = (e->q[s].head + 1) % OTLP_QUEUE_ITEMS;
			e->q[s].nr--;
		}
		e->q[s].bytes = 0;
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* A thread of the exporter: 0 or -errno. */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t stops, was;
	int ret;

	/* The thread inherits these blocked: a stop goes to the thread that waits for it. */
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stops, &was);
	ret = -pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return ret;
}

/* ---- metrics: the pusher ---- */

/*
 * Takes a push's @nr items into the metrics' queue, all of them or none (counted). What
 * waits of an older push gives way: the new one holds all of it, counted since the start.
 */
static void enqueue_push(struct otlp_exporter *e, struct otlp_blob *items, unsigned int nr)
{
	struct otlp_queue *q = &e->q[OTLP_METRICS];
	size_t bytes = 0;
	unsigned int i;

	for (i = 0; i < nr; i++)
		bytes += items[i].len;
	pthread_mutex_lock(&e->lock);
	e->st.dropped[OTLP_METRICS][OTLP_DROP_SUPERSEDED] += q->nr;
	while (q->nr) {
		free(q->items[q->head].json);
		q->head = (q->head + 1) % OTLP_QUEUE_ITEMS;
		q->nr--;
	}
	q->bytes = 0;
	if (nr > OTLP_QUEUE_ITEMS || bytes > OTLP_METRICS_QUEUE_BYTES) {
		e->st.dropped[OTLP_METRICS][OTLP_DROP_QUEUE_FULL] += nr;
		for (i = 0; i < nr; i++)
			free(items[i].json);
	} else {
		for (i = 0; i < nr; i++)
			q->items[(q->head + q->nr++) % OTLP_QUEUE_ITEMS] = items[i];
		q->bytes += bytes;
		pthread_cond_signal(&e->wake); /* a push goes now, not at the next batch's time */
	}
	pthread_mutex_unlock(&e->lock);
}

/* One push: the metrics written now, queued. */
static void push_metrics(struct otlp_exporter *e)
{
	struct otlp_blob *items;
	struct timespec now;
	unsigned int nr;

	clock_gettime(CLOCK_REALTIME, &now);
	e->collect(e->collect_arg,
		   otlp_metrics_begin(e->om, now.tv_sec * 1000000000ULL + now.tv_nsec));
	if (otlp_metrics_end(e->om, &items, &nr)) {
		pthread_mutex_lock(&e->lock);
		e->st.dropped[OTLP_METRICS][OTLP_DROP_QUEUE_FULL]++; /* no memory to hold it */
		pthread_mutex_unlock(&e->lock);
		return;
	}
	enqueue_push(e, items, nr);
	free(items);
}

static void *pusher(void *arg)
{
	struct otlp_exporter *e = arg;
	long period = e->c.metrics_interval_ms;
	struct timespec next, now;

	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&e->lock);
	for (;;) {
		/* Absolute deadlines: pushes do not drift by the time they take. */
		next.tv_sec += period / 1000;
		next.tv_nsec += period % 1000 * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (!e->push_stop &&
		       pthread_cond_timedwait(&e->push_wake, &e->lock, &next) != ETIMEDOUT)
			;
		if (e->push_stop)
			break;
		pthread_mutex_unlock(&e->lock);
		push_metrics(e);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec + period / 1000 + 1)
			next = now; /* a push that took longer than its period: skip, do not hurry
				     */
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int otlp_start_metrics(struct otlp_exporter *e, otlp_collect_fn collect, void *arg)
{
	pthread_condattr_t attr;
	int ret;

	if (e->c.metrics_interval_ms <= 0)
		return fail(-EINVAL, "OTLP metrics: no push period");
	e->om = otlp_metrics_new();
	if (!e->om)
		return fail(-ENOMEM, "out of memory");
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&e->push_wake, &attr);
	pthread_condattr_destroy(&attr);
	e->collect = collect;
	e->collect_arg = arg;
	ret = start_thread(&e->pusher, pusher, e);
	if (ret) {
		e->collect = NULL;
		return fail(ret, "cannot start OTLP metrics: %s", strerror(-ret));
	}
	e->pushing = true;
	return 0;
}

/* The pusher stops; the last push goes with what is queued (as the SDKs' shutdown). */
void otlp_stop_metrics(struct otlp_exporter *e)
{
	if (!e || !e->pushing)
		return;
	pthread_mutex_lock(&e->lock);
	e->push_stop = true;
	pthread_cond_signal(&e->push_wake);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->pusher, NULL);
	e->pushing = false;
	push_metrics(e);
}

static int setup_curl(struct otlp_exporter *e)
{
	struct curl_slist *h;
	int i;

	e->curl = curl_easy_init();
	if (!e->curl)
		return -ENOMEM;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	for (i = 0; h && i < e->c.nr_headers; i++)
		h = curl_slist_append(h, e->c.headers[i]);
	if (!h)
		return -ENOMEM;
	e->headers = h;
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e->curl, CURLOPT_USERAGENT, "iospan/" IOSPAN_VERSION);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, e->c.timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 e->c.timeout_ms < 5000 ? e->c.timeout_ms : 5000L);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, cut_off_late);
	curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, e);
	curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, e->errbuf);
	curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)(1 << 20));
	if (e->c.ca_file[0])
		curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->c.ca_file);
	return 0;
}

/* A deep copy of @c into @d (the strings are the copy's own). */
static int config_copy(struct otlp_config *d, const struct otlp_config *c)
{
	int i;

	*d = *c;
	d->resource = strdup(c->resource);
	for (i = 0; i < c->nr_headers; i++)
		d->headers[i] = strdup(c->headers[i]);
	for (i = 0; i < c->nr_headers; i++)
		if (!d->headers[i])
			return -ENOMEM;
	return d->resource ? 0 : -ENOMEM;
}

int otlp_start(const struct otlp_config *c, struct otlp_exporter **out)
{
	struct otlp_exporter *e;
	int ret;

	*out = NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return fail(-EIO, "cannot start OTLP export: libcurl did not initialise");
	e = calloc(1, sizeof(*e));
	if (!e) {
		ret = fail(-ENOMEM, "out of memory");
		goto cleanup;
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->wake, NULL);
	ret = config_copy(&e->c, c) ?: setup_curl(e);
	if (ret) {
		ret = fail(ret, "out of memory");
		goto cleanup;
	}
	ret = start_thread(&e->thread, sender, e);
	if (ret) {
		ret = fail(ret, "cannot start OTLP export: %s", strerror(-ret));
		goto cleanup;
	}
	e->started = true;
	*out = e;
	return 0;
cleanup:
	otlp_stop(e);
	return ret;
}

void otlp_finish(struct otlp_exporter *e, struct otlp_stats *st)
{
	otlp_stop_metrics(e);
	if (e->started) {
		pthread_mutex_lock(&e->lock);
		e->stopping = true;
		e->flush_by = in_seconds(OTLP_FLUSH_S);
		pthread_cond_signal(&e->wake);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->thread, NULL);
		e->started = false;
	}
	if (st)
		otlp_get_stats(e, st);
}

void otlp_stop(struct otlp_exporter *e)
{
	if (!e)
		return;
	otlp_finish(e, NULL);
	if (e->curl)
		curl_easy_cleanup(e->curl);
	curl_slist_free_all(e->headers);
	if (e->om) {
		otlp_metrics_free(e->om);
		pthread_cond_destroy(&e->push_wake);
	}
	otlp_config_free(&e->c);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	free(e);
	curl_global_cleanup();
}
