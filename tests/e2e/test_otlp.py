# SPDX-License-Identifier: GPL-2.0
"""iospan watch --otlp-endpoint against a real OTLP receiver (npm's @elastic/mockotlpserver,
installed by scripts/setup-otlp-receiver.sh; tests/e2e/otlp_receiver.js checks each request
against the OTLP protobuf definitions): slow requests as traces, each once, its stages as
child spans that add up to it; incidents as log records; a receiver that fails, stops and
comes back costs only its own data, counted."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

import iospan_testlib as tl
from test_watch import DIRECT_READER, NO_IOSTAT_RULES, Watcher, finish, incidents

NPM_DIR = os.environ.get("IOSPAN_NPM_CACHE", "/var/cache/iospan/npm")
MODULE = os.path.join(NPM_DIR, "node_modules", "@elastic", "mockotlpserver")
DRIVER = os.path.join(os.path.dirname(__file__), "otlp_receiver.js")
BS, COUNT = 64 * 1024, 8


class Receiver:
    """The OTLP receiver on @port (0: any), failing its first @fail requests with 503."""

    def __init__(self, port=0, fail=0):
        if not (shutil.which("node") and os.path.isdir(MODULE)):
            pytest.skip("needs the OTLP receiver: scripts/setup-otlp-receiver.sh installs it")
        self.proc = subprocess.Popen(["node", DRIVER, MODULE, str(port), str(fail)],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"listening (http://\S+)", line)
        assert m, line
        self.url = m.group(1)
        self.requests = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.requests.append(json.loads(line))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=30)
        self.reader.join(timeout=10)

    def refused(self):
        return [r for r in self.requests if r["signal"] == "refused"]

    def spans(self):
        return [s for r in self.requests if r["signal"] == "traces"
                for rs in r["data"]["resourceSpans"] for ss in rs["scopeSpans"]
                for s in ss["spans"]]

    def logs(self):
        return [lr for r in self.requests if r["signal"] == "logs"
                for rl in r["data"]["resourceLogs"] for sl in rl["scopeLogs"]
                for lr in sl["logRecords"]]

    def resources(self):
        return [res["resource"] for r in self.requests if "data" in r
                for res in r["data"].get("resourceSpans", []) + r["data"].get("resourceLogs", [])]


def attrs(obj):
    out = {}
    for a in obj.get("attributes", []):
        v = a["value"]
        out[a["key"]] = int(v["intValue"]) if "intValue" in v else v.get("stringValue")
    return out


def traces(spans):
    """{trace id: (root span, [children in time order])}; each trace has one root."""
    by = {}
    for s in spans:
        by.setdefault(s["traceId"], []).append(s)
    out = {}
    for tid, ss in by.items():
        roots = [s for s in ss if not s.get("parentSpanId")]
        assert len(roots) == 1, ss
        kids = sorted((s for s in ss if s.get("parentSpanId")),
                      key=lambda s: int(s["startTimeUnixNano"]))
        assert all(k["parentSpanId"] == roots[0]["spanId"] for k in kids), ss
        out[tid] = (roots[0], kids)
    return out


def check_trace(root, kids):
    """The stages laid end to end from the request's start add up to it, exactly."""
    start, end = int(root["startTimeUnixNano"]), int(root["endTimeUnixNano"])
    assert kids, root
    at = start
    for k in kids:
        assert int(k["startTimeUnixNano"]) == at, (root, kids)
        at = int(k["endTimeUnixNano"])
        assert at > int(k["startTimeUnixNano"]), k
    assert at == end, (root, kids)
    assert attrs(root)["iospan.total_ns"] == end - start


def slow_reads_watched(tmp_path, receiver_url, *extra, env=None, during=None):
    """COUNT direct reads of BS bytes, each ~125 ms on a disk blk-throttle slows, under
    watch --slow-request 80ms with OTLP export; returns (watcher, reader pid, path, the
    reader's own timings, disk name, db)."""
    tl.require_root("creates loop devices, a file system and a blkio cgroup")
    tl.require_blkio()
    db = str(tmp_path / "otlp.db")
    with tl.slow_disk(size_mb=48, read_bps=512 * 1024) as (dev, cgroup), \
            tl.filesystem(dev, "ext4") as mnt:
        name = os.path.basename(dev)
        path = os.path.join(mnt, "otlpdata")
        subprocess.run(["dd", "if=/dev/urandom", "of=" + path, "bs=1M", "count=1",
                        "status=none", "conv=fsync"], check=True)
        exe = tmp_path / "otlpreader"
        exe.symlink_to("/usr/bin/python3")
        reader = subprocess.Popen([str(exe), "-c", DIRECT_READER, path, str(BS), str(COUNT),
                                   "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, preexec_fn=lambda: tl.move_to_cgroup(cgroup))
        assert reader.stdout.readline().strip() == "ready"
        args = ["--pre", "2", "--capture", "2", "--slow-request", "80ms"]
        if receiver_url:
            args += ["--otlp-endpoint", receiver_url]
        w = Watcher(db, dev, *args, *extra, *NO_IOSTAT_RULES, env=env)
        try:
            w.wait_for(r" info: collector (top|trace) loaded")
            if during:
                threading.Timer(0.3, during).start()
            took = finish(reader)
            w.wait_for(r"stored: incident 1 stored", timeout=30)
        finally:
            assert w.stop() == 0, w.lines
    return w, reader.pid, path, took, name, db


def sent_at_exit(w):
    line = w.wait_for(r"OTLP export: \d+ traces")
    m = re.search(r"OTLP export: (\d+) traces and (\d+) log records sent, (\d+) and (\d+) "
                  r"dropped", line)
    return tuple(int(x) for x in m.groups())


@pytest.mark.parametrize("detail", ["block", "full"])
def test_slow_requests_and_incidents_arrive_once(tmp_path, detail):
    """Each of the reader's slow reads is one trace at the receiver, with its process,
    file, disk, op and bytes, its stages child spans adding up to it, within the reader's
    own timing; every slow request the incident stored is among them; the incident's
    opening and end are log records (trigger, busiest process); what watch says it sent
    is what arrived."""
    rx = Receiver()
    try:
        w, pid, path, took, name, db = slow_reads_watched(
            tmp_path, rx.url, "--detail", detail, "--capture-threshold", "80ms")
        time.sleep(0.5)  # the receiver prints what it took after answering
    finally:
        rx.stop()
    assert all(not r.get("errors") for r in rx.requests), rx.requests
    tr = traces(rx.spans())
    for root, kids in tr.values():
        check_trace(root, kids)
    mine = sorted(((root, kids) for root, kids in tr.values()
                   if attrs(root).get("process.pid") == pid),
                  key=lambda t: int(t[0]["startTimeUnixNano"]))
    assert len(mine) == COUNT, [attrs(r) for r, _ in mine]
    for (root, kids), t in zip(mine, took):
        a = attrs(root)
        assert (a["process.executable.name"], a["iospan.disk"], a["iospan.bytes"],
                a["iospan.detail"]) == ("otlpreader", name, BS, detail), a
        assert a["file.path"] == path, a
        assert a.get("thread.id") == pid or (detail == "block" and "thread.id" not in a), a
        assert a["iospan.total_ns"] <= t * 1e9, (a, t)
        stages = [k["name"] for k in kids]
        if detail == "block":
            assert stages == ["q2d", "d2c"], stages
            assert root["name"] == "read" and a["iospan.offset"] >= 0, root
        else:
            assert "d2c" in stages and "pre_block" in stages, stages
            # Python's os.preadv is the preadv2 syscall (flags 0).
            assert root["name"] == "preadv2", root
    # What the incident stored, each among the traces (by offset, op and time).
    doc = incidents(db, "show", "1")
    assert doc["slow_requests"], doc
    got = {(attrs(r)["iospan.offset"], r["name"], round(attrs(r)["iospan.total_ns"] / 1e3))
           for r, _ in tr.values()}
    for q in doc["slow_requests"]:
        assert (q["offset"], q["op"], round(q["total_us"])) in got, (q, sorted(got))
    # The incident's two log records.
    logs = {attrs(lr)["iospan.incident.event"]: lr for lr in rx.logs()}
    opened, closed = attrs(logs["opened"]), attrs(logs["closed"])
    assert (opened["iospan.incident.id"], opened["iospan.rule"], opened["iospan.disk"]) == \
        (1, "slow-request", name), opened
    assert logs["opened"]["severityText"] == "WARN" and "opened" in \
        logs["opened"]["body"]["stringValue"]
    assert "otlpreader (%d)" % pid in closed["iospan.top_processes"], closed
    assert sent_at_exit(w) == (len(tr), 2, 0, 0)
    res = attrs(rx.resources()[0])
    assert res["service.name"] == "iospan" and res["host.name"] == os.uname().nodename, res


def test_receiver_gone_then_failing_costs_only_its_data(tmp_path):
    """A receiver that stops, then comes back answering 503 to its first two requests:
    watch retries (as the protocol allows), says so once and when it works again, samples
    on, and every trace it counts as sent arrived, the reader's all (but what it counts as
    dropped). The OTEL_ variables configure it."""
    rx = Receiver()
    rx2 = []
    port = int(rx.url.rsplit(":", 1)[1])

    def bounce():
        rx.stop()
        time.sleep(1.5)
        rx2.append(Receiver(port=port, fail=2))

    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=rx.url + "/",
               OTEL_SERVICE_NAME="iospan-ci",
               OTEL_RESOURCE_ATTRIBUTES="deployment.environment=ci,team=storage%20ops")
    try:
        w, pid, path, took, name, db = slow_reads_watched(tmp_path, None, env=env,
                                                          during=bounce)
        time.sleep(0.5)
    finally:
        rx.stop()
        for r in rx2:
            r.stop()
    assert rx2, "the receiver did not come back"
    received = rx.requests + rx2[0].requests
    assert all(not r.get("errors") for r in received), received
    assert len(rx2[0].refused()) == 2, rx2[0].requests
    spans = [s for r in (rx, rx2[0]) for s in r.spans()]
    tr = traces(spans)
    for root, kids in tr.values():
        check_trace(root, kids)
    sent, logs_sent, dropped, logs_dropped = sent_at_exit(w)
    assert sent == len(tr), (sent, len(tr))
    assert logs_sent == len(rx.logs()) + len(rx2[0].logs())
    mine = [r for r, _ in tr.values() if attrs(r).get("process.pid") == pid]
    assert len(mine) == COUNT or len(mine) >= COUNT - dropped, (len(mine), dropped)
    # Said once while it failed (no connection, then 503), and once when it worked again.
    assert len(w.matching(r" error: OTLP export: ")) == 1, w.lines
    assert w.matching(r" info: OTLP export works again"), w.lines
    res = attrs((rx.resources() or rx2[0].resources())[0])
    assert (res["service.name"], res["deployment.environment"], res["team"]) == \
        ("iospan-ci", "ci", "storage ops"), res
    # Sampling went on at its interval all along: the incident's samples are complete and
    # (absolute deadlines) as many as its time span holds.
    assert not w.matching(r"stored incomplete"), w.lines
    times = sorted({s["time"] for s in incidents(db, "show", "1")["samples"]})
    assert len(times) >= 2 / 0.2, times
    assert abs((times[-1] - times[0]) / (len(times) - 1) - 0.2) < 0.05, times


def test_bad_otlp_settings():
    """Each is one line and exit code 2, before anything starts."""
    db = tempfile.mktemp(prefix=tl.TMP_PREFIX, suffix=".db")
    cases = [
        (["--otlp-endpoint", "ftp://collector:4318"], {}, "--otlp-endpoint"),
        (["--otlp-endpoint", "not a url"], {}, "--otlp-endpoint"),
        ([], {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        (["--otlp-endpoint", "http://127.0.0.1:4318"],
         {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http/json"),
        (["--otlp-endpoint", "http://127.0.0.1:4318"],
         {"OTEL_RESOURCE_ATTRIBUTES": "novalue"}, "OTEL_RESOURCE_ATTRIBUTES"),
        (["--otlp-endpoint", "http://127.0.0.1:4318"],
         {"OTEL_EXPORTER_OTLP_HEADERS": "a=b\r\nc"}, "OTEL_EXPORTER_OTLP_HEADERS"),
        (["--otlp-endpoint", "http://127.0.0.1:4318"],
         {"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        (["--otlp-metrics", "on"], {}, "--otlp-endpoint"),
        (["--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-metrics", "yes"], {},
         "--otlp-metrics 'yes'"),
        (["--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-metrics-interval", "1s"], {},
         "--otlp-metrics on"),
        (["--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-metrics", "on",
          "--otlp-metrics-interval", "10ms"], {}, "--otlp-metrics-interval"),
        (["--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-metrics", "on"],
         {"OTEL_METRIC_EXPORT_INTERVAL": "1m"}, "OTEL_METRIC_EXPORT_INTERVAL"),
    ]
    for args, extra_env, said in cases:
        env = dict(os.environ, **extra_env)
        r = tl.run_iospan("watch", "--db", db, "--bpf", "off", *args, "--duration", "1",
                          env=env)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2, (args, extra_env, r.returncode, r.stderr)
        assert len(lines) == 1 and said in lines[0], (args, extra_env, r.stderr)
        assert not os.path.exists(db)


# ---- --otlp-metrics: the metrics of /metrics, pushed ----

PUSH_S = 1.0


def otlp_labels(point):
    """A point's attributes as the label set of its Prometheus series."""
    return frozenset((a["key"], a["value"]["stringValue"]) for a in point["attributes"])


def prom_labels(labels):
    """A series' labels as OTLP carries them: an empty one is no label (as in Prometheus)."""
    return frozenset((k, v) for k, v in labels if v != "")


def pushes(rx):
    """Each push as {OTLP name: [metric, ...]} with its time (s), in time order; a
    family with more points than one metric holds comes in parts, put together here."""
    out = {}
    for r in rx.requests:
        if r["signal"] != "metrics":
            continue
        for rm in r["data"]["resourceMetrics"]:
            for sm in rm["scopeMetrics"]:
                for m in sm["metrics"]:
                    kind = next(k for k in ("sum", "gauge", "histogram") if k in m)
                    pts = m[kind]["dataPoints"]
                    t = int(pts[0]["timeUnixNano"])
                    assert all(int(p["timeUnixNano"]) == t for p in pts), m
                    out.setdefault(t, {}).setdefault(m["name"], []).append(m)
    return [(t / 1e9, out[t]) for t in sorted(out)]


def otlp_name(family, kind):
    return family[:-len("_total")] if kind == "counter" and family.endswith("_total") \
        else family


def push_points(push, name):
    return [p for m in push[name] for k in ("sum", "gauge", "histogram") if k in m
            for p in m[k]["dataPoints"]]


def scrape_families(text):
    """{family: type} of the families that have samples in the scrape."""
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    sampled = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
            for suffix in ("_bucket", "_sum", "_count", ""):
                base = name[:-len(suffix)] if suffix and name.endswith(suffix) else name
                if types.get(base) == "histogram" or not suffix:
                    if base in types:
                        sampled.add(base)
                        break
    return {f: types[f] for f in sampled}


def known_workload(dev):
    """48 direct reads and 16 direct writes of 64 KiB on @dev."""
    subprocess.run(["dd", "if=" + dev, "of=/dev/null", "bs=64k", "count=48", "iflag=direct",
                    "status=none"], check=True)
    subprocess.run(["dd", "if=/dev/zero", "of=" + dev, "bs=64k", "count=16", "oflag=direct",
                    "status=none"], check=True)


def counter_points(push, name, disk):
    """{op: value} of the points of @name for @disk."""
    return {dict(otlp_labels(p))["op"]: int(p["asInt"]) for p in push_points(push, name)
            if ("disk", disk) in otlp_labels(p)}


def test_metrics_pushed_as_scraped(tmp_path):
    """--otlp-metrics pushes every second what /metrics shows: at a moment with no I/O on
    the test disk, the push that follows a scrape carries the scrape's every family and
    series, the disk's counters equal to the scrape's and to /proc/diskstats (which
    counted the known workload), its histograms with Prometheus' bounds and per-bucket
    counts that sum to the count; counters are cumulative monotonic Sums without _total,
    units from the names; each series keeps its start time; pushes come every second; at
    exit watch says how many metrics it sent, and that many arrived."""
    import test_metrics as tm

    tl.require_root("creates a loop device")
    rx = Receiver()
    db = str(tmp_path / "push.db")
    try:
        with tl.loop_device(128) as dev:
            disk = os.path.basename(dev)
            ep = tm.Endpoint(db, disk, "--otlp-endpoint", rx.url, "--otlp-metrics", "on",
                             "--otlp-metrics-interval", "%gs" % PUSH_S)
            try:
                assert any("metrics pushed to %s/v1/metrics every 1 s" % rx.url in line
                           for line in ep.log), ep.log
                before = tl.read_diskstats()[disk]
                known_workload(dev)
                # A quiet moment: diskstats the same before and after the scrape.
                deadline = time.time() + 30
                while True:
                    time.sleep(2 * tm.INTERVAL)  # top's histograms noted since the I/O
                    d0 = tl.read_diskstats()[disk]
                    _, _, text = ep.get()
                    scraped_at = time.time()
                    if tl.read_diskstats()[disk] == d0:
                        break
                    assert time.time() < deadline, "the test disk never went quiet"
                # The first push collected after the scrape, the disk still quiet.
                while not [p for p in pushes(rx) if p[0] > scraped_at]:
                    assert time.time() < deadline + 10, "no push after the scrape"
                    time.sleep(0.1)
                assert tl.read_diskstats()[disk] == d0, "I/O on the test disk meanwhile"
                while len(pushes(rx)) < 6:  # for their period
                    assert time.time() < deadline + 20, pushes(rx)
                    time.sleep(0.1)
                all_pushes = pushes(rx)
            finally:
                rc = ep.stop()
            assert rc == 0, "".join(ep.log)
    finally:
        time.sleep(0.5)  # the receiver prints what it took after answering
        rx.stop()
    assert all(not r.get("errors") for r in rx.requests), \
        [r["errors"] for r in rx.requests if r.get("errors")][:3]
    push = next(p for t, p in all_pushes if t > scraped_at)
    s = tm.parse_exposition(text)

    # The workload, as diskstats counted it, is what both say.
    assert d0["rd_ios"] - before["rd_ios"] >= 48 and d0["wr_ios"] - before["wr_ios"] >= 16
    requests = counter_points(push, "iospan_disk_requests", disk)
    nbytes = counter_points(push, "iospan_disk_bytes", disk)
    for op, ios, sectors in (("read", "rd_ios", "rd_sectors"),
                             ("write", "wr_ios", "wr_sectors")):
        assert requests[op] == d0[ios] == \
            tm.value(s, "iospan_disk_requests_total", disk=disk, op=op)
        assert nbytes[op] == 512 * d0[sectors] == \
            tm.value(s, "iospan_disk_bytes_total", disk=disk, op=op)

    # Every family with samples in the scrape, and none else, with its kind and unit.
    families = scrape_families(text)
    assert "iospan_disk_latency_seconds" in families, sorted(families)
    assert set(push) == {otlp_name(f, k) for f, k in families.items()}, \
        (sorted(push), sorted(families))
    for family, kind in families.items():
        name = otlp_name(family, kind)
        for m in push[name]:
            unit = "s" if name.endswith("_seconds") else "By" if name.endswith("_bytes") \
                else None
            assert m.get("unit") == unit, m
            if kind == "counter":
                assert m["sum"]["isMonotonic"] is True and \
                    m["sum"]["aggregationTemporality"] == 2, m["name"]
            elif kind == "histogram":
                assert m["histogram"]["aggregationTemporality"] == 2, m["name"]
            else:
                assert "gauge" in m, m["name"]
        # The same series (histograms: one each, past their le).
        want = {prom_labels(labels) for (n, labels) in s
                if n == family or (kind == "histogram" and n == family + "_count")}
        got = [otlp_labels(p) for p in push_points(push, name)]
        assert len(got) == len(set(got)) and set(got) == want, (family, got, want)
    # Counters of the quiet test disk: equal, to the last digit.
    for family in ("iospan_disk_requests_total", "iospan_disk_bytes_total",
                   "iospan_disk_merged_total", "iospan_disk_request_time_seconds_total",
                   "iospan_disk_io_time_seconds_total",
                   "iospan_disk_io_time_weighted_seconds_total"):
        for p in push_points(push, otlp_name(family, "counter")):
            if ("disk", disk) in otlp_labels(p):
                v = int(p["asInt"]) if "asInt" in p else p["asDouble"]
                assert v == s[(family, frozenset(otlp_labels(p)))], (family, p)

    # The latency histograms: Prometheus' bounds, its buckets each on its own.
    reads = 0
    for p in push_points(push, "iospan_disk_latency_seconds"):
        labels = otlp_labels(p)
        counts = [int(c) for c in p["bucketCounts"]]
        assert sum(counts) == int(p["count"]), p
        le = sorted((float(dict(lb)["le"]), c) for (n, lb), c in s.items()
                    if n == "iospan_disk_latency_seconds_bucket" and
                    prom_labels(lb - {("le", dict(lb)["le"])}) == labels and
                    dict(lb)["le"] != "+Inf")
        assert p["explicitBounds"] == [b for b, _ in le], (p["explicitBounds"], le)
        cum = [v for _, v in le] + [s[("iospan_disk_latency_seconds_count", labels)]]
        assert counts == [int(c - b) for c, b in zip(cum, [0] + cum[:-1])], (counts, cum)
        assert p["sum"] == s[("iospan_disk_latency_seconds_sum", labels)], p
        if labels == frozenset({("disk", disk), ("op", "read"), ("stage", "d2c")}):
            reads = int(p["count"])
    assert reads >= 48, reads

    # Every second; each series keeps its start, which is when it was first pushed.
    times = [t for t, _ in all_pushes]
    assert len(times) >= 6, times
    gaps = [b - a for a, b in zip(times, times[1:])]
    # The first push may wait for the CPU the collectors' loading takes (seen: 0.24 s);
    # then they keep to absolute deadlines, on a grid of the period.
    assert 0.5 * PUSH_S < gaps[0] < 1.5 * PUSH_S, gaps
    assert all(0.75 * PUSH_S < g < 1.25 * PUSH_S for g in gaps[1:]), gaps
    assert abs(times[-1] - times[1] - (len(times) - 2) * PUSH_S) < 0.1 * PUSH_S, gaps
    starts = {}
    for t, p in all_pushes:
        for pt in push_points(p, "iospan_disk_requests"):
            starts.setdefault(otlp_labels(pt), []).append(
                (int(pt["startTimeUnixNano"]) / 1e9, t))
    mine = starts[frozenset({("disk", disk), ("op", "read")})]
    assert mine[0][0] == mine[0][1] and all(st == mine[0][0] for st, _ in mine), mine

    # What watch says it sent arrived (the last push, at exit, among them).
    deadline = time.time() + 10
    while not [line for line in ep.log if "OTLP export:" in line]:
        assert time.time() < deadline, ep.log
        time.sleep(0.1)
    line = next(line for line in ep.log if "OTLP export:" in line)
    m = re.search(r"; (\d+) metrics sent, (\d+) dropped", line)
    arrived = sum(len(sm["metrics"]) for r in rx.requests if r["signal"] == "metrics"
                  for rm in r["data"]["resourceMetrics"] for sm in rm["scopeMetrics"])
    assert m and (int(m.group(1)), int(m.group(2))) == (arrived, 0), (line, arrived)


def test_metrics_pushed_without_listen(tmp_path):
    """Without --listen the push is the same: at a quiet moment the disk's counters equal
    /proc/diskstats after the known workload, and top's histograms come too. The config
    file's keys ask for it."""
    tl.require_root("creates a loop device")
    rx = Receiver()
    db = str(tmp_path / "push.db")
    conf = tmp_path / "watch.conf"
    conf.write_text("otlp-endpoint = %s\notlp-metrics = on\notlp-metrics-interval = %gs\n"
                    % (rx.url, PUSH_S))
    try:
        with tl.loop_device(128) as dev:
            disk = os.path.basename(dev)
            w = Watcher(db, dev, "--config", str(conf), "--util", "0", "--await", "10000",
                        "--read-mbps", "0", "--write-mbps", "0")
            try:
                assert not w.matching(r"metrics at "), w.lines
                assert w.matching(r"metrics pushed to %s/v1/metrics every 1 s" % rx.url)
                w.wait_for(r" info: collector top loaded")
                before = tl.read_diskstats()[disk]
                known_workload(dev)
                time.sleep(0.5)
                d0 = tl.read_diskstats()[disk]
                quiet_at = time.time()
                deadline = time.time() + 20
                while not [p for p in pushes(rx) if p[0] > quiet_at]:
                    assert time.time() < deadline, "no push"
                    time.sleep(0.1)
                assert tl.read_diskstats()[disk] == d0, "I/O on the test disk meanwhile"
                push = next(p for t, p in pushes(rx) if t > quiet_at)
            finally:
                assert w.stop() == 0, w.lines
    finally:
        rx.stop()
    assert all(not r.get("errors") for r in rx.requests)
    assert d0["rd_ios"] - before["rd_ios"] >= 48 and d0["wr_ios"] - before["wr_ios"] >= 16
    got = counter_points(push, "iospan_disk_requests", disk)
    assert (got["read"], got["write"]) == (d0["rd_ios"], d0["wr_ios"]), (got, d0)
    got = counter_points(push, "iospan_disk_bytes", disk)
    assert (got["read"], got["write"]) == (512 * d0["rd_sectors"], 512 * d0["wr_sectors"])
    d2c = [p for p in push_points(push, "iospan_disk_latency_seconds")
           if otlp_labels(p) == frozenset({("disk", disk), ("op", "read"), ("stage", "d2c")})]
    assert len(d2c) == 1 and int(d2c[0]["count"]) >= 48, d2c
    assert "iospan_disk_request_size_bytes" in push, sorted(push)


def test_failing_receiver_gets_the_newest_push(tmp_path):
    """Pushes every 0.2 s to a receiver that answers 503 to its first three requests: a
    push that failed is not retried for 1 s while newer ones wait (they are cumulative),
    it gives way to the newest, counted as superseded; none is given up for retries, and
    every push watch counts as sent arrived."""
    tl.require_root("creates a loop device")
    rx = Receiver(fail=3)
    db = str(tmp_path / "push.db")
    try:
        with tl.loop_device(64) as dev:
            w = Watcher(db, dev, "--bpf", "off", "--otlp-endpoint", rx.url, "--otlp-metrics",
                        "on", "--otlp-metrics-interval", "0.2s", "--iops", "1000000")
            try:
                # Three refused, then one taken: by then the backoff (1 s) has passed.
                deadline = time.time() + 20
                while len(rx.requests) < 4:
                    assert time.time() < deadline and w.proc.poll() is None, rx.requests
                    time.sleep(0.1)
            finally:
                assert w.stop() == 0, w.lines
            line = w.wait_for(r"OTLP export: \d+ traces")
    finally:
        rx.stop()
    assert len(rx.refused()) == 3, rx.requests
    m = re.search(r"; (\d+) metrics sent, (\d+) dropped .*retries exhausted (\d+), at exit "
                  r"(\d+), superseded (\d+)\)", line)
    assert m, line
    sent, dropped, retries, at_exit, superseded = (int(x) for x in m.groups())
    assert retries == 0 and at_exit == 0 and superseded >= 1, line
    arrived = sum(len(sm["metrics"]) for r in rx.requests
                  if r["signal"] == "metrics"
                  for rm in r["data"]["resourceMetrics"] for sm in rm["scopeMetrics"])
    assert arrived == sent, (line, arrived)

