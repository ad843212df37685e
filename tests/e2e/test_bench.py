# SPDX-License-Identifier: GPL-2.0
"""The overhead harness (bench/overhead.py) and the hook-floor tool, end to end: the
numbers in the README come from them, so they are checked against ground truth."""
import json
import os
import re
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


def test_snooplines_writes_snoop_lines_and_their_cost(tmp_path):
    """bench/snooplines goes through snoop's own formatter and renderer: what it times
    is what snoop writes (a header and one line a record in text, one valid object a
    record in JSON, gathered whole by the JSON writer)."""
    path = os.path.join(os.path.dirname(tl.iospan_bin()), "bench", "snooplines")
    assert os.path.exists(path), "%s not built ('make test' builds it)" % path
    text, js = tmp_path / "lines.txt", tmp_path / "lines.json"
    p = subprocess.run([path, "text", str(text), "500"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    m = re.match(r"text: (\d+) ns per line \(best of 7 runs of 500 lines\)$", p.stdout.strip())
    assert m and 1 <= int(m.group(1)) < 1000000, p.stdout
    lines = text.read_text().splitlines()
    assert lines[0].split()[:4] == ["TIME", "COMM", "PID", "TID"] and len(lines) == 1 + 7 * 500
    fields = lines[1].split()
    assert fields[1:6] == ["fio", "412345", "412345", "loop0", "R"], fields
    assert fields[-1] == "[direct]" and fields[7] == "4096", fields
    p = subprocess.run([path, "json", str(js), "500"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("json: "), p.stdout + p.stderr
    recs = [json.loads(l) for l in js.read_text().splitlines()]
    assert len(recs) == 7 * 500
    assert all(r["comm"] == "fio" and r["bytes"] == 4096 and r["kind"] == "direct"
               and r["rwbs"] == "R" and 2 <= r["queue_us"] < 19 and 112 < r["device_us"] < 195
               and abs(r["queue_us"] + r["device_us"] - r["total_us"]) < 0.002 for r in recs)
    # Times go forward, a few us apart, as the records' completion times do.
    times = [r["time"] for r in recs]
    assert all(b > a for a, b in zip(times, times[1:]))
    bad = subprocess.run([path, "text", "/dev/null", "0"], capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode == 2 and "LINES_PER_RUN" in bad.stderr


def test_scrapecost_renders_the_series_it_claims():
    """bench/scrapecost fills the endpoint's figures with N cgroups on every disk and
    times real renders: each cgroup adds the same series on each disk (its counters per
    op), so the series it reports grow by the same step per cgroup, and a scrape costs
    some CPU."""
    path = os.path.join(os.path.dirname(tl.iospan_bin()), "bench", "scrapecost")
    assert os.path.exists(path), "%s not built ('make test' builds it)" % path
    docs = []
    for n in (1, 2, 3):
        p = subprocess.run([path, str(n), "3"], capture_output=True, text=True, timeout=60,
                           check=True)
        docs.append(json.loads(p.stdout))
    step = docs[1]["series"] - docs[0]["series"]
    assert step > 0 and docs[2]["series"] - docs[1]["series"] == step, docs
    assert step % docs[0]["disks"] == 0, docs  # the same series on each disk
    assert all(d["scrape_cpu_ms_median"] > 0 for d in docs), docs
    p = subprocess.run([path, "0"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "usage" in p.stderr
