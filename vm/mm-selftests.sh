#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build a tree's own mm selftests (tools/testing/selftests/mm: the test
# programs, run_vmtests.sh and its scripts), static, for the guest's mm
# image (vm/initramfs.sh mm).  A kernel with a compare: kernel (upstream's
# own code for it, vm/kernels/) takes that tree's: a pair runs the same
# binaries, and the difference between its two runs is the series'.
#
# The tree is only read: its tools/ (and the headers the tests include by
# the tree's top) are copied into the cache and built there, against the
# tree's uapi headers installed in the cache.
#
# mm-selftests.sh   prints the folder of the binaries, and nothing else
set -eu
. "$(dirname "$0")/lib.sh"
need "$TARGET_CC" make rsync readelf

mmsrc=${COMPARE:-$KERNEL}
# The compare: kernel's tree may not be prepared yet (make KERNEL=7.3).
[ "$mmsrc" = "$KERNEL" ] || KERNEL=$mmsrc "$TOP/vm/tree.sh" >&2
KSRC_MM=$(ksrc_of "$mmsrc")
W=$CACHE/kernels/$mmsrc/mm-selftests
OUT=$USR/mm-selftests-$mmsrc
MM=$KSRC_MM/tools/testing/selftests/mm
[ -f "$MM/run_vmtests.sh" ] || die "$MM/run_vmtests.sh not found: the $mmsrc tree has no mm selftests"

# Rebuilt when the tree's selftests change (a new Debian version, a user
# tree's edits): rsync keeps the copy's times, make the rest.
mkdir -p "$W" "$OUT"
# What the build generates in its folder stays (else all is rebuilt).
rsync -a --delete --exclude=.git --exclude='local_config.*' \
	"$KSRC_MM/tools/" "$W/tools/"
# The headers of the tree's own that the tests include by its top
# (mm/gup_test.h, lib/test_hmm_uapi.h, include/vdso/time64.h).
for h in $(cd "$MM" && sed -n 's,^#include [<"]\(\(include\|lib\|mm\|arch\)/[^>"]*\)[>"].*,\1,p' ./*.c ./*.h | sort -u); do
	[ ! -f "$KSRC_MM/$h" ] || install -D -p -m 644 "$KSRC_MM/$h" "$W/$h"
done
HDR=$W/headers
uapi_headers "$mmsrc" "$KSRC_MM" "$HDR"
# Debian's 6.12.118 (stable) took a khugepaged.c that returns KSFT_SKIP
# without the vm_util.h that includes kselftest.h: it does not build.
# Such a tree gets kselftest.h included first (lib.mk's USERCFLAGS).
fix=
if grep -q KSFT_SKIP "$MM/khugepaged.c" 2>/dev/null &&
	! grep -q 'kselftest\.h' "$MM/khugepaged.c" "$MM/vm_util.h"; then
	fix="-include $W/tools/testing/selftests/kselftest.h"
	progress "$mmsrc: khugepaged.c uses KSFT_SKIP and includes no kselftest.h: building with $fix"
fi
# dynamic: the programs of OUT that need a loader, which the guest lacks.
dynamic()
{
	local f

	for f in "$OUT"/*; do
		[ -f "$f" ] && [ -x "$f" ] && [ "$(head -c 4 "$f")" = $'\x7fELF' ] &&
			readelf -l "$f" | grep -q INTERP && echo "$f"
	done
	return 0
}
# Cross-built, the programs link libcap and libnuma of the guest's
# architecture: Debian's -dev packages, unpacked in the cache (vm/debs.sh).
libs=$(guest_lib_flags libcap-dev libnuma-dev)
cflags="-static $libs" ldflags="-static $libs"
# An older build linked the _64 programs dynamically: build them again.
rm -f $(dynamic)
t=$(now)
progress "building the $mmsrc tree's mm selftests (static, $GUEST_ARCH) in $OUT"
# Command-line variables override the Makefile's: static binaries (the
# guest has no libc; the rule of the x86 _64 programs links with CFLAGS
# and EXTRA_CFLAGS, without LDFLAGS), the cache's headers, no 32-bit
# variants.
locked make -C "$W/tools/testing/selftests/mm" -j"$JOBS" ${CROSS:+ARCH=$KARCH CROSS_COMPILE=$CROSS} \
	OUTPUT="$OUT" KHDR_INCLUDES="-isystem $HDR/usr/include" \
	LDFLAGS="$ldflags" EXTRA_CFLAGS="$cflags" CAN_BUILD_I386=0 ${fix:+USERCFLAGS="$fix"} > "$OUT.log" 2>&1 || {
	grep -E 'error|Error' "$OUT.log" | head -n 20 >&2
	die "the $mmsrc tree's mm selftests do not build (log: $OUT.log)"
}
# run_vmtests.sh and the scripts it runs, beside the programs.
(cd "$W/tools/testing/selftests/mm" && cp ./*.sh "$OUT/")
[ -x "$OUT/cow" ] || die "no $OUT/cow after the build (log: $OUT.log)"
d=$(dynamic)
[ -z "$d" ] || die "linked dynamically, which the guest cannot run: $d"
took "$t" "mm selftests ($mmsrc)"
echo "$OUT"
