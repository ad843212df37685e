// SPDX-License-Identifier: GPL-2.0
/*
 * The three records of a virtio-blk request's way (collect/vm.h): the guest's and the
 * host's `iospan trace --json` output, read line by line into an in-memory SQLite table
 * and taken apart with its JSON functions (a line that is not JSON, a cut last line, is
 * counted, not guessed at), and QEMU's -trace log (log backend, `-msg timestamp=on`):
 *
 *   TID@SECONDS.MICROSECONDS:virtio_blk_handle_read vdev 0x.. req 0x.. sector N nsectors N
 *   TID@SECONDS.MICROSECONDS:virtio_blk_req_complete vdev 0x.. req 0x.. status N
 *
 * Only these event lines are read, by their printed fields: nothing of QEMU's own
 * structures (its pointers are names, never read).
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collect/vm.h"
#include "err.h"

#define MAX_LINE (1 << 20)

/*
 * @path opened for reading if it is a regular file (not a device or a pipe that never
 * ends); else NULL, said, *@err its negative errno.
 */
static FILE *open_regular(const char *path, const char *what, int *err)
{
	struct stat st;
	FILE *f = fopen(path, "r");

	if (!f) {
		*err = fail(-errno, "cannot read %s '%s': %s", what, path, strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		*err = fail(-EINVAL, "%s '%s' is not a regular file", what, path);
		return NULL;
	}
	return f;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *p;

	if (n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 256;
	p = realloc(*v, *cap * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	return 0;
}

/* The JSON lines of @path in table lines(n, line) of a new in-memory database. */
static int load_lines(const char *path, const char *what, sqlite3 **out, struct vm_read_stats *st)
{
	sqlite3_stmt *ins = NULL;
	sqlite3 *db = NULL;
	char *line = NULL, desc[32];
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int err = 0;

	*out = NULL;
	snprintf(desc, sizeof(desc), "the %s trace", what);
	f = open_regular(path, desc, &err);
	if (!f)
		return err;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE TABLE lines (n INTEGER, line TEXT)", NULL, NULL, NULL) ||
	    sqlite3_prepare_v2(db, "INSERT INTO lines VALUES (?1, ?2)", -1, &ins, NULL)) {
		err = fail(-ENOMEM, "cannot read the %s trace: %s", what, sqlite3_errmsg(db));
		goto cleanup;
	}
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	while ((len = getline(&line, &cap, f)) > 0) {
		st->lines++;
		if (len > MAX_LINE)
			continue;
		sqlite3_bind_int64(ins, 1, (sqlite3_int64)st->lines);
		sqlite3_bind_text(ins, 2, line, (int)len, SQLITE_STATIC);
		sqlite3_step(ins);
		sqlite3_reset(ins);
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (ferror(f))
		err = fail(-EIO, "cannot read the %s trace '%s'", what, path);
cleanup:
	sqlite3_finalize(ins);
	free(line);
	fclose(f);
	if (err)
		sqlite3_close(db);
	else
		*out = db;
	return err;
}

static void count_malformed(sqlite3 *db, struct vm_read_stats *st)
{
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM lines WHERE NOT json_valid(line)", -1, &s,
			       NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		st->malformed = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
}

static void copy_text(char *dst, size_t len, const unsigned char *s)
{
	snprintf(dst, len, "%s", s ? (const char *)s : "");
}

/* Microseconds (a JSON number, or NULL: -1) as ns. */
static int64_t col_us(sqlite3_stmt *s, int i)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ?
		       -1 :
		       (int64_t)(sqlite3_column_double(s, i) * 1e3 + 0.5);
}

/*
 * The guest's requests, each with its critical bio: the bio that completed last (its C),
 * on @disk if given. Times are made absolute from the request's start.
 */
static const char guest_sql[] =
	"SELECT l.n, json_extract(l.line, '$.op'), json_extract(l.line, '$.comm'),"
	" json_extract(l.line, '$.pid'), json_extract(l.line, '$.tid'),"
	" json_extract(l.line, '$.start_mono_ns'), json_extract(l.line, '$.total_us'),"
	" json_extract(l.line, '$.offset'), json_extract(l.line, '$.bytes'),"
	" json_extract(b.value, '$.disk'), json_extract(b.value, '$.sector'),"
	" json_extract(b.value, '$.bytes'), json_extract(b.value, '$.op'),"
	" json_extract(b.value, '$.q_us'), json_extract(b.value, '$.d_us'),"
	" json_extract(b.value, '$.c_us'), json_extract(b.value, '$.driver.submit_us'),"
	" json_extract(b.value, '$.driver.complete_us'),"
	" json_extract(l.line, '$.stages.pre_block'), json_extract(l.line, '$.stages.throttle'),"
	" json_extract(l.line, '$.stages.q2q'), json_extract(l.line, '$.stages.q2g'),"
	" json_extract(l.line, '$.stages.g2i'), json_extract(l.line, '$.stages.i2d'),"
	" json_extract(l.line, '$.stages.d2c'), json_extract(l.line, '$.stages.drv_in'),"
	" json_extract(l.line, '$.stages.drv_out'), json_extract(l.line, '$.stages.post_block')"
	" FROM lines l, json_each(l.line, '$.bios') b"
	" WHERE json_valid(l.line) AND json_extract(l.line, '$.type') = 'request'"
	" AND (?1 IS NULL OR json_extract(b.value, '$.disk') = ?1)"
	" AND b.key = (SELECT b2.key FROM json_each(l.line, '$.bios') b2"
	"  WHERE ?1 IS NULL OR json_extract(b2.value, '$.disk') = ?1"
	"  ORDER BY json_extract(b2.value, '$.c_us') DESC LIMIT 1)"
	" ORDER BY json_extract(l.line, '$.start_mono_ns')";

int vm_read_guest(const char *path, const char *disk, struct vm_merge *m, struct vm_read_stats *st)
{
	sqlite3_stmt *s = NULL;
	sqlite3 *db = NULL;
	size_t cap = 0;
	int err, i;

	memset(st, 0, sizeof(*st));
	err = load_lines(path, "guest", &db, st);
	if (err)
		return err;
	count_malformed(db, st);
	if (sqlite3_prepare_v2(db, guest_sql, -1, &s, NULL) != SQLITE_OK) {
		err = fail(-EINVAL, "cannot read the guest trace: %s", sqlite3_errmsg(db));
		goto cleanup;
	}
	if (disk)
		sqlite3_bind_text(s, 1, disk, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct vm_guest_req *g;
		int64_t start = sqlite3_column_int64(s, 5);

		if (grow((void **)&m->g, &cap, m->nr_g, sizeof(*m->g))) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
		g = &m->g[m->nr_g];
		memset(g, 0, sizeof(*g));
		g->line = sqlite3_column_int(s, 0);
		copy_text(g->op, sizeof(g->op), sqlite3_column_text(s, 1));
		copy_text(g->comm, sizeof(g->comm), sqlite3_column_text(s, 2));
		g->pid = sqlite3_column_int64(s, 3);
		g->tid = sqlite3_column_int64(s, 4);
		g->start = start;
		g->end = start + col_us(s, 6);
		g->offset = sqlite3_column_int64(s, 7);
		g->bytes = sqlite3_column_int64(s, 8);
		copy_text(g->disk, sizeof(g->disk), sqlite3_column_text(s, 9));
		g->sector = sqlite3_column_int64(s, 10);
		g->bio_bytes = sqlite3_column_int64(s, 11);
		g->write = sqlite3_column_text(s, 12) && sqlite3_column_text(s, 12)[0] == 'W';
		g->q = start + col_us(s, 13);
		g->d = start + col_us(s, 14);
		g->c = start + col_us(s, 15);
		g->ds = col_us(s, 16) >= 0 ? start + col_us(s, 16) : 0;
		g->dc = col_us(s, 17) >= 0 ? start + col_us(s, 17) : 0;
		for (i = 0; i < VG_NR; i++)
			g->st[i] = -1;
		g->st[VG_TOTAL] = g->end - g->start;
		for (i = VG_PRE_BLOCK; i < VG_NR; i++)
			g->st[i] = col_us(s, 18 + i - VG_PRE_BLOCK);
		/* A request without timed bios (start unknown, C before Q) is not one. */
		if (!start || g->c < g->q || g->end < g->c) {
			st->skipped++;
			continue;
		}
		m->nr_g++;
	}
	st->requests = m->nr_g;
cleanup:
	sqlite3_finalize(s);
	sqlite3_close(db);
	return err;
}

static const char host_sql[] =
	"SELECT n, json_extract(line, '$.op'), json_extract(line, '$.tid'),"
	" json_extract(line, '$.offset'), json_extract(line, '$.ret'),"
	" json_extract(line, '$.start_mono_ns'), json_extract(line, '$.total_us'),"
	" json_extract(line, '$.time_ns'), json_extract(line, '$.stages.pre_block'),"
	" json_extract(line, '$.stages.throttle'), json_extract(line, '$.stages.q2c'),"
	" json_extract(line, '$.stages.d2c'), json_extract(line, '$.stages.post_block'),"
	" json_extract(line, '$.has_block_io')"
	" FROM lines WHERE json_valid(line) AND json_extract(line, '$.type') = 'request'"
	" AND json_extract(line, '$.offset') >= 0 AND json_extract(line, '$.ret') > 0"
	" AND json_extract(line, '$.op') IN ('pread64', 'preadv', 'preadv2', 'pwrite64',"
	"  'pwritev', 'pwritev2', 'aio_read', 'aio_write')"
	" AND (?1 IS NULL OR json_extract(line, '$.path') = ?1)"
	" ORDER BY json_extract(line, '$.start_mono_ns')";

int vm_read_host(const char *path, const char *image, struct vm_merge *m, struct vm_read_stats *st,
		 int64_t *mono_to_real)
{
	sqlite3_stmt *s = NULL;
	sqlite3 *db = NULL;
	size_t cap = 0;
	int err;

	memset(st, 0, sizeof(*st));
	*mono_to_real = 0;
	err = load_lines(path, "host", &db, st);
	if (err)
		return err;
	count_malformed(db, st);
	if (sqlite3_prepare_v2(db, host_sql, -1, &s, NULL) != SQLITE_OK) {
		err = fail(-EINVAL, "cannot read the host trace: %s", sqlite3_errmsg(db));
		goto cleanup;
	}
	if (image)
		sqlite3_bind_text(s, 1, image, -1, SQLITE_STATIC);
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct vm_host_io *h;
		const unsigned char *op = sqlite3_column_text(s, 1);
		int64_t start = sqlite3_column_int64(s, 5);
		bool blk = sqlite3_column_int(s, 13);

		if (grow((void **)&m->h, &cap, m->nr_h, sizeof(*m->h))) {
			err = fail(-ENOMEM, "out of memory");
			goto cleanup;
		}
		h = &m->h[m->nr_h];
		memset(h, 0, sizeof(*h));
		h->line = sqlite3_column_int(s, 0);
		copy_text(h->op, sizeof(h->op), op);
		h->tid = sqlite3_column_int64(s, 2);
		h->offset = sqlite3_column_int64(s, 3);
		h->bytes = sqlite3_column_int64(s, 4);
		h->write = strstr(h->op, "write") != NULL;
		h->start = start;
		h->end = start + col_us(s, 6);
		/* Its wall clock: what QEMU's log times are put on this clock with. */
		if (!*mono_to_real && sqlite3_column_int64(s, 7))
			*mono_to_real = sqlite3_column_int64(s, 7) - start;
		h->pre_block = col_us(s, 8);
		h->throttle = blk ? col_us(s, 9) : -1;
		h->q2c = blk ? col_us(s, 10) : -1;
		h->d2c = blk ? col_us(s, 11) : -1;
		h->post_block = blk ? col_us(s, 12) : -1;
		if (!start || h->end < h->start) {
			st->skipped++;
			continue;
		}
		m->nr_h++;
	}
	st->requests = m->nr_h;
cleanup:
	sqlite3_finalize(s);
	sqlite3_close(db);
	return err;
}

int vm_qemu_line(const char *line, int64_t *real_ns, uint32_t *tid, char *event, size_t len,
		 uint64_t *vdev, uint64_t *req, uint64_t *a, uint64_t *b)
{
	unsigned long long sec, usec, v, r, x = 0, y = 0;
	unsigned int t;
	char ev[64];
	const char *args;
	int n = 0;

	if (sscanf(line, "%u@%llu.%llu:%63s %n", &t, &sec, &usec, ev, &n) < 4 || !n)
		return strstr(line, "virtio_blk_") ? -EINVAL : 0;
	args = line + n;
	*real_ns = (int64_t)(sec * 1000000000ULL + usec * 1000ULL);
	*tid = t;
	snprintf(event, len, "%s", ev);
	if (!strcmp(ev, "virtio_blk_handle_read") || !strcmp(ev, "virtio_blk_handle_write")) {
		if (sscanf(args, "vdev %llx req %llx sector %llu nsectors %llu", &v, &r, &x, &y) !=
		    4)
			return -EINVAL;
	} else if (!strcmp(ev, "virtio_blk_req_complete")) {
		if (sscanf(args, "vdev %llx req %llx status %llu", &v, &r, &x) != 3)
			return -EINVAL;
	} else {
		return 0;
	}
	*vdev = v;
	*req = r;
	*a = x;
	*b = y;
	return 1;
}

int vm_read_qemu(const char *path, int64_t mono_to_real, struct vm_merge *m,
		 struct vm_read_stats *st)
{
	uint64_t vdev, req, a, b, untimed = 0;
	char *line = NULL, ev[64];
	size_t cap = 0, qcap = 0, i;
	int64_t real;
	uint32_t tid;
	FILE *f;
	int err = 0, r;

	memset(st, 0, sizeof(*st));
	f = open_regular(path, "QEMU's trace log", &err);
	if (!f)
		return err;
	while (getline(&line, &cap, f) > 0) {
		st->lines++;
		r = vm_qemu_line(line, &real, &tid, ev, sizeof(ev), &vdev, &req, &a, &b);
		if (r < 0) {
			/* An event line without "TID@TIME:": QEMU ran without -msg timestamp=on. */
			if (strncmp(line, "virtio_blk_", 11))
				st->malformed++;
			else
				untimed++;
			continue;
		}
		if (!r)
			continue;
		if (strcmp(ev, "virtio_blk_req_complete")) {
			if (grow((void **)&m->q, &qcap, m->nr_q, sizeof(*m->q))) {
				err = fail(-ENOMEM, "out of memory");
				goto cleanup;
			}
			m->q[m->nr_q] = (struct vm_qemu_req){
				.id = req,
				.vdev = vdev,
				.sector = a,
				.nsectors = b,
				.write = !strcmp(ev, "virtio_blk_handle_write"),
				.take = real - mono_to_real,
				.tid = tid,
				.line = (int)st->lines,
			};
			m->nr_q++;
			continue;
		}
		/* Its completion: the latest request of that address still open. */
		for (i = m->nr_q; i-- > 0;)
			if (m->q[i].id == req && m->q[i].vdev == vdev && !m->q[i].done) {
				m->q[i].done = real - mono_to_real;
				m->q[i].status = (int)a;
				break;
			}
	}
	if (ferror(f))
		err = fail(-EIO, "cannot read QEMU's trace log '%s'", path);
	else if (!m->nr_q && untimed)
		err = fail(-EINVAL,
			   "QEMU's trace log '%s' has virtio_blk events without times: run QEMU "
			   "with -msg timestamp=on",
			   path);
	else if (!m->nr_q)
		err = fail(-EINVAL,
			   "QEMU's trace log '%s' has no virtio_blk_handle_read/write events: "
			   "run QEMU with -msg timestamp=on -trace 'enable=virtio_blk_*,file=FILE' "
			   "(or "
			   "enable them with QMP trace-event-set-state)",
			   path);
	st->requests = m->nr_q;
cleanup:
	free(line);
	fclose(f);
	return err;
}
