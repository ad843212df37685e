// SPDX-License-Identifier: GPL-2.0
/* mountinfo parsing and joining a path inside a file system with its mount point. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testutil.h"
#include "mounts.h"

static char path[] = "/tmp/iospan-mountinfo-XXXXXX";

static const char mountinfo[] =
	"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
	"30 22 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n"
	"40 22 7:3 / /mnt/data rw,relatime shared:20 - xfs /dev/loop3 rw\n"
	/* A bind mount of a subdirectory of the same fs, with an escaped space. */
	"41 22 7:3 /exports/web /srv/my\\040web rw,relatime shared:20 - xfs /dev/loop3 rw\n"
	"42 22 7:4 / /mnt/opt rw master:5 unbindable - ext4 /dev/loop4 rw\n"
	/* btrfs: an anonymous s_dev, a subvolume mounted by its path in the fs. */
	"50 22 0:39 /vol /mnt/vol rw - btrfs /dev/loop5 rw,subvol=/vol\n"
	"51 22 0:40 / /mnt/null rw - btrfs /dev/null rw\n"
	/* cgroup hierarchies: v1 controllers are super options; the v2 one has none. */
	"60 22 0:50 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	"61 22 0:51 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio\n"
	"62 22 0:52 / /sys/fs/cgroup/net_cls,net_prio rw - cgroup cgroup rw,net_cls,net_prio\n"
	"63 22 0:53 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n";

static void test_join(void **state)
{
	struct mounts m;
	char out[256];
	int fd;
	FILE *f;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(mountinfo, f);
	fclose(f);
	assert_int_equal(mounts_load(path, &m), 0);
	unlink(path);
	assert_int_equal(m.nr, 11);
	assert_string_equal(m.v[5].super_opts, "rw,subvol=/vol");
	assert_string_equal(m.v[3].mnt, "/srv/my web");
	assert_string_equal(m.v[4].fstype, "ext4");
	assert_int_equal(m.v[4].id, 42);
	assert_string_equal(m.v[4].source, "/dev/loop4");
	assert_int_equal(m.v[5].major, 0);
	assert_int_equal(m.v[5].minor, 39);

	assert_int_equal(mounts_join(&m, 7, 3, "/a/b.dat", out, sizeof(out)), 0);
	assert_string_equal(out, "/mnt/data/a/b.dat");
	/* The bind mount's root is the longest prefix: the path through it. */
	assert_int_equal(mounts_join(&m, 7, 3, "/exports/web/index.html", out, sizeof(out)), 0);
	assert_string_equal(out, "/srv/my web/index.html");
	/* A prefix must end on a component boundary. */
	assert_int_equal(mounts_join(&m, 7, 3, "/exports/webx/f", out, sizeof(out)), 0);
	assert_string_equal(out, "/mnt/data/exports/webx/f");
	assert_int_equal(mounts_join(&m, 254, 0, "/usr/bin/fio", out, sizeof(out)), 0);
	assert_string_equal(out, "/usr/bin/fio");
	assert_int_equal(mounts_join(&m, 7, 4, "/", out, sizeof(out)), 0);
	assert_string_equal(out, "/mnt/opt");
	assert_int_equal(mounts_join(&m, 0, 39, "/vol/a/f", out, sizeof(out)), 0);
	assert_string_equal(out, "/mnt/vol/a/f");
	assert_int_equal(mounts_join(&m, 8, 0, "/x", out, sizeof(out)), -ENOENT);
	assert_int_equal(mounts_join(&m, 7, 3, "/a/b.dat", out, 8), -ENAMETOOLONG);
	mounts_free(&m);
	assert_int_equal(mounts_load("/nonexistent/mountinfo", &m), -ENOENT);
}

/* Where a file system type is mounted: cgroup hierarchies by type and controller. */
static void test_find_fs(void **state)
{
	char file[] = "/tmp/iospan-mountinfo-XXXXXX", out[64];
	int fd = mkstemp(file);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(mountinfo, f);
	fclose(f);
	assert_int_equal(mounts_find_fs(file, "cgroup2", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "/sys/fs/cgroup/unified");
	assert_int_equal(mounts_find_fs(file, "cgroup", "blkio", out, sizeof(out)), 0);
	assert_string_equal(out, "/sys/fs/cgroup/blkio");
	assert_int_equal(mounts_find_fs(file, "cgroup", "net_prio", out, sizeof(out)), 0);
	assert_string_equal(out, "/sys/fs/cgroup/net_cls,net_prio");
	/* A whole option, not a part of one ("net" is neither net_cls nor net_prio). */
	assert_int_equal(mounts_find_fs(file, "cgroup", "net", out, sizeof(out)), -ENOENT);
	assert_int_equal(mounts_find_fs(file, "cgroup", "io", out, sizeof(out)), -ENOENT);
	assert_int_equal(mounts_find_fs(file, "cgroup", "memory", out, 8), -ENAMETOOLONG);
	assert_int_equal(mounts_find_fs(file, "xfs", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "/mnt/data");
	unlink(file);
	assert_int_equal(mounts_find_fs(file, "xfs", NULL, out, sizeof(out)), -ENOENT);
}

/* Backing devices only for anonymous devs mounted from a block device. */
static void test_unescape(void **state)
{
	char s[] = "a\\040b\\011c\\012d\\134e \\400 \\12";

	(void)state;
	mounts_unescape(s);
	/* Bytes are \000-\377: \400 is not an escape, nor an unfinished \12. */
	assert_string_equal(s, "a b\tc\nd\\e \\400 \\12");
}

static void test_backing(void **state)
{
	struct mount_entry e = {.major = 7, .minor = 3, .fstype = "xfs", .source = "/dev/loop3"};
	uint32_t devs[4];

	assert_int_equal(mounts_backing_devs(&e, devs, 4), 0);
	e.major = 0;
	e.source = "/dev/null"; /* a character device */
	assert_int_equal(mounts_backing_devs(&e, devs, 4), 0);
	e.source = "none";
	assert_int_equal(mounts_backing_devs(&e, devs, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_find_fs),
		cmocka_unit_test(test_backing),
		cmocka_unit_test(test_unescape),
	};

	return cmocka_run_group_tests_name("mounts", tests, NULL, NULL);
}
