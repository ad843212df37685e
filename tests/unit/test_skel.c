// SPDX-License-Identifier: GPL-2.0
/*
 * Loading and detaching (src/lib/bpf/skel.c), on this kernel with the probe object:
 * links destroyed side by side are all gone when the call returns (NULL entries
 * skipped), those handed to the background are gone once skel_detach() returns, and
 * IOSPAN_VERIFIER_STATS=1 prints what the verifier took for each program loaded.
 * Needs root (it loads programs); skips otherwise.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

/* Before cmocka.h, whose fail() macro would rename our fail(). */
#include "err.h"
#include "probe.skel.h"
#include "skel.h"
#include "testutil.h"

#define NR_LINKS 6

/* This process's open BPF links, by their descriptors' kind. */
static int open_links(void)
{
	char path[300], target[64];
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	ssize_t len;

	assert_non_null(d);
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		n += !strcmp(target, "anon_inode:bpf_link");
	}
	closedir(d);
	return n;
}

/* The probe object with only its raw tracepoint program, loaded. */
static struct probe_bpf *load_raw_tp(void)
{
	struct probe_bpf *s = probe_bpf__open();
	struct bpf_program *p;

	assert_non_null(s);
	bpf_object__for_each_program(p, s->obj)
		bpf_program__set_autoload(p, p == s->progs.probe_raw_tp);
	assert_int_equal(skel_load(s->skeleton), 0);
	return s;
}

static void attach(struct probe_bpf *s, struct bpf_link **links, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		links[i] = bpf_program__attach_raw_tracepoint(s->progs.probe_raw_tp,
							      "block_rq_complete");
		assert_non_null(links[i]);
	}
}

static void test_links_destroyed_together(void **state)
{
	struct bpf_link *links[NR_LINKS + 2] = {};
	struct probe_bpf *s;
	int before;

	if (geteuid())
		skip();
	s = load_raw_tp();
	before = open_links();
	attach(s, links + 1, NR_LINKS); /* links[0] and the last stay NULL */
	assert_int_equal(open_links(), before + NR_LINKS);
	links_destroy(links, NR_LINKS + 2);
	assert_int_equal(open_links(), before);
	probe_bpf__destroy(s);
}

static void test_background_destroys_end_at_detach(void **state)
{
	struct bpf_link *links[NR_LINKS];
	struct probe_bpf *s;
	int before, i;

	if (geteuid())
		skip();
	s = load_raw_tp();
	before = open_links();
	attach(s, links, NR_LINKS);
	for (i = 0; i < NR_LINKS; i++)
		link_destroy_async(links[i]);
	skel_detach(NULL, NULL, 0);
	assert_int_equal(open_links(), before);
	probe_bpf__destroy(s);
}

static void test_verifier_stats(void **state)
{
	char path[] = "/tmp/iospan-test-skel-XXXXXX", buf[4096];
	int fd, saved;
	ssize_t len;
	struct probe_bpf *s;

	if (geteuid())
		skip();
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	setenv("IOSPAN_VERIFIER_STATS", "1", 1);
	s = load_raw_tp();
	unsetenv("IOSPAN_VERIFIER_STATS");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	assert_true(len > 0);
	buf[len] = 0;
	/* One line, for the one program loaded, with a count the verifier gave. */
	assert_non_null(strstr(buf, "iospan: verifier: probe_raw_tp "));
	assert_null(strstr(buf, "probe_tracepoint"));
	assert_true(strtoul(strstr(buf, "probe_raw_tp") + 12, NULL, 10) > 0);
	probe_bpf__destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_links_destroyed_together),
		cmocka_unit_test(test_background_destroys_end_at_detach),
		cmocka_unit_test(test_verifier_stats),
	};

	return cmocka_run_group_tests_name("skel", tests, NULL, NULL);
}
