# SPDX-License-Identifier: GPL-2.0
"""top, trace and doctor with fewer privileges than root, through setpriv(1).

Each set of privileges either lets a command trace for real (checked against a known
workload) or makes it fail with exit 1 and one line naming the missing privilege;
never exit 2 (bad usage), never "missing kernel feature", never a silent run that
traces nothing. doctor's verdict must be what the commands then do.

What each privilege is for (measured on Linux 6.18, docs/iospan-doctor.md):
CAP_BPF + CAP_PERFMON load and attach the programs, for any uid: no hook is a classic
tracepoint, which libbpf attaches by its id in tracefs (mode 0700 root).
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import iospan_testlib as tl

NOBODY = ("--reuid=nobody", "--regid=nogroup", "--clear-groups")


def setpriv(caps, nobody=True):
    """setpriv arguments for a process with exactly @caps (effective and permitted)."""
    c = "".join(",+" + cap for cap in caps)
    return (("setpriv",) + (NOBODY if nobody else ()) +
            ("--inh-caps=-all" + c, "--ambient-caps=-all" + c, "--bounding-set=-all" + c))


# name: (setpriv prefix, whether top and trace work, what their error must name)
CONFIGS = {
    "nobody": (setpriv(()), False, "CAP_BPF"),
    "uid0-no-caps": (setpriv((), nobody=False), False, "CAP_BPF"),
    "bpf-only": (setpriv(("bpf",)), False, "CAP_PERFMON"),
    "bpf-perfmon": (setpriv(("bpf", "perfmon")), True, None),
    "bpf-perfmon-dac": (setpriv(("bpf", "perfmon", "dac_read_search")), True, None),
    "uid0-bpf-perfmon": (setpriv(("bpf", "perfmon"), nobody=False), True, None),
}


@pytest.fixture(scope="module")
def can_drop():
    tl.require_root("needs root to drop privileges with setpriv")
    if not shutil.which("setpriv"):
        pytest.fail("setpriv(1) (util-linux) is needed")
    p = subprocess.run(setpriv(("bpf", "perfmon")) + ("test", "-x", tl.iospan_bin()))
    assert p.returncode == 0, "user nobody cannot run %s" % tl.iospan_bin()


def run(prefix, *args, timeout=120):
    return subprocess.run(prefix + (tl.iospan_bin(),) + args, capture_output=True, text=True,
                          timeout=timeout)


def errors(stderr):
    """stderr lines that are not warnings."""
    return [line for line in stderr.splitlines() if ": warning: " not in line]


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_commands_and_doctor_agree(can_drop, config):
    prefix, works, needle = CONFIGS[config]
    said = {}
    # -p 1: what other processes do meanwhile stays out of the output.
    for cmd in ("trace", "top"):
        p = run(prefix, cmd, "--duration", "1", "-p", "1")
        out = p.stdout + p.stderr
        assert "missing kernel feature" not in out, out
        if works:
            assert p.returncode == 0, (cmd, p.returncode, p.stderr)
        else:
            # One line naming the privilege, exit 1: a runtime failure, not bad usage.
            assert p.returncode == 1, (cmd, p.returncode, p.stderr)
            assert p.stdout == "", (cmd, p.stdout)
            err = errors(p.stderr)
            assert len(err) == 1 and needle in err[0], (cmd, p.stderr)
            said[cmd] = err[0]

        p = run(prefix, "--json", cmd, "--duration", "1", "-p", "1")
        assert p.returncode == (0 if works else 1), (cmd, p.returncode, p.stdout, p.stderr)
        docs = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
        assert docs, (cmd, p.stdout)
        if not works:
            assert p.stderr == "" and len(docs) == 1, (cmd, p.stdout, p.stderr)
            assert docs[0]["exit_code"] == 1 and needle in docs[0]["error"], docs[0]

    # doctor says what the commands did, for the same reason.
    p = run(prefix, "doctor", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ready"] is works, (doc["verdict"], doc["commands"])
    for cmd in ("top", "trace"):
        check = doc["commands"][cmd]
        assert check["loaded"] is works, (cmd, check)
        if not works:
            assert needle in check["needs"], (cmd, check)
            assert said[cmd] == "iospan: " + check["error"], (said[cmd], check["error"])
            assert needle in doc["verdict"] and cmd in doc["verdict"], doc["verdict"]
    text = run(prefix, "doctor").stdout
    assert "Ready: " + doc["verdict"] in text, text[-600:]
    if not works:
        assert needle in text.split("\nPrivileges\n")[1].split("\n\n")[0], text


WORKLOAD = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[2])):
    assert os.pread(fd, 4096, i * 4096) == b"x" * 4096
print("done", flush=True)
"""
N_READS = 25


def traced_by(prefix, cmd, *args):
    """Runs `iospan --json CMD -p PID ARGS` under @prefix while a workload makes
    N_READS preads of 4 KiB; returns (pid, file path, the JSON documents printed)."""
    with tempfile.NamedTemporaryFile(prefix=tl.TMP_PREFIX) as f:
        f.write(b"x" * 4096 * N_READS)
        f.flush()
        wl = subprocess.Popen(["/usr/bin/python3", "-c", WORKLOAD, f.name, str(N_READS)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert wl.stdout.readline().strip() == "ready"
            proc = subprocess.Popen(prefix + (tl.iospan_bin(), "--json", cmd, "-p",
                                              str(wl.pid)) + args,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            seen, deadline = "", time.time() + 60
            while "tracing" not in seen and time.time() < deadline and proc.poll() is None:
                seen += proc.stderr.readline()
            assert "tracing" in seen, (seen, proc.communicate())
            wl.stdin.write("go\n")
            wl.stdin.flush()
            assert wl.stdout.readline().strip() == "done"
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, (proc.returncode, out, err)
        finally:
            wl.kill()
            wl.wait()
    return wl.pid, f.name, [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("config", sorted(c for c in CONFIGS if CONFIGS[c][1]))
def test_enough_privileges_really_trace(can_drop, config):
    """The sets doctor calls ready trace the workload's syscalls, not nothing."""
    prefix = CONFIGS[config][0]
    pid, path, docs = traced_by(prefix, "top", "--duration", "60", "--max-files", "1000")
    procs = [p for p in docs[-1]["processes"] if p["pid"] == pid]
    assert len(procs) == 1, docs[-1]["processes"]
    # The process also faults in pages of its interpreter (mmap FS bytes): the file's row.
    rows = [f for f in procs[0]["files"] if f["path"] == os.path.realpath(path)]
    assert len(rows) == 1 and rows[0]["fs_read_bytes"] == N_READS * 4096, procs[0]["files"]

    pid, path, docs = traced_by(prefix, "trace", "-t", "0", "--ops", "pread64")
    reqs = [d for d in docs if d["type"] == "request" and d["pid"] == pid]
    assert len(reqs) == N_READS and all(r["ret"] == 4096 for r in reqs), reqs[:2]
