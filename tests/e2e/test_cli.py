# SPDX-License-Identifier: GPL-2.0
"""Command-line contract (no root needed): usage errors are exactly one line and exit 2
(on stderr as text; on stdout as one JSON object with "error" under --json);
--version and every command's --help exit 0."""
import json
import os
import re
import subprocess

import pytest

import iospan_testlib as tl


def commands():
    """Command names listed by `iospan --help` (so new commands are covered too)."""
    try:
        p = tl.run_iospan("--help")
    except OSError:  # no binary: test_command_help then fails on "stat" with the reason
        return ["stat"]
    names, in_cmds = [], False
    for line in p.stdout.splitlines():
        if line.strip().lower().startswith("commands"):
            in_cmds = True
            continue
        if in_cmds:
            m = re.match(r"^\s+([a-z][a-z0-9-]*)\s", line)
            if not m:
                if names:
                    break
                continue
            names.append(m.group(1))
    return names


def lines(text):
    return [l for l in text.splitlines() if l.strip()]


def assert_one_line_usage_error(p, what):
    out, err = lines(p.stdout), lines(p.stderr)
    assert p.returncode == 2, "%s: exit %d, want 2\nstdout: %r\nstderr: %r" % (
        what, p.returncode, p.stdout, p.stderr)
    assert out == [] and len(err) == 1, "%s: want one line on stderr only, got stdout=%r stderr=%r" % (
        what, p.stdout, p.stderr)
    assert err[0].startswith("iospan: "), err[0]
    assert len(err[0]) < 200, err[0]


def assert_one_line_json_error(p, what):
    out, err = lines(p.stdout), lines(p.stderr)
    assert p.returncode == 2, "%s: exit %d, want 2\nstdout: %r\nstderr: %r" % (
        what, p.returncode, p.stdout, p.stderr)
    assert err == [] and len(out) == 1, "%s: want one JSON line on stdout only, got stdout=%r stderr=%r" % (
        what, p.stdout, p.stderr)
    doc = json.loads(out[0])
    assert isinstance(doc, dict) and isinstance(doc.get("error"), str) and doc["error"], doc


# (args, what must be named in the message, case-insensitively)
USAGE_ERRORS = [
    (["nosuchcmd"], "nosuchcmd"),
    (["--bogus"], "--bogus"),
    (["stat", "--bogus"], "--bogus"),
    (["stat", "-Q"], "-q"),
    (["stat", "0"], "0"),
    (["stat", "-1"], "-1"),
    (["stat", "abc"], "abc"),
    (["stat", "1", "0"], "0"),
    (["stat", "1", "abc"], "abc"),
    (["stat", "1", "1", "1"], "1"),
    (["stat", "-d", "nosuchdisk", "1", "1"], "nosuchdisk"),
    (["stat", "-d", "999:999", "1", "1"], "999:999"),
    (["stat", "--replay", "/nonexistent/iospan.rec"], "/nonexistent/iospan.rec"),
    # Numbers are decimal, as in sysstat: no hex interval (it waited 16 s), no exponent.
    (["stat", "0x10"], "0x10"),
    (["stat", "1e1"], "1e1"),
    (["stat", "1", "0x10"], "0x10"),
    # Intervals and durations: at least 1 ms, the same rule for every command.
    (["top", "--duration", "1e-9"], "1e-9"),
    (["top", "--duration", "1ns"], "1ns"),
    (["top", "0.0001"], "0.0001"),
    (["trace", "--duration", "10us"], "10us"),
    (["trace", "-i", "10us"], "10us"),
    (["stat", "999us"], "999us"),
    # A unique prefix selects a command; a shared one is ambiguous and names both.
    (["t"], "ambiguous command 't': top, trace"),
    (["help", "t"], "top, trace"),
    (["--help", "nosuchcmd"], "nosuchcmd"),
    # A filter given twice is refused, not silently replaced.
    (["trace", "-p", "1", "-p", "1"], "given twice"),
    (["trace", "--tid", "1", "--tid", "1"], "given twice"),
    (["trace", "--comm", "a", "--comm", "b"], "given twice"),
]


@pytest.mark.parametrize("args,named", USAGE_ERRORS, ids=lambda a: " ".join(a) if isinstance(a, list) else None)
def test_usage_error_is_one_line_exit_2(args, named):
    p = tl.run_iospan(*args, timeout=10)
    if args[:2] == ["stat", "--replay"]:
        # A missing file: bad input (2) or runtime failure (1), but one line either way.
        assert p.returncode in (1, 2), p
        assert lines(p.stdout) == [] and len(lines(p.stderr)) == 1, p
    else:
        assert_one_line_usage_error(p, " ".join(args))
    assert named.lower() in p.stderr.lower(), "message should name %r: %r" % (named, p.stderr)


@pytest.mark.parametrize("args,named", USAGE_ERRORS, ids=lambda a: " ".join(a) if isinstance(a, list) else None)
def test_usage_error_json_is_one_json_line(args, named):
    # --json as a global option (before the command) is seen before anything else fails.
    p = tl.run_iospan("--json", *args, timeout=10)
    if args[:2] == ["stat", "--replay"]:
        assert p.returncode in (1, 2), p
        assert lines(p.stderr) == [] and len(lines(p.stdout)) == 1, p
        assert "error" in json.loads(p.stdout)
    else:
        assert_one_line_json_error(p, "--json " + " ".join(args))


@pytest.mark.parametrize("args", [
    ["stat", "--json", "0"],
    ["stat", "--json", "abc"],
    ["stat", "--json", "-d", "nosuchdisk", "1", "1"],
    ["stat", "0", "--json"],
])
def test_usage_error_json_after_command(args):
    p = tl.run_iospan(*args, timeout=10)
    assert_one_line_json_error(p, " ".join(args))


def test_no_command_is_usage_error():
    p = tl.run_iospan()
    assert p.returncode == 2
    assert p.stdout == ""
    assert "usage" in p.stderr.lower()


def test_version():
    with open(os.path.join(tl.repo_root(), "VERSION")) as f:
        version = f.read().strip()
    for opt in ("--version", "-V"):
        p = tl.run_iospan(opt)
        assert p.returncode == 0, p
        assert p.stdout.strip() == "iospan %s" % version
        assert p.stderr == ""


def test_commands_listed():
    names = commands()
    assert "stat" in names, names


def test_top_level_help():
    for args in (["--help"], ["-h"], ["help"]):
        p = tl.run_iospan(*args)
        assert p.returncode == 0, p
        assert "usage" in p.stdout.lower()
        assert all(len(l) < 100 for l in p.stdout.splitlines())


@pytest.mark.parametrize("cmd", commands())
def test_command_help(cmd):
    for args in ([cmd, "--help"], [cmd, "-h"], ["help", cmd]):
        p = tl.run_iospan(*args, timeout=10)
        assert p.returncode == 0, "%s: exit %d\n%s%s" % (args, p.returncode, p.stdout, p.stderr)
        assert "usage" in p.stdout.lower(), p.stdout
        assert p.stderr == "", p.stderr
        long_lines = [l for l in p.stdout.splitlines() if len(l) >= 100]
        assert not long_lines, "help lines must stay under 100 columns: %r" % long_lines


def test_stat_help_text_has_no_printf_escapes():
    p = tl.run_iospan("stat", "--help")
    assert "%%" not in p.stdout, "literal '%%' in help (printf escape printed verbatim)"


def test_unambiguous_prefix_selects_command():
    p = tl.run_iospan("sta", "--help")
    assert p.returncode == 0 and p.stdout == tl.run_iospan("stat", "--help").stdout


def test_json_without_command_is_json_error():
    """`iospan --json` alone: the usage error as one JSON object (it printed text)."""
    p = tl.run_iospan("--json", timeout=10)
    assert_one_line_json_error(p, "--json")
    assert "usage" in json.loads(p.stdout)["error"].lower()


def test_help_before_command_shows_its_help():
    """`iospan --help stat` is stat's help, as `iospan stat --help` (it was the general one)."""
    want = tl.run_iospan("stat", "--help").stdout
    assert "iospan stat" in want
    for args in (["--help", "stat"], ["-h", "stat"], ["--help", "sta"], ["--json", "-h", "stat"]):
        p = tl.run_iospan(*args, timeout=10)
        assert p.returncode == 0 and p.stderr == "", (args, p)
        assert p.stdout == want, args


@pytest.mark.parametrize("cmd", [None] + commands())
def test_help_lists_verbose(cmd):
    """-v is also --verbose, and every help says so."""
    p = tl.run_iospan(*([cmd, "--help"] if cmd else ["--help"]), timeout=10)
    assert p.returncode == 0, p
    assert re.search(r"^\s*-v, --verbose\b", p.stdout, re.M), p.stdout


def two_block_devices():
    with open("/proc/diskstats") as f:
        names = [line.split()[2] for line in f if len(line.split()) >= 14]
    return names[:2]


@pytest.mark.parametrize("cmd", ["top", "trace"])
def test_disk_given_twice_is_refused(cmd):
    """`top -d A -d B` kept only B; the filter follows one disk, so two are a usage error."""
    disks = two_block_devices()
    assert len(disks) == 2, disks
    p = tl.run_iospan(cmd, "-d", disks[0], "-d", disks[1], "--duration", "0.2", timeout=60)
    assert_one_line_usage_error(p, "%s -d %s -d %s" % (cmd, disks[0], disks[1]))
    assert "given twice" in p.stderr and "-d" in p.stderr, p.stderr


@pytest.mark.parametrize("cmd", ["top", "trace"])
def test_empty_cgroup_is_refused(cmd):
    """`--cgroup ''` meant the root cgroup (everything) without a word; '/' says that."""
    p = tl.run_iospan(cmd, "--cgroup", "", "--duration", "0.2", timeout=60)
    assert_one_line_usage_error(p, "%s --cgroup ''" % cmd)
    assert "--cgroup" in p.stderr and "'/'" in p.stderr, p.stderr
    p = tl.run_iospan("--json", cmd, "--cgroup", "", "--duration", "0.2", timeout=60)
    assert_one_line_json_error(p, "--json %s --cgroup ''" % cmd)


def run_bytes(*args):
    return subprocess.run([tl.iospan_bin()] + list(args), capture_output=True, timeout=10)


@pytest.mark.parametrize("name", [
    "nosuch" + "é" * 700,              # 1,406 bytes: was cut at 1,023, inside an é
    "x" * 5000,                        # long ASCII: was cut, now whole
], ids=["utf8-1406-bytes", "ascii-5000-bytes"])
def test_long_error_is_whole_and_valid_utf8(name):
    """Error messages were cut at 1,023 bytes, sometimes inside a UTF-8 character, which
    made the JSON error object invalid. Now they are whole, in text and in JSON."""
    p = run_bytes(name)
    assert p.returncode == 2
    err = p.stderr.decode("utf-8")          # strict: a cut character raises here
    assert err.count("\n") == 1 and name in err, err[-80:]
    p = run_bytes("--json", name)
    assert p.returncode == 2 and p.stderr == b""
    doc = json.loads(p.stdout.decode("utf-8"))
    assert name in doc["error"] and doc["exit_code"] == 2


def test_json_error_with_invalid_utf8_is_valid_json():
    """Bytes that are no UTF-8 (from the command line, a path) reach JSON as U+FFFD."""
    p = run_bytes("--json", b"E\xffVIL\xfe")
    assert p.returncode == 2
    doc = json.loads(p.stdout.decode("utf-8"))
    assert "E\ufffdVIL\ufffd" in doc["error"], doc
