# SPDX-License-Identifier: GPL-2.0
"""`iospan stat` writes, byte for byte, what it wrote before its output went through the
shared renderer (src/lib/util/render.c).

tests/fixtures/stat-golden/NAME.out holds the text and JSON that the binary of commit
9acbfce (the last with stat's own printers) wrote when replaying tests/fixtures/NAME.rec
with each option set of VIEWS, under TZ=UTC. The recordings:
  render-views.rec  written by hand: every view of the output (escaped names, partitions,
                    an idle device, discard and flush lines, the wall clock set back,
                    counters that restart, a reboot; intervals of 0.5, 1 and 1.5 s);
  live-loop.rec     written by that binary (`iospan stat -p --record FILE 0.5 8`) on a
                    machine while a loop device read, wrote, discarded and flushed (the
                    lines of idle devices taken out).
The outputs were made with `python3 tests/e2e/test_stat_render.py --write OLD_BINARY`;
rewrite them that way only for an intended change of the output, and say so.
"""
import difflib
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))
import iospan_testlib as tl  # noqa: E402

FIXTURES = os.path.join(tl.repo_root(), "tests", "fixtures")
GOLDEN = os.path.join(FIXTURES, "stat-golden")

COMMON = [[], ["-y", "-z", "-p"], ["1"], ["-y", "1", "2"], ["10"]]
VIEWS = {
    "render-views": COMMON + [["-d", "loop0", "-d", "sda"], ["-d", "254:0", "-d", "sda1"],
                              ["-p", "-z", "1", "3"], ["-y", "0.5"]],
    "live-loop": COMMON + [["-d", "loop2", "-d", "vda"], ["-z", "-d", "loop2", "1"]],
}


def outputs(binary, name):
    """Every view of recording @name by @binary, text then JSON, as one text."""
    rec = os.path.join(FIXTURES, name + ".rec")
    env = dict(os.environ, TZ="UTC")
    parts = []
    for args in VIEWS[name]:
        for json_opt in ([], ["--json"]):
            argv = ["stat"] + json_opt + args + ["--replay", rec]
            p = subprocess.run([binary] + argv, capture_output=True, env=env, timeout=60)
            parts.append(b"### iospan %s (exit %d)\n" % (
                " ".join(json_opt + args).encode(), p.returncode))
            parts.append(p.stdout + p.stderr)
    return b"".join(parts)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_output_is_unchanged(name):
    with open(os.path.join(GOLDEN, name + ".out"), "rb") as f:
        want = f.read()
    got = outputs(tl.iospan_bin(), name)
    if got != want:
        diff = difflib.unified_diff(want.decode("utf-8", "backslashreplace").splitlines(),
                                    got.decode("utf-8", "backslashreplace").splitlines(),
                                    "before", "now", lineterm="", n=1)
        pytest.fail("stat's output of %s.rec changed:\n%s" % (name, "\n".join(list(diff)[:60])))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--write":
        sys.exit("usage: test_stat_render.py --write IOSPAN_BINARY")
    os.makedirs(GOLDEN, exist_ok=True)
    for view in VIEWS:
        with open(os.path.join(GOLDEN, view + ".out"), "wb") as f:
            f.write(outputs(sys.argv[2], view))
