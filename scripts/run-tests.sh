#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs every unit test binary in $OUT/tests/ (cmocka), and in the sanitizer build's tests/
# beside IOSPAN_ASAN_BIN (the same tests under ASan + UBSan, `make asan` builds them), then
# the end-to-end tests (with the
# fuzzing pass on the sanitizer build, tests/e2e/test_fuzz.py) and
# the kernel matrix in one pytest run (tests/e2e, tests/kernels; extra arguments are
# passed to pytest). Exits non-zero if any part fails. The last line printed is
# pytest's summary line.
#   OUT=build           where `make` put the products (binaries, tests/)
#   IOSPAN_BIN=...      binary under test (default $OUT/iospan)
#   IOWORK_BIN=...      the kernel matrix's guest workload (default $OUT/iowork)
#   IOSPAN_ASAN_BIN=... the sanitizer build the fuzzing pass runs (default $OUT-asan/iospan,
#                       `make asan`); IOSPAN_FUZZ_SEED=N repeats a fuzzing pass
#   PYTHON=/usr/bin/python3
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
export IOSPAN_BIN=${IOSPAN_BIN:-$OUT/iospan}
[[ $IOSPAN_BIN == /* ]] || IOSPAN_BIN=$PWD/$IOSPAN_BIN
export IOWORK_BIN=${IOWORK_BIN:-$OUT/iowork}
[[ $IOWORK_BIN == /* ]] || IOWORK_BIN=$PWD/$IOWORK_BIN
export IOSPAN_ASAN_BIN=${IOSPAN_ASAN_BIN:-$OUT-asan/iospan}
[[ $IOSPAN_ASAN_BIN == /* ]] || IOSPAN_ASAN_BIN=$PWD/$IOSPAN_ASAN_BIN

status=0

# Unit tests: each binary's own output is shown.
shopt -s nullglob
units=("$OUT"/tests/test_* "$(dirname "$IOSPAN_ASAN_BIN")"/tests/test_*)
n_unit=0
failed_units=()
for t in "${units[@]}"; do
	[[ -f $t && -x $t ]] || continue
	n_unit=$((n_unit + 1))
	echo "=== unit: $t"
	if ! "$t"; then
		failed_units+=("$t")
		status=1
	fi
done
if ((${#failed_units[@]})); then
	echo "unit tests FAILED: ${failed_units[*]}"
else
	echo "unit tests: $n_unit binaries passed"
fi

if [[ ! -x $IOSPAN_BIN ]]; then
	echo "run-tests: $IOSPAN_BIN not found: build it first ('make' or 'make test')" >&2
	status=1
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "run-tests: not root: the root-only end-to-end tests (loop devices, mounts," \
		"cgroups) will be SKIPPED; run as root for the full suite"
fi

echo "=== e2e and kernel matrix: $PYTHON -m pytest -q -rs tests/e2e tests/kernels $*"
# pytest exit 5 = no tests collected: that is a failure too (any non-zero is).
"$PYTHON" -m pytest -q -rs tests/e2e tests/kernels "$@"
rc=$?
if ((rc != 0)); then
	status=1
fi
# Nothing may be printed after pytest's summary line.
exit $status
