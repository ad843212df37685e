// SPDX-License-Identifier: GPL-2.0
/*
 * snoop's text lines: the renderer (built in place, no printf) writes what its
 * printf format says, for every field's edges and long names, across batch flushes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/snoop/snoop.h" /* before cmocka: its fail() macro */
#include "common_abi.h"
#include "drvstatus.h"
#include "units.h"
#include "testutil.h"

#define LINES 20000

static char header[256];

/* The header as printf writes it from the columns' format. */
static void make_header(void)
{
	snprintf(header, sizeof(header),
		 "%-15s %-15s %7s %7s %-7s %-4s %11s %7s %6s %6s %6s %6s %3s %4s %s\n", "TIME",
		 "COMM", "PID", "TID", "DISK", "RWBS", "SECTOR", "BYTES", "QUEUE", "DEVICE", "DRV",
		 "TOTAL", "QD", "BIOS", "CGROUP FILE");
}

/* The names a line refers to, in arrays as long as snoop_format() hands out. */
struct names {
	char comm[SNOOP_COMM_LEN * 4 + 1];
	char disk[DISK_NAME_LEN * 4];
	char group[300];
	char path[6000];
};

static uint64_t seed = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* A number of a random size (so each width is exceeded now and then). */
static uint64_t rnd_num(void)
{
	uint64_t v = rnd();

	return rnd() % 8 == 0 ? v : v >> (rnd() % 64);
}

static void rnd_text(char *buf, size_t max)
{
	size_t n = rnd() % max, i;

	for (i = 0; i < n; i++)
		buf[i] = 'a' + rnd() % 26;
	buf[n] = 0;
}

static int64_t rnd_dur(void)
{
	return rnd() % 10 == 0 ? -1 : (int64_t)(rnd_num() >> 1);
}

static void rnd_line(struct snoop_io *e, struct snoop_line *l, struct names *n)
{
	static const char *const kinds[] = {"direct", "writeback", "readahead", "unknown"};

	memset(e, 0, sizeof(*e));
	memset(l, 0, sizeof(*l));
	e->pid = rnd_num();
	e->tid = rnd_num();
	e->sector = rnd() % 20 == 0 ? SNOOP_NO_SECTOR : rnd_num();
	e->bytes = rnd_num();
	e->inflight = rnd_num();
	e->nr_bios = rnd_num();
	e->flusher = rnd_num();
	e->op = rnd() % 4 == 0 ? SNOOP_OP_FLUSH : SNOOP_OP_READ;
	e->flags = (rnd() % 5 == 0 ? SNOOP_IO_NO_ISSUE : 0) |
		   (rnd() % 5 == 0 ? SNOOP_IO_WRITEBACK : 0) |
		   (rnd() % 5 == 0 ? SNOOP_IO_NO_OWNER : 0);
	e->ino = rnd() % 3 ? rnd_num() : 0;
	e->fs_dev = rnd() % 4096 << 20 | rnd() % 1024;
	/* Now and then a driver's error: NVMe's or SCSI's status, in words at the end. */
	if (rnd() % 7 == 0)
		e->drv = rnd() % 2 ? (struct drv_status){.kind = DRV_NVME, .status = 0x281} :
				     (struct drv_status){.kind = DRV_SCSI,
							 .status = 0x02,
							 .sense_key = 0xb,
							 .ascq = 6};
	/* Within a day of now, so that the time's second changes now and then. */
	l->wall_ns = 1700000000000000000LL + (int64_t)(rnd() % 86400000000000ULL);
	rnd_text(n->comm, rnd() % 8 == 0 ? sizeof(n->comm) : 16);
	if (!n->comm[0])
		strcpy(n->comm, "?");
	rnd_text(n->disk, rnd() % 8 == 0 ? sizeof(n->disk) : 9);
	rnd_text(n->group, sizeof(n->group));
	if (!n->group[0])
		strcpy(n->group, "-");
	rnd_text(n->path, rnd() % 10 == 0 ? sizeof(n->path) : 64);
	l->comm_text = n->comm;
	l->comm_text_len = strlen(n->comm);
	l->disk_text = n->disk;
	l->disk_text_len = strlen(n->disk);
	l->group_text = n->group;
	l->path_text = n->path[0] && rnd() % 2 ? n->path : NULL;
	l->kind = kinds[rnd() % 4];
	snoop_rwbs(e->op, rnd() % 32, l->rwbs);
	l->queue_ns = rnd_dur();
	l->device_ns = rnd_dur();
	l->drv_ns = rnd_dur();
	l->total_ns = rnd_dur();
}

static const char *dur(int64_t ns, char *buf)
{
	return ns < 0 ? "-" : fmt_ns(ns, buf, UNITS_BUF);
}

/* The line as the format in render_text()'s comment writes it. */
static int reference(char *buf, size_t len, const struct snoop_io *e, const struct snoop_line *l)
{
	char hms[16], sector[32], qd[32], bios[32], q[UNITS_BUF], d[UNITS_BUF], t[UNITS_BUF];
	char file[64], what[6100], wb[64] = "", dv[UNITS_BUF], drv[200] = "", text[160];
	time_t sec = (time_t)(l->wall_ns / 1000000000);
	struct tm tm;

	localtime_r(&sec, &tm);
	strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	if (e->sector == SNOOP_NO_SECTOR)
		strcpy(sector, "-");
	else
		snprintf(sector, sizeof(sector), "%" PRIu64, (uint64_t)e->sector);
	if (e->flags & SNOOP_IO_NO_ISSUE) {
		strcpy(qd, "-");
		strcpy(bios, "-");
	} else {
		snprintf(qd, sizeof(qd), "%u", e->inflight);
		snprintf(bios, sizeof(bios), "%u", e->nr_bios);
	}
	if (l->path_text) {
		snprintf(what, sizeof(what), "%s", l->path_text);
	} else if (e->ino) {
		snprintf(file, sizeof(file), "%u:%u:ino=%" PRIu64, KDEV_MAJOR(e->fs_dev),
			 KDEV_MINOR(e->fs_dev), (uint64_t)e->ino);
		snprintf(what, sizeof(what), "%s", file);
	} else {
		snprintf(what, sizeof(what), "[%s]",
			 e->op == SNOOP_OP_FLUSH && (e->flags & SNOOP_IO_NO_OWNER) ? "flush" :
										     l->kind);
	}
	if (e->flags & SNOOP_IO_WRITEBACK)
		snprintf(wb, sizeof(wb), " (writeback by %u)", e->flusher);
	if (e->drv.status)
		snprintf(drv, sizeof(drv), " (%s: %s)", drv_kind_name(e->drv.kind),
			 drv_status_text(&e->drv, text, sizeof(text)));
	return snprintf(buf, len,
			"%s.%06u %-15s %7u %7u %-7s %-4s %11s %7" PRIu64
			" %6s %6s %6s %6s %3s %4s %s %s%s%s\n",
			hms, l->wall_ns > 0 ? (unsigned int)(l->wall_ns % 1000000000 / 1000) : 0,
			l->comm_text, e->pid, e->tid, l->disk_text, l->rwbs, sector,
			(uint64_t)e->bytes, dur(l->queue_ns, q), dur(l->device_ns, d),
			dur(l->drv_ns, dv), dur(l->total_ns, t), qd, bios, l->group_text, what, wb,
			drv);
}

static void test_lines_match_printf(void **state)
{
	size_t size = 0, want_len = 0, want_cap = 64 << 20, n;
	char *got = NULL, *want = malloc(want_cap);
	struct snoop_render *r;
	struct snoop_line l;
	struct snoop_io e;
	struct names names;
	FILE *out;
	int i;

	assert_non_null(want);
	out = open_memstream(&got, &size);
	assert_non_null(out);
	assert_int_equal(snoop_render_new(out, false, &r), 0);
	want_len = strlen(header);
	memcpy(want, header, want_len);
	for (i = 0; i < LINES; i++) {
		rnd_line(&e, &l, &names);
		snoop_render_event(r, &e, &l);
		n = reference(want + want_len, want_cap - want_len, &e, &l);
		assert_true(n < want_cap - want_len);
		want_len += n;
		/* Flushed mid-stream as snoop does each path epoch. */
		if (i % 5000 == 4999)
			assert_int_equal(snoop_render_flush(r), 0);
	}
	assert_int_equal(snoop_render_flush(r), 0);
	fclose(out);
	assert_int_equal(size, want_len);
	for (n = 0; n < want_len && got[n] == want[n]; n++)
		;
	if (n < want_len) {
		print_error("differ at byte %zu:\n got: %.200s\nwant: %.200s\n", n,
			    got + (n > 80 ? n - 80 : 0), want + (n > 80 ? n - 80 : 0));
		fail();
	}
	snoop_render_free(r);
	free(got);
	free(want);
}

/* A path longer than any line: cut, and the line still ends with its newline. */
static void test_overlong_name_is_cut(void **state)
{
	size_t size = 0, len = 200000;
	char *got = NULL, *path = malloc(len + 1), *first, *nl;
	struct snoop_render *r;
	struct snoop_line l;
	struct snoop_io e;
	struct names names;
	FILE *out;

	assert_non_null(path);
	memset(path, 'p', len);
	path[len] = 0;
	out = open_memstream(&got, &size);
	assert_non_null(out);
	assert_int_equal(snoop_render_new(out, false, &r), 0);
	rnd_line(&e, &l, &names);
	l.path_text = path;
	e.flags |= SNOOP_IO_WRITEBACK;
	snoop_render_event(r, &e, &l);
	rnd_line(&e, &l, &names);
	snoop_render_event(r, &e, &l);
	assert_int_equal(snoop_render_flush(r), 0);
	fclose(out);
	/* The header, the cut line, the next one whole. */
	assert_true(size > strlen(header) + 8 * 4096);
	assert_true(size < strlen(header) + 8 * 4096 + 4096 + 6200);
	assert_int_equal(got[size - 1], '\n');
	first = got + strlen(header);
	nl = memchr(first, '\n', size - strlen(header) - 1);
	assert_non_null(nl);
	/* Cut in its path: the writeback note after it is gone. */
	assert_true(nl - first > 8 * 4096);
	assert_int_equal(nl[-1], 'p');
	assert_null(memmem(first, nl - first, "(writeback by", 13));
	snoop_render_free(r);
	free(path);
	free(got);
}

/* Render @n records of @e/@l and compare with the reference (header first). */
static void check_lines(const struct snoop_io *e, const struct snoop_line *l, int n)
{
	size_t size = 0, want_len;
	char *got = NULL, want[8192];
	struct snoop_render *r;
	FILE *out = open_memstream(&got, &size);
	int i;

	assert_non_null(out);
	assert_int_equal(snoop_render_new(out, false, &r), 0);
	want_len = strlen(header);
	memcpy(want, header, want_len);
	for (i = 0; i < n; i++) {
		snoop_render_event(r, &e[i], &l[i]);
		want_len += reference(want + want_len, sizeof(want) - want_len, &e[i], &l[i]);
		assert_true(want_len < sizeof(want));
	}
	assert_int_equal(snoop_render_flush(r), 0);
	fclose(out);
	want[want_len] = 0;
	assert_string_equal(got, want);
	snoop_render_free(r);
	free(got);
}

/*
 * Names as snoop_format() hands them to the renderer (escaped, with their lengths): an
 * unknown submitter, a plain one, one of control bytes, the disk's name.
 */
static void test_formatted_names(void **state)
{
	static const char *const comms[] = {"", "fio",
					    "\x1b[2J\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e"};
	struct snoop_io e[3];
	struct snoop_line l[3];
	struct snoop_format *f;
	int i;

	assert_int_equal(snoop_format_new(-1, true, NULL, &f), 0);
	for (i = 0; i < 3; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		e[i].dev = 7 << 20 | i;
		e[i].ts = 1000000000000ULL;
		e[i].start_ns = e[i].ts - 200000;
		e[i].issue_ns = e[i].ts - 150000;
		e[i].bytes = 4096;
		e[i].kind = BLK_OWN_DIRECT;
		strncpy(e[i].comm, comms[i], sizeof(e[i].comm) - 1);
		snoop_format(f, &e[i], &l[i]);
		/* Each line's names before the next record: they are valid until then. */
		assert_int_equal(l[i].comm_text_len, strlen(l[i].comm_text));
		assert_int_equal(l[i].disk_text_len, strlen(l[i].disk_text));
		assert_true(l[i].disk_text_len > 0);
		check_lines(&e[i], &l[i], 1);
	}
	assert_string_equal(l[0].comm_text, "?");
	assert_string_equal(l[1].comm_text, "fio");
	/* ESC and 11 other control bytes escaped (\xHH), "[2J" as it is. */
	assert_int_equal(l[2].comm_text_len, 12 * 4 + 3);
	snoop_format_free(f);
}

/* A clock before 1970 (set wrong): the line is whole, at its second's start. */
/* blktrace's RWBS letters, in its order: flush before the op, then FUA, A, S, M. */
static void test_rwbs(void **state)
{
	static const struct {
		uint32_t op, flags;
		const char *rwbs;
	} cases[] = {
		{SNOOP_OP_READ, 0, "R"},
		{SNOOP_OP_READ, RQ_FL_RAHEAD, "RA"},
		{SNOOP_OP_WRITE, RQ_FL_SYNC, "WS"},
		{SNOOP_OP_WRITE, RQ_FL_PREFLUSH | RQ_FL_FUA | RQ_FL_SYNC | RQ_FL_META, "FWFSM"},
		{SNOOP_OP_FLUSH, RQ_FL_PREFLUSH, "FF"},
		{SNOOP_OP_DISCARD, 0, "D"},
		{SNOOP_OP_SECURE_ERASE, 0, "DE"},
		{SNOOP_OP_ZONE_APPEND, 0, "W"},
		{SNOOP_OP_WRITE_ZEROES, RQ_FL_SYNC, "NS"},
		{4, 0, "N"},
		{1000, 0, "N"},
	};
	char b[16];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snoop_rwbs(cases[i].op, cases[i].flags, b);
		assert_string_equal(b, cases[i].rwbs);
	}
}

static void test_time_before_1970(void **state)
{
	struct snoop_line l;
	struct snoop_io e;
	struct names names;

	rnd_line(&e, &l, &names);
	l.wall_ns = -5;
	check_lines(&e, &l, 1);
	l.wall_ns = -86400000000123LL;
	check_lines(&e, &l, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_match_printf),
		cmocka_unit_test(test_overlong_name_is_cut),
		cmocka_unit_test(test_formatted_names),
		cmocka_unit_test(test_time_before_1970),
		cmocka_unit_test(test_rwbs),
	};

	/* One zone for the reference and the renderer alike. */
	setenv("TZ", "UTC", 1);
	tzset();
	make_header();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
