# SPDX-License-Identifier: GPL-2.0
"""The kernel's block tracepoints read through a tracefs instance: blktrace's records without debugfs."""
import contextlib
import os
import re
import subprocess
import sys
import time

from .core import _mountinfo, _register, _release  # noqa: F401


def _tracefs():
    """Where tracefs is mounted; mounted at /sys/kernel/tracing first if it is nowhere (a
    fresh machine has it only once something mounted it, as iospan does)."""
    for mnt, fstype, _ in _mountinfo():
        if fstype == "tracefs":
            return mnt
    subprocess.run(["mount", "-t", "tracefs", "tracefs", "/sys/kernel/tracing"], check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for mnt, fstype, _ in _mountinfo():
        if fstype == "tracefs":
            return mnt
    raise RuntimeError("tracefs is not mounted and could not be mounted")


_BLOCK_EVENT = re.compile(
    r"\s(\d+\.\d+): (block_\w+): (\d+),(\d+) (\S+) (?:\d+ )?\(.*?\) (\d+) \+ (\d+)"
    r"|\s(\d+\.\d+): (block_getrq|block_bio_queue): (\d+),(\d+) (\S+) (\d+) \+ (\d+)")


class BlockEvents:
    """Block tracepoint events of one disk, read through a private tracefs instance:
    ground truth that does not go through BPF. Each event is (name, ts_ns, sector,
    sectors, rwbs); times are CLOCK_MONOTONIC, printed to the microsecond (averages of
    differences over many requests stay exact: the rounding phase is uniform)."""

    def __init__(self, inst):
        self.inst = inst

    def read(self):
        out = []
        with open(os.path.join(self.inst, "trace")) as f:
            for line in f:
                m = _BLOCK_EVENT.search(line)
                if not m:
                    continue
                g = m.groups()
                if g[0] is not None:
                    ts, name, rwbs, sector, n = g[0], g[1], g[4], g[5], g[6]
                else:
                    ts, name, rwbs, sector, n = g[7], g[8], g[11], g[12], g[13]
                out.append((name, int(round(float(ts) * 1e6)) * 1000, int(sector), int(n),
                            rwbs))
        return out


@contextlib.contextmanager
def block_events(devnum, events=("block_getrq", "block_rq_insert", "block_rq_issue",
                                 "block_rq_complete"), buffer_kb=65536):
    """Records @events of disk @devnum ("MAJ:MIN") in a tracefs instance of its own
    (other users of tracefs are not disturbed); yields a BlockEvents."""
    inst = os.path.join(_tracefs(), "instances", "iospan-test-%d-%d" % (os.getpid(),
                                                                      time.monotonic_ns()))
    maj, mn = (int(x) for x in devnum.split(":"))
    os.mkdir(inst)

    def teardown(path=inst):
        for ev in events:
            try:
                with open(os.path.join(path, "events", "block", ev, "enable"), "w") as f:
                    f.write("0")
            except OSError:
                pass
        for _ in range(50):
            try:
                os.rmdir(path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)

    tok = _register("tracefs-instance", inst, teardown)
    try:
        def put(rel, val):
            with open(os.path.join(inst, rel), "w") as f:
                f.write(val)
        put("trace_clock", "mono")
        put("buffer_size_kb", str(buffer_kb))
        for ev in events:
            put("events/block/%s/filter" % ev, "dev == %d" % ((maj << 20) | mn))
            put("events/block/%s/enable" % ev, "1")
        yield BlockEvents(inst)
    finally:
        _release(tok)


def request_lifecycles(events):
    """Per request of single-bio requests (a disk with merges off: nomerges=2), from
    BlockEvents.read() with block_bio_queue, block_getrq, block_rq_issue and
    block_rq_complete (and block_rq_insert where the disk has a scheduler): a list of
    dicts {"sector", "bytes", "rwbs", "Q", "G", "I", "D", "C"} (ns; "I" None without an
    insert), blktrace's letters. Events are paired by sector and size, each to the
    oldest request of that key still without it (two requests for one sector may be in
    flight). Requests missing an event are left out."""
    open_rqs, done = {}, []
    for name, ts, sector, n, rwbs in events:
        key = (sector, n)
        if name == "block_bio_queue":
            open_rqs.setdefault(key, []).append(
                {"sector": sector, "bytes": n * 512, "rwbs": rwbs, "Q": ts, "G": None,
                 "I": None, "D": None})
            continue
        letter = {"block_getrq": "G", "block_rq_insert": "I", "block_rq_issue": "D",
                  "block_rq_complete": "C"}.get(name)
        pending = [r for r in open_rqs.get(key, ()) if r.get(letter) is None]
        if not letter or not pending:
            continue
        r = pending[0]
        if letter != "C":
            r[letter] = ts
            continue
        open_rqs[key].remove(r)
        if r["G"] is not None and r["D"] is not None:
            r["C"] = ts
            done.append(r)
    return done


def insert_issue_complete(events):
    """Per request, from BlockEvents.read() of a disk with an I/O scheduler: a list of
    (getrq_ns, insert_ns, issue_ns, complete_ns), paired by sector and size in order.
    Requests missing an event are left out."""
    open_rqs, done = {}, []
    for name, ts, sector, n, _ in events:
        key = (sector, n)
        if name == "block_getrq":
            open_rqs[key] = [ts, None, None]
        elif name == "block_rq_insert" and key in open_rqs:
            open_rqs[key][1] = ts
        elif name == "block_rq_issue" and key in open_rqs and open_rqs[key][1] is not None:
            open_rqs[key][2] = ts
        elif name == "block_rq_complete" and key in open_rqs:
            g, i, d = open_rqs.pop(key)
            if i is not None and d is not None:
                done.append((g, i, d, ts))
    return done
