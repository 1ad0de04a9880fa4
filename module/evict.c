// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp eviction: HMM_DMIRROR_RELEASE and device removal.
 *
 * Every resident folio goes back to system memory with migrate_device_range(),
 * one PMD block at a time so the src/dst arrays stay PMD-sized.  A device THP
 * comes back as a system THP, or as base pages (the core then splits it) when
 * no PMD-order folio can be had; base pages are allocated with __GFP_NOFAIL,
 * so nothing is lost.
 *
 * Locking: eviction runs under dmirror_device.devmem_lock, so chunks cannot
 * come or go meanwhile; it takes dmirror_device.lock only to skip blocks
 * that sit whole in the folio pool.  Pages that are busy (locked by a
 * concurrent migration) are skipped; device removal retries, for a bounded
 * time, until the chunk is empty.
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "dmirror.h"

/* Device removal gives a busy page this long to be freed. */
#define DMIRROR_DRAIN_TRIES	500
#define DMIRROR_DRAIN_WAIT_MS	20

/*
 * For race tests: hold each evicted block unmapped this long before copying
 * it, so that its process can exit meanwhile (the life suite's evict_race).
 */
static unsigned int evict_delay_ms;
module_param(evict_delay_ms, uint, 0644);
MODULE_PARM_DESC(evict_delay_ms,
		 "Test hook: milliseconds between unmapping and copying an evicted block (default 0)");

/* Evict every resident block of @chunk once; caller holds devmem_lock. */
static void dmirror_evict_chunk(struct dmirror_migrate_ctx *ctx,
				struct dmirror_chunk *chunk)
{
	struct dmirror_device *mdevice = chunk->mdevice;
	unsigned long *src, *dst;
	unsigned long blk;

	lockdep_assert_held(&mdevice->devmem_lock);
	src = kvcalloc(HPAGE_PMD_NR, sizeof(*src), GFP_KERNEL | __GFP_NOFAIL);
	dst = kvcalloc(HPAGE_PMD_NR, sizeof(*dst), GFP_KERNEL | __GFP_NOFAIL);

	for (blk = 0; blk < DMIRROR_CHUNK_BLOCKS; blk++) {
		unsigned long pfn = chunk->base_pfn + blk * HPAGE_PMD_NR;
		unsigned long moved;

		if (dmirror_block_is_free(chunk, blk))
			continue;
		dmirror_clock_start(ctx, HMM_DMIRROR_PATH_EVICT);
		migrate_device_range(src, pfn, HPAGE_PMD_NR);
		if (READ_ONCE(evict_delay_ms))
			msleep(READ_ONCE(evict_delay_ms));
		dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_SETUP);
		dmirror_alloc_copy_sys(ctx, NULL, 0, src, dst, HPAGE_PMD_NR,
				       DSTAT_SPLIT_MIGRATE);
		migrate_device_pages(src, dst, HPAGE_PMD_NR);
		dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_PAGES);
		moved = dmirror_count_to_sys(mdevice, src, dst, HPAGE_PMD_NR);
		dmirror_count(mdevice, DSTAT_EVICTED_PAGES, moved);
		migrate_device_finalize(src, dst, HPAGE_PMD_NR);
		dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_FINALIZE);
		cond_resched();
	}
	kvfree(dst);
	kvfree(src);
}

/**
 * dmirror_evict_all() - HMM_DMIRROR_RELEASE: evict every page of the device
 * @mdevice: the device; its chunks stay
 * @dmirror: the file that asked (its HMM_DMIRROR_FLAG_FAIL_ALLOC applies)
 */
void dmirror_evict_all(struct dmirror_device *mdevice, struct dmirror *dmirror)
{
	struct dmirror_migrate_ctx ctx = {
		.mdevice = mdevice,
		.dmirror = dmirror,
	};
	unsigned int i;

	mutex_lock(&mdevice->devmem_lock);
	for (i = 0; i < mdevice->nr_chunks; i++)
		dmirror_evict_chunk(&ctx, mdevice->chunks[i]);
	mutex_unlock(&mdevice->devmem_lock);
}

/* Pages of the device still in use. */
static unsigned long dmirror_resident(struct dmirror_device *mdevice)
{
	unsigned long resident = 0;
	unsigned int i;

	spin_lock_irq(&mdevice->lock);
	for (i = 0; i < mdevice->nr_chunks; i++)
		resident += mdevice->chunks[i]->resident;
	spin_unlock_irq(&mdevice->lock);
	return resident;
}

/**
 * dmirror_evict_drain() - device removal: evict until nothing is resident
 * @mdevice: the device, stopped (dmirror_devmem_stop())
 *
 * A page that a concurrent user still holds cannot move; it is retried for
 * DMIRROR_DRAIN_TRIES * DMIRROR_DRAIN_WAIT_MS, then given up with an error,
 * so that a leaked reference shows up as a message instead of a hung rmmod.
 *
 * Return: 0, or -EBUSY if pages are still resident.
 */
int dmirror_evict_drain(struct dmirror_device *mdevice)
{
	struct dmirror_migrate_ctx ctx = { .mdevice = mdevice };
	unsigned long resident;
	unsigned int tries, i;

	for (tries = 0; ; tries++) {
		mutex_lock(&mdevice->devmem_lock);
		for (i = 0; i < mdevice->nr_chunks; i++)
			dmirror_evict_chunk(&ctx, mdevice->chunks[i]);
		mutex_unlock(&mdevice->devmem_lock);
		resident = dmirror_resident(mdevice);
		if (!resident)
			return 0;
		if (tries == DMIRROR_DRAIN_TRIES)
			break;
		msleep(DMIRROR_DRAIN_WAIT_MS);
	}
	pr_err("dmirror_thp: %s: %lu pages still in use after %u ms of eviction\n",
	       dev_name(&mdevice->device), resident,
	       DMIRROR_DRAIN_TRIES * DMIRROR_DRAIN_WAIT_MS);
	return -EBUSY;
}
