// SPDX-License-Identifier: GPL-2.0
/* The hooks of the syscalls a command follows (syscalls.h). */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include <bpf/libbpf.h>

#include "array.h"
#include "common_abi.h"
#include "syscalls.h"

/*
 * The syscalls iospan follows: their numbers, and hook names and tracepoints, which
 * live as long as the program (a table of literals).
 */
#define SYSCALL_NAMES(nm)                                                          \
	{                                                                          \
#nm, "sys_enter_" #nm, "sys_exit_" #nm, "syscalls/sys_enter_" #nm, \
			"syscalls/sys_exit_" #nm, SYS_##nm                         \
	}

static const struct syscall_names {
	const char *name, *enter, *exit, *enter_tp, *exit_tp;
	int nr;
} syscall_names[] = {
	SYSCALL_NAMES(read),
	SYSCALL_NAMES(write),
	SYSCALL_NAMES(pread64),
	SYSCALL_NAMES(pwrite64),
	SYSCALL_NAMES(readv),
	SYSCALL_NAMES(writev),
	SYSCALL_NAMES(preadv),
	SYSCALL_NAMES(pwritev),
	SYSCALL_NAMES(preadv2),
	SYSCALL_NAMES(pwritev2),
	SYSCALL_NAMES(fsync),
	SYSCALL_NAMES(fdatasync),
	SYSCALL_NAMES(sync_file_range),
	SYSCALL_NAMES(truncate),
	SYSCALL_NAMES(ftruncate),
	SYSCALL_NAMES(fallocate),
};

static const struct syscall_names *names_of(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(syscall_names); i++)
		if (!strcmp(syscall_names[i].name, name))
			return &syscall_names[i];
	return NULL;
}

int syscall_nr(const char *name)
{
	const struct syscall_names *sn = names_of(name);

	return sn && sn->nr < SYS_NR_TABLE ? sn->nr : -1;
}

static int add_hook(struct attach_hook *hooks, int *n, int max, struct attach_hook h)
{
	if (*n >= max)
		return -E2BIG;
	hooks[(*n)++] = h;
	return 0;
}

static int add_per_call(struct attach_hook *hooks, int *n, int max, const struct syscall_progs *p,
			const char *const *names, int nr, int nr_required)
{
	const struct syscall_names *sn;
	int i, err;

	for (i = 0; i < nr; i++) {
		sn = names_of(names[i]);
		if (!sn)
			return -EINVAL;
		err = add_hook(hooks, n, max, (struct attach_hook){.name = sn->enter, .optional = i >= nr_required, .v = {{.prog = p->enter_tp, .mode = ATTACH_TRACEPOINT, .target = sn->enter_tp}}}) ?:
			      add_hook(hooks, n, max,
				       (struct attach_hook){.name = sn->exit,
							    .optional = i >= nr_required,
							    .v = {{.prog = p->exit_tp,
								   .mode = ATTACH_TRACEPOINT,
								   .target = sn->exit_tp}}});
		if (err)
			return err;
	}
	return 0;
}

int syscall_hooks_add(struct attach_hook *hooks, int *n, int max, enum syscall_attach how,
		      const struct syscall_progs *p, const char *const *names, int nr,
		      int nr_required)
{
	struct bpf_program *other[] = {p->enter, p->enter_raw, p->exit, p->exit_raw};
	size_t i;

	if (how == SYSCALL_ATTACH_PER_CALL) {
		for (i = 0; i < ARRAY_SIZE(other); i++)
			bpf_program__set_autoload(other[i], false);
		return add_per_call(hooks, n, max, p, names, nr, nr_required);
	}
	bpf_program__set_autoload(p->enter_tp, false);
	bpf_program__set_autoload(p->exit_tp, false);
	return add_hook(hooks, n, max, (struct attach_hook){.name = "sys_enter", .optional = !nr_required, .v = {{.prog = p->enter}, {.prog = p->enter_raw}}}) ?:
		       add_hook(hooks, n, max,
				(struct attach_hook){
					.name = "sys_exit",
					.optional = !nr_required,
					.v = {{.prog = p->exit}, {.prog = p->exit_raw}}});
}

void syscall_progs_off(const struct syscall_progs *p)
{
	struct bpf_program *all[] = {p->enter, p->enter_raw, p->enter_tp,
				     p->exit,  p->exit_raw,  p->exit_tp};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(all); i++)
		bpf_program__set_autoload(all[i], false);
}
