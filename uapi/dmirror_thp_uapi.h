/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * dmirror-thp: a THP-aware HMM mirror test device.
 *
 * The ABI is a superset of the kernel's lib/test_hmm_uapi.h of both 6.12 and
 * 7.3: the same command structure, the same ioctl numbers 0x00-0x09 with the
 * same meaning (0x08 and 0x09 are 7.3's), and the same device nodes
 * (/dev/hmm_dmirror0 and /dev/hmm_dmirror1, both device-private), so the
 * stock hmm-tests of both kernels run against it unchanged.  On top of that
 * it adds per-device statistics (0x40, 0x41), the time spent in each phase
 * of the migration paths (0x42), an in-kernel copy benchmark (0x43),
 * per-order statistics (0x44) and what the CPU's page table maps (0x45).
 *
 * Where it answers differently from 7.3's test_hmm, it is stricter, and no
 * stock test depends on the difference:
 *   - an unknown ioctl number gets ENOTTY (test_hmm: EINVAL);
 *   - HMM_DMIRROR_FLAGS with an unknown bit gets EINVAL (test_hmm stores any
 *     word), and its flag is armed on the open file, not on the device;
 *   - HMM_DMIRROR_RELEASE evicts every page but keeps the device memory
 *     (test_hmm also removes its chunks, and adds them again on demand);
 *   - device memory is device-private only: no spm_addr, no device-coherent
 *     variant (HMM_DMIRROR_MEMORY_DEVICE_COHERENT is never reported);
 *   - a range is limited to DMIRROR_THP_MAX_PAGES, and the caller's mm must
 *     be the one that opened the file (EINVAL otherwise).
 *
 * Common errnos for every command that takes a range (addr, npages):
 *   EFAULT  the ioctl argument, or cmd.ptr, is not a valid user pointer
 *   EINVAL  addr is not page aligned, npages is 0 or above
 *           DMIRROR_THP_MAX_PAGES, or addr + npages * PAGE_SIZE overflows or
 *           ends above the user address space
 *   EINVAL  the caller's mm is not the one that opened the device file
 *   ENOENT  after MIGRATE_TO_DEV or EXCLUSIVE, a page of the range that the
 *           device cannot read without a fault (as in test_hmm)
 *   EFAULT  part of the range is not mapped (READ, WRITE); SNAPSHOT
 *           instead reports HMM_DMIRROR_PROT_ERROR for such pages, as
 *           test_hmm does
 *   EINVAL  part of the range is not mapped, or not readable, or not
 *           anonymous private memory (MIGRATE_TO_DEV, EXCLUSIVE); part of
 *           it is not mapped, or not readable (MIGRATE_TO_SYS), or not
 *           mapped (CHECK_EXCLUSIVE)
 *   EPERM   WRITE to a part of the range that a VMA without VM_WRITE maps
 *           (hmm_range_fault()'s answer, as in test_hmm)
 *   ENOENT  the process that opened the device file has exited
 *   ENOMEM  the device or the system ran out of memory
 *   EBUSY   the range could not be collected (pages pinned or locked);
 *           EXCLUSIVE: a page kept being unmapped while it was made
 *           exclusive
 * An ioctl number the device does not know gets ENOTTY.
 */
#ifndef _UAPI_DMIRROR_THP_H
#define _UAPI_DMIRROR_THP_H

#include <linux/types.h>
#include <linux/const.h>
#include <linux/ioctl.h>

/**
 * struct hmm_dmirror_cmd - argument of every test_hmm-compatible command
 * @addr:   (in) user address the device reads, writes or migrates
 * @ptr:    (in) user buffer that device data is copied to or from
 * @npages: (in) number of pages; for HMM_DMIRROR_FLAGS, the flag word
 * @cpages: (out) number of pages copied or migrated
 * @faults: (out) number of device page faults seen
 */
struct hmm_dmirror_cmd {
	__u64		addr;
	__u64		ptr;
	__u64		npages;
	__u64		cpages;
	__u64		faults;
};

/* Largest npages one command accepts (1 GiB of 4 KiB pages). */
#define DMIRROR_THP_MAX_PAGES		_BITULL(18)

/*
 * HMM_DMIRROR_READ: the device reads [addr, addr + npages pages) through its
 * mirror page table, faulting it in with hmm_range_fault() where needed, and
 * copies the bytes to @ptr.  Device-private pages of this device are read
 * from device memory without migrating them.  cpages: pages copied.
 *
 * HMM_DMIRROR_READ_UNLOCKED: HMM_DMIRROR_READ whose faults may drop the mmap
 * lock and wait, with hmm_range_fault_unlocked_timeout() (on 6.12: a look
 * with hmm_range_fault(), then fixup_user_fault() of what is missing), so
 * that a range registered with userfaultfd is read once its handler has
 * resolved the fault (READ cannot wait for it).  Its errnos are READ's, and
 * EINTR for a fatal signal during a fault.
 *
 * HMM_DMIRROR_WRITE: the reverse; the device writes @ptr into the range.
 *
 * HMM_DMIRROR_MIGRATE_TO_DEV: migrate the range to device memory.  Anonymous
 * THPs move as one PMD-sized device folio, and mTHPs (PTE-mapped large
 * folios) that the range covers whole and that no other process maps as one
 * device folio of their order; holes and the huge zero page become zeroed
 * device folios.  Afterwards the device reads the range into
 * @ptr, as test_hmm does: cpages counts the pages the device could read, not
 * the pages that moved (use HMM_DMIRROR_STATS or SNAPSHOT for that).
 *
 * HMM_DMIRROR_MIGRATE_TO_SYS: migrate device pages of this device in the
 * range back to system memory, each device folio as a system folio of its
 * order where one can be had.  cpages: pages migrated.  A CPU fault does the
 * same for the folio it hits, where the mTHP policy of the folio's size
 * (/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled,
 * MADV_NOHUGEPAGE, PR_SET_THP_DISABLE) would let a fault allocate one.
 *
 * HMM_DMIRROR_SNAPSHOT: write one byte per page to @ptr, an HMM_DMIRROR_PROT_*
 * value.  A device-private PMD mapping reports HMM_DMIRROR_PROT_PMD.
 *
 * HMM_DMIRROR_EXCLUSIVE / HMM_DMIRROR_CHECK_EXCLUSIVE: as in test_hmm.
 * CHECK_EXCLUSIVE gives EPERM while a page of the range is still exclusive
 * to the device (a CPU access has not taken it back).
 *
 * HMM_DMIRROR_RELEASE: evict every page of the device back to system memory.
 * Only the struct is read; the range is ignored.
 *
 * HMM_DMIRROR_FLAGS: set this open file's flags from @npages
 * (HMM_DMIRROR_FLAG_*).  EINVAL for an unknown bit.
 */
#define HMM_DMIRROR_READ		_IOWR('H', 0x00, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_WRITE		_IOWR('H', 0x01, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_MIGRATE_TO_DEV	_IOWR('H', 0x02, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_MIGRATE_TO_SYS	_IOWR('H', 0x03, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_SNAPSHOT		_IOWR('H', 0x04, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_EXCLUSIVE		_IOWR('H', 0x05, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_CHECK_EXCLUSIVE	_IOWR('H', 0x06, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_RELEASE		_IOWR('H', 0x07, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_FLAGS		_IOWR('H', 0x08, struct hmm_dmirror_cmd)
#define HMM_DMIRROR_READ_UNLOCKED	_IOWR('H', 0x09, struct hmm_dmirror_cmd)

/*
 * HMM_DMIRROR_FLAG_FAIL_ALLOC: armed on the open file that sets it.  The
 * next large (order above 0) allocation made for that file fails once, on
 * whichever side comes first: the device folio of a MIGRATE_TO_DEV through
 * the file, the system folio of a MIGRATE_TO_SYS or RELEASE through the
 * file, or the system folio of a CPU fault, on this device's memory, in the
 * mm that opened the file.  The migration then takes the split path.  The
 * flag clears itself when it fires, and when the file is closed: it never
 * reaches another file, even of the same process.
 */
#define HMM_DMIRROR_FLAG_FAIL_ALLOC	_BITULL(0)
#define HMM_DMIRROR_FLAGS_ALL		HMM_DMIRROR_FLAG_FAIL_ALLOC

/*
 * Values returned in hmm_dmirror_cmd.ptr for HMM_DMIRROR_SNAPSHOT.
 * HMM_DMIRROR_PROT_ERROR: no valid mirror PTE for this page
 * HMM_DMIRROR_PROT_NONE: unpopulated PTE or PTE with no access
 * HMM_DMIRROR_PROT_READ: read-only PTE
 * HMM_DMIRROR_PROT_WRITE: read/write PTE
 * HMM_DMIRROR_PROT_PMD: PMD sized page is fully mapped by same permissions
 * HMM_DMIRROR_PROT_PUD: PUD sized page is fully mapped by same permissions
 * HMM_DMIRROR_PROT_ZERO: special read-only zero page
 * HMM_DMIRROR_PROT_DEV_PRIVATE_LOCAL: device private page on this device
 * HMM_DMIRROR_PROT_DEV_PRIVATE_REMOTE: device private page on another device
 * HMM_DMIRROR_PROT_DEV_COHERENT_*: device coherent page (not produced here)
 */
enum {
	HMM_DMIRROR_PROT_ERROR			= 0xFF,
	HMM_DMIRROR_PROT_NONE			= 0x00,
	HMM_DMIRROR_PROT_READ			= 0x01,
	HMM_DMIRROR_PROT_WRITE			= 0x02,
	HMM_DMIRROR_PROT_PMD			= 0x04,
	HMM_DMIRROR_PROT_PUD			= 0x08,
	HMM_DMIRROR_PROT_ZERO			= 0x10,
	HMM_DMIRROR_PROT_DEV_PRIVATE_LOCAL	= 0x20,
	HMM_DMIRROR_PROT_DEV_PRIVATE_REMOTE	= 0x30,
	HMM_DMIRROR_PROT_DEV_COHERENT_LOCAL	= 0x40,
	HMM_DMIRROR_PROT_DEV_COHERENT_REMOTE	= 0x50,
};

enum {
	/* 0 is reserved to catch uninitialized type fields */
	HMM_DMIRROR_MEMORY_DEVICE_PRIVATE = 1,
	HMM_DMIRROR_MEMORY_DEVICE_COHERENT,
};

#define DMIRROR_THP_STATS_VERSION	1

/**
 * struct dmirror_thp_stats - per-device counters (HMM_DMIRROR_STATS)
 * @version:           (in) DMIRROR_THP_STATS_VERSION; (out) the version filled
 * @size:              (in) sizeof(struct dmirror_thp_stats) of the caller
 * @thp_to_dev:        PMD-sized folios migrated to the device
 * @base_to_dev:       base pages migrated to the device
 * @thp_to_sys:        PMD-sized folios migrated to system memory (any path)
 * @base_to_sys:       base pages migrated to system memory (any path)
 * @split_migrate:     folios split during a migration (src/dst disagree)
 * @split_fault:       CPU faults that brought a device THP back as base pages
 * @split_callback:    folio_split callbacks seen (one per split folio)
 * @alloc_fail_inject: large allocations failed by HMM_DMIRROR_FLAG_FAIL_ALLOC
 * @alloc_fail_real:   large allocations that really failed
 * @cpu_faults:        migrate_to_ram calls (CPU faults on device pages)
 * @evicted_pages:     pages moved back by RELEASE or device removal
 * @capacity_pages:    device memory added so far, in pages (gauge)
 * @free_folios:       PMD-sized folios in the free folio pool (gauge)
 * @free_pages:        base pages in the free page pool (gauge)
 * @resident_pages:    device pages in use (gauge)
 *
 * Event counters count since load or the last HMM_DMIRROR_STATS_RESET;
 * gauges are not reset.  At rest the pools balance:
 * free_pages + free_folios * 512 + resident_pages == capacity_pages.
 */
struct dmirror_thp_stats {
	__u32		version;
	__u32		size;
	__u64		thp_to_dev;
	__u64		base_to_dev;
	__u64		thp_to_sys;
	__u64		base_to_sys;
	__u64		split_migrate;
	__u64		split_fault;
	__u64		split_callback;
	__u64		alloc_fail_inject;
	__u64		alloc_fail_real;
	__u64		cpu_faults;
	__u64		evicted_pages;
	__u64		capacity_pages;
	__u64		free_folios;
	__u64		free_pages;
	__u64		resident_pages;
};

/*
 * HMM_DMIRROR_STATS: read this device's counters.  EINVAL if @version is not
 * DMIRROR_THP_STATS_VERSION or @size is smaller than version 1's struct.
 * HMM_DMIRROR_STATS_RESET: zero the event counters.
 */
#define HMM_DMIRROR_STATS		_IOWR('H', 0x40, struct dmirror_thp_stats)
#define HMM_DMIRROR_STATS_RESET		_IO('H', 0x41)

/*
 * HMM_DMIRROR_PHASES: where the time of each migration path goes.  For
 * each path, @calls counts its calls (one per MIGRATE_TO_DEV or
 * MIGRATE_TO_SYS ioctl, one per CPU fault on a device page, one per
 * evicted PMD block) and @ns[path][phase] sums the nanoseconds spent in
 * each phase.  Zeroed with the event counters by HMM_DMIRROR_STATS_RESET.
 * EINVAL if @version is not DMIRROR_THP_PHASES_VERSION or @size is smaller
 * than the struct.
 *
 * Phases: SETUP is migrate_vma_setup() (or migrate_device_range()):
 * collecting and unmapping the source; ALLOC the destination folios; COPY
 * the data; PAGES migrate_vma_pages(); FINALIZE migrate_vma_finalize();
 * READBACK the device reading the range into cmd.ptr after MIGRATE_TO_DEV.
 */
enum {
	HMM_DMIRROR_PATH_TO_DEV,
	HMM_DMIRROR_PATH_TO_SYS,
	HMM_DMIRROR_PATH_FAULT,
	HMM_DMIRROR_PATH_EVICT,
	HMM_DMIRROR_PATH_NR,
};

enum {
	HMM_DMIRROR_PHASE_SETUP,
	HMM_DMIRROR_PHASE_ALLOC,
	HMM_DMIRROR_PHASE_COPY,
	HMM_DMIRROR_PHASE_PAGES,
	HMM_DMIRROR_PHASE_FINALIZE,
	HMM_DMIRROR_PHASE_READBACK,
	HMM_DMIRROR_PHASE_NR,
};

#define DMIRROR_THP_PHASES_VERSION	1

struct dmirror_thp_phases {
	__u32		version;
	__u32		size;
	__u64		calls[HMM_DMIRROR_PATH_NR];
	__u64		ns[HMM_DMIRROR_PATH_NR][HMM_DMIRROR_PHASE_NR];
};

#define HMM_DMIRROR_PHASES		_IOWR('H', 0x42, struct dmirror_thp_phases)

/* PMD-sized folios that HMM_DMIRROR_COPY_BENCH cycles over on each side. */
#define DMIRROR_THP_COPY_BENCH_FOLIOS	8

/**
 * struct dmirror_thp_copy_bench - argument of HMM_DMIRROR_COPY_BENCH
 * @ptr:        (in) a user buffer of DMIRROR_THP_COPY_BENCH_FOLIOS * 2 MiB,
 *              the destination of the copies to user space
 * @iters:      (in) PMD-sized folios to copy each way, 1 to 4096
 * @copy_ns:    (out) time of @iters folio copies with copy_highpage(), page
 *              by page, the copy that every migration does
 * @to_user_ns: (out) time of @iters folio copies into @ptr with
 *              copy_to_user(), page by page, the copy of READ and of the
 *              read-back after MIGRATE_TO_DEV
 *
 * The ceiling of the migration paths on this machine, measured with the
 * copies they do: each copy goes to and from folios that the previous one
 * did not touch, cycling over DMIRROR_THP_COPY_BENCH_FOLIOS of each.
 * Where @ptr sits is the caller's choice, as for any user buffer.  EINVAL
 * for @iters out of range, EFAULT for a bad @ptr, ENOMEM if the folios
 * cannot be had.
 */
struct dmirror_thp_copy_bench {
	__u64		ptr;
	__u64		iters;
	__u64		copy_ns;
	__u64		to_user_ns;
};

#define HMM_DMIRROR_COPY_BENCH		_IOWR('H', 0x43, struct dmirror_thp_copy_bench)

/* Slots of the per-order arrays: orders 0 to 15; x86-64 uses 0 to 9. */
#define DMIRROR_THP_NR_ORDERS		16
#define DMIRROR_THP_ORDER_STATS_VERSION	1

/**
 * struct dmirror_thp_order_stats - per-order counters (HMM_DMIRROR_ORDER_STATS)
 * @version:     (in) DMIRROR_THP_ORDER_STATS_VERSION; (out) the version filled
 * @size:        (in) sizeof(struct dmirror_thp_order_stats) of the caller
 * @max_order:   (out) the largest order the device allocates (the PMD order)
 * @to_dev:      folios of each order migrated to the device (order 0: base
 *               pages, as base_to_dev; the PMD order: as thp_to_dev)
 * @to_sys:      folios of each order migrated to system memory, by any path
 * @free_blocks: free blocks of each order in the device's pools (gauge)
 *
 * Event counters are zeroed by HMM_DMIRROR_STATS_RESET.  At rest the pools
 * balance: the sum of free_blocks[o] << o and resident_pages is
 * capacity_pages.
 */
struct dmirror_thp_order_stats {
	__u32		version;
	__u32		size;
	__u32		max_order;
	__u32		pad;
	__u64		to_dev[DMIRROR_THP_NR_ORDERS];
	__u64		to_sys[DMIRROR_THP_NR_ORDERS];
	__u64		free_blocks[DMIRROR_THP_NR_ORDERS];
};

/*
 * HMM_DMIRROR_ORDER_STATS: read this device's per-order counters.  EFAULT
 * for a bad pointer; EINVAL if @version is not
 * DMIRROR_THP_ORDER_STATS_VERSION or @size is smaller than the struct.
 */
#define HMM_DMIRROR_ORDER_STATS		_IOWR('H', 0x44, struct dmirror_thp_order_stats)

/*
 * HMM_DMIRROR_CPU_MAP: write one byte per page to @ptr, the HMM_DMIRROR_CPU_*
 * flags of what the CPU's page table maps there (0: nothing present: none,
 * swap, migration or device-private entries).  Nothing is faulted in, and
 * the table is read without its lock, as gup_fast() reads it: a snapshot,
 * like SNAPSHOT's.  cpages: pages reported.  It is a witness the driver
 * does not write of how the kernel mapped a folio back to system memory:
 * on arm64, a naturally aligned block of 16 PTEs (64 kB with 4 kB pages)
 * that map one large folio carries the contiguous bit (contpte), which no
 * other architecture reports.  Errnos: the common ones of a range, and
 * EINTR for a fatal signal while waiting for the mmap lock.
 */
#define HMM_DMIRROR_CPU_MAP		_IOWR('H', 0x45, struct hmm_dmirror_cmd)

enum {
	HMM_DMIRROR_CPU_PRESENT		= 0x01,	/* a present PTE or PMD */
	HMM_DMIRROR_CPU_PMD		= 0x02,	/* mapped by a PMD */
	HMM_DMIRROR_CPU_CONT		= 0x04,	/* a PTE with the contiguous bit */
};

#endif /* _UAPI_DMIRROR_THP_H */
