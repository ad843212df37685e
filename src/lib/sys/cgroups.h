/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup v2 ids, paths and containers. A cgroup's id (what bpf_get_current_cgroup_id()
 * returns) is the inode number of its directory in the cgroup2 file system, so ids
 * are resolved by walking that tree; container runtimes are recognised by how they
 * name their cgroups.
 */
#ifndef IOSPAN_CGROUPS_H
#define IOSPAN_CGROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONTAINER_ID_LEN 12

struct container {
	char id[CONTAINER_ID_LEN + 1]; /* short id: the first 12 hex digits */
	const char *runtime;	       /* "docker", "containerd", "cri-o", "podman", "kubepods" */
};

/*
 * The container a cgroup path belongs to, from the innermost component that names
 * one: docker-<hex>.scope, /docker/<hex>, cri-containerd-<hex>.scope, crio-<hex>.scope,
 * libpod-<hex>.scope, /kubepods/.../<hex>. Returns false if none does.
 */
bool cgroup_container(const char *path, struct container *c);

/*
 * Mount point of the cgroup v1 hierarchy of @controller ("blkio"): 0, or -ENOENT if
 * none is mounted.
 */
int cgroup_v1_mount(const char *controller, char *buf, size_t len);

/* The id of the cgroup directory @dir (its inode number). */
int cgroup_id_of_dir(const char *dir, uint64_t *id);

/*
 * A cgroup given by the user: a path relative to the cgroup2 mount @root ("/docker",
 * "system.slice/x.service") or an absolute path inside it. Writes the directory and
 * the path relative to @root ("/" for the root). -ENOENT if no such cgroup.
 */
int cgroup_resolve(const char *root, const char *arg, char *dir, size_t dir_len, char *rel,
		   size_t rel_len);

/* Ids of @dir and of every cgroup below it (malloc'd into *ids). */
int cgroup_subtree_ids(const char *dir, uint64_t **ids, size_t *nr);

/* id -> path map of one cgroup2 hierarchy, rescanned when an unknown id shows up. */
struct cgroup_map;

int cgroup_map_new(const char *root, struct cgroup_map **out);
void cgroup_map_free(struct cgroup_map *m);
/*
 * Path of @id relative to the root ("/" for the root itself), or NULL if no scan ever
 * saw it. Rescans at most once between cgroup_map_round() calls; cgroups removed
 * after a scan saw them keep their path.
 */
const char *cgroup_map_path(struct cgroup_map *m, uint64_t id);
/* Starts a report: the next unknown id may trigger a rescan again. */
void cgroup_map_round(struct cgroup_map *m);

#endif
