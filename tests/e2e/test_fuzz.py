# SPDX-License-Identifier: GPL-2.0
"""A fuzzing pass over the recording reader and the command line, on the sanitizer build
(`make asan`: ASan + UBSan, every finding fatal), sized for CI (well under 30 s here).

Each input must end (no hang: a run still going after its time is sent SIGINT and must
then stop at once), without a crash or a sanitizer finding, with the right exit code:
2 for bad usage (a malformed recording is bad input), 1 for a runtime failure, and with
one error line (one JSON object under --json) whenever it fails; successful JSON output
must parse and be valid UTF-8.

Seeded and reproducible: the seed is printed in the session header and in every failure
(IOSPAN_FUZZ_SEED=N repeats a run); IOSPAN_FUZZ_CASES scales the number of inputs.
A failing input is kept in a directory named in the failure.
"""
import concurrent.futures
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time

import iospan_testlib as tl

SEED = int(os.environ["IOSPAN_FUZZ_SEED"])  # set by conftest.py
CASES = int(os.environ.get("IOSPAN_FUZZ_CASES", "250"))
FIXTURES = os.path.join(tl.repo_root(), "tests", "fixtures")

# Sanitizer findings end the process with these codes, and print these markers.
SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:exitcode=86:abort_on_error=0:detect_stack_use_after_return=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=87",
    "LSAN_OPTIONS": "exitcode=86",
}
SAN_MARKERS = (b"AddressSanitizer", b"LeakSanitizer", b"UndefinedBehaviorSanitizer",
               b"runtime error:")

RUN_SECONDS = 3.0   # then SIGINT: a periodic command must stop...
STOP_SECONDS = 3.0  # ...within this


asan_bin = tl.asan_bin


def unprivileged():
    """Runs as nobody when root, so top and trace stop before loading BPF programs."""
    if tl.is_root() and shutil.which("setpriv"):
        return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    return []


class Finding(Exception):
    pass


def run(argv, keep_dir, what):
    """Runs @argv; returns (rc, stdout, stderr) or raises Finding with how to repeat it."""
    env = dict(os.environ, **SAN_ENV)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         cwd=keep_dir)
    stopped = False
    try:
        out, err = p.communicate(timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        stopped = True
        try:
            out, err = p.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise Finding("hang: still running %.0f s after SIGINT: %s" % (STOP_SECONDS, what))
    if p.returncode < 0:
        raise Finding("killed by signal %d: %s\n%s" % (-p.returncode, what, err[-2000:]))
    if p.returncode in (86, 87) or any(m in err for m in SAN_MARKERS):
        raise Finding("sanitizer finding (exit %d): %s\n%s" % (p.returncode, what,
                                                              err[-4000:].decode(errors="replace")))
    if stopped and p.returncode != 0:
        raise Finding("exit %d after SIGINT (want 0): %s" % (p.returncode, what))
    return p.returncode, out, err


def strict_json(line):
    def no_constant(name):
        raise ValueError("non-JSON constant %s" % name)
    return json.loads(line, parse_constant=no_constant)


def check_output(rc, out, err, json_mode, allowed, what, verbose=False):
    """The exit code is one of @allowed; output is UTF-8; a failure is one error line.
    @json_mode None: --json came after what may have failed first; either form then."""
    if rc not in allowed:
        raise Finding("exit %d, want one of %s: %s\nstderr: %s" % (rc, allowed, what, err[-500:]))
    # JSON is always UTF-8; text may echo the bytes of a bad argument as they were given.
    out_text = out.decode("utf-8", "surrogateescape")
    err_text = err.decode("utf-8", "surrogateescape")
    # Warnings may come first; the error is the one last line.
    errors = [l for l in err_text.splitlines() if l and not l.startswith("iospan: warning: ")]
    if json_mode is None:
        json_mode = not errors and out_text.startswith("{")
    if rc == 0 and out_text.startswith("Usage: "):
        json_mode = False  # help is text, also under --json
    if json_mode:
        try:
            lines = [l for l in out.decode("utf-8").splitlines() if l.strip()]
            docs = [strict_json(l) for l in lines]
        except ValueError as e:  # UnicodeDecodeError included
            raise Finding("invalid JSON (%s): %s\n%s" % (e, what, out_text[-500:]))
        if rc != 0 and not (docs and "error" in docs[-1] and docs[-1].get("exit_code") == rc):
            raise Finding("exit %d without a JSON error object last: %s" % (rc, what))
        # -v asks for the attach plan and libbpf's messages on stderr, under --json too;
        # the error itself is then only in the JSON object, never also a text line.
        if rc != 0 and verbose:
            errors = [l for l in errors if l == "iospan: " + docs[-1]["error"]]
        if rc != 0 and errors:
            raise Finding("under --json, text on stderr: %s\n%s" % (what, err_text[-500:]))
    elif rc != 0:
        if verbose:  # -v: the attach plan and libbpf's messages come before the error
            errors = errors[-1:]
        if len(errors) != 1 or not errors[0].startswith("iospan: "):
            raise Finding("exit %d: want one 'iospan: ' error line, got %r: %s"
                          % (rc, errors[:3], what))
    return out_text


# --------------------------------------------------------------------------- recordings

SPECIAL_NUMBERS = ["nan", "inf", "-inf", "-1", "1e308", "0x10", "1e-9", "18446744073709551615",
                   "18446744073709551616", "99999999999999999999999999999", "", ".", "-0",
                   "1.5", "4294967295", "4294967296", "00000000000000000000000000007"]


def base_recordings(rng):
    texts = []
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".rec"):
            with open(os.path.join(FIXTURES, name), "rb") as f:
                texts.append(f.read())
    # A longer series, as a live recording writes it.
    lines = [b"iospan-diskstats 1", b"partition 7 1"]
    up, ios = 1000.0, 0
    for _ in range(12):
        up += rng.choice([0.5, 1.0, 1.0, 2.0])
        ios += rng.randrange(0, 500)
        lines.append(b"snapshot %.6f %.6f" % (up, 1700000000 + up))
        for minor, name in ((0, b"loop0"), (1, b"loop0p1")):
            counters = [ios, ios // 3, ios * 8, ios // 2, ios // 4, 0, ios * 2, ios // 5,
                        rng.randrange(4), ios // 2, ios, 0, 0, 0, 0, ios // 7, ios // 9]
            lines.append(b"   7 %7d %s %s" % (minor, name, b" ".join(b"%d" % c for c in counters)))
    texts.append(b"\n".join(lines) + b"\n")
    return texts


def mutate(rng, data):
    """One to four random edits: bytes, lines, numbers, lengths."""
    for _ in range(rng.randint(1, 4)):
        lines = data.split(b"\n")
        op = rng.randrange(12)
        i = rng.randrange(len(lines))
        if op == 0 and data:  # flip a byte
            k = rng.randrange(len(data))
            data = data[:k] + bytes([rng.randrange(256)]) + data[k + 1:]
            continue
        if op == 1:  # insert random bytes (NUL and invalid UTF-8 included)
            k = rng.randrange(len(data) + 1)
            data = data[:k] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[k:]
            continue
        if op == 2:  # a number becomes a special one
            toks = lines[i].split(b" ")
            nums = [j for j, t in enumerate(toks) if re.fullmatch(rb"[0-9.]+", t)]
            if nums:
                toks[rng.choice(nums)] = rng.choice(SPECIAL_NUMBERS).encode()
                lines[i] = b" ".join(toks)
        elif op == 3:  # duplicate a line
            lines.insert(i, lines[i])
        elif op == 4:  # drop a line
            del lines[i]
        elif op == 5:  # swap two lines
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 6:  # a long line: comment or device, around the old 1,023-byte limit
            n = rng.choice([1000, 1022, 1023, 1024, 1100, 4096, 65535, 65536, 70000])
            body = b"x" * n
            lines.insert(i, rng.choice([b"# " + body, b"7 9 " + body + b" 1 2 3 4 5 6 7 8 9 10 11",
                                         body,
                                         # a device line just past the old 1,023-byte cut
                                         b"# " + b"x" * 1021 + b" 7 9 fake 1 2 3 4 5 6 7 8 9 10 11"]))
        elif op == 7:  # fields added or removed on a device line
            toks = lines[i].split()
            if len(toks) > 3:
                if rng.random() < 0.5:
                    toks = toks[:rng.randint(3, len(toks))]
                else:
                    toks += [b"%d" % rng.randrange(10**6) for _ in range(rng.randint(1, 10))]
                lines[i] = b" ".join(toks)
        elif op == 8:  # snapshot times rewritten: repeated, backwards, missing epoch
            snaps = [j for j, l in enumerate(lines) if l.startswith(b"snapshot")]
            if snaps:
                j = rng.choice(snaps)
                lines[j] = rng.choice([b"snapshot 1 1", b"snapshot 0", b"snapshot 999999 1",
                                       b"snapshot 5 1800000000", b"snapshot 5 1000",
                                       b"snapshot", b"snapshot 1 2 3", b"snapshot 1e3 5"])
        elif op == 9:  # a long device name
            toks = lines[i].split()
            if len(toks) > 3:
                toks[2] = b"d" * rng.choice([31, 32, 63, 64, 65, 200])
                lines[i] = b" ".join(toks)
        elif op == 10:  # truncate
            data = data[:rng.randrange(len(data) + 1)]
            continue
        else:  # counters go back
            toks = lines[i].split()
            if len(toks) > 4:
                toks[3 + rng.randrange(len(toks) - 3)] = b"0"
                lines[i] = b" ".join(toks)
        data = b"\n".join(lines)
    return data


DECIMAL = re.compile(rb"[0-9]*\.?[0-9]*")


def reader_oracle(data, args, out, json_mode):
    """What any correct reader does with @data, where it can be told from outside: None,
    or why the outcome is wrong. Only without a count, which stops reading early."""
    if len([a for a in args if re.fullmatch(r"[0-9.]+", a)]) > 1:
        return None
    if b"\0" in data:
        return "a NUL byte (binary data) was read as text"
    lines = [l.strip() for l in data.replace(b"\r", b"").split(b"\n")]
    for l in lines:
        toks = l.split()
        if toks[:1] == [b"snapshot"] and not all(DECIMAL.fullmatch(t) for t in toks[1:]):
            return "a snapshot time that is no decimal number was used: %r" % l[:80]
        if len(l) > 65535:
            return "a line longer than 65,535 bytes was read"
    if json_mode:
        # JSON carries a name that is not UTF-8 with U+FFFD for what is not: compare so.
        def lossy(name):
            return re.sub("\ufffd+", "\ufffd", name)
        named = {lossy(l.split()[2].decode("utf-8", "replace")) for l in lines
                 if not l.startswith(b"#") and len(l.split()) > 2}
        for line in out.splitlines():
            for d in json.loads(line)["devices"]:
                if lossy(d["disk"]) not in named:
                    return "device %r is on no line of the recording (a comment?)" % d["disk"]
    return None


REPLAY_ARGS = [[], ["-y"], ["-p"], ["-z"], ["-y", "-p", "-z"], ["-d", "loop0"],
               ["-d", "7:0", "-y"], ["0.5"], ["1", "2"], ["-y", "2", "1"]]


def replay_case(rng, base, k, workdir):
    data = mutate(rng, rng.choice(base)) if rng.random() < 0.95 else \
        bytes(rng.randrange(256) for _ in range(rng.randrange(2000)))
    path = os.path.join(workdir, "case-%04d.rec" % k)
    with open(path, "wb") as f:
        f.write(data)
    json_mode = rng.random() < 0.5
    args = ["stat"] + (["--json"] if json_mode else []) + rng.choice(REPLAY_ARGS) + \
        ["--replay", path]
    return path, data, json_mode, args


def test_fuzz_recordings():
    """Mutated recordings (bytes, numbers, lines, lengths, times) through --replay."""
    rng = random.Random(SEED)
    binary = asan_bin()
    base = base_recordings(rng)
    workdir = tempfile.mkdtemp(prefix=tl.TMP_PREFIX + "fuzz-rec-")
    cases = [replay_case(rng, base, k, workdir) for k in range(CASES)]
    outcomes = {0: 0, 2: 0}

    def one(case):
        path, data, json_mode, args = case
        what = "seed %d: %s %s (input kept in %s)" % (SEED, os.path.basename(binary),
                                                       " ".join(args), path)
        rc, out, err = run([binary] + args, workdir, what)
        check_output(rc, out, err, json_mode, (0, 2), what)
        wrong = reader_oracle(data, args, out, json_mode) if rc == 0 else None
        if wrong:
            raise Finding("exit 0, but %s: %s" % (wrong, what))
        os.unlink(path)
        return rc

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for rc in pool.map(one, cases):
            outcomes[rc] += 1
    print("fuzz seed %d: %d recordings in %.1f s: %d read, %d refused"
          % (SEED, len(cases), time.monotonic() - start, outcomes[0], outcomes[2]))
    # Both outcomes occur: the mutations are neither all harmless nor all fatal.
    assert outcomes[0] and outcomes[2], outcomes
    shutil.rmtree(workdir)


# --------------------------------------------------------------------------- command line

# Options of each command: name -> kind of value (None: a flag).
OPTIONS = {
    "stat": {"-d": "disk", "--disk": "disk", "-z": None, "-y": None, "-p": None,
             "--partitions": None, "--record": "outpath", "--replay": "path"},
    "top": {"-d": "disk", "-p": "pid", "--cgroup": "cgroup", "-n": "count", "--max-files": "count",
            "--sort": "word", "--threads": None, "--stall-threshold": "threshold",
            "--duration": "period", "--max-entries": "count", "--no-syscalls": None},
    "trace": {"-t": "threshold", "-i": "period", "--interval": "period", "--duration": "period",
              "-p": "pid", "--tid": "pid", "--comm": "word", "--cgroup": "cgroup",
              "--file": "path", "--dir": "path", "-d": "disk", "--ops": "ops",
              "--perfetto": "outpath", "--offcpu-periods": None},
    "doctor": {},
    "watch": {"-d": "disk", "--util": "count", "--await": "threshold", "--read-mbps": "count",
              "--iops": "count", "--psi-some": "threshold", "--for": "count",
              "--interval": "period", "--pre": "threshold", "--capture": "period",
              "--cooldown": "threshold", "--max-per-hour": "count", "--keep": "count",
              "--max-age": "threshold", "--max-db-size": "count", "--duration": "period",
              "--db": "outpath", "--config": "path", "--detail": "word", "--stalls": "word",
              "--capture-threshold": "threshold", "--stall-threshold": "threshold"},
    "incidents": {"--db": "path", "--config": "path", "--format": "word", "-o": "outpath",
                  "--keep": "count", "--max-age": "threshold", "--max-db-size": "count"},
}
COMMON = ["--json", "-v", "--verbose", "-h", "--help"]

GOOD = {"disk": ["loop0", "7:0", "/dev/loop0"], "pid": ["1"], "cgroup": ["/"],
        "count": ["1", "10", "64"], "word": ["disk", "fs", "latency", "a"],
        "threshold": ["0", "10ms", "1.5"], "period": ["0.05", "10ms"],
        "path": ["/tmp", "/etc/hostname"], "ops": ["read,write", "all", "sync"],
        # Files written: relative, so inside the run's scratch directory.
        "outpath": ["out.rec", "out.json", "no/such/dir/out"]}
# Values no option of that kind takes: each must give exit 2.
BAD = {"disk": ["", "nosuchdisk", "99999:99999", "/dev/null"],
       "pid": ["0", "-1", "0x10", "1e3", "99999999999", ""],
       "cgroup": ["", "/nonexistent-cgroup", "../../etc"],
       "count": ["-1", "0x10", "1e3", "abc", "", "99999999999999999999999"],
       "word": ["", "x" * 40],
       "threshold": ["-1", "0x10", "1e-9", "nan", "inf", "abc", "", "1 s", "1xs"],
       "period": ["0", "1ns", "999us", "1e-9", "0x10", "-1", "nan", "", "1e30"],
       "path": ["", "/nonexistent/x"],
       "ops": ["", ",", "bogus", "read,,write"],
       "outpath": []}
WILD = ["", "-", "--", "---", "-1", "x" * 5000, "é" * 600, "\udcff\udcfe", "%s%n%x%p",
        "--json=1", "--help=x", "-vvvv", "\t", "=", "0", "1", "0.5", "t", "s", "st", "to",
        "tr", "d", "help", "--duration", "-d"]


def bad_value_case(rng):
    """A command with good options and one bad value: exactly exit 2, one line."""
    cmd = rng.choice(["stat", "top", "trace"])
    opts = {o: k for o, k in OPTIONS[cmd].items() if k and k in BAD and BAD[k]}
    if cmd == "stat":
        opts.pop("--replay", None)  # a bad recording is the other test's business
    opt, kind = rng.choice(sorted(opts.items()))
    args = [cmd]
    if rng.random() < 0.5:
        args.append("--json")
    for _ in range(rng.randint(0, 2)):
        o, k = rng.choice(sorted(OPTIONS[cmd].items()))
        if o in ("--record", "--replay", "-d", "--disk", "-p", "--tid", "--comm", "--cgroup",
                 "--file", "--dir") or o == opt:
            continue  # filters given twice are errors of their own
        args += [o] + ([rng.choice(GOOD[k])] if k else [])
    args += [opt, rng.choice(BAD[kind])]
    if cmd == "top":
        args += ["--duration", "0.05"] if "--duration" not in args else []
    # --json comes before the bad value, so the error is the JSON object.
    return args, (2,), "--json" in args


def wild_case(rng):
    """Random words, options and values in any order: exit 0, 1 or 2, never worse."""
    args = []
    if rng.random() < 0.3:
        args.append(rng.choice(COMMON + WILD))
    cmd = rng.choice(list(OPTIONS) + ["help", "t", "s", "tr", "x", ""])
    args.append(cmd)
    opts = OPTIONS.get(cmd, OPTIONS["top"])
    for _ in range(rng.randint(0, 5)):
        r = rng.random()
        if r < 0.5 and opts:
            o, k = rng.choice(sorted(opts.items()))
            args.append(o)
            if k:
                args.append(rng.choice(GOOD[k] + BAD[k] + WILD) if rng.random() < 0.9 else "")
        elif r < 0.7:
            args.append(rng.choice(COMMON))
        else:
            args.append(rng.choice(WILD))
    # --json before the command is in force whatever fails; after it, only from there on.
    global_json = "--json" in args[:args.index(cmd)]
    return args, (0, 1, 2), True if global_json else (None if "--json" in args else False)


def test_fuzz_command_line():
    """Random and targeted invocations of every command, unprivileged (no BPF loads)."""
    rng = random.Random(SEED + 1)
    binary = asan_bin()
    workdir = tempfile.mkdtemp(prefix=tl.TMP_PREFIX + "fuzz-cli-")
    os.chmod(workdir, 0o777)
    cases = [bad_value_case(rng) if rng.random() < 0.4 else wild_case(rng)
             for _ in range(CASES)]
    outcomes = {}

    def one(case):
        args, allowed, json_mode = case
        argv = [a.encode("utf-8", "surrogateescape") for a in args]
        what = "seed %d: %s %r" % (SEED + 1, os.path.basename(binary), args)
        rc, out, err = run(unprivileged() + [binary] + argv, workdir, what)
        check_output(rc, out, err, json_mode, allowed, what,
                     verbose=bool({"-v", "--verbose", "-vvvv"} & set(args)))
        return rc

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for rc in pool.map(one, cases):
            outcomes[rc] = outcomes.get(rc, 0) + 1
    print("fuzz seed %d: %d command lines in %.1f s, exit codes %s"
          % (SEED + 1, len(cases), time.monotonic() - start, sorted(outcomes.items())))
    assert outcomes.get(2), outcomes
    shutil.rmtree(workdir)
