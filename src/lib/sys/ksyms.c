// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "ksyms.h"
#include "probe.h" /* read_int_file(), PRIV_KSYMS: why the kernel hides them */
#include "thread.h"

struct ksyms {
	/* Being filled by a thread (ksyms_load_async): ksyms_ready() waits for it. */
	pthread_t loader;
	bool loading;
	const char *path;
	struct ksym *syms;
	size_t nr, cap;
	/* Names and module names, NUL-separated, in chunks that never move once filled. */
	char **chunks;
	size_t nr_chunks;
	size_t chunk_used;
};

#define KSYMS_CHUNK (256 * 1024)

static char *ksyms_strdup(struct ksyms *ks, const char *s)
{
	size_t len = strlen(s) + 1;
	char **chunks;
	char *dst;

	if (len > KSYMS_CHUNK)
		return NULL;
	if (!ks->nr_chunks || ks->chunk_used + len > KSYMS_CHUNK) {
		chunks = realloc(ks->chunks, (ks->nr_chunks + 1) * sizeof(*chunks));
		if (!chunks)
			return NULL;
		ks->chunks = chunks;
		ks->chunks[ks->nr_chunks] = malloc(KSYMS_CHUNK);
		if (!ks->chunks[ks->nr_chunks])
			return NULL;
		ks->nr_chunks++;
		ks->chunk_used = 0;
	}
	dst = ks->chunks[ks->nr_chunks - 1] + ks->chunk_used;
	memcpy(dst, s, len);
	ks->chunk_used += len;
	return dst;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Aliases in name order, so lookups are deterministic. */
	return strcmp(x->name, y->name);
}

/* Waits for an asynchronous load to end (what it found is then in @ks). */
static void ksyms_ready(const struct ksyms *ks)
{
	struct ksyms *w = (struct ksyms *)ks;

	if (w && w->loading) {
		pthread_join(w->loader, NULL);
		w->loading = false;
	}
}

static void ksyms_clear(struct ksyms *ks)
{
	size_t i;

	for (i = 0; i < ks->nr_chunks; i++)
		free(ks->chunks[i]);
	free(ks->chunks);
	free(ks->syms);
	ks->chunks = NULL;
	ks->syms = NULL;
	ks->nr = ks->cap = ks->nr_chunks = ks->chunk_used = 0;
}

void ksyms_free(struct ksyms *ks)
{
	if (!ks)
		return;
	ksyms_ready(ks);
	ksyms_clear(ks);
	free(ks);
}

int ksyms_readable(void)
{
	unsigned long long addr;
	char line[512];
	int n = 0, err = -ENOENT;
	FILE *f;

	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return -errno;
	/* Hidden addresses read as zero; the first lines are enough to tell. */
	while (n++ < 64 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx", &addr) != 1)
			continue;
		err = addr ? 0 : -EPERM;
		if (!err)
			break;
	}
	fclose(f);
	return err;
}

const char *ksyms_strerror(int err)
{
	/*
	 * kallsyms shows addresses to CAP_SYSLOG under kernel.kptr_restrict 0 and 1 (to
	 * everyone under 0 when kernel.perf_event_paranoid <= 1), to no one under 2.
	 */
	if (err != -EPERM)
		return strerror(-err);
	if (read_int_file("/proc/sys/kernel/kptr_restrict") >= 2)
		return "kernel.kptr_restrict=2 hides their addresses";
	return "addresses hidden: needs " PRIV_KSYMS;
}

/*
 * Splits a kallsyms line, "ffffffff81000000 T _text" or "... t name\t[module]", in
 * place: false if it is not one.
 */
static bool parse_line(char *line, unsigned long long *addr, char **name, char **mod)
{
	char *p = line, *end;

	*addr = strtoull(p, &end, 16);
	if (end == p || *end != ' ' || !end[1] || end[2] != ' ')
		return false;
	*name = end + 3;
	p = *name + strcspn(*name, " \t\n");
	if (p == *name)
		return false;
	*mod = NULL;
	if (*p == '\t' && p[1] == '[') {
		*mod = p + 2;
		(*mod)[strcspn(*mod, "]\n")] = '\0';
	}
	*p = '\0';
	return true;
}

static FILE *ksyms_open(const char *path)
{
	FILE *f = fopen(path ? path : "/proc/kallsyms", "re");

	/* The kernel writes it a line at a time: large reads make fewer calls. */
	if (f)
		setvbuf(f, NULL, _IOFBF, 256 * 1024);
	return f;
}

/* Fills @ks (empty) from @path. */
static int ksyms_read(struct ksyms *ks, const char *path)
{
	unsigned long long addr;
	const char *last_mod = NULL;
	char line[512], *name, *mod;
	bool nonzero = false;
	int err = 0;
	FILE *f;

	f = ksyms_open(path);
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!parse_line(line, &addr, &name, &mod))
			continue;
		err = ARRAY_RESERVE(ks->syms, ks->nr, ks->cap, 65536);
		if (err)
			goto cleanup;
		ks->syms[ks->nr].addr = addr;
		ks->syms[ks->nr].name = ksyms_strdup(ks, name);
		if (!ks->syms[ks->nr].name) {
			err = -ENOMEM;
			goto cleanup;
		}
		ks->syms[ks->nr].module = NULL;
		if (mod && mod[0]) {
			/* Module symbols come in runs: share one copy of the name per run. */
			if (!last_mod || strcmp(last_mod, mod))
				last_mod = ksyms_strdup(ks, mod);
			if (!last_mod) {
				err = -ENOMEM;
				goto cleanup;
			}
			ks->syms[ks->nr].module = last_mod;
		}
		nonzero |= addr != 0;
		ks->nr++;
	}
	if (!ks->nr)
		err = -ENOENT;
	else if (!nonzero)
		err = -EPERM;
	else
		qsort(ks->syms, ks->nr, sizeof(*ks->syms), ksym_cmp);
cleanup:
	if (err)
		ksyms_clear(ks);
	fclose(f);
	return err;
}

int ksyms_load(const char *path, struct ksyms **out)
{
	struct ksyms *ks;
	int err;

	*out = NULL;
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	err = ksyms_read(ks, path);
	if (err) {
		free(ks);
		return err;
	}
	*out = ks;
	return 0;
}

static void *ksyms_loader(void *arg)
{
	struct ksyms *ks = arg;

	ksyms_read(ks, ks->path);
	return NULL;
}

int ksyms_load_async(const char *path, struct ksyms **out)
{
	struct ksyms *ks;

	*out = NULL;
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	ks->path = path;
	ks->loading = !thread_start(&ks->loader, ksyms_loader, ks, 0);
	if (!ks->loading)
		ksyms_read(ks, path);
	*out = ks;
	return 0;
}

int ksyms_lookup(const char *path, const char *const *names, uint64_t *addrs, size_t n)
{
	bool any = false, nonzero = false;
	char line[512], *sym, *mod;
	size_t i, left = n, lines = 0;
	unsigned long long a;
	int err = 0;
	FILE *f;

	for (i = 0; i < n; i++)
		addrs[i] = 0;
	f = ksyms_open(path);
	if (!f)
		return -errno;
	while (left && fgets(line, sizeof(line), f)) {
		if (!parse_line(line, &a, &sym, &mod))
			continue;
		any = true;
		nonzero |= a != 0;
		/* Hidden addresses read as zero: the first lines tell (as ksyms_readable()). */
		if (!nonzero && ++lines >= 64)
			break;
		for (i = 0; i < n; i++)
			if (!addrs[i] && a && !strcmp(sym, names[i])) {
				addrs[i] = a;
				left--;
			}
	}
	if (!any)
		err = -ENOENT;
	else if (!nonzero)
		err = -EPERM;
	fclose(f);
	return err;
}

static void *ksyms_lookup_thread(void *arg)
{
	struct ksyms_job *j = arg;

	j->err = ksyms_lookup(NULL, j->names, j->addrs, j->n);
	return NULL;
}

int ksyms_lookup_start(struct ksyms_job *j, const char *const *names, size_t n)
{
	if (n > KSYMS_JOB_MAX)
		return -EINVAL;
	j->names = names;
	j->n = n;
	j->err = 0;
	j->started = true;
	j->running = !thread_start(&j->thread, ksyms_lookup_thread, j, 0);
	return 0;
}

int ksyms_lookup_finish(struct ksyms_job *j, uint64_t *addrs)
{
	if (!j->started)
		return -EINVAL;
	if (j->running)
		pthread_join(j->thread, NULL);
	else
		ksyms_lookup_thread(j);
	j->running = j->started = false;
	memcpy(addrs, j->addrs, j->n * sizeof(*addrs));
	return j->err;
}

void ksyms_lookup_cancel(struct ksyms_job *j)
{
	if (j->running)
		pthread_join(j->thread, NULL);
	j->running = j->started = false;
}

size_t ksyms_count(const struct ksyms *ks)
{
	ksyms_ready(ks);
	return ks ? ks->nr : 0;
}

const struct ksym *ksyms_find(const struct ksyms *ks, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi, mid;

	ksyms_ready(ks);
	if (!ks || !ks->nr || addr < ks->syms[0].addr)
		return NULL;
	hi = ks->nr;
	/* Last symbol with sym.addr <= addr. */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (ks->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	/* Of several aliases at one address, report the first in name order. */
	while (lo > 0 && ks->syms[lo - 1].addr == ks->syms[lo].addr)
		lo--;
	if (offset)
		*offset = addr - ks->syms[lo].addr;
	return &ks->syms[lo];
}

uint64_t ksyms_addr(const struct ksyms *ks, const char *name)
{
	size_t i;

	ksyms_ready(ks);
	if (!ks)
		return 0;
	for (i = 0; i < ks->nr; i++)
		if (!strcmp(ks->syms[i].name, name))
			return ks->syms[i].addr;
	return 0;
}

const char *ksyms_format(const struct ksyms *ks, uint64_t addr, char *buf, size_t len)
{
	const struct ksym *s;
	uint64_t off = 0;

	s = ksyms_find(ks, addr, &off);
	if (!s)
		snprintf(buf, len, "0x%" PRIx64, addr);
	else if (s->module)
		snprintf(buf, len, "%s+0x%" PRIx64 " [%s]", s->name, off, s->module);
	else
		snprintf(buf, len, "%s+0x%" PRIx64, s->name, off);
	return buf;
}
