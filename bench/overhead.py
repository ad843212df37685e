#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Measure the overhead of a tracing command on a fio workload.

usage: bench/overhead.py [options] -- TRACER CMD...

The workload runs on a loop device backed by a file on tmpfs, so the
"device" costs almost nothing and the machine is CPU-bound: every
nanosecond spent in a tracer's hooks shows up as lost IOPS.

One run alternates untraced (U) and traced (T) rounds after an untraced
warm-up round:  W  U1 T1  U2 T2 ... Un Tn.  The tracer is started before
each traced round, given time to attach (its BPF programs appear), and
stopped with SIGINT after the round.  For every traced round we record
the tracer's own CPU (utime+stime of its process tree from /proc/PID/stat)
and, with kernel.bpf_stats_enabled=1, the run_time_ns / run_cnt deltas of
each of its BPF programs (bpftool prog show --json).

See bench/README.md.
"""

import argparse
import contextlib
import datetime
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# Shared fixtures (tmpfs, loop_device, fio) from the e2e test library.
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import iospan_testlib as testlib  # noqa: E402

TESTLIB = "tests/lib/iospan_testlib/"

CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1
BPF_STATS_SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"
# Round kinds with a tracer running: the tracer under test, and the --peer.
TRACED = ("T", "P")
PF_KTHREAD = 0x00200000
# Unbound workqueues (the loop device's worker among them) run on these CPUs.
WQ_CPUMASK = "/sys/devices/virtual/workqueue/cpumask"

COMMON_FIO = ["--bs=4k", "--direct=1", "--numjobs=1", "--time_based",
              "--norandommap", "--randrepeat=0", "--group_reporting"]

WORKLOADS = {
    "randread-libaio-qd32": {
        "desc": "4k random reads, libaio, iodepth 32, O_DIRECT, 1 job",
        "args": ["--rw=randread", "--ioengine=libaio", "--iodepth=32"],
    },
    "randread-psync": {
        "desc": "4k random reads, psync (pread), iodepth 1, O_DIRECT, 1 job",
        "args": ["--rw=randread", "--ioengine=psync", "--iodepth=1"],
    },
    "randrw-rate12k": {
        "desc": "4k random read+write rate-limited to 12000 r + 250 w IOPS, "
                "libaio, iodepth 8, O_DIRECT (compare CPU, not IOPS)",
        "args": ["--rw=randrw", "--rwmixread=98", "--ioengine=libaio",
                 "--iodepth=8", "--rate_iops=12000,250"],
        "rate_limited": True,
    },
}
DEFAULT_WORKLOAD = "randread-libaio-qd32"


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- /proc


def read_stat(pid):
    """(comm, ppid, flags, utime+stime, cutime+cstime) in ticks, or None."""
    try:
        with open("/proc/%d/stat" % pid, errors="replace") as f:  # comm: any bytes
            s = f.read()
    except OSError:
        return None
    r = s.rfind(")")
    comm = s[s.find("(") + 1:r]
    f = s[r + 2:].split()
    # f[0] is field 3 (state); field n is f[n-3]
    return (comm, int(f[1]), int(f[6]), int(f[11]) + int(f[12]),
            int(f[13]) + int(f[14]))


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def snapshot_procs():
    snap = {}
    for pid in all_pids():
        st = read_stat(pid)
        if st:
            snap[pid] = st
    return snap


def descendants(root, snap=None):
    snap = snap or snapshot_procs()
    children = {}
    for pid, st in snap.items():
        children.setdefault(st[1], []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def tree_cpu_ns(root):
    """CPU time of root's process tree in ns: live descendants plus reaped
    children of root.  Uses the per-thread /proc/PID/task/TID/schedstat
    (ns resolution) and falls back to utime+stime from /proc/PID/stat
    (clock ticks) when that is larger (threads that already exited)."""
    snap = snapshot_procs()
    tick_ns = 1e9 / CLK_TCK
    total = 0.0
    for pid in descendants(root, snap):
        st = snap.get(pid)
        if not st:
            continue
        fine = 0
        try:
            for tid in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    fine += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            fine = 0
        total += max(fine, st[3] * tick_ns)
        if pid == root:
            total += st[4] * tick_ns
    return total


def foreign_cpu(before, after, exclude):
    """CPU ticks used by user processes not in `exclude` between snapshots."""
    res = []
    for pid, st in after.items():
        if pid in exclude or st[2] & PF_KTHREAD:
            continue
        prev = before.get(pid)
        d = st[3] - (prev[3] if prev and prev[0] == st[0] else 0)
        if d > 0:
            res.append((d, pid, st[0]))
    res.sort(reverse=True)
    return res


def read_proc_stat_cpu():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    return sum(v[:8]), idle


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


# ------------------------------------------------------------------- BPF


def bpftool_progs():
    """{prog id: dict} from bpftool prog show --json."""
    try:
        p = subprocess.run(["bpftool", "prog", "show", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BenchError("bpftool prog show failed: %s" % e)
    if p.returncode != 0:
        raise BenchError("bpftool prog show failed: %s" % p.stderr.strip())
    progs = {}
    for pr in json.loads(p.stdout or "[]"):
        progs[pr["id"]] = pr
    return progs


def owned_bpf(root):
    """BPF programs held by the process tree of root, through prog or link
    fds: {prog_id: attach point or ''}."""
    owned = {}
    for pid in descendants(root):
        fddir = "/proc/%d/fd" % pid
        try:
            fds = os.listdir(fddir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fddir, fd))
            except OSError:
                continue
            if not target.startswith("anon_inode:bpf"):
                continue
            if "bpf-prog" not in target and "bpf_link" not in target \
                    and "bpf-link" not in target:
                continue
            info = {}
            try:
                with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                    for line in f:
                        k, _, v = line.partition(":")
                        info[k.strip()] = v.strip()
            except OSError:
                continue
            if "prog_id" not in info:
                continue
            pid_ = int(info["prog_id"])
            attach = info.get("tp_name") or info.get("attach_type") \
                or info.get("link_type") or ""
            if attach or pid_ not in owned:
                owned[pid_] = attach if attach else owned.get(pid_, "")
    return owned


class BpfStats:
    """Set kernel.bpf_stats_enabled to 1 (or to 0 with --no-bpf-stats: a machine may
    boot with it on, and it costs every program two clock reads) and always put the
    old value back."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.saved = None

    def read(self):
        with open(BPF_STATS_SYSCTL) as f:
            return f.read().strip()

    def on(self):
        if self.saved is None:
            self.saved = self.read()
        with open(BPF_STATS_SYSCTL, "w") as f:
            f.write("1" if self.enabled else "0")

    def restore(self):
        if self.saved is None:
            return
        try:
            with open(BPF_STATS_SYSCTL, "w") as f:
                f.write(self.saved)
        except OSError as e:
            log("warning: could not restore kernel.bpf_stats_enabled=%s: %s"
                % (self.saved, e))
        self.saved = None


# ---------------------------------------------------------------- tracer


def _default_signals():
    # The tracer must see SIGINT even if we were started with it ignored.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class Tracer:
    def __init__(self, cmd, logdir, attach_timeout, settle):
        self.cmd = cmd
        self.logdir = logdir
        self.attach_timeout = attach_timeout
        self.settle = settle
        self.proc = None
        self.logpath = None
        self.n = 0

    def start(self, before_ids):
        self.n += 1
        self.logpath = os.path.join(self.logdir, "tracer-%d.log" % self.n)
        logf = open(self.logpath, "w")
        try:
            self.proc = subprocess.Popen(self.cmd, stdout=logf,
                                         stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         start_new_session=True,
                                         preexec_fn=_default_signals)
        except OSError as e:
            raise BenchError("cannot start tracer %s: %s"
                             % (shlex.join(self.cmd), e))
        finally:
            logf.close()
        # Wait until its BPF programs are loaded and the set is stable.
        t0 = time.monotonic()
        last, stable, method = None, 0, "fd"
        while True:
            if self.proc.poll() is not None:
                raise BenchError("tracer exited during start-up (rc=%d): %s"
                                 % (self.proc.returncode, self.tail()))
            owned = owned_bpf(self.proc.pid)
            if owned and last is not None and set(owned) == set(last):
                stable += 1
                if stable >= 2:
                    break
            else:
                stable = 0
            last = owned
            if time.monotonic() - t0 > self.attach_timeout:
                break
            time.sleep(0.2)
        if not last:
            # Fallback: programs that appeared since the tracer started
            # (may catch programs loaded by others at the same time).
            now = bpftool_progs()
            last = {i: "" for i in now if i not in before_ids}
            method = "new-ids"
            if not last:
                log("warning: no BPF programs found for the tracer after "
                    "%.0f s; measuring its CPU only" % self.attach_timeout)
        time.sleep(self.settle)
        if self.proc.poll() is not None:
            raise BenchError("tracer exited early (rc=%d): %s"
                             % (self.proc.returncode, self.tail()))
        # Programs attached later (e.g. after the settle) are picked up too.
        more = owned_bpf(self.proc.pid)
        last.update({k: v for k, v in more.items() if v or k not in last})
        return last, method, time.monotonic() - t0

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10.0):
        """SIGINT, then SIGTERM, then SIGKILL, to the tracer's group."""
        if self.proc is None:
            return None
        p, self.proc = self.proc, None
        for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 3.0),
                          (signal.SIGKILL, 3.0)):
            if p.poll() is not None:
                break
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                p.wait(wait)
            except subprocess.TimeoutExpired:
                if sig != signal.SIGKILL:
                    log("warning: tracer ignored %s, escalating"
                        % signal.Signals(sig).name)
        # Also reap stragglers left in its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        return p.returncode

    def tail(self, n=600):
        try:
            with open(self.logpath) as f:
                return f.read()[-n:].strip().replace("\n", " | ")
        except (OSError, TypeError):
            return ""


# ------------------------------------------------------------------- fio


def fio_args(opts, dev):
    wl = WORKLOADS[opts.workload]
    args = ["--name=iospan-bench", "--filename=" + dev,
            "--runtime=%g" % opts.seconds] + COMMON_FIO + list(wl["args"])
    if opts.rate_iops:
        args = [a for a in args if not a.startswith("--rate_iops=")]
        args.append("--rate_iops=" + opts.rate_iops)
        parts = opts.rate_iops.split(",")
        if len(parts) > 1 and parts[1].strip() not in ("", "0") \
                and "--rw=randread" in args:
            r, w = float(parts[0] or 0), float(parts[1])
            args.remove("--rw=randread")
            args += ["--rw=randrw",
                     "--rwmixread=%d" % max(1, min(99, round(100 * r / (r + w))))]
    if opts.pin_cpu is not None:
        args.append("--cpus_allowed=%d" % opts.pin_cpu)
    args += opts.fio_args
    return args


@contextlib.contextmanager
def pinned_workqueues(cpu):
    """Unbound workqueues (the loop worker) on @cpu only (None: unchanged), so that
    the whole I/O path shares the one CPU fio is pinned to; restored on exit."""
    if cpu is None:
        yield
        return
    with open(WQ_CPUMASK) as f:
        saved = f.read().strip()
    with open(WQ_CPUMASK, "w") as f:
        f.write("%x" % (1 << cpu))
    try:
        yield
    finally:
        with open(WQ_CPUMASK, "w") as f:
            f.write(saved)


def run_fio(args):
    res = testlib.fio(args, json=True)
    if isinstance(res, str):
        res = json.loads(res[res.find("{"):])
    job = res["jobs"][0]
    iops = job["read"]["iops"] + job["write"]["iops"]
    ios = job["read"]["total_ios"] + job["write"]["total_ios"]
    return {"iops": iops, "ios": ios,
            "read_iops": job["read"]["iops"], "write_iops": job["write"]["iops"],
            "fio_usr_cpu": job.get("usr_cpu", 0.0),
            "fio_sys_cpu": job.get("sys_cpu", 0.0),
            "clat_mean_ns": job["read"]["clat_ns"]["mean"]
            if job["read"]["total_ios"] else job["write"]["clat_ns"]["mean"],
            "runtime_ms": job.get("job_runtime", 0)}


# ----------------------------------------------------------------- rounds


def run_round(kind, idx, opts, dev, tracer, bpfstats, prefix=""):
    rnd = {"kind": kind, "index": idx}
    ids = {}
    traced = kind in TRACED
    if traced:
        bpfstats.on()
        before = bpftool_progs()
        ids, method, attach_s = tracer.start(set(before))
        rnd.update(attach_method=method, attach_s=round(attach_s, 2),
                   prog_ids=sorted(ids))
        rnd["attach"] = {str(k): v for k, v in ids.items()}
    my_pid = os.getpid()
    p0 = snapshot_procs()
    if ids:
        b0 = bpftool_progs()
    c0 = tree_cpu_ns(tracer.proc.pid) if traced else 0
    s0 = read_proc_stat_cpu()
    t0 = time.monotonic()
    try:
        fio = run_fio(fio_args(opts, dev))
    except RuntimeError as e:
        raise BenchError(str(e))
    t1 = time.monotonic()
    s1 = read_proc_stat_cpu()
    wall = t1 - t0
    rnd.update(fio)
    rnd["wall_s"] = round(wall, 3)
    tot, idle = s1[0] - s0[0], s1[1] - s0[1]
    rnd["sys_busy_pct"] = round(100.0 * (tot - idle) / tot, 1) if tot else 0.0
    # Busy CPU time of the whole machine per I/O: what an I/O costs, whether or not
    # the workload is CPU-bound (IOPS only reflect cost when it is).
    rnd["cpu_ns_per_io"] = round((tot - idle) / tot * NCPU * wall * 1e9 / fio["ios"], 1) \
        if tot and fio["ios"] else 0.0
    if traced:
        if not tracer.alive():
            raise BenchError("tracer died during the round (rc=%s): %s"
                             % (tracer.proc.returncode, tracer.tail()))
        c1 = tree_cpu_ns(tracer.proc.pid)
        rnd["tracer_cpu_pct"] = round(100.0 * (c1 - c0) / 1e9 / wall, 3)
        progs = []
        if ids:
            b1 = bpftool_progs()
            for pid_ in sorted(ids):
                a, b = b0.get(pid_), b1.get(pid_)
                if not a or not b:
                    continue
                progs.append({
                    "id": pid_, "name": b.get("name", "?"),
                    "type": b.get("type", "?"), "attach": ids.get(pid_, ""),
                    "run_time_ns": b.get("run_time_ns", 0) - a.get("run_time_ns", 0),
                    "run_cnt": b.get("run_cnt", 0) - a.get("run_cnt", 0),
                    "recursion_misses": b.get("recursion_misses", 0)
                    - a.get("recursion_misses", 0),
                })
        rnd["progs"] = progs
        rnd["bpf_cpu_pct"] = round(
            100.0 * sum(p["run_time_ns"] for p in progs) / (wall * 1e9), 2)
        tree = set(descendants(tracer.proc.pid))
        rnd["tracer_rc"] = tracer.stop()
        bpfstats.restore()
    else:
        tree = set()
    p1 = snapshot_procs()
    exclude = set(descendants(my_pid, p1)) | set(descendants(my_pid, p0)) | tree
    fc = foreign_cpu(p0, p1, exclude)
    rnd["foreign_cpu_pct"] = round(100.0 * sum(d for d, _, _ in fc)
                                   / CLK_TCK / wall, 1)
    rnd["foreign_top"] = ["%s[%d] %.0f%%" % (c, p, 100.0 * d / CLK_TCK / wall)
                          for d, p, c in fc[:3] if 100.0 * d / CLK_TCK / wall >= 2]
    log("%s%-2s %-3s %9.0f IOPS  busy %5.1f%%%s%s" % (
        prefix, kind, idx if idx else "", rnd["iops"], rnd["sys_busy_pct"],
        "  tracer %.1f%%  bpf %.1f%%" % (rnd["tracer_cpu_pct"], rnd["bpf_cpu_pct"])
        if traced else "",
        "  foreign %.0f%% (%s)" % (rnd["foreign_cpu_pct"],
                                   ", ".join(rnd["foreign_top"]))
        if rnd["foreign_top"] else ""))
    return rnd


def summarize(rounds, kind="T"):
    """Summary of the rounds of @kind ("T": the tracer, "P": the peer) against the
    untraced ones."""
    U = [r for r in rounds if r["kind"] == "U"]
    T = [r for r in rounds if r["kind"] == kind]
    s = {}
    ui = [r["iops"] for r in U]
    ti = [r["iops"] for r in T]
    s["untraced_iops_median"] = statistics.median(ui)
    s["traced_iops_median"] = statistics.median(ti)
    s["untraced_iops_minmax"] = [min(ui), max(ui)]
    s["traced_iops_minmax"] = [min(ti), max(ti)]
    s["ratio"] = s["traced_iops_median"] / s["untraced_iops_median"]
    s["iops_loss_pct"] = 100.0 * (1.0 - s["ratio"])
    # Paired estimate: each traced round against the untraced round just
    # before it (robust to slow drift of the machine).
    pairs = [100.0 * (1 - t["iops"] / u["iops"]) for u, t in zip(U, T)]
    s["paired_loss_pct"] = pairs
    s["untraced_spread_pct"] = 100.0 * (max(ui) - min(ui)) / s["untraced_iops_median"]
    s["tracer_cpu_pct_median"] = statistics.median(r["tracer_cpu_pct"] for r in T)
    s["bpf_cpu_pct_median"] = statistics.median(r["bpf_cpu_pct"] for r in T)
    s["untraced_busy_pct_median"] = statistics.median(r["sys_busy_pct"] for r in U)
    s["traced_busy_pct_median"] = statistics.median(r["sys_busy_pct"] for r in T)
    s["foreign_cpu_pct_max"] = max(r["foreign_cpu_pct"] for r in rounds)
    s["untraced_cpu_ns_per_io_median"] = statistics.median(r["cpu_ns_per_io"] for r in U)
    s["traced_cpu_ns_per_io_median"] = statistics.median(r["cpu_ns_per_io"] for r in T)
    s["added_cpu_ns_per_io"] = (s["traced_cpu_ns_per_io_median"]
                                - s["untraced_cpu_ns_per_io_median"])
    # Per-program, aggregated by (name, type) over all traced rounds.
    agg = {}
    t_ios = sum(r["ios"] for r in T)
    t_wall = sum(r["wall_s"] for r in T)
    for r in T:
        for p in r["progs"]:
            key = (p["name"], p["type"], p["attach"])
            a = agg.setdefault(key, {"name": p["name"], "type": p["type"],
                                     "attach": p["attach"], "run_time_ns": 0,
                                     "run_cnt": 0, "recursion_misses": 0,
                                     "ns_per_event_rounds": []})
            a["run_time_ns"] += p["run_time_ns"]
            a["run_cnt"] += p["run_cnt"]
            a["recursion_misses"] += p["recursion_misses"]
            if p["run_cnt"]:
                a["ns_per_event_rounds"].append(
                    round(p["run_time_ns"] / p["run_cnt"], 1))
    progs = []
    for a in agg.values():
        a["ns_per_event"] = a["run_time_ns"] / a["run_cnt"] if a["run_cnt"] else 0.0
        a["events_per_io"] = a["run_cnt"] / t_ios if t_ios else 0.0
        a["ns_per_io"] = a["run_time_ns"] / t_ios if t_ios else 0.0
        a["cpu_pct"] = 100.0 * a["run_time_ns"] / (t_wall * 1e9) if t_wall else 0.0
        progs.append(a)
    progs.sort(key=lambda a: -a["run_time_ns"])
    s["progs"] = progs
    s["bpf_ns_per_io"] = sum(a["ns_per_io"] for a in progs)
    s["bpf_cpu_pct"] = sum(a["cpu_pct"] for a in progs)
    return s


def compare_with_peer(s):
    """The tracer's loss as a fraction of the peer's: overall (medians) and per
    index (both against the same untraced round)."""
    p = s["peer"]
    s["loss_ratio_vs_peer"] = (s["iops_loss_pct"] / p["iops_loss_pct"]
                               if p["iops_loss_pct"] > 0 else None)
    s["paired_loss_minus_peer_pct"] = [t - q for t, q in zip(s["paired_loss_pct"],
                                                              p["paired_loss_pct"])]


# ---------------------------------------------------------------- output


def render_summary(L, meta, s, title):
    L.append("")
    L.append(title)
    L.append("  untraced IOPS     %10.0f   (min %.0f, max %.0f, spread %.1f%%)"
             % (s["untraced_iops_median"], *s["untraced_iops_minmax"],
                s["untraced_spread_pct"]))
    L.append("  traced IOPS       %10.0f   (min %.0f, max %.0f)"
             % (s["traced_iops_median"], *s["traced_iops_minmax"]))
    L.append("  traced/untraced   %10.3f   -> IOPS loss %.1f%%"
             % (s["ratio"], s["iops_loss_pct"]))
    L.append("  paired loss %%     %s" % " ".join("%.1f" % x for x in s["paired_loss_pct"]))
    L.append("  CPU per I/O       %10.0f ns traced vs %.0f untraced (%+.0f ns, busy time of "
             "all CPUs)" % (s["traced_cpu_ns_per_io_median"],
                            s["untraced_cpu_ns_per_io_median"], s["added_cpu_ns_per_io"]))
    L.append("  tracer CPU        %9.3f%%   of one core (user space, process tree)"
             % s["tracer_cpu_pct_median"])
    if not meta["bpf_stats"]:
        # Without the counters there are no run times: list what was attached.
        hooks = sorted(set(a["attach"] or a["name"] for a in s["progs"]))
        L.append("  BPF programs      %d attached, run times not measured (bpf_stats off)"
                 % len(s["progs"]))
        if hooks:
            L.append("  hooks             " + ", ".join(hooks))
        return
    L.append("  BPF CPU           %9.2f%%   of one core (all its programs, run_time_ns)"
             % s["bpf_cpu_pct"])
    L.append("  BPF ns per I/O    %10.0f" % s["bpf_ns_per_io"])
    L.append("")
    if s["progs"]:
        L.append("BPF programs (all traced rounds; events/IO = run_cnt / fio I/Os)")
        L.append("  %-26s %-10s %-20s %9s %9s %8s %7s"
                 % ("program", "type", "attach", "events/IO", "ns/event",
                    "ns/IO", "cpu%"))
        for a in s["progs"]:
            L.append("  %-26s %-10s %-20s %9.2f %9.0f %8.0f %7.2f" % (
                a["name"][:26], a["type"][:10], (a["attach"] or "-")[:20],
                a["events_per_io"], a["ns_per_event"], a["ns_per_io"],
                a["cpu_pct"]))
            if a["recursion_misses"]:
                L.append("    recursion misses: %d" % a["recursion_misses"])
        L.append("  ns/event per round: " + "; ".join(
            "%s %s" % (a["name"], "/".join("%.0f" % x for x in a["ns_per_event_rounds"]))
            for a in s["progs"]))
    elif meta["bpf_stats"]:
        L.append("BPF programs: none identified for this tracer")


def render(meta, rounds, s):
    L = []
    L.append("iospan overhead benchmark  %s  %s  Linux %s  %d CPUs"
             % (meta["date"], meta["host"], meta["kernel"], NCPU))
    L.append("tracer    %s" % meta["tracer"])
    if meta.get("peer"):
        L.append("peer      %s (rounds P)" % meta["peer"])
    L.append("workload  %s: %s" % (meta["workload"], meta["workload_desc"]))
    L.append("          fio %s" % " ".join(meta["fio_args"]))
    L.append("device    %s over a %d MiB file on tmpfs%s"
             % (meta["device"], meta["size_mb"],
                ", prefilled" if meta["prefill"] else " (sparse)"))
    L.append("rounds    %d x (untraced, %s), %g s each, after a %g s warm-up;"
             " bpf_stats %s" % (meta["rounds"],
                                "peer and traced" if meta.get("peer") else "traced",
                                meta["seconds"],
                                meta["warmup_seconds"],
                                "on in traced rounds" if meta["bpf_stats"] else "off"))
    if meta.get("pin_cpu") is not None:
        L.append("pinned    fio and unbound workqueues (the loop worker) on CPU %d: "
                 "CPU-bound on one core" % meta["pin_cpu"])
    L.append("load avg  %.2f %.2f %.2f at start, %.2f %.2f %.2f at end"
             % tuple(meta["loadavg_start"] + meta["loadavg_end"]))
    for w in meta["warnings"]:
        L.append("WARNING   " + w)
    L.append("")
    L.append("%-5s %-4s %10s %9s %8s %8s %9s %8s %8s"
             % ("round", "kind", "IOPS", "clat us", "fio u/s", "busy%",
                "tracer%", "bpf%", "other%"))
    for r in rounds:
        L.append("%-5s %-4s %10.0f %9.1f %8s %8.1f %9s %8s %8.1f" % (
            r["index"] if r["index"] else "-", r["kind"], r["iops"],
            r["clat_mean_ns"] / 1000.0,
            "%.0f/%.0f" % (r["fio_usr_cpu"], r["fio_sys_cpu"]),
            r["sys_busy_pct"],
            "%.3f" % r["tracer_cpu_pct"] if r["kind"] in TRACED else "",
            "%.2f" % r["bpf_cpu_pct"] if r["kind"] in TRACED else "",
            r["foreign_cpu_pct"]))
    L.append("  (busy%% = all CPUs busy, of %d; tracer%% = tracer process tree "
             "utime+stime, of one core;" % NCPU)
    L.append("   bpf% = sum of its BPF programs' run_time_ns, of one core; "
             "other% = unrelated user processes)")
    render_summary(L, meta, s, "summary (medians)")
    p = s.get("peer")
    if p:
        render_summary(L, meta, p, "peer: %s (medians)" % meta["peer"])
        ratio = s["loss_ratio_vs_peer"]
        L.append("")
        L.append("tracer vs peer (same run)")
        L.append("  IOPS loss         %.1f%% vs %.1f%%   -> %s of the peer's loss"
                 % (s["iops_loss_pct"], p["iops_loss_pct"],
                    "%.2f" % ratio if ratio is not None else "n/a (peer lost none)"))
        L.append("  paired loss minus peer's %%   %s"
                 % " ".join("%.1f" % x for x in s["paired_loss_minus_peer_pct"]))
        L.append("  CPU per I/O added %+.0f ns vs %+.0f ns"
                 % (s["added_cpu_ns_per_io"], p["added_cpu_ns_per_io"]))
    return "\n".join(L)


# ------------------------------------------------------------------ main


def parse_args(argv):
    if "--" in argv:
        i = argv.index("--")
        own, tracer = argv[:i], argv[i + 1:]
    else:
        own, tracer = argv, []
    ap = argparse.ArgumentParser(
        prog="bench/overhead.py",
        usage="%(prog)s [options] -- TRACER CMD...",
        description="Measure the IOPS and CPU overhead of a tracing command "
        "on fio over a tmpfs-backed loop device, alternating untraced and "
        "traced rounds.",
        epilog="workloads: " + "; ".join("%s: %s" % (k, v["desc"])
                                         for k, v in WORKLOADS.items()))
    ap.add_argument("--rounds", type=int, default=5,
                    help="untraced/traced round pairs (default 5)")
    ap.add_argument("--seconds", type=float, default=5,
                    help="fio runtime per round (default 5)")
    ap.add_argument("--warmup-seconds", type=float, default=None,
                    help="untraced warm-up round length (default = --seconds; 0 = none)")
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default=DEFAULT_WORKLOAD)
    ap.add_argument("--fio-args", default="",
                    help="extra fio arguments appended (one shell-quoted string)")
    ap.add_argument("--rate-iops", default=None, metavar="R[,W]",
                    help="fio rate_iops (read[,write]); a write rate turns "
                    "randread into randrw")
    ap.add_argument("--size-mb", type=int, default=1024,
                    help="loop device size (file on tmpfs, default 1024)")
    ap.add_argument("--no-prefill", dest="prefill", action="store_false",
                    help="leave the backing file sparse (reads hit holes)")
    ap.add_argument("--attach-timeout", type=float, default=30,
                    help="max seconds to wait for the tracer's BPF programs")
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds to wait after the tracer attached")
    ap.add_argument("--no-bpf-stats", dest="bpf_stats", action="store_false",
                    help="do not set kernel.bpf_stats_enabled=1 (it adds ~2 "
                    "clock reads per program run)")
    ap.add_argument("--peer", metavar="'CMD ARGS'", default="",
                    help="a second tracer (one shell-quoted string) measured in the same "
                    "run: each untraced round is followed by one round of each, and the "
                    "report compares their losses")
    ap.add_argument("--pin-cpu", type=int, default=None, metavar="N",
                    help="run fio and the unbound workqueues (the loop worker) on CPU N "
                    "only: the whole I/O path is CPU-bound on one core, so IOPS fall "
                    "with every ns a tracer adds (restored at exit)")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--save", metavar="FILE",
                    help="also write the human report (or JSON) to FILE")
    ap.add_argument("--save-json", metavar="FILE",
                    help="also write the JSON document to FILE")
    ap.add_argument("--keep-tracer-output", action="store_true",
                    help="print the tail of each tracer run's output")
    opts = ap.parse_args(own)
    if not tracer:
        ap.error("missing tracer command after --")
    if opts.rounds < 1 or opts.seconds <= 0:
        ap.error("--rounds must be >= 1 and --seconds > 0")
    if opts.pin_cpu is not None and not 0 <= opts.pin_cpu < NCPU:
        ap.error("--pin-cpu must be a CPU number from 0 to %d" % (NCPU - 1))
    opts.tracer = tracer
    opts.peer = shlex.split(opts.peer)
    opts.fio_args = shlex.split(opts.fio_args)
    if opts.warmup_seconds is None:
        opts.warmup_seconds = opts.seconds
    return opts


def main(argv):
    opts = parse_args(argv)
    if os.geteuid() != 0:
        log("error: needs root (loop devices, tmpfs, BPF); run with sudo")
        return 2
    for tool in ("fio", "bpftool", "losetup"):
        if subprocess.run(["sh", "-c", "command -v " + tool],
                          stdout=subprocess.DEVNULL).returncode != 0:
            log("error: %s not found in PATH; install it" % tool)
            return 2

    # SIGTERM/SIGHUP unwind like Ctrl-C so every fixture is cleaned up.
    def _sig(signum, frame):
        # First signal starts the clean-up; later ones must not abort it.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        raise KeyboardInterrupt()
    # SIGINT is set explicitly: a shell starting us in the background
    # (cmd &) leaves it ignored.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _sig)

    warnings = []
    la = loadavg()
    if la[0] > 0.5:
        w = ("load average %.2f at start (> 0.5): other jobs are running; "
             "results will be distorted" % la[0])
        warnings.append(w)
        log("warning: " + w)
    if WORKLOADS[opts.workload].get("rate_limited") or opts.rate_iops:
        warnings.append("rate-limited workload: compare CPU columns, not IOPS")

    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": platform.node(), "kernel": platform.release(), "ncpu": NCPU,
        "tracer": shlex.join(opts.tracer),
        "peer": shlex.join(opts.peer) if opts.peer else None, "workload": opts.workload,
        "workload_desc": WORKLOADS[opts.workload]["desc"],
        "rounds": opts.rounds, "seconds": opts.seconds,
        "warmup_seconds": opts.warmup_seconds, "size_mb": opts.size_mb,
        "prefill": opts.prefill, "bpf_stats": opts.bpf_stats, "pin_cpu": opts.pin_cpu,
        "fixtures": TESTLIB, "loadavg_start": la, "warnings": warnings,
    }
    bpfstats = BpfStats(opts.bpf_stats)
    rounds = []
    logdir = tempfile.mkdtemp(prefix="iospan-bench-log-")
    tracer = Tracer(opts.tracer, logdir, opts.attach_timeout, opts.settle)
    peer = Tracer(opts.peer, logdir, opts.attach_timeout, opts.settle) if opts.peer else None
    rc = 0
    try:
        with testlib.tmpfs(opts.size_mb + 64) as mnt, \
                testlib.loop_device(size_mb=opts.size_mb, backing_dir=mnt,
                                    direct_io=False) as dev, \
                pinned_workqueues(opts.pin_cpu):
            meta["device"] = dev
            meta["fio_args"] = fio_args(opts, dev)
            if opts.prefill:
                log("prefilling %s (%d MiB) ..." % (dev, opts.size_mb))
                subprocess.run(["dd", "if=/dev/zero", "of=" + dev, "bs=1M",
                                "count=%d" % opts.size_mb, "oflag=direct",
                                "status=none"], check=True)
            log("tracer: %s; workload %s on %s; %d x %g s rounds"
                % (meta["tracer"], opts.workload, dev, opts.rounds, opts.seconds))
            if opts.warmup_seconds > 0:
                sv = opts.seconds
                opts.seconds = opts.warmup_seconds
                w = run_round("U", 0, opts, dev, tracer, bpfstats, "warm-up ")
                opts.seconds = sv
                w["kind"] = "W"
                rounds.append(w)
            for i in range(1, opts.rounds + 1):
                rounds.append(run_round("U", i, opts, dev, tracer, bpfstats))
                # With a peer, the two traced rounds swap places every other time,
                # so neither always runs right after the untraced round.
                order = [("T", tracer)]
                if peer:
                    order = [("P", peer), ("T", tracer)]
                    if i % 2 == 0:
                        order.reverse()
                for kind, t in order:
                    rounds.append(run_round(kind, i, opts, dev, t, bpfstats))
                    if opts.keep_tracer_output:
                        log("  %s output: " % kind + t.tail(400))
    except KeyboardInterrupt:
        log("interrupted; cleaning up")
        rc = 130
    except (BenchError, subprocess.CalledProcessError, OSError) as e:
        log("error: %s" % e)
        rc = 1
    finally:
        tracer.stop(timeout=5)
        if peer:
            peer.stop(timeout=5)
        bpfstats.restore()
        for f in os.listdir(logdir):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(logdir, f))
        with contextlib.suppress(OSError):
            os.rmdir(logdir)
    if rc:
        return rc
    meta["loadavg_end"] = loadavg()
    meta["fio_args"] = [a for a in meta["fio_args"]]
    s = summarize(rounds)
    if peer:
        s["peer"] = summarize(rounds, "P")
        compare_with_peer(s)
    if s["foreign_cpu_pct_max"] >= 10:
        warnings.append("unrelated processes used up to %.0f%% of a core during "
                        "a round (see other%%); results are distorted"
                        % s["foreign_cpu_pct_max"])
    if s["untraced_spread_pct"] > 5:
        warnings.append("untraced IOPS spread %.1f%% > 5%%: noisy machine; "
                        "use more rounds" % s["untraced_spread_pct"])
    doc = json.dumps({"meta": meta, "rounds": rounds, "summary": s}, indent=2)
    out = doc if opts.json else render(meta, rounds, s)
    print(out)
    for path, text in ((opts.save, out), (opts.save_json, doc)):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w") as f:
                f.write(text + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
