// SPDX-License-Identifier: GPL-2.0
/*
 * A VM's requests matched across guest, QEMU and host (collect/vm.h): QEMU's log lines,
 * the clock put on the host's, parts that add up, and nothing matched by guess.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "collect/vm.h"

#define US 1000LL
/* The guest's clock runs this far ahead of the host's. */
#define OFFSET (123456789LL * US)

/*
 * A guest read of @sector at guest time @t (its syscall start), its QEMU request and
 * the host read that served it: QEMU takes it up 40 us after the guest's submission,
 * the host read takes @host_us, QEMU completes 20 us after it, the guest sees it 30 us
 * later.
 */
static void add_io(struct vm_merge *m, uint64_t sector, int64_t t, int64_t host_us)
{
	struct vm_guest_req *g = &m->g[m->nr_g++];
	struct vm_qemu_req *q = &m->q[m->nr_q++];
	struct vm_host_io *h = &m->h[m->nr_h++];
	int64_t ds = t + 50 * US, take = ds + 40 * US - OFFSET;

	memset(g, 0, sizeof(*g));
	strcpy(g->disk, "vdb");
	g->sector = sector;
	g->bio_bytes = 4096;
	g->start = t;
	g->q = t + 10 * US;
	g->d = t + 50 * US;
	g->ds = ds;
	*h = (struct vm_host_io){.offset = sector * 512,
				 .bytes = 4096,
				 .start = take + 15 * US,
				 .end = take + 15 * US + host_us * US};
	*q = (struct vm_qemu_req){.id = 0x1000 + sector,
				  .vdev = 0xabc,
				  .sector = sector,
				  .nsectors = 8,
				  .take = take,
				  .done = h->end + 20 * US};
	g->dc = q->done + OFFSET + 30 * US;
	g->c = g->dc + 5 * US;
	g->end = g->c + 7 * US;
}

static void setup(struct vm_merge *m, int n)
{
	memset(m, 0, sizeof(*m));
	m->g = calloc(n, sizeof(*m->g));
	m->q = calloc(n, sizeof(*m->q));
	m->h = calloc(n, sizeof(*m->h));
}

static void test_parts_add_up(void **state)
{
	struct vm_merge m;
	int64_t p[VP_NR], sum = 0;
	int i;

	setup(&m, 8);
	for (i = 0; i < 4; i++)
		add_io(&m, 8 * i, 1000000 * US + i * 10000 * US, i == 2 ? 50000 : 100);
	assert_int_equal(vm_match_host(&m, 0), 0);
	assert_int_equal(m.vdev, 0xabc);
	assert_int_equal(vm_fit_clock(&m), 0);
	assert_true(m.clock.ok);
	assert_int_equal(m.clock.pairs, 4);
	/* Each request bounds the offset by 40 us below and 30 us above: 70 us wide. */
	assert_true(m.clock.offset >= OFFSET - 40 * US && m.clock.offset <= OFFSET + 30 * US);
	assert_int_equal(m.clock.err, 35 * US);
	assert_int_equal(vm_match_guest(&m, "vdb"), 0);
	assert_int_equal(m.count[VM_MATCHED], 4);
	assert_true(vm_parts(&m, 2, p));
	for (i = 0; i < VP_NR; i++)
		sum += p[i];
	assert_int_equal(sum, m.g[2].end - m.g[2].start);
	assert_int_equal(p[VP_HOST], 50000 * US);
	assert_int_equal(p[VP_QEMU_IN], 15 * US);
	assert_int_equal(p[VP_QEMU_OUT], 20 * US);
	/* The clock's error is in the two crossings: 40 and 30 us, within +-35 us. */
	assert_true(llabs(p[VP_TO_QEMU] - 40 * US) <= m.clock.err);
	assert_true(llabs(p[VP_TO_GUEST] - 30 * US) <= m.clock.err);
	assert_int_equal(p[VP_PRE_BLOCK], 10 * US);
	vm_merge_free(&m);
}

static void test_nothing_by_guess(void **state)
{
	struct vm_merge m;

	setup(&m, 8);
	add_io(&m, 0, 1000000 * US, 100);
	add_io(&m, 8, 1010000 * US, 100);
	/* Two guest reads of one sector, close in time: two QEMU requests would do. */
	add_io(&m, 64, 1020000 * US, 100);
	add_io(&m, 64, 1020010 * US, 100);
	/* A guest read QEMU's log lacks. */
	add_io(&m, 128, 1030000 * US, 100);
	m.nr_q--;
	assert_int_equal(vm_match_host(&m, 0), 0);
	assert_int_equal(vm_fit_clock(&m), 0);
	assert_int_equal(m.clock.pairs, 2);
	assert_int_equal(vm_match_guest(&m, NULL), 0);
	assert_int_equal(m.count[VM_MATCHED], 2);
	assert_int_equal(m.count[VM_AMBIGUOUS], 2);
	assert_int_equal(m.count[VM_NO_QEMU], 1);
	vm_merge_free(&m);
}

static void test_different_runs(void **state)
{
	struct vm_merge m;

	setup(&m, 4);
	add_io(&m, 0, 1000000 * US, 100);
	add_io(&m, 8, 1010000 * US, 100);
	/* The second guest request 5 ms later than its QEMU request allows. */
	m.g[1].ds += 5000 * US;
	m.g[1].d += 5000 * US;
	m.g[1].q += 5000 * US;
	assert_int_equal(vm_match_host(&m, 0), 0);
	assert_int_equal(vm_fit_clock(&m), -ERANGE);
	assert_false(m.clock.ok);
	vm_merge_free(&m);
	/* No sector in common: nothing to align on. */
	setup(&m, 2);
	add_io(&m, 0, 1000000 * US, 100);
	m.g[0].sector = 4096;
	assert_int_equal(vm_match_host(&m, 0), 0);
	assert_int_equal(vm_fit_clock(&m), -EINVAL);
	vm_merge_free(&m);
}

static void test_qemu_lines(void **state)
{
	uint64_t vdev, req, a, b;
	int64_t real;
	uint32_t tid;
	char ev[64];

	assert_int_equal(vm_qemu_line("15789@1796047045.242745:virtio_blk_handle_read vdev "
				      "0x55fbbff82790 req 0x55fbc01f62c0 sector 0 nsectors 1\n",
				      &real, &tid, ev, sizeof(ev), &vdev, &req, &a, &b),
			 1);
	assert_int_equal(real, 1796047045242745000LL);
	assert_int_equal(tid, 15789);
	assert_string_equal(ev, "virtio_blk_handle_read");
	assert_int_equal(vdev, 0x55fbbff82790ULL);
	assert_int_equal(req, 0x55fbc01f62c0ULL);
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	assert_int_equal(vm_qemu_line("15789@1796047045.243098:virtio_blk_req_complete vdev "
				      "0x55fbbff82790 req 0x55fbc01f62c0 status 0\n",
				      &real, &tid, ev, sizeof(ev), &vdev, &req, &a, &b),
			 1);
	assert_string_equal(ev, "virtio_blk_req_complete");
	/* Other events, other lines: not requests. */
	assert_int_equal(vm_qemu_line("15791@1796047045.180479:virtio_blk_data_plane_start "
				      "dataplane 0x55fbbffb6de0\n",
				      &real, &tid, ev, sizeof(ev), &vdev, &req, &a, &b),
			 0);
	assert_int_equal(vm_qemu_line("qemu-system-x86_64: warning: something\n", &real, &tid, ev,
				      sizeof(ev), &vdev, &req, &a, &b),
			 0);
	/* Cut, or without the time QEMU prints with -msg timestamp=on. */
	assert_int_equal(vm_qemu_line("15789@1796047045.242745:virtio_blk_handle_read vdev "
				      "0x55fbbff82790 req\n",
				      &real, &tid, ev, sizeof(ev), &vdev, &req, &a, &b),
			 -EINVAL);
	assert_int_equal(vm_qemu_line("virtio_blk_handle_read vdev 0x1 req 0x2 sector 0 "
				      "nsectors 1\n",
				      &real, &tid, ev, sizeof(ev), &vdev, &req, &a, &b),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parts_add_up),
		cmocka_unit_test(test_nothing_by_guess),
		cmocka_unit_test(test_different_runs),
		cmocka_unit_test(test_qemu_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
