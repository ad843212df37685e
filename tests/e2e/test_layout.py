# SPDX-License-Identifier: GPL-2.0
"""The source tree's layers (README, "Layout"): commands are front-ends over collectors,
collectors and the incident store never reach into a command, a command never into
another, and only collectors (and the feature probe) see a BPF skeleton. Each include
is resolved as the compiler resolves it (the file's folder, then the Makefile's -I
list), so a relative path ("../top/top.h") cannot slip past."""
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SRC = os.path.join(ROOT, "src")
# The Makefile's -I list for user-space objects, in order (the build folder: skeletons).
INCLUDE_DIRS = ["src", "src/abi", "src/lib/util", "src/lib/sys", "src/lib/bpf"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for dirpath, _, names in os.walk(SRC):
        if os.path.relpath(dirpath, SRC).split(os.sep)[0] == "bpf":
            continue  # the kernel side: its own rules (BPF_CFLAGS)
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(dirpath, n), ROOT)


def includes(path):
    """(name as written, resolved path relative to the repository, or None: generated)."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    for name in INCLUDE_RE.findall(text):
        for d in [os.path.dirname(path)] + INCLUDE_DIRS:
            cand = os.path.normpath(os.path.join(d, name))
            if os.path.exists(os.path.join(ROOT, cand)):
                yield name, cand
                break
        else:
            yield name, None


def layer(path):
    parts = path.split(os.sep)
    if len(parts) == 2:
        return "main"  # main.c and iospan.h: the table of commands
    if parts[1] == "cmd":
        # A command: its folder, or its file for one-file commands (stat.c, doctor.c).
        return "cmd/" + os.path.splitext(parts[2])[0]
    if parts[1] == "lib":
        return "lib/" + parts[2]
    return parts[1]


def test_the_include_resolver_sees_every_header():
    """The check below is only as good as the resolution: every quoted include is found
    in the tree, or is a generated header of the build folder (skeletons, vmlinux.h)."""
    unresolved = [(p, n) for p in sources() for n, r in includes(p)
                  if r is None and not n.endswith(".skel.h")]
    assert not unresolved


@pytest.mark.parametrize("path", list(sources()))
def test_layers(path):
    me = layer(path)
    for name, target in includes(path):
        if target is None:
            # A BPF skeleton: only a collector, or the feature probe, loads programs.
            assert me == "collect" or path == "src/lib/bpf/probe.c", \
                "%s includes the skeleton %s: commands go through a collector" % (path, name)
            continue
        them = layer(target)
        if me == "main":
            continue
        if me.startswith("cmd/"):
            assert not (them.startswith("cmd/") and them != me), \
                "%s includes %s, a header of another command" % (path, target)
        else:
            assert not them.startswith("cmd/") and target != "src/iospan.h", \
                "%s (%s) includes %s: only commands may" % (path, me, target)
        if me == "lib/util":
            assert them in ("lib/util", "abi"), \
                "%s: plain helpers include no system reader or BPF plumbing (%s)" % (
                    path, target)
        if me in ("lib/util", "lib/sys", "lib/bpf", "abi"):
            assert them not in ("collect", "incident"), \
                "%s: the libraries are below the collectors (%s)" % (path, target)
