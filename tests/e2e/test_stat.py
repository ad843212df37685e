# SPDX-License-Identifier: GPL-2.0
"""`iospan stat` on live devices, checked against the kernel's own accounts
(/proc/diskstats read by the test) and against sysstat's iostat run side by side.
Tests that create devices need root; the rest run anywhere."""
import json
import os
import signal
import subprocess
import time

import pytest

import iospan_testlib as tl


def parse_lines(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def stat_json(*args, timeout=60):
    p = tl.run_iospan("stat", "--json", *args, timeout=timeout)
    assert p.returncode == 0, "exit %d\nstdout: %s\nstderr: %s" % (p.returncode, p.stdout, p.stderr)
    return parse_lines(p.stdout)


def only_device(report, name):
    devs = [d for d in report["devices"] if d["disk"] == name]
    assert len(devs) == 1, (name, report)
    return devs[0]


def close(a, b, rel, abs_):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


# --------------------------------------------------------------------------- no root


def a_whole_disk():
    """A whole disk that has a /dev node (loop devices always exist here)."""
    stats = tl.read_diskstats()
    for name in sorted(stats, key=lambda n: (not n.startswith(("vd", "sd", "nvme")), n)):
        if os.path.exists("/sys/block/%s" % name) and os.path.exists("/dev/%s" % name):
            return name, "%d:%d" % (stats[name]["major"], stats[name]["minor"])
    pytest.skip("no block device with a /dev node")


def test_disk_spellings_select_the_same_device():
    name, devnum = a_whole_disk()
    for spec in (name, "/dev/" + name, devnum):
        reports = stat_json("-y", "-d", spec, "0.2", "1")
        assert len(reports) == 1, (spec, reports)
        r = reports[0]
        assert r["since_boot"] is False and abs(r["interval_s"] - 0.2) < 0.05, r
        assert [(d["disk"], d["dev"]) for d in r["devices"]] == [(name, devnum)], spec


def test_one_report_since_boot_without_interval():
    name, devnum = a_whole_disk()
    before = tl.read_diskstats()[name]
    reports = stat_json("-d", name)
    after = tl.read_diskstats()[name]
    assert len(reports) == 1 and reports[0]["since_boot"] is True
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    r = reports[0]
    assert abs(r["interval_s"] - uptime) < 5, (r["interval_s"], uptime)
    d = only_device(r, name)
    ios = d["r_s"] * r["interval_s"]
    slack = 1 + 0.005 * r["interval_s"]  # r_s is printed with 2 decimals
    assert before["rd_ios"] - slack <= ios <= after["rd_ios"] + slack


@pytest.mark.parametrize("json_mode", [True, False])
def test_sigint_prints_reports_so_far_and_exits_0(json_mode):
    args = ["stat"] + (["--json"] if json_mode else []) + ["1"]
    p = tl.popen_iospan(*args)
    try:
        time.sleep(2.5)  # since-boot report at 0 s, interval reports at 1 s and 2 s
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, (p.returncode, out, err)
    assert err == "", err
    if json_mode:
        reports = parse_lines(out)  # every line complete and valid
        assert len(reports) >= 2, out
        assert reports[0]["since_boot"] is True
        assert all(r["since_boot"] is False for r in reports[1:])
    else:
        assert out.strip(), "no reports printed"
        assert out.endswith("\n")


def test_sigterm_also_ends_cleanly():
    p = tl.popen_iospan("stat", "--json", "-y", "0.5")
    try:
        time.sleep(1.3)
        p.terminate()
        out, err = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, (p.returncode, out, err)
    assert len(parse_lines(out)) >= 2


def test_omit_idle_lists_only_busy_devices():
    for r in stat_json("-y", "-z", "0.3", "2"):
        for d in r["devices"]:
            assert d["r_s"] + d["w_s"] + d["d_s"] + d["f_s"] > 0, d


# --------------------------------------------------------------------------- root


def test_idle_device_and_omit_idle():
    tl.require_root("creates a loop device")
    with tl.loop_device(64) as dev:
        name = os.path.basename(dev)
        r = stat_json("-y", "-d", dev, "0.3", "1")[0]
        d = only_device(r, name)
        assert d["r_s"] == 0 and d["w_s"] == 0 and d["util"] == 0 and d["in_flight"] == 0
        assert stat_json("-y", "-z", "-d", dev, "0.3", "1")[0]["devices"] == []


def test_partitions_live():
    tl.require_root("creates a partitioned loop device")
    with tl.loop_device(64, partitions=[16, 16]) as dev:
        name = os.path.basename(dev)
        parts = [name + "p1", name + "p2"]
        # Like iostat, stat may leave out devices that never did any I/O: read from each.
        for part in parts:
            tl.dd("/dev/null", if_="/dev/" + part, bs="64k", count=4, iflag="direct")
        with_p = {d["disk"]: d for d in stat_json("-y", "-p", "0.2", "1")[0]["devices"]}
        assert name in with_p and all(p in with_p for p in parts), sorted(with_p)
        assert with_p[parts[0]]["dev"] == tl.devnum_of(parts[0])
        without = {d["disk"] for d in stat_json("-y", "0.2", "1")[0]["devices"]}
        assert name in without and not any(p in without for p in parts)
        for spec in (parts[0], "/dev/" + parts[0], tl.devnum_of(parts[0])):
            r = stat_json("-y", "-d", spec, "0.2", "1")[0]
            assert [d["disk"] for d in r["devices"]] == [parts[0]], spec


def test_totals_match_diskstats():
    """A finite workload (reads, writes with fsync -> flushes, a discard) runs entirely
    inside iospan's reporting window, on a raw loop device nothing else touches: the
    sum over the reports of rate * interval must equal the diskstats deltas the test
    reads itself before and after."""
    tl.require_root("creates a loop device")
    with tl.loop_device(256, direct_io=True) as dev:
        name = os.path.basename(dev)
        d0 = tl.read_diskstats()
        p = tl.popen_iospan("stat", "-y", "--json", "-d", dev, "1", "5")
        try:
            time.sleep(0.6)
            tl.fio(["--filename=%s" % dev, "--bs=4k", "--direct=1", "--ioengine=psync",
                    "--size=128M", "--time_based", "--runtime=2",
                    "--name=r", "--rw=randread", "--rate_iops=400",
                    "--name=w", "--rw=randwrite", "--rate_iops=150", "--fsync=16"])
            subprocess.run(["blkdiscard", "-o", str(200 << 20), "-l", str(8 << 20), dev],
                           check=True)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        d1 = tl.read_diskstats()
        assert p.returncode == 0, (out, err)
        reports = parse_lines(out)
        assert len(reports) == 5
        delta = tl.diskstats_delta(d0, d1, name)
        assert delta["rd_ios"] > 500 and delta["wr_ios"] > 200 and delta["fl_ios"] > 10
        assert delta["dc_ios"] >= 1

        def total(key, scale=1.0):
            """sum over the reports of value * interval_s * scale"""
            return sum(only_device(r, name)[key] * r["interval_s"] * scale for r in reports)

        def weighted(key, weight_key):
            """sum of await * ops (= ticks)"""
            return sum(only_device(r, name)[key] * only_device(r, name)[weight_key] *
                       r["interval_s"] for r in reports)

        n = len(reports)
        # Rates are printed with 2 decimals: at most 0.005 * interval off per report.
        # The reports' intervals are contiguous, so they cover exactly the window.
        checks = [
            ("r_s * interval", total("r_s"), delta["rd_ios"], 0.5 + n * 0.01),
            ("w_s * interval", total("w_s"), delta["wr_ios"], 0.5 + n * 0.01),
            ("d_s * interval", total("d_s"), delta["dc_ios"], 0.5 + n * 0.01),
            ("f_s * interval", total("f_s"), delta["fl_ios"], 0.5 + n * 0.01),
            ("rkB_s * interval * 2", total("rkB_s", 2), delta["rd_sectors"], 1 + n * 0.02),
            ("wkB_s * interval * 2", total("wkB_s", 2), delta["wr_sectors"], 1 + n * 0.02),
            ("dkB_s * interval * 2", total("dkB_s", 2), delta["dc_sectors"], 1 + n * 0.02),
            ("rrqm_s * interval", total("rrqm_s"), delta["rd_merges"], 0.5 + n * 0.01),
            ("wrqm_s * interval", total("wrqm_s"), delta["wr_merges"], 0.5 + n * 0.01),
            # aqu-sz * interval_ms = time_in_queue; util% / 100 * interval_ms = io_ticks
            ("aqu_sz * interval_ms", total("aqu_sz", 1000), delta["time_in_queue"],
             2 + 0.01 * delta["time_in_queue"]),
            ("util * interval_ms / 100", total("util", 10), delta["io_ticks"],
             2 + 0.01 * delta["io_ticks"]),
            # await * ops = ticks (await is rounded: allow 1% + 2 ms)
            ("r_await * r_s * interval", weighted("r_await", "r_s"), delta["rd_ticks"],
             2 + 0.01 * delta["rd_ticks"]),
            ("w_await * w_s * interval", weighted("w_await", "w_s"), delta["wr_ticks"],
             2 + 0.01 * delta["wr_ticks"]),
            ("f_await * f_s * interval", weighted("f_await", "f_s"), delta["fl_ticks"],
             2 + 0.01 * delta["fl_ticks"]),
        ]
        # io_ticks of a long request is accounted when it completes, so one interval can
        # exceed 100% and is capped: then the util total can only be a lower bound.
        capped = any(only_device(r, name)["util"] >= 99.99 for r in reports)
        # interval_s is printed with 3 decimals: rate * printed interval may be off by
        # another 0.0005 / interval of the total.
        checks = [(what, got, want, tol + 0.0006 * want) for what, got, want, tol in checks]
        bad = ["%s = %.2f, diskstats delta %d (tolerance %.2f)" % (what, got, want, tol)
               for what, got, want, tol in checks if abs(got - want) > tol
               and not (what.startswith("util") and capped and got <= want + tol)]
        assert not bad, "\n".join(bad)
        for r in reports:
            d = only_device(r, name)
            assert 0 <= d["util"] <= 100 and d["in_flight"] >= 0


IOSTAT_KEYS = {  # iospan key -> iostat -o JSON key
    "r_s": "r/s", "w_s": "w/s", "r_await": "r_await", "w_await": "w_await",
    "aqu_sz": "aqu-sz", "util": "util",
}
# Bounds for the whole 5 s window (tight: both see nearly the same I/Os) and for each
# 1 s interval (looser: the tools sample a few ms apart): (relative, absolute). On top
# of these, boundary_shift() allows what the sampling offset can move between intervals.
WINDOW_TOL = {"r_s": (0.05, 3), "w_s": (0.05, 3), "r_await": (0.05, 0.01),
              "w_await": (0.05, 0.01), "aqu_sz": (0.05, 0.01), "util": (0.05, 0.5)}
INTERVAL_TOL = {"r_s": (0.10, 8), "w_s": (0.10, 5), "r_await": (0.25, 0.03),
                "w_await": (0.25, 0.03), "aqu_sz": (0.25, 0.02), "util": (0.15, 1.0)}


def boundary_shift(key, lat_max_ms, ops):
    """What the two tools' sampling offset (under a few ms; fio waits 3.3 ms between
    I/Os at its rate) can move across one interval boundary: at most one in-flight
    request per fio job (psync, one job reading and one writing), so at most that job's
    worst latency (fio's own max, which bounds the kernel's ticks) of await ticks and
    of busy time. A slow host-disk request completing between the two samples is in one
    tool's interval and in the next one of the other. @ops: the interval's requests."""
    r, w = lat_max_ms["r"], lat_max_ms["w"]
    if key == "r_await":
        return r / max(ops["r_s"], 1)
    if key == "w_await":
        return w / max(ops["w_s"], 1)
    if key == "aqu_sz":
        return (r + w) / 1000.0 / ops["secs"]
    if key == "util":
        return (r + w) / 10.0 / ops["secs"]
    return 0.0


def test_matches_iostat_side_by_side():
    tl.require_root("creates a loop device")
    # fio on the raw device, not on a file system: a journal commit is a burst of slow
    # writes, and a burst in the few ms between the two tools' samples would be in one
    # tool's interval only.
    with tl.loop_device(256, direct_io=True) as dev:
        name = os.path.basename(dev)
        # Lay out the read region first, so reads go to written blocks.
        tl.fio(["--filename=%s" % dev, "--name=fill", "--bs=1M", "--size=64M", "--rw=write",
                "--direct=1", "--end_fsync=1"])
        load = subprocess.Popen(
            ["fio", "--filename=%s" % dev, "--bs=4k", "--direct=1", "--ioengine=psync",
             "--size=64M", "--time_based", "--runtime=9", "--output-format=json",
             "--name=r", "--offset=0", "--rw=randread", "--rate_iops=300",
             "--name=w", "--offset=128M", "--rw=randwrite", "--rate_iops=100"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs = []
        try:
            time.sleep(1.5)  # let fio reach its rate
            env = dict(os.environ, LC_ALL="C")
            procs = tl.popen_together(
                [["iostat", "-dxy", "-o", "JSON", name, "1", "5"],
                 [tl.iospan_bin(), "stat", "-y", "-d", dev, "--json", "1", "5"]],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            iostat, ours = procs
            i_out, i_err = iostat.communicate(timeout=30)
            o_out, o_err = ours.communicate(timeout=30)
            f_out, f_err = load.communicate(timeout=30)
        finally:
            for proc in [load] + procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert iostat.returncode == 0, i_err
        assert ours.returncode == 0, (o_out, o_err)
        assert load.returncode == 0, f_err
        lat_max_ms, fio_iops = {}, {}
        for job in tl.fio_json(f_out)["jobs"]:
            op = "read" if job["jobname"] == "r" else "write"
            lat_max_ms[job["jobname"]] = job[op]["lat_ns"]["max"] / 1e6
            fio_iops[job["jobname"]] = job[op]["iops"]

        stats = json.loads(i_out)["sysstat"]["hosts"][0]["statistics"]
        theirs = []
        for s in stats:
            disks = [d for d in s["disk"] if d["disk_device"] == name]
            assert len(disks) == 1, s
            theirs.append(disks[0])
        mine = [only_device(r, name) for r in parse_lines(o_out)]
        assert len(theirs) == 5 and len(mine) == 5, (len(theirs), len(mine))

        # The workload really ran, at the rate fio itself reports over its 9 s (a host
        # whose disk answers in over 3 ms cannot reach 300 reads/s on one thread: 230 in
        # CI), so the comparison below is not between two idle disks.
        mean_r = sum(m["r_s"] for m in mine) / 5
        mean_w = sum(m["w_s"] for m in mine) / 5
        assert fio_iops["r"] >= 100 and fio_iops["w"] >= 30, fio_iops
        assert close(mean_r, fio_iops["r"], 0.15, 0) and close(mean_w, fio_iops["w"], 0.15, 0), \
            (mean_r, mean_w, fio_iops)

        def window(rows, key):
            if key.endswith("_await"):  # I/O-weighted: total ticks / total ops
                ops = "r_s" if key == "r_await" else "w_s"
                if rows is theirs:
                    ops = IOSTAT_KEYS[ops]
                    key = IOSTAT_KEYS[key]
                n = sum(r[ops] for r in rows)
                return sum(r[key] * r[ops] for r in rows) / n if n else 0.0
            if rows is theirs:
                key = IOSTAT_KEYS[key]
            return sum(r[key] for r in rows) / len(rows)

        # Shown by pytest when the test fails.
        print("fio's worst latency (ms): read %.3f, write %.3f" % (lat_max_ms["r"],
                                                                   lat_max_ms["w"]))
        for i, (m, t) in enumerate(zip(mine, theirs)):
            print("interval %d: " % (i + 1) + "  ".join(
                "%s %.3f/%.3f" % (k, m[k], t[IOSTAT_KEYS[k]]) for k in IOSTAT_KEYS))
        bad = []
        ops = {"r_s": 5 * mean_r, "w_s": 5 * mean_w, "secs": 5}
        for key, (rel, abs_) in WINDOW_TOL.items():
            a, b = window(mine, key), window(theirs, key)
            # Two boundaries: the window's start and its end.
            if not close(a, b, rel, abs_ + 2 * boundary_shift(key, lat_max_ms, ops)):
                bad.append("5 s window %s: iospan %.3f, iostat %.3f" % (key, a, b))
        for i, (m, t) in enumerate(zip(mine, theirs)):
            ops = {"r_s": m["r_s"], "w_s": m["w_s"], "secs": 1}
            for key, (rel, abs_) in INTERVAL_TOL.items():
                a, b = m[key], t[IOSTAT_KEYS[key]]
                if not close(a, b, rel, abs_ + 2 * boundary_shift(key, lat_max_ms, ops)):
                    bad.append("interval %d %s: iospan %.3f, iostat %.3f" % (i + 1, key, a, b))
        assert not bad, "\n".join(bad)


def test_record_then_replay_is_identical(tmp_path):
    tl.require_root("creates a loop device")
    rec = tmp_path / "live.rec"
    with tl.loop_device(128) as dev:
        name = os.path.basename(dev)
        load = subprocess.Popen(
            ["fio", "--filename=%s" % dev, "--bs=4k", "--direct=1", "--ioengine=psync",
             "--size=64M", "--time_based", "--runtime=4", "--name=rw", "--rw=randrw",
             "--rate_iops=200,100", "--fsync=20"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            live = stat_json("-d", dev, "--record", str(rec), "1", "3")
        finally:
            load.kill()
            load.wait()
    assert len(live) == 3 and live[0]["since_boot"] and not live[1]["since_boot"]
    assert any(only_device(r, name)["r_s"] > 0 for r in live[1:])
    text = rec.read_text()
    first = [l for l in text.splitlines() if l.strip() and not l.startswith("#")][0]
    assert first == "iospan-diskstats 1", first
    assert sum(1 for l in text.splitlines() if l.startswith("snapshot ")) == 3

    def same(a, b):
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)

    replayed = stat_json("-d", dev, "--replay", str(rec))
    assert len(replayed) == len(live)
    for i, (a, b) in enumerate(zip(live, replayed)):
        assert same(a, b), "report %d differs:\nlive:   %s\nreplay: %s" % (i, a, b)
    replayed_y = stat_json("-y", "-d", name, "--replay", str(rec))
    assert len(replayed_y) == 2
    for a, b in zip(live[1:], replayed_y):
        assert same(a, b), "live: %s\nreplay -y: %s" % (a, b)
