/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmirror-thp: shared definitions of the THP-aware HMM mirror test device.
 *
 * Objects:
 *   struct dmirror_device  one per /dev/hmm_dmirrorN; owns the device memory
 *                          (chunks, pools) and the counters.
 *   struct dmirror_chunk   one memremap_pages() range of device-private
 *                          memory with its pool bitmaps and backing store.
 *   struct dmirror         one per open file; the mirror of the opener's mm
 *                          (the simulated device page table).
 *
 * Files, each calling only the ones below it:
 *   chrdev.c    module, device nodes, ioctl dispatch
 *   snapshot.c  HMM_DMIRROR_SNAPSHOT
 *   mirror.c    the device page table: READ, READ_UNLOCKED, WRITE, EXCLUSIVE,
 *               read-back
 *   pgmap.c     dev_pagemap_ops: CPU faults, folio split, folio free
 *   evict.c     eviction (RELEASE, device removal)
 *   migrate.c   the migrate_vma loop, and the destinations: allocation, copy
 *   devmem.c    the allocator: chunks, pools, backing store
 *   bench.c     the copy ceiling: HMM_DMIRROR_COPY_BENCH
 *   clock.c     the phase clock: HMM_DMIRROR_PHASES and the trace events
 *               (trace.h)
 *   copy.c      page copies to and from user space
 *   compat.c    hmm_range_fault_unlocked_timeout() where the tree lacks it
 *               (compat.h: the 7.3 API on 6.12, from Kbuild's probes)
 *
 * Locking, outermost first:
 *   mmap_lock of the mirrored mm
 *     dmirror_device.devmem_lock (mutex): adding and removing chunks, and
 *     eviction.  Taken under mmap_lock when a migration grows the pools.
 *       dmirror_device.lock (spinlock, IRQ-safe): the pools, the per-chunk
 *       bitmaps and counts, and the published chunk array.  Held only for
 *       bitmap work; nothing sleeps or allocates under it.
 *   dmirror.mutex: the mirror page table (its xarray, whose xa_lock nests
 *   inside for the stores and the erase of a range).  Taken by the mmu
 *   interval notifier, so nothing that can trigger an invalidation of the
 *   mirrored mm (page faults, reclaim: GFP_KERNEL allocations) may run under
 *   it; page table stores use GFP_ATOMIC.
 *   dmirror_device.files_lock (spinlock): the list of open files.
 * Counters are atomic64_t and need no lock.  The backing page pointer of a
 * device pfn is owned by whoever owns the pfn (the allocator while it is
 * free, the folio holder while it is in use), so it needs no lock either.
 */
#ifndef _DMIRROR_THP_H
#define _DMIRROR_THP_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/huge_mm.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/memremap.h>
#include <linux/migrate.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>

#include "compat.h"
#include "dmirror_thp_uapi.h"

#define DMIRROR_NDEVICES	2
#define DMIRROR_CHUNK_SIZE	(256UL << 20)
#define DMIRROR_CHUNK_PAGES	(DMIRROR_CHUNK_SIZE >> PAGE_SHIFT)
#define DMIRROR_CHUNK_BLOCKS	(DMIRROR_CHUNK_PAGES / HPAGE_PMD_NR)
/* Folio orders the device allocates: 0 (base pages) to HPAGE_PMD_ORDER. */
#define DMIRROR_NR_ORDERS	(HPAGE_PMD_ORDER + 1)

/* Tags of mirror page table entries (xa_tag_pointer()). */
#define DPT_XA_TAG_READ		0UL
#define DPT_XA_TAG_ATOMIC	1UL
#define DPT_XA_TAG_WRITE	3UL

/* Event counters, zeroed by HMM_DMIRROR_STATS_RESET. */
enum dmirror_stat {
	DSTAT_THP_TO_DEV,
	DSTAT_BASE_TO_DEV,
	DSTAT_THP_TO_SYS,
	DSTAT_BASE_TO_SYS,
	DSTAT_SPLIT_MIGRATE,
	DSTAT_SPLIT_FAULT,
	DSTAT_SPLIT_CALLBACK,
	DSTAT_ALLOC_FAIL_INJECT,
	DSTAT_ALLOC_FAIL_REAL,
	DSTAT_CPU_FAULTS,
	DSTAT_EVICTED_PAGES,
	DSTAT_NR,
};

/* Bits of dmirror.flags. */
#define DMIRROR_FLAG_FAIL_ALLOC_BIT	0

struct dmirror_device;
struct hmm_range;

/**
 * struct dmirror_chunk - one range of device-private memory
 * @pagemap:     the ZONE_DEVICE pagemap (owner: the dmirror_device)
 * @mdevice:     the device the chunk belongs to
 * @base_pfn:    first device pfn; PMD aligned
 * @backing:     system page holding the data of each device pfn, indexed
 *               by pfn - @base_pfn; NULL while the pfn is free
 * @free:        per order, a bitmap of the naturally aligned blocks of that
 *               order that are free (bit i: pfns base_pfn + (i << order) on);
 *               free[HPAGE_PMD_ORDER] is the folio pool
 * @nr_free:     bits set in each @free bitmap
 * @backing_whole: bitmap of the first pfns of folios whose backing is one
 *               unsplit block (atomic bit operations, no lock)
 * @resident:    pages handed out and not yet freed
 * @removing:    set when the chunk is being torn down: no more allocations
 *
 * Every pfn is in exactly one of: one free block of one order, or resident.
 * The bitmaps and counts are protected by dmirror_device.lock.
 */
struct dmirror_chunk {
	struct dev_pagemap	pagemap;
	struct dmirror_device	*mdevice;
	unsigned long		base_pfn;
	struct page		**backing;
	unsigned long		*free[DMIRROR_NR_ORDERS];
	unsigned long		nr_free[DMIRROR_NR_ORDERS];
	unsigned long		*backing_whole;
	unsigned long		resident;
	bool			removing;
};

/**
 * struct dmirror_device - one mirror device
 * @cdevice:     the character device
 * @device:      the struct device behind /dev/hmm_dmirrorN
 * @devmem_lock: serialises chunk addition, removal and eviction
 * @chunks:      chunk array (@max_chunks slots), published under @lock
 * @nr_chunks:   slots in use
 * @max_chunks:  bound from the max_mb module parameter
 * @pgmap_ops:   the dev_pagemap_ops of every chunk
 * @lock:        protects the pools (see struct dmirror_chunk)
 * @files:       open files (struct dmirror.link)
 * @files_lock:  protects @files
 * @stats:       event counters (enum dmirror_stat)
 * @order_to_dev: folios of each order migrated to the device
 * @order_to_sys: folios of each order migrated to system memory
 * @path_calls:  calls of each migration path (HMM_DMIRROR_PATH_*)
 * @phase_ns:    time of each path in each phase (HMM_DMIRROR_PHASE_*)
 * @registered:  the device node exists
 */
struct dmirror_device {
	struct cdev		cdevice;
	struct device		device;
	struct mutex		devmem_lock;	/* chunk add/remove, eviction */
	struct dmirror_chunk	**chunks;
	unsigned int		nr_chunks;
	unsigned int		max_chunks;
	const struct dev_pagemap_ops *pgmap_ops;
	spinlock_t		lock;		/* the pools, @chunks */
	struct list_head	files;
	spinlock_t		files_lock;	/* @files */
	atomic64_t		stats[DSTAT_NR];
	atomic64_t		order_to_dev[DMIRROR_NR_ORDERS];
	atomic64_t		order_to_sys[DMIRROR_NR_ORDERS];
	atomic64_t		path_calls[HMM_DMIRROR_PATH_NR];
	atomic64_t		phase_ns[HMM_DMIRROR_PATH_NR][HMM_DMIRROR_PHASE_NR];
	bool			registered;
};

/**
 * struct dmirror - the mirror of one process (one open file)
 * @mdevice:  the device
 * @notifier: interval notifier over the whole address space of @notifier.mm
 * @mutex:    protects @pt
 * @pt:       the mirror page table, keyed by virtual pfn: multi-index
 *            entries, each a tagged struct page * that maps an aligned
 *            run of 1 << order pages (see mirror.c)
 * @link:     in dmirror_device.files
 * @flags:    HMM_DMIRROR_FLAG_* of this file (DMIRROR_FLAG_*_BIT)
 */
struct dmirror {
	struct dmirror_device		*mdevice;
	struct mmu_interval_notifier	notifier;
	struct mutex			mutex;	/* @pt */
	struct xarray			pt;
	struct list_head		link;
	unsigned long			flags;
};

static inline void dmirror_count(struct dmirror_device *mdevice,
				 enum dmirror_stat stat, long nr)
{
	atomic64_add(nr, &mdevice->stats[stat]);
}

static inline struct dmirror_chunk *dmirror_page_chunk(struct page *page)
{
	return container_of(page_pgmap(page), struct dmirror_chunk, pagemap);
}

/**
 * struct dmirror_migrate_ctx - on whose behalf a migration runs
 * @mdevice: the device
 * @dmirror: the open file of an ioctl, or NULL
 * @mm:      the mm of a CPU fault, or NULL
 * @path:    HMM_DMIRROR_PATH_*, for the phase clock
 * @t:       ktime_get_ns() at the start of the current phase
 *
 * HMM_DMIRROR_FLAG_FAIL_ALLOC is scoped to an open file: an ioctl consumes
 * its own file's flag, a CPU fault the flag of a file of its mm, eviction at
 * device removal none.
 */
struct dmirror_migrate_ctx {
	struct dmirror_device	*mdevice;
	struct dmirror		*dmirror;
	struct mm_struct	*mm;
	unsigned int		path;
	u64			t;
};

/* copy.c: page copies to and from user space */
int dmirror_copy_page_to_user(void __user *to, struct page *page);
int dmirror_copy_page_from_user(void *to, const void __user *from);

/* clock.c: the phase clock, counted and traced */
void dmirror_clock_start(struct dmirror_migrate_ctx *ctx, unsigned int path);
void dmirror_clock_lap(struct dmirror_migrate_ctx *ctx, unsigned int phase);
void dmirror_trace_window(struct dmirror_migrate_ctx *ctx,
			  const struct migrate_vma *args);

/* bench.c: the copy ceiling, HMM_DMIRROR_COPY_BENCH */
int dmirror_copy_bench(struct dmirror_thp_copy_bench *cb);

/* devmem.c: the allocator */
int dmirror_devmem_init(struct dmirror_device *mdevice, unsigned int max_chunks,
			const struct dev_pagemap_ops *ops);
void dmirror_devmem_stop(struct dmirror_device *mdevice);
void dmirror_devmem_fini(struct dmirror_device *mdevice);
struct page *dmirror_devmem_alloc(struct dmirror_device *mdevice,
				  unsigned int order);
void dmirror_devmem_free(struct folio *folio);
void dmirror_backing_split(struct page *page);
bool dmirror_block_is_free(struct dmirror_chunk *chunk, unsigned long blk);
bool dmirror_is_local_page(struct dmirror_device *mdevice, struct page *page);
struct page *dmirror_backing_page(struct page *dpage);
void dmirror_pool_gauges(struct dmirror_device *mdevice,
			 struct dmirror_thp_stats *st);
void dmirror_pool_order_gauges(struct dmirror_device *mdevice,
			       struct dmirror_thp_order_stats *os);

/* migrate.c: the migrate_vma loop, allocation and copy of the destinations */
bool dmirror_fail_large_alloc(struct dmirror_migrate_ctx *ctx);
int dmirror_migrate_range(struct dmirror_migrate_ctx *ctx, unsigned long start,
			  unsigned long end, bool to_dev, u64 *moved);
int dmirror_alloc_copy_sys(struct dmirror_migrate_ctx *ctx,
			   struct vm_area_struct *vma, unsigned long start,
			   const unsigned long *src, unsigned long *dst,
			   unsigned long npages, enum dmirror_stat split_stat);
unsigned long dmirror_count_to_sys(struct dmirror_device *mdevice,
				   const unsigned long *src,
				   const unsigned long *dst,
				   unsigned long npages);
/* evict.c: eviction */
void dmirror_evict_all(struct dmirror_device *mdevice, struct dmirror *dmirror);
int dmirror_evict_drain(struct dmirror_device *mdevice);

/* pgmap.c: dev_pagemap_ops */
extern const struct dev_pagemap_ops dmirror_pgmap_ops;

/* mirror.c: the simulated device page table */
extern const struct mmu_interval_notifier_ops dmirror_min_ops;
int dmirror_read(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);
int dmirror_write(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);
int dmirror_read_back(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd,
		      bool retry);
int dmirror_exclusive(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);
int dmirror_check_exclusive(struct dmirror *dmirror,
			    struct hmm_dmirror_cmd *cmd);
int dmirror_read_unlocked(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);
int dmirror_hmm_fault_and_lock(struct dmirror *dmirror,
			       struct hmm_range *range, bool unlocked);

/* snapshot.c: HMM_DMIRROR_SNAPSHOT and HMM_DMIRROR_CPU_MAP */
int dmirror_snapshot(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);
int dmirror_cpu_map(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);

#endif /* _DMIRROR_THP_H */
