# SPDX-License-Identifier: GPL-2.0
"""Attach fallbacks on this machine: the raw_tp variants, hooks that attach in no way,
and doctor's check that each command really loads and attaches.

IOSPAN_ATTACH_OFF (docs/iospan-doctor.md) makes iospan treat attach modes as missing,
so the paths older kernels take run here too: tp_btf off gives the raw_tp programs;
tp_btf, fentry and kprobe off leave the optional hooks with no way to attach. The
fentry and kprobe programs themselves run in the kernel matrix (tests/kernels), where
those modes exist.
"""
import json
import os
import select
import signal
import subprocess
import time

import iospan_testlib as tl

MiB = 1 << 20
SIZE = 8 * MiB


def env_off(modes):
    env = dict(os.environ)
    env["IOSPAN_ATTACH_OFF"] = modes
    return env


def doctor(modes=None):
    p = tl.run_iospan("doctor", "--json", timeout=120, env=env_off(modes) if modes else None)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def start(modes, *args):
    """Starts `iospan ARGS` with @modes off; returns (Popen, stderr so far) once tracing.
    Reads stderr unbuffered: several lines may come at once."""
    proc = subprocess.Popen([tl.iospan_bin()] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env_off(modes))
    seen, deadline = b"", time.time() + 30
    while time.time() < deadline and b"tracing" not in seen:
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
    if b"tracing" in seen:
        return proc, seen.decode()
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError("iospan %s never started tracing:\n%s%s%s" % (args, seen, out, err))


def stop(proc):
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    out, err = out.decode(), err.decode()
    assert proc.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, out, err)
    return out, err


def test_doctor_sets_up_each_command():
    tl.require_root("loads BPF")
    doc = doctor()
    assert set(doc["commands"]) == {"top", "trace", "lat", "snoop"}, doc["commands"]
    for cmd, check in doc["commands"].items():
        assert check == {"loaded": True, "error": None, "needs": None}, (cmd, check)
    assert doc["ready"] is True


def test_doctor_not_ready_when_a_command_cannot_attach():
    """block_bio_queue is required; with tp_btf and raw_tp off it attaches in no way."""
    tl.require_root("loads BPF")
    doc = doctor("tp_btf,raw_tp")
    for cmd in ("top", "trace", "snoop"):
        check = doc["commands"][cmd]
        assert check["loaded"] is False, (cmd, check)
        assert "block_bio_queue" in check["error"], (cmd, check)
    assert doc["ready"] is False
    p = tl.run_iospan("doctor", timeout=120, env=env_off("tp_btf,raw_tp"))
    assert p.returncode == 0, p.stderr
    assert "FAILS: " in p.stdout and "Ready: no" in p.stdout, p.stdout[-2000:]
    # The command itself: a runtime failure naming the hook (exit 1), not bad usage (2).
    for cmd in ("top", "trace", "snoop"):
        p = tl.run_iospan(cmd, "--duration", "1", timeout=120, env=env_off("tp_btf,raw_tp"))
        err = [line for line in p.stderr.splitlines() if ": warning: " not in line]
        assert p.returncode == 1 and len(err) == 1, (cmd, p.returncode, p.stderr)
        assert "missing kernel feature" in err[0] and "block_bio_queue" in err[0], err


def the_file(doc, pid, path):
    procs = [p for p in doc["processes"] if p["pid"] == pid]
    assert len(procs) == 1, [(p["pid"], p["comm"]) for p in doc["processes"]]
    rows = [f for f in procs[0]["files"] if f["path"] == os.path.realpath(path)]
    assert len(rows) == 1, [f["path"] for f in procs[0]["files"]]
    return rows[0]


def run_pid(cmd):
    """Runs @cmd to its end; returns its pid."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return proc.pid


def test_raw_tp_variants_attribute_exactly():
    """The raw_tp programs (typed through bpf_rdonly_cast) count as tp_btf's do."""
    tl.require_root("creates loop devices and file systems, loads BPF")
    with tl.scratch_fs("ext4", 128) as fs:
        dio, buf = os.path.join(fs.mnt, "dio.dat"), os.path.join(fs.mnt, "buf.dat")
        for path in (dio, buf):
            tl.dd(path, bs="1M", count=SIZE // MiB, conv="fsync")
        tl.drop_caches()
        top, _ = start("tp_btf", "top", "--json", "-d", fs.name, "--duration", "60")
        try:
            pid_dio = run_pid(["dd", "if=" + dio, "of=/dev/null", "bs=1M", "iflag=direct"])
            pid_buf = run_pid(["dd", "if=" + buf, "of=/dev/null", "bs=1M"])
        finally:
            out, _ = stop(top)
        doc = json.loads(out.strip().splitlines()[-1])
    plan = doc["attach_plan"]
    assert plan["block_bio_queue"]["mode"] == "raw_tp", plan["block_bio_queue"]
    assert plan["block_rq_complete"]["mode"] == "raw_tp", plan["block_rq_complete"]
    for pid, path in ((pid_dio, dio), (pid_buf, buf)):
        row = the_file(doc, pid, path)
        assert row["fs_read_bytes"] == SIZE, row
        assert row["disk_read_bytes"] == SIZE, row


def test_missing_hooks_name_their_figures():
    """With no way to attach an optional hook, the figure it feeds is named as missing:
    at start, in the text report and in JSON; never a silent zero."""
    tl.require_root("loads BPF")
    off = "tp_btf,fentry,kprobe"
    top, started = start(off, "top", "--duration", "60")
    out, _ = stop(top)
    figure = "mmap FS read bytes (faults): not available on this kernel (mm_filemap_fault)"
    assert figure in started, started
    assert figure in out, out[-3000:]
    assert "I/O stalls: not available on this kernel (sched_switch)" in out

    top, _ = start(off, "top", "--json", "--duration", "60")
    out, _ = stop(top)
    doc = json.loads(out.strip().splitlines()[-1])
    hooks = {u["hook"] for u in doc["unavailable"]}
    assert {"mm_filemap_fault", "mm_filemap_map_pages", "sched_switch"} <= hooks, hooks

    trace, started = start(off, "trace", "--json", "--ops", "all", "--duration", "60")
    out, _ = stop(trace)
    assert "synchronous readahead: not available on this kernel" in started, started
    totals = [json.loads(line) for line in out.splitlines() if '"totals"' in line]
    assert len(totals) == 1, out[-2000:]
    hooks = {u["hook"] for u in totals[0]["unavailable"]}
    assert {"page_cache_sync_ra", "page_cache_async_ra", "mm_filemap_fault"} <= hooks, hooks

    # With every mode on, nothing is missing on this machine.
    top, started = start("", "top", "--json", "--duration", "60")
    out, _ = stop(top)
    assert json.loads(out.strip().splitlines()[-1])["unavailable"] == []
