// SPDX-License-Identifier: GPL-2.0
/*
 * hookfloor: attach empty BPF programs to the named hooks and wait for SIGINT/SIGTERM.
 * Run under bench/overhead.py to see what a hook costs before any work is done in it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "hookfloor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static int usage(struct hookfloor_bpf *skel)
{
	struct bpf_program *prog;

	fprintf(stderr, "usage: hookfloor HOOK...\nhooks:");
	bpf_object__for_each_program(prog, skel->obj)
		fprintf(stderr, " %s", bpf_program__name(prog));
	fprintf(stderr, "\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct hookfloor_bpf *skel;
	struct bpf_program *prog;
	int i, found, err, ret = 1;

	skel = hookfloor_bpf__open();
	if (!skel) {
		fprintf(stderr, "hookfloor: cannot open the BPF object: %s\n", strerror(errno));
		return 1;
	}
	if (argc < 2) {
		ret = usage(skel);
		goto cleanup;
	}
	bpf_object__for_each_program(prog, skel->obj) bpf_program__set_autoload(prog, false);
	for (i = 1; i < argc; i++) {
		found = 0;
		bpf_object__for_each_program(prog, skel->obj)
		{
			if (!strcmp(argv[i], bpf_program__name(prog))) {
				bpf_program__set_autoload(prog, true);
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "hookfloor: unknown hook '%s'\n", argv[i]);
			ret = usage(skel);
			goto cleanup;
		}
	}
	err = hookfloor_bpf__load(skel);
	if (!err)
		err = hookfloor_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "hookfloor: cannot load or attach: %s (run as root)\n",
			strerror(-err));
		goto cleanup;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("hookfloor: %d empty program(s) attached; Ctrl-C to detach\n", argc - 1);
	fflush(stdout);
	while (!stop)
		pause();
	ret = 0;
cleanup:
	hookfloor_bpf__destroy(skel);
	return ret;
}
