# SPDX-License-Identifier: GPL-2.0
"""iospan watch --listen --web-config: HTTPS, client certificates and basic authentication
configured as Prometheus' own exporters are (exporter-toolkit's web configuration file),
checked with real clients: Debian's Prometheus scraping over TLS with a password, Python's
TLS client with good and wrong certificates and passwords, and the configurations a user
gets wrong."""
import base64
import os
import re
import shutil
import socket
import struct
import ssl
import subprocess
import tempfile
import threading
import time
import warnings

import pytest

import iospan_testlib as tl
from test_metrics import (INTERVAL, Endpoint, Prometheus, disk, parse_exposition,  # noqa: F401
                          require_prometheus, value)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # bcrypt through libcrypt, as htpasswd -B makes them

OPENSSL = shutil.which("openssl")
PASSWORD = "s3cret pass:word"


def bcrypt(password, cost=10):
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << cost))


def openssl(*args):
    subprocess.run([OPENSSL] + list(args), check=True, capture_output=True, timeout=60)


class Certs:
    """A CA, a server certificate for 127.0.0.1 it signed, a client certificate it signed
    and one another CA signed, in a temporary folder."""

    def __init__(self):
        if not OPENSSL:
            pytest.skip("needs openssl: Debian's openssl package")
        self.dir = tempfile.mkdtemp(prefix=tl.TMP_PREFIX + "tls-")
        for ca in ("ca", "otherca"):
            openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=iospan test " + ca, "-keyout", self.path(ca + ".key"),
                    "-out", self.path(ca + ".crt"))
        ext = self.path("ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        for name, ca in (("server", "ca"), ("client", "ca"), ("stranger", "otherca")):
            openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name,
                    "-keyout", self.path(name + ".key"), "-out", self.path(name + ".csr"))
            openssl("x509", "-req", "-in", self.path(name + ".csr"), "-days", "2",
                    "-CA", self.path(ca + ".crt"), "-CAkey", self.path(ca + ".key"),
                    "-CAcreateserial", "-out", self.path(name + ".crt"), "-extfile", ext)

    def path(self, name):
        return os.path.join(self.dir, name)

    def client(self, ca="ca", cert=None):
        """A client's context: trusting @ca, presenting @cert (a name) if given."""
        ctx = ssl.create_default_context(cafile=self.path(ca + ".crt"))
        if cert:
            ctx.load_cert_chain(self.path(cert + ".crt"), self.path(cert + ".key"))
        return ctx

    def web_config(self, text):
        path = self.path("web.yml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def certs():
    c = Certs()
    try:
        yield c
    finally:
        c.remove()


def start(disk, web_config, tls, auth=None):
    db = tempfile.mktemp(prefix=tl.TMP_PREFIX, suffix=".db")
    return Endpoint(db, disk, "--bpf", "off", "--web-config", web_config, tls=tls, auth=auth), db


def stop(ep, db):
    rc = ep.stop()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    assert rc == 0, "".join(ep.log)


def plain_http_answer(base):
    """What a plain HTTP request to the TLS port gets back (the first bytes)."""
    host, port = base[len("https://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            return s.recv(64)
        except ConnectionResetError:
            return b""


def test_https_and_basic_auth_scraped_by_prometheus(disk, certs):
    """Prometheus scrapes over HTTPS with the CA and a password (up = 1, samples stored);
    with a wrong password it gets nothing (up = 0). Without the right user and password a
    client gets 401 and no figure; plain HTTP gets no HTTP answer; a client trusting
    another CA refuses the server."""
    require_prometheus()
    web = certs.web_config("tls_server_config:\n  cert_file: server.crt\n"
                           "  key_file: %s\nbasic_auth_users:\n  prom: %s\n"
                           "  other: %s\n" % (certs.path("server.key"), bcrypt(PASSWORD),
                                              bcrypt("other password")))
    ep, db = start(disk, web, certs.client(), ("prom", PASSWORD))
    try:
        assert ep.base.startswith("https://127.0.0.1:"), ep.base
        status, headers, text = ep.get()
        assert status == 200, (status, text)
        assert value(parse_exposition(text), "iospan_watch_samples_total") >= 1
        for auth in (("prom", "wrong"), ("nobody", PASSWORD), ("other", PASSWORD),
                     ("prom", PASSWORD + "x"), ("prom", "")):
            status, headers, text = ep.get(auth=auth)
            assert status == 401, (auth, status)
            assert headers.get("WWW-Authenticate") == 'Basic realm="iospan"', headers
            assert "iospan_" not in text
        ep.auth = None
        status, headers, text = ep.get()
        assert status == 401 and "iospan_" not in text, status
        ep.auth = ("prom", PASSWORD)
        assert not plain_http_answer(ep.base).startswith(b"HTTP/1.1 200")
        with pytest.raises(Exception) as e:
            ep.get(tls=certs.client(ca="otherca"))
        assert "CERTIFICATE_VERIFY_FAILED" in str(e.value), e.value

        auth = "basic_auth:\n  username: prom\n  password: '%s'\n" % PASSWORD
        tls = "scheme: https\ntls_config:\n  ca_file: %s\n" % certs.path("ca.crt")
        prom = Prometheus(ep.base[len("https://"):], jobs={
            "iospan": tls + auth, "wrong-password": tls + auth.replace(PASSWORD, "nope"),
            "no-tls": auth})
        try:
            deadline = time.time() + 60
            while True:
                up = {m["job"]: v for m, v in prom.query("up")}
                if len(up) == 3 and all(prom.query('count(up{job="%s"}) > 0' % j) for j in up):
                    samples = prom.query('iospan_watch_samples_total{job="iospan"}')
                    if up["iospan"] == 1 and samples:
                        break
                assert time.time() < deadline, (up, prom.logtext())
                time.sleep(0.5)
            assert up == {"iospan": 1, "wrong-password": 0, "no-tls": 0}, up
            assert not prom.query('iospan_watch_samples_total{job!="iospan"}')
        finally:
            prom.stop()
    finally:
        stop(ep, db)


def test_password_guessing_costs_only_the_guesser(disk, certs):
    """bcrypt is slow on purpose: a client guessing passwords gets 401, then 503 once the
    declared budget of checks is spent (8 at once, 4 a second), while a scraper whose
    password was checked before is answered at once and sampling goes on every
    interval."""
    web = certs.web_config("tls_server_config:\n  cert_file: server.crt\n"
                           "  key_file: server.key\nbasic_auth_users:\n  prom: %s\n"
                           % bcrypt(PASSWORD))
    ep, db = start(disk, web, certs.client(), ("prom", PASSWORD))
    try:
        assert ep.get()[0] == 200  # the scraper's password, checked once
        n0 = value(ep.samples(), "iospan_watch_samples_total")
        statuses, slowest_good = [], 0.0
        stop_guessing = threading.Event()

        def guess():
            i = 0
            while not stop_guessing.is_set():
                statuses.append(ep.get(auth=("prom", "guess%d" % i))[0])
                i += 1

        t0 = time.monotonic()
        guessers = [threading.Thread(target=guess) for _ in range(4)]
        for g in guessers:
            g.start()
        try:
            for _ in range(20):
                t = time.monotonic()
                assert ep.get()[0] == 200
                slowest_good = max(slowest_good, time.monotonic() - t)
                time.sleep(0.1)
        finally:
            stop_guessing.set()
            for g in guessers:
                g.join(timeout=30)
        elapsed = time.monotonic() - t0
        n1 = value(ep.samples(), "iospan_watch_samples_total")
    finally:
        stop(ep, db)
    assert set(statuses) <= {401, 503}, set(statuses)
    # Each 401 cost one bcrypt run: at most the burst and the rate over the time taken.
    assert statuses.count(401) <= 8 + 4 * (elapsed + 1), (statuses.count(401), elapsed)
    assert statuses.count(503) > 0, len(statuses)
    # A good scrape waits for at most the bcrypt runs in flight (one each guesser, cost 10:
    # tens of ms on this machine), never for the guessing as a whole.
    assert slowest_good < elapsed / 2, (slowest_good, elapsed)
    assert n1 - n0 >= int(elapsed / INTERVAL) - 2, (n0, n1, elapsed)


def test_client_certificates(disk, certs):
    """client_auth_type RequireAndVerifyClientCert: a client certificate the CA signed is
    let in; none, or one another CA signed, gets 403 and no figure."""
    web = certs.web_config("tls_server_config:\n  cert_file: server.crt\n"
                           "  key_file: server.key\n  client_ca_file: ca.crt\n"
                           "  client_auth_type: RequireAndVerifyClientCert\n"
                           "  min_version: TLS13\n")
    ep, db = start(disk, web, certs.client(cert="client"))
    try:
        assert "(client certificates)" in "".join(ep.log)
        status, _, text = ep.get()
        assert status == 200 and "iospan_disk_requests_total" in text, status
        for ctx in (certs.client(), certs.client(cert="stranger")):
            status, _, text = ep.get(tls=ctx)
            assert status == 403 and "iospan_" not in text, status
        # min_version TLS13: a client that stops at TLS 1.2 cannot connect.
        old = certs.client(cert="client")
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises(Exception) as e:
            ep.get(tls=old)
        # GnuTLS ends the handshake (no common version): no HTTP answer at all.
        assert isinstance(getattr(e.value, "reason", e.value), ssl.SSLError), e.value
    finally:
        stop(ep, db)


def test_bad_web_configs(disk, certs):
    """Each mistake is one line naming the file and what is wrong, exit code 1 (2 for
    usage), said before anything listens or loads."""
    good_hash = bcrypt(PASSWORD, cost=4)
    tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
    cases = {
        "missing": (None, "cannot read web config"),
        "yaml": ("tls_server_config: [\n", "line"),
        "unknown top key": ("http_server_config:\n  http2: false\n", "http_server_config"),
        "unknown tls key": (tls + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
                            "cipher_suites"),
        "no key_file": ("tls_server_config:\n  cert_file: server.crt\n", "key_file"),
        "key of another certificate": (
            "tls_server_config:\n  cert_file: server.crt\n  key_file: ca.key\n",
            "cert_file and key_file"),
        "cert file missing": ("tls_server_config:\n  cert_file: nothere.crt\n"
                              "  key_file: server.key\n", "nothere.crt"),
        "not bcrypt": ("basic_auth_users:\n  prom: plaintext\n", "bcrypt"),
        "client auth without CA": (tls + "  client_auth_type: RequireAndVerifyClientCert\n",
                                   "client_ca_file"),
        "CA not PEM": (tls + "  client_auth_type: RequireAndVerifyClientCert\n"
                       "  client_ca_file: web.yml\n", "client_ca_file"),
        "bad version": (tls + "  min_version: TLS14\n", "TLS14"),
        "users twice": ("basic_auth_users:\n  a: %s\n  a: %s\n" % (good_hash, good_hash),
                        "twice"),
        "not a mapping": ("- a\n- b\n", "mapping"),
    }
    db = tempfile.mktemp(prefix=tl.TMP_PREFIX, suffix=".db")
    for name, (text, said) in cases.items():
        web = certs.web_config(text) if text is not None else certs.path("none.yml")
        r = tl.run_iospan("watch", "--db", db, "-d", disk, "--listen", "127.0.0.1:0",
                          "--web-config", web, "--duration", "5")
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1, (name, r.returncode, r.stderr)
        assert len(lines) == 1 and said in lines[0] and "web config" in lines[0], (
            name, r.stderr)
        assert not os.path.exists(db), name  # nothing was started
    r = tl.run_iospan("watch", "--db", db, "-d", disk, "--web-config", certs.path("web.yml"),
                      "--duration", "1")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "--listen" in lines[0], r.stderr



def http_limits():
    """The endpoint's limits as src/export/http.h declares them: {name: value}."""
    with open(os.path.join(tl.repo_root(), "src", "export", "http.h")) as f:
        text = f.read()
    out = {}
    for name in ("HTTP_CONN_MEMORY", "HTTP_IDLE_TIMEOUT_S", "HTTP_TLS_HANDSHAKE_MAX",
                 "HTTP_TLS_REQUEST_MAX"):
        m = re.search(r"^#define %s\s+\(?(\d+)(?: \* (\w+)\))?\s*$" % name, text, re.M)
        assert m, name
        out[name] = int(m.group(1)) * (out[m.group(2)] if m.group(2) in out else
                                       int(m.group(2) or 1))
    return out


def per_connection_kib(lim):
    """What one connection can make the daemon hold, in KiB, by the limits of http.h:
    libmicrohttpd's pool for the request (HTTP_CONN_MEMORY); GnuTLS's session as
    gnutls_init() makes it (8 KiB in GnuTLS 3.7); what the client sent in its handshake
    twice over (the records read, the messages assembled from them and their
    transcript); what it may send after it before an answer (HTTP_TLS_REQUEST_MAX);
    one record being read (2^14 bytes and 256 of overhead, TLS 1.3's most); and a page
    for libmicrohttpd's connection and iospan's: 109 KiB. All 2,048 connections: 218 MiB."""
    return (lim["HTTP_CONN_MEMORY"] // 1024 + 8 + 2 * lim["HTTP_TLS_HANDSHAKE_MAX"] // 1024 +
            lim["HTTP_TLS_REQUEST_MAX"] // 1024 + 17 + 4)


def status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^%s:\s+(\d+) kB" % field, f.read(), re.M).group(1))


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def sockets(pid):
    """The inodes of the sockets the process @pid has open."""
    out = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            m = re.match(r"socket:\[(\d+)\]$", os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except FileNotFoundError:
            continue
        if m:
            out.add(m.group(1))
    return out


def listener(pid, port):
    """The inode of the socket listening on @port that the process @pid has."""
    mine = sockets(pid)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()  # 0A: listening
                if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port and \
                        cols[9] in mine:
                    return cols[9]
    raise AssertionError("no socket listening on %d" % port)


def connections(pid, listening):
    """How many connections the process @pid holds: its sockets but @listening (watch
    with --bpf off and no OTLP has no other). From its files, not /proc/net/tcp: a
    table that changes as it is read can be read with lines twice or missing."""
    return len(sockets(pid) - {listening})


def wait_for(what, deadline, check):
    """Polls @check until it returns true; fails naming @what at monotonic @deadline."""
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def client_hello(ctx):
    """The first flight of @ctx's client: its ClientHello, as it goes on the wire."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def huge_hello_start(size):
    """The first @size bytes of a ClientHello that says it is 16 MiB long (the most a
    handshake message can say), in records of 16 KiB, the most a record holds."""
    msg = bytes([1]) + (2**24 - 1).to_bytes(3, "big") + b"\x03\x03" + bytes(size - 6)
    return b"".join(b"\x16\x03\x01" + struct.pack(">H", len(msg[i:i + 16384])) +
                    msg[i:i + 16384] for i in range(0, len(msg), 16384))


def closed_by_peer(s):
    """True if the other end closed @s (a plain socket): EOF or a reset, past whatever it
    sent first."""
    s.setblocking(False)
    try:
        while True:
            if not s.recv(65536):
                return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


REQUEST = ("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic %s\r\n"
           "User-Agent: %s\r\nConnection: close\r\n\r\n" % (base64.b64encode(
               ("prom:" + PASSWORD).encode()).decode(), "x" * 800)).encode()


def tls_request(ctx, addr, one_byte_records=False):
    """REQUEST over TLS with @ctx, written a byte at a time (a record each) if asked;
    the start of the answer."""
    with ctx.wrap_socket(socket.create_connection(addr, timeout=10),
                         server_hostname="127.0.0.1") as s:
        for i in range(len(REQUEST)) if one_byte_records else [None]:
            s.sendall(REQUEST[i:i + 1] if i is not None else REQUEST)
        return s.recv(64)


def test_misbehaving_tls_clients_cost_only_themselves(disk, certs):
    """Over HTTPS with client certificates and a password, clients that misbehave at
    each step of TLS: 1,000 connections that never send a ClientHello, 100 that send half
    of one and stall, 64 that send 4 MiB of a ClientHello that says it is 16 MiB long,
    100 that finish the handshake and say nothing, 100 that send half a request line,
    a certificate another CA signed, a wrong password. The huge hellos are cut off at
    once; while the others are all held, a good client is answered 200 with valid
    metrics within a scrape timeout, watch samples every interval, and the daemon holds
    at most what the limits declare (http.h). The stalled handshakes are closed by the
    idle timeout as idle requests are, and afterwards the daemon has the files it had
    before."""
    web = certs.web_config("tls_server_config:\n  cert_file: server.crt\n"
                           "  key_file: server.key\n  client_ca_file: ca.crt\n"
                           "  client_auth_type: RequireAndVerifyClientCert\n"
                           "basic_auth_users:\n  prom: %s\n" % bcrypt(PASSWORD))
    lim = http_limits()
    timeout = lim["HTTP_IDLE_TIMEOUT_S"]
    per_connection = per_connection_kib(lim)
    ep, db = start(disk, web, certs.client(cert="client"), ("prom", PASSWORD))
    pid = ep.proc.pid
    host, port = ep.base[len("https://"):].rsplit(":", 1)
    port = int(port)
    listening = listener(pid, port)

    def connect(src):
        # The abusers come from addresses of their own: what they cost is checked here,
        # not the limit of connections from one address (half the connections).
        return socket.create_connection((host, port), timeout=10, source_address=(src, 0))

    stalled, huge, talked = [], [], []
    try:
        assert ep.get()[0] == 200  # the password checked once, and remembered
        wait_for("the scrapes' connections closed", time.monotonic() + timeout,
                 lambda: connections(pid, listening) == 0)
        fds0, rss0 = open_fds(pid), status_kib(pid, "VmRSS")
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")  # VmHWM from now on: the peak while the abusers are held
        n0 = value(ep.samples(), "iospan_watch_samples_total")
        t0 = time.monotonic()

        hello = client_hello(certs.client())
        for _ in range(1000):
            stalled.append(connect("127.0.0.2"))  # never says a word
        for _ in range(100):
            s = connect("127.0.0.3")
            s.sendall(hello[:len(hello) // 2])  # half a ClientHello, then nothing
            stalled.append(s)
        start_of_huge = huge_hello_start(4 << 20)
        for _ in range(64):
            s = connect("127.0.0.3")
            try:
                s.sendall(start_of_huge)
            except (ConnectionResetError, BrokenPipeError):
                pass  # cut off before it was all sent
            huge.append(s)
        for i in range(200):
            s = certs.client().wrap_socket(connect("127.0.0.4"), server_hostname="127.0.0.1")
            if i % 2:
                s.sendall(b"GET /metr")  # half a request line
            talked.append(s)
        held = len(stalled) + len(talked)

        # The huge hellos are cut off at HTTP_TLS_HANDSHAKE_MAX, not left to the idle
        # timeout: before the others, which said their last word earlier, could time out
        # (t0 + the timeout), the huge are gone and the others all held.
        wait_for("the huge ClientHellos cut off", t0 + timeout,
                 lambda: all(closed_by_peer(s) for s in huge))
        wait_for("the huge ClientHellos gone, the others held", t0 + timeout,
                 lambda: connections(pid, listening) == held)
        assert open_fds(pid) >= fds0 + held, (open_fds(pid), fds0, held)
        # A certificate another CA signed, a wrong password: refused.
        assert ep.get(tls=certs.client(cert="stranger"))[0] == 403
        assert ep.get(auth=("prom", "wrong"))[0] == 401
        # A good client, among them all: each scrape within the scrape timeout the
        # Prometheus of these tests has (test_metrics.Prometheus: 1 s).
        slowest = 0.0
        for _ in range(5):
            t = time.monotonic()
            status, _, text = ep.get()
            slowest = max(slowest, time.monotonic() - t)
            assert status == 200, status
            s = parse_exposition(text)
            assert ("iospan_disk_requests_total", frozenset(
                {("disk", disk), ("op", "read")})) in s, text[:2000]
        assert slowest < 1.0, slowest
        n1 = value(s, "iospan_watch_samples_total")
        elapsed = time.monotonic() - t0
        # One whose request comes a byte a record (of 22 bytes or more, TLS 1.2 or 1.3),
        # more on the wire than a handshake may take: its limit is not the request's.
        assert len(REQUEST) * 22 > lim["HTTP_TLS_HANDSHAKE_MAX"]
        assert tls_request(certs.client(cert="client"), (host, port),
                           one_byte_records=True).startswith(b"HTTP/1.1 200 ")
        rss1, peak = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
        fds1 = open_fds(pid)
        # The good clients' connections closed, and no abuser's yet (none could time out
        # before t0 + the idle timeout): all were held meanwhile.
        wait_for("all the abusers still held", t0 + timeout,
                 lambda: connections(pid, listening) == held)
        t_held = time.monotonic() - t0

        # The clients that finished their handshake go; the stalled handshakes stay
        # until the daemon's idle timeout closes them (from their last byte, after t0).
        for s in talked:
            s.close()
        talked = []
        wait_for("the stalled handshakes closed by the idle timeout", t0 + 3 * timeout,
                 lambda: connections(pid, listening) == 0)
        t_freed = time.monotonic() - t0
        assert all(closed_by_peer(s) for s in stalled)
        wait_for("the daemon's files back to %d" % fds0, time.monotonic() + timeout,
                 lambda: open_fds(pid) == fds0)
        for s in stalled:
            s.close()
        stalled = []
        assert ep.get()[0] == 200
        wait_for("the daemon's files back to %d" % fds0, time.monotonic() + timeout,
                 lambda: open_fds(pid) == fds0 and connections(pid, listening) == 0)
        rss2 = status_kib(pid, "VmRSS")
    finally:
        for s in stalled + huge + talked:
            s.close()
        stop(ep, db)
    print("\nheld %d connections for %.2f s; RSS %d kB, %d with them (peak %d, bound %d), "
          "%d after; fds %d, %d with them, %d after; slowest good scrape %.3f s; samples "
          "%d -> %d in %.2f s; stalled handshakes closed %.2f s after t0" % (
              held, t_held, rss0, rss1, peak, rss0 + (held + len(huge)) * per_connection,
              rss2, fds0, fds1, fds0, slowest, n0, n1, elapsed, t_freed))
    # Samples come at absolute deadlines, one per interval: a late one is still taken.
    assert n1 - n0 >= int(elapsed / INTERVAL) - 2, (n0, n1, elapsed)
    assert peak - rss0 <= (held + len(huge)) * per_connection, (rss0, peak, held)

