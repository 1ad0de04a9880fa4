#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Pack the selected kernel's guest initramfs: busybox, /init, the plans and
# their libraries (vm/guest/), the modules, the test binaries, and what
# vm/expect.list expects of this kernel.
#
# initramfs.sh [IMAGE]   IMAGE: full (default: every module and test),
#                        stock (the tree's own modules and hmm-tests only)
#                        or mm (the tree's own mm selftests in /mm, with
#                        Debian's static bash: vm/mm-selftests.sh);
#                        written to $STAGE/initramfs-IMAGE.cpio.gz
set -eu
. "$(dirname "$0")/lib.sh"
# depmod lives in sbin, which a user's PATH may lack.
PATH=$PATH:/usr/sbin:/sbin
need cpio gzip python3 depmod
# The host's own busybox and bash (make deps), or those of Debian's
# packages for the guest's architecture (vm/debs.sh).
if [ -z "$CROSS" ]; then
	BUSYBOX=/bin/busybox BASH=/bin/bash-static
	[ -x "$BUSYBOX" ] || die "no $BUSYBOX: run 'make deps'"
else
	debs=$("$TOP/vm/debs.sh" "$GUEST_ARCH" busybox-static bash-static) ||
		die "no busybox and bash for $GUEST_ARCH"
	debs=$(folders vm/debs.sh <<< "$debs")
	BUSYBOX=$(echo "$debs" | sed -n 1p)/bin/busybox
	BASH=$(echo "$debs" | sed -n 2p)/bin/bash-static
fi

image=${1:-full}
case $image in
full|stock|mm) ;;
*) die "no initramfs image '$image' (full, stock or mm)" ;;
esac
[ "$image" != full ] || [ "$MODULE" != no ] ||
	die "$KERNEL has no dmirror-thp.ko (module: no in vm/kernels/$KERNEL): only the stock and mm images"
R=$STAGE/initramfs-$image
rm -rf "$R"
mkdir -p "$R"/bin "$R"/dev "$R"/proc "$R"/sys "$R"/tmp "$R"/lib/modules \
	"$R"/selftests "$R"/plans "$R"/root "$R"/host "$R"/etc/dmirror-thp \
	"$R"/lib/dmirror-thp
cp "$BUSYBOX" "$R/bin/busybox"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$R/etc/group"
cp "$TOP/vm/guest/init" "$R/init"
chmod 755 "$R/init"
cp "$TOP"/vm/guest/plans/* "$R/plans/"
cp "$TOP"/vm/guest/*.sh "$R/lib/dmirror-thp/"
echo "$KERNEL" > "$R/etc/dmirror-thp/kernel"
# The tests this kernel runs in a boot of their own, because they crash it,
# and those its guest cannot run (vm/expect.list, by the patches its tree
# carries: vm/patch-state.sh): the plans leave them out.
"$TOP/vm/patch-state.sh"
python3 "$TOP/vm/report/expect.py" exclude "$KERNEL" "$FLAVOR" "$STAGE/patches" \
	> "$R/etc/dmirror-thp/exclude" || die "vm/expect.list cannot be read"

# The stock image needs only the tree's modules and hmm-tests; every other
# image needs all of them.  A missing piece is an error here, not a skip
# (or a confusing failure) in the guest.
kos="$KBUILD/lib/test_hmm.ko $KBUILD/drivers/misc/lkdtm/lkdtm.ko"
[ "$image" != full ] || kos="$kos $STAGE/mod/module/dmirror-thp.ko"
for ko in $kos; do
	[ -f "$ko" ] || die "no $ko: run 'make module' (or 'make kernel')"
	cp "$ko" "$R/lib/modules/"
done
# The stock hmm-tests of every tree that provides them (vm/kernels/'
# stock-tests:), whichever kernel this image is for.
stock=$(stock_tests)
while read -r _ v; do
	[ -x "$USR/hmm-tests-$v" ] || die "no $USR/hmm-tests-$v: run 'make tests'"
	cp "$USR/hmm-tests-$v" "$R/bin/"
done <<< "$stock"
[ -x "$USR/migration" ] || die "no $USR/migration: run 'make tests'"
cp "$USR/migration" "$R/bin/"
if [ "$image" = mm ]; then
	# run_vmtests.sh is bash's; the guest has busybox only.
	[ -x "$BASH" ] || die "no $BASH: run 'make deps'"
	cp "$BASH" "$R/bin/bash"
	# ... and test_vmalloc.sh calls getconf, which busybox lacks.
	cp "$TOP/vm/guest/getconf" "$R/bin/getconf"
	mm=$("$TOP/vm/mm-selftests.sh") || die "no mm selftests for $KERNEL"
	mm=$(folders vm/mm-selftests.sh <<< "$mm")
	cp -a "$mm" "$R/mm"
	rm -f "$R/mm"/*.o
	# test_hmm.sh, test_vmalloc.sh and test_page_frag.sh load their
	# modules with modprobe, which reads modules.dep under the release.
	locked make -s -C "$KSRC" O="$KBUILD" ARCH="$KARCH" ${CROSS:+CROSS_COMPILE=$CROSS} INSTALL_MOD_PATH="$R" \
		INSTALL_MOD_STRIP=1 DEPMOD="$(command -v depmod)" modules_install > /dev/null ||
		die "modules_install of $KERNEL into $R failed"
fi
if [ "$image" = full ]; then
	for p in $(make -s -C "$TOP/selftests" list-tests); do
		[ -x "$USR/selftests/$p" ] || die "no $USR/selftests/$p: run 'make tests'"
		cp "$USR/selftests/$p" "$R/selftests/"
	done
	for p in $(make -s -C "$TOP/selftests" list-tools); do
		[ -x "$USR/selftests/$p" ] || die "no $USR/selftests/$p: run 'make tests'"
		cp "$USR/selftests/$p" "$R/bin/"
	done
	# The soak's load from outside: Debian's own stress-ng and trinity,
	# with the shared libraries they link (ldd's list, and the loader);
	# the host's, so only in a guest of the host's architecture (the
	# soak's arch: entry in vm/expect.list).
	[ -n "$CROSS" ] ||
	for t in stress-ng trinity; do
		b=$(command -v "$t") || die "no $t: run 'make deps'"
		cp "$b" "$R/bin/"
		ldd "$b" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }' |
		while read -r lib; do
			mkdir -p "$R$(dirname "$lib")"
			cp -L "$lib" "$R$lib"
		done
	done
fi
(cd "$R" && find . | cpio -o -H newc --quiet) | gzip -1 > "$R.cpio.gz"
progress "initramfs $KERNEL $FLAVOR $image: $(du -h "$R.cpio.gz" | cut -f1) ($(ls "$R/lib/modules" | tr '\n' ' '))"
