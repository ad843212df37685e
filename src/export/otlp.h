/* SPDX-License-Identifier: GPL-2.0 */
/*
 * OTLP export (OpenTelemetry protocol over HTTP, JSON encoding, libcurl): watch's slow
 * requests as traces (the request a span, its stages child spans laid end to end), its
 * incidents as log records and, asked for, its metrics (what GET /metrics tells, pushed
 * every interval by a thread that writes them), sent from a thread of their own. What waits to be
 * sent is bounded (items and bytes); a receiver that is down or slow costs only its own data,
 * counted by reason; retries only where the protocol says (429, 502, 503, 504, no connection), with
 * exponential backoff.
 *
 * Configured by --otlp-endpoint and the OpenTelemetry SDK's environment variables:
 * OTEL_EXPORTER_OTLP_ENDPOINT (a base URL: /v1/traces, /v1/logs, /v1/metrics appended),
 * OTEL_EXPORTER_OTLP_{TRACES,LOGS,METRICS}_ENDPOINT (used as they are),
 * OTEL_METRIC_EXPORT_INTERVAL (ms, when watch's option does not say), OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_EXPORTER_OTLP_TIMEOUT (ms), OTEL_EXPORTER_OTLP_CERTIFICATE, OTEL_EXPORTER_OTLP_PROTOCOL
 * (http/json only), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES.
 */
#ifndef IOSPAN_EXPORT_OTLP_H
#define IOSPAN_EXPORT_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/mwriter.h"

enum otlp_signal {
	OTLP_TRACES,
	OTLP_LOGS,
	OTLP_METRICS,
	OTLP_NR_SIGNALS,
};

enum otlp_drop {
	OTLP_DROP_QUEUE_FULL, /* the queue was full when it came */
	OTLP_DROP_REJECTED,   /* the receiver refused it for good (400, 401, 413...) */
	OTLP_DROP_RETRIES,    /* retryable failures, past the last retry */
	OTLP_DROP_AT_EXIT,    /* not sent within the flush time at exit */
	OTLP_DROP_SUPERSEDED, /* metrics still waiting when a newer push (cumulative) came */
	OTLP_NR_DROPS,
};

const char *otlp_signal_name(enum otlp_signal s); /* "traces", "logs", "metrics" */
const char *otlp_drop_name(enum otlp_drop d);	  /* "queue_full", ... */

#define OTLP_QUEUE_ITEMS   4096 /* per signal: requests (with their stages), records, metrics */
#define OTLP_QUEUE_BYTES  (16 << 20) /* of JSON waiting, per signal */
/*
 * Of the metrics' JSON waiting: one push, whole (2,000 cgroups with long paths on one
 * disk come to about 12 MB); an older push still waiting gives way to a newer one.
 */
#define OTLP_METRICS_QUEUE_BYTES (64 << 20)
#define OTLP_BATCH_ITEMS  512	     /* at most, in one export request */
#define OTLP_BATCH_BYTES   (4 << 20)  /* of items, in one export request (but one item past it) */
#define OTLP_METRIC_POINTS 256	      /* points of a metric item: a family with more is cut */
#define OTLP_BATCH_WAIT_S 1	     /* what waits is sent at least this often */
#define OTLP_RETRIES	  5	     /* after the first attempt: 1, 2, 4, 8, 16 s apart */
#define OTLP_FLUSH_S	  3	     /* at exit, what is queued gets this long */
#define OTLP_MAX_HEADERS  32

struct otlp_config {
	char url[OTLP_NR_SIGNALS][2048];
	char *headers[OTLP_MAX_HEADERS]; /* "Name: value" */
	int nr_headers;
	long timeout_ms;
	char ca_file[1024];
	char *resource; /* the resource's attributes, as a JSON array */
	long metrics_interval_ms; /* the metrics' push period: 0, none pushed */
};

/*
 * The configuration from @endpoint (--otlp-endpoint, NULL if not given) and the
 * environment; 0 (*@on false when neither asks for export), or -EINVAL said in one line
 * (usage: a URL that is not http(s), a malformed header or attribute list, a protocol
 * other than http/json).
 */
int otlp_config_parse(const char *endpoint, bool metrics, struct otlp_config *c, bool *on);
/*
 * The metrics' push period: @opt_ms (watch's option; 0: not given), else
 * OTEL_METRIC_EXPORT_INTERVAL, else 60 s. 0, or -EINVAL said in one line.
 */
int otlp_config_metrics(struct otlp_config *c, long opt_ms);
void otlp_config_free(struct otlp_config *c);

/* A stage of a request, in order: they add up to its total. */
struct otlp_stage {
	const char *name;
	uint64_t ns;
};

/* A slow request, as watch kept it. */
struct otlp_request {
	uint64_t start_unix_ns, total_ns;
	const char *op, *disk, *comm, *path, *cgroup, *container, *detail;
	uint32_t pid, tid; /* pid 0: no known owner; tid 0: not known */
	int64_t offset;
	uint64_t bytes;
	const struct otlp_stage *stages;
	unsigned int nr_stages;
};

/* An attribute of a log record: a string, or an integer when @str is NULL. */
struct otlp_attr {
	const char *key;
	const char *str;
	int64_t num;
};

struct otlp_stats {
	uint64_t sent[OTLP_NR_SIGNALS];	  /* items the receiver took */
	uint64_t queued[OTLP_NR_SIGNALS]; /* items waiting now */
	uint64_t dropped[OTLP_NR_SIGNALS][OTLP_NR_DROPS];
	uint64_t requests, failures; /* HTTP requests made, those that failed */
	bool failing;		     /* the last request failed: why */
	bool metrics;		     /* metrics are pushed */
	char last_error[512];
};

struct otlp_exporter;

/* Starts the sender thread with a copy of @c; 0 or -errno said. */
int otlp_start(const struct otlp_config *c, struct otlp_exporter **out);
/*
 * Sends what is queued for at most OTLP_FLUSH_S, counts the rest as dropped at exit;
 * @st: the figures then. Nothing can be added after it.
 */
void otlp_finish(struct otlp_exporter *e, struct otlp_stats *st);
/* Finishes if not done, frees @e; NULL is fine. */
void otlp_stop(struct otlp_exporter *e);
/* Queue one request (a trace) or one log record; never waits on the network. */
void otlp_add_request(struct otlp_exporter *e, const struct otlp_request *r);
void otlp_add_log(struct otlp_exporter *e, uint64_t time_unix_ns, int severity, const char *body,
		  const struct otlp_attr *attrs, unsigned int nr);
void otlp_get_stats(struct otlp_exporter *e, struct otlp_stats *out);

/* Writes the metrics of one push into @w: 0 or -errno (what it wrote is sent). */
typedef int (*otlp_collect_fn)(void *arg, struct mwriter *w);
/*
 * Pushes what @collect writes every c->metrics_interval_ms, from a thread of its own,
 * into the metrics' queue (a push whole, or dropped whole), and once more at
 * otlp_finish(). 0 or -errno said.
 */
int otlp_start_metrics(struct otlp_exporter *e, otlp_collect_fn collect, void *arg);
/*
 * Ends the pushes with a last one, while what @collect reads still exists (before the
 * collectors close); otlp_finish() does it otherwise. Nothing is pushed after it.
 */
void otlp_stop_metrics(struct otlp_exporter *e);

/*
 * The OTLP JSON metrics writer (an mwriter) the pushes use, on its own for tests. A
 * counter is a cumulative monotonic Sum named without "_total", a gauge a Gauge, a
 * histogram a cumulative Histogram with per-bucket counts; the unit from the name's
 * suffix (_seconds: "s", _bytes: "By"); labels are attributes (an empty one left out,
 * as Prometheus does). A series' start time is that of the push it first came in, or
 * of the one it went back in (a counter reset): the data model's true reset points.
 */
struct otlp_metrics;
struct otlp_blob {
	char *json; /* one metric, JSON ending with a newline */
	size_t len;
};

struct otlp_metrics *otlp_metrics_new(void);
void otlp_metrics_free(struct otlp_metrics *om);
/* A push at @now_unix_ns: its writer. */
struct mwriter *otlp_metrics_begin(struct otlp_metrics *om, uint64_t now_unix_ns);
/*
 * Its metrics (at most OTLP_METRIC_POINTS points each) handed over in *@items
 * (malloc'ed, each json too; NULL when none), *@nr of them; 0 or -ENOMEM (none then).
 */
int otlp_metrics_end(struct otlp_metrics *om, struct otlp_blob **items, unsigned int *nr);

/* Severity numbers of the log data model. */
#define OTLP_SEVERITY_INFO 9
#define OTLP_SEVERITY_WARN 13

#endif
