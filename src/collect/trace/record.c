// SPDX-License-Identifier: GPL-2.0
/* What a slow request's record says: who, which file, flag and event names, timeline. */
#include "priv.h"
#include "drvstatus.h"

double trace_us(uint64_t ns)
{
	return ns / 1000.0;
}

const char *trace_fmt_dur(uint64_t ns, char *buf, size_t len)
{
	return fmt_ns(ns, buf, len);
}

const char *trace_dev_name(uint32_t dev, char *buf, size_t len)
{
	return disk_name_of(KDEV_MAJOR(dev), KDEV_MINOR(dev), buf, len);
}

const char *trace_cgroup_name(struct trace_ctx *c, uint64_t cgid)
{
	const char *p = c->cmd.cgmap && cgid ? cgroup_map_path(c->cmd.cgmap, cgid) : NULL;

	return p ? p : "?";
}

int trace_lookup_title(void *arg, uint32_t tgid, struct proc_title *t)
{
	struct trace_ctx *c = arg;

	return bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.titles), &tgid, t) ? -errno : 0;
}

/* Where a request's off-CPU accounts come from: JSON "offcpu_from". */
static const char *offcpu_source(const struct trace_ctx *c, const struct trace_rec *r)
{
	if (!trace_op_in_thread(r->op) || r->flags & TRACE_F_NO_OFFCPU)
		return "none"; /* not run by a thread of its own, or a fault */
	if (c->o->offcpu_periods)
		return "sched_switch";
	return c->o->delayacct ? "counters_delayacct" : "counters";
}

int trace_lookup_path(void *arg, const struct file_key *key, struct file_path *p)
{
	struct trace_ctx *c = arg;

	return bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.paths), key, p) ? -errno : 0;
}

/*
 * The user-visible path of the request's file as it was when the request ended, or
 * NULL if it was not captured (r->file: the capture's id).
 */
const char *trace_rec_path(struct trace_ctx *c, const struct trace_rec *r, char *buf, size_t len)
{
	char name[DISK_NAME_LEN];

	if (r->flags & TRACE_F_BLKDEV) {
		snprintf(buf, len, "/dev/%s", trace_dev_name(r->dev, name, sizeof(name)));
		return buf;
	}
	return fspath_of_id(c->paths, r->dev, r->ino, r->file);
}

void trace_rec_names(struct trace_ctx *c, const struct trace_rec *r, struct trace_names *n)
{
	n->owner_known = r->op != TRACE_OP_WRITEBACK || r->pid;
	n->path = trace_rec_path(c, r, n->path_buf, sizeof(n->path_buf));
	n->offcpu_from = offcpu_source(c, r);
	if (!n->owner_known) {
		memset(&n->id, 0, sizeof(n->id));
		n->name = "(unknown dirtier)";
		n->cgroup = n->group = "?";
		return;
	}
	/*
	 * Its title if it set one, else its comm; its cgroup v2 path, or its cgroup v1
	 * blkio group for a process in the v2 root (blk-throttle limits it there).
	 */
	procinfo_get(c->procinfo, r->pid, r->comm, &n->id);
	n->name = n->id.title && n->id.cmdline ? n->id.cmdline : r->comm[0] ? r->comm : "?";
	n->cgroup = n->group = trace_cgroup_name(c, r->cgid);
	if (n->id.blkio && (!strcmp(n->cgroup, "/") || !strcmp(n->cgroup, "?"))) {
		snprintf(n->group_buf, sizeof(n->group_buf), "blkio:%s", n->id.blkio);
		n->group = n->group_buf;
	}
}

static const char *const ev_names[TRACE_EV_NR] = {
	[TRACE_EV_PC_LOOKUP] = "pagecache_lookup",
	[TRACE_EV_PC_ADD] = "pagecache_add",
	[TRACE_EV_RA_SYNC] = "readahead_sync",
	[TRACE_EV_RA_ASYNC] = "readahead_async",
	[TRACE_EV_OFFCPU] = "offcpu",
	[TRACE_EV_DIO] = "direct_io",
	[TRACE_EV_WB_DONE] = "writeback_submitted",
	[TRACE_EV_FAULT] = "fault",
};

const char *trace_ev_name(uint32_t type)
{
	return type < TRACE_EV_NR && ev_names[type] ? ev_names[type] : "?";
}

const struct trace_flag_name trace_bio_flag_names[] = {
	{TRACE_BIO_MERGED, "merged"},
	{TRACE_BIO_SPLIT, "split"},
	{TRACE_BIO_REQUEUED, "requeued"},
	{TRACE_BIO_ERROR, "error"},
	{TRACE_BIO_KTHREAD, "kthread"},
	{TRACE_BIO_FLUSH, "flush"},
	{TRACE_BIO_NO_ISSUE, "no_issue_time"},
	{TRACE_BIO_PARTIAL, "partial"},
	{TRACE_BIO_THROTTLED, "throttled"},
	{TRACE_BIO_DRV_TIMEOUT, "driver_timeout"},
	{TRACE_BIO_DRV_REFUSED, "driver_refused"},
	{0, NULL},
};

const struct trace_flag_name trace_rec_flag_names[] = {
	{TRACE_F_DIRECT, "direct"},
	{TRACE_F_BLKDEV, "blockdev"},
	{TRACE_F_LATE_BIOS, "bios_in_flight_at_end"},
	{TRACE_F_UNSEEN_DONE, "bio_completion_not_seen"},
	{TRACE_F_END_APPROX, "end_approximate"},
	{TRACE_F_KTHREAD_BIO, "kthread_resubmitted"},
	{TRACE_F_NO_OFFCPU, "offcpu_unknown"},
	{TRACE_F_IOWAIT_BLOCKED, "iowait_is_blocked_time"},
	{0, NULL},
};

char trace_bio_dir(const struct trace_bio *b)
{
	if (b->flags & TRACE_BIO_FLUSH && !b->bytes)
		return 'F';
	return b->flags & TRACE_BIO_WRITE ? 'W' : 'R';
}

bool trace_rec_has_drv_stages(const struct trace_rec *r)
{
	__u64 st[3];

	return trace_rec_has_block_stages(r) &&
	       trace_drv_split(r->crit_d, r->crit_ds, r->crit_dc, r->last_c, st);
}

bool trace_bio_drv_stages(const struct trace_bio *b, uint64_t st[3])
{
	__u64 s[3];

	if (!trace_drv_split(b->d, b->ds, b->dc, b->c, s))
		return false;
	st[0] = s[0];
	st[1] = s[1];
	st[2] = s[2];
	return true;
}

void trace_json_driver(struct jw *jw, const struct trace_bio *b, uint64_t start)
{
	char text[160];
	uint64_t st[3];

	if (b->drv.kind == DRV_NONE) {
		jw_kv_null(jw, "driver");
		return;
	}
	jw_kv_object(jw, "driver");
	jw_kv_string(jw, "kind", drv_kind_name(b->drv.kind) ?: "?");
	jw_kv_uint(jw, "hwq", b->hwq);
	jw_kv_uint(jw, "tag", b->drv_tag);
	if (b->drv.kind == DRV_NVME)
		jw_kv_uint(jw, "cid", b->cid);
	else
		jw_kv_null(jw, "cid");
	if (b->ds && b->ds >= start)
		jw_kv_float(jw, "submit_us", (b->ds - start) / 1e3, 3);
	else
		jw_kv_null(jw, "submit_us");
	if (b->dc && b->dc >= start)
		jw_kv_float(jw, "complete_us", (b->dc - start) / 1e3, 3);
	else
		jw_kv_null(jw, "complete_us");
	if (trace_bio_drv_stages(b, st)) {
		jw_kv_float(jw, "drv_in_us", st[0] / 1e3, 3);
		jw_kv_float(jw, "device_us", st[1] / 1e3, 3);
		jw_kv_float(jw, "drv_out_us", st[2] / 1e3, 3);
	} else {
		jw_kv_null(jw, "drv_in_us");
		jw_kv_null(jw, "device_us");
		jw_kv_null(jw, "drv_out_us");
	}
	jw_kv_uint(jw, "status", b->drv.status);
	jw_kv_string(jw, "status_text", drv_status_text(&b->drv, text, sizeof(text)));
	if (b->drv.kind == DRV_SCSI && (b->drv.status & 0xff) == 0x02) {
		jw_kv_uint(jw, "sense_key", b->drv.sense_key);
		jw_kv_uint(jw, "asc", b->drv.asc);
		jw_kv_uint(jw, "ascq", b->drv.ascq);
	}
	jw_kv_uint(jw, "failed_attempts", b->drv_fails);
	jw_kv_bool(jw, "timeout", b->flags & TRACE_BIO_DRV_TIMEOUT);
	jw_end_object(jw);
}

/* Bios not recorded in the record (past TRACE_MAX_BIOS). */
uint32_t trace_bios_missing(const struct trace_rec *r)
{
	return r->nr_done > r->nr_bios ? r->nr_done - r->nr_bios : 0;
}

static int tl_cmp(const void *a, const void *b)
{
	const struct tl_item *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->order - y->order;
}

static void tl_add(struct tl_item *v, int *n, uint64_t ts, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void tl_add(struct tl_item *v, int *n, uint64_t ts, const char *fmt, ...)
{
	va_list ap;

	if (*n >= TL_MAX)
		return;
	v[*n].ts = ts;
	v[*n].order = *n;
	va_start(ap, fmt);
	vsnprintf(v[*n].text, sizeof(v[*n].text), fmt, ap);
	va_end(ap);
	(*n)++;
}

/* What starts and what ends a request of @op on its timeline: {start, end}. */
static const char *const *edge_labels(uint32_t op)
{
	static const char *const syscall[] = {"syscall enter", "syscall exit"};
	static const char *const fault[] = {"page fault", "fault done"};
	static const char *const writeback[] = {"writeback start", "last bio completed"};
	static const char *const aio[] = {"direct I/O submitted", "direct I/O completed"};

	if (op == TRACE_OP_FAULT)
		return fault;
	if (op == TRACE_OP_WRITEBACK)
		return writeback;
	return op == TRACE_OP_AIO_READ || op == TRACE_OP_AIO_WRITE ? aio : syscall;
}

int trace_timeline(const struct trace_rec *r, struct tl_item *v)
{
	char dn[DISK_NAME_LEN], b1[UNITS_BUF];
	unsigned int i;
	int n = 0;

	tl_add(v, &n, r->start, "%s %s", edge_labels(r->op)[0], trace_op_name(r->op));
	for (i = 0; i < r->nr_events && i < TRACE_MAX_EVENTS; i++) {
		const struct trace_evt *e = &r->events[i];

		switch (e->type) {
		case TRACE_EV_OFFCPU:
			tl_add(v, &n, e->ts, "off CPU %s%s", trace_fmt_dur(e->arg, b1, sizeof(b1)),
			       e->arg2 ? " (iowait)" : "");
			break;
		case TRACE_EV_PC_LOOKUP:
		case TRACE_EV_PC_ADD:
		case TRACE_EV_RA_SYNC:
		case TRACE_EV_RA_ASYNC:
			tl_add(v, &n, e->ts, "%s index %" PRIu64 " pages %u",
			       trace_ev_name(e->type), (uint64_t)e->arg, e->arg2);
			break;
		case TRACE_EV_DIO:
			tl_add(v, &n, e->ts, "direct I/O %s %s", e->arg2 ? "write" : "read",
			       fmt_bytes(e->arg, b1, sizeof(b1)));
			break;
		case TRACE_EV_WB_DONE:
			tl_add(v, &n, e->ts, "writeback submitted, %" PRIu64 " pages",
			       (uint64_t)e->arg);
			break;
		case TRACE_EV_FAULT:
			tl_add(v, &n, e->ts, "fault at page %" PRIu64, (uint64_t)e->arg);
			break;
		default:
			tl_add(v, &n, e->ts, "%s %" PRIu64, trace_ev_name(e->type),
			       (uint64_t)e->arg);
		}
	}
	for (i = 0; i < r->nr_bios && i < TRACE_MAX_BIOS; i++) {
		const struct trace_bio *b = &r->bios[i];

		trace_dev_name(b->dev, dn, sizeof(dn));
		tl_add(v, &n, b->q, "Q bio#%u %s %c %" PRIu64 " + %u", i, printable(dn),
		       trace_bio_dir(b), (uint64_t)b->sector, b->bytes / 512);
		if (b->flags & TRACE_BIO_SPLIT)
			tl_add(v, &n, b->q, "X bio#%u split", i);
		if (b->flags & TRACE_BIO_MERGED)
			tl_add(v, &n, b->g, "M bio#%u merged into a request", i);
		else
			tl_add(v, &n, b->g, "G bio#%u request allocated", i);
		if (b->h && b->q > b->h)
			tl_add(v, &n, b->h, "bio#%u held by blk-throttle from about here", i);
		if (b->i > b->g)
			tl_add(v, &n, b->i, "I bio#%u inserted", i);
		if (!(b->flags & TRACE_BIO_NO_ISSUE))
			tl_add(v, &n, b->d, "D bio#%u issued%s", i,
			       b->requeues ? " (after requeue)" : "");
		if (b->ds && b->dc)
			tl_add(v, &n, b->ds, "bio#%u %s command submitted", i,
			       drv_kind_name(b->drv.kind) ?: "driver");
		if (b->dc)
			tl_add(v, &n, b->dc, "bio#%u %s completion taken%s", i,
			       drv_kind_name(b->drv.kind) ?: "driver",
			       b->drv.status ? " (error)" : "");
		tl_add(v, &n, b->c, "C bio#%u completed%s", i, b->error ? " with error" : "");
	}
	tl_add(v, &n, r->end, "%s", edge_labels(r->op)[1]);
	qsort(v, n, sizeof(*v), tl_cmp);
	return n;
}

void trace_json_flags(struct jw *jw, const char *key, uint32_t flags, bool bio)
{
	unsigned int i;

	jw_kv_array(jw, key);
	if (bio) {
		for (i = 0; trace_bio_flag_names[i].name; i++)
			if (flags & trace_bio_flag_names[i].bit)
				jw_string(jw, trace_bio_flag_names[i].name);
	} else {
		for (i = 0; trace_rec_flag_names[i].name; i++)
			if (flags & trace_rec_flag_names[i].bit)
				jw_string(jw, trace_rec_flag_names[i].name);
	}
	jw_end_array(jw);
}
