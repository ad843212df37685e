#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs the Debian packages iospan needs to build, test, demo and benchmark.
# Idempotent and silent when everything is installed; otherwise (as root) runs
# `apt-get update` once and installs only what is missing.
set -euo pipefail

PACKAGES=(
	# build: C, BPF objects, skeletons
	make gcc clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config
	libsqlite3-dev # the incident store of iospan watch
	libmicrohttpd-dev # the metrics endpoint of iospan watch (--listen)
	libgnutls28-dev libyaml-dev libcrypt-dev # its --web-config: TLS, the YAML file, bcrypt
	libcurl4-openssl-dev # OTLP export of iospan watch (--otlp-endpoint)
	sqlite3 # end-to-end tests read the store as a user would
	clang-format # make format
	pandoc man-db # man pages (make man, make install) and the test that renders them
	# unit tests
	libcmocka-dev
	# end-to-end tests: pytest, workloads, ground truth, scratch devices
	python3 python3-pytest fio sysstat e2fsprogs xfsprogs util-linux mount procps
	systemd # systemd-analyze checks the unit of iospan watch
	# kernel matrix (tests/kernels): QEMU, the guest's busybox, depmod, btrfs disks,
	# a static libc for the guest workload
	qemu-system-x86 busybox-static kmod btrfs-progs libc6-dev
	# peers for benchmarks and comparisons (biolatency, biosnoop, ...)
	libbpf-tools
	# a real storage engine for end-to-end tests: RocksDB's db_bench (tests/e2e/test_rocksdb.py)
	rocksdb-tools
	# a real Prometheus server (and promtool) scraping the metrics endpoint in the tests
	prometheus
	# TLS certificates for the tests of the endpoint's --web-config
	openssl
	# a real browser for the tests of iospan report's pages (headless, DevTools protocol)
	chromium
)

missing=()
for pkg in "${PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
	[[ $status == ii* ]] || missing+=("$pkg")
done

# A real OTLP receiver for the export tests: npm's @elastic/mockotlpserver, in a cache
# folder (scripts/setup-otlp-receiver.sh; Node.js from Debian if none is installed).
otlp_receiver() {
	bash "$(dirname "$0")/setup-otlp-receiver.sh"
}

if ((${#missing[@]} == 0)); then
	otlp_receiver
	exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "setup-deps: missing packages: ${missing[*]}; run 'sudo scripts/setup-deps.sh' (or install them) and retry" >&2
	exit 2
fi

echo "setup-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
otlp_receiver
