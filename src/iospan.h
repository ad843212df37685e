/* SPDX-License-Identifier: GPL-2.0 */
#ifndef IOSPAN_H
#define IOSPAN_H

#include <stdio.h>

/* A subcommand: argv[0] is its name; returns 0 or a negative errno. */
struct cmd {
	const char *name;
	int (*func)(int argc, char **argv);
	const char *summary;
};

int cmd_stat(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_trace(int argc, char **argv);

/* getopt_long helper for commands: resets getopt state before a command parses. */
void cmd_reset_getopt(void);

#endif
