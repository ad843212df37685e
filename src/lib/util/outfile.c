// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

struct outfile {
	FILE *out;
	int fd;
	bool own_fd;
	int err;      /* the first failed write's -errno, kept by the stream's own write */
	char *target; /* @whole: the file renamed to at the end */
	char *tmp;    /* @whole: the temporary file written */
};

/*
 * The stream's writes: stdio keeps only an error flag, and errno is long changed by the
 * time anyone looks, so the first failure is kept here with its errno. A failure
 * returns what was written before it (0 at worst), never -1: fopencookie(3)'s write
 * must not return a negative count, and glibc's fwrite() adds it to what is left to
 * write, then copies one byte more than its buffer holds (a crash on a full disk).
 */
static ssize_t of_write(void *cookie, const char *buf, size_t size)
{
	struct outfile *of = cookie;
	size_t done = 0;
	ssize_t n;

	while (done < size) {
		n = write(of->fd, buf + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!of->err)
				of->err = n < 0 ? -errno : -EIO;
			return done;
		}
		done += n;
	}
	return size;
}

static int of_close(void *cookie)
{
	struct outfile *of = cookie;

	if (of->own_fd && close(of->fd) && !of->err)
		of->err = -errno;
	return of->err ? -1 : 0;
}

/* A temporary file beside @path (its target resolved if it is a link): its fd. */
static int open_temp(struct outfile *of, const char *path)
{
	char *real = realpath(path, NULL);
	const char *target = real ?: path;

	of->target = strdup(target);
	free(real);
	if (!of->target || asprintf(&of->tmp, "%s.tmp.XXXXXX", of->target) < 0) {
		of->tmp = NULL;
		return -ENOMEM;
	}
	of->fd = mkostemp(of->tmp, O_CLOEXEC);
	if (of->fd < 0)
		return -errno;
	return 0;
}

static void outfile_free(struct outfile *of)
{
	free(of->target);
	free(of->tmp);
	free(of);
}

int outfile_open(struct outfile **ofp, const char *path, bool whole)
{
	cookie_io_functions_t fns = {.write = of_write, .close = of_close};
	struct outfile *of;
	struct stat sb;
	int ret = 0;

	of = calloc(1, sizeof(*of));
	if (!of)
		return -ENOMEM;
	of->fd = -1;
	if (!path) {
		of->fd = STDOUT_FILENO;
	} else if (whole && (stat(path, &sb) ? errno == ENOENT : S_ISREG(sb.st_mode))) {
		of->own_fd = true;
		ret = open_temp(of, path);
	} else {
		of->own_fd = true;
		of->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (of->fd < 0)
			ret = -errno;
	}
	if (ret)
		goto cleanup;
	of->out = fopencookie(of, "w", fns);
	if (!of->out) {
		ret = -ENOMEM;
		goto cleanup;
	}
	/* Large writes: one call per 64 KiB. */
	setvbuf(of->out, NULL, _IOFBF, 64 * 1024);
	*ofp = of;
	return 0;
cleanup:
	if (of->own_fd && of->fd >= 0)
		close(of->fd);
	if (of->fd >= 0 && of->tmp)
		unlink(of->tmp);
	outfile_free(of);
	return ret;
}

FILE *outfile_stream(struct outfile *of)
{
	return of->out;
}

int outfile_error(const struct outfile *of)
{
	return of ? of->err : 0;
}

int outfile_close(struct outfile *of, bool keep)
{
	int ret;

	if (!of)
		return 0;
	/* Flushes and closes: failures land in of->err. */
	if (keep && of->tmp && fflush(of->out) == 0 && fsync(of->fd) && !of->err)
		of->err = -errno;
	fclose(of->out);
	ret = of->err;
	if (of->tmp) {
		if (keep && !ret && rename(of->tmp, of->target))
			ret = -errno;
		if (!keep || ret)
			unlink(of->tmp);
	}
	outfile_free(of);
	return ret;
}
