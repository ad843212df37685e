// SPDX-License-Identifier: GPL-2.0
/*
 * lat's collector: the BPF side with the options (hooks, globals, map sizes), and a
 * read of the kernel's histograms per window, checked against /proc/diskstats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "bpfcmd.h"
#include "collect/lat.h"
#include "diskstats.h"
#include "err.h"
#include "fspath.h"
#include "probe.h"
#include "driver_hooks.h"
#include "lat.skel.h"
#include "lat_compat.skel.h"
#include "skel.h"

/* --by stack: the queuing stacks the kernel keeps, each with its id. */
#define LAT_STACK_ENTRIES 16384

struct lat_ctx {
	const struct lat_opts *o;
	struct bpfcmd cmd;
	struct lat_bpf *skel; /* cmd's */
	struct lat_state state;
	struct lat_stacks stacks;
	struct fspath_cache *paths; /* --by file */
	uint64_t skipped;	    /* the programs' recursion misses so far */
	/* The cross-check with /proc/diskstats (see struct lat_report's not_seen). */
	bool ds_check;
	uint64_t ds_start; /* the disk's completed requests when tracing began */
	uint64_t seen;	   /* requests counted or declared so far */
	uint64_t not_seen; /* the largest shortfall so far */
};

/*
 * Requests @d completed on the disk of -d (all kinds, as lat counts them), or -1 if
 * /proc/diskstats cannot say.
 */
static int64_t disk_requests(const struct disk *d)
{
	struct ds_snapshot snap;
	const struct ds_dev *dev;
	int64_t n = -1;

	ds_snapshot_init(&snap);
	if (!ds_read("/proc/diskstats", &snap)) {
		dev = ds_snapshot_find(&snap, d->major, d->minor, d->name);
		if (dev)
			n = dev->f[DS_RD_IOS] + dev->f[DS_WR_IOS] + dev->f[DS_DC_IOS] +
			    dev->f[DS_FL_IOS];
	}
	ds_snapshot_free(&snap);
	return n;
}

/*
 * Fills @r's not_seen: what /proc/diskstats completed since tracing began, less what
 * the programs counted or declared. Read before the maps, so it can only fall short of
 * the programs' window, never past it: a shortfall is a request no program ran for.
 */
static void check_diskstats(struct lat_ctx *c, struct lat_report *r, int64_t ds_now)
{
	uint64_t seen = r->skipped, done;
	size_t i;

	for (i = 0; i < r->nr; i++)
		seen += r->rows[i].h.count;
	seen += counters_lost(lat_counters, r->drops, LAT_DROP_NR);
	c->seen += seen;
	if (!c->ds_check || ds_now < 0)
		return;
	r->not_seen_known = true;
	done = ds_now - c->ds_start;
	if (done > c->seen && done - c->seen > c->not_seen) {
		r->not_seen = done - c->seen - c->not_seen;
		c->not_seen = done - c->seen;
	}
}

static bool needs_owner(const struct lat_opts *o)
{
	return (o->key_fields & LAT_K_OWNER) || filter_opts_target(&o->filter);
}

static bool needs_issue(const struct lat_opts *o)
{
	return o->stage == LAT_D2C || o->stage == LAT_Q2D || o->stage == LAT_DEVICE;
}

/* The stage starts at the first bio's queue time (block_bio_queue). */
static bool needs_queue(const struct lat_opts *o)
{
	return o->stage == LAT_Q2C || o->stage == LAT_Q2D;
}

#define RA_FIGURE "--by stack: a read's own misses told from the async readahead it sets off"

/* The hooks the options need, with their variants, into @c's plan. */
static int plan_hooks(struct lat_ctx *c)
{
	struct lat_bpf *s = c->skel;
	struct attach_hook hooks[] = {
		TP_BTF_HOOK(s, "block_rq_complete", lat_rq_complete, false, NULL),
		TP_BTF_HOOK(s, "block_rq_issue", lat_rq_issue, false, NULL),
		TP_BTF_HOOK(s, "block_bio_queue", lat_bio_queue, false, NULL),
		TP_BTF_HOOK(s, "block_split", lat_bio_split, false, NULL),
		/* --by stack: which readahead a read's requests come from (lat.bpf.c). */
		FALLBACK_HOOK(s, "page_cache_sync_ra", lat_ra_sync, RA_FIGURE),
		FALLBACK_HOOK(s, "page_cache_async_ra", lat_ra_async, RA_FIGURE),
		FALLBACK_HOOK(s, "mm_filemap_fault", lat_ra_fault, RA_FIGURE),
		DRIVER_HOOKS(s, lat_drv),
	};
	bool stacks = c->o->key_fields & LAT_K_STACK;
	int n = 0, i, j, err;

	/* Hooks the options do not need are neither planned nor loaded. */
	for (i = 0; i < (int)(ARRAY_SIZE(hooks)); i++) {
		bool ra = hooks[i].v[0].prog == s->progs.lat_ra_sync ||
			  hooks[i].v[0].prog == s->progs.lat_ra_async ||
			  hooks[i].v[0].prog == s->progs.lat_ra_fault;
		bool drv = hooks[i].module; /* the driver's (--stage device) */
		bool off = (!needs_issue(c->o) && !strcmp(hooks[i].name, "block_rq_issue")) ||
			   (!needs_owner(c->o) && !needs_queue(c->o) && !drv &&
			    strncmp(hooks[i].name, "block_rq_", 9)) ||
			   (ra && !stacks) || (drv && c->o->stage != LAT_DEVICE);

		if (off)
			for (j = 0; j < ATTACH_MAX_VARIANTS && hooks[i].v[j].prog; j++)
				bpf_program__set_autoload(hooks[i].v[j].prog, false);
		else
			hooks[n++] = hooks[i];
	}
	err = bpfcmd_plan(&c->cmd, hooks, n, "give a smaller --max-entries");
	if (err || c->o->stage != LAT_DEVICE)
		return err;
	for (i = 0; i < c->cmd.nr_hooks; i++)
		if (c->cmd.hooks[i].module && c->cmd.hooks[i].chosen >= 0)
			return 0;
	return fail(
		-EOPNOTSUPP,
		"--stage device: no driver's hooks attach here (NVMe and SCSI "
		"need their modules loaded, virtio-blk fentry or kprobes); see 'iospan doctor'");
}

static int lat_setup(struct lat_ctx *c)
{
	static const char *const syms[] = {"iomap_dio_bio_end_io"};
	const struct lat_opts *o = c->o;
	struct lat_bpf *s;
	uint64_t addr = 0;
	int err;

	/* Read while the probes and the kernel's BTF are parsed (bpfcmd_prepare()). */
	if (needs_owner(o))
		bpfcmd_kernel_addrs_start(&c->cmd, syms, 1);
	err = bpfcmd_prepare(&c->cmd, "lat",
			     o->key_fields & LAT_K_CGROUP ? BPFCMD_CGROUP_NAMES : 0);
	if (err)
		return err;
	if (needs_owner(o))
		bpfcmd_kernel_addrs(&c->cmd, syms, &addr, 1,
				    "direct I/O is told by its pages, without its file");
	s = BPFCMD_OPEN_TARGETED(&c->cmd, lat, &o->filter);
	if (!s)
		return -errno;
	c->skel = s;
	s->rodata->stage = o->stage;
	s->rodata->drv_virtblk_major = driver_virtblk_major();
	s->rodata->key_fields = o->key_fields;
	s->rodata->unit = o->stage == LAT_SIZE ? 1024 : o->millis ? 1000000 : 1000;
	s->rodata->want_owner = needs_owner(o);
	s->rodata->blk_owner_want_stack = o->key_fields & LAT_K_STACK;
	s->rodata->follow_ra = o->key_fields & LAT_K_STACK;
	s->rodata->blk_owner_dio_end_io = addr;
	bpf_map__set_max_entries(s->maps.hists, o->max_entries);
	bpf_map__set_max_entries(s->maps.blk_owner_stack_ids,
				 o->key_fields & LAT_K_STACK ? LAT_STACK_ENTRIES : 1);
	s->rodata->blk_owner_nr_cpus = c->cmd.ncpus;
	if (!needs_owner(o))
		bpf_map__set_max_entries(s->maps.blk_owner_slots, 1);
	if (!needs_issue(o))
		bpf_map__set_max_entries(s->maps.rq_issues, 1);
	if (o->stage != LAT_SIZE)
		bpf_map__set_max_entries(s->maps.rq_parts, 1);
	if (!needs_queue(o))
		bpf_map__set_max_entries(s->maps.bio_qs, 1);
	if (!(o->key_fields & LAT_K_FILE))
		bpf_map__set_max_entries(s->maps.paths, 1);
	err = plan_hooks(c) ?: bpfcmd_load_filter(&c->cmd, &o->filter) ?: bpfcmd_attach(&c->cmd);
	if (err)
		return err;
	if ((o->key_fields & LAT_K_FILE) &&
	    fspath_cache_new(fspath_lookup_bpf_map, FSPATH_MAP_ARG(bpf_map__fd(s->maps.paths)),
			     &c->paths))
		return fail(-ENOMEM, "out of memory");
	/*
	 * Every request of one whole disk is counted or declared: /proc/diskstats, read
	 * once the programs run, can tell whether the kernel skipped any silently.
	 */
	if (o->filter.have_disk && !o->filter.disk.partition && !filter_opts_target(&o->filter)) {
		int64_t n = disk_requests(&o->filter.disk);

		c->ds_check = n >= 0;
		c->ds_start = n;
	}
	c->stacks.fd = o->key_fields & LAT_K_STACK ? bpf_map__fd(s->maps.blk_owner_stack_ids) : -1;
	return 0;
}

int lat_collect_open(const struct lat_opts *o, struct lat_ctx **out)
{
	struct lat_ctx *c = calloc(1, sizeof(*c));

	*out = c;
	if (!c)
		return fail(-ENOMEM, "out of memory");
	c->o = o;
	return lat_setup(c);
}

int lat_collect_read(struct lat_ctx *c, double seconds, struct lat_report *r)
{
	/* Before the maps: see check_diskstats(). */
	int64_t ds_now = c->ds_check ? disk_requests(&c->o->filter.disk) : -1;
	uint64_t skipped;
	int err;

	err = lat_report_read(&c->state, bpf_map__fd(c->skel->maps.hists),
			      bpf_map__fd(c->skel->maps.counters), r);
	if (err)
		return err;
	r->seconds = seconds;
	skipped = bpfcmd_missed_runs(&c->cmd);
	r->skipped = skipped - c->skipped;
	c->skipped = skipped;
	check_diskstats(c, r, ds_now);
	return 0;
}

struct bpfcmd *lat_collect_cmd(struct lat_ctx *c)
{
	return &c->cmd;
}

void lat_collect_view(struct lat_ctx *c, struct lat_view *v)
{
	v->o = c->o;
	v->cgmap = c->cmd.cgmap;
	v->ksyms = c->cmd.ksyms;
	v->stacks = &c->stacks;
	v->paths = c->paths;
}

void lat_collect_close(struct lat_ctx *c)
{
	if (!c)
		return;
	bpfcmd_close(&c->cmd);
	fspath_cache_free(c->paths);
	lat_stacks_free(&c->stacks);
	lat_state_free(&c->state);
	free(c);
}

void lat_opts_default(struct lat_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->stage = LAT_Q2C;
	o->max_entries = LAT_DEFAULT_ENTRIES;
}

int lat_collect_plan(plan_show_fn show, void *arg)
{
	struct lat_opts o;
	struct lat_ctx *c;
	char why[256];
	int err;

	lat_opts_default(&o);
	err_capture(why, sizeof(why));
	err = lat_collect_open(&o, &c);
	if (!c) {
		err_capture(NULL, 0);
		return err;
	}
	err = bpfcmd_plan_opened(&c->cmd, "lat", err, why, sizeof(why), show, arg);
	lat_collect_close(c);
	return err;
}
