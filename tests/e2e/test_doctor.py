# SPDX-License-Identifier: GPL-2.0
"""End-to-end tests for `iospan doctor` on the development kernel (no kprobes, no fentry)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

BIN = os.environ.get("IOSPAN_BIN", str(Path(__file__).parents[2] / "build" / "iospan"))


def run(*args, check=False, timeout=60, prefix=()):
    return subprocess.run([*prefix, BIN, *args], capture_output=True, text=True,
                          timeout=timeout, check=check)


def need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root: doctor's probes load BPF programs")


@pytest.fixture(scope="module")
def doc():
    need_root()
    p = run("doctor", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def tp(doc, name):
    rows = [t for t in doc["tracepoints"] if t["name"] == name]
    assert len(rows) == 1, name
    return rows[0]


def test_binary_exists():
    assert os.access(BIN, os.X_OK), f"no iospan binary at {BIN}: run make or set IOSPAN_BIN"


def test_json_is_one_document(doc):
    for key in ("features", "tracepoints", "cgroup2", "privileges", "bpf_stats", "plans"):
        assert key in doc, key


@pytest.mark.parametrize("feature", ["btf", "tp_btf", "raw_tp", "tracepoint", "uprobe",
                                     "ringbuf", "task_storage", "stack_trace_map",
                                     "get_stack"])
def test_working_features(doc, feature):
    f = doc["features"][feature]
    assert f["ok"] is True, f
    assert f["detail"]


@pytest.mark.parametrize("feature", ["fentry", "kprobe"])
def test_missing_features_name_errno(doc, feature):
    f = doc["features"][feature]
    assert f["ok"] is False, f
    # "load: EPERM", "attach: ENOENT": the step and the errno name.
    assert ": E" in f["detail"], f


def test_uprobe_really_fires(doc):
    assert "fired" in doc["features"]["uprobe"]["detail"]


def test_block_tracepoint_present(doc):
    t = tp(doc, "block:block_rq_complete")
    assert t["btf"] is True and t["tracefs"] is True


def test_syscall_tracepoints_are_tracefs_only(doc):
    t = tp(doc, "syscalls:sys_enter_read")
    assert t["btf"] is False and t["tracefs"] is True


@pytest.mark.parametrize("name", ["nvme:nvme_setup_cmd", "nvme:nvme_complete_rq",
                                  "scsi:scsi_dispatch_cmd_start"])
def test_absent_driver_tracepoints(doc, name):
    t = tp(doc, name)
    assert t["btf"] is False and t["tracefs"] is False


def test_all_hook_map_tracepoints_listed(doc):
    names = {t["name"] for t in doc["tracepoints"]}
    for sc in ("read", "write", "pread64", "pwrite64", "readv", "writev", "preadv",
               "pwritev", "preadv2", "pwritev2", "fsync", "fdatasync", "sync_file_range",
               "io_uring_enter"):
        assert f"syscalls:sys_enter_{sc}" in names
        assert f"syscalls:sys_exit_{sc}" in names
    for name in ("iomap:iomap_dio_rw_begin", "filemap:mm_filemap_add_to_page_cache",
                 "readahead:page_cache_async_ra", "writeback:writeback_dirty_folio",
                 "block:block_io_start", "block:block_unplug", "sched:sched_switch",
                 "sched:sched_wakeup", "scsi:scsi_dispatch_cmd_done"):
        assert name in names


def test_cgroup2_matches_mountinfo(doc):
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split() for line in f]
    cg2 = [m[4] for m in mounts if m[m.index("-") + 1] == "cgroup2"]
    assert doc["cgroup2"] == (cg2[0] if cg2 else None)


def test_privileges_match_capeff(doc):
    with open("/proc/self/status") as f:
        capeff = int(next(line for line in f if line.startswith("CapEff:")).split()[1], 16)
    p = doc["privileges"]
    assert p["euid"] == 0
    assert p["cap_sys_admin"] == bool(capeff & (1 << 21))
    assert p["cap_sys_resource"] == bool(capeff & (1 << 24))
    assert p["cap_perfmon"] == bool(capeff & (1 << 38))
    assert p["cap_bpf"] == bool(capeff & (1 << 39))
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        assert p["perf_event_paranoid"] == int(f.read())


def test_bpf_stats_usable(doc):
    assert doc["bpf_stats"]["ok"] is True
    assert doc["bpf_stats"]["detail"]


def test_plans_are_the_commands_own(doc):
    """Each BPF command's default hooks, evaluated here: tp_btf wherever BTF has the
    tracepoint, the syscalls through the sys_enter/sys_exit tracepoints (tp_btf too), and
    every required hook attachable."""
    plans = doc["plans"]
    assert set(plans) == {"top", "trace", "lat", "snoop"}, plans.keys()
    # lat's default (q2c, overall): the first bio's queue (and a split's, from its
    # original) and the completion; no issue.
    assert set(plans["lat"]) == {"block_bio_queue", "block_split", "block_rq_complete"}, \
        plans["lat"]
    assert all(h["mode"] == "tp_btf" for h in plans["lat"].values()), plans["lat"]
    # trace times off-CPU from scheduler counters unless --offcpu-periods: its default
    # plan has no sched_switch.
    assert "sched_switch" not in plans["trace"], plans["trace"].get("sched_switch")
    hooks = {"top": ("block_bio_queue", "block_rq_complete", "sched_switch"),
             "trace": ("block_bio_queue", "block_rq_complete")}
    for cmd in ("top", "trace"):
        for hook in hooks[cmd]:
            assert plans[cmd][hook]["mode"] == "tp_btf", (cmd, hook, plans[cmd][hook])
            assert plans[cmd][hook]["program"], (cmd, hook)
        for hook in ("sys_enter", "sys_exit"):
            assert plans[cmd][hook]["mode"] == "tp_btf", (cmd, hook, plans[cmd][hook])
        assert all(h["mode"] for h in plans[cmd].values() if not h["optional"]), plans[cmd]
    # trace follows writeback passes; top credits writeback at the bio and does not.
    assert "writeback_single_inode_start" in plans["trace"]
    assert "writeback_single_inode_start" not in plans["top"]
    # Both see syscalls (fsync too): trace as requests, top for FS bytes and who syncs.
    assert "sys_enter" in plans["trace"] and "sys_enter" in plans["top"]
    assert plans["top"]["writeback_dirty_folio"]["mode"] == "tp_btf"
    # snoop: the block life cycle and the dirtiers, no syscalls.
    for hook in ("block_bio_queue", "block_split", "block_rq_issue", "block_rq_complete",
                 "writeback_dirty_folio"):
        assert plans["snoop"][hook]["mode"] == "tp_btf", (hook, plans["snoop"][hook])
    assert not any(h.startswith("sys_") for h in plans["snoop"]), plans["snoop"].keys()
    assert doc["ready"] is True


def test_text_output_sections():
    need_root()
    p = run("doctor")
    assert p.returncode == 0, p.stderr
    for section in ("BPF features", "Tracepoints", "System", "Privileges", "Attach plans",
                    "Ready:"):
        assert section in p.stdout, section
    lines = p.stdout.splitlines()
    assert max(len(line) for line in lines) < 100
    fentry = next(line for line in lines if line.lstrip().startswith("fentry"))
    assert " no " in fentry and "EPERM" in fentry
    nvme = next(line for line in lines if "nvme:nvme_setup_cmd" in line)
    assert nvme.rstrip().endswith("absent")


def test_verbose_shows_probes_and_plan():
    need_root()
    p = run("doctor", "-v")
    assert p.returncode == 0, p.stderr
    assert "probe tp_btf: yes" in p.stderr
    assert "attach plan: block_rq_complete" in p.stderr


def test_mounts_tracefs_when_missing():
    need_root()
    if not shutil.which("unshare"):
        pytest.skip("needs unshare(1) for a private mount namespace")
    # A private mount namespace: unmounting there leaves everyone else's tracefs alone.
    script = f"umount /sys/kernel/tracing 2>/dev/null; exec {BIN} doctor --json"
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["features"]["tracepoint"]["ok"] is True
    assert tp(d, "block:block_rq_complete")["tracefs"] is True


def test_non_root_reports_eperm():
    need_root()  # root is needed to drop to another user
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv(1) to drop privileges")
    drop = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
    if subprocess.run([*drop, "test", "-x", BIN]).returncode:
        pytest.skip(f"user nobody cannot run {BIN}")
    p = run("doctor", "--json", prefix=drop)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["features"]["btf"]["ok"] is True
    assert d["features"]["tp_btf"] == {"ok": False, "detail": "load: EPERM",
                                       "needs": "CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"}
    assert d["privileges"]["cap_bpf"] is False
    assert d["ready"] is False


def test_help():
    p = run("doctor", "--help")
    assert p.returncode == 0
    assert "Usage: iospan doctor" in p.stdout
    assert "Example" in p.stdout


@pytest.mark.parametrize("args", [("--bogus",), ("-x",), ("extra",)])
def test_bad_usage_exits_2(args):
    p = run("doctor", *args)
    assert p.returncode == 2
    assert p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_bad_usage_json_error():
    p = run("doctor", "--json", "--bogus")
    assert p.returncode == 2
    assert "error" in json.loads(p.stdout)
