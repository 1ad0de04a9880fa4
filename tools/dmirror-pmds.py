#!/usr/bin/env drgn
# SPDX-License-Identifier: GPL-2.0
"""Walk a process's page tables on the live kernel and print each
device-private PMD, with the device folio behind it: its order, refcount,
mapcounts, and the pgmap that owns it.  The device-private PTEs and the
system THPs of the process are counted.

    drgn /opt/dmirror-thp/tools/dmirror-pmds.py PID

Needs /proc/kcore and a vmlinux with DWARF (FLAVOR=debug; the Debian guest
mounts the build folder at /lib/modules/$(uname -r)/build, where drgn
looks).  x86-64 with 4-level paging, as the guest runs.
"""
import struct
import sys

from drgn import FaultError, cast
from drgn.helpers.linux.mm import PageHead, pfn_to_page, phys_to_virt
from drgn.helpers.linux.pid import find_task

PTRS = 512
PFN_MASK = 0x000FFFFFFFFFF000
PRESENT, PSE, PROTNONE = 1 << 0, 1 << 7, 1 << 8
# x86-64 swap entries: a 5-bit type at the top, the offset (here the device
# pfn) stored inverted below it from bit 9 (arch/x86/include/asm/pgtable_64.h).
SWP_TYPE_BITS, SWP_OFFSET_SHIFT = 5, 9 + 5
# Of the 32 types, the last is the PTE marker and the four before it are
# the device entries (include/linux/swap.h), whatever else is configured.
SWP_DEVICE_WRITE, SWP_DEVICE_READ = 27, 28
SWP_PFN_MASK = (1 << (46 - 12)) - 1


def table(prog, entry):
    """The 512 entries of the table that @entry points to."""
    virt = phys_to_virt(prog, entry & PFN_MASK).value_()
    return struct.unpack("<512Q", prog.read(virt, 8 * PTRS))


def swp(entry):
    """(type, pfn) of a non-present entry."""
    typ = entry >> (64 - SWP_TYPE_BITS)
    off = ((~entry << SWP_TYPE_BITS) & (2**64 - 1)) >> SWP_OFFSET_SHIFT
    return typ, off & SWP_PFN_MASK


def device_folio(prog, pfn):
    """The device-private page at @pfn, or None."""
    try:
        page = pfn_to_page(prog, pfn)
        if page.pgmap.type.value_() != prog.constant("MEMORY_DEVICE_PRIVATE").value_():
            return None
        return page
    except (FaultError, LookupError):
        return None


def symbol(prog, addr):
    """The name at @addr: from the debug info, else /proc/kallsyms (drgn
    0.0.22 cannot read 6.12's module layout), else the address."""
    try:
        return prog.symbol(addr).name
    except LookupError:
        pass
    try:
        with open("/proc/kallsyms") as f:
            for line in f:
                fields = line.split()
                if int(fields[0], 16) == addr:
                    return " ".join(fields[2:])
    except OSError:
        pass
    return hex(addr)


def describe(prog, page):
    folio = cast("struct folio *", page)
    order = int(folio._flags_1) & 0xFF if PageHead(page) else 0
    ref = int(page._refcount.counter)
    if order:
        maps = "entire %d, large %d" % (int(folio._entire_mapcount.counter) + 1,
                                        int(folio._large_mapcount.counter) + 1)
    else:
        maps = "%d" % (int(page._mapcount.counter) + 1)
    pgmap = page.pgmap
    ops = symbol(prog, pgmap.ops.value_())
    return "order %d, refcount %d, mapcount %s, pgmap %#x owner %#x ops %s" % (
        order, ref, maps, pgmap.value_(), pgmap.owner.value_(), ops)


def main(prog):
    if len(sys.argv) != 2:
        sys.exit("usage: drgn dmirror-pmds.py PID")
    task = find_task(prog, int(sys.argv[1]))
    if not task:
        sys.exit("no task %s" % sys.argv[1])
    mm = task.mm
    if not mm:
        sys.exit("task %s has no mm" % sys.argv[1])
    print("pid %s (%s): device-private PMDs" % (sys.argv[1],
                                                 task.comm.string_().decode()))
    npmd = npte = nthp = 0
    pgd = struct.unpack("<512Q", prog.read(mm.pgd.value_(), 8 * PTRS))
    for i in range(PTRS // 2):  # the user half
        if not pgd[i] & PRESENT:
            continue
        for j, pud in enumerate(table(prog, pgd[i])):
            if not pud & PRESENT or pud & PSE:
                continue
            for k, pmd in enumerate(table(prog, pud)):
                va = (i << 39) | (j << 30) | (k << 21)
                if pmd & (PRESENT | PROTNONE):
                    if pmd & PSE:
                        nthp += 1
                        continue
                    for pte in table(prog, pmd):
                        if pte and not pte & (PRESENT | PROTNONE) and \
                                swp(pte)[0] in (SWP_DEVICE_WRITE, SWP_DEVICE_READ):
                            npte += 1
                    continue
                if not pmd:
                    continue
                typ, pfn = swp(pmd)
                if typ not in (SWP_DEVICE_WRITE, SWP_DEVICE_READ):
                    continue
                page = device_folio(prog, pfn)
                if page is None:
                    continue
                npmd += 1
                print("  %#014x pmd %#018x %-5s pfn %#x: %s" % (
                    va, pmd, "write" if typ == SWP_DEVICE_WRITE else "read",
                    pfn, describe(prog, page)))
    print("%d device-private PMDs (%d MB), %d device-private PTEs, %d system THP PMDs"
          % (npmd, 2 * npmd, npte, nthp))


if __name__ == "__main__":
    main(prog)  # noqa: F821 (drgn runs scripts with prog defined)
