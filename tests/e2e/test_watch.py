# SPDX-License-Identifier: GPL-2.0
"""iospan watch and iospan incidents, as a new user runs them: a loop device, known fio
workloads (rate-limited reads of the raw device, so fio's own byte count is the ground
truth), fast settings (--interval 0.2, small --pre and --capture), and the store read
back with `iospan incidents` and the sqlite3 shell."""
import json
import os
import re
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time

import pytest

import iospan_testlib as tl

INTERVAL = 0.2
# Only the read rule, at 20 MB/s: the other default rules off, so nothing else fires.
READ_RULE = ["--read-mbps", "20", "--util", "0", "--await", "0", "--write-mbps", "0"]


class Watcher:
    """`iospan watch` in the background; its stderr log lines collected as they come."""

    def __init__(self, db, dev, *extra, env=None):
        self.args = ["watch", "--db", db, "-d", dev, "--interval", str(INTERVAL)] + \
            [str(a) for a in extra]
        self.proc = tl.popen_iospan(*self.args, **({"env": env} if env else {}))
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.wait_for(r" start: watching ")

    def _read(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_for(self, pattern, timeout=20, count=1):
        """The first line matching @pattern once @count lines match; fails on timeout or
        when the watcher exits first."""
        deadline = time.time() + timeout
        with self.cond:
            while True:
                hits = [line for line in self.lines if re.search(pattern, line)]
                if len(hits) >= count:
                    return hits[count - 1]
                left = deadline - time.time()
                if left <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    raise AssertionError("no log line /%s/ (x%d) from iospan %s:\n%s" % (
                        pattern, count, " ".join(self.args), "\n".join(self.lines)))
                self.cond.wait(min(left, 0.2))

    def matching(self, pattern):
        with self.cond:
            return [line for line in self.lines if re.search(pattern, line)]

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=30)
        self.reader.join(timeout=10)
        return self.proc.returncode


@pytest.fixture
def disk():
    tl.require_root("creates a loop device")
    with tl.loop_device(256) as dev:
        yield dev


def fio_read(dev, seconds, rate):
    """Reads @dev directly at @rate (fio's rate: "60m") for @seconds; fio's own count of
    bytes read."""
    out = tl.fio(["--name=burst", "--filename=%s" % dev, "--rw=read", "--bs=64k",
                  "--direct=1", "--ioengine=psync", "--rate=%s" % rate, "--time_based",
                  "--runtime=%s" % seconds, "--size=200m"])
    return out["jobs"][0]["read"]["io_bytes"]


def incidents(db, *args):
    p = tl.run_iospan("--json", "incidents", "--db", db, *args, check=True)
    return json.loads(p.stdout)


def sample_counts(db):
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT incident_id, count(*) FROM samples GROUP BY 1"))
    finally:
        con.close()


def integrity(db):
    return subprocess.run(["sqlite3", db, "PRAGMA integrity_check"], capture_output=True,
                          text=True, check=True).stdout.strip()


# The issue's check: "a steady rate-limited background load under every threshold for 2
# minutes: no incident". Rules see one value per sample and fire only when --for samples
# in a row are over a threshold; with no incident open, nothing else in the watcher
# depends on the wall clock. So what two minutes at the default 1 s interval check is
# that 120 consecutive samples of a steady load stay under every rule: 120 samples at
# 0.1 s check the same decisions in 12 s, as long as the load is as steady at 0.1 s as
# at 1 s, which the test measures (its own /proc/diskstats reads at the watcher's
# interval). CI=long runs the 1 s interval for the full 2 minutes.
STEADY_LONG = os.environ.get("CI", "") == "long"
STEADY_INTERVAL = 1.0 if STEADY_LONG else 0.1
STEADY_SAMPLES = 120
STEADY_RATE = 2 * 2**20  # bytes/s at most: a 64 KiB read, then 1/32 s of sleep
# The steady reader: O_DIRECT reads of the raw device with a fixed sleep after each, so
# its rate is at most STEADY_RATE over any stretch of time: when the machine holds it
# back it falls behind and never catches up in a burst (as fio's --rate does, seen at 15
# MB/s in 0.1 s on a loaded machine). Prints the bytes it read.
STEADY_READER = r"""
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 65536)
gap, seconds = float(sys.argv[2]), float(sys.argv[3])
end, done = time.monotonic() + seconds, 0
while time.monotonic() < end:
    got = os.readv(fd, [buf])
    if got <= 0:
        os.lseek(fd, 0, os.SEEK_SET)
        continue
    done += got
    time.sleep(gap)
print(done, flush=True)
"""
# The rules the load's rate decides, each well over what the steady load does: read 10x
# its rate, write (it writes nothing), iops 12x (and over read-mbps's equivalent, so a
# burst trips read-mbps first), aqu 4 against a queue of one (psync). The rules of
# service time are not the load's to decide on a shared machine: a loop worker kept off
# the CPU makes a 2 MB/s device 100% busy (seen in a full run), so util is off and await
# is at 1 s, which a queue of one exceeds only if a single read takes a second. The
# pressure rules are off: they are system-wide, and other work on the machine moves them.
STEADY_RULES = ["--read-mbps", "20", "--write-mbps", "20", "--iops", "400", "--aqu", "4",
                "--util", "0", "--await", "1000"]


class DiskstatsSampler:
    """Reads /proc/diskstats every @interval in a thread: the ground truth of the rates
    the watcher's samples see: (wall-clock end, read MB/s, requests/s) of each
    interval."""

    def __init__(self, name, interval):
        self.name, self.interval = name, interval
        self.rates = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        prev, t_prev = tl.read_diskstats()[self.name], time.monotonic()
        while not self.stop_event.wait(self.interval):
            cur, now = tl.read_diskstats()[self.name], time.monotonic()
            dt = now - t_prev
            ios = sum(cur[k] - prev[k] for k in ("rd_ios", "wr_ios"))
            self.rates.append((time.time(),
                               (cur["rd_sectors"] - prev["rd_sectors"]) * 512 / dt / 2**20,
                               ios / dt))
            prev, t_prev = cur, now

    def between(self, start, end):
        return [r for r in self.rates if start < r[0] <= end]

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=10)


def test_steady_load_then_burst_gives_one_incident(tmp_path):
    """A steady read under every threshold for 120 samples: no incident. Then a burst:
    one incident, within --for samples of it, naming the disk, the rule and values, the
    onset in the window, and the bytes its samples count are fio's."""
    tl.require_root("creates a loop device")
    db = str(tmp_path / "incidents.db")
    interval = STEADY_INTERVAL
    seconds = STEADY_SAMPLES * interval
    with tl.tmpfs(300) as backing, tl.loop_device(256, backing_dir=backing) as disk:
        name = os.path.basename(disk)
        # iostat only (--no-bpf): the collectors' tables stay empty.
        w = Watcher(db, disk, "--interval", interval, "--pre", "3", "--capture", "3",
                    "--cooldown", "0", "--no-bpf", *STEADY_RULES)
        try:
            before = tl.read_diskstats()
            sampler = DiskstatsSampler(name, interval)
            steady_start = time.time()
            steady_bytes = int(subprocess.run(
                ["python3", "-c", STEADY_READER, disk, str(65536 / STEADY_RATE),
                 str(seconds)], capture_output=True, text=True, check=True).stdout)
            steady = sampler.between(steady_start, time.time())
            after = tl.read_diskstats()
            assert not w.matching(r"trigger|held"), w.lines
            assert incidents(db, "list")["incidents"] == []
            time.sleep(1.5)  # quiet: the samples after this come from the burst only
            burst_start = time.time()
            burst_bytes = fio_read(disk, 2, "60m")
            w.wait_for(r"stored: incident 1 stored: \d+ samples", timeout=30)
            sampler.stop()
        finally:
            assert w.stop() == 0, w.lines
    # The steady load ran, for the whole time, at most at its rate and not far under it
    # (the kernel's count), and at the watcher's interval it stayed under every rule (our
    # own samples).
    truth = tl.diskstats_delta(before, after, name)
    assert truth["rd_sectors"] * 512 == steady_bytes
    assert 0.5 * STEADY_RATE * seconds <= steady_bytes <= STEADY_RATE * seconds, steady_bytes
    assert len(steady) >= STEADY_SAMPLES * 0.9, len(steady)
    assert max(r[1] for r in steady) < 10 and max(r[2] for r in steady) < 200, steady
    # When the burst crossed the read rule's 20 MB/s, by our own samples.
    burst = sampler.between(burst_start, time.time())
    crossed = [r[0] for r in burst if r[1] >= 20][0]
    line = w.matching(r"incident 1 opened")[0]
    assert "%s read-mbps" % name in line, line

    found = incidents(db, "list")["incidents"]
    assert len(found) == 1, found
    inc = found[0]
    assert (inc["disk"], inc["rule"], inc["state"]) == (name, "read-mbps", "complete")
    assert inc["dev"] == tl.devnum_of(name)
    # Held for 2 samples, each over the threshold, and no more than the device did in
    # our samples (fio catches up after a stall, over its 60 MB/s; the watcher's
    # intervals straddle ours).
    assert len(inc["held_values"]) == 2, inc
    most = max(r[1] for r in burst)
    assert all(20 <= v <= most * 1.25 + 1 for v in inc["held_values"]), (inc, most)
    assert inc["value"] == inc["held_values"][-1]
    # Fired within --for (2) samples of the burst crossing the threshold: our samples
    # and the watcher's are an interval apart at most, and a loaded machine is late.
    assert burst_start < inc["start"], (burst_start, inc)
    assert crossed - interval < inc["start"] <= crossed + 3 * interval + 0.2, (crossed, inc)
    assert inc["top_process"] is None and inc["top_file"] is None

    doc = incidents(db, "show", "1")
    onset = doc["onset"]
    assert burst_start - interval <= onset["time"] <= inc["start"], (burst_start, onset)
    # The sample before it is quiet as the onset rule means it (trigger.c: at most a
    # tenth of the way up from the window's floor, 0 here: the disk idled 1.5 s); fio's
    # first requests can fall in it (1.25 MB/s once, against a trigger at 60).
    assert onset["quiet_value"] <= 0.1 * inc["value"] + 0.001, (onset, inc["value"])
    samples = [s for s in doc["samples"] if s["disk"] == name]
    pre = [s for s in samples if s["phase"] == "pre"]
    assert pre and all(s["time"] < inc["start"] for s in pre)
    assert len(pre) <= 3 / interval + 1
    # Ground truth: what the samples after the burst began count is what fio read.
    counted = sum(s["rkB_s"] * s["interval_s"] * 1024 for s in samples
                  if s["time"] > burst_start)
    assert abs(counted - burst_bytes) <= 0.01 * burst_bytes, (counted, burst_bytes)
    assert doc["processes"] == [] and doc["slow_requests"] == []

    text = tl.run_iospan("incidents", "--db", db, "show", "1", check=True).stdout
    assert "trigger: %s read-mbps" % name in text
    assert "onset: read-mbps began to rise at" in text, text
    listing = tl.run_iospan("incidents", "--db", db, "list", check=True).stdout
    assert re.search(r"^1\s+\S+ \S+\s+%s\s+read-mbps .*complete\s+-\s+-$" % name, listing,
                     re.M), listing
    assert w.matching(r" info: BPF collectors off"), w.lines
    assert not w.matching(r"collector top"), w.lines


# A reader of a known file at a known rate, with O_DIRECT so that every byte it reads is
# a disk read; run through a link named burstreader, so that its comm is one nothing
# else on the machine shares.
READER = r"""
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 65536)
rate, seconds = float(sys.argv[2]), float(sys.argv[3])
sys.stdin.readline()
start, done = time.time(), 0
while time.time() - start < seconds:
    got = os.readv(fd, [buf])
    if got <= 0:
        os.lseek(fd, 0, os.SEEK_SET)
    done += got
    time.sleep(max(0, start + done / rate - time.time()))
print(done, flush=True)
"""


def burst_file(fs):
    """A 100 MiB file of random data on @fs, on disk, for a reader's burst: its path."""
    path = os.path.join(fs.mnt, "burst.data")
    subprocess.run(["dd", "if=/dev/urandom", "of=" + path, "bs=1M", "count=100",
                    "status=none", "conv=fsync"], check=True)
    return path


def test_burst_names_its_process_and_file(tmp_path):
    """top's collector: a burst by a known process reading a known file gives one
    incident that names them first (list and show), and the process is in the
    pre-trigger window before the trigger: the onset. What the incident's rows count
    for it is what it read."""
    tl.require_root("creates a loop device and a file system")
    db = str(tmp_path / "incidents.db")
    with tl.scratch_fs("ext4", 256) as fs:
        path = burst_file(fs)
        name = os.path.basename(fs.dev)
        w = Watcher(db, fs.dev, "--pre", "3", "--capture", "2", "--cooldown", "0",
                    *READ_RULE)
        try:
            w.wait_for(r" info: collector top loaded")
            exe = tmp_path / "burstreader"
            exe.symlink_to("/usr/bin/python3")
            reader = subprocess.Popen([str(exe), "-c", READER, path,
                                       str(60 * 2**20), "2"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
            time.sleep(1)  # python's start-up: the window before the burst is quiet
            burst_start = time.time()
            out, _ = reader.communicate("go\n", timeout=30)
            read_bytes = int(out)
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    assert reader.returncode == 0
    found = incidents(db, "list")["incidents"]
    assert len(found) == 1, found
    inc = found[0]
    assert (inc["disk"], inc["rule"]) == (name, "read-mbps"), inc
    assert burst_start < inc["start"] < burst_start + 2 * INTERVAL + 1.0, (burst_start, inc)
    assert inc["top_process"] == "burstreader (%d)" % reader.pid, inc
    assert inc["top_file"] == path, inc

    doc = incidents(db, "show", "1")
    top = doc["busiest_processes"][0]
    assert (top["pid"], top["comm"]) == (reader.pid, "burstreader"), doc["busiest_processes"]
    assert doc["busiest_files"][0]["path"] == path, doc["busiest_files"]
    assert doc["busiest_files"][0]["pids"] == str(reader.pid), doc["busiest_files"]
    # The onset: the reader is in the pre-trigger window, before the trigger's time.
    pre = [p for p in doc["processes"] if p["phase"] == "pre" and p["pid"] == reader.pid]
    assert pre and all(p["time"] < inc["start"] for p in pre), doc["processes"]
    assert burst_start - INTERVAL <= top["first_pre_time"] < inc["start"], (burst_start, top)
    # Rows only for the watched disk.
    assert {p["disk"] for p in doc["processes"]} == {name}, doc["processes"]
    # Ground truth: the reader's bytes, every one a disk read, are in the incident's rows
    # (the window and the capture cover the whole burst).
    mine = [p for p in doc["processes"] if p["pid"] == reader.pid]
    counted = sum(p["disk_read_bytes"] for p in mine)
    assert abs(counted - read_bytes) <= 0.01 * read_bytes, (counted, read_bytes)

    text = tl.run_iospan("incidents", "--db", db, "show", "1", check=True).stdout
    assert re.search(r"^busiest processes of the capture.*\n.*\n\s*%d burstreader .*"
                     r"\(\d+\.\d s before\)$" % reader.pid, text, re.M), text
    assert re.search(r"^busiest files of the capture:\n.*\n.* %d\s+%s$"
                     % (reader.pid, re.escape(path)), text, re.M), text


def test_await_rule_on_a_throttled_device(tmp_path):
    """The default await rule (100 ms): requests queued 4 deep behind 32 ms each fire it,
    and the incident's samples count fio's requests and the kernel's wait exactly."""
    tl.require_root("creates loop devices and a blkio cgroup")
    db = str(tmp_path / "await.db")
    with tl.slow_disk(read_bps=2 * 1024 * 1024) as (upper, cgroup):
        name = os.path.basename(upper)
        w = Watcher(db, upper, "--pre", "1", "--capture", "1.5", "--util", "0",
                    "--read-mbps", "0", "--write-mbps", "0")
        try:
            before = tl.read_diskstats()
            out = tl.fio(["--name=slow", "--filename=%s" % upper, "--rw=randread",
                          "--bs=64k", "--direct=1", "--ioengine=libaio", "--iodepth=4",
                          "--time_based", "--runtime=3", "--size=30m"], cgroup=cgroup)
            after = tl.read_diskstats()
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    inc = incidents(db, "list")["incidents"]
    assert [(i["disk"], i["rule"], i["state"]) for i in inc] == [(name, "await", "complete")]
    assert all(v >= 100 for v in inc[0]["held_values"]), inc
    truth = tl.diskstats_delta(before, after, name)
    assert truth["rd_ios"] == out["jobs"][0]["read"]["total_ios"]
    samples = [s for s in incidents(db, "show", "1")["samples"]
               if s["disk"] == name and s["r_s"] is not None]
    ios = sum(s["r_s"] * s["interval_s"] for s in samples)
    ticks = sum(s["r_await"] * s["r_s"] * s["interval_s"] for s in samples)
    assert round(ios) == truth["rd_ios"], (ios, truth)
    assert abs(ticks - truth["rd_ticks"]) <= 0.01 * truth["rd_ticks"], (ticks, truth)


def test_export_replays_to_the_same_numbers(disk, tmp_path):
    """export --format stat, then `iospan stat --replay`: the incident's iostat numbers."""
    db = str(tmp_path / "incidents.db")
    rec = str(tmp_path / "incident.rec")
    name = os.path.basename(disk)
    w = Watcher(db, disk, "--pre", "1", "--capture", "1", *READ_RULE)
    try:
        fio_read(disk, 1.5, "40m")
        w.wait_for(r"stored: incident 1 stored", timeout=30)
    finally:
        assert w.stop() == 0
    tl.run_iospan("incidents", "--db", db, "export", "1", "-o", rec, check=True)
    reports = [json.loads(x) for x in tl.run_iospan(
        "--json", "stat", "--replay", rec, "-y", "-d", name, check=True).stdout.splitlines()]
    samples = [s for s in incidents(db, "show", "1")["samples"] if s["disk"] == name]
    # Each sample after the first is a report (the first is their base).
    assert len(reports) == len(samples) - 1 >= 5, (len(reports), len(samples))
    for rep, smp in zip(reports, samples[1:]):
        dev = rep["devices"][0]
        assert abs(rep["time"] - smp["time"]) < 0.001
        assert abs(rep["interval_s"] - smp["interval_s"]) < 0.001
        for key in ("r_s", "rkB_s", "w_s", "wkB_s", "util", "aqu_sz", "r_await"):
            assert abs(dev[key] - smp[key]) <= 0.01, (key, dev, smp)
        assert dev["in_flight"] == smp["in_flight"]
    # JSON export: the same document as show --json.
    p = tl.run_iospan("incidents", "--db", db, "export", "1", "--format", "json", check=True)
    assert json.loads(p.stdout)["samples"] == incidents(db, "show", "1")["samples"]


def test_cooldown_and_hourly_cap(disk, tmp_path):
    """A burst in the cooldown after an incident opens none (one line says so); with no
    cooldown, the per-hour cap holds, also across a restart of the watcher."""
    db = str(tmp_path / "cool.db")
    w = Watcher(db, disk, "--pre", "0.4", "--capture", "0.4", "--cooldown", "60",
                *READ_RULE)
    try:
        fio_read(disk, 1.2, "40m")
        w.wait_for(r"stored: incident 1 stored")
        fio_read(disk, 1.2, "40m")
        w.wait_for(r"held: no incident: .* in the cooldown after the last one")
    finally:
        assert w.stop() == 0
    assert len(incidents(db, "list")["incidents"]) == 1
    assert len(w.matching(r"held:")) == 1, w.lines

    db = str(tmp_path / "cap.db")
    w = Watcher(db, disk, "--pre", "0.4", "--capture", "0.4", "--cooldown", "0",
                "--max-per-hour", "2", *READ_RULE)
    try:
        for i in (1, 2):
            fio_read(disk, 1.2, "40m")
            w.wait_for(r"stored: incident %d stored" % i)
        fio_read(disk, 1.2, "40m")
        w.wait_for(r"held: no incident: .* the per-hour cap is reached")
    finally:
        assert w.stop() == 0
    assert len(w.matching(r"held:")) == 1, w.lines  # once per trigger, not per sample
    # A new watcher counts the incidents of the last hour in the store.
    w = Watcher(db, disk, "--pre", "0.4", "--capture", "0.4", "--cooldown", "0",
                "--max-per-hour", "2", *READ_RULE)
    try:
        fio_read(disk, 1.2, "40m")
        w.wait_for(r"held: no incident: .* the per-hour cap is reached")
    finally:
        assert w.stop() == 0
    assert [i["id"] for i in incidents(db, "list")["incidents"]] == [1, 2]


def test_retention_by_count_and_age(disk, tmp_path):
    db = str(tmp_path / "keep.db")
    w = Watcher(db, disk, "--pre", "0.4", "--capture", "0.4", "--cooldown", "0", "--keep",
                "2", *READ_RULE)
    try:
        for i in (1, 2, 3):
            fio_read(disk, 1.2, "40m")
            w.wait_for(r"stored: incident %d stored" % i)
        w.wait_for(r"retention: deleted 1 old incident$")
    finally:
        assert w.stop() == 0
    assert [i["id"] for i in incidents(db, "list")["incidents"]] == [2, 3]
    assert sorted(sample_counts(db)) == [2, 3]  # the samples went with it

    # By age: a cut-off between the ends of the two, so only the older one goes.
    ends = [i["end"] for i in incidents(db, "list")["incidents"]]
    assert ends[1] - ends[0] > 0.5, ends
    assert incidents(db, "prune", "--max-age", "1h") == {"deleted": 0, "left": 2}
    age = time.time() - (ends[0] + ends[1]) / 2
    assert incidents(db, "prune", "--max-age", "%.3fs" % age) == {"deleted": 1, "left": 1}
    assert [i["id"] for i in incidents(db, "list")["incidents"]] == [3]
    # By size: the live pages over the limit, the oldest go (here the last one).
    assert incidents(db, "prune", "--max-db-size", "1G") == {"deleted": 0, "left": 1}
    assert incidents(db, "prune", "--max-db-size", "1") == {"deleted": 1, "left": 0}
    assert sample_counts(db) == {}
    assert integrity(db) == "ok"


def test_kill_9_during_capture(disk, tmp_path):
    """SIGKILL in a capture: the database opens, the incident before is whole, the cut
    one is incomplete (at once for readers; stored so by the next watcher)."""
    db = str(tmp_path / "kill.db")
    w = Watcher(db, disk, "--pre", "0.6", "--capture", "0.4", "--cooldown", "0", *READ_RULE)
    try:
        fio_read(disk, 1.2, "40m")
        w.wait_for(r"stored: incident 1 stored")
    finally:
        assert w.stop() == 0
    before = sample_counts(db)
    first = incidents(db, "show", "1")

    w = Watcher(db, disk, "--pre", "0.6", "--capture", "30", "--cooldown", "0", *READ_RULE)
    fio_read(disk, 1.2, "40m")
    w.wait_for(r"incident 2 opened")
    time.sleep(1)
    # While the watcher writes it, the incident is open.
    assert [i["state"] for i in incidents(db, "list")["incidents"]] == ["complete", "open"]
    w.stop(signal.SIGKILL)
    assert w.proc.returncode == -signal.SIGKILL

    assert integrity(db) == "ok"
    found = incidents(db, "list")["incidents"]
    assert [(i["id"], i["state"]) for i in found] == [(1, "complete"), (2, "incomplete")]
    assert incidents(db, "show", "1") == first
    assert sample_counts(db)[1] == before[1]
    assert sample_counts(db)[2] >= 4  # the window, the trigger and samples after it
    text = tl.run_iospan("incidents", "--db", db, "list", check=True).stdout
    assert re.search(r"^2 .* incomplete ", text, re.M), text

    w = Watcher(db, disk, "--duration", "0.5", *READ_RULE)
    w.wait_for(r"1 incident left open by a previous watcher marked incomplete")
    assert w.proc.wait(timeout=10) == 0
    con = sqlite3.connect(db)
    assert con.execute("SELECT state FROM incidents WHERE id = 2").fetchone() == \
        ("incomplete",)
    con.close()


def test_sigterm_during_capture(disk, tmp_path):
    """SIGTERM (systemctl stop) in a capture: exit 0, the incident stored incomplete with
    what it had, saying why."""
    db = str(tmp_path / "term.db")
    w = Watcher(db, disk, "--pre", "0.4", "--capture", "30", *READ_RULE)
    try:
        fio_read(disk, 1.2, "40m")
        w.wait_for(r"incident 1 opened")
    finally:
        assert w.stop() == 0
    w.wait_for(r"stored: incident 1 stored incomplete \(the watcher was stopped during the "
               r"capture\): \d+ samples, 0 lost")
    inc = incidents(db, "list")["incidents"]
    assert [(i["state"], i["end_reason"]) for i in inc] == \
        [("incomplete", "the watcher was stopped during the capture")]
    assert inc[0]["end"] >= inc[0]["start"]
    assert sorted(os.listdir(tmp_path)) == ["term.db"]  # -wal and -shm gone: closed clean


def test_store_files_are_private(disk, tmp_path):
    """The database, its -wal and -shm: mode 0600 (paths and command lines are in it)."""
    db = str(tmp_path / "priv" / "incidents.db")
    os.umask(0o022)
    w = Watcher(db, disk, *READ_RULE)
    try:
        modes = {s: stat.S_IMODE(os.stat(db + s).st_mode) for s in ("", "-wal", "-shm")}
        dir_mode = stat.S_IMODE(os.stat(os.path.dirname(db)).st_mode)
    finally:
        assert w.stop() == 0
    assert modes == {"": 0o600, "-wal": 0o600, "-shm": 0o600}, modes
    assert dir_mode == 0o700


def test_full_file_system(disk):
    """The store's file system fills up: one clear error line, the watcher keeps running
    (an incident after space is back is stored), earlier incidents are intact."""
    with tl.tmpfs(4) as mnt:
        db = os.path.join(mnt, "incidents.db")
        w = Watcher(db, disk, "--pre", "0.4", "--capture", "0.4", "--cooldown", "0",
                    *READ_RULE)
        try:
            fio_read(disk, 1.2, "40m")
            w.wait_for(r"stored: incident 1 stored")
        finally:
            assert w.stop() == 0
        first = incidents(db, "show", "1")

        w = Watcher(db, disk, "--pre", "0.4", "--capture", "0.4", "--cooldown", "0",
                    *READ_RULE)
        try:
            fill = os.path.join(mnt, "fill")
            subprocess.run(["dd", "if=/dev/zero", "of=" + fill, "bs=64k"],
                           capture_output=True)
            fio_read(disk, 1.2, "40m")
            err = w.wait_for(r" error: ")
            fio_read(disk, 1.2, "40m")  # still full: no second line
            time.sleep(1)
            os.unlink(fill)
            time.sleep(0.5)
            fio_read(disk, 1.2, "40m")
            w.wait_for(r"stored: incident 2 stored")
        finally:
            assert w.stop() == 0
        assert re.search(r"cannot store a new incident in '%s': the file system is full; "
                         r"the watcher keeps running" % re.escape(db), err), err
        assert w.matching(r"info: '%s' accepts writes again" % re.escape(db))
        assert len(w.matching(r" error: ")) == 1, w.lines
        assert integrity(db) == "ok"
        assert incidents(db, "show", "1") == first
        assert [i["state"] for i in incidents(db, "list")["incidents"]] == ["complete"] * 2


def test_full_file_system_at_start(disk):
    """No room for the store at start-up: one error line, exit 1, nothing lost."""
    with tl.tmpfs(4) as mnt:
        db = os.path.join(mnt, "incidents.db")
        subprocess.run(["dd", "if=/dev/zero", "of=" + os.path.join(mnt, "fill"), "bs=64k"],
                       capture_output=True)
        p = tl.run_iospan("watch", "--db", db, "-d", disk, "--duration", "1")
        assert not os.path.exists(db)  # no empty database left behind
    assert p.returncode == 1, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("iospan: ") and "full" in lines[0], lines


def test_unwritable_path(disk, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    with tl.tmpfs(1) as mnt:
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        p = tl.run_iospan("watch", "--db", os.path.join(mnt, "x.db"), "-d", disk,
                          "--duration", "1")
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "Read-only file system" in p.stderr, p.stderr


def test_one_watcher_per_database(disk, tmp_path):
    db = str(tmp_path / "one.db")
    w = Watcher(db, disk, *READ_RULE)
    try:
        p = tl.run_iospan("watch", "--db", db, "-d", disk, "--duration", "1")
    finally:
        assert w.stop() == 0
    assert p.returncode == 1
    assert "in use by another iospan watch" in p.stderr, p.stderr


def test_config_file_and_command_line(disk, tmp_path):
    db = str(tmp_path / "conf.db")
    conf = tmp_path / "watch.conf"
    conf.write_text("# iospan watch\n db = %s\ndisk = %s\nread-mbps = 5\nutil = 0\n"
                    "interval = 0.5\nfor=3\n" % (db, disk))
    p = tl.run_iospan("watch", "--config", conf, "--duration", "0.6", "--read-mbps", "30")
    assert p.returncode == 0, p.stderr
    start = [x for x in p.stderr.splitlines() if " start: " in x][0]
    assert "watching %s every 0.5 s" % os.path.basename(disk) in start, start
    assert "rules await>=100 ms read-mbps>=30 MB/s write-mbps>=1500 MB/s for 3 samples" in start
    assert "store %s" % db in start and os.path.exists(db)

    conf.write_text("db = %s\nutill = 5\n" % db)
    p = tl.run_iospan("watch", "--config", conf, "--duration", "0.5")
    assert p.returncode == 2
    assert p.stderr.strip() == ("iospan: %s line 2: unknown key 'utill' (keys are watch's "
                                "long options, such as util, db, disk)" % conf)


@pytest.mark.parametrize("args", [
    ["watch", "--util", "abc"],
    ["watch", "--util", "101"],
    ["watch", "--interval", "0"],
    ["watch", "--for", "0"],
    ["watch", "-d", "nosuchdisk", "--duration", "1"],
    ["watch", "--config", "/nonexistent/watch.conf"],
    ["watch", "--util", "0", "--await", "0", "--read-mbps", "0", "--write-mbps", "0"],
    ["watch", "extra"],
    ["watch", "--bpf", "maybe"],
    ["watch", "--slow-request", "soon"],
    ["watch", "--slow-request", "200ms", "--no-bpf"],
    ["watch", "--capture-threshold", "-1"],
    ["watch", "--syscall-hooks", "fast"],
    ["incidents"],
    ["incidents", "frob"],
    ["incidents", "show"],
    ["incidents", "show", "abc"],
    ["incidents", "export", "1", "--format", "xml"],
    ["incidents", "list", "--keep", "3"],
    ["incidents", "prune", "--max-age", "soon"],
])
def test_bad_input_exits_2(args, tmp_path):
    p = tl.run_iospan(*args, "--db", str(tmp_path / "x.db"))
    assert p.returncode == 2, (args, p.stderr)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("iospan: "), p.stderr
    p = tl.run_iospan("--json", *args, "--db", str(tmp_path / "x.db"))
    assert p.returncode == 2 and json.loads(p.stdout)["exit_code"] == 2


def test_incidents_without_database(tmp_path):
    p = tl.run_iospan("incidents", "--db", str(tmp_path / "none.db"), "list")
    assert p.returncode == 1
    assert "no incident database at" in p.stderr and p.stderr.count("\n") == 1
    not_db = tmp_path / "text.db"
    not_db.write_text("hello\n" * 100)
    p = tl.run_iospan("incidents", "--db", str(not_db), "list")
    assert p.returncode == 1 and "not an iospan incident database" in p.stderr, p.stderr


def test_systemd_unit(tmp_path):
    """The unit `make install` installs: systemd accepts it, with the hardening the
    README promises, and it runs the installed binary."""
    out = str(tmp_path / "out")
    sbindir = os.path.dirname(os.path.abspath(tl.iospan_bin()))
    subprocess.run(["make", "-s", "-C", tl.repo_root(), "OUT=%s" % out, "SBINDIR=%s" % sbindir,
                    "%s/iospan-watch.service" % out], check=True, capture_output=True)
    unit = os.path.join(out, "iospan-watch.service")
    text = open(unit).read()
    assert "ExecStart=%s/iospan watch\n" % sbindir in text
    for line in ("ProtectSystem=strict", "ReadWritePaths=/var/lib/iospan", "PrivateTmp=yes",
                 "NoNewPrivileges=yes", "UMask=0077", "RestartPreventExitStatus=2",
                 "CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYS_RESOURCE "
                 "CAP_DAC_READ_SEARCH CAP_SYS_PTRACE"):
        assert "\n%s\n" % line in text, line
    p = subprocess.run(["systemd-analyze", "verify", "--man=no", unit], capture_output=True,
                       text=True)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr
    p = subprocess.run(["systemd-analyze", "security", "--offline=yes", unit],
                       capture_output=True, text=True)
    level = float(re.search(r"Overall exposure level for \S+: ([\d.]+)", p.stdout).group(1))
    assert level <= 3.5, p.stdout[-2000:]


def test_json_events(disk, tmp_path):
    """--json: each event one JSON object on stdout, nothing on stderr."""
    db = str(tmp_path / "json.db")
    p = tl.run_iospan("--json", "watch", "--db", db, "-d", disk, "--interval", "0.1",
                      "--duration", "0.5", *READ_RULE)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    assert [e["event"] for e in events] == ["info", "info", "start", "stop"], events
    assert events[0]["message"] == ("collector top loaded (FS bytes from the page cache, in "
                                    "whole pages: --syscall-hooks none)"), events
    assert events[1]["message"] == "collector trace off by the options", events
    assert "watching %s every 0.1 s" % os.path.basename(disk) in events[2]["message"]
    assert abs(events[0]["time"] - time.time()) < 30


@pytest.mark.parametrize("detail", ["block", "full"])
def test_watch_goes_on_when_bpf_cannot_load(disk, tmp_path, detail):
    """Root without CAP_BPF and CAP_PERFMON (setpriv): the collectors cannot load; watch
    says so in one error line each naming why (the line of the one that times slow
    requests, top's at --detail block, trace's at full, says the slow-request rule
    cannot fire), and samples and stores incidents without them."""
    db = str(tmp_path / "nobpf.db")
    caps = "".join(",+" + c for c in ("dac_override", "dac_read_search", "fowner"))
    prefix = ["setpriv", "--inh-caps=-all" + caps, "--ambient-caps=-all" + caps,
              "--bounding-set=-all" + caps]
    proc = subprocess.Popen(prefix + [tl.iospan_bin(), "watch", "--db", db, "-d", disk,
                                      "--interval", str(INTERVAL), "--pre", "1", "--capture",
                                      "1", "--duration", "5", "--slow-request", "1ms",
                                      "--detail", detail]
                            + READ_RULE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    fio_read(disk, 1.5, "60m")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = err.splitlines()
    errors = [line for line in lines if " error: " in line]
    cannot_fire = "; watching without it (the slow-request rule cannot fire)"
    assert "collector top unavailable: " in errors[0] and "CAP_BPF" in errors[0], err
    if detail == "block":
        assert len(errors) == 1 and errors[0].endswith(cannot_fire), err
        assert [line for line in lines if " info: collector trace off by the options"
                in line], err
    else:
        assert len(errors) == 2 and errors[0].endswith("; watching without it"), err
        assert "collector trace unavailable: " in errors[1] and "CAP_BPF" in errors[1], err
        assert errors[1].endswith(cannot_fire), err
    assert [line for line in lines if " start: " in line], err
    # The read rule fires; the slow-request rule, with no collector, never does.
    assert [line for line in lines if "trigger: incident 1 opened: %s read-mbps"
            % os.path.basename(disk) in line], err
    assert not [line for line in lines if "slow-request " in line and "trigger" in line], err
    assert [line for line in lines if "stored: incident 1 stored" in line], err
    doc = incidents(db, "show", "1")
    assert doc["samples"] and doc["processes"] == [] and doc["busiest_processes"] == []
    assert doc["slow_requests"] == [] and doc["stalls"] == []


def test_no_bpf_refuses_the_slow_request_rule(disk, tmp_path):
    """--no-bpf (or in the config file) with --slow-request: a usage error, said at once;
    without the rule, --no-bpf watch loads no collector and runs."""
    db = str(tmp_path / "nobpf.db")
    conf = tmp_path / "watch.conf"
    conf.write_text("slow-request = 200ms\nbpf = off\n")
    p = tl.run_iospan("watch", "--db", db, "-d", disk, "--config", str(conf),
                      "--duration", "0.5")
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip() == "iospan: --slow-request needs a BPF collector: it cannot be " \
        "used with --bpf off", p.stderr
    p = tl.run_iospan("watch", "--db", db, "-d", disk, "--no-bpf", "--duration", "0.5",
                      "--interval", "0.1")
    assert p.returncode == 0, p.stderr
    assert "BPF collectors off" in p.stderr and "collector" not in \
        p.stderr.replace("BPF collectors off", ""), p.stderr


SLOW_READER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead: each read waits
print("ready", flush=True)
sys.stdin.readline()
out = []
for _ in range(int(sys.argv[3])):
    t0 = time.monotonic()
    os.pread(fd, int(sys.argv[2]), 0 if not out else len(out) * int(sys.argv[2]))
    out.append(time.monotonic() - t0)
    time.sleep(float(sys.argv[4]))
print(" ".join("%.6f" % x for x in out), flush=True)
"""

# Every iostat rule off: only --slow-request can fire.
NO_IOSTAT_RULES = ["--util", "0", "--await", "0", "--read-mbps", "0", "--write-mbps", "0"]


def slow_reads(tmp_path, fs, cgroup, name, size, count, pause):
    """@count buffered preads of @size bytes of a new file on @fs by a process named
    @name held by blk-throttle in @cgroup, @pause seconds apart; returns the process, the
    file and each read's duration as the reader timed it."""
    path = os.path.join(fs.mnt, name + ".data")
    subprocess.run(["dd", "if=/dev/urandom", "of=" + path, "bs=1M",
                    "count=%d" % (size * count // 2**20 + 1), "status=none", "conv=fsync"],
                   check=True)
    tl.drop_caches()
    exe = tmp_path / name
    exe.symlink_to("/usr/bin/python3")
    reader = subprocess.Popen([str(exe), "-c", SLOW_READER, path, str(size), str(count),
                               str(pause)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, preexec_fn=lambda: tl.move_to_cgroup(cgroup))
    assert reader.stdout.readline().strip() == "ready"
    return reader, path


def finish(reader):
    out, _ = reader.communicate("go\n", timeout=60)
    assert reader.returncode == 0
    return [float(x) for x in out.split()]


def check_request(req, reader, path, took_s):
    """A slow_requests row against the reader's own timing of its read."""
    assert (req["pid"], req["tid"], req["comm"]) == (reader.pid, reader.pid,
                                                    os.path.basename(path)[:-5]), req
    assert req["path"] == path and req["op"] == "pread64", req
    # The kernel's time is within the reader's, less only python's call overhead and
    # the wait for a CPU after the syscall (up to 0.1 s seen on this 2-CPU host under
    # the full suite: once below 0.9 of a 0.5 s read).
    assert min(0.9 * took_s, took_s - 0.1) * 1e6 <= req["total_us"] <= took_s * 1e6, \
        (req, took_s)
    st = json.loads(req["stages"])
    # Held by blk-throttle most of the time, and the stages add up to the total.
    assert st["throttle"] >= 0.5 * req["total_us"], st
    parts = sum(st[k] for k in ("pre_block", "throttle", "q2q", "q2g", "g2i", "i2d", "d2c",
                                "post_block"))
    assert abs(parts - st["total"]) <= 0.01 * st["total"] + 1, st
    assert abs(st["total"] - req["total_us"]) < 1, (st, req)
    return st


def test_slow_request_rule_fires_on_one_request(tmp_path):
    """--slow-request --detail full: one read held ~0.5 s by blk-throttle (before the
    block layer queues it: a block-detail time would not see it) opens
    an incident at once (not after --for samples), naming the disk, the rule and that
    request's latency; show has the request with its stages, pid and file."""
    tl.require_root("creates a loop device, a file system and a blkio cgroup")
    tl.require_blkio()
    db = str(tmp_path / "slow.db")
    with tl.scratch_fs("ext4", 128) as fs, \
            tl.blkio_throttle(fs.devnum, read_bps=1024 * 1024) as cgroup:
        name = os.path.basename(fs.dev)
        reader, path = slow_reads(tmp_path, fs, cgroup, "slowreader", 512 * 1024, 1, 0)
        w = Watcher(db, fs.dev, "--pre", "2", "--capture", "1", "--for", "3",
                    "--slow-request", "250ms", "--detail", "full",
                    "--stall-threshold", "100ms", "--stalls", "always", *NO_IOSTAT_RULES)
        try:
            w.wait_for(r" info: collector trace loaded")
            took = finish(reader)[0]
            line = w.wait_for(r"trigger: incident 1 opened", timeout=30)
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    assert took >= 0.3, took
    assert re.search(r"%s slow-request \d+\.\d+ ms >= 250\.00 ms for 1 sample \(" % name,
                     line), line
    inc = incidents(db, "list")["incidents"]
    assert [(i["disk"], i["rule"], i["state"]) for i in inc] == \
        [(name, "slow-request", "complete")], inc
    doc = incidents(db, "show", "1")
    reqs = [r for r in doc["slow_requests"] if r["pid"] == reader.pid]
    assert len(reqs) == 1, doc["slow_requests"]
    req = reqs[0]
    check_request(req, reader, path, took)
    # The incident's value is that request's latency, and it came in the trigger's sample.
    assert abs(inc[0]["value"] - req["total_us"] / 1000) < 0.01, (inc, req)
    assert req["phase"] in ("pre", "capture") and req["disk"] == name, req
    assert req["time"] <= inc[0]["start"], (req, inc)
    text = tl.run_iospan("incidents", "--db", db, "show", "1", check=True).stdout
    assert re.search(r"^slowest requests", text, re.M), text
    assert re.search(r"^\s*[\d.]+ ms\s+pread64\s+%d\s+slowreader\s.*%s$"
                     % (reader.pid, re.escape(path)), text, re.M), text
    assert re.search(r"throttle [\d.]+ ms", text), text
    # The reader slept in the I/O path the whole time: a stall, its stack symbolized.
    stalls = [x for x in doc["stalls"] if x["pid"] == reader.pid]
    assert stalls, doc["stalls"]
    longest = max(stalls, key=lambda x: x["wait_us"])
    assert 0.8 * took * 1e6 <= longest["wait_us"] <= took * 1e6, (longest, took)
    frames = json.loads(longest["stack"])
    assert frames and all(re.match(r"\w+\+0x[0-9a-f]+", f) for f in frames), frames
    assert any("io_schedule" in f or "folio_wait" in f or "wait_on_page" in f
               for f in frames), frames
    assert re.search(r"^longest stalls.*\n.*\n\s*[\d.]+ ms\s+%d\s+%d slowreader .*\n"
                     r"\s+stack: \w+\+0x" % (reader.pid, reader.pid), text, re.M), text
    # export --format json: the same rows.
    exp = json.loads(tl.run_iospan("incidents", "--db", db, "export", "1", "--format",
                                   "json", check=True).stdout)
    assert (exp["slow_requests"], exp["stalls"]) == (doc["slow_requests"], doc["stalls"])


def test_slow_requests_of_a_process_in_the_capture(tmp_path):
    """An incident opened by another rule (read-mbps, from fio on the raw device) keeps
    the slow requests a throttled process made in the window and during the capture,
    each with its stages, and nothing under --capture-threshold."""
    tl.require_root("creates a loop device, a file system and a blkio cgroup")
    tl.require_blkio()
    db = str(tmp_path / "cap.db")
    with tl.scratch_fs("ext4", 256) as fs, \
            tl.blkio_throttle(fs.devnum, read_bps=2 * 1024 * 1024) as cgroup:
        reader, path = slow_reads(tmp_path, fs, cgroup, "capreader", 256 * 1024, 6, 0.3)
        w = Watcher(db, fs.dev, "--pre", "3", "--capture", "3", "--capture-threshold",
                    "60ms", "--detail", "full", *READ_RULE)
        try:
            w.wait_for(r" info: collector trace loaded")
            reader.stdin.write("go\n")
            reader.stdin.flush()
            fio_read(fs.dev, 1.5, "60m")
            took = finish(reader)
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    doc = incidents(db, "show", "1")
    assert doc["rule"] == "read-mbps", doc["rule"]
    mine = sorted((r for r in doc["slow_requests"] if r["pid"] == reader.pid),
                  key=lambda r: r["time"])
    # Each read of 256 KiB at 2 MiB/s is ~125 ms, over the 60 ms threshold: all six.
    assert len(mine) == 6, doc["slow_requests"]
    for req, t in zip(mine, took):
        check_request(req, reader, path, t)
    assert all(r["total_us"] >= 60000 for r in doc["slow_requests"]), doc["slow_requests"]
    assert {r["phase"] for r in mine} <= {"pre", "capture"}


DIRECT_READER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = __import__("mmap").mmap(-1, int(sys.argv[2]))
print("ready", flush=True)
sys.stdin.readline()
out = []
for i in range(int(sys.argv[3])):
    t0 = time.monotonic()
    os.preadv(fd, [buf], i * len(buf))
    out.append(time.monotonic() - t0)
    time.sleep(float(sys.argv[4]))
print(" ".join("%.6f" % x for x in out), flush=True)
"""


def test_block_detail_slow_requests_by_default(tmp_path):
    """With no option but the rule, watch times requests at block detail (top's
    completion program, no trace collector): direct reads of a file on a disk whose
    device time blk-throttle stretches (tl.slow_disk(): 64 KiB at 512 KiB/s, 125 ms)
    fire --slow-request at once, and each is in the incident with its process, file,
    op, offset and stages (queue and device time), within the reader's own timing.
    Stalls are timed by default from the trigger on only: the reader's waits over the
    default 100 ms are in the capture, none in the window before it."""
    tl.require_root("creates loop devices, a file system and a blkio cgroup")
    tl.require_blkio()
    db = str(tmp_path / "block.db")
    bs, count = 64 * 1024, 8
    with tl.slow_disk(size_mb=48, read_bps=512 * 1024) as (dev, cgroup), \
            tl.filesystem(dev, "ext4") as mnt:
        name = os.path.basename(dev)
        path = os.path.join(mnt, "blockdata")
        subprocess.run(["dd", "if=/dev/urandom", "of=" + path, "bs=1M", "count=1",
                        "status=none", "conv=fsync"], check=True)
        exe = tmp_path / "blkreader"
        exe.symlink_to("/usr/bin/python3")
        # Back to back: a pause would let blk-throttle's budget build up (a read after
        # one is let through at once).
        reader = subprocess.Popen([str(exe), "-c", DIRECT_READER, path, str(bs), str(count),
                                   "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, preexec_fn=lambda: tl.move_to_cgroup(cgroup))
        assert reader.stdout.readline().strip() == "ready"
        w = Watcher(db, dev, "--pre", "2", "--capture", "2", "--slow-request", "80ms",
                    *NO_IOSTAT_RULES)
        try:
            w.wait_for(r" info: collector top loaded")
            took = finish(reader)
            line = w.wait_for(r"trigger: incident 1 opened", timeout=30)
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    assert any("collector trace off by the options" in x for x in w.lines), w.lines
    assert re.search(r"%s slow-request \d+\.\d+ ms >= 80\.00 ms for 1 sample" % name,
                     line), line
    doc = incidents(db, "show", "1")
    mine = sorted((r for r in doc["slow_requests"] if r["pid"] == reader.pid),
                  key=lambda r: r["time"])
    # All the reads, in the window or the capture; nothing under the rule's 80 ms (lower
    # than the default --capture-threshold, 100 ms: the one kept from).
    assert len(mine) == count, (took, doc["slow_requests"])
    assert all(r["total_us"] >= 80000 for r in doc["slow_requests"]), doc["slow_requests"]
    offsets = []
    for req, t in zip(mine, took):
        assert (req["comm"], req["op"], req["path"], req["bytes"], req["disk"]) == \
            ("blkreader", "read", path, bs, name), req
        # The block layer's time is inside the reader's, and is most of it.
        assert 0.7 * t * 1e6 <= req["total_us"] <= t * 1e6, (req, t)
        st = json.loads(req["stages"])
        assert st["detail"] == "block" and st["direct"] is True, st
        assert abs(st["q2c"] - req["total_us"]) < 1, (st, req)
        assert abs(st["q2d"] + st["d2c"] - st["q2c"]) < 1, st
        # The wait is in the device (the lower disk's throttle), not the queue.
        assert st["d2c"] >= 0.9 * st["q2c"], st
        offsets.append(req["offset"])
    # The file's five blocks, one after the other on the disk (ext4 keeps it contiguous).
    assert [o - offsets[0] for o in offsets] == [i * bs for i in range(count)], offsets
    text = tl.run_iospan("incidents", "--db", db, "show", "1", check=True).stdout
    assert re.search(r"^\s*[\d.]+ ms\s+read\s+%d\s+blkreader\s.*%s$"
                     % (reader.pid, re.escape(path)), text, re.M), text
    assert re.search(r"stages: q2d [\d.]+ ms, d2c [\d.]+ ms|stages: d2c [\d.]+ ms", text), \
        text
    # Stalls: the sched_switch program was attached when the incident opened.
    inc = incidents(db, "list")["incidents"][0]
    stalls = [x for x in doc["stalls"] if x["pid"] == reader.pid]
    assert stalls and {x["phase"] for x in stalls} == {"capture"}, doc["stalls"]
    assert all(x["time"] >= inc["start"] - 0.001 for x in stalls), (stalls, inc)
    assert all(100e3 <= x["wait_us"] <= max(took) * 1e6 for x in stalls), (stalls, took)
    # The reads after the trigger's sample, each a stall (one row per sample and stack).
    after = [t0 for t0, r in zip(took, mine) if r["time"] > inc["start"]]
    assert sum(x["count"] for x in stalls) >= len(after) - 1, (stalls, mine, inc)


def test_watch_under_sanitizers(tmp_path):
    """The ASan + UBSan build watches a disk while incidents open and close, keeping
    every request as slow (--capture-threshold 1us: the lists at their caps) with stalls
    attached and detached: it stops cleanly on SIGINT with no sanitizer report (memory
    errors, undefined behaviour, leaks). top's delta reads once passed NULL to memcpy
    when there was nothing to copy."""
    tl.require_root("creates a tmpfs-backed loop device, loads BPF")
    db = str(tmp_path / "asan.db")
    with tl.tmpfs(300) as mnt, tl.loop_device(256, backing_dir=mnt) as dev:
        tl.fio(["--name=fill", "--filename=" + dev, "--bs=1M", "--size=128M", "--rw=write"])
        # Sampling starts once the collectors are loaded.
        with tl.under_sanitizers(["watch", "-d", dev, "--db", db, "--interval", "0.2",
                                  "--pre", "1", "--capture", "1", "--cooldown", "0",
                                  "--max-per-hour", "0", "--iops", "1000", "--for", "1",
                                  "--capture-threshold", "1us", *NO_IOSTAT_RULES],
                                 tmp_path / "watch.err", " start: "):
            for _ in range(2):
                tl.fio(["--name=b", "--filename=" + dev, "--bs=4k", "--size=128M",
                        "--rw=randread", "--direct=1", "--rate_iops=3000", "--time_based",
                        "--runtime=1.5"])
                time.sleep(2)
    err = (tmp_path / "watch.err").read_text()
    found = incidents(db, "list")["incidents"]
    assert found and all(i["rule"] == "iops" for i in found), (found, err[-2000:])
    doc = incidents(db, "show", str(found[0]["id"]))
    assert doc["slow_requests"] and all(json.loads(r["stages"])["detail"] == "block"
                                        for r in doc["slow_requests"]), doc["slow_requests"][:3]


def perf_event_fds(pid):
    """How many perf events process @pid holds: one a classic tracepoint (or kprobe)
    it attached a program to; raw tracepoints and tp_btf programs hold none."""
    fds = "/proc/%d/fd" % pid
    n = 0
    for fd in os.listdir(fds):
        try:
            n += os.readlink(os.path.join(fds, fd)) == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n


@pytest.mark.parametrize("hooks", [None, "none", "per-call", "raw"])
def test_syscall_hooks(tmp_path, hooks):
    """--syscall-hooks: none (the default) leaves top's collector without syscalls (its
    FS bytes from the page cache, in whole pages) and trace's (loaded by --detail full)
    at the raw pair; raw follows every syscall at the sys_enter/sys_exit pair, no perf
    event; per-call follows each syscall at its classic tracepoint, a perf event each
    way (top's collector follows 16 syscalls: 32 of them, and trace's its own at
    --detail full). Every way the collectors count a process's file reads: a reader's
    FS bytes in the incident are what it read (ground truth: its own count; its reads
    are direct, which top's collector counts at iomap's hooks without syscalls)."""
    tl.require_root("creates a loop device and a file system")
    db = str(tmp_path / "incidents.db")
    with tl.scratch_fs("ext4", 256) as fs:
        path = burst_file(fs)
        extra = ("--syscall-hooks", hooks) if hooks else ()
        w = Watcher(db, fs.dev, "--pre", "3", "--capture", "2", "--cooldown", "0",
                    "--detail", "full", "--capture-threshold", "1s", *extra, *READ_RULE)
        try:
            w.wait_for(r" info: collector trace loaded")
            events = perf_event_fds(w.proc.pid)
            reader = subprocess.Popen([sys.executable, "-c", READER, path,
                                       str(60 * 2**20), "2"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
            out, _ = reader.communicate("go\n", timeout=30)
            read_bytes = int(out)
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    if hooks != "per-call":
        assert events == 0, events
    else:
        # At least top's 16 syscalls, each way (and trace's 13 where they attach).
        assert events >= 2 * 16, events
    doc = incidents(db, "show", "1")
    assert doc["fs_bytes"] == ("syscalls" if hooks in ("raw", "per-call") else "pages"), doc
    text = tl.run_iospan("incidents", "--db", db, "show", "1", check=True).stdout
    assert ("FS bytes in whole pages" in text) == (doc["fs_bytes"] == "pages"), text
    mine = [p for p in doc["processes"] if p["pid"] == reader.pid]
    counted = sum(p["fs_read_bytes"] for p in mine)
    assert abs(counted - read_bytes) <= 0.01 * read_bytes, (counted, read_bytes)


@pytest.mark.parametrize("extra", [(), ("--capture-threshold", "50ms"),
                                   ("--slow-request", "1s"),
                                   ("--detail", "full", "--capture-threshold", "0")])
def test_trace_collector_only_when_asked(disk, tmp_path, extra):
    """By default, whatever the thresholds (block detail: top's collector times slow
    requests), and at --detail full without any threshold, trace's collector is not
    loaded, said as info, not as an error: with no incident open a watcher must cost no
    more than biolatency, and trace's programs beside top's cost more
    (bench/README.md). With --detail full and --capture-threshold D (the default
    100ms) or --slow-request alone, it is loaded."""
    p = tl.run_iospan("watch", "--db", str(tmp_path / "t.db"), "-d", disk,
                      "--duration", "0.5", "--interval", "0.1", *extra, *READ_RULE)
    assert p.returncode == 0, p.stderr
    assert re.search(r" info: collector trace off by the options\n", p.stderr), p.stderr
    assert " info: collector top loaded" in p.stderr and " error: " not in p.stderr, p.stderr
    for asked in (("--detail", "full"), ("--detail", "full", "--capture-threshold", "50ms"),
                  ("--detail", "full", "--capture-threshold", "0", "--slow-request", "1s")):
        p = tl.run_iospan("watch", "--db", str(tmp_path / "t.db"), "-d", disk,
                          "--duration", "0.5", "--interval", "0.1", *asked, *READ_RULE)
        assert p.returncode == 0, p.stderr
        assert " info: collector trace loaded\n" in p.stderr, (asked, p.stderr)


def test_incident_says_what_top_lost(tmp_path):
    """What top's attribution lost or could not tell during an incident is stored with
    it and shown: with IOSPAN_FAULT making top's completion program skip one run in five
    (as the kernel sometimes does, iospan-top(8)), the requests found completed unseen
    put their bytes on the unattributed row, and the incident's dropped rows and its
    text say how many and how many bytes (they were only in the metrics before)."""
    tl.require_root("creates a loop device and a file system")
    db = str(tmp_path / "incidents.db")
    env = dict(os.environ, IOSPAN_FAULT="skip_complete")
    with tl.scratch_fs("ext4", 256) as fs:
        path = burst_file(fs)
        w = Watcher(db, fs.dev, "--pre", "2", "--capture", "2", "--cooldown", "0",
                    *READ_RULE, env=env)
        try:
            reader = subprocess.Popen([sys.executable, "-c", READER, path,
                                       str(60 * 2**20), "2"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
            reader.communicate("go\n", timeout=30)
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    doc = incidents(db, "show", "1")
    lost = {}
    for d in doc["dropped"]:
        lost[d["what"]] = lost.get(d["what"], 0) + d["count"]
    # One run in five skipped: a 2 s burst of 64 KiB reads has hundreds of requests.
    assert lost.get("completions_unseen", 0) > 0, doc["dropped"]
    assert lost.get("completion_unseen_bytes", 0) > 0, lost
    unattributed = sum(p["disk_read_bytes"] for p in doc["processes"] if p["pid"] == 0)
    assert unattributed >= lost["completion_unseen_bytes"], (unattributed, lost)
    text = tl.run_iospan("incidents", "--db", db, "show", "1", check=True).stdout
    assert re.search(r"^lost or unattributed \(iospan-incidents\(8\)\):.* completions_unseen "
                     r"%d\b" % lost["completions_unseen"], text, re.M), text


def test_schema_1_database_is_migrated(disk, tmp_path):
    """A database of schema 1 (stalls without count, no dropped table; incidents without
    fs_bytes): incidents reads it as it is (how FS bytes were counted: unknown); the next
    watcher brings it to the current schema (3: files with their generation, a threads
    table, incidents' fs_bytes) and keeps its incidents."""
    db = str(tmp_path / "old.db")
    p = tl.run_iospan("watch", "--db", db, "-d", disk, "--no-bpf", "--duration", "0.3",
                      "--interval", "0.1")
    assert p.returncode == 0, p.stderr
    con = sqlite3.connect(db)
    now = int(time.time())  # an old incident would be pruned by --max-age
    con.executescript("""
        DROP TABLE dropped;
        DROP TABLE threads;
        ALTER TABLE files DROP COLUMN generation;
        ALTER TABLE stalls DROP COLUMN count;
        ALTER TABLE incidents DROP COLUMN fs_bytes;
        UPDATE meta SET value = '1' WHERE key = 'schema_version';
        INSERT INTO incidents (id, start_time, end_time, disk, dev, rule, value, threshold,
            held_values, state, end_reason, pre_s, capture_s)
            VALUES (1, NOW, NOW + 1, 'loop9', '7:9', 'util', 95, 90, '[95,95]',
                    'complete', 'capture ended', 60, 40);
        INSERT INTO stalls (incident_id, time, phase, pid, tid, comm, wait_us, stack)
            VALUES (1, NOW + 0.5, 'capture', 42, 42, 'old', 150000.0, '["io_schedule+0x1"]');
    """.replace("NOW", str(now)))
    con.commit()
    con.close()
    doc = incidents(db, "show", "1")
    assert doc["dropped"] == [] and doc["stalls"][0]["comm"] == "old", doc
    assert doc["fs_bytes"] is None, doc
    assert doc["threads"] == [] and doc["busiest_threads"] == [], doc
    assert "count" not in doc["stalls"][0], doc["stalls"]
    text = tl.run_iospan("incidents", "--db", db, "show", "1", check=True).stdout
    assert re.search(r"^\s+150\.00 ms\s+42\s+42 old .*\n\s+stack: io_schedule\+0x1$", text,
                     re.M), text
    p = tl.run_iospan("watch", "--db", db, "-d", disk, "--no-bpf", "--duration", "0.3",
                      "--interval", "0.1")
    assert p.returncode == 0, p.stderr
    con = sqlite3.connect(db)
    try:
        cols = [r[1] for r in con.execute("PRAGMA table_info(stalls)")]
        assert "count" in cols, cols
        assert con.execute("SELECT count(*) FROM dropped").fetchone() == (0,)
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                           ).fetchone() == ("4",)
        assert "generation" in [r[1] for r in con.execute("PRAGMA table_info(files)")]
        assert con.execute("SELECT fs_bytes FROM incidents").fetchall() == [(None,)]
        assert con.execute("SELECT count(*) FROM threads").fetchone() == (0,)
        assert con.execute("SELECT comm, count FROM stalls").fetchall() == [("old", None)]
    finally:
        con.close()
    assert incidents(db, "show", "1")["stalls"][0]["count"] is None


WRITER = r"""
import os, sys
with open(sys.argv[1], "wb") as f:
    for _ in range(int(sys.argv[2])):
        f.write(b"w" * 1048576)
print(os.getpid(), flush=True)
"""


def test_writeback_is_credited_to_the_writer(tmp_path):
    """A process that only dirties pages (no fsync; it has exited when they are written):
    the incident the writeback opens names it first, its writeback credited to it, and
    its file first."""
    tl.require_root("creates a loop device and a file system")
    db = str(tmp_path / "incidents.db")
    with tl.scratch_fs("ext4", 256) as fs:
        path = os.path.join(fs.mnt, "dirty.data")
        w = Watcher(db, fs.dev, "--pre", "2", "--capture", "1", "--cooldown", "0", "--for",
                    "1", "--write-mbps", "20", "--read-mbps", "0", "--util", "0", "--await",
                    "0")
        try:
            exe = tmp_path / "dirtywriter"
            exe.symlink_to("/usr/bin/python3")
            out = subprocess.run([str(exe), "-c", WRITER, path, "64"], capture_output=True,
                                 text=True, check=True).stdout
            pid = int(out)
            subprocess.run(["sync", "-f", path], check=True)
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    inc = incidents(db, "list")["incidents"][0]
    assert inc["rule"] == "write-mbps", inc
    assert inc["top_process"] == "dirtywriter (%d)" % pid, inc
    assert inc["top_file"] == path, inc
    doc = incidents(db, "show", "1")
    top = doc["busiest_processes"][0]
    assert top["pid"] == pid, doc["busiest_processes"]
    # Its 64 MiB, written by others for it (the flusher, sync): DISK writes credited to it
    # and counted apart as writeback, in the rows of the incident (the pre-trigger window
    # holds the start of the writeback).
    mine = [p for p in doc["processes"] if p["pid"] == pid]
    written = sum(p["disk_write_bytes"] for p in mine)
    writeback = sum(p["writeback_bytes"] for p in mine)
    assert 0.9 * 64 * 2**20 <= writeback <= written <= 1.05 * 64 * 2**20, (written, writeback)


# Two threads named "flusher" and "compactor" (as a database's), each writing its own
# file with O_DIRECT: 8 MiB and 24 MiB, at once. Prints the pid and the two tids.
TWO_THREADS = r"""
import ctypes, json, mmap, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
d = sys.argv[1]
tids = {}
go = threading.Event()

def work(name, mib):
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
    tids[name] = threading.get_native_id()
    go.wait()
    buf = mmap.mmap(-1, 1 << 20)
    fd = os.open(os.path.join(d, name + ".dat"), os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
    for i in range(mib):
        assert os.pwrite(fd, buf, i << 20) == 1 << 20
    os.close(fd)

ts = [threading.Thread(target=work, args=a) for a in (("flusher", 8), ("compactor", 24))]
for t in ts:
    t.start()
sys.stdin.readline()
go.set()
for t in ts:
    t.join()
print(json.dumps({"pid": os.getpid(), "tids": tids}))
"""


def test_busiest_threads_of_a_process(tmp_path):
    """A process whose two threads write two files: the incident keeps each thread
    apart, named as it named itself, with its own bytes (its process row their sum)."""
    tl.require_root("creates a loop device and a file system")
    db = str(tmp_path / "incidents.db")
    with tl.scratch_fs("ext4", 256) as fs:
        w = Watcher(db, fs.dev, "--pre", "3", "--capture", "2", "--cooldown", "0",
                    "--for", "1", "--write-mbps", "5", "--read-mbps", "0", "--util", "0",
                    "--await", "0")
        try:
            w.wait_for(r" info: collector top loaded")
            p = subprocess.Popen(["/usr/bin/python3", "-c", TWO_THREADS, fs.mnt],
                                 stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            out, _ = p.communicate("go\n", timeout=60)
            assert p.returncode == 0
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    done = json.loads(out)
    doc = incidents(db, "show", "1")
    rows = [t for t in doc["threads"] if t["pid"] == done["pid"]]
    by_tid = {}
    for t in rows:
        by_tid.setdefault(t["tid"], [set(), 0])
        by_tid[t["tid"]][0].add(t["comm"])
        by_tid[t["tid"]][1] += t["disk_write_bytes"]
    want = {done["tids"]["flusher"]: [{"flusher"}, 8 << 20],
            done["tids"]["compactor"]: [{"compactor"}, 24 << 20]}
    assert by_tid == want, (by_tid, want)
    procs = sum(p["disk_write_bytes"] for p in doc["processes"] if p["pid"] == done["pid"])
    assert procs == 32 << 20, doc["processes"]
    busiest = [(t["tid"], t["comm"]) for t in doc["busiest_threads"] if t["pid"] == done["pid"]]
    assert set(busiest) <= {(done["tids"]["flusher"], "flusher"),
                            (done["tids"]["compactor"], "compactor")}, busiest
    text = tl.run_iospan("incidents", "--db", db, "show", "1", check=True).stdout
    assert "busiest threads of the capture" in text, text
