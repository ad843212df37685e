// SPDX-License-Identifier: GPL-2.0
/*
 * The pre-trigger window: the last --pre seconds of samples, kept in memory in a ring
 * allocated once, so a watcher's memory stays flat however long it runs.
 */
#include <errno.h>
#include <stdlib.h>

#include "watch.h"

int watch_window_init(struct watch_window *w, unsigned int cap)
{
	w->slots = calloc(cap ? cap : 1, sizeof(*w->slots));
	if (!w->slots)
		return -ENOMEM;
	w->cap = cap ? cap : 1;
	w->nr = w->head = 0;
	return 0;
}

void watch_window_free(struct watch_window *w)
{
	free(w->slots);
	w->slots = NULL;
	w->cap = w->nr = w->head = 0;
}

void watch_window_push(struct watch_window *w, const struct io_sample *s)
{
	if (w->nr < w->cap) {
		w->slots[(w->head + w->nr++) % w->cap] = *s;
		return;
	}
	/* Full: the oldest sample makes room. */
	w->slots[w->head] = *s;
	w->head = (w->head + 1) % w->cap;
}

const struct io_sample *watch_window_at(const struct watch_window *w, unsigned int i)
{
	return &w->slots[(w->head + i) % w->cap];
}

void watch_window_clear(struct watch_window *w)
{
	w->nr = w->head = 0;
}
