// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "perfetto.h"

struct perfetto {
	FILE *out;
	struct jw *jw;
	/* The first write error (-errno), 0 while everything was written. */
	int err;
	/* Tracks already named: (pid << 32 | tid), tid 0 for a process. */
	uint64_t *named;
	size_t nr_named, cap_named;
};

int perfetto_open(struct perfetto **pfp, const char *path)
{
	struct perfetto *pf;
	int ret;

	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->out = fopen(path, "w");
	if (!pf->out) {
		ret = -errno;
		goto cleanup;
	}
	pf->jw = jw_new(pf->out);
	if (!pf->jw) {
		ret = -ENOMEM;
		goto cleanup;
	}
	jw_start_object(pf->jw);
	jw_kv_string(pf->jw, "displayTimeUnit", "ns");
	jw_kv_array(pf->jw, "traceEvents");
	*pfp = pf;
	return 0;
cleanup:
	if (pf->out)
		fclose(pf->out);
	free(pf);
	return ret;
}

/*
 * Notes the first failed write, with its errno: stdio sets the error flag (and errno)
 * when a write fails, and this is called right after each event is written.
 */
static void check_written(struct perfetto *pf)
{
	if (!pf->err && ferror(pf->out))
		pf->err = errno ? -errno : -EIO;
}

int perfetto_error(const struct perfetto *pf)
{
	return pf ? pf->err : 0;
}

int perfetto_close(struct perfetto *pf)
{
	int ret;

	if (!pf)
		return 0;
	jw_end_array(pf->jw);
	jw_end_object(pf->jw);
	errno = 0;
	if (fflush(pf->out) && !pf->err)
		pf->err = errno ? -errno : -EIO;
	check_written(pf);
	errno = 0;
	if (fclose(pf->out) && !pf->err)
		pf->err = errno ? -errno : -EIO;
	ret = pf->err;
	jw_free(pf->jw);
	free(pf->named);
	free(pf);
	return ret;
}

/* True the first time a track id is seen. */
static bool first_sight(struct perfetto *pf, uint64_t id)
{
	size_t i;

	for (i = 0; i < pf->nr_named; i++)
		if (pf->named[i] == id)
			return false;
	if (pf->nr_named == pf->cap_named) {
		size_t cap = pf->cap_named ? pf->cap_named * 2 : 64;
		uint64_t *named = realloc(pf->named, cap * sizeof(*named));

		if (!named)
			return true; /* naming twice is harmless; failing to name is not */
		pf->named = named;
		pf->cap_named = cap;
	}
	pf->named[pf->nr_named++] = id;
	return true;
}

static void metadata(struct perfetto *pf, const char *what, uint32_t pid, uint32_t tid,
		     bool with_tid, const char *name)
{
	jw_start_object(pf->jw);
	jw_kv_string(pf->jw, "name", what);
	jw_kv_string(pf->jw, "ph", "M");
	jw_kv_uint(pf->jw, "pid", pid);
	if (with_tid)
		jw_kv_uint(pf->jw, "tid", tid);
	jw_kv_object(pf->jw, "args");
	jw_kv_string(pf->jw, "name", name);
	jw_end_object(pf->jw);
	jw_end_object(pf->jw);
	check_written(pf);
}

void perfetto_process(struct perfetto *pf, uint32_t pid, const char *name)
{
	if (first_sight(pf, (uint64_t)pid << 32))
		metadata(pf, "process_name", pid, 0, false, name);
}

void perfetto_thread(struct perfetto *pf, uint32_t pid, uint32_t tid, const char *name)
{
	if (first_sight(pf, (uint64_t)pid << 32 | tid))
		metadata(pf, "thread_name", pid, tid, true, name);
}

static struct jw *event(struct perfetto *pf, const char *ph, const char *name, const char *cat,
			uint32_t pid, uint32_t tid, uint64_t ts_ns)
{
	jw_start_object(pf->jw);
	jw_kv_string(pf->jw, "name", name);
	if (cat)
		jw_kv_string(pf->jw, "cat", cat);
	jw_kv_string(pf->jw, "ph", ph);
	jw_kv_float(pf->jw, "ts", ts_ns / 1000.0, 3);
	jw_kv_uint(pf->jw, "pid", pid);
	jw_kv_uint(pf->jw, "tid", tid);
	return pf->jw;
}

struct jw *perfetto_span(struct perfetto *pf, const char *name, const char *cat, uint32_t pid,
			 uint32_t tid, uint64_t ts_ns, uint64_t dur_ns)
{
	event(pf, "X", name, cat, pid, tid, ts_ns);
	jw_kv_float(pf->jw, "dur", dur_ns / 1000.0, 3);
	jw_kv_object(pf->jw, "args");
	return pf->jw;
}

struct jw *perfetto_instant(struct perfetto *pf, const char *name, const char *cat, uint32_t pid,
			    uint32_t tid, uint64_t ts_ns)
{
	event(pf, "i", name, cat, pid, tid, ts_ns);
	jw_kv_string(pf->jw, "s", "t"); /* scope: the thread's track */
	jw_kv_object(pf->jw, "args");
	return pf->jw;
}

void perfetto_end(struct perfetto *pf)
{
	jw_end_object(pf->jw); /* args */
	jw_end_object(pf->jw); /* the event */
	check_written(pf);
}
