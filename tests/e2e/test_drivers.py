# SPDX-License-Identifier: GPL-2.0
"""Below the block layer on this machine: its loop devices have no driver hook, the NVMe
and SCSI modules are not loaded, and virtio-blk's functions take neither fentry nor
kprobes here. Every driver figure then says so (null, "unavailable", no value for the
rule), never a zero that looks measured. The driver stages and errors themselves are
checked on the kernel matrix (tests/kernels: NVMe, SCSI and virtio-blk disks, blkdebug
errors)."""

import json
import os
import sqlite3
import subprocess
import tempfile
import time

import iospan_testlib as tl

DRIVER_STAGES = ("drv_in", "device", "drv_out")
# Hook -> (module, tracefs category or None for a kernel function).
DRIVER_HOOKS = {
    "nvme_setup_cmd": ("nvme_core", "nvme"),
    "nvme_complete_rq": ("nvme_core", "nvme"),
    "nvme_timeout": ("nvme", None),
    "scsi_dispatch_cmd_start": ("scsi_mod", "scsi"),
    "scsi_dispatch_cmd_done": ("scsi_mod", "scsi"),
    "scsi_dispatch_cmd_error": ("scsi_mod", "scsi"),
    "scsi_dispatch_cmd_timeout": ("scsi_mod", "scsi"),
    "virtio_queue_rq": ("virtio_blk", None),
    "blk_mq_complete_request": ("virtio_blk", None),
}


def iowork(*args):
    """Runs iowork; its JSON line (what it did)."""
    p = subprocess.run([tl.iowork_bin()] + list(args), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def kallsyms():
    with open("/proc/kallsyms") as f:
        return {line.split()[2] for line in f if len(line.split()) >= 3}


def driver_present(hook, syms):
    """Whether @hook's target exists here: its module loaded or the code built in."""
    module, category = DRIVER_HOOKS[hook]
    if os.path.exists("/sys/kernel/btf/" + module):
        return True
    if category:
        return os.path.isdir("/sys/kernel/tracing/events/" + category)
    return hook in syms and (hook != "blk_mq_complete_request" or "virtio_queue_rq" in syms)


def trace_on_loop(disk, dev):
    proc = subprocess.Popen([tl.iospan_bin(), "trace", "-t", "0", "--json", "-d", disk],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = ""
    deadline = time.time() + 30
    while "tracing" not in err and time.time() < deadline:
        err += proc.stderr.readline()
    assert "tracing" in err, err
    w = iowork("pread", dev, "-b", "4096", "-n", "8", "--direct")
    proc.send_signal(2)
    out, rest = proc.communicate(timeout=60)
    assert proc.returncode == 0, err + rest
    docs = [json.loads(line) for line in out.splitlines() if line.strip()]
    return w, docs, err + rest


def test_trace_driver_figures_unknown_not_zero():
    """A loop device's requests: each bio's driver is null and the request's driver
    stages are null (not 0); the plan lists every driver hook; a driver that is here but
    whose hooks cannot attach is named in "unavailable" (and on stderr), one whose
    module is not loaded is not (it has no disk to follow)."""
    tl.require_root("loads BPF")
    doc = json.loads(tl.run_iospan("doctor", "--json", check=True, timeout=120).stdout)
    plan = doc["plans"]["trace"]
    assert set(DRIVER_HOOKS) <= set(plan), sorted(plan)
    syms = kallsyms()
    with tl.loop_device(64) as dev:
        w, docs, err = trace_on_loop(os.path.basename(dev), dev)
    reqs = [d for d in docs if d["type"] == "request" and d["pid"] == w["pid"]]
    assert len(reqs) == w["ops"] == 8, (len(reqs), w)
    for r in reqs:
        assert all(r["stages"][k] is None for k in DRIVER_STAGES), r["stages"]
        assert r["stages"]["d2c"] > 0, r["stages"]
        assert [b["driver"] for b in r["bios"]] == [None], r["bios"]
    totals = [d for d in docs if d["type"] == "totals"][0]
    unavailable = {u["hook"]: u["figure"] for u in totals["unavailable"]}
    for hook in DRIVER_HOOKS:
        if plan[hook]["mode"] is not None:
            assert hook not in unavailable, (hook, plan[hook])
            continue
        if not driver_present(hook, syms):
            assert hook not in unavailable, (hook, unavailable)
        elif hook in ("virtio_queue_rq", "nvme_setup_cmd", "scsi_dispatch_cmd_start"):
            # One line per figure: the first hook of it that cannot attach names it.
            assert hook in unavailable, (hook, unavailable)
            assert "%s: not available on this kernel (%s)" % (unavailable[hook], hook) in err


def test_top_disk_driver_counters_unknown_not_zero():
    """top's per-disk driver object on a loop device: requeues counted (0 here), the
    driver's own counters null (no driver hook completed a command on it)."""
    tl.require_root("loads BPF")
    with tl.loop_device(64) as dev:
        disk = os.path.basename(dev)
        proc = tl.popen_iospan("top", "--json", "-d", disk, "--duration", "3")
        time.sleep(1)
        iowork("pread", dev, "-b", "4096", "-n", "8", "--direct")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    top = json.loads(out.strip().splitlines()[-1])
    rows = [d for d in top["devices"] if d["disk"] == disk]
    assert len(rows) == 1, top["devices"]
    drv = rows[0]["driver"]
    assert drv == {"kind": None, "requeues": 0, "commands": None, "errors": None,
                   "timeouts": None, "dispatch_errors": None, "last_error_status": None,
                   "last_error": None}, drv


def test_watch_driver_errors_rule():
    """--driver-errors needs BPF (usage error with --bpf off, one line, exit 2); on a
    loop device it never fires (no value), and the samples keep the driver counters:
    requeues 0, the driver's unknown."""
    p = tl.run_iospan("watch", "--driver-errors", "1", "--bpf", "off", "--duration", "1")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "--driver-errors needs a BPF collector" in p.stderr, p.stderr
    tl.require_root("loads BPF")
    db = tempfile.mktemp(prefix=tl.TMP_PREFIX, suffix=".db")
    try:
        with tl.loop_device(64) as dev:
            disk = os.path.basename(dev)
            p = tl.run_iospan("watch", "--db", db, "--config", "", "-d", disk,
                              "--interval", "0.2", "--duration", "2", "--driver-errors", "1",
                              "--util", "0", "--await", "0", "--read-mbps", "0",
                              "--write-mbps", "0", timeout=120)
            assert p.returncode == 0, p.stderr
            # The same rule, now with a capture to look at the samples' driver column.
            p = tl.run_iospan("watch", "--db", db, "--config", "", "-d", disk,
                              "--interval", "0.2", "--capture-now", "--capture", "1",
                              timeout=120)
            assert p.returncode == 0, p.stderr
        con = sqlite3.connect(db)
        try:
            rules = con.execute("SELECT rule FROM incidents").fetchall()
            rows = con.execute("SELECT driver FROM samples WHERE disk = ?", (disk,)).fetchall()
            version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                                  ).fetchone()
        finally:
            con.close()
    finally:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.unlink(db + suffix)
    assert version == ("4",), version
    assert rules == [("capture",)], rules
    known = [json.loads(r[0]) for r in rows if r[0] is not None]
    assert known, rows
    for d in known:
        assert d["kind"] is None and d["requeues"] == 0 and d["errors"] is None, d


def test_merge_guest_bad_input(tmp_path):
    """trace --merge-guest reads files: its options misused are usage errors (exit 2),
    files it cannot use one line each (exit 1), under --json one JSON error object; the
    real merge is checked on the kernel matrix (tests/kernels/test_vm.py)."""
    empty = tmp_path / "empty.json"
    empty.write_text("")
    cut = tmp_path / "cut.json"
    cut.write_text('{"type":"request","op":"pread64","bios":[{"disk":"vdb"\n')
    log = tmp_path / "qemu.log"
    log.write_text("virtio_blk_handle_read vdev 0x1 req 0x2 sector 0 nsectors 8\n")
    usage = [
        (["--merge-guest", str(empty)], "--qemu-log"),
        (["--qemu-log", str(log)], "go with --merge-guest"),
        (["--merge-guest", str(empty), "--qemu-log", str(log), "--host-trace", str(empty),
          "-p", "1"], "only -t, --json and --perfetto apply"),
        (["--merge-guest", str(empty), "--qemu-log", str(log), "--host-trace", str(empty),
          "--image-offset", "-1"], "--image-offset"),
    ]
    for args, said in usage:
        p = tl.run_iospan("trace", *args)
        assert p.returncode == 2 and said in p.stderr, (args, p.returncode, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    runtime = [
        ([str(tmp_path / "none.json"), str(log), str(empty)], "cannot read the guest trace"),
        (["/dev/zero", str(log), str(empty)], "is not a regular file"),
        ([str(cut), str(log), str(empty)], "1 malformed"),
    ]
    for (guest, qlog, host), said in runtime:
        for json_out in (False, True):
            args = ["--json"] if json_out else []
            p = tl.run_iospan(*args, "trace", "--merge-guest", guest, "--qemu-log", qlog,
                              "--host-trace", host)
            assert p.returncode == 1, (guest, p.returncode, p.stderr, p.stdout)
            if json_out:
                err = json.loads(p.stdout.strip().splitlines()[-1])
                assert said in err["error"] and err["exit_code"] == 1, err
            else:
                assert said in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
