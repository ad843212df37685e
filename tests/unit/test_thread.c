// SPDX-License-Identifier: GPL-2.0
/*
 * Helper threads (src/lib/util/thread.c): every signal blocked in them, so that a stop
 * request reaches the main thread; the caller's own mask untouched; the stack size
 * asked for.
 */
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "thread.h"

struct seen {
	sigset_t mask;
	size_t stack_size;
};

static void *look(void *arg)
{
	struct seen *s = arg;
	pthread_attr_t attr;

	pthread_sigmask(SIG_BLOCK, NULL, &s->mask);
	if (!pthread_getattr_np(pthread_self(), &attr)) {
		pthread_attr_getstacksize(&attr, &s->stack_size);
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

static void test_helper_blocks_every_signal(void **state)
{
	struct seen s = {0};
	sigset_t before, after;
	pthread_t t;

	(void)state;
	pthread_sigmask(SIG_BLOCK, NULL, &before);
	assert_int_equal(thread_start(&t, look, &s, 0), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(sigismember(&s.mask, SIGINT));
	assert_true(sigismember(&s.mask, SIGTERM));
	assert_true(sigismember(&s.mask, SIGHUP));
	assert_true(sigismember(&s.mask, SIGALRM));
	/* The caller still takes them. */
	pthread_sigmask(SIG_BLOCK, NULL, &after);
	assert_false(sigismember(&after, SIGINT));
	assert_false(sigismember(&after, SIGTERM));
	assert_int_equal(sigismember(&before, SIGUSR1), sigismember(&after, SIGUSR1));
}

static void test_helper_gets_the_stack_asked_for(void **state)
{
	struct seen s = {0};
	pthread_t t;

	(void)state;
	assert_int_equal(thread_start(&t, look, &s, 1 << 20), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(s.stack_size >= 1 << 20);
	assert_true(s.stack_size < 2 << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helper_blocks_every_signal),
		cmocka_unit_test(test_helper_gets_the_stack_asked_for),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
