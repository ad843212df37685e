# SPDX-License-Identifier: GPL-2.0
"""End-to-end tests for `iospan top` on real loop devices (ext4, xfs and btrfs).

One traced session per file system runs a known mixed workload, each part in its own
process and cgroup v2 child: direct-I/O reads and writes, buffered write + fsync, a
buffered write left dirty and written back by `sync` from another process, a buffered
read after drop_caches, and mmap reads and writes. Each workload process prints its
own /proc/self/io just before exiting, so its DISK bytes can be checked against the
kernel's account as well as against the workload's size. Another test creates a real
I/O stall with blk-throttle (cgroup v1 blkio) and expects it with a kernel stack.
"""
import fcntl
import json
import os
import re
import select
import signal
import subprocess
import time

import pytest

import iospan_testlib as tl

MiB = 1 << 20
SIZE = 8 * MiB
TOLERANCE = 0.02

# The workload processes. Each prints {"pid": ..., "io": /proc/self/io} last.
WORKLOAD = r"""
import json, mmap, os, sys

op, size = sys.argv[1], int(sys.argv[2])
paths = sys.argv[3:]
CHUNK = 1 << 20

def direct_buffer():
    return mmap.mmap(-1, CHUNK)  # page aligned, as O_DIRECT needs

if op == "dio":
    wpath, rpath = paths
    buf = direct_buffer()
    buf.write(b"d" * CHUNK)
    fd = os.open(wpath, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
    for off in range(0, size, CHUNK):
        assert os.pwritev(fd, [buf], off) == CHUNK
    os.close(fd)
    fd = os.open(rpath, os.O_RDONLY | os.O_DIRECT)
    for off in range(0, size, CHUNK):
        assert os.preadv(fd, [buf], off) == CHUNK
    os.close(fd)
elif op in ("write_fsync", "write_lazy"):
    fd = os.open(paths[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    block = b"w" * CHUNK
    for _ in range(size // CHUNK):
        assert os.write(fd, block) == CHUNK
    if op == "write_fsync":
        os.fsync(fd)
    os.close(fd)
elif op == "read":
    fd = os.open(paths[0], os.O_RDONLY)
    while os.read(fd, CHUNK):
        pass
    os.close(fd)
elif op == "mmap":
    rpath, wpath = paths
    fd = os.open(rpath, os.O_RDONLY)
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
    total = 0
    for off in range(0, size, 4096):
        total += m[off]
    m.close()
    os.close(fd)
    fd = os.open(wpath, os.O_RDWR)
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    for off in range(0, size, 4096):
        m[off:off + 8] = b"iospan!!"
    m.flush()
    m.close()
    os.close(fd)
elif op == "throttled_read":
    buf = mmap.mmap(-1, size)
    fd = os.open(paths[0], os.O_RDONLY | os.O_DIRECT)
    assert os.preadv(fd, [buf], 0) == size
    os.close(fd)
else:
    raise SystemExit("unknown op " + op)

with open("/proc/self/io") as f:
    io = {k.strip(): int(v) for k, v in (line.split(":") for line in f)}
print(json.dumps({"pid": os.getpid(), "io": io}))
"""

PYTHON = "/usr/bin/python3"


def run_workload(op, paths, cgroup, size=SIZE):
    """Runs one workload process in @cgroup; returns (pid, its /proc/self/io)."""
    p = subprocess.run([PYTHON, "-B", "-c", WORKLOAD, op, str(size)] + list(paths),
                       capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: tl.move_to_cgroup(cgroup))
    assert p.returncode == 0, "workload %s failed: %s" % (op, p.stderr)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["pid"], out["io"]


def start_top(*args):
    """Starts `iospan top --json ARGS` and waits until it traces."""
    return tl.start_tracing("top", "--json", *args)


def stop_top(proc):
    """SIGINT (Ctrl-C): it must print the report so far and exit 0."""
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, out, err)
    docs = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(docs) == 1, out
    return docs[0]


def rel_cgroup(path):
    return "/" + os.path.relpath(path, tl.cgroup2_root())


def within(actual, expected, tol=TOLERANCE):
    return abs(actual - expected) <= tol * expected


def process(doc, pid):
    rows = [p for p in doc["processes"] if p["pid"] == pid]
    assert len(rows) == 1, "pid %d not in the report: %s" % (
        pid, [(p["pid"], p["comm"]) for p in doc["processes"]])
    return rows[0]


def on_device(proc, fs, key):
    """A process's bytes of @key on the scratch file system @fs: its files (keyed by the
    file system's dev, an anonymous one on btrfs) and its no-file rows (the disk's)."""
    return sum(f[key] for f in proc["files"] if f["dev"] in (fs.devnum, fs.fsdev))


def the_file(proc, path):
    path = os.path.realpath(path)
    rows = [f for f in proc["files"] if f["path"] == path]
    assert len(rows) == 1, "%s not among the files of %d: %s" % (
        path, proc["pid"], [f["path"] for f in proc["files"]])
    return rows[0]


@pytest.fixture(scope="module", params=["ext4", "xfs", "btrfs"])
def session(request):
    """One traced run of the whole mixed workload on a fresh file system."""
    tl.require_root("creates loop devices, file systems and cgroups, loads BPF")
    fstype = request.param
    # The mmap workload runs in a cgroup named the way Docker's systemd driver names one.
    container = os.urandom(32).hex()
    with tl.scratch_fs(fstype, 512) as fs, \
            tl.cgroup2("top-dio") as cg_dio, tl.cgroup2("top-fsync") as cg_fsync, \
            tl.cgroup2("top-lazy") as cg_lazy, tl.cgroup2("top-read") as cg_read, \
            tl.cgroup2("docker-%s.scope" % container, unique=False) as cg_mmap:
        f = {name: os.path.join(fs.mnt, name + ".dat") for name in
             ("dio_read", "dio_write", "fsync", "lazy", "read", "mmap_read", "mmap_write")}
        for name in ("dio_read", "read", "mmap_read"):
            tl.dd(f[name], bs="1M", count=SIZE // MiB, conv="fsync")
        with open(f["mmap_write"], "wb") as fh:
            fh.truncate(SIZE)  # sparse: mmap stores allocate, they do not read
        tl.drop_caches()
        # Warm the interpreter again, so workload processes read only their files.
        subprocess.run([PYTHON, "-B", "-c", "import json, mmap, os, sys"], check=True)

        top = start_top("--duration", "120", "--max-files", "50", "-n", "100")
        try:
            runs = {
                "dio": run_workload("dio", [f["dio_write"], f["dio_read"]], cg_dio),
                "fsync": run_workload("write_fsync", [f["fsync"]], cg_fsync),
                "lazy": run_workload("write_lazy", [f["lazy"]], cg_lazy),
                "read": run_workload("read", [f["read"]], cg_read),
                "mmap": run_workload("mmap", [f["mmap_read"], f["mmap_write"]], cg_mmap),
            }
            # Another process writes the lazy writer's pages back.
            subprocess.run(["sync"], check=True)
            time.sleep(0.3)
        finally:
            doc = stop_top(top)
        yield {
            "fs": fs, "doc": doc, "runs": runs, "files": f, "container": container,
            "cgroups": {"dio": cg_dio, "fsync": cg_fsync, "lazy": cg_lazy, "read": cg_read,
                        "mmap": cg_mmap},
        }


# Expected DISK bytes of each workload on the scratch device: (read, write).
EXPECTED_DISK = {
    "dio": (SIZE, SIZE),
    "fsync": (0, SIZE),
    "lazy": (0, SIZE),
    "read": (SIZE, 0),
    "mmap": (SIZE, SIZE),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_DISK))
def test_disk_bytes_match_workload(session, name):
    pid, _ = session["runs"][name]
    p = process(session["doc"], pid)
    want_r, want_w = EXPECTED_DISK[name]
    got_r = on_device(p, session["fs"], "disk_read_bytes")
    got_w = on_device(p, session["fs"], "disk_write_bytes")
    for want, got, what in ((want_r, got_r, "read"), (want_w, got_w, "write")):
        if want:
            assert within(got, want), "%s %s: %d bytes, expected %d" % (name, what, got, want)
        else:
            # Metadata (inode tables, journal, xfs log) may add a little, never MiBs.
            assert got < 0.02 * SIZE, "%s %s: %d bytes, expected ~0" % (name, what, got)


@pytest.mark.parametrize("name", sorted(EXPECTED_DISK))
def test_disk_bytes_match_proc_io(session, name):
    pid, io = session["runs"][name]
    p = process(session["doc"], pid)
    for ours, theirs in (("disk_read_bytes", "read_bytes"), ("disk_write_bytes", "write_bytes")):
        if io[theirs] == 0:
            assert p[ours] < 0.02 * SIZE, (name, ours, p[ours])
        else:
            assert within(p[ours], io[theirs]), "%s: %s %d vs /proc/%d/io %s %d" % (
                name, ours, p[ours], pid, theirs, io[theirs])


def test_cgroups_and_paths(session):
    doc, runs, f, cg = session["doc"], session["runs"], session["files"], session["cgroups"]
    expect = {
        "dio": [(f["dio_read"], True), (f["dio_write"], True)],
        "fsync": [(f["fsync"], False)],
        "lazy": [(f["lazy"], False)],
        "read": [(f["read"], False)],
        "mmap": [(f["mmap_read"], False), (f["mmap_write"], False)],
    }
    for name, files in expect.items():
        p = process(doc, runs[name][0])
        assert p["cgroup"] == rel_cgroup(cg[name]), (name, p["cgroup"])
        assert p["comm"] == "python3"
        for path, direct in files:
            row = the_file(p, os.path.realpath(path))
            assert row["direct"] is direct, (name, path, row)
            assert row["dev"] == session["fs"].fsdev
            assert row["inode"] == os.stat(path).st_ino
            assert row["disk"] == session["fs"].name


def test_file_rows_name_files(session):
    """Every file row on the scratch file system, of any process (flushers included),
    is a file of the workload with its path; file system metadata (btrfs's btree
    pages, a regular file's page cache to the kernel) is metadata, never a file."""
    doc, fs = session["doc"], session["fs"]
    ours = {os.path.realpath(p) for p in session["files"].values()}
    rows = [(p["pid"], p["comm"], f) for p in doc["processes"] for f in p["files"]
            if f["dev"] == fs.fsdev and f["kind"] == "file"]
    assert rows
    for pid, comm, f in rows:
        assert f["path"] in ours, (pid, comm, f)


def test_container_id(session):
    """A cgroup named docker-<64 hex>.scope is a container with a 12-digit short id."""
    p = process(session["doc"], session["runs"]["mmap"][0])
    assert p["container"] == session["container"][:12]
    assert p["container_runtime"] == "docker"
    assert p["cgroup"] == rel_cgroup(session["cgroups"]["mmap"])


def test_fs_bytes(session):
    """FS bytes per file (the interpreter's own reads of its modules are elsewhere)."""
    doc, runs, f = session["doc"], session["runs"], session["files"]

    def row(name, path):
        return the_file(process(doc, runs[name][0]), path)

    assert row("read", f["read"])["fs_read_bytes"] == SIZE
    assert row("fsync", f["fsync"])["fs_write_bytes"] == SIZE
    assert row("lazy", f["lazy"])["fs_write_bytes"] == SIZE
    assert row("dio", f["dio_read"])["fs_read_bytes"] == SIZE
    assert row("dio", f["dio_write"])["fs_write_bytes"] == SIZE
    # Pages dirtied through the mapping, and pages mapped in by faults read page by page:
    # each once, the fault-around ranges widened to the large folios newer kernels map.
    assert row("mmap", f["mmap_write"])["fs_write_bytes"] == SIZE
    assert row("mmap", f["mmap_read"])["fs_read_bytes"] == SIZE
    assert row("mmap", f["mmap_read"])["mmap"] is True


def test_writeback_credited_to_writer(session):
    doc, runs, f, cg = session["doc"], session["runs"], session["files"], session["cgroups"]
    pid = runs["lazy"][0]
    rows = [w for w in doc["writeback"] if w["pid"] == pid]
    assert rows, "no writeback for the lazy writer: %s" % doc["writeback"]
    assert sum(w["disk_write_bytes"] for w in rows) >= (1 - TOLERANCE) * SIZE
    assert all(w["path"] == os.path.realpath(f["lazy"]) for w in rows), rows
    assert all(w["cgroup"] == rel_cgroup(cg["lazy"]) for w in rows)
    assert all(w["flusher_tid"] != pid for w in rows)
    row = the_file(process(doc, pid), f["lazy"])
    assert row["writeback"] is True
    assert within(row["disk_write_bytes"], SIZE)


def test_coverage(session):
    doc, fs = session["doc"], session["fs"]
    devs = [d for d in doc["devices"] if d["disk"] == fs.name]
    assert len(devs) == 1, doc["devices"]
    d = devs[0]
    assert d["traced"] is True
    assert d["diskstats_read_bytes"] >= 3 * SIZE and d["diskstats_write_bytes"] >= 4 * SIZE
    assert d["coverage_pct"] >= 99.0, d
    assert d["attributed_pct"] >= 99.0, d


def test_latency_and_drops(session):
    doc, runs = session["doc"], session["runs"]
    p = process(doc, runs["dio"][0])
    assert p["q2c_avg_us"] > 0 and p["q2c_max_us"] >= p["q2c_avg_us"]
    assert p["requests"] > 0
    # Informational: bios without an owner record, and page cache writes without a
    # dirtier (here the loop devices' writes to their backing files, dirtied by a kernel
    # thread), requests whose first bio's queue time is not known (their bytes counted:
    # a loaded machine skips a queue program now and then, see iospan-top(8)), and the
    # completions the kernel ran no program for, which top finds and declares (the
    # kernel's gap, iospan-top(8) *Completions not seen*: one flush in a clean-clone CI
    # run here; their bytes are in test_coverage's 99%).
    info = ("unmatched_bios", "writeback_dirtier_unknown_bytes",
            "requests_without_queue_time", "completions_unseen", "completion_unseen_bytes")
    lost = {k: v for k, v in doc["dropped"].items() if v and k not in info}
    assert not lost, doc["dropped"]


FSTYPES = ["ext4", "xfs", "btrfs"]
PWRITE = "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); " \
         "os.pwrite(fd, b'p' * int(sys.argv[3]), int(sys.argv[2]))"


@pytest.mark.parametrize("fstype", FSTYPES)
def test_writeback_credited_per_page(fstype):
    """A synced 64 MiB file: dd rewrites its first 48 MiB, then another process 1 MiB at
    60 MiB, and one `sync -f` writes both back: each process is credited the pages it
    dirtied (not the file's last dirtier all of them), exactly."""
    tl.require_root("creates loop devices and file systems")
    writeback_per_page(fstype)


# Dirties the file's first 64 KiB and starts their writeback, which blk-throttle holds
# (its cgroup's write rate); waits for a line, then waits for that writeback to end.
HELD_WRITER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.sync_file_range.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
fd = os.open(sys.argv[1], os.O_WRONLY)
sys.stdin.readline()
os.pwrite(fd, b"a" * 65536, 0)
if libc.sync_file_range(fd, 0, 65536, 2):  # SYNC_FILE_RANGE_WRITE: start, do not wait
    sys.exit(os.strerror(ctypes.get_errno()))
print("held", flush=True)
sys.stdin.readline()
os.fdatasync(fd)
"""
# Dirties the same pages again, then syncs them: prints how long the sync took (s).
REWRITER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, b"b" * 65536, 0)
t = time.monotonic()
os.fdatasync(fd)
print(time.monotonic() - t, flush=True)
"""


def test_redirtied_pages_credit_the_data_in_flight(scratch_ext4):
    """Pages one process dirtied are being written back (held by blk-throttle) when
    another dirties them again: the write in flight carries the first one's data and is
    credited to it, the later write to the second, 64 KiB each (not 0 and 128 KiB)."""
    tl.require_blkio()
    fs = scratch_ext4
    path = os.path.join(fs.mnt, "log")
    tl.dd(path, bs="64K", count=1, conv="fsync")
    # 64 KiB at 16 KiB/s: the first write is held about 4 s.
    with tl.blkio_throttle(fs.devnum, write_bps=16384) as cg:
        top = start_top("-d", fs.dev, "--duration", "120")
        try:
            a = subprocess.Popen([PYTHON, "-B", "-c", HELD_WRITER, path], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            tl.move_to_cgroup(cg, a.pid)
            a.stdin.write("go\n")
            a.stdin.flush()
            assert a.stdout.readline() == "held\n"
            b = subprocess.Popen([PYTHON, "-B", "-c", REWRITER, path], stdout=subprocess.PIPE,
                                 text=True)
            took = b.communicate(timeout=60)[0]
            assert b.returncode == 0
            a.stdin.write("done\n")
            a.stdin.flush()
            assert a.wait(timeout=60) == 0
        finally:
            doc = stop_top(top)
    # The premise: the second sync waited for the held write, so that write was still in
    # flight when the pages were dirtied again.
    assert float(took) >= 1.0, took
    written = {p["pid"]: f["disk_write_bytes"] for p in doc["processes"] for f in p["files"]
               if f["path"] == os.path.realpath(path)}
    # Exact, unless the kernel skipped a run of top's programs (then that write's bytes
    # are missing, never another's).
    missed = doc["dropped"]["hook_runs_missed"] + doc["dropped"]["completions_unseen"]
    for pid in (a.pid, b.pid):
        short = 65536 - written.get(pid, 0)
        assert short == 0 or (0 < short <= 65536 and missed), (pid, written, doc["dropped"])


def test_rows_made_without_allocator_memory(monkeypatch):
    """The BPF allocator can be out of memory for a moment (its per-CPU cache empty; on
    PREEMPT_RT refilled later, from a thread): every new row of top's maps fails that
    way here (IOSPAN_FAULT), and the report is still exact, with nothing counted lost."""
    tl.require_root("creates loop devices and file systems")
    monkeypatch.setenv("IOSPAN_FAULT", "map_nomem")
    doc = writeback_per_page("ext4")
    # Runs the kernel skipped (a program nested on a CPU, or not run at all: found when
    # the request is issued again) are not the allocator's.
    info = ("unmatched_bios", "writeback_dirtier_unknown_bytes", "idle_rows_pruned",
            "hook_runs_missed", "requests_without_queue_time", "completions_unseen",
            "completion_unseen_bytes")
    lost = {k: v for k, v in doc["dropped"].items() if v and k not in info}
    assert not lost, lost


def writeback_per_page(fstype):
    """test_writeback_credited_per_page's run and checks; returns top's report."""
    with tl.scratch_fs(fstype, 320) as fs:
        path = os.path.join(fs.mnt, "shared.dat")
        tl.dd(path, bs="1M", count=64, conv="fsync")
        top = start_top("-d", fs.dev, "--duration", "120", "--max-files", "50")
        try:
            dd = subprocess.Popen(["dd", "if=/dev/zero", "of=" + path, "bs=1M", "count=48",
                                   "conv=notrunc"], stderr=subprocess.DEVNULL)
            assert dd.wait(timeout=60) == 0
            pw = subprocess.Popen([PYTHON, "-B", "-c", PWRITE, path, str(60 * MiB), str(MiB)])
            assert pw.wait(timeout=60) == 0
            subprocess.run(["sync", "-f", path], check=True)
        finally:
            doc = stop_top(top)
        with open("/sys/block/%s/queue/max_sectors_kb" % os.path.basename(fs.dev)) as f:
            max_request = int(f.read()) * 1024
    # Exact, unless top says the kernel skipped runs of its programs (one nested in an
    # interrupt on the CPU where it ran, or a completion it did not run the program for,
    # found when the request was issued again or still unresolved at the end: each loses
    # one request of the owner's at most, credited as unattributed or not at all).
    dev = [d for d in doc["devices"] if d["disk"] == fs.name][0]
    missed = doc["dropped"]["hook_runs_missed"] + doc["dropped"]["completions_unseen"] + \
        dev["unresolved"]["requests"]
    for pid, size in ((dd.pid, 48 * MiB), (pw.pid, MiB)):
        row = the_file(process(doc, pid), path)
        assert row["fs_write_bytes"] == size, (pid, row)
        short = size - row["disk_write_bytes"]
        assert short == 0 or 0 < short <= missed * max_request, (pid, row, missed)
        wb = [w for w in doc["writeback"] if w["pid"] == pid]
        short = size - sum(w["disk_write_bytes"] for w in wb)
        assert short == 0 or 0 < short <= missed * max_request, (pid, doc["writeback"], missed)
    assert doc["dropped"]["dirtier_map_full"] == 0
    return doc


def assert_every_byte_once(doc, fs, dev):
    """The processes' rows and the unattributed ones of @fs's device add up to what top
    says the device wrote, and that is what /proc/diskstats counted, but for requests top
    declares it has not seen complete (none unless the kernel skipped its program)."""
    listed = sum(on_device(p, fs, "disk_write_bytes") for p in doc["processes"]) + \
        sum(u["disk_write_bytes"] for u in doc["unattributed"] if u["disk"] == fs.name)
    assert listed == dev["disk_write_bytes"], (listed, dev)
    unseen = dev["unresolved"]["write_bytes"]
    assert dev["diskstats_write_bytes"] - unseen <= dev["disk_write_bytes"] <= \
        dev["diskstats_write_bytes"], (dev, doc["dropped"])


def test_full_stats_map_counts_each_byte_once(scratch_ext4):
    """With a tiny stats map, the owners that found no room have their DISK bytes on
    the device's unattributed row only: no writeback rows for processes the report does
    not list, and processes plus unattributed add up to what the disk did."""
    fs = scratch_ext4
    top = start_top("-d", fs.dev, "--max-entries", "64", "--duration", "120", "-n", "1000",
                    "--max-files", "1000")
    try:
        for i in range(100):
            tl.dd(os.path.join(fs.mnt, "w%d.dat" % i), bs="64K", count=4)
        subprocess.run(["sync"], check=True)
    finally:
        doc = stop_top(top)
    assert doc["dropped"]["stats_map_full"] > 0, doc["dropped"]
    procs = {p["pid"]: p for p in doc["processes"]}
    for w in doc["writeback"]:
        assert w["pid"] in procs, ("writeback row of a process not in the report", w)
    for pid, p in procs.items():
        wb = sum(w["disk_write_bytes"] for w in doc["writeback"] if w["pid"] == pid)
        assert wb <= p["disk_write_bytes"], (pid, wb, p["disk_write_bytes"])
    dev = [d for d in doc["devices"] if d["disk"] == fs.name]
    assert len(dev) == 1, doc["devices"]
    assert_every_byte_once(doc, fs, dev[0])


def test_full_stats_map_keeps_bytes_of_a_device_among_many():
    """The unattributed row that takes the bytes of owners a full stats map has no room
    for must exist for the traced device whatever else is there: here a disk of 80
    partitions (more devices in /proc/diskstats than the 64 stats rows), the file system
    on the last one. These rows were made in the stats map itself for every device of
    /proc/diskstats, a failed insert ignored, so the map was full before tracing began
    and the partition's bytes were lost, as they were when an empty BPF allocator cache
    failed the same insert (CI: 17.9 of 26.3 MB, exactly the files that found no room)."""
    tl.require_root("creates a loop device with partitions")
    with tl.loop_device(400, partitions=[1] * 79 + [300]) as disk:
        part = disk + "p80"
        with tl.filesystem(part, "ext4") as mnt:
            fs = tl.ScratchFs(part, mnt, "ext4")
            top = start_top("-d", fs.dev, "--max-entries", "64", "--duration", "120",
                            "-n", "1000", "--max-files", "1000")
            try:
                for i in range(100):
                    tl.dd(os.path.join(fs.mnt, "w%d.dat" % i), bs="64K", count=4)
                subprocess.run(["sync"], check=True)
            finally:
                doc = stop_top(top)
    assert doc["dropped"]["stats_map_full"] > 0, doc["dropped"]
    assert doc["dropped"]["lost_bytes_events"] == 0, doc["dropped"]
    dev = [d for d in doc["devices"] if d["disk"] == fs.name]
    assert len(dev) == 1, doc["devices"]
    assert_every_byte_once(doc, fs, dev[0])


FSYNCS = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(int(sys.argv[2])):
    os.pwrite(fd, b"f" * 4096, i * 4096)
    os.fdatasync(fd)
"""


def assert_flushes_as_diskstats(doc, d):
    """Device @d's cache flushes as /proc/diskstats counts and times them (fields 19-20).
    A flush whose completion top's program did not run for (the kernel does not always
    run it, nor always count that: 399 of 400 once in CI with hook_runs_missed 0) is
    counted when its request is issued again, untimed, with the most time it can have
    taken; one not issued again is declared unresolved, with the same bound."""
    ds, unres = d["diskstats_flush_requests"], d["unresolved"]
    assert ds - unres["flushes"] <= d["flush_requests"] <= ds, (d, doc["dropped"])
    assert d["flush_requests_untimed"] <= doc["dropped"]["completions_unseen"], \
        (d, doc["dropped"])
    # diskstats sums nanoseconds and prints milliseconds, timed a little later.
    tol = max(2, 0.02 * d["flush_time_ms"])
    most = d["flush_time_ms"] + d["flush_untimed_ms_max"] + unres["flush_ms_max"]
    assert d["flush_time_ms"] - tol <= d["diskstats_flush_ms"] <= most + tol, d


@pytest.mark.parametrize("fstype", FSTYPES)
def test_flushes_match_diskstats(fstype):
    """An fdatasync after every 4 KiB write on a loop device whose backing file system
    has a write cache: the disk's cache flushes are counted and timed as
    /proc/diskstats counts them (fields 19-20), and the flushes waited for are
    credited to the processes that asked for them (the writer, or ext4's jbd2)."""
    tl.require_root("creates loop devices and file systems")
    n = 200
    with tl.scratch_fs(fstype, 320) as fs:
        with open("/sys/block/%s/queue/write_cache" % fs.name) as f:
            assert f.read().strip() == "write back", "loop device without a write cache"
        top = start_top("-d", fs.dev, "--duration", "120", "-n", "1000")
        try:
            w = subprocess.Popen([PYTHON, "-B", "-c", FSYNCS, os.path.join(fs.mnt, "f.dat"),
                                  str(n)])
            assert w.wait(timeout=120) == 0
        finally:
            doc = stop_top(top)
    dev = [d for d in doc["devices"] if d["disk"] == fs.name]
    assert len(dev) == 1, doc["devices"]
    d = dev[0]
    assert d["diskstats_flush_requests"] >= n, d
    assert_flushes_as_diskstats(doc, d)
    asked = [(p["pid"], p["comm"], f) for p in doc["processes"] for f in p["flushes"]
             if f["disk"] == fs.name]
    assert sum(f["requests"] for _, _, f in asked) >= n, asked
    assert all(f["avg_us"] > 0 and f["max_us"] >= f["avg_us"] for _, _, f in asked), asked
    # The writer, or the journal thread it waits for on ext4.
    assert any(pid == w.pid or comm.startswith("jbd2/") for pid, comm, _ in asked), asked
    assert not any(u["kind"] == "flush" for u in doc["unattributed"]), doc["unattributed"]


def test_skipped_completions_are_counted(monkeypatch):
    """The kernel does not always run top's completion program, nor always count that
    in its recursion_misses: on this 6.18 every BPF program on block_rq_complete (tp_btf
    and perf alike) missed the completions of a softirq pass ftrace saw, when it ran in
    the interrupt of one task (399 of 400 flushes once in CI, hook_runs_missed 0). Here
    IOSPAN_FAULT makes the program skip one run in five: each such request is found when
    it is issued again (a flush counted untimed, bytes on the unattributed row), those
    still open at the end are declared, and flushes and bytes match /proc/diskstats
    within what top declares."""
    tl.require_root("creates loop devices and file systems")
    monkeypatch.setenv("IOSPAN_FAULT", "skip_complete")
    with tl.scratch_fs("xfs", 320) as fs:
        top = start_top("-d", fs.dev, "--duration", "120", "-n", "1000", "--max-files",
                        "1000")
        try:
            w = subprocess.Popen([PYTHON, "-B", "-c", FSYNCS, os.path.join(fs.mnt, "f.dat"),
                                  "200"])
            assert w.wait(timeout=120) == 0
            tl.dd(os.path.join(fs.mnt, "g.dat"), bs="64K", count=64, conv="fsync")
        finally:
            doc = stop_top(top)
    d = [d for d in doc["devices"] if d["disk"] == fs.name][0]
    assert doc["dropped"]["completions_unseen"] > 0, doc["dropped"]
    assert d["flush_requests_untimed"] > 0, d
    assert_flushes_as_diskstats(doc, d)
    assert_every_byte_once(doc, fs, d)


WRITER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
log = open(sys.argv[2], "w")
sys.stdin.readline()
end = time.time() + float(sys.argv[3])
while time.time() < end:
    os.pwrite(fd, b"r" * 65536, 0)
    log.write("%.6f\n" % time.time())
    time.sleep(0.02)
log.close()
"""


def test_periodic_window_is_the_time_covered(scratch_ext4):
    """`top --json 1` writing to a pipe nobody reads for 5 s: each report's duration is
    the time between its map reads (its timestamp and the previous one's), and holds
    the bytes written in that time, not 5 s of bytes claimed as 1 s."""
    fs = scratch_ext4
    path, log = os.path.join(fs.mnt, "steady.dat"), os.path.join(fs.mnt, "steady.log")
    writer = subprocess.Popen([PYTHON, "-B", "-c", WRITER, path, log, "9"],
                              stdin=subprocess.PIPE, text=True)
    r, w = os.pipe()
    fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: the smallest pipe, a report or two fill it
    top = tl.popen_iospan("top", "--json", "-p", writer.pid, "1", stdout=w)
    os.close(w)
    try:
        err = ""
        while "tracing" not in err:
            ready, _, _ = select.select([top.stderr], [], [], 30)
            assert ready and top.poll() is None, err
            err += top.stderr.readline()
        writer.stdin.write("go\n")
        writer.stdin.flush()
        time.sleep(5)  # nobody reads: top blocks writing its second or third report
        out = b""
        while writer.poll() is None:
            ready, _, _ = select.select([r], [], [], 0.2)
            if ready:
                out += os.read(r, 65536)
        time.sleep(1.5)
    finally:
        top.send_signal(signal.SIGINT)
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            out += chunk
        top.wait(timeout=60)
        os.close(r)
        if writer.poll() is None:
            writer.kill()
    assert top.returncode == 0, top.stderr.read()
    docs = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert len(docs) >= 4, docs
    with open(log) as f:
        writes = [float(line) for line in f]
    blocked = 0
    for prev, cur in zip(docs, docs[1:]):
        span = cur["timestamp"] - prev["timestamp"]
        assert abs(span - cur["duration_s"]) < 0.05, (prev["timestamp"], cur)
        blocked = max(blocked, cur["duration_s"])
        got = sum(p["fs_write_bytes"] for p in cur["processes"] if p["pid"] == writer.pid)
        want = 65536 * sum(1 for t in writes if prev["timestamp"] < t <= cur["timestamp"])
        # A write counted at its syscall's exit may be logged just after a boundary.
        assert abs(got - want) <= 2 * 65536, (got, want, cur["duration_s"])
    assert blocked > 3, "top never blocked on its output: %s" % [d["duration_s"] for d in docs]


def test_throttled_read_is_a_stall_with_stack(scratch_ext4):
    """A direct read in a blk-throttled cgroup blocks in iowait: reported with a stack,
    and its DISK bytes still go to the reader (not the throttle's dispatch worker)."""
    fs = scratch_ext4
    tl.require_blkio()
    path = os.path.join(fs.mnt, "throttled.dat")
    size = 512 * 1024
    tl.dd(path, bs="512K", count=1, conv="fsync")
    with tl.blkio_throttle(fs.devnum, read_bps=MiB) as blk:
        top = start_top("--duration", "60", "--stall-threshold", "100ms")
        try:
            pid, _ = run_workload("throttled_read", [path], blk, size=size)
        finally:
            doc = stop_top(top)
    stalls = [s for s in doc["stalls"] if s["pid"] == pid]
    assert stalls, "no stall for %d: %s" % (pid, doc["stalls"])
    s = max(stalls, key=lambda x: x["max_ms"])
    assert s["max_ms"] >= 100, s
    assert s["stack"] and not s["stack"][0].startswith("0x"), s
    assert any("dio" in f or "read" in f for f in s["stack"]), s["stack"]
    p = process(doc, pid)
    assert on_device(p, fs, "disk_read_bytes") == size


# Writes 10000 bytes into a preallocated file, then what RocksDB does when it closes a
# table file (fdatasync, ftruncate to the size it wrote), and punches a hole in the
# middle of a block: each time the file system zeroes part of a block in the page cache
# and dirties that page itself.
RESIZE = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
assert libc.fallocate(fd, 1, 0, 1 << 20) == 0  # FALLOC_FL_KEEP_SIZE
assert os.write(fd, b"x" * 10000) == 10000
os.fdatasync(fd)
os.ftruncate(fd, 10000)
os.fdatasync(fd)
assert libc.fallocate(fd, 3, 5000, 100) == 0  # KEEP_SIZE | PUNCH_HOLE
os.close(fd)
"""


@pytest.mark.parametrize("fstype", FSTYPES)
def test_resize_zeroing_is_no_fs_write(fstype):
    """Pages the file system dirties in ftruncate or fallocate (zeroing the rest of the
    last block, even at an unchanged size; a punched hole's partial blocks) are no FS
    write bytes and no mmap write: FS writes are the 10000 bytes written (they were
    10000 + 4096 per zeroing, marked mmap: RocksDB's compaction outputs)."""
    tl.require_root("creates a loop device, loads BPF")
    with tl.scratch_fs(fstype, 320) as fs:
        path = os.path.join(fs.mnt, "resized.dat")
        top = start_top("-d", fs.dev, "--duration", "60")
        try:
            p = subprocess.Popen([PYTHON, "-B", "-c", RESIZE, path])
            assert p.wait(timeout=60) == 0
        finally:
            doc = stop_top(top)
    row = the_file(process(doc, p.pid), path)
    assert row["fs_write_bytes"] == 10000, row
    assert not row["mmap"] and not row["fs_bytes_in_pages"], row


def test_pid_filter(scratch_ext4):
    fs = scratch_ext4
    path = os.path.join(fs.mnt, "filtered.dat")
    child = subprocess.Popen([PYTHON, "-B", "-c",
                              "import os, sys; sys.stdin.readline(); "
                              "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT);"
                              "os.write(fd, b'x' * (1 << 20)); os.fsync(fd)", path],
                             stdin=subprocess.PIPE, text=True)
    try:
        top = start_top("-p", str(child.pid), "--duration", "60")
        try:
            tl.dd(os.path.join(fs.mnt, "other.dat"), bs="1M", count=1, conv="fsync")
            child.communicate("go\n", timeout=30)
        finally:
            doc = stop_top(top)
    finally:
        if child.poll() is None:
            child.kill()
    assert [p["pid"] for p in doc["processes"]] == [child.pid]
    assert doc["filters"]["pid"] == child.pid
    p = doc["processes"][0]
    assert p["fs_write_bytes"] == MiB
    assert within(on_device(p, fs, "disk_write_bytes"), MiB)
    # Coverage needs every process: with a filter it is not claimed.
    assert all(d["coverage_pct"] is None for d in doc["devices"])


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs"])
def test_disk_filter(fstype):
    """-d DISK: FS bytes, DISK bytes, paths and writeback credit of the files on that
    disk (btrfs names its files by an anonymous device, not the disk), nothing of a
    process writing to another disk."""
    tl.require_root("creates loop devices and file systems")
    size = 2 * MiB
    with tl.scratch_fs(fstype, 320) as fs, tl.scratch_fs("ext4", 64) as other:
        synced, lazy = os.path.join(fs.mnt, "synced.dat"), os.path.join(fs.mnt, "lazy.dat")
        top = start_top("-d", fs.dev, "--duration", "60", "--max-files", "50")
        try:
            decoy, _ = run_workload("write_fsync", [os.path.join(other.mnt, "decoy.dat")],
                                    tl.cgroup2_root(), size=size)
            fsync_pid, _ = run_workload("write_fsync", [synced], tl.cgroup2_root(), size=size)
            lazy_pid, _ = run_workload("write_lazy", [lazy], tl.cgroup2_root(), size=size)
            subprocess.run(["sync"], check=True)
        finally:
            doc = stop_top(top)
    assert doc["filters"]["disk"] == fs.name
    assert decoy not in [p["pid"] for p in doc["processes"]]
    for pid, path in ((fsync_pid, synced), (lazy_pid, lazy)):
        row = the_file(process(doc, pid), path)
        assert row["fs_write_bytes"] == size, row
        assert within(row["disk_write_bytes"], size), row
        assert row["disk"] == fs.name and row["dev"] == fs.fsdev, row
    wb = [w for w in doc["writeback"] if w["pid"] == lazy_pid]
    assert within(sum(w["disk_write_bytes"] for w in wb), size), doc["writeback"]
    assert all(w["path"] == os.path.realpath(lazy) for w in wb), wb


def async_direct_io(engine, rw, path, size):
    """@size bytes of async direct @rw on @path by one process, from buffers already
    mapped (btrfs reads into a buffer not yet faulted in with a buffered read: see
    iospan-top(8)): iowork for libaio reads, fio for the rest (io_uring's registered
    buffers are mapped when registered; write buffers are filled first)."""
    if engine == "libaio" and rw == "read":
        p = subprocess.run([tl.iowork_bin(), "aio", path, "-b", "65536",
                            "-n", str(size // 65536), "-q", "8"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["bytes"] == size, p.stdout
        return
    args = ["--name=aio", "--filename=" + path, "--rw=" + rw, "--bs=64k",
            "--size=%d" % size, "--direct=1", "--ioengine=" + engine, "--iodepth=8"]
    if engine == "io_uring":
        args.append("--fixedbufs")
    doc = tl.fio(args)
    assert doc["jobs"][0]["error"] == 0, doc["jobs"][0]


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs"])
@pytest.mark.parametrize("engine", ["libaio", "io_uring"])
def test_async_direct_io_exact(fstype, engine):
    """Async direct reads and writes (no read/write syscall): FS and DISK bytes exact on
    the file's row, none on the process's raw row. btrfs completes these bios through
    its own end_io, so the file comes from the submission, not from the bio."""
    tl.require_root("creates loop devices and file systems")
    size = 4 * MiB
    with tl.scratch_fs(fstype, 320) as fs:
        path = os.path.join(fs.mnt, "aio.dat")
        tl.dd(path, bs="1M", count=size // MiB, conv="fsync")
        tl.drop_caches()
        top = start_top("-d", fs.dev, "--duration", "60", "--max-files", "50")
        try:
            for rw in ("read", "write"):
                async_direct_io(engine, rw, path, size)
        finally:
            doc = stop_top(top)
    files = [f for p in doc["processes"] for f in p["files"]]
    mine = [f for f in files if f["path"] == os.path.realpath(path)]
    raw = [f for f in files if f["kind"] == "raw"]
    for key in ("fs_read_bytes", "fs_write_bytes", "disk_read_bytes", "disk_write_bytes"):
        assert sum(f[key] for f in mine) == size, (key, mine, raw, doc["dropped"])
    assert not [f for f in raw if f["disk_read_bytes"] or f["disk_write_bytes"]], raw


def test_no_syscalls_mode(scratch_ext4):
    """--no-syscalls: no syscall tracepoints; buffered reads counted in whole pages."""
    fs = scratch_ext4
    path = os.path.join(fs.mnt, "pages.dat")
    tl.dd(path, bs="1M", count=4, conv="fsync")
    tl.drop_caches()
    top = start_top("--no-syscalls", "--duration", "60", "--max-files", "50")
    try:
        pid, _ = run_workload("read", [path], tl.cgroup2_root(), size=4 * MiB)
    finally:
        doc = stop_top(top)
    assert doc["syscalls_traced"] is False
    assert not [h for h in doc["attach_plan"] if h.startswith("sys_")]
    row = the_file(process(doc, pid), path)
    # Whole pages of what reads asked for: approximate by design, never more than asked
    # for, and short by the pages of a read's first batch when the kernel cuts that
    # batch short (a page still being read in by readahead) without its tracepoint
    # (iospan-top(8), --no-syscalls): 24 of 1,024 pages once in a CI run.
    assert row["fs_bytes_in_pages"] is True
    assert 0.9 * 4 * MiB <= row["fs_read_bytes"] <= (1 + TOLERANCE) * 4 * MiB, row
    assert within(row["disk_read_bytes"], 4 * MiB)


def test_text_report_and_periodic_json(root):
    p = tl.run_iospan("top", "--duration", "0.5", timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert any(line.startswith("PID     COMMAND") for line in lines), p.stdout
    assert any(line.startswith("COVERAGE") for line in lines) or "LOST:" in p.stdout
    assert all(len(line) < 100 for line in lines if not line.startswith("      ")), \
        [line for line in lines if len(line) >= 100]

    # Periodic text reports show rates: every byte column's header says "/s".
    p = tl.run_iospan("top", "0.3", "1", timeout=60)
    assert p.returncode == 0, p.stderr
    header = [line for line in p.stdout.splitlines() if line.startswith("PID     COMMAND")]
    assert header, p.stdout
    cols = header[0].split()
    assert [c for c in cols if c.startswith(("FS_", "DISK_"))] == \
        ["FS_RD/s", "FS_WR/s", "DISK_RD/s", "DISK_WR/s"], header[0]
    cov = [line for line in p.stdout.splitlines() if line.startswith("DISK ")]
    assert not cov or all(c.endswith("/s") for c in cov[0].split()[1:5]), cov

    p = tl.run_iospan("top", "--json", "0.3", "2", timeout=60)
    assert p.returncode == 0, p.stderr
    docs = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(docs) == 2
    assert all(d["mode"] == "rate" for d in docs)
    for key in ("processes", "writeback", "stalls", "devices", "dropped"):
        assert key in docs[0]


@pytest.mark.parametrize("args, what", [
    (["-p", "999999999"], "999999999"),
    (["-d", "nosuchdisk"], "nosuchdisk"),
    (["--cgroup", "/nonexistent"], "nonexistent"),
    (["--duration", "0"], "duration"),
    (["--sort", "size"], "sort"),
    (["--duration", "2", "1"], "duration"),
])
def test_bad_input(args, what):
    p = tl.run_iospan("top", *args)
    assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
    assert p.stdout == ""
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and what in err[0], p.stderr

    p = tl.run_iospan("--json", "top", *args)
    assert p.returncode == 2
    doc = json.loads(p.stdout)
    assert what in doc["error"] and doc["exit_code"] == 2


# Verifier steps (fdinfo's verified_insns) one top program may take: about 0.3 s of
# start-up on a small machine. The per-page writeback split inside bpf_loop callbacks
# made top_rq_complete take 368292 (1.2 s); global BPF functions brought it to ~16000.
VERIFY_BUDGET = 50000


def held_programs(pid):
    """(prog_id, verified_insns) of the BPF programs process @pid holds open."""
    progs = []
    fdinfo = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        # Links name their program too; only programs have verified_insns.
        if "verified_insns" in info:
            progs.append((int(info["prog_id"]), int(info["verified_insns"])))
    return sorted(set(progs))


@pytest.mark.parametrize("command", [["top", "--json", "--duration", "60"],
                                     ["trace", "--json", "-t", "10s", "--duration", "60"]],
                         ids=["top", "trace"])
def test_programs_verify_quickly(command):
    """Each program of top and trace passes the kernel's verifier within the budget of
    steps, so that they start tracing quickly (top_rq_complete once took 368,292 steps,
    trace's syscall entry 142,281)."""
    tl.require_root("loads BPF programs")
    proc = tl.start_tracing(*command)
    try:
        progs = held_programs(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    # One program serves all the syscall tracepoints: top holds 13, trace 25.
    assert len(progs) >= 10, progs
    slow = [p for p in progs if p[1] > VERIFY_BUDGET]
    assert not slow, "(prog_id, verified_insns) over %d: %s" % (VERIFY_BUDGET, slow)


def test_json_report_under_sanitizers(tmp_path):
    """The ASan + UBSan build's JSON report of direct reads (no writeback row to sort:
    qsort() was once given no array, which UBSan stops) and of a filtered run with no
    unattributed rows: exit 0, no sanitizer report, the reader's bytes in it."""
    tl.require_root("creates a loop device, loads BPF")
    with tl.loop_device(64) as dev:
        for args in ((), ("-p", "1")):
            out = tmp_path / "top.json"
            with open(out, "w") as f:
                proc = subprocess.Popen([tl.asan_bin(), "top", "--json", "-d", dev,
                                         "--duration", "120", *args],
                                        stdout=f, stderr=subprocess.PIPE, text=True)
                try:
                    deadline = time.time() + 120
                    err = ""
                    while "tracing" not in err and proc.poll() is None and \
                            time.time() < deadline:
                        err += proc.stderr.readline()
                    tl.dd("/dev/null", if_=dev, bs="64k", count=16, iflag="direct")
                finally:
                    proc.send_signal(signal.SIGINT)
                    err += proc.communicate(timeout=120)[1]
            assert proc.returncode == 0, err[-3000:]
            assert not re.search(r"runtime error|AddressSanitizer|LeakSanitizer", err), \
                err[-3000:]
            doc = json.loads(out.read_text())
            if not args:
                assert doc["writeback"] == []
                assert sum(p["disk_read_bytes"] for p in doc["processes"]) >= 1 << 20, doc


def workload_bytes(doc, workload):
    """{(path, key): bytes} of the files in @workload over every process of @doc, and
    the rows of other files: [(process, file)]."""
    got, other = {}, []
    for p in doc["processes"]:
        for f in p["files"]:
            if f["path"] not in workload:
                other.append((p, f))
                continue
            for key in ("fs_read_bytes", "fs_write_bytes", "disk_read_bytes",
                        "disk_write_bytes"):
                if f[key]:
                    got[(f["path"], key)] = got.get((f["path"], key), 0) + f[key]
    return got, other


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs"])
def test_target_filters_keep_exactly_their_bytes(fstype):
    """Every target filter, alone, side by side over one workload (tl.filter_targets):
    processes top-a and top-b, each in its own cgroup and directory, write 4 MiB to one
    file from their main thread and read 4 MiB of another from a second thread
    (O_DIRECT, cold caches). Under each filter, each file it names has exactly the
    workload's FS bytes of its op and the DISK bytes the device moved for it, no other
    workload file has any, and every row is the target's: its process (pid, name,
    cgroup) for a process filter, its files for a file filter. The DISK bytes are the
    workload's on ext4 and xfs; btrfs reads 5 MiB from the device for a cold 4 MiB
    direct read (/proc/diskstats says so), so there they are those of an unfiltered top
    run beside, whose per-disk bytes equal /proc/diskstats'."""
    tl.require_root("creates loop devices, file systems and cgroups, loads BPF")
    size = 4 * MiB
    with tl.filter_targets(fstype, size, names=("top-a", "top-b")) as tg:
        runs = dict(tg.filters, all=([], None, None))
        tops = {k: start_top("--duration", "600", "--max-files", "100", "-n", "1000", *args)
                for k, (args, _, _) in runs.items()}
        try:
            tg.run()
            subprocess.run(["sync"], check=True)
        finally:
            docs = {k: stop_top(t) for k, t in tops.items()}
    workload = set(tg.files["top-a"] + tg.files["top-b"])
    a, b = tg.procs["top-a"], tg.procs["top-b"]
    # The unfiltered run: every byte of the disk seen, each file's bytes the device's.
    dev = [d for d in docs["all"]["devices"] if d["disk"] == tg.fs.name]
    assert dev and dev[0]["disk_read_bytes"] == dev[0]["diskstats_read_bytes"] and \
        dev[0]["disk_write_bytes"] == dev[0]["diskstats_write_bytes"], (fstype, dev)
    truth, _ = workload_bytes(docs["all"], workload)
    owner = {"pid": ("top-a", a["pid"]), "tid": ("top-b", b["pid"]),
             "comm": ("top-b", b["pid"]), "cgroup": ("top-a", a["pid"])}
    for k, (args, keeps, proc) in tg.filters.items():
        doc = docs[k]
        got, other = workload_bytes(doc, workload)
        for p in doc["processes"]:
            if proc:
                name, pid = owner[k]
                assert p["pid"] == pid and p["comm"] == name, (fstype, k, p)
                assert p["cgroup"] == rel_cgroup(tg.cgroups[name]), (fstype, k, p)
        # A file filter keeps nothing but its files; a process filter may keep the
        # target's other I/O (its interpreter's pages, btrfs's checksum reads).
        assert proc or not other, (fstype, k, other)
        # Requests whose completion ran no program (iospan-top(8), Completions not
        # seen) are declared: their bytes are missing from their file's row (under a
        # filter nobody's unattributed row gets them), in this run or the unfiltered
        # one.
        lost = doc["dropped"]["completion_unseen_bytes"]
        lost_all = docs["all"]["dropped"]["completion_unseen_bytes"]
        want = {}
        for path, op in keeps.items():
            want[(path, "fs_%s_bytes" % op)] = (size, size)
            disk = truth.get((path, "disk_%s_bytes" % op), 0)
            if fstype == "btrfs" and op == "read":
                assert disk + lost_all > size, (fstype, path, op, disk, lost_all)
                want[(path, "disk_read_bytes")] = (disk - lost, disk + lost_all)
            else:
                assert size - lost_all <= disk <= size, (fstype, path, op, disk, lost_all)
                want[(path, "disk_%s_bytes" % op)] = (size - lost, size)
        assert set(got) <= set(want), (fstype, k, got, want)
        for key, (low, high) in want.items():
            assert low <= got.get(key, 0) <= high, (fstype, k, key, got, want,
                                                     doc["dropped"])
        assert doc["filters"][k if k != "all" else "disk"] is not None, (k, doc["filters"])
