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
 * Locking, outermost first:
 *   mmap_lock of the mirrored mm
 *     dmirror_device.devmem_lock (mutex): adding and removing chunks, and
 *     eviction.  Taken under mmap_lock when a migration grows the pools.
 *       dmirror_device.lock (spinlock, IRQ-safe): the pools, the per-chunk
 *       bitmaps and counts, and the published chunk array.  Held only for
 *       bitmap work; nothing sleeps or allocates under it.
 *   dmirror.mutex: the mirror page table (both xarrays).  Taken by the mmu
 *   interval notifier, so nothing that can trigger an invalidation of the
 *   mirrored mm (page faults, reclaim: GFP_KERNEL allocations) may run under
 *   it; page table stores use GFP_ATOMIC.
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
#include <linux/memremap.h>
#include <linux/migrate.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>

#include "dmirror_thp_uapi.h"

#define DMIRROR_NDEVICES	2
#define DMIRROR_CHUNK_SIZE	(256UL << 20)
#define DMIRROR_CHUNK_PAGES	(DMIRROR_CHUNK_SIZE >> PAGE_SHIFT)
#define DMIRROR_CHUNK_BLOCKS	(DMIRROR_CHUNK_PAGES / HPAGE_PMD_NR)

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

/* Bits of dmirror_device.flags. */
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
 * @free_folios: bitmap of PMD blocks that sit whole in the folio pool
 * @free_pages:  bitmap of pfns that sit in the base page pool
 * @nr_free_folios: bits set in @free_folios
 * @nr_free_pages:  bits set in @free_pages
 * @resident:    pages handed out and not yet freed
 * @removing:    set when the chunk is being torn down: no more allocations
 *
 * Every pfn is in exactly one of: a free folio block, the free page pool, or
 * resident.  The bitmaps and counts are protected by dmirror_device.lock.
 */
struct dmirror_chunk {
	struct dev_pagemap	pagemap;
	struct dmirror_device	*mdevice;
	unsigned long		base_pfn;
	struct page		**backing;
	unsigned long		*free_folios;
	unsigned long		*free_pages;
	unsigned long		nr_free_folios;
	unsigned long		nr_free_pages;
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
 * @lock:        protects the pools (see struct dmirror_chunk)
 * @flags:       HMM_DMIRROR_FLAG_* state (DMIRROR_FLAG_*_BIT)
 * @stats:       event counters (enum dmirror_stat)
 * @registered:  the device node exists
 */
struct dmirror_device {
	struct cdev		cdevice;
	struct device		device;
	struct mutex		devmem_lock;	/* chunk add/remove, eviction */
	struct dmirror_chunk	**chunks;
	unsigned int		nr_chunks;
	unsigned int		max_chunks;
	spinlock_t		lock;		/* the pools, @chunks */
	unsigned long		flags;
	atomic64_t		stats[DSTAT_NR];
	bool			registered;
};

/**
 * struct dmirror - the mirror of one process (one open file)
 * @mdevice:  the device
 * @notifier: interval notifier over the whole address space of @notifier.mm
 * @mutex:    protects @pt and @pmd_pt
 * @pt:       per-page entries, keyed by virtual pfn: tagged struct page *
 * @pmd_pt:   PMD-level entries, keyed by virtual pfn >> HPAGE_PMD_ORDER: the
 *            tagged head page of a PMD-mapped folio.  A per-page entry in
 *            @pt takes precedence over the PMD entry that covers it.
 */
struct dmirror {
	struct dmirror_device		*mdevice;
	struct mmu_interval_notifier	notifier;
	struct mutex			mutex;	/* @pt, @pmd_pt */
	struct xarray			pt;
	struct xarray			pmd_pt;
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

/* devmem.c: pools and backing store */
extern const struct dev_pagemap_ops dmirror_devmem_ops;
int dmirror_devmem_init(struct dmirror_device *mdevice, unsigned int max_chunks);
void dmirror_devmem_fini(struct dmirror_device *mdevice);
struct page *dmirror_devmem_alloc(struct dmirror_device *mdevice,
				  unsigned int order);
bool dmirror_is_local_page(struct dmirror_device *mdevice, struct page *page);
struct page *dmirror_backing_page(struct page *dpage);
void dmirror_pool_gauges(struct dmirror_device *mdevice,
			 struct dmirror_thp_stats *st);
bool dmirror_fail_large_alloc(struct dmirror_device *mdevice);

/* mirror.c: the simulated device page table */
extern const struct mmu_interval_notifier_ops dmirror_min_ops;
int dmirror_read(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);
int dmirror_write(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);
int dmirror_read_back(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd,
		      bool settle);
int dmirror_exclusive(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);
int dmirror_check_exclusive(struct dmirror *dmirror,
			    struct hmm_dmirror_cmd *cmd);
int dmirror_hmm_fault_locked(struct dmirror *dmirror, struct hmm_range *range);
int dmirror_pt_store(struct dmirror *dmirror, unsigned long vpfn,
		     struct page *page, unsigned long tag, bool pmd);

/* snapshot.c: HMM_DMIRROR_SNAPSHOT */
int dmirror_snapshot(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd);

/* migrate.c: migration through the ioctls, and device to system copies */
int dmirror_migrate_to_device(struct dmirror *dmirror,
			      struct hmm_dmirror_cmd *cmd);
int dmirror_migrate_to_system(struct dmirror *dmirror,
			      struct hmm_dmirror_cmd *cmd);
int dmirror_answer_to_sys(struct dmirror_device *mdevice,
			  struct vm_area_struct *vma, unsigned long start,
			  const unsigned long *src, unsigned long *dst,
			  unsigned long npages, enum dmirror_stat split_stat);
unsigned long dmirror_count_to_sys(struct dmirror_device *mdevice,
				   const unsigned long *src,
				   const unsigned long *dst,
				   unsigned long npages);

/* fault.c: CPU faults on device pages */
vm_fault_t dmirror_devmem_fault(struct vm_fault *vmf);

/* evict.c: folio split callback and eviction */
void dmirror_folio_split(struct folio *head, struct folio *tail);
void dmirror_evict_chunk(struct dmirror_chunk *chunk);
void dmirror_evict_all(struct dmirror_device *mdevice);

#endif /* _DMIRROR_THP_H */
