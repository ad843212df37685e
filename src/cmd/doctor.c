// SPDX-License-Identifier: GPL-2.0
/*
 * iospan doctor: what this kernel supports, found by trying it, and which attach mode
 * the tracing commands would use here. Everything is gathered first and rendered
 * afterwards, so a failure can never leave half a JSON document behind.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "iospan.h"
#include "args.h"
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
#define N_SYSCALLS (sizeof(doctor_syscalls) / sizeof(doctor_syscalls[0]))

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
#define N_TRACEPOINTS (sizeof(doctor_tracepoints) / sizeof(doctor_tracepoints[0]))
#define N_TP_ROWS     (2 * N_SYSCALLS + N_TRACEPOINTS)

/* One hook of a command's default attach plan, as evaluated here. */
struct plan_row {
	char cmd[16];
	char hook[48];
	char mode[16]; /* "" when nothing can attach */
	char target[64];
	char prog[64];
	bool optional;
};
#define MAX_PLAN_ROWS 128

struct tp_row {
	char name[64];
	bool btf;
	bool tracefs;
};

#define MAX_CHECKS 8

/* Whether a BPF command's own programs load and attach here, as it would run. */
struct cmd_check {
	char cmd[16];
	bool loaded;
	char error[256];
	const char *needs; /* the privilege it lacks, when that is why it fails (PRIV_*) */
};

struct doctor_report {
	struct utsname uts;
	struct probe_result feat[PROBE_NR];
	int tracefs_err;     /* from tracefs_ensure_mounted() or reading events/ */
	const char *tracefs; /* mount in use, or NULL */
	struct tp_row tps[N_TP_ROWS];
	int n_tps;
	char cgroup2[PATH_MAX];
	int cgroup2_err;
	struct probe_privs privs;
	int privs_err;
	int ksyms_err; /* 0 if kernel symbol addresses are readable */
	struct plan_row plans[MAX_PLAN_ROWS];
	int n_plans;
	struct cmd_check checks[MAX_CHECKS]; /* each BPF command set up for real */
	int n_checks;
	bool plans_complete; /* every command's plan could be built */
	bool ready;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: iospan doctor [--json] [-v]\n\n"
		"Reports what this kernel supports, by loading and attaching a tiny BPF program "
		"of\n"
		"each kind (never by reading the kernel config): BTF, tp_btf, raw_tp, classic\n"
		"tracepoints, fentry, kprobe, uprobe, ring buffer, task storage and stack maps;\n"
		"which tracepoints of the storage I/O path exist; the cgroup v2 mount; the\n"
		"process's BPF privileges; and the attach mode each tracing hook would use here.\n"
		"Mounts tracefs at /sys/kernel/tracing if it is not mounted.\n\n"
		"Options:\n"
		"  --json         one JSON document\n"
		"  -v, --verbose  also show each probe and libbpf's messages on stderr\n"
		"  -h, --help     this help\n\n"
		"Example:\n"
		"  iospan doctor                 # tables\n"
		"  iospan doctor --json | jq '.features.fentry'\n\n"
		"Exit codes: 0 report written (even if features are missing), 1 runtime\n"
		"failure, 2 bad usage. Manual: iospan-doctor(8).\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option long_opts[] = {COMMON_LONG_OPTS, {NULL, 0, NULL, 0}};
	int opt;

	while ((opt = getopt_long(argc, argv, COMMON_SHORT_OPTS, long_opts, NULL)) != -1) {
		if (args_common_opt(opt))
			continue;
		if (opt == OPT_HELP) {
			usage(stdout);
			return 1;
		}
		return args_bad_option("doctor", argv);
	}
	if (optind < argc)
		return fail_usage("unexpected argument '%s': doctor takes no arguments "
				  "(see 'iospan doctor --help')",
				  argv[optind]);
	return 0;
}

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

static int gather(struct doctor_report *r)
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

static const char *yesno(bool v)
{
	return v ? "yes" : "no";
}

/* Appends @word to a line wrapped under 100 columns, continuing at column @indent + 1. */
static void wrap_word(int *col, const char *word, int indent)
{
	int len = strlen(word);

	if (*col + 1 + len > 99) {
		printf("\n%*s", indent, "");
		*col = indent;
	}
	*col += printf(" %s", word);
}

/*
 * The verdict after "Ready: ": yes only if every command loads and attaches here;
 * when commands fail for lack of a privilege, which one, as the commands say it.
 */
static void verdict(const struct doctor_report *r, char *buf, size_t len)
{
	const char *needs = NULL;
	char cmds[64] = "";
	int i, n_failed = 0;
	bool all_privs = true;

	if (r->ready) {
		snprintf(buf, len, "yes, every command loads and attaches here");
		return;
	}
	for (i = 0; i < r->n_checks; i++) {
		const struct cmd_check *c = &r->checks[i];
		size_t used = strlen(cmds);

		if (c->loaded)
			continue;
		snprintf(cmds + used, sizeof(cmds) - used, "%s%s", n_failed ? " and " : "", c->cmd);
		n_failed++;
		if (!c->needs)
			all_privs = false;
		else if (!needs)
			needs = c->needs;
	}
	if (n_failed && all_privs)
		snprintf(buf, len, "no, %s need%s %s", cmds, n_failed > 1 ? "" : "s", needs);
	else
		snprintf(buf, len, "no, see the features and plans above");
}

/* Each privilege some feature lacks, with the features it blocks: one entry per PRIV_*. */
static int missing_privileges(const struct doctor_report *r, const char *needs[PROBE_NR])
{
	int i, j, n = 0;

	for (i = 0; i < PROBE_NR; i++) {
		if (!r->feat[i].needs)
			continue;
		for (j = 0; j < n && strcmp(needs[j], r->feat[i].needs); j++)
			;
		if (j == n)
			needs[n++] = r->feat[i].needs;
	}
	return n;
}

static void render_plans_text(const struct doctor_report *r)
{
	static const char *const modes[] = {"tp_btf", "raw_tp", "tracepoint",
					    "fentry", "kprobe", ""};
	char word[80];
	int i, j, m, col;
	bool any;

	for (i = 0; i < r->n_plans; i = j) {
		/* Rows of one command are consecutive. */
		for (j = i; j < r->n_plans && !strcmp(r->plans[j].cmd, r->plans[i].cmd); j++)
			;
		printf("  %s\n", r->plans[i].cmd);
		for (m = 0; m < (int)(sizeof(modes) / sizeof(modes[0])); m++) {
			any = false;
			for (int k = i; k < j; k++) {
				if (strcmp(r->plans[k].mode, modes[m]))
					continue;
				if (!any) {
					col = printf("    %-10s", modes[m][0] ? modes[m] : "none");
					any = true;
				}
				/* A required hook that cannot attach is marked with '!'. */
				snprintf(word, sizeof(word), "%s%s", r->plans[k].hook,
					 !modes[m][0] && !r->plans[k].optional ? "!" : "");
				wrap_word(&col, word, 14);
			}
			if (any)
				putchar('\n');
		}
	}
}

static void render_text(const struct doctor_report *r)
{
	const char *needs[PROBE_NR];
	int n_needs, col, j;
	char line[256];
	size_t i;

	printf("Kernel %s %s\n", printable(r->uts.release), printable(r->uts.machine));

	printf("\nBPF features (load and attach a tiny program of each kind)\n");
	for (i = 0; i < PROBE_NR; i++) {
		if (i == PROBE_BPF_STATS)
			continue;
		printf("  %-32s %-4s %s\n", probe_feature_desc(i), yesno(r->feat[i].ok),
		       r->feat[i].detail);
	}

	printf("\n%-44s %-13s %s\n", "Tracepoints", "tp_btf/raw_tp", "tracefs");
	for (i = 0; i < (size_t)r->n_tps; i++) {
		const struct tp_row *t = &r->tps[i];

		/* Without a readable tracefs only BTF can tell; "absent" needs both. */
		if (r->tracefs_err)
			printf("  %-42s %-13s %s\n", t->name, yesno(t->btf), "unknown");
		else if (!t->btf && !t->tracefs)
			printf("  %-42s %-13s %-7s absent\n", t->name, "no", "no");
		else
			printf("  %-42s %-13s %s\n", t->name, yesno(t->btf), yesno(t->tracefs));
	}

	printf("\nSystem\n");
	if (r->tracefs_err)
		printf("  %-32s %s (%s)\n", "tracefs", r->tracefs ? printable(r->tracefs) : "not mounted",
		       probe_errname(r->tracefs_err));
	else
		printf("  %-32s %s\n", "tracefs", printable(r->tracefs));
	if (r->cgroup2_err)
		printf("  %-32s not found (%s)\n", "cgroup v2", probe_errname(r->cgroup2_err));
	else
		printf("  %-32s %s\n", "cgroup v2", printable(r->cgroup2));
	printf("  %-32s %-4s %s (kernel.bpf_stats_enabled=%d now)\n",
	       probe_feature_desc(PROBE_BPF_STATS), yesno(r->feat[PROBE_BPF_STATS].ok),
	       r->feat[PROBE_BPF_STATS].ok ? "can be enabled" : r->feat[PROBE_BPF_STATS].detail,
	       r->privs.bpf_stats_enabled);
	/* trace's default off-CPU accounts: iowait is exact with it, blocked time without. */
	printf("  %-32s %-4s (kernel.task_delayacct=%d)\n", "delay accounting",
	       r->privs.task_delayacct == 1 ? "on" : "off", r->privs.task_delayacct);

	printf("\nPrivileges\n");
	if (r->privs_err) {
		printf("  unknown (%s)\n", probe_errname(r->privs_err));
	} else {
		printf("  %-32s %u / %u\n", "uid / euid", r->privs.uid, r->privs.euid);
		printf("  %-32s %s\n", "CAP_SYS_ADMIN", yesno(r->privs.cap_sys_admin));
		printf("  %-32s %s\n", "CAP_BPF", yesno(r->privs.cap_bpf));
		printf("  %-32s %s\n", "CAP_PERFMON", yesno(r->privs.cap_perfmon));
		printf("  %-32s %s\n", "CAP_SYS_RESOURCE", yesno(r->privs.cap_sys_resource));
		printf("  %-32s %s\n", "CAP_DAC_READ_SEARCH", yesno(r->privs.cap_dac_read_search));
		printf("  %-32s %s\n", "CAP_SYSLOG", yesno(r->privs.cap_syslog));
		printf("  %-32s %d\n", "kernel.unprivileged_bpf_disabled",
		       r->privs.unprivileged_bpf_disabled);
		printf("  %-32s %d\n", "kernel.perf_event_paranoid", r->privs.perf_event_paranoid);
		printf("  %-32s %d\n", "kernel.kptr_restrict", r->privs.kptr_restrict);
	}
	if (r->tracefs_err)
		printf("  %-32s no   %s\n", "tracefs events readable",
		       probe_errname(r->tracefs_err));
	else
		printf("  %-32s yes\n", "tracefs events readable");
	if (r->ksyms_err)
		printf("  %-32s no   %s\n", "kernel symbol addresses",
		       ksyms_strerror(r->ksyms_err));
	else
		printf("  %-32s yes\n", "kernel symbol addresses");
	n_needs = missing_privileges(r, needs);
	for (i = 0; i < (size_t)n_needs; i++) {
		printf("  %-32s %s\n", i ? "" : "missing", needs[i]);
		col = printf("%34s for", "");
		for (j = 0; j < PROBE_NR; j++)
			if (r->feat[j].needs && !strcmp(r->feat[j].needs, needs[i]))
				wrap_word(&col, probe_feature_name(j), 38);
		putchar('\n');
	}

	printf("\nAttach plans (each command's default hooks, by the mode they use here)\n");
	render_plans_text(r);
	printf("\nCommands (set up with their default options: programs loaded and attached)\n");
	for (i = 0; i < (size_t)r->n_checks; i++)
		printf("  %-8s %s%s\n", r->checks[i].cmd,
		       r->checks[i].loaded ? "works" : "FAILS: ", r->checks[i].error);
	verdict(r, line, sizeof(line));
	printf("\nReady: %s\n", line);
}

static void render_json(const struct doctor_report *r)
{
	struct jw *jw = jw_new(stdout);
	const char *needs[PROBE_NR];
	char line[256];
	int n_needs, j;
	size_t i;

	jw_start_object(jw);
	jw_kv_object(jw, "kernel");
	jw_kv_string(jw, "release", r->uts.release);
	jw_kv_string(jw, "machine", r->uts.machine);
	jw_end_object(jw);

	jw_kv_object(jw, "features");
	for (i = 0; i < PROBE_NR; i++) {
		if (i == PROBE_BPF_STATS)
			continue;
		jw_kv_object(jw, probe_feature_name(i));
		jw_kv_bool(jw, "ok", r->feat[i].ok);
		jw_kv_string(jw, "detail", r->feat[i].detail);
		if (r->feat[i].needs)
			jw_kv_string(jw, "needs", r->feat[i].needs);
		else
			jw_kv_null(jw, "needs");
		jw_end_object(jw);
	}
	jw_end_object(jw);

	jw_kv_array(jw, "tracepoints");
	for (i = 0; i < (size_t)r->n_tps; i++) {
		jw_start_object(jw);
		jw_kv_string(jw, "name", r->tps[i].name);
		jw_kv_bool(jw, "btf", r->tps[i].btf);
		if (r->tracefs_err)
			jw_kv_null(jw, "tracefs");
		else
			jw_kv_bool(jw, "tracefs", r->tps[i].tracefs);
		jw_end_object(jw);
	}
	jw_end_array(jw);

	jw_kv_object(jw, "tracefs");
	jw_kv_bool(jw, "ok", !r->tracefs_err);
	if (r->tracefs)
		jw_kv_string(jw, "path", r->tracefs);
	else
		jw_kv_null(jw, "path");
	jw_kv_string(jw, "detail", r->tracefs_err ? probe_errname(r->tracefs_err) : "");
	jw_end_object(jw);

	if (r->cgroup2_err)
		jw_kv_null(jw, "cgroup2");
	else
		jw_kv_string(jw, "cgroup2", r->cgroup2);

	jw_kv_object(jw, "privileges");
	if (!r->privs_err) {
		jw_kv_uint(jw, "uid", r->privs.uid);
		jw_kv_uint(jw, "euid", r->privs.euid);
		jw_kv_bool(jw, "cap_sys_admin", r->privs.cap_sys_admin);
		jw_kv_bool(jw, "cap_bpf", r->privs.cap_bpf);
		jw_kv_bool(jw, "cap_perfmon", r->privs.cap_perfmon);
		jw_kv_bool(jw, "cap_sys_resource", r->privs.cap_sys_resource);
		jw_kv_bool(jw, "cap_dac_read_search", r->privs.cap_dac_read_search);
		jw_kv_bool(jw, "cap_syslog", r->privs.cap_syslog);
		jw_kv_int(jw, "unprivileged_bpf_disabled", r->privs.unprivileged_bpf_disabled);
		jw_kv_int(jw, "perf_event_paranoid", r->privs.perf_event_paranoid);
		jw_kv_int(jw, "kptr_restrict", r->privs.kptr_restrict);
	}
	jw_kv_bool(jw, "tracefs_readable", !r->tracefs_err);
	jw_kv_bool(jw, "kernel_symbols", !r->ksyms_err);
	if (r->ksyms_err)
		jw_kv_string(jw, "kernel_symbols_detail", ksyms_strerror(r->ksyms_err));
	else
		jw_kv_null(jw, "kernel_symbols_detail");
	/* {"<privilege>": ["<feature>", ...]}: what each missing privilege blocks. */
	jw_kv_object(jw, "missing");
	n_needs = missing_privileges(r, needs);
	for (i = 0; i < (size_t)n_needs; i++) {
		jw_kv_array(jw, needs[i]);
		for (j = 0; j < PROBE_NR; j++)
			if (r->feat[j].needs && !strcmp(r->feat[j].needs, needs[i]))
				jw_string(jw, probe_feature_name(j));
		jw_end_array(jw);
	}
	jw_end_object(jw);
	jw_end_object(jw);

	jw_kv_object(jw, "bpf_stats");
	jw_kv_bool(jw, "ok", r->feat[PROBE_BPF_STATS].ok);
	jw_kv_string(jw, "detail", r->feat[PROBE_BPF_STATS].detail);
	jw_kv_int(jw, "enabled", r->privs.bpf_stats_enabled);
	jw_end_object(jw);
	jw_kv_int(jw, "task_delayacct", r->privs.task_delayacct);

	jw_kv_object(jw, "plans");
	for (i = 0; i < (size_t)r->n_plans; i++) {
		const struct plan_row *p = &r->plans[i];

		if (!i || strcmp(p->cmd, r->plans[i - 1].cmd)) {
			if (i)
				jw_end_object(jw);
			jw_kv_object(jw, p->cmd);
		}
		jw_kv_object(jw, p->hook);
		if (p->mode[0]) {
			jw_kv_string(jw, "mode", p->mode);
			jw_kv_string(jw, "target", p->target);
		} else {
			jw_kv_null(jw, "mode");
			jw_kv_null(jw, "target");
		}
		if (p->prog[0])
			jw_kv_string(jw, "program", p->prog);
		else
			jw_kv_null(jw, "program");
		jw_kv_bool(jw, "optional", p->optional);
		jw_end_object(jw);
	}
	if (r->n_plans)
		jw_end_object(jw);
	jw_end_object(jw);

	jw_kv_object(jw, "commands");
	for (i = 0; i < (size_t)r->n_checks; i++) {
		jw_kv_object(jw, r->checks[i].cmd);
		jw_kv_bool(jw, "loaded", r->checks[i].loaded);
		if (r->checks[i].loaded)
			jw_kv_null(jw, "error");
		else
			jw_kv_string(jw, "error", r->checks[i].error);
		if (r->checks[i].needs)
			jw_kv_string(jw, "needs", r->checks[i].needs);
		else
			jw_kv_null(jw, "needs");
		jw_end_object(jw);
	}
	jw_end_object(jw);
	jw_kv_bool(jw, "ready", r->ready);
	verdict(r, line, sizeof(line));
	jw_kv_string(jw, "verdict", line);
	jw_end_object(jw);
	jw_free(jw);
}

int cmd_doctor(int argc, char **argv)
{
	static struct doctor_report report;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err < 0 ? err : 0;

	probe_setup_libbpf_print();
	err = gather(&report);
	if (err)
		goto cleanup;
	if (gopts.json)
		render_json(&report);
	else
		render_text(&report);
cleanup:
	probe_cleanup();
	return err;
}
