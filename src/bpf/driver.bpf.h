/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Driver hooks below the block layer, for the commands that split a request's device
 * time or count the driver's trouble: NVMe and SCSI tracepoints, virtio-blk's queue and
 * completion functions (it has no tracepoints). Each program finds the struct request
 * the driver works on and calls the includer's drv_seen() (declared here, defined by
 * the includer before it expands DRIVER_PROGS()) with the request's address as a number,
 * enum drv_what, the status (completions) and the NVMe command id. Everything is read
 * with probe reads from numbers (kaddr()): the tracepoints are in modules (nvme_core,
 * scsi_mod, virtio_blk) on some kernels and built in on others, and the types below come
 * from whichever BTF has them (CO-RE looks in the modules' too); a type no BTF has reads
 * as unknown.
 * DRIVER_PROGS(p) makes the programs p_nvme_submit, p_nvme_done, p_nvme_timeout,
 * p_scsi_start, p_scsi_done, p_scsi_error, p_scsi_timeout, p_vblk_submit and
 * p_vblk_done with their fallbacks, DRIVER_ERROR_PROGS(p) those of completions and
 * errors only; user space lists them with DRIVER_HOOKS() and DRIVER_ERROR_HOOKS()
 * (src/lib/bpf/driver_hooks.h).
 */
#ifndef IOSPAN_DRIVER_BPF_H
#define IOSPAN_DRIVER_BPF_H

#include "driver_abi.h"

static __always_inline int drv_seen(__u64 rq, __u32 what, struct drv_status *st, __u32 cid,
				    __u64 now);

/* nvme_req(rq): the first member of every NVMe transport's request pdu. */
struct nvme_request___iospan {
	__u8 retries;
	__u16 status;
} __attribute__((preserve_access_index));

/* The SCSI command of a request (its pdu), and its request field before 5.16. */
struct scsi_cmnd___iospan {
	int result;
	unsigned char *sense_buffer;
} __attribute__((preserve_access_index));

struct scsi_cmnd___with_request {
	struct request *request;
} __attribute__((preserve_access_index));

/* 6.3+: the list virtio_queue_rqs() takes (before: a struct request **). */
struct rq_list___iospan {
	struct request *head;
} __attribute__((preserve_access_index));

#define SAM_STAT_CHECK_CONDITION 0x02

/*
 * virtio-blk's block major (/proc/devices "virtblk"), set by user space; 0 unknown.
 * Every blk-mq driver's completion passes virtio-blk's completion hook: with it, only
 * virtio-blk's disks' do.
 */
const volatile __u32 drv_virtblk_major = 0;

/* The request behind @cmd: scsi_cmd_to_rq() (the pdu follows the request), or ->request. */
static __always_inline __u64 drv_scsi_rq(__u64 cmd)
{
	struct scsi_cmnd___with_request *old = (void *)cmd;

	if (bpf_core_field_exists(old->request))
		return (__u64)BPF_CORE_READ(old, request);
	return cmd - bpf_core_type_size(struct request);
}

/* The request's pdu: what blk_mq_rq_to_pdu() gives. */
static __always_inline __u64 drv_rq_pdu(__u64 rq)
{
	return rq + bpf_core_type_size(struct request);
}

static __always_inline int drv_nvme_submit(__u64 rq, __u64 cmd)
{
	__u64 now = bpf_ktime_get_ns();
	struct drv_status st = {.kind = DRV_NVME};
	__u16 cid = 0;

	rq = kaddr(rq);
	cmd = kaddr(cmd);
	/* struct nvme_command is the NVMe submission queue entry: command id at byte 2. */
	bpf_probe_read_kernel(&cid, sizeof(cid), (void *)(cmd + 2));
	return drv_seen(rq, DRV_SUBMIT, &st, cid, now);
}

static __always_inline int drv_nvme_done(__u64 rq)
{
	__u64 now = bpf_ktime_get_ns();
	struct drv_status st = {.kind = DRV_NVME};
	struct nvme_request___iospan *nr;

	rq = kaddr(rq);
	nr = (void *)drv_rq_pdu(rq);

	if (bpf_core_type_exists(struct nvme_request___iospan))
		st.status = BPF_CORE_READ(nr, status);
	return drv_seen(rq, DRV_DONE, &st, 0, now);
}

static __always_inline int drv_scsi(__u64 cmd, __u32 what)
{
	__u64 now = bpf_ktime_get_ns();
	struct drv_status st = {.kind = DRV_SCSI};
	struct scsi_cmnd___iospan *c;
	unsigned char sense[14] = {};
	unsigned char *buf;

	cmd = kaddr(cmd);
	c = (void *)cmd;

	if (what == DRV_DONE && bpf_core_type_exists(struct scsi_cmnd___iospan)) {
		st.status = BPF_CORE_READ(c, result);
		buf = BPF_CORE_READ(c, sense_buffer);
		if ((st.status & 0xff) == SAM_STAT_CHECK_CONDITION && buf &&
		    !bpf_probe_read_kernel(sense, sizeof(sense), buf)) {
			/* Fixed format (0x70, 0x71) or descriptor format (0x72, 0x73). */
			if ((sense[0] & 0x7e) == 0x70) {
				st.sense_key = sense[2] & 0xf;
				st.asc = sense[12];
				st.ascq = sense[13];
			} else if ((sense[0] & 0x7e) == 0x72) {
				st.sense_key = sense[1] & 0xf;
				st.asc = sense[2];
				st.ascq = sense[3];
			}
		}
	}
	return drv_seen(drv_scsi_rq(cmd), what, &st, 0, now);
}

static __always_inline int drv_vblk(__u64 rq, __u32 what)
{
	__u64 now = bpf_ktime_get_ns();
	struct drv_status st = {.kind = DRV_VIRTIO_BLK};

	if (what == DRV_DONE && drv_virtblk_major &&
	    BPF_CORE_READ((struct request *)rq, q, disk, major) != drv_virtblk_major)
		return 0;
	return drv_seen(rq, what, &st, 0, now);
}

/* A batch virtio_queue_rqs() submits (a plug's requests without a scheduler): each. */
struct drv_batch {
	__u64 rq, now;
};

static int drv_vblk_batch_one(__u32 i, void *ctx)
{
	struct drv_batch *b = ctx;
	struct drv_status st = {.kind = DRV_VIRTIO_BLK};
	/* Out of the CO-RE read's expression, which would relocate b's field too. */
	struct request *rq = (void *)b->rq;

	if (!rq)
		return 1;
	drv_seen((__u64)rq, DRV_SUBMIT, &st, 0, b->now);
	b->rq = (__u64)BPF_CORE_READ(rq, rq_next);
	return 0;
}

/* @list: the argument of virtio_queue_rqs(), a struct rq_list * or struct request **. */
static __always_inline int drv_vblk_batch(__u64 list)
{
	struct drv_batch b = {.now = bpf_ktime_get_ns()};

	list = kaddr(list);
	if (bpf_core_type_exists(struct rq_list___iospan))
		b.rq = (__u64)BPF_CORE_READ((struct rq_list___iospan *)list, head);
	else
		bpf_probe_read_kernel(&b.rq, sizeof(b.rq), (void *)list);
	/* A plug holds at most 64 requests (BLK_MAX_REQUEST_COUNT and more). */
	bpf_loop(128, drv_vblk_batch_one, &b, 0);
	return 0;
}

static __always_inline int drv_nvme_timeout(__u64 rq)
{
	__u64 now = bpf_ktime_get_ns();
	struct drv_status st = {.kind = DRV_NVME};

	return drv_seen(rq, DRV_TIMEOUT, &st, 0, now);
}

/*
 * virtio-blk: the submission is stamped at virtio_queue_rq()'s entry (fentry, else a
 * kprobe), before blk_mq_start_request(): its drv_in is 0 and its device time starts at
 * the issue. Not at its return: the device can complete the request, and the interrupt
 * end it, before the function returns (seen under QEMU: the first request of a process,
 * now and then), and a stamp then would be of a request already ended, or reused. Its
 * completion is taken when virtblk_done(), the virtqueue's interrupt callback, hands it
 * to blk_mq_complete_request() (virtblk_request_done() is not traceable: no fentry call
 * in Debian's 6.1 and 6.12 builds, kprobes refused). Every blk-mq driver calls that:
 * the includer keeps the completions of requests a virtio-blk submission was seen for.
 */
/*
 * The programs of the driver's completions and trouble (what per-disk counters need):
 * p_nvme_done, p_nvme_timeout, p_scsi_done, p_scsi_error, p_scsi_timeout.
 */
#define DRIVER_ERROR_PROGS(p)                                                                 \
	TP_PROGS(nvme_complete_rq, p##_nvme_done, drv_nvme_done, TP_ARG(__u64, 0))            \
	SEC("fentry/nvme_timeout")                                                            \
	int BPF_PROG(p##_nvme_timeout_fentry, struct request *rq)                             \
	{                                                                                     \
		return drv_nvme_timeout(kaddr((__u64)rq));                                    \
	}                                                                                     \
	SEC("kprobe/nvme_timeout")                                                            \
	int BPF_KPROBE(p##_nvme_timeout_kprobe, struct request *rq)                           \
	{                                                                                     \
		return drv_nvme_timeout((__u64)rq);                                           \
	}                                                                                     \
	TP_PROGS(scsi_dispatch_cmd_done, p##_scsi_done, drv_scsi, TP_ARG(__u64, 0), DRV_DONE) \
	TP_PROGS(scsi_dispatch_cmd_error, p##_scsi_error, drv_scsi, TP_ARG(__u64, 0),         \
		 DRV_DISPATCH_ERROR)                                                          \
	TP_PROGS(scsi_dispatch_cmd_timeout, p##_scsi_timeout, drv_scsi, TP_ARG(__u64, 0),     \
		 DRV_TIMEOUT)

/* All of them: DRIVER_ERROR_PROGS(), the submissions, and virtio-blk's. */
#define DRIVER_PROGS(p)                                                                           \
	DRIVER_ERROR_PROGS(p)                                                                     \
	TP_PROGS(nvme_setup_cmd, p##_nvme_submit, drv_nvme_submit, TP_ARG(__u64, 0),              \
		 TP_ARG(__u64, 1))                                                                \
	TP_PROGS(scsi_dispatch_cmd_start, p##_scsi_start, drv_scsi, TP_ARG(__u64, 0), DRV_SUBMIT) \
	SEC("fentry/virtio_queue_rq")                                                             \
	int BPF_PROG(p##_vblk_submit_fentry, struct blk_mq_hw_ctx *hctx,                          \
		     const struct blk_mq_queue_data *bd)                                          \
	{                                                                                         \
		return drv_vblk(kaddr((__u64)BPF_CORE_READ(bd, rq)), DRV_SUBMIT);                 \
	}                                                                                         \
	SEC("kprobe/virtio_queue_rq")                                                             \
	int BPF_KPROBE(p##_vblk_submit_kprobe, struct blk_mq_hw_ctx *hctx,                        \
		       const struct blk_mq_queue_data *bd)                                        \
	{                                                                                         \
		return drv_vblk((__u64)BPF_CORE_READ(bd, rq), DRV_SUBMIT);                        \
	}                                                                                         \
	SEC("fentry/virtio_queue_rqs")                                                            \
	int p##_vblk_batch_fentry(__u64 *ctx)                                                     \
	{                                                                                         \
		__u64 list = 0;                                                                   \
                                                                                                  \
		/* A struct request ** before 6.3: no typed access to it on 6.1. */               \
		bpf_get_func_arg(ctx, 0, &list);                                                  \
		return drv_vblk_batch(list);                                                      \
	}                                                                                         \
	SEC("kprobe/virtio_queue_rqs")                                                            \
	int BPF_KPROBE(p##_vblk_batch_kprobe, void *list)                                         \
	{                                                                                         \
		return drv_vblk_batch((__u64)list);                                               \
	}                                                                                         \
	SEC("fentry/blk_mq_complete_request")                                                     \
	int BPF_PROG(p##_vblk_done_fentry, struct request *rq)                                    \
	{                                                                                         \
		return drv_vblk(kaddr((__u64)rq), DRV_DONE);                                      \
	}                                                                                         \
	SEC("kprobe/blk_mq_complete_request")                                                     \
	int BPF_KPROBE(p##_vblk_done_kprobe, struct request *rq)                                  \
	{                                                                                         \
		return drv_vblk((__u64)rq, DRV_DONE);                                             \
	}

#endif
