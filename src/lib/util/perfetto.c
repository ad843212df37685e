// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>

#include "outfile.h"
#include "perfetto.h"

struct perfetto {
	struct outfile *of;
	struct jw *jw;
	/* Tracks already named: (pid << 32 | tid), tid 0 for a process. */
	uint64_t *named;
	size_t nr_named, cap_named;
};

int perfetto_create(struct perfetto **pfp, const char *path, bool whole)
{
	struct perfetto *pf;
	int ret;

	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	ret = outfile_open(&pf->of, path, whole);
	if (ret)
		goto cleanup;
	pf->jw = jw_new(outfile_stream(pf->of));
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
	outfile_close(pf->of, false);
	free(pf);
	return ret;
}

int perfetto_open(struct perfetto **pfp, const char *path)
{
	return perfetto_create(pfp, path, false);
}

int perfetto_error(const struct perfetto *pf)
{
	return pf ? outfile_error(pf->of) : 0;
}

static int perfetto_finish(struct perfetto *pf, bool keep)
{
	int ret;

	if (!pf)
		return 0;
	if (keep) {
		jw_end_array(pf->jw);
		jw_end_object(pf->jw);
	}
	ret = outfile_close(pf->of, keep);
	jw_free(pf->jw);
	free(pf->named);
	free(pf);
	return ret;
}

int perfetto_close(struct perfetto *pf)
{
	return perfetto_finish(pf, true);
}

void perfetto_discard(struct perfetto *pf)
{
	perfetto_finish(pf, false);
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

void perfetto_slice(struct perfetto *pf, const char *name, const char *cat, uint32_t pid,
		    uint32_t tid, uint64_t from, uint64_t to)
{
	perfetto_span(pf, name, cat, pid, tid, from, to > from ? to - from : 0);
	perfetto_end(pf);
}

struct jw *perfetto_counter(struct perfetto *pf, const char *name, uint32_t pid, uint64_t ts_ns)
{
	event(pf, "C", name, NULL, pid, 0, ts_ns);
	jw_kv_object(pf->jw, "args");
	return pf->jw;
}

void perfetto_end(struct perfetto *pf)
{
	jw_end_object(pf->jw); /* args */
	jw_end_object(pf->jw); /* the event */
}
