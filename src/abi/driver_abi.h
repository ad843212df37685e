/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Below the block layer: what the driver hooks (src/bpf/driver.bpf.h) tell about a
 * request, shared by the commands that take them (trace's stages, top's per-disk
 * driver counters) and user space (status in words: src/lib/util/drvstatus.h).
 * Fixed-size types, no implicit padding.
 */
#ifndef IOSPAN_DRIVER_ABI_H
#define IOSPAN_DRIVER_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Which driver a request went through (the hook that saw it). */
enum drv_kind {
	DRV_NONE,	/* no driver hook saw it (no hook here, or another driver) */
	DRV_NVME,	/* nvme:nvme_setup_cmd / nvme_complete_rq */
	DRV_SCSI,	/* scsi:scsi_dispatch_cmd_start / _done */
	DRV_VIRTIO_BLK, /* virtio_queue_rq / virtblk_request_done (fentry or kprobe) */
	DRV_NR,
};

/* What a driver hook saw. */
enum drv_what {
	DRV_SUBMIT,	    /* the command goes to the device */
	DRV_DONE,	    /* the driver took its completion */
	DRV_DISPATCH_ERROR, /* the driver refused to queue it (host busy...) */
	DRV_TIMEOUT,	    /* the command timed out (the driver's timeout handler ran) */
};

/*
 * A driver completion's status: for NVMe the completion's status field as the kernel
 * keeps it (nvme_req(rq)->status: SC bits 0-7, SCT bits 8-10, More 13, DNR 14); for
 * SCSI the command's result (status byte bits 0-7, host byte bits 16-23) and, after a
 * CHECK CONDITION, the sense key, ASC and ASCQ. 0 is success.
 */
struct drv_status {
	__u32 status;
	__u8 sense_key, asc, ascq;
	__u8 kind; /* enum drv_kind */
};

/*
 * Per-disk driver counters (per-CPU hash keyed by the disk's kernel dev_t): every
 * attempt of a command counts, a request retried by the block layer is requeued.
 */
struct drv_disk_stats {
	__u64 cmds;	       /* commands completed by the driver (attempts) */
	__u64 errors;	       /* of them, completed with an error status */
	__u64 timeouts;	       /* commands whose timeout handler ran */
	__u64 dispatch_errors; /* commands the driver refused to queue */
	__u64 requeues;	       /* requests the block layer requeued (retries, busy) */
	/* The last error's status (0: none yet); kind: the driver's, once it completed one. */
	struct drv_status last;
};

#endif
