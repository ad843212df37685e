// SPDX-License-Identifier: GPL-2.0
/* iospan top: the report as text tables, under 100 columns. */
#include <inttypes.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroups.h"
#include "drvstatus.h"
#include "fspath.h"
#include "ksyms.h"
#include "printable.h"
#include "probe.h"
#include "procinfo.h"
#include "units.h"
#include "top.h"

/* @s cut from the left to @width characters ("...tail"), into @buf. */
static const char *trunc_left(const char *s, size_t width, char *buf, size_t len)
{
	size_t n = strlen(s);

	if (n <= width || width < 4)
		return s;
	snprintf(buf, len, "...%s", s + n - (width - 3));
	return buf;
}

/*
 * The CGROUP/CONTAINER cell of process @pid (a tgid) named @comm: a container's short
 * id, else the cgroup path's tail; for a process in the cgroup v2 root, its cgroup v1
 * blkio group if it is in one (that is where blk-throttle limits it).
 */
static const char *cgroup_cell(struct top_ctx *c, uint32_t pid, const char *comm, uint64_t cgid,
			       size_t width, char *buf, size_t len)
{
	struct proc_ident id;
	char tmp[64];
	struct cg_desc d;

	top_describe_cgroup(c, cgid, &d);
	procinfo_get(c->procinfo, pid, comm, &id);
	if (d.has_ct)
		snprintf(buf, len, "%s", printable(d.ct.id));
	else if (id.blkio && (!d.path || !strcmp(d.path, "/")))
		snprintf(buf, len, "blkio:%.57s",
			 trunc_left(printable(id.blkio), width - 6, tmp, sizeof(tmp)));
	else if (!d.path)
		snprintf(buf, len, "cgid:%" PRIu64, cgid);
	else
		snprintf(buf, len, "%s", trunc_left(printable(d.path), width, tmp, sizeof(tmp)));
	return buf;
}

/*
 * Milliseconds in at most 4 characters, so "avg/max" fits the table: ".05", "4.2",
 * "120", "1.5k" (1.5 s), "12k".
 */
static void fmt_ms(double ms, char *buf, size_t len)
{
	if (ms < 0.995) {
		snprintf(buf, len, "%.2f", ms);
		memmove(buf, buf + 1, strlen(buf)); /* "0.05" -> ".05" */
	} else if (ms < 9.95) {
		snprintf(buf, len, "%.1f", ms);
	} else if (ms < 999.5) {
		snprintf(buf, len, "%.0f", ms);
	} else if (ms < 9950) {
		snprintf(buf, len, "%.1fk", ms / 1000);
	} else {
		snprintf(buf, len, "%.0fk", ms / 1000);
	}
}

/* "avg/max" in ms, or "-" without samples. */
static const char *lat_cell(uint64_t sum, uint64_t nr, uint64_t max, char *buf, size_t len)
{
	char a[16], m[16];

	if (!nr)
		return "-";
	fmt_ms(sum / 1e6 / nr, a, sizeof(a));
	fmt_ms(max / 1e6, m, sizeof(m));
	snprintf(buf, len, "%s/%s", a, m);
	return buf;
}

/* A byte column's header: periodic reports show rates, and say so ("/s"). */
#define BYTES_HDR(rep, total, rate) ((rep)->snap->deltas ? (rate) : (total))

static const char *bytes_cell(const struct report *rep, uint64_t v, char *buf, size_t len)
{
	return rep->snap->deltas ? fmt_rate(v, rep->snap->seconds, buf, len) :
				   fmt_bytes(v, buf, len);
}

/* A count (or its rate per second) in at most 5 characters: "12", "4.5", "1234", "56k". */
static const char *count_cell(const struct report *rep, uint64_t n, char *buf, size_t len)
{
	double v = rep->snap->deltas && rep->snap->seconds > 0 ? n / rep->snap->seconds : n;

	if (rep->snap->deltas && v < 9.95)
		snprintf(buf, len, "%.1f", v);
	else if (v < 99999.5)
		snprintf(buf, len, "%.0f", v);
	else if (v < 9999.5e3)
		snprintf(buf, len, "%.0fk", v / 1e3);
	else
		snprintf(buf, len, "%.0fM", v / 1e6);
	return buf;
}

static void marks(uint32_t flags, char *buf)
{
	char *p = buf;

	if (flags & TOP_F_DIRECT)
		*p++ = 'D';
	if (flags & TOP_F_WRITEBACK)
		*p++ = 'W';
	if (flags & TOP_F_MMAP_READ)
		*p++ = 'M';
	if (flags & TOP_F_PAGEDIRTY)
		*p++ = 'P';
	if (flags & (TOP_F_APPROX | TOP_F_LOST))
		*p++ = '~';
	*p = '\0';
}

/* A row's byte columns (FS and disk, read and write) and latency columns, as text. */
struct row_cells {
	char bytes[4][UNITS_BUF];
	char q2c[40], d2c[40];
};

static void row_cells(struct row_cells *rc, const struct report *rep, const struct row *r)
{
	bytes_cell(rep, r->fs_read, rc->bytes[0], UNITS_BUF);
	bytes_cell(rep, r->fs_write, rc->bytes[1], UNITS_BUF);
	bytes_cell(rep, r->disk_read, rc->bytes[2], UNITS_BUF);
	bytes_cell(rep, r->disk_write, rc->bytes[3], UNITS_BUF);
	lat_cell(r->q2c_sum, r->nr_q2c, r->q2c_max, rc->q2c, sizeof(rc->q2c));
	lat_cell(r->d2c_sum, r->nr_d2c, r->d2c_max, rc->d2c, sizeof(rc->d2c));
}

static void print_file_row(struct top_ctx *c, const struct report *rep, const struct row *r)
{
	char id[112], mk[8], pbuf[PATH_MAX], dname[DISK_NAME_LEN];
	struct row_cells rc;
	const char *path;

	top_row_disk_name(c, r, dname, sizeof(dname));
	marks(r->flags, mk);
	if (top_ino_special(r->key.ino))
		snprintf(id, sizeof(id), "%s %s", printable(dname), top_kind_name(r->key.ino));
	else
		snprintf(id, sizeof(id), "%s ino %" PRIu64, printable(dname), (uint64_t)r->key.ino);
	row_cells(&rc, rep, r);
	printf("  %-31.31s %-3s %7s %8s %9s %10s %5s %8s %8s\n", id, mk, rc.bytes[0], rc.bytes[1],
	       rc.bytes[2], rc.bytes[3], "", rc.q2c, rc.d2c);
	if (top_ino_special(r->key.ino))
		path = top_kind_label(r->key.ino);
	else
		path = top_file_path(c, r);
	if (!path)
		path = "(path not captured)";
	printf("      %s\n", trunc_left(printable(path), 93, pbuf, sizeof(pbuf)));
}

/* A process's cache flushes on one disk: how many (FILES column) and how long (Q2C). */
static void print_flush_row(struct top_ctx *c, const struct report *rep, const struct row *r)
{
	char n[UNITS_BUF], q[40], d[40], id[112], dname[DISK_NAME_LEN];

	top_row_disk_name(c, r, dname, sizeof(dname));
	snprintf(id, sizeof(id), "%s flush", dname);
	printf("  %-31.31s %-3s %7s %8s %9s %10s %5s %8s %8s\n", id, "", "-", "-", "-", "-",
	       count_cell(rep, r->nr_q2c, n, sizeof(n)),
	       lat_cell(r->q2c_sum, r->nr_q2c, r->q2c_max, q, sizeof(q)),
	       lat_cell(r->d2c_sum, r->nr_d2c, r->d2c_max, d, sizeof(d)));
	printf("      %s\n", top_kind_label(r->key.ino));
}

/* A title the process set ("postgres: checkpointer"), on a line of its own. */
static void print_title(struct top_ctx *c, uint32_t pid, const char *comm)
{
	struct proc_ident id;

	procinfo_get(c->procinfo, pid, comm, &id);
	if (id.title && id.cmdline)
		printf("  \"%.91s\"\n", printable(id.cmdline));
}

static void render_processes(struct top_ctx *c, const struct report *rep)
{
	const struct top_opts *o = c->o;
	struct row_cells rc;
	uint64_t shown = 0, j;
	char cg[64];
	size_t i;

	printf("%-7s %-12s %-16s %7s %8s %9s %10s %5s %8s %8s\n", o->threads ? "TID" : "PID",
	       "COMMAND", "CGROUP/CONTAINER", BYTES_HDR(rep, "FS_READ", "FS_RD/s"),
	       BYTES_HDR(rep, "FS_WRITE", "FS_WR/s"), BYTES_HDR(rep, "DISK_READ", "DISK_RD/s"),
	       BYTES_HDR(rep, "DISK_WRITE", "DISK_WR/s"), "FILES", "Q2C_MS", "D2C_MS");
	for (i = 0; i < rep->nr_procs && shown < o->max_procs; i++) {
		const struct proc_agg *p = &rep->procs[i];

		if (p->pid == TOP_PID_NONE)
			continue;
		shown++;
		row_cells(&rc, rep, &p->sum);
		printf("%-7u %-12.12s %-16s %7s %8s %9s %10s %5u %8s %8s\n", p->pid,
		       printable(p->info.comm),
		       cgroup_cell(c, top_proc_tgid(p->pid, &p->info), p->info.comm, p->info.cgid,
				   16, cg, sizeof(cg)),
		       rc.bytes[0], rc.bytes[1], rc.bytes[2], rc.bytes[3], p->nr_files, rc.q2c,
		       rc.d2c);
		print_title(c, top_proc_tgid(p->pid, &p->info), p->info.comm);
		for (j = 0; j < p->nr_flush_rows; j++)
			print_flush_row(c, rep, p->flushes[j]);
		for (j = 0; j < p->nr_rows && j < o->max_files; j++)
			print_file_row(c, rep, p->files[j]);
		if (p->nr_rows > o->max_files && o->max_files)
			printf("  ... %zu more\n", p->nr_rows - (size_t)o->max_files);
	}
	if (!shown)
		printf("(no I/O by any process)\n");
}

static void render_writeback(struct top_ctx *c, const struct report *rep, struct wbrow *wb,
			     size_t nr)
{
	char b[UNITS_BUF], cg[64], fl[40], pbuf[PATH_MAX];
	struct top_proc src, flusher;
	const char *path;
	size_t i, shown = 0;

	for (i = 0; i < nr; i++)
		if (wb[i].bytes)
			shown++;
	if (!shown)
		return;
	printf("\nWRITEBACK: pages written by another thread, credited to the process that "
	       "dirtied them\n");
	printf("%-7s %-12s %-16s %-24s %10s\n", "PID", "COMMAND", "CGROUP/CONTAINER", "FLUSHED BY",
	       BYTES_HDR(rep, "DISK_WRITE", "DISK_WR/s"));
	for (i = 0, shown = 0; i < nr && shown < 2 * c->o->max_procs; i++) {
		if (!wb[i].bytes)
			continue;
		shown++;
		top_proc_info(c, wb[i].key.pid, &src);
		top_proc_info(c, wb[i].key.flusher, &flusher);
		snprintf(fl, sizeof(fl), "%s (%u)", printable(flusher.comm), wb[i].key.flusher);
		printf("%-7u %-12.12s %-16s %-24.24s %10s\n", wb[i].key.pid, printable(src.comm),
		       cgroup_cell(c, top_proc_tgid(wb[i].key.pid, &src), src.comm, src.cgid, 16,
				   cg, sizeof(cg)),
		       fl, bytes_cell(rep, wb[i].bytes, b, sizeof(b)));
		path = top_wb_path(c, rep, &wb[i]);
		printf("      %s\n", trunc_left(path ? printable(path) : "(path not captured)", 93,
						pbuf, sizeof(pbuf)));
	}
}

static int nofile_cmp(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;
	uint64_t vx = x->disk_read + x->disk_write, vy = y->disk_read + y->disk_write;

	if (vx != vy)
		return vx > vy ? -1 : 1;
	return top_key_cmp(&x->key, &y->key);
}

static int render_nofile(struct top_ctx *c, const struct report *rep)
{
	char b[2][UNITS_BUF], q[40], d[40], dname[DISK_NAME_LEN];
	struct top_proc info;
	struct row **v;
	size_t i, n = 0;

	v = calloc(rep->snap->nr_rows ? rep->snap->nr_rows : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < rep->snap->nr_rows; i++)
		if (top_ino_special(rep->snap->rows[i].key.ino) &&
		    (rep->snap->rows[i].disk_read || rep->snap->rows[i].disk_write))
			v[n++] = &rep->snap->rows[i];
	if (n) {
		qsort(v, n, sizeof(*v), nofile_cmp);
		printf("\nNO FILE: I/O that belongs to no file (kept, never dropped)\n");
		printf("%-7s %-14s %-8s %-13s %9s %10s %8s %8s\n", "PID", "COMMAND", "DEVICE",
		       "KIND", BYTES_HDR(rep, "DISK_READ", "DISK_RD/s"),
		       BYTES_HDR(rep, "DISK_WRITE", "DISK_WR/s"), "Q2C_MS", "D2C_MS");
	}
	for (i = 0; i < n && i < 2 * c->o->max_procs; i++) {
		const struct row *r = v[i];
		char pid[16];

		top_proc_info(c, r->key.pid, &info);
		if (r->key.pid == TOP_PID_NONE)
			snprintf(pid, sizeof(pid), "-");
		else
			snprintf(pid, sizeof(pid), "%u", r->key.pid);
		disk_name_of(KDEV_MAJOR(r->key.dev), KDEV_MINOR(r->key.dev), dname, sizeof(dname));
		printf("%-7s %-14.14s %-8.8s %-13s %9s %10s %8s %8s\n", pid, printable(info.comm),
		       printable(dname), top_kind_name(r->key.ino),
		       bytes_cell(rep, r->disk_read, b[0], UNITS_BUF),
		       bytes_cell(rep, r->disk_write, b[1], UNITS_BUF),
		       lat_cell(r->q2c_sum, r->nr_q2c, r->q2c_max, q, sizeof(q)),
		       lat_cell(r->d2c_sum, r->nr_d2c, r->d2c_max, d, sizeof(d)));
	}
	free(v);
	return 0;
}

static void render_stalls(struct top_ctx *c)
{
	char cg[64], tot[UNITS_BUF], max[UNITS_BUF], thr[UNITS_BUF], sym[256];
	size_t i;
	int j;

	if (c->o->filter.have_file || c->o->filter.have_dir) {
		printf("\nI/O STALLS: not traced with --file or --dir (a stall belongs to no "
		       "file)\n");
		return;
	}
	if (!c->o->stall_ns)
		return;
	fmt_ns(c->o->stall_ns, thr, sizeof(thr));
	if (!c->nr_stalls) {
		printf("\nI/O STALLS: no thread waited for I/O longer than %s\n", thr);
		return;
	}
	qsort(c->stalls, c->nr_stalls, sizeof(*c->stalls), top_stall_cmp);
	printf("\nI/O STALLS: threads that waited for I/O longer than %s\n", thr);
	printf("%-7s %-7s %-15s %-16s %5s %8s %8s\n", "TID", "PID", "COMMAND", "CGROUP/CONTAINER",
	       "COUNT", "TOTAL", "MAX");
	for (i = 0; i < c->nr_stalls && i < c->o->max_procs; i++) {
		const struct stall_agg *a = &c->stalls[i];

		printf("%-7u %-7u %-15.15s %-16s %5" PRIu64 " %8s %8s\n", a->tid, a->tgid,
		       printable(a->comm),
		       cgroup_cell(c, a->tgid, a->comm, a->cgid, 16, cg, sizeof(cg)), a->count,
		       fmt_ns(a->total_ns, tot, sizeof(tot)), fmt_ns(a->max_ns, max, sizeof(max)));
		for (j = 0; j < a->nr_ips; j++)
			printf("        %s\n",
			       ksyms_format(c->cmd.ksyms, a->ips[j], sym, sizeof(sym)));
		if (!a->nr_ips)
			printf("        (no stack)\n");
	}
	if (c->nr_stalls > c->o->max_procs)
		printf("... %zu more\n", c->nr_stalls - (size_t)c->o->max_procs);
}

/*
 * What a disk's line above does not include: flushes counted without their time, and
 * requests issued before /proc/diskstats was read that top has not seen complete.
 */
static void render_unresolved(const struct dev_cov *d)
{
	const struct rq_open *u = &d->unresolved;
	char b[3][UNITS_BUF];

	if (d->flushes_untimed)
		printf("%s: %" PRIu64 " of its flushes untimed (completion not seen, request "
		       "issued again), at most %s\n",
		       printable(d->name), d->flushes_untimed,
		       fmt_ns(d->flush_untimed_ns, b[0], sizeof(b[0])));
	if (u->requests)
		printf("%s: %" PRIu64 " requests (%s read, %s written, %" PRIu64 " flushes) not "
		       "seen complete:\n  in flight, or completed without top's program "
		       "running; in /proc/diskstats' numbers or not\n",
		       printable(d->name), u->requests,
		       fmt_bytes(u->read_bytes, b[1], sizeof(b[1])),
		       fmt_bytes(u->write_bytes, b[2], sizeof(b[2])), u->flushes);
}

/* A disk's driver trouble in the window, under the coverage table (nothing if none). */
static void render_driver(const struct dev_cov *d)
{
	const struct drv_disk_stats *s = &d->drv;
	char text[160];

	if (!s->errors && !s->timeouts && !s->dispatch_errors && !s->requeues)
		return;
	printf("  %s: %" PRIu64 " requeued", printable(d->name), (uint64_t)s->requeues);
	if (s->last.kind)
		printf(", %s driver: %" PRIu64 " commands, %" PRIu64 " errors, %" PRIu64
		       " timeouts, %" PRIu64 " refused",
		       drv_kind_name(s->last.kind) ?: "?", (uint64_t)s->cmds, (uint64_t)s->errors,
		       (uint64_t)s->timeouts, (uint64_t)s->dispatch_errors);
	if (s->last.status)
		printf("; last error: %s", drv_status_text(&s->last, text, sizeof(text)));
	printf("\n");
}

static void render_coverage(struct top_ctx *c, const struct report *rep)
{
	char b[4][UNITS_BUF];
	size_t i;

	if (!rep->nr_devs)
		return;
	printf("\nCOVERAGE: bytes iospan counted vs /proc/diskstats in the same window; the\n"
	       "disk's cache flushes\n");
	printf("%-8s %10s %11s %9s %10s %8s %10s %7s %8s\n", "DISK",
	       BYTES_HDR(rep, "DS_READ", "DS_RD/s"), BYTES_HDR(rep, "DS_WRITE", "DS_WR/s"),
	       BYTES_HDR(rep, "SEEN_READ", "SEEN_RD/s"), BYTES_HDR(rep, "SEEN_WRITE", "SEEN_WR/s"),
	       "COVERAGE", "ATTRIBUTED", BYTES_HDR(rep, "FLUSHES", "FLUSH/s"), "FLUSH_MS");
	for (i = 0; i < rep->nr_devs; i++) {
		const struct dev_cov *d = &rep->devs[i];
		uint64_t ds = d->ds_read + d->ds_write, seen = d->seen_read + d->seen_write;
		uint64_t attr = seen - d->unattr_read - d->unattr_write;
		char cov[16], att[16], fl[UNITS_BUF], flms[40];

		if (!d->traced) {
			snprintf(cov, sizeof(cov), "untraced");
			snprintf(att, sizeof(att), "-");
		} else if (!top_coverage_meaningful(c->o)) {
			snprintf(cov, sizeof(cov), "filtered");
			snprintf(att, sizeof(att), "-");
		} else if (!ds) {
			snprintf(cov, sizeof(cov), seen ? "-" : "idle");
			snprintf(att, sizeof(att), "-");
		} else {
			snprintf(cov, sizeof(cov), "%.1f%%", top_pct(seen, ds));
			snprintf(att, sizeof(att), "%.1f%%", top_pct(attr, ds));
		}
		if (d->flushes)
			fmt_ms(d->flush_ns / 1e6 / d->flushes, flms, sizeof(flms));
		else
			snprintf(flms, sizeof(flms), "-");
		printf("%-8.8s %10s %11s %9s %10s %8s %10s %7s %8s\n", printable(d->name),
		       bytes_cell(rep, d->ds_read, b[0], UNITS_BUF),
		       bytes_cell(rep, d->ds_write, b[1], UNITS_BUF),
		       bytes_cell(rep, d->seen_read, b[2], UNITS_BUF),
		       bytes_cell(rep, d->seen_write, b[3], UNITS_BUF), cov, att,
		       count_cell(rep, d->flushes, fl, sizeof(fl)), flms);
	}
	for (i = 0; i < rep->nr_devs; i++) {
		render_unresolved(&rep->devs[i]);
		render_driver(&rep->devs[i]);
	}
}

static void render_drops(struct top_ctx *c, const struct report *rep)
{
	bool any = false;
	int i;

	printf("\nLOST:");
	for (i = 0; i < TOP_DROP_NR; i++) {
		if (!rep->snap->drops[i] || top_counters[i].info)
			continue;
		printf("%s %s %" PRIu64, any ? "," : "", top_counters[i].name, rep->snap->drops[i]);
		any = true;
	}
	if (c->stalls_dropped) {
		printf("%s stalls_not_kept %" PRIu64, any ? "," : "", c->stalls_dropped);
		any = true;
	}
	printf("%s\n", any ? "" : " nothing");
	attach_plan_unavailable(c->cmd.hooks, c->cmd.nr_hooks, NULL, NULL, stdout, "");
	if (rep->snap->drops[TOP_DROP_RQ_UNSEEN]) {
		char b[UNITS_BUF];

		printf("(requests that completed without top's program running: %" PRIu64
		       ", found when issued again;\n their %s on the unattributed rows, "
		       "flushes untimed)\n",
		       rep->snap->drops[TOP_DROP_RQ_UNSEEN],
		       fmt_bytes(rep->snap->drops[TOP_DROP_RQ_UNSEEN_BYTES], b, sizeof(b)));
	}
	if (rep->snap->drops[TOP_DROP_UNMATCHED])
		printf("(bios completed without an owner record: %" PRIu64
		       ", counted as unattributed)\n",
		       rep->snap->drops[TOP_DROP_UNMATCHED]);
	if (rep->snap->drops[TOP_DROP_WB_UNKNOWN_BYTES]) {
		char b[UNITS_BUF];

		printf("(page cache writes with no dirtier on record: %s, credited to the thread "
		       "that wrote them:\n dirtied before tracing, by a kernel thread, or records "
		       "recycled)\n",
		       fmt_bytes(rep->snap->drops[TOP_DROP_WB_UNKNOWN_BYTES], b, sizeof(b)));
	}
	printf("Marks: D direct I/O, W written back by another thread, M mmap faults, "
	       "P dirtied pages,\n~ approximate. Q2C/D2C: avg/max ms (k = seconds), from request "
	       "start / issue.\nFlush rows: requests that waited for a cache flush (FILES "
	       "column), their time (Q2C).\n");
}

/* The first cell of a file or directory row: where it is, or how many files. */
static const char *group_id(struct top_ctx *c, const struct by_group *g, char *buf, size_t len)
{
	char dname[DISK_NAME_LEN];

	top_row_disk_name(c, &g->sum, dname, sizeof(dname));
	if (top_ino_special(g->sum.key.ino))
		snprintf(buf, len, "%s %s", dname, top_kind_name(g->sum.key.ino));
	else if (c->o->by == BY_FILE)
		snprintf(buf, len, "%s ino %" PRIu64, dname, (uint64_t)g->sum.key.ino);
	else
		snprintf(buf, len, "%u file%s", g->nr_files, g->nr_files == 1 ? "" : "s");
	return buf;
}

static const char *group_name(const struct by_group *g)
{
	if (top_ino_special(g->sum.key.ino))
		return top_kind_label(g->sum.key.ino);
	return g->name ? g->name : "(path not captured)";
}

/* The file or directory table (text). */
static void render_by(struct top_ctx *c, const struct report *rep)
{
	char id[112], mk[8], pbuf[PATH_MAX], head[40];
	const struct top_opts *o = c->o;
	struct row_cells rc;
	size_t i;

	if (o->by == BY_FILE)
		snprintf(head, sizeof(head), "FILE");
	else
		snprintf(head, sizeof(head), "DIRECTORY (depth %" PRIu64 ")", o->dir_depth);
	printf("%-31s %-3s %7s %8s %9s %10s %5s %8s %8s\n", head, "MK", "FS_READ", "FS_WRITE",
	       "DISK_READ", "DISK_WRITE", "PROCS", "Q2C_MS", "D2C_MS");
	for (i = 0; i < rep->nr_groups && i < o->max_procs; i++) {
		const struct by_group *g = &rep->groups[i];

		marks(g->sum.flags, mk);
		row_cells(&rc, rep, &g->sum);
		printf("%-31.31s %-3s %7s %8s %9s %10s %5zu %8s %8s\n",
		       group_id(c, g, id, sizeof(id)), mk, rc.bytes[0], rc.bytes[1], rc.bytes[2],
		       rc.bytes[3], g->nr_pids, rc.q2c, rc.d2c);
		printf("      %s\n", trunc_left(group_name(g), 93, pbuf, sizeof(pbuf)));
	}
	if (rep->nr_groups > o->max_procs)
		printf("... %zu more\n", rep->nr_groups - (size_t)o->max_procs);
	if (!rep->nr_groups)
		printf("(no I/O to any file)\n");
}

void top_render_text(struct top_ctx *c, struct report *rep)
{
	char when[64];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (rep->snap->deltas && isatty(STDOUT_FILENO))
		printf("\033[H\033[2J");
	printf("iospan top  %s  %.1f s%s%s\n\n", when, rep->snap->seconds,
	       rep->snap->deltas ? ", rates per second" : ", totals",
	       rep->stopped ? " (stopped early)" : "");
	if (c->o->by == BY_PROCESS)
		render_processes(c, rep);
	else
		render_by(c, rep);
	render_writeback(c, rep, rep->snap->wb, rep->snap->nr_wb);
	render_nofile(c, rep);
	render_stalls(c);
	render_coverage(c, rep);
	render_drops(c, rep);
	if (rep->snap->deltas)
		printf("\n");
	fflush(stdout);
}
