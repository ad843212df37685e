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
#include "lib/common_abi.h"
#include "units.h"
#include "testutil.h"

#define LINES 20000

static const char header[] =
	"TIME            COMM                PID     TID DISK    RWBS      SECTOR   BYTES "
	" QUEUE DEVICE  TOTAL  QD BIOS CGROUP FILE\n";

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
	char file[64], what[6100], wb[64] = "";
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
	return snprintf(buf, len,
			"%s.%06u %-15s %7u %7u %-7s %-4s %11s %7" PRIu64
			" %6s %6s %6s %3s %4s %s %s%s\n",
			hms, (unsigned int)((uint64_t)(l->wall_ns % 1000000000) / 1000),
			l->comm_text, e->pid, e->tid, l->disk_text, l->rwbs, sector,
			(uint64_t)e->bytes, dur(l->queue_ns, q), dur(l->device_ns, d),
			dur(l->total_ns, t), qd, bios, l->group_text, what, wb);
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
	memcpy(want, header, sizeof(header) - 1);
	want_len = sizeof(header) - 1;
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
	assert_true(size > sizeof(header) + 8 * 4096);
	assert_true(size < sizeof(header) + 8 * 4096 + 4096 + 6200);
	assert_int_equal(got[size - 1], '\n');
	first = got + sizeof(header) - 1;
	nl = memchr(first, '\n', size - sizeof(header));
	assert_non_null(nl);
	/* Cut in its path: the writeback note after it is gone. */
	assert_true(nl - first > 8 * 4096);
	assert_int_equal(nl[-1], 'p');
	assert_null(memmem(first, nl - first, "(writeback by", 13));
	snoop_render_free(r);
	free(path);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_match_printf),
		cmocka_unit_test(test_overlong_name_is_cut),
	};

	/* One zone for the reference and the renderer alike. */
	setenv("TZ", "UTC", 1);
	tzset();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
