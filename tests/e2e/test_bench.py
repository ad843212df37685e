# SPDX-License-Identifier: GPL-2.0
"""The overhead harness (bench/overhead.py) and the hook-floor tool, end to end: the
numbers in the README come from them, so they are checked against ground truth."""
import json
import os
import subprocess

import iospan_testlib as tl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench", "overhead.py")


def hookfloor():
    path = os.path.join(os.path.dirname(tl.iospan_bin()), "bench", "hookfloor")
    assert os.path.exists(path), "%s not built ('make test' builds it)" % path
    return path


def read_stats_sysctl():
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        return f.read().strip()


def test_hookfloor_rejects_unknown_hook():
    p = subprocess.run([hookfloor(), "no_such_hook"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2
    assert "unknown hook 'no_such_hook'" in p.stderr
    assert "block_rq_complete" in p.stderr  # the usage lists the hooks


def test_harness_counts_one_completion_per_io_for_tracer_and_peer():
    tl.require_root("creates a loop device and attaches BPF programs")
    before = read_stats_sysctl()
    p = subprocess.run(["/usr/bin/python3", BENCH, "--rounds", "2", "--seconds", "1",
                        "--warmup-seconds", "0", "--size-mb", "64", "--settle", "0.2",
                        "--peer", "%s block_rq_issue block_rq_complete" % hookfloor(),
                        "--json", "--", hookfloor(), "block_rq_complete"],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["meta"]["bpf_stats"] is True
    # Untraced, then both tracers, in swapped order every other round.
    assert [r["kind"] for r in doc["rounds"]] == ["U", "P", "T", "U", "T", "P"]
    s = doc["summary"]
    for summary, hooks in ((s, ["block_rq_complete"]),
                           (s["peer"], ["block_rq_complete", "block_rq_issue"])):
        assert summary["untraced_iops_median"] > 0 and summary["traced_iops_median"] > 0
        assert sorted(x["attach"] for x in summary["progs"]) == hooks, summary["progs"]
        for prog in summary["progs"]:
            # Each 4 KiB direct read is one request: one issue and one completion
            # per fio I/O (anything else on the machine meanwhile is noise on top).
            assert 0.99 <= prog["events_per_io"] <= 1.05, prog
            assert prog["ns_per_event"] > 0
    assert len(s["paired_loss_minus_peer_pct"]) == 2
    # The harness puts kernel.bpf_stats_enabled back as it found it.
    assert read_stats_sysctl() == before


def read_wq_cpumask():
    with open("/sys/devices/virtual/workqueue/cpumask") as f:
        return f.read().strip()


def test_harness_pins_the_io_path_to_one_cpu_and_restores_the_mask():
    tl.require_root("creates a loop device and changes the workqueue cpumask")
    if os.cpu_count() < 2:
        return  # one CPU: pinning changes nothing to check
    before = read_wq_cpumask()
    p = subprocess.run(["/usr/bin/python3", BENCH, "--rounds", "1", "--seconds", "2",
                        "--warmup-seconds", "0", "--size-mb", "64", "--settle", "0.2",
                        "--pin-cpu", "0", "--json", "--", hookfloor(), "block_rq_complete"],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["meta"]["pin_cpu"] == 0
    assert "--cpus_allowed=0" in doc["meta"]["fio_args"]
    for r in doc["rounds"]:
        # fio, the loop worker and the completions share CPU 0: the machine is at
        # most one CPU busy (of NCPU), plus a little for everything else; unrelated
        # processes (measured by the harness, in % of one CPU) are not the I/O path.
        ours = r["sys_busy_pct"] - r["foreign_cpu_pct"] / os.cpu_count()
        assert ours <= 100.0 / os.cpu_count() + 12, r
        # Busy CPU time per I/O: a 4 KiB read through a loop device costs between
        # a few hundred ns and a few hundred us, never nothing.
        assert 100 < r["cpu_ns_per_io"] < 500000, r
    assert read_wq_cpumask() == before


def test_harness_rejects_a_cpu_it_does_not_have():
    p = subprocess.run(["/usr/bin/python3", BENCH, "--pin-cpu", str(os.cpu_count()),
                        "--", "true"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert "--pin-cpu must be a CPU number" in p.stderr


def test_syscallcost_prints_the_time_of_one_syscall():
    path = os.path.join(os.path.dirname(tl.iospan_bin()), "bench", "syscallcost")
    assert os.path.exists(path), "%s not built ('make test' builds it)" % path
    p = subprocess.run([path], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    ns = float(p.stdout.split()[0])
    assert 1 < ns < 100000, p.stdout  # a syscall takes ns to us, never nothing
    assert "(getppid," in p.stdout
    p = subprocess.run([path, "pread"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "(pread," in p.stdout, p.stdout + p.stderr
    assert 1 < float(p.stdout.split()[0]) < 100000, p.stdout
    bad = subprocess.run([path, "open"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "usage: syscallcost" in bad.stderr
