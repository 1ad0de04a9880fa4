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
for ko in "$KBUILD/lib/test_hmm.ko" "$KBUILD/drivers/misc/lkdtm/lkdtm.ko" \
	  "$STAGE/mod/module/dmirror-thp.ko"; do
	[ -f "$ko" ] && cp "$ko" "$R/lib/modules/"
done
T=$STAGE/tests
[ -x "$T/hmm-tests" ] && cp "$T/hmm-tests" "$R/bin/"
if [ "${1:-}" != stock ] && [ -d "$T/selftests" ]; then
	for p in $(make -s -C "$TOP/selftests" list-tests); do
		cp "$T/selftests/$p" "$R/selftests/"
	done
	for p in $(make -s -C "$TOP/selftests" list-tools 2>/dev/null); do
		cp "$T/selftests/$p" "$R/bin/"
	done
fi
(cd "$R" && find . | cpio -o -H newc --quiet) | gzip -1 > "$STAGE/initramfs.cpio.gz"
step "initramfs: $(du -h "$STAGE/initramfs.cpio.gz" | cut -f1) ($(ls "$R/lib/modules" | tr '\n' ' '))"
