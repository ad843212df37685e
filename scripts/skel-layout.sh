#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Checks that two skeleton headers of one BPF source (the default build and its
# IOSPAN_NO_KPTR_CAST build, src/bpf/kptr.bpf.h) lay out their global data the same
# way: src/lib/bpf/skel.h opens either ELF through the default build's skeleton struct.
#   skel-layout.sh NAME HEADER COMPAT_NAME COMPAT_HEADER
set -euo pipefail
globals() { # NAME HEADER: the global data structs, with NAME replaced
	sed -n "/struct $1__\(rodata\|data\|bss\|kconfig\) {/,/} \*/p" "$2" | sed "s/$1__/X__/g"
}
if ! diff <(globals "$1" "$2") <(globals "$3" "$4") >&2; then
	echo "skel-layout: $4: global data differs from $2's: both builds must define the same globals" >&2
	exit 1
fi
