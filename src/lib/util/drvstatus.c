// SPDX-License-Identifier: GPL-2.0
/* A driver's completion status in words: NVMe (Base Specification), SCSI (SAM, SPC). */
#include <stdbool.h>
#include <stdio.h>

#include "array.h"
#include "drvstatus.h"
#include "json.h"

const char *drv_kind_name(uint32_t kind)
{
	static const char *const names[DRV_NR] = {
		[DRV_NVME] = "nvme",
		[DRV_SCSI] = "scsi",
		[DRV_VIRTIO_BLK] = "virtio-blk",
	};

	return kind < DRV_NR ? names[kind] : NULL;
}

struct code_name {
	unsigned int code;
	const char *name;
};

static const char *code_find(const struct code_name *t, size_t n, unsigned int code)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

/* NVMe status: (SCT << 8) | SC, as nvme_req(rq)->status keeps them. */
static const struct code_name nvme_codes[] = {
	{0x001, "invalid command opcode"},
	{0x002, "invalid field in command"},
	{0x003, "command id conflict"},
	{0x004, "data transfer error"},
	{0x005, "aborted: power loss"},
	{0x006, "internal error"},
	{0x007, "command abort requested"},
	{0x008, "aborted: SQ deletion"},
	{0x009, "aborted: failed fused command"},
	{0x00a, "aborted: missing fused command"},
	{0x00b, "invalid namespace or format"},
	{0x00c, "command sequence error"},
	{0x00d, "invalid SGL segment descriptor"},
	{0x010, "invalid use of controller memory buffer"},
	{0x011, "PRP offset invalid"},
	{0x014, "operation denied"},
	{0x015, "SGL offset invalid"},
	{0x019, "host identifier inconsistent format"},
	{0x01a, "keep alive timer expired"},
	{0x01e, "command interrupted"},
	{0x020, "namespace is write protected"},
	{0x021, "command interrupted"},
	{0x022, "transient transport error"},
	{0x080, "LBA out of range"},
	{0x081, "capacity exceeded"},
	{0x082, "namespace not ready"},
	{0x083, "reservation conflict"},
	{0x084, "format in progress"},
	{0x1bd, "zone boundary error"},
	{0x1be, "zone is full"},
	{0x1bf, "zone is read only"},
	{0x1c0, "zone is offline"},
	{0x280, "write fault"},
	{0x281, "unrecovered read error"},
	{0x282, "end-to-end guard check error"},
	{0x283, "end-to-end application tag check error"},
	{0x284, "end-to-end reference tag check error"},
	{0x285, "compare failure"},
	{0x286, "access denied"},
	{0x287, "deallocated or unwritten logical block"},
	{0x300, "internal path error"},
	{0x301, "asymmetric access persistent loss"},
	{0x302, "asymmetric access inaccessible"},
	{0x303, "asymmetric access transition"},
	{0x360, "controller pathing error"},
	{0x370, "host pathing error"},
	{0x371, "aborted by host"},
};

/* SCSI host bytes (the kernel's DID_*). */
static const char *const scsi_hosts[] = {
	"DID_OK",
	"DID_NO_CONNECT",
	"DID_BUS_BUSY",
	"DID_TIME_OUT",
	"DID_BAD_TARGET",
	"DID_ABORT",
	"DID_PARITY",
	"DID_ERROR",
	"DID_RESET",
	"DID_BAD_INTR",
	"DID_PASSTHROUGH",
	"DID_SOFT_ERROR",
	"DID_IMM_RETRY",
	"DID_REQUEUE",
	"DID_TRANSPORT_DISRUPTED",
	"DID_TRANSPORT_FAILFAST",
};

/* SAM status bytes. */
static const struct code_name scsi_statuses[] = {
	{0x02, "check condition"},	{0x04, "condition met"},      {0x08, "busy"},
	{0x18, "reservation conflict"}, {0x22, "command terminated"}, {0x28, "task set full"},
	{0x30, "ACA active"},		{0x40, "task aborted"},
};

/* SPC sense keys. */
static const char *const sense_keys[16] = {
	"no sense",	  "recovered error", "not ready",      "medium error",
	"hardware error", "illegal request", "unit attention", "data protect",
	"blank check",	  "vendor specific", "copy aborted",   "aborted command",
	"reserved (0xc)", "volume overflow", "miscompare",     "completed",
};

static const char *nvme_text(uint32_t status, char *buf, size_t len)
{
	unsigned int code = status & 0x7ff;
	const char *name = code_find(nvme_codes, ARRAY_SIZE(nvme_codes), code);

	snprintf(buf, len, "%s (sct 0x%x sc 0x%02x%s%s)", name ? name : "status", code >> 8,
		 code & 0xff, status & 0x2000 ? ", more" : "", status & 0x4000 ? ", dnr" : "");
	return buf;
}

static const char *scsi_text(const struct drv_status *st, char *buf, size_t len)
{
	unsigned int host = (st->status >> 16) & 0xff, status = st->status & 0xff;
	const char *sname = code_find(scsi_statuses, ARRAY_SIZE(scsi_statuses), status);
	const char *sep = "";
	size_t n = 0;

	if (host < ARRAY_SIZE(scsi_hosts) && host)
		n = snprintf(buf, len, "host %s", scsi_hosts[host]);
	else if (host)
		n = snprintf(buf, len, "host 0x%02x", host);
	if (n >= len)
		return buf;
	if (n)
		sep = ", ";
	if (status == 0x02)
		snprintf(buf + n, len - n, "%scheck condition: %s (asc 0x%02x ascq 0x%02x)", sep,
			 sense_keys[st->sense_key & 0xf], st->asc, st->ascq);
	else if (sname)
		snprintf(buf + n, len - n, "%sstatus %s", sep, sname);
	else if (status)
		snprintf(buf + n, len - n, "%sstatus 0x%02x", sep, status);
	return buf;
}

const char *drv_status_text(const struct drv_status *st, char *buf, size_t len)
{
	if (!len)
		return buf;
	buf[0] = '\0';
	if (!st->status) {
		snprintf(buf, len, "ok");
		return buf;
	}
	if (st->kind == DRV_NVME)
		return nvme_text(st->status, buf, len);
	if (st->kind == DRV_SCSI)
		return scsi_text(st, buf, len);
	snprintf(buf, len, "status 0x%x", st->status);
	return buf;
}

void drv_json_disk_stats(struct jw *jw, const char *key, const struct drv_disk_stats *s)
{
	bool known = s->last.kind != DRV_NONE;
	char text[160];

	if (key)
		jw_kv_object(jw, key);
	else
		jw_start_object(jw);
	jw_kv_string_or_null(jw, "kind", known ? drv_kind_name(s->last.kind) : NULL);
	jw_kv_uint(jw, "requeues", s->requeues);
	jw_kv_uint_or_null(jw, "commands", known, s->cmds);
	jw_kv_uint_or_null(jw, "errors", known, s->errors);
	jw_kv_uint_or_null(jw, "timeouts", known, s->timeouts);
	jw_kv_uint_or_null(jw, "dispatch_errors", known, s->dispatch_errors);
	if (s->last.status) {
		jw_kv_uint(jw, "last_error_status", s->last.status);
		jw_kv_string(jw, "last_error", drv_status_text(&s->last, text, sizeof(text)));
	} else {
		jw_kv_null(jw, "last_error_status");
		jw_kv_null(jw, "last_error");
	}
	jw_end_object(jw);
}

void drv_disk_stats_add(struct drv_disk_stats *s, const struct drv_disk_stats *v)
{
	s->cmds += v->cmds;
	s->errors += v->errors;
	s->timeouts += v->timeouts;
	s->dispatch_errors += v->dispatch_errors;
	s->requeues += v->requeues;
	if (v->last.status)
		s->last = v->last;
	else if (v->last.kind && !s->last.kind)
		s->last.kind = v->last.kind;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

void drv_disk_stats_since(struct drv_disk_stats *s, const struct drv_disk_stats *prev)
{
	s->cmds = sub0(s->cmds, prev->cmds);
	s->errors = sub0(s->errors, prev->errors);
	s->timeouts = sub0(s->timeouts, prev->timeouts);
	s->dispatch_errors = sub0(s->dispatch_errors, prev->dispatch_errors);
	s->requeues = sub0(s->requeues, prev->requeues);
}
