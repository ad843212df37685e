// SPDX-License-Identifier: GPL-2.0
#include <signal.h>

#include "thread.h"

int thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, size_t stack_size)
{
	sigset_t all, old;
	pthread_attr_t attr;
	int err;

	err = pthread_attr_init(&attr);
	if (err)
		return -err;
	if (stack_size)
		pthread_attr_setstacksize(&attr, stack_size);
	/* The new thread inherits the mask: blocked there, signals go to the main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(thread, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return -err;
}
