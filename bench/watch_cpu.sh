#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The watcher's own CPU with many processes in top's procs map: 1,500 processes that
# did one read stay alive, and the watcher's user+system ticks over 30 s are printed
# (housekeeping reads that map once a second). Usage: sudo bench/watch_cpu.sh [BIN]
set -u
BIN=${1:-build/iospan}
DB=$(mktemp -d)/watch.db
"$BIN" watch --db "$DB" --util 100 2>/dev/null &
W=$!
sleep 4
for _ in $(seq 1500); do (head -c 1 /etc/passwd >/dev/null; exec sleep 60) & done
sleep 3
t0=$(awk '{ print $14 + $15 }' /proc/$W/stat)
sleep 30
t1=$(awk '{ print $14 + $15 }' /proc/$W/stat)
echo "$BIN: $((t1 - t0)) ticks of CPU in 30 s ($(getconf CLK_TCK) a second)," \
	"$(bpftool map dump name procs 2>/dev/null | grep -c '"key"') processes in the map"
kill -INT $W
wait $W
pkill -P $$ sleep 2>/dev/null
pkill -f "^sleep 60$" 2>/dev/null
rm -rf "$(dirname "$DB")"
