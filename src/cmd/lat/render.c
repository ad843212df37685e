// SPDX-License-Identifier: GPL-2.0
/* iospan lat: the report as log2 bars and percentiles (text), or one JSON object. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>

#include "array.h"
#include "cgroups.h"
#include "disks.h"
#include "fspath.h"
#include "json.h"
#include "ksyms.h"
#include "lat.h"
#include "printable.h"

static const double pcts[] = {50, 90, 99, 99.9};
static const char *const pct_names[] = {"p50", "p90", "p99", "p99_9"};
#define NR_PCTS (ARRAY_SIZE(pcts))

const char *lat_stage_name(uint32_t stage)
{
	static const char *const names[] = {"q2c", "d2c", "q2d", "size", "device"};

	return stage < ARRAY_SIZE(names) ? names[stage] : "?";
}

static const char *unit_name(const struct lat_opts *o)
{
	return o->stage == LAT_SIZE ? "KiB" : o->millis ? "ms" : "us";
}

/* "Sync-Write", as biolatency -F shows a request's flags. */
static const char *op_name(uint32_t op, char *buf, size_t len)
{
	static const char *const ops[] = {"Read", "Write",	 "Flush", "Discard",
					  "Op4",  "SecureErase", "Op6",	  "Op7",
					  "Op8",  "WriteZeroes"};
	static const struct {
		uint32_t bit;
		const char *name;
	} flags[] = {
		{RQ_FL_SYNC, "Sync-"},	      {RQ_FL_META, "Meta-"},
		{RQ_FL_FUA, "FUA-"},	      {RQ_FL_PREFLUSH, "Preflush-"},
		{RQ_FL_RAHEAD, "ReadAhead-"}, {RQ_FL_BACKGROUND, "Background-"},
	};
	uint32_t code = op & 0xff, f = op >> 8;
	size_t i, pos = 0;

	buf[0] = 0;
	for (i = 0; i < ARRAY_SIZE(flags); i++)
		if (f & flags[i].bit)
			pos += snprintf(buf + pos, pos < len ? len - pos : 0, "%s", flags[i].name);
	if (code < ARRAY_SIZE(ops))
		snprintf(buf + pos, pos < len ? len - pos : 0, "%s", ops[code]);
	else
		snprintf(buf + pos, pos < len ? len - pos : 0, "Op%u", code);
	return buf;
}

static const char *disk_label(uint32_t dev, char *buf, size_t len)
{
	return disk_name_of(KDEV_MAJOR(dev), KDEV_MINOR(dev), buf, len);
}

static const char *cgroup_label(const struct lat_view *v, uint64_t cgid)
{
	const char *p = v->cgmap ? cgroup_map_path(v->cgmap, cgid) : NULL;

	return p ? p : "?";
}

/* The tracing machinery's own frames, on top of every stack taken in a tracepoint. */
static bool tracing_frame(const struct lat_view *v, uint64_t ip)
{
	static const char *const prefixes[] = {"bpf_prog_", "bpf_trace_run", "__traceiter_",
					       "__bpf_trace_"};
	const struct ksym *sym = v->ksyms ? ksyms_find(v->ksyms, ip, NULL) : NULL;
	size_t i;

	if (!sym)
		return false;
	if (sym->module && !strcmp(sym->module, "bpf"))
		return true;
	for (i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(sym->name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/*
 * The stack's frames (numbers) from the first outside the tracing machinery,
 * 0-terminated; false if the map has it no more.
 */
static bool stack_frames(const struct lat_view *v, int32_t id, uint64_t *ips)
{
	const struct blk_owner_stack *st = lat_stacks_find(v->stacks, id);
	int i, skip = 0;

	memset(ips, 0, BLK_OWNER_STACK_DEPTH * sizeof(*ips));
	if (!st)
		return false;
	memcpy(ips, st->ips, sizeof(st->ips));
	while (skip < BLK_OWNER_STACK_DEPTH && ips[skip] && tracing_frame(v, ips[skip]))
		skip++;
	for (i = 0; i < BLK_OWNER_STACK_DEPTH; i++)
		ips[i] = i + skip < BLK_OWNER_STACK_DEPTH ? ips[i + skip] : 0;
	return true;
}

/* The kind of a --by stack row, from its stack's functions (kind.c). */
static const char *stack_kind(const struct lat_view *v, uint32_t kind, const uint64_t *ips,
			      bool have)
{
	const char *names[BLK_OWNER_STACK_DEPTH];
	const struct ksym *sym;
	size_t n = 0;

	for (; have && n < BLK_OWNER_STACK_DEPTH && ips[n]; n++) {
		sym = v->ksyms ? ksyms_find(v->ksyms, ips[n], NULL) : NULL;
		names[n] = sym ? sym->name : NULL;
	}
	return lat_stack_kind(kind, names, n);
}

/* ------------------------------------------------------------------ text */

/* The path of a --by file key's file as it is now (renamed, deleted), NULL if unknown. */
static const char *file_path(const struct lat_view *v, const struct lat_key *k)
{
	return v->paths ? fspath_current(v->paths, k->fdev, k->gen, k->ino) : NULL;
}

static void text_key(const struct lat_view *v, const struct lat_key *k)
{
	uint32_t f = v->o->key_fields, kind = k->kind & LAT_KIND_MASK;
	uint64_t ips[BLK_OWNER_STACK_DEPTH];
	char b[128], sym[256];
	bool have;
	int i;

	if (f & LAT_K_DISK)
		printf("disk = %s\n", disk_label(k->disk, b, sizeof(b)));
	if (f & LAT_K_OP)
		printf("flags = %s\n", op_name(k->op, b, sizeof(b)));
	if (f & (LAT_K_PID | LAT_K_STACK))
		printf("pid = %u (%.16s)\n", k->pid, k->comm);
	if (f & LAT_K_COMM)
		printf("comm = %.16s\n", k->comm);
	if (f & LAT_K_CGROUP)
		printf("cgroup = %s\n", cgroup_label(v, k->cgid));
	if (f & LAT_K_FILE) {
		if (k->ino) {
			const char *path = file_path(v, k);

			printf("file = %u:%u ino %" PRIu64 " (%s)\n", KDEV_MAJOR(k->fdev),
			       KDEV_MINOR(k->fdev), (uint64_t)k->ino, blk_owner_kind_name(kind));
			if (path)
				printf("path = %s\n", printable(path));
		} else {
			printf("file = none (%s)\n", blk_owner_kind_name(kind));
		}
	}
	if (f & LAT_K_STACK) {
		have = stack_frames(v, k->stack_id, ips);
		printf("kind = %s\n", stack_kind(v, k->kind, ips, have));
		if (!have) {
			/* -1: none taken (the block layer's flushes); else the map refused it. */
			printf("    [%s]\n", k->stack_id == -1 ? "no stack" : "stack lost");
			return;
		}
		for (i = 0; i < BLK_OWNER_STACK_DEPTH && ips[i]; i++)
			printf("    %s\n", ksyms_format(v->ksyms, ips[i], sym, sizeof(sym)));
	}
}

static const char *log2_unit_name(const struct lat_opts *o)
{
	return o->stage == LAT_SIZE ? "kbytes" : o->millis ? "msecs" : "usecs";
}

static void text_hist(const struct lat_view *v, const struct lat_hist *h)
{
	uint64_t rows[LAT_LOG2_ROWS];
	uint32_t nr =
		hist_log2_rows(h->slots, LAT_HIST_SLOTS, LAT_HIST_SUB_BITS, LAT_SCALE_SHIFT, rows);
	int i;

	hist_log2_print(stdout, rows, nr, log2_unit_name(v->o));
	printf("count %" PRIu64 "  avg %.3f", (uint64_t)h->count,
	       h->count ? (double)h->sum / h->count / (1 << LAT_SCALE_SHIFT) : 0.0);
	for (i = 0; i < (int)NR_PCTS; i++)
		printf("  %s %.3f", i == 3 ? "p99.9" : pct_names[i], lat_percentile(h, pcts[i]));
	printf("  (%s)\n", unit_name(v->o));
}

static void text_report(const struct lat_view *v, const struct lat_report *r)
{
	char when[32];
	time_t t;
	size_t i;
	int d;

	if (v->o->timestamps) {
		t = time(NULL);
		strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
		printf("%s\n", when);
	}
	if (!r->nr)
		printf("no requests completed\n");
	for (i = 0; i < r->nr; i++) {
		if (i || v->o->key_fields)
			printf("%s", i ? "\n" : "");
		text_key(v, &r->rows[i].key);
		text_hist(v, &r->rows[i].h);
	}
	for (d = 0; d < LAT_DROP_NR; d++)
		if (r->drops[d])
			printf("dropped: %" PRIu64 " requests (%s)\n", r->drops[d],
			       counter_words(&lat_counters[d]));
	if (r->skipped)
		printf("skipped: %" PRIu64 " program runs (the kernel's: nested on a CPU)\n",
		       r->skipped);
	if (r->not_seen)
		printf("not seen: %" PRIu64 " requests /proc/diskstats counted that no program "
		       "saw\n",
		       r->not_seen);
	printf("\n");
}

/* ------------------------------------------------------------------ JSON */

static void json_key(const struct lat_view *v, const struct lat_key *k)
{
	uint32_t f = v->o->key_fields;
	uint64_t ips[BLK_OWNER_STACK_DEPTH];
	struct jw *jw = v->jw;
	char b[128], sym[256];
	bool have = false;
	int i;

	if (f & LAT_K_DISK)
		jw_kv_string(jw, "disk", disk_label(k->disk, b, sizeof(b)));
	if (f & LAT_K_OP)
		jw_kv_string(jw, "flags", op_name(k->op, b, sizeof(b)));
	if (f & (LAT_K_PID | LAT_K_STACK))
		jw_kv_uint(jw, "pid", k->pid);
	if (f & (LAT_K_PID | LAT_K_STACK | LAT_K_COMM)) {
		snprintf(b, sizeof(b), "%.16s", k->comm);
		jw_kv_string(jw, "comm", b);
	}
	if (f & LAT_K_CGROUP) {
		jw_kv_uint(jw, "cgroup_id", k->cgid);
		jw_kv_string(jw, "cgroup", cgroup_label(v, k->cgid));
	}
	if (f & LAT_K_STACK) {
		have = stack_frames(v, k->stack_id, ips);
		jw_kv_string(jw, "kind", stack_kind(v, k->kind, ips, have));
	} else if (f & LAT_K_FILE) {
		jw_kv_string(jw, "kind", blk_owner_kind_name(k->kind & LAT_KIND_MASK));
	}
	if (f & LAT_K_FILE) {
		snprintf(b, sizeof(b), "%u:%u", KDEV_MAJOR(k->fdev), KDEV_MINOR(k->fdev));
		jw_kv_string(jw, "file_dev", b);
		jw_kv_uint(jw, "ino", k->ino);
		jw_kv_string_or_null(jw, "path", k->ino ? file_path(v, k) : NULL);
	}
	if (f & LAT_K_STACK) {
		jw_kv_array(jw, "stack");
		if (have)
			for (i = 0; i < BLK_OWNER_STACK_DEPTH && ips[i]; i++)
				jw_string(jw, ksyms_format(v->ksyms, ips[i], sym, sizeof(sym)));
		jw_end_array(jw);
		/* As the text says "[stack lost]": the stack map refused it (see NOTES). */
		if (k->stack_id < -1)
			jw_kv_bool(jw, "stack_lost", true);
	}
}

/* Prometheus-style buckets, up to the first bound that holds every request. */
static void json_cumulative(const struct lat_view *v, const struct lat_hist *h)
{
	struct hist_cumulative cum;
	struct jw *jw = v->jw;
	uint32_t k;

	if (hist_cumulative_of(&h->head, LAT_HIST_SLOTS, LAT_HIST_SUB_BITS, LAT_SCALE_SHIFT, &cum))
		return;
	jw_kv_object(jw, "cumulative");
	jw_kv_uint(jw, "count", cum.count);
	jw_kv_float(jw, "sum", cum.sum, 3);
	jw_kv_array(jw, "buckets");
	for (k = 0; k < cum.nr; k++) {
		jw_start_object(jw);
		jw_kv_uint(jw, "le", (uint64_t)cum.buckets[k].le);
		jw_kv_uint(jw, "count", cum.buckets[k].count);
		jw_end_object(jw);
		if (cum.buckets[k].count == cum.count)
			break;
	}
	jw_end_array(jw);
	jw_end_object(jw);
}

static void json_hist(const struct lat_view *v, const struct lat_hist *h)
{
	uint64_t rows[LAT_LOG2_ROWS];
	const double scale = 1 << LAT_SCALE_SHIFT;
	struct jw *jw = v->jw;
	uint32_t s, r, nr;
	size_t i;

	jw_kv_uint(jw, "count", h->count);
	jw_kv_float(jw, "avg", h->count ? (double)h->sum / h->count / scale : 0, 3);
	jw_kv_float(jw, "max", h->max / scale, 3);
	for (i = 0; i < NR_PCTS; i++)
		jw_kv_float(jw, pct_names[i], lat_percentile(h, pcts[i]), 3);
	nr = hist_log2_rows(h->slots, LAT_HIST_SLOTS, LAT_HIST_SUB_BITS, LAT_SCALE_SHIFT, rows);
	/* biolatency's rows: [low, high] whole units. */
	jw_kv_array(jw, "log2");
	for (r = 0; r < nr; r++) {
		jw_start_object(jw);
		jw_kv_uint(jw, "low", r ? 1ULL << r : 0);
		jw_kv_uint(jw, "high", (2ULL << r) - 1);
		jw_kv_uint(jw, "count", rows[r]);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	/* The fine buckets that hold requests: [low, high) in the unit. */
	jw_kv_array(jw, "buckets");
	for (s = 0; s < LAT_HIST_SLOTS; s++) {
		if (!h->slots[s])
			continue;
		jw_start_object(jw);
		jw_kv_float(jw, "low", hist_slot_low_of(s, LAT_HIST_SUB_BITS) / scale, 6);
		jw_kv_float(jw, "high",
			    s + 1 < LAT_HIST_SLOTS ?
				    hist_slot_low_of(s + 1, LAT_HIST_SUB_BITS) / scale :
				    hist_slot_low_of(s, LAT_HIST_SUB_BITS) * 2 / scale,
			    6);
		jw_kv_uint(jw, "count", h->slots[s]);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	json_cumulative(v, h);
}

static void json_report(const struct lat_view *v, const struct lat_report *r)
{
	struct jw *jw = v->jw;
	size_t i;

	jw_start_object(jw);
	jw_kv_uint(jw, "time", (uint64_t)time(NULL));
	jw_kv_string(jw, "stage", lat_stage_name(v->o->stage));
	jw_kv_string(jw, "unit", unit_name(v->o));
	jw_kv_float(jw, "interval_s", r->seconds, 3);
	jw_kv_object(jw, "drops");
	counters_json(jw, lat_counters, r->drops, LAT_DROP_NR);
	jw_kv_uint(jw, "programs_skipped", r->skipped);
	jw_kv_uint_or_null(jw, "requests_not_seen", r->not_seen_known, r->not_seen);
	jw_end_object(jw);
	jw_kv_array(jw, "histograms");
	for (i = 0; i < r->nr; i++) {
		jw_start_object(jw);
		json_key(v, &r->rows[i].key);
		json_hist(v, &r->rows[i].h);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	jw_end_object(jw);
}

int lat_render(const struct lat_view *v, const struct lat_report *r)
{
	/* Each file's path is checked again (renames, deletes) once per report. */
	if (v->paths)
		fspath_cache_round(v->paths);
	if (v->jw)
		json_report(v, r);
	else
		text_report(v, r);
	fflush(stdout);
	return 0;
}
