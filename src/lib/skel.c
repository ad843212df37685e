// SPDX-License-Identifier: GPL-2.0
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "skel.h"
#include "thread.h"

/* Links being destroyed in the background (link_destroy_async), joined by skel_detach(). */
#define MAX_PENDING 8
static pthread_t pending[MAX_PENDING];
static int nr_pending;
/* The probes run in threads (probe_prefetch()) and give their links from there. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static void *destroy_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

static bool start_destroy(pthread_t *thread, struct bpf_link *link)
{
	return !thread_start(thread, destroy_link, link, 64 * 1024);
}

void link_destroy_async(struct bpf_link *link)
{
	bool started = false;

	if (!link)
		return;
	pthread_mutex_lock(&pending_lock);
	if (nr_pending < MAX_PENDING && start_destroy(&pending[nr_pending], link)) {
		nr_pending++;
		started = true;
	}
	pthread_mutex_unlock(&pending_lock);
	if (!started)
		bpf_link__destroy(link);
}

void links_destroy(struct bpf_link **links, size_t n)
{
	pthread_t *threads = calloc(n, sizeof(*threads));
	bool *started = calloc(n, sizeof(*started));
	size_t i;

	for (i = 0; i < n; i++) {
		if (!links[i])
			continue;
		started[i] = threads && started && start_destroy(&threads[i], links[i]);
		if (!started || !started[i])
			bpf_link__destroy(links[i]);
	}
	for (i = 0; threads && started && i < n; i++)
		if (started[i])
			pthread_join(threads[i], NULL);
	free(threads);
	free(started);
}

void skel_detach(struct bpf_object_skeleton *s, struct attach_hook *hooks, int nr_hooks)
{
	struct bpf_link **links, **link;
	size_t n = 0;
	int i;

	links = calloc((s ? s->prog_cnt : 0) + (hooks ? nr_hooks : 0) + 1, sizeof(*links));
	for (i = 0; s && i < s->prog_cnt; i++) {
		link = ((struct bpf_prog_skeleton *)((char *)s->progs + i * s->prog_skel_sz))->link;
		if (!*link)
			continue;
		if (links)
			links[n++] = *link;
		else
			bpf_link__destroy(*link);
		*link = NULL;
	}
	for (i = 0; hooks && i < nr_hooks; i++) {
		if (!hooks[i].link)
			continue;
		if (links)
			links[n++] = hooks[i].link;
		else
			bpf_link__destroy(hooks[i].link);
		hooks[i].link = NULL;
	}
	if (links)
		links_destroy(links, n);
	free(links);
	pthread_mutex_lock(&pending_lock);
	while (nr_pending > 0)
		pthread_join(pending[--nr_pending], NULL);
	pthread_mutex_unlock(&pending_lock);
}
