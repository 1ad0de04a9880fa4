#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the guest's test binaries, static, in the stage folder: the tree's
# own hmm-tests (the stock baseline) and the project's selftests.
# tests.sh stock: only the stock hmm-tests.
set -eu
. "$(dirname "$0")/lib.sh"
need gcc make

OUT=$STAGE/tests
mkdir -p "$OUT"
HMM=$KSRC/tools/testing/selftests/mm/hmm-tests.c
[ -f "$HMM" ] || die "$HMM not found: run 'make tree'"
if [ ! -x "$OUT/hmm-tests" ] || [ "$HMM" -nt "$OUT/hmm-tests" ]; then
	step "building the tree's stock hmm-tests"
	gcc -static -O2 -pthread -I"$KSRC" -I"$KSRC/tools/testing/selftests/mm" \
		-o "$OUT/hmm-tests" "$HMM" || die "stock hmm-tests build failed"
fi
if [ "${1:-}" != stock ] && [ -f "$TOP/selftests/Makefile" ]; then
	[ -f "$KBUILD/Makefile" ] || die "no kernel build in $KBUILD: run 'make kernel'"
	locked make -s -C "$KSRC" O="$KBUILD" headers_install > /dev/null ||
		die "headers_install failed"
	step "building selftests"
	make -s -C "$TOP/selftests" KSRC="$KSRC" KHDR="$KBUILD/usr/include" \
		O="$OUT/selftests" all || die "selftests build failed"
fi
