/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The attach plan entries of the driver programs DRIVER_PROGS(p) makes
 * (src/bpf/driver.bpf.h), for a command's hook table: all optional, each naming the
 * module its target lives in when the driver is not built in. A driver whose module is
 * not loaded when the command starts is not followed (and says so).
 */
#ifndef IOSPAN_DRIVER_HOOKS_H
#define IOSPAN_DRIVER_HOOKS_H

#include <stdio.h>
#include <string.h>

#include "probe.h"

#define DRIVER_TP_HOOK(s, hook, pg, mod, what)                                 \
	{                                                                      \
		.name = hook, .optional = true, .module = mod, .figure = what, \
		.v = { {.prog = s->progs.pg},                                  \
		       {.prog = s->progs.pg##_raw} }                           \
	}
#define DRIVER_FN_HOOK(s, hook, first, pg, mod, what)                          \
	{                                                                      \
		.name = hook, .optional = true, .module = mod, .figure = what, \
		.v = { {.prog = s->progs.pg##_##first},                        \
		       {.prog = s->progs.pg##_kprobe} }                        \
	}

/* The hooks of DRIVER_ERROR_PROGS(p) in skeleton @s (DRIVER_NR_ERROR_HOOKS entries). */
#define DRIVER_ERROR_HOOKS(s, p)                                                                 \
	DRIVER_TP_HOOK(s, "nvme_complete_rq", p##_nvme_done, "nvme_core", "NVMe driver errors"), \
		DRIVER_FN_HOOK(s, "nvme_timeout", fentry, p##_nvme_timeout, "nvme",              \
			       "NVMe timeouts"),                                                 \
		DRIVER_TP_HOOK(s, "scsi_dispatch_cmd_done", p##_scsi_done, "scsi_mod",           \
			       "SCSI driver errors"),                                            \
		DRIVER_TP_HOOK(s, "scsi_dispatch_cmd_error", p##_scsi_error, "scsi_mod",         \
			       "SCSI dispatch errors"),                                          \
		DRIVER_TP_HOOK(s, "scsi_dispatch_cmd_timeout", p##_scsi_timeout, "scsi_mod",     \
			       "SCSI timeouts")
#define DRIVER_NR_ERROR_HOOKS 5

/* Every driver hook of DRIVER_PROGS(p) in skeleton @s (DRIVER_NR_HOOKS entries). */
/* clang-format off */
#define DRIVER_HOOKS(s, p)                                                                      \
	DRIVER_ERROR_HOOKS(s, p),                                                               \
	DRIVER_TP_HOOK(s, "nvme_setup_cmd", p##_nvme_submit, "nvme_core", "NVMe driver stages"),  \
	DRIVER_TP_HOOK(s, "scsi_dispatch_cmd_start", p##_scsi_start, "scsi_mod",                  \
		       "SCSI driver stages"),                                                     \
	DRIVER_FN_HOOK(s, "virtio_queue_rq", fentry, p##_vblk_submit, "virtio_blk",               \
		       "virtio-blk driver stages"),                                               \
	DRIVER_FN_HOOK(s, "virtio_queue_rqs", fentry, p##_vblk_batch, "virtio_blk",               \
		       "virtio-blk driver stages"),                                               \
	DRIVER_FN_HOOK(s, "blk_mq_complete_request", fentry, p##_vblk_done, "virtio_blk",         \
		       "virtio-blk driver stages")
/* clang-format on */
#define DRIVER_NR_HOOKS (DRIVER_NR_ERROR_HOOKS + 5)

/* virtio-blk's block major from /proc/devices ("254 virtblk"), 0 if not there. */
static inline unsigned int driver_virtblk_major(void)
{
	unsigned int major = 0, m;
	char line[128], name[64];
	FILE *f = fopen("/proc/devices", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%u %63s", &m, name) == 2 && !strcmp(name, "virtblk"))
			major = m;
	if (f)
		fclose(f);
	return major;
}

#endif
