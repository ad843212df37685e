// SPDX-License-Identifier: GPL-2.0
/* iospan trace ops and stages: names and the --ops parser. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "array.h"
#include "ops.h"

static const char *const op_names[TRACE_OP_NR] = {
	[TRACE_OP_READ] = "read",
	[TRACE_OP_WRITE] = "write",
	[TRACE_OP_PREAD64] = "pread64",
	[TRACE_OP_PWRITE64] = "pwrite64",
	[TRACE_OP_READV] = "readv",
	[TRACE_OP_WRITEV] = "writev",
	[TRACE_OP_PREADV] = "preadv",
	[TRACE_OP_PWRITEV] = "pwritev",
	[TRACE_OP_PREADV2] = "preadv2",
	[TRACE_OP_PWRITEV2] = "pwritev2",
	[TRACE_OP_FSYNC] = "fsync",
	[TRACE_OP_FDATASYNC] = "fdatasync",
	[TRACE_OP_SYNC_FILE_RANGE] = "sync_file_range",
	[TRACE_OP_FAULT] = "fault",
	[TRACE_OP_WRITEBACK] = "writeback",
	[TRACE_OP_AIO_READ] = "aio_read",
	[TRACE_OP_AIO_WRITE] = "aio_write",
};

static const char *const stage_names[TRACE_ST_NR] = {
	[TRACE_ST_TOTAL] = "total",	  [TRACE_ST_PRE_BLOCK] = "pre_block",
	[TRACE_ST_THROTTLE] = "throttle", [TRACE_ST_Q2Q] = "q2q",
	[TRACE_ST_Q2G] = "q2g",		  [TRACE_ST_G2I] = "g2i",
	[TRACE_ST_I2D] = "i2d",		  [TRACE_ST_D2C] = "d2c",
	[TRACE_ST_Q2C] = "q2c",		  [TRACE_ST_POST_BLOCK] = "post_block",
	[TRACE_ST_OFFCPU] = "offcpu",	  [TRACE_ST_IOWAIT] = "iowait",
	[TRACE_ST_DRV_IN] = "drv_in",	  [TRACE_ST_DEVICE] = "device",
	[TRACE_ST_DRV_OUT] = "drv_out",
};

#define BIT(op) (1U << (op))
#define READS                                                                                      \
	(BIT(TRACE_OP_READ) | BIT(TRACE_OP_PREAD64) | BIT(TRACE_OP_READV) | BIT(TRACE_OP_PREADV) | \
	 BIT(TRACE_OP_PREADV2) | BIT(TRACE_OP_FAULT) | BIT(TRACE_OP_AIO_READ))
#define WRITES                                                                      \
	(BIT(TRACE_OP_WRITE) | BIT(TRACE_OP_PWRITE64) | BIT(TRACE_OP_WRITEV) |      \
	 BIT(TRACE_OP_PWRITEV) | BIT(TRACE_OP_PWRITEV2) | BIT(TRACE_OP_WRITEBACK) | \
	 BIT(TRACE_OP_AIO_WRITE))

static const struct {
	const char *name;
	uint32_t mask;
} aliases[] = {
	{"pread", BIT(TRACE_OP_PREAD64)},
	{"pwrite", BIT(TRACE_OP_PWRITE64)},
	{"aio", BIT(TRACE_OP_AIO_READ) | BIT(TRACE_OP_AIO_WRITE)},
	{"sync", BIT(TRACE_OP_FSYNC) | BIT(TRACE_OP_FDATASYNC) | BIT(TRACE_OP_SYNC_FILE_RANGE)},
	{"reads", READS},
	{"writes", WRITES},
	{"all", TRACE_OPS_ALL},
};

const char *trace_op_name(unsigned int op)
{
	return op < TRACE_OP_NR ? op_names[op] : "?";
}

const char *trace_stage_name(unsigned int stage)
{
	return stage < TRACE_ST_NR ? stage_names[stage] : "?";
}

/* The mask named by the @len bytes at @s, or 0 if none. */
static uint32_t lookup(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < TRACE_OP_NR; i++)
		if (strlen(op_names[i]) == len && !strncmp(op_names[i], s, len))
			return BIT(i);
	for (i = 0; i < ARRAY_SIZE(aliases); i++)
		if (strlen(aliases[i].name) == len && !strncmp(aliases[i].name, s, len))
			return aliases[i].mask;
	return 0;
}

int trace_ops_parse(const char *list, uint32_t *mask, const char **bad, size_t *bad_len)
{
	const char *p = list, *comma;
	uint32_t m = 0, one;
	size_t len;

	if (!list)
		return -EINVAL;
	for (;;) {
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		one = len ? lookup(p, len) : 0;
		if (!one) {
			if (bad)
				*bad = p;
			if (bad_len)
				*bad_len = len;
			return -EINVAL;
		}
		m |= one;
		if (!comma)
			break;
		p = comma + 1;
	}
	*mask = m;
	return 0;
}

const char *trace_ops_format(uint32_t mask, char *buf, size_t len)
{
	size_t used = 0;
	unsigned int i;
	int n;

	if (!len)
		return buf;
	buf[0] = '\0';
	if ((mask & TRACE_OPS_ALL) == TRACE_OPS_ALL) {
		snprintf(buf, len, "all");
		return buf;
	}
	for (i = 0; i < TRACE_OP_NR; i++) {
		if (!(mask & BIT(i)))
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", op_names[i]);
		if (n < 0 || (size_t)n >= len - used) {
			buf[used] = '\0'; /* whole names only */
			break;
		}
		used += n;
	}
	return buf;
}
