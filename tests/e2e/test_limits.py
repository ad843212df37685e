# SPDX-License-Identifier: GPL-2.0
"""Size options and the memory they cost: out-of-range sizes are bad usage (exit 2),
sizes the machine cannot give are refused before anything is loaded (exit 1), a size at
the bound works, and what -v says the maps cost is what the kernel accounts.

Every run happens inside a memory cgroup with a limit, so a regression cannot lock
gigabytes of the test machine's memory.
"""
import contextlib
import json
import os
import signal
import subprocess
import time

import pytest

import iospan_testlib as tl

MiB = 1 << 20
BOUND = 1048576  # top --max-entries at most


def memcg_root():
    """(mount, limit file, peak file) of a memory controller we can make children in."""
    for mnt, fstype, opts in tl._mountinfo():
        if fstype == "cgroup" and "memory" in opts.split(","):
            return mnt, "memory.limit_in_bytes", "memory.max_usage_in_bytes"
    root = tl.cgroup2_root()
    with open(os.path.join(root, "cgroup.subtree_control")) as f:
        if "memory" in f.read().split():
            return root, "memory.max", "memory.peak"
    pytest.fail("no memory cgroup controller to limit the test's memory with")


@contextlib.contextmanager
def memcg(limit):
    """A memory cgroup limited to @limit bytes; yields (path, limit file name, peak
    usage file)."""
    mnt, limit_file, peak_file = memcg_root()
    with tl.cgroup2("iospan-mem", parent=mnt) as path:
        with open(os.path.join(path, limit_file), "w") as f:
            f.write(str(limit))
        yield path, limit_file, os.path.join(path, peak_file)


def run_in(cg, *args, timeout=120):
    return subprocess.run([tl.iospan_bin(), *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=lambda: tl.move_to_cgroup(cg))


def one_error(p):
    return [line for line in p.stderr.splitlines() if ": warning: " not in line]


@pytest.mark.parametrize("value", ["16777216", str(BOUND + 1), "63", "0"])
def test_out_of_range_max_entries_is_bad_usage(root, value):
    with memcg(1024 * MiB) as (cg, _, _):
        p = run_in(cg, "top", "--max-entries", value, "--duration", "1")
        assert p.returncode == 2, (value, p.returncode, p.stderr[-500:])
        err = one_error(p)
        assert p.stdout == "" and len(err) == 1, p.stderr
        assert "--max-entries" in err[0] and str(BOUND) in err[0] and "KiB" in err[0], err
        p = run_in(cg, "--json", "top", "--max-entries", value, "--duration", "1")
        doc = json.loads(p.stdout)
        assert p.returncode == 2 and doc["exit_code"] == 2 and p.stderr == "", p


def test_more_than_the_cgroup_can_give_is_refused_before_loading(root):
    """At the bound top's maps take ~0.5 GiB at load: in a 256 MiB cgroup that is one
    line and exit 1, with nothing allocated (the cgroup's peak stays small)."""
    with memcg(256 * MiB) as (cg, limit_file, peak):
        p = run_in(cg, "top", "--max-entries", str(BOUND), "--duration", "1")
        assert p.returncode == 1, (p.returncode, p.stderr[-800:])
        err = one_error(p)
        assert p.stdout == "" and len(err) == 1, p.stderr
        assert "tracing" not in p.stderr
        for what in ("--max-entries", "kernel memory", limit_file, cg):
            assert what in err[0], (what, err[0])
        p = run_in(cg, "--json", "top", "--max-entries", str(BOUND), "--duration", "1")
        doc = json.loads(p.stdout)
        assert p.returncode == 1 and doc["exit_code"] == 1, p
        assert "--max-entries" in doc["error"], doc
        with open(peak) as f:
            assert int(f.read()) < 128 * MiB, "the maps were allocated before refusing"

        # The default fits, in the same cgroup: the limit is on what is asked, not a ban.
        p = run_in(cg, "top", "--duration", "0.5")
        assert p.returncode == 0, p.stderr[-800:]


def test_at_the_bound_works_and_costs_what_v_says(root):
    """-v states the maps' cost at load; the kernel's own accounting (memlock in
    /proc/PID/fdinfo) agrees within 5%."""
    with memcg(3072 * MiB) as (cg, _, _):
        proc = subprocess.Popen([tl.iospan_bin(), "-v", "top", "--max-entries", str(BOUND),
                                 "--duration", "60"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: tl.move_to_cgroup(cg))
        seen, deadline = "", time.time() + 90
        while "tracing" not in seen and time.time() < deadline and proc.poll() is None:
            seen += proc.stderr.readline()
        assert "tracing" in seen, (seen, proc.communicate())
        memlock = 0
        for fd in os.listdir("/proc/%d/fdinfo" % proc.pid):
            try:
                with open("/proc/%d/fdinfo/%s" % (proc.pid, fd)) as f:
                    info = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:
                continue
            if "map_type" in info:
                memlock += int(info["memlock"])
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err[-800:]
        assert "PID     COMMAND" in out
    line = next(x for x in seen.splitlines() if "BPF maps:" in x)
    said = int(line.split("at load (")[1].split(" bytes")[0])
    assert said > 400 * MiB, line
    assert abs(memlock - said) <= 0.05 * said, (memlock, said, line)
