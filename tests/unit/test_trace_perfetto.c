// SPDX-License-Identifier: GPL-2.0
/* trace's Perfetto export: a request's stage spans nest inside its own span. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/trace/trace.h" /* before cmocka: its fail() macro */
#include "perfetto.h"
#include "testutil.h"

static char *export_one(const struct trace_rec *r)
{
	char path[] = "/tmp/iospan-trace-perfetto-XXXXXX";
	/* What the collector resolves per record: a reader of a file whose path is not known. */
	static struct trace_names n = {.owner_known = true,
				       .name = "reader",
				       .cgroup = "/",
				       .group = "/",
				       .offcpu_from = "counters"};
	struct trace_cmd t = {0};
	char *buf = calloc(1, 65536);
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(perfetto_open(&t.pf, path), 0);
	trace_perfetto_write(&t, r, &n);
	trace_perfetto_free_lanes(&t);
	assert_int_equal(perfetto_close(t.pf), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fread(buf, 1, 65535, f) > 0);
	fclose(f);
	unlink(path);
	return buf;
}

/* A read of a block device file with one bio, all times in ns. */
static void one_bio_read(struct trace_rec *r, uint64_t end, uint64_t c)
{
	memset(r, 0, sizeof(*r));
	r->op = TRACE_OP_PREAD64;
	r->flags = TRACE_F_BLKDEV;
	r->tid = 7;
	strcpy(r->comm, "reader");
	r->start = 1000;
	r->end = end;
	r->first_q = r->crit_q = 2000;
	r->crit_g = 3000;
	r->crit_i = 4000;
	r->crit_d = 5000;
	r->last_c = c;
	r->nr_queued = r->nr_done = r->nr_bios = 1;
	r->bios[0] = (struct trace_bio){
		.q = 2000, .g = 3000, .i = 4000, .d = 5000, .c = c, .bytes = 4096};
}

static void test_stages_inside_request(void **state)
{
	struct trace_rec *r = calloc(1, sizeof(*r));
	char *text;

	one_bio_read(r, 9000, 8000);
	text = export_one(r);
	assert_non_null(strstr(text, "\"name\":\"block (q2c)\",\"cat\":\"stage\",\"ph\":\"X\","
				     "\"ts\":2.000,\"pid\":0,\"tid\":7,\"dur\":6.000"));
	assert_non_null(strstr(text, "\"name\":\"post_block\""));
	free(text);
	free(r);
}

/*
 * Its completion stamped after its end (on another CPU, racing the end): the request
 * has no block breakdown, so no stage span may reach past it (seen on xfs, a fault).
 */
static void test_late_completion_has_no_stages(void **state)
{
	struct trace_rec *r = calloc(1, sizeof(*r));
	char *text;

	one_bio_read(r, 9000, 9165);
	assert_false(trace_rec_has_block_stages(r));
	text = export_one(r);
	assert_null(strstr(text, "\"cat\":\"stage\""));
	/* The bio keeps its span, on a lane of its own. */
	assert_non_null(strstr(text, "\"cat\":\"bio\",\"ph\":\"X\",\"ts\":2.000"));
	free(text);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stages_inside_request),
		cmocka_unit_test(test_late_completion_has_no_stages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
