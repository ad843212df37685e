// SPDX-License-Identifier: GPL-2.0
/*
 * iospan top: the BPF side of a collector. Its globals and map sizes from the options,
 * the hooks it needs (a feature turned off loads no program), load, the filter maps,
 * the maps readied, attach; the life cycle itself is src/lib/bpf/bpfcmd.h's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "driver_hooks.h"
#include "bpfcmd.h"
#include "bpfmap.h"
#include "err.h"
#include "fspath.h"
#include "ops.h"
#include "probe.h"
#include "procinfo.h"
#include "rbuf.h"
#include "skel.h"
#include "syscalls.h"
#include "collect/top.h"
#include "top.skel.h"
#include "top_compat.skel.h"

/* The syscalls top follows, and what each does to a file. */
static const struct {
	const char *name;
	enum top_sys_op op;
} top_syscalls[] = {
	/* read and write first: they must attach (top_hooks()) */
	{"read", SYS_READ},
	{"write", SYS_WRITE},
	{"pread64", SYS_READ},
	{"pwrite64", SYS_WRITE},
	{"readv", SYS_READ},
	{"writev", SYS_WRITE},
	{"preadv", SYS_READ},
	{"pwritev", SYS_WRITE},
	{"preadv2", SYS_READ},
	{"pwritev2", SYS_WRITE},
	{"fsync", SYS_SYNC},
	{"fdatasync", SYS_SYNC},
	{"sync_file_range", SYS_SYNC},
	{"truncate", SYS_RESIZE},
	{"ftruncate", SYS_RESIZE},
	{"fallocate", SYS_RESIZE},
};

#define NR_TOP_SYSCALLS (ARRAY_SIZE(top_syscalls))

/* The syscall programs' table (top.bpf.c): what each syscall followed does. */
static void fill_sys_ops(struct top_bpf *s)
{
	size_t i;
	int nr;

	for (i = 0; i < NR_TOP_SYSCALLS; i++) {
		nr = syscall_nr(top_syscalls[i].name);
		if (nr >= 0)
			s->rodata->sys_op[nr] = top_syscalls[i].op;
	}
}

/* Whether the hook named @name is in the plan of @c. */
static bool hook_chosen(const struct top_ctx *c, const char *name)
{
	int i;

	for (i = 0; i < c->cmd.nr_hooks; i++)
		if (!strcmp(c->cmd.hooks[i].name, name))
			return c->cmd.hooks[i].chosen >= 0;
	return false;
}

/*
 * Whether async direct I/O's FS bytes can wait for its completion: a kprobe on
 * iomap_dio_complete() is skipped when the completion interrupts another kprobe or
 * syscall program on its CPU (kprobes do not nest), so with one the bytes are counted
 * when the I/O starts instead.
 */
static bool dio_complete_is_reliable(const struct top_ctx *c)
{
	const struct attach_hook *h;
	int i;

	for (i = 0; i < c->cmd.nr_hooks; i++) {
		h = &c->cmd.hooks[i];
		if (strcmp(h->name, "iomap_dio_complete"))
			continue;
		return h->chosen >= 0 &&
		       h->v[h->chosen].prog != c->skel->progs.top_dio_complete_kprobe;
	}
	return false;
}

int top_hooks(struct top_bpf *s, const struct top_opts *o, struct attach_hook *out)
{
	struct attach_hook hooks[] = {
		TP_BTF_HOOK(s, "block_bio_queue", top_bio_queue, false, NULL),
		TP_BTF_HOOK(s, "block_split", top_bio_split, false, NULL),
		TP_BTF_HOOK(s, "block_rq_complete", top_rq_complete, false, NULL),
		TP_BTF_HOOK(s, "block_rq_issue", top_rq_issue, true,
			    "d2c from the issue (else from io_start_time_ns)"),
		TP_BTF_HOOK(s, "block_rq_requeue", top_rq_requeue, true,
			    "completions the kernel did not run top's program for"),
		OPTIONAL_HOOK(s, "writeback_dirty_folio", top_dirty_folio,
			      "writeback credit to dirtiers, FS bytes of mmap writes"),
		FALLBACK_HOOK(s, "mm_filemap_fault", top_filemap_fault,
			      "mmap FS read bytes (faults)"),
		FALLBACK_HOOK(s, "mm_filemap_map_pages", top_filemap_map_pages,
			      "mmap FS read bytes (fault-around)"),
		FALLBACK_HOOK(s, "iomap_dio_rw_begin", top_dio_begin,
			      "FS bytes of async direct I/O (libaio, io_uring)"),
		FALLBACK_HOOK(s, "iomap_dio_complete", top_dio_complete,
			      "FS bytes of async direct I/O (libaio, io_uring)"),
		/* Where missing, a dio's submission window ends later (see top_dio_complete). */
		OPTIONAL_HOOK(s, "iomap_dio_rw_queued", top_dio_queued, NULL),
		OPTIONAL_HOOK(s, "sched_switch", top_sched_switch, "I/O stalls"),
		/* Who reads which file: the owner of read bios blk-throttle held. */
		FALLBACK_HOOK(s, "page_cache_sync_ra", top_ra_sync,
			      "owners of buffered reads blk-throttle held"),
		FALLBACK_HOOK(s, "page_cache_async_ra", top_ra_async,
			      "owners of buffered reads blk-throttle held"),
		DRIVER_ERROR_HOOKS(s, top_drv),
		{.name = NULL}, /* room for mm_filemap_get_pages */
	};
	const char *names[NR_TOP_SYSCALLS];
	struct syscall_progs sys = SYSCALL_PROGS_OF(s, top_sys);
	int n = ARRAY_SIZE(hooks) - 1, i, j, err;

	/* Two hooks a syscall where each has its tracepoints. */
	_Static_assert(ARRAY_SIZE(hooks) + 2 * NR_TOP_SYSCALLS <= TOP_MAX_HOOKS, "TOP_MAX_HOOKS");

	/* Features turned off are neither planned nor loaded. */
	bpf_program__set_autoload(s->progs.top_filemap_get_pages, o->no_syscalls);
	bpf_program__set_autoload(s->progs.top_filemap_read_fentry, o->no_syscalls);
	bpf_program__set_autoload(s->progs.top_filemap_read_kprobe, o->no_syscalls);
	for (i = j = 0; i < n; i++) {
		bool off = (!o->stall_ns && !strcmp(hooks[i].name, "sched_switch")) ||
			   /* Readers matter only for bios blk-throttle's worker queues. */
			   (!s->rodata->throtl_dispatch_fn &&
			    !strncmp(hooks[i].name, "page_cache_", 11));
		int k;

		if (!off) {
			hooks[j++] = hooks[i];
			continue;
		}
		for (k = 0; k < ATTACH_MAX_VARIANTS && hooks[i].v[k].prog; k++)
			bpf_program__set_autoload(hooks[i].v[k].prog, false);
	}
	n = j;
	if (o->no_syscalls)
		hooks[n++] = (struct attach_hook){
			.name = "mm_filemap_get_pages",
			.optional = true,
			.figure = "FS read bytes (--no-syscalls)",
			.v = {{.prog = s->progs.top_filemap_get_pages},
			      {.prog = s->progs.top_filemap_read_fentry},
			      {.prog = s->progs.top_filemap_read_kprobe}},
		};
	memcpy(out, hooks, n * sizeof(*out));
	if (o->no_syscalls) {
		syscall_progs_off(&sys);
		return n;
	}
	/*
	 * Reads and writes (read and write must attach), syncs (who syncs which file: the
	 * flusher of bios blk-throttle held), truncations (pages the file system dirties
	 * zeroing a block's tail are no FS writes): by number (fill_sys_ops()).
	 */
	for (i = 0; i < (int)NR_TOP_SYSCALLS; i++)
		names[i] = top_syscalls[i].name;
	err = syscall_hooks_add(out, &n, TOP_MAX_HOOKS, o->syscalls, &sys, names, NR_TOP_SYSCALLS,
				2);
	return err ?: n;
}

/* Rows of the unattributed map for devices that appear after the start. */
#define UNATTR_SPARE 64

/*
 * Whether the device of /proc/diskstats line @e is traced: every device without -d;
 * with it, the disk and its partitions, or the partition.
 */
static bool dev_traced(const struct top_opts *o, const struct ds_dev *e)
{
	const struct disk *d = filter_opts_disk(&o->filter);
	struct disk of;

	if (!d || (e->major == d->major && e->minor == d->minor))
		return true;
	return !d->partition && e->partition && !disk_from_devnum(e->major, e->minor, &of) &&
	       of.disk_major == d->major && of.disk_minor == d->minor;
}

/* The devices that get an unattributed row at the start (none under a target filter). */
static size_t nr_unattr_devs(const struct top_ctx *c)
{
	size_t i, n = 0;

	if (filter_opts_target(&c->o->filter))
		return 0;
	for (i = 0; i < c->ds_start.nr; i++)
		n += dev_traced(c->o, &c->ds_start.devs[i]);
	return n;
}

/*
 * Every traced device gets its "(unattributed)" row before tracing starts, in a
 * preallocated map of its own: the DISK bytes of owners the full stats map cannot take
 * land there, whatever the stats map holds and whatever memory the kernel can give
 * then. A row that cannot be made is an error, not bytes silently lost later.
 */
static int make_unattributed_rows(struct top_ctx *c)
{
	int fd = bpf_map__fd(c->skel->maps.unattr), err = 0;
	struct top_stat *zero;
	uint32_t dev;
	size_t i;

	if (!nr_unattr_devs(c))
		return 0;
	zero = calloc(c->cmd.ncpus, sizeof(*zero));
	if (!zero)
		return fail(-ENOMEM, "out of memory");
	for (i = 0; !err && i < c->ds_start.nr; i++) {
		const struct ds_dev *e = &c->ds_start.devs[i];

		if (!dev_traced(c->o, e))
			continue;
		dev = KDEV(e->major, e->minor);
		if (bpf_map_update_elem(fd, &dev, zero, BPF_NOEXIST) && errno != EEXIST)
			err = fail(-errno, "cannot make the unattributed row of %s: %s", e->name,
				   strerror(errno));
	}
	free(zero);
	return err;
}

/*
 * The requests table (rq_issues), read-only, for the requests still open at a report
 * (top_collect_read()). Without it the report cannot say which requests it has not
 * seen complete: an error.
 */
static int map_rq_slots(struct top_ctx *c)
{
	const struct bpf_map *m = c->skel->maps.rq_issues;
	const void *p;
	int err;

	_Static_assert(sizeof(struct top_rq_slot) % 8 == 0, "rq_issues value stride");
	if (!c->skel->rodata->track_unseen)
		return 0;
	err = bpfmap_array_map(m, &p);
	if (err)
		return fail(err, "cannot map the requests table: %s", strerror(-err));
	c->rq_slots = p;
	c->nr_rq_slots = bpf_map__max_entries(m);
	return 0;
}

/*
 * Sets up and attaches the BPF side of collector @c for its options (c->o): the steps
 * of src/lib/bpf/bpfcmd.h, with top's globals, map sizes and hooks between them.
 */
int top_setup(struct top_ctx *c)
{
	/* Async direct I/O's end, and blk-throttle's worker (the bios it held). */
	static const char *const syms[] = {"iomap_dio_bio_end_io", "blk_throtl_dispatch_work_fn"};
	static const struct rbuf_handler handlers[] = {
		{.type = TOP_REC_STALL, .min_size = sizeof(struct top_stall), .fn = top_on_stall},
		{.type = TOP_REC_SLOW_RQ,
		 .min_size = sizeof(struct top_slow_rq),
		 .fn = top_on_slow_rq},
	};
	const struct top_opts *o = c->o;
	struct attach_hook hooks[TOP_MAX_HOOKS];
	struct top_bpf *s;
	uint64_t addrs[2];
	int err, n;

	bpfcmd_kernel_addrs_start(&c->cmd, syms, 2);
	err = bpfcmd_prepare(&c->cmd, "top", BPFCMD_CGROUP_NAMES);
	if (err)
		return err;
	c->stalls = calloc(MAX_STALLS, sizeof(*c->stalls));
	if (!c->stalls)
		return fail(-ENOMEM, "out of memory");
	/* Two addresses now; the symbols for stacks later, for the report. */
	if (!bpfcmd_kernel_addrs(&c->cmd, syms, addrs, 2,
				 "stacks stay numeric, and direct I/O re-submitted by kernel "
				 "threads is credited to them"))
		c->cmd.want_ksyms = o->stall_ns;
	err = fspath_cache_new(top_lookup_path, c, &c->fspaths);
	if (!err)
		err = procinfo_new(top_lookup_title, c, 0, &c->procinfo);
	if (err)
		return fail(err, "out of memory");
	err = ds_read("/proc/diskstats", &c->ds_start);
	if (err)
		return fail(err, "cannot read /proc/diskstats: %s", strerror(-err));

	s = BPFCMD_OPEN_TARGETED(&c->cmd, top, &o->filter);
	if (!s)
		return -errno;
	c->skel = s;
	s->rodata->per_thread = o->threads;
	s->rodata->track_unattributed = !filter_opts_target(&o->filter);
	s->rodata->stall_ns = o->stall_ns;
	s->rodata->slow_rq_ns = o->slow_rq_ns;
	s->rodata->iomap_dio_end_io = addrs[0];
	s->rodata->throtl_dispatch_fn = addrs[1];
	s->rodata->page_size = sysconf(_SC_PAGESIZE);
	s->rodata->self_tgid = getpid();
	fill_sys_ops(s);
	bpf_map__set_max_entries(s->maps.stats, o->max_entries);
	bpf_map__set_max_entries(s->maps.unattr, nr_unattr_devs(c) + UNATTR_SPARE);
	bpf_map__set_max_entries(s->maps.wb, o->max_entries / 4 > 1024 ? o->max_entries / 4 : 1024);
	bpf_map__set_max_entries(s->maps.procs,
				 o->max_entries / 2 > 1024 ? o->max_entries / 2 : 1024);
	bpf_map__set_max_entries(s->maps.titles,
				 o->max_entries / 2 > 1024 ? o->max_entries / 2 : 1024);
	bpf_map__set_max_entries(s->maps.paths,
				 o->max_entries / 2 > 1024 ? o->max_entries / 2 : 1024);
	/* Dirtier records of 16 pages each: 4 GiB of dirty data by default. */
	bpf_map__set_max_entries(s->maps.dirtiers, o->max_entries * 4 < 65536 ? 65536 :
						   o->max_entries * 4 > (1U << 20) ?
										(1U << 20) :
										o->max_entries * 4);
	if (!o->stall_ns && !o->slow_rq_ns)
		bpf_map__set_max_entries(s->maps.stall_events, sysconf(_SC_PAGESIZE));
	s->rodata->disk_hists = o->disk_hists;
	if (!o->disk_hists) {
		bpf_map__set_max_entries(s->maps.dhists, 1);
		bpf_map__set_max_entries(s->maps.dhist_fast, 1);
	}

	n = top_hooks(s, o, hooks);
	if (n < 0)
		return n;
	err = bpfcmd_plan(&c->cmd, hooks, n, "give a smaller --max-entries");
	if (err)
		return err;
	/* Loaded, attached by top_collect_stalls() (the plan set auto-attach). */
	if (o->stall_ns && o->stalls_on_demand)
		bpf_program__set_autoattach(s->progs.top_sched_switch, false);
	s->rodata->dio_fs_at_complete = dio_complete_is_reliable(c);
	s->rodata->fault_map_nomem = fault_injected("map_nomem");
	s->rodata->fault_skip_complete = fault_injected("skip_complete");
	/*
	 * A request issued again while still open completed unseen; one requeued is not
	 * completed: both hooks, or no such count (it would take requeues for completions).
	 */
	s->rodata->track_unseen =
		hook_chosen(c, "block_rq_issue") && hook_chosen(c, "block_rq_requeue");
	err = bpfcmd_load_filter(&c->cmd, &o->filter);
	if (err)
		return err;
	/* While both maps are empty, before any program runs (see bpfmap.h). */
	bpfmap_warm_alloc(bpf_map__fd(s->maps.stats), sizeof(struct top_key),
			  sizeof(struct top_stat), true);
	bpfmap_warm_alloc(bpf_map__fd(s->maps.wb), sizeof(struct top_wb_key),
			  sizeof(struct top_wb_val), true);
	err = make_unattributed_rows(c);
	if (err)
		return err;
	err = map_rq_slots(c);
	if (err)
		return err;
	s->bss->path_epoch = 1;
	if (o->stall_ns || o->slow_rq_ns) {
		err = bpfcmd_ringbuf(&c->cmd, bpf_map__fd(s->maps.stall_events),
				     bpf_map__fd(s->maps.stall_events_counts), handlers,
				     ARRAY_SIZE(handlers), c);
		if (err)
			return err;
	}
	return bpfcmd_attach(&c->cmd);
}

/* Frees what top_setup() set up, whatever step it reached. */
void top_teardown(struct top_ctx *c)
{
	if (c->skel)
		bpfmap_array_unmap(c->skel->maps.rq_issues, c->rq_slots);
	c->rq_slots = NULL;
	bpfcmd_close(&c->cmd);
	c->skel = NULL;
	fspath_cache_free(c->fspaths);
	procinfo_free(c->procinfo);
	free(c->prev);
	free(c->prev_wb);
	free(c->prev_fl);
	free(c->stalls);
	ds_snapshot_free(&c->ds_start);
	ds_snapshot_free(&c->ds_end);
}

int top_collect_plan(plan_show_fn show, void *arg)
{
	struct attach_hook hooks[TOP_MAX_HOOKS];
	struct top_opts o;
	struct top_ctx *c;
	struct top_bpf *s;
	char why[256];
	int err, n;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* Set up as the command would run: a plan that cannot load or attach is no plan. */
	top_opts_default(&o);
	c->o = &o;
	ds_snapshot_init(&c->ds_start);
	ds_snapshot_init(&c->ds_end);
	err_capture(why, sizeof(why));
	err = bpfcmd_plan_report(&c->cmd, "top", top_setup(c), why, sizeof(why), show, arg);
	top_teardown(c);
	if (!err)
		goto cleanup;
	/* Then what it would try, evaluated without loading. */
	s = SKEL_OPEN(top);
	if (!s) {
		err = -errno;
		goto cleanup;
	}
	n = top_hooks(s, &o, hooks);
	if (n >= 0)
		show("top", hooks, n, why, arg);
	top_bpf__destroy(s);
	err = 0;
cleanup:
	free(c);
	return err;
}
