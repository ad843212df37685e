// SPDX-License-Identifier: GPL-2.0
/* The disks library against a fake sysfs tree: names, MAJ:MIN, partitions, errors. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "disks.h"

static char root[] = "/tmp/iospan-sysfs-XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void link_to(const char *target, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* The layout the kernel uses: devices/.../sda/sda1, with class/block and dev/block links. */
static int setup(void **state)
{
	if (!mkdtemp(root))
		return -1;
	dir("devices");
	dir("devices/virtual");
	dir("devices/virtual/block");
	dir("devices/virtual/block/sda");
	dir("devices/virtual/block/sda/sda1");
	dir("devices/virtual/block/loop0");
	put("devices/virtual/block/sda/dev", "8:0\n");
	put("devices/virtual/block/sda/sda1/dev", "8:1\n");
	put("devices/virtual/block/sda/sda1/partition", "1\n");
	put("devices/virtual/block/sda/sda1/start", "2048\n");
	put("devices/virtual/block/loop0/dev", "7:0\n");
	dir("class");
	dir("class/block");
	link_to("../../devices/virtual/block/sda", "class/block/sda");
	link_to("../../devices/virtual/block/sda/sda1", "class/block/sda1");
	link_to("../../devices/virtual/block/loop0", "class/block/loop0");
	dir("dev");
	dir("dev/block");
	link_to("../../devices/virtual/block/sda", "dev/block/8:0");
	link_to("../../devices/virtual/block/sda/sda1", "dev/block/8:1");
	link_to("../../devices/virtual/block/loop0", "dev/block/7:0");
	disks_set_sysfs_root(root);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	disks_set_sysfs_root(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_lookup_disk(void **state)
{
	struct disk d;

	assert_int_equal(disk_lookup("sda", &d), 0);
	assert_int_equal(d.major, 8);
	assert_int_equal(d.minor, 0);
	assert_false(d.partition);
	assert_string_equal(d.disk_name, "sda");
	assert_int_equal(disk_lookup("7:0", &d), 0);
	assert_string_equal(d.name, "loop0");
}

static void test_lookup_partition(void **state)
{
	struct disk d;

	assert_int_equal(disk_lookup("sda1", &d), 0);
	assert_true(d.partition);
	assert_int_equal(d.minor, 1);
	assert_string_equal(d.disk_name, "sda");
	assert_int_equal(d.disk_major, 8);
	assert_int_equal(d.disk_minor, 0);
	assert_int_equal(d.start_sector, 2048);
	assert_int_equal(disk_lookup("8:1", &d), 0);
	assert_string_equal(d.name, "sda1");
	assert_true(disk_is_partition(8, 1));
	assert_false(disk_is_partition(8, 0));
}

static void test_lookup_missing(void **state)
{
	struct disk d;

	assert_int_equal(disk_lookup("sdz", &d), -ENOENT);
	assert_int_equal(disk_lookup("8:9", &d), -ENOENT);
	assert_int_equal(disk_lookup("", &d), -ENOENT);
	assert_int_equal(disk_lookup("../sda", &d), -ENOENT);
	assert_int_equal(disk_lookup("/etc/passwd", &d), -ENOTBLK);
	assert_int_equal(disk_lookup("/no/such/path", &d), -ENOENT);
}

static void test_spec(void **state)
{
	struct disk_spec s;

	/* A /dev path that does not exist here keeps its name: recordings from elsewhere. */
	assert_int_equal(disk_spec_parse("/dev/iospan-not-here0", &s), 0);
	assert_false(s.by_devnum);
	assert_string_equal(s.name, "iospan-not-here0");
	assert_true(disk_spec_matches(&s, 1, 2, "iospan-not-here0"));
	assert_false(disk_spec_matches(&s, 1, 2, "sda"));
	assert_int_equal(disk_spec_parse("259:3", &s), 0);
	assert_true(s.by_devnum);
	assert_true(disk_spec_matches(&s, 259, 3, "nvme0n1p3"));
	assert_false(disk_spec_matches(&s, 259, 4, "nvme0n1p3"));
	/* sysfs spells '/' in a device name as '!'. */
	assert_int_equal(disk_spec_parse("cciss/c0d0", &s), 0);
	assert_string_equal(s.name, "cciss!c0d0");
	assert_int_equal(disk_spec_parse("", &s), -EINVAL);
	assert_int_equal(disk_spec_parse("8:", &s), 0); /* not a devnum: a (missing) name */
	assert_false(s.by_devnum);
}

static void test_name_of(void **state)
{
	char buf[64];

	assert_string_equal(disk_name_of(8, 1, buf, sizeof(buf)), "sda1");
	assert_string_equal(disk_name_of(9, 9, buf, sizeof(buf)), "9:9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_disk),    cmocka_unit_test(test_lookup_partition),
		cmocka_unit_test(test_lookup_missing), cmocka_unit_test(test_spec),
		cmocka_unit_test(test_name_of),
	};

	return cmocka_run_group_tests_name("disks", tests, setup, teardown);
}
