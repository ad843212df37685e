// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "cgroups.h"
#include "mounts.h"

static size_t hex_run(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && isxdigit((unsigned char)s[i]); i++)
		;
	return i;
}

/* One path component (@s, @len long): a container id in it, with its runtime. */
static bool component_container(const char *s, size_t len, const char *parent, size_t plen,
				struct container *c)
{
	static const struct {
		const char *prefix;
		const char *runtime;
	} scopes[] = {
		{"docker-", "docker"}, {"cri-containerd-", "containerd"}, {"crio-", "cri-o"},
		{"libpod-", "podman"}, {"containerd-", "containerd"},
	};
	const char *hex = NULL;
	size_t i, n, plen_i;

	for (i = 0; i < ARRAY_SIZE(scopes); i++) {
		plen_i = strlen(scopes[i].prefix);
		if (len > plen_i && !strncmp(s, scopes[i].prefix, plen_i)) {
			hex = s + plen_i;
			n = len - plen_i;
			/* "crio-conmon-<id>.scope" is the monitor, not the container. */
			if (n >= 7 && !strncmp(hex, "conmon-", 7))
				return false;
			if (n > 6 && !strncmp(hex + n - 6, ".scope", 6))
				n -= 6;
			if (hex_run(hex, n) == n && n >= 32) {
				snprintf(c->id, sizeof(c->id), "%.*s", CONTAINER_ID_LEN, hex);
				c->runtime = scopes[i].runtime;
				return true;
			}
			return false;
		}
	}
	/* cgroupfs driver: /docker/<64 hex>, /kubepods/<qos>/pod<uid>/<64 hex>, ... */
	if (len >= 32 && hex_run(s, len) == len) {
		c->runtime = "container";
		if (plen == 6 && !strncmp(parent, "docker", 6))
			c->runtime = "docker";
		else if (plen >= 3 && !strncmp(parent, "pod", 3))
			c->runtime = "kubepods";
		else if (plen == 13 && !strncmp(parent, "libpod_parent", 13))
			c->runtime = "podman";
		snprintf(c->id, sizeof(c->id), "%.*s", CONTAINER_ID_LEN, s);
		return true;
	}
	return false;
}

bool cgroup_container(const char *path, struct container *c)
{
	const char *end, *start, *pend, *pstart;

	if (!path)
		return false;
	/* Innermost first: a container may run inside another one's cgroup. */
	end = path + strlen(path);
	while (end > path) {
		while (end > path && end[-1] == '/')
			end--;
		start = end;
		while (start > path && start[-1] != '/')
			start--;
		if (start == end)
			break;
		pend = start;
		while (pend > path && pend[-1] == '/')
			pend--;
		pstart = pend;
		while (pstart > path && pstart[-1] != '/')
			pstart--;
		if (component_container(start, end - start, pstart, pend - pstart, c))
			return true;
		end = start;
	}
	return false;
}

int cgroup_v1_mount(const char *controller, char *buf, size_t len)
{
	return mounts_find_fs(NULL, "cgroup", controller, buf, len);
}

int cgroup_id_of_dir(const char *dir, uint64_t *id)
{
	struct stat st;

	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*id = st.st_ino;
	return 0;
}

int cgroup_resolve(const char *root, const char *arg, char *dir, size_t dir_len, char *rel,
		   size_t rel_len)
{
	char cand[PATH_MAX], real_root[PATH_MAX], real[PATH_MAX];
	size_t rl;
	struct stat st;

	if (!realpath(root, real_root))
		return -errno;
	rl = strlen(real_root);
	/* Relative to the mount first ("/docker" means <root>/docker), then as given. */
	if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", real_root,
			     arg[0] == '/' ? arg + 1 : arg) >= sizeof(cand))
		return -ENAMETOOLONG;
	if (!realpath(cand, real) || stat(real, &st) || !S_ISDIR(st.st_mode)) {
		if (arg[0] != '/' || !realpath(arg, real) || stat(real, &st) ||
		    !S_ISDIR(st.st_mode))
			return -ENOENT;
	}
	if (strncmp(real, real_root, rl) || (real[rl] && real[rl] != '/'))
		return -ENOENT; /* outside the cgroup2 hierarchy */
	/* A cgroup directory has cgroup.procs; plain directories elsewhere do not. */
	if ((size_t)snprintf(cand, sizeof(cand), "%s/cgroup.procs", real) >= sizeof(cand) ||
	    access(cand, F_OK))
		return -ENOENT;
	if ((size_t)snprintf(dir, dir_len, "%s", real) >= dir_len ||
	    (size_t)snprintf(rel, rel_len, "%s", real[rl] ? real + rl : "/") >= rel_len)
		return -ENAMETOOLONG;
	return 0;
}

typedef int (*walk_fn)(void *arg, const char *rel, uint64_t id);

/* Depth-first walk of the cgroup directories below @dir, calling @fn for each. */
static int walk(const char *dir, const char *rel, walk_fn fn, void *arg, int depth)
{
	char sub[PATH_MAX], subrel[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int err = 0;
	DIR *d;

	if (stat(dir, &st))
		return -errno;
	err = fn(arg, rel, st.st_ino);
	if (err || depth > 64)
		return err;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno; /* removed meanwhile */
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= sizeof(sub))
			continue;
		if ((size_t)snprintf(subrel, sizeof(subrel), "%s%s%s", rel,
				     strcmp(rel, "/") ? "/" : "", de->d_name) >= sizeof(subrel))
			continue;
		err = walk(sub, subrel, fn, arg, depth + 1);
		if (err == -ENOENT)
			err = 0;
		if (err)
			break;
	}
	closedir(d);
	return err;
}

struct id_list {
	uint64_t *ids;
	size_t nr, cap;
};

static int collect_id(void *arg, const char *rel, uint64_t id)
{
	struct id_list *l = arg;
	if (ARRAY_RESERVE(l->ids, l->nr, l->cap, 64))
		return -ENOMEM;
	l->ids[l->nr++] = id;
	return 0;
}

int cgroup_subtree_ids(const char *dir, uint64_t **ids, size_t *nr)
{
	struct id_list l = {};
	int err;

	err = walk(dir, "/", collect_id, &l, 0);
	if (err) {
		free(l.ids);
		return err;
	}
	*ids = l.ids;
	*nr = l.nr;
	return 0;
}

struct cg_entry {
	uint64_t id;
	char *path;
};

struct cgroup_map {
	char *root;
	struct cg_entry *v;
	size_t nr, cap;
	bool rescanned;
};

static int map_add(void *arg, const char *rel, uint64_t id)
{
	struct cgroup_map *m = arg;
	if (ARRAY_RESERVE(m->v, m->nr, m->cap, 256))
		return -ENOMEM;
	m->v[m->nr].id = id;
	m->v[m->nr].path = strdup(rel);
	if (!m->v[m->nr].path)
		return -ENOMEM;
	m->nr++;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct cg_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void map_clear(struct cgroup_map *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		free(m->v[i].path);
	m->nr = 0;
}

static const char *map_find(const struct cgroup_map *m, uint64_t id);

/*
 * Walks the hierarchy again. Cgroups removed since the last scan are kept: cgroup v2
 * ids are not reused, and I/O of a container that is gone still needs its name.
 */
static int map_scan(struct cgroup_map *m)
{
	struct cgroup_map fresh = {.root = m->root};
	size_t i;
	int err;

	err = walk(m->root, "/", map_add, &fresh, 0);
	if (!err)
		qsort(fresh.v, fresh.nr, sizeof(*fresh.v), entry_cmp);
	for (i = 0; !err && i < m->nr; i++) {
		if (map_find(&fresh, m->v[i].id))
			continue;
		err = ARRAY_RESERVE(fresh.v, fresh.nr, fresh.cap, 256);
		if (err)
			break;
		fresh.v[fresh.nr++] = m->v[i];
		m->v[i].path = NULL; /* moved */
	}
	if (err) {
		map_clear(&fresh);
		free(fresh.v);
		return err;
	}
	qsort(fresh.v, fresh.nr, sizeof(*fresh.v), entry_cmp);
	map_clear(m);
	free(m->v);
	m->v = fresh.v;
	m->nr = fresh.nr;
	m->cap = fresh.cap;
	return 0;
}

void cgroup_map_free(struct cgroup_map *m)
{
	if (!m)
		return;
	map_clear(m);
	free(m->v);
	free(m->root);
	free(m);
}

int cgroup_map_new(const char *root, struct cgroup_map **out)
{
	struct cgroup_map *m;
	int err;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->root = strdup(root);
	if (!m->root) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = map_scan(m);
	if (err)
		goto cleanup;
	*out = m;
	m = NULL;
cleanup:
	cgroup_map_free(m);
	return err;
}

static const char *map_find(const struct cgroup_map *m, uint64_t id)
{
	struct cg_entry key = {.id = id}, *e;

	e = bsearch(&key, m->v, m->nr, sizeof(*m->v), entry_cmp);
	return e ? e->path : NULL;
}

const char *cgroup_map_path(struct cgroup_map *m, uint64_t id)
{
	const char *p;

	if (!m)
		return NULL;
	p = map_find(m, id);
	if (p || m->rescanned)
		return p;
	m->rescanned = true;
	if (map_scan(m))
		return NULL;
	return map_find(m, id);
}

void cgroup_map_round(struct cgroup_map *m)
{
	if (m)
		m->rescanned = false;
}
