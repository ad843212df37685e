// SPDX-License-Identifier: GPL-2.0
/* iospan doctor: the report as text or as one JSON document. */
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
		for (m = 0; m < (int)(ARRAY_SIZE(modes)); m++) {
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

void doctor_render_text(const struct doctor_report *r)
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
		printf("  %-32s %s (%s)\n", "tracefs",
		       r->tracefs ? printable(r->tracefs) : "not mounted",
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

void doctor_render_json(const struct doctor_report *r)
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
		jw_kv_string_or_null(jw, "needs", r->feat[i].needs);
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
	jw_kv_string_or_null(jw, "path", r->tracefs);
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
	jw_kv_string_or_null(jw, "kernel_symbols_detail",
			     r->ksyms_err ? ksyms_strerror(r->ksyms_err) : NULL);
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
		jw_kv_string_or_null(jw, "mode", p->mode[0] ? p->mode : NULL);
		jw_kv_string_or_null(jw, "target", p->mode[0] ? p->target : NULL);
		jw_kv_string_or_null(jw, "program", p->prog[0] ? p->prog : NULL);
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
		jw_kv_string_or_null(jw, "needs", r->checks[i].needs);
		jw_end_object(jw);
	}
	jw_end_object(jw);
	jw_kv_bool(jw, "ready", r->ready);
	verdict(r, line, sizeof(line));
	jw_kv_string(jw, "verdict", line);
	jw_end_object(jw);
	jw_free(jw);
}
