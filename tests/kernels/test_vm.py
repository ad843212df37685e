# SPDX-License-Identifier: GPL-2.0
"""virtio-blk, guest to host: each kernel of the matrix as the guest, on a raw image with
cache=none whose host file is held by blk-throttle, iospan tracing on both sides and
QEMU's own trace log; `iospan trace --merge-guest` must put each guest request on its
QEMU request and its host read or write (same offset and length), with the host's part
holding the throttle's delay and the parts adding up to the guest's total.

The guest: direct reads of 4 KiB from sector 0 on, then direct writes (each sector and
direction once: every request has one QEMU request of its own). The host: the image on
ext4 on a loop device, reads limited to READ_IOPS by blk-throttle for QEMU's cgroup;
`iospan trace -t 0 --json --file IMAGE` started before QEMU; QEMU from Debian, run with
`-msg timestamp=on -trace enable=virtio_blk_*,file=LOG` (its log backend)."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))

import matrix  # noqa: E402
import iospan_testlib as tl  # noqa: E402

READS, WRITES, READ_IOPS = 24, 8, 20
# The text and Perfetto outputs of each kernel's merge are kept here.
ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "test-artifacts")
VM_DISK = "vdf"  # after the suite's disks: vda..vdd, the results disk vde
GUEST_CMD = (
    "iospan trace -t 0 --json -d %(disk)s >/results/guest.json 2>/results/guest.err & "
    "p=$!; i=0; while [ $i -lt 600 ] && ! grep -q tracing /results/guest.err; do "
    "sleep 0.1; i=$((i+1)); done; "
    "iowork pread /dev/%(disk)s -b 4096 -n %(reads)d --direct >/results/w-read.out; "
    "iowork pwrite /dev/%(disk)s -b 4096 -n %(writes)d --direct >/results/w-write.out; "
    "sleep 0.5; kill -INT $p; wait $p; echo $? >/results/guest.rc"
) % {"disk": VM_DISK, "reads": READS, "writes": WRITES}


def under_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def kernels():
    try:
        names = [name for name, _ in matrix.list_kernels()]
    except matrix.MatrixError:
        return ["no-kernels"]
    want = [k for k in os.environ.get("IOSPAN_KERNELS", "").split(",") if k]
    return [k for k in names if not want or k in want] or ["no-kernels"]


def cannot_run(reason):
    if under_ci():
        pytest.fail("CI=true: the guest-to-host test cannot run: %s" % reason, pytrace=False)
    pytest.skip(reason)


def iospan(*args, **kw):
    return subprocess.run([tl.iospan_bin()] + list(args), capture_output=True, text=True,
                          timeout=kw.pop("timeout", 120), **kw)


def start_host_trace(image, out_path):
    out = open(out_path, "w")
    proc = subprocess.Popen([tl.iospan_bin(), "trace", "-t", "0", "--json", "--file", image],
                            stdout=out, stderr=subprocess.PIPE, text=True)
    err, deadline = "", time.time() + 60
    while "tracing" not in err and time.time() < deadline and proc.poll() is None:
        err += proc.stderr.readline()
    assert "tracing" in err, err
    return proc, out


def run_vm(kernel, tmp):
    """Boots @kernel with the workload; returns (results dir, host trace, QEMU log, image)."""
    if os.geteuid():
        cannot_run("needs root (loop device, mount, blk-throttle)")
    try:
        tl.blkio_root()
    except RuntimeError as e:
        cannot_run("needs blk-throttle: %s" % e)
    pkg = dict(matrix.list_kernels()).get(kernel)
    if not pkg:
        cannot_run("no kernel %s in the archive" % kernel)
    matrix.fetch(kernel, pkg)
    host_json = os.path.join(tmp, "host.json")
    log = os.path.join(tmp, "qemu-trace.log")
    with tl.loop_device(96) as loop, tl.filesystem(loop, "ext4") as mnt:
        image = os.path.join(mnt, "vm.img")
        with open(image, "wb") as f:
            # Data where the guest reads (a hole would be read without I/O), then sparse.
            f.write(os.urandom(4 << 20))
            f.truncate(64 << 20)
            os.fsync(f.fileno())
        rdev = os.stat(loop).st_rdev
        devnum = "%d:%d" % (os.major(rdev), os.minor(rdev))
        with tl.blkio_throttle(devnum, read_iops=READ_IOPS, name="iospan-vm") as cg:
            proc, out = start_host_trace(image, host_json)
            try:
                extra = ["-drive", "file=%s,format=raw,if=virtio,cache=none,aio=threads" % image,
                         "-msg", "timestamp=on", "-trace", "enable=virtio_blk_*,file=%s" % log]
                # QEMU in the throttled group from its start: its I/O threads come later.
                prefix = ["sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', cg]
                results, _ = matrix.boot(kernel, os.path.join(tmp, "boot"), cmd=GUEST_CMD,
                                         timeout=600, extra_qemu=extra, prefix=prefix)
            finally:
                proc.send_signal(signal.SIGINT)
                rest = proc.communicate(timeout=120)[1]
                out.close()
            assert proc.returncode == 0, rest
        return results, host_json, log, image


def merge(results, host_json, log, image, *extra):
    return iospan("trace", "--merge-guest", os.path.join(results, "guest.json"),
                  "--qemu-log", log, "--host-trace", host_json, "--image", image,
                  "--guest-disk", VM_DISK, "-t", "0", *extra)


@pytest.mark.parametrize("kernel", kernels())
def test_virtio_guest_to_host(kernel):
    if kernel == "no-kernels":
        cannot_run("no kernels (tests/kernels/matrix.py list)")
    with tempfile.TemporaryDirectory(prefix="iospan-vm-") as tmp:
        tmp_keep = os.environ.get("IOSPAN_VM_KEEP")
        if tmp_keep:
            tmp = tmp_keep
            os.makedirs(tmp, exist_ok=True)
        results, host_json, log, image = run_vm(kernel, tmp)
        with open(os.path.join(results, "guest.rc")) as f:
            assert f.read().strip() == "0", open(os.path.join(results, "guest.err")).read()
        p = merge(results, host_json, log, image, "--json")
        assert p.returncode == 0, p.stderr
        docs = [json.loads(line) for line in p.stdout.splitlines()]
        summary = docs[-1]
        assert summary["type"] == "vm_summary" and summary["clock_ok"], summary
        reqs = [d for d in docs if d["type"] == "vm_request"]
        guest_totals = [json.loads(line) for line in open(os.path.join(results, "guest.json"))
                        if '"totals"' in line][0]
        missed = guest_totals["counters"]["hook_runs_missed"] if "-rt-" in kernel else 0
        host_lines = set()
        throttled, guest_read_us = 0, 0.0
        for name, bs, n, op in (("w-read", 4096, READS, "read"),
                                ("w-write", 4096, WRITES, "write")):
            with open(os.path.join(results, name + ".out")) as f:
                w = json.loads(f.read().strip().splitlines()[-1])
            mine = sorted((r for r in reqs if r["pid"] == w["pid"]), key=lambda r: r["sector"])
            # Every request of the workload, on the guest's side (RT: skipped runs).
            assert n - missed <= len(mine) <= n, (kernel, name, len(mine), summary)
            for r in mine:
                assert r["dir"] == op and r["bytes"] == bs, r
                # Its host I/O: the image's bytes at the guest's sector, its length.
                io = r["host_io"]
                assert len(io) == 1, (kernel, r)
                assert (io[0]["offset"], io[0]["bytes"]) == (r["sector"] * 512, bs), (kernel, r)
                assert io[0]["host_line"] not in host_lines, (kernel, r)
                host_lines.add(io[0]["host_line"])
                parts = dict(r["parts"])
                # The parts add up (each rounded to the ns in us with 3 decimals).
                assert abs(sum(parts.values()) - r["total_us"]) <= 0.001 * len(parts), r
                assert parts["host_io"] >= io[0]["total_us"] - 0.002, r
                # The throttle's delay is the host's: QEMU's and the crossings' parts
                # stay far under the 1 / READ_IOPS each held read waits for.
                for k in ("to_qemu", "qemu_in", "qemu_out", "to_guest"):
                    assert parts[k] < 0.5e6 / READ_IOPS, (kernel, k, r)
                if op == "read":
                    throttled += io[0]["throttle_us"] >= 0.5e6 / READ_IOPS
                    guest_read_us += r["total_us"]
                else:
                    assert io[0]["throttle_us"] == 0, (kernel, r)
            assert len(set(r["sector"] for r in mine)) == len(mine), (kernel, name)
        # blk-throttle lets READ_IOPS x 100 ms reads through in each of its 100 ms slices
        # (2 at 20 IOPS): the reads come back to back, so once a slice's are through the
        # next one waits for the next slice, most of 100 ms; of READS, at least
        # (READS - 2) / 2 waited (one less for a slice's edge), and the guest's reads took
        # at least the (READS / 2 - 1) slices between the first and the last.
        budget = READ_IOPS // 10
        assert throttled >= (READS - budget) // budget - 1, (kernel, throttled, summary)
        assert guest_read_us >= (READS // budget - 1) * 0.1e6 * 0.9, (kernel, guest_read_us)
        print("%s: clock %s +- %s us from %d requests" % (
            kernel, summary["clock_offset_us"], summary["clock_error_us"],
            summary["clock_pairs"]))

        # Text and Perfetto: the same requests, three tracks.
        pf = os.path.join(tmp, "vm.json")
        p = merge(results, host_json, log, image, "--perfetto", pf)
        assert p.returncode == 0 and "matched" in p.stdout.splitlines()[-1], p.stderr
        assert "  host     " in p.stdout and "throttle" in p.stdout, p.stdout[:2000]
        with open(pf) as f:
            trace = json.load(f)
        procs = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
        assert procs == {"guest", "QEMU", "host I/O"}, procs
        os.makedirs(ARTIFACTS, exist_ok=True)
        with open(os.path.join(ARTIFACTS, "vm-merge-%s.txt" % kernel), "w") as f:
            f.write(p.stdout)
        os.replace(pf, os.path.join(ARTIFACTS, "vm-merge-%s.perfetto.json" % kernel))

        # Bad input: one line, exit 1 or 2, nothing matched by guess.
        cut = os.path.join(tmp, "cut.json")
        with open(os.path.join(results, "guest.json")) as f:
            lines = f.read().splitlines(True)
        with open(cut, "w") as f:
            f.writelines(lines[:-3] + [lines[-3][:len(lines[-3]) // 2]])
        p = iospan("trace", "--merge-guest", cut, "--qemu-log", log, "--host-trace", host_json,
                   "--image", image, "--guest-disk", VM_DISK, "--json")
        assert p.returncode == 0, p.stderr
        s = json.loads(p.stdout.splitlines()[-1])
        assert s["guest_lines_malformed"] == 1, s
        # The host's trace of another run: its I/O 10 s later (on both its clocks).
        moved = os.path.join(tmp, "moved.json")
        with open(host_json) as f, open(moved, "w") as g:
            for line in f:
                d = json.loads(line)
                if "start_mono_ns" in d:
                    d["start_mono_ns"] += 10 ** 10
                    d["time_ns"] += 10 ** 10
                g.write(json.dumps(d) + "\n")
        p = iospan("trace", "--merge-guest", os.path.join(results, "guest.json"), "--qemu-log",
                   log, "--host-trace", moved, "--image", image)
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "of another run" in p.stderr, p.stderr
        p = iospan("trace", "--merge-guest", os.path.join(results, "guest.json"), "--qemu-log",
                   log)
        assert p.returncode == 2 and "--host-trace" in p.stderr, p.stderr
