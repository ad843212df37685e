// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "args.h"
#include "bpfcmd.h"
#include "bpfmap.h"
#include "cgroups.h"
#include "err.h"
#include "filters.h"
#include "ksyms.h"
#include "mapmem.h"
#include "probe.h"
#include "rbuf.h"

#define NSEC_PER_MSEC 1000000ULL
/* Cgroup names: an unknown id makes the map look again at most this often. */
#define CGROUP_ROUND_NS (1000 * NSEC_PER_MSEC)

int bpfcmd_prepare(struct bpfcmd *c, const char *name, unsigned int flags)
{
	char root[PATH_MAX];
	int err;

	c->name = name;
	probe_setup_libbpf_print();
	/*
	 * Say what is missing, before the attach plan blames the kernel for it, and before
	 * the probes start: their threads would print -v's lines after the error, which
	 * must be the last line.
	 */
	err = probe_require_bpf_privileges(name);
	if (err)
		return err;
	probe_prefetch();
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0)
		return fail(c->ncpus ? c->ncpus : -EINVAL, "cannot count the possible CPUs");
	if ((flags & BPFCMD_CGROUP_NAMES) && !probe_cgroup2_mount(root, sizeof(root)))
		cgroup_map_new(root, &c->cgmap);
	return 0;
}

void bpfcmd_adopt(struct bpfcmd *c, void *skel, struct bpf_object_skeleton *skeleton,
		  struct bpf_object *obj)
{
	c->skel = skel;
	c->skeleton = skeleton;
	c->obj = obj;
}

void bpfcmd_kernel_addrs_start(struct bpfcmd *c, const char *const *syms, size_t n)
{
	ksyms_lookup_start(&c->addrs_job, syms, n);
}

int bpfcmd_kernel_addrs(struct bpfcmd *c, const char *const *syms, uint64_t *addrs, size_t n,
			const char *without)
{
	int err = c->addrs_job.started && c->addrs_job.names == syms && c->addrs_job.n == n ?
			  ksyms_lookup_finish(&c->addrs_job, addrs) :
			  ksyms_lookup(NULL, syms, addrs, n);

	if (!err)
		return 0;
	memset(addrs, 0, n * sizeof(*addrs));
	if (without)
		warn("kernel symbols unavailable (%s): %s", ksyms_strerror(err), without);
	return err;
}

int bpfcmd_plan_report(struct bpfcmd *c, const char *name, int err, char *why, size_t len,
		       plan_show_fn show, void *arg)
{
	err_capture(NULL, 0);
	if (!err) {
		show(name, c->hooks, c->nr_hooks, NULL, arg);
		return 0;
	}
	if (!why[0])
		snprintf(why, len, "%s", strerror(-err));
	return err;
}

int bpfcmd_plan_opened(struct bpfcmd *c, const char *name, int err, char *why, size_t len,
		       plan_show_fn show, void *arg)
{
	err = bpfcmd_plan_report(c, name, err, why, len, show, arg);
	if (err && c->hooks)
		show(name, c->hooks, c->nr_hooks, why, arg);
	return c->hooks ? 0 : err;
}

int bpfcmd_plan(struct bpfcmd *c, const struct attach_hook *hooks, int n, const char *mem_hint)
{
	/* Before anything is loaded: a size the machine cannot give is refused at once. */
	int err = mapmem_check(c->obj, c->name, mem_hint);

	if (err)
		return err;
	err = attach_hooks_dup(hooks, n, &c->hooks);
	if (err)
		return fail(err, "out of memory");
	c->nr_hooks = n;
	return attach_plan_choose(c->hooks, c->nr_hooks);
}

static int map_fd(struct bpfcmd *c, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(c->obj, name);

	return m ? bpf_map__fd(m) : -1;
}

int bpfcmd_load(struct bpfcmd *c, const struct disk *disk, const char *cgroup_dir)
{
	int err = skel_load(c->skeleton);

	if (err)
		return fail(err, "cannot load the BPF programs: %s%s", strerror(-err),
			    geteuid() ? " (run as root)" :
					" (see 'iospan doctor', -v for details)");
	return filter_maps_fill(map_fd(c, "filter_devs"), disk, map_fd(c, "filter_cgroups"),
				cgroup_dir);
}

int bpfcmd_load_filter(struct bpfcmd *c, const struct filter_opts *f)
{
	return bpfcmd_load(c, filter_opts_disk(f), filter_opts_cgroup_dir(f));
}

int bpfcmd_ringbuf(struct bpfcmd *c, int rb_fd, int counts_fd, const struct rbuf_handler *h,
		   size_t nr, void *arg)
{
	int err = rbuf_new(rb_fd, counts_fd, h, nr, arg, &c->rb);

	if (err)
		return fail(err, "cannot open the ring buffer: %s", strerror(-err));
	return 0;
}

int bpfcmd_attach(struct bpfcmd *c)
{
	char prefix[64];
	int err = bpf_object__attach_skeleton(c->skeleton);

	if (err)
		return fail(err, "cannot attach the BPF programs: %s (see 'iospan doctor')",
			    strerror(-err));
	err = attach_plan_attach(c->hooks, c->nr_hooks);
	if (err)
		return err;
	snprintf(prefix, sizeof(prefix), "iospan %s: ", c->name);
	attach_plan_unavailable(c->hooks, c->nr_hooks, NULL, NULL, stderr, prefix);
	attach_plan_print(c->hooks, c->nr_hooks, NULL);
	return 0;
}

void bpfcmd_start(struct bpfcmd *c, const char *fmt, ...)
{
	va_list ap;

	install_stop_handlers();
	fprintf(stderr, "iospan %s: ", c->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	/*
	 * Reading /proc/kallsyms takes the kernel 0.1 s of CPU: in a thread once tracing
	 * runs, not while the programs load (a report waits for it if it must).
	 */
	if (c->want_ksyms && !c->ksyms)
		ksyms_load_async(NULL, &c->ksyms);
	c->start_ns = now_ns(CLOCK_MONOTONIC);
}

int bpfcmd_poll(struct bpfcmd *c, int timeout_ms)
{
	uint64_t yield_ns = timeout_ms ? now_ns(CLOCK_MONOTONIC) + timeout_ms * NSEC_PER_MSEC : 0;
	int err;

	if (!c->rb)
		return 0;
	err = rbuf_poll(c->rb, timeout_ms, yield_ns);
	if (err)
		return fail(err, "cannot read the ring buffer: %s", strerror(-err));
	return 0;
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;

	return m < c ? m : c;
}

/* Waits until @deadline, reading the ring buffer meanwhile; > 0 if the run must end. */
static int wait_until(struct bpfcmd *c, const struct bpfcmd_loop *l, uint64_t now,
		      uint64_t deadline)
{
	uint64_t ms = (deadline - now) / NSEC_PER_MSEC + 1;
	int err;

	if (!c->rb) {
		sleep_until_ns(deadline);
		return 0;
	}
	err = rbuf_poll(c->rb, ms < INT_MAX ? (int)ms : INT_MAX, deadline);
	if (err)
		return fail(err, "cannot read the ring buffer: %s", strerror(-err));
	return l->after_read ? l->after_read(l->arg) : 0;
}

int bpfcmd_run(struct bpfcmd *c, const struct bpfcmd_loop *l)
{
	uint64_t start = now_ns(CLOCK_MONOTONIC), window = start, end = UINT64_MAX;
	uint64_t next, now, house = 0, cg_round = 0, deadline;
	struct bpfcmd_tick t;
	bool ended = false, at_end, due;
	int err;

	if (l->duration_ns)
		end = start + l->duration_ns;
	next = l->interval_ns ? start + l->interval_ns : end;
	for (;;) {
		t.stopped = stop_requested;
		now = now_ns(CLOCK_MONOTONIC);
		if (c->cgmap && now >= cg_round) {
			/* Cgroups made since its last look get their names. */
			cgroup_map_round(c->cgmap);
			cg_round = now + CGROUP_ROUND_NS;
		}
		if (l->housekeep && !t.stopped && now >= house) {
			l->housekeep(l->arg);
			house = now + l->housekeeping_ns;
		}
		at_end = t.stopped || ended || now >= end;
		due = now >= next;
		if (at_end && !l->tick_at_end)
			return 0;
		if (at_end || due) {
			/* Whatever arrived until now belongs to this report. */
			if (c->rb) {
				err = rbuf_poll(c->rb, 0, 0);
				if (err)
					return fail(err, "cannot read the ring buffer: %s",
						    strerror(-err));
			}
			t.now_ns = now;
			t.seconds = (now - window) / 1e9;
			t.last =
				at_end || !l->interval_ns || (l->count && c->ticks + 1 >= l->count);
			err = l->tick ? l->tick(l->arg, &t) : 0;
			if (err)
				return err;
			c->ticks++;
			if (t.last)
				return 0;
			window = now;
			house = 0;
			now = now_ns(CLOCK_MONOTONIC);
			next += l->interval_ns;
			if (next < now)
				next = now + l->interval_ns; /* the report took longer than that */
			continue;
		}
		deadline = min3(next, end, l->housekeep ? house : UINT64_MAX);
		if (l->max_wait_ms && deadline - now > l->max_wait_ms * NSEC_PER_MSEC)
			deadline = now + l->max_wait_ms * NSEC_PER_MSEC;
		err = wait_until(c, l, now, deadline);
		if (err < 0)
			return err;
		if (err > 0)
			ended = true;
	}
}

int bpfcmd_stop(struct bpfcmd *c, bool *emit_stopped, int drain_ms)
{

	struct rbuf_stats st;
	int err;

	/* Attached still (detaching takes long, bpfcmd_close() does it), but silent. */
	if (emit_stopped)
		__atomic_store_n(emit_stopped, true, __ATOMIC_SEQ_CST);
	if (!c->rb)
		return 0;
	/*
	 * A program that passed its check of the flag just before it was set submits
	 * within microseconds: after that, a record sent is one the drain waits for.
	 */
	usleep(1000);
	err = rbuf_drain(c->rb, drain_ms);
	if (err != -ETIMEDOUT)
		return err ? fail(err, "cannot read the ring buffer: %s", strerror(-err)) : 0;
	err = rbuf_stats(c->rb, &st);
	if (err)
		return fail(err, "cannot read the ring buffer's counters: %s", strerror(-err));
	c->not_arrived = st.sent > st.received ? st.sent - st.received : 0;
	return 0;
}

uint64_t bpfcmd_missed_runs(const struct bpfcmd *c)
{
	return c->obj ? bpfobj_missed_runs(c->obj) : 0;
}

void bpfcmd_close(struct bpfcmd *c)
{
	ksyms_lookup_cancel(&c->addrs_job);
	rbuf_free(c->rb);
	c->rb = NULL;
	skel_detach(c->skeleton, c->hooks, c->nr_hooks);
	attach_plan_detach(c->hooks, c->nr_hooks);
	/* What <name>_bpf__destroy() does: the skeleton, then the struct SKEL_OPEN made. */
	if (c->skeleton)
		bpf_object__destroy_skeleton(c->skeleton);
	free(c->skel);
	c->skel = NULL;
	c->skeleton = NULL;
	c->obj = NULL;
	free(c->hooks);
	c->hooks = NULL;
	c->nr_hooks = 0;
	ksyms_free(c->ksyms);
	c->ksyms = NULL;
	cgroup_map_free(c->cgmap);
	c->cgmap = NULL;
}
