#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# The guest suite of the kernel test matrix (run by /init as busybox sh). It runs iospan
# against known workloads (/bin/iowork, exact I/O) on each scratch file system and on
# the raw disk, and saves everything under /results/<scenario>/ for the host to check
# (tests/kernels/test_kernels.py): each command's stdout (.out), stderr (.err) and exit
# code (.rc), /proc/diskstats before and after, the disk's name. It never stops on a
# failure and never waits without a bound: every command runs under `timeout`.
#
# iospan.suite=full (default) or smoke on the kernel command line: smoke runs doctor,
# stat, watch and top/trace/lat/snoop on ext4 only.

R=/results
TRACER_START_S=180   # BPF load and attach under TCG can take a while
TRACER_MAX_S=900     # a tracer that never ends is killed after this
STEP_MAX_S=120

suite=full
for arg in $(cat /proc/cmdline); do
	case $arg in iospan.suite=*) suite=${arg#iospan.suite=} ;; esac
done
echo "$suite" >$R/suite

t_start=$(date +%s)
log() { echo "suite: +$(($(date +%s) - t_start))s $*"; }

# step DIR NAME CMD...: runs CMD with a time limit; NAME.out, NAME.err, NAME.rc in DIR.
step() {
	local dir=$1 name=$2 rc
	shift 2
	timeout -s KILL $STEP_MAX_S "$@" >"$dir/$name.out" 2>"$dir/$name.err"
	rc=$?
	echo $rc >"$dir/$name.rc"
	[ $rc = 0 ] || log "$dir/$name: exit $rc: $(head -c 300 "$dir/$name.err")"
	return $rc
}

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# start_tracer DIR NAME CMD...: starts CMD in the background and waits until it says
# it is tracing (or dies, or TRACER_START_S pass). busybox timeout execs CMD itself, so
# $! is the tracer's pid and SIGINT reaches it.
start_tracer() {
	local dir=$1 name=$2 t
	shift 2
	timeout -s KILL $TRACER_MAX_S "$@" >"$dir/$name.out" 2>"$dir/$name.err" &
	echo $! >"$dir/$name.pid"
	t=0
	while [ $t -lt $((TRACER_START_S * 10)) ]; do
		grep -q tracing "$dir/$name.err" 2>/dev/null && return 0
		kill -0 "$(cat "$dir/$name.pid")" 2>/dev/null || break
		sleep 0.1
		t=$((t + 1))
	done
	log "$dir/$name: did not start tracing: $(cat "$dir/$name.err" "$dir/$name.out" | head -c 400)"
	kill -KILL "$(cat "$dir/$name.pid")" 2>/dev/null
	wait "$(cat "$dir/$name.pid")"
	echo $? >"$dir/$name.rc"
	return 1
}

# stop_tracer DIR NAME: SIGINT (Ctrl-C), waits for the report (killed after 120 s).
stop_tracer() {
	local dir=$1 name=$2 pid watchdog rc
	pid=$(cat "$dir/$name.pid")
	kill -INT "$pid" 2>/dev/null
	(sleep 120 && kill -KILL "$pid" 2>/dev/null) &
	watchdog=$!
	wait "$pid"
	rc=$?
	kill "$watchdog" 2>/dev/null
	echo $rc >"$dir/$name.rc"
	[ $rc = 0 ] || log "$dir/$name: exit $rc: $(head -c 300 "$dir/$name.err")"
}

# contended DIR NAME CMD...: step(), while `iowork bpfmap` looks up a BPF map in a loop
# on the guest's one CPU (its own line in NAME-bpfmap.out). The lookup's copy holds off
# syscall tracepoint programs on the CPU; PREEMPT_RT can preempt it, and the task that
# runs meanwhile then has its programs' runs skipped.
contended() {
	local dir=$1 name=$2 pid rc
	shift 2
	rm -f /tmp/bpfmap.stop
	timeout -s KILL $STEP_MAX_S iowork bpfmap /tmp/bpfmap.stop -b 8 -n 1000000000 \
		>"$dir/$name-bpfmap.out" 2>&1 &
	pid=$!
	step "$dir" "$name" "$@"
	rc=$?
	touch /tmp/bpfmap.stop
	wait $pid
	return $rc
}

# scenario NAME DISK: a fresh results directory with the disk's name in it.
scenario() {
	local dir=$R/$1
	mkdir -p "$dir"
	echo "$2" >"$dir/disk"
	echo "$dir"
}

snap() { cat /proc/diskstats >"$1/diskstats.$2"; }

# snap() once the scenario's disk is at rest: nothing in flight and its line unchanged
# over 0.2 s, so that no request straddles the window's edge (a journal commit whose
# data part the disk counted before the snapshot and whose post-flush after it). Takes
# what it has after 10 s.
settle() {
	local disk last= cur i=0
	disk=$(cat "$1/disk")
	while [ $i -lt 50 ]; do
		cur=$(awk -v n="$disk" '$3 == n' /proc/diskstats)
		[ "$cur" = "$last" ] && [ "$(echo "$cur" | awk '{ print $12 }')" = 0 ] && break
		last=$cur
		i=$((i + 1))
		sleep 0.2
	done
}

snap_settled() {
	settle "$1"
	snap "$1" "$2"
}

# mark D EDGE: a window's edge in snoop's lines and in diskstats at once. A marker read
# of the disk (its pid in its JSON line) between two reads of /proc/diskstats; kept only
# when the disk completed nothing else between them, so no request (a file system's
# background I/O, xfs's log push and AIL writes) completes between the marker and the
# snapshot on the window's side: diskstats.before is read after the first edge's marker,
# diskstats.after before the last edge's. Tried up to 20 times, each on a settled disk.
mark() {
	local d=$1 edge=$2 disk i=0
	disk=$(cat "$d/disk")
	while [ $i -lt 20 ]; do
		settle "$d"
		cat /proc/diskstats >"$d/diskstats.mark-$edge-pre"
		step "$d" mark-$edge iowork pread "/dev/$disk" -b 4096 -n 1 --direct
		cat /proc/diskstats >"$d/diskstats.mark-$edge-post"
		# rd_ios +1, rd_sectors +8, no write, discard or flush, nothing in flight.
		if awk -v n="$disk" '$3 != n { next }
			FNR == NR { for (i = 4; i <= NF; i++) a[i] = $i; next }
			{ ok = $4 == a[4] + 1 && $6 == a[6] + 8 && $8 == a[8] && $12 == 0 &&
			  $15 == a[15] && $19 == a[19] }
			END { exit !ok }' "$d/diskstats.mark-$edge-pre" "$d/diskstats.mark-$edge-post"; then
			if [ "$edge" = before ]; then
				cp "$d/diskstats.mark-$edge-post" "$d/diskstats.$edge"
			else
				cp "$d/diskstats.mark-$edge-pre" "$d/diskstats.$edge"
			fi
			echo $i >"$d/mark-$edge.retries"
			return 0
		fi
		i=$((i + 1))
	done
	log "$d: no marker read of $disk alone in 20 tries"
	return 1
}

doctor() {
	local d
	log doctor
	d=$(scenario doctor -)
	step "$d" doctor-json iospan doctor --json
}

# stat: a workload inside the window of three one-second reports of DISK.
stat_scenario() {
	local disk=$1 file=$2 d pid
	log "stat-$disk"
	d=$(scenario "stat-$disk" "$disk")
	snap "$d" before
	timeout -s KILL 60 iospan stat -y --json -d "$disk" 1 3 >"$d/stat.out" 2>"$d/stat.err" &
	pid=$!
	sleep 0.5
	step "$d" w-write iowork pwrite "$file" -b 65536 -n 64 --direct --fsync
	step "$d" w-read iowork pread "$file" -b 4096 -n 256 --direct --random
	wait $pid
	echo $? >"$d/stat.rc"
	snap "$d" after
}

# watch: reads of DISK for about 1.5 s (1 MiB every 0.1 s) open one incident on a
# 1 MB/s read rule; its samples must cover them (diskstats before and after); top's
# collector keeps the reads as slow requests at block detail (every one over 1 us).
# Under emulation (TCG, on a loaded host) the hooks slow the reads down and loading
# takes long: a
# capture of 10 s bridges their gaps, and a window of 5 s keeps the first ones, which
# may come slower than the rule. Its metrics endpoint is scraped at the window's start
# (metrics0.txt, beside diskstats.before) and once the reads are done and two samples
# have passed since (metrics.txt, beside diskstats.mid).
# The samples watch has taken, from its endpoint @2 (also into @1/samples); 0 if none.
samples_now() {
	busybox wget -q -O - "$2" 2>/dev/null |
		awk '$1 == "iospan_watch_samples_total" { n = $2 } END { print n + 0 }' >"$1/samples"
	cat "$1/samples"
}

watch_scenario() {
	local disk=$1 dev=$2 d pid url i=0
	log "watch-$disk"
	d=$(scenario "watch-$disk" "$disk")
	rm -f /tmp/watch.db
	busybox ip link set lo up
	timeout -s KILL 150 iospan watch --db /tmp/watch.db -d "$disk" --interval 0.2 \
		--read-mbps 1 --util 0 --await 0 --write-mbps 0 --pre 5 --capture 10 \
		--capture-threshold 1us --duration 35 --listen 127.0.0.1:0 \
		>"$d/watch.out" 2>"$d/watch.err" &
	pid=$!
	# Sampling begins at the start line, after the collectors have loaded.
	while [ $i -lt 900 ] && ! grep -q " start: " "$d/watch.err" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	i=0
	sleep 0.5
	snap "$d" before
	url=$(sed -n 's|.*metrics at \(http://[^ ]*/metrics\).*|\1|p' "$d/watch.err" | head -n 1)
	step "$d" metrics0 busybox wget -q -O "$d/metrics0.txt" "$url"
	while [ $i -lt 15 ]; do
		step "$d" w-read iowork pread "$dev" -b 65536 -n 16 --direct
		sleep 0.1
		i=$((i + 1))
	done
	snap "$d" mid
	samples_now "$d" "$url"
	want=$(($(cat "$d/samples") + 2))
	i=0
	while [ $i -lt 150 ] && [ "$(samples_now "$d" "$url")" -lt "$want" ]; do
		sleep 0.2
		i=$((i + 1))
	done
	step "$d" metrics busybox wget -q -O "$d/metrics.txt" "$url"
	wait $pid
	echo $? >"$d/watch.rc"
	snap "$d" after
	step "$d" list iospan --json incidents --db /tmp/watch.db list
	step "$d" show iospan --json incidents --db /tmp/watch.db show 1
	step "$d" report iospan report --incident 1 --db /tmp/watch.db -o "$d/report.html"
}

# report: a capture of DISK (watch --capture-now, top's collector at block detail) with
# the target --comm iowork: iowork's direct reads (the target) and busybox dd's reads
# (not it), both started once the capture has begun and done well before its end.
report_scenario() {
	local disk=$1 dev=$2 d pid i=0
	log "report-$disk"
	d=$(scenario "report-$disk" "$disk")
	drop_caches
	snap "$d" before
	timeout -s KILL 150 iospan report -d "$disk" --comm iowork --detail block \
		--capture-threshold 1us --duration 15 -o "$d/capture.html" \
		>"$d/report.out" 2>"$d/report.err" &
	pid=$!
	while [ $i -lt 1200 ] && ! grep -q "incident 1 opened" "$d/report.err" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	step "$d" w-read iowork pread "$dev" -b 65536 -n 32 --direct
	step "$d" w-dd busybox dd if="$dev" of=/dev/null bs=65536 count=32 skip=64
	wait $pid
	echo $? >"$d/report.rc"
	snap "$d" after
}

# top: each workload in its own process (its pid in its JSON line), on DISK under DIR.
# System wide on file systems (the per-process rows do not depend on a filter; trace
# checks -d there), with -d on the raw disk.
top_scenario() {
	local name=$1 disk=$2 dir=$3 raw=$4 d filter=
	d=$(scenario "$name" "$disk")
	[ -n "$raw" ] && filter="-d $disk"
	drop_caches
	snap "$d" before
	log "$name"
	start_tracer "$d" top iospan top --json $filter --duration $TRACER_MAX_S || return
	if [ -n "$raw" ]; then
		step "$d" w-dio-write iowork pwrite "$raw" -b 1048576 -n 8 --direct
		step "$d" w-dio-read iowork pread "$raw" -b 1048576 -n 8 --direct --random
	else
		step "$d" w-dio-write iowork pwrite "$dir/top-direct" -b 1048576 -n 8 --direct
		step "$d" w-dio-read iowork pread "$dir/top-direct" -b 1048576 -n 8 --direct --random
		step "$d" w-buf-write iowork pwrite "$dir/top-buffered" -b 1048576 -n 8 --fsync
		drop_caches
		step "$d" w-buf-read iowork pread "$dir/top-buffered" -b 1048576 -n 8
		step "$d" w-mmap iowork mmap "$dir/top-direct"
		step "$d" w-aio iowork aio "$dir/top-buffered" -b 65536 -n 128 -q 4
		step "$d" w-compat iowork compat "$dir/top-buffered" -b 4096 -n 64
	fi
	sync
	stop_tracer "$d" top
	snap "$d" after
}

# trace -t 0: every request of each workload, with its bios.
trace_scenario() {
	local name=$1 disk=$2 dir=$3 raw=$4 d
	d=$(scenario "$name" "$disk")
	if [ -z "$raw" ]; then
		step "$d" prepare iowork pwrite "$dir/trace-data" -b 65536 -n 32 --fsync
		step "$d" prepare-mmap iowork pwrite "$dir/trace-mmap" -b 65536 -n 16 --fsync
		step "$d" prepare-contended iowork pwrite "$dir/trace-contended" -b 65536 -n 32 --fsync
	fi
	drop_caches
	# The file's extent map back in memory (a direct read leaves the page cache cold):
	# xfs reads it on the first I/O after the drop, in that read, as its own bio.
	if [ -z "$raw" ]; then
		step "$d" warm-extents iowork pread "$dir/trace-data" -b 65536 -n 1 --direct
		step "$d" warm-extents-contended iowork pread "$dir/trace-contended" -b 65536 -n 1 --direct
	fi
	snap "$d" before
	log "$name"
	start_tracer "$d" trace iospan trace -t 0 --json -i 3600 -d "$disk" || return
	if [ -n "$raw" ]; then
		step "$d" w-dio-write iowork pwrite "$raw" -b 65536 -n 16 --direct
		step "$d" w-dio-read iowork pread "$raw" -b 65536 -n 16 --direct --random
	else
		step "$d" w-dio-read iowork pread "$dir/trace-data" -b 65536 -n 16 --direct --random
		# Syscall ends and starts the kernel skips (PREEMPT_RT): trace must not merge
		# two reads into one request.
		contended "$d" w-dio-read-contended iowork pread "$dir/trace-contended" \
			-b 4096 -n 512 --direct --random
		step "$d" w-cold-read iowork pread "$dir/trace-data" -b 65536 -n 32
		step "$d" w-warm-read iowork pread "$dir/trace-data" -b 65536 -n 32
		step "$d" w-write-fsync iowork pwrite "$dir/trace-write" -b 65536 -n 16 --fsync
		step "$d" w-mmap iowork mmap "$dir/trace-mmap"
		step "$d" w-aio iowork aio "$dir/trace-data" -b 65536 -n 32 -q 4
	fi
	stop_tracer "$d" trace
	snap "$d" after
}

# driver NAME DEV [BAD]: trace -t 0 around known direct I/O on a disk behind a driver
# with hooks (NVMe, SCSI, virtio-blk), then, with BAD, a read of the sector QEMU's
# blkdebug fails (matrix.py BAD_SECTOR, in $BAD_SECTOR): the driver's retries and error.
driver_scenario() {
	local name=$1 dev=$2 bad=$3 watch=$4 d
	d=$(scenario "$name" "${dev#/dev/}")
	log "$name"
	local disk=${dev#/dev/} url i=0
	start_tracer "$d" trace iospan trace -t 0 --json -i 3600 -d "$disk" || return
	# The driver's column and stage: snoop's lines, lat's device histogram.
	start_tracer "$d" snoop iospan snoop --json -d "$disk" --duration $TRACER_MAX_S || return
	start_tracer "$d" lat iospan lat --json --stage device -d "$disk" || return
	if [ -n "$bad" ]; then
		# The disk's driver counters: top's report, and watch's rule, samples, endpoint.
		start_tracer "$d" top iospan top --json -d "$disk" --duration 3600 || return
	fi
	# watch's two collectors load slowly under TCG: on one driver's disk (the counting
	# is the driver's hooks', which top's report checks on each).
	if [ -n "$watch" ]; then
		rm -f /tmp/driver.db
		busybox ip link set lo up
		timeout -s KILL 300 iospan watch --db /tmp/driver.db --config '' -d "$disk" \
			--interval 0.5 --driver-errors 1 --util 0 --await 0 --read-mbps 0 \
			--write-mbps 0 --pre 2 --capture 2 --listen 127.0.0.1:0 \
			--detail full --capture-threshold 1us \
			>"$d/watch.out" 2>"$d/watch.err" &
		echo $! >"$d/watch.pid"
		while [ $i -lt 900 ] && ! grep -q " start: " "$d/watch.err" 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
		done
		sleep 1
	fi
	step "$d" w-read iowork pread "$dev" -b 4096 -n 64 --direct
	step "$d" w-write iowork pwrite "$dev" -b 65536 -n 16 --direct
	if [ -n "$bad" ]; then
		# dd fails (EIO, ENODATA): its exit status is what the test expects.
		timeout -s KILL $STEP_MAX_S dd if="$dev" of=/dev/null bs=4096 count=1 \
			skip=$((BAD_SECTOR / 8)) iflag=direct 2>"$d/w-bad.err" &
		echo $! >"$d/w-bad.pid"
		wait $!
		echo $? >"$d/w-bad.rc"
		stop_tracer "$d" top
	fi
	if [ -n "$watch" ]; then
		# Two samples after the error, then the endpoint's counters.
		sleep 1.5
		url=$(sed -n 's|.*metrics at \(http://[^ ]*/metrics\).*|\1|p' "$d/watch.err" | head -n 1)
		step "$d" metrics busybox wget -q -O "$d/metrics.txt" "$url"
		kill -INT "$(cat "$d/watch.pid")"
		wait "$(cat "$d/watch.pid")"
		echo $? >"$d/watch.rc"
		step "$d" list iospan --json incidents --db /tmp/driver.db list
		step "$d" show iospan --json incidents --db /tmp/driver.db show 1
	fi
	stop_tracer "$d" lat
	stop_tracer "$d" snoop
	stop_tracer "$d" trace
}

# lat: two tracers side by side on DISK (the overall histogram, and one per queuing
# stack), around direct, buffered + fsync and cold buffered I/O. Each counts every
# request of the window once: at least the diskstats delta of the window (snapshots
# .before and .after, taken inside it) and at most that of the tracers' lifetime
# (.early and .late, outside it).
lat_scenario() {
	local name=$1 disk=$2 dir=$3 raw=$4 d
	d=$(scenario "$name" "$disk")
	[ -n "$raw" ] || step "$d" prepare iowork pwrite "$dir/lat-data" -b 65536 -n 32 --fsync
	drop_caches
	log "$name"
	snap "$d" early
	start_tracer "$d" lat iospan lat --json -d "$disk" || return
	start_tracer "$d" lat-stack iospan lat --json --by stack -d "$disk" || return
	snap_settled "$d" before
	if [ -n "$raw" ]; then
		step "$d" w-dio-write iowork pwrite "$raw" -b 65536 -n 16 --direct
		step "$d" w-dio-read iowork pread "$raw" -b 4096 -n 64 --direct --random
	else
		step "$d" w-dio-read iowork pread "$dir/lat-data" -b 4096 -n 64 --direct --random
		step "$d" w-cold-read iowork pread "$dir/lat-data" -b 65536 -n 32
		step "$d" w-write-fsync iowork pwrite "$dir/lat-write" -b 65536 -n 16 --fsync
	fi
	sync
	snap_settled "$d" after
	stop_tracer "$d" lat
	stop_tracer "$d" lat-stack
	snap "$d" late
}

# snoop -d: one line per request of DISK; diskstats read while the tracer runs and the
# disk is idle, around workloads in their own processes (their pids in their JSON lines).
snoop_scenario() {
	local name=$1 disk=$2 dir=$3 raw=$4 d
	d=$(scenario "$name" "$disk")
	drop_caches
	log "$name"
	start_tracer "$d" snoop iospan snoop --json -d "$disk" --duration $TRACER_MAX_S || return
	sync
	sleep 1
	mark "$d" before
	if [ -n "$raw" ]; then
		step "$d" w-dio-write iowork pwrite "$raw" -b 1048576 -n 8 --direct
		step "$d" w-dio-read iowork pread "$raw" -b 65536 -n 64 --direct --random
	else
		step "$d" w-dio-write iowork pwrite "$dir/snoop-direct" -b 1048576 -n 8 --direct
		step "$d" w-dio-read iowork pread "$dir/snoop-direct" -b 65536 -n 64 --direct --random
		step "$d" w-fsync iowork pwrite "$dir/snoop-fsync" -b 1048576 -n 4 --fsync
		step "$d" w-lazy iowork pwrite "$dir/snoop-lazy" -b 1048576 -n 4
		# Another process writes the lazy writer's pages back.
		sync
	fi
	sync
	sleep 1
	mark "$d" after
	stop_tracer "$d" snoop
}

# The target filters: every tracing command takes each of them.
FILTERS="pid tid comm cgroup file dir disk"

# pair_start D NAME DIR CGROUP: process NAME (threads NAME and NAME-t, files
# DIR/NAME-1 and DIR/NAME-2) in cgroup CGROUP, waiting for /tmp/go-NAME; its pid and
# second thread's tid in D/NAME.ids. It reports through a pipe: a write to a file would
# be a request of its own, which its filters keep.
pair_start() {
	local d=$1 name=$2 dir=$3 cg=$4 pid i=0
	rm -f /tmp/go-$name /tmp/ready-$name /tmp/out-$name
	mkfifo /tmp/out-$name
	cat /tmp/out-$name >"$d/w-$name.out" &
	echo $! >/tmp/cat-$name
	iowork pair $dir/$name-1 $dir/$name-2 --comm $name --ready /tmp/ready-$name \
		--go /tmp/go-$name -b 65536 -n 8 >/tmp/out-$name 2>"$d/w-$name.err" &
	pid=$!
	echo $pid >/sys/fs/cgroup/$cg/cgroup.procs
	while [ ! -s /tmp/ready-$name ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	cp /tmp/ready-$name "$d/$name.ids"
}

# pair_wait D NAME...: waits for each pair_start process NAME, its exit code in
# D/w-NAME.rc (as step's).
pair_wait() {
	local d=$1 name pid rc
	shift
	for name; do
		pid=$(cut -d' ' -f1 "$d/$name.ids" 2>/dev/null)
		if [ -n "$pid" ]; then
			wait "$pid"
			rc=$?
		else
			rc=1 # it never said it was ready
		fi
		wait "$(cat /tmp/cat-$name)" # its report, whole
		echo $rc >"$d/w-$name.rc"
		[ $rc = 0 ] || log "$d/w-$name: exit $rc: $(head -c 300 "$d/w-$name.err")"
	done
}

# filters_scenario FS DISK DIR: every command with every target filter it takes, alone,
# around the same workloads: process iowa (threads iowa and iowa-t; files DIR/fa/iowa-1
# and -2; cgroup fa) and process iowb (DIR/fb, cgroup fb) on DISK, direct writes then
# reads of 8 x 64 KiB per thread, and one direct write to the raw disk (what -d leaves
# out). Each filter names part of iowa: the host checks that exactly that part was kept.
# DISK merges no bios meanwhile (nomerges=2): snoop and lat credit a request to its first
# bio's submitter, and two threads' writes to adjacent blocks merged into one request
# would move a call's bytes from one to the other (snoop on 6.12-rt, once).
filters_scenario() {
	local fs=$1 disk=$2 dir=$3 cmd f d pid tid arg
	local nomerges=/sys/block/$disk/queue/nomerges
	mkdir -p $dir/fa $dir/fb /sys/fs/cgroup/fa /sys/fs/cgroup/fb
	echo 2 >$nomerges
	for cmd in trace snoop top lat; do
		for f in $FILTERS; do
			d=$(scenario "filter-$cmd-$f-$fs" "$disk")
			log "filter-$cmd-$f-$fs"
			rm -f $dir/fa/* $dir/fb/*
			pair_start "$d" iowa $dir/fa fa
			pair_start "$d" iowb $dir/fb fb
			read pid tid <"$d/iowa.ids"
			case $f in
			pid) arg="-p $pid" ;;
			tid) arg="--tid $tid" ;;
			comm) arg="--comm iowa" ;;
			cgroup) arg="--cgroup /sys/fs/cgroup/fa" ;;
			file) arg="--file $dir/fa/iowa-1" ;;
			dir) arg="--dir $dir/fa" ;;
			disk) arg="-d $disk" ;;
			esac
			echo "$arg" >"$d/filter"
			snap "$d" early
			case $cmd in
			trace) set -- iospan trace -t 0 --json -i 3600 $arg ;;
			snoop) set -- iospan snoop --json --duration $TRACER_MAX_S $arg ;;
			top) set -- iospan top --json --duration $TRACER_MAX_S $arg ;;
			lat) set -- iospan lat --json --size --by file $arg ;;
			esac
			if start_tracer "$d" "$cmd" "$@"; then
				snap_settled "$d" before
				touch /tmp/go-iowa /tmp/go-iowb
				pair_wait "$d" iowa iowb
				sync
				snap_settled "$d" after
				[ -n "$RAW_DEV" ] && step "$d" w-raw iowork pwrite "$RAW_DEV" -b 65536 -n 4 --direct
				stop_tracer "$d" "$cmd"
				snap "$d" late
			else
				touch /tmp/go-iowa /tmp/go-iowb
				pair_wait "$d" iowa iowb
			fi
		done
	done
	echo 0 >$nomerges
}

disk_of() { awk -v m="$1" '$2 == m { sub("/dev/", "", $1); print $1 }' /proc/mounts; }

t0=$(date +%s)
log "kernel $(uname -r), suite $suite"
doctor
# The smoke suite runs the kprobe fallbacks (on the other flavours of each series): the
# full one the first choice, fentry, where a tracepoint is missing.
[ "$suite" = smoke ] && export IOSPAN_ATTACH_OFF=fentry
fslist="ext4 xfs btrfs"
[ "$suite" = smoke ] && fslist=ext4
for fs in $fslist; do
	disk=$(disk_of /mnt/$fs)
	if [ -z "$disk" ]; then
		log "/mnt/$fs is not mounted"
		for s in top trace lat snoop; do
			mkdir -p $R/$s-$fs && echo "/mnt/$fs is not mounted" >$R/$s-$fs/missing
		done
		continue
	fi
	log "$fs on $disk"
	top_scenario "top-$fs" "$disk" "/mnt/$fs"
	trace_scenario "trace-$fs" "$disk" "/mnt/$fs"
	lat_scenario "lat-$fs" "$disk" "/mnt/$fs"
	snoop_scenario "snoop-$fs" "$disk" "/mnt/$fs"
	# Every filter on one file system per suite: ext4 (the smoke suite's only one).
	[ $fs = ext4 ] && filters_scenario "$fs" "$disk" "/mnt/$fs"
done
[ -n "$NVME_DEV" ] && driver_scenario driver-nvme "$NVME_DEV" bad watch
[ -n "$SCSI_DEV" ] && driver_scenario driver-scsi "$SCSI_DEV" bad
[ -n "$RAW_DEV" ] && driver_scenario driver-virtio "$RAW_DEV"
if [ -n "$RAW_DEV" ]; then
	raw=${RAW_DEV#/dev/}
	stat_scenario "$raw" "$RAW_DEV"
	watch_scenario "$raw" "$RAW_DEV"
	report_scenario "$raw" "$RAW_DEV"
	if [ "$suite" != smoke ]; then
		top_scenario top-raw "$raw" "" "$RAW_DEV"
		trace_scenario trace-raw "$raw" "" "$RAW_DEV"
		lat_scenario lat-raw "$raw" "" "$RAW_DEV"
		snoop_scenario snoop-raw "$raw" "" "$RAW_DEV"
	fi
fi
log "done in $(($(date +%s) - t0)) s"
echo $(($(date +%s) - t0)) >$R/suite-seconds
