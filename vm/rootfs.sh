#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ROOTFS=debian: a Debian 12 root filesystem, made once with debootstrap
# into the cache, with bash, gdb, strace and perf.  The guest mounts it as
# its root over 9p; the stage's modules, tests and plans are copied to
# /opt/dmirror-thp before each boot.
set -eu
. "$(dirname "$0")/lib.sh"

ROOTFS=$CACHE/rootfs-debian
if [ ! -f "$ROOTFS/.dmirror-done" ]; then
	[ "$(id -u)" = 0 ] || die "debootstrap needs root"
	command -v debootstrap >/dev/null ||
		{ apt-get install -y -qq debootstrap >/dev/null || die "cannot install debootstrap"; }
	t=$(now)
	step "debootstrap bookworm into $ROOTFS (once)"
	rm -rf "$ROOTFS"
	debootstrap --variant=minbase --include=bash,procps,kmod,less \
		bookworm "$ROOTFS" > "$CACHE/debootstrap.log" 2>&1 ||
		die "debootstrap failed: see $CACHE/debootstrap.log"
	# debootstrap does not resolve virtual packages (gdb needs one): apt does.
	step "installing gdb, strace and perf in the rootfs"
	DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" apt-get install -y -qq \
		--no-install-recommends gdb strace linux-perf python3 \
		>> "$CACHE/debootstrap.log" 2>&1 ||
		die "apt-get in the rootfs failed: see $CACHE/debootstrap.log"
	chroot "$ROOTFS" apt-get clean
	touch "$ROOTFS/.dmirror-done"
	took "$t" "debootstrap"
fi

O=$ROOTFS/opt/dmirror-thp
R=$STAGE/initramfs
[ -d "$R" ] || die "no stage at $R: run 'make initramfs'"
rm -rf "$O"
mkdir -p "$O"
cp -a "$R/lib/modules" "$R/selftests" "$R/plans" "$O/"
cp -a "$R"/bin/hmm-tests "$O/" 2>/dev/null || true
cat > "$O/init" <<'INIT'
#!/bin/bash
# Debian guest init: mounts, the host folder, the module, then a login shell.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
mount -t debugfs debugfs /sys/kernel/debug
mkdir -p /host /dev/pts
mount -t 9p -o trans=virtio,version=9p2000.L host /host
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
insmod /opt/dmirror-thp/modules/dmirror-thp.ko 2>/dev/null &&
	echo "dmirror-thp loaded; tests in /opt/dmirror-thp/selftests, host folder at /host"
export PATH=/opt/dmirror-thp:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=${TERM:-vt100}
cd /root
setsid -c bash -l < /dev/ttyS0 > /dev/ttyS0 2>&1
printf '\000' | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
INIT
chmod 755 "$O/init"
echo "$ROOTFS"
