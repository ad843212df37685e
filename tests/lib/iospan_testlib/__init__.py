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

The package's modules follow its sections: core (constants, the registry of what the
tests create, small system helpers), binary, loop, mounts, cgroups, workloads, leaks,
blockevents, perfetto, browser. Everything is re-exported here: tests use `tl.NAME`.
"""
from .core import *  # noqa: F401,F403
from .binary import *  # noqa: F401,F403
from .loop import *  # noqa: F401,F403
from .mounts import *  # noqa: F401,F403
from .cgroups import *  # noqa: F401,F403
from .workloads import *  # noqa: F401,F403
from .leaks import *  # noqa: F401,F403
from .blockevents import *  # noqa: F401,F403
from .perfetto import *  # noqa: F401,F403
from .browser import *  # noqa: F401,F403
from .core import _mountinfo  # noqa: F401 (tests read it)
from .loop import _loop_backing  # noqa: F401

__all__ = [
    "repo_root", "iospan_bin", "run_iospan", "popen_iospan", "is_root", "require_root",
    "loop_device", "tmpfs", "filesystem", "scratch_fs", "ScratchFs", "cgroup2",
    "cgroup2_root", "blkio_throttle", "slow_disk", "blkio_root", "move_to_cgroup",
    "cgroup_procs",
    "fio", "fio_json", "iowork_bin", "dd", "drop_caches", "read_diskstats", "parse_diskstats", "diskstats_delta",
    "DISKSTATS_FIELDS", "read_proc_io", "set_scheduler", "get_scheduler", "devnum_of",
    "leftovers", "cleanup_all", "TMP_PREFIX", "Tracer", "start_tracing", "asan_bin",
    "filter_targets", "FilterTargets", "chromium_bin", "Browser",
]
