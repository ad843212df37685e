# SPDX-License-Identifier: GPL-2.0
"""The scheduler/device split of `iospan trace` and `iospan top` against the block
tracepoints themselves, read through tracefs (no BPF): under each I/O scheduler, a
known number of direct reads on a loop device; the mean insert-to-issue time (i2d,
time in the scheduler) and issue-to-complete time (d2c, driver and device) that iospan
reports must match the tracepoints' own within 10%.

The block layer may stamp a request's issue time (rq->io_start_time_ns) from a time
cached in the submitter's plug before the request was even inserted: i2d then reads 0
and the scheduler's time lands in d2c.
"""
import json
import os
import signal
import statistics
import subprocess
import threading

import pytest

import iospan_testlib as tl

PYTHON = "/usr/bin/python3"
N_READS = 3000

# O_DIRECT 4 KiB reads of distinct blocks of a raw device, one at a time.
READER = r"""
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
sys.stdin.readline()
for i in range(int(sys.argv[2])):
    assert os.preadv(fd, [buf], (i * 2 % 8192) * 4096) == 4096
print(os.getpid(), flush=True)
"""


def _drain(proc):
    proc.out_lines = []

    def reader():
        for line in proc.stdout:
            proc.out_lines.append(line)

    proc.reader = threading.Thread(target=reader, daemon=True)
    proc.reader.start()


def _stop(proc):
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    proc.reader.join(timeout=30)
    assert proc.returncode == 0, proc.stderr.read()
    return [json.loads(line) for line in proc.out_lines if line.strip()]


def rel_err(got, want):
    return abs(got - want) / want


@pytest.mark.parametrize("sched", ["mq-deadline", "kyber", "bfq"])
def test_i2d_and_d2c_match_block_tracepoints(iospan, sched):
    tl.require_root("creates a loop device and a tracefs instance")
    with tl.tmpfs(64) as t, tl.loop_device(48, backing_dir=t) as dev:
        name = os.path.basename(dev)
        tl.set_scheduler(name, sched)  # loop_device() gives the previous one back
        with open(dev, "r+b") as f:  # backing pages exist: reads cost the same
            f.write(b"\x5a" * (40 << 20))
        reader = subprocess.Popen([PYTHON, "-B", "-c", READER, dev, str(N_READS)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        # The tracepoints' own events first: they then run before iospan's programs at
        # both events, so neither side's timestamps carry the other's work.
        with tl.block_events(tl.devnum_of(name),
                             events=("block_bio_queue", "block_getrq", "block_rq_insert",
                                     "block_rq_issue", "block_rq_complete")) as be:
            trace = tl.start_tracing("trace", "--json", "-t", "0", "-i", "600", "-d", name,
                                     "--ops", "preadv,preadv2")
            _drain(trace)
            top = tl.start_tracing("top", "--json", "-d", name, "--duration", "600")
            _drain(top)
            try:
                reader.stdin.write("go\n")
                reader.stdin.flush()
                out, _ = reader.communicate(timeout=300)
                assert reader.returncode == 0
            finally:
                docs = _stop(trace)
                report = _stop(top)[-1]
            events = be.read()
    pid = int(out.split()[0])
    truth = tl.insert_issue_complete(events)
    assert len(truth) >= 0.95 * N_READS, (len(truth), len(events))
    t_i2d = statistics.mean((d - i) / 1e3 for g, i, d, c in truth)
    t_d2c = statistics.mean((c - d) / 1e3 for g, i, d, c in truth)
    t_g2d = statistics.mean((d - g) / 1e3 for g, i, d, c in truth)
    lives = tl.request_lifecycles(events)  # one bio a request: distinct 4 KiB reads
    assert len(lives) >= 0.95 * N_READS, (len(lives), len(events))
    t_q2d = statistics.mean((r["D"] - r["Q"]) / 1e3 for r in lives)

    reqs = [r for r in docs if r["type"] == "request" and r["pid"] == pid]
    assert len(reqs) == N_READS, (len(reqs), docs[-1])
    bios = [r["bios"][0] for r in reqs if len(r["bios"]) == 1]
    # Known gap (docs/iospan-trace.md): now and then the kernel runs no BPF program for a
    # completion its tracefs event records; the direct read then ends with its one bio
    # open, flagged and counted. Tolerated only so declared, and at most one in a thousand.
    others = [r for r in reqs if len(r["bios"]) != 1]
    assert all(not r["bios"] and r["bios_queued"] == 1 and
               "bio_completion_not_seen" in r["flags"] for r in others), others[:3]
    totals = [d for d in docs if d["type"] == "totals"][-1]
    assert len(others) <= totals["counters"]["bio_completions_not_seen"], totals
    # When this fails (6 of 3000 once in CI, bfq; not reproduced in 19 runs here, under
    # load either), the counters say whether the kernel declared skipped runs.
    assert len(bios) >= N_READS - N_READS // 1000, (
        len(bios), others[:3], {k: v for k, v in totals["counters"].items() if v},
        {k: v for k, v in report["dropped"].items() if v})
    i2d = statistics.mean(b["i2d_us"] for b in bios)
    d2c = statistics.mean(b["d2c_us"] for b in bios)
    zero = sum(1 for b in bios if b["i2d_us"] == 0)
    print("%s: tracepoints i2d %.2f us d2c %.2f us g2d %.2f us; trace i2d %.2f us "
          "(%d of %d zero) d2c %.2f us" % (sched, t_i2d, t_d2c, t_g2d, i2d, zero,
                                             len(bios), d2c))
    # Within 10%, or 0.25 us where that is more: i2d is under a microsecond here, and
    # each side's stamp comes after the tracefs event's own work at that hook, whose
    # cost differs between the two hooks under load (0.12 us in a loaded CI run:
    # 0.71 us against 0.83).
    assert abs(i2d - t_i2d) <= max(0.10 * t_i2d, 0.25), (i2d, t_i2d)
    assert rel_err(d2c, t_d2c) <= 0.10, (d2c, t_d2c)

    # top: the same reads, one process row; d2c from the issue, q2c from the queue.
    rows = [p for p in report["processes"] if p["pid"] == pid]
    assert len(rows) == 1, report["processes"]
    p = rows[0]
    print("top: q2c %.2f us d2c %.2f us (tracepoints d2c %.2f, q2d %.2f, g2d %.2f)"
          % (p["q2c_avg_us"], p["d2c_avg_us"], t_d2c, t_q2d, t_g2d))
    assert rel_err(p["d2c_avg_us"], t_d2c) <= 0.10, (p["d2c_avg_us"], t_d2c)
    # Before the issue: the time from the bio's queue, the scheduler's included; within
    # 10%, or 1 us where that is less (each side's stamps come after the tracefs
    # event's own work at that hook, which differs by a fraction of a microsecond).
    before_issue = p["q2c_avg_us"] - p["d2c_avg_us"]
    assert t_i2d <= t_q2d and abs(before_issue - t_q2d) <= max(0.10 * t_q2d, 1.0), (
        before_issue, t_i2d, t_q2d)
