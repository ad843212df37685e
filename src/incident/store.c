// SPDX-License-Identifier: GPL-2.0
/*
 * The incident store: one SQLite database in WAL mode, mode 0600 (it holds paths and
 * command lines). Every sample of an open incident is its own transaction, so a
 * watcher killed at any instant leaves a database that opens, with every incident
 * before whole; the next watcher marks what was left open "incomplete". Only one
 * watcher writes a database: it holds an exclusive flock(2) on the file while it runs,
 * which also tells readers whether an "open" incident is still being written.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "array.h"
#include "drvstatus.h"
#include "err.h"
#include "json.h"
#include "incident/store.h"

struct watch_store {
	sqlite3 *db;
	const char *path;
	int lock_fd;	   /* the watcher's flock; -1 for readers */
	bool created;	   /* the watcher made the file: removed again if set-up fails */
	bool watcher_seen; /* readers: a watcher held the database when it was opened */
	int stale_closed;
	sqlite3_stmt *sample_stmt;
};

/*
 * The schema, documented in docs/iospan-watch.md. Times are seconds since 1970 (UTC);
 * processes, files, slow_requests and stalls are filled by BPF collectors when they
 * run (collector.h), and stay empty otherwise.
 */
static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE IF NOT EXISTS incidents ("
	" id INTEGER PRIMARY KEY, start_time REAL NOT NULL, end_time REAL,"
	" disk TEXT, dev TEXT, rule TEXT NOT NULL, value REAL NOT NULL,"
	" threshold REAL NOT NULL, held_values TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('open', 'complete', 'incomplete')),"
	" end_reason TEXT, pre_s REAL NOT NULL, capture_s REAL NOT NULL,"
	" triggers INTEGER NOT NULL DEFAULT 1, hostname TEXT, version TEXT, fs_bytes TEXT,"
	" kernel TEXT, collectors TEXT, target TEXT);"
	"CREATE TABLE IF NOT EXISTS triggers ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, disk TEXT, dev TEXT, rule TEXT NOT NULL, value REAL NOT NULL,"
	" threshold REAL NOT NULL);"
	"CREATE TABLE IF NOT EXISTS samples ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, uptime REAL NOT NULL, interval_s REAL NOT NULL,"
	" phase TEXT NOT NULL CHECK (phase IN ('pre', 'capture')),"
	" disk TEXT NOT NULL, dev TEXT NOT NULL,"
	" r_s REAL, w_s REAL, d_s REAL, f_s REAL, rkB_s REAL, wkB_s REAL, dkB_s REAL,"
	" rrqm_s REAL, wrqm_s REAL, drqm_s REAL, rrqm_pct REAL, wrqm_pct REAL, drqm_pct REAL,"
	" r_await REAL, w_await REAL, d_await REAL, f_await REAL,"
	" rareq_sz REAL, wareq_sz REAL, dareq_sz REAL, aqu_sz REAL, util REAL,"
	" in_flight INTEGER, psi_some_avg10 REAL, psi_full_avg10 REAL,"
	" psi_some_total_us INTEGER, psi_full_total_us INTEGER, diskstats TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS samples_by_incident ON samples(incident_id, time);"
	"CREATE INDEX IF NOT EXISTS triggers_by_incident ON triggers(incident_id, time);"
	"CREATE TABLE IF NOT EXISTS processes ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, phase TEXT, pid INTEGER, comm TEXT, cmdline TEXT, cgroup TEXT,"
	" container TEXT, disk TEXT, fs_read_bytes INTEGER, fs_write_bytes INTEGER,"
	" disk_read_bytes INTEGER, disk_write_bytes INTEGER, writeback_bytes INTEGER,"
	" q2c_avg_us REAL, q2c_max_us REAL, d2c_avg_us REAL, d2c_max_us REAL);"
	"CREATE TABLE IF NOT EXISTS threads ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, phase TEXT, pid INTEGER, tid INTEGER, comm TEXT, disk TEXT,"
	" fs_read_bytes INTEGER, fs_write_bytes INTEGER, disk_read_bytes INTEGER,"
	" disk_write_bytes INTEGER, writeback_bytes INTEGER, q2c_avg_us REAL,"
	" q2c_max_us REAL, d2c_avg_us REAL, d2c_max_us REAL);"
	"CREATE TABLE IF NOT EXISTS files ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, phase TEXT, pid INTEGER, disk TEXT, dev TEXT, inode INTEGER,"
	" path TEXT, fs_read_bytes INTEGER, fs_write_bytes INTEGER, disk_read_bytes INTEGER,"
	" disk_write_bytes INTEGER, direct INTEGER, writeback INTEGER, generation INTEGER);"
	"CREATE TABLE IF NOT EXISTS slow_requests ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, phase TEXT, pid INTEGER, tid INTEGER, comm TEXT, disk TEXT,"
	" op TEXT, offset INTEGER, bytes INTEGER, path TEXT, total_us REAL, stages TEXT);"
	"CREATE TABLE IF NOT EXISTS stalls ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, phase TEXT, pid INTEGER, tid INTEGER, comm TEXT,"
	" wait_us REAL, count INTEGER, stack TEXT);"
	/* Added later: created in older databases by the watcher that opens them next. */
	"CREATE TABLE IF NOT EXISTS dropped ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, phase TEXT, what TEXT NOT NULL, count INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS histograms ("
	" incident_id INTEGER NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,"
	" time REAL NOT NULL, phase TEXT, disk TEXT NOT NULL, op TEXT NOT NULL,"
	" kind TEXT NOT NULL, count INTEGER NOT NULL, sum REAL NOT NULL, buckets TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS histograms_by_incident ON histograms(incident_id, time);"
	"INSERT OR IGNORE INTO meta VALUES ('schema_version', '" STORE_SCHEMA_TEXT "');";

/*
 * Schema 1 to 2: stalls gained count (the new dropped table comes with the schema
 * above); 2 to 3: files gained generation (a file whose inode number was reused is
 * another file), and the threads table came. Columns added where missing, so a database any watcher
 * made opens. Nullable columns added since (a watcher of the same schema that does not
 * know them leaves them NULL): incidents.fs_bytes, how FS bytes were counted; kernel
 * (uname -r), collectors (what each BPF collector did at the start, JSON) and target (the
 * target filter its collectors had, as given). 3 to 4: samples gained driver (each disk's
 * driver counters in the sample, JSON): the samples insert names every column by place,
 * so a watcher of schema 3 must not write to a database that has it.
 */
static const struct {
	const char *table, *column;
	bool reader_view; /* readers' queries name it: a view gives it as NULL */
} migrations[] = {
	{"stalls", "count INTEGER", false},	{"files", "generation INTEGER", true},
	{"incidents", "fs_bytes TEXT", true},	{"incidents", "kernel TEXT", true},
	{"incidents", "collectors TEXT", true}, {"incidents", "target TEXT", true},
	{"samples", "driver TEXT", true},
};

static int sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EUCLEAN;
	default:
		return -EIO;
	}
}

/* Prepares @sql on the store's database into @s: 0 or a negative errno. */
static int store_prepare(struct watch_store *st, const char *sql, sqlite3_stmt **s)
{
	int rc = sqlite3_prepare_v2(st->db, sql, -1, s, NULL);

	return rc == SQLITE_OK ? 0 : sqlite_errno(rc);
}

const char *store_errmsg(struct watch_store *st)
{
	return st && st->db ? sqlite3_errmsg(st->db) : "no database";
}

struct sqlite3 *store_db(struct watch_store *st)
{
	return st->db;
}

int store_stale_closed(const struct watch_store *st)
{
	return st->stale_closed;
}

static int exec(struct watch_store *st, const char *sql)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : sqlite_errno(rc);
}

int store_begin(struct watch_store *st)
{
	return exec(st, "BEGIN IMMEDIATE");
}

int store_commit(struct watch_store *st)
{
	return exec(st, "COMMIT");
}

void store_rollback(struct watch_store *st)
{
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

/* The directory of a new database: /var/lib/iospan is made (0700) if missing. */
static int make_parent(const char *path)
{
	char buf[PATH_MAX];

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	if (mkdir(dirname(buf), 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * The watcher's side of the lock: the file is created here, 0600, before SQLite opens
 * it (an empty file is an empty database), and stays open with an exclusive flock
 * until the end: closing any descriptor of the database in this process would drop
 * SQLite's own POSIX locks, so this one is closed only after SQLite is done.
 */
static int lock_watcher(struct watch_store *st)
{
	struct stat sb;
	int fd, ret;

	st->created = lstat(st->path, &sb) && errno == ENOENT;
	fd = open(st->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == ENOENT) {
		ret = make_parent(st->path);
		if (ret)
			return fail(ret, "cannot create database '%s': %s", st->path,
				    strerror(-ret));
		fd = open(st->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	if (fd < 0)
		return fail(-errno, "cannot open database '%s' for writing: %s", st->path,
			    strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		close(fd);
		if (ret == -EWOULDBLOCK)
			return fail(-EBUSY,
				    "database '%s' is in use by another iospan watch: give "
				    "each watcher its own --db",
				    st->path);
		return fail(ret, "cannot lock database '%s': %s", st->path, strerror(-ret));
	}
	st->lock_fd = fd;
	return 0;
}

/*
 * Whether a watcher holds @path's flock. Asked before SQLite opens the file: closing
 * this descriptor later would drop the POSIX locks SQLite holds on it.
 */
static bool watcher_holds(const char *path)
{
	bool running = false;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_SH | LOCK_NB))
		running = errno == EWOULDBLOCK;
	close(fd);
	return running;
}

bool store_watcher_running(struct watch_store *st)
{
	return st->lock_fd >= 0 || st->watcher_seen;
}

static int store_fail(struct watch_store *st, int rc, const char *what)
{
	int ret = sqlite_errno(rc);

	if (ret == -ENOSPC)
		return fail(ret, "%s '%s': the file system is full", what, st->path);
	return fail(ret, "%s '%s': %s", what, st->path, sqlite3_errmsg(st->db));
}

/* Incidents a watcher left open when it died: what they hold is kept, marked. */
static int close_stale(struct watch_store *st)
{
	int rc;

	rc = sqlite3_exec(st->db,
			  "UPDATE incidents SET state = 'incomplete',"
			  " end_reason = 'the watcher stopped during the capture (killed or"
			  " crashed)',"
			  " end_time = COALESCE((SELECT max(time) FROM samples"
			  "  WHERE incident_id = incidents.id), start_time)"
			  " WHERE state = 'open'",
			  NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot update database");
	st->stale_closed = sqlite3_changes(st->db);
	return 0;
}

static int open_db(struct watch_store *st, enum store_open how)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW;
	int rc;

	if (how == STORE_WATCHER)
		flags |= SQLITE_OPEN_CREATE;
	rc = sqlite3_open_v2(st->path, &st->db, flags, NULL);
	if (rc != SQLITE_OK && how == STORE_READER && (rc & 0xff) != SQLITE_CANTOPEN) {
		/* Not ours to write (another user's, a read-only mount): read it then. */
		sqlite3_close(st->db);
		rc = sqlite3_open_v2(st->path, &st->db, SQLITE_OPEN_READONLY, NULL);
	}
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot open database");
	sqlite3_busy_timeout(st->db, 5000);
	sqlite3_extended_result_codes(st->db, 0);
	rc = sqlite3_exec(st->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot open database");
	return 0;
}

/* A database that is one: SQLite only finds out at the first read. */
static int check_db(struct watch_store *st)
{
	int rc = sqlite3_exec(st->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		return 0;
	if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT)
		return fail(-EUCLEAN, "'%s' is not an iospan incident database (%s)", st->path,
			    sqlite3_errmsg(st->db));
	return store_fail(st, rc, "cannot read database");
}

bool store_has_table(struct watch_store *st, const char *table)
{
	sqlite3_stmt *s = NULL;
	bool found;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", -1,
			       &s, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return found;
}

static bool has_column(struct watch_store *st, const char *table, const char *column)
{
	sqlite3_stmt *s = NULL;
	char sql[128];
	bool found = false;

	snprintf(sql, sizeof(sql), "PRAGMA table_info(%s)", table);
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return false;
	while (!found && sqlite3_step(s) == SQLITE_ROW)
		found = !strcmp((const char *)sqlite3_column_text(s, 1), column);
	sqlite3_finalize(s);
	return found;
}

/* The name of the column migrations[@i] adds (its definition's first word), in @buf. */
static const char *migration_column(size_t i, char buf[64])
{
	if (sscanf(migrations[i].column, "%63s", buf) != 1)
		buf[0] = '\0';
	return buf;
}

/* Brings an older database's tables to this schema (migrations[]); 0 or an SQLite code. */
static int migrate(struct watch_store *st)
{
	char sql[160], column[64];
	size_t i;
	int rc = SQLITE_OK;

	for (i = 0; rc == SQLITE_OK && i < ARRAY_SIZE(migrations); i++) {
		if (has_column(st, migrations[i].table, migration_column(i, column)))
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s", migrations[i].table,
			 migrations[i].column);
		rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db,
				  "UPDATE meta SET value = '" STORE_SCHEMA_TEXT
				  "' WHERE key = 'schema_version'",
				  NULL, NULL, NULL);
	return rc;
}

/*
 * A database no watcher of this build opened yet lacks the columns migrations[] adds:
 * a view in front of each such table gives them as NULL, so one set of queries reads
 * both (unqualified names find the temporary schema first; writes name main.).
 */
static int reader_views(struct watch_store *st)
{
	char sql[512], column[64];
	size_t i, j, n;
	bool done;

	for (i = 0; i < ARRAY_SIZE(migrations); i++) {
		/* One view a table, with every column it lacks: the first migration of it. */
		for (j = 0, done = false; j < i; j++)
			done |= !strcmp(migrations[j].table, migrations[i].table);
		if (done || !store_has_table(st, migrations[i].table))
			continue;
		n = snprintf(sql, sizeof(sql), "CREATE TEMP VIEW %s AS SELECT *",
			     migrations[i].table);
		for (j = i; j < ARRAY_SIZE(migrations); j++)
			if (migrations[j].reader_view &&
			    !strcmp(migrations[j].table, migrations[i].table) &&
			    !has_column(st, migrations[j].table, migration_column(j, column)))
				n += snprintf(sql + n, sizeof(sql) - n, ", NULL AS %s", column);
		if (!strchr(sql, ','))
			continue;
		snprintf(sql + n, sizeof(sql) - n, " FROM main.%s", migrations[i].table);
		if (sqlite3_exec(st->db, sql, NULL, NULL, NULL))
			return store_fail(st, sqlite3_errcode(st->db), "cannot read database");
	}
	return 0;
}

/* A database of a newer schema than this build reads is said so, not misread. */
static int check_schema(struct watch_store *st)
{
	sqlite3_stmt *s = NULL;
	int version = 0;

	if (sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key = 'schema_version'", -1,
			       &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (version > STORE_SCHEMA_VERSION)
		return fail(-EPROTO,
			    "'%s' is from a newer iospan (incident schema %d; this one reads up "
			    "to %d): read it with that version",
			    st->path, version, STORE_SCHEMA_VERSION);
	return 0;
}

static int setup_watcher(struct watch_store *st)
{
	sqlite3_stmt *stmt = NULL;
	char mode[16] = "";
	int rc, ret = 0;

	/* Only effective on a new database: freed pages can then be given back. */
	rc = sqlite3_exec(st->db, "PRAGMA auto_vacuum = INCREMENTAL", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &stmt, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0))
		snprintf(mode, sizeof(mode), "%s", (const char *)sqlite3_column_text(stmt, 0));
	/*
	 * Finished before anything else runs: the statement still open would keep the
	 * schema below out of the WAL (it went to the database file with a rollback
	 * journal, and the WAL came only with the next write).
	 */
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot set up database");
	if (strcmp(mode, "wal"))
		return fail(-EIO, "cannot set up database '%s': WAL mode refused (journal mode %s)",
			    st->path, mode[0] ? mode : "unknown");
	/*
	 * NORMAL in WAL mode: a power loss may lose the last samples, never the database;
	 * each sample is one transaction, so an incident is cut, not torn.
	 */
	rc = sqlite3_exec(st->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db, schema_sql, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = migrate(st);
	if (rc != SQLITE_OK)
		ret = store_fail(st, rc, "cannot set up database");
	if (!ret)
		ret = close_stale(st);
	return ret;
}

static int prepare_sample(struct watch_store *st)
{
	int rc = sqlite3_prepare_v2(
		st->db,
		"INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
		" ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		-1, &st->sample_stmt, NULL);

	return rc == SQLITE_OK ? 0 : store_fail(st, rc, "cannot set up database");
}

int store_open(const char *path, enum store_open how, struct watch_store **out)
{
	struct watch_store *st;
	struct stat sb;
	int ret;

	*out = NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return fail(-ENOMEM, "out of memory");
	st->path = path;
	st->lock_fd = -1;
	if (how == STORE_READER) {
		if (stat(path, &sb)) {
			ret = fail(-errno,
				   "no incident database at '%s': %s (iospan watch "
				   "creates it; give its --db)",
				   path, strerror(errno));
			goto cleanup;
		}
		if (!S_ISREG(sb.st_mode)) {
			ret = fail(-EINVAL, "'%s' is not an iospan incident database", path);
			goto cleanup;
		}
		st->watcher_seen = watcher_holds(path);
	} else {
		ret = lock_watcher(st);
		if (ret)
			goto cleanup;
	}
	ret = open_db(st, how);
	if (!ret)
		ret = check_db(st);
	if (!ret)
		ret = check_schema(st);
	if (!ret && how == STORE_WATCHER)
		ret = setup_watcher(st);
	if (!ret && how == STORE_WATCHER)
		ret = prepare_sample(st);
	if (!ret && how == STORE_READER) {
		/* Written by a watcher: it has the schema (an empty file has not). */
		ret = sqlite3_exec(st->db, "SELECT 1 FROM incidents LIMIT 0", NULL, NULL, NULL) ?
			      fail(-EUCLEAN, "'%s' is not an iospan incident database", path) :
			      0;
		if (!ret)
			ret = reader_views(st);
	}
cleanup:
	if (ret) {
		/* A file this failed set-up made would only be an empty database. */
		if (st->created && st->lock_fd >= 0)
			unlink(path);
		store_close(st);
		return ret;
	}
	*out = st;
	return 0;
}

void store_close(struct watch_store *st)
{
	if (!st)
		return;
	sqlite3_finalize(st->sample_stmt);
	if (st->db && st->lock_fd >= 0)
		sqlite3_exec(st->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	sqlite3_close(st->db);
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	free(st);
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

/* Runs a prepared statement to its end and frees it. */
static int step_done(struct watch_store *st, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

/*
 * Runs @sql, which returns no rows, with its parameters bound in order as @types says
 * of each: 'i' an int64_t, 'd' a double, 's' a string (NULL: SQL NULL).
 */
static int store_run(struct watch_store *st, const char *sql, const char *types, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int i, rc;

	rc = store_prepare(st, sql, &s);
	if (rc)
		return rc;
	va_start(ap, types);
	for (i = 0; types[i]; i++) {
		if (types[i] == 'i')
			sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t));
		else if (types[i] == 'd')
			sqlite3_bind_double(s, i + 1, va_arg(ap, double));
		else
			bind_text_or_null(s, i + 1, va_arg(ap, const char *));
	}
	va_end(ap);
	return step_done(st, s);
}

/* A trigger's rule as stored: a rule's name, or what opened it otherwise ("capture"). */
static const char *trigger_rule(const struct store_trigger *t)
{
	return t->rule_name ? t->rule_name : wt_metric_name(t->rule);
}

int store_incident_open(struct watch_store *st, const struct store_trigger *t, double pre_s,
			double capture_s, const struct store_incident_info *info, int64_t *id)
{
	char held[64 * 24] = "[", host[256] = "";
	struct utsname u = {};
	size_t n = 1;
	unsigned int i;
	int rc;

	for (i = 0; i < t->nr_held && n < sizeof(held) - 32; i++)
		n += snprintf(held + n, sizeof(held) - n, "%s%.3f", i ? "," : "", t->held[i]);
	snprintf(held + n, sizeof(held) - n, "]");
	gethostname(host, sizeof(host) - 1);
	uname(&u);
	rc = store_run(st,
		       "INSERT INTO incidents (start_time, disk, dev, rule, value, threshold,"
		       " held_values, state, pre_s, capture_s, hostname, version, fs_bytes, kernel,"
		       " collectors, target)"
		       " VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?)",
		       "dsssddsddssssss", t->epoch_s, t->disk, t->dev, trigger_rule(t), t->value,
		       t->threshold, held, pre_s, capture_s, host, IOSPAN_VERSION, info->fs_bytes,
		       u.release, info->collectors,
		       info->target && *info->target ? info->target : NULL);
	if (rc)
		return rc;
	*id = sqlite3_last_insert_rowid(st->db);
	return store_trigger_add(st, *id, t);
}

int store_trigger_add(struct watch_store *st, int64_t id, const struct store_trigger *t)
{
	int rc;

	rc = store_run(st, "INSERT INTO triggers VALUES (?, ?, ?, ?, ?, ?, ?)", "idsssdd",
		       (int64_t)id, t->epoch_s, t->disk, t->dev, trigger_rule(t), t->value,
		       t->threshold);
	if (rc)
		return rc;
	/* The count of triggers an incident had, for list without a join. */
	return store_run(st,
			 "UPDATE incidents SET triggers = (SELECT count(*) FROM triggers"
			 " WHERE incident_id = ?1) WHERE id = ?1",
			 "i", (int64_t)id);
}

static void fill_driver(struct jw *jw, const void *arg)
{
	drv_json_disk_stats(jw, NULL, arg);
}

int store_sample_add(struct watch_store *st, int64_t id, const struct io_sample *smp,
		     const char *phase)
{
	const struct io_disk_sample *d;
	const struct ds_metrics *m;
	sqlite3_stmt *s = st->sample_stmt;
	char dev[24], line[512], *drv;
	int i, k, rc;

	for (i = 0; i < smp->nr; i++) {
		d = &smp->disks[i];
		m = &d->m;
		snprintf(dev, sizeof(dev), "%u:%u", d->dev.major, d->dev.minor);
		io_diskstats_line(&d->dev, line, sizeof(line));
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		k = 1;
		sqlite3_bind_int64(s, k++, id);
		sqlite3_bind_double(s, k++, smp->epoch_s);
		sqlite3_bind_double(s, k++, smp->uptime_s);
		sqlite3_bind_double(s, k++, smp->interval_s);
		sqlite3_bind_text(s, k++, phase, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, k++, d->dev.name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(s, k++, dev, -1, SQLITE_TRANSIENT);
		if (d->have_metrics) {
			const double v[] = {
				m->r_s,	     m->w_s,	  m->d_s,      m->f_s,	    m->rkB_s,
				m->wkB_s,    m->dkB_s,	  m->rrqm_s,   m->wrqm_s,   m->drqm_s,
				m->rrqm_pct, m->wrqm_pct, m->drqm_pct, m->r_await,  m->w_await,
				m->d_await,  m->f_await,  m->rareq_sz, m->wareq_sz, m->dareq_sz,
				m->aqu_sz,   m->util,
			};
			size_t j;

			for (j = 0; j < ARRAY_SIZE(v); j++)
				sqlite3_bind_double(s, k++, v[j]);
			sqlite3_bind_int64(s, k++, m->in_flight);
		} else {
			k += 23; /* the first sample of a disk has no interval: NULL metrics */
		}
		if (smp->psi.valid) {
			sqlite3_bind_double(s, k++, smp->psi.some_avg10);
			sqlite3_bind_double(s, k++, smp->psi.full_avg10);
			sqlite3_bind_int64(s, k++, smp->psi.some_total_us);
			sqlite3_bind_int64(s, k++, smp->psi.full_total_us);
		} else {
			k += 4;
		}
		sqlite3_bind_text(s, k++, line, -1, SQLITE_TRANSIENT);
		/* The driver's counters in the sample (top's collector), else NULL. */
		drv = d->have_drv ? jw_text(fill_driver, &d->drv, NULL) : NULL;
		if (drv)
			sqlite3_bind_text(s, k, drv, -1, SQLITE_TRANSIENT);
		k++;
		rc = sqlite3_step(s);
		free(drv);
		sqlite3_reset(s);
		if (rc != SQLITE_DONE)
			return sqlite_errno(rc);
	}
	return 0;
}

int store_incident_close(struct watch_store *st, int64_t id, double end_epoch_s, bool complete,
			 const char *end_reason)
{
	return store_run(
		st, "UPDATE incidents SET end_time = ?, state = ?, end_reason = ? WHERE id = ?",
		"dssi", end_epoch_s, complete ? "complete" : "incomplete", end_reason, (int64_t)id);
}

int store_recent_starts(struct watch_store *st, double since, double *out, int max, int *nr)
{
	sqlite3_stmt *s = NULL;
	int rc;

	*nr = 0;
	rc = store_prepare(st,
			   "SELECT start_time FROM incidents WHERE start_time > ?"
			   " ORDER BY start_time",
			   &s);
	if (rc)
		return rc;
	sqlite3_bind_double(s, 1, since);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && *nr < max)
		out[(*nr)++] = sqlite3_column_double(s, 0);
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sqlite_errno(rc);
}

static int64_t query_int(struct watch_store *st, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int64_t v = -1;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Bytes the database's live pages take (free pages are given back by the vacuum). */
static int64_t store_used_bytes(struct watch_store *st)
{
	return query_int(st, "SELECT (page_count - freelist_count) * page_size FROM"
			     " pragma_page_count, pragma_freelist_count, pragma_page_size");
}

static int delete_where(struct watch_store *st, const char *sql, double arg, int *deleted)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = store_prepare(st, sql, &s);
	if (rc)
		return rc;
	if (sqlite3_bind_parameter_count(s))
		sqlite3_bind_double(s, 1, arg);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return sqlite_errno(rc);
	*deleted += sqlite3_changes(st->db);
	return 0;
}

int store_prune(struct watch_store *st, const struct store_retention *r, double now_epoch_s,
		int *deleted)
{
	int ret = 0, before;

	*deleted = 0;
	ret = store_begin(st);
	if (ret)
		return ret;
	if (r->keep)
		ret = delete_where(st,
				   "DELETE FROM main.incidents WHERE state != 'open' AND id NOT IN"
				   " (SELECT id FROM incidents ORDER BY start_time DESC, id DESC"
				   " LIMIT ?)",
				   (double)r->keep, deleted);
	if (!ret && r->max_age_s > 0)
		ret = delete_where(st,
				   "DELETE FROM main.incidents WHERE state != 'open' AND"
				   " COALESCE(end_time, start_time) < ?",
				   now_epoch_s - r->max_age_s, deleted);
	/* Size: the oldest go first until the rest fits. */
	while (!ret && r->max_db_size && store_used_bytes(st) > (int64_t)r->max_db_size) {
		before = *deleted;
		ret = delete_where(st,
				   "DELETE FROM main.incidents WHERE id = (SELECT id FROM incidents"
				   " WHERE state != 'open' ORDER BY start_time, id LIMIT 1)",
				   0, deleted);
		if (*deleted == before)
			break; /* nothing closed is left: what is open stays */
	}
	if (ret) {
		store_rollback(st);
		return ret;
	}
	ret = store_commit(st);
	if (ret)
		return ret;
	if (*deleted) {
		/* Give the freed pages back to the file system. */
		exec(st, "PRAGMA incremental_vacuum");
		exec(st, "PRAGMA wal_checkpoint(TRUNCATE)");
	}
	return 0;
}

void store_json_fields(struct jw *jw, struct sqlite3_stmt *s)
{
	int i, n = sqlite3_column_count(s);

	for (i = 0; i < n; i++) {
		const char *name = sqlite3_column_name(s, i);

		if (!strcmp(name, "incident_id") || name[0] == '_')
			continue;
		switch (sqlite3_column_type(s, i)) {
		case SQLITE_INTEGER:
			jw_kv_int(jw, name, sqlite3_column_int64(s, i));
			break;
		case SQLITE_FLOAT:
			jw_kv_float(jw, name, sqlite3_column_double(s, i), 6);
			break;
		case SQLITE_NULL:
			jw_kv_null(jw, name);
			break;
		default:
			jw_kv_string(jw, name, (const char *)sqlite3_column_text(s, i));
		}
	}
}
