# SPDX-License-Identifier: GPL-2.0
"""iospan watch --listen --web-config: HTTPS, client certificates and basic authentication
configured as Prometheus' own exporters are (exporter-toolkit's web configuration file),
checked with real clients: Debian's Prometheus scraping over TLS with a password, Python's
TLS client with good and wrong certificates and passwords, and the configurations a user
gets wrong."""
import os
import shutil
import socket
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
