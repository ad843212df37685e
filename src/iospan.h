/* SPDX-License-Identifier: GPL-2.0 */
#ifndef IOSPAN_H
#define IOSPAN_H

#include <stdio.h>

#include "probe.h" /* plan_show_fn */

/* A subcommand: argv[0] is its name; returns 0 or a negative errno. */
struct cmd {
	const char *name;
	int (*func)(int argc, char **argv);
	const char *summary;
	/*
	 * BPF commands: sets up the command with its default options as it would run
	 * (load and attach), hands the plan and the outcome to @show, and tears down.
	 */
	int (*plan)(plan_show_fn show, void *arg);
};

const struct cmd *iospan_commands(size_t *n);

int cmd_stat(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_lat(int argc, char **argv);
int cmd_snoop(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_incidents(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* getopt_long helper for commands: resets getopt state before a command parses. */
void cmd_reset_getopt(void);

#endif
