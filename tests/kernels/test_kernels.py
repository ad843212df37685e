# SPDX-License-Identifier: GPL-2.0
"""The kernel test matrix: iospan on each of Debian 12's kernels, under QEMU.

Each kernel of the matrix (tests/kernels/matrix.py: every amd64 flavour of every
kernel series in Debian 12's archive, newest version) boots once, with build/iospan
and the guest workload tool (build/iowork) in an initramfs and ext4, xfs, btrfs and
raw virtio disks. The guest suite (guest/suite.sh) runs doctor, stat, top and trace
against known workloads and brings every output back; the tests here check them
against ground truth with the host suite's tolerances: the workloads' own counts
(exact bytes and calls, printed by iowork), /proc/diskstats before and after.

Kernels of the cloud-amd64 flavour run the full suite (ext4, xfs, btrfs, raw disk);
the other flavours (same series, other configurations) a smoke subset: doctor, stat
and top/trace on ext4. IOSPAN_KERNELS=name,name picks kernels. Without QEMU or the
Debian archive the tests skip, saying why; under CI=true they fail instead.
IOSPAN_MATRIX_REUSE=1 checks the results of the last boots again without booting.
"""
import collections
import concurrent.futures
import json
import os
import re
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import matrix  # noqa: E402

MiB = 1 << 20
TOLERANCE = 0.02
FULL_FLAVOUR = "cloud-amd64"
FULL_FS = ("ext4", "xfs", "btrfs", "raw")
SMOKE_FS = ("ext4",)


def under_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def cannot_run(reason):
    """Skips (fails under CI=true: the matrix must run there) with @reason."""
    if under_ci():
        pytest.fail("CI=true: the kernel matrix cannot run: %s" % reason, pytrace=False)
    pytest.skip("kernel matrix: %s" % reason)


def flavour(kernel):
    return next(f for f in matrix.FLAVOURS if kernel.endswith("-" + f))


def suite_of(kernel):
    return "full" if flavour(kernel) == FULL_FLAVOUR else "smoke"


def filesystems(kernel):
    return FULL_FS if suite_of(kernel) == "full" else SMOKE_FS


def _selected_kernels():
    """[(name, package)] of the matrix (IOSPAN_KERNELS narrows it), or ([], reason)."""
    try:
        kernels = matrix.list_kernels()
    except matrix.MatrixError as e:
        return [], str(e)
    want = [k for k in os.environ.get("IOSPAN_KERNELS", "").split(",") if k]
    if want:
        unknown = set(want) - {name for name, _ in kernels}
        if unknown:
            return [], "IOSPAN_KERNELS names kernels not in the matrix: %s" % sorted(unknown)
        kernels = [k for k in kernels if k[0] in want]
    return kernels, None


KERNELS, WHY_NO_KERNELS = _selected_kernels()
PACKAGES = dict(KERNELS)
# Without kernels one placeholder case carries the reason into a skip (or a CI failure).
KERNEL_IDS = [name for name, _ in KERNELS] or ["no-kernels"]
FS_CASES = [(k, fs) for k in KERNEL_IDS for fs in
            (filesystems(k) if k in PACKAGES else ("ext4",))]
FILE_FS_CASES = [c for c in FS_CASES if c[1] != "raw"]
AIO_CASES = FILE_FS_CASES




def case_id(case):
    # An empty parameter list (IOSPAN_KERNELS without a full-suite kernel) is one NOTSET.
    return "%s-%s" % case if isinstance(case, tuple) else str(case)


# --------------------------------------------------------------------------- boots

class GuestResults:
    """The results directory of one boot, read by scenario and command."""

    def __init__(self, kernel, path, console):
        self.kernel, self.path, self.console = kernel, path, console

    def file(self, scenario, name):
        p = os.path.join(self.path, scenario, name)
        if not os.path.exists(p):
            return None
        with open(p, errors="replace") as f:
            return f.read()

    def has(self, scenario):
        return os.path.isdir(os.path.join(self.path, scenario))

    def command(self, scenario, name):
        """(rc, stdout, stderr) of a guest command; rc None if it never ended."""
        rc = self.file(scenario, name + ".rc")
        return (int(rc) if rc and rc.strip() else None, self.file(scenario, name + ".out") or "",
                self.file(scenario, name + ".err") or "")

    def guest_log(self):
        """What the guest said on its console (module and mount failures) and the suite log."""
        said = [line for line in self.console.splitlines() if "guest:" in line]
        return "\n".join(said) + "\n" + (self.file(".", "suite.log") or "")

    def ok(self, scenario, name):
        """The stdout of a guest command that must have succeeded."""
        assert self.has(scenario), "%s: the guest wrote no %s/:\n%s" % (
            self.kernel, scenario, self.guest_log())
        missing = self.file(scenario, "missing")
        assert not missing, "%s: %s: %s\n%s" % (self.kernel, scenario, missing.strip(),
                                                self.guest_log())
        rc, out, err = self.command(scenario, name)
        assert rc is not None, "%s: %s/%s did not run:\n%s" % (self.kernel, scenario, name,
                                                                self.guest_log())
        assert rc == 0, "%s: %s/%s exited %s\nstderr:\n%s\nstdout (end):\n%s" % (
            self.kernel, scenario, name, rc, err.strip()[-3000:], out.strip()[-1500:])
        return out

    def workload(self, scenario, name):
        """iowork's JSON line: what the workload did."""
        return json.loads(self.ok(scenario, name).strip().splitlines()[-1])

    def diskstats_delta(self, scenario, first="before", last="after"):
        disk = self.file(scenario, "disk").strip()
        before = parse_diskstats(self.file(scenario, "diskstats." + first) or "")
        after = parse_diskstats(self.file(scenario, "diskstats." + last) or "")
        assert disk in before and disk in after, "%s: no diskstats of %s in %s" % (
            self.kernel, disk, scenario)
        return {k: after[disk][k] - before[disk][k] for k in after[disk]}


DISKSTATS_FIELDS = ("rd_ios", "rd_merges", "rd_sectors", "rd_ticks", "wr_ios", "wr_merges",
                    "wr_sectors", "wr_ticks", "in_flight", "io_ticks", "time_in_queue",
                    "dc_ios", "dc_merges", "dc_sectors", "dc_ticks", "fl_ios", "fl_ticks")


def parse_diskstats(text):
    stats = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 14:
            stats[parts[2]] = dict(zip(DISKSTATS_FIELDS, (int(v) for v in parts[3:])))
    return stats


# Kernels boot in the background, JOBS at a time (each guest has one vCPU), all started
# by the first test that needs one; each test waits for its kernel only.
JOBS = int(os.environ.get("IOSPAN_MATRIX_JOBS", "2"))
_BOOTS = {}


def _boot(kernel):
    """(GuestResults, None), or (None, why the matrix cannot run), or (None, "KERNEL: why
    this kernel failed")."""
    if WHY_NO_KERNELS:
        return None, WHY_NO_KERNELS
    if not shutil.which("qemu-system-x86_64"):
        return None, "qemu-system-x86_64 not installed (scripts/setup-deps.sh)"
    workdir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "iospan-matrix-" + kernel)
    if os.environ.get("IOSPAN_MATRIX_REUSE") and os.path.isdir(os.path.join(workdir, "results")):
        # Re-checks the results of the last boot (while working on these tests).
        with open(os.path.join(workdir, "console.log"), errors="replace") as f:
            return GuestResults(kernel, os.path.join(workdir, "results"), f.read()), None
    try:
        matrix.fetch(kernel, PACKAGES[kernel])
    except (matrix.MatrixError, OSError) as e:
        return None, "cannot fetch %s into %s: %s" % (kernel, matrix.CACHE, e)
    try:
        path, console = matrix.boot(kernel, workdir, suite=suite_of(kernel))
    except (matrix.MatrixError, OSError) as e:
        return None, "%s: %s" % (kernel, e)
    return GuestResults(kernel, path, console), None


def _start_boots():
    if _BOOTS:
        return
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, JOBS))
    # The full suites first: they take longest.
    for kernel in sorted(KERNEL_IDS, key=lambda k: k in PACKAGES and suite_of(k) != "full"):
        _BOOTS[kernel] = pool.submit(_boot, kernel)
    pool.shutdown(wait=False)


def guest(kernel):
    """The results of @kernel's one boot."""
    _start_boots()
    results, error = _BOOTS[kernel].result()
    if results is None:
        if error.startswith(kernel + ":"):
            pytest.fail(error, pytrace=False)  # the matrix ran and this kernel failed
        cannot_run(error)
    return results


# --------------------------------------------------------------------------- doctor, stat

@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_guest_suite_completed(kernel):
    g = guest(kernel)
    assert g.file(".", "kernel").strip() == kernel
    assert (g.file(".", "suite.rc") or "").strip() == "0", "%s: suite.sh failed:\n%s" % (
        kernel, g.file(".", "suite.log"))
    assert (g.file(".", "suite") or "").strip() == suite_of(kernel)


@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_doctor_ready_with_plans(kernel):
    g = guest(kernel)
    doc = json.loads(g.ok("doctor", "doctor-json"))
    assert doc["ready"] is True, "%s: doctor says not ready: %s" % (kernel, doc.get("commands"))
    assert set(doc["plans"]) >= {"top", "trace"}, doc["plans"].keys()
    for cmd in ("top", "trace"):
        plan = doc["plans"][cmd]
        missing = [h for h, v in plan.items() if not v["optional"] and not v["mode"]]
        assert not missing, "%s: %s's required hooks have no attach mode: %s" % (
            kernel, cmd, missing)
        for hook in ("block_bio_queue", "block_rq_complete"):
            assert plan[hook]["mode"] and plan[hook]["program"], (kernel, cmd, plan[hook])


@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_stat_matches_diskstats(kernel):
    """Three one-second reports around a known workload on the raw disk: the sums of
    rate * interval equal the diskstats deltas (tolerances of the host suite)."""
    g = guest(kernel)
    scn = next((s for s in os.listdir(g.path) if s.startswith("stat-")), None)
    assert scn, "%s: no stat scenario in the results (suite log:\n%s)" % (
        kernel, g.file(".", "suite.log"))
    write, read = g.workload(scn, "w-write"), g.workload(scn, "w-read")
    reports = [json.loads(line) for line in g.ok(scn, "stat").splitlines() if line.strip()]
    assert len(reports) == 3, reports
    delta = g.diskstats_delta(scn)
    # Ground truth first: the disk moved exactly the workload's bytes.
    assert delta["rd_sectors"] * 512 == read["bytes"], (kernel, delta, read)
    assert delta["wr_sectors"] * 512 == write["bytes"], (kernel, delta, write)
    disk = g.file(scn, "disk").strip()
    n = len(reports)
    checks = [("r_s", 1, "rd_ios", 0.5 + n * 0.01), ("w_s", 1, "wr_ios", 0.5 + n * 0.01),
              ("rkB_s", 2, "rd_sectors", 1 + n * 0.02), ("wkB_s", 2, "wr_sectors", 1 + n * 0.02),
              ("f_s", 1, "fl_ios", 0.5 + n * 0.01)]
    bad = []
    for key, scale, field, tol in checks:
        got = sum(only_device(r, disk)[key] * r["interval_s"] * scale for r in reports)
        tol += 0.0006 * delta[field]
        if abs(got - delta[field]) > tol:
            bad.append("%s * interval = %.2f, diskstats delta %s %d" % (key, got, field,
                                                                        delta[field]))
    assert not bad, "%s: %s" % (kernel, "; ".join(bad))


@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_watch_incident(kernel):
    """watch on the raw disk: reads for 1.5 s open one incident, complete, on the read
    rule; the store (SQLite) is read back by incidents; the samples count the disk's
    reads as diskstats does."""
    g = guest(kernel)
    scn = next((s for s in os.listdir(g.path) if s.startswith("watch-")), None)
    assert scn, "%s: no watch scenario in the results (suite log:\n%s)" % (
        kernel, g.file(".", "suite.log"))
    disk = g.file(scn, "disk").strip()
    assert (g.file(scn, "watch.rc") or "").strip() == "0", g.file(scn, "watch.err")
    found = json.loads(g.ok(scn, "list"))["incidents"]
    assert [(i["disk"], i["rule"], i["state"]) for i in found] == \
        [(disk, "read-mbps", "complete")], (kernel, found, g.file(scn, "watch.err"))
    samples = [s for s in json.loads(g.ok(scn, "show"))["samples"]
               if s["disk"] == disk and s["r_s"] is not None]
    delta = g.diskstats_delta(scn)
    sectors = sum(s["rkB_s"] * s["interval_s"] * 2 for s in samples)
    assert delta["rd_sectors"] == 15 * 16 * 128, (kernel, delta)
    assert abs(sectors - delta["rd_sectors"]) < 1, (kernel, sectors, delta)
    # top's collector loaded, and names the reader (iowork) first.
    assert "info: collector top loaded" in g.file(scn, "watch.err"), g.file(scn, "watch.err")
    busiest = json.loads(g.ok(scn, "show"))["busiest_processes"]
    assert busiest and busiest[0]["comm"] == "iowork", (kernel, busiest)
    # top's completion program timed iowork's reads of the disk at block detail (trace's
    # collector is not loaded by default) and kept them with their stages: direct reads
    # of 64 KiB (a request each, or split by the driver), device time inside the total.
    err = g.file(scn, "watch.err")
    assert "info: collector trace off by the options" in err, err
    reqs = [r for r in json.loads(g.ok(scn, "show"))["slow_requests"]
            if r["comm"] == "iowork"]
    assert reqs, (kernel, json.loads(g.ok(scn, "show"))["slow_requests"][:3])
    for r in reqs:
        st = json.loads(r["stages"])
        assert (r["op"], r["disk"], r["path"]) == ("read", disk, None), (kernel, r)
        assert 0 < r["bytes"] <= 65536 and r["offset"] % 512 == 0, (kernel, r)
        assert st["detail"] == "block" and st["direct"] is True, (kernel, st)
        assert abs(st["q2c"] - r["total_us"]) < 1, (kernel, r)
        assert 0 < st["d2c"] <= st["q2c"] + 1, (kernel, r)


def report_data(g, scn, name):
    """The data of a report page the guest wrote (its JSON element)."""
    html = g.file(scn, name)
    assert html, "%s: no %s (%s)" % (g.kernel, name, g.file(scn, "report.err"))
    m = re.search(r'<script type="application/json" id="iospan-data">(.*?)</script>', html,
                  re.S)
    assert m, (g.kernel, name)
    return json.loads(m.group(1))


def table_rows(t):
    return [dict(zip(t["columns"], r)) for r in t["rows"]]


@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_report_of_the_incident(kernel):
    """report --incident of watch's incident: the page holds the incident show gives
    (kernel and collectors stored by the watcher), its samples, and the latency
    histograms of iowork's reads: each request diskstats counted, but those the
    collector declares unseen."""
    g = guest(kernel)
    scn = next((s for s in os.listdir(g.path) if s.startswith("watch-")), None)
    assert scn and g.ok(scn, "report") == "", (kernel, g.file(scn, "report.err"))
    show = json.loads(g.ok(scn, "show"))
    inc = report_data(g, scn, "report.html")["incident"]
    for k in ("id", "rule", "state", "kernel", "collectors", "disk", "hostname"):
        assert inc[k] == show[k], (kernel, k, inc[k], show[k])
    assert inc["kernel"] and json.loads(inc["collectors"])["top"].startswith("loaded")
    assert len(table_rows(inc["samples"])) == len(show["samples"])
    disk = g.file(scn, "disk").strip()
    delta = g.diskstats_delta(scn)
    heat = sum(int(kc.split(":")[1]) for h in table_rows(inc["heatmap"]) if h["disk"] == disk
               for kc in h["counts"].split(","))
    unseen = sum(d["count"] for d in table_rows(inc["dropped"])
                 if d["what"] == "completions_unseen")
    # Unseen completions are found when their request slot is used again: the last
    # request of iowork's reads (QD 1) has no successor to find it.
    ios = delta["rd_ios"] + delta["wr_ios"]
    assert ios - 1 <= heat + unseen <= ios, (kernel, heat, unseen, delta)


@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_report_capture_of_a_target(kernel):
    """report --duration --comm iowork on the raw disk: the page's processes and slow
    requests are iowork's only (not busybox dd's, read at the same time), its bytes
    exact; the samples and the heatmap are the whole disk's, as diskstats counts it."""
    g = guest(kernel)
    scn = next((s for s in os.listdir(g.path) if s.startswith("report-")), None)
    assert scn, "%s: no report scenario (suite log:\n%s)" % (kernel, g.file(".", "suite.log"))
    assert (g.file(scn, "report.rc") or "").strip() == "0", (kernel, g.file(scn, "report.err"))
    assert g.ok(scn, "w-read") is not None and g.ok(scn, "w-dd") is not None
    disk = g.file(scn, "disk").strip()
    doc = report_data(g, scn, "capture.html")
    inc = doc["incident"]
    assert doc["kind"] == "capture" and inc["state"] == "complete", (kernel, inc["state"])
    assert inc["target"] == "--comm iowork", (kernel, inc["target"])
    procs = table_rows(inc["busiest_processes"])
    assert [p["comm"] for p in procs] == ["iowork"], (kernel, procs)
    assert procs[0]["disk_read_bytes"] == 32 * 65536, (kernel, procs)
    slow = table_rows(inc["slow_requests"])
    assert slow and {r["comm"] for r in slow} == {"iowork"}, (kernel, slow[:3])
    delta = g.diskstats_delta(scn)
    samples = [s for s in table_rows(inc["samples"]) if s["disk"] == disk]
    sectors = sum(s["rkB_s"] * s["interval_s"] * 2 for s in samples)
    assert delta["rd_sectors"] >= 2 * 32 * 128, (kernel, delta)
    assert abs(sectors - delta["rd_sectors"]) < 1, (kernel, sectors, delta)
    heat = sum(int(kc.split(":")[1]) for h in table_rows(inc["heatmap"]) if h["disk"] == disk
               for kc in h["counts"].split(","))
    unseen = sum(d["count"] for d in table_rows(inc["dropped"])
                 if d["what"] == "completions_unseen")
    # As above; dd's last reads are readahead's: up to its 128 KiB window in flight, two
    # requests of 64 KiB with no successor.
    assert delta["rd_ios"] - 2 <= heat + unseen <= delta["rd_ios"], (kernel, heat, unseen,
                                                                      delta)


def prom_samples(text):
    """{(name, frozenset(labels)): value} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if m:
            labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"',
                                          m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_watch_metrics(kernel):
    """watch --listen on the raw disk, scraped before and after its 240 direct reads of
    64 KiB (two samples later): between the scrapes, the latency histograms count each
    request diskstats counted (but for completions the collector declares unseen), at
    most its q2c in each d2c bucket; the size histogram holds them all at or below
    64 KiB, their bytes diskstats' sectors."""
    g = guest(kernel)
    scn = next((s for s in os.listdir(g.path) if s.startswith("watch-")), None)
    assert scn, "%s: no watch scenario" % kernel
    disk = g.file(scn, "disk").strip()
    g.ok(scn, "metrics0")
    g.ok(scn, "metrics")
    s0, s1 = (prom_samples(g.file(scn, f) or "") for f in ("metrics0.txt", "metrics.txt"))
    assert s1, (kernel, g.file(scn, "watch.err"))
    delta = g.diskstats_delta(scn, last="mid")

    def grew(name, labels):
        key = (name, frozenset(labels.items()))
        return s1[key] - s0.get(key, 0)

    def get(name, **labels):
        return grew(name, dict(disk=disk, op="read", **labels))

    unseen = grew("iospan_events_lost_total",
                  {"collector": "top", "reason": "completions_unseen"})
    lat = "iospan_disk_latency_seconds"
    d2c = get(lat + "_count", stage="d2c")
    assert 0 <= delta["rd_ios"] - d2c <= unseen, (kernel, d2c, delta, unseen)
    assert get(lat + "_count", stage="q2c") <= d2c, kernel
    for le in ("1.6384e-05", "0.001048576", "0.067108864"):
        assert get(lat + "_bucket", stage="q2c", le=le) <= \
            get(lat + "_bucket", stage="d2c", le=le), (kernel, le)
    size = "iospan_disk_request_size_bytes"
    count = get(size + "_count")
    assert 0 <= delta["rd_ios"] - count <= unseen, (kernel, count, delta)
    assert get(size + "_bucket", le="65536") == count, kernel
    if count == delta["rd_ios"]:
        assert get(size + "_sum") == 512 * delta["rd_sectors"], (kernel, delta)

def only_device(report, disk):
    rows = [d for d in report["devices"] if d["disk"] == disk]
    assert len(rows) == 1, (disk, report["devices"])
    return rows[0]


# --------------------------------------------------------------------------- top

def top_doc(g, fs):
    out = g.ok("top-" + fs, "top")
    docs = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(docs) == 1, "%s: top printed %d documents" % (g.kernel, len(docs))
    return docs[0]


# Hooks whose tracepoint older kernels lack, and the fallback each suite runs there.
FALLBACK_HOOKS = ("mm_filemap_fault", "mm_filemap_map_pages", "iomap_dio_rw_begin")


@pytest.mark.parametrize("case", [c for c in FS_CASES if c[1] == "ext4"], ids=case_id)
def test_top_fallbacks_chosen(case):
    """Where the kernel has the tracepoint, tp_btf; where not, the full suite runs fentry
    (kprobe where the trampoline is refused), the smoke suite kprobes
    (IOSPAN_ATTACH_OFF=fentry): every hook attached some way, none unavailable."""
    g = guest(case[0])
    doc = top_doc(g, case[1])
    tps = {t["name"].split(":")[1]: t["btf"]
           for t in json.loads(g.ok("doctor", "doctor-json"))["tracepoints"]}
    smoke = suite_of(case[0]) == "smoke"
    assert doc["unavailable"] == [], (case, doc["unavailable"])
    for hook in FALLBACK_HOOKS:
        mode = doc["attach_plan"][hook]["mode"]
        if tps.get(hook):
            assert mode == "tp_btf", (case, hook, mode)
        elif smoke:
            assert mode == "kprobe", (case, hook, mode)
        else:
            assert mode in ("fentry", "kprobe"), (case, hook, mode)


def top_process(g, fs, workload):
    """(the workload's JSON line, its row in top's report)."""
    w = g.workload("top-" + fs, workload)
    doc = top_doc(g, fs)
    rows = [p for p in doc["processes"] if p["pid"] == w["pid"]]
    assert len(rows) == 1, "%s: %s (pid %d) not in top's report: %s" % (
        g.kernel, workload, w["pid"], [(p["pid"], p["comm"]) for p in doc["processes"]])
    return w, rows[0]


def file_rows(proc, path):
    return [f for f in proc["files"] if f["path"] == path]


def file_bytes(g, proc, path, key):
    rows = file_rows(proc, path)
    assert rows, "%s: %s not among the files of pid %d: %s" % (
        g.kernel, path, proc["pid"], [(f["path"], f["kind"]) for f in proc["files"]])
    return sum(f[key] for f in rows)


def where_written(g, fs, path):
    """Every row of top's report that wrote @path, with the report's counters: where
    the bytes a check missed went."""
    doc = top_doc(g, fs)
    rows = [(p["pid"], p["comm"], f["kind"], f["disk_write_bytes"], f["writeback"])
            for p in doc["processes"] for f in p["files"]
            if f["path"] == path and f["disk_write_bytes"]]
    return "rows (pid, comm, kind, disk_write_bytes, writeback): %s; writeback: %s; %s" % (
        rows, doc.get("writeback"), {k: v for k, v in doc.items() if k in
                                     ("dropped", "unattributed", "devices")})


def within(actual, expected, tol=TOLERANCE):
    return abs(actual - expected) <= tol * expected


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_top_direct_writes_exact(case):
    g = guest(case[0])
    w, p = top_process(g, case[1], "w-dio-write")
    assert file_bytes(g, p, w["path"], "fs_write_bytes") == w["bytes"], (case, p)
    assert file_bytes(g, p, w["path"], "disk_write_bytes") == w["bytes"], (case, p)
    assert all(f["direct"] for f in file_rows(p, w["path"])), (case, p["files"])


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_top_process_cmdline(case):
    """A workload gone before the report is named by its command line, which only the
    kernel's capture of its argument area (at its I/O) can give by then."""
    g = guest(case[0])
    w, p = top_process(g, case[1], "w-dio-write")
    want = "iowork pwrite %s -b 1048576 -n 8 --direct" % w["path"]
    assert p["cmdline"] == want, (case, p["cmdline"], want)


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_top_direct_reads_exact(case):
    g = guest(case[0])
    w, p = top_process(g, case[1], "w-dio-read")
    assert file_bytes(g, p, w["path"], "fs_read_bytes") == w["bytes"], (case, p)
    assert file_bytes(g, p, w["path"], "disk_read_bytes") == w["bytes"], (case, p)


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_top_buffered_write_fsync(case):
    g = guest(case[0])
    w, p = top_process(g, case[1], "w-buf-write")
    assert file_bytes(g, p, w["path"], "fs_write_bytes") == w["bytes"], (case, p)
    got = file_bytes(g, p, w["path"], "disk_write_bytes")
    assert within(got, w["bytes"]), "%s: DISK write %d, wrote %d; %s" % (
        case, got, w["bytes"], where_written(g, case[1], w["path"]))


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_top_buffered_cold_read(case):
    g = guest(case[0])
    w, p = top_process(g, case[1], "w-buf-read")
    assert file_bytes(g, p, w["path"], "fs_read_bytes") == w["bytes"], (case, p)
    got = file_bytes(g, p, w["path"], "disk_read_bytes")
    assert within(got, w["bytes"]), "%s: DISK read %d, read %d" % (case, got, w["bytes"])


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_top_mmap_faults_counted(case):
    """mm_filemap_fault/map_pages (or their fallback): the pages of a mapping read page by
    page are FS reads, each once."""
    g = guest(case[0])
    w, p = top_process(g, case[1], "w-mmap")
    rows = file_rows(p, w["path"])
    assert rows and any(f["mmap"] for f in rows), "%s: no mmap row: %s" % (case, p["files"])
    fs_read = file_bytes(g, p, w["path"], "fs_read_bytes")
    assert fs_read == w["bytes"], "%s: FS read %d of %d mapped bytes" % (
        case, fs_read, w["bytes"])
    got = file_bytes(g, p, w["path"], "disk_read_bytes")
    assert within(got, w["bytes"]), "%s: DISK read %d of a %d-byte cold file" % (
        case, got, w["bytes"])


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_top_skips_32bit_syscalls(case):
    """64 lseeks by int $0x80, ia32's number of readv, after one pread of 4 KiB: the
    file's FS bytes are the pread's (tests/e2e/test_syscalls.py)."""
    g = guest(case[0])
    rc, _, err = g.command("top-" + case[1], "w-compat")
    if rc == 3:
        pytest.skip("%s: no 32-bit syscalls: %s" % (g.kernel, err.strip()))
    w, p = top_process(g, case[1], "w-compat")
    assert w["ops"] == 64 and w["bytes"] == 4096, w
    assert file_bytes(g, p, w["path"], "fs_read_bytes") == 4096, (case, p["files"])


@pytest.mark.parametrize("case", AIO_CASES, ids=case_id)
def test_top_aio_direct_reads(case):
    """Direct I/O outside syscalls (iomap_dio_rw_begin, or its fallback): FS bytes too."""
    g = guest(case[0])
    w, p = top_process(g, case[1], "w-aio")
    assert file_bytes(g, p, w["path"], "disk_read_bytes") == w["bytes"], (case, p)
    assert file_bytes(g, p, w["path"], "fs_read_bytes") == w["bytes"], (case, p)


@pytest.mark.parametrize("case", [c for c in FS_CASES if c[1] == "raw"], ids=case_id)
def test_top_raw_disk_direct_exact(case):
    g = guest(case[0])
    for name, key in (("w-dio-write", "disk_write_bytes"), ("w-dio-read", "disk_read_bytes")):
        w, p = top_process(g, "raw", name)
        rows = [f for f in p["files"] if f["disk"] == g.file("top-raw", "disk").strip()]
        assert sum(f[key] for f in rows) == w["bytes"], (case, name, p["files"])


@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_top_device_coverage(case):
    """top's device row against diskstats: all of the disk's bytes were seen."""
    g = guest(case[0])
    scn = "top-" + case[1]
    doc = top_doc(g, case[1])
    disk = g.file(scn, "disk").strip()
    rows = [d for d in doc["devices"] if d["disk"] == disk]
    assert len(rows) == 1, (case, doc["devices"])
    d = rows[0]
    delta = g.diskstats_delta(scn)
    assert d["traced"] is True
    assert d["diskstats_read_bytes"] <= delta["rd_sectors"] * 512, (case, d, delta)
    assert d["diskstats_write_bytes"] <= delta["wr_sectors"] * 512, (case, d, delta)
    assert d["coverage_pct"] is not None and d["coverage_pct"] >= 99.0, (case, d)


@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_top_flushes_match_diskstats(case):
    """The disk's cache flushes (the fsync of w-buf-write asks for some where the disk
    has a write cache) as /proc/diskstats counts them in the same window."""
    g = guest(case[0])
    doc = top_doc(g, case[1])
    d = only_device(doc, g.file("top-" + case[1], "disk").strip())
    assert d["diskstats_flush_requests"] is not None, (case, d)  # fields since 5.5
    assert d["flush_requests"] == d["diskstats_flush_requests"], (case, d)


@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_top_nothing_lost(case):
    g = guest(case[0])
    doc = top_doc(g, case[1])
    info = ("unmatched_bios", "idle_rows_pruned", "writeback_dirtier_unknown_bytes",
            "completion_unseen_bytes")
    lost = {k: v for k, v in doc["dropped"].items() if v and k not in info}
    # On PREEMPT_RT a new row can find the BPF allocator empty (-ENOMEM) or its bucket
    # held by a preempted program (-EBUSY): such rows go to the preallocated spill maps.
    # And a program preempted there (RT runs them preemptible) makes the kernel skip the
    # run of the same program by the task that preempted it, on that CPU: the kernel's
    # own count, which top reports as hook_runs_missed (never silent), and a skipped
    # completion is found again when its request is next issued (completions_unseen).
    # Elsewhere nothing.
    if "-rt-" in case[0]:
        assert doc["dropped"].get("hook_runs_missed") is not None, (case, doc["dropped"])
        lost.pop("hook_runs_missed", None)
        lost.pop("completions_unseen", None)
    assert not lost, (case, lost)


# --------------------------------------------------------------------------- trace

def scenario_trace_docs(g, scn):
    """(requests, totals) of scenario @scn's `trace --json`."""
    out = g.ok(scn, "trace")
    docs = [json.loads(line) for line in out.splitlines() if line.strip()]
    totals = [d for d in docs if d["type"] == "totals"]
    assert len(totals) == 1, "%s: trace printed %d totals" % (g.kernel, len(totals))
    return [d for d in docs if d["type"] == "request"], totals[0]


def trace_docs(g, fs):
    return scenario_trace_docs(g, "trace-" + fs)


def requests_of(g, fs, workload):
    """(the workload's JSON line, the requests trace printed for its pid)."""
    w = g.workload("trace-" + fs, workload)
    reqs, _ = trace_docs(g, fs)
    return w, [r for r in reqs if r["pid"] == w["pid"]]


def ops(reqs):
    counts = {}
    for r in reqs:
        counts[r["op"]] = counts.get(r["op"], 0) + 1
    return counts


def counts_skipped_runs(kernel):
    """Whether @kernel counts the runs of syscall tracepoint programs it skips in their
    recursion_misses (trace's hook_runs_missed): from 6.7."""
    major, minor = (int(v) for v in kernel.split(".")[:2])
    return (major, minor) >= (6, 7)


def skipped_runs_allowed(g, case, n):
    """How many of @n events of trace's programs may be missing in @case: on PREEMPT_RT
    the runs the kernel declares skipped (trace's hook_runs_missed), any number before
    6.7 (it declares none); elsewhere none (assert_ops)."""
    if "-rt-" not in case[0]:
        return 0
    if not counts_skipped_runs(case[0]):
        return n
    _, totals = trace_docs(g, case[1])
    return totals["counters"]["hook_runs_missed"]


def assert_ops(case, reqs, want, w):
    """The requests of the workload's pid, by op, are exactly @want. On PREEMPT_RT a
    program preempted in its run makes the kernel skip the run of the same program by
    the task that preempted it on that CPU (test_top_nothing_lost), and a preempted
    bpf() map access skips the syscall programs of the tasks that run meanwhile: a
    request whose syscall entry was skipped is missing, as are those of a record that
    spans two syscalls or more (their end and next start skipped: dropped, counted in
    syscall_spans); each missing one took a skipped run, counted in trace's
    hook_runs_missed. Only that many may be missing there; none elsewhere. Kernels
    before 6.7 count no skipped run of these programs, and trace's own reads of its
    maps for each request it prints are such accesses (on 6.1-rt: 3 of 16 direct reads
    missing in one matrix run, none in the run before): any number may be missing on
    their RT flavour, as iospan-trace(8) says under hook_runs_missed."""
    got = ops(reqs)
    missed = 0
    if "-rt-" in case[0]:
        _, totals = trace_docs(guest(case[0]), case[1])
        missed = totals["counters"]["hook_runs_missed"]
        if not counts_skipped_runs(case[0]):
            missed = sum(want.values())
    short = sum(want.values()) - sum(got.values())
    ok = set(got) <= set(want) and all(got.get(op, 0) <= n for op, n in want.items())
    assert ok and short <= missed, "%s: requests of %s (pid %d) by op: %s; it made %s%s" % (
        case, w["mode"], w["pid"], got or "none", want,
        " (hook runs missed: %d)" % missed if missed else "")


def bio_bytes(r):
    assert r["bios_not_recorded"] == 0, r
    return sum(b["bytes"] for b in r["bios"])


@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_trace_nothing_lost(case):
    """Every request traced is printed, none lost, none in flight at the end. But on
    PREEMPT_RT (assert_ops), a request whose syscall end ran no program is lost: as
    `abandoned` when its thread's next syscall start ran its program, or, that start
    skipped too, in a record of two syscalls or more, dropped (`syscall_spans`), or
    still open at the end (`in_flight_at_exit`: its thread made no traced syscall
    after it, or that one's start was skipped too); each took one skipped run or two,
    which kernels from 6.7 count (hook_runs_missed)."""
    g = guest(case[0])
    reqs, totals = trace_docs(g, case[1])
    cnt = totals["counters"]
    lost = open_at_exit = 0
    if "-rt-" in case[0]:
        lost = cnt["abandoned"] + cnt["syscall_spans"]
        open_at_exit = totals["in_flight_at_exit"]
        if counts_skipped_runs(case[0]):
            assert cnt["abandoned"] + 2 * cnt["syscall_spans"] + open_at_exit <= \
                cnt["hook_runs_missed"], (case, cnt, open_at_exit)
    assert totals["lost"] == lost and totals["in_flight_at_exit"] == open_at_exit, (case, totals)
    assert totals["traced"] == totals["completed"] + lost + open_at_exit, (case, totals)
    assert totals["completed"] == totals["printed"] == len(reqs), (case, totals, len(reqs))


@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_trace_direct_reads_exact_with_bios(case):
    """`trace -t 0`: one request per pread64, each carrying exactly its bytes in bios."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-dio-read")
    assert_ops(case, reqs, {"pread64": w["ops"]}, w)
    for r in reqs:
        assert r["ret"] == w["bs"] and "direct" in r["flags"], (case, r["flags"], r["ret"])
        assert r["has_block_io"] and r["bios_queued"] == r["bios_completed"] >= 1, (case, r)
        assert bio_bytes(r) == w["bs"], (case, r["bios"])


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_contended_direct_reads_exact(case):
    """512 direct 4 KiB reads while another process looks up a BPF map in a loop on the
    guest's one CPU (`iowork bpfmap`). On PREEMPT_RT the lookup is now and then
    preempted while it holds off the CPU's syscall tracepoint programs, and the reader,
    running meanwhile, loses the programs at the end of one read and at the start of
    the next: trace then printed one pread64 with the bios and direct_io events of two
    reads or more (on 6.12-rt: 15 such records of 2 to 4 reads here; 1 to 5 of 2 to 11
    reads in each of 6 runs of 256 64 KiB reads). Each request shown must be one read
    with exactly its bytes; those missing are declared (assert_ops,
    test_trace_nothing_lost). The syscall programs are raw tracepoints now, which that
    access does not hold off; a kprobe is still held off, and before 6.5 the start of
    the direct I/O is one (iomap_dio_rw_begin's fallback): such a read is shown
    without its direct_io event (6.1-rt: 1 of 512 in a matrix run), at most as many
    as the kernel declares skipped runs (any number before 6.7, which counts none)."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-dio-read-contended")
    assert_ops(case, reqs, {"pread64": w["ops"]}, w)
    no_dio = 0
    for r in reqs:
        assert r["ret"] == w["bs"] and "direct" in r["flags"], (case, r["flags"], r["ret"])
        assert r["has_block_io"] and r["bios_queued"] == r["bios_completed"] >= 1, (case, r)
        assert bio_bytes(r) == w["bs"], (case, r["offset"], r["bios"])
        dio = [e for e in r["events"] if e["type"] == "direct_io"]
        assert len(dio) <= 1, (case, r["offset"], dio)
        no_dio += not dio
    assert no_dio <= skipped_runs_allowed(g, case, len(reqs)), (case, no_dio)


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_process_cmdline_and_path(case):
    """Each request names its process by its command line (captured in the kernel when
    the request is reported) and its file by the path it was opened by."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-dio-read")
    want = "iowork pread %s -b 65536 -n 16 --direct --random" % w["path"]
    assert reqs, (case, w)
    for r in reqs:
        assert r["cmdline"] == want and r["path"] == w["path"], (case, r["cmdline"], r["path"])


@pytest.mark.parametrize("case", [c for c in FS_CASES if c[1] == "raw"], ids=case_id)
def test_trace_raw_direct_writes_exact_with_bios(case):
    g = guest(case[0])
    w, reqs = requests_of(g, "raw", "w-dio-write")
    assert_ops(case, reqs, {"pwrite64": w["ops"]}, w)
    assert all(bio_bytes(r) == w["bs"] for r in reqs), case


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_write_fsync(case):
    """Buffered writes only dirty pages (no bios); the fsync carries the flush."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-write-fsync")
    assert_ops(case, reqs, {"pwrite64": w["ops"], "fsync": w["fsyncs"]}, w)
    fsync = [r for r in reqs if r["op"] == "fsync"][0]
    assert fsync["has_block_io"] and fsync["bios_queued"] >= 1, (case, fsync)


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_cold_reads_go_to_disk(case):
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-cold-read")
    assert_ops(case, reqs, {"pread64": w["ops"]}, w)
    assert any(r["has_block_io"] for r in reqs), (case, "no cold read had bios")
    added = sum(r["page_cache"]["added_pages"] for r in reqs)
    assert added > 0, (case, "no page added to the page cache by cold reads")


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_warm_reads_no_bios(case):
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-warm-read")
    assert_ops(case, reqs, {"pread64": w["ops"]}, w)
    with_bios = [r["offset"] for r in reqs if r["has_block_io"]]
    assert not with_bios, (case, "cached reads with bios at offsets", with_bios)


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_page_cache_lookups(case):
    """mm_filemap_get_pages (or its fallback): every cached read looked pages up."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-warm-read")
    assert_ops(case, reqs, {"pread64": w["ops"]}, w)
    zero = [r["offset"] for r in reqs if r["page_cache"]["lookups"] == 0]
    assert not zero, (case, "cached reads without page-cache lookups at", zero)


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_readahead(case):
    """page_cache_sync_ra/async_ra (or their fallback): a cold sequential read of a file
    reads ahead."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-cold-read")
    assert_ops(case, reqs, {"pread64": w["ops"]}, w)
    ra = sum(r["page_cache"]["readahead_sync"] + r["page_cache"]["readahead_async"]
             for r in reqs)
    assert ra > 0, (case, "no readahead in %d cold sequential reads" % len(reqs))


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_mmap_faults(case):
    """mm_filemap_fault (or its fallback): touching a cold mapping makes fault requests
    with bios, and nothing else."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-mmap")
    assert reqs, "%s: no fault request of %s (pid %d)" % (case, w["path"], w["pid"])
    assert_ops(case, reqs, {"fault": len(reqs)}, w)
    assert 1 <= len(reqs) <= w["pages"], (case, len(reqs), w)
    assert any(r["has_block_io"] for r in reqs), (case, "no fault had bios")


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_trace_direct_io_boundaries(case):
    """iomap_dio_rw_begin (or its fallback): each direct read shows its direct_io event.
    Before 6.5 that is a kprobe, which PREEMPT_RT skips while a preempted bpf() map
    access holds it off (trace's own reads of its maps for each request it prints):
    the read is shown without it (6.1-rt: 2 of 256 in a CI run), at most as many as
    the kernel declares skipped runs (any number before 6.7)."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-dio-read")
    assert_ops(case, reqs, {"pread64": w["ops"]}, w)
    without = [r["offset"] for r in reqs
               if not any(e["type"] == "direct_io" for e in r["events"])]
    assert len(without) <= skipped_runs_allowed(g, case, len(reqs)), (
        case, "direct reads without a direct_io event at", without)


@pytest.mark.parametrize("case", AIO_CASES, ids=case_id)
def test_trace_aio_reads_exact(case):
    """iomap_dio_rw_begin/complete (or their fallback): one aio_read request per iocb.
    On 6.1 a kprobe completion program is skipped while another such program runs on
    its CPU: those requests end at their last bio instead (end_approximate)."""
    g = guest(case[0])
    w, reqs = requests_of(g, case[1], "w-aio")
    assert_ops(case, reqs, {"aio_read": w["ops"]}, w)
    assert all(bio_bytes(r) == w["bs"] for r in reqs), (case, [bio_bytes(r) for r in reqs])


@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_trace_stages_add_up(case):
    g = guest(case[0])
    reqs, _ = trace_docs(g, case[1])
    assert reqs, "%s: trace printed no requests" % (case,)
    stages = ("pre_block", "throttle", "q2q", "q2g", "g2i", "i2d", "d2c", "post_block")
    eps = 0.01 * 8
    for r in reqs:
        st = r["stages"]
        if r["has_block_io"]:
            assert abs(sum(st[k] for k in stages) - st["total"]) <= eps, (case, r["op"], st)
        else:
            assert abs(st["pre_block"] - st["total"]) <= eps, (case, r["op"], st)


# --------------------------------------------------------------------------- drivers

# The driver scenarios (guest suite driver_scenario): disk kind -> the driver's name.
DRIVERS = {"nvme": "nvme", "scsi": "scsi", "virtio": "virtio-blk"}
DRIVER_STAGES = ("drv_in", "device", "drv_out")


def driver_docs(g, kind):
    return scenario_trace_docs(g, "driver-" + kind)


def missed_allowed(kernel, totals, n):
    """How many of @n requests may be missing (assert_ops: PREEMPT_RT only)."""
    return skips_allowed(kernel, totals["counters"]["hook_runs_missed"], n)


def skips_allowed(kernel, declared, n):
    """How many of @n events may lack a program's run: on PREEMPT_RT a program (a
    kprobe's too: the smoke suites run virtio-blk's by kprobe) is preemptible, and the
    kernel skips another's run on its CPU meanwhile; from 6.7 it declares each
    (@declared), before it declares none (any of @n). None elsewhere."""
    if "-rt-" not in kernel:
        return 0
    return declared if counts_skipped_runs(kernel) else n


@pytest.mark.parametrize("kind", sorted(DRIVERS))
@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_driver_stages_add_up_to_d2c(kernel, kind):
    """Known direct I/O on an emulated NVMe namespace, a SCSI disk on virtio-scsi and a
    virtio-blk disk: every command of the workload has the driver's record (queue, tag,
    and for NVMe the command id) and its d2c split into drv_in + device + drv_out to
    within 1 us, per bio and for the request; the commands the driver saw are the
    workload's (one 4 KiB read or 64 KiB write each)."""
    g = guest(kernel)
    reqs, totals = driver_docs(g, kind)
    assert totals["lost"] == 0, (kernel, kind, totals)
    unseen = 0
    for name, op in (("w-read", "pread64"), ("w-write", "pwrite64")):
        w = g.workload("driver-" + kind, name)
        mine = [r for r in reqs if r["pid"] == w["pid"]]
        short = w["ops"] - len(mine)
        assert 0 <= short <= missed_allowed(kernel, totals, w["ops"]), (
            kernel, kind, name, len(mine), w["ops"])
        for r in mine:
            assert r["op"] == op and r["ret"] == w["bs"], (kernel, kind, r["op"], r["ret"])
            assert len(r["bios"]) == 1 and r["bios"][0]["bytes"] == w["bs"], (
                kernel, kind, r["bios"])
            b = r["bios"][0]
            drv = b["driver"]
            # A driver program's run the kernel skipped (PREEMPT_RT): no split.
            if not drv or drv["device_us"] is None:
                unseen += 1
                continue
            assert drv["kind"] == DRIVERS[kind], (kernel, kind, b)
            assert drv["failed_attempts"] == 0 and drv["status"] == 0, (kernel, kind, drv)
            assert isinstance(drv["hwq"], int) and isinstance(drv["tag"], int), drv
            assert (drv["cid"] is not None) == (kind == "nvme"), (kernel, kind, drv)
            assert abs(sum(drv[k + "_us"] for k in DRIVER_STAGES) - b["d2c_us"]) <= 1.0, (
                kernel, kind, drv, b["d2c_us"])
            assert drv["device_us"] > 0, (kernel, kind, drv)
            st = r["stages"]
            assert abs(sum(st[k] for k in DRIVER_STAGES) - st["d2c"]) <= 1.0, (
                kernel, kind, st)
    assert unseen <= skips_allowed(kernel, totals["counters"]["hook_runs_missed"], 80), (
        kernel, kind, unseen, totals["counters"])


@pytest.mark.parametrize("kind", ["nvme", "scsi"])
@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_driver_error_on_the_request_it_hit(kernel, kind):
    """A read of the sector QEMU's blkdebug fails (every time): dd gets an error, and
    its one request shows the bio at that sector completed with an error, the driver's
    status in words (QEMU answers EIO with NVMe's unrecovered read error, SCSI's CHECK
    CONDITION with sense key ABORTED COMMAND, as the guest's kernel logs them) and every
    attempt failed: the kernel retried each failed attempt but the last (requeues)."""
    g = guest(kernel)
    scn = "driver-" + kind
    reqs, totals = driver_docs(g, kind)
    assert int(g.file(scn, "w-bad.rc")) != 0, (kernel, kind, g.file(scn, "w-bad.err"))
    pid = int(g.file(scn, "w-bad.pid"))
    mine = [r for r in reqs if r["pid"] == pid]
    if not mine and missed_allowed(kernel, totals, 1):
        pytest.skip("%s: dd's read was one of the runs the kernel skipped" % kernel)
    assert len(mine) == 1, (kernel, kind, mine)
    r = mine[0]
    assert r["ret"] < 0 and len(r["bios"]) == 1, (kernel, kind, r["ret"], r["bios"])
    b = r["bios"][0]
    assert b["sector"] == matrix.BAD_SECTOR and b["error"] != 0 and "error" in b["flags"], b
    drv = b["driver"]
    assert drv["kind"] == DRIVERS[kind] and drv["status"] != 0, (kernel, kind, drv)
    assert drv["failed_attempts"] == b["requeues"] + 1 >= 2, (kernel, kind, drv, b["requeues"])
    if kind == "nvme":
        assert drv["status"] & 0x7ff == 0x281, drv
        assert drv["status_text"].startswith("unrecovered read error"), drv
    else:
        assert drv["status"] & 0xff == 0x02 and drv["sense_key"] == 0xb, drv
        assert drv["status_text"].startswith("check condition: aborted command"), drv


@pytest.mark.parametrize("kind", sorted(DRIVERS))
@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_driver_in_snoop_and_lat(kernel, kind):
    """snoop's line of each of the workload's requests has the driver's device time,
    within its own d2c (device_us); lat --stage device counted every request the disk
    completed while it ran, none without the driver's stamps; the bad read's line has
    its status in words."""
    g = guest(kernel)
    scn = "driver-" + kind
    docs = [json.loads(line) for line in g.ok(scn, "snoop").splitlines() if line.strip()]
    lines, summary = docs[:-1], docs[-1]["summary"]
    unseen = 0
    for name in ("w-read", "w-write"):
        w = g.workload(scn, name)
        mine = [x for x in lines if x["pid"] == w["pid"]]
        assert len(mine) == w["ops"], (kernel, kind, name, len(mine), summary)
        for x in mine:
            drv = x["driver"]
            if not drv:
                unseen += 1  # a skipped run (PREEMPT_RT), as below
                continue
            assert drv["kind"] == DRIVERS[kind] and drv["status"] == 0, (kernel, x)
            assert 0 < drv["device_us"] <= x["device_us"] + 0.001, (kernel, kind, x)
            # d2c = the time to the driver's submission + its device time + drv_out.
            assert drv["device_us"] + drv["drv_out_us"] <= x["device_us"] + 0.002, (kernel, x)
    assert unseen <= skips_allowed(kernel, summary["missed_runs"], 80), (kernel, unseen, summary)
    if kind != "virtio":
        pid = int(g.file(scn, "w-bad.pid"))
        bad = [x for x in lines if x["pid"] == pid]
        assert len(bad) == 1 and bad[0]["driver"]["status"] != 0, (kernel, kind, bad)
        assert bad[0]["driver"]["failed_attempts"] >= 2, bad[0]
    lat = [json.loads(line) for line in g.ok(scn, "lat").splitlines() if line.strip()]
    assert len(lat) == 1 and lat[0]["stage"] == "device", (kernel, kind, lat)
    n = sum(h["count"] for h in lat[0]["histograms"])
    drops = dict(lat[0]["drops"])
    # PREEMPT_RT skips runs of a program preempted on its CPU (test_lat_count_matches_
    # diskstats): a skipped completion is a request missing, a skipped driver program's
    # run one without the driver's stamps (no_driver); from 6.7 declared.
    skipped = drops.pop("programs_skipped") or 0 if "-rt-" in kernel else 0
    no_driver = drops.pop("no_driver")
    assert no_driver <= skips_allowed(kernel, skipped, 80), (kernel, kind, lat[0]["drops"])
    assert n >= 64 + 16 - skipped - no_driver, (kernel, kind, n, lat[0]["drops"])
    assert not any(drops.values()), (kernel, kind, lat[0]["drops"])


@pytest.mark.parametrize("kind", ["nvme", "scsi"])
@pytest.mark.parametrize("kernel", KERNEL_IDS)
def test_driver_errors_counted_per_disk(kernel, kind):
    """The disk's driver counters over the same run (top's report), each failed attempt
    of the bad read an error, its retries requeues, its commands the workload's 80 plus
    those attempts; on the NVMe disk, watch's --driver-errors rule opened an incident on
    the disk, and the endpoint's counters say the same."""
    g = guest(kernel)
    scn = "driver-" + kind
    reqs, totals = driver_docs(g, kind)
    disk = g.file(scn, "disk").strip()
    pid = int(g.file(scn, "w-bad.pid"))
    bad = [r for r in reqs if r["pid"] == pid]
    if not bad and missed_allowed(kernel, totals, 1):
        pytest.skip("%s: dd's read was one of the runs the kernel skipped" % kernel)
    failed = bad[0]["bios"][0]["driver"]["failed_attempts"]
    top = json.loads(g.ok(scn, "top").strip().splitlines()[-1])
    rows = [d for d in top["devices"] if d["disk"] == disk]
    assert len(rows) == 1, (kernel, kind, top["devices"])
    drv = rows[0]["driver"]
    want = {"kind": DRIVERS[kind], "errors": failed, "requeues": failed - 1, "timeouts": 0,
            "dispatch_errors": 0, "commands": 64 + 16 + failed}
    assert {k: drv[k] for k in want} == want, (kernel, kind, drv)
    assert drv["last_error"] == bad[0]["bios"][0]["driver"]["status_text"], drv
    if kind != "nvme":
        return  # watch runs on the NVMe disk only (guest suite: its collectors load slowly)
    assert int(g.file(scn, "watch.rc")) == 0, g.file(scn, "watch.err")
    incidents = json.loads(g.ok(scn, "list"))
    fired = [i for i in incidents["incidents"] if i["rule"] == "driver-errors"]
    assert fired and fired[0]["disk"] == disk and fired[0]["value"] >= 1, (kernel, incidents)
    # The incident keeps the bad read (--detail full: trace's stages), d2c split by the
    # driver in the parts the report draws end to end.
    show = json.loads(g.ok(scn, "show"))
    slow = [r for r in show["slow_requests"] if r["pid"] == pid]
    assert len(slow) == 1, (kernel, kind, [(r["pid"], r["comm"]) for r in show["slow_requests"]])
    st = json.loads(slow[0]["stages"])
    names = [p[0] for p in st["parts"]]
    assert "device" in names and "d2c" not in names, (kernel, kind, st["parts"])
    assert abs(sum(p[1] for p in st["parts"]) - slow[0]["total_us"]) <= 0.01 * len(names), (
        kernel, kind, st, slow[0]["total_us"])
    # The samples keep the disk's driver counters: the error in one of them.
    drv = [json.loads(x["driver"]) for x in show["samples"]
           if x["disk"] == disk and x["driver"]]
    assert sum(d["errors"] or 0 for d in drv) >= 1 and drv[-1]["kind"] == DRIVERS[kind], (
        kernel, kind, drv)
    s = prom_samples(g.file(scn, "metrics.txt"))
    got = {k: s.get((k, frozenset([("disk", disk)]))) for k in (
        "iospan_disk_driver_errors_total", "iospan_disk_requeues_total",
        "iospan_disk_driver_commands_total", "iospan_disk_driver_timeouts_total")}
    assert got == {"iospan_disk_driver_errors_total": failed,
                   "iospan_disk_requeues_total": failed - 1,
                   "iospan_disk_driver_commands_total": 64 + 16 + failed,
                   "iospan_disk_driver_timeouts_total": 0}, (kernel, kind, got)


# --------------------------------------------------------------------------- lat

def lat_ios(g, scn, a, b):
    """Requests the disk completed between snapshots @a and @b (reads, writes,
    discards, flushes), as lat counts them."""
    disk = g.file(scn, "disk").strip()
    x = parse_diskstats(g.file(scn, "diskstats." + a) or "")[disk]
    y = parse_diskstats(g.file(scn, "diskstats." + b) or "")[disk]
    return sum(y[k] - x[k] for k in ("rd_ios", "wr_ios", "dc_ios", "fl_ios"))


@pytest.mark.parametrize("tracer", ["lat", "lat-stack"])
@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_lat_count_matches_diskstats(case, tracer):
    """Every request completed on the disk counted once, overall and per queuing stack:
    at least what diskstats counted inside the window, at most what it counted over the
    tracer's life; owners found for all of them."""
    g = guest(case[0])
    scn = "lat-" + case[1]
    docs = [json.loads(line) for line in g.ok(scn, tracer).splitlines() if line.strip()]
    assert len(docs) == 1, (case, docs)
    n = sum(h["count"] for h in docs[0]["histograms"])
    low, high = lat_ios(g, scn, "before", "after"), lat_ios(g, scn, "early", "late")
    assert low >= 16, (case, low)
    assert low <= n <= high, (case, tracer, n, low, high, docs[0]["drops"])
    assert not any(docs[0]["drops"].values()), (case, docs[0]["drops"])


# --------------------------------------------------------------------------- snoop

def snoop_lines(g, fs):
    """(request lines, summary) of the snoop scenario on @fs."""
    out = g.ok("snoop-" + fs, "snoop")
    docs = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert docs and "summary" in docs[-1], "%s: snoop printed no summary" % g.kernel
    return docs[:-1], docs[-1]["summary"]


@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_snoop_matches_diskstats(case):
    """One line per request /proc/diskstats completed in the window (reads, writes,
    discards, flushes), its sectors * 512 in bytes; nothing lost in the ring buffer."""
    g = guest(case[0])
    lines, summary = snoop_lines(g, case[1])
    assert summary["lost"] == 0 and summary["malformed"] == 0, (case, summary)
    assert summary["events"] == len(lines), (case, summary)
    disk = g.file("snoop-" + case[1], "disk").strip()
    assert all(l["disk"] == disk for l in lines), case
    # The window: between two marker reads, each alone on the disk between two reads of
    # diskstats (suite.sh's mark()), so the disk completed nothing between a marker and
    # its edge's snapshot.
    for edge in ("before", "after"):
        assert g.file("snoop-" + case[1], "mark-%s.retries" % edge) is not None, (
            case, "no marker read of the disk alone at the window's %s edge" % edge)
    marks = [g.workload("snoop-" + case[1], m)["pid"] for m in ("mark-before", "mark-after")]
    at = [next(i for i, l in enumerate(lines) if l["pid"] == pid) for pid in marks]
    lines = lines[at[0] + 1:at[1]]
    delta = g.diskstats_delta("snoop-" + case[1])
    nr = delta["rd_ios"] + delta["wr_ios"] + delta["dc_ios"] + delta["fl_ios"]
    nbytes = 512 * (delta["rd_sectors"] + delta["wr_sectors"] + delta["dc_sectors"])
    # A completion the kernel ran no program for is counted when its request is
    # dispatched again (iospan-snoop(8)): only those may be missing.
    missing = nr - len(lines)
    assert nr > 0 and 0 <= missing <= summary["completion_not_seen"], (
        case, len(lines), nr, delta, summary,
        sorted(collections.Counter((l["rwbs"], l["comm"]) for l in lines).items()))
    if not missing:
        assert sum(l["bytes"] for l in lines) == nbytes, (case, nbytes)


@pytest.mark.parametrize("case", FS_CASES, ids=case_id)
def test_snoop_direct_io_credited(case):
    """Direct writes and reads: their process's lines carry exactly their bytes."""
    g = guest(case[0])
    lines, _ = snoop_lines(g, case[1])
    for name, letter in (("w-dio-write", "W"), ("w-dio-read", "R")):
        w = g.workload("snoop-" + case[1], name)
        mine = [l for l in lines if l["pid"] == w["pid"] and letter in l["rwbs"] and
                l["kind"] in ("direct", "buffered")]
        assert sum(l["bytes"] for l in mine) == w["bytes"], (case, name, w, mine[:3])
        assert all(l["comm"] == "iowork" and l["tid"] == w["pid"] for l in mine), case


@pytest.mark.parametrize("case", FILE_FS_CASES, ids=case_id)
def test_snoop_writeback_credited_to_writer(case):
    """The fsync writer's data is its own; the lazy writer's, written back by `sync`,
    is credited to it, flagged writeback."""
    g = guest(case[0])
    lines, _ = snoop_lines(g, case[1])
    for name, wb in (("w-fsync", False), ("w-lazy", True)):
        w = g.workload("snoop-" + case[1], name)
        mine = [l for l in lines if l["pid"] == w["pid"] and "W" in l["rwbs"] and
                l["kind"] == "buffered"]
        assert sum(l["bytes"] for l in mine) == w["bytes"], (case, name, w, mine[:3])
        if wb:
            assert all(l["writeback"] for l in mine), (case, mine[:3])


# --------------------------------------------------------------------------- filters

# The target filters (guest/suite.sh, FILTERS): every tracing command takes each.
FILTERS = ("pid", "tid", "comm", "cgroup", "file", "dir", "disk")
CMD_FILTERS = {cmd: FILTERS for cmd in ("trace", "snoop", "top", "lat")}
FILTER_CASES = [(k, cmd, f) for k in KERNEL_IDS for cmd, fs in CMD_FILTERS.items() for f in fs]


def filter_id(case):
    return "%s-%s-%s" % case if isinstance(case, tuple) else str(case)


class FilterRun:
    """One command under one filter (guest filters_scenario): what the two workload
    processes did, and which of their threads and files the filter names."""

    def __init__(self, case):
        self.kernel, self.cmd, self.filter = case
        self.g = guest(self.kernel)
        self.scn = "filter-%s-%s-ext4" % (self.cmd, self.filter)
        self.a = self.g.workload(self.scn, "w-iowa")
        self.b = self.g.workload(self.scn, "w-iowb")
        self.disk = self.g.file(self.scn, "disk").strip()
        # The threads the filter keeps: (tid, path, bytes written and read by it).
        a_main = (self.a["pid"], self.a["path"], self.a["bytes"])
        a_second = (self.a["tid"], self.a["path2"], self.a["bytes2"])
        b_main = (self.b["pid"], self.b["path"], self.b["bytes"])
        b_second = (self.b["tid"], self.b["path2"], self.b["bytes2"])
        self.kept = {"pid": [a_main, a_second], "tid": [a_second], "comm": [a_main],
                     "cgroup": [a_main, a_second], "file": [a_main],
                     "dir": [a_main, a_second],
                     "disk": [a_main, a_second, b_main, b_second]}[self.filter]
        self.workers = {self.a["pid"], self.b["pid"]}

    def out(self):
        return self.g.ok(self.scn, self.cmd)

    def docs(self):
        return [json.loads(line) for line in self.out().splitlines() if line.strip()]

    def pid_of(self, tid):
        return self.a["pid"] if tid in (self.a["pid"], self.a["tid"]) else self.b["pid"]


@pytest.mark.parametrize("case", FILTER_CASES, ids=filter_id)
def test_filter_keeps_exactly_its_target(case):
    """Each target filter of each command, alone, on every kernel: two processes (two
    threads each, each thread on its own file in its process's directory and cgroup)
    write then read 8 x 64 KiB with O_DIRECT; a third writes another disk. What the
    command reports is exactly the part of the workload the filter names (the
    workload's own bytes and calls), and nothing of the rest."""
    r = FilterRun(case)
    kept_tids = {t for t, _, _ in r.kept}
    kept_paths = {p for _, p, _ in r.kept}
    want_bytes = {t: n // 2 for t, _, n in r.kept}  # written, and as much read
    # A thread's own metadata reads (ext4 reading a bitmap or inode table block its
    # file's allocation needs, when it is not cached: 4 KiB once on 6.12-rt) are its
    # requests, of no file: process and disk filters keep them, file filters never.
    meta_ok = r.filter not in ("file", "dir")
    if r.cmd == "trace":
        docs = r.docs()
        reqs = [d for d in docs if d.get("type") == "request"]
        totals = [d for d in docs if d.get("type") == "totals"][-1]
        foreign = [q for q in reqs if q["tid"] not in kept_tids or q["path"] not in kept_paths]
        if r.filter == "disk":  # the disk's other requests (journal) are not the workload's
            foreign = [q for q in foreign if q["pid"] in r.workers]
        assert not foreign, (r.kernel, r.filter, foreign[:3])
        missed = totals["counters"]["hook_runs_missed"] if "-rt-" in r.kernel else 0
        if "-rt-" in r.kernel and not counts_skipped_runs(r.kernel):
            missed = len(kept_tids) * 16  # uncounted there (assert_ops): any of them
        for tid in kept_tids:
            ops = {}
            for q in reqs:
                if q["tid"] == tid:
                    ops[q["op"]] = ops.get(q["op"], 0) + q["bytes"]
            want = {"pwrite64": want_bytes[tid], "pread64": want_bytes[tid]}
            short = sum(want.values()) - sum(ops.get(k, 0) for k in want)
            assert set(ops) <= set(want) and 0 <= short <= missed * 65536, (
                r.kernel, r.filter, tid, ops, want, missed)
    elif r.cmd == "snoop":
        docs = r.docs()
        lines = [d for d in docs if "rwbs" in d]
        summary = docs[-1]["summary"]
        mine = [l for l in lines if l["pid"] in r.workers]
        meta = [l for l in mine if meta_ok and l["tid"] in kept_tids and l["kind"] == "meta"
                and l.get("path") is None]
        foreign = [l for l in mine if l not in meta and
                   (l["tid"] not in kept_tids or l.get("path") not in kept_paths)]
        assert not foreign, (r.kernel, r.filter, foreign[:3])
        mine = [l for l in mine if l not in meta]
        if r.filter != "disk":  # only the workload's requests (and its meta) pass these
            assert len(mine) + len(meta) == len(lines), (r.kernel, r.filter, [
                l for l in lines if l not in mine and l not in meta][:3])
        assert all(l["disk"] == r.disk for l in lines), (r.kernel, r.filter, lines[:3])
        missed = summary["missed_runs"] + summary["completion_not_seen"] \
            if "-rt-" in r.kernel else summary["completion_not_seen"]
        # A line is a request, credited to its first bio's thread: the disk merges no
        # bios during the scenario (suite.sh), so each is one thread's.
        assert not any(l["merged"] for l in lines), (r.kernel, r.filter, [
            l for l in lines if l["merged"]][:3])
        for tid in kept_tids:
            for op in "RW":
                got = sum(l["bytes"] for l in mine if l["tid"] == tid and op in l["rwbs"])
                assert want_bytes[tid] - missed * 65536 <= got <= want_bytes[tid], (
                    r.kernel, r.filter, tid, op, got, want_bytes[tid], summary)
        if r.filter == "disk":  # every thread kept: all of their data, exactly
            for op in "RW":
                got = sum(l["bytes"] for l in mine if op in l["rwbs"])
                want = sum(want_bytes.values())
                assert want - missed * 65536 <= got <= want, (r.kernel, op, got, want, summary)
    elif r.cmd == "top":
        doc = r.docs()[-1]
        procs = {p["pid"]: p for p in doc["processes"]}
        kept_pids = {r.pid_of(t) for t in kept_tids}
        assert kept_pids <= set(procs), (r.kernel, r.filter, sorted(procs))
        if r.filter != "disk":
            assert set(procs) == kept_pids, (r.kernel, r.filter, sorted(procs))
        for pid in kept_pids:
            want = {path: n // 2 for t, path, n in r.kept if r.pid_of(t) == pid}
            p = procs[pid]
            files = {f["path"]: f for f in p["files"]}
            assert set(want) <= set(files), (r.kernel, r.filter, pid, sorted(files))
            # Its own files exactly; its other rows (the pages of its executable it
            # faults in, mmap reads) only file system reads of no disk, and its own
            # metadata requests.
            for path, f in files.items():
                for key in ("fs_write_bytes", "fs_read_bytes", "disk_write_bytes",
                            "disk_read_bytes"):
                    if path in want:
                        assert f[key] == want[path], (r.kernel, r.filter, path, key, f)
                    elif key != "fs_read_bytes" and not (
                            meta_ok and f["kind"] == "metadata" and key.startswith("disk")):
                        assert f[key] == 0, (r.kernel, r.filter, path, key, f)
            for key in ("fs_write_bytes", "fs_read_bytes", "disk_write_bytes",
                        "disk_read_bytes"):
                assert p[key] == sum(f[key] for f in files.values()), (
                    r.kernel, r.filter, pid, key, p)
        # The requests kept are of the workload's disk; -d lists no other.
        busy = {d["disk"] for d in doc["devices"]
                if r.filter == "disk" or d["disk_read_bytes"] or d["disk_write_bytes"]}
        assert busy <= {r.disk}, (r.kernel, r.filter, doc["devices"])
    else:  # lat --size --by file: the bytes of the requests kept, per file
        doc = r.docs()[-1]
        rows = [h for h in doc["histograms"] if h.get("count")]
        got = sum(round(h["cumulative"]["sum"] * 1024) for h in rows)
        if r.filter == "disk":
            # Every request of the disk, as diskstats counts them: at least those of the
            # settled window inside tracing, at most those of the tracer's lifetime.
            def sectors(first, last):
                d = r.g.diskstats_delta(r.scn, first, last)
                return (d["rd_sectors"] + d["wr_sectors"] + d["dc_sectors"]) * 512

            low, high = sectors("before", "after"), sectors("early", "late")
            declared = doc["drops"]["programs_skipped"] + doc["drops"]["requests_not_seen"]
            assert low - declared * 65536 <= got <= high, (
                r.kernel, r.filter, got, low, high, doc["drops"])
        else:
            # On PREEMPT_RT a queuing whose program the kernel skipped leaves its request
            # without an owner to match: declared (no_owner), and only there.
            want = sum(2 * n for n in want_bytes.values())
            declared = doc["drops"]["no_owner"] if "-rt-" in r.kernel else 0
            other = [h for h in rows if h["path"] not in kept_paths]
            assert all(meta_ok and h["kind"] == "meta" for h in other), (
                r.kernel, r.filter, other)
            got = sum(round(h["cumulative"]["sum"] * 1024) for h in rows if h not in other)
            assert want - declared * 65536 <= got <= want, (r.kernel, r.filter, got, want,
                                                            doc["drops"])
