// SPDX-License-Identifier: GPL-2.0
/* watch's state as the metrics endpoint keeps it (src/export/metrics.c), no kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/metrics.h"
#include "testutil.h"

/*
 * Incidents on more disks than the table holds (loop devices come and go): every
 * incident is counted, the table stays within its bound, the excess under disk "other"
 * for each rule.
 */
static void test_incident_keys_are_bounded(void **state)
{
	static struct metrics m;
	uint64_t sum = 0, other = 0;
	char disk[16];
	int i, n = 3 * METRICS_MAX_INCIDENT_KEYS;

	assert_int_equal(metrics_init(&m, NULL, 0, 4), 0);
	for (i = 0; i < n; i++) {
		snprintf(disk, sizeof(disk), "loop%d", i);
		metrics_note_incident(&m, disk, (enum wt_metric)(i % WT_NR_METRICS), i);
	}
	metrics_note_incident(&m, NULL, WT_PSI_SOME, n); /* a system-wide rule */
	assert_true(m.nr_incident_keys <= METRICS_MAX_INCIDENT_KEYS);
	for (i = 0; i < m.nr_incident_keys; i++) {
		sum += m.incidents[i].count;
		if (!strcmp(m.incidents[i].disk, "other"))
			other += m.incidents[i].count;
	}
	assert_int_equal(sum, n + 1);
	assert_true(other > 0);
	assert_true(m.incident_open);
	metrics_note_incident_closed(&m);
	assert_false(m.incident_open);
	metrics_free(&m);
}

static struct metrics_cgroup_io cg_io(uint64_t cgid, const char *disk, uint64_t bytes)
{
	struct metrics_cgroup_io d = {.cgid = cgid};

	snprintf(d.cgroup, sizeof(d.cgroup), "/cg%llu", (unsigned long long)cgid);
	snprintf(d.disk, sizeof(d.disk), "%s", disk);
	d.disk_bytes[MCG_READ] = bytes;
	d.requests[MCG_READ] = 1;
	return d;
}

/* The bytes of cgroup @cgid on @disk in the totals (0: no series). */
static uint64_t cg_bytes(const struct metrics *m, uint64_t cgid, const char *disk)
{
	int i;

	for (i = 0; i < m->nr_cgroups; i++)
		if (m->cgroups[i].cgid == cgid && !strcmp(m->cgroups[i].disk, disk))
			return m->cgroups[i].disk_bytes[MCG_READ];
	return 0;
}

/*
 * At most max_cgroups cgroups have series (each on as many disks as it uses); a new one
 * adds to "other" of its disk unless it moved more than the least busy of them, which
 * then loses its series. Nothing is lost: the totals add up to what was noted.
 */
static void test_cgroups_are_bounded(void **state)
{
	static struct metrics m;
	struct metrics_cgroup_io d[3];
	uint64_t sum = 0;
	int i;

	assert_int_equal(metrics_init(&m, NULL, 0, 2), 0);
	m.cgroup2[0] = '\0'; /* no cgroup is ever gone */
	d[0] = cg_io(1, "sda", 100);
	d[1] = cg_io(1, "sdb", 50); /* the same cgroup on a second disk: its own place */
	d[2] = cg_io(2, "sda", 10);
	metrics_note_cgroups(&m, d, 3);
	d[0] = cg_io(3, "sda", 5); /* a third cgroup, quieter than both: other */
	metrics_note_cgroups(&m, d, 1);
	assert_int_equal(cg_bytes(&m, 1, "sda"), 100);
	assert_int_equal(cg_bytes(&m, 1, "sdb"), 50);
	assert_int_equal(cg_bytes(&m, 3, "sda"), 0);
	assert_int_equal(cg_bytes(&m, METRICS_CGID_OTHER, "sda"), 5);
	d[0] = cg_io(4, "sda", 1000); /* busier than cgroup 2: takes its place */
	metrics_note_cgroups(&m, d, 1);
	assert_int_equal(cg_bytes(&m, 4, "sda"), 1000);
	assert_int_equal(cg_bytes(&m, 2, "sda"), 0);
	d[0] = cg_io(1, "sda", 7); /* one with series keeps adding to them */
	metrics_note_cgroups(&m, d, 1);
	assert_int_equal(cg_bytes(&m, 1, "sda"), 107);
	for (i = 0; i < m.nr_cgroups; i++)
		sum += m.cgroups[i].disk_bytes[MCG_READ];
	/* Cgroup 2's 10 went with its series; the rest is all there. */
	assert_int_equal(sum, 100 + 50 + 5 + 1000 + 7);
	metrics_free(&m);
}

/* A cgroup directory @name in @dir, made now; its id (inode number) as a cgroup's. */
static uint64_t make_cgroup(const char *dir, const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

static void remove_cgroup(const char *dir, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(rmdir(path), 0);
}

/*
 * A cgroup whose directory is gone loses its series, one that lives keeps them; one
 * made anew at the same path (a restarted service, a new id) goes on in the same
 * series, never two with the same labels; every cgroup whose path is not known is one,
 * "unknown", per disk.
 */
static void test_cgroup_gone_or_anew(void **state)
{
	static struct metrics m;
	struct metrics_cgroup_io d[4];
	char dir[] = "/tmp/iospan-test-cgXXXXXX", from[128], to[128];
	uint64_t a, b, b2;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(metrics_init(&m, NULL, 0, 10), 0);
	snprintf(m.cgroup2, sizeof(m.cgroup2), "%s", dir);
	a = make_cgroup(dir, "a");
	b = make_cgroup(dir, "b");
	d[0] = cg_io(a, "sda", 1);
	snprintf(d[0].cgroup, sizeof(d[0].cgroup), "/a");
	d[1] = cg_io(b, "sda", 2);
	snprintf(d[1].cgroup, sizeof(d[1].cgroup), "/b");
	d[2] = cg_io(METRICS_CGID_UNKNOWN, "sda", 4);
	snprintf(d[2].cgroup, sizeof(d[2].cgroup), "unknown");
	d[3] = d[2];
	metrics_note_cgroups(&m, d, 4);
	assert_int_equal(m.nr_cgroups, 3);
	assert_int_equal(cg_bytes(&m, METRICS_CGID_UNKNOWN, "sda"), 8);
	/* b restarts: a new directory at the same path (made while the old one lives, so
	 * that its id differs, as a cgroup's always does), then its I/O. */
	b2 = make_cgroup(dir, "b.new");
	remove_cgroup(dir, "b");
	snprintf(from, sizeof(from), "%s/b.new", dir);
	snprintf(to, sizeof(to), "%s/b", dir);
	assert_int_equal(rename(from, to), 0);
	d[1].cgid = b2;
	metrics_note_cgroups(&m, &d[1], 1);
	assert_int_equal(cg_bytes(&m, b2, "sda"), 4);
	assert_int_equal(cg_bytes(&m, b, "sda"), 0);
	assert_int_equal(m.nr_cgroups, 3);
	/* b ends for good; a and "unknown" stay, idle. */
	remove_cgroup(dir, "b");
	metrics_note_cgroups(&m, NULL, 0);
	assert_int_equal(m.nr_cgroups, 2);
	assert_int_equal(cg_bytes(&m, a, "sda"), 1);
	assert_int_equal(cg_bytes(&m, METRICS_CGID_UNKNOWN, "sda"), 8);
	remove_cgroup(dir, "a");
	assert_int_equal(rmdir(dir), 0);
	metrics_free(&m);
}

/* A writer that keeps one histogram: @want's family, its first series with @stage. */
struct hist_catch {
	struct mwriter w;
	const char *family, *want, *stage;
	uint64_t le[MW_MAX_BUCKETS], cum[MW_MAX_BUCKETS], count;
	struct mw_num sum;
	int le_scale, nr_le;
	bool found;
};

static void hc_family(struct mwriter *w, const char *name, enum prom_type type, const char *help)
{
	((struct hist_catch *)w)->family = name;
}

static void hc_sample(struct mwriter *w, const struct prom_label *l, int nr, struct mw_num v)
{
}

static void hc_histogram(struct mwriter *w, const struct prom_label *l, int nr, const uint64_t *le,
			 int le_scale, const uint64_t *cum, int nr_le, struct mw_num sum,
			 uint64_t count)
{
	struct hist_catch *h = (struct hist_catch *)w;

	if (h->found || strcmp(h->family, h->want) || nr < 3 || strcmp(l[1].value, "read") ||
	    strcmp(l[2].value, h->stage))
		return;
	h->found = true;
	memcpy(h->le, le, nr_le * sizeof(*le));
	memcpy(h->cum, cum, nr_le * sizeof(*cum));
	h->nr_le = nr_le;
	h->le_scale = le_scale;
	h->sum = sum;
	h->count = count;
}

static const struct mwriter_ops hc_ops = {hc_family, hc_sample, hc_histogram};

/*
 * The kernel's log2 slots as exported, to both writers alike: bounds 2^k ns exact
 * (1.024 us to 34.4 s), a slot below the first bound in the first bucket, one past the
 * last in the count (+Inf) only; the sum in ns, exact.
 */
static void test_latency_buckets(void **state)
{
	static struct metrics m;
	static struct metrics_dhist d;
	struct hist_catch h = {
		.w = {&hc_ops}, .want = "iospan_disk_latency_seconds", .stage = "q2c"};

	assert_int_equal(metrics_init(&m, NULL, 0, 4), 0);
	assert_int_equal(metrics_write(&m, &h.w), 0); /* the disks of /proc/diskstats */
	if (!m.nr_disks) {
		metrics_free(&m);
		skip();
	}
	d.major = m.disks[0].last.major;
	d.minor = m.disks[0].last.minor;
	d.op = TOP_DH_READ;
	d.h.q2c[9] = 1;	 /* (256, 512] ns: below the first bound */
	d.h.q2c[10] = 2; /* (512, 1024] ns */
	d.h.q2c[35] = 1; /* the last bound, 2^35 ns */
	d.h.q2c[36] = 4; /* past it */
	d.h.q2c_sum = 123456789;
	metrics_note_disk_hists(&m, &d, 1);
	assert_int_equal(metrics_write(&m, &h.w), 0);
	assert_true(h.found);
	assert_int_equal(h.nr_le, 26);
	assert_int_equal(h.le_scale, 9);
	assert_int_equal(h.le[0], 1024);
	assert_int_equal(h.le[25], 1ULL << 35);
	assert_int_equal(h.cum[0], 3);
	assert_int_equal(h.cum[24], 3);
	assert_int_equal(h.cum[25], 4);
	assert_int_equal(h.count, 8);
	assert_int_equal(h.sum.n, 123456789);
	assert_int_equal(h.sum.scale, 9);
	metrics_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_incident_keys_are_bounded),
		cmocka_unit_test(test_cgroups_are_bounded),
		cmocka_unit_test(test_cgroup_gone_or_anew),
		cmocka_unit_test(test_latency_buckets),
	};

	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
