# SPDX-License-Identifier: GPL-2.0
"""The syscall hooks of top and trace: the raw sys_enter/sys_exit tracepoints, one
program each for every syscall followed (src/bpf/syscall.bpf.h).

- A 32-bit syscall (int $0x80) numbers its calls as ia32 does: ia32's lseek has the
  number of x86-64's readv. Taken as a 64-bit call, `iowork compat` would be COUNT
  reads of its file; the kernel's own syscall tracepoints skip such calls, so must
  iospan. Ground truth: the workload's one pread.
- No plan uses a classic tracepoint: releasing each one waits for an RCU grace period,
  one after the other (about 20 ms each here), which is what held top's and trace's
  exit for a second (bench/startup.py measures the exit itself).
"""
import json
import os
import subprocess

import pytest

import iospan_testlib as tl

BS = 4096
CALLS = 64


def run_compat(path):
    """`iowork compat PATH`: its JSON line, or a skip where there are no 32-bit calls."""
    p = subprocess.run([tl.iowork_bin(), "compat", path, "-b", str(BS), "-n", str(CALLS)],
                       capture_output=True, text=True, timeout=60)
    if p.returncode == 3:
        pytest.skip("this kernel runs no 32-bit syscalls (IA32 emulation off)")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture
def compat_file(scratch_ext4):
    path = os.path.join(scratch_ext4.mnt, "compat.dat")
    with open(path, "wb") as f:
        f.write(b"c" * BS * 4)
    return path


def test_top_skips_32bit_syscalls(compat_file):
    top = tl.Tracer("top", "--json", "--file", compat_file, "--duration", "120")
    try:
        w = run_compat(compat_file)
    finally:
        docs = top.json_lines()
    assert w["ops"] == CALLS and w["bytes"] == BS, w
    rows = [p for p in docs[-1]["processes"] if p["pid"] == w["pid"]]
    assert len(rows) == 1, docs[-1]["processes"]
    # The one pread, not CALLS reads more.
    assert rows[0]["fs_read_bytes"] == BS, rows[0]
    assert rows[0]["fs_write_bytes"] == 0, rows[0]


def test_trace_skips_32bit_syscalls(compat_file):
    trace = tl.Tracer("trace", "--json", "-t", "0", "--file", compat_file, "--duration", "120")
    try:
        w = run_compat(compat_file)
    finally:
        docs = trace.json_lines()
    mine = [d for d in docs if d.get("type") == "request" and d["pid"] == w["pid"]]
    assert [(r["op"], r["bytes"]) for r in mine] == [("pread64", BS)], mine


def test_no_plan_uses_classic_tracepoints():
    doc = json.loads(tl.run_iospan("--json", "doctor", check=True, timeout=300).stdout)
    for cmd, plan in doc["plans"].items():
        classic = [h for h, p in plan.items() if p["mode"] == "tracepoint"]
        assert not classic, (cmd, classic)
    for cmd in ("top", "trace"):
        assert doc["plans"][cmd]["sys_enter"]["mode"] == "tp_btf", doc["plans"][cmd]
        assert doc["plans"][cmd]["sys_exit"]["mode"] == "tp_btf", doc["plans"][cmd]
