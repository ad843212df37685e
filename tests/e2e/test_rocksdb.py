# SPDX-License-Identifier: GPL-2.0
"""iospan against RocksDB's db_bench (Debian's rocksdb-tools), checked against ground truth.

One scenario on a scratch ext4 loop device, shared by the tests of this module:

- Phase A: db_bench fillrandom with 256 KiB write buffers and SSTs and a 1 MiB level
  base: hundreds of SSTs made by flushes (thread rocksdb:high) and compactions
  (rocksdb:low), most of them deleted again, so ext4 hands their inode numbers to new
  files; then flush, waitforcompaction and a readrandom from the page cache that runs
  until the test stops it. Traced by `iospan top --threads --json`, on every disk: the
  kernel's task counters also count the pages of db_bench and its libraries read from
  the root disk as a thread first runs their code (12.7 MB in one cold run).
- Phase B: the same database opened again with its files dropped from the page cache,
  readrandom with buffered reads (RocksDB's default: pread, fadvise RANDOM on open).
  Traced by `iospan top --threads --json` and `iospan lat --by stack --json`.

Each phase ends with a consistent cut: db_bench is stopped with SIGSTOP once the part
that matters is done (A: its background threads idle after waitforcompaction; B: some
seconds of reads). A stop takes effect when a thread returns to user space, so every
syscall has returned (and its exit tracepoint has run) and /proc/PID/task/TID/io is
final; the tracers then stop, and db_bench is killed.

Ground truth:

- SST sizes: RocksDB logs every table file it finishes (LOG's EVENT_LOG_v1
  "table_file_creation" with "file_size", and the thread id of the job, which wrote
  it): what it wrote to the file, the file's size. Files deleted before the end cannot
  be stat()ed any more; the log can be checked against os.stat() for every file that
  survives (test_ground_truth_is_consistent).
- WAL sizes: --wal_ttl_seconds keeps obsolete WALs (moved to archive/), so every WAL
  ever written is still there: os.stat() at the end.
- Threads: /proc/PID/task/TID/io of each thread alive at the cut.
- Request kinds: the kernel stack lat records for each request, read here.

IOSPAN_ROCKSDB_DUMP=FILE writes everything the tests compare to FILE (JSON).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

import iospan_testlib as tl

DB_BENCH = shutil.which("db_bench") or "/usr/bin/db_bench"

# Small buffers and SSTs, no compression: many flushes and compactions in seconds.
# --wal_ttl_seconds: obsolete WALs are archived, not deleted (their sizes stay known).
DB_OPTS = [
    "--num=300000", "--key_size=16", "--value_size=100", "--compression_type=none",
    "--write_buffer_size=262144", "--target_file_size_base=262144",
    "--max_bytes_for_level_base=1048576", "--level0_file_num_compaction_trigger=2",
    "--max_background_jobs=2", "--wal_ttl_seconds=3600", "--seed=1",
    "--stats_interval_seconds=0", "--statistics=0", "--progress_reports=0",
    "--reads=1000000000",
]

# How long phase B reads (the database is ~35 MB; reads miss the cache throughout).
READ_SECONDS = 6

# Function names in a request's kernel stack, and what they say it is (the first match).
STACK_KINDS = [
    ("readahead", ("page_cache_async_ra",)),  # async readahead a read or fault set off
    ("readahead(2)", ("ksys_readahead", "__x64_sys_readahead", "__arm64_sys_readahead")),
    ("fadvise", ("generic_fadvise", "ksys_fadvise64_64")),
    ("madvise", ("madvise_willneed",)),
    ("fault", ("filemap_fault",)),
    ("read", ("filemap_read", "filemap_get_pages", "page_cache_sync_ra")),
]

SST = re.compile(r"/(\d+)\.sst(?: \((?:deleted|moved|moved or deleted)\))?$")
WAL = re.compile(r"/(\d+)\.log(?: \((?:deleted|moved|moved or deleted)\))?$")


def frame_name(frame):
    """"filemap_read+0x1c5/0x340 [mod]" or "filemap_read+0x1c5" -> "filemap_read"."""
    return re.split(r"[+ ]", frame.strip(), maxsplit=1)[0]


def stack_kind(stack):
    """What a page cache read's stack shows it is, or None (not a page cache read)."""
    names = {frame_name(f) for f in stack}
    for kind, funcs in STACK_KINDS:
        if names & set(funcs):
            return kind
    return None


# --------------------------------------------------------------------- the scenario

class DbBench:
    """db_bench in the background, its output (line-buffered) collected as it comes."""

    def __init__(self, db, benchmarks, extra=()):
        self.t0 = time.time()
        self.proc = subprocess.Popen(
            ["stdbuf", "-oL", DB_BENCH, "--db=" + db, "--benchmarks=" + benchmarks]
            + DB_OPTS + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.pid = self.proc.pid
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self):
        return "\n".join(self.lines)

    def wait_for(self, text, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(text in line for line in self.lines):
                return
            assert self.proc.poll() is None, "db_bench exited %s:\n%s" % (
                self.proc.returncode, self.output()[-3000:])
            time.sleep(0.1)
        raise AssertionError("db_bench did not print %r in %ds:\n%s" % (
            text, timeout, self.output()[-3000:]))

    def tids(self):
        try:
            return sorted(int(t) for t in os.listdir("/proc/%d/task" % self.pid))
        except FileNotFoundError:
            return []

    def thread_io(self):
        """{tid: {"comm", "rchar", "wchar", "read_bytes", ...}} of its live threads."""
        out = {}
        for tid in self.tids():
            base = "/proc/%d/task/%d/" % (self.pid, tid)
            try:
                io = {}
                with open(base + "io") as f:
                    for line in f:
                        k, _, v = line.partition(":")
                        io[k.strip()] = int(v)
                with open(base + "comm") as f:
                    io["comm"] = f.read().strip()
            except FileNotFoundError:
                continue
            out[tid] = io
        return out

    def wait_background_idle(self, quiet=1.5, timeout=60):
        """Until the rocksdb:* threads' I/O counters stay unchanged for @quiet seconds."""
        def bg():
            return {t: (v["rchar"], v["wchar"]) for t, v in self.thread_io().items()
                    if v["comm"].startswith("rocksdb:")}
        deadline = time.time() + timeout
        last, since = bg(), time.time()
        while time.time() < deadline:
            time.sleep(0.25)
            now = bg()
            if now != last:
                last, since = now, time.time()
            elif time.time() - since >= quiet:
                return
        raise AssertionError("db_bench's background threads never went idle")

    def stop(self):
        """SIGSTOP, and wait until every thread has stopped (each syscall returned)."""
        os.kill(self.pid, signal.SIGSTOP)
        deadline = time.time() + 10
        while time.time() < deadline:
            states = []
            for tid in self.tids():
                try:
                    with open("/proc/%d/task/%d/stat" % (self.pid, tid)) as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
                except FileNotFoundError:
                    pass
            if states and all(s in "tT" for s in states):
                return
            time.sleep(0.02)
        raise AssertionError("db_bench did not stop")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(timeout=10)


def drop_db_cache(db):
    """Writes the database's dirty pages and drops its files from the page cache (this
    file system only: nothing else on the machine loses its cache)."""
    os.sync()
    for root, _, files in os.walk(db):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def log_events(db):
    """EVENT_LOG_v1 records of every LOG (LOG.old.* from earlier opens first), each with
    the "tid" of the thread that logged it (a job logs from the thread that ran it)."""
    names = sorted(n for n in os.listdir(db) if n.startswith("LOG.old."))
    events = []
    for name in names + ["LOG"]:
        with open(os.path.join(db, name), errors="replace") as f:
            for line in f:
                m = re.match(r"\S+ (\d+) EVENT_LOG_v1 (\{.*\})\s*$", line)
                if m:
                    ev = json.loads(m.group(2))
                    ev["tid"] = int(m.group(1))
                    events.append(ev)
    return events


def file_sizes(directory, pattern):
    out = {}
    for name in os.listdir(directory):
        m = re.fullmatch(pattern, name)
        if m:
            out[int(m.group(1))] = os.stat(os.path.join(directory, name)).st_size
    return out


class Watch:
    """`iospan watch` on @dev in the background with a write rule RocksDB's fill trips at
    once, a capture longer than the phase: one incident holds all of phase A. Its FS
    bytes byte-exact (--syscall-hooks raw): by default they are whole pages, with those
    the file system dirties itself when RocksDB preallocates and truncates its files
    (one page over an SST's size, seen), and a file's bytes are checked against its
    size."""

    def __init__(self, db, dev):
        self.db = db
        self.proc = tl.popen_iospan(
            "watch", "--db", db, "-d", dev, "--interval", "0.5", "--pre", "5",
            "--capture", "300", "--cooldown", "0", "--for", "1", "--write-mbps", "1",
            "--read-mbps", "0", "--util", "0", "--await", "0", "--syscall-hooks", "raw")
        self.log = []
        self.reader = threading.Thread(target=lambda: self.log.extend(self.proc.stderr),
                                       daemon=True)
        self.reader.start()
        self.wait_for(" start: watching ")

    def wait_for(self, text, timeout=60):
        deadline = time.time() + timeout
        while not any(text in line for line in list(self.log)):
            assert time.time() < deadline and self.proc.poll() is None, "".join(self.log)
            time.sleep(0.1)

    def stop(self):
        """SIGTERM: the open incident is stored as it is; then `incidents show 1`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.reader.join(timeout=10)
        assert self.proc.returncode == 0, "".join(self.log)
        return json.loads(tl.run_iospan("--json", "incidents", "--db", self.db, "show", "1",
                                        check=True).stdout)


def top_doc(tracer):
    docs = tracer.json_lines()
    assert len(docs) == 1, docs
    return docs[0]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Runs both phases once; yields everything the tests compare."""
    tl.require_root("creates a loop device with ext4, loads BPF")
    assert os.access(DB_BENCH, os.X_OK), \
        "db_bench not found: install rocksdb-tools (scripts/setup-deps.sh)"
    r = {}
    with tl.scratch_fs("ext4", 1024) as fs:
        db = os.path.join(fs.mnt, "db")
        r["fs"] = fs
        r["db"] = db
        top = ("top", "--threads", "--json", "--max-files", "100000",
               "--stall-threshold", "0", "--duration", "10m")

        # Phase A: fill, flush, compact; stopped while reading from the page cache.
        watch = Watch(str(tmp_path_factory.mktemp("watch") / "incidents.db"), fs.dev)
        t_top = tl.Tracer(*top)
        bench = None
        try:
            bench = DbBench(db, "fillrandom,flush,waitforcompaction,readrandom")
            bench.wait_for("waitforcompaction(%s): finished" % db, timeout=120)
            bench.wait_background_idle()
            bench.stop()
            r["a_io"] = bench.thread_io()
            r["a_proc"] = tl.read_proc_io(bench.pid)
            r["a_pid"] = bench.pid
            os.sync()  # the dirty pages left are written back, credited to their dirtiers
            time.sleep(0.5)
            r["a_top"] = top_doc(t_top)
            t_top = None
            r["a_watch"] = watch.stop()
            watch = None
        finally:
            if t_top:
                t_top.stop()
            if watch:
                watch.stop()
            if bench:
                bench.kill()
                r["a_out"] = bench.output()

        # Phase B: cold reads of the same database.
        drop_db_cache(db)
        t_top = tl.Tracer(*top)
        t_lat = tl.Tracer("lat", "-d", fs.dev, "--by", "stack", "--json")
        bench = None
        try:
            bench = DbBench(db, "readrandom", ["--use_existing_db=1"])
            bench.wait_for("DB path:", timeout=60)
            time.sleep(READ_SECONDS)
            bench.stop()
            r["b_io"] = bench.thread_io()
            r["b_proc"] = tl.read_proc_io(bench.pid)
            r["b_pid"] = bench.pid
            os.sync()  # as in phase A (its threads append to LOG)
            time.sleep(0.5)  # readahead bios in flight complete
            r["b_top"] = top_doc(t_top)
            t_top = None
            r["b_lat"] = t_lat.json_lines()
            t_lat = None
        finally:
            for t in (t_top, t_lat):
                if t:
                    t.stop()
            if bench:
                bench.kill()
                r["b_out"] = bench.output()

        r["events"] = log_events(db)
        r["sst_alive"] = file_sizes(db, r"(\d+)\.sst")
        r["wal"] = file_sizes(db, r"(\d+)\.log")
        archive = os.path.join(db, "archive")
        if os.path.isdir(archive):
            r["wal"].update(file_sizes(archive, r"(\d+)\.log"))
        if os.environ.get("IOSPAN_ROCKSDB_DUMP"):
            with open(os.environ["IOSPAN_ROCKSDB_DUMP"], "w") as f:
                json.dump({k: v for k, v in r.items() if k != "fs"}, f)
        yield r


def threads_of(doc, pid):
    return [p for p in doc["processes"] if p["pid"] == pid]


def file_rows(doc, pattern):
    """{file number: [(tid, row)]} of top's rows whose path matches @pattern."""
    out = {}
    for p in doc["processes"]:
        for f in p["files"]:
            m = pattern.search(f["path"] or "")
            if m:
                out.setdefault(int(m.group(1)), []).append((p["tid"], f))
    return out


# --------------------------------------------------------------------- the checks

def test_ground_truth_is_consistent(run):
    """The harness itself: RocksDB made many SSTs, deleted most of them (inode numbers
    reused), the ones left are the size its LOG says, and top saw every file."""
    created = {e["file_number"]: e for e in run["events"]
               if e.get("event") == "table_file_creation"}
    deleted = {e["file_number"] for e in run["events"]
               if e.get("event") == "table_file_deletion"}
    print("SSTs created %d, deleted %d, alive %d; WALs %d" % (
        len(created), len(deleted), len(run["sst_alive"]), len(run["wal"])))
    assert len(created) >= 300, len(created)
    assert len(deleted) >= len(created) // 2
    assert set(run["sst_alive"]) == set(created) - deleted
    for n, size in run["sst_alive"].items():
        assert created[n]["file_size"] == size, (n, created[n]["file_size"], size)
    for doc in ("a_top", "b_top"):
        assert not any(run[doc]["dropped"].get(k) for k in (
            "stats_map_full", "procs_map_full", "lost_bytes_events")), run[doc]["dropped"]
        assert all(p["files_omitted"] == 0 for p in run[doc]["processes"])


def test_sst_fs_write_bytes_equal_file_size(run):
    """Each SST's FS write bytes in top (summed over its rows in both phases) are the
    bytes RocksDB wrote to it, all in the thread that wrote it. Fails while top keys
    files by inode number alone: a reused number puts several SSTs in one row, under
    the last one's name, and the others have no row at all."""
    created = {e["file_number"]: e for e in run["events"]
               if e.get("event") == "table_file_creation"}
    rows = file_rows(run["a_top"], SST)
    for n, rs in file_rows(run["b_top"], SST).items():
        rows.setdefault(n, []).extend(rs)
    exact, wrong, missing, wrong_thread = [], [], [], []
    for n, ev in sorted(created.items()):
        rs = rows.get(n, [])
        got = sum(f["fs_write_bytes"] for _, f in rs)
        if not rs or not got:
            missing.append(n)
        elif got != ev["file_size"]:
            wrong.append((n, got, ev["file_size"]))
        else:
            exact.append(n)
        writers = {tid for tid, f in rs if f["fs_write_bytes"]}
        if writers and writers != {ev["tid"]}:
            wrong_thread.append((n, ev["tid"], sorted(writers)))
    worst = sorted(wrong, key=lambda w: -abs(w[1] - w[2]))[:5]
    print("SSTs: %d exact, %d wrong, %d without FS write bytes, %d in another thread; "
          "worst: %s" % (len(exact), len(wrong), len(missing), len(wrong_thread), worst))
    assert not wrong and not missing and not wrong_thread, (
        "%d of %d SSTs exact; wrong (file, top, size): %s; missing: %s; wrong thread: %s"
        % (len(exact), len(created), worst, missing[:20], wrong_thread[:5]))


def test_wal_fs_write_bytes_equal_file_size(run):
    """Each WAL's FS write bytes in top equal its size (every WAL is kept, archived)."""
    rows = file_rows(run["a_top"], WAL)
    for n, rs in file_rows(run["b_top"], WAL).items():
        rows.setdefault(n, []).extend(rs)
    bad = [(n, sum(f["fs_write_bytes"] for _, f in rows.get(n, [])), size)
           for n, size in sorted(run["wal"].items())
           if sum(f["fs_write_bytes"] for _, f in rows.get(n, [])) != size]
    print("WALs: %d of %d exact; wrong (file, top, size): %s" % (
        len(run["wal"]) - len(bad), len(run["wal"]), bad[:10]))
    assert not bad, bad[:20]


# Bytes a thread reads outside the scratch file system that rchar counts and top does not:
# RocksDB reads one byte of /sys/dev/block/MAJ:MIN/queue/... in its compaction thread
# (sysfs: a pseudo file system, which top leaves out on purpose).
PSEUDO_READ_SLACK = 64


def unseen(doc, field):
    """Bytes of the disks' requests top could not credit to anyone, as it declares them:
    what /proc/diskstats counted beyond what top saw, requests still open at the end
    (`unresolved`), and those the kernel completed without running top's program
    (`completion_unseen_bytes`, on the devices' unattributed rows: see iospan-top(8),
    *Completions not seen*)."""
    return doc["dropped"].get("completion_unseen_bytes", 0) + sum(
        max(0, d["diskstats_%s_bytes" % field] - d["disk_%s_bytes" % field])
        + d["unresolved"]["%s_bytes" % field] for d in doc["devices"])


def unattributed(doc):
    """Bytes top saw on the disks but credited to no one (iospan-top(8), unmatched_bios)."""
    return sum(d["unattributed_bytes"] for d in doc["devices"])


def test_threads_match_proc_io(run):
    """The threads alive at each cut, top's bytes against /proc/PID/task/TID/io. The main
    thread is left out: it reads shared libraries, /proc and /etc and writes stdout.
    - FS write bytes are wchar: exactly.
    - FS read bytes, less those of pages faulted in (mmap rows: the libraries' code),
      are rchar, less at most PSEUDO_READ_SLACK bytes of sysfs reads.
    - DISK read bytes are read_bytes, less what top did not see of the disk at all.
    - DISK write bytes: write_bytes counts each page as it is dirtied, and a page
      dirtied and then truncated (a deleted SST's, a tail dirtied again at close) never
      reaches the disk; the kernel counts it in cancelled_write_bytes of the thread
      that truncated it, which may be another one (or one that has exited). So a
      thread's DISK writes of its files are at most its write_bytes and at least that
      less the process's cancelled_write_bytes and what top did not see (everything was
      synced before the cut). A page another thread dirties again while it is being
      written (RocksDB's LOG, appended by every thread) is the first thread's in that
      write. Over the whole process (/proc/PID/io, exited threads included) the DISK
      writes of its files are write_bytes less cancelled_write_bytes, less at most what
      top did not see."""
    bad = []
    for phase in ("a", "b"):
        doc, io, pid = run[phase + "_top"], run[phase + "_io"], run[phase + "_pid"]
        cancelled = run[phase + "_proc"]["cancelled_write_bytes"]
        miss_r = unseen(doc, "read")
        miss_w = unseen(doc, "write")
        by_tid = {p["tid"]: p for p in threads_of(doc, pid)}
        for tid, v in sorted(io.items()):
            if tid == pid:
                continue
            p = by_tid.get(tid, {})
            for tf, pf in (("fs_read_bytes", "rchar"), ("fs_write_bytes", "wchar"),
                           ("disk_read_bytes", "read_bytes"),
                           ("disk_write_bytes", "write_bytes")):
                got, want = p.get(tf, 0), v[pf]
                if pf == "rchar":
                    # rchar counts read calls, not the pages of its libraries' code
                    # that a thread faults in (top's mmap reads).
                    got -= sum(f[tf] for f in p.get("files", ()) if f["mmap"])
                if pf == "write_bytes":
                    # The pages it dirtied are its files': the file system's metadata
                    # blocks it submits (an fsync's) are dirtied by others (jbd2).
                    got = sum(f[tf] for f in p.get("files", ()) if f["kind"] == "file")
                if pf == "rchar":
                    ok = want - PSEUDO_READ_SLACK <= got <= want
                elif pf == "read_bytes":
                    # Bios top credits to no one (their owner record taken by another
                    # bio, or their queue ran no program) are on the unattributed rows.
                    ok = want - miss_r - unattributed(doc) <= got <= want
                elif pf == "write_bytes":
                    ok = want - cancelled - miss_w <= got <= want
                else:
                    ok = got == want
                line = "%s %d %-13s %-17s %12d %-12s %12d" % (phase, tid, v["comm"], tf, got,
                                                             pf, want)
                print(line + ("" if got == want else "   %+d%s" % (
                    got - want, "" if ok else "  <-- wrong")))
                if not ok:
                    bad.append(line)
        # The whole process (threads that exited included): every page it dirtied was
        # written or cancelled, and written once.
        got = sum(f["disk_write_bytes"] for p in threads_of(doc, pid) for f in p["files"]
                  if f["kind"] == "file")
        want = run[phase + "_proc"]["write_bytes"] - cancelled
        ok = want - miss_w <= got <= want
        line = "%s process %d: DISK writes of its files %d, write_bytes - cancelled %d" % (
            phase, pid, got, want)
        print(line + ("" if got == want else "   %+d%s" % (got - want,
                                                         "" if ok else "  <-- wrong")))
        if not ok:
            bad.append(line)
        print("%s: cancelled_write_bytes %d, not seen by top: read %d, written %d; "
              "top's drops %s" % (phase, cancelled, miss_r, miss_w,
                                  {k: v for k, v in doc["dropped"].items() if v}))
    assert not bad, "\n".join(bad)


def test_watch_incident_files_and_threads(run):
    """watch's incident of phase A: each file it kept (inode and generation) has one
    name, and no more FS write bytes than its file holds (it keeps the busiest files of
    each sample: a file's sum may fall short, never over); RocksDB's flush and
    compaction threads are kept apart, each named."""
    doc = run["a_watch"]
    created = {e["file_number"]: e["file_size"] for e in run["events"]
               if e.get("event") == "table_file_creation"}
    groups = {}
    for f in doc["files"]:
        m = SST.search(f["path"] or "")
        if m:
            g = groups.setdefault((f["dev"], f["inode"], f["generation"]), [set(), 0])
            g[0].add(int(m.group(1)))
            g[1] += f["fs_write_bytes"]
    assert len(groups) >= 100, len(groups)
    named = {k: v for k, v in groups.items() if len(v[0]) != 1}
    assert not named, list(named.items())[:5]
    over = [(next(iter(v[0])), v[1], created.get(next(iter(v[0]))))
            for v in groups.values()
            if created.get(next(iter(v[0]))) is not None and v[1] > created[next(iter(v[0]))]]
    assert not over, over[:5]
    comms = {t["comm"] for t in doc["threads"] if t["pid"] == run["a_pid"]}
    assert {"rocksdb:high", "rocksdb:low"} <= comms, comms


def test_no_sst_row_marked_mmap(run):
    """RocksDB writes its SSTs with pwrite and reads them with pread (no mmap options):
    no SST row of top may say mmap."""
    marked = []
    for phase in ("a", "b"):
        for n, rs in sorted(file_rows(run[phase + "_top"], SST).items()):
            for tid, f in rs:
                if f["mmap"]:
                    marked.append((phase, n, tid, f["fs_write_bytes"]))
    rows = sum(len(rs) for rs in file_rows(run["a_top"], SST).values())
    print("SST rows marked mmap: %d of %d (phase A)" % (
        sum(1 for m in marked if m[0] == "a"), rows))
    assert not marked, marked[:20]


def test_readrandom_requests_labelled_by_stack(run):
    """Phase B's page cache reads, per queuing stack: the kind lat gives each is what its
    stack shows (a read's own miss, async readahead, readahead(2), ...)."""
    docs = run["b_lat"]
    assert len(docs) == 1
    rows = [h for h in docs[0]["histograms"] if h["pid"] == run["b_pid"]]
    assert rows, docs[0]["histograms"][:3]
    total = sum(h["count"] for h in rows)
    by = {}
    bad = []
    for h in rows:
        if h.get("stack_lost"):
            continue
        want = stack_kind(h["stack"])
        if want is None:
            continue  # not a page cache read (direct, metadata, write-out)
        by[(want, h["kind"])] = by.get((want, h["kind"]), 0) + h["count"]
        if h["kind"] != want:
            bad.append((want, h["kind"], h["count"], h["stack"][:12]))
    print("requests of db_bench: %d; (stack shows, lat says): requests %s" % (total, by))
    assert by, "no page cache reads in phase B"
    assert not bad, "\n".join("stack shows %s, lat says %s (%d requests): %s" % b
                              for b in bad[:5])
