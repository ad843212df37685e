// SPDX-License-Identifier: GPL-2.0
/* iospan doctor: gathering what the kernel supports, and each command's plan. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "array.h"
#include "iospan.h"
#include "args.h"
#include "doctor.h"
#include "err.h"
#include "json.h"
#include "ksyms.h"
#include "printable.h"
#include "probe.h"

/* Syscalls whose sys_enter_/sys_exit_ tracepoints the tracing commands use. */
static const char *const doctor_syscalls[] = {
	"read",	     "write",	  "pread64",	     "pwrite64",       "readv",
	"writev",    "preadv",	  "pwritev",	     "preadv2",	       "pwritev2",
	"fsync",     "fdatasync", "sync_file_range", "io_uring_enter", "truncate",
	"ftruncate", "fallocate",
};

/* The rest of the brief's hook map, as "category:name". */
static const char *const doctor_tracepoints[] = {
	"iomap:iomap_dio_rw_begin",
	"iomap:iomap_dio_complete",
	"filemap:mm_filemap_get_pages",
	"filemap:mm_filemap_fault",
	"filemap:mm_filemap_map_pages",
	"filemap:mm_filemap_add_to_page_cache",
	"readahead:page_cache_sync_ra",
	"readahead:page_cache_async_ra",
	"writeback:writeback_dirty_folio",
	"writeback:writeback_single_inode_start",
	"writeback:writeback_single_inode",
	"writeback:wbc_writepage",
	"writeback:folio_wait_writeback",
	"block:block_bio_queue",
	"block:block_bio_backmerge",
	"block:block_bio_frontmerge",
	"block:block_split",
	"block:block_getrq",
	"block:block_rq_insert",
	"block:block_rq_issue",
	"block:block_rq_complete",
	"block:block_rq_requeue",
	"block:block_rq_error",
	"block:block_io_start",
	"block:block_io_done",
	"block:block_bio_complete",
	"block:block_plug",
	"block:block_unplug",
	"nvme:nvme_setup_cmd",
	"nvme:nvme_complete_rq",
	"scsi:scsi_dispatch_cmd_start",
	"scsi:scsi_dispatch_cmd_done",
	"sched:sched_switch",
	"sched:sched_wakeup",
	"sched:sched_process_exit",
};
#define N_SYSCALLS    (ARRAY_SIZE(doctor_syscalls))
#define N_TRACEPOINTS (ARRAY_SIZE(doctor_tracepoints))
_Static_assert(2 * N_SYSCALLS + N_TRACEPOINTS <= N_TP_ROWS, "N_TP_ROWS");

static void gather_tracepoints(struct doctor_report *r)
{
	char cat[32];
	size_t i;

	for (i = 0; i < 2 * N_SYSCALLS; i++) {
		struct tp_row *row = &r->tps[r->n_tps++];
		const char *sc = doctor_syscalls[i / 2];
		const char *dir = i % 2 ? "exit" : "enter";

		snprintf(row->name, sizeof(row->name), "syscalls:sys_%s_%s", dir, sc);
		row->btf = tracepoint_in_btf(row->name + strlen("syscalls:"));
		row->tracefs = tracepoint_in_tracefs("syscalls", row->name + strlen("syscalls:"));
	}
	for (i = 0; i < N_TRACEPOINTS; i++) {
		struct tp_row *row = &r->tps[r->n_tps++];
		const char *colon = strchr(doctor_tracepoints[i], ':');
		size_t len = colon - doctor_tracepoints[i];

		snprintf(row->name, sizeof(row->name), "%s", doctor_tracepoints[i]);
		snprintf(cat, sizeof(cat), "%.*s", (int)len, doctor_tracepoints[i]);
		row->btf = tracepoint_in_btf(colon + 1);
		row->tracefs = tracepoint_in_tracefs(cat, colon + 1);
	}
}

/*
 * plan_show_fn: records a command's plan: the one in use if its programs loaded and
 * attached, else the one it would try (doctor reports, it does not refuse).
 */
static void collect_plan(const char *cmd, struct attach_hook *hooks, int n, const char *load_err,
			 void *arg)
{
	struct doctor_report *r = arg;
	const struct attach_variant *v;
	const char *needs = NULL;
	struct plan_row *row;
	int i;

	if (n > MAX_PLAN_ROWS)
		n = MAX_PLAN_ROWS;
	if (load_err) {
		/* Why it failed, by the command's own rules: privileges first, then hooks. */
		attach_plan_evaluate(hooks, n, &needs);
		if (probe_bpf_caps_missing())
			needs = PRIV_BPF;
	}
	if (r->n_checks < MAX_CHECKS) {
		struct cmd_check *check = &r->checks[r->n_checks++];

		snprintf(check->cmd, sizeof(check->cmd), "%s", cmd);
		check->loaded = !load_err;
		snprintf(check->error, sizeof(check->error), "%s", load_err ? load_err : "");
		check->needs = needs;
	}
	info("attach plan of '%s':", cmd);
	attach_plan_print(hooks, n, NULL);
	for (i = 0; i < n && r->n_plans < MAX_PLAN_ROWS; i++) {
		row = &r->plans[r->n_plans++];
		memset(row, 0, sizeof(*row));
		snprintf(row->cmd, sizeof(row->cmd), "%s", cmd);
		snprintf(row->hook, sizeof(row->hook), "%s", hooks[i].name);
		row->optional = hooks[i].optional;
		if (hooks[i].chosen < 0)
			continue;
		v = &hooks[i].v[hooks[i].chosen];
		snprintf(row->mode, sizeof(row->mode), "%s", attach_mode_name(v->mode));
		snprintf(row->target, sizeof(row->target), "%s", v->target ? v->target : "");
		if (v->prog)
			snprintf(row->prog, sizeof(row->prog), "%s", bpf_program__name(v->prog));
	}
}

int doctor_gather(struct doctor_report *r)
{
	const struct cmd *cmds;
	size_t n_cmds;
	size_t i;
	int err;

	uname(&r->uts);

	r->tracefs_err = tracefs_ensure_mounted();
	r->tracefs = tracefs_path();
	/* Mounted is not enough: without root its events/ directory is closed. */
	if (r->tracefs && !r->tracefs_err)
		r->tracefs_err = tracefs_events_access();

	for (i = 0; i < PROBE_NR; i++) {
		err = probe_feature(i, &r->feat[i]);
		if (err)
			return fail(err, "cannot run the %s probe: %s", probe_feature_name(i),
				    strerror(-err));
	}

	gather_tracepoints(r);

	r->cgroup2_err = probe_cgroup2_mount(r->cgroup2, sizeof(r->cgroup2));
	r->privs_err = probe_privileges(&r->privs);
	r->ksyms_err = ksyms_readable();

	/* The real default plan of every BPF command, from its own skeleton. */
	cmds = iospan_commands(&n_cmds);
	r->plans_complete = true;
	for (i = 0; i < n_cmds; i++) {
		if (!cmds[i].plan)
			continue;
		err = cmds[i].plan(collect_plan, r);
		if (err) {
			warn("cannot build the attach plan of '%s': %s", cmds[i].name,
			     strerror(-err));
			r->plans_complete = false;
		}
	}
	r->ready = r->feat[PROBE_RINGBUF].ok && r->plans_complete && r->n_checks;
	for (i = 0; i < (size_t)r->n_plans; i++)
		if (!r->plans[i].optional && !r->plans[i].mode[0])
			r->ready = false;
	for (i = 0; i < (size_t)r->n_checks; i++)
		if (!r->checks[i].loaded)
			r->ready = false;
	return 0;
}
