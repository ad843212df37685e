# SPDX-License-Identifier: GPL-2.0
"""A file is told apart from another that got its inode number: ext4 and xfs hand a
freed inode number to the next file created, so one process that writes A, deletes it
and writes B writes two files with one number. Each command that shows files must show
two, each with its own bytes and path, A marked deleted where the command checks the
file as it is now (top, lat --by file, watch's incidents).

Ground truth: the workload's own writes (1 MiB to A, 40 KiB to B, each fsynced), the
inode numbers it saw (os.fstat) and the disk bytes the file system wrote for each (its
block size rounds B's tail up).
"""
import json
import os
import signal
import subprocess
import threading
import time

import pytest

import iospan_testlib as tl

PYTHON = "/usr/bin/python3"
A_BYTES = 1 << 20
B_BYTES = 40 << 10

# Writes A (fsync), deletes it, writes B (fsync) with A's inode number (ext4 reuses it
# at once; xfs after a number of allocations that varies from run to run, 11 to 50 here
# and more than 64 once in CI, so each miss is deleted and tried again until a deadline,
# not a count). Waits for a line on stdin before starting; prints what it did as JSON.
WORKLOAD = r"""
import ctypes, json, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
d, a_bytes, b_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.stdin.readline()
a, b = os.path.join(d, "A"), os.path.join(d, "B")
fd = os.open(a, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
assert os.write(fd, b"a" * a_bytes) == a_bytes
os.fsync(fd)
ino_a = os.fstat(fd).st_ino
os.close(fd)
os.unlink(a)
tries, deadline = 0, time.monotonic() + 30
while True:
    # xfs frees an unlinked inode in the background: a sync of the fs finishes that.
    fd = os.open(d, os.O_RDONLY)
    assert libc.syncfs(fd) == 0
    os.close(fd)
    tries += 1
    fd = os.open(b, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    if os.fstat(fd).st_ino == ino_a or time.monotonic() > deadline:
        break
    os.close(fd)
    os.unlink(b)
ino_b = os.fstat(fd).st_ino
assert os.write(fd, b"b" * b_bytes) == b_bytes
os.fsync(fd)
os.close(fd)
print(json.dumps({"pid": os.getpid(), "ino_a": ino_a, "ino_b": ino_b, "tries": tries}))
"""

FSTYPES = ["ext4", "xfs"]


def disk_bytes(n, fs):
    """Bytes the file system writes for @n bytes of a file: whole blocks."""
    bs = os.statvfs(fs.mnt).f_bsize
    return (n + bs - 1) // bs * bs


class Workload:
    def __init__(self, fs):
        self.fs = fs
        self.proc = subprocess.Popen([PYTHON, "-B", "-c", WORKLOAD, fs.mnt, str(A_BYTES),
                                      str(B_BYTES)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run(self):
        out, _ = self.proc.communicate("go\n", timeout=90)
        assert self.proc.returncode == 0, out
        self.out = json.loads(out)
        assert self.out["ino_a"] == self.out["ino_b"], \
            "the file system gave B another inode number: %s" % self.out
        return self.out

    @property
    def a(self):
        return os.path.join(self.fs.mnt, "A")

    @property
    def b(self):
        return os.path.join(self.fs.mnt, "B")


@pytest.fixture(params=FSTYPES)
def fs(request):
    tl.require_root("creates loop devices and file systems")
    with tl.scratch_fs(request.param, 512) as f:
        yield f


def traced(fs, *args):
    """Runs the workload on @fs while `iospan ARGS` (started with --json) traces; returns
    (what the workload said, iospan's stdout)."""
    w = Workload(fs)
    t = tl.Tracer(*args)
    try:
        out = w.run()
        subprocess.run(["sync", "-f", fs.mnt], check=True)
    finally:
        stdout = t.stop()
    return out, stdout


def test_top_rows(fs):
    """top: two rows for the one inode number, each with its own FS and DISK bytes; A's
    path marked deleted, B's its own."""
    out, stdout = traced(fs, "top", "--json", "-d", fs.dev, "--duration", "120")
    doc = json.loads(stdout)
    proc = [p for p in doc["processes"] if p["pid"] == out["pid"]]
    assert len(proc) == 1, doc["processes"]
    files = [f for f in proc[0]["files"] if f.get("inode") == out["ino_a"]]
    by_path = {f["path"]: f for f in files}
    assert sorted(by_path) == sorted([w + s for w, s in ((fs.mnt + "/A", " (deleted)"),
                                                         (fs.mnt + "/B", ""))]), files
    a, b = by_path[fs.mnt + "/A (deleted)"], by_path[fs.mnt + "/B"]
    assert (a["fs_write_bytes"], b["fs_write_bytes"]) == (A_BYTES, B_BYTES), files
    assert (a["disk_write_bytes"], b["disk_write_bytes"]) == (
        disk_bytes(A_BYTES, fs), disk_bytes(B_BYTES, fs)), files


def test_top_by_file(fs):
    """top --by file: one row a file, not one an inode number."""
    out, stdout = traced(fs, "top", "--json", "--by", "file", "-d", fs.dev, "--duration",
                         "120")
    doc = json.loads(stdout)
    rows = {r["path"]: r for r in doc["files"] if r.get("inode") == out["ino_a"]}
    assert set(rows) == {fs.mnt + "/A (deleted)", fs.mnt + "/B"}, doc["files"]
    assert rows[fs.mnt + "/A (deleted)"]["fs_write_bytes"] == A_BYTES, rows
    assert rows[fs.mnt + "/B"]["fs_write_bytes"] == B_BYTES, rows


def test_lat_by_file(fs):
    """lat --by file --size: a histogram per file, its bytes those the disk wrote for it,
    named by its path (A deleted)."""
    out, stdout = traced(fs, "lat", "--json", "--by", "file", "--size", "-d", fs.dev)
    docs = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    rows = [h for d in docs for h in d["histograms"] if h.get("ino") == out["ino_a"]]
    by_path = {r["path"]: r for r in rows}
    assert set(by_path) == {fs.mnt + "/A (deleted)", fs.mnt + "/B"}, rows
    # --size keeps KiB, 1/1024 exact: the sum is the bytes.
    got = {p: round(r["cumulative"]["sum"] * 1024) for p, r in by_path.items()}
    assert got == {fs.mnt + "/A (deleted)": disk_bytes(A_BYTES, fs),
                   fs.mnt + "/B": disk_bytes(B_BYTES, fs)}, got


def test_snoop_paths(fs):
    """snoop: each request names the file it wrote, as it was then: A's data as A, B's
    as B, though both have one inode number."""
    out, stdout = traced(fs, "snoop", "--json", "-d", fs.dev)
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    mine = [l for l in lines if l.get("pid") == out["pid"] and l.get("ino") == out["ino_a"]]
    sums = {}
    for l in mine:
        sums[l["path"]] = sums.get(l["path"], 0) + l["bytes"]
    assert sums == {fs.mnt + "/A": disk_bytes(A_BYTES, fs),
                    fs.mnt + "/B": disk_bytes(B_BYTES, fs)}, sums


def test_trace_paths(fs):
    """trace: B's write and fsync name B, not the deleted A whose number it has."""
    out, stdout = traced(fs, "trace", "--json", "-t", "0", "-d", fs.dev)
    reqs = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    mine = [r for r in reqs if r.get("type") == "request" and r.get("pid") == out["pid"]
            and r["op"] in ("write", "fsync")]
    paths = [(r["op"], r["path"]) for r in mine]
    assert paths == [("write", fs.mnt + "/A"), ("fsync", fs.mnt + "/A"),
                     ("write", fs.mnt + "/B"), ("fsync", fs.mnt + "/B")], paths


def test_watch_incident_files(fs, tmp_path):
    """watch: the incident's file rows keep the two files apart (their generation), each
    with its own bytes over the window; incidents show's busiest files too."""
    db = str(tmp_path / "incidents.db")
    w = Workload(fs)
    watcher = tl.popen_iospan("watch", "--db", db, "-d", fs.dev, "--interval", "0.2",
                              "--pre", "5", "--capture", "2", "--cooldown", "0", "--for", "1",
                              "--write-mbps", "0.5", "--read-mbps", "0", "--util", "0",
                              "--await", "0")
    log = []
    reader = threading.Thread(target=lambda: log.extend(watcher.stderr), daemon=True)
    reader.start()

    def wait_for(text):
        deadline = time.time() + 30
        while not any(text in line for line in list(log)):
            assert time.time() < deadline and watcher.poll() is None, "".join(log)
            time.sleep(0.1)

    try:
        wait_for(" info: collector top loaded")
        out = w.run()
        wait_for("stored: incident 1 stored")
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=30)
        reader.join(timeout=10)
    assert watcher.returncode == 0, "".join(log)
    doc = json.loads(tl.run_iospan("--json", "incidents", "--db", db, "show", "1",
                                   check=True).stdout)
    rows = [f for f in doc["files"] if f["pid"] == out["pid"] and f["inode"] == out["ino_a"]]
    sums = {}
    for f in rows:
        sums.setdefault(f["generation"], [set(), 0])
        sums[f["generation"]][0].add(f["path"])
        sums[f["generation"]][1] += f["fs_write_bytes"]
    assert len(sums) == 2, rows
    got = sorted((max(paths), n) for paths, n in sums.values())
    assert got == [(fs.mnt + "/A (deleted)", A_BYTES), (fs.mnt + "/B", B_BYTES)], got
    busiest = [f for f in doc["busiest_files"] if f["inode"] == out["ino_a"]]
    assert len(busiest) == 2, doc["busiest_files"]
