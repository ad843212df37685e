// SPDX-License-Identifier: GPL-2.0
/* iospan: eBPF tracer for the Linux storage I/O path. Command dispatch (bpftool/perf style). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "iospan.h"
#include "collect/lat.h"
#include "collect/snoop.h"
#include "collect/top.h"
#include "collect/trace.h"
#include "args.h"
#include "err.h"
#include "output.h"

static const struct cmd commands[] = {
	{"stat", cmd_stat, "iostat -x from /proc/diskstats, with record and replay", NULL},
	{"doctor", cmd_doctor, "what this kernel supports and how iospan will attach", NULL},
	{"top", cmd_top, "who does I/O to which file, how slow: processes, files, stalls",
	 top_collect_plan},
	{"trace", cmd_trace, "each request through the stack: slow ones with stages, timeline",
	 trace_collect_plan},
	{"lat", cmd_lat,
	 "latency and size distributions of block requests, per disk, process, stack",
	 lat_collect_plan},
	{"snoop", cmd_snoop, "every block request, one line each: who, where, how long",
	 snoop_collect_plan},
	{"watch", cmd_watch, "flight recorder: stores I/O incidents (trigger, before, after)",
	 NULL},
	{"incidents", cmd_incidents, "what watch stored: list, show, export, prune", NULL},
	{"report", cmd_report,
	 "one offline HTML page of plots: an incident, a capture, a recording", NULL},
};

#define N_COMMANDS (ARRAY_SIZE(commands))

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "Usage: iospan [--json] [-v] COMMAND [OPTIONS] [ARGS]\n"
		     "       iospan COMMAND --help, iospan --help COMMAND, iospan help COMMAND\n"
		     "       iospan --version\n\n"
		     "Commands (a unique prefix is enough: 'iospan st' is stat):\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nGlobal options (also accepted after COMMAND):\n"
		     "  --json         machine output: one JSON document, or one object per line\n"
		     "  -v, --verbose  attach plan and libbpf messages on stderr\n"
		     "  -h, --help     this help, or with COMMAND that command's help\n"
		     "  -V, --version  print the version\n\n"
		     "Numbers are decimal; durations take a unit (ns, us, ms, s, m, h).\n"
		     "Exit codes: 0 ok, 1 runtime failure, 2 bad usage.\n"
		     "Manual: iospan(8), iospan-stat(8), iospan-top(8), iospan-trace(8),\n"
		     "iospan-lat(8), iospan-snoop(8), iospan-watch(8), iospan-incidents(8),\n"
		     "iospan-report(8), iospan-doctor(8) ('man iospan-top'; in the source tree: "
		     "docs/).\n");
}

const struct cmd *iospan_commands(size_t *n)
{
	*n = N_COMMANDS;
	return commands;
}

void cmd_reset_getopt(void)
{
	optind = 0; /* 0 makes glibc re-initialise, so a second getopt pass starts clean */
	opterr = 0;
}

/*
 * Exact name, or a unique prefix of one (as bpftool does); a usage error naming the
 * candidates otherwise.
 */
static int find_cmd(const char *name, const struct cmd **out)
{
	const struct cmd *found = NULL;
	size_t i, len = strlen(name), nr = 0;
	char names[128] = "";

	for (i = 0; i < N_COMMANDS; i++) {
		if (!strcmp(commands[i].name, name)) {
			*out = &commands[i];
			return 0;
		}
		if (len && !strncmp(commands[i].name, name, len)) {
			found = &commands[i];
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 nr++ ? ", " : "", commands[i].name);
		}
	}
	if (nr == 1) {
		*out = found;
		return 0;
	}
	if (nr > 1)
		return fail_usage("ambiguous command '%s': %s", name, names);
	return fail_usage("unknown command '%s': see 'iospan --help'", name);
}

/* A command's --help, as `iospan help COMMAND` and `iospan --help COMMAND` ask. */
static int cmd_help(const char *name)
{
	char *help_argv[] = { NULL, "--help", NULL };
	const struct cmd *cmd;
	int ret;

	ret = find_cmd(name, &cmd);
	if (ret)
		return err_exit_code(ret);
	help_argv[0] = (char *)cmd->name;
	cmd_reset_getopt();
	return err_exit_code(cmd->func(2, help_argv));
}

int main(int argc, char **argv)
{
	const struct cmd *cmd;
	bool help = false;
	int i, ret;

	/* Output a stop request can always get through (output.h); plain stdio otherwise. */
	if (out_init())
		setvbuf(stdout, NULL, _IOLBF, 0);
	err_init("iospan", false);

	/* Global options before the command; they are accepted after it too. */
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--json"))
			args_common_opt(OPT_JSON);
		else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
			args_common_opt(OPT_VERBOSE);
		else if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
			printf("iospan %s\n", IOSPAN_VERSION);
			return EXIT_OK;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help = true;
		} else {
			ret = fail_usage("unknown option '%s': see 'iospan --help'", argv[i]);
			return err_exit_code(ret);
		}
	}
	if (help || (i < argc && !strcmp(argv[i], "help"))) {
		if (!help)
			i++;
		if (i >= argc) {
			usage(stdout);
			return EXIT_OK;
		}
		if (i + 1 < argc)
			return err_exit_code(fail_usage("unexpected argument '%s' after 'help %s'",
							argv[i + 1], argv[i]));
		return cmd_help(argv[i]);
	}
	if (i >= argc) {
		if (gopts.json)
			return err_exit_code(fail_usage("no command given: usage: iospan [--json] "
							"[-v] COMMAND [OPTIONS] [ARGS] (see "
							"'iospan --help')"));
		usage(stderr);
		return EXIT_USAGE;
	}
	ret = find_cmd(argv[i], &cmd);
	if (ret)
		return err_exit_code(ret);
	cmd_reset_getopt();
	ret = cmd->func(argc - i, argv + i);
	if (ret < 0) {
		/* Make sure a failure never exits silently. */
		fail(ret, "%s failed: %s", cmd->name, strerror(-ret));
	}
	return out_finish(err_exit_code(ret));
}
