# SPDX-License-Identifier: GPL-2.0
"""pytest glue for iospan's end-to-end tests.

- makes tests/lib importable (import iospan_testlib);
- under CI (CI=true), a test skipped because it "needs root", "needs blk-throttle" or
  "needs prometheus" (or the OTLP receiver, or openssl) FAILS, so CI can never pass with the root tests silently skipped;
- at session end, anything the tests created and left behind (loop devices, mounts,
  cgroups) is reported, torn down, and fails the session.
"""
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

import iospan_testlib as tl  # noqa: E402

# The fuzzing pass (test_fuzz.py) is seeded: a new seed each session unless one is given,
# printed in the session header so that any run can be repeated.
FUZZ_SEED = int(os.environ.get("IOSPAN_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
os.environ["IOSPAN_FUZZ_SEED"] = str(FUZZ_SEED)


def pytest_report_header(config):
    return "iospan fuzz seed: %d (repeat with IOSPAN_FUZZ_SEED=%d)" % (FUZZ_SEED, FUZZ_SEED)


# Skips that mean "not run as root, or on a machine short of what root tests need"
# (.ci/run installs Prometheus).
ROOT_SKIP_PREFIXES = ("needs root", "needs blk-throttle", "needs prometheus",
                      "needs the OTLP receiver", "needs openssl", "needs chromium", "needs node")


def _under_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _skip_reason(report):
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2])
    return str(lr or "")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and _under_ci()):
        return
    reason = _skip_reason(report)
    # pytest.skip() gives "Skipped: needs root: ..."; skipif markers give the reason as is.
    if reason.startswith("Skipped: "):
        reason = reason[len("Skipped: "):]
    if reason.startswith(ROOT_SKIP_PREFIXES):
        report.outcome = "failed"
        report.longrepr = ("CI=true: a root-only test may not be skipped (%s); run the tests "
                           "as root" % reason)


def pytest_sessionfinish(session, exitstatus):
    left = tl.leftovers()
    if not left:
        return
    cleaned = tl.cleanup_all()
    msg = ("\niospan e2e: tests left resources behind (now cleaned up):\n  "
           + "\n  ".join(left + ["cleanup ran for: %s" % c for c in cleaned]) + "\n")
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(msg.strip(), red=True)
    else:
        sys.stderr.write(msg)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def iospan():
    """Path of the iospan binary under test; skips nothing: a missing binary fails."""
    path = tl.iospan_bin()
    assert os.access(path, os.X_OK), "iospan binary not found at %s (build it or set IOSPAN_BIN)" % path
    return path


@pytest.fixture
def root():
    tl.require_root()


@pytest.fixture
def scratch_ext4():
    tl.require_root("creates a loop device with ext4")
    with tl.scratch_fs("ext4", 256) as fs:
        yield fs
