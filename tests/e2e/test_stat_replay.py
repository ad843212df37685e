# SPDX-License-Identifier: GPL-2.0
"""`iospan stat --replay` against hand-written recordings (no root needed).

Every expected number below is worked out by hand from tests/fixtures/*.rec with
sysstat's iostat -x formulas:
  rate      = counter delta / interval_s
  kB/s      = sectors delta / 2 / interval_s
  %rqm      = merges / (merges + ios) * 100
  await     = ticks delta / ios delta            (ms; 0 if no ios)
  areq-sz   = sectors delta / 2 / ios delta      (kB; 0 if no ios)
  aqu-sz    = time_in_queue delta / interval_ms
  %util     = io_ticks delta / interval_ms * 100 (capped at 100)
  counters that went backwards: the device was registered again, and the interval
  is computed against zero counters (as sysstat does), the device marked "restarted".
"""
import json
import os

import pytest

import iospan_testlib as tl

FIXTURES = os.path.join(tl.repo_root(), "tests", "fixtures")
TWO = os.path.join(FIXTURES, "two-snapshots.rec")
OLD = os.path.join(FIXTURES, "fields-14-18.rec")
EDGE = os.path.join(FIXTURES, "edge-cases.rec")

TOL = 0.01

DEVICE_KEYS = ("disk", "dev", "r_s", "w_s", "d_s", "f_s", "rkB_s", "wkB_s", "dkB_s",
               "rrqm_s", "wrqm_s", "drqm_s", "rrqm_pct", "wrqm_pct", "drqm_pct",
               "r_await", "w_await", "d_await", "f_await", "rareq_sz", "wareq_sz",
               "dareq_sz", "aqu_sz", "util", "in_flight")
ZERO = {k: 0.0 for k in DEVICE_KEYS if k not in ("disk", "dev")}


def replay(*args, path=TWO):
    """Runs `iospan stat --json --replay PATH ARGS`; returns the list of reports."""
    p = tl.run_iospan("stat", "--json", "--replay", path, *args, timeout=30)
    assert p.returncode == 0, "exit %d\nstdout: %s\nstderr: %s" % (p.returncode, p.stdout, p.stderr)
    assert p.stderr == "", p.stderr
    reports = []
    for line in p.stdout.splitlines():
        assert line.strip(), "blank line in JSON stream"
        reports.append(json.loads(line))  # one object per line
    for r in reports:
        assert set(r) >= {"time", "interval_s", "since_boot", "devices"}, r
        for d in r["devices"]:
            missing = [k for k in DEVICE_KEYS if k not in d]
            assert not missing, "device %s lacks %s" % (d.get("disk"), missing)
    return reports


def devices(report):
    return {d["disk"]: d for d in report["devices"]}


def check(dev, expected):
    """Every key of @expected matches @dev within TOL; keys not given must be 0."""
    want = dict(ZERO)
    want.update(expected)
    bad = []
    for k, v in want.items():
        got = dev[k]
        if isinstance(v, str):
            if got != v:
                bad.append("%s=%r (want %r)" % (k, got, v))
        elif abs(got - v) > TOL:
            bad.append("%s=%r (want %r)" % (k, got, v))
    assert not bad, "%s: %s" % (dev.get("disk"), ", ".join(bad))


# two-snapshots.rec, snapshots at uptime 1000.000 and 1002.000: interval 2 s = 2000 ms.
# loop0 deltas:
#   rd_ios 1600-1000 = 600, rd_merges 300-100 = 200, rd_sectors 89600-80000 = 9600,
#   rd_ticks 6200-5000 = 1200; wr_ios 900-500 = 400, wr_merges 150-50 = 100,
#   wr_sectors 46400-40000 = 6400, wr_ticks 4500-2500 = 2000; in_flight now 3;
#   io_ticks 4500-3000 = 1500; time_in_queue 10900-7600 = 3300;
#   dc_ios 30-10 = 20, dc_merges 5-0 = 5, dc_sectors 10240-2048 = 8192, dc_ticks 45-5 = 40;
#   fl_ios 30-20 = 10, fl_ticks 70-40 = 30.
LOOP0 = {
    "disk": "loop0", "dev": "7:0",
    "r_s": 300.0,        # 600 / 2
    "w_s": 200.0,        # 400 / 2
    "d_s": 10.0,         # 20 / 2
    "f_s": 5.0,          # 10 / 2
    "rkB_s": 2400.0,     # 9600 / 2 / 2
    "wkB_s": 1600.0,     # 6400 / 2 / 2
    "dkB_s": 2048.0,     # 8192 / 2 / 2
    "rrqm_s": 100.0,     # 200 / 2
    "wrqm_s": 50.0,      # 100 / 2
    "drqm_s": 2.5,       # 5 / 2
    "rrqm_pct": 25.0,    # 200 / (200 + 600) * 100
    "wrqm_pct": 20.0,    # 100 / (100 + 400) * 100
    "drqm_pct": 20.0,    # 5 / (5 + 20) * 100
    "r_await": 2.0,      # 1200 / 600
    "w_await": 5.0,      # 2000 / 400
    "d_await": 2.0,      # 40 / 20
    "f_await": 3.0,      # 30 / 10
    "rareq_sz": 8.0,     # 9600 / 2 / 600
    "wareq_sz": 8.0,     # 6400 / 2 / 400
    "dareq_sz": 204.8,   # 8192 / 2 / 20
    "aqu_sz": 1.65,      # 3300 / 2000
    "util": 75.0,        # 1500 / 2000 * 100
    "in_flight": 3,
}
# sdq deltas: rd_ios 50, rd_sectors 400, rd_ticks 25; wr_ios 100, wr_sectors 800,
#   wr_ticks 50; io_ticks 100; time_in_queue 50.
SDQ = {
    "disk": "sdq", "dev": "65:0",
    "r_s": 25.0,         # 50 / 2
    "w_s": 50.0,         # 100 / 2
    "rkB_s": 100.0,      # 400 / 2 / 2
    "wkB_s": 200.0,      # 800 / 2 / 2
    "r_await": 0.5,      # 25 / 50
    "w_await": 0.5,      # 50 / 100
    "rareq_sz": 4.0,     # 400 / 2 / 50
    "wareq_sz": 4.0,     # 800 / 2 / 100
    "aqu_sz": 0.025,     # 50 / 2000
    "util": 5.0,         # 100 / 2000 * 100
}
# sdq1 (a partition, "partition 65 1") deltas: rd_ios 20, rd_sectors 160, rd_ticks 10;
#   io_ticks 20; time_in_queue 10.
SDQ1 = {
    "disk": "sdq1", "dev": "65:1",
    "r_s": 10.0,         # 20 / 2
    "rkB_s": 40.0,       # 160 / 2 / 2
    "r_await": 0.5,      # 10 / 20
    "rareq_sz": 4.0,     # 160 / 2 / 20
    "aqu_sz": 0.005,     # 10 / 2000
    "util": 1.0,         # 20 / 2000 * 100
}
# vdz: identical in both snapshots -> idle, all zero.
VDZ = {"disk": "vdz", "dev": "254:25"}


def test_two_snapshots_exact_values():
    reports = replay("-y")
    assert len(reports) == 1, reports
    r = reports[0]
    assert r["since_boot"] is False
    assert abs(r["interval_s"] - 2.0) < 1e-6     # 1002.000 - 1000.000
    assert abs(r["time"] - 1700000002.0) < 1e-3  # epoch of the later snapshot
    devs = devices(r)
    assert sorted(devs) == ["loop0", "sdq", "vdz"]  # no partition without -p
    check(devs["loop0"], LOOP0)
    check(devs["sdq"], SDQ)
    check(devs["vdz"], VDZ)


def test_first_report_is_since_boot():
    reports = replay()
    assert len(reports) == 2
    boot, second = reports
    assert boot["since_boot"] is True and second["since_boot"] is False
    assert abs(boot["interval_s"] - 1000.0) < 1e-6  # the first snapshot's uptime
    assert abs(boot["time"] - 1700000000.0) < 1e-3
    # loop0's counters since boot over 1000 s = 1,000,000 ms.
    check(devices(boot)["loop0"], {
        "disk": "loop0", "dev": "7:0",
        "r_s": 1.0,          # 1000 / 1000
        "w_s": 0.5,          # 500 / 1000
        "d_s": 0.01,         # 10 / 1000
        "f_s": 0.02,         # 20 / 1000
        "rkB_s": 40.0,       # 80000 / 2 / 1000
        "wkB_s": 20.0,       # 40000 / 2 / 1000
        "dkB_s": 1.024,      # 2048 / 2 / 1000
        "rrqm_s": 0.1,       # 100 / 1000
        "wrqm_s": 0.05,      # 50 / 1000
        "rrqm_pct": 9.0909,  # 100 / (100 + 1000) * 100
        "wrqm_pct": 9.0909,  # 50 / (50 + 500) * 100
        "r_await": 5.0,      # 5000 / 1000
        "w_await": 5.0,      # 2500 / 500
        "d_await": 0.5,      # 5 / 10
        "f_await": 2.0,      # 40 / 20
        "rareq_sz": 40.0,    # 80000 / 2 / 1000
        "wareq_sz": 40.0,    # 40000 / 2 / 500
        "dareq_sz": 102.4,   # 2048 / 2 / 10
        "aqu_sz": 0.0076,    # 7600 / 1000000
        "util": 0.3,         # 3000 / 1000000 * 100
    })
    check(devices(second)["loop0"], LOOP0)


def test_omit_idle():
    devs = devices(replay("-y", "-z")[0])
    assert sorted(devs) == ["loop0", "sdq"]  # vdz did nothing in the interval
    check(devs["loop0"], LOOP0)


def test_partitions():
    devs = devices(replay("-y", "-p")[0])
    assert sorted(devs) == ["loop0", "sdq", "sdq1", "vdz"]
    check(devs["sdq1"], SDQ1)
    check(devs["sdq"], SDQ)
    assert devs["sdq1"].get("partition", True) is True
    assert devs["sdq"].get("partition", False) is False


@pytest.mark.parametrize("spec", ["loop0", "7:0", "/dev/loop0"])
def test_disk_filter_loop0(spec):
    devs = devices(replay("-y", "-d", spec)[0])
    assert list(devs) == ["loop0"]
    check(devs["loop0"], LOOP0)


def test_disk_filter_by_devnum_and_name_repeated():
    devs = devices(replay("-y", "-d", "65:0", "-d", "vdz")[0])
    assert sorted(devs) == ["sdq", "vdz"]
    check(devs["sdq"], SDQ)


def test_disk_filter_names_a_partition():
    for spec in ("sdq1", "65:1"):
        devs = devices(replay("-y", "-d", spec)[0])
        assert list(devs) == ["sdq1"], spec
        check(devs["sdq1"], SDQ1)


def test_disk_filter_unknown_in_recording():
    p = tl.run_iospan("stat", "-y", "--replay", TWO, "-d", "nosuchdisk", timeout=30)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, p
    assert "nosuchdisk" in p.stderr


# fields-14-18.rec: snapshots at uptime 500.25 and 500.75 -> interval 0.5 s = 500 ms.
def test_14_and_18_field_lines():
    reports = replay("-y", path=OLD)
    assert len(reports) == 1
    r = reports[0]
    assert abs(r["interval_s"] - 0.5) < 1e-6
    assert abs(r["time"] - 1700000100.75) < 1e-3
    devs = devices(r)
    assert sorted(devs) == ["hdz", "sdc", "vdw"]
    # hdz, 14 fields (no discard, no flush): rd_ios 100, rd_merges 10, rd_sectors 1000,
    #   rd_ticks 200; wr_ios 50, wr_merges 10, wr_sectors 500, wr_ticks 100; in_flight 1;
    #   io_ticks 100; time_in_queue 300.
    check(devs["hdz"], {
        "disk": "hdz", "dev": "3:0",
        "r_s": 200.0,        # 100 / 0.5
        "w_s": 100.0,        # 50 / 0.5
        "rkB_s": 1000.0,     # 1000 / 2 / 0.5
        "wkB_s": 500.0,      # 500 / 2 / 0.5
        "rrqm_s": 20.0,      # 10 / 0.5
        "wrqm_s": 20.0,      # 10 / 0.5
        "rrqm_pct": 9.0909,  # 10 / (10 + 100) * 100
        "wrqm_pct": 16.6667, # 10 / (10 + 50) * 100
        "r_await": 2.0,      # 200 / 100
        "w_await": 2.0,      # 100 / 50
        "rareq_sz": 5.0,     # 1000 / 2 / 100
        "wareq_sz": 5.0,     # 500 / 2 / 50
        "aqu_sz": 0.6,       # 300 / 500
        "util": 20.0,        # 100 / 500 * 100
        "in_flight": 1,
    })
    # sdc, 18 fields (discard, no flush): rd_ios 10, rd_sectors 80, rd_ticks 10; wr_ios 20,
    #   wr_sectors 160, wr_ticks 20; io_ticks 30; time_in_queue 30; dc_ios 4, dc_merges 2,
    #   dc_sectors 800, dc_ticks 8.
    check(devs["sdc"], {
        "disk": "sdc", "dev": "8:32",
        "r_s": 20.0,         # 10 / 0.5
        "w_s": 40.0,         # 20 / 0.5
        "d_s": 8.0,          # 4 / 0.5
        "rkB_s": 80.0,       # 80 / 2 / 0.5
        "wkB_s": 160.0,      # 160 / 2 / 0.5
        "dkB_s": 800.0,      # 800 / 2 / 0.5
        "drqm_s": 4.0,       # 2 / 0.5
        "drqm_pct": 33.3333, # 2 / (2 + 4) * 100
        "r_await": 1.0,      # 10 / 10
        "w_await": 1.0,      # 20 / 20
        "d_await": 2.0,      # 8 / 4
        "rareq_sz": 4.0,     # 80 / 2 / 10
        "wareq_sz": 4.0,     # 160 / 2 / 20
        "dareq_sz": 100.0,   # 800 / 2 / 4
        "aqu_sz": 0.06,      # 30 / 500
        "util": 6.0,         # 30 / 500 * 100
    })
    # vdw, 20 fields, only flushes: fl_ios 7-2 = 5, fl_ticks 14-4 = 10.
    check(devs["vdw"], {
        "disk": "vdw", "dev": "254:26",
        "f_s": 10.0,         # 5 / 0.5
        "f_await": 2.0,      # 10 / 5
    })


# edge-cases.rec: snapshots at uptime 2000 and 2001 -> interval 1 s = 1000 ms.
def test_backwards_vanished_and_new_devices():
    reports = replay("-y", path=EDGE)
    assert len(reports) == 1
    devs = devices(reports[0])
    # loop5: read counters went backwards (500 -> 100 ios, ...): registered again, so the
    #   interval counts from zero (it reported 0 reads): rd_ios 100, rd_sectors 800,
    #   rd_ticks 50, wr_ios 150, wr_sectors 1200, wr_ticks 75, io_ticks 350, tiq 400.
    check(devs["loop5"], {
        "disk": "loop5", "dev": "7:5",
        "r_s": 100.0,        # 100 / 1
        "rkB_s": 400.0,      # 800 / 2 / 1
        "r_await": 0.5,      # 50 / 100
        "rareq_sz": 4.0,     # 800 / 2 / 100
        "w_s": 150.0,
        "wkB_s": 600.0,      # 1200 / 2
        "w_await": 0.5,      # 75 / 150
        "wareq_sz": 4.0,
        "aqu_sz": 0.4,       # 400 / 1000
        "util": 35.0,        # 350 / 1000 * 100
    })
    assert devs["loop5"].get("restarted") is True
    # loop6: io_ticks and time_in_queue went backwards (1000 -> 10, far from a 32-bit
    #   wrap): registered again, from zero: rd_ios 20, rd_sectors 160, rd_ticks 20,
    #   io_ticks 10, time_in_queue 10.
    check(devs["loop6"], {
        "disk": "loop6", "dev": "7:6",
        "r_s": 20.0, "rkB_s": 80.0, "r_await": 1.0, "rareq_sz": 4.0,
        "aqu_sz": 0.01, "util": 1.0,
    })
    assert devs["loop6"].get("restarted") is True
    assert "restarted" not in devs["vdy"]
    # vdy: an ordinary device next to them: rd_ios 100, rd_sectors 800, rd_ticks 100,
    #   io_ticks 500, time_in_queue 100.
    check(devs["vdy"], {
        "disk": "vdy", "dev": "254:1",
        "r_s": 100.0, "rkB_s": 400.0, "r_await": 1.0, "rareq_sz": 4.0,
        "aqu_sz": 0.1, "util": 50.0,
    })
    # loop7 vanished: no numbers for it in the interval.
    assert "loop7" not in devs
    # loop8 appeared: either left out, or (as iostat does) computed against zero:
    #   rd_ios 30, rd_sectors 240, rd_ticks 30, io_ticks 20, time_in_queue 30.
    if "loop8" in devs:
        check(devs["loop8"], {
            "disk": "loop8", "dev": "7:8",
            "r_s": 30.0, "rkB_s": 120.0, "r_await": 1.0, "rareq_sz": 4.0,
            "aqu_sz": 0.03, "util": 2.0,
        })
    for d in devs.values():
        for k in DEVICE_KEYS[2:]:
            assert 0 <= d[k] < 1e9, (d["disk"], k, d[k])
        assert d["util"] <= 100.0


def test_util_capped_at_100(tmp_path):
    # io_ticks grows 1500 ms in a 1 s interval (accounting skew): %util is capped at 100.
    rec = tmp_path / "cap.rec"
    rec.write_text("iospan-diskstats 1\n"
                   "snapshot 10 1700000010\n"
                   "   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
                   "snapshot 11 1700000011\n"
                   "   7 0 loop0 10 0 80 10 0 0 0 0 0 1500 10 0 0 0 0 0 0\n")
    d = devices(replay("-y", path=str(rec))[0])["loop0"]
    assert abs(d["util"] - 100.0) <= TOL


def make_series(path, uptimes):
    """A recording of loop0 whose rd_ios is 10*k*k at snapshot k (and sectors 8x)."""
    lines = ["iospan-diskstats 1"]
    for k, up in enumerate(uptimes):
        ios = 10 * k * k
        lines.append("snapshot %.2f %.2f" % (up, 1700000000 + up))
        lines.append("   7 0 loop0 %d 0 %d %d 0 0 0 0 0 %d %d 0 0 0 0 0 0"
                     % (ios, 8 * ios, ios, ios, ios))
    path.write_text("\n".join(lines) + "\n")


UPTIMES = [100.0, 100.98, 102.01, 102.99, 104.02, 105.0]  # rd_ios 0 10 40 90 160 250


def test_replay_all_pairs(tmp_path):
    rec = tmp_path / "series.rec"
    make_series(rec, UPTIMES)
    reports = replay("-y", path=str(rec))
    assert len(reports) == 5
    for k, r in enumerate(reports, start=1):
        itv = UPTIMES[k] - UPTIMES[k - 1]
        assert abs(r["interval_s"] - itv) < 1e-6
        d = devices(r)["loop0"]
        # rd_ios delta = 10*k^2 - 10*(k-1)^2
        assert abs(d["r_s"] - (10 * k * k - 10 * (k - 1) ** 2) / itv) <= TOL, (k, d["r_s"])


def test_replay_interval_selects_snapshots(tmp_path):
    rec = tmp_path / "series.rec"
    make_series(rec, UPTIMES)
    # Interval 2: snapshots at least 2 s apart: 100.0, 102.01 (>= 102.0), 104.02
    # (>= 104.01); 105.0 is too close to 104.02.
    reports = replay("-y", "2", path=str(rec))
    assert len(reports) == 2
    assert abs(reports[0]["interval_s"] - 2.01) < 1e-6  # 102.01 - 100.0
    assert abs(reports[1]["interval_s"] - 2.01) < 1e-6  # 104.02 - 102.01
    assert abs(devices(reports[0])["loop0"]["r_s"] - 19.9005) <= TOL  # (40 - 0) / 2.01
    assert abs(devices(reports[1])["loop0"]["r_s"] - 59.7015) <= TOL  # (160 - 40) / 2.01
    assert abs(reports[1]["time"] - (1700000000 + 104.02)) < 1e-3


def test_replay_count_limits_reports(tmp_path):
    rec = tmp_path / "series.rec"
    make_series(rec, UPTIMES)
    reports = replay("-y", "0.5", "2", path=str(rec))
    assert len(reports) == 2
    assert abs(devices(reports[0])["loop0"]["r_s"] - 10.2041) <= TOL  # 10 / 0.98
    assert abs(devices(reports[1])["loop0"]["r_s"] - 29.1262) <= TOL  # 30 / 1.03


def test_replay_text_output():
    p = tl.run_iospan("stat", "-y", "--replay", TWO, timeout=30)
    assert p.returncode == 0, p
    assert "loop0" in p.stdout and "sdq" in p.stdout and "sdq1" not in p.stdout
    assert all(len(l) < 100 for l in p.stdout.splitlines()), p.stdout


HEADER = "iospan-diskstats 1\n"
LINE_A = "   7 0 loop0 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
LINE_B = "   7 0 loop0 2 0 16 2 0 0 0 0 0 2 2 0 0 0 0 0 0\n"
SNAP_A = "snapshot 10 1700000010\n"
SNAP_B = "snapshot 11 1700000011\n"
MALFORMED = {
    "empty": "",
    "only-comments": "# nothing here\n\n",
    "no-header": SNAP_A + LINE_A + SNAP_B + LINE_B,
    "wrong-version": "iospan-diskstats 2\n" + SNAP_A + LINE_A + SNAP_B + LINE_B,
    "header-without-version": "iospan-diskstats\n" + SNAP_A + LINE_A + SNAP_B + LINE_B,
    "other-file": "   7 0 loop0 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
    "line-before-snapshot": HEADER + LINE_A + SNAP_A + LINE_A + SNAP_B + LINE_B,
    "bad-uptime": HEADER + "snapshot abc 1700000010\n" + LINE_A + SNAP_B + LINE_B,
    "short-line": HEADER + SNAP_A + "   7 0 loop0 1 0 8 1 0 0 0\n" + SNAP_B + LINE_B,
    "13-fields": HEADER + SNAP_A + "   7 0 loop0 1 0 8 1 0 0 0 0 0 1\n" + SNAP_B + LINE_B,
    "non-numeric-counter": HEADER + SNAP_A + LINE_A.replace(" 8 ", " x ") + SNAP_B + LINE_B,
    "negative-counter": HEADER + SNAP_A + LINE_A.replace(" 8 ", " -8 ") + SNAP_B + LINE_B,
    "bad-partition-line": HEADER + "partition 7\n" + SNAP_A + LINE_A + SNAP_B + LINE_B,
    "unknown-keyword": HEADER + "bogus 1 2\n" + SNAP_A + LINE_A + SNAP_B + LINE_B,
    # Times: decimal seconds only; a repeated snapshot; both clocks going back.
    "nan-uptime": HEADER + SNAP_A + LINE_A + "snapshot nan 1700000011\n" + LINE_B,
    "inf-uptime": HEADER + SNAP_A + LINE_A + "snapshot inf\n" + LINE_B,
    "inf-epoch": HEADER + SNAP_A + LINE_A + "snapshot 11 inf\n" + LINE_B,
    "exponent-uptime": HEADER + SNAP_A + LINE_A + "snapshot 1.1e1 1700000011\n" + LINE_B,
    "repeated-snapshot": HEADER + SNAP_A + LINE_A + SNAP_A + LINE_A + SNAP_B + LINE_B,
    "repeated-uptime": HEADER + SNAP_A + LINE_A + "snapshot 10 1700000011\n" + LINE_B,
    "both-clocks-back": HEADER + SNAP_B + LINE_B + "snapshot 10 1700000005\n" + LINE_A,
    "over-long-line": HEADER + SNAP_A + LINE_A + "#" + "x" * 70000 + "\n" + SNAP_B + LINE_B,
    # A CR inside a line separates fields (the reader once cut the line there: this
    # snapshot was read as "snapshot 11 1700000011"); only a line's last CR ends it.
    "cr-inside-snapshot": HEADER + SNAP_A + LINE_A + "snapshot 11 1700000011\r5\n" + LINE_B,
    # What the recording holds is escaped in the message (it could clear a terminal).
    "control-bytes-after-times": HEADER + SNAP_A + LINE_A + "snapshot 11 1700000011 \x1b[2J\n"
    + LINE_B,
}

# What each of these must say (the error names the line and the cause).
MALFORMED_SAYS = {
    "nan-uptime": "line 4", "repeated-snapshot": "repeated snapshot",
    "repeated-uptime": "repeated snapshot", "both-clocks-back": "go backwards",
    "over-long-line": "longer than", "13-fields": "line 3",
    "cr-inside-snapshot": "'5' after them", "control-bytes-after-times": "'\\x1b[2J' after",
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_recording_is_usage_error(tmp_path, name):
    rec = tmp_path / ("%s.rec" % name)
    rec.write_text(MALFORMED[name])
    p = tl.run_iospan("stat", "-y", "--replay", str(rec), timeout=30)
    assert p.returncode == 2, "%s: exit %d\nstdout: %r\nstderr: %r" % (
        name, p.returncode, p.stdout, p.stderr)
    assert p.stdout == "" and len(p.stderr.splitlines()) == 1, (name, p.stdout, p.stderr)
    assert MALFORMED_SAYS.get(name, "") in p.stderr, (name, p.stderr)
    pj = tl.run_iospan("stat", "--json", "-y", "--replay", str(rec), timeout=30)
    assert pj.returncode == 2 and pj.stderr == "", (name, pj.stdout, pj.stderr)
    out = pj.stdout.splitlines()
    assert len(out) == 1 and "error" in json.loads(out[0]), (name, pj.stdout)


def test_crlf_recording_reads_as_lf(tmp_path):
    """A recording with CRLF line ends (copied through Windows) replays as the same one
    with LF ends."""
    text = HEADER + SNAP_A + LINE_A + SNAP_B + LINE_B
    out = []
    for name, data in (("lf.rec", text), ("crlf.rec", text.replace("\n", "\r\n"))):
        rec = tmp_path / name
        rec.write_bytes(data.encode())
        p = tl.run_iospan("stat", "-y", "--json", "--replay", str(rec), timeout=30)
        assert p.returncode == 0, (name, p.stderr)
        out.append(p.stdout)
    assert out[0] == out[1] and json.loads(out[0])["devices"], out


def test_epoch_is_optional(tmp_path):
    # docs/recording-format.md: "snapshot UPTIME_S [EPOCH_S]"; without it only the time is unknown.
    rec = tmp_path / "no-epoch.rec"
    rec.write_text(HEADER + "snapshot 10\n" + LINE_A + "snapshot 11\n" + LINE_B)
    p = tl.run_iospan("stat", "-y", "--json", "--replay", str(rec), timeout=30)
    assert p.returncode == 0, p.stderr
    (r,) = [json.loads(l) for l in p.stdout.splitlines()]
    assert r["interval_s"] == 1.0 and r["time"] == 0
    assert r["devices"][0]["r_s"] == 1.0  # rd_ios 2 - 1 over 1 s


def test_odd_field_counts_read_as_sysstat(tmp_path):
    """15 to 17 and 19 fields (and more than 20) are read by their longest complete group
    of counters, as sysstat reads them; they were rejected."""
    rec = tmp_path / "odd.rec"
    # Counters 1..n at the first snapshot, twice that at the second (0.5 s later).
    names = {15: "vda", 16: "vdb", 17: "vdc", 19: "vdd", 21: "vde"}
    lines = [HEADER.strip()]
    for k, up in ((1, 100.0), (2, 100.5)):
        lines.append("snapshot %.1f %.1f" % (up, 1700000000 + up))
        for nf, name in sorted(names.items()):
            lines.append("  254 %d %s %s" % (nf, name, " ".join(str(k * i) for i in range(1, nf - 2))))
    rec.write_text("\n".join(lines) + "\n")
    devs = devices(replay("-y", path=str(rec))[0])
    # Deltas: counter i grows by i. Classic group (all lines): rd_ios 1, rd_sectors 3,
    # rd_ticks 4, wr_ios 5, wr_sectors 7, wr_ticks 8, io_ticks 10, time_in_queue 11.
    classic = {"r_s": 2.0, "rkB_s": 3.0, "r_await": 4.0, "rareq_sz": 1.5,
               "rrqm_s": 4.0, "rrqm_pct": 200 / 3,
               "w_s": 10.0, "wkB_s": 7.0, "w_await": 1.6, "wareq_sz": 0.7,
               "wrqm_s": 12.0, "wrqm_pct": 600 / 11,
               "aqu_sz": 0.022, "util": 2.0, "in_flight": 18}
    # Discards (19 fields and more): dc_ios 12, dc_merges 13, dc_sectors 14, dc_ticks 15.
    discard = {"d_s": 24.0, "drqm_s": 26.0, "drqm_pct": 1300 / 25, "dkB_s": 14.0,
               "d_await": 1.25, "dareq_sz": 14 / 24}
    # Flushes (21 fields: the first 20 are read): fl_ios 16, fl_ticks 17.
    flush = {"f_s": 32.0, "f_await": 17 / 16}
    for nf, name in names.items():
        want = dict(classic, disk=name, dev="254:%d" % nf)
        want["in_flight"] = 2 * 9  # the gauge: its value now
        if nf >= 18:
            want.update(discard)
        if nf >= 20:
            want.update(flush)
        check(devs[name], want)


def test_reboot_starts_reports_again(tmp_path):
    """Uptime going back while the wall clock goes on is a reboot: reported as such, then
    a since-boot report of the new boot, and the snapshots after it are read (every
    snapshot after the reboot was ignored, exit 0)."""
    rec = tmp_path / "reboot.rec"
    rec.write_text(HEADER
                   + "snapshot 100 1700000100\n   7 0 loop0 10 0 80 10 0 0 0 0 0 10 10\n"
                   + "snapshot 101 1700000101\n   7 0 loop0 20 0 160 20 0 0 0 0 0 20 20\n"
                   + "snapshot 5 1700000300\n   7 0 loop0 3 0 24 3 0 0 0 0 0 3 3\n"
                   + "snapshot 6 1700000301\n   7 0 loop0 13 0 104 13 0 0 0 0 0 13 13\n")
    reports = replay("-y", path=str(rec))
    assert [(r["since_boot"], r.get("reboot", False)) for r in reports] == \
        [(False, False), (True, True), (False, False)], reports
    assert abs(devices(reports[0])["loop0"]["r_s"] - 10.0) <= TOL   # 10 reads in 1 s
    assert reports[1]["interval_s"] == 5.0                           # since the new boot
    assert abs(devices(reports[1])["loop0"]["r_s"] - 0.6) <= TOL    # 3 reads in 5 s
    assert abs(devices(reports[2])["loop0"]["r_s"] - 10.0) <= TOL   # 13 - 3 in 1 s
    p = tl.run_iospan("stat", "-y", "--replay", str(rec), timeout=30)
    assert p.returncode == 0 and p.stderr == "", p
    assert "since boot (5 s): the system rebooted" in p.stdout, p.stdout


def test_wall_clock_set_back_is_flagged(tmp_path):
    """The wall clock going back while uptime goes on (NTP, by hand): intervals come from
    uptime as always, and the report says the clock was set back."""
    rec = tmp_path / "clock.rec"
    rec.write_text(HEADER + "snapshot 10 1700000010\n" + LINE_A
                   + "snapshot 11 1699990000\n" + LINE_B)
    (r,) = replay("-y", path=str(rec))
    assert r["clock_set_back"] is True and r["interval_s"] == 1.0
    assert devices(r)["loop0"]["r_s"] == 1.0
    p = tl.run_iospan("stat", "-y", "--replay", str(rec), timeout=30)
    assert p.returncode == 0 and "the wall clock was set back" in p.stdout, p


def test_long_comment_line_is_one_comment(tmp_path):
    """Lines over 1,023 bytes were split, and each piece parsed as a line: a device could
    appear from inside a comment."""
    comment = "# " + "x" * 1100 + " 7 9 fake 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0"
    rec = tmp_path / "long.rec"
    rec.write_text(HEADER + SNAP_A + LINE_A + comment + "\n" + SNAP_B + LINE_B)
    (r,) = replay("-y", path=str(rec))
    assert set(devices(r)) == {"loop0"}, devices(r)


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom"])
def test_replay_of_endless_binary_input_ends(path):
    """`stat --replay /dev/zero` never ended; binary input is an error at once."""
    p = tl.run_iospan("stat", "--replay", path, timeout=10)
    assert p.returncode == 2 and p.stdout == "", p
    assert len(p.stderr.splitlines()) == 1 and path in p.stderr, p.stderr
