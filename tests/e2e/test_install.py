# SPDX-License-Identifier: GPL-2.0
"""`make install` with PREFIX and DESTDIR installs the binary and real man pages
(section 8, generated from docs/iospan*.md with pandoc), and every manual page that
`--help` refers to is among them. No root needed."""
import glob
import os
import re
import subprocess

import pytest

import iospan_testlib as tl

DOCS = sorted(glob.glob(os.path.join(tl.repo_root(), "docs", "iospan*.md")))
PAGES = [os.path.basename(d)[:-3] for d in DOCS]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("destdir"))
    out = os.path.dirname(tl.iospan_bin())
    p = subprocess.run(["make", "-s", "-C", tl.repo_root(), "install", "OUT=%s" % out,
                        "DESTDIR=%s" % dest, "PREFIX=/opt/iospan"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, "make install failed:\n%s%s" % (p.stdout, p.stderr)
    return os.path.join(dest, "opt", "iospan")


def test_binary_installed(installed):
    binary = os.path.join(installed, "sbin", "iospan")
    assert os.access(binary, os.X_OK), binary
    p = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and p.stdout.startswith("iospan "), p


def test_pages_installed(installed):
    man8 = os.path.join(installed, "share", "man", "man8")
    assert sorted(os.listdir(man8)) == sorted(p + ".8" for p in PAGES)
    assert "iospan" in PAGES and "iospan-top" in PAGES


def test_dashboard_and_config_installed(installed):
    """The Grafana dashboard and the example config, as in the repository."""
    doc = os.path.join(installed, "share", "doc", "iospan")
    for installed_name, src in (("grafana/iospan.json", "dist/grafana/iospan.json"),
                                ("watch.conf.example", "dist/watch.conf")):
        with open(os.path.join(doc, installed_name)) as a, \
                open(os.path.join(tl.repo_root(), src)) as b:
            assert a.read() == b.read(), installed_name


@pytest.mark.parametrize("page", PAGES)
def test_page_renders(installed, page):
    path = os.path.join(installed, "share", "man", "man8", page + ".8")
    env = dict(os.environ, MANWIDTH="100")
    env.pop("MAN_KEEP_FORMATTING", None)
    p = subprocess.run(["man", "-l", path], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    text = p.stdout
    # The title line names the page and section; NAME gives "page - summary".
    assert re.match(r"\s*%s\(8\)" % re.escape(page), text), text[:200]
    name = re.search(r"^NAME\n\s+(\S+)\s+-\s+\S", text, re.M)
    assert name and name.group(1) == page, text[:400]
    for section in ("SYNOPSIS", "DESCRIPTION", "EXIT STATUS"):
        assert re.search(r"^%s$" % section, text, re.M), (page, section)
    # No markdown left over (fences, headings), no troff error.
    assert "```" not in text and not re.search(r"^#+ ", text, re.M), page
    g = subprocess.run(["groff", "-man", "-Tutf8", "-z", path], capture_output=True, text=True,
                       timeout=60)
    assert g.returncode == 0 and "error" not in g.stderr, g.stderr


def test_man_finds_pages_by_name(installed):
    env = dict(os.environ, MANWIDTH="100")
    for page in PAGES:
        p = subprocess.run(["man", "-M", os.path.join(installed, "share", "man"), "8", page],
                           capture_output=True, text=True, timeout=60, env=env)
        assert p.returncode == 0 and "NAME" in p.stdout, (page, p.stderr)


def test_help_refers_to_installed_pages(installed):
    """--help refers to man pages: each one it names is installed."""
    cmds = ["stat", "top", "trace", "doctor"]
    helps = [tl.run_iospan("--help").stdout] + [tl.run_iospan(c, "--help").stdout for c in cmds]
    named = set()
    for text in helps:
        named.update(re.findall(r"\b(iospan(?:-[a-z]+)?)\(8\)", text))
    assert named >= {"iospan", "iospan-stat", "iospan-top", "iospan-trace", "iospan-doctor"}, named
    man8 = os.listdir(os.path.join(installed, "share", "man", "man8"))
    assert not [n for n in named if n + ".8" not in man8], (named, man8)
    assert not [t for t in helps if "docs/iospan" in t and "'man'" in t]
