/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The syscalls a command follows, in one of two ways user space chooses between
 * (src/lib/bpf/syscalls.h), each program serving every syscall by its number:
 *
 * - the raw sys_enter and sys_exit tracepoints: two hooks for all syscalls. Their links
 *   let go at once, and no perf record is built for the program; but the program runs
 *   on every syscall of the machine, also those no command follows (bench/syscallcost:
 *   about 100 ns more than the classic ones on such a syscall here, 36 ns less on a
 *   followed one).
 * - the classic tracepoints (syscalls:sys_enter_<name>, ...), one per syscall and
 *   direction: a syscall nobody follows costs little, but releasing each one waits
 *   for an RCU grace period under the kernel's event_mutex (perf_trace_destroy()), one
 *   after the other, 16-28 ms each here: top's 38 took 0.8 s to let go at exit.
 *
 * The handlers see the syscall's number and its first arguments as the 64-bit ABI
 * passes them, and at exit its result. A 32-bit (compat) syscall numbers its calls
 * differently: the raw programs skip it, as the kernel's syscall tracepoints do
 * (arch_trace_is_compat_syscall()).
 */
#ifndef IOSPAN_SYSCALL_BPF_H
#define IOSPAN_SYSCALL_BPF_H

#include "common_abi.h"

#if !defined(__TARGET_ARCH_x86)
#error "syscall.bpf.h knows the x86-64 syscall ABI only"
#endif

/* x86: set in thread_info.status for the length of a 32-bit syscall. */
#define SYS_TS_COMPAT 0x0002

/* The syscall's arguments, in the registers the x86-64 syscall ABI puts them in. */
#define SYS_ARG0(regs) KR(struct pt_regs, regs, di)
#define SYS_ARG1(regs) KR(struct pt_regs, regs, si)
#define SYS_ARG2(regs) KR(struct pt_regs, regs, dx)
#define SYS_ARG3(regs) KR(struct pt_regs, regs, r10)

/* At sys_exit: the number of the syscall that ends (syscall_get_nr()). */
#define SYS_EXIT_NR(regs) ((long)KR(struct pt_regs, regs, orig_ax))

/*
 * Whether syscall @nr of the current task is one in table @ops (a command's sys_op[],
 * nonzero for the syscalls it follows), called the 64-bit way.
 */
static __always_inline bool sys_followed(const volatile __u8 *ops, long nr)
{
	struct task_struct *task;

	if (nr < 0 || nr >= SYS_NR_TABLE || !ops[nr])
		return false;
	task = bpf_get_current_task_btf();
	return !(BPF_CORE_READ(task, thread_info.status) & SYS_TS_COMPAT);
}

/*
 * The context of a program on a classic syscall tracepoint, as the kernel builds it for
 * BPF (perf_call_bpf_enter/exit): 8 bytes, the syscall number, then the arguments or
 * the return value. Fixed offsets, not struct syscall_trace_enter/exit: those start
 * with a struct trace_entry, larger on some kernels (6.1's PREEMPT_RT: 12 bytes), where
 * CO-RE would move the number to an offset the kernel does not write (it read 0 there).
 * Little-endian: the number is an int on newer kernels, a long on older ones.
 */
struct sys_enter_ctx {
	__u64 hdr;
	__s32 nr;
	__u32 nr_hi;
	__u64 args[6];
};

struct sys_exit_ctx {
	__u64 hdr;
	__s32 nr;
	__u32 nr_hi; /* padding on newer kernels: not written */
	__s64 ret;
};

/*
 * The syscall programs of a command: <name>_enter and <name>_exit (tp_btf on sys_enter
 * and sys_exit) with their raw_tp fallbacks <name>_enter_raw and <name>_exit_raw, and
 * <name>_enter_tp and <name>_exit_tp for the classic tracepoints. They call
 * on_enter(nr, args) for a followed syscall, its first @nargs (1 to 4) arguments in
 * args[], and on_exit(nr, ret) at its end. The kernel refuses to attach a program that
 * reads past a classic tracepoint's record, which holds as many arguments as the
 * syscall has (fsync's one): the first is read directly, the others with a probe read,
 * which that check does not see (for a syscall with fewer, what follows the record in
 * the trace buffer: the ops of those syscalls ignore them).
 */
#define SYSCALL_PROGS(name, ops, nargs, on_enter, on_exit)                             \
	static __always_inline int name##_enter_of(struct pt_regs *regs, long nr)      \
	{                                                                              \
		__u64 args[4] = {};                                                    \
                                                                                       \
		if (!sys_followed(ops, nr))                                            \
			return 0;                                                      \
		args[0] = SYS_ARG0(regs);                                              \
		if ((nargs) > 1)                                                       \
			args[1] = SYS_ARG1(regs);                                      \
		if ((nargs) > 2)                                                       \
			args[2] = SYS_ARG2(regs);                                      \
		if ((nargs) > 3)                                                       \
			args[3] = SYS_ARG3(regs);                                      \
		return on_enter(nr, args);                                             \
	}                                                                              \
	static __always_inline int name##_exit_of(struct pt_regs *regs, long ret)      \
	{                                                                              \
		long nr = SYS_EXIT_NR(regs);                                           \
                                                                                       \
		return sys_followed(ops, nr) ? on_exit(nr, ret) : 0;                   \
	}                                                                              \
	TP_PROGS(sys_enter, name##_enter, name##_enter_of, TP_VIEW(struct pt_regs, 0), \
		 TP_ARG(long, 1))                                                      \
	TP_PROGS(sys_exit, name##_exit, name##_exit_of, TP_VIEW(struct pt_regs, 0),    \
		 TP_ARG(long, 1))                                                      \
	SEC("tracepoint")                                                              \
	int name##_enter_tp(struct sys_enter_ctx *ctx)                                 \
	{                                                                              \
		__u64 args[4] = {};                                                    \
		long nr = ctx->nr;                                                     \
                                                                                       \
		if (nr < 0 || nr >= SYS_NR_TABLE || !ops[nr])                          \
			return 0;                                                      \
		args[0] = ctx->args[0];                                                \
		if ((nargs) > 1)                                                       \
			bpf_probe_read_kernel(&args[1], ((nargs)-1) * sizeof(args[0]), \
					      &ctx->args[1]);                          \
		return on_enter(nr, args);                                             \
	}                                                                              \
	SEC("tracepoint")                                                              \
	int name##_exit_tp(struct sys_exit_ctx *ctx)                                   \
	{                                                                              \
		long nr = ctx->nr;                                                     \
                                                                                       \
		if (nr < 0 || nr >= SYS_NR_TABLE || !ops[nr])                          \
			return 0;                                                      \
		return on_exit(nr, ctx->ret);                                          \
	}

#endif
