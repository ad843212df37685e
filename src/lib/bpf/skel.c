// SPDX-License-Identifier: GPL-2.0
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* BPF_LOG_STATS: the verifier's summary only, a few lines per program. */
#define VERIFIER_LOG_STATS 4
#define VERIFIER_LOG_SIZE  1024

/*
 * "verification time 812 usec\nstack depth 48+112+56+32\nprocessed 396 insns (limit
 * ...) ... total_states 27": the frames' stack depths, as old verifiers add them up
 * against their 512 bytes.
 */
static void verifier_stats_print(const char *prog, const char *log)
{
	const char *t = strstr(log, "verification time "), *p = strstr(log, "processed ");
	const char *st = strstr(log, "total_states "), *sd = strstr(log, "stack depth ");
	int depth_len = sd ? (int)strcspn(sd + 12, "\n") : 1;
	unsigned long usec = t ? strtoul(t + 18, NULL, 10) : 0;
	unsigned long insns = p ? strtoul(p + 10, NULL, 10) : 0;
	unsigned long states = st ? strtoul(st + 13, NULL, 10) : 0;

	fprintf(stderr, "iospan: verifier: %-24s %8lu insns %6lu states %8lu us stack %.*s\n", prog,
		insns, states, usec, depth_len, sd ? sd + 12 : "?");
}

int skel_load(struct bpf_object_skeleton *s)
{
	const char *env = getenv("IOSPAN_VERIFIER_STATS");
	struct bpf_object *obj = *s->obj;
	struct bpf_program *prog;
	char *logs = NULL;
	int n = 0, i = 0, err;

	if (env && *env && strcmp(env, "0")) {
		bpf_object__for_each_program(prog, obj) n++;
		logs = calloc(n ? n : 1, VERIFIER_LOG_SIZE);
	}
	if (logs) {
		bpf_object__for_each_program(prog, obj)
		{
			bpf_program__set_log_buf(prog, logs + i++ * VERIFIER_LOG_SIZE,
						 VERIFIER_LOG_SIZE);
			bpf_program__set_log_level(prog, VERIFIER_LOG_STATS);
		}
	}
	err = bpf_object__load_skeleton(s);
	if (logs) {
		i = 0;
		bpf_object__for_each_program(prog, obj)
		{
			const char *log = logs + i++ * VERIFIER_LOG_SIZE;

			if (bpf_program__autoload(prog) && *log)
				verifier_stats_print(bpf_program__name(prog), log);
		}
		free(logs);
	}
	return err;
}
