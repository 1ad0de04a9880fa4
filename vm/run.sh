#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the guest under QEMU with a test plan, then report each result and a
# last line "N passed, N failed, N skipped" (vm/results.py), also as KTAP
# (results.ktap) and JSON (results.json).  Exit status 0 only if nothing
# failed and the console is clean.
#
# run.sh PLAN        run /plans/PLAN (vm/plans/PLAN) in the guest
# run.sh --shell     interactive guest (ttyS0 on stdio), host folder on 9p;
#                    GDB=1 (any plan) adds QEMU's gdbstub (-s, on :1234) and
#                    stops the guest before its first instruction (-S) until
#                    gdb attaches (vm/gdb.sh)
#
# ACCEL=auto|kvm|tcg  MEM=3G  SMP=2  SWAP=512M  TIMEOUT=1500 (seconds, hard limit)
# RUN_DIR=folder for the logs  GDB=1 (see --shell)
set -eu
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/qemu.sh"
need qemu-system-x86_64 timeout python3

PLAN=${1:-check}
ACCEL=${ACCEL:-auto}
MEM=${MEM:-3G}
SMP=${SMP:-2}
SWAP=${SWAP:-512M}
TIMEOUT=${TIMEOUT:-1500}
KERNEL=$KBUILD/arch/x86/boot/bzImage
INITRD=$STAGE/initramfs.cpio.gz
[ -f "$KERNEL" ] || die "no kernel at $KERNEL: run 'make kernel'"
[ -f "$INITRD" ] || die "no initramfs at $INITRD: run 'make initramfs'"

# KVM is used only where a short probe boot reaches init in a few seconds;
# on nested VMs KVM guests hang while decompressing.  The verdict is cached.
pick_accel()
{
	[ "$ACCEL" != auto ] && { echo "$ACCEL"; return; }
	if [ ! -w /dev/kvm ]; then
		echo tcg
		return
	fi
	key="$(uname -r) $(qemu-system-x86_64 --version | head -n 1)"
	probe=$CACHE/kvm-probe
	if [ "$(sed -n 1p "$probe" 2>/dev/null)" != "$key" ]; then
		v=tcg
		GDB=0 qemu_cmd kvm
		timeout -s KILL 10 "${QEMU[@]}" -serial file:"$CACHE/kvm-probe.log" \
			-serial null -append "console=ttyS0 panic=-1 quiet plan=probe" \
			>/dev/null 2>&1 || true
		grep -q DMIRROR-PROBE-OK "$CACHE/kvm-probe.log" 2>/dev/null && v=kvm
		printf '%s\n%s\n' "$key" "$v" > "$probe"
	fi
	sed -n 2p "$probe"
}

accel=$(pick_accel)
# What the guest's reports name: the accelerator and the applied series.
KMETA="dm_ACCEL=$accel dm_SERIES=$(cat "$KSRC/.dmirror-series" 2>/dev/null || echo unknown)"
if [ "$PLAN" = --shell ]; then
	step "interactive guest ($accel, $SMP vCPU, $MEM); host folder $TOP at /host"
	mkdir -p "$LOGDIR"
	swap_disk "$LOGDIR/swap-shell.img"
	# shellcheck disable=SC2054  # QEMU options hold commas
	share=(-virtfs local,path="$TOP",mount_tag=host,security_model=none,id=host)
	[ "${GDB:-0}" = 1 ] && "$TOP/vm/gdb.sh" --print
	qrc=0
	if [ "${ROOTFS:-initramfs}" = debian ]; then
		rootfs=$("$TOP/vm/rootfs.sh" | tail -n 1)
		qemu_cmd "$accel" --no-initrd
		# The build folder too, read-only at /kbuild: drgn reads vmlinux.
		"${QEMU[@]}" -serial mon:stdio -serial null "${share[@]}" \
			-virtfs local,path="$rootfs",mount_tag=rootfs,security_model=passthrough,id=rootfs \
			-virtfs local,path="$KBUILD",mount_tag=kbuild,security_model=none,readonly=on,id=kbuild \
			-append "$KCMD root=rootfs rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=262144 rw init=/opt/dmirror-thp/init" ||
			qrc=$?
	else
		qemu_cmd "$accel"
		"${QEMU[@]}" -serial mon:stdio -serial null "${share[@]}" \
			-append "$KCMD plan=shell" || qrc=$?
	fi
	# The guest's poweroff writes 0 to isa-debug-exit: QEMU exits with 1.
	case $qrc in
	0|1) exit 0 ;;
	*) die "qemu exited with $qrc" ;;
	esac
fi

# PLAN may name several plans, a+b: each gets a guest boot of its own (so
# that, for example, the stock driver's leaks don't count against the next
# one's kmemleak scan), and the results are reported together.
plans=$(echo "$PLAN" | tr '+' ' ')
for p in $plans; do
	[ -f "$TOP/vm/plans/$p" ] || die "no plan vm/plans/$p"
done
RUN=${RUN_DIR:-$LOGDIR/$FLAVOR-$(echo "$PLAN" | tr '+' '-')-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RUN"
ln -sfn "$RUN" "$LOGDIR/latest"
rc=0
: > "$RUN/console.log"
: > "$RUN/results.log"
for p in $plans; do
	step "booting $FLAVOR kernel, plan '$p' ($accel, $SMP vCPU, $MEM, swap $SWAP, limit ${TIMEOUT}s); logs in $RUN"
	t=$(now)
	prc=0
	swap_disk "$RUN/swap.img"
	qemu_cmd "$accel"
	timeout -s KILL "$TIMEOUT" "${QEMU[@]}" \
		-serial file:"$RUN/console-$p.log" -serial file:"$RUN/results-$p.log" \
		-append "$KCMD plan=$p $KMETA ${APPEND:-}" \
		> "$RUN/qemu-$p.log" 2>&1 || prc=$?
	took "$t" "guest run '$p' (qemu exit $prc)"
	rm -f "$SWAPFILE"
	[ "$prc" = 1 ] || rc=$prc
	cat "$RUN/console-$p.log" >> "$RUN/console.log"
	cat "$RUN/results-$p.log" >> "$RUN/results.log"
done
nplans=$(echo "$plans" | wc -w)

# The one reader of the guest's output (vm/results.py): the files it sent,
# one line per test, results.ktap and the console's verdict.  results.json
# is what the kernel tree's own KTAP parser makes of results.ktap.
st=0
python3 "$TOP/vm/results.py" "$RUN" "$nplans" "$rc" > "$RUN/summary.txt" || st=$?
cat "$RUN/summary.txt"
# kunit.py exits non-zero when the document has a failing test; what
# matters here is only that it could read it.
python3 "$KSRC/tools/testing/kunit/kunit.py" parse --json="$RUN/results.json" \
	"$RUN/results.ktap" > "$RUN/kunit.log" 2>&1 || [ -s "$RUN/results.json" ] ||
	die "kunit.py could not parse $RUN/results.ktap (see $RUN/kunit.log)"
# ... and it must count what results.py counted.
ours=$(tail -n 1 "$RUN/summary.txt")
theirs=$(sed -n 's/.*Ran [0-9]* tests: //p' "$RUN/kunit.log" | tr -d ',' |
	awk '{ for (i = 1; i < NF; i += 2) n[$i] = $(i + 1) }
	     END { printf "%d passed, %d failed, %d skipped", n["passed:"], n["failed:"], n["skipped:"] }')
[ "$ours" = "$theirs" ] ||
	die "results.ktap says '$theirs' to kunit.py, results.py says '$ours'"
[ "$st" = 0 ] ||
	echo "dmirror-thp: FAILED: see $RUN/console.log and $RUN/results.log" >&2
exit "$st"
