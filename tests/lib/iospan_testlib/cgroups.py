# SPDX-License-Identifier: GPL-2.0
"""cgroup v2 groups, cgroup v1 blkio throttling, a slow disk."""
import contextlib
import os
import time

from .core import _lock, _mountinfo, _register, _release  # noqa: F401


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


