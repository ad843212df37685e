/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helper threads (probes, kallsyms, detaching) with every signal blocked: a stop
 * request (SIGINT, SIGTERM) must reach the main thread, whose poll or write it has to
 * interrupt, not a helper that would let it go unnoticed.
 */
#ifndef IOSPAN_THREAD_H
#define IOSPAN_THREAD_H

#include <pthread.h>
#include <stddef.h>

/* pthread_create() of @fn(@arg) with all signals blocked and a @stack_size (0: default). */
int thread_start(pthread_t *thread, void *(*fn)(void *), void *arg, size_t stack_size);

#endif
