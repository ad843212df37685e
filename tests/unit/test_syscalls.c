// SPDX-License-Identifier: GPL-2.0
/*
 * The hooks of the syscalls a command follows (src/lib/bpf/syscalls.c), both ways, on an
 * object only opened (no kernel needed): six programs of the probe object stand in for
 * a command's syscall programs.
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include <bpf/libbpf.h>

#include "syscalls.h"
#include "probe.skel.h"

struct fixture {
	struct bpf_object *obj;
	struct syscall_progs p;
	struct attach_hook hooks[48];
	int n;
};

static int setup(void **state)
{
	static struct fixture f;
	struct bpf_program *prog, *all[6];
	const void *elf;
	size_t sz;
	int i = 0;

	memset(&f, 0, sizeof(f));
	elf = probe_bpf__elf_bytes(&sz);
	f.obj = bpf_object__open_mem(elf, sz, NULL);
	if (!f.obj)
		return -1;
	bpf_object__for_each_program(prog, f.obj)
	{
		if (i < 6)
			all[i++] = prog;
	}
	if (i < 6)
		return -1;
	f.p = (struct syscall_progs){.enter = all[0],
				     .enter_raw = all[1],
				     .enter_tp = all[2],
				     .exit = all[3],
				     .exit_raw = all[4],
				     .exit_tp = all[5]};
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	bpf_object__close(f->obj);
	return 0;
}

static const char *const names[] = {"read", "write", "pread64", "fsync", "fallocate"};
#define NR_NAMES ((int)(sizeof(names) / sizeof(names[0])))

static void test_raw_pair(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(syscall_hooks_add(f->hooks, &f->n, 48, SYSCALL_ATTACH_RAW, &f->p, names,
					   NR_NAMES, 2),
			 0);
	/* Two hooks for all syscalls, tp_btf then raw_tp. */
	assert_int_equal(f->n, 2);
	assert_string_equal(f->hooks[0].name, "sys_enter");
	assert_string_equal(f->hooks[1].name, "sys_exit");
	assert_ptr_equal(f->hooks[0].v[0].prog, f->p.enter);
	assert_ptr_equal(f->hooks[0].v[1].prog, f->p.enter_raw);
	assert_null(f->hooks[0].v[2].prog);
	assert_ptr_equal(f->hooks[1].v[0].prog, f->p.exit);
	assert_ptr_equal(f->hooks[1].v[1].prog, f->p.exit_raw);
	assert_false(f->hooks[0].optional);
	/* The classic programs are not loaded; the pair is. */
	assert_false(bpf_program__autoload(f->p.enter_tp));
	assert_false(bpf_program__autoload(f->p.exit_tp));
	assert_true(bpf_program__autoload(f->p.enter));
	assert_true(bpf_program__autoload(f->p.exit_raw));
}

static void test_raw_pair_optional(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(syscall_hooks_add(f->hooks, &f->n, 48, SYSCALL_ATTACH_RAW, &f->p, names,
					   NR_NAMES, 0),
			 0);
	assert_true(f->hooks[0].optional && f->hooks[1].optional);
}

static void test_per_call(void **state)
{
	struct fixture *f = *state;
	int i, j;

	f->n = 1; /* appended after what is there */
	assert_int_equal(syscall_hooks_add(f->hooks, &f->n, 48, SYSCALL_ATTACH_PER_CALL, &f->p,
					   names, NR_NAMES, 2),
			 0);
	/* Two classic tracepoints a syscall. */
	assert_int_equal(f->n, 1 + 2 * NR_NAMES);
	for (i = 0; i < NR_NAMES; i++) {
		const struct attach_hook *en = &f->hooks[1 + 2 * i], *ex = en + 1;
		char want[64];

		snprintf(want, sizeof(want), "sys_enter_%s", names[i]);
		assert_string_equal(en->name, want);
		snprintf(want, sizeof(want), "syscalls/sys_enter_%s", names[i]);
		assert_string_equal(en->v[0].target, want);
		snprintf(want, sizeof(want), "sys_exit_%s", names[i]);
		assert_string_equal(ex->name, want);
		snprintf(want, sizeof(want), "syscalls/sys_exit_%s", names[i]);
		assert_string_equal(ex->v[0].target, want);
		for (j = 0; j < 2; j++) {
			assert_int_equal(en[j].v[0].mode, ATTACH_TRACEPOINT);
			assert_null(en[j].v[1].prog);
			/* read and write are required, the others not. */
			assert_int_equal(en[j].optional, i >= 2);
		}
		assert_ptr_equal(en->v[0].prog, f->p.enter_tp);
		assert_ptr_equal(ex->v[0].prog, f->p.exit_tp);
	}
	assert_false(bpf_program__autoload(f->p.enter));
	assert_false(bpf_program__autoload(f->p.enter_raw));
	assert_false(bpf_program__autoload(f->p.exit));
	assert_false(bpf_program__autoload(f->p.exit_raw));
	assert_true(bpf_program__autoload(f->p.enter_tp));
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	const char *const unknown[] = {"read", "openat"};

	/* No room: the hooks given so far stay, the call says so. */
	f->n = 47;
	assert_int_equal(syscall_hooks_add(f->hooks, &f->n, 48, SYSCALL_ATTACH_RAW, &f->p, names,
					   NR_NAMES, 2),
			 -E2BIG);
	f->n = 40;
	assert_int_equal(syscall_hooks_add(f->hooks, &f->n, 48, SYSCALL_ATTACH_PER_CALL, &f->p,
					   names, NR_NAMES, 2),
			 -E2BIG);
	assert_true(f->n <= 48);
	/* A syscall the table does not name is a programming error, not skipped. */
	f->n = 0;
	assert_int_equal(syscall_hooks_add(f->hooks, &f->n, 48, SYSCALL_ATTACH_PER_CALL, &f->p,
					   unknown, 2, 0),
			 -EINVAL);
}

static void test_progs_off(void **state)
{
	struct fixture *f = *state;

	syscall_progs_off(&f->p);
	assert_false(bpf_program__autoload(f->p.enter));
	assert_false(bpf_program__autoload(f->p.enter_raw));
	assert_false(bpf_program__autoload(f->p.enter_tp));
	assert_false(bpf_program__autoload(f->p.exit));
	assert_false(bpf_program__autoload(f->p.exit_raw));
	assert_false(bpf_program__autoload(f->p.exit_tp));
}

/* The numbers of the syscalls followed, by name: those the BPF tables can hold. */
static void test_syscall_nr(void **state)
{
	(void)state;
	assert_int_equal(syscall_nr("read"), SYS_read);
	assert_int_equal(syscall_nr("pwritev2"), SYS_pwritev2);
	assert_int_equal(syscall_nr("sync_file_range"), SYS_sync_file_range);
	assert_int_equal(syscall_nr("fallocate"), SYS_fallocate);
	assert_int_equal(syscall_nr("fault"), -1); /* an op, not a syscall */
	assert_int_equal(syscall_nr("openat"), -1);
	assert_int_equal(syscall_nr(""), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_raw_pair, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_pair_optional, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_progs_off, setup, teardown),
		cmocka_unit_test(test_syscall_nr),
	};

	libbpf_set_print(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
