#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the guests' test binaries, static, once for every kernel of the
# selected kernel's architecture (they do not depend on the kernel they run
# on), in $CACHE/userspace (the host's) or $CACHE/userspace-ARCH (another,
# cross-built):
#
#   hmm-tests-NAME  the stock hmm-tests of each kernel with a stock-tests:
#                  NAME field (vm/kernels/), from its tree (a series may add
#                  a test of its own), run on every kernel against both
#                  drivers
#   migration      the migration selftest of the kernel with harness: yes,
#                  for its mTHP test
#   selftests/     the project's selftests, bench and stress, against the
#                  kselftest harness, selftests helpers and uapi headers of
#                  the kernel with harness: yes (the newest: PAGEMAP_SCAN,
#                  UFFDIO_MOVE)
#
# Those kernels' trees are prepared (vm/tree.sh) if need be.
set -eu
. "$(dirname "$0")/lib.sh"
need "$TARGET_CC" make

mkdir -p "$USR"

harness=$(the_kernel harness)
stock=$(stock_tests)
for k in $( { echo "$stock" | cut -d' ' -f1; echo "$harness"; } | sort -u); do
	KERNEL=$k "$TOP/vm/tree.sh"
done
TH=$CACHE/kernels/$harness/linux
HDR=$USR/headers-$harness
uapi_headers "$harness" "$TH" "$HDR"

# up_to_date OUT TREE SRC: OUT was built after SRC changed and after
# TREE's series was applied (a tree of one's own has no .dmirror-series:
# built every time).
up_to_date()
{
	[ -x "$1" ] && [ -f "$2/.dmirror-series" ] &&
		[ "$1" -nt "$3" ] && [ "$1" -nt "$2/.dmirror-series" ]
}

# mm_selftest TREE OUT ARG...: a static guest program of TREE's mm
# selftests, from the compiler arguments ARG (sources and libraries).
mm_selftest()
{
	local t=$1 out=$2

	shift 2
	"$TARGET_CC" -static -O2 -pthread -isystem "$HDR/usr/include" -I"$t" \
		-I"$t/tools/testing/selftests" -I"$t/tools/testing/selftests/mm" \
		-o "$out" "$@"
}

# hmm-tests-$1 from the tree $2.
build_hmm_tests()
{
	local v=$1 t=$2 mm=$2/tools/testing/selftests/mm out=$USR/hmm-tests-$1
	local extra=

	[ -f "$mm/hmm-tests.c" ] || die "$mm/hmm-tests.c not found: run 'make tree'"
	! up_to_date "$out" "$t" "$mm/hmm-tests.c" || return 0
	# Newer hmm-tests read the THP size through the selftests helpers.
	[ -f "$mm/hugepage_settings.c" ] && extra="$mm/vm_util.c $mm/hugepage_settings.c"
	progress "building the $v tree's stock hmm-tests ($GUEST_ARCH)"
	# shellcheck disable=SC2086
	mm_selftest "$t" "$out" "$mm/hmm-tests.c" $extra -lrt -lm ||
		die "the $v tree's hmm-tests do not build"
}
while read -r k v; do
	build_hmm_tests "$v" "$(ksrc_of "$k")"
done <<< "$stock"

# The migration selftest of the harness kernel's tree, for its mTHP test
# (migration_mthp), which the stock plan runs on every kernel: its
# migration fixture needs a third vCPU, and the mm plan runs it.
MM=$TH/tools/testing/selftests/mm
if ! up_to_date "$USR/migration" "$TH" "$MM/migration.c"; then
	libs=$(guest_lib_flags libnuma-dev)
	# Older trees call the THP settings helpers thp_settings.c.
	settings=$MM/hugepage_settings.c
	[ -f "$settings" ] || settings=$MM/thp_settings.c
	progress "building the $harness tree's migration selftest ($GUEST_ARCH)"
	# shellcheck disable=SC2086
	mm_selftest "$TH" "$USR/migration" $libs "$MM/migration.c" \
		"$MM/vm_util.c" "$settings" -lnuma ||
		die "the $harness tree's migration selftest does not build"
fi

if [ "${1:-}" != stock ]; then
	progress "building selftests ($GUEST_ARCH)"
	make -s -C "$TOP/selftests" CC="$TARGET_CC" KSRC="$TH" KHDR="$HDR/usr/include" \
		O="$USR/selftests" all || die "selftests build failed"
fi
