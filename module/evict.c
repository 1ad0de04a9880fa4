// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp split and eviction.
 *
 * Split: dev_pagemap_ops.folio_split is called for every new folio while the
 * core splits a large device folio, then once with a NULL tail.  The backing
 * store is addressed by device pfn (see devmem.c), so it needs no change; the
 * callback only points the new folio's zone_device_data at its chunk, and
 * counts the split.  It runs with IRQs off and spinlocks held: it neither
 * sleeps nor allocates, and touches nothing but the new folio and a counter.
 *
 * Eviction (HMM_DMIRROR_RELEASE, device removal): every resident folio goes
 * back to system memory with migrate_device_range(), one PMD block at a time
 * so the src/dst arrays stay PMD-sized.  A device THP comes back as a system
 * THP, or as base pages (the core then splits it) when no PMD-order folio
 * can be had; base pages are allocated with __GFP_NOFAIL, so nothing is lost.
 *
 * Locking: eviction runs under dmirror_device.devmem_lock, so chunks cannot
 * come or go meanwhile; it takes dmirror_device.lock only to skip blocks
 * that sit whole in the folio pool.  Pages that are busy (locked by a
 * concurrent migration) are skipped; device removal retries until the chunk
 * is empty.
 */
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "dmirror.h"

void dmirror_folio_split(struct folio *head, struct folio *tail)
{
	struct dmirror_chunk *chunk = dmirror_page_chunk(folio_page(head, 0));

	if (!tail) {
		dmirror_count(chunk->mdevice, DSTAT_SPLIT_CALLBACK, 1);
		return;
	}
	folio_set_zone_device_data(tail, chunk);
}

static bool dmirror_block_is_free(struct dmirror_chunk *chunk,
				  unsigned long blk)
{
	struct dmirror_device *mdevice = chunk->mdevice;
	bool free;

	spin_lock_irq(&mdevice->lock);
	free = test_bit(blk, chunk->free_folios);
	spin_unlock_irq(&mdevice->lock);
	return free;
}

/* Caller holds mdevice->devmem_lock. */
void dmirror_evict_chunk(struct dmirror_chunk *chunk)
{
	struct dmirror_device *mdevice = chunk->mdevice;
	unsigned long *src, *dst;
	unsigned long blk;

	src = kvcalloc(HPAGE_PMD_NR, sizeof(*src), GFP_KERNEL | __GFP_NOFAIL);
	dst = kvcalloc(HPAGE_PMD_NR, sizeof(*dst), GFP_KERNEL | __GFP_NOFAIL);

	for (blk = 0; blk < DMIRROR_CHUNK_BLOCKS; blk++) {
		unsigned long pfn = chunk->base_pfn + blk * HPAGE_PMD_NR;
		unsigned long moved;

		if (dmirror_block_is_free(chunk, blk))
			continue;
		migrate_device_range(src, pfn, HPAGE_PMD_NR);
		dmirror_answer_to_sys(mdevice, NULL, 0, src, dst, HPAGE_PMD_NR,
				      DSTAT_SPLIT_MIGRATE);
		migrate_device_pages(src, dst, HPAGE_PMD_NR);
		moved = dmirror_count_to_sys(mdevice, src, dst, HPAGE_PMD_NR);
		dmirror_count(mdevice, DSTAT_EVICTED_PAGES, moved);
		migrate_device_finalize(src, dst, HPAGE_PMD_NR);
		cond_resched();
	}
	kvfree(dst);
	kvfree(src);
}

/* HMM_DMIRROR_RELEASE: evict every page of the device; chunks stay. */
void dmirror_evict_all(struct dmirror_device *mdevice)
{
	unsigned int i;

	mutex_lock(&mdevice->devmem_lock);
	for (i = 0; i < mdevice->nr_chunks; i++)
		dmirror_evict_chunk(mdevice->chunks[i]);
	mutex_unlock(&mdevice->devmem_lock);
}
