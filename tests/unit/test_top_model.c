// SPDX-License-Identifier: GPL-2.0
/*
 * top's report model (src/collect/top/model.c) without a kernel: rows as the maps give
 * them, names from a table (struct top_names), /proc/diskstats from two snapshots made
 * here. Processes, files, directories and the coverage of each disk must come out as
 * the rows say.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/top.h" /* before cmocka: its fail() macro */
#include "testutil.h"

#define MIB  (1024ULL * 1024)
#define SDA  KDEV(8, 0)
#define SDA1 KDEV(8, 1)

/* The world the model asks about: two processes, three files, sda with sda1. */
static const struct {
	uint64_t ino;
	const char *path;
} files[] = {
	{11, "/srv/db/a.sst"},
	{12, "/srv/db/b.sst"},
	{13, "/var/log/app.log"},
};

static int asked_proc, asked_path;

static void fake_proc(void *arg, uint32_t pid, struct top_proc *info)
{
	memset(info, 0, sizeof(*info));
	info->tgid = pid;
	snprintf(info->comm, sizeof(info->comm), "proc%u", pid);
	asked_proc++;
}

static const char *fake_path(void *arg, uint32_t dev, uint32_t gen, uint64_t ino)
{
	size_t i;

	asked_path++;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (files[i].ino == ino)
			return files[i].path;
	return NULL;
}

static int fake_disk_of(void *arg, unsigned int major, unsigned int minor, struct disk *d)
{
	memset(d, 0, sizeof(*d));
	d->major = major;
	d->minor = minor;
	d->partition = minor != 0;
	d->disk_major = 8;
	d->disk_minor = 0;
	snprintf(d->disk_name, sizeof(d->disk_name), "sda");
	return major == 8 ? 0 : -ENODEV;
}

static void fake_dev_name(void *arg, unsigned int major, unsigned int minor, char *buf, size_t len)
{
	snprintf(buf, len, minor ? "sda%u" : "sda", minor);
}

static bool fake_request_based(void *arg, unsigned int major, unsigned int minor)
{
	return true;
}

static const struct top_names names = {
	.proc = fake_proc,
	.file_path = fake_path,
	.disk_of = fake_disk_of,
	.dev_name = fake_dev_name,
	.request_based = fake_request_based,
};

static struct row mkrow(uint32_t pid, uint64_t ino, uint64_t fs_w, uint64_t disk_w)
{
	struct row r = {.key = {.pid = pid, .dev = SDA1, .ino = ino, .gen = 1}};

	r.fs_write = fs_w;
	r.disk_write = disk_w;
	r.nr_q2c = disk_w ? 1 : 0;
	r.q2c_sum = r.q2c_max = disk_w ? 1000 : 0;
	return r;
}

/* Rows as a snapshot holds them: sorted by key. */
static void sort_rows(struct row *v, size_t n)
{
	qsort(v, n, sizeof(*v), top_row_cmp_key);
}

static void test_processes_sum_their_files(void **state)
{
	struct row rows[] = {
		mkrow(100, 11, 4 * MIB, 4 * MIB),
		mkrow(100, 12, 1 * MIB, 1 * MIB),
		mkrow(200, 13, 8 * MIB, 0),
		mkrow(200, 11, 0, 2 * MIB),
		mkrow(300, 12, 0, 0), /* idle: no process */
	};
	struct top_snapshot snap = {.rows = rows, .nr_rows = 5};
	struct report rep = {.snap = &snap};
	struct top_opts o;

	top_opts_default(&o);
	o.sort = SORT_DISK;
	sort_rows(rows, 5);
	asked_proc = 0;
	assert_int_equal(top_group_procs(&o, &names, &rep), 0);
	assert_int_equal(rep.nr_procs, 2);
	assert_int_equal(asked_proc, 2); /* once per owner, not per row */
	/* By DISK bytes: 100 (5 MiB) before 200 (2 MiB), FS bytes do not reorder them. */
	assert_int_equal(rep.procs[0].pid, 100);
	assert_int_equal(rep.procs[0].sum.disk_write, 5 * MIB);
	assert_int_equal(rep.procs[0].sum.fs_write, 5 * MIB);
	assert_int_equal(rep.procs[0].nr_files, 2);
	assert_string_equal(rep.procs[0].info.comm, "proc100");
	/* Its files busiest first. */
	assert_int_equal(rep.procs[0].files[0]->key.ino, 11);
	assert_int_equal(rep.procs[1].pid, 200);
	assert_int_equal(rep.procs[1].sum.disk_write, 2 * MIB);
	assert_int_equal(rep.procs[1].sum.fs_write, 8 * MIB);
	top_report_free(&rep);

	/* By FS bytes the order turns. */
	rep = (struct report){.snap = &snap};
	o.sort = SORT_FS;
	assert_int_equal(top_group_procs(&o, &names, &rep), 0);
	assert_int_equal(rep.procs[0].pid, 200);
	top_report_free(&rep);
}

static void test_files_sum_their_processes(void **state)
{
	struct row rows[] = {
		mkrow(100, 11, 0, 4 * MIB), mkrow(200, 11, 0, 2 * MIB), mkrow(200, 13, 0, 1 * MIB),
		mkrow(100, TOP_INO(TOP_INO_META), 0, 1 * MIB), /* no file: a kind of its own */
	};
	struct top_snapshot snap = {.rows = rows, .nr_rows = 4};
	struct report rep = {.snap = &snap};
	struct top_opts o;

	top_opts_default(&o);
	o.by = BY_FILE;
	sort_rows(rows, 4);
	assert_int_equal(top_group_by(&o, &names, &rep), 0);
	assert_int_equal(rep.nr_groups, 3);
	assert_string_equal(rep.groups[0].name, "/srv/db/a.sst");
	assert_int_equal(rep.groups[0].sum.disk_write, 6 * MIB);
	assert_int_equal(rep.groups[0].nr_pids, 2);
	assert_int_equal(rep.groups[0].nr_files, 1);
	/* The kind has no name and counts no file. */
	assert_null(rep.groups[2].name);
	assert_int_equal(rep.groups[2].nr_files, 0);
	top_report_free(&rep);
}

static void test_directories_keep_depth_components(void **state)
{
	struct row rows[] = {
		mkrow(100, 11, 0, 4 * MIB),
		mkrow(200, 12, 0, 2 * MIB),
		mkrow(200, 13, 0, 1 * MIB),
	};
	struct top_snapshot snap = {.rows = rows, .nr_rows = 3};
	struct report rep = {.snap = &snap};
	struct top_opts o;

	top_opts_default(&o);
	o.by = BY_DIR;
	o.dir_depth = 1;
	sort_rows(rows, 3);
	assert_int_equal(top_group_by(&o, &names, &rep), 0);
	assert_int_equal(rep.nr_groups, 2);
	assert_string_equal(rep.groups[0].name, "/srv");
	assert_int_equal(rep.groups[0].sum.disk_write, 6 * MIB);
	assert_int_equal(rep.groups[0].nr_files, 2);
	/* pid 200 wrote two files there, pid 100 one: each process once. */
	assert_int_equal(rep.groups[0].nr_pids, 2);
	assert_string_equal(rep.groups[1].name, "/var");
	top_report_free(&rep);
}

static void snap_dev(struct ds_snapshot *s, struct ds_dev *d, unsigned int minor,
		     uint64_t wr_sectors, uint64_t flushes)
{
	memset(d, 0, sizeof(*d));
	d->major = 8;
	d->minor = minor;
	d->partition = minor != 0;
	snprintf(d->name, sizeof(d->name), minor ? "sda%u" : "sda", minor);
	d->f[DS_WR_SECTORS] = wr_sectors;
	d->f[DS_FL_IOS] = flushes;
	d->nr_fields = 17;
	s->nr++;
}

static void test_coverage_against_diskstats(void **state)
{
	struct row rows[] = {
		mkrow(100, 11, 0, 3 * MIB),
		mkrow(TOP_PID_NONE, TOP_INO(TOP_INO_UNATTR), 0, 1 * MIB),
	};
	struct ds_dev start_devs[2], end_devs[2];
	struct ds_snapshot start = {.devs = start_devs}, end = {.devs = end_devs};
	struct top_snapshot snap = {.rows = rows, .nr_rows = 2};
	struct report rep = {.snap = &snap};
	struct top_opts o;

	top_opts_default(&o);
	sort_rows(rows, 2);
	snap_dev(&start, &start_devs[0], 0, 1000, 5);
	snap_dev(&start, &start_devs[1], 1, 1000, 0);
	/* 5 MiB written to the disk in the window, 4 of them seen, 1 unattributed. */
	snap_dev(&end, &end_devs[0], 0, 1000 + 5 * MIB / 512, 7);
	snap_dev(&end, &end_devs[1], 1, 1000 + 5 * MIB / 512, 0);
	assert_int_equal(top_compute_coverage(&o, &names, &start, &end, &rep), 0);
	/* The partition's bytes land on its disk's line; partitions have none of their own. */
	assert_int_equal(rep.nr_devs, 1);
	assert_string_equal(rep.devs[0].name, "sda");
	assert_int_equal(rep.devs[0].ds_write, 5 * MIB);
	assert_int_equal(rep.devs[0].seen_write, 4 * MIB);
	assert_int_equal(rep.devs[0].unattr_write, 1 * MIB);
	assert_int_equal(rep.devs[0].ds_flushes, 2);
	assert_true(rep.devs[0].ds_known);
	assert_true(rep.devs[0].traced);
	top_report_free(&rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_processes_sum_their_files),
		cmocka_unit_test(test_files_sum_their_processes),
		cmocka_unit_test(test_directories_keep_depth_components),
		cmocka_unit_test(test_coverage_against_diskstats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
