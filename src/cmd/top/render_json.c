// SPDX-License-Identifier: GPL-2.0
/* iospan top: the report as one JSON document (one object per line when periodic). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "drvstatus.h"
#include "fspath.h"
#include "json.h"
#include "ksyms.h"
#include "probe.h"
#include "procinfo.h"
#include "top.h"

/* cgroup, container and who process @pid (a tgid) named @comm is beyond its comm. */
static void json_cgroup(struct top_ctx *c, struct jw *jw, uint32_t pid, const char *comm,
			uint64_t cgid)
{
	struct proc_ident id;
	struct cg_desc d;

	procinfo_get(c->procinfo, pid, comm, &id);
	jw_kv_string_or_null(jw, "cmdline", id.cmdline);
	jw_kv_string_or_null(jw, "blkio_cgroup", id.blkio);
	top_describe_cgroup(c, cgid, &d);
	jw_kv_string_or_null(jw, "cgroup", d.path);
	jw_kv_uint(jw, "cgroup_id", cgid);
	if (d.has_ct) {
		jw_kv_string(jw, "container", d.ct.id);
		jw_kv_string(jw, "container_runtime", d.ct.runtime);
	} else {
		jw_kv_null(jw, "container");
		jw_kv_null(jw, "container_runtime");
	}
}

static void json_dev(struct jw *jw, const char *key, uint32_t dev)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%u:%u", KDEV_MAJOR(dev), KDEV_MINOR(dev));
	jw_kv_string(jw, key, buf);
}

static void json_latency(struct jw *jw, const struct row *r)
{
	jw_kv_float(jw, "q2c_avg_us", top_avg_us(r->q2c_sum, r->nr_q2c), 1);
	jw_kv_float(jw, "q2c_max_us", r->q2c_max / 1e3, 1);
	jw_kv_float(jw, "d2c_avg_us", top_avg_us(r->d2c_sum, r->nr_d2c), 1);
	jw_kv_float(jw, "d2c_max_us", r->d2c_max / 1e3, 1);
	jw_kv_uint(jw, "requests", r->nr_q2c > r->nr_d2c ? r->nr_q2c : r->nr_d2c);
}

static void json_bytes(struct jw *jw, const struct row *r)
{
	jw_kv_uint(jw, "fs_read_bytes", r->fs_read);
	jw_kv_uint(jw, "fs_write_bytes", r->fs_write);
	jw_kv_uint(jw, "disk_read_bytes", r->disk_read);
	jw_kv_uint(jw, "disk_write_bytes", r->disk_write);
}

static void json_file(struct top_ctx *c, struct jw *jw, const struct row *r)
{
	char dname[DISK_NAME_LEN];
	const char *path;

	jw_start_object(jw);
	json_dev(jw, "dev", r->key.dev);
	jw_kv_string(jw, "disk", top_row_disk_name(c, r, dname, sizeof(dname)));
	jw_kv_string(jw, "kind", top_kind_name(r->key.ino));
	if (top_ino_special(r->key.ino)) {
		jw_kv_null(jw, "inode");
		jw_kv_null(jw, "path");
	} else {
		jw_kv_uint(jw, "inode", r->key.ino);
		path = top_file_path(c, r);
		jw_kv_string_or_null(jw, "path", path);
	}
	json_bytes(jw, r);
	json_latency(jw, r);
	jw_kv_bool(jw, "direct", r->flags & TOP_F_DIRECT);
	jw_kv_bool(jw, "writeback", r->flags & TOP_F_WRITEBACK);
	/* Without syscall tracing, dirtied pages are every buffered write, not just mmap. */
	jw_kv_bool(jw, "mmap",
		   (r->flags & TOP_F_MMAP_READ) ||
			   (!c->o->no_syscalls && (r->flags & TOP_F_PAGEDIRTY)));
	jw_kv_bool(jw, "fs_bytes_in_pages", r->flags & (TOP_F_PAGEDIRTY | TOP_F_PAGE_GRANULAR));
	jw_kv_bool(jw, "approximate", r->flags & (TOP_F_APPROX | TOP_F_LOST));
	jw_end_object(jw);
}

/* A process's cache flushes: totals, and per disk. */
static void json_flushes(struct top_ctx *c, struct jw *jw, const struct proc_agg *p)
{
	char dname[DISK_NAME_LEN];
	size_t i;

	jw_kv_uint(jw, "flush_requests", p->flush.nr_q2c);
	jw_kv_float(jw, "flush_avg_us", top_avg_us(p->flush.q2c_sum, p->flush.nr_q2c), 1);
	jw_kv_float(jw, "flush_max_us", p->flush.q2c_max / 1e3, 1);
	jw_kv_array(jw, "flushes");
	for (i = 0; i < p->nr_flush_rows; i++) {
		const struct row *r = p->flushes[i];

		jw_start_object(jw);
		json_dev(jw, "dev", r->key.dev);
		jw_kv_string(jw, "disk", top_row_disk_name(c, r, dname, sizeof(dname)));
		jw_kv_uint(jw, "requests", r->nr_q2c);
		jw_kv_float(jw, "avg_us", top_avg_us(r->q2c_sum, r->nr_q2c), 1);
		jw_kv_float(jw, "max_us", r->q2c_max / 1e3, 1);
		jw_end_object(jw);
	}
	jw_end_array(jw);
}

/* The file or directory table (JSON): "files" or "dirs". */
static void json_by(struct top_ctx *c, struct jw *jw, const struct report *rep)
{
	char dname[DISK_NAME_LEN];
	size_t i, j;

	if (c->o->by == BY_DIR)
		jw_kv_uint(jw, "dir_depth", c->o->dir_depth);
	jw_kv_array(jw, c->o->by == BY_FILE ? "files" : "dirs");
	for (i = 0; i < rep->nr_groups; i++) {
		const struct by_group *g = &rep->groups[i];
		bool special = top_ino_special(g->sum.key.ino);

		jw_start_object(jw);
		if (special)
			jw_kv_string(jw, "kind", top_kind_name(g->sum.key.ino));
		else
			jw_kv_string(jw, "kind", c->o->by == BY_DIR ? "dir" : "file");
		jw_kv_string_or_null(jw, "path", g->name);
		/* A directory may span file systems: only files and kinds have a device. */
		if (special || c->o->by == BY_FILE) {
			json_dev(jw, "dev", g->sum.key.dev);
			jw_kv_string(jw, "disk",
				     top_row_disk_name(c, &g->sum, dname, sizeof(dname)));
		}
		if (c->o->by == BY_FILE && !special)
			jw_kv_uint(jw, "inode", g->sum.key.ino);
		if (c->o->by == BY_DIR)
			jw_kv_uint(jw, "nr_files", g->nr_files);
		json_bytes(jw, &g->sum);
		json_latency(jw, &g->sum);
		jw_kv_bool(jw, "direct", g->sum.flags & TOP_F_DIRECT);
		jw_kv_bool(jw, "writeback", g->sum.flags & TOP_F_WRITEBACK);
		jw_kv_bool(jw, "approximate", g->sum.flags & (TOP_F_APPROX | TOP_F_LOST));
		jw_kv_uint(jw, "nr_processes", g->nr_pids);
		jw_kv_array(jw, "pids");
		for (j = 0; j < g->nr_pids; j++)
			jw_uint(jw, g->pids[j]);
		jw_end_array(jw);
		jw_end_object(jw);
	}
	jw_end_array(jw);
}

void top_render_json(struct top_ctx *c, struct jw *jw, struct report *rep)
{
	const struct top_opts *o = c->o;

	struct top_proc info, fl;
	char dname[DISK_NAME_LEN], sym[256];
	uint64_t j;
	size_t i;
	int k;

	jw_start_object(jw);
	jw_kv_string(jw, "mode", rep->snap->deltas ? "rate" : "total");
	jw_kv_float(jw, "duration_s", rep->snap->seconds, 3);
	jw_kv_float(jw, "timestamp", rep->snap->timestamp, 3);
	jw_kv_bool(jw, "stopped_early", rep->stopped);
	jw_kv_bool(jw, "threads", o->threads);
	jw_kv_bool(jw, "syscalls_traced", !o->no_syscalls);

	jw_kv_object(jw, "filters");
	jw_kv_uint_or_null(jw, "pid", o->filter.tf.pid, o->filter.tf.pid);
	jw_kv_uint_or_null(jw, "tid", o->filter.tf.tid, o->filter.tf.tid);
	jw_kv_string_or_null(jw, "comm", o->filter.tf.comm_on ? o->filter.tf.comm : NULL);
	jw_kv_string_or_null(jw, "cgroup", o->filter.have_cgroup ? o->filter.cgroup_rel : NULL);
	jw_kv_string_or_null(jw, "file", o->filter.have_file ? o->filter.file_arg : NULL);
	jw_kv_string_or_null(jw, "dir", o->filter.have_dir ? o->filter.dir_arg : NULL);
	jw_kv_string_or_null(jw, "disk", o->filter.have_disk ? o->filter.disk.name : NULL);
	jw_end_object(jw);

	/* --by file / dir: the files or directories, and the processes as always. */
	jw_kv_string(jw, "by", top_by_names[o->by]);
	if (o->by != BY_PROCESS)
		json_by(c, jw, rep);

	jw_kv_array(jw, "processes");
	for (i = 0; i < rep->nr_procs; i++) {
		const struct proc_agg *p = &rep->procs[i];

		if (p->pid == TOP_PID_NONE)
			continue;
		jw_start_object(jw);
		if (o->threads) {
			jw_kv_uint(jw, "pid", p->info.tgid ? p->info.tgid : p->pid);
			jw_kv_uint(jw, "tid", p->pid);
		} else {
			jw_kv_uint(jw, "pid", p->pid);
		}
		jw_kv_string(jw, "comm", p->info.comm);
		jw_kv_bool(jw, "kernel_thread", p->info.kthread);
		json_cgroup(c, jw, top_proc_tgid(p->pid, &p->info), p->info.comm, p->info.cgid);
		json_bytes(jw, &p->sum);
		jw_kv_uint(jw, "writeback_bytes", p->writeback_bytes);
		jw_kv_uint(jw, "nr_files", p->nr_files);
		json_latency(jw, &p->sum);
		json_flushes(c, jw, p);
		jw_kv_array(jw, "files");
		for (j = 0; j < p->nr_rows && j < o->max_files; j++)
			json_file(c, jw, p->files[j]);
		jw_end_array(jw);
		jw_kv_uint(jw, "files_omitted",
			   p->nr_rows > o->max_files ? p->nr_rows - o->max_files : 0);
		jw_end_object(jw);
	}
	jw_end_array(jw);

	/* No writeback rows: no array at all (qsort() takes none, even of 0 rows). */
	if (rep->snap->nr_wb)
		qsort(rep->snap->wb, rep->snap->nr_wb, sizeof(*rep->snap->wb), top_wb_bytes_cmp);
	jw_kv_array(jw, "writeback");
	for (i = 0; i < rep->snap->nr_wb; i++) {
		const struct wbrow *w = &rep->snap->wb[i];
		const char *path;

		if (!w->bytes)
			continue;
		top_proc_info(c, w->key.pid, &info);
		top_proc_info(c, w->key.flusher, &fl);
		jw_start_object(jw);
		jw_kv_uint(jw, "pid", w->key.pid);
		jw_kv_string(jw, "comm", info.comm);
		json_cgroup(c, jw, top_proc_tgid(w->key.pid, &info), info.comm, info.cgid);
		jw_kv_uint(jw, "flusher_tid", w->key.flusher);
		jw_kv_string(jw, "flusher_comm", fl.comm);
		json_dev(jw, "dev", w->key.dev);
		jw_kv_uint(jw, "inode", w->key.ino);
		path = top_wb_path(c, rep, w);
		jw_kv_string_or_null(jw, "path", path);
		jw_kv_uint(jw, "disk_write_bytes", w->bytes);
		jw_kv_uint(jw, "requests", w->nr);
		jw_end_object(jw);
	}
	jw_end_array(jw);

	jw_kv_array(jw, "unattributed");
	for (i = 0; i < rep->snap->nr_rows; i++) {
		const struct row *r = &rep->snap->rows[i];

		if (r->key.pid != TOP_PID_NONE || !top_row_active(r))
			continue;
		jw_start_object(jw);
		json_dev(jw, "dev", r->key.dev);
		jw_kv_string(jw, "disk",
			     disk_name_of(KDEV_MAJOR(r->key.dev), KDEV_MINOR(r->key.dev), dname,
					  sizeof(dname)));
		/* "flush": cache flushes whose requester is unknown (requests, latency). */
		jw_kv_string(jw, "kind", top_kind_name(r->key.ino));
		jw_kv_uint(jw, "disk_read_bytes", r->disk_read);
		jw_kv_uint(jw, "disk_write_bytes", r->disk_write);
		json_latency(jw, r);
		jw_kv_bool(jw, "includes_lost_rows", r->flags & TOP_F_LOST);
		jw_end_object(jw);
	}
	jw_end_array(jw);

	qsort(c->stalls, c->nr_stalls, sizeof(*c->stalls), top_stall_cmp);
	jw_kv_array(jw, "stalls");
	for (i = 0; i < c->nr_stalls; i++) {
		const struct stall_agg *a = &c->stalls[i];

		jw_start_object(jw);
		jw_kv_uint(jw, "tid", a->tid);
		jw_kv_uint(jw, "pid", a->tgid);
		jw_kv_string(jw, "comm", a->comm);
		json_cgroup(c, jw, a->tgid, a->comm, a->cgid);
		jw_kv_uint(jw, "count", a->count);
		jw_kv_float(jw, "total_ms", a->total_ns / 1e6, 3);
		jw_kv_float(jw, "max_ms", a->max_ns / 1e6, 3);
		jw_kv_array(jw, "stack");
		for (k = 0; k < a->nr_ips; k++)
			jw_string(jw, ksyms_format(c->cmd.ksyms, a->ips[k], sym, sizeof(sym)));
		jw_end_array(jw);
		jw_end_object(jw);
	}
	jw_end_array(jw);
	jw_kv_float(jw, "stall_threshold_ms", o->stall_ns ? o->stall_ns / 1e6 : NAN, 3);
	/* Why there are none to show: a stall belongs to no file. */
	jw_kv_bool(jw, "stalls_not_traced_by_file", o->filter.have_file || o->filter.have_dir);

	jw_kv_array(jw, "devices");
	for (i = 0; i < rep->nr_devs; i++) {
		const struct dev_cov *d = &rep->devs[i];
		uint64_t ds = d->ds_read + d->ds_write, seen = d->seen_read + d->seen_write;
		uint64_t unattr = d->unattr_read + d->unattr_write;
		bool flush_known, cov_known;
		char dev[32];

		jw_start_object(jw);
		snprintf(dev, sizeof(dev), "%u:%u", d->major, d->minor);
		jw_kv_string(jw, "dev", dev);
		jw_kv_string(jw, "disk", d->name);
		jw_kv_bool(jw, "traced", d->traced);
		jw_kv_uint(jw, "disk_read_bytes", d->seen_read);
		jw_kv_uint(jw, "disk_write_bytes", d->seen_write);
		jw_kv_uint(jw, "unattributed_bytes", unattr);
		jw_kv_uint_or_null(jw, "diskstats_read_bytes", d->ds_known, d->ds_read);
		jw_kv_uint_or_null(jw, "diskstats_write_bytes", d->ds_known, d->ds_write);
		jw_kv_uint(jw, "flush_requests", d->flushes);
		jw_kv_float(jw, "flush_time_ms", d->flush_ns / 1e6, 3);
		jw_kv_uint(jw, "flush_requests_untimed", d->flushes_untimed);
		jw_kv_float(jw, "flush_untimed_ms_max", d->flush_untimed_ns / 1e6, 3);
		flush_known = d->ds_known && d->ds_flush_known;
		jw_kv_uint_or_null(jw, "diskstats_flush_requests", flush_known, d->ds_flushes);
		jw_kv_uint_or_null(jw, "diskstats_flush_ms", flush_known, d->ds_flush_ms);
		cov_known = ds && d->traced && top_coverage_meaningful(o);
		jw_kv_float(jw, "coverage_pct", cov_known ? top_pct(seen, ds) : NAN, 2);
		jw_kv_float(jw, "attributed_pct", cov_known ? top_pct(seen - unattr, ds) : NAN, 2);
		jw_kv_object(jw, "unresolved");
		jw_kv_uint(jw, "requests", d->unresolved.requests);
		jw_kv_uint(jw, "read_bytes", d->unresolved.read_bytes);
		jw_kv_uint(jw, "write_bytes", d->unresolved.write_bytes);
		jw_kv_uint(jw, "flushes", d->unresolved.flushes);
		jw_kv_float(jw, "flush_ms_max", d->unresolved.flush_ns / 1e6, 3);
		jw_end_object(jw);
		drv_json_disk_stats(jw, "driver", &d->drv);
		jw_end_object(jw);
	}
	jw_end_array(jw);

	attach_plan_unavailable(c->cmd.hooks, c->cmd.nr_hooks, jw, "unavailable", NULL, NULL);
	jw_kv_object(jw, "dropped");
	counters_json(jw, top_counters, rep->snap->drops, TOP_DROP_NR);
	jw_kv_uint(jw, "stalls_not_kept", c->stalls_dropped);
	jw_kv_uint(jw, "idle_rows_pruned", c->pruned);
	jw_end_object(jw);

	jw_name(jw, "attach_plan");
	attach_plan_print(c->cmd.hooks, c->cmd.nr_hooks, jw);
	jw_end_object(jw);
	fflush(stdout);
}
