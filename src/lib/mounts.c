// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mounts.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
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
	}
	free(m->v);
	m->v = NULL;
	m->nr = 0;
}

int mounts_load(const char *path, struct mounts *m)
{
	char *line = NULL, *tok, *save, *fields[6], *sep;
	struct mount_entry *e, *grown;
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
		if (m->nr == vcap) {
			vcap = vcap ? 2 * vcap : 64;
			grown = realloc(m->v, vcap * sizeof(*grown));
			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			m->v = grown;
		}
		e = &m->v[m->nr];
		e->major = maj;
		e->minor = min;
		e->root = strdup(fields[3]);
		e->mnt = strdup(fields[4]);
		tok = strtok_r(sep + 3, " ", &save);
		e->fstype = strdup(tok ? tok : "");
		m->nr++;
		if (!e->root || !e->mnt || !e->fstype) {
			err = -ENOMEM;
			goto cleanup;
		}
		unescape(e->root);
		unescape(e->mnt);
	}
cleanup:
	free(line);
	fclose(f);
	if (err)
		mounts_free(m);
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
