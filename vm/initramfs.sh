#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Pack the guest initramfs: busybox, /init, the plans, the modules and the
# test binaries.
set -eu
. "$(dirname "$0")/lib.sh"
need cpio gzip
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "no $BUSYBOX: run 'make deps'"

R=$STAGE/initramfs
rm -rf "$R"
mkdir -p "$R"/bin "$R"/dev "$R"/proc "$R"/sys "$R"/tmp "$R"/lib/modules \
	"$R"/selftests "$R"/plans "$R"/root "$R"/host
cp "$BUSYBOX" "$R/bin/busybox"
mkdir -p "$R/etc"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$R/etc/group"
cp "$TOP/vm/init" "$R/init"
chmod 755 "$R/init"
cp "$TOP"/vm/plans/* "$R/plans/"
# The stock image needs only the tree's modules and hmm-tests; every other
# image needs all of them.  A missing piece is an error here, not a skip
# (or a confusing failure) in the guest.
T=$STAGE/tests
kos="$KBUILD/lib/test_hmm.ko $KBUILD/drivers/misc/lkdtm/lkdtm.ko"
[ "${1:-}" = stock ] || kos="$kos $STAGE/mod/module/dmirror-thp.ko"
for ko in $kos; do
	[ -f "$ko" ] || die "no $ko: run 'make module' (or 'make kernel')"
	cp "$ko" "$R/lib/modules/"
done
[ -x "$T/hmm-tests" ] || die "no $T/hmm-tests: run 'make tests'"
cp "$T/hmm-tests" "$R/bin/"
if [ "${1:-}" != stock ]; then
	for p in $(make -s -C "$TOP/selftests" list-tests); do
		[ -x "$T/selftests/$p" ] || die "no $T/selftests/$p: run 'make tests'"
		cp "$T/selftests/$p" "$R/selftests/"
	done
	for p in $(make -s -C "$TOP/selftests" list-tools); do
		[ -x "$T/selftests/$p" ] || die "no $T/selftests/$p: run 'make tests'"
		cp "$T/selftests/$p" "$R/bin/"
	done
fi
(cd "$R" && find . | cpio -o -H newc --quiet) | gzip -1 > "$STAGE/initramfs.cpio.gz"
step "initramfs: $(du -h "$STAGE/initramfs.cpio.gz" | cut -f1) ($(ls "$R/lib/modules" | tr '\n' ' '))"
