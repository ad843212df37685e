/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The life cycle of a BPF command, in one place. A command (or one collector of
 * several in a process) keeps its state in a struct bpfcmd and only orchestrates:
 *
 *   bpfcmd_prepare()   libbpf messages, feature probes, privileges, CPUs, cgroup names
 *   BPFCMD_OPEN()      the skeleton; the command then sets its globals and map sizes
 *   bpfcmd_kernel_addrs()  addresses of kernel functions the programs compare against
 *   bpfcmd_plan()      map memory checked, then the attach plan chosen
 *   bpfcmd_load()      programs loaded, the target filter maps filled
 *   bpfcmd_ringbuf()   the ring buffer's consumer (src/lib/bpf/rbuf.h), if the command has one
 *   bpfcmd_attach()    skeleton and plan attached, what is unavailable said
 *   bpfcmd_start()     stop signals, the "tracing" line, kernel symbols read meanwhile
 *   bpfcmd_run()       the main loop: ring buffer read, housekeeping, a tick per report
 *   bpfcmd_stop()      programs told to stop sending, the ring buffer drained
 *   bpfcmd_close()     links destroyed side by side, skeleton destroyed, state freed
 *
 * Every function returns 0 or a negative errno and reports its failures through
 * src/lib/util/err.c (one line; JSON under --json).
 */
#ifndef IOSPAN_BPFCMD_H
#define IOSPAN_BPFCMD_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "ksyms.h"
#include "probe.h"
#include "skel.h"

struct attach_hook;
struct bpf_object;
struct bpf_object_skeleton;
struct cgroup_map;
struct disk;
struct filter_opts;
struct ksyms;
struct rbuf;
struct rbuf_handler;

enum bpfcmd_flags {
	BPFCMD_CGROUP_NAMES = 1 << 0, /* an id -> path map of cgroup v2 (->cgmap) */
};

struct bpfcmd {
	const char *name; /* "top": in messages ("iospan top: ...") */
	int ncpus;	  /* possible CPUs: per-CPU map values */
	void *skel;	  /* struct <name>_bpf, from BPFCMD_OPEN() */
	struct bpf_object_skeleton *skeleton;
	struct bpf_object *obj;
	struct attach_hook *hooks; /* the attach plan, chosen by bpfcmd_plan() */
	int nr_hooks;
	struct rbuf *rb;	  /* NULL without a ring buffer */
	struct cgroup_map *cgmap; /* with BPFCMD_CGROUP_NAMES, if cgroup v2 is mounted */
	/*
	 * Symbols for stacks: set want_ksyms before bpfcmd_start(), which reads
	 * /proc/kallsyms in a thread (lookups wait for it); NULL until then.
	 */
	bool want_ksyms;
	struct ksyms *ksyms;
	struct ksyms_job addrs_job; /* bpfcmd_kernel_addrs_start() */
	uint64_t start_ns;	    /* CLOCK_MONOTONIC of bpfcmd_start() */
	uint64_t ticks;		    /* reports bpfcmd_run() has made */
	uint64_t not_arrived;	    /* records sent but never read (bpfcmd_stop()) */
};

/*
 * First step, before the skeleton is opened: libbpf's messages (-v), the probes every
 * BPF command needs started, the privileges checked (a missing capability is named
 * before the attach plan would blame the kernel), the CPUs counted. @flags: enum
 * bpfcmd_flags.
 */
int bpfcmd_prepare(struct bpfcmd *c, const char *name, unsigned int flags);

/* Hands an opened skeleton to @c, which destroys it in bpfcmd_close(). */
void bpfcmd_adopt(struct bpfcmd *c, void *skel, struct bpf_object_skeleton *skeleton,
		  struct bpf_object *obj);

/*
 * The skeleton of command @name (SKEL_OPEN(), the object build this kernel loads),
 * adopted by @c: struct name_bpf *, or NULL after reporting why.
 */
#define BPFCMD_OPEN(c, name)                                                                      \
	({                                                                                        \
		struct name##_bpf *__s = SKEL_OPEN(name);                                         \
		if (__s)                                                                          \
			bpfcmd_adopt((c), __s, __s->skeleton, __s->obj);                          \
		else                                                                              \
			errno = -fail(-errno, "cannot open the BPF object: %s", strerror(errno)); \
		__s;                                                                              \
	})

/*
 * The addresses of kernel functions @syms[0..n) into @addrs (0 where unknown). When
 * /proc/kallsyms cannot be read, all are 0 and, unless @without is NULL, a warning
 * says why and what the command does without them (@without). 0 or -errno (not fatal).
 */
int bpfcmd_kernel_addrs(struct bpfcmd *c, const char *const *syms, uint64_t *addrs, size_t n,
			const char *without);

/*
 * Starts reading those addresses in a thread, before bpfcmd_prepare(): the probes and
 * the kernel's BTF are parsed meanwhile. bpfcmd_kernel_addrs(), with the same @syms,
 * then waits for them (bpfcmd_close() if the command fails before).
 */
void bpfcmd_kernel_addrs_start(struct bpfcmd *c, const char *const *syms, size_t n);

/*
 * Between open and load: refuses maps this machine cannot give (mapmem_check(), with
 * @mem_hint saying what to change), then takes a copy of @hooks[0..n) and chooses the
 * plan (attach_plan_choose()).
 */
int bpfcmd_plan(struct bpfcmd *c, const struct attach_hook *hooks, int n, const char *mem_hint);

/*
 * For doctor's plans: a collector set up as its command would run, with its messages
 * captured into @why (err_capture(@why, @len) before the set-up), ends the capture;
 * then with @err 0 shows the plan @c attached (@show, @arg) and returns 0, else
 * returns @err with why in @why (never empty), nothing shown.
 */
int bpfcmd_plan_report(struct bpfcmd *c, const char *name, int err, char *why, size_t len,
		       plan_show_fn show, void *arg);
/*
 * As bpfcmd_plan_report(), and where the set-up failed after choosing its hooks, shows
 * them with why it failed: 0, or @err where it has no hooks to show.
 */
int bpfcmd_plan_opened(struct bpfcmd *c, const char *name, int err, char *why, size_t len,
		       plan_show_fn show, void *arg);

/*
 * Loads the programs and fills the target filter maps (filter_devs, filter_cgroups)
 * with @disk (NULL: every disk) and the cgroup tree at @cgroup_dir (NULL: every cgroup).
 */
int bpfcmd_load(struct bpfcmd *c, const struct disk *disk, const char *cgroup_dir);
/* The same with the disk and cgroup of a command's target filter options. */
int bpfcmd_load_filter(struct bpfcmd *c, const struct filter_opts *f);

/* The consumer of ring buffer @rb_fd with counters @counts_fd (rbuf_new()), in ->rb. */
int bpfcmd_ringbuf(struct bpfcmd *c, int rb_fd, int counts_fd, const struct rbuf_handler *h,
		   size_t nr, void *arg);

/*
 * Attaches the skeleton and the plan's other hooks; says on stderr which figures
 * optional hooks that attach nowhere leave out, and under -v the plan.
 */
int bpfcmd_attach(struct bpfcmd *c);

/*
 * Tracing runs: SIGINT and SIGTERM request a stop, "iospan <name>: <@fmt...>" goes to
 * stderr, kernel symbols are read in the background if wanted.
 */
void bpfcmd_start(struct bpfcmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What a tick (a report) of bpfcmd_run() is about. */
struct bpfcmd_tick {
	uint64_t now_ns; /* CLOCK_MONOTONIC when it was due */
	double seconds;	 /* since the previous tick, or the start of the run */
	bool stopped;	 /* a stop was requested */
	bool last;	 /* the run ends after this tick */
};

struct bpfcmd_loop {
	uint64_t interval_ns; /* a tick every interval; 0: none but the last */
	uint64_t duration_ns; /* the run ends after it; 0: at a stop request or @count */
	uint64_t count;	      /* with an interval: ticks before the run ends; 0: no limit */
	/*
	 * A last tick when the run ends between two (a stop, the duration): for commands
	 * whose report is a tick. Others report after bpfcmd_stop().
	 */
	bool tick_at_end;
	/* Longest wait between two looks at the clock and the ring buffer; 0: no limit. */
	uint32_t max_wait_ms;
	/* A report; NULL for a run without any (snoop: no interval, no last tick). */
	int (*tick)(void *arg, const struct bpfcmd_tick *t);
	/* Every @housekeeping_ns and at the start of each window, while not stopped. */
	uint64_t housekeeping_ns;
	void (*housekeep)(void *arg);
	/* After each read of the ring buffer: > 0 ends the run, < 0 fails it. */
	int (*after_read)(void *arg);
	void *arg;
};

/*
 * The main loop, until a stop request, the duration or the count: reads the ring
 * buffer (records go to their handlers), runs housekeeping, and calls @l->tick when a
 * report is due (after the records that arrived until then). Once a second it lets
 * ->cgmap look again for cgroups it does not know (cgroup_map_round()). Returns 0 or
 * the first failure (a tick's, reported by it; or the ring buffer's, reported here).
 */
int bpfcmd_run(struct bpfcmd *c, const struct bpfcmd_loop *l);

/*
 * Reads the ring buffer for up to @timeout_ms, ending a long read at the end of that
 * time (for callers with a loop of their own). 0 or -errno, reported.
 */
int bpfcmd_poll(struct bpfcmd *c, int timeout_ms);

/*
 * Ends sending without detaching (which takes long): sets @emit_stopped (a global of
 * the programs that they check before sending; NULL: none), then reads the ring buffer
 * until every record sent has arrived, waiting at most @drain_ms for those still being
 * written. Records that never arrive are counted in ->not_arrived (not an error).
 */
int bpfcmd_stop(struct bpfcmd *c, bool *emit_stopped, int drain_ms);

/* Runs of the programs the kernel skipped so far (bpfobj_missed_runs()). */
uint64_t bpfcmd_missed_runs(const struct bpfcmd *c);

/* Detaches, destroys the skeleton and frees what @c holds; @c may be half set up. */
void bpfcmd_close(struct bpfcmd *c);

#endif
