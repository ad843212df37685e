// SPDX-License-Identifier: GPL-2.0
/*
 * stdout that a stop request always gets through (src/lib/util/output.c): each case runs
 * in a child whose stdout is a pipe, so the test's own output is left alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Before cmocka.h, whose fail() macro would rename our fail(). */
#include "args.h"
#include "err.h"
#include "output.h"
#include "testutil.h"

#define LINE_LEN 100

/* Writes @lines lines of LINE_LEN bytes to stdout through out_init()'s writer. */
static void write_lines(int lines)
{
	char line[LINE_LEN + 1];
	int i;

	memset(line, 'x', LINE_LEN - 1);
	line[LINE_LEN - 1] = '\n';
	line[LINE_LEN] = '\0';
	for (i = 0; i < lines; i++)
		fputs(line, stdout);
}

struct child {
	pid_t pid;
	int out; /* read end of its stdout */
	int err; /* read end of its stderr */
};

/*
 * Starts @fn in a child with stdout and stderr on pipes; fn's return is its exit code.
 * @no_reader: stdout's read end is closed before the child starts.
 */
static struct child spawn(int (*fn)(void), bool no_reader)
{
	int out[2], errp[2];
	struct child c;

	assert_int_equal(pipe(out), 0);
	assert_int_equal(pipe(errp), 0);
	if (no_reader) {
		close(out[0]);
		out[0] = -1;
	}
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (!c.pid) {
		dup2(out[1], STDOUT_FILENO);
		dup2(errp[1], STDERR_FILENO);
		if (out[0] >= 0)
			close(out[0]);
		close(out[1]);
		close(errp[0]);
		close(errp[1]);
		signal(SIGPIPE, SIG_IGN); /* as main() does */
		_exit(out_init() ? 99 : fn());
	}
	close(out[1]);
	close(errp[1]);
	c.out = out[0];
	c.err = errp[0];
	return c;
}

/* Its exit code, waiting at most @secs (a hang detector, not a speed check). */
static int wait_child(struct child *c, int secs)
{
	int status, i;

	for (i = 0; i < secs * 100; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		usleep(10000);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
	return -1;
}

static size_t drain(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len && (n = read(fd, buf + got, len - got)) > 0)
		got += n;
	buf[got < len ? got : len - 1] = '\0';
	return got;
}

/* A reader that takes everything: exit code as given, every byte there. */
static int all_read(void)
{
	write_lines(1000);
	return out_finish(0);
}

static void test_reader_takes_all(void **state)
{
	struct child c = spawn(all_read, false);
	static char buf[200000];
	size_t got = drain(c.out, buf, sizeof(buf));

	assert_int_equal(wait_child(&c, 30), 0);
	assert_int_equal(got, 1000 * LINE_LEN);
	close(c.out);
	close(c.err);
}

/*
 * A reader that takes nothing (a pager left alone): after a stop request the writer
 * waits OUT_STOP_GRACE_MS at most, drops the rest, and says so.
 */
static int stopped_reader(void)
{
	write_lines(100); /* fits in the pipe */
	fflush(stdout);
	stop_requested = 1;
	write_lines(2000); /* 200 KB: more than a pipe holds */
	return out_finish(0);
}

static void test_stop_gets_past_a_reader_that_reads_nothing(void **state)
{
	struct child c = spawn(stopped_reader, false);
	static char buf[1 << 20], err[4096];
	int code = wait_child(&c, 30);
	size_t got;

	/* Ended on its own (not killed by the hang detector), as a runtime failure. */
	assert_int_equal(code, EXIT_RUNTIME);
	got = drain(c.out, buf, sizeof(buf));
	/* What the pipe took: at least the lines before the stop, never more than all. */
	assert_true(got >= 100 * LINE_LEN && got < 2100 * LINE_LEN);
	drain(c.err, err, sizeof(err));
	assert_non_null(strstr(err, "bytes of output not written: the reader did not take them"));
	close(c.out);
	close(c.err);
}

/* A reader gone (EPIPE): the command is asked to stop, and says what was lost. */
static int gone_reader(void)
{
	write_lines(10);
	return out_finish(0);
}

static void test_reader_gone(void **state)
{
	struct child c;
	static char err[4096];

	c = spawn(gone_reader, true); /* its first write fails */
	assert_int_equal(wait_child(&c, 30), EXIT_RUNTIME);
	drain(c.err, err, sizeof(err));
	assert_non_null(strstr(err, "cannot write the output: Broken pipe"));
	close(c.err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_takes_all),
		cmocka_unit_test(test_stop_gets_past_a_reader_that_reads_nothing),
		cmocka_unit_test(test_reader_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
