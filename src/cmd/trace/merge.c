// SPDX-License-Identifier: GPL-2.0
/*
 * iospan trace --merge-guest: a guest's virtio-blk requests followed through QEMU to
 * the host's disk, from three records (collect/vm.h): each slow guest request with its
 * way, as text, JSON lines and a Perfetto file with guest, QEMU and host tracks.
 */
#include "iospan.h"
#include "trace.h"
#include "collect/vm.h"

/* Perfetto processes: one each for the guest, QEMU and the host's I/O. */
enum { PF_GUEST = 1, PF_QEMU = 2, PF_HOST = 3 };

static void text_request(const struct vm_merge *m, size_t i, const int64_t p[VP_NR])
{
	const struct vm_guest_req *g = &m->g[i];
	const struct vm_qemu_req *q = &m->q[m->g_qemu[i]];
	int first = m->q_host_first[m->g_qemu[i]], last = m->q_host_last[m->g_qemu[i]];
	const struct vm_host_io *h = &m->h[first];
	char b[VP_NR + 4][UNITS_BUF];
	int k;

	printf("guest %s %s pid %u tid %u total %s: %s sector %" PRIu64 " + %" PRIu64 " %s\n",
	       printable(g->op), printable(g->comm), g->pid, g->tid,
	       trace_fmt_dur(g->end - g->start, b[0], sizeof(b[0])), printable(g->disk), g->sector,
	       g->bio_bytes / 512, g->write ? "write" : "read");
	printf("  guest    pre_block %s block %s\n",
	       trace_fmt_dur(p[VP_PRE_BLOCK], b[0], sizeof(b[0])),
	       trace_fmt_dur(p[VP_BLOCK], b[1], sizeof(b[1])));
	printf("  qemu     to_qemu %s qemu_in %s [req 0x%" PRIx64 " thread %u] qemu_out %s "
	       "to_guest %s\n",
	       trace_fmt_dur(p[VP_TO_QEMU], b[0], sizeof(b[0])),
	       trace_fmt_dur(p[VP_QEMU_IN], b[1], sizeof(b[1])), q->id, q->tid,
	       trace_fmt_dur(p[VP_QEMU_OUT], b[2], sizeof(b[2])),
	       trace_fmt_dur(p[VP_TO_GUEST], b[3], sizeof(b[3])));
	printf("  host     %s %s tid %u offset %" PRId64 " bytes %" PRIu64, printable(h->op),
	       trace_fmt_dur(p[VP_HOST], b[0], sizeof(b[0])), h->tid, h->offset, h->bytes);
	if (first != last)
		printf(" (and %d more)", last - first);
	if (h->q2c >= 0)
		printf(": pre_block %s throttle %s q2c %s (d2c %s) post_block %s",
		       trace_fmt_dur(h->pre_block, b[1], sizeof(b[1])),
		       trace_fmt_dur(h->throttle, b[2], sizeof(b[2])),
		       trace_fmt_dur(h->q2c, b[3], sizeof(b[3])),
		       trace_fmt_dur(h->d2c, b[4], sizeof(b[4])),
		       trace_fmt_dur(h->post_block, b[5], sizeof(b[5])));
	printf("\n  guest    drv_out %s post_block %s\n",
	       trace_fmt_dur(p[VP_GUEST_DONE], b[0], sizeof(b[0])),
	       trace_fmt_dur(p[VP_POST_BLOCK], b[1], sizeof(b[1])));
	printf("  parts");
	for (k = 0; k < VP_NR; k++)
		printf(" %s %s", vm_part_name(k), trace_fmt_dur(p[k], b[k], sizeof(b[k])));
	printf("\n\n");
}

static void json_request(struct jw *jw, const struct vm_merge *m, size_t i, const int64_t p[VP_NR])
{
	const struct vm_guest_req *g = &m->g[i];
	const struct vm_qemu_req *q = &m->q[m->g_qemu[i]];
	int first = m->q_host_first[m->g_qemu[i]], last = m->q_host_last[m->g_qemu[i]];
	char id[32];
	int k;

	jw_start_object(jw);
	jw_kv_string(jw, "type", "vm_request");
	jw_kv_string(jw, "op", g->op);
	jw_kv_string(jw, "comm", g->comm);
	jw_kv_uint(jw, "pid", g->pid);
	jw_kv_uint(jw, "tid", g->tid);
	jw_kv_uint(jw, "guest_line", g->line);
	jw_kv_int(jw, "guest_start_mono_ns", g->start);
	jw_kv_float(jw, "total_us", (g->end - g->start) / 1e3, 3);
	jw_kv_string(jw, "disk", g->disk);
	jw_kv_uint(jw, "sector", g->sector);
	jw_kv_uint(jw, "bytes", g->bio_bytes);
	jw_kv_string(jw, "dir", g->write ? "write" : "read");
	jw_kv_array(jw, "parts");
	for (k = 0; k < VP_NR; k++) {
		jw_start_array(jw);
		jw_string(jw, vm_part_name(k));
		jw_float(jw, p[k] / 1e3, 3);
		jw_end_array(jw);
	}
	jw_end_array(jw);
	jw_kv_object(jw, "qemu");
	snprintf(id, sizeof(id), "0x%" PRIx64, q->id);
	jw_kv_string(jw, "req", id);
	jw_kv_uint(jw, "thread", q->tid);
	jw_kv_uint(jw, "log_line", q->line);
	jw_kv_int(jw, "status", q->status);
	jw_end_object(jw);
	jw_kv_array(jw, "host_io");
	for (k = first; k <= last; k++) {
		const struct vm_host_io *h = &m->h[k];

		if (!vm_host_serves(m, q, h))
			continue;
		jw_start_object(jw);
		jw_kv_string(jw, "op", h->op);
		jw_kv_uint(jw, "tid", h->tid);
		jw_kv_int(jw, "offset", h->offset);
		jw_kv_uint(jw, "bytes", h->bytes);
		jw_kv_uint(jw, "host_line", h->line);
		jw_kv_float(jw, "total_us", (h->end - h->start) / 1e3, 3);
		if (h->q2c >= 0) {
			jw_kv_float(jw, "pre_block_us", h->pre_block / 1e3, 3);
			jw_kv_float(jw, "throttle_us", h->throttle / 1e3, 3);
			jw_kv_float(jw, "q2c_us", h->q2c / 1e3, 3);
			jw_kv_float(jw, "d2c_us", h->d2c / 1e3, 3);
			jw_kv_float(jw, "post_block_us", h->post_block / 1e3, 3);
		}
		jw_end_object(jw);
	}
	jw_end_array(jw);
	jw_end_object(jw);
}

/* The request on the three tracks, on the guest's clock (the host's moved by the offset). */
static void perfetto_request(struct perfetto *pf, const struct vm_merge *m, size_t i,
			     const int64_t p[VP_NR])
{
	const struct vm_guest_req *g = &m->g[i];
	const struct vm_qemu_req *q = &m->q[m->g_qemu[i]];
	int first = m->q_host_first[m->g_qemu[i]], last = m->q_host_last[m->g_qemu[i]];
	int64_t off = m->clock.offset, t = g->start;
	struct jw *jw;
	int k;

	perfetto_thread(pf, PF_GUEST, g->tid, g->comm);
	jw = perfetto_span(pf, g->op, "guest", PF_GUEST, g->tid, g->start, g->end - g->start);
	jw_kv_uint(jw, "sector", g->sector);
	jw_kv_uint(jw, "bytes", g->bio_bytes);
	perfetto_end(pf);
	for (k = 0; k < VP_NR; k++) {
		if (k == VP_TO_QEMU || k == VP_QEMU_IN || k == VP_HOST || k == VP_QEMU_OUT ||
		    k == VP_TO_GUEST)
			perfetto_slice(pf, vm_part_name(k), "vm", PF_GUEST, g->tid, t, t + p[k]);
		else
			perfetto_slice(pf, vm_part_name(k), "guest", PF_GUEST, g->tid, t, t + p[k]);
		t += p[k];
	}
	perfetto_thread(pf, PF_QEMU, q->tid, "qemu");
	jw = perfetto_span(pf, q->write ? "virtio-blk write" : "virtio-blk read", "qemu", PF_QEMU,
			   q->tid, q->take + off, q->done - q->take);
	jw_kv_uint(jw, "sector", q->sector);
	jw_kv_uint(jw, "nsectors", q->nsectors);
	perfetto_end(pf);
	for (k = first; k <= last; k++) {
		const struct vm_host_io *h = &m->h[k];

		if (!vm_host_serves(m, q, h))
			continue;
		perfetto_thread(pf, PF_HOST, h->tid, "qemu io");
		jw = perfetto_span(pf, h->op, "host", PF_HOST, h->tid, h->start + off,
				   h->end - h->start);
		jw_kv_int(jw, "offset", h->offset);
		jw_kv_uint(jw, "bytes", h->bytes);
		perfetto_end(pf);
		if (h->throttle > 0)
			perfetto_slice(pf, "throttle", "host", PF_HOST, h->tid,
				       h->start + off + h->pre_block,
				       h->start + off + h->pre_block + h->throttle);
	}
}

static void summary(struct jw *jw, const struct vm_merge *m, size_t shown,
		    const struct vm_read_stats rs[3])
{
	static const char *const what[3] = {"guest", "qemu", "host"};
	int k;

	if (jw) {
		jw_start_object(jw);
		jw_kv_string(jw, "type", "vm_summary");
		jw_kv_bool(jw, "clock_ok", m->clock.ok);
		jw_kv_float(jw, "clock_offset_us", m->clock.offset / 1e3, 3);
		jw_kv_float(jw, "clock_error_us", m->clock.err / 1e3, 3);
		jw_kv_uint(jw, "clock_pairs", m->clock.pairs);
		jw_kv_uint(jw, "guest_requests", m->nr_g);
		jw_kv_uint(jw, "qemu_requests", m->nr_q);
		jw_kv_uint(jw, "host_ios", m->nr_h);
		jw_kv_uint(jw, "shown", shown);
		jw_kv_object(jw, "guest_requests_by_match");
		for (k = 0; k < VM_NR_WHY; k++)
			jw_kv_uint(jw, vm_why_name(k), m->count[k]);
		jw_end_object(jw);
		for (k = 0; k < 3; k++) {
			char key[32];

			snprintf(key, sizeof(key), "%s_lines_malformed", what[k]);
			jw_kv_uint(jw, key, rs[k].malformed);
		}
		jw_end_object(jw);
		return;
	}
	printf("iospan trace --merge-guest: %zu guest requests, %zu QEMU requests, %zu host "
	       "I/Os; clock: guest = host %+.3f ms, +-%.3f ms (from %d requests); matched %" PRIu64
	       ", shown %zu",
	       m->nr_g, m->nr_q, m->nr_h, m->clock.offset / 1e6, m->clock.err / 1e6, m->clock.pairs,
	       m->count[VM_MATCHED], shown);
	for (k = VM_NOT_DISK; k < VM_NR_WHY; k++)
		if (m->count[k])
			printf(", %s %" PRIu64, vm_why_name(k), m->count[k]);
	for (k = 0; k < 3; k++)
		if (rs[k].malformed)
			printf(", %s malformed lines %" PRIu64, what[k], rs[k].malformed);
	printf("\n");
}

int trace_merge_run(const struct trace_merge_opts *o, uint64_t threshold_ns,
		    const char *perfetto_path)
{
	struct vm_read_stats rs[3] = {};
	struct vm_merge m = {};
	struct perfetto *pf = NULL;
	struct jw *jw = NULL;
	int64_t mono_to_real, p[VP_NR];
	size_t i, shown = 0;
	int err;

	if (perfetto_path) {
		err = perfetto_open(&pf, perfetto_path);
		if (err) {
			err = fail(err, "cannot write %s: %s", perfetto_path, strerror(-err));
			goto cleanup;
		}
	}
	err = vm_read_guest(o->guest, o->guest_disk, &m, &rs[0]) ?:
		      vm_read_host(o->host, o->image, &m, &rs[2], &mono_to_real);
	if (err)
		goto cleanup;
	if (!m.nr_g) {
		err = fail(-EINVAL,
			   "the guest trace '%s' has no request with a bio%s%s (%" PRIu64
			   " lines, %" PRIu64 " malformed): give the guest's iospan trace --json",
			   o->guest, o->guest_disk ? " on " : "", o->guest_disk ?: "", rs[0].lines,
			   rs[0].malformed);
		goto cleanup;
	}
	if (!m.nr_h || !mono_to_real) {
		err = fail(-EINVAL,
			   "the host trace '%s' has no read or write of %s (%" PRIu64
			   " lines, %" PRIu64 " malformed): give the host's iospan trace --json "
			   "--file IMAGE",
			   o->host, o->image ?: "any file", rs[2].lines, rs[2].malformed);
		goto cleanup;
	}
	err = vm_read_qemu(o->qemu_log, mono_to_real, &m, &rs[1]);
	if (err)
		goto cleanup;
	err = vm_match_host(&m, o->image_offset);
	if (err)
		goto cleanup;
	if (!m.vdev) {
		err = fail(-EINVAL,
			   "no QEMU request in '%s' has a read or write of the image in "
			   "the host trace '%s' within its span: of another run, or another "
			   "image?",
			   o->qemu_log, o->host);
		goto cleanup;
	}
	err = vm_fit_clock(&m);
	if (err == -ERANGE) {
		err = fail(err,
			   "the guest trace '%s' and QEMU's log '%s' do not agree: no one "
			   "clock offset puts every guest request around its QEMU request (of "
			   "different runs?)",
			   o->guest, o->qemu_log);
		goto cleanup;
	}
	if (err) {
		err = fail(err,
			   "no guest request in '%s' has exactly one QEMU request of its "
			   "sector, length and direction in '%s': nothing to align the clocks on "
			   "(of different runs, or another disk: --guest-disk)",
			   o->guest, o->qemu_log);
		goto cleanup;
	}
	err = vm_match_guest(&m, o->guest_disk);
	if (err)
		goto cleanup;
	if (gopts.json) {
		jw = jw_new(stdout);
		if (!jw) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
	}
	if (pf) {
		perfetto_process(pf, PF_GUEST, "guest");
		perfetto_process(pf, PF_QEMU, "QEMU");
		perfetto_process(pf, PF_HOST, "host I/O");
	}
	for (i = 0; i < m.nr_g; i++) {
		if (!vm_parts(&m, i, p) || (uint64_t)(m.g[i].end - m.g[i].start) < threshold_ns)
			continue;
		shown++;
		if (jw)
			json_request(jw, &m, i, p);
		else
			text_request(&m, i, p);
		if (pf)
			perfetto_request(pf, &m, i, p);
	}
	summary(jw, &m, shown, rs);
	err = perfetto_close(pf);
	pf = NULL;
	if (err)
		err = fail(err, "cannot write %s: %s", perfetto_path, strerror(-err));
cleanup:
	perfetto_close(pf);
	jw_free(jw);
	vm_merge_free(&m);
	return err;
}
