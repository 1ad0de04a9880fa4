#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the guests' test binaries, static, once for every kernel (they do
# not depend on the kernel they run on), in $CACHE/userspace:
#
#   hmm-tests-6.12, hmm-tests-7.3  the stock hmm-tests of each source
#                  version, from its patched tree (a series may add a test
#                  of its own), run on every kernel against both drivers
#   selftests/     the project's selftests, bench and stress, against the
#                  7.3 tree's kselftest harness, selftests helpers and uapi
#                  headers (the newest of both: PAGEMAP_SCAN, UFFDIO_MOVE)
#
# Both source versions' trees are prepared (vm/tree.sh) if need be.
set -eu
. "$(dirname "$0")/lib.sh"
need gcc make

USR=$CACHE/userspace
mkdir -p "$USR"

for v in 6.12 7.3; do
	KERNEL=$v "$TOP/vm/tree.sh"
done
T73=$(series_tree 7.3)
HDR=$USR/headers-7.3
# headers_install in a build folder of its own: no configured kernel needed.
if [ ! -f "$HDR/usr/include/linux/mman.h" ] ||
   [ "$T73/.dmirror-series" -nt "$HDR/usr/include/linux/mman.h" ]; then
	progress "installing the 7.3 tree's uapi headers"
	locked make -s -C "$T73" O="$HDR" headers_install > /dev/null ||
		die "headers_install of $T73 failed"
fi

# hmm-tests of source version $1 from its tree $2.
build_hmm_tests()
{
	local v=$1 t=$2 mm=$2/tools/testing/selftests/mm out=$USR/hmm-tests-$1
	local extra=

	[ -f "$mm/hmm-tests.c" ] || die "$mm/hmm-tests.c not found: run 'make tree'"
	[ -x "$out" ] && [ "$out" -nt "$mm/hmm-tests.c" ] &&
		[ "$out" -nt "$t/.dmirror-series" ] && return 0
	# 7.3's hmm-tests read the THP size through the selftests helpers.
	[ -f "$mm/hugepage_settings.c" ] && extra="$mm/vm_util.c $mm/hugepage_settings.c"
	progress "building the $v tree's stock hmm-tests"
	# shellcheck disable=SC2086
	gcc -static -O2 -pthread -isystem "$HDR/usr/include" -I"$t" \
		-I"$t/tools/testing/selftests" -I"$mm" -o "$out" \
		"$mm/hmm-tests.c" $extra -lrt -lm ||
		die "the $v tree's hmm-tests do not build"
}
build_hmm_tests 6.12 "$(series_tree 6.12)"
build_hmm_tests 7.3 "$T73"

if [ "${1:-}" != stock ]; then
	progress "building selftests"
	make -s -C "$TOP/selftests" KSRC="$T73" KHDR="$HDR/usr/include" \
		O="$USR/selftests" all || die "selftests build failed"
fi
