# SPDX-License-Identifier: GPL-2.0
# iospan build. Products go to $(OUT) (default build/); `make V=1` shows commands.

OUT ?= build
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
PYTHON ?= /usr/bin/python3
PANDOC ?= pandoc
# make install: PREFIX for the installed paths, DESTDIR to stage them (packaging).
PREFIX ?= /usr/local
DESTDIR ?=
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/iospan
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/;s/ppc64le/powerpc/;s/mips.*/mips/;s/riscv64/riscv/;s/loongarch64/loongarch/')

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS ?= -O2 -g
# `make asan` builds in $(OUT)-asan with these (ASan + UBSan, every finding fatal).
SAN_FLAGS ?=
ASAN_OUT ?= $(OUT)-asan
CFLAGS += $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
CFLAGS += -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE \
	  -DIOSPAN_VERSION='"$(VERSION)"' -Isrc -Isrc/abi -Isrc/lib/util -Isrc/lib/sys -Isrc/lib/bpf -I$(OUT)
LDLIBS += -lbpf -lelf -lz -lm -lsqlite3 -lmicrohttpd -lgnutls -lyaml -lcrypt -lcurl -lpthread
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Wno-unused-function \
	      -I$(OUT) -Isrc/bpf -Isrc/abi

LIB_SRCS := $(wildcard src/lib/*/*.c)
# The layers (README, "Layout"): lib/ below collect/, incident/ and export/, commands on top.
COLLECT_SRCS := $(wildcard src/collect/*.c src/collect/*/*.c src/incident/*.c src/export/*.c)
CMD_SRCS := $(wildcard src/cmd/*/*.c)
BPF_SRCS := $(wildcard src/bpf/*.bpf.c)
# Command objects are also built for kernels without the kfunc bpf_rdonly_cast
# (src/bpf/kptr.bpf.h): <cmd>_compat.skel.h, opened by src/lib/bpf/skel.h where needed.
COMPAT_BPF := top trace lat snoop
SKELS := $(patsubst src/bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS)) \
	 $(patsubst %,$(OUT)/%_compat.skel.h,$(COMPAT_BPF))
LIB_OBJS := $(patsubst src/%.c,$(OUT)/%.o,$(LIB_SRCS))
# The report page's files (web/), embedded by .incbin (src/cmd/report/assets.S).
REPORT_WEB := $(wildcard src/cmd/report/web/*.* src/cmd/report/web/vendor/*/*)
APP_OBJS := $(patsubst src/%.c,$(OUT)/%.o,src/main.c $(CMD_SRCS) $(COLLECT_SRCS)) $(LIB_OBJS) \
	    $(OUT)/cmd/report/assets.o

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))

# Manual pages, section 8, from docs/iospan*.md (pandoc's markdown: definition lists, tables).
MAN_SRCS := $(wildcard docs/iospan*.md)
MAN_PAGES := $(patsubst docs/%.md,$(OUT)/man/%.8,$(MAN_SRCS))

.PHONY: all clean test unit unit-bins e2e demo deps format bench test-kernels man install uninstall asan \
	fuzz
# Keep skeletons and BPF objects: they are intermediates make would otherwise delete.
# Named, not all targets: a target with no file is remade (an object whose source moved
# would otherwise be taken as up to date, and the binary not linked again).
.SECONDARY: $(SKELS) $(patsubst %.skel.h,%.bpf.o,$(subst $(OUT)/,$(OUT)/bpf/,$(SKELS)))
all: $(OUT)/iospan

$(OUT)/vmlinux.h: | $(OUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(OUT)/bpf/%.bpf.o: src/bpf/%.bpf.c $(OUT)/vmlinux.h $(wildcard src/bpf/*.h src/abi/*.h) | $(OUT)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# trace counts a writeback request's holds with atomic fetch-and-add (BPF v3, Linux 5.12).
$(OUT)/bpf/trace.bpf.o $(OUT)/bpf/trace_compat.bpf.o: BPF_CFLAGS += -mcpu=v3

$(OUT)/bpf/%_compat.bpf.o: src/bpf/%.bpf.c $(OUT)/vmlinux.h $(wildcard src/bpf/*.h src/abi/*.h) | $(OUT)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DIOSPAN_NO_KPTR_CAST -c $< -o $@

$(OUT)/%_compat.skel.h: $(OUT)/bpf/%_compat.bpf.o $(OUT)/%.skel.h
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_compat_bpf > $@.tmp
	$(Q)scripts/skel-layout.sh $*_bpf $(OUT)/$*.skel.h $*_compat_bpf $@.tmp
	$(Q)mv $@.tmp $@

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# Each object depends on the headers it includes (-MMD: its .d file), skeletons among
# them, so a change to one BPF program rebuilds only the objects of that command. The
# skeletons are made first (order-only), as a first build's objects need them before
# any .d file exists; an object without its .d file (built before) is built again.
APP_DEPS := $(APP_OBJS:.o=.d)
$(OUT)/%.o: src/%.c $(OUT)/%.d | $(SKELS) $(OUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -MF $(@:.o=.Td) -c $< -o $@
	$(Q)mv -f $(@:.o=.Td) $(@:.o=.d) && touch $@

$(APP_DEPS): ;

$(OUT)/cmd/report/assets.o: src/cmd/report/assets.S $(REPORT_WEB) | $(OUT)
	$(call msg,AS,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SAN_FLAGS) -c $< -o $@
include $(wildcard $(APP_DEPS))

$(OUT)/iospan: $(APP_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# The kernel matrix's guest workload: static, it runs in a busybox initramfs.
$(OUT)/iowork: tests/kernels/guest/iowork.c | $(OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -static $< -o $@

$(OUT)/tests/%: tests/unit/%.c $(LIB_OBJS) $(wildcard tests/unit/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests/unit -I$(OUT)/tests $< $(LIB_OBJS) $(filter $(OUT)/cmd/%.o $(OUT)/collect/%.o $(OUT)/incident/%.o $(OUT)/export/%.o,$^) -o $@ \
		$(LDLIBS) -lcmocka

# BPF objects of the unit tests (tests/unit/bpf), run with BPF_PROG_TEST_RUN.
$(OUT)/tests/bpf/%.bpf.o: tests/unit/bpf/%.bpf.c $(OUT)/vmlinux.h $(wildcard src/bpf/*.h src/abi/*.h) | $(OUT)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/tests/%.skel.h: $(OUT)/tests/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

.SECONDARY: $(OUT)/tests/bpf/rbuf_emit.bpf.o $(OUT)/tests/rbuf_emit.skel.h
$(OUT)/tests/test_rbuf: $(OUT)/tests/rbuf_emit.skel.h

# Unit tests of a command's pure parts link those objects too.
$(OUT)/tests/test_watch_trigger: $(OUT)/incident/rules.o
$(OUT)/tests/test_lat_kind: $(OUT)/collect/lat/kind.o
# The probe object stands in for a command's syscall programs (opened, never loaded).
$(OUT)/tests/test_syscalls: $(OUT)/probe.skel.h
$(OUT)/tests/test_attach_plan: $(OUT)/probe.skel.h
$(OUT)/tests/test_mapmem: $(OUT)/probe.skel.h
$(OUT)/tests/test_skel: $(OUT)/probe.skel.h
$(OUT)/tests/test_vm_merge: $(OUT)/collect/vm/match.o $(OUT)/collect/vm/inputs.o
$(OUT)/tests/test_top_model: $(OUT)/collect/top/model.o
$(OUT)/tests/test_snoop_render: $(OUT)/cmd/snoop/render.o $(OUT)/collect/snoop/format.o
$(OUT)/tests/test_trace_perfetto: $(OUT)/cmd/trace/perfetto.o $(OUT)/collect/trace/record.o
$(OUT)/tests/test_http: $(OUT)/export/http.o $(OUT)/export/webconf.o
$(OUT)/tests/test_webconf: $(OUT)/export/webconf.o
$(OUT)/tests/test_otlp: $(OUT)/export/otlp.o
$(OUT)/tests/test_metrics: $(OUT)/export/metrics.o $(OUT)/export/otlp.o $(OUT)/collect/sampler.o \
	$(OUT)/collect/psi.o $(OUT)/incident/rules.o

$(OUT):
	$(Q)mkdir -p $(OUT)

# The first heading, "iospan-stat(8)", becomes the title line (so comments before it, the
# SPDX line, are left out); "## NAME" and the others become the page's sections.
$(OUT)/man/%.8: docs/%.md VERSION Makefile | $(OUT)
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)command -v $(PANDOC) >/dev/null || \
		{ echo "make: $(PANDOC) not found: run 'make deps' (Debian package pandoc)" >&2; exit 1; }
	$(Q)sed '/^<!--.*-->$$/d' $< | $(PANDOC) -f markdown -t man -s --shift-heading-level-by=-1 \
		-M section=8 -M footer="iospan $(VERSION)" -M header="System Administration" -o $@.tmp
	$(Q)mv $@.tmp $@

man: $(MAN_PAGES)

# A sanitizer build of the binary and the unit tests (its own directory: objects differ),
# for the fuzzing pass of the tests (tests/e2e/test_fuzz.py), the unit tests run again
# under it (scripts/run-tests.sh) and debugging.
asan:
	$(Q)$(MAKE) --no-print-directory OUT=$(ASAN_OUT) \
		SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
		$(ASAN_OUT)/iospan unit-bins

unit-bins: $(UNIT_BINS)

# The service of iospan watch, naming the installed paths.
$(OUT)/iospan-watch.service: dist/iospan-watch.service.in Makefile | $(OUT)
	$(call msg,GEN,$@)
	$(Q)sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' $< > $@.tmp
	$(Q)mv $@.tmp $@

install: $(OUT)/iospan $(MAN_PAGES) $(OUT)/iospan-watch.service
	$(call msg,INSTALL,$(DESTDIR)$(SBINDIR)/iospan)
	$(Q)install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(DOCDIR)
	$(Q)install -m 0755 $(OUT)/iospan $(DESTDIR)$(SBINDIR)/iospan
	$(call msg,INSTALL,$(DESTDIR)$(MANDIR)/man8/iospan*.8)
	$(Q)install -m 0644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man8/
	$(call msg,INSTALL,$(DESTDIR)$(UNITDIR)/iospan-watch.service)
	$(Q)install -m 0644 $(OUT)/iospan-watch.service $(DESTDIR)$(UNITDIR)/
	$(Q)install -m 0644 dist/watch.conf $(DESTDIR)$(DOCDIR)/watch.conf.example
	$(Q)install -d $(DESTDIR)$(DOCDIR)/grafana
	$(Q)install -m 0644 dist/grafana/iospan.json $(DESTDIR)$(DOCDIR)/grafana/iospan.json

uninstall:
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/iospan \
		$(patsubst $(OUT)/man/%,$(DESTDIR)$(MANDIR)/man8/%,$(MAN_PAGES)) \
		$(DESTDIR)$(UNITDIR)/iospan-watch.service $(DESTDIR)$(DOCDIR)/watch.conf.example \
		$(DESTDIR)$(DOCDIR)/grafana/iospan.json

# Installs missing Debian packages (quiet when nothing is missing).
deps:
	$(Q)scripts/setup-deps.sh

unit: $(UNIT_BINS)
	$(Q)set -e; for t in $(UNIT_BINS); do $$t; done

e2e: $(OUT)/iospan asan
	$(Q)IOSPAN_BIN=$(abspath $(OUT))/iospan IOSPAN_ASAN_BIN=$(abspath $(ASAN_OUT))/iospan \
		$(PYTHON) -m pytest -q -rs tests/e2e

# The test build uses every CPU (serial, building took most of the 6 minutes before the
# tests of a 28-minute CI run here).
BUILD_JOBS ?= $(shell nproc)

# The one test command: deps, build, unit tests (no root), end-to-end tests (root), with
# the fuzzing pass on the sanitizer build (asan).
test: deps
	$(Q)$(MAKE) --no-print-directory -j$(BUILD_JOBS) all $(UNIT_BINS) $(OUT)/bench/hookfloor $(OUT)/bench/syscallcost \
		$(OUT)/bench/snooplines $(OUT)/bench/scrapecost $(OUT)/iowork asan
	$(Q)OUT=$(OUT) IOSPAN_ASAN_BIN=$(abspath $(ASAN_OUT))/iospan scripts/run-tests.sh

# Only the kernel matrix (tests/kernels): Debian's kernels under QEMU, the guest suite in
# each; IOSPAN_KERNELS=name,name picks kernels (tests/kernels/matrix.py list).
test-kernels: deps
	$(Q)$(MAKE) --no-print-directory all $(OUT)/iowork
	$(Q)IOSPAN_BIN=$(abspath $(OUT))/iospan IOWORK_BIN=$(abspath $(OUT))/iowork \
		$(PYTHON) -m pytest -q -rs tests/kernels

demo: deps
	$(Q)$(MAKE) --no-print-directory -s all
	$(Q)scripts/demo.sh

# Empty programs on single hooks: the cost floor of a hook (bench/README.md).
$(OUT)/bench/hookfloor.bpf.o: bench/hookfloor.bpf.c $(OUT)/vmlinux.h | $(OUT)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/bench/hookfloor.skel.h: $(OUT)/bench/hookfloor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name hookfloor_bpf > $@.tmp && mv $@.tmp $@

$(OUT)/bench/hookfloor: bench/hookfloor.c $(OUT)/bench/hookfloor.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUT)/bench $< -o $@ $(LDLIBS)

# The time of one trivial syscall, to measure what syscall tracepoints add to all.
$(OUT)/bench/syscallcost: bench/syscallcost.c | $(OUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< -o $@

# The user-space cost of one snoop line (format and render), without BPF.
$(OUT)/bench/snooplines: bench/snooplines.c $(LIB_OBJS) $(OUT)/collect/snoop/format.o \
		$(OUT)/cmd/snoop/render.o | $(OUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(filter %.o,$^) -o $@ $(LDLIBS)

# The CPU of one scrape of the metrics endpoint, by the number of series, without BPF.
$(OUT)/bench/scrapecost: bench/scrapecost.c $(LIB_OBJS) $(OUT)/export/metrics.o \
		$(OUT)/export/otlp.o $(OUT)/collect/sampler.o $(OUT)/collect/psi.o \
		$(OUT)/incident/rules.o | $(OUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(filter %.o,$^) -o $@ $(LDLIBS)

bench: $(OUT)/iospan $(OUT)/bench/hookfloor $(OUT)/bench/syscallcost $(OUT)/bench/snooplines
	$(Q)$(PYTHON) bench/overhead.py $(BENCH_ARGS)

format:
	$(Q)clang-format -i src/*.c src/*.h src/*/*.c src/*/*.h src/*/*/*.c src/*/*/*.h tests/unit/*.c \
		bench/*.c

clean:
	$(Q)rm -rf $(OUT)
