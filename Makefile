# SPDX-License-Identifier: GPL-2.0
#
# dmirror-thp: device-private THP migration on Debian's linux 6.12.
#
#   make              build everything: kernel (with the prereq series),
#                     dmirror-thp.ko, the selftests and the guest initramfs
#   make check        ... and run the test plan in a QEMU guest
#
# See README.md for the other targets.  FLAVOR=debug selects the debug
# kernel (KASAN, lockdep, kmemleak, ...); ACCEL=kvm|tcg forces the
# accelerator.  Everything built lives in the cache
# (${DMIRROR_THP_CACHE:-${XDG_CACHE_HOME:-~/.cache}/dmirror-thp}).

SHELL := /bin/bash
FLAVOR ?= normal
PLAN ?= stock+thp
export FLAVOR
# When this make started, for the closing summary of what each step took.
T0 := $(shell date +%s)

.PHONY: all deps tree kernel module tests initramfs check stock bench \
	stress stress-lowmem lifecycle shell negative bisect-check callers checkpatch module-check clean

all: initramfs
	@vm/times.sh $(T0)

deps:
	@vm/deps.sh

tree: deps
	@vm/tree.sh

kernel: tree
	@vm/kernel.sh

module: kernel
	@vm/module.sh

tests: kernel
	@vm/tests.sh

initramfs: module tests
	@vm/initramfs.sh

# The README's test command.
check: initramfs
	@APPEND="$(if $(SUITE),dm_SUITE=$(SUITE)) $(if $(ARGS),dm_ARGS=$(ARGS))" \
		vm/run.sh $(PLAN)

# The stock regression baseline alone: the tree's test_hmm.ko + hmm-tests.
stock: kernel
	@vm/tests.sh stock
	@vm/initramfs.sh stock
	@vm/run.sh stock

BENCH_SIZES ?= 2,8,64,512
BENCH_ITERS ?= 5
bench: initramfs
	@MEM=$${MEM:-4G} APPEND="dm_BENCH_SIZES=$(BENCH_SIZES) dm_BENCH_ITERS=$(BENCH_ITERS) $(if $(BASELINE),dm_BASELINE=$(BASELINE))" \
		vm/run.sh bench
	@vm/bench-report.sh

stress: initramfs
	@APPEND="$${STRESS_SECONDS:+dm_STRESS_SECONDS=$$STRESS_SECONDS}" vm/run.sh stress

# The stress plan in a guest barely larger than its working set, so that
# system-side THP allocations fail for real.
stress-lowmem: initramfs
	@MEM=$${MEM:-128M} APPEND="$${STRESS_SECONDS:+dm_STRESS_SECONDS=$$STRESS_SECONDS}" vm/run.sh stress

lifecycle: initramfs
	@vm/run.sh lifecycle

shell: initramfs
	@vm/run.sh --shell

# The bench's own negative check: a failing test and a WARN must fail it.
negative: kernel
	@vm/tests.sh stock
	@vm/initramfs.sh stock
	@vm/negative.sh

# Build the kernel after each patch of the series.
bisect-check: deps
	@vm/bisect-check.sh

# Compile the tree's in-tree users of the changed APIs.
callers: tree
	@vm/callers.sh

checkpatch: tree
	@vm/checkpatch.sh

# dmirror-thp.ko with W=1 and sparse (C=1): must print no warning.
module-check: kernel
	@W=1 C=1 vm/module.sh

clean:
	rm -rf selftests/out
