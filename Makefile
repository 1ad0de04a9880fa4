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
	stress stress-lowmem lifecycle shell gdb gdb-demo lab-bundle negative \
	bisect-check callers checkpatch module-check clean help

all: initramfs ## build everything: kernel with the series, module, tests, initramfs
	@vm/times.sh $(T0)

deps: ## install the missing Debian packages (every target runs it)
	@vm/deps.sh

tree: deps ## extract linux-source-6.12 into the cache and git am the series
	@vm/tree.sh

kernel: tree ## build the guest kernel (FLAVOR=normal|debug)
	@vm/kernel.sh

module: kernel ## build dmirror-thp.ko
	@vm/module.sh

tests: kernel ## build the selftests, the bench, the stress and hold
	@vm/tests.sh

initramfs: module tests ## pack the guest initramfs
	@vm/initramfs.sh

# The README's test command.
check: initramfs ## boot the guest and run every test (PLAN, SUITE, ARGS)
	@APPEND="$(if $(SUITE),dm_SUITE=$(SUITE)) $(if $(ARGS),dm_ARGS=$(ARGS))" \
		vm/run.sh $(PLAN)

# The stock regression baseline alone: the tree's test_hmm.ko + hmm-tests.
stock: kernel ## the regression baseline: stock test_hmm.ko and hmm-tests
	@vm/tests.sh stock
	@vm/initramfs.sh stock
	@vm/run.sh stock

BENCH_SIZES ?= 2,8,64,512
BENCH_ITERS ?= 5
bench: initramfs ## THP vs 4K benchmark report (BENCH_SIZES, BENCH_ITERS, BASELINE=stock)
	@MEM=$${MEM:-4G} APPEND="dm_BENCH_SIZES=$(BENCH_SIZES) dm_BENCH_ITERS=$(BENCH_ITERS) $(if $(BASELINE),dm_BASELINE=$(BASELINE))" \
		vm/run.sh bench
	@vm/bench-report.sh

stress: initramfs ## hmm-thp-stress 60 s x 4, then under fault injection
	@APPEND="$${STRESS_SECONDS:+dm_STRESS_SECONDS=$$STRESS_SECONDS}" vm/run.sh stress

# The stress plan in a guest barely larger than its working set, so that
# system-side THP allocations fail for real.
stress-lowmem: initramfs ## the stress in a 128 MB guest (MEM)
	@MEM=$${MEM:-128M} APPEND="$${STRESS_SECONDS:+dm_STRESS_SECONDS=$$STRESS_SECONDS}" vm/run.sh stress

lifecycle: initramfs ## 100 loads and unloads, 10 with THPs resident
	@vm/run.sh lifecycle

shell: initramfs ## interactive guest (ROOTFS=debian for bash, gdb, perf, drgn; GDB=1)
	@vm/run.sh --shell

# A debugger on the guest: the debug flavour (DWARF, no KASLR) stopped
# under QEMU's gdbstub, and the gdb command line that attaches to it.
gdb: FLAVOR = debug
gdb: initramfs ## debug guest under QEMU's gdbstub; prints the gdb command (scripts/gdb, lx-symbols)
	@GDB=1 vm/run.sh --shell

gdb-demo: FLAVOR = debug
gdb-demo: initramfs ## scripted gdb session: break in migrate_vma_setup during a THP test
	@vm/gdb.sh --demo

lab-bundle: initramfs ## a folder for a LAVA lab: kernel, modules, initramfs, cmdline, job.yaml (LAB_PLAN)
	@vm/lab-bundle.sh

# The bench's own negative check: a failing test and a WARN must fail it.
negative: kernel ## the bench's own check: a failing test and a WARN must fail
	@vm/tests.sh stock
	@vm/initramfs.sh stock
	@vm/negative.sh

# Build the kernel after each patch of the series.
bisect-check: deps ## build the kernel after each patch of the series
	@vm/bisect-check.sh

# Compile the tree's in-tree users of the changed APIs.
callers: tree ## compile the tree's users of the changed API
	@vm/callers.sh

checkpatch: tree ## checkpatch.pl --strict on the series and the module
	@vm/checkpatch.sh

# dmirror-thp.ko with W=1 and sparse (C=1): must print no warning.
module-check: kernel ## the module with W=1 and sparse (C=1)
	@W=1 C=1 vm/module.sh

clean: ## remove selftests/out (the cache stays)
	rm -rf selftests/out

help: ## this list
	@echo "dmirror-thp: make [target] [FLAVOR=normal|debug] (README.md has more)"
	@sed -n 's/^\([a-z-]*\):.*## \(.*\)/\1\t\2/p' $(MAKEFILE_LIST) | \
		awk -F'\t' '{ printf "  %-15s %s\n", $$1, $$2 }'
