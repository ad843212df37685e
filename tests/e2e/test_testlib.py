# SPDX-License-Identifier: GPL-2.0
"""Self-test of tests/lib/iospan_testlib/: the fixtures really create what they say and
really clean it up (checked with losetup/findmnt/the cgroup tree afterwards), including
when the body raises."""
import os
import subprocess
import sys
import time

import pytest

import iospan_testlib as tl


def losetup_has(dev):
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    return any(line.startswith(dev + ":") for line in out.splitlines())


def findmnt_has(path):
    return subprocess.run(["findmnt", "-M", path], capture_output=True).returncode == 0


def test_paths_and_bin():
    assert os.path.isfile(os.path.join(tl.repo_root(), "Makefile"))
    assert tl.iospan_bin().endswith("iospan")


def test_parse_diskstats_field_counts():
    text = ("   7       0 loop0 1 2 3 4 5 6 7 8 9 10 11\n"
            "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n"
            " 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n")
    d = tl.parse_diskstats(text)
    assert d["loop0"]["nfields"] == 14 and d["loop0"]["time_in_queue"] == 11
    assert d["loop0"]["dc_ios"] == 0 and d["loop0"]["fl_ios"] == 0
    assert d["sda"]["dc_ticks"] == 15 and d["sda"]["fl_ios"] == 0
    assert d["nvme0n1"]["fl_ticks"] == 17 and d["nvme0n1"]["major"] == 259
    live = tl.read_diskstats()
    assert live and all(len(v) == 3 + len(tl.DISKSTATS_FIELDS) for v in live.values())


def test_read_proc_io():
    io = tl.read_proc_io(os.getpid())
    assert "read_bytes" in io and "write_bytes" in io


def test_loop_device_created_and_removed():
    tl.require_root()
    with tl.loop_device(64) as dev:
        assert dev.startswith("/dev/loop") and losetup_has(dev)
        name = os.path.basename(dev)
        with open("/sys/block/%s/size" % name) as f:
            assert int(f.read()) == 64 * 2048
        backing = tl._loop_backing(name)
        assert tl.TMP_PREFIX in backing
    assert not losetup_has(dev) or tl._loop_backing(name) != backing
    assert not os.path.exists(backing)
    assert not tl.leftovers()


def test_cleanup_on_exception():
    tl.require_root()
    seen = {}
    with pytest.raises(KeyboardInterrupt):
        with tl.scratch_fs("ext4", 64) as fs:
            seen["fs"] = fs
            assert findmnt_has(fs.mnt) and losetup_has(fs.dev)
            raise KeyboardInterrupt
    fs = seen["fs"]
    assert not findmnt_has(fs.mnt)
    assert not os.path.exists(fs.mnt)
    assert not tl.leftovers()


@pytest.mark.parametrize("fstype", ["ext4", "xfs"])
def test_scratch_fs(fstype):
    tl.require_root()
    with tl.scratch_fs(fstype, 320) as fs:
        assert fs.name == os.path.basename(fs.dev)
        assert fs.devnum.startswith("7:")
        out = subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-M", fs.mnt],
                             capture_output=True, text=True).stdout.split()
        assert out == [fs.dev, fstype]
        p = tl.dd(os.path.join(fs.mnt, "f"), bs="1M", count=4, oflag="direct")
        assert p.bytes_copied == 4 * 1024 * 1024
    assert not findmnt_has(fs.mnt)
    assert not tl.leftovers()


def test_loop_partitions_and_scheduler():
    tl.require_root()
    with tl.loop_device(64, partitions=[16, 16]) as dev:
        name = os.path.basename(dev)
        for i in (1, 2):
            with open("/sys/class/block/%sp%d/size" % (name, i)) as f:
                assert int(f.read()) == 16 * 2048
        avail = open("/sys/block/%s/queue/scheduler" % name).read()
        if "mq-deadline" in avail:
            tl.set_scheduler(dev, "mq-deadline")
            assert tl.get_scheduler(name) == "mq-deadline"
    assert not tl.leftovers()


def test_tmpfs_backed_loop_direct_io():
    tl.require_root()
    with tl.tmpfs(128) as t:
        assert findmnt_has(t)
        with tl.loop_device(64, backing_dir=t, direct_io=True) as dev:
            assert tl._loop_backing(os.path.basename(dev)).startswith(t)
            r = tl.fio(["--name=t", "--filename=%s" % dev, "--rw=randread", "--bs=4k",
                        "--direct=1", "--size=8M", "--io_size=4M", "--ioengine=psync"])
            assert r["jobs"][0]["read"]["total_ios"] == 1024
    assert not findmnt_has(t)
    assert not tl.leftovers()


def test_cgroup2_moves_procs_and_removes():
    tl.require_root()
    with tl.cgroup2("iospan-selftest") as cg:
        assert os.path.isdir(cg) and os.path.dirname(cg) == tl.cgroup2_root()
        p = subprocess.Popen(["sleep", "30"])
        try:
            tl.move_to_cgroup(cg, p.pid)
            sub = os.path.join(cg, "child")
            os.mkdir(sub)
            assert tl.cgroup_procs(cg) == [p.pid]
        finally:
            pass
    try:
        assert not os.path.exists(cg)
        # The process survived and went to the parent.
        assert p.poll() is None
        with open("/proc/%d/cgroup" % p.pid) as f:
            assert os.path.basename(cg) not in f.read()
    finally:
        p.kill()
        p.wait()


def test_blkio_throttle_limits_direct_reads():
    tl.require_root()
    with tl.loop_device(64) as dev:
        devnum = tl.devnum_of(dev)
        with tl.blkio_throttle(devnum, read_bps=4 * 1024 * 1024) as cg:
            with open(os.path.join(cg, "blkio.throttle.read_bps_device")) as f:
                assert f.read().split() == [devnum, str(4 * 1024 * 1024)]
            t0 = time.monotonic()
            # 8 MiB at 4 MiB/s: about 2 s (the first second's budget may pass at once).
            tl.dd("/dev/null", if_=dev, bs="1M", count=8, iflag="direct", cgroup=cg)
            elapsed = time.monotonic() - t0
            assert elapsed > 1.2, elapsed
        assert not os.path.exists(cg)
    assert not tl.leftovers()


def test_sigterm_cleans_up(tmp_path):
    """A process killed by SIGTERM mid-test leaves no loop device or mount behind."""
    tl.require_root()
    lib = os.path.dirname(os.path.dirname(tl.__file__))  # tests/lib: the package is in it
    script = tmp_path / "victim.py"
    script.write_text(
        "import sys, time\n"
        "sys.path.insert(0, %r)\n"
        "import iospan_testlib as tl\n"
        "with tl.scratch_fs('ext4', 64) as fs:\n"
        "    print(fs.dev, fs.mnt, flush=True)\n"
        "    time.sleep(60)\n" % lib)
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        dev, mnt = p.stdout.readline().split()
        assert losetup_has(dev) and findmnt_has(mnt)
        p.terminate()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert not findmnt_has(mnt)
    assert not os.path.exists(mnt)
    # The number may have been reused by someone else meanwhile: check our backing file.
    back = tl._loop_backing(os.path.basename(dev))
    assert back is None or "iospan-test-%d-" % p.pid not in back
