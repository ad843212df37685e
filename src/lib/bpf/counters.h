/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A command's counters (src/bpf/counters.bpf.h): one per-CPU array in the kernel, one
 * table here that names each counter and says whether it is a loss (the output lacks
 * something, or holds it approximately) or information (work done, or the size of a
 * loss another counter counts). Every output of a command names them from its table.
 */
#ifndef IOSPAN_COUNTERS_H
#define IOSPAN_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jw;

struct counter_def {
	const char *name;  /* its key in JSON, and in text where no words are given */
	const char *words; /* in text output, or NULL */
	bool info;	   /* not a loss */
};

/* Sums the per-CPU counters of array map @map_fd (@nr of them) into @out. */
int counters_read(int map_fd, size_t nr, uint64_t *out);

/* @v[i] becomes what it grew by since @prev[i] (all of it if it went back); @prev, @v. */
void counters_since(uint64_t *v, uint64_t *prev, size_t nr);

/* The sum of the losses among @v[0..@nr) by @defs. */
uint64_t counters_lost(const struct counter_def *defs, const uint64_t *v, size_t nr);

/* Each counter as "name": value, into the JSON object being written. */
void counters_json(struct jw *jw, const struct counter_def *defs, const uint64_t *v, size_t nr);

/* How a counter reads in text: its words, else its name. */
const char *counter_words(const struct counter_def *def);

#endif
