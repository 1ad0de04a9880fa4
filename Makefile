# SPDX-License-Identifier: GPL-2.0
#
# dmirror-thp: device-private THP migration on the kernels of vm/kernels/
# (Debian's 6.12 with kernel-prereq-patches/6.12, Debian's 7.3 with and
# without kernel-prereq-patches/7.3).
#
#   make              build everything for each kernel: the kernel with its
#                     series, dmirror-thp.ko, the selftests, the initramfs
#   make check        ... and run the test plans in a QEMU guest per kernel
#
# See README.md for the other targets.  KERNEL=NAME (vm/kernels/NAME) picks
# one kernel, KERNEL=/path/to/linux a tree of one's own (built out of tree
# in the cache, never written to; SERIES=7.3 applies that series to a
# scratch clone of it); FLAVOR=debug selects the debug kernel (KASAN, lockdep,
# kmemleak, ...); ACCEL=kvm|tcg forces the accelerator.  Everything built
# lives in the cache
# (${DMIRROR_THP_CACHE:-${XDG_CACHE_HOME:-~/.cache}/dmirror-thp}).

SHELL := /bin/bash
FLAVOR ?= normal
PLAN ?= stock+thp+soak-short
# KERNEL=NAME picks one kernel, a file of vm/kernels/.  Without it, make
# and make check cover those whose file says ci: yes, and the one-kernel
# targets (stock, bench, shell, ...) take the one that says default: yes.
KERNELS := $(or $(KERNEL),$(shell vm/kernels.sh list ci))
# That default set is the CI set: a kernel's ci-plans: there limits which
# plans boot on it (vm/lib.sh).  Named kernels run every plan.
CI_SET := $(if $(KERNEL),,$(if $(filter file,$(origin KERNELS)),--ci-set))
# make bench-compare's: times taken under TCG compare only within one
# architecture, the CI set's x86_64 kernels.
BENCH_KERNELS := $(or $(KERNEL),$(shell vm/kernels.sh list ci x86_64))
# make migrate-bench compares upstream's code (the kernel's compare:) with
# the series.
ifeq ($(KERNEL),)
KERNEL := $(shell vm/kernels.sh get default)
endif
MIGRATE_KERNELS = $(shell vm/kernels.sh field $(KERNEL) compare) $(KERNEL)
# make check-subsets: the trees with some of the 7.3 postings (subset: yes).
SUBSET_KERNELS = $(shell vm/kernels.sh list subset)
export FLAVOR KERNEL
# What only the full plan adds to its boots: the crash boots of
# vm/expect.list, the mm selftests (on the kernels whose file says
# mm-selftests: yes) and the host's check of its own scripts
# (vm/contracts.sh).
FULL_PLAN_EXTRAS := $(if $(filter stock+thp+soak-short,$(PLAN)),--crashes --mm --host)
comma := ,
empty :=
space := $(empty) $(empty)
# When this make started, for the closing summary of what each step took.
T0 := $(shell date +%s)

.PHONY: all deps tree kernel module tests initramfs check check-subsets stock bench bench-compare migrate-bench trace soak \
	stress stress-lowmem lifecycle shell gdb gdb-demo lab-bundle negative \
	bisect-check callers coverage mainline-series mm-selftests patches checkpatch module-check clean help

# $(call each,CMD): CMD once per kernel of KERNELS, KERNEL set.
each = @for k in $(KERNELS); do KERNEL=$$k $(1) || exit 1; done

all: initramfs ## build everything: kernels with their series, module, tests, initramfs
	@vm/times.sh $(T0)

deps: ## install the missing Debian packages (every target runs it)
	@vm/deps.sh $(KERNELS)

tree: deps ## extract each kernel's Debian source into the cache and git am its series
	$(call each,vm/tree.sh)

kernel: tree ## build the guest kernels (KERNEL, FLAVOR=normal|debug)
	$(call each,vm/kernel.sh)

module: kernel ## build dmirror-thp.ko for each kernel
	$(call each,vm/module.sh)

tests: tree ## build the guests' test binaries (stock hmm-tests, selftests, bench, stress)
	@for k in $$(vm/kernels.sh arches $(KERNELS)); do KERNEL=$$k vm/tests.sh || exit 1; done

initramfs: module tests ## pack each kernel's guest initramfs
	@for k in $(KERNELS); do for i in $$(vm/kernels.sh images $$k $(CI_SET)); do \
		KERNEL=$$k vm/initramfs.sh $$i || exit 1; done; done

# The README's test command.
check: initramfs ## boot each kernel's guest and run every test (KERNEL, PLAN, SUITE, ARGS)
	@APPEND="$(if $(SUITE),dm_SUITE=$(SUITE)) $(if $(ARGS),dm_ARGS=$(ARGS))" \
		vm/check.sh $(FULL_PLAN_EXTRAS) $(CI_SET) $(PLAN) $(KERNELS)

# The stock regression baseline alone: the tree's test_hmm.ko + hmm-tests.
check-subsets: KERNELS = $(SUBSET_KERNELS)
check-subsets: initramfs ## each tree with some of the 7.3 postings: no XPASS, no unexplained failure (not in CI)
	vm/check.sh --crashes $(PLAN) $(KERNELS)

stock: KERNELS = $(KERNEL)
stock: kernel ## the regression baseline: stock test_hmm.ko and hmm-tests
	@vm/tests.sh stock
	@vm/initramfs.sh stock
	@IMAGE=stock vm/check.sh stock

BENCH_SIZES ?= 2,8,64,512
BENCH_ITERS ?= 5
bench: KERNELS = $(KERNEL)
bench: initramfs ## THP, mTHP and 4K migration bench and its report (BENCH_SIZES, BENCH_ITERS, BASELINE=stock, BENCH_CPU)
	@MEM=$${MEM:-4G} APPEND="dm_BENCH_SIZES=$(BENCH_SIZES) dm_BENCH_ITERS=$(BENCH_ITERS) $(if $(BASELINE),dm_BASELINE=$(BASELINE)) $(if $(BENCH_CPU),dm_BENCH_CPU=$(BENCH_CPU))" \
		vm/check.sh bench
	@vm/bench-report.sh

# Like for like: the same bench, guest and sizes on every kernel (KERNEL=
# for fewer), each kernel's own test_hmm.ko first, then one table.  Each
# kernel boots BENCH_PASSES times, the kernels in turns, so that a slow
# spell of the host falls on all of them (vm/check.sh's PASSES).
BENCH_PASSES ?= 3
bench-compare: KERNELS = $(BENCH_KERNELS)
bench-compare: initramfs ## the bench on every x86_64 kernel of the CI set, with its test_hmm, side by side (BENCH_PASSES)
	@MEM=$${MEM:-4G} PASSES=$(BENCH_PASSES) \
		APPEND="dm_BENCH_SIZES=$(BENCH_SIZES) dm_BENCH_ITERS=$(BENCH_ITERS) dm_BASELINE=stock $(if $(BENCH_CPU),dm_BENCH_CPU=$(BENCH_CPU))" \
		vm/check.sh bench $(KERNELS)
	@vm/bench-report.sh --compare

# Ordinary memory, no device: mbind() moves of each folio order between the
# guest's two NUMA nodes, upstream's code against the series (the
# migrate-batch posting's figures), BENCH_PASSES boots each, in turns.
migrate-bench: KERNELS = $(MIGRATE_KERNELS)
migrate-bench: initramfs ## ordinary memory: mbind() moves of 4 kB to 1 MB folios between NUMA nodes, pristine vs the series
	@PASSES=$(BENCH_PASSES) APPEND="dm_BENCH_ITERS=$(BENCH_ITERS) $(if $(BENCH_CPU),dm_BENCH_CPU=$(BENCH_CPU))" \
		vm/check.sh migrate-bench $(KERNELS)
	@python3 vm/report/migrate_report.py "$$(readlink -f $${DMIRROR_THP_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/dmirror-thp}/logs/latest)"

# The kernel's own mm selftests (run_vmtests.sh), the same binaries on
# upstream's code and on the series, then their difference test by test
# (vm/report/mm_report.py).  MM_CATEGORIES: run_vmtests.sh's categories
# (CATEGORY:PROGRAM for one program of one), by default those the series
# touches.  make check runs the plan too, on the kernels whose file says
# mm-selftests: yes, of thp only split_huge_page_test (see
# vm/guest/plans/mm).
MM_CATEGORIES ?= migration rmap cow thp ksm pagemap soft_dirty mremap userfaultfd hmm
mm-selftests: KERNELS = $(MIGRATE_KERNELS)
mm-selftests: kernel tests ## the tree's own mm selftests, pristine against the series (MM_CATEGORIES)
	$(call each,vm/initramfs.sh mm)
	@APPEND="$(if $(MM_CATEGORIES),dm_MM_CATEGORIES=$(subst $(space),$(comma),$(strip $(MM_CATEGORIES))))" \
		vm/check.sh mm $(KERNELS)

# The randomized soak: SOAK_SECONDS of the stress, the fuzzer, stress-ng
# and trinity (vm/guest/plans/soak); SEED replays one.
SOAK_SECONDS ?= 600
soak: KERNELS = $(KERNEL)
soak: initramfs ## randomized soak: stress + fuzzer + stress-ng + trinity (SOAK_SECONDS, SEED)
	@TIMEOUT=$$(($(SOAK_SECONDS) + 1200)) APPEND="dm_SOAK_SECONDS=$(SOAK_SECONDS) $(if $(SEED),dm_SEED=$(SEED))" \
		vm/check.sh soak

# One THP round trip under the dmirror_thp trace events: trace.txt.
trace: KERNELS = $(KERNEL)
trace: initramfs ## the trace events of one THP round trip (trace.txt in the run folder)
	@vm/check.sh trace

stress: KERNELS = $(KERNEL)
stress: initramfs ## hmm-thp-stress 60 s x 4, then under fault injection
	@APPEND="$${STRESS_SECONDS:+dm_STRESS_SECONDS=$$STRESS_SECONDS}" vm/check.sh stress

# The stress plan in a guest barely larger than its working set, so that
# system-side THP allocations fail for real.
stress-lowmem: KERNELS = $(KERNEL)
stress-lowmem: initramfs ## the stress in a 128 MB guest (MEM)
	@MEM=$${MEM:-128M} APPEND="$${STRESS_SECONDS:+dm_STRESS_SECONDS=$$STRESS_SECONDS}" vm/check.sh stress

lifecycle: KERNELS = $(KERNEL)
lifecycle: initramfs ## 100 loads and unloads, 10 with THPs resident
	@vm/check.sh lifecycle

shell: KERNELS = $(KERNEL)
shell: initramfs ## interactive guest (ROOTFS=debian for bash, gdb, perf, drgn; GDB=1)
	@vm/run.sh --shell

# A debugger on the guest: the debug flavour (DWARF, no KASLR) stopped
# under QEMU's gdbstub, and the gdb command line that attaches to it.
gdb: FLAVOR = debug
gdb: KERNELS = $(KERNEL)
gdb: initramfs ## debug guest under QEMU's gdbstub; prints the gdb command (scripts/gdb, lx-symbols)
	@GDB=1 vm/run.sh --shell

gdb-demo: FLAVOR = debug
gdb-demo: KERNELS = $(KERNEL)
gdb-demo: initramfs ## scripted gdb session: break in migrate_vma_setup during a THP test
	@vm/gdb.sh --demo

# Which lines of the device-private paths the tests reach: the gcov
# flavour (vm/config/gcov.config, the files of vm/coverage.files and the
# module profiled), the plans' boots, then lcov's report per kernel
# (vm/coverage.sh).  docs/coverage.md says how to read it.
COVERAGE_PLAN ?= stock+thp
coverage: FLAVOR = gcov
coverage: KERNELS = $(KERNEL)
coverage: initramfs ## gcov/lcov coverage of the device-private code and the module (KERNEL, COVERAGE_PLAN)
	@vm/check.sh $(COVERAGE_PLAN) $(KERNELS)
	@vm/coverage.sh
	@vm/times.sh $(T0)

lab-bundle: KERNELS = $(KERNEL)
lab-bundle: initramfs ## a folder for a LAVA lab: kernel, modules, initramfs, cmdline, job.yaml (LAB_PLAN)
	@vm/lab-bundle.sh

# The bench's own negative check: a failing test and a WARN must fail it.
negative: KERNELS = $(KERNEL)
negative: kernel ## the bench's own check: a failing test and a WARN must fail
	@vm/tests.sh stock
	@vm/initramfs.sh stock
	@vm/negative.sh

# Build the kernel after each patch of the series.
bisect-check: deps ## build the kernel after each patch of the series
	@vm/bisect-check.sh

# Compile the tree's in-tree users of the changed APIs.
callers: KERNELS = $(KERNEL)
callers: tree ## compile the tree's users of the changed API
	@vm/callers.sh

# The default kernel's postings (kernel-prereq-patches/7.3), each in
# $CACHE/mainline-series, signed off by the poster (git config user.name
# and user.email).
mainline-series: KERNELS = $(KERNEL)
mainline-series: tree ## the default kernel's postings (7.3), signed off by you: cover letters, patches, checkpatch, recipients
	@vm/mainline-series.sh

# Which patches of kernel-prereq-patches/ each tree carries, by which the
# expectations of vm/expect.list are chosen (vm/patch-state.sh).
patches: tree ## which of the project's patches each kernel's tree carries (KERNEL=NAME or a path)
	$(call each,vm/patch-state.sh --print)

checkpatch: tree ## checkpatch.pl --strict on the series and the module
	@vm/checkpatch.sh

# dmirror-thp.ko with W=1 and sparse (C=1): must print no warning.
module-check: kernel ## the module with W=1 and sparse (C=1), for each kernel
	$(call each,W=1 C=1 vm/module.sh)

clean: ## remove selftests/out (the cache stays)
	rm -rf selftests/out

help: ## this list
	@echo "dmirror-thp: make [target] [FLAVOR=normal|debug|gcov] (README.md has more)"
	@sed -n 's/^\([a-z-]*\):.*## \(.*\)/\1\t\2/p' $(MAKEFILE_LIST) | \
		awk -F'\t' '{ printf "  %-15s %s\n", $$1, $$2 }'
