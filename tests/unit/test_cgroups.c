// SPDX-License-Identifier: GPL-2.0
/* Container ids from cgroup paths, and id <-> path over a fake cgroup tree. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "cgroups.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void expect(const char *path, const char *id, const char *runtime)
{
	struct container c;
	bool found = cgroup_container(path, &c);

	if (!id) {
		if (found)
			print_error("%s: unexpected container %s\n", path ? path : "(null)", c.id);
		assert_false(found);
		return;
	}
	if (!found)
		print_error("%s: no container found\n", path);
	assert_true(found);
	assert_string_equal(c.id, id);
	assert_string_equal(c.runtime, runtime);
}

static void test_container_ids(void **state)
{
	expect("/system.slice/docker-" HEX64 ".scope", "0123456789ab", "docker");
	expect("/docker/" HEX64, "0123456789ab", "docker");
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/"
	       "cri-containerd-" HEX64 ".scope",
	       "0123456789ab", "containerd");
	expect("/kubepods.slice/kubepods-pod1.slice/crio-" HEX64 ".scope", "0123456789ab", "cri-o");
	expect("/kubepods/burstable/pod0a1b2c3d-1111-2222-3333-444455556666/" HEX64, "0123456789ab",
	       "kubepods");
	expect("/machine.slice/libpod-" HEX64 ".scope/container", "0123456789ab", "podman");
	expect("/libpod_parent/" HEX64, "0123456789ab", "podman");
	/* The monitor next to a CRI-O container is not the container. */
	expect("/kubepods.slice/crio-conmon-" HEX64 ".scope", NULL, NULL);
	expect("/", NULL, NULL);
	expect("/system.slice/sshd.service", NULL, NULL);
	expect("/user.slice/user-0.slice/session-3.scope", NULL, NULL);
	expect("/docker/not-hex", NULL, NULL);
	expect(NULL, NULL, NULL);
}

static char root[] = "/tmp/iospan-cgroups-XXXXXX";

static void mk(const char *rel, bool procs)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	assert_int_equal(mkdir(p, 0755), 0);
	if (!procs)
		return;
	snprintf(p, sizeof(p), "%s%s/cgroup.procs", root, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
}

static uint64_t ino_of(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	assert_int_equal(stat(p, &st), 0);
	return st.st_ino;
}

static void test_tree(void **state)
{
	char dir[PATH_MAX], rel[PATH_MAX], p[PATH_MAX];
	struct cgroup_map *m;
	uint64_t *ids, id;
	size_t nr;

	assert_non_null(mkdtemp(root));
	snprintf(p, sizeof(p), "%s/cgroup.procs", root);
	fclose(fopen(p, "w"));
	mk("/a", true);
	mk("/a/b", true);
	mk("/plain", false);

	assert_int_equal(cgroup_resolve(root, "/a/b", dir, sizeof(dir), rel, sizeof(rel)), 0);
	assert_string_equal(rel, "/a/b");
	assert_int_equal(cgroup_resolve(root, "a", dir, sizeof(dir), rel, sizeof(rel)), 0);
	assert_string_equal(rel, "/a");
	assert_int_equal(cgroup_resolve(root, "/", dir, sizeof(dir), rel, sizeof(rel)), 0);
	assert_string_equal(rel, "/");
	snprintf(p, sizeof(p), "%s/a/b", root);
	assert_int_equal(cgroup_resolve(root, p, dir, sizeof(dir), rel, sizeof(rel)), 0);
	assert_string_equal(rel, "/a/b");
	assert_int_equal(cgroup_resolve(root, "/nonexistent", dir, sizeof(dir), rel, sizeof(rel)),
			 -ENOENT);
	/* A directory without cgroup.procs is not a cgroup. */
	assert_int_equal(cgroup_resolve(root, "/plain", dir, sizeof(dir), rel, sizeof(rel)),
			 -ENOENT);
	assert_int_equal(cgroup_resolve(root, "/tmp", dir, sizeof(dir), rel, sizeof(rel)), -ENOENT);

	snprintf(p, sizeof(p), "%s/a", root);
	assert_int_equal(cgroup_id_of_dir(p, &id), 0);
	assert_int_equal(id, ino_of("/a"));
	assert_int_equal(cgroup_subtree_ids(p, &ids, &nr), 0);
	assert_int_equal(nr, 2);
	assert_true((ids[0] == ino_of("/a") && ids[1] == ino_of("/a/b")) ||
		    (ids[1] == ino_of("/a") && ids[0] == ino_of("/a/b")));
	free(ids);

	assert_int_equal(cgroup_map_new(root, &m), 0);
	assert_string_equal(cgroup_map_path(m, ino_of("/a/b")), "/a/b");
	assert_string_equal(cgroup_map_path(m, ino_of("")), "/");
	/* Created after the scan: found by the one rescan allowed per round. */
	mk("/late", true);
	id = ino_of("/late");
	assert_string_equal(cgroup_map_path(m, id), "/late");
	assert_null(cgroup_map_path(m, 1));
	/*
	 * Removed after it was seen: still named after the next rescan. (Made before the
	 * removal: unlike cgroup ids, this file system's inode numbers are reused.)
	 */
	mk("/later", true);
	snprintf(p, sizeof(p), "rm -rf %s/late", root);
	assert_int_equal(system(p), 0);
	cgroup_map_round(m);
	assert_string_equal(cgroup_map_path(m, ino_of("/later")), "/later");
	assert_string_equal(cgroup_map_path(m, id), "/late");
	cgroup_map_free(m);

	snprintf(p, sizeof(p), "rm -rf %s", root);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_container_ids),
		cmocka_unit_test(test_tree),
	};

	return cmocka_run_group_tests_name("cgroups", tests, NULL, NULL);
}
