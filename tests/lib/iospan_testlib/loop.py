# SPDX-License-Identifier: GPL-2.0
"""Loop devices: backing files, partitions, direct I/O, the scheduler restored."""
import contextlib
import fcntl
import os
import re
import shutil
import struct
import sys
import time

from .core import _mkdtemp, _register, _release, _run  # noqa: F401


def _loop_backing(name):
    try:
        with open("/sys/block/%s/loop/backing_file" % name) as f:
            return f.read().strip()
    except OSError:
        return None


def _loop_detach(dev, backing):
    """Detaches @dev if it is still attached to @backing (a number may be reused)."""
    name = os.path.basename(dev)
    for _ in range(50):
        cur = _loop_backing(name)
        if cur is None or (cur != backing and cur != backing + " (deleted)"):
            return
        p = _run(["losetup", "-d", dev], check=False)
        if p.returncode == 0:
            # If the device is still open somewhere, the detach is deferred to the last
            # close (autoclear): wait for it.
            for _ in range(100):
                if _loop_backing(name) is None:
                    return
                time.sleep(0.05)
            return
        time.sleep(0.1)
    raise RuntimeError("cannot detach %s from %s" % (dev, backing))


def _restore_scheduler(dev, sched):
    """Gives @dev back the scheduler it had when attached, if a test changed it."""
    if sched is not None and get_scheduler(dev) != sched:
        set_scheduler(dev, sched)


def _write_mbr(path, partitions_mb):
    """Writes an MS-DOS partition table with primary Linux partitions of the given
    sizes (MiB), 1 MiB aligned, into the image @path (no fdisk needed)."""
    if len(partitions_mb) > 4:
        raise ValueError("at most 4 primary partitions")
    mbr = bytearray(512)
    start = 2048
    for i, size in enumerate(partitions_mb):
        nsect = int(size) * 2048
        entry = struct.pack("<B3sB3sII", 0, b"\xfe\xff\xff", 0x83, b"\xfe\xff\xff", start, nsect)
        mbr[446 + 16 * i:446 + 16 * (i + 1)] = entry
        start += nsect
    mbr[440:444] = struct.pack("<I", 0x10535AB0 ^ os.getpid())  # disk identifier
    mbr[510] = 0x55
    mbr[511] = 0xAA
    with open(path, "r+b") as f:
        f.write(mbr)


def _blkpg_add_partitions(dev, partitions_mb):
    """Adds partitions of the given sizes (MiB, 1 MiB aligned) to @dev with the BLKPG
    ioctl, as partx does from a table: no table, so more than MBR's four."""
    import ctypes

    class Partition(ctypes.Structure):
        _fields_ = [("start", ctypes.c_longlong), ("length", ctypes.c_longlong),
                    ("pno", ctypes.c_int), ("devname", ctypes.c_char * 64),
                    ("volname", ctypes.c_char * 64)]

    class Arg(ctypes.Structure):
        _fields_ = [("op", ctypes.c_int), ("flags", ctypes.c_int), ("datalen", ctypes.c_int),
                    ("data", ctypes.c_void_p)]

    blkpg, add = 0x1269, 1
    start = 1 << 20
    fd = os.open(dev, os.O_RDONLY)
    try:
        for i, size in enumerate(partitions_mb):
            part = Partition(start, int(size) << 20, i + 1, b"", b"")
            arg = Arg(add, 0, ctypes.sizeof(part), ctypes.addressof(part))
            fcntl.ioctl(fd, blkpg, arg)
            start += int(size) << 20
    finally:
        os.close(fd)


@contextlib.contextmanager
def loop_device(size_mb=256, backing_dir=None, direct_io=False, partitions=None,
                sector_size=None):
    """Yields "/dev/loopN" over a sparse backing file of @size_mb MiB in a new temp dir
    (or in @backing_dir, e.g. a tmpfs() mount). direct_io=True attaches with
    --direct-io=on. @partitions: list of sizes in MiB -> the device is attached with
    --partscan and has them as /dev/loopNp1...: up to four from an MBR table, more added
    with the BLKPG ioctl (no table). Detaches and removes the backing file on exit."""
    tmpdir = _mkdtemp(backing_dir)
    backing = os.path.join(tmpdir, "backing.img")
    dev = None
    tok = None
    try:
        with open(backing, "wb") as f:
            f.truncate(int(size_mb) * 1024 * 1024)
        if partitions and len(partitions) <= 4:
            _write_mbr(backing, partitions)
        cmd = ["losetup", "--find", "--show"]
        if direct_io:
            cmd.append("--direct-io=on")
        if partitions:
            cmd.append("--partscan")
        if sector_size:
            cmd += ["--sector-size", str(sector_size)]
        cmd.append(backing)
        dev = _run(cmd).stdout.strip()
        # A loop device keeps its I/O scheduler when detached: a test that sets one must
        # not hand it to the next test given this device (BFQ there tripled an await).
        sched = get_scheduler(dev)
        tok = _register("loop", "%s (%s)" % (dev, backing),
                        lambda d=dev, b=backing, t=tmpdir, s=sched: (
                            _restore_scheduler(d, s), _loop_detach(d, b),
                            shutil.rmtree(t, ignore_errors=True)))
        if partitions and len(partitions) > 4:
            _blkpg_add_partitions(dev, partitions)
        if partitions:
            # Kernels without partition-table parsers (this one: no MSDOS_PARTITION) do
            # not scan: then add them from user space (partx reads the table, BLKPG adds).
            name = os.path.basename(dev)
            for attempt in range(100):
                if all(os.path.exists("/sys/class/block/%sp%d" % (name, i + 1))
                       for i in range(len(partitions))):
                    break
                if attempt == 4:
                    _run(["partx", "-a", dev], check=False)
                time.sleep(0.05)
            else:
                raise RuntimeError("partitions of %s did not appear" % dev)
        yield dev
    finally:
        try:
            if tok is not None:
                _release(tok)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)


def get_scheduler(devname):
    """The active I/O scheduler of a disk ("none", "mq-deadline", ...)."""
    devname = os.path.basename(devname)
    with open("/sys/block/%s/queue/scheduler" % devname) as f:
        m = re.search(r"\[([^\]]+)\]", f.read())
    return m.group(1) if m else None


def set_scheduler(devname, sched):
    """Selects I/O scheduler @sched on disk @devname ("loop3" or "/dev/loop3");
    returns the previous one. Raises if the kernel did not accept it."""
    devname = os.path.basename(devname)
    prev = get_scheduler(devname)
    with open("/sys/block/%s/queue/scheduler" % devname, "w") as f:
        f.write(sched)
    cur = get_scheduler(devname)
    if cur != sched:
        raise RuntimeError("scheduler of %s is %s, wanted %s" % (devname, cur, sched))
    return prev


# Two targets for the filters: a process named NAME whose main thread writes W and whose
# second thread reads R (O_DIRECT, 1 MiB calls); both wait for a line on stdin after
# printing {"pid", "tid"} (the reader's).
