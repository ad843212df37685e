# SPDX-License-Identifier: GPL-2.0
"""Checks of Chrome Trace Event files, as the Perfetto UI reads them."""
import json as _json


def check_perfetto(path):
    """A valid Chrome Trace Event JSON file (what trace --perfetto and incidents export
    write): every event of a known phase, complete events ("X") that nest on every track
    (pid, tid), counters ("C") with numbers only. The document."""
    with open(path) as f:
        doc = _json.load(f)
    events = doc["traceEvents"]
    assert events, "empty Perfetto file"
    tracks = {}
    for e in events:
        assert e["ph"] in ("X", "i", "M", "C"), e
        if e["ph"] == "X":
            assert e["dur"] >= 0
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), e["name"]))
        elif e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
    for key, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s in spans:
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack:
                assert s[1] <= stack[-1][1], "spans %s and %s on track %s overlap" % (
                    stack[-1], s, key)
            stack.append(s)
    return doc
