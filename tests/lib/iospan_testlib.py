# SPDX-License-Identifier: GPL-2.0
"""Shared fixtures for iospan's end-to-end tests, benchmarks and scripts.

Importable without pytest (bench/ uses it too). Everything that creates a
system resource (loop device, mount, cgroup) is a context manager that tears it
down in a ``finally`` -- also on a failed assert or KeyboardInterrupt -- and is
registered in a module-level list, so an atexit/SIGTERM handler can tear down
whatever an interrupted run left behind. ``leftovers()`` reports resources this
process created that still exist (the e2e conftest checks it at session end).

Ground truth helpers read the kernel's own accounts: /proc/diskstats,
/proc/PID/io, and the workload's own numbers (fio JSON, dd).
"""
import atexit
import contextlib
import fcntl
import json as _json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

__all__ = [
    "repo_root", "iospan_bin", "run_iospan", "popen_iospan", "is_root", "require_root",
    "loop_device", "tmpfs", "filesystem", "scratch_fs", "ScratchFs", "cgroup2",
    "cgroup2_root", "blkio_throttle", "slow_disk", "blkio_root", "move_to_cgroup",
    "cgroup_procs",
    "fio", "fio_json", "iowork_bin", "dd", "drop_caches", "read_diskstats", "parse_diskstats", "diskstats_delta",
    "DISKSTATS_FIELDS", "read_proc_io", "set_scheduler", "get_scheduler", "devnum_of",
    "leftovers", "cleanup_all", "TMP_PREFIX", "Tracer", "start_tracing", "asan_bin",
    "filter_targets", "FilterTargets",
]

# /proc/diskstats fields after "major minor name", in kernel order (14, 18 or 20 fields
# per line in total: 11, 15 or 17 counters).
DISKSTATS_FIELDS = (
    "rd_ios", "rd_merges", "rd_sectors", "rd_ticks",
    "wr_ios", "wr_merges", "wr_sectors", "wr_ticks",
    "in_flight", "io_ticks", "time_in_queue",
    "dc_ios", "dc_merges", "dc_sectors", "dc_ticks",
    "fl_ios", "fl_ticks",
)

# Temp dirs of this process are recognisable, so leftovers() can find loop devices and
# mounts made here even if something bypassed the registry.
TMP_PREFIX = "iospan-test-%d-" % os.getpid()


# --------------------------------------------------------------------------- paths, binary

def repo_root():
    """The repository root (two levels above tests/lib)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def iospan_bin():
    """$IOSPAN_BIN, or <repo>/build/iospan."""
    return os.environ.get("IOSPAN_BIN") or os.path.join(repo_root(), "build", "iospan")


def iowork_bin():
    """$IOWORK_BIN, or <repo>/build/iowork (the matrix's static workload, `make test`
    builds it): exact I/O from buffers it has already touched."""
    return os.environ.get("IOWORK_BIN") or os.path.join(repo_root(), "build", "iowork")


def run_iospan(*args, timeout=60, check=False, input=None, env=None):
    """Runs iospan with @args; returns subprocess.CompletedProcess (text mode).

    check=True raises AssertionError (with both streams) on a non-zero exit.
    """
    cmd = [iospan_bin()] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input,
                       env=env)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def popen_iospan(*args, **kwargs):
    """Starts iospan in the background (stdout/stderr piped, text); returns the Popen."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    kwargs.setdefault("text", True)
    return subprocess.Popen([iospan_bin()] + [str(a) for a in args], **kwargs)


def asan_bin():
    """The ASan + UBSan build of iospan (IOSPAN_ASAN_BIN, or build-asan/ beside the
    binary under test); fails the test if it is missing or is not one."""
    path = os.environ.get("IOSPAN_ASAN_BIN") or os.path.join(
        os.path.dirname(iospan_bin()) + "-asan", "iospan")
    assert os.access(path, os.X_OK), \
        "sanitizer build not found at %s: build it with 'make asan' (make test does)" % path
    # It is one: it calls into both runtimes.
    with open(path, "rb") as f:
        image = f.read()
    assert b"__asan_init" in image and b"__ubsan_handle_" in image, \
        "%s is not an ASan + UBSan build" % path
    return path


def popen_together(cmds, **kwargs):
    """Starts each argv of @cmds (Popen with @kwargs) and lets them all exec at the same
    instant: each waits in a shell for a line on its own stdin pipe until every one is
    spawned.
    Two samplers compared interval by interval must start together, or what happens in
    the gap between their starts is in one tool's interval and not the other's."""
    procs, gates = [], []
    try:
        for argv in cmds:
            r, w = os.pipe()
            gates.append(w)
            wrapped = ["sh", "-c", 'read _ && exec "$@"', "sh"] + [str(a) for a in argv]
            procs.append(subprocess.Popen(wrapped, stdin=r, **kwargs))
            os.close(r)
        for w in gates:
            os.write(w, b"\n")
    except BaseException:
        for p in procs:
            p.kill()
            p.wait()
        raise
    finally:
        for w in gates:
            os.close(w)
    return procs


def start_tracing(*args, timeout=30, **popen_args):
    """Starts a BPF command (`iospan ARGS`) and returns its Popen once it says on stderr
    that it is tracing (its hooks are attached). Raises AssertionError if it never does.
    @popen_args go to popen_iospan() (stdout=FILE)."""
    import select

    proc = popen_iospan(*args, **popen_args)
    deadline = time.time() + timeout
    seen = ""
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            line = proc.stderr.readline()
            seen += line
            if "tracing" in line:
                return proc
        if proc.poll() is not None:
            break
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError("iospan %s did not start: %s%s\n%s" % (args[0], seen, err, out))


@contextlib.contextmanager
def under_sanitizers(args, log, ready, timeout=120):
    """The sanitizer build (asan_bin()) running `iospan ARGS`, its stderr into the file
    @log, yielded once @ready is in that log (start-up is slower under ASan). At the end
    it is stopped with SIGINT and, unless the body failed, must have exited 0 with no
    sanitizer report (memory errors, undefined behaviour, leaks)."""
    with open(log, "w") as errf:
        proc = subprocess.Popen([asan_bin(), *args], stderr=errf)
    ok = False
    try:
        deadline = time.time() + timeout
        while ready not in open(log).read() and proc.poll() is None and \
                time.time() < deadline:
            time.sleep(0.2)
        yield proc
        ok = True
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=timeout)
    if ok:
        err = open(log).read()
        assert proc.returncode == 0, err[-3000:]
        assert not re.search(r"runtime error|AddressSanitizer|LeakSanitizer", err), \
            err[-3000:]


class Tracer:
    """A BPF command (`iospan ARGS`) running in the background, started once it traces,
    its stdout drained as it comes (a full pipe would stall it). stop() ends it with
    SIGINT (Ctrl-C), checks it exited 0 and returns its whole stdout."""

    def __init__(self, *args, timeout=30):
        self.args = args
        self.proc = start_tracing(*args, timeout=timeout)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=timeout)
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0, "iospan %s exited %d: %s" % (
            " ".join(map(str, self.args)), self.proc.returncode, err)
        return "".join(self.lines)

    def json_lines(self):
        """stop(), then each non-empty stdout line parsed as JSON."""
        return [_json.loads(line) for line in self.stop().splitlines() if line.strip()]


def is_root():
    return os.geteuid() == 0


def require_root(reason="this test creates devices, mounts or cgroups"):
    """pytest.skip("needs root: ...") unless root (the e2e conftest turns it into a
    failure under CI=true)."""
    if is_root():
        return
    import pytest  # lazily: the module must import without pytest

    pytest.skip("needs root: %s" % reason)


# --------------------------------------------------------------------------- registry

_lock = threading.RLock()
_live = []  # [(token, kind, description, teardown)] in creation order
_next_token = [0]


def _register(kind, desc, teardown):
    with _lock:
        _next_token[0] += 1
        tok = _next_token[0]
        _live.append((tok, kind, desc, teardown))
        return tok


def _release(tok):
    """Runs the teardown of @tok (once) and forgets it. Errors propagate."""
    with _lock:
        for i, entry in enumerate(_live):
            if entry[0] == tok:
                del _live[i]
                break
        else:
            return
    entry[3]()


def cleanup_all():
    """Tears down everything still registered, newest first. Returns a list of
    descriptions of what had to be cleaned up (empty if nothing was left)."""
    cleaned = []
    while True:
        with _lock:
            if not _live:
                break
            tok, kind, desc, teardown = _live.pop()
        cleaned.append("%s %s" % (kind, desc))
        try:
            teardown()
        except Exception as e:  # keep going: tear down the rest
            sys.stderr.write("iospan_testlib: cleanup of %s %s failed: %s\n" % (kind, desc, e))
    return cleaned


def _atexit_cleanup():
    left = cleanup_all()
    if left:
        sys.stderr.write("iospan_testlib: cleaned up at exit: %s\n" % ", ".join(left))


_prev_handlers = {}


def _signal_cleanup(signum, frame):
    cleanup_all()
    prev = _prev_handlers.get(signum)
    if callable(prev):
        prev(signum, frame)
        return
    # Default action: die by the signal, like an unhandled one.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers():
    atexit.register(_atexit_cleanup)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            prev = signal.getsignal(sig)
            if prev in (signal.SIG_IGN,):
                continue
            _prev_handlers[sig] = prev
            signal.signal(sig, _signal_cleanup)
        except (ValueError, OSError):
            pass


_install_handlers()


# --------------------------------------------------------------------------- small helpers

def _run(cmd, check=True, timeout=120, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s"
                           % (" ".join(cmd), p.returncode, (p.stderr or p.stdout).strip()))
    return p


def _mountinfo():
    """[(mount_point, fstype, super_options)] from /proc/self/mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.rstrip("\n").partition(" - ")
            fields = pre.split()
            post = post.split()
            mnt = fields[4].replace("\\040", " ")
            out.append((mnt, post[0] if post else "", post[2] if len(post) > 2 else ""))
    return out


def _is_mounted(path):
    path = os.path.realpath(path)
    return any(m == path for m, _, _ in _mountinfo())


def _umount(path):
    """umount with retries (busy right after a workload ends); lazy as a last resort."""
    if not _is_mounted(path):
        return
    last = None
    for _ in range(20):
        p = _run(["umount", path], check=False)
        if p.returncode == 0 or not _is_mounted(path):
            return
        last = p.stderr.strip()
        time.sleep(0.1)
    _run(["umount", "-l", path], check=False)
    if _is_mounted(path):
        raise RuntimeError("cannot unmount %s: %s" % (path, last))


def _umount_rmdir(path):
    _umount(path)
    try:
        os.rmdir(path)  # never rmtree a mount point: it would delete the fs contents
    except OSError:
        pass


def _mkdtemp(base=None):
    return tempfile.mkdtemp(prefix=TMP_PREFIX, dir=base)


def devnum_of(dev):
    """"MAJ:MIN" of a block device given as /dev/X, X or a sysfs name."""
    name = os.path.basename(os.path.realpath(dev)) if dev.startswith("/") else dev
    with open("/sys/class/block/%s/dev" % name) as f:
        return f.read().strip()


# --------------------------------------------------------------------------- loop devices

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


# --------------------------------------------------------------------------- mounts

@contextlib.contextmanager
def tmpfs(size_mb=512):
    """Mounts a tmpfs of @size_mb MiB on a new temp dir; yields the dir."""
    with _mounted(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0755" % int(size_mb),
                   "tmpfs"], "tmpfs") as mnt:
        yield mnt


@contextlib.contextmanager
def _mounted(mount_cmd, what):
    """Runs @mount_cmd with a new temp dir appended; yields the dir and unmounts (with
    retries) and removes it on exit, also when the test fails."""
    mnt = _mkdtemp()
    tok = None
    try:
        _run(mount_cmd + [mnt])
        tok = _register("mount", "%s %s" % (what, mnt), lambda m=mnt: _umount_rmdir(m))
        yield mnt
    finally:
        try:
            if tok is not None:
                _release(tok)
        finally:
            if not _is_mounted(mnt):
                shutil.rmtree(mnt, ignore_errors=True)


_MKFS = {
    # No lazy init: ext4lazyinit would otherwise write to the device in the background
    # and spoil exact diskstats accounting.
    "ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
    "btrfs": ["mkfs.btrfs", "-q", "-f"],
}


@contextlib.contextmanager
def filesystem(dev, fstype="ext4", mkfs_args=(), mount_opts=None):
    """mkfs.@fstype on @dev and mounts it on a new temp dir; yields the dir.
    Unmounts (with retries) on exit."""
    if fstype not in _MKFS:
        raise ValueError("unsupported fstype %r" % fstype)
    _run(_MKFS[fstype] + list(mkfs_args) + [dev])
    cmd = ["mount", "-t", fstype]
    if mount_opts:
        cmd += ["-o", mount_opts]
    with _mounted(cmd + [dev], "%s %s on" % (fstype, dev)) as mnt:
        yield mnt


def mount_devnum(mnt):
    """"MAJ:MIN" of the file system mounted at @mnt, as /proc/self/mountinfo gives it
    (its super block's s_dev: the block device for ext4/xfs, an anonymous 0:N for
    btrfs, whose stat() st_dev is yet another anonymous device per subvolume)."""
    mnt = os.path.realpath(mnt)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4].replace("\\040", " ") == mnt:
                return fields[2]
    raise RuntimeError("%s is not a mount point" % mnt)


class ScratchFs:
    """What scratch_fs() yields: .dev "/dev/loop3", .name "loop3", .devnum "7:3",
    .fsdev (the file system's MAJ:MIN in mountinfo: .devnum, or 0:N for btrfs),
    .mnt (mount dir), .fstype."""

    def __init__(self, dev, mnt, fstype):
        self.dev = dev
        self.name = os.path.basename(dev)
        self.devnum = devnum_of(self.name)
        self.mnt = mnt
        self.fstype = fstype
        self.fsdev = mount_devnum(mnt)

    def __repr__(self):
        return "ScratchFs(dev=%r, devnum=%r, fsdev=%r, mnt=%r, fstype=%r)" % (
            self.dev, self.devnum, self.fsdev, self.mnt, self.fstype)


@contextlib.contextmanager
def scratch_fs(fstype="ext4", size_mb=256, backing_dir=None, direct_io=False, mkfs_args=(),
               mount_opts=None):
    """loop_device() + filesystem(): yields a ScratchFs."""
    with loop_device(size_mb, backing_dir=backing_dir, direct_io=direct_io) as dev:
        with filesystem(dev, fstype, mkfs_args=mkfs_args, mount_opts=mount_opts) as mnt:
            yield ScratchFs(dev, mnt, fstype)


# --------------------------------------------------------------------------- cgroups

def cgroup2_root():
    """Mount point of the cgroup2 hierarchy (from /proc/self/mountinfo)."""
    for mnt, fstype, _ in _mountinfo():
        if fstype == "cgroup2":
            return mnt
    raise RuntimeError("no cgroup2 hierarchy is mounted")


def blkio_root():
    """Mount point of the cgroup v1 blkio hierarchy."""
    for mnt, fstype, opts in _mountinfo():
        if fstype == "cgroup" and "blkio" in opts.split(","):
            return mnt
    raise RuntimeError("no cgroup v1 blkio hierarchy is mounted (needed for blk-throttle)")


def require_blkio():
    """pytest.skip("needs blk-throttle: ...") unless a cgroup v1 blkio hierarchy is
    mounted (the e2e conftest turns it into a failure under CI=true, as for root)."""
    try:
        blkio_root()
    except RuntimeError as e:
        import pytest  # lazily: the module must import without pytest

        pytest.skip("needs blk-throttle: %s" % e)


def cgroup_procs(path):
    """PIDs in a cgroup (v1 or v2)."""
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def move_to_cgroup(path, pid=None):
    """Moves @pid (default: this process) into the cgroup at @path."""
    with open(os.path.join(path, "cgroup.procs"), "w") as f:
        f.write("%d\n" % (pid if pid is not None else os.getpid()))


def _cgroup_remove(path):
    """Moves every process below @path to its parent, then removes it bottom-up."""
    if not os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    for sub, dirs, _ in os.walk(path, topdown=False):
        for _ in range(50):
            pids = cgroup_procs(sub)
            if not pids:
                break
            for pid in pids:
                try:
                    move_to_cgroup(parent, pid)
                except OSError:
                    pass  # exited meanwhile
            time.sleep(0.02)
        for _ in range(100):
            try:
                os.rmdir(sub)
                break
            except FileNotFoundError:
                break
            except OSError:  # EBUSY while exiting tasks drain
                time.sleep(0.05)
        else:
            raise RuntimeError("cannot remove cgroup %s" % sub)


_cg_counter = [0]


def _unique_child(base, name, unique):
    if not unique:
        return os.path.join(base, name)
    with _lock:
        _cg_counter[0] += 1
        n = _cg_counter[0]
    return os.path.join(base, "%s-%d-%d" % (name, os.getpid(), n))


@contextlib.contextmanager
def cgroup2(name="iospan-test", unique=True, parent=None):
    """Creates a child cgroup under the cgroup2 mount (or under @parent); yields its path.
    unique=True (default) appends -PID-N so concurrent runs never collide.
    On exit moves remaining processes to the parent and removes it."""
    base = parent or cgroup2_root()
    path = _unique_child(base, name, unique)
    tok = None
    try:
        os.mkdir(path)
        tok = _register("cgroup", path, lambda p=path: _cgroup_remove(p))
        yield path
    finally:
        if tok is not None:
            _release(tok)


@contextlib.contextmanager
def blkio_throttle(devnum, read_bps=None, write_bps=None, read_iops=None, write_iops=None,
                   name="iospan-throttle", unique=True):
    """Creates a cgroup v1 blkio child with blk-throttle limits on @devnum ("MAJ:MIN");
    yields its path. Put a workload in it with move_to_cgroup(path, pid).
    Note: under v1, buffered writes are written back by kworkers in the root group and
    escape the limit: throttle reads or O_DIRECT writes."""
    root = blkio_root()
    path = _unique_child(root, name, unique)
    tok = None
    limits = (("blkio.throttle.read_bps_device", read_bps),
              ("blkio.throttle.write_bps_device", write_bps),
              ("blkio.throttle.read_iops_device", read_iops),
              ("blkio.throttle.write_iops_device", write_iops))

    def teardown():
        try:
            for fname, val in limits:
                if val is not None and os.path.exists(os.path.join(path, fname)):
                    try:
                        with open(os.path.join(path, fname), "w") as f:
                            f.write("%s 0\n" % devnum)  # 0 removes the rule
                    except OSError:
                        pass  # device already gone
        finally:
            _cgroup_remove(path)

    try:
        os.mkdir(path)
        tok = _register("blkio-cgroup", path, teardown)
        for fname, val in limits:
            if val is not None:
                with open(os.path.join(path, fname), "w") as f:
                    f.write("%s %d\n" % (devnum, int(val)))
        yield path
    finally:
        if tok is not None:
            _release(tok)


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


# --------------------------------------------------------------------------- workloads

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


# --------------------------------------------------------------------------- leak checks

def leftovers():
    """Descriptions of resources created by this process that still exist: registered
    entries not torn down, loop devices whose backing file lies in one of our temp dirs,
    and mounts on our temp dirs."""
    found = []
    with _lock:
        found += ["%s %s (not torn down)" % (kind, desc) for _, kind, desc, _ in _live]
    try:
        for name in os.listdir("/sys/block"):
            back = _loop_backing(name) if name.startswith("loop") else None
            if back and TMP_PREFIX in back:
                found.append("loop device /dev/%s still attached to %s" % (name, back))
    except OSError:
        pass
    for mnt, fstype, _ in _mountinfo():
        if TMP_PREFIX in mnt:
            found.append("%s still mounted on %s" % (fstype, mnt))
    return sorted(set(found))


# --------------------------------------------------------------------------- block tracepoints

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


# --------------------------------------------------------------------------- Perfetto

def check_perfetto(path):
    """A valid Chrome Trace Event JSON file (what trace --perfetto and incidents export
    write): every event of a known phase, complete events ("X") that nest on every track
    (pid, tid), counters ("C") with numbers only. The document."""
    with open(path) as f:
        doc = _json.load(f)
    events = doc["traceEvents"]
    assert events, "empty Perfetto file"
    tracks = {}
    for e in events:
        assert e["ph"] in ("X", "i", "M", "C"), e
        if e["ph"] == "X":
            assert e["dur"] >= 0
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), e["name"]))
        elif e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
    for key, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s in spans:
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack:
                assert s[1] <= stack[-1][1], "spans %s and %s on track %s overlap" % (
                    stack[-1], s, key)
            stack.append(s)
    return doc
