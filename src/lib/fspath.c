// SPDX-License-Identifier: GPL-2.0
/* Captured dentry paths to user-visible paths, cached per (dev, ino). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fspath.h"

#define BUCKETS 4096

struct entry {
	uint32_t dev;
	uint64_t ino;
	char *path;
	struct entry *next;
};

struct fspath_cache {
	struct mounts mounts;
	int reloaded; /* the mount table was re-read for an unknown device */
	struct entry *b[BUCKETS];
};

void fspath_from_components(const struct top_path *p, char *out, size_t len)
{
	const char *comp[TOP_PATH_DEPTH];
	size_t pos = 0, used = 0, n;
	unsigned int i, depth = 0;

	if (!len)
		return;
	while (depth < p->depth && depth < TOP_PATH_DEPTH && pos < TOP_PATH_BUF) {
		comp[depth] = p->buf + pos;
		n = strnlen(p->buf + pos, TOP_PATH_BUF - pos);
		pos += n + 1;
		depth++;
	}
	out[0] = '\0';
	if (p->flags & TOP_PATH_TRUNCATED)
		used = snprintf(out, len, "...");
	for (i = depth; i > 0 && used < len; i--)
		used += snprintf(out + used, len - used, "/%s", comp[i - 1]);
	if (!depth && used < len)
		snprintf(out + used, len - used, "/");
}

int fspath_cache_new(struct fspath_cache **out)
{
	struct fspath_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	/* Without a mount table paths stay relative to their device: not fatal. */
	mounts_load(NULL, &c->mounts);
	*out = c;
	return 0;
}

void fspath_cache_free(struct fspath_cache *c)
{
	struct entry *e, *next;
	int i;

	if (!c)
		return;
	for (i = 0; i < BUCKETS; i++) {
		for (e = c->b[i]; e; e = next) {
			next = e->next;
			free(e->path);
			free(e);
		}
	}
	mounts_free(&c->mounts);
	free(c);
}

static unsigned int hash(uint32_t dev, uint64_t ino)
{
	uint64_t h = (ino * 0x9e3779b97f4a7c15ULL) ^ dev;

	return (h >> 32 ^ h) % BUCKETS;
}

const char *fspath_cache_get(struct fspath_cache *c, uint32_t dev, uint64_t ino)
{
	struct entry *e;

	for (e = c->b[hash(dev, ino)]; e; e = e->next)
		if (e->dev == dev && e->ino == ino)
			return e->path;
	return NULL;
}

const char *fspath_cache_put(struct fspath_cache *c, uint32_t dev, uint64_t ino,
			     const struct top_path *p)
{
	char fs_path[PATH_MAX], full[PATH_MAX + 32];
	unsigned int h = hash(dev, ino);
	struct entry *e;
	int err;

	fspath_from_components(p, fs_path, sizeof(fs_path));
	err = mounts_join(&c->mounts, KDEV_MAJOR(dev), KDEV_MINOR(dev), fs_path, full,
			  sizeof(full));
	if (err == -ENOENT && !c->reloaded) {
		/* Mounted after we started: read mountinfo again, once. */
		mounts_free(&c->mounts);
		mounts_load(NULL, &c->mounts);
		c->reloaded = 1;
		err = mounts_join(&c->mounts, KDEV_MAJOR(dev), KDEV_MINOR(dev), fs_path, full,
				  sizeof(full));
	}
	if (err)
		snprintf(full, sizeof(full), "%u:%u:%s", KDEV_MAJOR(dev), KDEV_MINOR(dev), fs_path);
	if (p->flags & TOP_PATH_DELETED)
		strncat(full, " (deleted)", sizeof(full) - strlen(full) - 1);
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->path = strdup(full);
	if (!e->path) {
		free(e);
		return NULL;
	}
	e->dev = dev;
	e->ino = ino;
	e->next = c->b[h];
	c->b[h] = e;
	return e->path;
}

uint32_t fspath_cache_fs_disk(struct fspath_cache *c, uint32_t dev)
{
	uint32_t disk = mounts_fs_disk(&c->mounts, dev);

	if (!disk && !c->reloaded) {
		mounts_free(&c->mounts);
		mounts_load(NULL, &c->mounts);
		c->reloaded = 1;
		disk = mounts_fs_disk(&c->mounts, dev);
	}
	return disk;
}
