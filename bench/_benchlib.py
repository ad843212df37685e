# SPDX-License-Identifier: GPL-2.0
"""Private fallback fixtures for bench/overhead.py.

These mirror the API of the shared tests/lib/iospan_testlib.py
(tmpfs, loop_device, fio, read_diskstats) and are only used when that
module cannot be imported.  Once the shared module exists, overhead.py
prefers it; this file can then be deleted.
"""

import contextlib
import json as _json
import os
import shutil
import subprocess
import tempfile


def _run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, **kw)


@contextlib.contextmanager
def tmpfs(size_mb):
    d = tempfile.mkdtemp(prefix="iospan-bench-tmpfs-")
    mounted = False
    try:
        _run(["mount", "-t", "tmpfs", "-o", "size=%dm" % size_mb,
              "iospan-bench", d])
        mounted = True
        yield d
    finally:
        if mounted:
            r = subprocess.run(["umount", d], stderr=subprocess.DEVNULL)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", d], stderr=subprocess.DEVNULL)
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def loop_device(size_mb=256, backing_dir=None, direct_io=False):
    own_dir = backing_dir is None
    d = backing_dir or tempfile.mkdtemp(prefix="iospan-bench-loop-")
    fd, path = tempfile.mkstemp(prefix="loop-", suffix=".img", dir=d)
    os.close(fd)
    dev = None
    try:
        os.truncate(path, size_mb * 1024 * 1024)
        cmd = ["losetup", "--find", "--show"]
        if direct_io:
            cmd.append("--direct-io=on")
        dev = _run(cmd + [path]).stdout.strip()
        yield dev
    finally:
        if dev:
            subprocess.run(["losetup", "-d", dev], stderr=subprocess.DEVNULL)
        try:
            os.unlink(path)
        except OSError:
            pass
        if own_dir:
            shutil.rmtree(d, ignore_errors=True)


def fio(args_list, json=True):
    """Run fio with args_list (without the leading 'fio')."""
    cmd = ["fio"] + list(args_list)
    if json:
        cmd.append("--output-format=json")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError("fio failed (rc=%d): %s" %
                           (p.returncode, (p.stderr or p.stdout).strip()[-500:]))
    if not json:
        return p.stdout
    out = p.stdout
    # fio may print warnings before the JSON document
    i = out.find("{")
    return _json.loads(out[i:])


def read_diskstats():
    """Return {devname: [fields after the name, as ints]}."""
    res = {}
    with open("/proc/diskstats") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4:
                continue
            res[parts[2]] = [int(x) for x in parts[3:]]
    return res
