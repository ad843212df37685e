// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksyms.h"
#include "probe.h"

struct ksyms {
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

void ksyms_free(struct ksyms *ks)
{
	size_t i;

	if (!ks)
		return;
	for (i = 0; i < ks->nr_chunks; i++)
		free(ks->chunks[i]);
	free(ks->chunks);
	free(ks->syms);
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

int ksyms_load(const char *path, struct ksyms **out)
{
	char line[512], name[256], mod[128], type;
	const char *last_mod = NULL;
	struct ksyms *ks;
	bool nonzero = false;
	unsigned long long addr;
	struct ksym *grown;
	int err = 0, n;
	FILE *f;

	*out = NULL;
	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f)
		return -errno;
	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (fgets(line, sizeof(line), f)) {
		mod[0] = '\0';
		n = sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, mod);
		if (n < 3)
			continue;
		if (ks->nr == ks->cap) {
			size_t cap = ks->cap ? ks->cap * 2 : 65536;

			grown = realloc(ks->syms, cap * sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			ks->syms = grown;
			ks->cap = cap;
		}
		ks->syms[ks->nr].addr = addr;
		ks->syms[ks->nr].name = ksyms_strdup(ks, name);
		if (!ks->syms[ks->nr].name) {
			err = -ENOMEM;
			goto cleanup;
		}
		ks->syms[ks->nr].module = NULL;
		if (n == 4 && mod[0]) {
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
	if (!ks->nr) {
		err = -ENOENT;
		goto cleanup;
	}
	if (!nonzero) {
		err = -EPERM;
		goto cleanup;
	}
	qsort(ks->syms, ks->nr, sizeof(*ks->syms), ksym_cmp);
	*out = ks;
	ks = NULL;
cleanup:
	ksyms_free(ks);
	fclose(f);
	return err;
}

size_t ksyms_count(const struct ksyms *ks)
{
	return ks ? ks->nr : 0;
}

const struct ksym *ksyms_find(const struct ksyms *ks, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi, mid;

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
