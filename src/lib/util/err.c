// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"

static const char *err_prog = "iospan";
static bool err_json_mode;
static bool err_verbose_mode;
static bool err_reported;
static int err_exit = EXIT_OK;
static char *capture_buf;
static size_t capture_len;

void err_capture(char *buf, size_t len)
{
	capture_buf = len ? buf : NULL;
	capture_len = len;
	if (capture_buf)
		capture_buf[0] = '\0';
}

void err_init(const char *prog, bool json)
{
	err_prog = prog;
	err_json_mode = json;
}

bool err_json(void)
{
	return err_json_mode;
}

void err_set_verbose(bool verbose)
{
	err_verbose_mode = verbose;
}

bool err_verbose(void)
{
	return err_verbose_mode;
}

/* The message, whole (malloc'd into *@heap), or if memory is short cut into @buf. */
static const char *format_msg(char **heap, char *buf, size_t len, const char *fmt, va_list ap)
{
	char cut[1024];
	va_list ap2;

	va_copy(ap2, ap);
	if (vasprintf(heap, fmt, ap) < 0) {
		*heap = NULL;
		vsnprintf(cut, sizeof(cut), fmt, ap2);
		/* A cut message is marked, and never ends inside a character. */
		utf8_copy(buf, len, cut);
		va_end(ap2);
		return buf;
	}
	va_end(ap2);
	return *heap;
}

static void report(int exit_code, const char *fmt, va_list ap)
{
	char buf[1024], *heap = NULL;
	const char *msg;

	/* Only the first error is shown: later ones are consequences of it. */
	if (!capture_buf && err_reported)
		return;
	msg = format_msg(&heap, buf, sizeof(buf) - 16, fmt, ap);
	if (capture_buf) {
		if (!capture_buf[0])
			utf8_copy(capture_buf, capture_len, msg);
		goto cleanup;
	}
	err_reported = true;
	err_exit = exit_code;

	if (err_json_mode) {
		struct jw *jw = jw_new(stdout);

		if (jw) {
			jw_start_object(jw);
			jw_kv_string(jw, "error", msg);
			jw_kv_int(jw, "exit_code", exit_code);
			jw_end_object(jw);
			jw_free(jw);
		} else {
			/* No memory for the writer: the same object by hand, message left out. */
			printf("{\"error\":\"out of memory\",\"exit_code\":%d}\n", exit_code);
		}
		fflush(stdout);
	} else {
		fflush(stdout);
		fprintf(stderr, "%s: %s\n", err_prog, msg);
	}
cleanup:
	free(heap);
}

int fail_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report(EXIT_USAGE, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report(EXIT_RUNTIME, fmt, ap);
	va_end(ap);
	return err < 0 ? err : -EIO;
}

/* One line on stderr: "iospan: <kind>message". */
static void say(const char *kind, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s", err_prog, kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	if (err_json_mode || capture_buf)
		return;
	va_start(ap, fmt);
	say("warning: ", fmt, ap);
	va_end(ap);
}

void info(const char *fmt, ...)
{
	va_list ap;

	if (!err_verbose_mode)
		return;
	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

int err_exit_code(int ret)
{
	if (err_reported)
		return err_exit;
	return ret < 0 ? EXIT_RUNTIME : EXIT_OK;
}
