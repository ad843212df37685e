// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "array.h"
#include "mounts.h"

#define MKDEV_K(ma, mi) ((uint32_t)(((ma) << 20) | (mi)))

void mounts_unescape(char *s)
{
	char *out = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

void mounts_free(struct mounts *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++) {
		free(m->v[i].root);
		free(m->v[i].mnt);
		free(m->v[i].fstype);
		free(m->v[i].source);
		free(m->v[i].super_opts);
	}
	free(m->v);
	m->v = NULL;
	m->nr = 0;
}

int mounts_load(const char *path, struct mounts *m)
{
	char *line = NULL, *tok, *save, *fields[6], *sep;
	struct mount_entry *e;
	size_t cap = 0, vcap = 0;
	unsigned int maj, min;
	int err = 0, i;
	FILE *f;

	m->v = NULL;
	m->nr = 0;
	f = fopen(path ? path : "/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		/* Optional fields end at " - ", followed by fstype and source. */
		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = '\0';
		tok = strtok_r(line, " ", &save);
		for (i = 0; i < 6 && tok; i++, tok = strtok_r(NULL, " ", &save))
			fields[i] = tok;
		if (i < 5 || sscanf(fields[2], "%u:%u", &maj, &min) != 2)
			continue;
		err = ARRAY_RESERVE(m->v, m->nr, vcap, 64);
		if (err)
			goto cleanup;
		e = &m->v[m->nr];
		e->id = strtoul(fields[0], NULL, 10);
		e->major = maj;
		e->minor = min;
		e->root = strdup(fields[3]);
		e->mnt = strdup(fields[4]);
		tok = strtok_r(sep + 3, " ", &save);
		e->fstype = strdup(tok ? tok : "");
		tok = tok ? strtok_r(NULL, " ", &save) : NULL;
		e->source = strdup(tok ? tok : "");
		tok = tok ? strtok_r(NULL, " ", &save) : NULL;
		e->super_opts = strdup(tok ? tok : "");
		m->nr++;
		if (!e->root || !e->mnt || !e->fstype || !e->source || !e->super_opts) {
			err = -ENOMEM;
			goto cleanup;
		}
		mounts_unescape(e->root);
		mounts_unescape(e->mnt);
		mounts_unescape(e->source);
	}
cleanup:
	free(line);
	fclose(f);
	if (err)
		mounts_free(m);
	return err;
}

/* Whether comma-separated @opts has the option @opt. */
static bool has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);
	const char *p = opts;

	while (p && *p) {
		if (!strncmp(p, opt, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return false;
}

int mounts_find_fs(const char *mountinfo, const char *fstype, const char *super_opt, char *buf,
		   size_t len)
{
	struct mounts m;
	int err;
	size_t i;

	err = mounts_load(mountinfo, &m);
	if (err)
		return err;
	err = -ENOENT;
	for (i = 0; i < m.nr; i++) {
		if (strcmp(m.v[i].fstype, fstype) ||
		    (super_opt && !has_opt(m.v[i].super_opts, super_opt)))
			continue;
		err = strlen(m.v[i].mnt) < len ? 0 : -ENAMETOOLONG;
		if (!err)
			strcpy(buf, m.v[i].mnt);
		break;
	}
	mounts_free(&m);
	return err;
}

/* Length of @root as a prefix of @path on a component boundary, or -1. */
static long root_prefix(const char *root, const char *path)
{
	size_t rl = strlen(root);

	if (!strcmp(root, "/"))
		return 0;
	if (strncmp(root, path, rl) || (path[rl] && path[rl] != '/'))
		return -1;
	return rl;
}

int mounts_join(const struct mounts *m, unsigned int major, unsigned int minor, const char *fs_path,
		char *out, size_t len)
{
	const struct mount_entry *best = NULL;
	long best_len = -1, l;
	const char *rest;
	size_t i;
	int n;

	for (i = 0; i < m->nr; i++) {
		if (m->v[i].major != major || m->v[i].minor != minor)
			continue;
		l = root_prefix(m->v[i].root, fs_path);
		if (l > best_len) {
			best = &m->v[i];
			best_len = l;
		}
	}
	if (!best)
		return -ENOENT;
	rest = fs_path + best_len;
	if (!strcmp(best->mnt, "/"))
		n = snprintf(out, len, "%s", rest[0] ? rest : "/");
	else
		n = snprintf(out, len, "%s%s", best->mnt, strcmp(rest, "/") ? rest : "");
	return (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int mounts_path_dev(const char *path, uint32_t *dev)
{
	struct mounts m;
	struct statx stx;
	size_t i;

	if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS | STATX_MNT_ID, &stx))
		return -errno;
	*dev = MKDEV_K(stx.stx_dev_major, stx.stx_dev_minor);
	if (!(stx.stx_mask & STATX_MNT_ID) || mounts_load(NULL, &m))
		return 0;
	for (i = 0; i < m.nr; i++) {
		if (m.v[i].id == stx.stx_mnt_id) {
			*dev = MKDEV_K(m.v[i].major, m.v[i].minor);
			break;
		}
	}
	mounts_free(&m);
	return 0;
}

/* Kernel dev_t in the sysfs file @path ("MAJ:MIN"), or 0. */
static uint32_t sysfs_dev(const char *path)
{
	unsigned int ma, mi;
	FILE *f = fopen(path, "re");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%u:%u", &ma, &mi);
	fclose(f);
	return n == 2 ? MKDEV_K(ma, mi) : 0;
}

/* Devices of the btrfs that has @dev among its devices into @devs; returns how many. */
static int btrfs_devices(uint32_t dev, uint32_t *devs, int max)
{
	char path[1024];
	struct dirent *fs, *de;
	DIR *top, *d;
	int n = 0;
	bool found = false;

	top = opendir("/sys/fs/btrfs");
	if (!top)
		return 0;
	while (!found && (fs = readdir(top))) {
		if (fs->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/devices", fs->d_name);
		d = opendir(path);
		if (!d)
			continue;
		n = 0;
		while ((de = readdir(d))) {
			uint32_t v;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/devices/%s/dev", fs->d_name,
				 de->d_name);
			v = sysfs_dev(path);
			if (!v)
				continue;
			found |= v == dev;
			if (n < max)
				devs[n++] = v;
		}
		closedir(d);
	}
	closedir(top);
	return found ? n : 0;
}

int mounts_backing_devs(const struct mount_entry *e, uint32_t *devs, int max)
{
	struct stat st;
	uint32_t src;
	int n;

	if (e->major || max <= 0 || e->source[0] != '/' || stat(e->source, &st) ||
	    !S_ISBLK(st.st_mode))
		return 0;
	src = MKDEV_K(major(st.st_rdev), minor(st.st_rdev));
	if (!strcmp(e->fstype, "btrfs")) {
		n = btrfs_devices(src, devs, max);
		if (n)
			return n;
	}
	devs[0] = src;
	return 1;
}

uint32_t mounts_fs_disk(const struct mounts *m, uint32_t dev)
{
	uint32_t disk;
	size_t i;

	if (dev >> 20)
		return dev;
	for (i = 0; i < m->nr; i++) {
		if (m->v[i].major || m->v[i].minor != dev)
			continue;
		if (mounts_backing_devs(&m->v[i], &disk, 1) == 1)
			return disk;
	}
	return 0;
}
