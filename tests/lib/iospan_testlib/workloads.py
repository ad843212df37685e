# SPDX-License-Identifier: GPL-2.0
"""Known workloads (fio, dd, the filters' two targets) and the kernel's own counts (/proc/diskstats, /proc/PID/io)."""
import contextlib
import json as _json
import os
import re
import subprocess
import sys
import threading
import time

from .core import DISKSTATS_FIELDS  # noqa: F401
from .loop import loop_device, set_scheduler  # noqa: F401
from .mounts import scratch_fs  # noqa: F401
from .cgroups import blkio_throttle, cgroup2, move_to_cgroup, require_blkio  # noqa: F401


def fio_json(text):
    """fio may print warnings before its JSON document: parse from the first '{'."""
    i = text.find("{")
    if i < 0:
        raise ValueError("no JSON in output: %r" % text[:500])
    return _json.loads(text[i:])


def _run_in_cgroup(cmd, cgroup, timeout):
    """Runs @cmd (output captured) started in @cgroup (a v1 or v2 dir; None: ours)."""
    pre = None
    if cgroup:
        def pre(path=cgroup):
            move_to_cgroup(path)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=pre)


def fio(args_list, json=True, timeout=600, check=True, cgroup=None):
    """Runs fio with @args_list. json=True adds --output-format=json and returns the
    parsed document; otherwise returns the CompletedProcess. @cgroup: a cgroup dir
    (v1 or v2) the fio process starts in."""
    cmd = ["fio"] + [str(a) for a in args_list]
    if json:
        cmd.append("--output-format=json")
    p = _run_in_cgroup(cmd, cgroup, timeout)
    if check and p.returncode != 0:
        raise RuntimeError("fio failed (exit %d): %s\n%s"
                           % (p.returncode, p.stderr.strip(), p.stdout[-2000:]))
    if not json:
        return p
    return fio_json(p.stdout)


def fio_clat_log(prefix):
    """Reads the per-I/O completion latency log fio writes with --write_lat_log=@prefix
    --log_avg_msec=0 --log_offset=1 (one job): a list of (clat_ns, ddir, bytes, offset)
    in completion order."""
    rows = []
    with open("%s_clat.1.log" % prefix) as f:
        for line in f:
            fields = [x.strip() for x in line.split(",")]
            if len(fields) < 5:
                continue
            rows.append((int(fields[1]), int(fields[2]), int(fields[3]), int(fields[4])))
    return rows


def dd(of, if_="/dev/zero", bs="1M", count=None, oflag=None, iflag=None, conv=None,
       extra=(), timeout=600, check=True, cgroup=None):
    """Runs dd; returns the CompletedProcess with .bytes_copied parsed from its
    summary (None if not found)."""
    cmd = ["dd", "if=%s" % if_, "of=%s" % of, "bs=%s" % bs]
    if count is not None:
        cmd.append("count=%s" % count)
    if oflag:
        cmd.append("oflag=%s" % oflag)
    if iflag:
        cmd.append("iflag=%s" % iflag)
    if conv:
        cmd.append("conv=%s" % conv)
    cmd += list(extra)
    p = _run_in_cgroup(cmd, cgroup, timeout)
    if check and p.returncode != 0:
        raise RuntimeError("dd failed (exit %d): %s" % (p.returncode, p.stderr.strip()))
    m = re.search(r"^(\d+) bytes", p.stderr, re.M)
    p.bytes_copied = int(m.group(1)) if m else None
    return p


def page_cache_state(path):
    """cachestat(2) (Linux 6.5+) of the whole file at @path: a dict with nr_cache,
    nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted (pages)."""
    import ctypes

    class Range(ctypes.Structure):
        _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]

    names = ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")

    class CacheStat(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in names]

    libc = ctypes.CDLL(None, use_errno=True)
    rng, cs = Range(0, 0), CacheStat()
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syscall(451, fd, ctypes.byref(rng), ctypes.byref(cs), 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "cachestat: %s" % os.strerror(err))
    finally:
        os.close(fd)
    return {n: getattr(cs, n) for n in names}


def drop_caches():
    """sync, then drop the page cache, dentries and inodes."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def parse_diskstats(text):
    """Parses /proc/diskstats text (14, 18 or 20 fields per line) into
    {name: {"major", "minor", "nfields", <DISKSTATS_FIELDS>}}; absent fields are 0."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14:
            continue
        d = {"major": int(f[0]), "minor": int(f[1]), "nfields": len(f)}
        vals = [int(x) for x in f[3:]]
        for i, key in enumerate(DISKSTATS_FIELDS):
            d[key] = vals[i] if i < len(vals) else 0
        out[f[2]] = d
    return out


def read_diskstats(path="/proc/diskstats"):
    """{name: {field: int}} from /proc/diskstats (see parse_diskstats)."""
    with open(path) as f:
        return parse_diskstats(f.read())


def diskstats_delta(before, after, name):
    """Per-field difference after - before for one device."""
    return {k: after[name][k] - before[name][k] for k in DISKSTATS_FIELDS}


def read_proc_io(pid="self"):
    """/proc/PID/io as {key: int} (rchar, wchar, syscr, syscw, read_bytes, write_bytes,
    cancelled_write_bytes)."""
    out = {}
    with open("/proc/%s/io" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k.strip()] = int(v)
    return out


_PAIR = r"""
import ctypes, json, mmap, os, sys, threading

name, size, wpath, rpath = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: threads inherit it
CHUNK = 1 << 20
go, ready, tid = threading.Event(), threading.Event(), []

def read():
    tid.append(threading.get_native_id())
    ready.set()
    buf = mmap.mmap(-1, CHUNK)
    go.wait()
    fd = os.open(rpath, os.O_RDONLY | os.O_DIRECT)
    for off in range(0, size, CHUNK):
        assert os.preadv(fd, [buf], off) == CHUNK
    os.close(fd)

t = threading.Thread(target=read)
t.start()
ready.wait()
print(json.dumps({"pid": os.getpid(), "tid": tid[0]}), flush=True)
sys.stdin.readline()
go.set()
buf = mmap.mmap(-1, CHUNK)
buf.write(b"w" * CHUNK)
fd = os.open(wpath, os.O_WRONLY | os.O_DIRECT)
for off in range(0, size, CHUNK):
    assert os.pwritev(fd, [buf], off) == CHUNK
os.close(fd)
t.join()
"""


class FilterTargets:
    """Two processes, NAMES[0] and NAMES[1], each in its own cgroup and directory of
    @fs: its main thread writes @size bytes to its file "w", its second thread reads
    @size bytes of its file "r" (O_DIRECT, 1 MiB calls, cold caches). Made by
    filter_targets(); run() lets them go and waits for them. For each name: .procs
    ({"pid", "tid"}: the reader thread's), .files ((w, r) paths), .cgroups (paths),
    .dirs; .filters: each target filter's arguments, the files whose bytes it keeps
    ({path: "write" or "read"}), and whether it names a process."""

    def __init__(self, names, size, fs, cgroups):
        self.names, self.size, self.fs, self.cgroups = names, size, fs, cgroups
        self.files, self.dirs, self.procs, self._popen = {}, {}, {}, {}

    def _start(self):
        for name in self.names:
            d = os.path.join(self.fs.mnt, name)
            os.mkdir(d)
            self.dirs[name] = d
            self.files[name] = (os.path.join(d, "w"), os.path.join(d, "r"))
            for path in self.files[name]:  # allocated: the writes overwrite, --file finds it
                dd(path, bs="1M", count=self.size // (1 << 20), conv="fsync")
        # Cold: a direct read of a page in the cache can be served from it (btrfs).
        drop_caches()
        for name in self.names:
            p = subprocess.Popen([sys.executable, "-B", "-c", _PAIR, name, str(self.size)] +
                                 list(self.files[name]), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True,
                                 preexec_fn=lambda cg=self.cgroups[name]: move_to_cgroup(cg))
            self._popen[name] = p
            self.procs[name] = _json.loads(p.stdout.readline())
        a, b = self.names
        (aw, ar), (bw, br) = self.files[a], self.files[b]
        self.filters = {
            "pid": (["-p", str(self.procs[a]["pid"])], {aw: "write", ar: "read"}, True),
            "tid": (["--tid", str(self.procs[b]["tid"])], {br: "read"}, True),
            "comm": (["--comm", b], {bw: "write", br: "read"}, True),
            "cgroup": (["--cgroup", self.cgroups[a]], {aw: "write", ar: "read"}, True),
            "file": (["--file", bw], {bw: "write"}, False),
            "dir": (["--dir", self.dirs[a]], {aw: "write", ar: "read"}, False),
        }

    def run(self, timeout=120):
        """Lets both go and waits for them to end (killed if the test fails first)."""
        try:
            for p in self._popen.values():
                p.stdin.write("go\n")
                p.stdin.flush()
            for p in self._popen.values():
                assert p.wait(timeout=timeout) == 0
        finally:
            self.kill()

    def kill(self):
        for p in self._popen.values():
            if p.poll() is None:
                p.kill()
                p.wait()


@contextlib.contextmanager
def filter_targets(fstype, size, names=("tgt-a", "tgt-b"), fs_mb=320):
    """A FilterTargets on a scratch @fstype file system of its own, ready to run."""
    with scratch_fs(fstype, fs_mb) as fs, cgroup2(names[0]) as cg_a, \
            cgroup2(names[1]) as cg_b:
        t = FilterTargets(names, size, fs, {names[0]: cg_a, names[1]: cg_b})
        try:
            t._start()
            yield t
        finally:
            t.kill()


@contextlib.contextmanager
def slow_disk(size_mb=32, read_bps=None, read_iops=None):
    """A loop device whose reads wait, as a real disk's do: it is backed (direct I/O) by
    a file on another loop device, where blk-throttle holds the reads of the cgroup it
    yields at @read_bps or @read_iops. The upper device's requests stay in flight while
    its loop worker waits, so their device time is that wait (64 KiB at 2 MiB/s: 32 ms).
    Yields (upper device, cgroup); run the workload in the cgroup."""
    require_blkio()
    with scratch_fs("ext4", max(128, size_mb + 64)) as fs, \
            loop_device(size_mb, backing_dir=fs.mnt, direct_io=True) as upper:
        # Written through: reads of holes would never reach the lower device.
        dd(upper, if_="/dev/urandom", bs="1M", count=size_mb, oflag="direct")
        # No scheduler between the workload and the loop worker (BFQ dispatches a
        # sync reader's requests one at a time); loop_device() gives the old one back.
        set_scheduler(upper, "none")
        with blkio_throttle(fs.devnum, read_bps=read_bps, read_iops=read_iops) as cgroup:
            yield upper, cgroup
