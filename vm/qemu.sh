# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2054  # QEMU options hold commas
# The guest's QEMU and kernel command lines, for every boot: make check's
# (vm/run.sh) and the lab bundle's (vm/lab-bundle.sh).  Sourced after
# lib.sh; reads KIMAGE (the kernel's image), INITRD, SMP, MEM and GDB.

# qemu_cmd ACCEL [--no-initrd]: the command line every boot shares, in
# $QEMU, and the kernel command line every boot starts with, in $KCMD, for
# the selected kernel's architecture.  The guest has two NUMA nodes, and a
# swap disk (a sparse file of $SWAP, made by swap_disk) when $SWAPFILE
# names one.
qemu_cmd()
{
	case $GUEST_ARCH in
	x86_64) qemu_x86_64 "$1" ;;
	arm64) qemu_arm64 ;;
	esac
	[ "${2:-}" = --no-initrd ] || QEMU+=(-initrd "$INITRD")
	# GDB=1: QEMU's gdbstub on :1234, the guest stopped until gdb attaches.
	[ "${GDB:-0}" = 1 ] && QEMU+=(-s -S)
	[ -n "${SWAPFILE:-}" ] &&
		QEMU+=(-drive "file=$SWAPFILE,if=virtio,format=raw,cache=unsafe")
	return 0
}

# x86_64: QEMU's pc machine, two fake NUMA nodes (numa=fake=2).  acpi=noirq:
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
qemu_x86_64()
{
	KCMD="console=ttyS0 panic=-1 tsc=reliable numa=fake=2 acpi=noirq printk.time=1"
	case $1 in
	kvm) QEMU=(-accel kvm -cpu kvm64) ;;
	*)
		QEMU=(-accel tcg,thread=multi -cpu max,-erms,-fsrm,-la57)
		KCMD="$KCMD clearcpuid=rep_good"
		;;
	esac
	QEMU=(qemu-system-x86_64 -M pc "${QEMU[@]}" -smp "$SMP" -m "$MEM"
	      -nographic -no-reboot -kernel "$KIMAGE"
	      -device isa-debug-exit,iobase=0xf4,iosize=0x04)
}

# arm64: QEMU's virt machine under TCG, on the PL011 (ttyAMA0), with the
# results on a virtio console (hvc0: the machine has one UART; the guest's
# init writes them to dm_OUT).  Two NUMA nodes of half the memory each,
# the vCPUs split between them, as the firmware (the device tree) tells
# the kernel: arm64 has no numa=fake of x86's kind.  -cpu max without
# pointer authentication, whose emulated QARMA costs every call and
# return under TCG; the kernel is built without it (tinyconfig).  No
# network (-nic none): the virt machine's default NIC is a virtio-net-pci
# whose option ROM comes from ipxe-qemu, which qemu-system-arm only
# recommends, so a machine that never installed QEMU for x86 has none and
# QEMU refuses to start.
qemu_arm64()
{
	local mb half c0

	case $MEM in
	*G) mb=$((${MEM%G} * 1024)) ;;
	*M) mb=${MEM%M} ;;
	*) die "MEM=$MEM: give it in M or G" ;;
	esac
	half=$((mb / 2))
	c0=$(((SMP + 1) / 2))
	KCMD="console=ttyAMA0 panic=-1 printk.time=1 dm_OUT=hvc0"
	QEMU=(qemu-system-aarch64 -M virt -accel tcg,thread=multi -cpu max,pauth=off
	      -smp "$SMP" -m "${mb}M"
	      -object "memory-backend-ram,id=m0,size=${half}M"
	      -object "memory-backend-ram,id=m1,size=$((mb - half))M"
	      -numa "node,nodeid=0,cpus=0-$((c0 - 1)),memdev=m0")
	if [ "$SMP" -gt "$c0" ]; then
		QEMU+=(-numa "node,nodeid=1,cpus=$c0-$((SMP - 1)),memdev=m1")
	else
		QEMU+=(-numa "node,nodeid=1,memdev=m1")
	fi
	QEMU+=(-nic none -nographic -no-reboot -kernel "$KIMAGE")
}

# qemu_serials CONSOLE RESULTS: the options that connect the kernel console
# and the guest's results each to a QEMU serial backend: file:PATH, null
# or mon:stdio; in SERIALS.
qemu_serials()
{
	case $GUEST_ARCH in
	x86_64) SERIALS=(-serial "$1" -serial "$2") ;;
	arm64)
		SERIALS=(-serial "$1")
		case $2 in
		file:*) SERIALS+=(-chardev "file,id=results,path=${2#file:}") ;;
		null) SERIALS+=(-chardev null,id=results) ;;
		*) die "qemu_serials: results to $2" ;;
		esac
		SERIALS+=(-device virtio-serial-pci -device virtconsole,chardev=results)
		;;
	esac
}

# swap_disk PATH: a fresh sparse swap disk for one boot (the guest's init
# runs mkswap on it).
swap_disk()
{
	SWAPFILE=$1
	rm -f "$SWAPFILE"
	truncate -s "$SWAP" "$SWAPFILE"
}

