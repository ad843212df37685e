# SPDX-License-Identifier: GPL-2.0
"""The binaries under test, running them, tracers, root."""
import contextlib
import json as _json
import os
import re
import signal
import subprocess
import threading
import time


def repo_root():
    """The repository root (two levels above tests/lib, where this package is)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))


def iospan_bin():
    """$IOSPAN_BIN, or <repo>/build/iospan."""
    return os.environ.get("IOSPAN_BIN") or os.path.join(repo_root(), "build", "iospan")


def iowork_bin():
    """$IOWORK_BIN, or <repo>/build/iowork (the matrix's static workload, `make test`
    builds it): exact I/O from buffers it has already touched."""
    return os.environ.get("IOWORK_BIN") or os.path.join(repo_root(), "build", "iowork")


def run_iospan(*args, timeout=60, check=False, input=None, env=None):
    """Runs iospan with @args; returns subprocess.CompletedProcess (text mode).

    check=True raises AssertionError (with both streams) on a non-zero exit.
    """
    cmd = [iospan_bin()] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input,
                       env=env)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def popen_iospan(*args, **kwargs):
    """Starts iospan in the background (stdout/stderr piped, text); returns the Popen."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    kwargs.setdefault("text", True)
    return subprocess.Popen([iospan_bin()] + [str(a) for a in args], **kwargs)


def asan_bin():
    """The ASan + UBSan build of iospan (IOSPAN_ASAN_BIN, or build-asan/ beside the
    binary under test); fails the test if it is missing or is not one."""
    path = os.environ.get("IOSPAN_ASAN_BIN") or os.path.join(
        os.path.dirname(iospan_bin()) + "-asan", "iospan")
    assert os.access(path, os.X_OK), \
        "sanitizer build not found at %s: build it with 'make asan' (make test does)" % path
    # It is one: it calls into both runtimes.
    with open(path, "rb") as f:
        image = f.read()
    assert b"__asan_init" in image and b"__ubsan_handle_" in image, \
        "%s is not an ASan + UBSan build" % path
    return path


def popen_together(cmds, **kwargs):
    """Starts each argv of @cmds (Popen with @kwargs) and lets them all exec at the same
    instant: each waits in a shell for a line on its own stdin pipe until every one is
    spawned.
    Two samplers compared interval by interval must start together, or what happens in
    the gap between their starts is in one tool's interval and not the other's."""
    procs, gates = [], []
    try:
        for argv in cmds:
            r, w = os.pipe()
            gates.append(w)
            wrapped = ["sh", "-c", 'read _ && exec "$@"', "sh"] + [str(a) for a in argv]
            procs.append(subprocess.Popen(wrapped, stdin=r, **kwargs))
            os.close(r)
        for w in gates:
            os.write(w, b"\n")
    except BaseException:
        for p in procs:
            p.kill()
            p.wait()
        raise
    finally:
        for w in gates:
            os.close(w)
    return procs


def start_tracing(*args, timeout=30, **popen_args):
    """Starts a BPF command (`iospan ARGS`) and returns its Popen once it says on stderr
    that it is tracing (its hooks are attached). Raises AssertionError if it never does.
    @popen_args go to popen_iospan() (stdout=FILE)."""
    import select

    proc = popen_iospan(*args, **popen_args)
    deadline = time.time() + timeout
    seen = ""
    # Raw reads: a buffered readline() would take several lines at once (a figure not
    # available here, then "tracing"), and select() would not see the rest.
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 65536).decode(errors="replace")
            seen += chunk
            if "tracing" in seen:
                return proc
            if not chunk:
                break
        if proc.poll() is not None:
            break
    proc.kill()
    out, err = proc.communicate()
    raise AssertionError("iospan %s did not start: %s%s\n%s" % (args[0], seen, err, out))


@contextlib.contextmanager
def under_sanitizers(args, log, ready, timeout=120):
    """The sanitizer build (asan_bin()) running `iospan ARGS`, its stderr into the file
    @log, yielded once @ready is in that log (start-up is slower under ASan). At the end
    it is stopped with SIGINT and, unless the body failed, must have exited 0 with no
    sanitizer report (memory errors, undefined behaviour, leaks)."""
    with open(log, "w") as errf:
        proc = subprocess.Popen([asan_bin(), *args], stderr=errf)
    ok = False
    try:
        deadline = time.time() + timeout
        while ready not in open(log).read() and proc.poll() is None and \
                time.time() < deadline:
            time.sleep(0.2)
        yield proc
        ok = True
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=timeout)
    if ok:
        err = open(log).read()
        assert proc.returncode == 0, err[-3000:]
        assert not re.search(r"runtime error|AddressSanitizer|LeakSanitizer", err), \
            err[-3000:]


class Tracer:
    """A BPF command (`iospan ARGS`) running in the background, started once it traces,
    its stdout drained as it comes (a full pipe would stall it). stop() ends it with
    SIGINT (Ctrl-C), checks it exited 0 and returns its whole stdout."""

    def __init__(self, *args, timeout=30):
        self.args = args
        self.proc = start_tracing(*args, timeout=timeout)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=timeout)
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0, "iospan %s exited %d: %s" % (
            " ".join(map(str, self.args)), self.proc.returncode, err)
        return "".join(self.lines)

    def json_lines(self):
        """stop(), then each non-empty stdout line parsed as JSON."""
        return [_json.loads(line) for line in self.stop().splitlines() if line.strip()]


def is_root():
    return os.geteuid() == 0


def require_root(reason="this test creates devices, mounts or cgroups"):
    """pytest.skip("needs root: ...") unless root (the e2e conftest turns it into a
    failure under CI=true)."""
    if is_root():
        return
    import pytest  # lazily: the module must import without pytest

    pytest.skip("needs root: %s" % reason)
