# SPDX-License-Identifier: GPL-2.0
"""File paths as they are when the I/O is reported, in `top` and `trace`, text and JSON.

Paths are captured in the kernel once per file and cached; these tests make the cache
wrong in every way a file's name can change during a run, on ext4, xfs and btrfs:

- inode reuse: a process writes a file and deletes it, another creates files until
  one gets the deleted file's inode number (ext4 at once, xfs within a chunk; btrfs
  never reuses one within a mount) and writes it: each process's row and request
  names its own file, the first one marked deleted;
- rename while open, with I/O after it, of the file and then of its directory;
- rename after the last I/O (the file closed, nothing traced after it);
- unlink while open with I/O after it, and unlink after the last I/O (a temp file).

Four tracers watch the same run: `top --json`, `top` (text), `trace -t 0 --json` and
`trace -t 0` (text). Deleted files are marked " (deleted)", as /proc/PID/fd shows them.
"""
import json
import os
import re
import subprocess

import pytest

import iospan_testlib as tl

PYTHON = "/usr/bin/python3"
MiB = 1 << 20
DELETED = " (deleted)"

# One step of the scenario per process. Writes are 1 MiB pwrites at offsets that tell
# the phases of a step apart (offset k MiB: phase k), each followed by fsync. Prints
# {"pid":..., "ino":..., ...} last.
STEP = r"""
import json, os, sys

op, d = sys.argv[1], sys.argv[2]
MiB = 1 << 20
out = {"pid": os.getpid()}

def write(fd, phase):
    assert os.pwrite(fd, b"p" * MiB, phase * MiB) == MiB
    os.fsync(fd)

def create(path):
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)

if op == "reuse_old":
    fd = create(os.path.join(d, "old.dat"))
    out["ino"] = os.fstat(fd).st_ino
    write(fd, 0)
    os.close(fd)
    os.unlink(os.path.join(d, "old.dat"))
elif op == "reuse_new":
    want, tries = int(sys.argv[3]), int(sys.argv[4])
    for i in range(tries):  # files that miss stay, so their inodes stay taken
        path = os.path.join(d, "new-%d.dat" % i)
        fd = create(path)
        if os.fstat(fd).st_ino == want or i == tries - 1:
            break
        os.close(fd)
    out["ino"], out["path"] = os.fstat(fd).st_ino, path
    write(fd, 0)
    os.close(fd)
elif op == "rename_open":
    os.mkdir(os.path.join(d, "d1"))
    fd = create(os.path.join(d, "d1", "before.dat"))
    out["ino"] = os.fstat(fd).st_ino
    write(fd, 0)
    os.rename(os.path.join(d, "d1", "before.dat"), os.path.join(d, "d1", "after.dat"))
    write(fd, 1)
    os.rename(os.path.join(d, "d1"), os.path.join(d, "d2"))
    write(fd, 2)
    os.close(fd)
elif op == "rename_idle":
    fd = create(os.path.join(d, "idle.dat"))
    out["ino"] = os.fstat(fd).st_ino
    write(fd, 0)
    os.close(fd)
    os.rename(os.path.join(d, "idle.dat"), os.path.join(d, "idle-renamed.dat"))
elif op == "unlink_open":
    fd = create(os.path.join(d, "gone.dat"))
    out["ino"] = os.fstat(fd).st_ino
    write(fd, 0)
    os.unlink(os.path.join(d, "gone.dat"))
    write(fd, 1)
    os.close(fd)
elif op == "unlink_after":
    fd = create(os.path.join(d, "tmp.dat"))
    out["ino"] = os.fstat(fd).st_ino
    write(fd, 0)
    os.close(fd)
    os.unlink(os.path.join(d, "tmp.dat"))
else:
    raise SystemExit("unknown op " + op)
print(json.dumps(out))
"""


def step(op, d, *args):
    p = subprocess.run([PYTHON, "-B", "-c", STEP, op, d] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "step %s failed: %s" % (op, p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=["ext4", "xfs", "btrfs"])
def run(request):
    """The whole scenario on a fresh file system, watched by the four tracers."""
    tl.require_root("creates loop devices and file systems, loads BPF")
    fstype = request.param
    with tl.scratch_fs(fstype, 320) as fs:
        d = os.path.realpath(fs.mnt)
        top_args = ("--duration", "300", "-n", "100", "--max-files", "100")
        tracers = {
            "top_json": tl.Tracer("top", "--json", *top_args),
            "top_text": tl.Tracer("top", *top_args),
            "trace_json": tl.Tracer("trace", "--json", "-t", "0", "-d", fs.dev,
                                    "--ops", "pwrite64"),
            "trace_text": tl.Tracer("trace", "-t", "0", "-d", fs.dev, "--ops", "pwrite64"),
        }
        out = {}
        try:
            steps = {"reuse_old": step("reuse_old", d)}
            # btrfs never hands out an inode number twice in a mount: a few tries show it.
            tries = 20 if fstype == "btrfs" else 1000
            steps["reuse_new"] = step("reuse_new", d, steps["reuse_old"]["ino"], tries)
            for op in ("rename_open", "rename_idle", "unlink_open", "unlink_after"):
                steps[op] = step(op, d)
        finally:
            for name, t in tracers.items():
                out[name] = t.stop()
        yield {"fs": fs, "dir": d, "steps": steps, "out": out}


def expected_top(run):
    """{(pid, ino): path} every top row of the scenario must show."""
    d, s = run["dir"], run["steps"]
    return {
        (s["reuse_old"]["pid"], s["reuse_old"]["ino"]): os.path.join(d, "old.dat") + DELETED,
        (s["reuse_new"]["pid"], s["reuse_new"]["ino"]): s["reuse_new"]["path"],
        (s["rename_open"]["pid"], s["rename_open"]["ino"]): os.path.join(d, "d2", "after.dat"),
        (s["rename_idle"]["pid"], s["rename_idle"]["ino"]): os.path.join(d, "idle-renamed.dat"),
        (s["unlink_open"]["pid"], s["unlink_open"]["ino"]): os.path.join(d, "gone.dat") + DELETED,
        (s["unlink_after"]["pid"], s["unlink_after"]["ino"]): os.path.join(d, "tmp.dat") + DELETED,
    }


def expected_trace(run):
    """{(pid, offset): path} of every pwrite64 request of the scenario: the name the
    file had when the write was done."""
    d, s = run["dir"], run["steps"]
    return {
        (s["reuse_old"]["pid"], 0): os.path.join(d, "old.dat"),
        (s["reuse_new"]["pid"], 0): s["reuse_new"]["path"],
        (s["rename_open"]["pid"], 0): os.path.join(d, "d1", "before.dat"),
        (s["rename_open"]["pid"], MiB): os.path.join(d, "d1", "after.dat"),
        (s["rename_open"]["pid"], 2 * MiB): os.path.join(d, "d2", "after.dat"),
        (s["rename_idle"]["pid"], 0): os.path.join(d, "idle.dat"),
        (s["unlink_open"]["pid"], 0): os.path.join(d, "gone.dat"),
        (s["unlink_open"]["pid"], MiB): os.path.join(d, "gone.dat") + DELETED,
        (s["unlink_after"]["pid"], 0): os.path.join(d, "tmp.dat"),
    }


def test_inode_reused(run):
    """The scenario itself: on ext4 and xfs the new file really has the deleted one's
    inode number (else the reuse test below would prove nothing)."""
    s = run["steps"]
    if run["fs"].fstype == "btrfs":
        assert s["reuse_new"]["ino"] != s["reuse_old"]["ino"]
    else:
        assert s["reuse_new"]["ino"] == s["reuse_old"]["ino"], s


def parse_top_text(text):
    """{(pid, ino): path} of the file rows of a `top` text report."""
    rows, pid, last = {}, None, None
    for line in text.splitlines():
        m = re.match(r"^(\d+)\s+\S", line)
        if m:
            pid, last = int(m.group(1)), None
            continue
        m = re.match(r"^  \S+ ino (\d+)\s", line)
        if m and pid is not None:
            last = (pid, int(m.group(1)))
            continue
        if line.startswith("      ") and last:
            rows[last] = line.strip()
            last = None
        elif not line.strip():
            pid = last = None  # end of the process table
    return rows


def check_top(run, rows):
    for key, path in expected_top(run).items():
        assert key in rows, "no row for pid %d inode %d: %s" % (key + (sorted(rows),))
        assert rows[key] == path, "pid %d inode %d" % key


def test_top_json(run):
    docs = [json.loads(line) for line in run["out"]["top_json"].splitlines() if line.strip()]
    assert len(docs) == 1
    rows = {(p["pid"], f["inode"]): f["path"] for p in docs[0]["processes"]
            for f in p["files"] if f["kind"] == "file"}
    check_top(run, rows)


def test_top_text(run):
    check_top(run, parse_top_text(run["out"]["top_text"]))


def check_trace(run, got):
    for key, path in expected_trace(run).items():
        assert key in got, "no pwrite64 of pid %d at offset %d: %s" % (key + (sorted(got),))
        assert got[key] == path, "pid %d offset %d" % key


def test_trace_json(run):
    docs = [json.loads(line) for line in run["out"]["trace_json"].splitlines() if line.strip()]
    got = {(r["pid"], r["offset"]): r["path"] for r in docs
           if r["type"] == "request" and r["op"] == "pwrite64"}
    check_trace(run, got)


def test_trace_text(run):
    got, pid = {}, None
    for line in run["out"]["trace_text"].splitlines():
        m = re.match(r"^\d\d:\d\d:\d\d\.\d+ pwrite64 .* pid (\d+) tid \d+ ", line)
        if m:
            pid = int(m.group(1))
            continue
        m = re.match(r"^  file (.*) \(\d+:\d+ ino \d+\) offset (\d+) ", line)
        if m and pid is not None:
            got[(pid, int(m.group(2)))] = m.group(1)
            pid = None
    check_trace(run, got)
