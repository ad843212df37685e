// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "perfetto.h"

struct perfetto {
	FILE *out;
	int fd;
	struct jw *jw;
	/* The first failed write's -errno, kept by the stream's own write: 0 if none. */
	int err;
	/* Tracks already named: (pid << 32 | tid), tid 0 for a process. */
	uint64_t *named;
	size_t nr_named, cap_named;
};

/*
 * The stream's writes: stdio keeps only an error flag, and errno is long changed by the
 * time anyone looks, so the first failure is kept here with its errno (ENOSPC, EIO...).
 */
static ssize_t pf_write(void *cookie, const char *buf, size_t size)
{
	struct perfetto *pf = cookie;
	size_t done = 0;
	ssize_t n;

	while (done < size) {
		n = write(pf->fd, buf + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!pf->err)
				pf->err = n < 0 ? -errno : -EIO;
			return -1;
		}
		done += n;
	}
	return size;
}

static int pf_close(void *cookie)
{
	struct perfetto *pf = cookie;

	if (close(pf->fd) && !pf->err)
		pf->err = -errno;
	return pf->err ? -1 : 0;
}

int perfetto_open(struct perfetto **pfp, const char *path)
{
	cookie_io_functions_t fns = {.write = pf_write, .close = pf_close};
	struct perfetto *pf;
	int ret;

	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (pf->fd < 0) {
		ret = -errno;
		goto cleanup;
	}
	pf->out = fopencookie(pf, "w", fns);
	if (!pf->out) {
		ret = -ENOMEM;
		goto cleanup;
	}
	/* Large writes: one call per 64 KiB of events. */
	setvbuf(pf->out, NULL, _IOFBF, 64 * 1024);
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
	else if (pf->fd >= 0)
		close(pf->fd);
	free(pf);
	return ret;
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
	fclose(pf->out); /* flushes, closes: failures land in pf->err */
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
}
