# SPDX-License-Identifier: GPL-2.0
"""What the tests left behind: the e2e conftest checks it at session end."""
import os
import sys

from .core import TMP_PREFIX, _live, _lock, _mountinfo  # noqa: F401
from .loop import _loop_backing  # noqa: F401


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
