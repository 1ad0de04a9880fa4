# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2054  # QEMU options hold commas
# The guest's QEMU and kernel command lines, for every boot: make check's
# (vm/run.sh) and the lab bundle's (vm/lab-bundle.sh).  Sourced after
# lib.sh; reads KIMAGE (the bzImage), INITRD, SMP, MEM and GDB.

# qemu_cmd ACCEL [--no-initrd]: the command line every boot shares, in
# $QEMU, and the kernel command line every boot starts with, in $KCMD.
# The guest has two NUMA nodes (numa=fake=2), and a swap disk (a sparse
# file of $SWAP, made by swap_disk) when $SWAPFILE names one.  acpi=noirq:
# ACPI is there for the HPET and PM timer, not for interrupt routing; its
# PCI _PRT method runs an AML loop that a KASAN kernel under TCG takes
# more than ACPICA's 30 s loop limit to finish, which left the virtio
# devices without an interrupt (and the debug boot took 75 s, not 10).
#
# Under TCG two x86 string instructions are emulator artefacts that would
# show in every copy the bench measures: QEMU emulates `rep movsb` a byte
# at a time (so ERMS and FSRM are masked), and a `rep movsq` whose source
# and destination are both 2 MB aligned can miss QEMU's direct-mapped
# softmmu TLB on every word (13x slower, depending on the TLB size of the
# moment), so the kernel's copy_page() is told not to use it
# (clearcpuid=rep_good selects copy_page_regs()).  LA57 is masked too: with
# 5-level paging, KASAN's idea of where the shadow starts depends on the
# LA57 feature bit, which identify_boot_cpu() clears and sets again with
# interrupts on, and an interrupt in between was reported as a wild
# access (2 debug boots in about 30).  Most x86 hardware has 4 levels.
qemu_cmd()
{
	KCMD="console=ttyS0 panic=-1 tsc=reliable numa=fake=2 acpi=noirq printk.time=1"
	case $1 in
	kvm) QEMU=(-accel kvm -cpu kvm64) ;;
	*)
		QEMU=(-accel tcg,thread=multi -cpu max,-erms,-fsrm,-la57)
		KCMD="$KCMD clearcpuid=rep_good"
		;;
	esac
	[ "${2:-}" = --no-initrd ] || QEMU+=(-initrd "$INITRD")
	QEMU=(qemu-system-x86_64 -M pc "${QEMU[@]}" -smp "$SMP" -m "$MEM"
	      -nographic -no-reboot -kernel "$KIMAGE"
	      -device isa-debug-exit,iobase=0xf4,iosize=0x04)
	# GDB=1: QEMU's gdbstub on :1234, the guest stopped until gdb attaches.
	[ "${GDB:-0}" = 1 ] && QEMU+=(-s -S)
	[ -n "${SWAPFILE:-}" ] &&
		QEMU+=(-drive "file=$SWAPFILE,if=virtio,format=raw,cache=unsafe")
	return 0
}

# swap_disk PATH: a fresh sparse swap disk for one boot (the guest's init
# runs mkswap on it).
swap_disk()
{
	SWAPFILE=$1
	rm -f "$SWAPFILE"
	truncate -s "$SWAP" "$SWAPFILE"
}

