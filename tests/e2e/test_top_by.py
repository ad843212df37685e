# SPDX-License-Identifier: GPL-2.0
"""`iospan top --by file` and `--by dir DEPTH`: the busiest files across processes, and
files rolled up by directory ("which table", "which database").

Two processes do direct I/O of known sizes to files in two directories of a fresh
file system (ext4, xfs, btrfs); the file rows and the directory rows must be exactly
the sums of what each process did there, in JSON and in text, with the processes
counted once per file or directory.
"""
import json
import os
import subprocess

import pytest

import iospan_testlib as tl

MiB = 1 << 20

# Direct I/O steps "op:path:offset_mib:size_mib" (op w or r), then {"pid": ...}.
STEPS = r"""
import json, mmap, os, sys
buf = mmap.mmap(-1, 1 << 20)
buf.write(b"b" * (1 << 20))
for step in sys.argv[1:]:
    op, path, off, size = step.split(":")
    fd = os.open(path, (os.O_RDWR | os.O_CREAT if op == "w" else os.O_RDONLY) | os.O_DIRECT,
                 0o644)
    for i in range(int(size)):
        where = (int(off) + i) << 20
        if op == "w":
            assert os.pwritev(fd, [buf], where) == 1 << 20
        else:
            assert os.preadv(fd, [buf], where) == 1 << 20
    os.close(fd)
print(json.dumps({"pid": os.getpid()}))
"""


def run_steps(*steps):
    p = subprocess.run(["/usr/bin/python3", "-B", "-c", STEPS] + list(steps),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])["pid"]


@pytest.fixture(scope="module", params=["ext4", "xfs", "btrfs"])
def run(request):
    tl.require_root("creates loop devices and file systems, loads BPF")
    with tl.scratch_fs(request.param, 320) as fs:
        mnt = os.path.realpath(fs.mnt)
        a, b = os.path.join(mnt, "dbA"), os.path.join(mnt, "dbB")
        os.mkdir(a)
        os.mkdir(b)
        depth = len(mnt.strip("/").split("/")) + 1
        common = ("--duration", "300", "-n", "100", "-d", fs.dev)
        ts = {
            "file_json": tl.Tracer("top", "--json", "--by", "file", *common),
            "file_text": tl.Tracer("top", "--by", "file", *common),
            "dir_json": tl.Tracer("top", "--json", "--by", "dir", str(depth), *common),
            "dir_text": tl.Tracer("top", "--by", "dir", str(depth), *common),
        }
        try:
            p1 = run_steps("w:%s/t1:0:3" % a, "w:%s/t2:0:1" % b)
            p2 = run_steps("w:%s/t1:3:2" % a, "w:%s/t3:0:1" % a, "r:%s/t2:0:1" % b)
        finally:
            out = {k: t.stop() for k, t in ts.items()}
    # What each file and directory must show: bytes, and which processes.
    files = {
        a + "/t1": {"fs_write_bytes": 5 * MiB, "disk_write_bytes": 5 * MiB,
                    "fs_read_bytes": 0, "disk_read_bytes": 0, "pids": {p1, p2}},
        b + "/t2": {"fs_write_bytes": MiB, "disk_write_bytes": MiB,
                    "fs_read_bytes": MiB, "disk_read_bytes": MiB, "pids": {p1, p2}},
        a + "/t3": {"fs_write_bytes": MiB, "disk_write_bytes": MiB,
                    "fs_read_bytes": 0, "disk_read_bytes": 0, "pids": {p2}},
    }
    dirs = {
        a: {"fs_write_bytes": 6 * MiB, "disk_write_bytes": 6 * MiB, "fs_read_bytes": 0,
            "disk_read_bytes": 0, "pids": {p1, p2}, "nr_files": 2},
        b: {"fs_write_bytes": MiB, "disk_write_bytes": MiB, "fs_read_bytes": MiB,
            "disk_read_bytes": MiB, "pids": {p1, p2}, "nr_files": 1},
    }
    return {"out": out, "files": files, "dirs": dirs, "depth": depth}


def doc_of(text):
    docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert len(docs) == 1
    return docs[0]


def check_json(rows, expected, extra=()):
    for path, want in expected.items():
        got = [r for r in rows if r["path"] == path]
        assert len(got) == 1, "%s: %s" % (path, [r["path"] for r in rows])
        g = got[0]
        for k in ("fs_write_bytes", "disk_write_bytes", "fs_read_bytes", "disk_read_bytes") + \
                tuple(extra):
            assert g[k] == want[k], (path, k, g)
        assert set(g["pids"]) == want["pids"] and g["nr_processes"] == len(want["pids"]), g


def test_by_file_json(run):
    doc = doc_of(run["out"]["file_json"])
    assert doc["by"] == "file"
    check_json([f for f in doc["files"] if f["kind"] == "file"], run["files"])
    # The processes are there as well, each with its own share.
    assert doc["processes"]


def test_by_dir_json(run):
    doc = doc_of(run["out"]["dir_json"])
    assert doc["by"] == "dir" and doc["dir_depth"] == run["depth"]
    check_json([d for d in doc["dirs"] if d["kind"] == "dir"], run["dirs"], ("nr_files",))


def mib(v):
    """What the text report prints for @v bytes (whole MiBs here)."""
    return "%.1fM" % (v / MiB)


def text_rows(text):
    """{path: (first cell, [FS_READ FS_WRITE DISK_READ DISK_WRITE PROCS Q2C D2C])}."""
    lines, rows = text.splitlines(), {}
    for i, line in enumerate(lines[:-1]):
        if lines[i + 1].startswith("      ") and not line.startswith(" "):
            rows[lines[i + 1].strip()] = (line[:31].strip(), line[36:].split())
    return rows


def check_text(rows, expected):
    for path, want in expected.items():
        assert path in rows, (path, sorted(rows))
        _, cols = rows[path]
        assert cols[:5] == [mib(want["fs_read_bytes"]) if want["fs_read_bytes"] else "0",
                            mib(want["fs_write_bytes"]),
                            mib(want["disk_read_bytes"]) if want["disk_read_bytes"] else "0",
                            mib(want["disk_write_bytes"]), str(len(want["pids"]))], (path, cols)


def test_by_file_text(run):
    text = run["out"]["file_text"]
    assert text.splitlines()[2].startswith("FILE "), text
    check_text(text_rows(text), run["files"])
    assert all(len(line) < 100 for line in text.splitlines() if not line.startswith("      "))


def test_by_dir_text(run):
    text = run["out"]["dir_text"]
    assert text.splitlines()[2].startswith("DIRECTORY (depth %d)" % run["depth"]), text
    rows = text_rows(text)
    check_text(rows, run["dirs"])
    for path, want in run["dirs"].items():
        assert rows[path][0] == "%d file%s" % (want["nr_files"], "s" * (want["nr_files"] > 1))


@pytest.mark.parametrize("args, what", [
    (["--by", "dir"], "DEPTH"),
    (["--by", "dir", "0"], "DEPTH"),
    (["--by", "dir", "x"], "DEPTH"),
    (["--by", "size"], "size"),
])
def test_by_bad_input(args, what):
    p = tl.run_iospan("top", *args)
    assert p.returncode == 2, (args, p.returncode, p.stdout, p.stderr)
    err = p.stderr.strip().splitlines()
    assert p.stdout == "" and len(err) == 1 and what in err[0], p.stderr
