#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build dmirror-thp.ko out of tree against the cache's kernel.  The sources
# are mirrored into the stage folder first, so no build output lands in the
# checkout.
set -eu
. "$(dirname "$0")/lib.sh"
need make "$TARGET_CC" rsync

if [ "$MODULE" = no ]; then
	progress "$KERNEL: no dmirror-thp.ko (its file says module: no)"
	exit 0
fi
[ -f "$KBUILD/Module.symvers" ] || die "no kernel build in $KBUILD: run 'make kernel KERNEL=$KERNEL'"
MOD=$STAGE/mod
mkdir -p "$MOD"
rsync -a --delete --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
	"$TOP/Kbuild" "$TOP/module" "$TOP/uapi" "$MOD/"
# W= and C= look at what gets compiled: compile everything.
[ -z "${W:-}${C:-}" ] || find "$MOD" -name '*.o' -delete
kbuild_env
t=$(now)
progress "building dmirror-thp.ko ($KERNEL $FLAVOR) ${W:+W=$W }${C:+C=$C}"
make -C "$KBUILD" M="$MOD" ARCH="$KARCH" ${CROSS:+CROSS_COMPILE=$CROSS} \
	"CC=ccache $TARGET_CC" -j"$JOBS" ${W:+W=$W} ${C:+C=$C} \
	modules > "$MOD/build.log" 2>&1 || {
	cat "$MOD/build.log" >&2
	die "module build for $KERNEL failed"
}
# The module builds without a warning (W=1 and sparse included).
! grep -E 'warning:|error:' "$MOD/build.log" >&2 ||
	die "the module build for $KERNEL printed warnings (log: $MOD/build.log)"
took "$t" "module build ($KERNEL)"
