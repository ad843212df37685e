#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Memory of a long `iospan watch` run with incidents opening and closing.

usage: bench/watch_rss.py [--minutes 60] [--bin build/iospan] [--cgroups N] [--save FILE]
                          [-- WATCH ARGS...]

A tmpfs-backed loop device carries a steady light load (fio, 200 reads/s) and, every
--period seconds, a burst (fio, 2,000 reads/s for --burst seconds) over the watch's
--iops rule, so an incident opens, captures a few seconds and closes, again and again
(cooldown 0, no hourly cap, retention keeping the last 50). The watcher's RSS
(VmRSS, /proc/PID/status) and its open file descriptors are sampled every --sample
seconds. "Flat" means: the RSS of the last quarter of the run is no higher than the
highest RSS of the second quarter (after the pre-trigger window and the caches filled)
plus a small slack, and the descriptors do not grow.

With --cgroups N, watch also serves its metrics (--listen, scraped every second as
Prometheus would) while N short-lived cgroups come and go over the run, each doing a
little direct I/O on the device before it is removed: the endpoint's cgroup table is
bounded (--metrics-max-cgroups) and a cgroup that is gone loses its series, so memory
must stay flat however many come and go. The scrapes' series are in the samples.

The result (one line per sample and a summary) goes to stdout and --save.
See bench/README.md.
"""

import argparse
import os
import random
import socket
import urllib.request
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))
import iospan_testlib as testlib  # noqa: E402


def vm_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def fio_cmd(dev, seconds, iops):
    return ["fio", "--name=rss", "--filename=" + dev, "--rw=randread", "--bs=4k",
            "--direct=1", "--ioengine=psync", "--time_based", "--runtime=%d" % seconds,
            "--rate_iops=%d" % iops, "--norandommap", "--randrepeat=0",
            "--output=/dev/null"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url):
    """Series of one scrape (lines that are not comments), or -1 if it failed."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return sum(1 for line in r.read().decode().splitlines()
                       if line and not line.startswith("#"))
    except OSError:
        return -1


class Churn:
    """Short-lived cgroups, one started every @every seconds, each reading 64 KiB of @dev
    directly (4 KiB at a time), then idle, removed after @life seconds."""

    def __init__(self, dev, root, every, life=5):
        self.dev, self.root, self.every, self.life = dev, root, every, life
        self.live = []  # (path, process)
        self.made = 0
        self.next = time.monotonic()

    def step(self):
        for path, p in list(self.live):
            if p.poll() is not None:
                os.rmdir(path)
                self.live.remove((path, p))
        now = time.monotonic()
        while now >= self.next:
            path = os.path.join(self.root, "iospan-rss-%d-%d" % (os.getpid(), self.made))
            os.mkdir(path)
            skip = random.randrange(0, 1024 * 256 - 16)
            # It lives a few samples: long enough to have series of its own.
            p = subprocess.Popen(
                ["sh", "-c", "dd if=%s of=/dev/null bs=4k count=16 skip=%d iflag=direct "
                 "status=none; sleep %g" % (self.dev, skip, self.life)],
                preexec_fn=lambda c=path: testlib.move_to_cgroup(c))
            self.live.append((path, p))
            self.made += 1
            self.next += self.every

    def stop(self):
        for path, p in self.live:
            p.wait()
            os.rmdir(path)
        self.live = []


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main():
    # A stop request ends the run through the clean-up below (children, loop device).
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "iospan"))
    ap.add_argument("--period", type=float, default=30, help="seconds between bursts")
    ap.add_argument("--burst", type=float, default=6, help="burst length, seconds")
    ap.add_argument("--sample", type=float, default=10, help="RSS sampling period, seconds")
    ap.add_argument("--cgroups", type=int, default=0,
                    help="short-lived cgroups over the run, with the metrics endpoint on")
    ap.add_argument("--save", metavar="FILE")
    ap.add_argument("watch_args", nargs="*", help="extra watch options (after --)")
    a = ap.parse_args()
    testlib.require_root("creates a loop device")
    out = []

    def say(line):
        print(line, flush=True)
        out.append(line)

    tmp = tempfile.mkdtemp(prefix="iospan-rss-")
    db = os.path.join(tmp, "incidents.db")
    with testlib.tmpfs(1100) as t, testlib.loop_device(1024, backing_dir=t) as dev:
        name = os.path.basename(dev)
        subprocess.run(["dd", "if=/dev/zero", "of=" + dev, "bs=1M", "count=1024",
                        "oflag=direct", "status=none"], check=True)
        watch = [a.bin, "watch", "-d", name, "--db", db, "--util", "0", "--await", "0",
                 "--read-mbps", "0", "--write-mbps", "0", "--iops", "1000", "--for", "2",
                 "--capture", "5", "--cooldown", "0", "--max-per-hour", "0", "--keep", "50",
                 ] + a.watch_args
        url = None
        if a.cgroups:
            port = free_port()
            watch += ["--listen", "127.0.0.1:%d" % port]
            url = "http://127.0.0.1:%d/metrics" % port
        say("# %s" % " ".join(watch))
        say("# %.0f min; burst %.0f s every %.0f s; samples every %.0f s"
            % (a.minutes, a.burst, a.period, a.sample))
        log = open(os.path.join(tmp, "watch.log"), "w")
        w = subprocess.Popen(watch, stdout=log, stderr=subprocess.STDOUT)
        total = a.minutes * 60
        steady = subprocess.Popen(fio_cmd(dev, int(total) + 60, 200))
        burst = None
        t0 = time.monotonic()
        next_burst = t0 + a.period
        next_sample = t0 + a.sample  # start-up (loading the BPF collector) is not the run
        rows = []
        churn = Churn(dev, testlib.cgroup2_root(), total / a.cgroups) if a.cgroups else None
        series = 0
        next_scrape = t0
        try:
            while time.monotonic() - t0 < total:
                if w.poll() is not None:
                    raise SystemExit("watch exited: %d" % w.returncode)
                now = time.monotonic()
                if now >= next_burst and (burst is None or burst.poll() is not None):
                    burst = subprocess.Popen(fio_cmd(dev, int(a.burst), 2000))
                    next_burst = now + a.period
                if churn:
                    churn.step()
                if url and now >= next_scrape:
                    series = scrape(url)
                    next_scrape = now + 1
                if now >= next_sample:
                    rss, fds = vm_kb(w.pid, "VmRSS"), nfds(w.pid)
                    rows.append((now - t0, rss, fds))
                    say("%7.0f s  rss %6d kB  fds %3d%s" % (
                        now - t0, rss, fds,
                        "  cgroups made %d, series %d" % (churn.made, series) if churn else ""))
                    next_sample = now + a.sample
                time.sleep(0.1 if churn else 0.5)
        finally:
            if churn:
                churn.stop()
            for p in (steady, burst):
                if p and p.poll() is None:
                    p.terminate()
                    p.wait()
            w.send_signal(signal.SIGINT)
            w.wait(timeout=30)
            log.close()
        n = subprocess.run(["sqlite3", db, "select max(id), count(*), sum(state = 'complete') from incidents"],
                           capture_output=True, text=True)
        q = len(rows) // 4
        second = max(r[1] for r in rows[q:2 * q]) if q else rows[0][1]
        last = max(r[1] for r in rows[3 * q:]) if q else rows[-1][1]
        say("# incidents opened, kept, kept complete: %s" % n.stdout.strip())
        say("# rss first %d kB, max of 2nd quarter %d kB, max of last quarter %d kB, "
            "max %d kB; fds %d -> %d"
            % (rows[0][1], second, last, max(r[1] for r in rows), rows[0][2], rows[-1][2]))
        flat = last <= second + 1024 and rows[-1][2] <= rows[0][2] + 2
        say("# flat: %s" % ("yes" if flat else "NO"))
    if a.save:
        with open(a.save, "w") as f:
            f.write("\n".join(out) + "\n")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
