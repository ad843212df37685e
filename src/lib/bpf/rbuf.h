/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The consumer of a BPF command's ring buffer (records: struct rb_hdr first, see
 * rbuf_abi.h; kernel side: src/bpf/rbuf.bpf.h). Records are read in batches and
 * handed, in place, to the handler of their type after a size check: nothing is
 * allocated per record. Records of no known type or of a wrong size are counted as
 * malformed; those the kernel could not send (buffer full) are counted there, per CPU,
 * and read with rbuf_stats(). Handlers may return a negative errno to stop the read.
 */
#ifndef IOSPAN_RBUF_H
#define IOSPAN_RBUF_H

#include <stddef.h>
#include <stdint.h>

#include "rbuf_abi.h"

struct rbuf_handler {
	uint32_t type;
	uint32_t min_size; /* whole record, header included */
	uint32_t max_size; /* 0: the same as min_size (a fixed-size record) */
	int (*fn)(void *arg, const void *rec, uint32_t size);
};

struct rbuf_stats {
	uint64_t received;  /* records read */
	uint64_t malformed; /* of a type or size no handler takes (not handled) */
	uint64_t sent;	    /* records the programs submitted */
	uint64_t lost;	    /* records the buffer had no room for */
};

struct rbuf;

/*
 * A consumer of the ring buffer @rb_fd whose counters map (DEFINE_RBUF's name_counts)
 * is @counts_fd, dispatching to @handlers[0..nr) with @arg. 0 or -errno.
 */
int rbuf_new(int rb_fd, int counts_fd, const struct rbuf_handler *handlers, size_t nr, void *arg,
	     struct rbuf **out);
void rbuf_free(struct rbuf *r);

/*
 * Waits up to @timeout_ms for records and reads them; at the timeout, reads those
 * sent without waking it (rbuf_submit_batched() in src/bpf/rbuf.bpf.h). A long read
 * gives the caller its turn back: it ends, after a record, at CLOCK_MONOTONIC @yield_ns
 * (0: when the buffer is empty) or on a stop request. Returns 0 or -errno (a handler's, or libbpf's;
 * -EINTR from a signal is not an error).
 */
int rbuf_poll(struct rbuf *r, int timeout_ms, uint64_t yield_ns);

/*
 * Reads until every record the programs submitted so far has been handled (stop the
 * programs' sending first), waiting at most @max_ms for records still being written
 * on other CPUs. Returns 0, -ETIMEDOUT if some never arrived, or another -errno.
 */
int rbuf_drain(struct rbuf *r, int max_ms);

/* The counts so far (the kernel's summed over CPUs). 0 or -errno. */
int rbuf_stats(struct rbuf *r, struct rbuf_stats *out);

#endif
