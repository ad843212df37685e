#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Start-up and stop latency of iospan's BPF commands.

For each command and run: starts `iospan --json CMD` (stdout and stderr piped and read
as they come), and measures
  start   from the spawn to the line that says it is tracing (stderr; watch: its
          "start" event on stdout);
  report  from SIGINT (sent --settle seconds later) to the end of its final report on
          stdout (top: its report document; trace: the "totals" line; lat: its
          histograms; snoop: its summary; watch: its "stop" event);
  exit    from SIGINT to the process's exit.
Prints the median and p90 over the runs (or one JSON document with --json).
With --verifier, one more run per command with IOSPAN_VERIFIER_STATS=1 says what the
kernel's verifier took per program (instructions processed, microseconds): most of the
start-up, and the part a change to the BPF code moves.

  sudo /usr/bin/python3 bench/startup.py [--runs 10] [--bin build/iospan] [COMMAND...]

Needs root. The machine should be otherwise idle: these are wall-clock times.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


# What each command is run with (a long window: only the stop request ends it), and
# whether a JSON document on stdout is its tracing mark or its last report.
COMMANDS = {
    "top": (["--duration", "1h"], None, lambda d: "processes" in d),
    "trace": ([], None, lambda d: d.get("type") == "totals"),
    "lat": ([], None, lambda d: "histograms" in d),
    "snoop": (["--duration", "1h"], None, lambda d: "summary" in d),
    # watch's store in the run's own directory (a fresh one per run).
    "watch": (["--db", "{tmp}/incidents.db"], lambda d: d.get("event") == "start",
              lambda d: d.get("event") == "stop"),
}


def json_doc(line):
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


class Run:
    """One run of `iospan --json CMD`: timestamps of what it printed, as it came."""

    def __init__(self, binary, cmd, extra):
        self.cmd = cmd
        _, self.is_start, self.is_final = COMMANDS[cmd]
        self.tracing = threading.Event()
        self.reported = threading.Event()
        self.t_tracing = self.t_report = None
        self.stderr = []
        self.t_spawn = time.monotonic()
        self.proc = subprocess.Popen([binary, "--json", cmd] + extra, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.readers = [threading.Thread(target=self._read_stderr, daemon=True),
                        threading.Thread(target=self._read_stdout, daemon=True)]
        for t in self.readers:
            t.start()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line)
            if not self.is_start and "tracing" in line:
                self.mark_tracing()

    def mark_tracing(self):
        if not self.tracing.is_set():
            self.t_tracing = time.monotonic()
            self.tracing.set()

    def _read_stdout(self):
        for line in self.proc.stdout:
            doc = json_doc(line)
            if doc is None:
                continue
            if self.is_start and self.is_start(doc):
                self.mark_tracing()
            if self.is_final(doc) and not self.reported.is_set():
                self.t_report = time.monotonic()
                self.reported.set()


def one_run(binary, cmd, settle, timeout):
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        return run_in(binary, cmd, settle, timeout, tmp)


def run_in(binary, cmd, settle, timeout, tmp):
    r = Run(binary, cmd, [a.format(tmp=tmp) for a in COMMANDS[cmd][0]])
    try:
        if not r.tracing.wait(timeout):
            raise RuntimeError("%s did not start tracing in %.0f s: %s"
                               % (cmd, timeout, "".join(r.stderr)[-500:]))
        time.sleep(settle)
        t_stop = time.monotonic()
        r.proc.send_signal(signal.SIGINT)
        rc = r.proc.wait(timeout)
        t_exit = time.monotonic()
        for t in r.readers:
            t.join(timeout)
        if rc != 0 or not r.reported.is_set():
            raise RuntimeError("%s exited %d %s its final report: %s"
                               % (cmd, rc, "after" if r.reported.is_set() else "without",
                                  "".join(r.stderr)[-500:]))
        return {"start_s": r.t_tracing - r.t_spawn, "report_s": r.t_report - t_stop,
                "exit_s": t_exit - t_stop}
    finally:
        if r.proc.poll() is None:
            r.proc.kill()
            r.proc.wait()


def verifier_stats(binary, cmd, timeout):
    """Per program: (name, instructions processed, verification us), from one start."""
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        return verifier_stats_in(binary, cmd, timeout, tmp)


def verifier_stats_in(binary, cmd, timeout, tmp):
    env = dict(os.environ, IOSPAN_VERIFIER_STATS="1")
    extra = [a.format(tmp=tmp) for a in COMMANDS[cmd][0]]
    proc = subprocess.Popen([binary, cmd] + extra, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    progs = []
    deadline = time.monotonic() + timeout
    try:
        for line in proc.stderr:
            f = line.split()
            if line.startswith("iospan: verifier:") and len(f) >= 9:
                progs.append((f[2], int(f[3]), int(f[7])))
            elif progs or time.monotonic() > deadline:
                break  # the line after the load: tracing, or an error
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return progs


def p90(values):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("commands", nargs="*", metavar="COMMAND",
                    help="the commands to measure: %s (default: all)" % ", ".join(COMMANDS))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--bin", default=os.environ.get("IOSPAN_BIN")
                    or os.path.join(REPO, "build", "iospan"))
    ap.add_argument("--settle", type=float, default=1.0,
                    help="seconds of tracing before the stop request (default 1)")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--json", action="store_true", help="one JSON document")
    ap.add_argument("--verifier", action="store_true",
                    help="also: what the verifier took per program, from one more run")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("startup.py: needs root (it loads BPF programs)")
    a.commands = a.commands or list(COMMANDS)
    if set(a.commands) - set(COMMANDS):
        sys.exit("startup.py: the commands measured are %s" % ", ".join(COMMANDS))
    if a.runs < 1:
        sys.exit("startup.py: --runs must be at least 1")

    results = {}
    for cmd in a.commands:
        runs = []
        for _ in range(a.runs):
            try:
                runs.append(one_run(a.bin, cmd, a.settle, a.timeout))
            except RuntimeError as e:
                sys.exit("startup.py: %s" % e)
        results[cmd] = {"runs": runs}
        if a.verifier:
            v = verifier_stats(a.bin, cmd, a.timeout)
            results[cmd]["verifier"] = {"total_us": sum(p[2] for p in v),
                                        "programs": [{"name": n, "insns": i, "us": u}
                                                     for n, i, u in v]}
        for key in ("start_s", "report_s", "exit_s"):
            vals = [r[key] for r in runs]
            results[cmd][key] = {"median": statistics.median(vals), "p90": p90(vals),
                                 "min": min(vals), "max": max(vals)}
    if a.json:
        json.dump({"bin": a.bin, "runs": a.runs, "settle_s": a.settle,
                   "results": results}, sys.stdout, indent=1)
        print()
        return
    print("%d runs each, %s (ms: median / p90)" % (a.runs, a.bin))
    print("%-8s %17s %17s %17s" % ("command", "start->tracing", "stop->report",
                                   "stop->exit"))
    for cmd, r in results.items():
        print("%-8s %17s %17s %17s" % (cmd, *("%7.0f / %7.0f" % (r[k]["median"] * 1e3,
                                                                  r[k]["p90"] * 1e3)
                                               for k in ("start_s", "report_s", "exit_s"))))
    for cmd, r in results.items():
        v = r.get("verifier")
        if not v:
            continue
        top = sorted(v["programs"], key=lambda p: -p["us"])[:5]
        print("%s: verifier %.0f ms over %d programs; most: %s" % (
            cmd, v["total_us"] / 1e3, len(v["programs"]),
            ", ".join("%s %.0f" % (p["name"], p["us"] / 1e3) for p in top)))


if __name__ == "__main__":
    main()
