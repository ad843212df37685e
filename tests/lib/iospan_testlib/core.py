# SPDX-License-Identifier: GPL-2.0
"""Constants, the registry of what the tests create (torn down at exit, on SIGTERM), and small system helpers."""
import atexit
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time


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
