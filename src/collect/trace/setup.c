// SPDX-License-Identifier: GPL-2.0
/*
 * trace's collector: the BPF side with its options (hooks, globals, map sizes), load,
 * attach, the plan, and its end.
 */
#include "array.h"
#include "priv.h"
#include "driver_hooks.h"

#define TP_HOOK(s, nm, hook, opt) TP_BTF_HOOK(s, #hook, trace_##nm, opt, NULL)

/* Programs of ops that are not traced are not loaded: they cost nothing. */
static void plan_drop(struct attach_hook *hooks, int *n, const char *name)
{
	int i, k;

	for (i = 0; i < *n; i++)
		if (!strcmp(hooks[i].name, name))
			break;
	if (i == *n)
		return;
	for (k = 0; k < ATTACH_MAX_VARIANTS && hooks[i].v[k].prog; k++)
		bpf_program__set_autoload(hooks[i].v[k].prog, false);
	memmove(&hooks[i], &hooks[i + 1], (*n - i - 1) * sizeof(hooks[0]));
	(*n)--;
}

/*
 * Whether some disk in scope has an I/O scheduler. Without one, requests go from the
 * plug or the submitter straight to the driver and I (block_rq_insert) adds nothing
 * that G and D do not say: its hook is left out (I = G, see the docs).
 */
static bool need_insert_hook(const struct trace_opts *o)
{
	char path[PATH_MAX], line[256];
	struct ds_snapshot ds;
	bool need = false;
	size_t i;
	FILE *f;

	ds_snapshot_init(&ds);
	if (ds_read("/proc/diskstats", &ds))
		return true;
	for (i = 0; i < ds.nr && !need; i++) {
		const struct ds_dev *d = &ds.devs[i];

		if (o->filter.have_disk && strcmp(d->name, o->filter.disk.disk_name))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", d->name);
		f = fopen(path, "r");
		if (!f)
			continue; /* partition, or no queue */
		if (fgets(line, sizeof(line), f) && !strstr(line, "[none]") && strchr(line, '['))
			need = true;
		fclose(f);
	}
	ds_snapshot_free(&ds);
	return need;
}

/* The most hooks trace_hooks() gives. */

/* The hooks a run with options @o needs, with their variants, into @out: how many. */

static int trace_hooks(struct trace_bpf *s, const struct trace_opts *o, struct attach_hook *out)
{
	struct attach_hook hooks[] = {
		FALLBACK_HOOK(s, "mm_filemap_fault", trace_fault,
			      "page fault requests (--ops fault)"),
		OPTIONAL_HOOK(s, "writeback_dirty_folio", trace_dirty_folio,
			      "writeback requests credited to dirtiers"),
		OPTIONAL_HOOK(s, "writeback_single_inode_start", trace_wb_start, NULL),
		OPTIONAL_HOOK(s, "writeback_single_inode", trace_wb_end, NULL),
		FALLBACK_HOOK(s, "iomap_dio_rw_begin", trace_dio_begin,
			      "async direct I/O requests (libaio, io_uring)"),
		FALLBACK_HOOK(s, "iomap_dio_complete", trace_dio_complete,
			      "completion of async direct I/O requests"),
		TP_HOOK(s, exit, sched_process_exit, true),
		/* Where missing, a dio's submission window ends later (see trace_dio_queued). */
		OPTIONAL_HOOK(s, "iomap_dio_rw_queued", trace_dio_queued, NULL),
		TP_BTF_HOOK(s, "block_rq_issue", trace_rq_issue, true, NULL),
		TP_HOOK(s, bio_queue, block_bio_queue, false),
		TP_HOOK(s, rq_complete, block_rq_complete, false),
		TP_HOOK(s, split, block_split, true),
		TP_HOOK(s, getrq, block_getrq, true),
		TP_HOOK(s, backmerge, block_bio_backmerge, true),
		TP_HOOK(s, frontmerge, block_bio_frontmerge, true),
		TP_HOOK(s, rq_insert, block_rq_insert, true),
		TP_HOOK(s, rq_requeue, block_rq_requeue, true),
		TP_HOOK(s, switch, sched_switch, true),
		{.name = "mm_filemap_get_pages",
		 .optional = true,
		 .figure = "page cache lookups",
		 .v = {{.prog = s->progs.trace_get_pages},
		       {.prog = s->progs.trace_get_pages_raw},
		       {.prog = s->progs.trace_get_pages_fentry},
		       {.prog = s->progs.trace_get_pages_kprobe}}},
		TP_HOOK(s, pc_add, mm_filemap_add_to_page_cache, true),
		FALLBACK_HOOK(s, "page_cache_sync_ra", trace_ra_sync, "synchronous readahead"),
		FALLBACK_HOOK(s, "page_cache_async_ra", trace_ra_async, "asynchronous readahead"),
		DRIVER_HOOKS(s, trace_drv),
	};
	struct syscall_progs sys = SYSCALL_PROGS_OF(s, trace_sys);
	const char *sys_names[TRACE_OP_SYNC_FILE_RANGE + 1];
	int n = ARRAY_SIZE(hooks), i, nr_sys, err;
	bool aio = o->ops & (1U << TRACE_OP_AIO_READ | 1U << TRACE_OP_AIO_WRITE);

	_Static_assert(ARRAY_SIZE(hooks) + 2 * (TRACE_OP_SYNC_FILE_RANGE + 1) <= TRACE_MAX_HOOKS,
		       "TRACE_MAX_HOOKS");

	if (!need_insert_hook(o))
		plan_drop(hooks, &n, "block_rq_insert");
	if (!aio) {
		plan_drop(hooks, &n, "iomap_dio_rw_begin");
		plan_drop(hooks, &n, "iomap_dio_complete");
		plan_drop(hooks, &n, "sched_process_exit");
	}
	if (!(o->ops & (1U << TRACE_OP_WRITEBACK))) {
		plan_drop(hooks, &n, "writeback_dirty_folio");
		plan_drop(hooks, &n, "writeback_single_inode_start");
		plan_drop(hooks, &n, "writeback_single_inode");
	}
	if (!(o->ops & (1U << TRACE_OP_FAULT)))
		plan_drop(hooks, &n, "mm_filemap_fault");
	if (!o->offcpu_periods)
		plan_drop(hooks, &n, "sched_switch");
	memcpy(out, hooks, n * sizeof(*out));
	/* The syscalls of the ops traced, by number (sys_op[], trace_collect_open()). */
	for (i = nr_sys = 0; i <= TRACE_OP_SYNC_FILE_RANGE; i++)
		if (o->ops & (1U << i))
			sys_names[nr_sys++] = trace_op_name(i);
	if (!nr_sys) {
		syscall_progs_off(&sys);
		return n;
	}
	err = syscall_hooks_add(out, &n, TRACE_MAX_HOOKS, o->syscalls, &sys, sys_names, nr_sys, 0);
	return err ?: n;
}

void trace_opts_default(struct trace_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->threshold_ns = 10 * 1000000ULL;
	o->ops = TRACE_OPS_ALL;
	o->delayacct = read_int_file("/proc/sys/kernel/task_delayacct") == 1;
	o->rb_bytes = TRACE_RB_DEFAULT;
}

int trace_collect_plan(plan_show_fn show, void *arg)
{
	static struct trace_ctx c;
	struct attach_hook hooks[TRACE_MAX_HOOKS];
	struct trace_opts o;
	struct trace_bpf *s;
	char why[256];
	int err, n;

	/* Set up as the command would run: a plan that cannot load or attach is no plan. */
	memset(&c, 0, sizeof(c));
	trace_opts_default(&o);
	err_capture(why, sizeof(why));
	err = bpfcmd_plan_report(&c.cmd, "trace", trace_collect_open(&c, &o, NULL), why,
				 sizeof(why), show, arg);
	trace_collect_close(&c);
	if (!err)
		return 0;
	/* Then what it would try, evaluated without loading. */
	s = SKEL_OPEN(trace);
	if (!s)
		return -errno;
	n = trace_hooks(s, &o, hooks);
	if (n >= 0)
		show("trace", hooks, n, why, arg);
	trace_bpf__destroy(s);
	return 0;
}

/* The tables counted at exit (trace_sweep_writeback()), mapped read-only. */
static int map_tables(struct trace_ctx *c)
{
	int err = bpfmap_array_map(c->skel->maps.thread_recs, &c->thread_recs);

	if (!err && c->skel->rodata->trace_aio)
		err = bpfmap_array_map(c->skel->maps.async_slots, &c->async_slots);
	return err ? fail(err, "cannot map the requests tables: %s", strerror(-err)) : 0;
}

int trace_collect_open(struct trace_ctx *c, const struct trace_opts *o,
		       const struct trace_sink *sink)
{
	/* Async direct I/O's end; bios blk-throttle held: its worker, submit_bio_wait()'s waiter.
	 */
	static const char *const syms[] = {"iomap_dio_bio_end_io", "blk_throtl_dispatch_work_fn",
					   "submit_bio_wait_endio"};
	struct attach_hook hooks[TRACE_MAX_HOOKS];
	struct trace_bpf *s;
	uint64_t end_io, throtl_fn, wait_end_io, addrs[3];
	int err, i, nr, n;

	c->o = o;
	if (sink)
		c->sink = *sink;
	bpfcmd_kernel_addrs_start(&c->cmd, syms, 3);
	err = bpfcmd_prepare(&c->cmd, "trace", BPFCMD_CGROUP_NAMES);
	if (err)
		return err;
	c->pcpu = calloc(c->cmd.ncpus, sizeof(*c->pcpu));
	c->prev = calloc(TRACE_OP_NR, sizeof(*c->prev));
	if (!c->pcpu || !c->prev || fspath_cache_new(trace_lookup_path, c, &c->paths) ||
	    /* Read for every record: titles change between requests. */
	    procinfo_new(trace_lookup_title, c, 1, &c->procinfo))
		return fail(-ENOMEM, "out of memory");
	bpfcmd_kernel_addrs(&c->cmd, syms, addrs, 3,
			    "async direct I/O and direct I/O re-submitted by kernel threads are "
			    "not followed");
	end_io = addrs[0];
	throtl_fn = addrs[1];
	wait_end_io = addrs[2];
	c->mono_to_real = mono_to_real_ns();

	s = BPFCMD_OPEN_TARGETED(&c->cmd, trace, &o->filter);
	if (!s)
		return -errno;
	c->skel = s;
	s->rodata->threshold_ns = o->threshold_ns;
	s->rodata->self_tgid = getpid();
	s->rodata->trace_faults = o->ops & (1U << TRACE_OP_FAULT);
	s->rodata->trace_writeback = o->ops & (1U << TRACE_OP_WRITEBACK);
	s->rodata->aio_ops = (o->ops >> TRACE_OP_AIO_READ) & 3;
	s->rodata->trace_aio = s->rodata->aio_ops && end_io;
	s->rodata->iomap_dio_end_io = end_io;
	s->rodata->throtl_dispatch_fn = throtl_fn;
	s->rodata->submit_bio_wait_end_io = wait_end_io;
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	s->rodata->drv_virtblk_major = driver_virtblk_major();
	/* IOSPAN_FAULT=bio_slots_contended (tests): bios take each other's slots. */
	if (fault_injected("bio_slots_contended"))
		s->rodata->bio_slots_nr = 16;
	/* The syscall programs' table (trace.bpf.c): the op of each syscall traced. */
	for (i = 0; i <= TRACE_OP_SYNC_FILE_RANGE; i++)
		if ((o->ops & (1U << i)) && (nr = syscall_nr(trace_op_name(i))) >= 0)
			s->rodata->sys_op[nr] = i + 1;
	s->rodata->offcpu_periods = o->offcpu_periods;
	s->rodata->delayacct_on = o->delayacct;
	if (!s->rodata->trace_aio)
		bpf_map__set_max_entries(s->maps.async_slots, 1);
	if (!s->rodata->trace_writeback)
		bpf_map__set_max_entries(s->maps.dirtiers, 1);
	bpf_map__set_max_entries(s->maps.events, o->rb_bytes);

	n = trace_hooks(s, o, hooks);
	if (n < 0)
		return n;
	return bpfcmd_plan(&c->cmd, hooks, n,
			   "its maps have fixed sizes: free memory, or raise the memory cgroup "
			   "limit") ?:
		       bpfcmd_load_filter(&c->cmd, &o->filter) ?: map_tables(c) ?:
		       trace_consume_open(c) ?: bpfcmd_attach(&c->cmd);
}

int trace_collect_stop(struct trace_ctx *c)
{
	return bpfcmd_stop(&c->cmd, &c->skel->bss->emit_stopped, 1000);
}

void trace_collect_close(struct trace_ctx *c)
{
	if (c->skel) {
		bpfmap_array_unmap(c->skel->maps.thread_recs, c->thread_recs);
		bpfmap_array_unmap(c->skel->maps.async_slots, c->async_slots);
	}
	c->thread_recs = c->async_slots = NULL;
	bpfcmd_close(&c->cmd);
	c->skel = NULL;
	free(c->pcpu);
	c->pcpu = NULL;
	free(c->prev);
	c->prev = NULL;
	fspath_cache_free(c->paths);
	c->paths = NULL;
	procinfo_free(c->procinfo);
	c->procinfo = NULL;
	probe_cleanup();
}
