/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A driver's completion status in words (src/abi/driver_abi.h): NVMe status codes,
 * SCSI host bytes, status bytes and sense keys, as the specifications name them.
 */
#ifndef IOSPAN_DRVSTATUS_H
#define IOSPAN_DRVSTATUS_H

#include <stddef.h>
#include <stdint.h>

#include "driver_abi.h"

/* "nvme", "scsi", "virtio-blk", or NULL for DRV_NONE and unknown kinds. */
const char *drv_kind_name(uint32_t kind);
/*
 * @st in words into @buf ("ok"; "unrecovered read error (sct 0x2 sc 0x81, dnr)";
 * "check condition: aborted command (asc 0x00 ascq 0x06)"; "host DID_TIME_OUT"):
 * returns @buf.
 */
const char *drv_status_text(const struct drv_status *st, char *buf, size_t len);

/* Adds a CPU's driver counters @v to @s (the last error: any CPU's that has one). */
void drv_disk_stats_add(struct drv_disk_stats *s, const struct drv_disk_stats *v);
/* @s less the earlier @prev of the same disk: what changed between (the last error stays). */
void drv_disk_stats_since(struct drv_disk_stats *s, const struct drv_disk_stats *prev);

struct jw;
/*
 * A disk's driver counters as member @key of the open object (NULL: an object of its
 * own): requeues (the block layer's, always known), and the driver's commands, errors,
 * timeouts, refusals and last error where a driver hook completed a command (else
 * "kind": null and those null).
 */
void drv_json_disk_stats(struct jw *jw, const char *key, const struct drv_disk_stats *s);

#endif
