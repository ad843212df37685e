# SPDX-License-Identifier: GPL-2.0
"""End-to-end tests for `iospan trace` on loop devices (ext4 and xfs).

Known workloads with exact syscall counts run while `iospan trace -t 0` follows every
request: the number of traced requests must equal the number of syscalls, the stages
of each request must add up to its total, direct reads must show their bio (and d2c
close to fio's own completion latency), fsync must carry the flushed bios, cached
reads must show no bios while cold reads show page-cache insertions and readahead,
writeback by the flusher must be credited to the process that dirtied the file, and a
blk-throttled read must show its delay before dispatch, not in d2c. Every filter is
checked against two processes working in different directories, cgroups and disks,
the Perfetto file is checked for nesting per track, and bad input gives one line and
exit code 2.
"""
import json
import os
import statistics
import subprocess
import threading
import time

import pytest

import iospan_testlib as tl

PYTHON = "/usr/bin/python3"
MiB = 1 << 20

# A workload process: sets its comm, prints "ready", waits for a line on stdin, runs
# the steps given as JSON, prints {"pid":..., "done": true} and exits.
WORKLOAD = r"""
import json, mmap, os, sys

comm, steps = sys.argv[1], json.loads(sys.argv[2])
with open("/proc/self/comm", "w") as f:
    f.write(comm)
print("ready", flush=True)
sys.stdin.readline()
buf = mmap.mmap(-1, 1 << 20)  # page aligned, as O_DIRECT needs
for st in steps:
    op, path = st["op"], st["path"]
    n, size = st.get("n", 1), st.get("size", 4096)
    if op == "dio_pread":
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        for i in range(n):
            assert os.preadv(fd, [memoryview(buf)[:size]], i * size) == size
        os.close(fd)
    elif op == "pread":
        fd = os.open(path, os.O_RDONLY)
        for i in range(n):
            assert len(os.pread(fd, size, i * size)) == size
        os.close(fd)
    elif op == "drop":
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    elif op == "write_fsync":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for i in range(n):
            assert os.write(fd, b"w" * size) == size
        os.fsync(fd)
        os.close(fd)
    elif op == "write_lazy":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for i in range(n):
            assert os.write(fd, b"l" * size) == size
        os.close(fd)
    elif op == "sync":
        os.sync()
    elif op == "mmap_read":
        fd = os.open(path, os.O_RDONLY)
        m = mmap.mmap(fd, n * size, mmap.MAP_SHARED, mmap.PROT_READ)
        for i in range(n):
            m[i * size]
        m.close()
        os.close(fd)
    elif op == "throttled":
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        assert os.preadv(fd, [memoryview(buf)[:size]], 0) == size
        os.close(fd)
    else:
        raise SystemExit("unknown op " + op)
print(json.dumps({"pid": os.getpid(), "done": True}), flush=True)
"""


def make_file(path, size):
    with open(path, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())


class Workload:
    """A workload process started paused (so filters can name its pid)."""

    def __init__(self, comm, steps, cgroup=None):
        pre = (lambda: tl.move_to_cgroup(cgroup)) if cgroup else None
        self.p = subprocess.Popen([PYTHON, "-B", "-c", WORKLOAD, comm, json.dumps(steps)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, preexec_fn=pre)
        line = self.p.stdout.readline()
        assert line.strip() == "ready", "workload did not start: %s" % self.p.stderr.read()
        self.pid = self.p.pid

    def run(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()

    def wait(self, timeout=60):
        out, err = self.p.communicate(timeout=timeout)
        assert self.p.returncode == 0, "workload failed: %s" % err
        return json.loads(out.strip().splitlines()[-1])


def _drain(proc):
    """Reads the tracer's stdout as it comes: a full pipe would stall it."""
    proc.out_lines = []

    def reader():
        for line in proc.stdout:
            proc.out_lines.append(line)

    proc.reader = threading.Thread(target=reader, daemon=True)
    proc.reader.start()


def start_trace(*args):
    """Starts `iospan trace --json ARGS`; returns the Popen once it traces."""
    proc = tl.start_tracing("trace", "--json", *args)
    _drain(proc)
    return proc


def stop_trace(proc):
    """SIGINT, then the parsed JSON Lines: (requests, summaries, totals)."""
    proc.send_signal(2)
    proc.wait(timeout=30)
    proc.reader.join(timeout=30)
    err = proc.stderr.read()
    assert proc.returncode == 0, "iospan trace exited %d: %s" % (proc.returncode, err)
    out = "".join(proc.out_lines)
    docs = [json.loads(line) for line in out.splitlines() if line.strip()]
    reqs = [d for d in docs if d["type"] == "request"]
    sums = [d for d in docs if d["type"] == "summary"]
    totals = [d for d in docs if d["type"] == "totals"]
    assert len(totals) == 1, out[-2000:]
    return reqs, sums, totals[0]


BLOCK_STAGES = ("pre_block", "throttle", "q2q", "q2g", "g2i", "i2d", "d2c", "post_block")


def check_stages(r):
    """The documented sums: total = pre_block + throttle + q2q + ... + d2c + post_block
    and q2c = q2q + ... + d2c for requests with bios; pre_block = total without."""
    st = r["stages"]
    eps = 0.01 * 8  # JSON rounds each stage to 1 ns
    if r["has_block_io"]:
        assert abs(sum(st[k] for k in BLOCK_STAGES) - st["total"]) <= eps, r
        assert abs(st["q2q"] + st["q2g"] + st["g2i"] + st["i2d"] + st["d2c"]
                   - st["q2c"]) <= eps, r
        # drv_in, device, drv_out: null without a driver hook (a loop device's).
        assert all(v >= 0 for v in st.values() if v is not None), r
    else:
        assert abs(st["pre_block"] - st["total"]) <= eps, r
    assert abs(st["total"] - r["total_us"]) <= eps
    assert st["iowait"] <= st["offcpu"] + eps


# --------------------------------------------------------------------------- workloads

@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs"])
def test_requests_stages_and_layers(iospan, fstype, tmp_path):
    tl.require_root("creates loop devices and file systems")
    with tl.scratch_fs(fstype, 320) as fs:
        d = os.path.join(fs.mnt, "work")
        os.mkdir(d)
        data = os.path.join(d, "data")
        cold = os.path.join(d, "cold")
        mapped = os.path.join(d, "mapped")
        make_file(data, 4 * MiB)
        make_file(cold, 4 * MiB)
        make_file(mapped, 4 * MiB)
        tl.drop_caches()
        steps = [
            {"op": "dio_pread", "path": data, "n": 20, "size": 4096},
            {"op": "pread", "path": data, "n": 4, "size": 65536},   # cold: misses
            {"op": "pread", "path": data, "n": 4, "size": 65536},   # now cached
            {"op": "write_fsync", "path": os.path.join(d, "synced"), "n": 4,
             "size": 65536},
            {"op": "drop", "path": cold},
            {"op": "pread", "path": cold, "n": 1, "size": 4096},
            {"op": "write_lazy", "path": os.path.join(d, "lazy"), "n": 2, "size": 65536},
            {"op": "sync", "path": d},
            {"op": "mmap_read", "path": mapped, "n": 16, "size": 256 * 1024},
        ]
        w = Workload("wl-layers", steps)
        pf = str(tmp_path / "trace.json")
        proc = start_trace("-t", "0", "--dir", d, "--perfetto", pf, "-i", "60")
        try:
            w.run()
            w.wait()
            time.sleep(1.0)  # writeback completions
        finally:
            reqs, sums, totals = stop_trace(proc)
        mine = [r for r in reqs if r["pid"] == w.pid and r["op"] not in ("writeback", "fault")]
        by_op = {}
        for r in mine:
            # os.preadv() is preadv or preadv2 depending on the C library.
            by_op.setdefault("preadv" if r["op"] == "preadv2" else r["op"], []).append(r)
        # Exactly the syscalls the workload issued on files in the directory.
        assert len(by_op.get("preadv", [])) == 20, [r["op"] for r in mine]
        assert len(by_op.get("pread64", [])) == 9
        assert len(by_op.get("write", [])) == 6
        assert len(by_op.get("fsync", [])) == 1
        assert set(by_op) == {"preadv", "pread64", "write", "fsync"}, set(by_op)
        # Each request names its thread (taken at its end, for the requests sent).
        assert all(r["comm"] == "wl-layers" and r["tid"] == w.pid for r in mine), \
            [(r["comm"], r["tid"]) for r in mine]
        assert totals["lost"] == 0, totals
        assert totals["emitted"] == totals["printed"]
        for r in reqs:
            check_stages(r)
        # Direct reads: one 4 KiB read bio each, its device time inside the request.
        # btrfs's first one (offset 0) also reads the first 16 KiB of the file into the
        # page cache (a sync readahead inside it; /proc/diskstats agrees: one 16 KiB
        # request for that 4 KiB pread).
        for i, r in enumerate(by_op["preadv"]):
            assert "direct" in r["flags"]
            assert r["bytes"] == 4096 and r["ret"] == 4096
            assert r["path"] == data
            assert len(r["bios"]) == 1, r
            b = r["bios"][0]
            want = 16384 if fstype == "btrfs" and i == 0 else 4096
            assert b["op"] == "R" and b["bytes"] == want and b["disk"] == fs.name, (i, b)
            assert 0 < b["d2c_us"] <= r["total_us"]
        # The first buffered reads missed the cache: pages added, readahead, bios.
        cold_reads, warm_reads = by_op["pread64"][:4], by_op["pread64"][4:8]
        assert cold_reads[0]["page_cache"]["added_pages"] > 0
        ra = cold_reads[0]["page_cache"]
        if fstype == "btrfs":
            # Its first pages are in the cache already (above): readahead goes on.
            assert ra["readahead_sync"] + ra["readahead_async"] >= 1, ra
        else:
            assert ra["readahead_sync"] >= 1, ra
        assert cold_reads[0]["bios"], cold_reads[0]
        # Cached reads: looked up, nothing added, no bios.
        for r in warm_reads:
            assert not r["bios"] and not r["has_block_io"], r
            assert r["page_cache"]["lookups"] >= 1
            assert r["page_cache"]["added_pages"] == 0
        # A read after fadvise(DONTNEED) misses again.
        after_drop = by_op["pread64"][8]
        assert after_drop["path"] == cold
        assert after_drop["page_cache"]["added_pages"] > 0 and after_drop["bios"]
        # The buffered write is flushed inside the fsync: its write bios are there.
        fs_req = by_op["fsync"][0]
        wbytes = sum(b["bytes"] for b in fs_req["bios"] if b["op"] == "W")
        assert wbytes >= 4 * 65536, fs_req
        assert fs_req["path"] == os.path.join(d, "synced")
        for r in by_op["write"][:4]:
            assert not r["bios"], r  # buffered: only dirtied pages
        # Writeback of the lazy file by a kernel thread, credited to the writer.
        wb = [r for r in reqs if r["op"] == "writeback" and r["path"] == os.path.join(d, "lazy")]
        assert wb, [(r["op"], r["path"]) for r in reqs if r["op"] == "writeback"]
        assert all(r["pid"] == w.pid and r["comm"] == "wl-layers" for r in wb), wb
        assert sum(b["bytes"] for r in wb for b in r["bios"]) >= 2 * 65536
        assert all(r["flusher_tid"] != w.pid for r in wb)
        # Page faults on the mapping: requests of their own, with the misses they caused.
        faults = [r for r in reqs if r["op"] == "fault"]
        assert faults and all(r["pid"] == w.pid and r["path"] == mapped for r in faults), faults
        assert sum(r["page_cache"]["added_pages"] for r in faults) > 0
        assert any(r["bios"] for r in faults)
        # The summary counts the same requests.
        final = [s for s in sums if s["final"]][-1]
        count = sum(s["ops"].get(op, {}).get("count", 0) for s in sums
                    for op in ("preadv", "preadv2"))
        assert count == 20
        dio_op = by_op["preadv"][0]["op"]
        assert final["ops"][dio_op]["stages"]["d2c"]["count"] == 20
        # The Perfetto file: valid, nested, one request span per traced request.
        doc = tl.check_perfetto(pf)
        spans = [e for e in doc["traceEvents"]
                 if e["ph"] == "X" and e.get("cat") == "request"]
        assert len(spans) == totals["printed"]


def test_direct_io_d2c_matches_fio_and_aio(iospan, tmp_path):
    tl.require_root("creates a loop device and runs fio")
    # A loop device doing direct I/O to its backing file on the host's disk: the device
    # time is real, so it is most of what fio measures.
    with tl.loop_device(256, direct_io=True) as dev, tl.filesystem(dev, "ext4") as mnt:
        name = os.path.basename(dev)
        path = os.path.join(mnt, "fio.dat")
        make_file(path, 32 * MiB)
        # fio's default clock on x86 is the TSC scaled by a calibration it runs at start,
        # which a busy CPU can skew by a percent or more; clock_gettime is the kernel's.
        common = ["--name=t", "--filename=%s" % path, "--bs=4k", "--direct=1",
                  "--rw=randread", "--size=32m", "--norandommap", "--randrepeat=0",
                  "--clocksource=clock_gettime"]
        lat_log = str(tmp_path / "psync")
        proc = start_trace("-t", "0", "-d", name, "-i", "60")
        try:
            psync = tl.fio(common + ["--ioengine=psync", "--number_ios=500",
                                     "--write_lat_log=%s" % lat_log, "--log_avg_msec=0",
                                     "--log_offset=1"])
            aio = tl.fio(common + ["--ioengine=libaio", "--iodepth=4", "--number_ios=400"])
        finally:
            reqs, sums, totals = stop_trace(proc)
        preads = sorted((r for r in reqs if r["op"] == "pread64" and r["path"] == path),
                        key=lambda r: r["start_mono_ns"])
        odd = [(r["op"], r["path"], r["inode"], r["flags"]) for r in reqs if r["path"] != path]
        assert not odd, odd[:5]
        job = psync["jobs"][0]["read"]
        assert len(preads) == job["total_ios"], (len(preads), job["total_ios"], totals["counters"])
        # fio's own per-I/O log is the ground truth: one synchronous thread, so its I/Os
        # and the traced requests pair up in order, and the offsets must agree.
        fio_ios = tl.fio_clat_log(lat_log)
        assert len(fio_ios) == len(preads)
        assert [r["offset"] for r in preads] == [io[3] for io in fio_ios]
        # Exact, unless iospan says it missed something: a completion no program ran for
        # (a run the kernel skipped, docs/iospan-trace.md) leaves a direct read's bio
        # open when the read ends, which cannot happen otherwise: flagged and counted,
        # never shown as "in flight at end" (readahead's legitimate case).
        cnt = totals["counters"]
        declared = cnt["bio_completions_not_seen"]
        gaps, d2c_ratio, outside, missed = [], [], [], []
        for r, (clat_ns, ddir, nbytes, offset) in zip(preads, fio_ios):
            assert ddir == 0 and r["bytes"] == nbytes == 4096
            assert r["bios_queued"] == 1, r
            assert "bios_in_flight_at_end" not in r["flags"], r
            if not r["bios"] and "bio_completion_not_seen" in r["flags"]:
                missed.append(offset)
                continue
            assert len(r["bios"]) == 1, r
            clat_us = clat_ns / 1000.0
            d2c = r["bios"][0]["d2c_us"]
            # fio's clock starts before the syscall and stops after it returns: the
            # traced request lies inside fio's window, and the device time inside it.
            # fio's CLOCK_MONOTONIC_RAW and the kernel's CLOCK_MONOTONIC differ by NTP's
            # slew (at most 500 ppm), and fio logs whole microseconds.
            if not d2c <= r["total_us"] <= clat_us * 1.0005 + 1:
                outside.append((offset, d2c, r["total_us"], clat_us))
            gaps.append(clat_us - r["total_us"])
            d2c_ratio.append(d2c / clat_us)
        assert not outside, "%d of %d: (offset, d2c, traced, fio clat) %s" % (
            len(outside), len(preads), outside[:5])
        assert len(missed) <= declared and len(missed) <= 0.05 * len(preads), (missed, cnt)
        # The I/Os fio was not preempted around (the tenth of them with the smallest
        # gap): what fio adds around the syscall is small, so the traced request is
        # nearly all of fio's latency. On a busy machine fio is preempted between its
        # clock reads and the syscall for many I/Os, not for all: with the fuzz tests
        # running beside it the median gap was once 50 us of a 124 us p50 (the check
        # on it failed), while the tenth stayed at 3-11 us in every run.
        gap = sorted(gaps)[len(gaps) // 10]
        ratio = statistics.median(d2c_ratio)
        clat_p50 = job["clat_ns"]["percentile"]["50.000000"] / 1000.0
        print("fio clat p50 %.1f us; fio-minus-traced %.1f us (10th pct), %.1f us (median);"
              " median d2c/clat %.2f" % (clat_p50, gap, statistics.median(gaps), ratio))
        assert gap <= 0.2 * clat_p50 + 10, ("fio-minus-traced, 10th pct", gap, clat_p50)
        # The device time is the bulk of fio's latency (less of it when the CPUs are
        # contended and wake-ups after completion wait for a CPU).
        assert ratio >= 0.35, ("median d2c/clat", ratio)
        # Async direct I/O: one request per I/O, each with its bio.
        aios = [r for r in reqs if r["op"] == "aio_read" and r["path"] == path]
        n = aio["jobs"][0]["read"]["total_ios"]
        # Each one printed, or counted: lost in its slot, or never seen to end (its
        # kiocb reused: abandoned; or not: in flight at exit), which needs a declared miss.
        unseen = (cnt["async_slot_collisions"] + cnt["abandoned"]
                  + totals["in_flight_at_exit"])
        assert len(aios) <= n <= len(aios) + unseen, (len(aios), n, totals)
        # Missing ones only as declared: a completion the kernel ran no program for, or
        # a request whose two slots both held live ones (async_slot_collisions).
        assert len(aios) == n or declared or cnt["async_slot_collisions"], (len(aios), n, cnt)
        assert len(aios) >= 0.95 * n, (len(aios), n, cnt)
        assert all(len(r["bios"]) == 1 and r["bios"][0]["bytes"] == 4096 for r in aios)
        for r in aios:
            check_stages(r)


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs"])
def test_aio_reads_with_their_bios(iospan, fstype):
    """`trace -t 0`: one aio_read request per iocb, each with exactly its bytes in bios,
    on btrfs too (its bios end through btrfs's end_io, not iomap's), and every request
    started is completed and printed."""
    tl.require_root("creates loop devices and file systems")
    n, bs = 64, 65536
    with tl.scratch_fs(fstype, 320) as fs:
        path = os.path.join(fs.mnt, "aio.dat")
        make_file(path, n * bs)
        tl.drop_caches()
        proc = start_trace("-t", "0", "-d", fs.name, "-i", "60")
        try:
            p = subprocess.run([tl.iowork_bin(), "aio", path, "-b", str(bs), "-n", str(n),
                                "-q", "8"], capture_output=True, text=True, timeout=120)
        finally:
            reqs, _, totals = stop_trace(proc)
    assert p.returncode == 0, p.stderr
    pid = json.loads(p.stdout)["pid"]
    aios = [r for r in reqs if r["op"] == "aio_read" and r["pid"] == pid]
    assert sorted(r["offset"] for r in aios) == [i * bs for i in range(n)], totals
    for r in aios:
        assert r["ret"] == bs and r["path"] == os.path.realpath(path), r
        assert sum(b["bytes"] for b in r["bios"]) == bs, (r["bios"], r["flags"])
        check_stages(r)
    assert totals["traced"] == totals["completed"] == totals["printed"] == len(reqs), totals


def test_throttled_delay_before_dispatch(iospan):
    tl.require_root("creates a loop device and a blkio cgroup")
    tl.require_blkio()
    with tl.scratch_fs("ext4", 256) as fs:
        path = os.path.join(fs.mnt, "thr.dat")
        make_file(path, 2 * MiB)
        tl.drop_caches()
        with tl.blkio_throttle(fs.devnum, read_bps=1 * MiB) as cg:
            w = Workload("wl-throttle", [{"op": "throttled", "path": path,
                                         "size": 1 * MiB}])
            tl.move_to_cgroup(cg, w.pid)
            # Both ways of timing off-CPU on the same request: the thread's scheduler
            # counters (default) and sched_switch (--offcpu-periods).
            proc = start_trace("-t", "100ms", "-p", w.pid)
            proc_sw = start_trace("-t", "100ms", "-p", w.pid, "--offcpu-periods")
            try:
                w.run()
                w.wait()
            finally:
                reqs, _, totals = stop_trace(proc)
                reqs_sw, _, _ = stop_trace(proc_sw)
        slow = [r for r in reqs if r["op"] in ("preadv", "preadv2")]
        assert len(slow) == 1, reqs
        r = slow[0]
        check_stages(r)
        st = r["stages"]
        assert r["total_us"] >= 300000, r
        # The throttle holds the bio before its worker queues it: throttle, not device time.
        assert st["throttle"] >= 0.5 * r["total_us"], st
        assert "throttled" in r["bios"][0]["flags"], r["bios"]
        assert max(b["d2c_us"] for b in r["bios"]) < 0.2 * r["total_us"], r["bios"]
        # The thread slept through nearly all of it, waiting for its bios.
        assert r["offcpu_from"] in ("counters", "counters_delayacct"), r
        assert st["offcpu"] >= 0.9 * r["total_us"], st
        assert st["iowait"] >= 0.9 * st["offcpu"], st
        sw = [x for x in reqs_sw if x["op"] == r["op"] and x["offset"] == r["offset"]]
        assert len(sw) == 1 and sw[0]["offcpu_from"] == "sched_switch", reqs_sw
        sw = sw[0]
        assert sw["switches"] == r["switches"] >= 1, (sw["switches"], r["switches"])
        # Counters miss only each sleep's wake-up latency: microseconds in a second.
        assert abs(sw["stages"]["offcpu"] - st["offcpu"]) <= 0.02 * r["total_us"], (
            sw["stages"], st)
        assert any(e["type"] == "offcpu" for e in sw["events"]), sw["events"]
        assert not any(e["type"] == "offcpu" for e in r["events"]), r["events"]


# thread_recs in trace.bpf.c: the records of syscall and fault requests, by tid.
NR_THREAD_RECS = 4096


def workload_with_pid_mod(comm, steps, mod, want, tries=20):
    """A Workload whose pid is `want` modulo `mod`: the next pid is set through
    /proc/sys/kernel/ns_last_pid (a pid in use, or another fork in between, spoils a
    try; the next one takes the next candidate)."""
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    last = int(open("/proc/sys/kernel/ns_last_pid").read())
    # Pids above the last one first, then those the allocator wraps around to (>= 300).
    cands = [p for p in range(want % mod, pid_max, mod) if p >= 300 and p != want]
    cands = [p for p in cands if p > last] + [p for p in cands if p <= last]
    for nxt in cands[:tries]:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(nxt - 1))
        w = Workload(comm, steps)
        if w.pid % mod == want % mod:
            return w
        w.p.kill()
        w.p.wait()
    pytest.fail("could not start a process with pid %d mod %d" % (want % mod, mod))


def test_threads_sharing_a_record_slot(iospan):
    """Two threads whose tids share a thread_recs slot, both in a request at once: the
    second one's record lives in the fallback hash, and both come out whole."""
    tl.require_root("creates a loop device and a blkio cgroup")
    tl.require_blkio()
    with tl.scratch_fs("ext4", 256) as fs:
        paths = [os.path.join(fs.mnt, "slot%d.dat" % i) for i in (1, 2)]
        for p in paths:
            make_file(p, 1 * MiB)
        tl.drop_caches()
        size = 512 * 1024
        with tl.blkio_throttle(fs.devnum, read_bps=1 * MiB) as cg:
            w1 = Workload("wl-slot1", [{"op": "throttled", "path": paths[0], "size": size}])
            w2 = workload_with_pid_mod("wl-slot2", [{"op": "throttled", "path": paths[1],
                                                     "size": size}],
                                       NR_THREAD_RECS, w1.pid)
            assert w1.pid != w2.pid
            for w in (w1, w2):
                tl.move_to_cgroup(cg, w.pid)
            proc = start_trace("-t", "0", "-d", fs.dev, "--ops", "preadv,preadv2")
            try:
                w1.run()
                time.sleep(0.2)  # w1 is in its read, held by the throttle
                w2.run()
                w1.wait()
                w2.wait()
                time.sleep(0.3)
            finally:
                reqs, _, totals = stop_trace(proc)
    mine = {w.pid: [r for r in reqs if r["pid"] == w.pid] for w in (w1, w2)}
    for pid, rs in mine.items():
        assert len(rs) == 1, (pid, [(r["pid"], r["op"]) for r in reqs])
        r = rs[0]
        check_stages(r)
        assert r["bytes"] == size and r["ret"] == size, r
        assert r["has_block_io"], r
        assert sum(b["bytes"] for b in r["bios"]) == size, r["bios"]
    # The two were in flight together (the second started inside the first).
    r1, r2 = mine[w1.pid][0], mine[w2.pid][0]
    assert r2["start_mono_ns"] < r1["start_mono_ns"] + r1["total_us"] * 1000, (r1, r2)
    assert totals["lost"] == 0, totals


def test_offcpu_counters_agree_with_sched_switch(iospan):
    """Default off-CPU accounts (scheduler counters) against sched_switch on the same
    direct reads: the same switches; off-CPU in all never more than by the requests'
    last running stretches, which the scheduler has not accounted yet when a request
    ends (from the thread's last switch-in, as the sched_switch tracer's off-CPU
    periods time it, to the counters tracer's end). One request's can be more: what
    the scheduler accounts at a switch or tick is split between requests by estimate
    (iospan-trace(8), OFF-CPU): up to 42 us beyond its stretch, in 10 to 13 of 400
    requests per run here, while in all the counters read 1.5 ms less than
    sched_switch over about 2.8 ms of stretches."""
    tl.require_root("creates a loop device and runs fio")
    with tl.loop_device(256, direct_io=True) as dev, tl.filesystem(dev, "ext4") as mnt:
        name = os.path.basename(dev)
        path = os.path.join(mnt, "fio.dat")
        make_file(path, 32 * MiB)
        proc = start_trace("-t", "0", "-d", name, "-i", "60")
        proc_sw = start_trace("-t", "0", "-d", name, "-i", "60", "--offcpu-periods")
        try:
            job = tl.fio(["--name=t", "--filename=%s" % path, "--bs=4k", "--direct=1",
                          "--rw=randread", "--size=32m", "--norandommap", "--randrepeat=0",
                          "--ioengine=psync", "--number_ios=400"])
        finally:
            reqs, _, _ = stop_trace(proc)
            reqs_sw, _, totals_sw = stop_trace(proc_sw)
    n = job["jobs"][0]["read"]["total_ios"]

    def preads(rs):
        return sorted((r for r in rs if r["op"] == "pread64" and r["path"] == path),
                      key=lambda r: r["start_mono_ns"])
    cnt, swr = preads(reqs), preads(reqs_sw)
    assert len(cnt) == len(swr) == n, (len(cnt), len(swr), n)
    # One synchronous thread: both tracers saw the same reads in the same order.
    assert [r["offset"] for r in cnt] == [r["offset"] for r in swr]
    tails, diffs, gap = [], [], 0
    for r, e in zip(cnt, swr):
        assert r["offcpu_from"] in ("counters", "counters_delayacct"), r
        assert e["offcpu_from"] == "sched_switch", e
        assert r["switches"] == e["switches"], (r, e)
        if e["bios_completed"] < e["bios_queued"]:
            # Its bio's completion ran none of the sched_switch tracer's programs (the
            # kernel gap of iospan-trace(8), declared below); in a loaded CI run, its
            # thread's switch back in went unseen with it (1 read in 400).
            gap += 1
            continue
        assert r["runq_us"] <= r["stages"]["offcpu"] + 0.001, r
        if not r["switches"]:
            assert r["stages"]["offcpu"] == 0 == e["stages"]["offcpu"], (r, e)
            continue
        d = r["stages"]["offcpu"] - e["stages"]["offcpu"]
        diffs.append(d)
        periods = [ev for ev in e["events"] if ev["type"] == "offcpu"]
        assert e["events_not_recorded"] == 0 and len(periods) == e["switches"], e
        last_in_ns = e["start_mono_ns"] + max(p["t_us"] * 1000 + p["arg"] for p in periods)
        tail_us = (r["start_mono_ns"] + r["total_us"] * 1000 - last_in_ns) / 1000
        tails.append(tail_us)
    assert gap <= totals_sw["counters"]["bio_completions_not_seen"], (gap, totals_sw)
    assert len(diffs) >= 0.9 * n, len(diffs)  # direct reads sleep for their bio
    q = statistics.quantiles(diffs, n=20)
    print("counters minus sched_switch off-CPU, us: median %.1f, p5 %.1f, p95 %.1f, "
          "min %.1f, max %.1f; in all %.1f, unaccounted stretches %.1f" % (
              statistics.median(diffs), q[0], q[-1], min(diffs), max(diffs), sum(diffs),
              sum(tails)))
    # Times printed to the ns: a few ns of rounding each.
    assert sum(diffs) <= sum(tails) + 0.01 * len(diffs), (sum(diffs), sum(tails))
    assert statistics.median([r["stages"]["offcpu"] for r in cnt]) > 0


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs"])
def test_writeback_of_pages_dirtied_before_tracing(iospan, fstype):
    """Writeback of pages dirtied before trace started has no known owner: it is still
    traced, with the right file and bytes, and its owner is null (not pid 0)."""
    tl.require_root("creates a loop device")
    pages = 4 * MiB // os.sysconf("SC_PAGE_SIZE")
    with tl.scratch_fs(fstype, 320) as fs:
        # The test's premise is checked, not assumed: the pages are still dirty once
        # tracing runs. A busy machine's flusher may write them early (over its dirty
        # thresholds); then the run says nothing and is repeated with a new file.
        for attempt in range(3):
            path = os.path.join(fs.mnt, "early%d.dat" % attempt)
            with open(path, "wb") as f:
                f.write(b"\x5a" * (4 * MiB))  # dirty, not flushed
            proc = start_trace("-t", "0", "--ops", "writeback")
            try:
                cache = tl.page_cache_state(path)
                subprocess.run(["sync", "-f", path], check=True, timeout=60)
            finally:
                reqs, _, totals = stop_trace(proc)
            if cache["nr_dirty"] == pages:
                break
        assert cache["nr_dirty"] == pages, ("written back before tracing, 3 times", cache)
        mine = [r for r in reqs if r["op"] == "writeback" and r["path"] == path]
        # What was traced instead, in short (a btrfs run in CI once had none of the
        # file's: two 4 KiB writebacks only, the rest unseen; kept to tell why).
        assert mine, (attempt, path, cache, totals, [
            (r["op"], r["path"], r.get("ino"), r["bytes"], r["pid"], r.get("flusher_tid"))
            for r in reqs])
        assert sum(r["bytes"] for r in mine) == 4 * MiB, mine
        assert all(r["pid"] is None and r["comm"] is None for r in mine), mine
        assert all(r["flusher_tid"] for r in mine), mine


# File and directory filters on the first file system, the disk filter on the second:
# each file system in each role once.
@pytest.mark.parametrize("fa_type, fb_type", [("ext4", "xfs"), ("xfs", "btrfs"),
                                              ("btrfs", "ext4")])
def test_filters_two_processes(iospan, fa_type, fb_type):
    tl.require_root("creates loop devices and cgroups")
    with tl.scratch_fs(fa_type, 320) as fa, tl.scratch_fs(fb_type, 320) as fb, \
            tl.cgroup2("iospan-trace-a") as cga, tl.cgroup2("iospan-trace-b") as cgb:
        da, db = os.path.join(fa.mnt, "a"), os.path.join(fb.mnt, "b")
        os.mkdir(da)
        os.mkdir(os.path.join(da, "sub"))
        os.mkdir(db)
        fa1, fa2 = os.path.join(da, "sub", "one"), os.path.join(da, "two")
        fb1 = os.path.join(db, "one")
        for p in (fa1, fa2, fb1):
            make_file(p, 1 * MiB)
        wa = Workload("wl-a", [{"op": "dio_pread", "path": fa1, "n": 5},
                               {"op": "pread", "path": fa2, "n": 3},
                               {"op": "write_fsync", "path": os.path.join(da, "w"),
                                "n": 2, "size": 4096}], cgroup=cga)
        wb = Workload("wl-b", [{"op": "dio_pread", "path": fb1, "n": 7},
                               {"op": "write_fsync", "path": os.path.join(db, "w"),
                                "n": 1, "size": 4096}], cgroup=cgb)
        # Expected requests of each process: (preadv, pread64, write, fsync).
        filters = {
            "pid": (["-p", wa.pid], {wa.pid: 11}),
            "tid": (["--tid", wb.pid], {wb.pid: 9}),
            "comm": (["--comm", "wl-b"], {wb.pid: 9}),
            "cgroup": (["--cgroup", os.path.relpath(cga, tl.cgroup2_root())], {wa.pid: 11}),
            "file": (["--file", fa1], {wa.pid: 5}),
            "dir": (["--dir", da], {wa.pid: 11}),
            "subdir": (["--dir", os.path.join(da, "sub")], {wa.pid: 5}),
            "disk": (["-d", fb.dev], {wb.pid: 9}),
            "ops": (["--ops", "fsync,pread"], {wa.pid: 4, wb.pid: 1}),
            "combined": (["--cgroup", cgb, "--ops", "preadv,preadv2"], {wb.pid: 7}),
        }
        procs = {}
        try:
            for name, (args, _) in filters.items():
                procs[name] = start_trace("-t", "0", "-i", "60", "--ops",
                                          "read,write,pread64,preadv,preadv2,fsync", *args) \
                    if name not in ("ops", "combined") else \
                    start_trace("-t", "0", "-i", "60", *args)
            wa.run()
            wb.run()
            wa.wait()
            wb.wait()
            time.sleep(0.5)
        finally:
            results = {name: stop_trace(p) for name, p in procs.items()}
        for name, (args, want) in filters.items():
            reqs, _, totals = results[name]
            got = {}
            for r in reqs:
                if r["op"] == "writeback":
                    continue
                # System-wide filters also see other processes: only ours count.
                if name == "ops" and r["pid"] not in (wa.pid, wb.pid):
                    continue
                got[r["pid"]] = got.get(r["pid"], 0) + 1
            assert got == want, "filter %s %s: got %s want %s (%s)" % (
                name, args, got, want, [(r["pid"], r["op"], r["path"]) for r in reqs])
            assert totals["lost"] == 0, (name, totals)
            # Every request names the cgroup of its process, filtered by it or not.
            cg_of = {wa.pid: os.path.basename(cga), wb.pid: os.path.basename(cgb)}
            for r in reqs:
                if r["pid"] in cg_of and r["op"] != "writeback":
                    assert (r["cgroup"] or "").endswith(cg_of[r["pid"]]), (name, r["cgroup"])


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("args,needle", [
    (["-p", "999999999"], "pid"),
    (["-p", "abc"], "pid"),
    (["--tid", "999999999"], "tid"),
    (["--file", "/nonexistent/iospan-file"], "--file"),
    (["--dir", "/nonexistent/iospan-dir"], "--dir"),
    (["--dir", "/etc/hostname"], "not a directory"),
    (["-d", "nosuchdisk0"], "disk"),
    (["--cgroup", "/no/such/cgroup-iospan"], "cgroup"),
    (["-t", "fast"], "--threshold"),
    (["-t", "-5ms"], "--threshold"),
    (["-i", "0"], "--interval"),
    (["--duration", "soon"], "--duration"),
    (["--ops", "read,bogus"], "bogus"),
    (["--ops", ""], "--ops"),
    (["--comm", "a-very-long-thread-name"], "--comm"),
    (["extra"], "unexpected"),
])
def test_bad_input(iospan, args, needle):
    p = tl.run_iospan("trace", *args)
    assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], (args, p.stderr)
    assert p.stdout == ""
    pj = tl.run_iospan("--json", "trace", *args)
    assert pj.returncode == 2
    doc = json.loads(pj.stdout)
    assert needle in doc["error"]


def test_help(iospan):
    p = tl.run_iospan("trace", "--help")
    assert p.returncode == 0
    assert "--threshold" in p.stdout and "--perfetto" in p.stdout


def test_inode_only_writeback_is_no_request(iospan):
    """A direct read dirties only its file's inode (the access time, relatime: ext4 puts
    the inode on the writeback list, xfs logs it at once); trace --file started after it,
    then a sync: the flusher's pass over the inode writes no data page of the file, so it
    is no writeback request of it (it was one with 0 bytes at offset -1), only counted in
    writeback_without_data. Another sync on the machine between the read and the trace's
    start takes the pass away: the premise is checked, and the run repeated then."""
    tl.require_root("creates a loop device")
    with tl.scratch_fs("ext4", 320) as fs:
        for attempt in range(5):
            path = os.path.join(fs.mnt, "read-once%d.dat" % attempt)
            make_file(path, MiB)
            # relatime: a read sets the access time when it is not after the mtime.
            st = os.stat(path)
            os.utime(path, ns=(st.st_mtime_ns - 10**9, st.st_mtime_ns))
            w = Workload("atimereader", [{"op": "dio_pread", "path": path, "n": 4}])
            w.run()
            w.wait()
            assert os.stat(path).st_atime_ns > st.st_mtime_ns - 10**9, "no atime set"
            proc = start_trace("-t", "0", "--file", path)
            try:
                subprocess.run(["sync", "-f", path], check=True, timeout=60)
            finally:
                reqs, _, totals = stop_trace(proc)
            assert [r for r in reqs if r["op"] == "writeback"] == [], reqs
            assert totals["traced"] == totals["completed"] == len(reqs), totals
            if totals["counters"]["writeback_without_data"]:
                break
    assert totals["counters"]["writeback_without_data"] == 1, totals["counters"]
