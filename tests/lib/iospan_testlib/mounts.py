# SPDX-License-Identifier: GPL-2.0
"""Scratch file systems on loop devices, tmpfs."""
import contextlib
import os
import shutil

from .core import _is_mounted, _mkdtemp, _register, _release, _run, _umount_rmdir, devnum_of  # noqa: F401
from .loop import loop_device  # noqa: F401


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
