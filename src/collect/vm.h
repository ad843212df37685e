/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A virtio-blk request followed from the guest through QEMU to the host's disk, from
 * three records made apart: the guest's `iospan trace --json` (its requests and bios,
 * guest clock), QEMU's `-trace` log of its virtio_blk_* events (log backend, with
 * `-msg timestamp=on`: wall-clock microseconds), and the host's `iospan trace --json`
 * of the image file (QEMU's own reads and writes of it, host clock). The files of
 * src/collect/vm/:
 *   inputs.c  reading them: the trace JSON lines through SQLite's JSON functions, the
 *             QEMU log line by line; what is malformed or missing is counted
 *   match.c   the matching and the clock: pure functions over the records below
 * Guest requests meet QEMU's by the disk's sector and length (a raw image: the guest's
 * sector x 512 is the file's offset), QEMU's meet the host's I/O by offset, length and
 * time; the guest's clock is put on the host's by the requests themselves (QEMU takes up
 * each guest request after the guest submitted it and completes it before the guest
 * sees it done), with the residual error the constraints leave.
 */
#ifndef IOSPAN_COLLECT_VM_H
#define IOSPAN_COLLECT_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A guest request's stages (iospan-trace(8)), in ns; -1 where unknown. */
enum vm_guest_stage {
	VG_TOTAL,
	VG_PRE_BLOCK,
	VG_THROTTLE,
	VG_Q2Q,
	VG_Q2G,
	VG_G2I,
	VG_I2D,
	VG_D2C,
	VG_DRV_IN,
	VG_DRV_OUT,
	VG_POST_BLOCK,
	VG_NR,
};

/* One guest request with its critical bio (the one that completed last) on the disk. */
struct vm_guest_req {
	char op[24], comm[32], disk[32];
	uint32_t pid, tid;
	int64_t start, end; /* guest CLOCK_MONOTONIC ns */
	int64_t offset;	    /* the syscall's, -1 if none */
	uint64_t bytes;
	int64_t st[VG_NR];
	/* The critical bio: sector on the disk, bytes, direction, its times. */
	uint64_t sector, bio_bytes;
	bool write;
	int64_t q, d, c;
	int64_t ds, dc; /* the driver's submission and completion, 0: not seen */
	int line;	/* of the guest trace, for messages */
};

/* One request QEMU took up from the virtqueue and completed (its -trace log). */
struct vm_qemu_req {
	uint64_t id; /* QEMU's VirtIOBlockReq address */
	uint64_t vdev;
	uint64_t sector, nsectors;
	bool write;
	int64_t take, done; /* host CLOCK_MONOTONIC ns; done 0: not completed in the log */
	int status;	    /* virtio status (0 ok) */
	uint32_t tid;	    /* the QEMU thread that took it up */
	int line;
};

/* One read or write QEMU made of the image file (the host's trace). */
struct vm_host_io {
	char op[24];
	uint32_t tid;
	int64_t offset;
	uint64_t bytes;
	bool write;
	int64_t start, end; /* host CLOCK_MONOTONIC ns */
	/* Its stages, ns, -1 unknown: pre_block, throttle, q2c (block), d2c, post_block. */
	int64_t pre_block, throttle, q2c, d2c, post_block;
	int line;
};

/* Why a guest request has no host part. */
enum vm_why {
	VM_MATCHED,
	VM_NOT_DISK,   /* not on the guest disk the image backs */
	VM_NO_QEMU,    /* no QEMU request of its sector, length and direction in time */
	VM_AMBIGUOUS,  /* several would do: none is taken */
	VM_NO_HOST_IO, /* QEMU's request has no read or write of the image in its span */
	VM_NR_WHY,
};

/* The guest's clock on the host's: guest = host + offset, within +-err. */
struct vm_clock {
	int64_t offset, err;
	int pairs; /* requests that fixed it (unambiguous by sector, length, direction) */
	bool ok;
};

/* Everything read, and what matched. */
struct vm_merge {
	struct vm_guest_req *g;
	size_t nr_g;
	struct vm_qemu_req *q;
	size_t nr_q;
	struct vm_host_io *h;
	size_t nr_h;
	/* Per guest request: its QEMU request (-1 none) and the first and last host I/O. */
	int *g_qemu;
	int *q_host_first, *q_host_last; /* per QEMU request, -1 none */
	enum vm_why *why;
	uint64_t vdev;	      /* the image's virtio device in QEMU's log (0: not found) */
	int64_t image_offset; /* where the disk's sector 0 is in the image */
	struct vm_clock clock;
	uint64_t count[VM_NR_WHY];
};

/* Where a matched guest request's time went: parts that add up to its total. */
enum vm_part {
	VP_PRE_BLOCK,  /* guest: syscall to its first bio (and throttle, q2q) */
	VP_BLOCK,      /* guest: block layer, Q to the driver's submission (q2g..i2d, drv_in) */
	VP_TO_QEMU,    /* the guest's submission to QEMU taking the request up */
	VP_QEMU_IN,    /* QEMU, from taking it up to its read or write of the image */
	VP_HOST,       /* the host's read or write of the image (its stages in vm_host_io) */
	VP_QEMU_OUT,   /* QEMU, from the end of that I/O to its completing the request */
	VP_TO_GUEST,   /* QEMU's completion to the guest driver taking it */
	VP_GUEST_DONE, /* guest: the driver's completion to the block layer's (drv_out) */
	VP_POST_BLOCK, /* guest: its completion to the request's end */
	VP_NR,
};

const char *vm_part_name(enum vm_part p);
const char *vm_why_name(enum vm_why w);

/*
 * Matches QEMU's requests to the host's I/O (same clock): a read or write of the same
 * direction overlapping the request's bytes of the image (@image_offset: where the
 * disk's sector 0 is in the file, 0 for a raw image) within [take, done]. Sets
 * q_host_first/last and m->vdev (the device most requests matched on).
 */
int vm_match_host(struct vm_merge *m, int64_t image_offset);
/* Whether host I/O @h served QEMU request @q: its direction, its bytes, within its span. */
bool vm_host_serves(const struct vm_merge *m, const struct vm_qemu_req *q,
		    const struct vm_host_io *h);
/*
 * Puts the guest's clock on the host's (m->clock) from the guest requests that have
 * exactly one QEMU request of the same sector, length and direction on m->vdev, and
 * that one only them: QEMU takes a request up after the guest submits it and completes
 * it before the guest sees it done. Returns -EINVAL (clock not ok) when no such pair
 * exists, -ERANGE when they contradict each other (traces of different runs).
 */
int vm_fit_clock(struct vm_merge *m);
/*
 * With the clock: each guest request on @disk (NULL: any) gets the one QEMU request of
 * its sector, length and direction whose span lies within its own (the clock's error
 * allowed); none or several: unmatched, with why. Counts in m->count.
 */
int vm_match_guest(struct vm_merge *m, const char *disk);
/*
 * A matched guest request's parts (ns, host parts on the guest clock), adding up to
 * its total; false if it has none.
 */
bool vm_parts(const struct vm_merge *m, size_t g, int64_t parts[VP_NR]);
void vm_merge_free(struct vm_merge *m);

/* inputs.c: readers. Each returns 0 or a negative errno, said through fail(). */
struct vm_read_stats {
	uint64_t lines, malformed, requests, skipped;
};
/* The guest's trace: its requests with a bio (on @disk, NULL: any). */
int vm_read_guest(const char *path, const char *disk, struct vm_merge *m, struct vm_read_stats *st);
/* The host's trace: reads and writes of the image (@image: its path, NULL: any file). */
int vm_read_host(const char *path, const char *image, struct vm_merge *m, struct vm_read_stats *st,
		 int64_t *mono_to_real);
/* QEMU's -trace log, its wall-clock times put on the host's monotonic clock. */
int vm_read_qemu(const char *path, int64_t mono_to_real, struct vm_merge *m,
		 struct vm_read_stats *st);
/* One log line parsed (tests): 1 if it is a request event, 0 if not, -EINVAL malformed. */
int vm_qemu_line(const char *line, int64_t *real_ns, uint32_t *tid, char *event, size_t len,
		 uint64_t *vdev, uint64_t *req, uint64_t *a, uint64_t *b);

#endif
