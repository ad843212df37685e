// SPDX-License-Identifier: GPL-2.0
/*
 * The ring buffer consumer (src/lib/bpf/rbuf.c) against the kernel's ring buffer: a
 * test program (tests/unit/bpf/rbuf_emit.bpf.c), run with BPF_PROG_TEST_RUN, sends
 * records through the iospan BPF helpers; the consumer must hand each well-formed one
 * to its handler once and in order, count the others as malformed, count what the
 * buffer had no room for, give the caller its turn back in a long read, read records
 * sent without a wake-up, and stop at a handler's error. Needs root (CAP_BPF).
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rbuf.h"
#include "rbuf_emit.skel.h"

#define EMIT_TYPE 7
#define EMIT_SIZE 16 /* struct emit_rec: the header and a sequence number */

struct seen {
	uint64_t handled;
	uint64_t next_seq; /* records must come in order */
	uint64_t out_of_order;
	uint64_t fail_at; /* 0: never; else the handler fails on this record (1-based) */
};

static int on_emit(void *arg, const void *rec, uint32_t size)
{
	struct seen *s = arg;
	uint64_t seq;

	memcpy(&seq, (const char *)rec + sizeof(struct rb_hdr), sizeof(seq));
	s->handled++;
	if (size != EMIT_SIZE || seq != s->next_seq)
		s->out_of_order++;
	s->next_seq = seq + 1;
	return s->fail_at && s->handled == s->fail_at ? -EIO : 0;
}

static const struct rbuf_handler handlers[] = {
	{.type = EMIT_TYPE, .min_size = EMIT_SIZE, .fn = on_emit},
};

struct fixture {
	struct rbuf_emit_bpf *skel;
	struct rbuf *rb;
	struct seen seen;
};

static int setup(void **state)
{
	static struct fixture f;

	memset(&f, 0, sizeof(f));
	*state = &f;
	if (geteuid())
		return 0; /* each test skips */
	f.skel = rbuf_emit_bpf__open_and_load();
	if (!f.skel)
		return -1;
	return rbuf_new(bpf_map__fd(f.skel->maps.events), bpf_map__fd(f.skel->maps.events_counts),
			handlers, 1, &f.seen, &f.rb);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	rbuf_free(f->rb);
	rbuf_emit_bpf__destroy(f->skel);
	return 0;
}

/* One run of the test program with these numbers of records of each kind. */
static void emit(struct fixture *f, uint32_t valid, uint32_t bad_type, uint32_t too_short,
		 uint32_t too_long)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	f->skel->bss->nr_valid = valid;
	f->skel->bss->nr_bad_type = bad_type;
	f->skel->bss->nr_too_short = too_short;
	f->skel->bss->nr_too_long = too_long;
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(f->skel->progs.emit), &opts), 0);
}

static struct fixture *fixture_of(void **state)
{
	struct fixture *f = *state;

	if (!f->skel)
		skip(); /* not root: the suite runs it as root */
	return f;
}

static void test_delivers_each_record_once_in_order(void **state)
{
	struct fixture *f = fixture_of(state);
	struct rbuf_stats st;

	emit(f, 100, 0, 0, 0);
	assert_int_equal(rbuf_poll(f->rb, 100, 0), 0);
	assert_int_equal(f->seen.handled, 100);
	assert_int_equal(f->seen.out_of_order, 0);
	assert_int_equal(rbuf_stats(f->rb, &st), 0);
	assert_int_equal(st.sent, 100);
	assert_int_equal(st.received, 100);
	assert_int_equal(st.malformed, 0);
	assert_int_equal(st.lost, 0);
}

static void test_counts_malformed_records(void **state)
{
	struct fixture *f = fixture_of(state);
	struct rbuf_stats st;

	/* Between two good ones: a type nobody takes, a size below the type's, above the record. */
	emit(f, 1, 3, 2, 4);
	emit(f, 1, 0, 0, 0);
	assert_int_equal(rbuf_poll(f->rb, 100, 0), 0);
	assert_int_equal(f->seen.handled, 2);
	assert_int_equal(f->seen.out_of_order, 1); /* seq 0 twice: one per run */
	assert_int_equal(rbuf_stats(f->rb, &st), 0);
	assert_int_equal(st.sent, 11);
	assert_int_equal(st.received, 11);
	assert_int_equal(st.malformed, 9);
}

static void test_long_read_gives_turn_back(void **state)
{
	struct fixture *f = fixture_of(state);
	int polls = 0;

	emit(f, 1000, 0, 0, 0);
	/* A deadline already past: each read ends early, after some records. */
	assert_int_equal(rbuf_poll(f->rb, 100, 1), 0);
	assert_true(f->seen.handled > 0);
	assert_true(f->seen.handled < 1000);
	while (f->seen.handled < 1000 && polls++ < 1000)
		assert_int_equal(rbuf_poll(f->rb, 100, 1), 0);
	assert_int_equal(f->seen.handled, 1000);
	assert_int_equal(f->seen.out_of_order, 0);
}

static void test_reads_records_sent_without_wakeup(void **state)
{
	struct fixture *f = fixture_of(state);
	struct timespec ts;

	/* A wake-up "just made" an hour ahead: none of these records wakes the reader. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	f->skel->bss->events_woken_ns =
		(uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec + 3600ULL * 1000000000ULL;
	f->skel->bss->batched = 1;
	emit(f, 5, 0, 0, 0);
	f->skel->bss->batched = 0;
	assert_int_equal(rbuf_poll(f->rb, 20, 0), 0);
	assert_int_equal(f->seen.handled, 5);
}

static void test_handler_error_stops_the_read(void **state)
{
	struct fixture *f = fixture_of(state);

	emit(f, 50, 0, 0, 0);
	f->seen.fail_at = 10;
	assert_int_equal(rbuf_poll(f->rb, 100, 0), -EIO);
	assert_int_equal(f->seen.handled, 10);
	f->seen.fail_at = 0;
	assert_int_equal(rbuf_poll(f->rb, 100, 0), 0);
	assert_int_equal(f->seen.handled, 50);
	assert_int_equal(f->seen.out_of_order, 0);
}

static void test_full_buffer_counts_lost_and_drain_reads_the_rest(void **state)
{
	struct fixture *f = fixture_of(state);
	struct rbuf_stats st;

	/* 4,096 records of 24 bytes (16 and the kernel's 8-byte header) in 64 KiB. */
	emit(f, 4096, 0, 0, 0);
	assert_int_equal(rbuf_drain(f->rb, 100), 0);
	assert_int_equal(rbuf_stats(f->rb, &st), 0);
	assert_true(st.lost > 0);
	assert_int_equal(st.sent + st.lost, 4096);
	assert_int_equal(st.received, st.sent);
	assert_int_equal(f->seen.handled, st.sent);
	assert_int_equal(f->seen.out_of_order, 0); /* the first ones fit, the rest were lost */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_delivers_each_record_once_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_counts_malformed_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_read_gives_turn_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_records_sent_without_wakeup, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_handler_error_stops_the_read, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_full_buffer_counts_lost_and_drain_reads_the_rest, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
