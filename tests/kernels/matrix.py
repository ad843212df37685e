#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The kernel test matrix: Debian's kernels booted under QEMU with iospan inside.

  matrix.py list                 the kernels of the matrix (apt-cache), one per line
  matrix.py fetch [NAME...]      downloads and unpacks them into the cache
  matrix.py run NAME [--smoke] [-- CMD]
                                 boots NAME with the guest suite (its smoke subset, or
                                 CMD, a shell line) and prints where its results are

Kernels are Debian 12's linux-image-<version>-<flavour>-unsigned packages: for every
flavour (cloud-amd64, amd64, rt-amd64) and every kernel series the archive carries, the
newest version. They are fetched with `apt-get download` into $IOSPAN_KERNEL_CACHE
(default /var/cache/iospan/kernels) and unpacked with `dpkg-deb -x`; nothing is
installed on the host.

The guest boots from an initramfs made here: busybox, build/iospan and the libraries
it links, the guest workload tool and the guest suite (tests/kernels/guest/), and the
kernel modules the suite needs (with their dependencies, from depmod). Disks are
virtio: three scratch disks with ext4, xfs and btrfs made on the host, and one raw
disk the guest writes its results to as a tar archive, which the host unpacks.
QEMU uses KVM when /dev/kvm works and TCG otherwise.
"""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("IOSPAN_KERNEL_CACHE", "/var/cache/iospan/kernels")
FLAVOURS = ("cloud-amd64", "amd64", "rt-amd64")
PKG_RE = re.compile(r"^linux-image-(\d+\.\d+)\.([0-9.+a-z-]*?)-(cloud-amd64|rt-amd64|amd64)-unsigned$")

# Modules the guest suite needs, loaded in this order (dependencies first, from depmod);
# those built into a flavour are skipped. crc32c_generic first: ext4, xfs and btrfs ask
# the crypto API for "crc32c" at mount, which no modprobe would load in the guest.
GUEST_MODULES = ["crc32c_generic", "virtio_pci", "virtio_blk", "ext4", "loop", "xfs", "btrfs",
                 "null_blk", "nvme", "virtio_scsi", "sd_mod"]

SCRATCH_FS = ("ext4", "xfs", "btrfs")
# The disks the guest gets, in order (vda, vdb, ...): the scratch file systems, then
# "raw" (no file system: raw block device I/O); the results disk comes last.
GUEST_DISKS = SCRATCH_FS + ("raw",)
SUITES = ("full", "smoke")
SCRATCH_MB = 512
RESULTS_MB = 64
# Driver disks (no file system): an emulated NVMe namespace and a SCSI disk on
# virtio-scsi, each behind QEMU's blkdebug driver, which fails every read of
# BAD_SECTOR (the guest's driver errors, retries and the request they hit).
DRIVER_DISKS = ("nvme", "scsi")
DRIVER_MB = 64
BAD_SECTOR = 65536
BLKDEBUG_CONF = """[inject-error]
event = "read_aio"
errno = "5"
sector = "%d"
""" % BAD_SECTOR


class MatrixError(Exception):
    pass


def _run(cmd, **kw):
    kw.setdefault("check", True)
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", True)
    try:
        return subprocess.run(cmd, **kw)
    except subprocess.CalledProcessError as e:
        raise MatrixError("%s failed (exit %d): %s" % (" ".join(cmd), e.returncode,
                                                      (e.stderr or "").strip()[-500:]))
    except FileNotFoundError:
        raise MatrixError("%s: not installed (run scripts/setup-deps.sh)" % cmd[0])


def _version_key(s):
    return [int(p) if p.isdigit() else p for p in re.split(r"[.+~-]", s)]


def list_kernels():
    """[(name, package)]: per flavour and series, the newest package in the archive."""
    out = _run(["apt-cache", "search", "--names-only", r"^linux-image-[0-9].*-unsigned$"]).stdout
    best = {}
    for line in out.splitlines():
        pkg = line.split(" - ")[0].strip()
        m = PKG_RE.match(pkg)
        if not m or m.group(3) not in FLAVOURS:
            continue
        series, flavour = m.group(1), m.group(3)
        ver = pkg[len("linux-image-"):-len("-unsigned")]
        key = (series, flavour)
        if key not in best or _version_key(ver) > _version_key(best[key][0]):
            best[key] = (ver, pkg)
    if not best:
        raise MatrixError("apt-cache finds no linux-image-*-unsigned package: "
                          "run 'apt-get update' (Debian's archive is needed)")
    return [(best[k][0], best[k][1])
            for k in sorted(best, key=lambda k: (_version_key(k[0]), FLAVOURS.index(k[1])))]


def kernel_dir(name):
    return os.path.join(CACHE, name)


def fetch(name, pkg):
    """Downloads and unpacks @pkg into the cache (once); returns its directory."""
    root = kernel_dir(name)
    if os.path.exists(os.path.join(root, ".complete")):
        return root
    debs = os.path.join(CACHE, "debs")
    os.makedirs(debs, exist_ok=True)
    have = [f for f in os.listdir(debs) if f.startswith(pkg + "_") and f.endswith(".deb")]
    if not have:
        _run(["apt-get", "download", pkg], cwd=debs)
        have = [f for f in os.listdir(debs) if f.startswith(pkg + "_") and f.endswith(".deb")]
        if not have:
            raise MatrixError("apt-get download %s left no .deb in %s" % (pkg, debs))
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    _run(["dpkg-deb", "-x", os.path.join(debs, sorted(have)[-1]), tmp])
    _run(["depmod", "-b", tmp, name])
    with open(os.path.join(tmp, ".complete"), "w") as f:
        f.write(pkg + "\n")
    shutil.rmtree(root, ignore_errors=True)
    os.rename(tmp, root)
    # The .deb is not needed once unpacked; amd64 and rt ones are 70 MB each.
    for f in have:
        os.unlink(os.path.join(debs, f))
    return root


def _modules_in_order(root, name, wanted):
    moddir = os.path.join(root, "lib", "modules", name)
    deps = {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            mod, _, rest = line.partition(":")
            deps[os.path.basename(mod).split(".ko")[0]] = (mod, rest.split())
    builtin = set()
    with open(os.path.join(moddir, "modules.builtin")) as f:
        for line in f:
            builtin.add(os.path.basename(line.strip()).split(".ko")[0])
    order, seen = [], set()

    def add(mod_name):
        if mod_name in seen:
            return
        seen.add(mod_name)
        path, dep_paths = deps[mod_name]
        for d in reversed(dep_paths):
            add(os.path.basename(d).split(".ko")[0])
        order.append(path)

    for w in wanted:
        if w in deps:
            add(w)
        elif w not in builtin:
            raise MatrixError("%s: module %s neither built in nor available" % (name, w))
    return [os.path.join(moddir, p) for p in order]


def _libs_of(binary):
    out = _run(["ldd", binary], check=False).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def _copy_into(staging, path, dest=None):
    dest = os.path.join(staging, (dest or path).lstrip("/"))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy2(os.path.realpath(path), dest)


def build_initramfs(name, root, out, iospan_bin, extra_bins):
    """A gzip'd cpio with busybox, iospan and its libraries, the guest suite and modules."""
    staging = tempfile.mkdtemp(prefix="iospan-initramfs-")
    try:
        for d in ("bin", "sbin", "proc", "sys", "dev", "tmp", "mnt", "results", "lib/modules"):
            os.makedirs(os.path.join(staging, d), exist_ok=True)
        _copy_into(staging, shutil.which("busybox") or "/bin/busybox", "/bin/busybox")
        bins = {"/bin/iospan": iospan_bin}
        bins.update(extra_bins)
        for dest, src in bins.items():
            _copy_into(staging, src, dest)
            for lib in _libs_of(src):
                _copy_into(staging, lib)
        for mod in _modules_in_order(root, name, GUEST_MODULES):
            _copy_into(staging, mod, "/lib/modules/" + os.path.basename(mod))
        with open(os.path.join(staging, "lib/modules/order"), "w") as f:
            for mod in _modules_in_order(root, name, GUEST_MODULES):
                f.write(os.path.basename(mod) + "\n")
        guest = os.path.join(HERE, "guest")
        for f in os.listdir(guest):
            if f.endswith(".sh") or f == "init":
                _copy_into(staging, os.path.join(guest, f), "/" + f if f == "init" else "/suite/" + f)
        os.chmod(os.path.join(staging, "init"), 0o755)
        find = subprocess.Popen(["find", "."], cwd=staging, stdout=subprocess.PIPE)
        with open(out, "wb") as f:
            cpio = subprocess.Popen(["busybox", "cpio", "-o", "-H", "newc"], cwd=staging,
                                    stdin=find.stdout, stdout=subprocess.PIPE)
            gz = subprocess.Popen(["gzip", "-1"], stdin=cpio.stdout, stdout=f)
            cpio.stdout.close()
            find.stdout.close()
            if gz.wait() or cpio.wait() or find.wait():
                raise MatrixError("building the initramfs failed")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _make_disk(path, size_mb, fstype=None):
    with open(path, "wb") as f:
        f.truncate(size_mb << 20)
    if fstype:
        mkfs = {"ext4": ["mkfs.ext4", "-q", "-F"], "xfs": ["mkfs.xfs", "-q", "-f"],
                "btrfs": ["mkfs.btrfs", "-q", "-f"]}[fstype]
        _run(mkfs + [path])


_ACCEL = None


def accel(vmlinuz):
    """["-accel", "kvm", ...] when KVM really runs a guest here, TCG otherwise.

    /dev/kvm may open and still not run a vCPU (nested virtualization off): the probe
    boots the kernel without a root file system, which panics and, with panic=-1 and
    -no-reboot, makes QEMU exit within seconds under KVM. Too slow means no KVM."""
    global _ACCEL
    if _ACCEL is None:
        _ACCEL = ["-accel", "tcg,thread=" + os.environ.get("IOSPAN_TCG_THREAD", "single"), "-cpu", "max"]
        if os.access("/dev/kvm", os.R_OK | os.W_OK):
            try:
                p = subprocess.run(["qemu-system-x86_64", "-accel", "kvm", "-cpu", "host",
                                    "-nographic", "-no-reboot", "-m", "256", "-kernel", vmlinuz,
                                    "-append", "console=ttyS0 panic=-1"],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=15)
                if b"Kernel panic" in p.stdout:
                    _ACCEL = ["-accel", "kvm", "-cpu", "host"]
            except (OSError, subprocess.TimeoutExpired):
                pass
    return _ACCEL


def default_bins():
    """The guest's extra binaries: {path in the guest: path here}."""
    iowork = os.environ.get("IOWORK_BIN") or os.path.join(REPO, "build", "iowork")
    return {"/bin/iowork": iowork}


def _console_trouble(path):
    """The guest's own messages and the first oops or panic on its console, if any."""
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    said = [line for line in lines if "guest:" in line]
    first = next((i for i, line in enumerate(lines)
                  if "Oops" in line or "BUG:" in line or "Kernel panic" in line), None)
    return "\n".join(said + (lines[first:first + 12] if first is not None else []))


def boot(name, workdir, cmd=None, timeout=900, iospan_bin=None, extra_bins=None,
         suite="full", extra_qemu=(), prefix=()):
    """Boots kernel @name with the guest suite (@suite: full or smoke) or @cmd;
    returns (results_dir, console). @extra_qemu: more QEMU arguments (disks after the
    results disk: vdf, ...); @prefix: a command QEMU runs under (it execs QEMU's argv)."""
    root = kernel_dir(name)
    vmlinuz = os.path.join(root, "boot", "vmlinuz-" + name)
    if not os.path.exists(vmlinuz):
        raise MatrixError("%s: not fetched (run 'tests/kernels/matrix.py fetch')" % name)
    iospan_bin = iospan_bin or os.environ.get("IOSPAN_BIN") or os.path.join(REPO, "build",
                                                                            "iospan")
    extra_bins = default_bins() if extra_bins is None else extra_bins
    for path in [iospan_bin] + list(extra_bins.values()):
        if not os.access(path, os.X_OK):
            raise MatrixError("%s: not built (run 'make test-kernels' or 'make')" % path)
    os.makedirs(workdir, exist_ok=True)
    initrd = os.path.join(workdir, "initramfs.gz")
    build_initramfs(name, root, initrd, iospan_bin, extra_bins)
    drives = []
    for fs in GUEST_DISKS:
        img = os.path.join(workdir, fs + ".img")
        _make_disk(img, SCRATCH_MB, None if fs == "raw" else fs)
        drives.append(img)
    blkdebug = os.path.join(workdir, "blkdebug.conf")
    with open(blkdebug, "w") as f:
        f.write(BLKDEBUG_CONF)
    driver_imgs = []
    for kind in DRIVER_DISKS:
        img = os.path.join(workdir, kind + ".img")
        _make_disk(img, DRIVER_MB)
        driver_imgs.append(img)
    results_img = os.path.join(workdir, "results.img")
    _make_disk(results_img, RESULTS_MB)
    drives.append(results_img)
    append = ("console=ttyS0 panic=-1 quiet loglevel=4 iospan.fs=%s iospan.suite=%s "
              "iospan.bad_sector=%d" % (",".join(GUEST_DISKS), suite, BAD_SECTOR))
    if cmd:
        # The command travels base16-encoded: the kernel command line splits on spaces.
        append += " iospan.cmd=" + cmd.encode().hex()
    # One vCPU: under TCG with two, the kernel's live code patching (int3, when iospan
    # enables tracepoints) sometimes oopses the guest; and guests run two at a time.
    qemu = ["qemu-system-x86_64", "-nographic", "-no-reboot", "-m", "1024", "-smp", "1"]
    qemu += accel(vmlinuz)
    qemu += ["-kernel", vmlinuz, "-initrd", initrd, "-append", append]
    for img in drives:
        qemu += ["-drive", "file=%s,format=raw,if=virtio,cache=unsafe" % img]
    qemu += ["-drive", "if=none,id=nvme0,format=raw,cache=unsafe,"
             "file=blkdebug:%s:%s" % (blkdebug, driver_imgs[0]),
             "-device", "nvme,serial=iospan-nvme,drive=nvme0",
             "-device", "virtio-scsi-pci,id=scsi0",
             "-drive", "if=none,id=scsi0d,format=raw,cache=unsafe,"
             "file=blkdebug:%s:%s" % (blkdebug, driver_imgs[1]),
             "-device", "scsi-hd,drive=scsi0d,bus=scsi0.0"]
    qemu = list(prefix) + qemu + list(extra_qemu)
    console_path = os.path.join(workdir, "console.log")
    t0 = time.monotonic()
    with open(console_path, "w") as console:
        try:
            subprocess.run(qemu, stdin=subprocess.DEVNULL, stdout=console,
                           stderr=subprocess.STDOUT, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise MatrixError("%s: the guest did not finish within %d s (console: %s)" %
                              (name, timeout, console_path))
    elapsed = time.monotonic() - t0
    results = os.path.join(workdir, "results")
    shutil.rmtree(results, ignore_errors=True)
    os.makedirs(results)
    try:
        with tarfile.open(results_img) as tar:
            tar.extractall(results)
    except tarfile.TarError as e:
        raise MatrixError("%s: the guest wrote no results (%s); console %s:\n%s" %
                          (name, e, console_path, _console_trouble(console_path)))
    for img in drives[:-1] + driver_imgs:
        os.unlink(img)
    with open(console_path, errors="replace") as f:
        console = f.read()
    with open(os.path.join(results, "boot-seconds"), "w") as f:
        f.write("%.1f\n" % elapsed)
    return results, console


def main(argv):
    if len(argv) < 2 or argv[1] not in ("list", "fetch", "run"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        kernels = list_kernels()
        if argv[1] == "list":
            for name, pkg in kernels:
                print(name, pkg)
            return 0
        if argv[1] == "fetch":
            want = set(argv[2:])
            for name, pkg in kernels:
                if not want or name in want:
                    print(fetch(name, pkg))
            return 0
        name = argv[2] if len(argv) > 2 else kernels[0][0]
        cmd = " ".join(argv[argv.index("--") + 1:]) if "--" in argv else None
        opts = argv[3:argv.index("--")] if "--" in argv else argv[3:]
        suite = "smoke" if "--smoke" in opts else "full"
        pkg = dict(kernels).get(name)
        if pkg:
            fetch(name, pkg)
        workdir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "iospan-guest-" + name)
        results, console = boot(name, workdir, cmd, suite=suite)
        sys.stdout.write(console[-4000:])
        print("results:", results)
        return 0
    except MatrixError as e:
        print("matrix: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
