// SPDX-License-Identifier: GPL-2.0
/*
 * Feature probing and attach plans. Every answer comes from trying the thing: a feature
 * works only if its tiny program (src/bpf/probe.bpf.c) loads and, for program kinds,
 * attaches here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "err.h"
#include "json.h"
#include "mounts.h"
#include "probe.h"
#include "probe.skel.h"
#include "skel.h"
#include "thread.h"

#define TRACEFS_DIR	    "/sys/kernel/tracing"
#define DEBUGFS_TRACING_DIR "/sys/kernel/debug/tracing"

/* Capability bits from linux/capability.h, spelled out so old headers do not matter. */
#define CAP_BIT_DAC_OVERRIDE	1
#define CAP_BIT_DAC_READ_SEARCH 2
#define CAP_BIT_SYS_ADMIN	21
#define CAP_BIT_SYS_RESOURCE	24
#define CAP_BIT_SYSLOG		34
#define CAP_BIT_PERFMON		38
#define CAP_BIT_BPF		39

enum probe_attach {
	PA_NONE,   /* load only */
	PA_AUTO,   /* bpf_program__attach() from the SEC() name */
	PA_UPROBE, /* our own binary */
};

struct probe_def {
	const char *name;
	const char *desc;
	const char *prog; /* program in probe.bpf.c, NULL if not a program probe */
	const char *map;  /* the one map that program needs, or NULL */
	enum probe_attach attach;
	/* A probe of its own kind (not a program's load and attach), or NULL. */
	int (*run)(const struct probe_def *def, struct probe_result *res);
};

static int probe_btf(const struct probe_def *def, struct probe_result *res);
static int probe_tp_btf(const struct probe_def *def, struct probe_result *res);
static int probe_tracepoint(const struct probe_def *def, struct probe_result *res);
static int probe_kptr_cast(const struct probe_def *def, struct probe_result *res);
static int probe_bpf_stats(const struct probe_def *def, struct probe_result *res);

static const struct probe_def probe_defs[PROBE_NR] = {
	[PROBE_BTF] = {"btf", "vmlinux BTF", NULL, NULL, PA_NONE, probe_btf},
	[PROBE_TP_BTF] = {"tp_btf", "BTF tracepoints (tp_btf)", NULL, NULL, PA_AUTO, probe_tp_btf},
	[PROBE_RAW_TP] = {"raw_tp", "raw tracepoints (raw_tp)", "probe_raw_tp", NULL, PA_AUTO},
	[PROBE_TRACEPOINT] = {"tracepoint", "classic tracepoints", "probe_tracepoint", NULL,
			      PA_AUTO, probe_tracepoint},
	[PROBE_FENTRY] = {"fentry", "fentry/fexit", "probe_fentry", NULL, PA_AUTO},
	[PROBE_KPROBE] = {"kprobe", "kprobes", "probe_kprobe", NULL, PA_AUTO},
	[PROBE_UPROBE] = {"uprobe", "uprobes", "probe_uprobe", "probe_hits", PA_UPROBE},
	[PROBE_RINGBUF] = {"ringbuf", "ring buffer map", "probe_ringbuf_prog", "probe_ringbuf",
			   PA_NONE},
	[PROBE_TASK_STORAGE] = {"task_storage", "task storage map", "probe_task_storage_prog",
				"probe_task_storage", PA_NONE},
	[PROBE_STACK_TRACE_MAP] = {"stack_trace_map", "stack trace map (get_stackid)",
				   "probe_stack_map_prog", "probe_stack_map", PA_NONE},
	[PROBE_GET_STACK] = {"get_stack", "bpf_get_stack", "probe_get_stack_prog", NULL, PA_NONE},
	[PROBE_KPTR_CAST] = {"kptr_cast", "kfunc bpf_rdonly_cast", NULL, NULL, PA_NONE,
			     probe_kptr_cast},
	[PROBE_LOOP] = {"loop", "helper bpf_loop", "probe_loop_prog", NULL, PA_NONE},
	[PROBE_BPF_STATS] = {"bpf_stats", "run-time stats (bpf_stats)", NULL, NULL, PA_NONE,
			     probe_bpf_stats},
};

static struct probe_result probe_cache[PROBE_NR];
static bool probe_cached[PROBE_NR];
/* Probes running in threads (probe_prefetch()), joined by probe_feature(). */
static pthread_t probe_threads[PROBE_NR];
static bool probe_running[PROBE_NR];

static struct btf *vmlinux_btf;
static int vmlinux_btf_err;
static bool vmlinux_btf_tried;

/* The uprobe probe's target: global and never inlined, so it has its own symbol. */
void iospan_probe_uprobe_target(void);
__attribute__((noinline, used)) void iospan_probe_uprobe_target(void)
{
	asm volatile("" ::: "memory");
}

const char *probe_errname(int err)
{
	static char buf[16];
	const char *name;

	if (err < 0)
		err = -err;
	name = strerrorname_np(err);
	if (name)
		return name;
	snprintf(buf, sizeof(buf), "E%d", err);
	return buf;
}

const char *probe_feature_name(enum probe_feature f)
{
	return f < PROBE_NR ? probe_defs[f].name : "?";
}

const char *probe_feature_desc(enum probe_feature f)
{
	return f < PROBE_NR ? probe_defs[f].desc : "?";
}

static void result_fail(struct probe_result *res, int err, const char *step)
{
	res->ok = false;
	res->err = err < 0 ? err : -EINVAL;
	res->step = step;
	res->needs = NULL;
	if (step)
		snprintf(res->detail, sizeof(res->detail), "%s: %s", step, probe_errname(err));
	else
		snprintf(res->detail, sizeof(res->detail), "%s", probe_errname(err));
}

static void result_ok(struct probe_result *res, const char *detail)
{
	res->ok = true;
	res->err = 0;
	res->step = NULL;
	res->needs = NULL;
	snprintf(res->detail, sizeof(res->detail), "%s", detail);
}

/* File offset of @addr in an executable mapping of this process, or a negative errno. */
static long self_file_offset(const void *addr)
{
	unsigned long start, end, pgoff, a = (unsigned long)addr;
	long off = -ENOENT;
	char line[512], perms[8];
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s %lx", &start, &end, perms, &pgoff) != 4)
			continue;
		if (a >= start && a < end && perms[2] == 'x') {
			off = a - start + pgoff;
			break;
		}
	}
	fclose(f);
	return off;
}

static struct bpf_link *attach_uprobe_self(struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "iospan_probe_uprobe_target");
	struct bpf_link *link;
	long off;
	int err;

	/* pid 0: only this process, so the probe never fires anywhere else. */
	link = bpf_program__attach_uprobe_opts(prog, 0, "/proc/self/exe", 0, &opts);
	if (link)
		return link;
	/* A stripped binary has no symbol to resolve: locate the function ourselves. */
	err = -errno;
	off = self_file_offset((const void *)iospan_probe_uprobe_target);
	if (off < 0) {
		errno = -err;
		return NULL;
	}
	return bpf_program__attach_uprobe(prog, false, 0, "/proc/self/exe", off);
}

static bool uprobe_fired(struct probe_bpf *skel)
{
	__u64 hits = 0;
	__u32 key = 0;

	return !bpf_map__lookup_elem(skel->maps.probe_hits, &key, sizeof(key), &hits, sizeof(hits),
				     0) &&
	       hits > 0;
}

/* Loads only @def->prog (and its map), then attaches and detaches it if asked. */
static int probe_program(const struct probe_def *def, struct probe_result *res)
{
	struct bpf_link *link = NULL;
	struct bpf_program *prog, *p;
	struct probe_bpf *skel;
	struct bpf_map *map;
	int err;

	skel = probe_bpf__open();
	if (!skel)
		return -errno;

	prog = bpf_object__find_program_by_name(skel->obj, def->prog);
	if (!prog) {
		err = -ENOENT;
		goto cleanup;
	}
	for (p = bpf_object__next_program(skel->obj, NULL); p;
	     p = bpf_object__next_program(skel->obj, p))
		bpf_program__set_autoload(p, p == prog);
	/*
	 * Maps the probe does not use are not created, so they cannot fail it; but the
	 * skeleton maps its global data (.bss, .rodata) after loading: those always are.
	 */
	for (map = bpf_object__next_map(skel->obj, NULL); map;
	     map = bpf_object__next_map(skel->obj, map))
		bpf_map__set_autocreate(
			map, bpf_map__is_internal(map) ||
				     (def->map && !strcmp(bpf_map__name(map), def->map)));
	/* A ring buffer must be a power-of-two number of pages: one page is enough. */
	bpf_map__set_max_entries(skel->maps.probe_ringbuf, sysconf(_SC_PAGESIZE));

	err = probe_bpf__load(skel);
	if (err) {
		result_fail(res, err, "load");
		err = 0;
		goto cleanup;
	}
	if (def->attach == PA_NONE) {
		result_ok(res, def->map ? "map created, program loaded" : "program loaded");
		goto cleanup;
	}
	link = def->attach == PA_UPROBE ? attach_uprobe_self(prog) : bpf_program__attach(prog);
	if (!link) {
		result_fail(res, -errno, "attach");
		goto cleanup;
	}
	if (def->attach == PA_UPROBE) {
		/* Our own function is the one event we can trigger: check it is seen. */
		iospan_probe_uprobe_target();
		if (!uprobe_fired(skel)) {
			result_fail(res, -ENODATA, "fire");
			goto cleanup;
		}
		result_ok(res, "loaded, attached and fired");
		goto cleanup;
	}
	result_ok(res, "loaded and attached");
cleanup:
	/* A classic tracepoint takes an RCU grace period to let go: not on the start-up path. */
	link_destroy_async(link);
	probe_bpf__destroy(skel);
	return err;
}

/*
 * Probes that need kernel type ids are built here from the one parsed vmlinux BTF: a
 * libbpf object would parse the kernel's BTF again (15-20 ms per object, on the path
 * to tracing of every command).
 */
#define INSN(c, dst, src, o, i) \
	((struct bpf_insn){.code = (c), .dst_reg = (dst), .src_reg = (src), .off = (o), .imm = (i)})
#define INSN_MOV_IMM(dst, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, i)
#define INSN_EXIT()	     INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define PSEUDO_KFUNC_CALL    2 /* BPF_PSEUDO_KFUNC_CALL, absent from old headers */

/* A tp_btf program on block_rq_complete: loaded (its fd) or a negative errno. */
static int tp_btf_load(const char *name, const struct bpf_insn *insns, size_t nr,
		       struct probe_result *res)
{
	const struct btf *btf = probe_vmlinux_btf();
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP);
	int id, fd;

	if (!btf) {
		result_fail(res, vmlinux_btf_err, "kernel BTF");
		return -ENOENT;
	}
	id = btf__find_by_name_kind(btf, "btf_trace_block_rq_complete", BTF_KIND_TYPEDEF);
	if (id < 0) {
		result_fail(res, id, "kernel BTF");
		return id;
	}
	opts.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, name, "GPL", insns, nr, &opts);
	if (fd < 0) {
		fd = -errno;
		result_fail(res, fd, "load");
	}
	return fd;
}

static int probe_tp_btf(const struct probe_def *def, struct probe_result *res)
{
	const struct bpf_insn insns[] = {INSN_MOV_IMM(BPF_REG_0, 0), INSN_EXIT()};
	int fd, link;

	fd = tp_btf_load("probe_tp_btf", insns, ARRAY_SIZE(insns), res);
	if (fd < 0)
		return 0;
	/* As libbpf attaches tp_btf (a raw tracepoint open on kernels before links). */
	link = bpf_link_create(fd, 0, BPF_TRACE_RAW_TP, NULL);
	if (link < 0)
		result_fail(res, -errno, "attach");
	else
		result_ok(res, "loaded and attached");
	if (link >= 0)
		close(link);
	close(fd);
	return 0;
}

/* Byte offset of member @name of struct @type in @btf, or a negative errno. */
static int btf_member_offset(const struct btf *btf, const char *type, const char *name,
			     int *type_id)
{
	const struct btf_member *m;
	const struct btf_type *t;
	int id, i;

	id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	if (id < 0)
		return id;
	*type_id = id;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return btf_member_bit_offset(t, i) / 8;
	return -ENOENT;
}

/*
 * What the commands do with bpf_rdonly_cast(): a typed, read-only view of a pointer
 * known only as a number, read through. An unresolved kfunc would not load at all.
 */
static int probe_kptr_cast(const struct probe_def *def, struct probe_result *res)
{
	const struct btf *btf = probe_vmlinux_btf();
	int func, rq, tag, fd;

	func = btf ? btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) : -ENOENT;
	tag = btf ? btf_member_offset(btf, "request", "tag", &rq) : -ENOENT;
	if (func < 0 || tag < 0) {
		result_fail(res, -ENOENT, "kernel BTF");
		return 0;
	}
	{
		const struct bpf_insn insns[] = {
			INSN_MOV_IMM(BPF_REG_1, 0),
			INSN_MOV_IMM(BPF_REG_2, rq),
			INSN(BPF_JMP | BPF_CALL, 0, PSEUDO_KFUNC_CALL, 0, func),
			INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 1, 0),
			INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_0, BPF_REG_0, tag, 0),
			INSN_EXIT(),
		};

		fd = tp_btf_load("probe_kptr_cast", insns, ARRAY_SIZE(insns), res);
	}
	if (fd < 0)
		return 0;
	close(fd);
	result_ok(res, "program loaded");
	return 0;
}

static int probe_bpf_stats(const struct probe_def *def, struct probe_result *res)
{
	int fd;

	/* Stats stay on only while the fd is open: closing it leaves the system as it was. */
	fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (fd < 0) {
		result_fail(res, fd, "enable");
		return 0;
	}
	close(fd);
	result_ok(res, "bpf_enable_stats(BPF_STATS_RUN_TIME) works");
	return 0;
}

static int probe_btf(const struct probe_def *def, struct probe_result *res)
{
	const struct btf *btf = probe_vmlinux_btf();
	char buf[64];

	if (!btf) {
		result_fail(res, vmlinux_btf_err, NULL);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%u types", btf__type_cnt(btf));
	result_ok(res, buf);
	return 0;
}

/*
 * What the process lacks for @f, when that is why its probe failed: the kernel says
 * EPERM or EACCES both for a missing privilege and for things no privilege changes
 * (lockdown, fentry refused on this machine as root), so a failure is put down to
 * privileges only when the step that failed needs one this process does not have.
 */
static const char *missing_privilege(enum probe_feature f, const struct probe_result *r)
{
	struct probe_privs p;

	if (r->ok || (r->err != -EPERM && r->err != -EACCES) || !r->step || probe_privileges(&p))
		return NULL;
	if (!strcmp(r->step, "load"))
		return probe_bpf_caps_missing() ? PRIV_BPF : NULL;
	switch (f) {
	case PROBE_BPF_STATS:
		return p.cap_sys_admin ? NULL : PRIV_SYS_ADMIN;
	case PROBE_TRACEPOINT:
		if (!strcmp(r->step, "tracefs"))
			return p.cap_sys_admin ? NULL : PRIV_TRACEFS_MOUNT;
		/* libbpf reads the tracepoint's id from tracefs, then opens a perf event. */
		if (tracefs_events_access() == -EACCES)
			return PRIV_TRACEFS_READ;
		return p.cap_perfmon || p.cap_sys_admin ? NULL : PRIV_PERFMON;
	case PROBE_KPROBE:
	case PROBE_UPROBE:
		return p.cap_perfmon || p.cap_sys_admin ? NULL : PRIV_PERFMON;
	default:
		return NULL;
	}
}

/* libbpf attaches classic tracepoints through tracefs: mounted first. */
static int probe_tracepoint(const struct probe_def *def, struct probe_result *res)
{
	int err = tracefs_ensure_mounted();

	if (err) {
		result_fail(res, err, "tracefs");
		return 0;
	}
	return probe_program(def, res);
}

/* Runs the probe of @f and caches its result; -errno if it could not run at all. */
static int probe_run(enum probe_feature f)
{
	struct probe_result r = {};
	int err;

	err = (probe_defs[f].run ?: probe_program)(&probe_defs[f], &r);
	if (err)
		return err;
	r.needs = missing_privilege(f, &r);
	probe_cache[f] = r;
	probe_cached[f] = true;
	info("probe %s: %s (%s%s%s)", probe_defs[f].name, r.ok ? "yes" : "no", r.detail,
	     r.needs ? "; needs " : "", r.needs ? r.needs : "");
	return 0;
}

static void *probe_thread(void *arg)
{
	probe_run((enum probe_feature)(uintptr_t)arg);
	return NULL;
}

void probe_prefetch(void)
{
	static const enum probe_feature common[] = {PROBE_KPTR_CAST, PROBE_TP_BTF,
						    PROBE_TRACEPOINT};
	size_t i;

	/* Shared by the probes: parsed once, before they start. */
	probe_vmlinux_btf();
	for (i = 0; i < ARRAY_SIZE(common); i++) {
		enum probe_feature f = common[i];

		if (!probe_cached[f] && !probe_running[f])
			probe_running[f] = !thread_start(&probe_threads[f], probe_thread,
							 (void *)(uintptr_t)f, 0);
	}
}

/* Waits for the probe of @f if it runs in a thread. */
static void probe_join(enum probe_feature f)
{
	if (probe_running[f]) {
		pthread_join(probe_threads[f], NULL);
		probe_running[f] = false;
	}
}

int probe_feature(enum probe_feature f, struct probe_result *res)
{
	int err;

	if (f >= PROBE_NR)
		return -EINVAL;
	probe_join(f);
	if (!probe_cached[f]) {
		err = probe_run(f);
		if (err)
			return err;
	}
	if (res)
		*res = probe_cache[f];
	return 0;
}

bool probe_has(enum probe_feature f)
{
	struct probe_result r;

	return !probe_feature(f, &r) && r.ok;
}

const struct btf *probe_vmlinux_btf(void)
{
	if (!vmlinux_btf_tried) {
		vmlinux_btf_tried = true;
		vmlinux_btf = btf__load_vmlinux_btf();
		if (!vmlinux_btf)
			vmlinux_btf_err = errno ? -errno : -ENOENT;
	}
	return vmlinux_btf;
}

bool tracepoint_in_btf(const char *name)
{
	const struct btf *btf = probe_vmlinux_btf();
	char type[128];

	if (!btf)
		return false;
	/* Every tracepoint has a "btf_trace_<name>" typedef: what tp_btf and raw_tp resolve. */
	if (snprintf(type, sizeof(type), "btf_trace_%s", name) >= (int)sizeof(type))
		return false;
	return btf__find_by_name_kind(btf, type, BTF_KIND_TYPEDEF) >= 0;
}

bool kernel_func_in_btf(const char *name)
{
	const struct btf *btf = probe_vmlinux_btf();

	return btf && btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) >= 0;
}

/* Module BTFs loaded so far (modules the plans name): few, kept for the process. */
#define MAX_MODULE_BTFS 8
static struct {
	char name[56];
	struct btf *btf; /* NULL: the module is not loaded (or has no BTF) */
} module_btfs[MAX_MODULE_BTFS];
static int nr_module_btfs;

const struct btf *probe_module_btf(const char *module)
{
	const struct btf *vmlinux = probe_vmlinux_btf();
	int i;

	if (!vmlinux || !module)
		return NULL;
	for (i = 0; i < nr_module_btfs; i++)
		if (!strcmp(module_btfs[i].name, module))
			return module_btfs[i].btf;
	if (nr_module_btfs == MAX_MODULE_BTFS || strlen(module) >= sizeof(module_btfs[0].name))
		return NULL;
	i = nr_module_btfs++;
	strcpy(module_btfs[i].name, module);
	/* /sys/kernel/btf/<module> exists while the module is loaded. */
	module_btfs[i].btf = btf__load_module_btf(module, (struct btf *)vmlinux);
	return module_btfs[i].btf;
}

/* @name of @kind in vmlinux BTF, else in @module's (NULL: vmlinux only). */
static bool in_kernel_btf(const char *name, int kind, const char *module)
{
	const struct btf *btf = probe_vmlinux_btf();

	if (!btf)
		return false;
	if (btf__find_by_name_kind(btf, name, kind) >= 0)
		return true;
	btf = probe_module_btf(module);
	return btf && btf__find_by_name_kind(btf, name, kind) >= 0;
}

static bool is_tracefs(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == TRACEFS_MAGIC;
}

const char *tracefs_path(void)
{
	/* libbpf prefers the debugfs path when it exists; so do we, to agree with it. */
	if (is_tracefs(DEBUGFS_TRACING_DIR))
		return DEBUGFS_TRACING_DIR;
	if (is_tracefs(TRACEFS_DIR))
		return TRACEFS_DIR;
	return NULL;
}

int tracefs_ensure_mounted(void)
{
	if (tracefs_path())
		return 0;
	if (mount("tracefs", TRACEFS_DIR, "tracefs", 0, NULL))
		return -errno;
	info("mounted tracefs at %s", TRACEFS_DIR);
	return 0;
}

/*
 * With the process's effective credentials: access() uses the real uid and drops the
 * capabilities of a non-root user, so it would deny what CAP_DAC_READ_SEARCH allows.
 */
static int access_effective(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS) ? -errno : 0;
}

int tracefs_events_access(void)
{
	const char *dir = tracefs_path();
	char path[PATH_MAX];

	if (!dir)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/events", dir);
	return access_effective(path, R_OK | X_OK);
}

int tracefs_event_state(const char *category, const char *name)
{
	const char *dir = tracefs_path();
	char path[PATH_MAX];
	int err;

	if (!dir)
		return -ENOENT;
	if (snprintf(path, sizeof(path), "%s/events/%s/%s", dir, category, name) >=
	    (int)sizeof(path))
		return 0;
	err = access_effective(path, F_OK);
	if (err == -ENOENT || err == -ENOTDIR)
		return 0;
	return err ? err : 1;
}

bool tracepoint_in_tracefs(const char *category, const char *name)
{
	return tracefs_event_state(category, name) == 1;
}

int probe_cgroup2_mount(char *buf, size_t len)
{
	return mounts_find_fs(NULL, "cgroup2", NULL, buf, len);
}

int read_int_file(const char *path)
{
	int val = -1;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &val) != 1)
		val = -1;
	fclose(f);
	return val;
}

int probe_privileges(struct probe_privs *p)
{
	unsigned long long caps = 0;
	char line[256];
	bool found = false;
	FILE *f;

	memset(p, 0, sizeof(*p));
	p->uid = getuid();
	p->euid = geteuid();
	p->unprivileged_bpf_disabled = read_int_file("/proc/sys/kernel/unprivileged_bpf_disabled");
	p->perf_event_paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid");
	p->bpf_stats_enabled = read_int_file("/proc/sys/kernel/bpf_stats_enabled");
	p->task_delayacct = read_int_file("/proc/sys/kernel/task_delayacct");
	p->kptr_restrict = read_int_file("/proc/sys/kernel/kptr_restrict");

	f = fopen("/proc/self/status", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			found = true;
			break;
		}
	fclose(f);
	if (!found)
		return -ENOENT;
	p->cap_sys_admin = caps & (1ULL << CAP_BIT_SYS_ADMIN);
	p->cap_sys_resource = caps & (1ULL << CAP_BIT_SYS_RESOURCE);
	p->cap_perfmon = caps & (1ULL << CAP_BIT_PERFMON);
	p->cap_bpf = caps & (1ULL << CAP_BIT_BPF);
	p->cap_dac_read_search =
		caps & (1ULL << CAP_BIT_DAC_READ_SEARCH | 1ULL << CAP_BIT_DAC_OVERRIDE);
	p->cap_syslog = caps & (1ULL << CAP_BIT_SYSLOG);
	return 0;
}

const char *probe_bpf_caps_missing(void)
{
	struct probe_privs p;

	if (probe_privileges(&p) || p.cap_sys_admin || (p.cap_bpf && p.cap_perfmon))
		return NULL;
	if (!p.cap_bpf && !p.cap_perfmon)
		return "CAP_BPF, CAP_PERFMON";
	return p.cap_bpf ? "CAP_PERFMON" : "CAP_BPF";
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/*
	 * Failures reach the user through fail(); libbpf's own lines are diagnostics.
	 * Debug level is left out even under -v: it is hundreds of lines per load.
	 */
	if (!err_verbose() || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void probe_setup_libbpf_print(void)
{
	libbpf_set_print(libbpf_print);
}

void probe_cleanup(void)
{
	int f;

	for (f = 0; f < PROBE_NR; f++)
		probe_join(f);
	for (f = 0; f < nr_module_btfs; f++)
		btf__free(module_btfs[f].btf);
	nr_module_btfs = 0;
	btf__free(vmlinux_btf);
	vmlinux_btf = NULL;
	vmlinux_btf_tried = false;
}

/* Attach plans. */

static const struct {
	const char *prefix;
	enum attach_mode mode;
} sec_modes[] = {
	{"tp_btf/", ATTACH_TP_BTF},	    {"raw_tp/", ATTACH_RAW_TP},
	{"raw_tracepoint/", ATTACH_RAW_TP}, {"tracepoint/", ATTACH_TRACEPOINT},
	{"tp/", ATTACH_TRACEPOINT},	    {"fentry/", ATTACH_FENTRY},
	{"fexit/", ATTACH_FENTRY},	    {"kprobe/", ATTACH_KPROBE},
	{"kretprobe/", ATTACH_KPROBE},
};

const char *attach_mode_name(enum attach_mode mode)
{
	switch (mode) {
	case ATTACH_TP_BTF:
		return "tp_btf";
	case ATTACH_RAW_TP:
		return "raw_tp";
	case ATTACH_TRACEPOINT:
		return "tracepoint";
	case ATTACH_FENTRY:
		return "fentry";
	case ATTACH_KPROBE:
		return "kprobe";
	default:
		return "none";
	}
}

static bool variant_end(const struct attach_variant *v)
{
	return !v->prog && v->mode == ATTACH_AUTO;
}

/* Fills in mode and target from the program's section name where they were left out. */
static void variant_resolve(struct attach_variant *v)
{
	const char *sec;
	size_t i;

	if (!v->prog || (v->mode != ATTACH_AUTO && v->target))
		return;
	sec = bpf_program__section_name(v->prog);
	for (i = 0; i < ARRAY_SIZE(sec_modes); i++) {
		size_t len = strlen(sec_modes[i].prefix);

		if (strncmp(sec, sec_modes[i].prefix, len))
			continue;
		if (v->mode == ATTACH_AUTO)
			v->mode = sec_modes[i].mode;
		if (!v->target && sec_modes[i].mode == v->mode)
			v->target = sec + len;
		return;
	}
}

static enum probe_feature mode_feature(enum attach_mode mode)
{
	switch (mode) {
	case ATTACH_TP_BTF:
		return PROBE_TP_BTF;
	case ATTACH_RAW_TP:
		return PROBE_RAW_TP;
	case ATTACH_TRACEPOINT:
		return PROBE_TRACEPOINT;
	case ATTACH_FENTRY:
		return PROBE_FENTRY;
	case ATTACH_KPROBE:
		return PROBE_KPROBE;
	default:
		return PROBE_NR;
	}
}

/* A tracepoint's "btf_trace_<name>" typedef in vmlinux BTF or @module's. */
static bool tracepoint_in_kernel_btf(const char *name, const char *module)
{
	char type[128];

	if (snprintf(type, sizeof(type), "btf_trace_%s", name) >= (int)sizeof(type))
		return false;
	return in_kernel_btf(type, BTF_KIND_TYPEDEF, module);
}

/*
 * 1 if the target exists here, 0 if not, a negative errno if this process cannot tell.
 * @module: the kernel module that may hold it when it is not built in, or NULL.
 */
static int target_state(enum attach_mode mode, const char *target, const char *module)
{
	char cat[64];
	const char *slash;

	switch (mode) {
	case ATTACH_TP_BTF:
		return tracepoint_in_kernel_btf(target, module);
	case ATTACH_RAW_TP:
		/* Without BTF there is nothing to check against: attaching will tell. */
		return !probe_vmlinux_btf() || tracepoint_in_kernel_btf(target, module);
	case ATTACH_TRACEPOINT:
		slash = strchr(target, '/');
		if (!slash || (size_t)(slash - target) >= sizeof(cat))
			return 0;
		memcpy(cat, target, slash - target);
		cat[slash - target] = '\0';
		return tracefs_event_state(cat, slash + 1);
	case ATTACH_FENTRY:
		return in_kernel_btf(target, BTF_KIND_FUNC, module);
	case ATTACH_KPROBE:
		return !probe_vmlinux_btf() || in_kernel_btf(target, BTF_KIND_FUNC, module);
	default:
		return 0;
	}
}

/* True if the comma-separated list in environment variable @var names @name. */
static bool env_list_has(const char *var, const char *name)
{
	const char *list = getenv(var), *p;
	size_t len = strlen(name);

	for (p = list; p && *p; p += strcspn(p, ",")) {
		p += *p == ',';
		if (!strncmp(p, name, len) && (p[len] == ',' || !p[len]))
			return true;
	}
	return false;
}

/*
 * IOSPAN_ATTACH_OFF="fentry,tp_btf,...": attach modes treated as unavailable, to run
 * the fallbacks on a kernel that would not need them (tests, comparisons).
 */
static bool mode_turned_off(enum attach_mode mode)
{
	return env_list_has("IOSPAN_ATTACH_OFF", attach_mode_name(mode));
}

bool fault_injected(const char *name)
{
	return env_list_has("IOSPAN_FAULT", name);
}

/*
 * 1 if the variant can be used here. Otherwise appends to @why why not, and returns
 * -EPERM with *@needs set when only a privilege the process lacks stands in the way
 * (the target is there, or this process cannot see whether it is), else 0.
 */
static int variant_usable(const struct attach_variant *v, const char *module, char *why, size_t len,
			  const char **needs)
{
	enum probe_feature f = mode_feature(v->mode);
	struct probe_result r = {}, cast = {};
	size_t used = strlen(why);
	const char *reason;
	int target = 0;

	*needs = NULL;
	if (f == PROBE_NR || !v->target)
		reason = "no mode or target";
	else if (mode_turned_off(v->mode))
		reason = "turned off by IOSPAN_ATTACH_OFF";
	else if ((probe_feature(f, &r) || !r.ok) && !r.needs)
		reason = r.detail[0] ? r.detail : "unsupported";
	else if (v->mode == ATTACH_RAW_TP && (probe_feature(PROBE_KPTR_CAST, &cast) || !cast.ok) &&
		 !cast.needs)
		/* iospan's raw_tp programs view their untyped arguments through the cast. */
		reason = "needs kfunc bpf_rdonly_cast";
	else if (!(target = target_state(v->mode, v->target, module)))
		reason = "target not found";
	else if (target < 0 && target != -EACCES)
		reason = probe_errname(target);
	else if (r.needs || target < 0) {
		*needs = r.needs ? r.needs : PRIV_TRACEFS_READ;
		reason = r.needs ? r.detail : "tracefs: EACCES";
	} else {
		return 1;
	}
	snprintf(why + used, len - used, "%s%s %s: %s", used ? "; " : "", attach_mode_name(v->mode),
		 v->target ? v->target : "?", reason);
	return *needs ? -EPERM : 0;
}

int attach_hooks_dup(const struct attach_hook *hooks, int n, struct attach_hook **out)
{
	*out = malloc(n * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, hooks, n * sizeof(**out));
	return 0;
}

/* Whether the skeleton attaches @v itself: its program's section names this very target. */
static bool variant_auto_attached(const struct attach_variant *v)
{
	struct attach_variant by_sec = {.prog = v->prog};

	variant_resolve(&by_sec);
	return by_sec.mode == v->mode && by_sec.target && v->target &&
	       !strcmp(by_sec.target, v->target);
}

/*
 * Attaches @v to its target, also where its program's section does not name that
 * target: a program can serve several hooks (the syscall tracepoints).
 */
static struct bpf_link *variant_attach(const struct attach_variant *v)
{
	const char *slash;
	char cat[64];

	if (variant_auto_attached(v))
		return bpf_program__attach(v->prog);
	switch (v->mode) {
	case ATTACH_TRACEPOINT:
		slash = strchr(v->target, '/');
		if (!slash || (size_t)(slash - v->target) >= sizeof(cat))
			break;
		memcpy(cat, v->target, slash - v->target);
		cat[slash - v->target] = '\0';
		return bpf_program__attach_tracepoint(v->prog, cat, slash + 1);
	case ATTACH_RAW_TP:
		return bpf_program__attach_raw_tracepoint(v->prog, v->target);
	default:
		break;
	}
	errno = EOPNOTSUPP;
	return NULL;
}

/* Whether attach_plan_attach() attaches @h (the skeleton leaves it alone). */
static bool attached_by_plan(const struct attach_hook *h)
{
	return h->chosen >= 0 && h->v[h->chosen].prog &&
	       (h->backup >= 0 || !variant_auto_attached(&h->v[h->chosen]));
}

/* attach_plan_choose() and attach_plan_evaluate(): @report says whether to fail. */
static int plan_choose(struct attach_hook *hooks, int n, bool report, const char **plan_needs)
{
	const char *needs, *hook_needs;
	char why[256];
	int i, j;

	if (plan_needs)
		*plan_needs = NULL;
	for (i = 0; i < n; i++) {
		struct attach_hook *h = &hooks[i];

		h->chosen = -1;
		h->backup = -1;
		h->link = NULL;
		hook_needs = NULL;
		why[0] = '\0';
		for (j = 0; j < ATTACH_MAX_VARIANTS && !variant_end(&h->v[j]); j++) {
			variant_resolve(&h->v[j]);
			if (h->chosen < 0) {
				if (variant_usable(&h->v[j], h->module, why, sizeof(why), &needs) >
				    0)
					h->chosen = j;
				else if (needs && !hook_needs)
					hook_needs = needs;
			} else if (h->backup < 0 && h->v[h->chosen].mode == ATTACH_FENTRY &&
				   h->v[j].mode == ATTACH_KPROBE && h->v[j].prog &&
				   h->v[h->chosen].prog) {
				char unused[64] = "";

				if (variant_usable(&h->v[j], h->module, unused, sizeof(unused),
						   &needs) > 0)
					h->backup = j;
			}
		}
		if (h->chosen >= 0)
			continue;
		if (hook_needs && plan_needs && !*plan_needs)
			*plan_needs = hook_needs;
		if (!report)
			continue;
		if (hook_needs)
			return fail(-EPERM,
				    "missing privilege: '%s' needs %s to attach here (%s); "
				    "see 'iospan doctor'",
				    h->name, hook_needs, why);
		if (!h->optional)
			return fail(-EOPNOTSUPP,
				    "missing kernel feature: cannot attach '%s' here "
				    "(%s); see 'iospan doctor'",
				    h->name, why[0] ? why : "no variants");
		info("attach plan: optional hook '%s' disabled (%s)", h->name, why);
	}
	/*
	 * Everything not chosen stays unloaded, so it is never attached either. A program
	 * that serves several hooks loads if any of them chose it.
	 */
	for (i = 0; i < n; i++)
		for (j = 0; j < ATTACH_MAX_VARIANTS && !variant_end(&hooks[i].v[j]); j++)
			if (hooks[i].v[j].prog)
				bpf_program__set_autoload(hooks[i].v[j].prog, false);
	for (i = 0; i < n; i++) {
		struct attach_hook *h = &hooks[i];
		int tries[2] = {h->chosen, h->backup}, k;

		for (k = 0; k < 2; k++) {
			if (tries[k] < 0 || !h->v[tries[k]].prog)
				continue;
			bpf_program__set_autoload(h->v[tries[k]].prog, true);
			bpf_program__set_autoattach(h->v[tries[k]].prog, !attached_by_plan(h));
		}
	}
	return 0;
}

int attach_plan_choose(struct attach_hook *hooks, int n)
{
	return plan_choose(hooks, n, true, NULL);
}

void attach_plan_evaluate(struct attach_hook *hooks, int n, const char **needs)
{
	plan_choose(hooks, n, false, needs);
}

int attach_plan_attach(struct attach_hook *hooks, int n)
{
	int i, err;

	for (i = 0; i < n; i++) {
		struct attach_hook *h = &hooks[i];
		int tries[2] = {h->chosen, h->backup}, k;

		if (!attached_by_plan(h) || h->link)
			continue;
		err = 0;
		for (k = 0; k < 2 && tries[k] >= 0 && !h->link; k++) {
			h->link = variant_attach(&h->v[tries[k]]);
			if (h->link) {
				h->chosen = tries[k];
				break;
			}
			err = -errno;
			info("attach plan: %s by %s %s refused (%s)", h->name,
			     attach_mode_name(h->v[tries[k]].mode), h->v[tries[k]].target,
			     probe_errname(err));
		}
		if (h->link)
			continue;
		h->chosen = -1;
		if (!h->optional)
			return fail(err, "cannot attach '%s' here: %s (see 'iospan doctor')",
				    h->name, probe_errname(err));
	}
	return 0;
}

void attach_plan_detach(struct attach_hook *hooks, int n)
{
	int i;

	for (i = 0; hooks && i < n; i++) {
		bpf_link__destroy(hooks[i].link);
		hooks[i].link = NULL;
	}
}

void attach_plan_print(const struct attach_hook *hooks, int n, struct jw *jw)
{
	int i;

	if (jw)
		jw_start_object(jw);
	for (i = 0; i < n; i++) {
		const struct attach_hook *h = &hooks[i];
		const struct attach_variant *v = h->chosen >= 0 ? &h->v[h->chosen] : NULL;
		const char *prog = v && v->prog ? bpf_program__name(v->prog) : NULL;

		if (!jw) {
			if (v)
				info("attach plan: %-28s %-10s %s%s%s", h->name,
				     attach_mode_name(v->mode), v->target, prog ? " by " : "",
				     prog ? prog : "");
			else
				info("attach plan: %-28s not attached%s", h->name,
				     h->optional ? " (optional)" : "");
			continue;
		}
		jw_kv_object(jw, h->name);
		if (v) {
			jw_kv_string(jw, "mode", attach_mode_name(v->mode));
			jw_kv_string(jw, "target", v->target);
		} else {
			jw_kv_null(jw, "mode");
			jw_kv_null(jw, "target");
		}
		jw_kv_string_or_null(jw, "program", prog);
		jw_kv_bool(jw, "optional", h->optional);
		jw_end_object(jw);
	}
	if (jw)
		jw_end_object(jw);
}

int probe_require_bpf_privileges(const char *cmd)
{
	const char *missing = probe_bpf_caps_missing();

	if (!missing)
		return 0;
	return fail(-EPERM,
		    "missing privilege: %s needs " PRIV_BPF " to load its BPF "
		    "programs, and this process lacks %s: run it with sudo, or grant it those "
		    "capabilities",
		    cmd, missing);
}

/*
 * Whether @h's targets are in a module that is not loaded (and not built in): a driver
 * with no disk here, whose figures do not apply (doctor's plan still shows it).
 */
static bool hook_module_absent(const struct attach_hook *h)
{
	return h->module && !probe_module_btf(h->module) && !tracepoint_in_btf(h->name) &&
	       !kernel_func_in_btf(h->name);
}

int attach_plan_unavailable(const struct attach_hook *hooks, int n, struct jw *jw, const char *key,
			    FILE *out, const char *prefix)
{
	int i, count = 0;

	for (i = 0; i < n; i++) {
		const struct attach_hook *h = &hooks[i];
		bool said = false;
		int j;

		if (h->chosen >= 0 || !h->figure || hook_module_absent(h))
			continue;
		/* Several hooks can make one figure (a driver's submit and completion). */
		for (j = 0; j < i && !said; j++)
			said = hooks[j].chosen < 0 && hooks[j].figure &&
			       !strcmp(hooks[j].figure, h->figure);
		if (said)
			continue;
		if (jw) {
			if (!count)
				jw_kv_array(jw, key);
			jw_start_object(jw);
			jw_kv_string(jw, "figure", h->figure);
			jw_kv_string(jw, "hook", h->name);
			jw_end_object(jw);
		} else if (out) {
			fprintf(out, "%s%s: not available on this kernel (%s)\n", prefix, h->figure,
				h->name);
		}
		count++;
	}
	if (jw) {
		if (!count)
			jw_kv_array(jw, key);
		jw_end_array(jw);
	}
	return count;
}
