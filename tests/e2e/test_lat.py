# SPDX-License-Identifier: GPL-2.0
"""`iospan lat`: block request latency and size distributions, against ground truth.

- its total count equals the requests /proc/diskstats completed on the disk (reads,
  writes, discards, flushes) in the same window, on ext4, xfs and btrfs;
- its d2c log2 rows agree with biolatency (libbpf-tools) run side by side;
- its q2c p50 and p99 agree with fio's completion latency percentiles (direct, QD1);
- --by stack tells direct I/O, buffered writeback and readahead apart; --by cgroup two
  cgroups (exact request counts); --size the workload's block sizes;
- bad input: one line, exit 2.
"""
import json
import math
import os
import re
import signal
import subprocess
import time

import pytest

import iospan_testlib as tl

KiB = 1024
MiB = 1 << 20

# Direct I/O on a block device or file: "op:path:bs:count[:offset_mib]", then
# {"pid": ...}. Each I/O is one request (sizes below the queue's max_sectors_kb).
DIRECT = r"""
import json, mmap, os, sys
for step in sys.argv[1:]:
    f = step.split(":")
    op, path, bs, count = f[0], f[1], int(f[2]), int(f[3])
    off = int(f[4]) << 20 if len(f) > 4 else 0
    buf = mmap.mmap(-1, bs)
    buf.write(b"d" * bs)
    fd = os.open(path, (os.O_RDWR if op == "w" else os.O_RDONLY) | os.O_DIRECT)
    for i in range(count):
        if op == "w":
            assert os.pwritev(fd, [buf], off + i * bs) == bs
        else:
            assert os.preadv(fd, [buf], off + i * bs) == bs
    os.close(fd)
print(json.dumps({"pid": os.getpid()}))
"""


def direct_io(*steps, cgroup=None):
    """Runs DIRECT's steps in a new process (in @cgroup); returns its pid."""
    pre = (lambda: tl.move_to_cgroup(cgroup)) if cgroup else None
    p = subprocess.run(["/usr/bin/python3", "-B", "-c", DIRECT] + list(steps),
                       capture_output=True, text=True, timeout=120, preexec_fn=pre)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])["pid"]


def ios(ds):
    return ds["rd_ios"] + ds["wr_ios"] + ds["dc_ios"] + ds["fl_ios"]


def settle(name, timeout=10):
    """Waits until the disk has nothing in flight and its counts stopped moving."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        ds = tl.read_diskstats()[name]
        if ds["in_flight"] == 0 and ds == last:
            return ds
        last = ds
        time.sleep(0.2)
    raise AssertionError("%s never settled" % name)


def total(reports):
    assert len(reports) == 1, reports
    return sum(h["count"] for h in reports[0]["histograms"])


@pytest.fixture(params=["ext4", "xfs", "btrfs"])
def fs(request):
    tl.require_root("creates loop devices and file systems, loads BPF")
    args = ("-E", "lazy_itable_init=0,lazy_journal_init=0") if request.param == "ext4" else ()
    with tl.scratch_fs(request.param, 320, mkfs_args=args) as fs:
        yield fs


def mixed_workload(fs):
    """Direct, buffered + fsync (flushes, FUA), readahead, discards."""
    path = os.path.join(fs.mnt, "data")
    with open(path, "wb") as f:
        f.truncate(8 * MiB)
    direct_io("w:%s:65536:64" % path, "r:%s:4096:100" % path)
    tl.dd(os.path.join(fs.mnt, "buffered"), bs="256K", count=32, conv="fsync")
    tl.drop_caches()
    with open(os.path.join(fs.mnt, "buffered"), "rb") as f:
        while f.read(MiB):
            pass
    os.unlink(os.path.join(fs.mnt, "buffered"))
    os.sync()
    subprocess.run(["fstrim", fs.mnt], capture_output=True)
    os.sync()


@pytest.mark.parametrize("keys", [(), ("-D", "-F"), ("--by", "pid"), ("--by", "stack")])
def test_count_matches_diskstats(fs, keys):
    """Every completed request counted once, as /proc/diskstats counts it: the sum over
    all keys equals the disk's reads + writes + discards + flushes in the window."""
    # The window opens once lat traces: a journal commit during its start-up (slow on a
    # loaded host) is in neither; it may be in lat's count, but not beyond @early.
    early = settle(fs.name)
    t = tl.Tracer("lat", "--json", "-d", fs.dev, *keys)
    before = settle(fs.name)
    mixed_workload(fs)
    after = settle(fs.name)
    reports = t.json_lines()
    late = tl.read_diskstats()[fs.name]
    n = total(reports)
    expect = ios(after) - ios(before)
    assert expect > 200, (before, after)
    assert after["fl_ios"] > before["fl_ios"], "the workload made no flush"
    # Anything the disk completed outside the window was in the tracer's too.
    drops = reports[0]["drops"]
    # Every request is counted or declared: a run of a program the kernel skipped
    # because it fired while the same program ran on that CPU (counted by the kernel),
    # a request whose owner record is missing (a skipped run at its queuing), or one the
    # kernel completed without running lat's program and without counting it, which
    # lat finds by comparing with /proc/diskstats (requests_not_seen; it happens: on
    # 6.18 tracefs saw the block_rq_complete that the program missed, about once in a
    # few hundred test runs). Declared losses stay rare.
    kinds = ("rd_ios", "wr_ios", "dc_ios", "fl_ios")
    declared = drops["programs_skipped"] + drops["requests_not_seen"] + drops["no_owner"]
    assert expect <= n + declared, "lat %d, diskstats %d: %s" % (
        n, expect, json.dumps([sorted(drops.items()), {k: after[k] - before[k] for k in kinds},
                               {k: late[k] - early[k] for k in kinds},
                               [{k: v for k, v in h.items() if k not in ("log2", "buckets")}
                                for h in reports[0]["histograms"]]]))
    # What this disk lost is rare. `programs_skipped` is the kernel's count for lat's
    # programs on every disk (the filter runs inside them): a completion of the backing
    # disk (vda) in an interrupt, landing while the loop worker's completion runs the
    # same program on that CPU, is skipped and counted too (7 in one CI run of 216 of
    # this disk's requests), so that count bounds nothing about this disk.
    assert expect - n <= max(2, 0.01 * expect), (n, expect, drops)
    assert n <= ios(late) - ios(early), (n, ios(late) - ios(early), drops)
    if not keys:
        assert drops["no_owner"] == 0, drops
    assert drops["map_full"] == 0 and drops["no_start"] == 0, drops


def sector_bytes(ds):
    return (ds["rd_sectors"] + ds["wr_sectors"] + ds["dc_sectors"]) * 512


def test_size_sums_to_diskstats_bytes(fs):
    """--size: the bytes of every request, as /proc/diskstats counts its sectors, also of
    a write whose data ended before its request did (a journal commit's flush sequence:
    the data part ends first, the request after the post-flush, with no bytes left)."""
    early = settle(fs.name)
    t = tl.Tracer("lat", "--json", "--size", "-d", fs.dev)
    before = settle(fs.name)
    mixed_workload(fs)
    after = settle(fs.name)
    rep = t.json_lines()[0]
    late = tl.read_diskstats()[fs.name]
    got = sum(round(h["cumulative"]["sum"] * 1024) for h in rep["histograms"] if h["count"])
    low, high = sector_bytes(after) - sector_bytes(before), sector_bytes(late) - sector_bytes(early)
    assert after["fl_ios"] > before["fl_ios"], "the workload made no flush"
    # A request whose end ran no program is declared (test_count_matches_diskstats);
    # each is at most the queue's largest request, a discard's or a read's or write's.
    queue = "/sys/block/%s/queue/" % fs.name
    with open(queue + "max_sectors_kb") as f, open(queue + "discard_max_bytes") as g:
        largest = max(int(f.read()) * 1024, int(g.read()))
    drops = rep["drops"]
    declared = drops["programs_skipped"] + drops["requests_not_seen"]
    assert low - declared * largest <= got <= high, (got, low, high, drops)


def test_q2c_keeps_its_start_at_depth():
    """q2c starts at a bio's queue time, kept in a table by bio address until its request
    ends. At 64 in flight, a bio queued meanwhile at an address whose slot collides must
    not take the stamp of one still in flight: with one slot per address it did, about 3
    requests in 10,000 (no_start; 676 of 2.36 million here, 1 of 254 in a CI run of
    test_count_matches_diskstats). With two, losing one needs both slots of a newcomer
    to hold live stamps: (64/65536)^2 per bio queued meanwhile, about 1 in 10^6.
    Bound: 1 in 10^4 (the old table's rate gives about 60 losses here, the bound 20)."""
    tl.require_root("creates loop devices, loads BPF")
    with tl.loop_device(256) as dev:
        name = os.path.basename(dev)
        settle(name)
        t = tl.Tracer("lat", "--json", "-d", dev)
        before = settle(name)
        tl.fio(["--name=depth", "--filename=%s" % dev, "--direct=1", "--ioengine=libaio",
                "--iodepth=128", "--numjobs=4", "--rw=randrw", "--bs=4k", "--size=256m",
                "--io_size=200m"], json=False)
        after = settle(name)
        rep = t.json_lines()[0]
    expect = ios(after) - ios(before)
    assert expect >= 200000, (before, after)
    drops = rep["drops"]
    n = sum(h["count"] for h in rep["histograms"])
    assert drops["no_start"] <= expect // 10000, (drops, n, expect)
    declared = sum(v for v in drops.values() if v)
    assert expect <= n + declared, (drops, n, expect)


BIOLAT_ROW = re.compile(r"^\s*(\d+)\s*->\s*(\d+)\s*:\s*(\d+)\s*\|")


def biolatency_rows(text):
    rows = {}
    for line in text.splitlines():
        m = BIOLAT_ROW.match(line)
        if m:
            rows[int(m.group(1))] = int(m.group(3))
    return rows


def test_d2c_agrees_with_biolatency():
    """Side by side on one disk, the same log2 rows within 1% of the total (or 2). The
    disk: a loop device doing direct I/O to data on the root disk, whose latencies
    spread over several rows (on a tmpfs-backed one most fall in 8-31 us, where the
    few hundred ns between the two tools' clock reads under load move whole percents
    across the 16 us boundary)."""
    tl.require_root("creates loop devices, loads BPF")
    with tl.loop_device(96, backing_dir="/var/tmp", direct_io=True) as dev:
        name = os.path.basename(dev)
        tl.dd(dev, if_="/dev/urandom", bs="1M", count=64, oflag="direct")
        settle(name)
        t = tl.Tracer("lat", "--json", "--stage", "d2c", "-d", dev)
        # Line-buffered, biolatency says "Tracing" once attached (after loading, which
        # can take seconds on a busy machine).
        bio = subprocess.Popen(["stdbuf", "-oL", "/usr/sbin/biolatency", "-d", name],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = bio.stdout.readline()
        assert first.startswith("Tracing"), (first, bio.stderr.read() if bio.poll() else "")
        tl.fio(["--name=mix", "--filename=%s" % dev, "--direct=1", "--ioengine=libaio",
                "--iodepth=4", "--rw=randrw", "--bs=4k", "--size=64m", "--number_ios=4000"],
               json=False)
        settle(name)
        bio.send_signal(signal.SIGINT)
        out, err = bio.communicate(timeout=30)
        reports = t.json_lines()
    theirs = biolatency_rows(out)
    # biolatency drops a request whose issue program the kernel skipped (nested on its
    # CPU); lat falls back to the kernel's stamp: a few fewer there.
    assert sum(theirs.values()) >= 3900, out + err
    h = reports[0]["histograms"]
    assert len(h) == 1
    ours = {r["low"]: r["count"] for r in h[0]["log2"]}
    tot = sum(theirs.values())
    assert abs(h[0]["count"] - tot) <= max(2, tot // 100), (h[0]["count"], tot)
    for low in set(ours) | set(theirs):
        a, b = ours.get(low, 0), theirs.get(low, 0)
        assert abs(a - b) <= max(2, tot // 100), (low, a, b, ours, theirs)
    # The exporters' cumulative buckets: at each bound le, biolatency's rows that end
    # at or below it; the last bound holds every request; sum is count times avg.
    cum = h[0]["cumulative"]
    assert cum["count"] == h[0]["count"]
    assert cum["buckets"][-1]["count"] == cum["count"], cum
    assert abs(cum["sum"] - h[0]["avg"] * h[0]["count"]) <= 0.001 * cum["sum"] + 1, cum
    for b in cum["buckets"]:
        below = sum(n for low, n in theirs.items() if max(2, low * 2) <= b["le"])
        assert abs(b["count"] - below) <= max(2, tot // 100), (b, below, theirs)


def interrupts():
    """Hardware interrupts served since boot, all CPUs (/proc/stat intr)."""
    with open("/proc/stat") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("intr "))


def nearest_rank(values, pct):
    values = sorted(values)
    # The rank-th smallest (1-based); 99.9% of 3000 is 2997, not 2997.0000000000005.
    return values[max(1, math.ceil(pct / 100.0 * len(values) - 1e-6)) - 1]


def test_q2c_percentiles():
    """A direct QD1 job of 3000 reads. Ground truth: each request's q2c from the kernel's
    own block_bio_queue and block_rq_complete events (tracefs, to the microsecond; Q to
    C, as btt's Q2C): lat's p50,
    p90, p99 and p99.9 are within 3.2% (+1 us of tracefs rounding) of the exact ones (of
    a rank or a few away: see below). fio's
    completion latency contains q2c (and the syscall and wake-up around it): lat's p50
    and p99 are at most fio's. (Within 10% of fio's does not hold on these fast loop
    devices: fio's p50 is 7-25 us above q2c, its p99 up to ms of its own scheduling
    delays; on a slow disk it does, test_q2c_percentiles_agree_with_fio_on_a_slow_disk.)"""
    tl.require_root("creates loop devices, loads BPF, uses tracefs")
    with tl.loop_device(128) as dev:
        name = os.path.basename(dev)
        tl.dd(dev, if_="/dev/urandom", bs="1M", count=64, oflag="direct")
        settle(name)
        with tl.block_events(tl.devnum_of(name), events=("block_bio_queue",
                                                         "block_rq_complete")) as ev:
            t = tl.Tracer("lat", "--json", "-d", dev)
            irqs0, t0 = interrupts(), time.monotonic()
            doc = tl.fio(["--name=qd1", "--filename=%s" % dev, "--direct=1",
                          "--ioengine=psync", "--rw=randread", "--bs=4k", "--size=64m",
                          "--number_ios=3000", "--percentile_list=50:99"])
            irqs, secs = interrupts() - irqs0, time.monotonic() - t0
            settle(name)
            reports = t.json_lines()
            events = ev.read()
    start, q2c = {}, []
    for evname, ts, sector, n, rwbs in events:
        if evname == "block_bio_queue":
            start[(sector, n)] = ts
        elif (sector, n) in start:
            q2c.append((ts - start.pop((sector, n))) / 1000.0)
    h = reports[0]["histograms"][0]
    # Every request, or declared: one the kernel completed without running lat's
    # program (requests_not_seen, HOW IT WORKS in iospan-lat(8); once 2999 of 3000).
    drops = reports[0]["drops"]
    declared = drops["programs_skipped"] + drops["requests_not_seen"]
    assert len(q2c) == 3000 and h["count"] <= 3000 <= h["count"] + declared, (h["count"], drops)
    assert declared <= 2, drops
    # lat and tracefs stamp Q and C in the same tracepoint calls, one probe after the
    # other, about 1 us apart; an interrupt landing between the two moves one
    # request's q2c in one of them by its length. At the tail, where ranks are sparse,
    # that moves a percentile: lat's is the truth of a rank at most @moved away. Those
    # interrupts: each of the run's lands in one of its 6000 1-us gaps with odds
    # 6000 us / the run's length; three times that many, at least 3.
    moved = max(3, math.ceil(3 * irqs * 6000e-6 / secs))
    ranked = sorted(q2c)
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        k = ranked.index(nearest_rank(q2c, p))
        low, high = ranked[max(0, k - moved)], ranked[min(len(ranked) - 1, k + moved)]
        assert low * (1 - 0.032) - 1.0 <= h[key] <= high * (1 + 0.032) + 1.0, (
            key, h[key], ranked[k], low, high, moved)
    fio_pct = doc["jobs"][0]["read"]["clat_ns"]["percentile"]
    assert h["p50"] <= fio_pct["50.000000"] / 1000.0 * 1.05, (h["p50"], fio_pct)
    assert h["p99"] <= fio_pct["99.000000"] / 1000.0 * 1.05, (h["p99"], fio_pct)


def test_q2c_percentiles_agree_with_fio_on_a_slow_disk():
    """On a disk whose requests take a hundred milliseconds, as a busy real disk's can
    (a loop device whose reads wait in blk-throttle below it: 16 KiB at 128 KiB/s is
    more than a throttle slice of 0.1 s allows, so every request waits; with a smaller
    request half of them would pass at once), fio's completion latency is the request's
    q2c plus the syscall and wake-up around it: lat's p50 and p99 of q2c are within 10%
    of fio's for a direct QD1 job, and at most fio's (give or take lat's bucket error,
    3.2%). On this VM's fast loop devices fio's own overhead is most of its latency
    (test_q2c_percentiles)."""
    tl.require_root("creates loop devices and a blkio cgroup, loads BPF")
    n = 24
    with tl.slow_disk(read_bps=128 * 1024) as (dev, cgroup):
        name = os.path.basename(dev)
        settle(name)
        t = tl.Tracer("lat", "--json", "-d", dev)
        doc = tl.fio(["--name=qd1", "--filename=%s" % dev, "--direct=1", "--ioengine=psync",
                      "--rw=randread", "--bs=16k", "--size=30m", "--number_ios=%d" % n,
                      "--percentile_list=50:99", "--clocksource=clock_gettime"],
                     cgroup=cgroup)
        settle(name)
        reports = t.json_lines()
    h = reports[0]["histograms"][0]
    job = doc["jobs"][0]["read"]
    assert h["count"] == job["total_ios"] == n, (h["count"], job["total_ios"])
    fio_pct = job["clat_ns"]["percentile"]
    for key, p in (("p50", "50.000000"), ("p99", "99.000000")):
        fio_us = fio_pct[p] / 1000.0
        print("%s: lat q2c %.1f us, fio clat %.1f us" % (key, h[key], fio_us))
        assert fio_us >= 10000, ("not a slow disk", key, fio_us)
        assert 0.9 * fio_us <= h[key] <= 1.032 * fio_us, (key, h[key], fio_us)


def test_by_stack_separates_kinds():
    """Direct I/O, buffered writeback and readahead each under their own stacks, credited
    to who queued them: the direct writer, the flusher, the reader."""
    tl.require_root("creates loop devices and file systems, loads BPF")
    with tl.scratch_fs("ext4", 256) as fs:
        path = os.path.join(fs.mnt, "d")
        with open(path, "wb") as f:
            f.truncate(4 * MiB)
        os.sync()
        t = tl.Tracer("lat", "--json", "--by", "stack", "-d", fs.dev)
        writer = direct_io("w:%s:65536:64" % path)
        with open(os.path.join(fs.mnt, "b"), "wb") as f:
            f.write(b"b" * (4 * MiB))
        os.sync()  # written back by the flusher
        tl.drop_caches()
        reader = subprocess.run(["/usr/bin/python3", "-B", "-c",
                                 "import os\nf = open(%r, 'rb')\nwhile f.read(1 << 20): pass\n"
                                 "print(os.getpid())" % os.path.join(fs.mnt, "b")],
                                capture_output=True, text=True, check=True)
        reader = int(reader.stdout)
        settle(fs.name)
        rows = t.json_lines()[0]["histograms"]
    by_kind = {}
    for r in rows:
        by_kind.setdefault(r["kind"], []).append(r)
    # A stack the kernel's stack map refused (its bucket held another) is declared
    # (stack_lost): its requests keep their process and kind, its frames are unknown.
    def through(r, *frames):
        return r.get("stack_lost") or any(x in f for f in r["stack"] for x in frames)

    direct = by_kind.get("direct", [])
    assert sum(r["count"] for r in direct if r["pid"] == writer) == 64, direct
    assert all(through(r, "iomap_dio") for r in direct if r["pid"] == writer), direct
    wb = [r for r in by_kind.get("buffered", []) if through(r, "writepages")]
    assert wb and sum(r["count"] for r in wb) >= 4 * MiB // (1280 * KiB), by_kind
    assert all(r["pid"] not in (writer, reader) for r in wb)
    ra = [r for r in by_kind.get("readahead", []) if r["pid"] == reader]
    assert ra and all(through(r, "read_pages", "readahead") for r in ra), \
        by_kind.get("readahead")
    # Each distribution is its own: no stack shows up under two kinds.
    keys = [(r["pid"], tuple(r["stack"]), r["kind"]) for r in rows]
    assert len(keys) == len(set(keys))


# Reads a cold file one way; prints its pid.
READ_KINDS = r"""
import mmap, os, random, sys
how, path = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size
if how == "sequential":
    while os.read(fd, 1 << 16):
        pass
elif how == "random":
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    rnd = random.Random(1)
    for _ in range(64):
        os.pread(fd, 4096, rnd.randrange(size // 4096) * 4096)
elif how == "readahead":
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.readahead.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_size_t]
    assert libc.readahead(fd, 0, size) == 0
elif how == "fadvise":
    os.posix_fadvise(fd, 0, size, os.POSIX_FADV_WILLNEED)
elif how in ("madvise", "fault"):
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
    if how == "madvise":
        m.madvise(mmap.MADV_WILLNEED)
    else:
        sum(m[off] for off in range(0, size, 4096))
    m.close()
print(os.getpid())
"""

# What the stack of each way's reads shows (kinds a way may also make, beside).
READ_WAYS = {
    "sequential": ({"read", "readahead"}, set()),
    "random": ({"read"}, set()),
    "readahead": ({"readahead(2)"}, set()),
    "fadvise": ({"fadvise"}, set()),
    "madvise": ({"madvise"}, set()),
    "fault": ({"fault"}, {"readahead"}),
}


def test_by_stack_names_read_kinds():
    """Page cache reads of cold files, each way in its own process: lat --by stack
    names each request by its stack, not "readahead" for all that the block layer
    marks so (a read's own miss, async readahead, readahead(2), WILLNEED advice from
    fadvise or madvise, a page fault)."""
    tl.require_root("creates loop devices and file systems, loads BPF")
    with tl.scratch_fs("ext4", 256) as fs:
        paths = {}
        for how in READ_WAYS:
            paths[how] = os.path.join(fs.mnt, how)
            with open(paths[how], "wb") as f:
                f.write(os.urandom(4 * MiB))
        os.sync()
        for path in paths.values():
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        t = tl.Tracer("lat", "--json", "--by", "stack", "-d", fs.dev)
        pids = {}
        for how, path in paths.items():
            p = subprocess.run(["/usr/bin/python3", "-B", "-c", READ_KINDS, how, path],
                               capture_output=True, text=True, check=True)
            pids[int(p.stdout)] = how
        settle(fs.name)
        rows = t.json_lines()[0]["histograms"]
    kinds = {how: {} for how in READ_WAYS}
    for r in rows:
        if r["pid"] in pids and not r.get("stack_lost"):
            k = kinds[pids[r["pid"]]]
            k[r["kind"]] = k.get(r["kind"], 0) + r["count"]
    print(kinds)
    for how, (must, may) in READ_WAYS.items():
        assert must <= set(kinds[how]) <= must | may, (how, kinds[how])


def test_by_cgroup_separates_cgroups():
    """Two cgroups doing known numbers of direct requests: exactly those counts each."""
    tl.require_root("creates loop devices and cgroups, loads BPF")
    with tl.loop_device(128) as dev, tl.cgroup2("lat-a") as a, tl.cgroup2("lat-b") as b:
        t = tl.Tracer("lat", "--json", "--by", "cgroup", "-d", dev)
        only_b = tl.Tracer("lat", "--json", "--cgroup", b, "-d", dev)
        direct_io("r:%s:4096:150" % dev, cgroup=a)
        direct_io("w:%s:8192:250:16" % dev, cgroup=b)
        settle(os.path.basename(dev))
        rep = t.json_lines()[0]
        frep = only_b.json_lines()[0]
    rows, filtered = rep["histograms"], frep["histograms"]
    # Exact, but for requests lat says it lost: owners whose record was lost, and runs
    # of its programs the kernel skipped (nested on a CPU; seen once in 400 requests on
    # this busy machine).
    lost = rep["drops"]["no_owner"] + rep["drops"]["programs_skipped"]
    counts = {r["cgroup"].rstrip("/").split("/")[-1]: r["count"] for r in rows}
    for cg, n in ((a, 150), (b, 250)):
        got = counts.get(os.path.basename(cg), 0)
        assert n - lost <= got <= n, (cg, got, n, rep["drops"], rows)
    # --cgroup: that cgroup's requests only.
    flost = frep["drops"]["no_owner"] + frep["drops"]["programs_skipped"]
    assert len(filtered) == 1 and 250 - flost <= filtered[0]["count"] <= 250, frep


# btrfs re-initializes the bios iomap gives it for direct I/O with its own end_io
# (btrfs_bio_init()), so the block-attribution core does not find their file: of a
# cold 4 MiB direct read, 2 MiB are shown without it, and --file/--dir miss them (snoop
# too). Top finds it from the direct I/O's start (iomap_dio_rw_begin).
BTRFS_DIO_FILE = pytest.mark.xfail(
    strict=True, reason="btrfs direct I/O bios lose their file in blk_owner.bpf.h")


@pytest.mark.parametrize("fstype", ["ext4", "xfs", pytest.param("btrfs", marks=BTRFS_DIO_FILE)])
def test_target_filters_keep_exactly_their_bytes(fstype):
    """Every target filter, alone, side by side over one workload: processes lat-a and
    lat-b, each in its own cgroup and directory, write 4 MiB to one file from their main
    thread and read 4 MiB of another from a second thread (O_DIRECT, cold caches). lat
    --size --by file -F under each filter: the bytes of each file the filter names,
    per op, exactly the workload's own counts, and of no other file. Process filters
    may also keep the target's own metadata reads (btrfs reads checksum tree blocks for
    a cold direct read), file filters nothing without a file."""
    tl.require_root("creates loop devices, file systems and cgroups, loads BPF")
    size = 4 * MiB
    with tl.filter_targets(fstype, size, names=("lat-a", "lat-b")) as tg:
        files = tg.files
        # Each filter: its arguments, what it names ({path: (op, bytes)}), and whether
        # it names a process (which may have metadata requests of its own).
        runs = {k: (args, {path: ("Write" if op == "write" else "Read", size)
                           for path, op in keeps.items()}, proc)
                for k, (args, keeps, proc) in tg.filters.items()}
        tracers = {k: tl.Tracer("lat", "--json", "--size", "--by", "file", "-F", *args)
                   for k, (args, _, _) in runs.items()}
        try:
            tg.run()
            settle(tg.fs.name)
        finally:
            reps = {k: t.json_lines()[0] for k, t in tracers.items()}
    for k, (_, want, proc) in runs.items():
        rep = reps[k]
        got, other = {}, []
        for h in rep["histograms"]:
            op = "Write" if h["flags"].endswith("Write") else "Read" if \
                h["flags"].endswith("Read") else h["flags"]
            n = round(h["cumulative"]["sum"] * 1024)
            if h["path"] in files["lat-a"] + files["lat-b"]:
                got[(h["path"], op)] = got.get((h["path"], op), 0) + n
            else:
                other.append(h)
        # A request whose owner record is missing (its queue program skipped) is
        # declared (no_owner), at most one 1 MiB call's bytes each.
        lost = rep["drops"]["no_owner"] + rep["drops"]["programs_skipped"]
        assert set(got) <= {(path, op) for path, (op, _) in want.items()}, (fstype, k, got)
        for path, (op, n) in want.items():
            assert n - lost * MiB <= got.get((path, op), 0) <= n, (
                fstype, k, path, got, rep["drops"])
        assert all(proc and h["kind"] == "meta" and h["flags"].endswith("Read")
                   for h in other), (fstype, k, other)


def test_by_file_names_the_file():
    """--by file: the direct I/O of a file under its inode and fs, kind direct."""
    tl.require_root("creates loop devices and file systems, loads BPF")
    with tl.scratch_fs("xfs", 320) as fs:
        path = os.path.join(fs.mnt, "f")
        with open(path, "wb") as f:
            f.truncate(8 * MiB)
        os.sync()
        t = tl.Tracer("lat", "--json", "--by", "file", "-d", fs.dev)
        direct_io("w:%s:16384:48" % path, "r:%s:16384:16" % path)
        settle(fs.name)
        rows = t.json_lines()[0]["histograms"]
        ino = os.stat(path).st_ino
    mine = [r for r in rows if r["ino"] == ino]
    assert [(r["kind"], r["count"], r["file_dev"]) for r in mine] == [
        ("direct", 64, fs.devnum)], rows


def test_size_matches_block_sizes():
    """--size: 16 KiB reads and 64 KiB writes in their KiB rows, --by pid."""
    tl.require_root("creates loop devices, loads BPF")
    with tl.loop_device(128) as dev:
        t = tl.Tracer("lat", "--json", "--size", "--by", "pid", "-d", dev)
        pid = direct_io("r:%s:16384:120" % dev, "w:%s:65536:80:32" % dev)
        settle(os.path.basename(dev))
        rep = t.json_lines()[0]
    assert rep["unit"] == "KiB" and rep["stage"] == "size"
    mine = [r for r in rep["histograms"] if r["pid"] == pid]
    assert len(mine) == 1, rep["histograms"]
    rows = {r["low"]: r["count"] for r in mine[0]["log2"] if r["count"]}
    fine = {(b["low"], b["high"]): b["count"] for b in mine[0]["buckets"]}
    # Every request in its size's row, or declared: one the kernel completed without
    # running lat's program (requests_not_seen; 119 of 120 reads once in CI).
    drops = rep["drops"]
    declared = drops["programs_skipped"] + drops["requests_not_seen"]
    assert declared <= 2, drops
    assert set(rows) == {16, 64} and rows[16] <= 120 and rows[64] <= 80, rows
    seen = rows[16] + rows[64]
    assert seen <= 200 <= seen + declared, (rows, drops)
    assert fine == {(16.0, 16.5): rows[16], (64.0, 66.0): rows[64]}, fine


def test_text_report_and_interval():
    """[interval [count]]: count reports, each with rows, percentiles and -T's time."""
    tl.require_root("creates loop devices, loads BPF")
    with tl.loop_device(64) as dev:
        p = tl.start_tracing("lat", "-T", "-m", "-d", dev, "1", "2")
        direct_io("r:%s:4096:200" % dev)
        out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert len(re.findall(r"^\d\d:\d\d:\d\d$", out, re.M)) == 2, out
    assert "msecs" in out and "p99.9" in out and "(ms)" in out, out


@pytest.mark.parametrize("args,what", [
    (("-d", "nosuchdisk0"), "nosuchdisk0"),
    (("--by", "inode"), "--by"),
    (("--stage", "i2c"), "--stage"),
    (("0",), "interval"),
    (("1", "0"), "count"),
    (("abc",), "abc"),
    (("--size", "--stage", "d2c"), "--size"),
    (("--size", "-m"), "-m"),
    (("--by", "pid", "--by", "comm"), "--by"),
    (("--max-entries", "1"), "--max-entries"),
    (("--bogus",), "--bogus"),
])
def test_bad_input(args, what):
    p = tl.run_iospan("lat", *args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and what in lines[0], p.stderr
    assert p.stdout == ""


def test_stages_add_up():
    """Three tracers side by side on one disk: the same requests, and for them q2d + d2c
    is q2c: averages within 1% + 1 us (each program reads the clock itself, one after the
    other: under load the reads drift apart by up to a microsecond)."""
    tl.require_root("creates loop devices, loads BPF")
    with tl.loop_device(96, backing_dir="/var/tmp", direct_io=True) as dev:
        tl.dd(dev, if_="/dev/urandom", bs="1M", count=64, oflag="direct")
        settle(os.path.basename(dev))
        ts = {s: tl.Tracer("lat", "--json", "--stage", s, "-d", dev)
              for s in ("q2c", "q2d", "d2c")}
        tl.fio(["--name=mix", "--filename=%s" % dev, "--direct=1", "--ioengine=libaio",
                "--iodepth=8", "--rw=randrw", "--bs=4k", "--size=64m", "--number_ios=2000"],
               json=False)
        settle(os.path.basename(dev))
        reps = {s: t.json_lines()[0] for s, t in ts.items()}
    h = {s: r["histograms"][0] for s, r in reps.items()}
    drops = {s: r["drops"] for s, r in reps.items()}
    assert h["q2c"]["count"] == h["q2d"]["count"] == h["d2c"]["count"] >= 1900, drops
    parts = h["q2d"]["avg"] + h["d2c"]["avg"]
    assert abs(parts - h["q2c"]["avg"]) <= 0.01 * h["q2c"]["avg"] + 1.0, (parts, h["q2c"]["avg"])
