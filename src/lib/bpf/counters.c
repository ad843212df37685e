// SPDX-License-Identifier: GPL-2.0
/* A command's counters, summed, named and told apart (counters.h). */
#include "bpfmap.h"
#include "counters.h"
#include "json.h"

int counters_read(int map_fd, size_t nr, uint64_t *out)
{
	return bpfmap_sum_percpu_u64(map_fd, nr, out);
}

void counters_since(uint64_t *v, uint64_t *prev, size_t nr)
{
	uint64_t now;
	size_t i;

	for (i = 0; i < nr; i++) {
		now = v[i];
		/* Counters only grow: less than before is a restart of the count. */
		v[i] = now >= prev[i] ? now - prev[i] : now;
		prev[i] = now;
	}
}

uint64_t counters_lost(const struct counter_def *defs, const uint64_t *v, size_t nr)
{
	uint64_t lost = 0;
	size_t i;

	for (i = 0; i < nr; i++)
		if (!defs[i].info)
			lost += v[i];
	return lost;
}

void counters_json(struct jw *jw, const struct counter_def *defs, const uint64_t *v, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		jw_kv_uint(jw, defs[i].name, v[i]);
}

const char *counter_words(const struct counter_def *def)
{
	return def->words ? def->words : def->name;
}
