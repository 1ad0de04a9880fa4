#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the selected kernel's guest under QEMU: every plan of PLAN, each in
# a boot of its own, then (with --crashes) each test that vm/expect.list
# expects to crash this kernel, each in a boot of its own too.  The boots'
# logs go to RUN_DIR/$KERNEL, listed in its file "boots"; vm/check.sh,
# which calls this, reads them (vm/report/results.py).
#
# run.sh [--crashes] [--mm] [--ci-set] PLAN   PLAN: a plan of
#                           vm/guest/plans, or several (a+b); --crashes:
#                           the crash and isolated boots too; --mm: the mm
#                           plan too, if the kernel's file says
#                           mm-selftests: yes; --ci-set: only the plans of
#                           its ci-plans:, if it has one (make check's CI
#                           set)
#
# A plan's header may say what its boot needs: "# image: NAME" (an
# initramfs of vm/initramfs.sh, instead of IMAGE), "# smp: N" (vCPUs, at
# least N) and "# timeout: SECONDS" (for the normal flavour; the debug
# flavour gets twice as long).
# run.sh --shell            interactive guest (ttyS0 on stdio), host folder
#                           on 9p; GDB=1 (any plan) adds QEMU's gdbstub (-s,
#                           on :1234) and stops the guest before its first
#                           instruction (-S) until gdb attaches (vm/gdb.sh)
#
# ACCEL=auto|kvm|tcg  MEM=3G  SMP=2  SWAP=512M  TIMEOUT=1500 (seconds, hard
# limit per boot; 3000 for the debug flavour)  IMAGE=full|stock  RUN_DIR
# GDB=1 (see --shell)
# PASS=N (vm/check.sh's PASSES): the Nth boot of each plan in this run; its
# boots are named PLAN-N and added to the earlier passes' (dm_PASS=N).
set -eu
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/qemu.sh"
need "$QEMU_SYSTEM" timeout python3

crashes=0 mm=0 ci_set=0
while :; do
	case ${1:-} in
	--crashes) crashes=1 ;;
	--mm) mm=1 ;;
	--ci-set) ci_set=1 ;;
	*) break ;;
	esac
	shift
done
PLAN=${1:-thp}
ACCEL=${ACCEL:-auto}
MEM=${MEM:-3G}
SMP=${SMP:-2}
SWAP=${SWAP:-512M}
# A debug kernel (KASAN, kmemleak, lockdep) under TCG ran make check's thp
# plan in 1452 s of 7.3's 1500: twice the normal flavour's limit.
if [ "$FLAVOR" = debug ]; then
	TIMEOUT=${TIMEOUT:-3000}
else
	TIMEOUT=${TIMEOUT:-1500}
fi
IMAGE=${IMAGE:-full}
[ -f "$KIMAGE" ] || die "no kernel at $KIMAGE: run 'make kernel KERNEL=$KERNEL'"
# image IMAGE: the initramfs of a boot, in INITRD (qemu_cmd's).
image()
{
	[ "$1" != full ] || [ "$MODULE" != no ] ||
		die "$KERNEL has no dmirror-thp.ko (module: no): it boots only the plans of the stock and mm images (make stock, make mm-selftests)"
	INITRD=$STAGE/initramfs-$1.cpio.gz
	[ -f "$INITRD" ] || die "no initramfs at $INITRD: run 'make initramfs KERNEL=$KERNEL'"
}
# A kernel without dmirror-thp.ko has no full image, and no crash boots:
# those are dmirror-thp's tests; it boots mm's image unless a plan says.
# make mm-selftests needs no full image either (a debug flavour may have
# none).
[ "$MODULE" != no ] || crashes=0
if [ "$MODULE" = no ] || [ "$PLAN" = mm ]; then
	image mm
else
	image "$IMAGE"
fi
SMP0=$SMP

# plan_field PLAN FIELD: what the plan's header says of FIELD, or nothing.
plan_field()
{
	sed -n "s/^# $2: *//p" "$TOP/vm/guest/plans/$1" | head -n 1
}

# KVM is used only where a short probe boot reaches init in a few seconds;
# on nested VMs KVM guests hang while decompressing.  The verdict is cached.
# A guest of another architecture than the host's is emulated (TCG).
pick_accel()
{
	[ "$ACCEL" != auto ] && { echo "$ACCEL"; return; }
	if [ ! -w /dev/kvm ] || [ "$GUEST_ARCH" != "$(uname -m)" ]; then
		echo tcg
		return
	fi
	key="$(uname -r) $("$QEMU_SYSTEM" --version | head -n 1)"
	probe=$CACHE/kvm-probe
	if [ "$(sed -n 1p "$probe" 2>/dev/null)" != "$key" ]; then
		v=tcg
		GDB=0 qemu_cmd kvm
		# A hang (nested virtualisation) is the verdict tcg: the
		# probe's exit status says nothing, its console does.
		rm -f "$CACHE/kvm-probe.log"
		qemu_serials "file:$CACHE/kvm-probe.log" null
		if timeout -s KILL 10 "${QEMU[@]}" "${SERIALS[@]}" -append "console=ttyS0 panic=-1 quiet plan=probe" \
			>/dev/null 2>&1; then :; fi
		grep -q DMIRROR-PROBE-OK "$CACHE/kvm-probe.log" 2>/dev/null && v=kvm
		printf '%s\n%s\n' "$key" "$v" > "$probe"
	fi
	sed -n 2p "$probe"
}

accel=$(pick_accel)
# What the guest's reports name: the accelerator, the kernel, the series.
KMETA="dm_ACCEL=$accel dm_KERNEL=$KERNEL dm_FLAVOR=$FLAVOR dm_SERIES=$(cat "$KSRC/.dmirror-series" 2>/dev/null || echo unknown)"
if [ "$PLAN" = --shell ]; then
	progress "interactive $KERNEL guest ($accel, $SMP vCPU, $MEM); host folder $TOP at /host"
	mkdir -p "$LOGDIR"
	swap_disk "$LOGDIR/swap-shell.img"
	# shellcheck disable=SC2054  # QEMU options hold commas
	share=(-virtfs local,path="$TOP",mount_tag=host,security_model=none,id=host)
	[ "${GDB:-0}" = 1 ] && "$TOP/vm/gdb.sh" --print
	qrc=0
	if [ "${ROOTFS:-initramfs}" = debian ]; then
		[ "$GUEST_ARCH" = x86_64 ] ||
			die "ROOTFS=debian is an x86_64 root filesystem (vm/rootfs.sh); $KERNEL is $GUEST_ARCH"
		rootfs=$("$TOP/vm/rootfs.sh") || exit 1
		rootfs=$(folders vm/rootfs.sh <<< "$rootfs")
		qemu_cmd "$accel" --no-initrd
		qemu_serials mon:stdio null
		# The build folder too, read-only at /kbuild: drgn reads vmlinux.
		"${QEMU[@]}" "${SERIALS[@]}" "${share[@]}" \
			-virtfs local,path="$rootfs",mount_tag=rootfs,security_model=passthrough,id=rootfs \
			-virtfs local,path="$KBUILD",mount_tag=kbuild,security_model=none,readonly=on,id=kbuild \
			-append "$KCMD root=rootfs rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=262144 rw init=/opt/dmirror-thp/init" ||
			qrc=$?
	else
		qemu_cmd "$accel"
		qemu_serials mon:stdio null
		"${QEMU[@]}" "${SERIALS[@]}" "${share[@]}" \
			-append "$KCMD plan=shell" || qrc=$?
	fi
	# The guest's poweroff writes 0 to isa-debug-exit: QEMU exits with 1
	# (x86_64; 0 where it powers off through the firmware).
	case $qrc in
	0|1) exit 0 ;;
	*) die "qemu exited with $qrc" ;;
	esac
fi

[ -n "${RUN_DIR:-}" ] || die "run.sh is called by vm/check.sh, which sets RUN_DIR"
plans=$(echo "$PLAN" | tr '+' ' ')
kernel_file "$KERNEL"
[ $mm = 0 ] || [ "${KF[mm-selftests]:-}" != yes ] || plans="$plans mm"
# In the CI set, a kernel with ci-plans: boots those plans only, and its
# crash boots only if they say crash.
if [ $ci_set = 1 ] && [ -n "${KF[ci-plans]:-}" ]; then
	keep=
	for p in $plans; do
		case " ${KF[ci-plans]} " in
		*" $p "*) keep="$keep $p" ;;
		*) progress "$KERNEL: plan '$p' left out of the CI set (ci-plans: ${KF[ci-plans]})" ;;
		esac
	done
	plans=$keep
	case " ${KF[ci-plans]} " in
	*" crash "*) ;;
	*) crashes=0 ;;
	esac
fi
for p in $plans; do
	[ -f "$TOP/vm/guest/plans/$p" ] || die "no plan vm/guest/plans/$p"
done
K=$RUN_DIR/$KERNEL
mkdir -p "$K"
PASS=${PASS:-}
[ "${PASS:-1}" != 1 ] || : > "$K/boots"
# What the tree carries, as the initramfs was packed (vm/patch-state.sh):
# the run's expectations follow it.
[ -f "$STAGE/patches" ] || die "no $STAGE/patches: run 'make initramfs KERNEL=$KERNEL'"
cp "$STAGE/patches" "$K/patches"

# boot NAME KIND TIMEOUT APPEND [SUITE TEST]: one guest boot.
boot()
{
	local name=$1 kind=$2 tmo=$3 append=$4 t prc=0

	progress "booting $KERNEL $FLAVOR, $kind '$name' ($accel, $SMP vCPU, $MEM, swap $SWAP, limit ${tmo}s)"
	t=$(now)
	swap_disk "$K/swap.img"
	qemu_cmd "$accel"
	qemu_serials "file:$K/console-$name.log" "file:$K/results-$name.log"
	# The gcov flavour's boot writes its profile data to gcov-NAME/.
	gcov=()
	if [ "$FLAVOR" = gcov ]; then
		rm -rf "$K/gcov-$name"
		mkdir -p "$K/gcov-$name"
		# shellcheck disable=SC2054  # QEMU options hold commas
		gcov=(-virtfs "local,path=$K/gcov-$name,mount_tag=gcov,security_model=none,id=gcov")
		append="$append dm_GCOV=1"
	fi
	timeout -s KILL "$tmo" "${QEMU[@]}" "${SERIALS[@]}" "${gcov[@]}" \
		-append "$KCMD $KMETA $append" < /dev/null > "$K/qemu-$name.log" 2>&1 ||
		prc=$?
	took "$t" "guest run $KERNEL '$name' (qemu exit $prc)"
	rm -f "$SWAPFILE"
	shift 4
	echo "$name $kind $prc $*" >> "$K/boots"
}

for p in $plans; do
	img=$(plan_field "$p" image)
	image "${img:-$IMAGE}"
	n=$(plan_field "$p" smp)
	SMP=$SMP0
	[ -z "$n" ] || [ "$SMP" -ge "$n" ] || SMP=$n
	tmo=$(plan_field "$p" timeout)
	if [ -z "$tmo" ]; then
		tmo=$TIMEOUT
	elif [ "$FLAVOR" = debug ]; then
		tmo=$((tmo * 2))
	fi
	boot "$p${PASS:+-$PASS}" plan "$tmo" "plan=$p ${PASS:+dm_PASS=$PASS} ${APPEND:-}"
done
SMP=$SMP0
[ $crashes = 1 ] || exit 0
image "$IMAGE"
# A test that crashes the kernel as expected panics it at once (oops=panic,
# panic_on_warn): QEMU exits (-no-reboot) instead of waiting for the limit.
# An isolated boot is one for a test whose crash entry names a patch the
# tree may or may not carry (vm/patch-state.sh's unknown): it must pass.
n=0
while read -r kind suite test; do
	n=$((n + 1))
	boot "$kind-$n" "$kind" 600 \
		"plan=crash oops=panic panic_on_warn=1 dm_CRASH_SUITE=$suite dm_CRASH_TEST=$test" \
		"$suite" "$test"
done < <(python3 "$TOP/vm/report/expect.py" crashes "$KERNEL" "$FLAVOR" "$K/patches")
