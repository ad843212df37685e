# SPDX-License-Identifier: GPL-2.0
"""A real browser for the report tests: Debian's headless Chromium, driven over the
DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages on fds 3 and 4, each
ended by a NUL byte), so no WebSocket library is needed.

``Browser.open(path)`` loads a file and records what the page did while loading: console
messages, uncaught exceptions, log entries and every network request it made. The
browser runs with the network cut off (a proxy that does not exist, every host name
unresolvable), so a page that tries to fetch anything fails, and the request is seen.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

__all__ = ["chromium_bin", "Browser"]


def chromium_bin():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, width=1400, height=900):
        exe = chromium_bin()
        if not exe:
            raise RuntimeError("no chromium")
        self.profile = tempfile.mkdtemp(prefix="iospan-chromium-")
        to_rd, to_wr = os.pipe()    # we write commands -> its fd 3
        from_rd, from_wr = os.pipe()  # its fd 4 -> we read answers
        args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--metrics-recording-only", "--mute-audio",
                "--user-data-dir=" + self.profile,
                # The network is cut off: a request the page makes fails, and is seen.
                "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--remote-debugging-pipe", "--window-size=%d,%d" % (width, height),
                "about:blank"]

        def fds():
            os.dup2(to_rd, 3)
            os.dup2(from_wr, 4)

        self.proc = subprocess.Popen(args, preexec_fn=fds, pass_fds=(3, 4),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     close_fds=True)
        os.close(to_rd)
        os.close(from_wr)
        self.wr, self.rd = to_wr, from_rd
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        self.width, self.height = width, height

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.wr, self.rd):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer")
            r, _, _ = select.select([self.rd], [], [], left)
            if not r:
                continue
            chunk = os.read(self.rd, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium exited: %s" % self.proc.stderr.read()[-2000:])
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.wr, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def pump(self, seconds):
        """Reads the events that arrive in the next @seconds."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.events.append(self._read_message(deadline))
            except TimeoutError:
                return

    def evaluate(self, expr, timeout=60):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate %r: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def open(self, path, ready="window.iospanReport && window.iospanReport.ready",
             timeout=60):
        """Loads @path; returns once @ready holds (then events for a second more)."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        att = self.call("Target.attachToTarget", {"targetId": target["targetId"],
                                                  "flatten": True}, session=False)
        self.session = att["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})
        self.url = "file://" + os.path.abspath(path)
        self.call("Page.navigate", {"url": self.url})
        deadline = time.monotonic() + timeout
        while not self.evaluate("!!(%s)" % ready):
            if time.monotonic() > deadline:
                raise TimeoutError("the page did not get ready: %s" % self.errors())
            self.pump(0.2)
        self.pump(1.0)

    def errors(self):
        """Console errors and warnings, uncaught exceptions and error log entries."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning",
                                                                       "assert"):
                out.append("console.%s: %s" % (p["type"], [a.get("value", a.get("description"))
                                                           for a in p.get("args", [])]))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: %s" % p.get("exceptionDetails"))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error",
                                                                                "warning"):
                out.append("log: %s" % p["entry"].get("text"))
        return out

    def requests(self):
        """The URLs the page requested, but itself."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"
                and e["params"]["request"]["url"] != self.url]

    def screenshot_element(self, selector, path):
        """The element @selector selects, as a PNG file."""
        r = self.evaluate("(() => { const r = document.querySelector(%s)"
                          ".getBoundingClientRect(); return [r.left + scrollX, r.top + scrollY,"
                          " r.width, r.height]; })()" % json.dumps(selector))
        shot = self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": r[0], "y": r[1], "width": r[2], "height": r[3], "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def screenshot(self, path):
        """The whole page as a PNG file."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        r = self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": self.width,
                     "height": min(int(size["height"]) + 1, 16000), "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
