#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: a scratch loop device with ext4, a short known workload on it, and
# iospan watching it. Everything it creates is removed on exit, Ctrl-C included.
#   IOSPAN_BIN=...   binary to run (default build/iospan)
#   DEMO_CMD=...     iospan arguments; @DEV@ is replaced by the loop device
set -euo pipefail
cd "$(dirname "$0")/.."

IOSPAN_BIN=${IOSPAN_BIN:-build/iospan}
# The command shown to the user. Later: "top -d @DEV@ 1 3".
DEMO_CMD=${DEMO_CMD:-"stat -y -d @DEV@ 1 3"}
SECONDS_OF_WORK=4

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

cleanup() {
	trap - EXIT INT TERM
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

# Known workload: 4k direct random reads (~400/s) and writes (~150/s) for a few seconds.
fio --name=prep --directory="$mnt" --filename=data --size=32M --rw=write --bs=1M \
	--end_fsync=1 >/dev/null
sync
fio --directory="$mnt" --filename=data --size=32M --bs=4k --direct=1 --ioengine=psync \
	--time_based --runtime="$SECONDS_OF_WORK" \
	--name=reader --rw=randread --rate_iops=400 \
	--name=writer --rw=randwrite --rate_iops=150 >/dev/null &
load_pid=$!
sleep 0.5

args=${DEMO_CMD//@DEV@/$dev}
echo "# iospan demo: fio does ~400 random 4k reads/s and ~150 writes/s on $dev (ext4, scratch)."
echo "# \$ iospan $args"
# shellcheck disable=SC2086 # word splitting of the argument string is intended
"$IOSPAN_BIN" $args
wait "$load_pid" || true
load_pid=""
