# SPDX-License-Identifier: GPL-2.0
"""Stage names mean what blktrace means: each command's stages against the kernel's own
records of the same requests, blktrace's Q (block_bio_queue), G (block_getrq), I
(block_rq_insert), D (block_rq_issue) and C (block_rq_complete), read through a tracefs
instance (no BPF; blktrace's tool cannot open debugfs on a locked-down kernel, and
its kernel side records these very events).

The workload waits for tags: 16 threads of fio keep 16 direct 4 KiB random reads (pread)
in flight on a loop device (direct I/O to a file on the machine's disk) whose scheduler
(mq-deadline) has 4 requests, so a bio's Q comes well before its request's G. q2c must start at Q, as btt's Q2C does; q2g, g2i, i2d and d2c as btt's.
Each command runs alone with the tracefs events (which are registered first, so they run
before iospan's programs at every event); the kernel prints their times to the
microsecond, so each difference carries up to 1 µs of rounding, alike in both
directions: the median of the differences, per request (snoop, trace) or of the means
(top, lat), must be within 1 µs.
"""
import json
import os
import statistics

import pytest

import iospan_testlib as tl

N_IOS = 3000
EVENTS = ("block_bio_queue", "block_getrq", "block_rq_insert", "block_rq_issue",
          "block_rq_complete")


@pytest.fixture(scope="module")
def disk():
    """A loop device with direct I/O to its backing file on the machine's disk (reads
    take the disk's time, slower than fio submits), mq-deadline with 4 requests and
    merges off; written once, so that every block read exists."""
    tl.require_root("creates a loop device and a tracefs instance")
    with tl.loop_device(64, direct_io=True) as dev:
        name = os.path.basename(dev)
        tl.set_scheduler(name, "mq-deadline")
        # No merges: each request one bio, each bio one request (btt's per-I/O view).
        knobs = {"nr_requests": "4", "nomerges": "2"}
        old = {}
        for k, v in knobs.items():
            path = "/sys/block/%s/queue/%s" % (name, k)
            with open(path) as f:
                old[path] = f.read().strip()
            with open(path, "w") as f:
                f.write(v)
        try:
            with open(dev, "r+b") as f:
                f.write(b"\x5a" * (60 << 20))
                os.fsync(f.fileno())
            yield dev
        finally:
            for path, v in old.items():
                with open(path, "w") as f:
                    f.write(v)


def run_once(dev, *args):
    """fio's reads on @dev under `iospan ARGS` (stdout drained) with the tracefs events:
    (iospan's stdout lines as JSON, the lifecycles of fio's requests)."""
    name = os.path.basename(dev)
    with tl.block_events(tl.devnum_of(name), events=EVENTS) as be:
        tracer = tl.Tracer(*args)
        try:
            doc = tl.fio(["--name=qd16", "--filename=" + dev, "--ioengine=psync",
                          "--thread", "--numjobs=16", "--group_reporting", "--rw=randread",
                          "--bs=4k", "--direct=1", "--size=56m",
                          "--number_ios=%d" % (N_IOS // 16), "--randrepeat=0"])
            job = doc["jobs"][0]
        finally:
            docs = tracer.json_lines()
        events = be.read()
    # fio's reads (nothing else reads the disk; no write is left from its set-up).
    lives = [r for r in tl.request_lifecycles(events) if r["rwbs"].startswith("R")]
    assert len(lives) == job["read"]["total_ios"], (len(lives), job["read"])
    waited = statistics.mean(us(r["Q"], r["G"]) for r in lives)
    total = statistics.mean(us(r["Q"], r["C"]) for r in lives)
    # The premise: bios waited for a request, so Q and G are far apart.
    assert waited >= 0.1 * total, "Q to G %.1f us of Q to C %.1f: no tag wait" % (
        waited, total)
    return docs, lives


def run(dev, *args, complete=None):
    """run_once(), again while @complete(docs, lives) says the command did not see every
    request: the kernel now and then runs no BPF program for a completion that tracefs
    records (iospan-trace(8), STAGES), which the commands declare; a mean over another
    set of requests is not comparable. Five tries (an idle machine needs one)."""
    for _ in range(5):
        docs, lives = run_once(dev, *args)
        if complete is None or complete(docs, lives):
            break
    return docs, lives


def us(a, b):
    return (b - a) / 1e3


def median_diff(pairs):
    return statistics.median(got - want for got, want in pairs)


def match(lines, lives, sector_of):
    """Lines (completion order) paired with the lifecycles of the same sector, in order."""
    by_sector = {}
    for r in lives:
        by_sector.setdefault(r["sector"], []).append(r)
    pairs = []
    for line in lines:
        cands = by_sector.get(sector_of(line))
        if cands:
            pairs.append((line, cands.pop(0)))
    return pairs


def test_snoop(disk):
    """snoop: total from Q, queue from Q to D, device from D to C, per request. A request
    whose completion ran no program (the kernel gap of iospan-snoop(8)) has no line and
    is declared (completion_not_seen): tried again while there are any, and each line
    missing is one declared. A line whose dispatch or queue snoop did not see has no
    queue (or device, or total) time, each declared (dispatch_not_seen,
    queue_not_seen): compared where it has them."""
    def complete(docs, lives):
        return not docs[-1]["summary"]["completion_not_seen"]

    docs, lives = run(disk, "snoop", "--json", "-d", disk, complete=complete)
    not_seen = docs[-1]["summary"]["completion_not_seen"]
    lines = [d for d in docs if d.get("rwbs", "").startswith("R") and d["bytes"] == 4096]
    pairs = match(lines, lives, lambda l: l["sector"])
    assert len(pairs) >= len(lives) - not_seen, (len(pairs), len(lives), not_seen)
    summary = docs[-1]["summary"]
    no_d, no_q = summary["dispatch_not_seen"], summary["queue_not_seen"]
    for key, declared in (("total_us", no_q), ("queue_us", no_d + no_q),
                          ("device_us", no_d)):
        assert sum(l[key] is None for l, _ in pairs) <= declared, (key, summary)
    total = median_diff((l["total_us"], us(r["Q"], r["C"])) for l, r in pairs
                        if l["total_us"] is not None)
    queue = median_diff((l["queue_us"], us(r["Q"], r["D"])) for l, r in pairs
                        if l["queue_us"] is not None)
    device = median_diff((l["device_us"], us(r["D"], r["C"])) for l, r in pairs
                         if l["device_us"] is not None)
    print("snoop median differences: total %.2f queue %.2f device %.2f us" % (
        total, queue, device))
    assert abs(total) <= 1 and abs(queue) <= 1 and abs(device) <= 1, (total, queue, device)


def trace_counters(docs):
    totals = [d for d in docs if d.get("type") == "totals"]
    assert totals, "trace printed no totals"
    return totals[-1]["counters"]


def test_trace(disk):
    """trace: each bio's q2g, g2i, i2d, d2c and q2c. Every request's bio is shown but
    those whose completion ran none of trace's programs (the kernel gap of
    iospan-trace(8), STAGES), which trace counts: 250 of 2,992 in a loaded CI run."""
    docs, lives = run(disk, "trace", "--json", "-t", "0", "-i", "600", "-d", disk,
                      complete=lambda docs, lives:
                      not trace_counters(docs)["bio_completions_not_seen"])
    reqs = [d for d in docs if d.get("type") == "request"]
    bios = [b for d in reqs for b in d["bios"]]
    pairs = match(bios, lives, lambda b: b["sector"])
    cnt = trace_counters(docs)
    print("%d requests, %d bios, %d paired of %d; %s" % (
        len(reqs), len(bios), len(pairs), len(lives), {k: v for k, v in cnt.items() if v}))
    assert len(pairs) >= len(lives) - cnt["bio_completions_not_seen"], \
        (len(pairs), len(lives), cnt)
    got = {
        "q2g": median_diff((b["q2g_us"], us(r["Q"], r["G"])) for b, r in pairs),
        "g2i": median_diff((b["g2i_us"], us(r["G"], r["I"])) for b, r in pairs
                           if r["I"] is not None),
        "i2d": median_diff((b["i2d_us"], us(r["I"], r["D"])) for b, r in pairs
                           if r["I"] is not None),
        "d2c": median_diff((b["d2c_us"], us(r["D"], r["C"])) for b, r in pairs),
        "q2c": median_diff((b["q2c_us"], us(r["Q"], r["C"])) for b, r in pairs),
    }
    print("trace median differences (us):", got)
    assert all(abs(v) <= 1 for v in got.values()), got


@pytest.mark.parametrize("stage, start, end", [("q2c", "Q", "C"), ("d2c", "D", "C"),
                                               ("q2d", "Q", "D")])
def test_lat(disk, stage, start, end):
    """lat: every request counted once, and the mean of each stage."""
    def complete(docs, lives):
        d = docs[-1]["drops"]
        return not (d["requests_not_seen"] or d["programs_skipped"] or d["no_start"] or
                    d["no_issue"])

    docs, lives = run(disk, "lat", "--json", "-d", disk, "--stage", stage, complete=complete)
    assert complete(docs, lives), docs[-1]["drops"]
    h = docs[-1]["histograms"]
    assert len(h) == 1, h
    want = statistics.mean(us(r[start], r[end]) for r in lives)
    assert h[0]["count"] == len(lives), (h[0]["count"], len(lives))
    print("lat %s mean %.2f us, tracepoints %.2f us" % (stage, h[0]["avg"], want))
    assert abs(h[0]["avg"] - want) <= 1, (h[0]["avg"], want)


def mean_bounds(values, k):
    """The least and the most the mean of @values can be with @k of them left out."""
    v = sorted(values)
    n = len(v) - k
    return statistics.mean(v[:n]), statistics.mean(v[k:])


def test_top(disk):
    """top: fio's row, q2c from Q and d2c from D, as means. A request whose completion
    ran no program (the kernel gap of iospan-top(8), *Completions not seen*) is declared
    (completions_unseen: its bytes on the disk's unattributed row, untimed): tried again
    while there are any; if some stay, fio's row holds exactly the others' bytes and its
    means lie within those of any subset of the requests without that many. So does a
    bio whose owner record was not found at its completion (unmatched_bios: its bytes
    on the unattributed row too; 21 of 2,992 requests in one CI run, 1 module run in
    about 25 here, cause not found yet)."""
    def complete(docs, lives):
        dev = [d for d in docs[-1]["devices"] if d["disk"] == os.path.basename(disk)]
        dropped = docs[-1]["dropped"]
        return dev and dev[0]["disk_read_bytes"] == dev[0]["diskstats_read_bytes"] and \
            not dropped["requests_without_queue_time"] and \
            not dropped["completions_unseen"] and not dropped["unmatched_bios"]

    docs, lives = run(disk, "top", "--json", "-d", disk, "--duration", "600",
                      complete=complete)
    dev = [d for d in docs[-1]["devices"] if d["disk"] == os.path.basename(disk)]
    dropped = docs[-1]["dropped"]
    assert dev and dev[0]["disk_read_bytes"] == dev[0]["diskstats_read_bytes"] and \
        not dropped["requests_without_queue_time"], (docs[-1]["devices"], dropped)
    rows = [p for p in docs[-1]["processes"] if p["comm"] == "fio"]
    assert len(rows) == 1, docs[-1]["processes"]
    p = rows[0]
    assert dropped["completion_unseen_bytes"] == 4096 * dropped["completions_unseen"], dropped
    # One bio a request (nomerges): each request not on fio's row is declared once.
    unseen = dropped["completions_unseen"] + dropped["unmatched_bios"]
    # Where fio's bytes went instead, if not all to its row: the counters, the other
    # rows and the disk's unattributed bytes (first: a long message is cut).
    assert p["disk_read_bytes"] == 4096 * (len(lives) - unseen), "%s" % (
        [(k, v) for k, v in dropped.items() if v],
        [(q["pid"], q["comm"], q["disk_read_bytes"]) for q in docs[-1]["processes"]],
        dev[0]["unattributed_bytes"], p["disk_read_bytes"], len(lives))
    q2c = mean_bounds([us(r["Q"], r["C"]) for r in lives], unseen)
    d2c = mean_bounds([us(r["D"], r["C"]) for r in lives], unseen)
    print("top q2c %.2f d2c %.2f us, tracepoints %s %s, %d completions unseen or unmatched" % (
        p["q2c_avg_us"], p["d2c_avg_us"], q2c, d2c, unseen))
    assert q2c[0] - 1 <= p["q2c_avg_us"] <= q2c[1] + 1 and \
        d2c[0] - 1 <= p["d2c_avg_us"] <= d2c[1] + 1, (p, q2c, d2c)
