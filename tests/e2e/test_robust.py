# SPDX-License-Identifier: GPL-2.0
"""Robust under abuse, end to end (issue 12).

- A stop request (SIGINT, SIGTERM) ends top, trace and stat while their stdout is a pipe
  nobody reads and that is full: within seconds, exit code 1 and a line on stderr that
  says how much output was not written; every complete line written is valid. With room
  in the pipe, the final report is there and the exit code is 0.
- Names chosen by any local user (a file named with a terminal escape, a newline and
  invalid UTF-8; a thread named so with prctl(PR_SET_NAME)) reach the text output of top
  and trace escaped, never raw, and their JSON output is valid UTF-8 that parses. Device
  names of a hand-written stat recording too.
- `trace --perfetto` to a full disk (/dev/full, a 64 KiB tmpfs) is an error (exit 1)
  naming ENOSPC, under --json too; a path that cannot be created is reported before any
  BPF program is loaded.
"""
import fcntl
import json
import os
import signal
import struct
import subprocess
import termios
import time

import pytest

import iospan_testlib as tl

PYTHON = "/usr/bin/python3"

# A writer of small buffered writes, to give trace requests to print; runs until killed.
WRITER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
print("ready", flush=True)
while True:
    os.pwrite(fd, b"w" * 512, 0)
    time.sleep(0.001)
"""

# The names of the issue: a file and a thread that try to drive the terminal. The thread
# name is cut by the kernel to 15 bytes.
EVIL_FILE = b"\x1b[31mred\nfake line \xff\xfe"
EVIL_COMM = b"\x1b[2J\nE\xffVIL"
EVIL = r"""
import ctypes, os, sys, time
path = os.path.join(os.fsencode(sys.argv[1]), %r)
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(15, ctypes.c_char_p(%r), 0, 0, 0) == 0  # PR_SET_NAME
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
print("ready", flush=True)
while True:
    os.pwrite(fd, b"x" * 4096, 0)
    os.fsync(fd)
    time.sleep(0.02)
""" % (EVIL_FILE, EVIL_COMM)


def pipe_bytes(fd):
    """Bytes waiting in the pipe whose read end is @fd."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def read_all(fd):
    """Everything left in the pipe (its write ends are closed)."""
    os.set_blocking(fd, False)
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return data


def start_helper(code, *args):
    p = subprocess.Popen([PYTHON, "-B", "-c", code] + [str(a) for a in args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().strip() == b"ready", p.stderr.read()
    return p


def stop_helper(p):
    p.kill()
    p.wait()


def start_into(fd, args):
    """`iospan ARGS` with stdout into @fd; returns it once it says it is tracing (the BPF
    commands) or at once (stat)."""
    proc = subprocess.Popen([tl.iospan_bin()] + [str(a) for a in args], stdout=fd,
                            stderr=subprocess.PIPE)
    if args[1] != "stat":
        # What it says first (a figure not available here) comes before "tracing".
        seen = b""
        for _ in range(30):
            line = proc.stderr.readline()
            seen += line
            if b"tracing" in line or not line:
                break
        if b"tracing" not in seen:
            proc.kill()
            raise AssertionError(seen + proc.stderr.read())
    return proc


def wait_blocked(proc, rfd, timeout=60):
    """Waits until the command fills the pipe and stays blocked on it (the pipe's
    content stops growing for a second while the command would still print)."""
    deadline = time.time() + timeout
    last, since = -1, time.time()
    while time.time() < deadline:
        assert proc.poll() is None, "exited early: %s" % proc.stderr.read()
        n = pipe_bytes(rfd)
        if n != last:
            last, since = n, time.time()
        elif n > 0 and time.time() - since >= 1.0:
            return n
        time.sleep(0.05)
    raise AssertionError("the pipe never filled (%d bytes)" % last)


def blocked_cases():
    return [
        pytest.param(["--json", "top", "0.05"], id="top"),
        pytest.param(["--json", "trace", "-t", "0"], id="trace"),
        pytest.param(["--json", "stat", "0.02"], id="stat"),
    ]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
@pytest.mark.parametrize("args", blocked_cases())
def test_stop_with_stdout_blocked(iospan, scratch_ext4, args, sig):
    args = list(args)
    writer = None
    if args[1] == "trace":
        # Requests to print as they come: the ring buffer consumer blocks on stdout.
        writer = start_helper(WRITER, os.path.join(scratch_ext4.mnt, "w"))
        args += ["-p", writer.pid]
    rfd, wfd = os.pipe()  # 64 KiB, never read until the end
    proc = None
    try:
        proc = start_into(wfd, args)
        os.close(wfd)
        wfd = None
        before = wait_blocked(proc, rfd)
        t0 = time.monotonic()
        proc.send_signal(sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s still runs 10 s after %s with its stdout blocked"
                                 % (args[1], sig.name))
        took = time.monotonic() - t0
        err = proc.stderr.read().decode()
        # Dropping the final report is a failure the exit code and stderr tell.
        assert proc.returncode == 1, (proc.returncode, err)
        assert "bytes of output not written" in err and "stop request" in err, err
        out = read_all(rfd)
        assert len(out) >= before
        # What went out is what was printed: every complete line is JSON (the last one
        # may be cut where the reader stopped taking it).
        lines = out.split(b"\n")
        assert len(lines) > 1
        for line in lines[:-1]:
            json.loads(line)
        print("%s %s: exited %.2f s after the signal" % (args[1], sig.name, took))
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        if wfd is not None:
            os.close(wfd)
        os.close(rfd)
        if writer:
            stop_helper(writer)


@pytest.mark.parametrize("args,final", [
    # Only this test's own I/O (none): a busy machine's requests would fill the pipe
    # (top's report of a loaded host took 201,456 bytes), and this is about a pipe with room.
    (["--json", "top", "-p", str(os.getpid()), "5"], lambda d: d.get("stopped_early") is True),
    (["--json", "trace", "-p", str(os.getpid())], lambda d: d.get("type") == "totals"),
    (["--json", "stat", "0.5"], lambda d: "devices" in d),
], ids=["top", "trace", "stat"])
def test_stop_with_room_in_pipe_gives_final_report(iospan, root, args, final):
    rfd, wfd = os.pipe()  # 64 KiB, never read until the end
    proc = None
    try:
        proc = start_into(wfd, args)
        os.close(wfd)
        wfd = None
        time.sleep(1.2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        err = proc.stderr.read().decode()
        assert proc.returncode == 0, err
        lines = read_all(rfd).decode().splitlines()
        assert lines and final(json.loads(lines[-1])), lines[-1:]
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        if wfd is not None:
            os.close(wfd)
        os.close(rfd)


# --------------------------------------------------------------------------- names

RAW_CONTROLS = set(range(0x20)) - {ord("\n"), ord("\t")} | {0x7f}


def check_text(out):
    """No byte that drives a terminal, and valid UTF-8 throughout."""
    bad = sorted(set(out) & RAW_CONTROLS)
    assert not bad, "raw control bytes %s in the output" % bad
    out.decode("utf-8")  # raises on \xff, \xfe
    return out.decode("utf-8")


def json_strings(doc):
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from json_strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from json_strings(v)


def check_json(out):
    """Every line parses (json.loads refuses invalid UTF-8); all strings in them."""
    strings = []
    for line in out.splitlines():
        strings += list(json_strings(json.loads(line)))
    return strings


ESCAPED_FILE = r"\x1b[31mred\nfake line \xff\xfe"
ESCAPED_COMM = r"\x1b[2J\nE\xffVIL"
JSON_FILE = "\x1b[31mred\nfake line \ufffd\ufffd"
JSON_COMM = "\x1b[2J\nE\ufffdVIL"


def run_with(evil, *args):
    p = tl.run_iospan(*args, "-p", evil.pid, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def run_bytes(*args):
    p = subprocess.run([tl.iospan_bin()] + [str(a) for a in args], capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_kernel_names_escaped_in_text_valid_in_json(iospan, scratch_ext4):
    evil = start_helper(EVIL, scratch_ext4.mnt)
    try:
        pid = evil.pid
        top = check_text(run_bytes("top", "--duration", "1.5", "-p", pid))
        path_lines = [line for line in top.splitlines() if ESCAPED_FILE in line]
        assert path_lines and path_lines[0].strip() == os.path.join(
            scratch_ext4.mnt, ESCAPED_FILE), top
        # The COMMAND column is 12 wide: the start of the escaped name.
        assert any(line.startswith("%-7d %s" % (pid, ESCAPED_COMM[:12]))
                   for line in top.splitlines()), top

        trace = check_text(run_bytes("trace", "-t", "0", "--duration", "1.5", "-p", pid))
        # Its comm differs from argv[0], which iospan takes for a process title (as ps
        # shows it), so a request may name the process by its command line: its control
        # characters shown as "?" (as ps does), its thread name escaped as ls -b does.
        heads = [line for line in trace.splitlines() if " pid %d " % pid in line]
        assert heads, trace[:3000]
        assert all(" %s pid " % ESCAPED_COMM in line or " -B -c ?import ctypes" in line
                   for line in heads), heads
        assert "  file %s/%s (" % (scratch_ext4.mnt, ESCAPED_FILE) in trace, trace[:3000]

        strings = check_json(run_bytes("--json", "top", "--duration", "1.5", "-p", pid))
        assert JSON_COMM in strings
        assert os.path.join(scratch_ext4.mnt, JSON_FILE) in strings
        strings = check_json(run_bytes("--json", "trace", "-t", "0", "--duration", "1.5",
                                       "-p", pid))
        assert JSON_COMM in strings
        assert os.path.join(scratch_ext4.mnt, JSON_FILE) in strings
    finally:
        stop_helper(evil)


def test_recorded_device_names_escaped(iospan, tmp_path):
    rec = tmp_path / "evil.rec"
    name = b"\x1b[31mevil\xff"
    rec.write_bytes(b"iospan-diskstats 1\nsnapshot 100.0\n"
                    b"   8 0 " + name + b" 100 0 800 10 0 0 0 0 0 10 10\n"
                    b"snapshot 101.0\n"
                    b"   8 0 " + name + b" 200 0 1600 20 0 0 0 0 0 20 20\n")
    text = check_text(run_bytes("stat", "--replay", rec))
    assert sum(line.startswith(r"\x1b[31mevil\xff read ") for line in text.splitlines()) == 2
    docs = [json.loads(line) for line in run_bytes("--json", "stat", "--replay",
                                                   rec).splitlines()]
    assert [d["devices"][0]["disk"] for d in docs] == ["\x1b[31mevil\ufffd"] * 2


# --------------------------------------------------------------------------- perfetto

def test_perfetto_to_dev_full_is_an_error(iospan, root):
    p = tl.run_iospan("trace", "-t", "0", "--duration", "1", "--perfetto", "/dev/full")
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "cannot write /dev/full: No space left on device" in p.stderr, p.stderr
    # The report is there, before the error.
    assert "requests traced" in p.stdout
    p = tl.run_iospan("--json", "trace", "-t", "0", "--duration", "1", "--perfetto",
                      "/dev/full")
    assert p.returncode == 1, (p.returncode, p.stderr)
    docs = [json.loads(line) for line in p.stdout.splitlines()]
    assert docs[-2]["type"] == "totals"
    assert "No space left on device" in docs[-1]["error"] and docs[-1]["exit_code"] == 1


def test_perfetto_on_full_file_system_is_an_error(iospan, scratch_ext4):
    writer = start_helper(WRITER, os.path.join(scratch_ext4.mnt, "w"))
    try:
        with tl.tmpfs(1) as small:
            subprocess.run(["mount", "-o", "remount,size=64k", small], check=True)
            path = os.path.join(small, "slow.json")
            for json_mode in (False, True):
                p = tl.run_iospan(*(["--json"] if json_mode else []), "trace", "-t", "0",
                                  "-p", writer.pid, "--duration", "10", "--perfetto", path,
                                  timeout=120)
                assert p.returncode == 1, (p.returncode, p.stderr)
                if json_mode:
                    docs = [json.loads(line) for line in p.stdout.splitlines()]
                    assert docs[-2]["type"] == "totals"
                    msg = docs[-1]["error"]
                else:
                    msg = p.stderr
                assert "cannot write %s: No space left on device" % path in msg, msg
                assert "incomplete" in msg
                assert os.path.getsize(path) > 32 * 1024
                os.unlink(path)
    finally:
        stop_helper(writer)


@pytest.mark.parametrize("where", ["missing-dir", "read-only"])
def test_perfetto_bad_path_reported_before_loading(iospan, root, tmp_path, where):
    if where == "missing-dir":
        ctx = None
        path, errtext = str(tmp_path / "nope" / "t.json"), "No such file or directory"
    else:
        ctx = tl.tmpfs(1)
        mnt = ctx.__enter__()
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        path, errtext = os.path.join(mnt, "t.json"), "Read-only file system"
    try:
        p = tl.run_iospan("-v", "trace", "--perfetto", path)
        assert p.returncode == 1, p.stderr
        assert p.stderr.splitlines()[0] == "iospan: cannot write %s: %s" % (path, errtext), \
            p.stderr
        # -v shows every probe and every program loaded: none came before the error.
        assert len(p.stderr.splitlines()) == 1, p.stderr
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
