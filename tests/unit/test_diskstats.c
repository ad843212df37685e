// SPDX-License-Identifier: GPL-2.0
/* diskstats parsing, the iostat -x formulas against hand-computed values, recordings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "diskstats.h"

/*
 * Two samples 2.0 s apart. Deltas: rd_ios 200, rd_merges 50, rd_sectors 1600, rd_ticks 200,
 * wr_ios 100, wr_merges 25, wr_sectors 1600, wr_ticks 300, io_ticks 1000, time_in_queue 1000,
 * dc_ios 10, dc_merges 0, dc_sectors 80, dc_ticks 5, fl_ios 4, fl_ticks 8; in_flight now 3.
 */
static const char *prev_line =
	"   7       0 loop0 100 10 800 50 40 10 640 80 0 500 1000 0 0 0 0 0 0";
static const char *cur_line =
	"   7       0 loop0 300 60 2400 250 140 35 2240 380 3 1500 2000 10 0 80 5 4 8";

static void test_parse_20_fields(void **state)
{
	struct ds_dev d;

	assert_int_equal(ds_parse_line(cur_line, &d), 0);
	assert_int_equal(d.major, 7);
	assert_int_equal(d.minor, 0);
	assert_string_equal(d.name, "loop0");
	assert_int_equal(d.nr_fields, 17);
	assert_int_equal(d.f[DS_RD_IOS], 300);
	assert_int_equal(d.f[DS_IN_FLIGHT], 3);
	assert_int_equal(d.f[DS_FL_TICKS], 8);
}

static void test_parse_14_and_18_fields(void **state)
{
	struct ds_dev d;

	/* Pre-4.18 kernels: 11 counters, no discard or flush. */
	assert_int_equal(ds_parse_line("8 0 sda 8567 1560 140762 3460 0 0 0 0 0 2090 3440", &d),
			 0);
	assert_int_equal(d.nr_fields, 11);
	assert_int_equal(d.f[DS_TIME_IN_QUEUE], 3440);
	assert_int_equal(d.f[DS_DC_IOS], 0);
	/* 4.18 to 5.4: discards but no flushes. */
	assert_int_equal(ds_parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", &d), 0);
	assert_int_equal(d.nr_fields, 15);
	assert_int_equal(d.f[DS_DC_TICKS], 15);
	assert_int_equal(d.f[DS_FL_IOS], 0);
}

static void test_parse_rejects(void **state)
{
	struct ds_dev d;

	assert_int_equal(ds_parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10", &d), -EINVAL);
	assert_int_equal(ds_parse_line("snapshot 1 2", &d), -EINVAL);
	assert_int_equal(ds_parse_line("", &d), -EINVAL);
	/* A negative counter is refused, not wrapped; a dash in a name is fine. */
	assert_int_equal(ds_parse_line("8 0 sda 1 2 -3 4 5 6 7 8 9 10 11", &d), -EINVAL);
	assert_int_equal(ds_parse_line("253 0 dm-0 1 2 3 4 5 6 7 8 9 10 11", &d), 0);
	assert_string_equal(d.name, "dm-0");
}

/* Other field counts: the longest complete group of counters, as sysstat reads them. */
static void test_parse_odd_field_counts(void **state)
{
	static const struct {
		const char *line;
		int fields, kept;
	} cases[] = {
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12", 15, 11 },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13", 16, 11 },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14", 17, 11 },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", 19, 15 },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", 21, 17 },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22", 25, 17 },
	};
	struct ds_dev d;
	size_t i;
	int f;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(ds_parse_line(cases[i].line, &d), 0);
		assert_int_equal(d.nr_fields, cases[i].kept);
		/* Kept counters as given, those of an incomplete group absent (0). */
		for (f = 0; f < DS_NR_FIELDS; f++)
			assert_int_equal(d.f[f], f < cases[i].kept ? f + 1 : 0);
	}
	/* Extra fields must still be counters. */
	assert_int_equal(ds_parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 x", &d), -EINVAL);
	/* A counter too long to read ends nothing: the line is refused, not cut there. */
	assert_int_equal(ds_parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 "
				       "1111111111111111111111111111111111111111"
				       "1111111111111111111111111111111111111111 12 13 14",
				       &d),
			 -EINVAL);
}

static void test_compute_hand_values(void **state)
{
	struct ds_dev prev, cur;
	struct ds_metrics m;

	assert_int_equal(ds_parse_line(prev_line, &prev), 0);
	assert_int_equal(ds_parse_line(cur_line, &cur), 0);
	ds_compute(&prev, &cur, 2.0, &m);

	assert_near(m.r_s, 100.0, 1e-9);      /* 200 / 2 */
	assert_near(m.w_s, 50.0, 1e-9);	      /* 100 / 2 */
	assert_near(m.d_s, 5.0, 1e-9);	      /* 10 / 2 */
	assert_near(m.f_s, 2.0, 1e-9);	      /* 4 / 2 */
	assert_near(m.rkB_s, 400.0, 1e-9);    /* 1600 sectors / 2 = 800 kB, / 2 s */
	assert_near(m.wkB_s, 400.0, 1e-9);    /* same */
	assert_near(m.dkB_s, 20.0, 1e-9);     /* 80 / 2 / 2 */
	assert_near(m.rrqm_s, 25.0, 1e-9);    /* 50 / 2 */
	assert_near(m.wrqm_s, 12.5, 1e-9);    /* 25 / 2 */
	assert_near(m.drqm_s, 0.0, 1e-9);
	assert_near(m.rrqm_pct, 20.0, 1e-9);  /* 50 / (50 + 200) */
	assert_near(m.wrqm_pct, 20.0, 1e-9);  /* 25 / (25 + 100) */
	assert_near(m.drqm_pct, 0.0, 1e-9);
	assert_near(m.r_await, 1.0, 1e-9);    /* 200 ms / 200 */
	assert_near(m.w_await, 3.0, 1e-9);    /* 300 ms / 100 */
	assert_near(m.d_await, 0.5, 1e-9);    /* 5 ms / 10 */
	assert_near(m.f_await, 2.0, 1e-9);    /* 8 ms / 4 */
	assert_near(m.rareq_sz, 4.0, 1e-9);   /* 800 kB / 200 */
	assert_near(m.wareq_sz, 8.0, 1e-9);   /* 800 kB / 100 */
	assert_near(m.dareq_sz, 4.0, 1e-9);   /* 40 kB / 10 */
	assert_near(m.aqu_sz, 0.5, 1e-9);     /* 1000 ms weighted / 2000 ms */
	assert_near(m.util, 50.0, 1e-9);      /* 1000 ms busy / 2000 ms */
	assert_int_equal(m.in_flight, 3);
	assert_int_equal(m.ios, 314);	      /* 200 + 100 + 10 + 4 */
}

static void test_compute_restarted_from_zero(void **state)
{
	struct ds_dev prev, cur;
	struct ds_metrics m;

	/*
	 * Counters lower than before: the device was registered again, and the interval is
	 * computed against zero counters (as sysstat does), not reported as 0.
	 */
	assert_int_equal(ds_parse_line(cur_line, &prev), 0);
	assert_int_equal(ds_parse_line(prev_line, &cur), 0);
	assert_true(ds_restarted(&prev, &cur));
	ds_compute(&prev, &cur, 1.0, &m);
	assert_true(m.restarted);
	assert_near(m.r_s, 100.0, 1e-9);     /* rd_ios 100 since zero */
	assert_near(m.rkB_s, 400.0, 1e-9);   /* 800 sectors / 2 */
	assert_near(m.r_await, 0.5, 1e-9);   /* 50 ms / 100 */
	assert_near(m.w_s, 40.0, 1e-9);
	assert_near(m.aqu_sz, 1.0, 1e-9);    /* time_in_queue 1000 / 1000 ms */
	assert_near(m.util, 50.0, 1e-9);     /* io_ticks 500 / 1000 ms */
	assert_int_equal(m.ios, 140);

	/* One counter lower is enough (here io_ticks, by far less than a wrap). */
	assert_int_equal(ds_parse_line("7 0 loop0 10 0 80 10 0 0 0 0 0 1000 1000", &prev), 0);
	assert_int_equal(ds_parse_line("7 0 loop0 20 0 160 20 0 0 0 0 0 10 10", &cur), 0);
	ds_compute(&prev, &cur, 1.0, &m);
	assert_true(m.restarted);
	assert_near(m.r_s, 20.0, 1e-9);
	assert_near(m.util, 1.0, 1e-9);
	/* The in-flight gauge going down is no restart. */
	assert_int_equal(ds_parse_line("7 0 loop0 10 0 80 10 0 0 0 0 5 1000 1000", &prev), 0);
	assert_int_equal(ds_parse_line("7 0 loop0 20 0 160 20 0 0 0 0 0 1500 1500", &cur), 0);
	ds_compute(&prev, &cur, 1.0, &m);
	assert_false(m.restarted);
	assert_near(m.r_s, 10.0, 1e-9);
}

static void test_compute_ms_counter_wrap(void **state)
{
	struct ds_dev prev, cur;
	struct ds_metrics m;

	/* time_in_queue is a 32-bit ms counter: 4294967195 -> 400 is 501 ms, no restart. */
	assert_int_equal(ds_parse_line("7 0 loop0 10 0 80 10 0 0 0 0 1 100 4294967195", &prev), 0);
	assert_int_equal(ds_parse_line("7 0 loop0 20 0 160 20 0 0 0 0 1 600 400", &cur), 0);
	assert_false(ds_restarted(&prev, &cur));
	ds_compute(&prev, &cur, 1.0, &m);
	assert_false(m.restarted);
	assert_near(m.aqu_sz, 0.501, 1e-9);
	assert_near(m.r_s, 10.0, 1e-9);
	/* A request counter has no 32-bit wrap here: lower means restarted. */
	assert_int_equal(ds_parse_line("7 0 loop0 4294967295 0 80 10 0 0 0 0 0 100 100", &prev), 0);
	assert_int_equal(ds_parse_line("7 0 loop0 5 0 160 20 0 0 0 0 0 600 400", &cur), 0);
	assert_true(ds_restarted(&prev, &cur));
}

static void test_compute_new_device_and_cap(void **state)
{
	struct ds_dev cur;
	struct ds_metrics m;

	/* No previous sample: the device appeared, its counters started at zero. */
	assert_int_equal(ds_parse_line("7 1 loop1 10 0 80 20 0 0 0 0 0 1500 30 0 0 0 0 0 0", &cur),
			 0);
	ds_compute(NULL, &cur, 1.0, &m);
	assert_near(m.r_s, 10.0, 1e-9);
	assert_near(m.r_await, 2.0, 1e-9);
	/* 1500 ms busy in a 1000 ms interval is sampling skew: capped at 100%. */
	assert_near(m.util, 100.0, 1e-9);
	/* A zero interval yields no rates rather than infinities. */
	ds_compute(NULL, &cur, 0, &m);
	assert_near(m.r_s, 0, 0);
}

static char *write_temp(const char *text)
{
	char *path = strdup("/tmp/iospan-test-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_recording_read(void **state)
{
	char *path = write_temp("# hand-written\n"
				"iospan-diskstats 1\n"
				"partition 8 1\n"
				"\n"
				"snapshot 100.5 1700000000.25\n"
				"   8       0 sda 1 0 8 1 0 0 0 0 0 1 1\n"
				"   8       1 sda1 1 0 8 1 0 0 0 0 0 1 1\n"
				"snapshot 101.5 1700000001.25\n"
				"   8       0 sda 3 0 24 3 0 0 0 0 0 3 3\n"
				"   8       1 sda1 3 0 24 3 0 0 0 0 0 3 3\n");
	struct ds_snapshot s;
	struct ds_reader r;

	ds_snapshot_init(&s);
	assert_int_equal(ds_reader_open(&r, path), 0);
	assert_int_equal(ds_reader_next(&r, &s), 1);
	assert_near(s.uptime_s, 100.5, 1e-9);
	assert_near(s.epoch_s, 1700000000.25, 1e-6);
	assert_int_equal(s.nr, 2);
	assert_false(s.devs[0].partition);
	assert_true(s.devs[1].partition);
	assert_int_equal(ds_reader_next(&r, &s), 1);
	assert_near(s.uptime_s, 101.5, 1e-9);
	assert_int_equal(s.devs[0].f[DS_RD_IOS], 3);
	assert_int_equal(ds_reader_next(&r, &s), 0);
	ds_reader_close(&r);
	ds_snapshot_free(&s);
	unlink(path);
	free(path);
}

static void expect_malformed(const char *text, const char *why)
{
	char *path = write_temp(text);
	struct ds_snapshot s;
	struct ds_reader r;
	int ret;

	ds_snapshot_init(&s);
	assert_int_equal(ds_reader_open(&r, path), 0);
	do
		ret = ds_reader_next(&r, &s);
	while (ret == 1);
	assert_int_equal(ret, -EINVAL);
	assert_non_null(strstr(r.error, why));
	ds_reader_close(&r);
	ds_snapshot_free(&s);
	unlink(path);
	free(path);
}

static void test_recording_malformed(void **state)
{
	expect_malformed("8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n", "not an iospan diskstats recording");
	expect_malformed("", "empty recording");
	expect_malformed("iospan-diskstats 1\n8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n",
			 "before the first 'snapshot'");
	expect_malformed("iospan-diskstats 1\nsnapshot x\n", "snapshot UPTIME");
	expect_malformed("iospan-diskstats 1\nsnapshot 1 2\n8 0 sda 1 2\n", "line 3");
	expect_malformed("iospan-diskstats 1\npartition 8\n", "partition MAJ MIN");
	expect_malformed("iospan-diskstats 1\npartition -1 0\n", "partition MAJ MIN");
	expect_malformed("iospan-diskstats 1\npartition 8 1 2\n", "partition MAJ MIN");
	expect_malformed("iospan-diskstats 1\npartition 8 0x1\n", "partition MAJ MIN");
	/* Times are decimal seconds: nan, inf, signs, exponents and hex are refused. */
	expect_malformed("iospan-diskstats 1\nsnapshot nan 1\n", "line 2: expected 'snapshot");
	expect_malformed("iospan-diskstats 1\nsnapshot 1 inf\n", "decimal");
	expect_malformed("iospan-diskstats 1\nsnapshot -1 5\n", "decimal");
	expect_malformed("iospan-diskstats 1\nsnapshot 1e3 5\n", "decimal");
	expect_malformed("iospan-diskstats 1\nsnapshot 0x10 5\n", "decimal");
	expect_malformed("iospan-diskstats 1\nsnapshot 1 2 3\n", "'3' after them");
	/* A token longer than any time is no end of the line (fuzz seed 678550429). */
	expect_malformed("iospan-diskstats 1\nsnapshot 1 "
			 "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd 3\n",
			 "decimal");
	expect_malformed("iospan-diskstats 1\nsnapshot 1 2 "
			 "3333333333333333333333333333333333333333333333333333333333333333\n",
			 "after them");
	expect_malformed("iospan-diskstats 1\npartition 8 1 "
			 "0000000000000000000000000000000000000000000000000000000000000000\n",
			 "partition MAJ MIN");
	/* A repeated snapshot, and times that both go back. */
	expect_malformed("iospan-diskstats 1\nsnapshot 10 100\nsnapshot 10 100\n",
			 "line 3: snapshot at the uptime of the one before");
	expect_malformed("iospan-diskstats 1\nsnapshot 10 100\nsnapshot 10 101\n", "repeated");
	expect_malformed("iospan-diskstats 1\nsnapshot 10 100\nsnapshot 5 99\n",
			 "line 3: snapshot times go backwards");
}

/* Reads every snapshot of @text; the flags of each as "R" (rebooted), "C" (clock set back), "-". */
static int read_flags(const char *text, char *flags, size_t len)
{
	char *path = write_temp(text);
	struct ds_snapshot s;
	struct ds_reader r;
	size_t n = 0;
	int ret;

	ds_snapshot_init(&s);
	assert_int_equal(ds_reader_open(&r, path), 0);
	while ((ret = ds_reader_next(&r, &s)) == 1 && n + 1 < len)
		flags[n++] = r.rebooted ? 'R' : r.clock_set_back ? 'C' : '-';
	flags[n] = '\0';
	ds_reader_close(&r);
	ds_snapshot_free(&s);
	unlink(path);
	free(path);
	return ret;
}

static void test_recording_times(void **state)
{
	char flags[16];

	/* Uptime back, wall clock on: a reboot; reading goes on. */
	assert_int_equal(read_flags("iospan-diskstats 1\nsnapshot 100 1000\nsnapshot 101 1001\n"
				    "snapshot 5 1100\nsnapshot 6 1101\n",
				    flags, sizeof(flags)),
			 0);
	assert_string_equal(flags, "--R-");
	/* Without wall-clock times, uptime going back is a reboot too. */
	assert_int_equal(read_flags("iospan-diskstats 1\nsnapshot 100\nsnapshot 5\n", flags,
				    sizeof(flags)),
			 0);
	assert_string_equal(flags, "-R");
	/* Uptime on, wall clock back (set back by NTP or by hand): flagged, not an error. */
	assert_int_equal(read_flags("iospan-diskstats 1\nsnapshot 100 1000\nsnapshot 101 900\n"
				    "snapshot 102 901\n",
				    flags, sizeof(flags)),
			 0);
	assert_string_equal(flags, "-C-");
}

static void test_recording_lines(void **state)
{
	char *text, *p;

	/* A comment of any length is a comment: nothing in it is read as a device. */
	text = malloc(8192);
	p = text + sprintf(text, "iospan-diskstats 1\nsnapshot 1 1\n# ");
	memset(p, 'x', 2000);
	p += 2000;
	p += sprintf(p, " 7 9 fake 1 2 3 4 5 6 7 8 9 10 11\n");
	sprintf(p, "7 0 loop0 1 2 3 4 5 6 7 8 9 10 11\n");
	{
		char *path = write_temp(text);
		struct ds_snapshot s;
		struct ds_reader r;

		ds_snapshot_init(&s);
		assert_int_equal(ds_reader_open(&r, path), 0);
		assert_int_equal(ds_reader_next(&r, &s), 1);
		assert_int_equal(s.nr, 1);
		assert_string_equal(s.devs[0].name, "loop0");
		assert_int_equal(ds_reader_next(&r, &s), 0);
		ds_reader_close(&r);
		ds_snapshot_free(&s);
		unlink(path);
		free(path);
	}
	free(text);

	/* Longer than DS_MAX_LINE: an error naming the line, not pieces read as lines. */
	text = malloc(DS_MAX_LINE + 64);
	p = text + sprintf(text, "iospan-diskstats 1\n# ");
	memset(p, 'x', DS_MAX_LINE);
	strcpy(p + DS_MAX_LINE, "\n");
	expect_malformed(text, "line 2: line longer than");
	free(text);

	/* A NUL byte: binary data. /dev/zero, which has no line at all, ends at once. */
	{
		struct ds_snapshot s;
		struct ds_reader r;

		ds_snapshot_init(&s);
		assert_int_equal(ds_reader_open(&r, "/dev/zero"), 0);
		assert_int_equal(ds_reader_next(&r, &s), -EINVAL);
		assert_non_null(strstr(r.error, "/dev/zero line 1: NUL byte"));
		ds_reader_close(&r);
		ds_snapshot_free(&s);
	}
	/* A directory is no recording. */
	{
		struct ds_reader r;

		assert_int_equal(ds_reader_open(&r, "/tmp"), -EISDIR);
		ds_reader_close(&r);
	}
}

static void test_recording_round_trip(void **state)
{
	struct ds_snapshot s, back;
	struct ds_dev d;
	struct ds_reader r;
	char path[] = "/tmp/iospan-test-XXXXXX";
	FILE *f;
	int fd;

	ds_snapshot_init(&s);
	ds_snapshot_init(&back);
	s.uptime_s = 42.125;
	s.epoch_s = 1700000000.5;
	assert_int_equal(ds_parse_line(cur_line, &d), 0);
	assert_int_equal(ds_snapshot_add(&s, &d), 0);
	assert_int_equal(ds_parse_line("8 1 sda1 1 2 3 4 5 6 7 8 9 10 11", &d), 0);
	d.partition = true;
	assert_int_equal(ds_snapshot_add(&s, &d), 0);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_int_equal(ds_record_header(f), 0);
	assert_int_equal(ds_record_snapshot(f, &s, true), 0);
	fclose(f);

	assert_int_equal(ds_reader_open(&r, path), 0);
	assert_int_equal(ds_reader_next(&r, &back), 1);
	assert_int_equal(back.nr, 2);
	assert_near(back.uptime_s, 42.125, 1e-6);
	assert_memory_equal(back.devs[0].f, s.devs[0].f, sizeof(s.devs[0].f));
	assert_int_equal(back.devs[0].nr_fields, 17);
	assert_int_equal(back.devs[1].nr_fields, 11);
	assert_true(back.devs[1].partition);
	assert_false(back.devs[0].partition);
	ds_reader_close(&r);
	ds_snapshot_free(&s);
	ds_snapshot_free(&back);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_20_fields),
		cmocka_unit_test(test_parse_14_and_18_fields),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_compute_hand_values),
		cmocka_unit_test(test_compute_restarted_from_zero),
		cmocka_unit_test(test_compute_ms_counter_wrap),
		cmocka_unit_test(test_parse_odd_field_counts),
		cmocka_unit_test(test_recording_times),
		cmocka_unit_test(test_recording_lines),
		cmocka_unit_test(test_compute_new_device_and_cap),
		cmocka_unit_test(test_recording_read),
		cmocka_unit_test(test_recording_malformed),
		cmocka_unit_test(test_recording_round_trip),
	};

	return cmocka_run_group_tests_name("diskstats", tests, NULL, NULL);
}
