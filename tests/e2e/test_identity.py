# SPDX-License-Identifier: GPL-2.0
"""Who a process is beyond its comm, in `top` and `trace`, text and JSON.

- Process titles: a perl process sets its title (`$0 = ...`, as PostgreSQL's
  "postgres: checkpointer"), writes a file and exits at once; a python process with
  ordinary arguments does the same. Each must be shown with its command line as ps
  shows it (the process's own /proc/self/cmdline, read by itself), though both are
  gone when the reports are printed; the title is shown in text, plain arguments
  are not.
- cgroup v1 blkio: a process in the cgroup v2 root but in a blk-throttle (blkio)
  group must be shown in that group, not as "/".
"""
import json
import os
import re
import subprocess

import pytest

import iospan_testlib as tl

MiB = 1 << 20
TITLE = "iospan-title: worker one"

# Sets its title, writes 1 MiB to ARGV[0] and fsyncs, prints its pid and its own
# /proc/self/cmdline (hex), and exits.
PERL = r"""
$0 = "%s";
open(my $f, ">", $ARGV[0]) or die "open: $!";
syswrite($f, "t" x 1048576) == 1048576 or die "write: $!";
$f->flush; $f->sync or die "fsync: $!";
close($f);
open(my $c, "<", "/proc/self/cmdline") or die; local $/; my $cmd = <$c>;
print "{\"pid\": $$, \"cmdline\": \"" . unpack("H*", $cmd) . "\"}\n";
""" % TITLE

PYTHON_W = r"""
import json, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
assert os.write(fd, b"p" * (1 << 20)) == 1 << 20
os.fsync(fd)
os.close(fd)
with open("/proc/self/cmdline", "rb") as f:
    cmd = f.read()
print(json.dumps({"pid": os.getpid(), "cmdline": cmd.hex()}))
"""

# A direct read of 256 KiB of ARGV[1], from a process whose cgroups are set before.
DIRECT_READ = r"""
import json, mmap, os, sys
buf = mmap.mmap(-1, 1 << 18)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
assert os.preadv(fd, [buf], 0) == 1 << 18
os.close(fd)
print(json.dumps({"pid": os.getpid()}))
"""


def as_ps(hexargs):
    """An argument area as ps shows it: arguments joined by spaces, control characters
    as '?'."""
    text = bytes.fromhex(hexargs).rstrip(b"\0").replace(b"\0", b" ").decode()
    return re.sub(r"[\x00-\x1f\x7f]", "?", text).rstrip()


def run(cmd, preexec_fn=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, preexec_fn=preexec_fn)
    assert p.returncode == 0, "%s failed: %s" % (cmd[0], p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


def tracers(fs):
    return {
        "top_json": tl.Tracer("top", "--json", "--duration", "300", "-n", "200"),
        "top_text": tl.Tracer("top", "--duration", "300", "-n", "200"),
        "trace_json": tl.Tracer("trace", "--json", "-t", "0", "-d", fs.dev),
        "trace_text": tl.Tracer("trace", "-t", "0", "-d", fs.dev),
    }


def stop_all(ts):
    return {name: t.stop() for name, t in ts.items()}


def top_processes(text):
    docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert len(docs) == 1
    return {p["pid"]: p for p in docs[0]["processes"]}


def trace_requests(text):
    return [d for d in (json.loads(line) for line in text.splitlines() if line.strip())
            if d["type"] == "request"]


def top_text_rows(text):
    """{pid: (the process row, the line after it)} of a `top` text report."""
    lines, rows = text.splitlines(), {}
    for i, line in enumerate(lines):
        m = re.match(r"^(\d+)\s+\S", line)
        if m and i + 1 < len(lines) and "%" not in line:
            rows.setdefault(int(m.group(1)), (line, lines[i + 1]))
    return rows


def trace_text_headers(text, ops=("write", "fsync")):
    """{pid: [(name, cgroup)]} of the requests of @ops (None: all) in a `trace` text
    output."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\d\d:\d\d:\d\d\.\d+ (\S+) (.*) pid (\d+) tid \d+ cgroup (\S+) ",
                     line)
        if m and (ops is None or m.group(1) in ops):
            out.setdefault(int(m.group(3)), []).append((m.group(2), m.group(4)))
    return out


@pytest.fixture(scope="module")
def titles():
    tl.require_root("creates a loop device, loads BPF")
    with tl.scratch_fs("ext4", 128) as fs:
        # Scripts in files: command lines short enough to be captured whole.
        scripts = {}
        for name, text in (("titled.pl", PERL), ("plain.py", PYTHON_W)):
            scripts[name] = os.path.join(fs.mnt, name)
            with open(scripts[name], "w") as f:
                f.write(text)
        ts = tracers(fs)
        try:
            perl = run(["perl", scripts["titled.pl"], os.path.join(fs.mnt, "titled.dat")])
            py = run(["/usr/bin/python3", "-B", scripts["plain.py"],
                      os.path.join(fs.mnt, "plain.dat")])
        finally:
            out = stop_all(ts)
    return {"perl": perl, "py": py, "out": out}


def test_title_top_json(titles):
    procs = top_processes(titles["out"]["top_json"])
    for who in ("perl", "py"):
        w = titles[who]
        assert w["pid"] in procs, "%s (%d) not in the report" % (who, w["pid"])
        assert procs[w["pid"]]["cmdline"] == as_ps(w["cmdline"]), who
    assert procs[titles["perl"]["pid"]]["cmdline"] == TITLE


def test_title_top_text(titles):
    rows = top_text_rows(titles["out"]["top_text"])
    row, after = rows[titles["perl"]["pid"]]
    assert after == '  "%s"' % TITLE, (row, after)
    # Plain arguments: the command's own name says it, no title line.
    row, after = rows[titles["py"]["pid"]]
    assert not after.startswith('  "'), (row, after)


def test_title_trace_json(titles):
    reqs = trace_requests(titles["out"]["trace_json"])
    for who in ("perl", "py"):
        w = titles[who]
        # Its writes come after the title is set (reading the script comes before).
        mine = [r for r in reqs if r["pid"] == w["pid"] and r["op"] in ("write", "fsync")]
        assert {r["op"] for r in mine} == {"write", "fsync"}, (who, mine)
        assert all(r["cmdline"] == as_ps(w["cmdline"]) for r in mine), who


def test_title_trace_text(titles):
    heads = trace_text_headers(titles["out"]["trace_text"])
    assert heads.get(titles["perl"]["pid"]), "no request of the perl process"
    assert all(name == TITLE for name, _ in heads[titles["perl"]["pid"]])
    assert all(name == "python3" for name, _ in heads[titles["py"]["pid"]])


def test_blkio_group(root):
    """A process in the cgroup v2 root but in a blkio group: its cgroup is that group."""
    tl.require_blkio()
    with tl.scratch_fs("ext4", 128) as fs:
        path = os.path.join(fs.mnt, "throttled.dat")
        tl.dd(path, bs="256K", count=1, conv="fsync")
        with tl.blkio_throttle(fs.devnum, read_bps=64 * MiB) as blk:
            want = "/" + os.path.relpath(blk, tl.blkio_root())

            def enter():
                tl.move_to_cgroup(tl.cgroup2_root())
                tl.move_to_cgroup(blk)

            ts = tracers(fs)
            try:
                pid = run(["/usr/bin/python3", "-B", "-c", DIRECT_READ, path], enter)["pid"]
            finally:
                out = stop_all(ts)
    p = top_processes(out["top_json"])[pid]
    assert p["cgroup"] == "/" and p["blkio_cgroup"] == want, p
    row, _ = top_text_rows(out["top_text"])[pid]
    cell = row.split()[2]
    assert cell.startswith("blkio:") and want.endswith(cell[len("blkio:"):].lstrip(".")), row
    reqs = [r for r in trace_requests(out["trace_json"]) if r["pid"] == pid]
    assert reqs and all(r["blkio_cgroup"] == want for r in reqs), reqs
    heads = trace_text_headers(out["trace_text"], None)[pid]
    assert all(cg == "blkio:" + want for _, cg in heads), heads
