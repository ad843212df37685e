// SPDX-License-Identifier: GPL-2.0
/* iospan snoop: the lines, as text or JSON Lines, and the closing counts. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "fspath.h"
#include "json.h"
#include "printable.h"
#include "units.h"
#include "snoop.h"

/* Any text line: the escaped path and cgroup (4 bytes a byte at most) and the rest. */
#define LINE_BYTES (8 * PATH_MAX + 4096)

struct snoop_render {
	FILE *out;
	struct jw *jw;
	char *line; /* text: the line being built */
	bool header_done;
	/* The last second formatted as HH:MM:SS: lines come many per second. */
	time_t sec;
	char hms[16];
};

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
	}
	else
		r->line = malloc(LINE_BYTES);
	if (!r->jw && !r->line) {
		free(r);
		return -ENOMEM;
	}
	*outp = r;
	return 0;
}

void snoop_render_free(struct snoop_render *r)
{
	if (!r)
		return;
	jw_free(r->jw);
	free(r->line);
	free(r);
}

static void kv_dur_us(struct jw *jw, const char *name, int64_t ns)
{
	if (ns < 0)
		jw_kv_null(jw, name);
	else
		jw_kv_fixed(jw, name, ns, 3);
}

static void render_json(struct snoop_render *r, const struct snoop_io *e,
			const struct snoop_line *l)
{
	struct jw *jw = r->jw;

	jw_start_object(jw);
	jw_kv_fixed(jw, "time", (l->wall_ns + 500) / 1000, 6);
	jw_kv_string(jw, "comm", l->comm);
	jw_kv_uint(jw, "pid", e->pid);
	jw_kv_uint(jw, "tid", e->tid);
	if (l->cgroup)
		jw_kv_string(jw, "cgroup", l->cgroup);
	else
		jw_kv_null(jw, "cgroup");
	if (l->container)
		jw_kv_string(jw, "container", l->container);
	jw_kv_string(jw, "disk", l->disk);
	jw_kv_string(jw, "rwbs", l->rwbs);
	if (e->sector == SNOOP_NO_SECTOR)
		jw_kv_null(jw, "sector");
	else
		jw_kv_uint(jw, "sector", e->sector);
	jw_kv_uint(jw, "bytes", e->bytes);
	kv_dur_us(jw, "queue_us", l->queue_ns);
	kv_dur_us(jw, "device_us", l->device_ns);
	kv_dur_us(jw, "total_us", l->total_ns);
	if (e->flags & SNOOP_IO_NO_ISSUE) {
		jw_kv_null(jw, "inflight");
		jw_kv_null(jw, "merged");
	} else {
		jw_kv_uint(jw, "inflight", e->inflight);
		jw_kv_uint(jw, "merged", e->nr_bios ? e->nr_bios - 1 : 0);
	}
	jw_kv_string(jw, "kind", l->kind);
	jw_kv_bool(jw, "writeback", e->flags & SNOOP_IO_WRITEBACK);
	if (e->flags & SNOOP_IO_WRITEBACK)
		jw_kv_uint(jw, "flusher_tid", e->flusher);
	if (e->ino) {
		jw_kv_uint(jw, "ino", e->ino);
		if (l->path)
			jw_kv_string(jw, "path", l->path);
		else
			jw_kv_null(jw, "path");
	}
	if (e->flags & SNOOP_IO_ERROR)
		jw_kv_int(jw, "error", e->error);
	jw_end_object(jw);
}

/*
 * A text line is built in r->line without printf (lines come by the ten thousand a
 * second) and written with one fwrite. Widths are in bytes, as printf's.
 */
struct line {
	char *p, *end;
};

static void put_mem(struct line *b, const char *s, size_t n)
{
	if (n > (size_t)(b->end - b->p))
		n = b->end - b->p;
	memcpy(b->p, s, n);
	b->p += n;
}

static void put_pad(struct line *b, size_t n)
{
	if (n > (size_t)(b->end - b->p))
		n = b->end - b->p;
	/* Pads are a few bytes: a loop, not a call. */
	while (n--)
		*b->p++ = ' ';
}

/* "%-*s" (@left) or "%*s" with @width, of @s of @n bytes. */
static void put_strn(struct line *b, const char *s, size_t n, size_t width, bool left)
{
	if (!left && n < width)
		put_pad(b, width - n);
	put_mem(b, s, n);
	if (left && n < width)
		put_pad(b, width - n);
}

static void put_str(struct line *b, const char *s, size_t width, bool left)
{
	put_strn(b, s, strlen(s), width, left);
}

/* "%*llu", zero-padded to @width with @zeros ("%0*llu"). */
static void put_uint(struct line *b, uint64_t v, size_t width, bool zeros)
{
	char tmp[UNITS_U64_DIGITS + 8], *end = tmp + sizeof(tmp), *s = fmt_u64_back(end, v);

	while (zeros && (size_t)(end - s) < width && s > tmp)
		*--s = '0';
	if ((size_t)(end - s) < width)
		put_pad(b, width - (end - s));
	put_mem(b, s, end - s);
}

/* A duration as fmt_ns() writes it ("-": unknown), right-aligned in @width. */
static void put_dur(struct line *b, int64_t ns, size_t width)
{
	char buf[UNITS_BUF];

	if (ns < 0)
		put_strn(b, "-", 1, width, false);
	else
		put_strn(b, buf, fmt_ns_n(ns, buf, sizeof(buf)), width, false);
}

static void render_text(struct snoop_render *r, const struct snoop_io *e,
			const struct snoop_line *l)
{
	char file[64];
	struct line b = {r->line, r->line + LINE_BYTES};
	/* Whole seconds and their fraction from one integer: a double can round up. */
	time_t sec = (time_t)(l->wall_ns / 1000000000);
	const char *what;
	struct tm tm;

	if (!r->header_done) {
		fprintf(r->out, "%-15s %-15s %7s %7s %-7s %-4s %11s %7s %6s %6s %6s %3s %4s %s\n",
			"TIME", "COMM", "PID", "TID", "DISK", "RWBS", "SECTOR", "BYTES", "QUEUE",
			"DEVICE", "TOTAL", "QD", "BIOS", "CGROUP FILE");
		r->header_done = true;
	}
	if (sec != r->sec) {
		r->sec = sec;
		localtime_r(&sec, &tm);
		strftime(r->hms, sizeof(r->hms), "%H:%M:%S", &tm);
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
	/* "%s.%06u %-15s %7u %7u %-7s %-4s %11s %7u %6s %6s %6s %3u %4u %s %s" */
	put_str(&b, r->hms, 0, false);
	put_mem(&b, ".", 1);
	put_uint(&b, (uint64_t)(l->wall_ns % 1000000000) / 1000, 6, true);
	put_mem(&b, " ", 1);
	put_str(&b, l->comm_text, 15, true);
	put_mem(&b, " ", 1);
	put_uint(&b, e->pid, 7, false);
	put_mem(&b, " ", 1);
	put_uint(&b, e->tid, 7, false);
	put_mem(&b, " ", 1);
	put_str(&b, l->disk_text, 7, true);
	put_mem(&b, " ", 1);
	put_str(&b, l->rwbs, 4, true);
	put_mem(&b, " ", 1);
	if (e->sector == SNOOP_NO_SECTOR)
		put_str(&b, "-", 11, false);
	else
		put_uint(&b, e->sector, 11, false);
	put_mem(&b, " ", 1);
	put_uint(&b, e->bytes, 7, false);
	put_mem(&b, " ", 1);
	put_dur(&b, l->queue_ns, 6);
	put_mem(&b, " ", 1);
	put_dur(&b, l->device_ns, 6);
	put_mem(&b, " ", 1);
	put_dur(&b, l->total_ns, 6);
	put_mem(&b, " ", 1);
	if (e->flags & SNOOP_IO_NO_ISSUE) {
		put_str(&b, "-", 3, false);
		put_mem(&b, " ", 1);
		put_str(&b, "-", 4, false);
	} else {
		put_uint(&b, e->inflight, 3, false);
		put_mem(&b, " ", 1);
		put_uint(&b, e->nr_bios, 4, false);
	}
	put_mem(&b, " ", 1);
	put_str(&b, l->group_text, 0, false);
	put_mem(&b, " ", 1);
	if (what) {
		put_str(&b, what, 0, false);
	} else {
		/* The disk's own cache flush has no bio, hence no submitter. */
		put_mem(&b, "[", 1);
		put_str(&b,
			e->op == SNOOP_OP_FLUSH && (e->flags & SNOOP_IO_NO_OWNER) ? "flush" :
										    l->kind,
			0, false);
		put_mem(&b, "]", 1);
	}
	if (e->flags & SNOOP_IO_WRITEBACK) {
		put_str(&b, " (writeback by ", 0, false);
		put_uint(&b, e->flusher, 0, false);
		put_mem(&b, ")", 1);
	}
	/* The buffer holds any line; were it cut, it still ends as one. */
	if (b.p == b.end)
		b.p--;
	*b.p++ = '\n';
	/* One thread writes: no stdio lock a line. */
	fwrite_unlocked(r->line, 1, b.p - r->line, r->out);
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
		jw_kv_uint(jw, "owner_unknown", t->no_owner);
		jw_kv_uint(jw, "dispatch_not_seen", t->no_issue);
		jw_kv_uint(jw, "filtered", t->filtered);
		jw_kv_uint(jw, "partial_completions", t->partial);
		jw_kv_uint(jw, "inflight_map_full", t->inflight_full);
		jw_kv_uint(jw, "dirtier_map_full", t->dirtier_full);
		jw_kv_uint(jw, "writeback_dirtier_unknown", t->no_dirtier);
		jw_kv_uint(jw, "missed_runs", t->missed_runs);
		jw_kv_uint(jw, "completion_not_seen", t->completion_unseen);
		jw_end_object(jw);
		jw_end_object(jw);
		return;
	}
	fflush(r->out);
	fprintf(stderr,
		"iospan snoop: %" PRIu64 " requests in %.1f s; lost %" PRIu64
		" (ring buffer full), malformed %" PRIu64 "; submitter unknown %" PRIu64
		", dispatch not seen %" PRIu64 ", filtered out %" PRIu64 "\n",
		t->events, t->seconds, t->lost, t->malformed, t->no_owner, t->no_issue,
		t->filtered);
	if (t->completion_unseen)
		fprintf(stderr,
			"iospan snoop: %" PRIu64 " completions ran no program (the request was "
			"dispatched again unseen): their lines are missing\n",
			t->completion_unseen);
	if (t->missed_runs)
		fprintf(stderr,
			"iospan snoop: %" PRIu64 " program runs skipped by the kernel (nested): "
			"their requests are missing\n",
			t->missed_runs);
}
