#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: a scratch loop device with ext4, a short known workload on it, and
# iospan watching it. Everything it creates is removed on exit, Ctrl-C included.
#   IOSPAN_BIN=...   binary to run (default build/iospan)
#   DEMO_CMD=...     arguments of a BPF command (it must print its "tracing" line);
#                    @DEV@ is replaced by the loop device
set -euo pipefail
cd "$(dirname "$0")/.."

IOSPAN_BIN=${IOSPAN_BIN:-build/iospan}
# The command shown to the user.
DEMO_CMD=${DEMO_CMD:-"top -d @DEV@ --duration 4 -n 5 --max-files 3"}
SECONDS_OF_WORK=3

if [[ $(id -u) -ne 0 ]]; then
	echo "demo: needs root (it creates a loop device and mounts it): run 'sudo make demo'" >&2
	exit 2
fi
if [[ ! -x $IOSPAN_BIN ]]; then
	echo "demo: $IOSPAN_BIN not found: run 'make' first" >&2
	exit 1
fi

workdir=$(mktemp -d /tmp/iospan-demo.XXXXXX)
dev=""
mnt="$workdir/mnt"
load_pid=""
iospan_pid=""

cleanup() {
	trap - EXIT INT TERM
	if [[ -n $iospan_pid ]]; then
		kill -INT "$iospan_pid" 2>/dev/null || true
		wait "$iospan_pid" 2>/dev/null || true
	fi
	if [[ -n $load_pid ]]; then
		kill "$load_pid" 2>/dev/null || true
		wait "$load_pid" 2>/dev/null || true
	fi
	if mountpoint -q "$mnt" 2>/dev/null; then
		umount "$mnt" 2>/dev/null || umount -l "$mnt" || true
	fi
	if [[ -n $dev ]]; then
		losetup -d "$dev" 2>/dev/null || true
	fi
	rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

truncate -s 256M "$workdir/disk.img"
dev=$(losetup --find --show "$workdir/disk.img")
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
mkdir "$mnt"
mount "$dev" "$mnt"

# Files the workload uses, written and flushed before tracing starts.
fio --name=prep --directory="$mnt" --filename=db.dat --size=32M --rw=write --bs=1M \
	--end_fsync=1 >/dev/null
dd if=/dev/urandom of="$mnt/archive.tar" bs=1M count=16 conv=fsync status=none
# Drop just this file from the page cache (not the whole machine's): its reads will miss.
dd if="$mnt/archive.tar" iflag=nocache count=0 status=none

# A known workload by several processes, while iospan watches:
#  - fio: 4k direct random reads, ~400/s, for 3 s (DISK bytes, direct I/O, latency);
#  - dd: 24 MiB of buffered writes, then `sync` from another process: the flusher's
#    disk writes are credited to dd (writeback attribution);
#  - cat: reads a file that is not in the page cache (FS and DISK reads match).
workload() {
	fio --directory="$mnt" --filename=db.dat --size=32M --bs=4k --direct=1 --ioengine=psync \
		--time_based --runtime="$SECONDS_OF_WORK" --name=db-reader --rw=randread \
		--rate_iops=400 >/dev/null &
	dd if=/dev/zero of="$mnt/app.log" bs=1M count=24 status=none
	sleep 0.5
	sync
	cat "$mnt/archive.tar" >/dev/null
	wait
}
args=${DEMO_CMD//@DEV@/$dev}
echo "# iospan demo: fio reads db.dat directly, dd writes app.log (flushed by sync),"
echo "# cat reads archive.tar from disk; all on $dev (ext4, scratch, removed afterwards)."
echo "# \$ iospan $args"
# iospan runs in the background; the workload starts once it says it is tracing (its
# hooks are attached), so nothing is missed however long loading takes here.
# shellcheck disable=SC2086 # word splitting of the argument string is intended
"$IOSPAN_BIN" $args 2> >(tee "$workdir/iospan.err" >&2) &
iospan_pid=$!
for _ in $(seq 300); do
	grep -q "tracing" "$workdir/iospan.err" 2>/dev/null && break
	kill -0 "$iospan_pid" 2>/dev/null || break
	sleep 0.05
done
workload &
load_pid=$!
status=0
wait "$iospan_pid" || status=$?
iospan_pid=""
wait "$load_pid" || true
load_pid=""
exit "$status"
