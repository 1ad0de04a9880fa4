#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ROOTFS=debian: a Debian 12 root filesystem, made once with debootstrap
# into the cache, with bash, gdb, strace, perf and drgn.  The guest mounts it as
# its root over 9p; the stage's modules, tests and plans are copied to
# /opt/dmirror-thp before each boot.
#
# rootfs.sh   prints the root filesystem's folder, and nothing else
set -eu
. "$(dirname "$0")/lib.sh"

ROOTFS=$CACHE/rootfs-debian
# What the rootfs gets on top of minbase; a rootfs made with another list
# gets the difference installed.
PKGS="gdb strace linux-perf python3 python3-drgn trace-cmd"
if [ "$(cat "$ROOTFS/.dmirror-done" 2>/dev/null)" != "$PKGS" ]; then
	[ "$(id -u)" = 0 ] || die "debootstrap needs root"
	command -v debootstrap >/dev/null ||
		{ apt-get install -y -qq debootstrap >/dev/null || die "cannot install debootstrap"; }
	t=$(now)
	if [ ! -x "$ROOTFS/usr/bin/apt-get" ]; then
		progress "debootstrap bookworm into $ROOTFS (once)"
		rm -rf "$ROOTFS"
		debootstrap --variant=minbase --include=bash,procps,kmod,less \
			bookworm "$ROOTFS" > "$CACHE/debootstrap.log" 2>&1 ||
			die "debootstrap failed: see $CACHE/debootstrap.log"
	fi
	# debootstrap does not resolve virtual packages (gdb needs one): apt does.
	progress "installing $PKGS in the rootfs"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" apt-get install -y -qq \
		--no-install-recommends $PKGS >> "$CACHE/debootstrap.log" 2>&1 ||
		die "apt-get in the rootfs failed: see $CACHE/debootstrap.log"
	chroot "$ROOTFS" apt-get clean
	echo "$PKGS" > "$ROOTFS/.dmirror-done"
	took "$t" "rootfs"
fi

O=$ROOTFS/opt/dmirror-thp
R=$STAGE/initramfs-full
[ -d "$R" ] || die "no stage at $R: run 'make initramfs KERNEL=$KERNEL'"
rm -rf "$O"
mkdir -p "$O"
cp -a "$R/lib/modules" "$R/selftests" "$R/plans" "$O/"
# The plans' library where they look for it.
rm -rf "$ROOTFS/lib/dmirror-thp"
cp -a "$R/lib/dmirror-thp" "$ROOTFS/lib/"
# hmm-tests, the bench and the stress: every binary of the stage but busybox.
for b in "$R"/bin/*; do
	[ "$(basename "$b")" = busybox ] || cp -a "$b" "$O/"
done
cp -a "$TOP/tools" "$O/"
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
# The kernel's build folder, where drgn looks for vmlinux.
kb=/lib/modules/$(uname -r)/build
mkdir -p "$kb"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro kbuild "$kb"
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
insmod /opt/dmirror-thp/modules/dmirror-thp.ko 2>/dev/null &&
	echo "dmirror-thp loaded; tests in /opt/dmirror-thp/selftests, host folder at /host," \
		"drgn script: drgn /opt/dmirror-thp/tools/dmirror-pmds.py PID"
export PATH=/opt/dmirror-thp:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=${TERM:-vt100}
cd /root
setsid -c bash -l < /dev/ttyS0 > /dev/ttyS0 2>&1
printf '\000' | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
INIT
chmod 755 "$O/init"
# The login shell's /etc/profile sets PATH afresh: the tools go back in.
mkdir -p "$ROOTFS/etc/profile.d"
echo 'PATH=/opt/dmirror-thp:$PATH' > "$ROOTFS/etc/profile.d/dmirror-thp.sh"
echo "$ROOTFS"
