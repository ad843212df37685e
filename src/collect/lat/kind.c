// SPDX-License-Identifier: GPL-2.0
/*
 * iospan lat: what a request is, from the kernel stack that queued it (--by stack).
 *
 * Every page cache read that the readahead code issues is marked REQ_RAHEAD, and a
 * read syscall's own miss goes through that code too (page_cache_sync_ra(), which
 * reads just the pages asked for on a file opened for random access), as do a fault's
 * read, readahead(2), fadvise(POSIX_FADV_WILLNEED) and madvise(MADV_WILLNEED): the flag
 * alone says "readahead" for all of them. The stack says which: the first frame above
 * the readahead code that is one of these entries.
 */
#include <stdbool.h>
#include <string.h>

#include "array.h"
#include "collect/lat.h"

enum origin { ORIGIN_NONE, ORIGIN_READ, ORIGIN_FAULT, ORIGIN_ADVICE };

/* Does symbol @sym name the function @fn ("fn", or "fn.isra.0" and the like)? */
static bool is_fn(const char *sym, const char *fn)
{
	size_t n = strlen(fn);

	return !strncmp(sym, fn, n) && (sym[n] == 0 || sym[n] == '.');
}

/* A syscall's entry point for @name: "__x64_sys_readahead", "ksys_readahead"... */
static bool is_syscall(const char *sym, const char *name)
{
	const char *p = strstr(sym, "sys_");

	return p && (p == sym || p[-1] == '_' || p[-1] == 'k') && is_fn(p + 4, name);
}

static enum origin origin_of(const char *sym)
{
	static const char *const reads[] = {"filemap_get_pages", "filemap_read",
					    "filemap_splice_read"};
	static const char *const faults[] = {"filemap_fault", "do_sync_mmap_readahead",
					     "do_async_mmap_readahead"};
	static const char *const advice[] = {"generic_fadvise", "vfs_fadvise",
					     "force_page_cache_readahead"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(reads); i++)
		if (is_fn(sym, reads[i]))
			return ORIGIN_READ;
	for (i = 0; i < ARRAY_SIZE(faults); i++)
		if (is_fn(sym, faults[i]))
			return ORIGIN_FAULT;
	for (i = 0; i < ARRAY_SIZE(advice); i++)
		if (is_fn(sym, advice[i]))
			return ORIGIN_ADVICE;
	return ORIGIN_NONE;
}

const char *lat_stack_kind(uint32_t kind, const char *const *frames, size_t nr)
{
	bool async = kind & LAT_KIND_RA_ASYNC;
	size_t i, j;

	kind &= LAT_KIND_MASK;
	if (kind != BLK_OWN_READAHEAD)
		return blk_owner_kind_name(kind);
	/* Innermost first: the entry nearest the readahead code decides. */
	for (i = 0; i < nr; i++) {
		if (!frames[i])
			continue;
		if (is_fn(frames[i], "page_cache_async_ra") ||
		    is_fn(frames[i], "filemap_readahead") ||
		    is_fn(frames[i], "do_async_mmap_readahead"))
			async = true;
		switch (origin_of(frames[i])) {
		case ORIGIN_READ:
			return async ? "readahead" : "read";
		case ORIGIN_FAULT:
			return async ? "readahead" : "fault";
		case ORIGIN_ADVICE:
			/* WILLNEED advice: which call gave it. */
			for (j = i + 1; j < nr; j++) {
				if (!frames[j])
					continue;
				if (is_syscall(frames[j], "readahead"))
					return "readahead(2)";
				if (is_fn(frames[j], "madvise_willneed") ||
				    is_syscall(frames[j], "madvise"))
					return "madvise";
			}
			return "fadvise";
		case ORIGIN_NONE:
			break;
		}
	}
	return "readahead";
}
