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
#include "doctor.h"

static const char doctor_usage[] =
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
	"failure, 2 bad usage. Manual: iospan-doctor(8).\n";

static int parse_args(int argc, char **argv)
{
	static const struct option long_opts[] = {COMMON_LONG_OPTS, {NULL, 0, NULL, 0}};
	const struct args_spec spec = {
		.cmd = "doctor",
		.usage = doctor_usage,
		.short_opts = ":" COMMON_SHORT_OPTS,
		.long_opts = long_opts,
		.options_only = true,
	};
	int opt = args_next(&spec, argc, argv);

	if (opt)
		return opt < 0 ? opt : ARGS_HELP; /* it has no options of its own */
	return 0;
}

int cmd_doctor(int argc, char **argv)
{
	static struct doctor_report report;
	int err;

	err = parse_args(argc, argv);
	if (err)
		return err < 0 ? err : 0;

	probe_setup_libbpf_print();
	err = doctor_gather(&report);
	if (err)
		goto cleanup;
	if (gopts.json)
		doctor_render_json(&report);
	else
		doctor_render_text(&report);
cleanup:
	probe_cleanup();
	return err;
}
