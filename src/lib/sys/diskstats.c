// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "array.h"
#include "diskstats.h"
#include "printable.h"
#include "units.h"

/*
 * One line of @f into *@buf (grown as needed, to DS_MAX_LINE at most), without its
 * newline: 1 with a line, 0 at the end, -E2BIG for a longer line, -EILSEQ for a NUL
 * byte (binary data: /dev/zero would otherwise be read forever), -EIO, -ENOMEM.
 */
static int read_line(FILE *f, char **buf, size_t *cap)
{
	size_t n = 0;
	int c;

	for (;;) {
		c = getc_unlocked(f);
		if (c == EOF || c == '\n')
			break;
		if (!c)
			return -EILSEQ;
		if (n + 1 >= DS_MAX_LINE)
			return -E2BIG;
		if (n + 1 >= *cap) {
			size_t cap2 = *cap ? *cap * 2 : 256;
			char *p = realloc(*buf, cap2 < DS_MAX_LINE ? cap2 : DS_MAX_LINE);

			if (!p)
				return -ENOMEM;
			*buf = p;
			*cap = cap2 < DS_MAX_LINE ? cap2 : DS_MAX_LINE;
		}
		(*buf)[n++] = c;
	}
	if (c == EOF) {
		if (ferror(f))
			return -EIO;
		if (!n)
			return 0;
	}
	if (!*cap) {
		*buf = malloc(1);
		if (!*buf)
			return -ENOMEM;
		*cap = 1;
	}
	(*buf)[n] = '\0';
	return 1;
}

/* What separates fields: isspace() in the C locale, as sysstat's sscanf() reads them. */
#define DS_SPACE " \t\n\v\f\r"

/*
 * Next whitespace-separated token of *@p, NUL-terminated in @buf: 1, 0 at the end of the
 * line, -1 if it does not fit (its start is in @buf, for a message). A token too long
 * is not the end: taken for one, it let a line end early unnoticed (fuzz seed 678550429).
 */
static int next_token(const char **p, char *buf, size_t len)
{
	const char *s = *p + strspn(*p, DS_SPACE);
	size_t n = strcspn(s, DS_SPACE);
	int ret = 1;

	if (!n)
		return 0;
	if (n >= len) {
		n = len - 1;
		ret = -1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	*p = s + n;
	return ret;
}

/* A counter: digits only, so "-8" is refused rather than wrapped by strtoull. */
static bool parse_counter(const char *tok, unsigned long long *v)
{
	char *end;

	if (!isdigit((unsigned char)tok[0]))
		return false;
	errno = 0;
	*v = strtoull(tok, &end, 10);
	return !errno && !*end;
}

int ds_parse_line(const char *line, struct ds_dev *dev)
{
	unsigned long long v;
	char tok[DISK_NAME_LEN];
	const char *p = line;
	int n = 0, t;

	memset(dev, 0, sizeof(*dev));
	if (next_token(&p, tok, sizeof(tok)) != 1 || !parse_counter(tok, &v) || v > UINT32_MAX)
		return -EINVAL;
	dev->major = v;
	if (next_token(&p, tok, sizeof(tok)) != 1 || !parse_counter(tok, &v) || v > UINT32_MAX)
		return -EINVAL;
	dev->minor = v;
	if (next_token(&p, dev->name, sizeof(dev->name)) != 1)
		return -EINVAL;
	while ((t = next_token(&p, tok, sizeof(tok)))) {
		if (t < 0 || !parse_counter(tok, &v))
			return -EINVAL;
		/* Counters of a later kernel than this reader knows: checked, not kept. */
		if (n < DS_NR_FIELDS)
			dev->f[n] = v;
		n++;
	}
	/*
	 * 11, 15 or 17 counters (14, 18 or 20 fields in all), depending on the kernel. Any
	 * other count is read by its longest complete group, as sysstat does; the counters
	 * of an incomplete group are cleared, so they count as absent (zero).
	 */
	if (n < 11)
		return -EINVAL;
	dev->nr_fields = n >= 17 ? 17 : n >= 15 ? 15 : 11;
	for (n = dev->nr_fields; n < DS_NR_FIELDS; n++)
		dev->f[n] = 0;
	return 0;
}

void ds_snapshot_init(struct ds_snapshot *s)
{
	memset(s, 0, sizeof(*s));
}

void ds_snapshot_free(struct ds_snapshot *s)
{
	free(s->devs);
	ds_snapshot_init(s);
}

void ds_snapshot_clear(struct ds_snapshot *s)
{
	s->nr = 0;
	s->uptime_s = s->epoch_s = 0;
}

int ds_snapshot_add(struct ds_snapshot *s, const struct ds_dev *dev)
{
	if (ARRAY_RESERVE(s->devs, s->nr, s->cap, 32))
		return -ENOMEM;
	s->devs[s->nr++] = *dev;
	return 0;
}

const struct ds_dev *ds_snapshot_find(const struct ds_snapshot *s, unsigned int major,
				      unsigned int minor, const char *name)
{
	size_t i;

	/* Match the name too: a loop device detached and reattached keeps MAJ:MIN. */
	for (i = 0; i < s->nr; i++)
		if (s->devs[i].major == major && s->devs[i].minor == minor &&
		    !strcmp(s->devs[i].name, name))
			return &s->devs[i];
	return NULL;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int ds_read(const char *path, struct ds_snapshot *s)
{
	char *line = NULL;
	size_t cap = 0;
	struct ds_dev dev;
	FILE *f;
	int ret;

	f = fopen(path, "r");
	if (!f)
		return -errno;
	ds_snapshot_clear(s);
	/* Stamp right after opening: the kernel formats the file on the first read. */
	s->uptime_s = clock_s(CLOCK_BOOTTIME);
	s->epoch_s = clock_s(CLOCK_REALTIME);
	/* Microseconds, as recordings keep them: a replay computes exactly the same numbers. */
	s->uptime_s = round(s->uptime_s * 1e6) / 1e6;
	s->epoch_s = round(s->epoch_s * 1e6) / 1e6;
	while ((ret = read_line(f, &line, &cap)) == 1) {
		if (ds_parse_line(line, &dev))
			continue;
		dev.partition = disk_is_partition(dev.major, dev.minor);
		ret = ds_snapshot_add(s, &dev);
		if (ret)
			break;
	}
	fclose(f);
	free(line);
	return ret;
}

/* The time counters: milliseconds the kernel prints as 32-bit numbers, which wrap. */
static bool is_ms_counter(int f)
{
	return f == DS_RD_TICKS || f == DS_WR_TICKS || f == DS_IO_TICKS || f == DS_TIME_IN_QUEUE ||
	       f == DS_DC_TICKS || f == DS_FL_TICKS;
}

/* A counter's fall from @before to @now is a 32-bit wrap, not a restart. */
static bool wrapped(int f, uint64_t before, uint64_t now)
{
	return is_ms_counter(f) && before <= UINT32_MAX && before - now > (1ULL << 31);
}

bool ds_restarted(const struct ds_dev *prev, const struct ds_dev *cur)
{
	int f;

	for (f = 0; f < DS_NR_FIELDS; f++) {
		if (f == DS_IN_FLIGHT || cur->f[f] >= prev->f[f])
			continue;
		if (!wrapped(f, prev->f[f], cur->f[f]))
			return true;
	}
	return false;
}

/* Increase of a counter since @prev (NULL: since zero), a 32-bit wrap undone. */
static double delta(const struct ds_dev *prev, const struct ds_dev *cur, enum ds_field f)
{
	uint64_t before = prev ? prev->f[f] : 0;

	if (cur->f[f] >= before)
		return (double)(cur->f[f] - before);
	/* Only a wrap is left here (ds_compute drops a @prev that restarted). */
	return (double)(cur->f[f] + (1ULL << 32) - before);
}

static double ratio(double num, double den)
{
	return den > 0 ? num / den : 0.0;
}

static void compute_metrics(const struct ds_dev *prev, const struct ds_dev *cur, double interval_s,
			    struct ds_metrics *m)
{
	double rd_ios = delta(prev, cur, DS_RD_IOS), wr_ios = delta(prev, cur, DS_WR_IOS);
	double dc_ios = delta(prev, cur, DS_DC_IOS), fl_ios = delta(prev, cur, DS_FL_IOS);
	double rd_mrg = delta(prev, cur, DS_RD_MERGES), wr_mrg = delta(prev, cur, DS_WR_MERGES);
	double dc_mrg = delta(prev, cur, DS_DC_MERGES);
	double rd_sec = delta(prev, cur, DS_RD_SECTORS), wr_sec = delta(prev, cur, DS_WR_SECTORS);
	double dc_sec = delta(prev, cur, DS_DC_SECTORS);
	double interval_ms = interval_s * 1000.0;

	memset(m, 0, sizeof(*m));
	m->in_flight = cur->f[DS_IN_FLIGHT];
	m->ios = (uint64_t)(rd_ios + wr_ios + dc_ios + fl_ios);
	if (interval_s <= 0)
		return;

	m->r_s = rd_ios / interval_s;
	m->w_s = wr_ios / interval_s;
	m->d_s = dc_ios / interval_s;
	m->f_s = fl_ios / interval_s;
	/* Sectors are always 512 bytes in diskstats, whatever the device's block size. */
	m->rkB_s = rd_sec / 2 / interval_s;
	m->wkB_s = wr_sec / 2 / interval_s;
	m->dkB_s = dc_sec / 2 / interval_s;
	m->rrqm_s = rd_mrg / interval_s;
	m->wrqm_s = wr_mrg / interval_s;
	m->drqm_s = dc_mrg / interval_s;
	m->rrqm_pct = ratio(rd_mrg, rd_mrg + rd_ios) * 100;
	m->wrqm_pct = ratio(wr_mrg, wr_mrg + wr_ios) * 100;
	m->drqm_pct = ratio(dc_mrg, dc_mrg + dc_ios) * 100;
	m->r_await = ratio(delta(prev, cur, DS_RD_TICKS), rd_ios);
	m->w_await = ratio(delta(prev, cur, DS_WR_TICKS), wr_ios);
	m->d_await = ratio(delta(prev, cur, DS_DC_TICKS), dc_ios);
	m->f_await = ratio(delta(prev, cur, DS_FL_TICKS), fl_ios);
	m->rareq_sz = ratio(rd_sec / 2, rd_ios);
	m->wareq_sz = ratio(wr_sec / 2, wr_ios);
	m->dareq_sz = ratio(dc_sec / 2, dc_ios);
	/* time_in_queue is in-flight-weighted ms: per ms of wall time it is the queue depth. */
	m->aqu_sz = delta(prev, cur, DS_TIME_IN_QUEUE) / interval_ms;
	/* io_ticks is ms with at least one request in flight; sampling skew can exceed 100%. */
	m->util = delta(prev, cur, DS_IO_TICKS) / interval_ms * 100;
	if (m->util > 100)
		m->util = 100;
}

void ds_compute(const struct ds_dev *prev, const struct ds_dev *cur, double interval_s,
		struct ds_metrics *m)
{
	bool restarted = prev && ds_restarted(prev, cur);

	compute_metrics(restarted ? NULL : prev, cur, interval_s, m);
	m->restarted = restarted;
}

int ds_record_header(FILE *out)
{
	fprintf(out, "# iospan diskstats recording: see docs/recording-format.md\n"
		     "iospan-diskstats 1\n");
	return ferror(out) ? -EIO : 0;
}

int ds_record_snapshot(FILE *out, const struct ds_snapshot *s, bool with_partitions)
{
	const struct ds_dev *d;
	size_t i;
	int j;

	if (with_partitions)
		for (i = 0; i < s->nr; i++)
			if (s->devs[i].partition)
				fprintf(out, "partition %u %u\n", s->devs[i].major, s->devs[i].minor);
	fprintf(out, "snapshot %.6f %.6f\n", s->uptime_s, s->epoch_s);
	for (i = 0; i < s->nr; i++) {
		d = &s->devs[i];
		fprintf(out, "%4u %7u %s", d->major, d->minor, d->name);
		for (j = 0; j < d->nr_fields; j++)
			fprintf(out, " %llu", (unsigned long long)d->f[j]);
		fputc('\n', out);
	}
	fflush(out);
	return ferror(out) ? -EIO : 0;
}

int ds_reader_open(struct ds_reader *r, const char *path)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->path = path;
	r->in = fopen(path, "r");
	if (!r->in)
		return -errno;
	if (!fstat(fileno(r->in), &st) && S_ISDIR(st.st_mode)) {
		fclose(r->in);
		r->in = NULL;
		return -EISDIR;
	}
	return 0;
}

void ds_reader_close(struct ds_reader *r)
{
	if (r->in)
		fclose(r->in);
	free(r->line);
	free(r->pending);
	free(r->parts);
	memset(r, 0, sizeof(*r));
}

static int reader_error(struct ds_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int reader_error(struct ds_reader *r, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	n = snprintf(r->error, sizeof(r->error), "%s line %u: ", printable(r->path), r->line_no);
	if (n < sizeof(r->error)) {
		va_start(ap, fmt);
		vsnprintf(r->error + n, sizeof(r->error) - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool reader_is_partition(const struct ds_reader *r, unsigned int major, unsigned int minor)
{
	uint64_t key = (uint64_t)major << 20 | minor;
	size_t i;

	for (i = 0; i < r->nr_parts; i++)
		if (r->parts[i] == key)
			return true;
	return false;
}

static int reader_add_partition(struct ds_reader *r, unsigned int major, unsigned int minor)
{
	if (reader_is_partition(r, major, minor))
		return 0;
	if (r->nr_parts == r->cap_parts) {
		size_t cap = r->cap_parts ? r->cap_parts * 2 : 16;
		uint64_t *parts = realloc(r->parts, cap * sizeof(*parts));

		if (!parts)
			return -ENOMEM;
		r->parts = parts;
		r->cap_parts = cap;
	}
	r->parts[r->nr_parts++] = (uint64_t)major << 20 | minor;
	return 0;
}

/* A time of a snapshot line: a decimal number of seconds, nothing else. */
static bool parse_seconds(const char *tok, double *v)
{
	size_t n = scan_decimal(tok, v);

	return n && !tok[n];
}

/*
 * Parses "snapshot UPTIME [EPOCH]" into @s's stamps and checks them against the
 * snapshot before: see docs/recording-format.md for what each case means.
 */
static int parse_snapshot_line(struct ds_reader *r, const char *line, struct ds_snapshot *s)
{
	char tok[64];
	const char *p = line;
	double d_up;
	bool epochs;
	int t;

	if (next_token(&p, tok, sizeof(tok)) != 1 || strcmp(tok, "snapshot") ||
	    next_token(&p, tok, sizeof(tok)) != 1 || !parse_seconds(tok, &s->uptime_s))
		return reader_error(r, "expected 'snapshot UPTIME_S [EPOCH_S]', times in decimal "
				       "seconds (no sign, exponent, nan or inf)");
	s->epoch_s = 0;
	t = next_token(&p, tok, sizeof(tok));
	if (t < 0 || (t > 0 && !parse_seconds(tok, &s->epoch_s)))
		return reader_error(r, "expected 'snapshot UPTIME_S [EPOCH_S]', times in decimal "
				       "seconds (no sign, exponent, nan or inf)");
	if (next_token(&p, tok, sizeof(tok)))
		return reader_error(r, "expected 'snapshot UPTIME_S [EPOCH_S]': '%s' after them",
				    printable(tok));
	if (r->have_prev) {
		d_up = s->uptime_s - r->prev_uptime_s;
		/* The wall clock is compared only when both snapshots give it (0: not given). */
		epochs = s->epoch_s > 0 && r->prev_epoch_s > 0;
		if (d_up == 0)
			return reader_error(r,
					    "snapshot at the uptime of the one before (%.6f s): "
					    "a repeated snapshot",
					    s->uptime_s);
		if (d_up < 0 && epochs && s->epoch_s <= r->prev_epoch_s)
			return reader_error(r,
					    "snapshot times go backwards (uptime %.6f s after "
					    "%.6f s, and the wall clock too)",
					    s->uptime_s, r->prev_uptime_s);
		if (d_up < 0)
			r->rebooted = true;
		else if (epochs && s->epoch_s < r->prev_epoch_s)
			r->clock_set_back = true;
	}
	r->have_prev = true;
	r->prev_uptime_s = s->uptime_s;
	r->prev_epoch_s = s->epoch_s;
	return 0;
}

/* "partition MAJ MIN", the numbers decimal as in /proc/diskstats. */
static int parse_partition_line(const char *line, unsigned int *major, unsigned int *minor)
{
	unsigned long long maj, min;
	const char *p = line;
	char tok[24];

	if (next_token(&p, tok, sizeof(tok)) != 1 || next_token(&p, tok, sizeof(tok)) != 1 ||
	    !parse_counter(tok, &maj) || maj > UINT32_MAX ||
	    next_token(&p, tok, sizeof(tok)) != 1 || !parse_counter(tok, &min) ||
	    min > UINT32_MAX || next_token(&p, tok, sizeof(tok)))
		return -EINVAL;
	*major = maj;
	*minor = min;
	return 0;
}

/* The first word of @line is @word, followed by a blank or the end. */
static bool keyword(const char *line, const char *word)
{
	size_t n = strlen(word);

	return !strncmp(line, word, n) && (!line[n] || isspace((unsigned char)line[n]));
}

int ds_reader_next(struct ds_reader *r, struct ds_snapshot *s)
{
	unsigned int major, minor;
	bool in_snapshot = false;
	struct ds_dev dev;
	char *line;
	size_t n;
	int ret;

	ds_snapshot_clear(s);
	r->rebooted = r->clock_set_back = false;
	if (r->pending) {
		ret = parse_snapshot_line(r, r->pending, s);
		free(r->pending);
		r->pending = NULL;
		if (ret)
			return ret;
		in_snapshot = true;
	}
	for (;;) {
		ret = read_line(r->in, &r->line, &r->line_cap);
		if (ret == 0)
			break;
		r->line_no++;
		if (ret == -E2BIG)
			return reader_error(r, "line longer than %d bytes: not a recording",
					    DS_MAX_LINE);
		if (ret == -EILSEQ)
			return reader_error(r, "NUL byte: binary data, not a recording");
		if (ret == -EIO)
			return reader_error(r, "read error: %s", strerror(errno));
		if (ret < 0)
			return ret;
		line = r->line + strspn(r->line, DS_SPACE);
		/*
		 * A CRLF line ends at its CR; a CR inside a line separates fields as any
		 * other white space does (cutting the line there dropped what followed).
		 */
		n = strlen(line);
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		if (!*line || *line == '#')
			continue;
		if (!r->header_seen) {
			if (strcmp(line, "iospan-diskstats 1"))
				return reader_error(r, "not an iospan diskstats recording "
						       "(expected 'iospan-diskstats 1')");
			r->header_seen = true;
			continue;
		}
		if (keyword(line, "partition")) {
			if (parse_partition_line(line, &major, &minor))
				return reader_error(r, "expected 'partition MAJ MIN'");
			ret = reader_add_partition(r, major, minor);
			if (ret)
				return ret;
			continue;
		}
		if (keyword(line, "snapshot")) {
			if (in_snapshot) {
				/* The next snapshot starts: keep its line for the next call. */
				r->pending = strdup(line);
				if (!r->pending)
					return -ENOMEM;
				break;
			}
			ret = parse_snapshot_line(r, line, s);
			if (ret)
				return ret;
			in_snapshot = true;
			continue;
		}
		if (!in_snapshot)
			return reader_error(r, "device line before the first 'snapshot' line");
		if (ds_parse_line(line, &dev))
			return reader_error(r, "not a diskstats line (MAJ MIN NAME and 11 or more "
					       "counters: 14 to 20 fields)");
		ret = ds_snapshot_add(s, &dev);
		if (ret)
			return ret;
	}
	if (!r->header_seen)
		return reader_error(r, "empty recording (expected 'iospan-diskstats 1')");
	if (!in_snapshot)
		return 0;
	/* Partition lines may come anywhere; apply what is known by now. */
	for (size_t i = 0; i < s->nr; i++)
		s->devs[i].partition = reader_is_partition(r, s->devs[i].major, s->devs[i].minor);
	return 1;
}
