/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One error path for every command: an error is one line, on stderr as text or on
 * stdout as {"error": ...} under --json, so machine output stays valid JSON.
 */
#ifndef IOSPAN_ERR_H
#define IOSPAN_ERR_H

#include <stdbool.h>

enum iospan_exit {
	EXIT_OK = 0,
	EXIT_RUNTIME = 1,
	EXIT_USAGE = 2,
};

void err_init(const char *prog, bool json);
bool err_json(void);

/* Bad input: reports and returns -EINVAL; the process will exit with 2. */
/*
 * With @len > 0, the next failures are not reported but the first one is kept in @buf
 * (and warnings are dropped): doctor runs a command's set-up to see whether it works
 * here. err_capture(NULL, 0) ends it.
 */
void err_capture(char *buf, size_t len);

int fail_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runtime failure: reports and returns @err (a negative errno); exit code 1. */
int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A warning that does not stop the command (text only; counted in JSON by callers). */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* -v diagnostics on stderr. */
void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void err_set_verbose(bool verbose);
bool err_verbose(void);

/* Exit code for a command's return value (0 or negative errno). */
int err_exit_code(int ret);

#endif
