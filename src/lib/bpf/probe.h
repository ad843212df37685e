/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What this kernel can do, found by trying it: each feature is probed by loading (and
 * where meaningful attaching) a tiny program, never by reading kernel config or version.
 * Results are cached for the life of the process.
 *
 * Commands use the attach plan: each hook lists its program variants in order of
 * preference, attach_plan_choose() keeps the first one that works here and disables
 * the others, so a missing kernel feature costs a fallback instead of a failure.
 */
#ifndef IOSPAN_PROBE_H
#define IOSPAN_PROBE_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <sys/types.h>

struct bpf_program;
struct btf;
struct jw;

enum probe_feature {
	PROBE_BTF,	       /* vmlinux BTF loadable */
	PROBE_TP_BTF,	       /* BTF-typed tracepoints (tp_btf) */
	PROBE_RAW_TP,	       /* raw tracepoints */
	PROBE_TRACEPOINT,      /* classic tracefs tracepoints */
	PROBE_FENTRY,	       /* fentry/fexit trampolines */
	PROBE_KPROBE,	       /* kprobes */
	PROBE_UPROBE,	       /* uprobes */
	PROBE_RINGBUF,	       /* BPF_MAP_TYPE_RINGBUF + bpf_ringbuf_reserve */
	PROBE_TASK_STORAGE,    /* BPF_MAP_TYPE_TASK_STORAGE + bpf_task_storage_get */
	PROBE_STACK_TRACE_MAP, /* BPF_MAP_TYPE_STACK_TRACE + bpf_get_stackid */
	PROBE_GET_STACK,       /* bpf_get_stack into a buffer */
	PROBE_KPTR_CAST,       /* kfunc bpf_rdonly_cast: typed views of untyped pointers */
	PROBE_LOOP,	       /* helper bpf_loop: bounded loops over bios and pages */
	PROBE_BPF_STATS,       /* bpf_enable_stats(BPF_STATS_RUN_TIME) */
	PROBE_NR,
};

struct probe_result {
	bool ok;
	int err;	  /* negative errno of the failing step, 0 if ok */
	char detail[64];  /* "load: EPERM", "attach: ENOENT", "126586 types" */
	const char *step; /* the failing step ("load", "attach", "tracefs"), NULL if ok */
	/*
	 * What the process lacks, when that is why the probe failed (one of the PRIV_*
	 * strings); NULL when the kernel refused it whatever the privileges.
	 */
	const char *needs;
};

/* Privileges a probe or an attach can lack, as told to the user. */
#define PRIV_BPF	   "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"
#define PRIV_PERFMON	   "CAP_PERFMON (or CAP_SYS_ADMIN)"
#define PRIV_SYS_ADMIN	   "CAP_SYS_ADMIN"
#define PRIV_TRACEFS_MOUNT "CAP_SYS_ADMIN to mount tracefs"
#define PRIV_TRACEFS_READ  "read access to tracefs events (uid 0, or CAP_DAC_READ_SEARCH)"
#define PRIV_KSYMS	   "CAP_SYSLOG"

/* Short stable name ("tp_btf", "ringbuf", ...), used as the JSON key. */
const char *probe_feature_name(enum probe_feature f);
/* One-line description for tables. */
const char *probe_feature_desc(enum probe_feature f);

/*
 * Runs the probe once and caches the result. Returns 0 when the probe ran (whatever
 * its outcome, see @res), or a negative errno if it could not run at all.
 */
int probe_feature(enum probe_feature f, struct probe_result *res);
/*
 * Starts the probes every BPF command needs (kptr_cast, tp_btf, tracepoint) side by
 * side in threads: each loads a program of its own, and one after the other they
 * took a third of start-up. probe_feature() waits for the one it asks about.
 */
void probe_prefetch(void);
/* Cached shortcut: true only if the feature was probed and works. */
bool probe_has(enum probe_feature f);

/* vmlinux BTF, loaded once; NULL if unavailable. Owned by this module. */
const struct btf *probe_vmlinux_btf(void);
/* A `btf_trace_<name>` typedef exists: usable as tp_btf/<name> and raw_tp/<name>. */
bool tracepoint_in_btf(const char *name);
/* The kernel function is described in vmlinux BTF (fentry/kprobe target). */
bool kernel_func_in_btf(const char *name);
/* The BTF of a loaded kernel module (split on vmlinux's), cached; NULL if not loaded. */
const struct btf *probe_module_btf(const char *module);

/*
 * IOSPAN_FAULT="map_nomem,...": kernel failures to act out, so that tests reach the
 * paths that handle them (see docs/iospan-doctor.md).
 */
bool fault_injected(const char *name);
/* events/<category>/<name> exists in tracefs (false if tracefs is not mounted). */
bool tracepoint_in_tracefs(const char *category, const char *name);
/*
 * 1 if events/<category>/<name> exists in tracefs, 0 if not, a negative errno if this
 * process cannot tell: -ENOENT without tracefs, -EACCES when tracefs is closed to it
 * (mode 0700 root: classic tracepoints then cannot attach, their ids are in there).
 */
int tracefs_event_state(const char *category, const char *name);
/* 0 if this process can read tracefs's events/ directory, else a negative errno. */
int tracefs_events_access(void);
/* Mounts tracefs at /sys/kernel/tracing unless some tracefs is already reachable. */
int tracefs_ensure_mounted(void);
/* The tracefs directory in use, or NULL if none is mounted. */
const char *tracefs_path(void);

/* First cgroup v2 mount point from /proc/self/mountinfo; -ENOENT if none. */
int probe_cgroup2_mount(char *buf, size_t len);

struct probe_privs {
	uid_t uid, euid;
	bool cap_sys_admin;
	bool cap_bpf;
	bool cap_perfmon;
	bool cap_sys_resource;
	bool cap_dac_read_search;      /* or CAP_DAC_OVERRIDE: reads tracefs whoever owns it */
	bool cap_syslog;	       /* kernel addresses in /proc/kallsyms */
	int unprivileged_bpf_disabled; /* -1 if unreadable */
	int perf_event_paranoid;       /* -1 if unreadable */
	int kptr_restrict;	       /* -1 if unreadable */
	int bpf_stats_enabled;	       /* -1 if unreadable */
	int task_delayacct;	       /* -1 if unreadable (no CONFIG_TASK_DELAY_ACCT) */
};

/* The integer at the start of a /proc or /sys file, or -1. */
int read_int_file(const char *path);

/* Effective capabilities and the sysctls that gate BPF. */
int probe_privileges(struct probe_privs *p);
/*
 * The capabilities missing for loading tracing programs ("CAP_BPF, CAP_PERFMON"), or
 * NULL when the process has CAP_SYS_ADMIN or CAP_BPF and CAP_PERFMON (or they cannot
 * be read: loading will tell).
 */
const char *probe_bpf_caps_missing(void);
/*
 * For commands that load BPF programs: a runtime failure (exit 1) naming what is
 * missing when the process lacks CAP_SYS_ADMIN or CAP_BPF + CAP_PERFMON, so the user
 * is not told the kernel lacks a feature when it is the privileges that do.
 */
int probe_require_bpf_privileges(const char *cmd);

/* "EPERM" for -EPERM or EPERM; "E<n>" if glibc has no name. */
const char *probe_errname(int err);

/* libbpf messages: on stderr under -v (debug level excluded), silent otherwise. */
void probe_setup_libbpf_print(void);

/* Frees cached state (vmlinux BTF). */
void probe_cleanup(void);

/* Attach plans. */

enum attach_mode {
	ATTACH_AUTO = 0, /* derive mode and target from the program's SEC() */
	ATTACH_TP_BTF,
	ATTACH_RAW_TP,
	ATTACH_TRACEPOINT, /* target "category/name" */
	ATTACH_FENTRY,
	ATTACH_KPROBE,
};

#define ATTACH_MAX_VARIANTS 5

/*
 * One way to attach a hook. With ATTACH_AUTO, mode and target are taken from
 * bpf_program__section_name(): "tp_btf/block_rq_complete" gives ATTACH_TP_BTF and
 * "block_rq_complete". @prog may be NULL to evaluate a plan without a skeleton
 * (doctor does this); a variant with neither prog nor mode ends the list. A program
 * may serve several hooks, each variant naming its own target (ATTACH_TRACEPOINT or
 * ATTACH_RAW_TP): one program verified once for all the syscall tracepoints.
 */
struct attach_variant {
	struct bpf_program *prog;
	enum attach_mode mode;
	const char *target;
};

struct attach_hook {
	const char *name;
	bool optional;
	/* The module its targets are in when not built in (driver hooks), or NULL. */
	const char *module;
	/* What the output lacks if an optional hook attaches in no way ("mmap FS bytes"). */
	const char *figure;
	struct attach_variant v[ATTACH_MAX_VARIANTS];
	int chosen; /* index into v, or -1; set by attach_plan_choose() */
	/*
	 * A kprobe also loaded behind a chosen fentry, or -1: a trampoline can still be
	 * refused at attach (more arguments than the architecture passes, notrace).
	 */
	int backup;
	struct bpf_link *link; /* set by attach_plan_attach() for the hooks it attaches */
};

/*
 * Receives a BPF command's default attach plan. @load_err NULL: the command's own
 * programs were loaded and attached here with these hooks (their chosen variants are
 * the ones in use). Otherwise why that failed, and the hooks are not chosen yet. The
 * hooks are valid only during the call (they point into the command's skeleton).
 */
typedef void (*plan_show_fn)(const char *cmd, struct attach_hook *hooks, int n,
			     const char *load_err, void *arg);

/*
 * A tracepoint that older kernels lack, with fentry and kprobe programs on the kernel
 * function it stands in (<p>_fentry, <p>_kprobe of skeleton @s) as fallbacks.
 */
#define FALLBACK_HOOK(s, hook, p, what)                         \
	{                                                       \
		.name = hook, .optional = true, .figure = what, \
		.v = { {.prog = s->progs.p},                    \
		       {.prog = s->progs.p##_fentry},           \
		       {.prog = s->progs.p##_kprobe} }          \
	}

/*
 * An optional hook with one program, <p> of skeleton @s: what the output lacks without it
 * in @what (or NULL).
 */
#define OPTIONAL_HOOK(s, hook, p, what)                                                       \
	{                                                                                     \
		.name = hook, .optional = true, .figure = what, .v = { {.prog = s->progs.p} } \
	}

/*
 * A tracepoint all kernels have, as TP_PROGS() makes its programs (src/bpf/fallback.bpf.h):
 * <p> (tp_btf), then <p>_raw (raw_tp) of skeleton @s; @opt: optional, what the output
 * lacks without it in @what (or NULL).
 */
#define TP_BTF_HOOK(s, hook, p, opt, what)                     \
	{                                                      \
		.name = hook, .optional = opt, .figure = what, \
		.v = { {.prog = s->progs.p},                   \
		       {.prog = s->progs.p##_raw} }            \
	}

const char *attach_mode_name(enum attach_mode mode);

/*
 * Call between skeleton open and load. For each hook, keeps the first variant whose
 * feature works and whose target exists, and disables autoload of every other
 * variant (a program serving several hooks loads if one of them chose it); ATTACH_AUTO
 * variants get their resolved mode and target written back (the
 * target points into the program's section name). A required hook with no usable
 * variant is reported with fail() as a missing kernel feature (-EOPNOTSUPP, exit 1).
 * A hook, required or optional, that could attach with more privileges fails the
 * plan naming the privilege (-EPERM, exit 1): a command never runs with less than
 * it asked for because of the user's privileges.
 */
int attach_plan_choose(struct attach_hook *hooks, int n);
/*
 * attach_plan_choose() without reporting anything or failing: what a plan would be
 * here (doctor). *@needs: the privilege the first hook that cannot attach for lack
 * of one needs, or NULL.
 */
void attach_plan_evaluate(struct attach_hook *hooks, int n, const char **needs);

/*
 * Call after the skeleton's attach: attaches the hooks the skeleton leaves alone, those
 * with a backup variant (the chosen one first, the backup if it is refused) and those
 * whose program's section does not name their target (programs serving several). A
 * required hook that attaches in no way fails (-errno, reported); an optional one is
 * disabled and said so under -v. attach_plan_detach() releases the links.
 */
int attach_plan_attach(struct attach_hook *hooks, int n);
void attach_plan_detach(struct attach_hook *hooks, int n);

/* A heap copy of a command's hook table (built on its stack) in *@out; free() it. */
int attach_hooks_dup(const struct attach_hook *hooks, int n, struct attach_hook **out);

/*
 * With @jw, writes the plan as one JSON object {hook: {"mode", "target", "program"}}
 * (mode null when nothing was chosen); without, prints it with info() (-v only).
 */
void attach_plan_print(const struct attach_hook *hooks, int n, struct jw *jw);

/*
 * The figures of optional hooks that attached in no way: with @jw, a JSON array of
 * {"figure", "hook"} under key @key; without, one line per figure to @out ("mmap FS
 * bytes: not available on this kernel (mm_filemap_fault)"), each after @prefix.
 * Returns how many there are.
 */
int attach_plan_unavailable(const struct attach_hook *hooks, int n, struct jw *jw, const char *key,
			    FILE *out, const char *prefix);

#endif
