// SPDX-License-Identifier: GPL-2.0
/* iospan snoop: the lines, as text or JSON Lines, and the closing counts. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drvstatus.h"
#include "err.h"
#include "fspath.h"
#include "json.h"
#include "printable.h"
#include "units.h"
#include "snoop.h"

/* Any text line: the escaped path and cgroup (4 bytes a byte at most) and the rest. */
#define LINE_BYTES (8 * PATH_MAX + 4096)
/* What a line's constant-size copies may write past its end (render_text()). */
#define LINE_SLACK 64
/* Text lines gathered before a write. */
#define BATCH_BYTES (1 << 20)

struct snoop_render {
	FILE *out;
	struct jw *jw;
	char *batch; /* text: lines not yet written */
	size_t len;
	bool header_done;
	/* The last second formatted as HH:MM:SS: lines come many per second. */
	time_t sec;
	char hms[16];
	size_t hms_len;
};

void snoop_render_free(struct snoop_render *r)
{
	if (!r)
		return;
	jw_free(r->jw);
	free(r->batch);
	free(r);
}

int snoop_render_new(FILE *out, bool json, struct snoop_render **outp)
{
	struct snoop_render *r = calloc(1, sizeof(*r));

	*outp = NULL;
	if (!r)
		return -ENOMEM;
	r->out = out;
	r->sec = (time_t)-1;
	if (json) {
		r->jw = jw_new(out);
		/* snoop flushes the output itself, after batches of lines. */
		if (r->jw)
			jw_flush_lines(r->jw, false);
	} else
		r->batch = malloc(BATCH_BYTES);
	if (!r->jw && !r->batch) {
		snoop_render_free(r);
		return -ENOMEM;
	}
	*outp = r;
	return 0;
}

static void kv_dur_us(struct jw *jw, const char *name, int64_t ns)
{
	if (ns < 0)
		jw_kv_null(jw, name);
	else
		jw_kv_fixed(jw, name, ns, 3);
}

/* "driver": null, or what the driver's hooks saw of the request (docs/iospan-snoop.md). */
static void json_driver(struct jw *jw, const struct snoop_io *e, const struct snoop_line *l)
{
	char text[160];

	if (e->drv.kind == DRV_NONE) {
		jw_kv_null(jw, "driver");
		return;
	}
	jw_kv_object(jw, "driver");
	jw_kv_string(jw, "kind", drv_kind_name(e->drv.kind) ?: "?");
	kv_dur_us(jw, "device_us", l->drv_ns);
	kv_dur_us(jw, "drv_out_us",
		  e->ts >= e->drv_done_ns ? (int64_t)(e->ts - e->drv_done_ns) : -1);
	jw_kv_uint(jw, "status", e->drv.status);
	jw_kv_string(jw, "status_text", drv_status_text(&e->drv, text, sizeof(text)));
	jw_kv_uint(jw, "failed_attempts", e->drv_fails);
	jw_end_object(jw);
}

static void render_json(struct snoop_render *r, const struct snoop_io *e,
			const struct snoop_line *l)
{
	struct jw *jw = r->jw;
	bool issued;

	jw_start_object(jw);
	jw_kv_fixed(jw, "time", (l->wall_ns + 500) / 1000, 6);
	jw_kv_string(jw, "comm", l->comm);
	jw_kv_uint(jw, "pid", e->pid);
	jw_kv_uint(jw, "tid", e->tid);
	jw_kv_string_or_null(jw, "cgroup", l->cgroup);
	if (l->container)
		jw_kv_string(jw, "container", l->container);
	jw_kv_string(jw, "disk", l->disk);
	jw_kv_string(jw, "rwbs", l->rwbs);
	jw_kv_uint_or_null(jw, "sector", e->sector != SNOOP_NO_SECTOR, e->sector);
	jw_kv_uint(jw, "bytes", e->bytes);
	kv_dur_us(jw, "queue_us", l->queue_ns);
	kv_dur_us(jw, "device_us", l->device_ns);
	kv_dur_us(jw, "total_us", l->total_ns);
	issued = !(e->flags & SNOOP_IO_NO_ISSUE);
	jw_kv_uint_or_null(jw, "inflight", issued, e->inflight);
	jw_kv_uint_or_null(jw, "merged", issued, e->nr_bios ? e->nr_bios - 1 : 0);
	jw_kv_string(jw, "kind", l->kind);
	jw_kv_bool(jw, "writeback", e->flags & SNOOP_IO_WRITEBACK);
	if (e->flags & SNOOP_IO_WRITEBACK)
		jw_kv_uint(jw, "flusher_tid", e->flusher);
	if (e->ino) {
		jw_kv_uint(jw, "ino", e->ino);
		jw_kv_string_or_null(jw, "path", l->path);
	}
	if (e->flags & SNOOP_IO_ERROR)
		jw_kv_int(jw, "error", e->error);
	json_driver(jw, e, l);
	jw_end_object(jw);
}

/*
 * Text lines are built in place in a batch buffer (lines come by the hundred thousand a
 * second), without printf. A line starts only with LINE_BYTES + LINE_SLACK free, so
 * its fixed-width fields need no bounds checks and short copies can be of a constant
 * size (inlined, no call) that may write up to LINE_SLACK bytes past the line's end:
 * the next field overwrites them. The batch goes out in one write when full or flushed
 * (snoop_render_flush()). Widths are in bytes, as printf's.
 */
static char *put_mem(char *p, const char *end, const char *s, size_t n)
{
	if (n > (size_t)(end - p))
		n = end - p;
	/* Mostly a few bytes ("-", "[direct]"): a loop, not a call. */
	if (n <= 16) {
		while (n--)
			*p++ = *s++;
		return p;
	}
	memcpy(p, s, n);
	return p + n;
}

/* "%*llu": @v right-aligned in @width (at most 16) columns, wider if it needs more. */
static inline char *put_uint(char *p, uint64_t v, unsigned int width)
{
	unsigned int n = fmt_u64_digits(v);

	memset(p, ' ', 16);
	if (n < width)
		n = width;
	fmt_u64_back(p + n, v);
	return p + n;
}

/*
 * "%-*s" (@left) or "%*s": @s of @n bytes (at most 16) in @width (at most 16) columns;
 * @s must have 16 readable bytes (an array that size, or a longer string).
 */
static inline char *put_short(char *p, const char *s, size_t n, unsigned int width, bool left)
{
	char *at = p;

	if (!left && n < width)
		at = p + width - n;
	memset(p, ' ', 16);
	memcpy(at, s, 16);
	if (left)
		memset(at + n, ' ', 16);
	return n < width ? p + width : at + n;
}

/* put_short() of a name of any length (its array as put_short() needs). */
static inline char *put_name(char *p, const char *s, size_t n, unsigned int width, bool left)
{
	if (n <= 16)
		return put_short(p, s, n, width, left);
	memcpy(p, s, n);
	return p + n;
}

/* A duration as fmt_ns() writes it ("-": unknown), right-aligned in @width columns. */
static inline char *put_dur(char *p, int64_t ns, unsigned int width)
{
	char buf[UNITS_BUF] = "-";
	size_t n = ns < 0 ? 1 : fmt_ns_n(ns, buf, sizeof(buf));

	return put_short(p, buf, n, width, false);
}

static const char text_header[] =
	"TIME            COMM                PID     TID DISK    RWBS      SECTOR   BYTES "
	" QUEUE DEVICE    DRV  TOTAL  QD BIOS CGROUP FILE\n";

static void render_text(struct snoop_render *r, const struct snoop_io *e,
			const struct snoop_line *l)
{
	char file[64];
	/*
	 * Whole seconds and their fraction from one integer (a double can round up); a
	 * time before 1970 (a clock set wrong) shows its second's start.
	 */
	time_t sec = (time_t)(l->wall_ns / 1000000000);
	uint32_t usec = l->wall_ns > 0 ? (uint32_t)(l->wall_ns % 1000000000 / 1000) : 0;
	const char *what, *end;
	struct tm tm;
	char *p;

	if (BATCH_BYTES - r->len < LINE_BYTES + LINE_SLACK)
		snoop_render_flush(r);
	p = r->batch + r->len;
	end = p + LINE_BYTES - 1; /* room for the newline */
	if (!r->header_done) {
		p = put_mem(p, end, text_header, sizeof(text_header) - 1);
		r->header_done = true;
	}
	if (sec != r->sec) {
		r->sec = sec;
		localtime_r(&sec, &tm);
		strftime(r->hms, sizeof(r->hms), "%H:%M:%S", &tm);
		r->hms_len = strlen(r->hms);
	}
	if (l->path_text) {
		what = l->path_text;
	} else if (e->ino) {
		snprintf(file, sizeof(file), "%u:%u:ino=%" PRIu64, KDEV_MAJOR(e->fs_dev),
			 KDEV_MINOR(e->fs_dev), (uint64_t)e->ino);
		what = file;
	} else {
		what = NULL;
	}
	/* "%s.%06u %-15s %7u %7u %-7s %-4s %11s %7u %6s %6s %6s %6s %3u %4u %s %s" */
	p = put_short(p, r->hms, r->hms_len, 0, true);
	*p++ = '.';
	memset(p, '0', 8);
	fmt_u64_back(p + 6, usec);
	p += 6;
	*p++ = ' ';
	p = put_name(p, l->comm_text, l->comm_text_len, 15, true);
	*p++ = ' ';
	p = put_uint(p, e->pid, 7);
	*p++ = ' ';
	p = put_uint(p, e->tid, 7);
	*p++ = ' ';
	p = put_name(p, l->disk_text, l->disk_text_len, 7, true);
	*p++ = ' ';
	p = put_short(p, l->rwbs, strnlen(l->rwbs, sizeof(l->rwbs)), 4, true);
	*p++ = ' ';
	if (e->sector == SNOOP_NO_SECTOR)
		p = put_short(p, "-               ", 1, 11, false);
	else
		p = put_uint(p, e->sector, 11);
	*p++ = ' ';
	p = put_uint(p, e->bytes, 7);
	*p++ = ' ';
	p = put_dur(p, l->queue_ns, 6);
	*p++ = ' ';
	p = put_dur(p, l->device_ns, 6);
	*p++ = ' ';
	p = put_dur(p, l->drv_ns, 6);
	*p++ = ' ';
	p = put_dur(p, l->total_ns, 6);
	*p++ = ' ';
	if (e->flags & SNOOP_IO_NO_ISSUE) {
		p = put_short(p, "  -    -        ", 8, 8, true);
	} else {
		p = put_uint(p, e->inflight, 3);
		*p++ = ' ';
		p = put_uint(p, e->nr_bios, 4);
	}
	*p++ = ' ';
	/* Names from the kernel or the file system: any length (the line is cut). */
	p = put_mem(p, end, l->group_text, strlen(l->group_text));
	p = put_mem(p, end, " ", 1);
	if (what) {
		p = put_mem(p, end, what, strlen(what));
	} else {
		/* The disk's own cache flush has no bio, hence no submitter. */
		what = e->op == SNOOP_OP_FLUSH && (e->flags & SNOOP_IO_NO_OWNER) ? "flush" :
										   l->kind;
		p = put_mem(p, end, "[", 1);
		p = put_mem(p, end, what, strlen(what));
		p = put_mem(p, end, "]", 1);
	}
	if (e->flags & SNOOP_IO_WRITEBACK) {
		p = put_mem(p, end, " (writeback by ", 15);
		if (end - p > UNITS_U64_DIGITS)
			p = put_uint(p, e->flusher, 0);
		p = put_mem(p, end, ")", 1);
	}
	/* The driver's error, in words (rare: a printf is fine). */
	if (e->drv.status) {
		char text[160];
		int n = snprintf(file, sizeof(file), " (%s: ", drv_kind_name(e->drv.kind) ?: "?");

		p = put_mem(p, end, file, n);
		drv_status_text(&e->drv, text, sizeof(text));
		p = put_mem(p, end, text, strlen(text));
		p = put_mem(p, end, ")", 1);
	}
	*p++ = '\n';
	r->len = p - r->batch;
}

int snoop_render_flush(struct snoop_render *r)
{
	if (r->len && fwrite_unlocked(r->batch, 1, r->len, r->out) != r->len) {
		r->len = 0;
		return -EIO;
	}
	r->len = 0;
	return fflush(r->out) ? -EIO : 0;
}

void snoop_render_event(struct snoop_render *r, const struct snoop_io *e,
			const struct snoop_line *l)
{
	if (r->jw)
		render_json(r, e, l);
	else
		render_text(r, e, l);
}

void snoop_render_totals(struct snoop_render *r, const struct snoop_totals *t)
{
	struct jw *jw = r->jw;

	if (jw) {
		jw_start_object(jw);
		jw_kv_object(jw, "summary");
		jw_kv_float(jw, "seconds", t->seconds, 3);
		jw_kv_uint(jw, "events", t->events);
		jw_kv_uint(jw, "lost", t->lost);
		jw_kv_uint(jw, "malformed", t->malformed);
		jw_kv_uint(jw, "not_arrived",
			   t->sent > t->events + t->malformed ? t->sent - t->events - t->malformed :
								0);
		counters_json(jw, snoop_counters, t->cnt, SNOOP_CNT_NR);
		jw_kv_uint(jw, "missed_runs", t->missed_runs);
		jw_end_object(jw);
		jw_end_object(jw);
		return;
	}
	snoop_render_flush(r);
	fprintf(stderr,
		"iospan snoop: %" PRIu64 " requests in %.1f s; lost %" PRIu64
		" (ring buffer full), malformed %" PRIu64 "; submitter unknown %" PRIu64
		", dispatch not seen %" PRIu64 ", queue not seen %" PRIu64 ", filtered out %" PRIu64
		"\n",
		t->events, t->seconds, t->lost, t->malformed, t->cnt[SNOOP_CNT_NO_OWNER],
		t->cnt[SNOOP_CNT_NO_ISSUE], t->cnt[SNOOP_CNT_NO_QUEUE], t->cnt[SNOOP_CNT_FILTERED]);
	if (t->cnt[SNOOP_CNT_COMPLETION_UNSEEN])
		fprintf(stderr,
			"iospan snoop: %" PRIu64 " completions ran no program (the request was "
			"dispatched again unseen): their lines are missing\n",
			t->cnt[SNOOP_CNT_COMPLETION_UNSEEN]);
	if (t->missed_runs)
		fprintf(stderr,
			"iospan snoop: %" PRIu64 " program runs skipped by the kernel (nested): "
			"their requests are missing\n",
			t->missed_runs);
}
