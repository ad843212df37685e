/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel symbols from /proc/kallsyms: loaded once, sorted by address, looked up by
 * binary search, for symbolizing kernel stacks and finding a function's address.
 */
#ifndef IOSPAN_KSYMS_H
#define IOSPAN_KSYMS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ksym {
	uint64_t addr;
	const char *name;
	const char *module; /* "ext4" for "[ext4]", NULL for the kernel image */
};

struct ksyms;

/*
 * Loads @path (NULL: /proc/kallsyms). -EPERM if every address reads as zero (not
 * root, or kernel.kptr_restrict hides them), -ENOENT if the file has no symbols.
 */
int ksyms_load(const char *path, struct ksyms **out);
/*
 * Like ksyms_load(), in a thread: returns at once with *@out to use as usual (every
 * lookup first waits for the load to end; a failed load looks up nothing). Reading all
 * of kallsyms takes 50-150 ms, which start-up need not wait for.
 */
int ksyms_load_async(const char *path, struct ksyms **out);
/* 0 if /proc/kallsyms shows this process real addresses, else why not (-EPERM...). */
int ksyms_readable(void);
/* Why ksyms_load() failed with @err, naming the privilege or sysctl when it is one. */
const char *ksyms_strerror(int err);
void ksyms_free(struct ksyms *ks);

/*
 * The addresses of the first symbols named @names[0..@n) in @path (NULL: /proc/kallsyms),
 * read only as far as the last of them: @addrs[i] is 0 for a name not found. Errors as
 * ksyms_load().
 */
int ksyms_lookup(const char *path, const char *const *names, uint64_t *addrs, size_t n);

/*
 * ksyms_lookup() of /proc/kallsyms in a thread, so that the file is read while start-up
 * goes on (it can take 40 ms). The job keeps the addresses itself (a caller that fails
 * meanwhile leaves nothing the thread writes to): ksyms_lookup_finish() waits, copies
 * them to @addrs and returns the lookup's result; it runs the lookup itself if no thread
 * could be started. Call it (or ksyms_lookup_cancel()) once for every start.
 */
#define KSYMS_JOB_MAX 4

struct ksyms_job {
	pthread_t thread;
	const char *const *names;
	uint64_t addrs[KSYMS_JOB_MAX];
	size_t n;
	int err;
	bool started, running;
};

int ksyms_lookup_start(struct ksyms_job *j, const char *const *names, size_t n);
int ksyms_lookup_finish(struct ksyms_job *j, uint64_t *addrs);
void ksyms_lookup_cancel(struct ksyms_job *j);
size_t ksyms_count(const struct ksyms *ks);

/* The symbol containing @addr (the last one at or below it); NULL below the first. */
const struct ksym *ksyms_find(const struct ksyms *ks, uint64_t addr, uint64_t *offset);
/* Address of the first symbol named @name, 0 if none (linear: for start-up use). */
uint64_t ksyms_addr(const struct ksyms *ks, const char *name);
/* "name+0x1c/[module]" into @buf, or "0x<addr>" if unknown. */
const char *ksyms_format(const struct ksyms *ks, uint64_t addr, char *buf, size_t len);

#endif
