// SPDX-License-Identifier: GPL-2.0
/* Command lines, process titles and blkio groups of traced processes, per pid. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroups.h"
#include "procinfo.h"

#define BUCKETS	 1024
#define ARGS_MAX 4096 /* read from /proc/PID/cmdline; the kernel's capture holds less */
/*
 * A process not asked about for this many rounds is forgotten (it exited, or its rows
 * were pruned): a watcher runs for months on machines that start millions of processes.
 * Checked every SWEEP_ROUNDS rounds.
 */
#define KEEP_ROUNDS  64
#define SWEEP_ROUNDS 16

struct proc_entry {
	uint32_t pid;
	uint64_t round, read_ns;
	uint64_t used; /* the last round it was asked about */
	char *cmdline;
	char *argv0; /* the first argument, to tell a title from a program's name */
	char *blkio;
	struct proc_entry *next;
};

struct procinfo {
	procinfo_lookup_fn lookup;
	void *lookup_arg;
	struct cgroup_map *blkio_map; /* the v1 blkio hierarchy, NULL if not mounted */
	uint64_t round, max_age_ns;
	uint64_t rescan_ns; /* when the blkio hierarchy may be scanned again (max_age_ns) */
	struct proc_entry *b[BUCKETS];
	size_t nr;
};

int procinfo_new(procinfo_lookup_fn lookup, void *arg, uint64_t max_age_ns, struct procinfo **out)
{
	struct procinfo *c = calloc(1, sizeof(*c));
	char root[PATH_MAX];

	if (!c)
		return -ENOMEM;
	c->lookup = lookup;
	c->lookup_arg = arg;
	c->round = 1;
	c->max_age_ns = max_age_ns;
	/* Where the io controller is on cgroup v2, the v2 path says it all. */
	if (!cgroup_v1_mount("blkio", root, sizeof(root)))
		cgroup_map_new(root, &c->blkio_map);
	*out = c;
	return 0;
}

static void entry_free(struct proc_entry *e)
{
	free(e->cmdline);
	free(e->argv0);
	free(e->blkio);
	free(e);
}

/* Frees the entries last asked about before round @before (all: UINT64_MAX). */
static void forget_before(struct procinfo *c, uint64_t before)
{
	struct proc_entry **pe, *e;
	int i;

	for (i = 0; i < BUCKETS; i++) {
		for (pe = &c->b[i]; (e = *pe);) {
			if (e->used >= before) {
				pe = &e->next;
				continue;
			}
			*pe = e->next;
			entry_free(e);
			c->nr--;
		}
	}
}

void procinfo_free(struct procinfo *c)
{
	if (!c)
		return;
	forget_before(c, UINT64_MAX);
	cgroup_map_free(c->blkio_map);
	free(c);
}

void procinfo_round(struct procinfo *c)
{
	c->round++;
	cgroup_map_round(c->blkio_map);
	if (c->round % SWEEP_ROUNDS == 0 && c->round > KEEP_ROUNDS)
		forget_before(c, c->round - KEEP_ROUNDS);
}

size_t procinfo_count(const struct procinfo *c)
{
	return c->nr;
}

/* The entry of @pid, or NULL. */
static struct proc_entry *entry_find(struct procinfo *c, uint32_t pid)
{
	struct proc_entry *e;

	for (e = c->b[pid % BUCKETS]; e; e = e->next)
		if (e->pid == pid)
			return e;
	return NULL;
}

bool procinfo_known(struct procinfo *c, uint32_t pid)
{
	struct proc_entry *e = entry_find(c, pid);

	if (e)
		e->used = c->round;
	return e;
}

/* Length of the UTF-8 sequence at @s (at most @n bytes), 0 if it is not valid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

void procinfo_format_args(const char *args, size_t len, char *out, size_t out_len)
{
	const unsigned char *s = (const unsigned char *)args;
	size_t i = 0, o = 0, n;

	if (!out_len)
		return;
	while (len && !args[len - 1]) /* padding after the last argument or title */
		len--;
	while (i < len && o + 4 < out_len) {
		n = utf8_len(s + i, len - i);
		if (!s[i]) {
			out[o++] = ' ';
			i++;
		} else if (!n || s[i] < 0x20 || s[i] == 0x7f) {
			out[o++] = '?';
			i++;
		} else {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
		}
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

bool procinfo_is_title(const char *args, size_t len, const char *comm)
{
	size_t n = strnlen(args, len), clen = strlen(comm);
	const char *base = args, *p;

	if (!n)
		return false;
	/* Program names have no spaces; titles mostly do ("postgres: checkpointer"). */
	if (memchr(args, ' ', n))
		return true;
	for (p = args; p < args + n; p++)
		if (*p == '/')
			base = p + 1;
	n -= base - args;
	/* comm is the program's name cut to IOSPAN_COMM_LEN - 1 bytes. */
	if (clen == IOSPAN_COMM_LEN - 1 && n > clen)
		n = clen;
	return n != clen || strncmp(base, comm, n);
}

int procinfo_v1_cgroup(uint32_t pid, const char *controller, char *out, size_t len)
{
	char path[64], *line = NULL, *ctl, *rest, *tok, *save;
	size_t cap = 0, clen = strlen(controller);
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* "ID:CONTROLLERS:PATH", controllers comma separated ("" for cgroup v2). */
	while (err && getline(&line, &cap, f) > 0) {
		ctl = strchr(line, ':');
		rest = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!rest)
			continue;
		*rest++ = '\0';
		rest[strcspn(rest, "\n")] = '\0';
		for (tok = strtok_r(ctl + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (strlen(tok) == clen && !strcmp(tok, controller)) {
				snprintf(out, len, "%s", rest);
				err = 0;
				break;
			}
		}
	}
	free(line);
	fclose(f);
	return err;
}

static int set_dup(char **dst, const char *s)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		return -ENOMEM;
	free(*dst);
	*dst = d;
	return 0;
}

/* Takes an argument area (and blkio group) as what is known of @e. */
static void entry_set(struct proc_entry *e, const char *args, size_t len, const char *blkio)
{
	char buf[ARGS_MAX * 2];

	procinfo_format_args(args, len, buf, sizeof(buf));
	set_dup(&e->cmdline, buf[0] ? buf : NULL);
	snprintf(buf, sizeof(buf), "%.*s", (int)strnlen(args, len), args);
	set_dup(&e->argv0, buf);
	/* The root group limits nothing: only a group below it is worth naming. */
	set_dup(&e->blkio, blkio && strcmp(blkio, "/") ? blkio : NULL);
}

/* The argument area of @pid from /proc (@args: ARGS_MAX bytes): its length, or -errno. */
static ssize_t proc_args(uint32_t pid, char *args)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, args, ARGS_MAX);
	close(fd);
	if (n <= 0) /* a kernel thread, or a zombie */
		return n < 0 ? -errno : -ENOENT;
	return n;
}

/* From the kernel's capture: 0, or -ENOENT. */
static int read_capture(struct procinfo *c, struct proc_entry *e)
{
	const char *blkio = NULL;
	struct proc_title t;
	char args[ARGS_MAX];
	ssize_t n;

	if (!c->lookup || c->lookup(c->lookup_arg, e->pid, &t) || !t.len)
		return -ENOENT;
	if (c->blkio_map && t.blkio_cgid)
		blkio = cgroup_map_path(c->blkio_map, t.blkio_cgid);
	if (t.len >= PROC_ARGS_LEN) {
		/* Cut short: the whole of it from /proc if the process is still that one. */
		n = proc_args(e->pid, args);
		if (n > PROC_ARGS_LEN && !memcmp(args, t.args, PROC_ARGS_LEN)) {
			entry_set(e, args, n, blkio);
			return 0;
		}
	}
	entry_set(e, t.args, t.len < PROC_ARGS_LEN ? t.len : PROC_ARGS_LEN, blkio);
	return 0;
}

/* From /proc/PID, while the process lives: 0, or -errno. */
static int read_proc(struct procinfo *c, struct proc_entry *e)
{
	char args[ARGS_MAX], blkio[PATH_MAX];
	ssize_t n = proc_args(e->pid, args);

	if (n < 0)
		return n;
	if (!c->blkio_map || procinfo_v1_cgroup(e->pid, "blkio", blkio, sizeof(blkio)))
		blkio[0] = '\0';
	entry_set(e, args, n, blkio[0] ? blkio : NULL);
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void procinfo_get(struct procinfo *c, uint32_t pid, const char *comm, struct proc_ident *out)
{
	uint64_t now = c->max_age_ns ? mono_ns() : 0;
	unsigned int h = pid % BUCKETS;
	struct proc_entry *e = entry_find(c, pid);

	memset(out, 0, sizeof(*out));
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->pid = pid;
		e->next = c->b[h];
		c->b[h] = e;
		c->nr++;
	}
	e->used = c->round;
	/* An unknown blkio group is looked for again at most once a second. */
	if (c->max_age_ns && now >= c->rescan_ns) {
		cgroup_map_round(c->blkio_map);
		c->rescan_ns = now + 1000000000ULL;
	}
	if (e->round != c->round || (c->max_age_ns && now - e->read_ns >= c->max_age_ns)) {
		e->round = c->round;
		e->read_ns = now;
		/* Gone from both: keep what was known. */
		if (read_capture(c, e))
			read_proc(c, e);
	}
	out->cmdline = e->cmdline;
	out->title = e->argv0 && comm && procinfo_is_title(e->argv0, strlen(e->argv0), comm);
	out->blkio = e->blkio;
}
