#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A debugger on the guest, the way virtme-ng's --gdb works: QEMU's gdbstub
# on :1234 and the kernel's own gdb helpers (scripts/gdb: lx-dmesg,
# lx-symbols, lx-ps, ...).  The debug flavour has what it needs: DWARF 5,
# GDB_SCRIPTS, and no KASLR, so vmlinux's addresses are the guest's.
#
# gdb.sh --print   the command that attaches gdb to a guest started with
#                  'make gdb' (run.sh --shell with GDB=1)
# gdb.sh --demo    a scripted session: boot the debug guest stopped, break
#                  in migrate_vma_setup, run one THP test, load the
#                  module's symbols, print the backtrace and the migrate_vma
#                  the module passed, detach and let the test finish; the
#                  transcript is gdb.log in the run's folder
set -eu
. "$(dirname "$0")/lib.sh"
[ "$GUEST_ARCH" = x86_64 ] ||
	die "make gdb attaches to x86_64 guests only ($KERNEL is $GUEST_ARCH)"

MODDIR=$STAGE/mod/module
PORT=${GDB_PORT:-1234}

gdb_args()
{
	GDBARGS=(gdb -q -iex "add-auto-load-safe-path $KBUILD"
		 -ex "file $KBUILD/vmlinux" -ex "target remote :$PORT")
}

check()
{
	[ "$FLAVOR" = debug ] ||
		die "the $FLAVOR kernel has no debug info: use FLAVOR=debug (make gdb does)"
	[ -f "$KBUILD/vmlinux" ] || die "no $KBUILD/vmlinux: run 'make FLAVOR=debug'"
	[ -e "$KBUILD/vmlinux-gdb.py" ] ||
		die "no $KBUILD/vmlinux-gdb.py: run 'make FLAVOR=debug kernel'"
	[ -f "$MODDIR/dmirror-thp.ko" ] || die "no $MODDIR/dmirror-thp.ko: run 'make FLAVOR=debug'"
}

case ${1:-} in
--print)
	check
	gdb_args
	echo "dmirror-thp: the guest waits for gdb; in another terminal:"
	printf '  cd %s &&' "$KBUILD"
	for a in "${GDBARGS[@]}" -ex "lx-symbols $MODDIR" -ex continue; do
		case $a in
		*" "*) printf " '%s'" "$a" ;;
		*) printf ' %s' "$a" ;;
		esac
	done
	echo
	echo "  (lx-symbols also loads dmirror-thp.ko's symbols when it is loaded; Ctrl-C"
	echo "   in gdb stops the guest, 'lx-dmesg' prints its log, 'lx-ps' its tasks)"
	;;
--demo)
	check
	need qemu-system-x86_64 gdb timeout
	RUN=$LOGDIR/$FLAVOR-gdb-$(date +%Y%m%d-%H%M%S)
	mkdir -p "$RUN"
	ln -sfn "$RUN" "$LOGDIR/latest"
	progress "booting the debug guest stopped for gdb (:$PORT); logs in $RUN"
	# The same guest as make check's, with one THP test as its plan.
	GDB=1 APPEND="dm_SUITE=/selftests/dmirror-thp-tests-migrate dm_ARGS=-t,migrate_8_thps_one_call" \
		RUN_DIR=$RUN "$TOP/vm/check.sh" one "$KERNEL" > "$RUN/run.out" 2>&1 &
	guest=$!
	n=0
	until ss -ltn 2>/dev/null | grep -q ":$PORT "; do
		sleep 0.2
		n=$((n + 1))
		[ $n -lt 100 ] || die "no gdbstub on :$PORT after 20 s (see $RUN/run.out)"
	done
	gdb_args
	cat > "$RUN/gdb.cmds" <<EOF
set pagination off
set confirm off
set print pretty on
break migrate_vma_setup
continue
echo \n### stopped in migrate_vma_setup: the module's migrate_vma\n
print/x *args
print (enum migrate_vma_direction) args->flags
echo \n### lx-symbols: vmlinux and the loaded modules\n
lx-symbols $MODDIR
echo \n### backtrace, down to the system call\n
bt 12
echo \n### the guest's log, last lines (lx-dmesg)\n
pipe lx-dmesg | tail -n 5
delete
detach
EOF
	progress "gdb: break in migrate_vma_setup, one THP test (the boot under TCG takes a while)"
	(cd "$KBUILD" && timeout 900 "${GDBARGS[@]}" -batch -x "$RUN/gdb.cmds") \
		> "$RUN/gdb.log" 2>&1 || die "gdb failed: see $RUN/gdb.log"
	cat "$RUN/gdb.log"
	progress "gdb detached; the test goes on"
	rc=0
	wait "$guest" || rc=$?
	cat "$RUN/run.out"
	grep -q '^#[0-9].* in .*dmirror' "$RUN/gdb.log" ||
		die "the backtrace does not reach dmirror-thp.ko: see $RUN/gdb.log"
	[ "$rc" = 0 ] || die "the guest run failed (rc $rc): see $RUN"
	;;
*)
	die "usage: gdb.sh --print | --demo"
	;;
esac
