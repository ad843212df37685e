/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iospan doctor: what this kernel supports, found by trying it, and which attach mode
 * the tracing commands would use here. Everything is gathered first (gather.c) and
 * rendered afterwards (render.c), so a failure can never leave half a JSON document.
 */
#ifndef IOSPAN_CMD_DOCTOR_H
#define IOSPAN_CMD_DOCTOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/utsname.h>

#include "probe.h"

/* Rows for the tracepoints of the brief's hook map that doctor looks for (gather.c). */
#define N_TP_ROWS 96

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

/* gather.c: everything the report says; 0 or an error reported. */
int doctor_gather(struct doctor_report *r);

/* render.c */
void doctor_render_text(const struct doctor_report *r);
void doctor_render_json(const struct doctor_report *r);

#endif
