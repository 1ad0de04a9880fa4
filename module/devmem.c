// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp device memory: chunks, the free folio pool, the free page pool
 * and the backing store.
 *
 * A chunk is DMIRROR_CHUNK_SIZE of device-private struct pages.  Each pfn is
 * in exactly one place: a free block of the per-order pools, or resident
 * (handed out in a folio).  The pools are a buddy allocator over orders 0 to
 * HPAGE_PMD_ORDER: a free block of order o is naturally aligned and is one
 * bit in the chunk's bitmap of that order.  An allocation of order o takes a
 * free block of the smallest order at or above o and gives the halves it
 * does not need back to the lower orders; a freed block merges with its
 * buddy while the buddy is free, so a PMD block whose 512 pages are all free
 * again is one free PMD-order block (the folio pool).  When no block fits
 * the device grows by one chunk, up to the max_mb module parameter.
 *
 * The data of device pfn P lives in the system page chunk->backing[P - base]:
 * pure arithmetic, one page per device pfn, which for a folio is usually
 * one block of its order (see dmirror_backing_alloc()).
 *
 * The dev_pagemap_ops of the chunks come from above (pgmap.c), so that the
 * allocator calls nothing of the module.
 *
 * Locking: dmirror_device.devmem_lock (mutex) serialises chunk addition and
 * removal; dmirror_device.lock (IRQ-safe spinlock) protects the bitmaps, the
 * per-chunk counts and the chunk array.  page_free may run in any context
 * that drops the last folio reference, so the pool only ever spins and never
 * allocates.  Backing pages are allocated before a pfn leaves the allocator's
 * hands and freed by page_free before the pfn returns to a pool.
 */
#include <linux/bitmap.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/ioport.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "dmirror.h"

static void dmirror_backing_free(struct dmirror_chunk *chunk,
				 unsigned long off, unsigned long nr)
{
	unsigned long i;

	if (nr > 1 && test_and_clear_bit(off, chunk->backing_whole)) {
		struct page *block = chunk->backing[off];

		set_page_private(block, 0);
		__free_pages(block, ilog2(nr));
		nr = 0;
	}
	for (i = 0; i < nr; i++) {
		if (chunk->backing[off + i])
			__free_page(chunk->backing[off + i]);
		chunk->backing[off + i] = NULL;
	}
}

/*
 * One backing page per device pfn.  For a folio, try one physically
 * contiguous block first: one allocation and one free instead of one per
 * page.  If the device folio is split, so is the block (split_page()), and
 * its pages are then freed one by one with the new folios.  The first page
 * of a block holds the block's order in its private field.
 */
static int dmirror_backing_alloc(struct dmirror_chunk *chunk,
				 unsigned long off, unsigned int order)
{
	unsigned long i, nr = 1UL << order;
	struct page *page;

	if (order) {
		page = alloc_pages(GFP_HIGHUSER | __GFP_NOWARN | __GFP_NORETRY,
				   order);
		if (page) {
			set_page_private(page, order);
			for (i = 0; i < nr; i++)
				chunk->backing[off + i] = page + i;
			set_bit(off, chunk->backing_whole);
			return 0;
		}
	}
	for (i = 0; i < nr; i++) {
		page = alloc_page(GFP_HIGHUSER | __GFP_NOWARN);
		if (!page) {
			dmirror_backing_free(chunk, off, i);
			return -ENOMEM;
		}
		chunk->backing[off + i] = page;
	}
	return 0;
}

/**
 * dmirror_backing_split() - the device folio at @page is being split
 * @page: its first page
 *
 * Splits the block that backs it, if it is one, so that each page can be
 * freed on its own.  Called from dev_pagemap_ops.folio_split, with IRQs off:
 * split_page() neither sleeps nor allocates.
 */
void dmirror_backing_split(struct page *page)
{
	struct dmirror_chunk *chunk = dmirror_page_chunk(page);
	unsigned long off = page_to_pfn(page) - chunk->base_pfn;
	struct page *block;

	if (!test_and_clear_bit(off, chunk->backing_whole))
		return;
	block = chunk->backing[off];
	split_page(block, page_private(block));
	set_page_private(block, 0);
}

/* Take free block @idx of @order from @chunk's pool; caller holds the lock. */
static void dmirror_pool_clear(struct dmirror_chunk *chunk, unsigned int order,
			       unsigned long idx)
{
	lockdep_assert_held(&chunk->mdevice->lock);
	__clear_bit(idx, chunk->free[order]);
	chunk->nr_free[order]--;
}

static void dmirror_pool_set(struct dmirror_chunk *chunk, unsigned int order,
			     unsigned long idx)
{
	lockdep_assert_held(&chunk->mdevice->lock);
	__set_bit(idx, chunk->free[order]);
	chunk->nr_free[order]++;
}

/*
 * Take a free block of @order from the pools: the smallest free block that
 * fits, in any chunk, broken down to @order.  Returns the chunk and sets
 * *off, or NULL.  Caller holds mdevice->lock.
 */
static struct dmirror_chunk *dmirror_pool_take(struct dmirror_device *mdevice,
					       unsigned int order,
					       unsigned long *off)
{
	struct dmirror_chunk *chunk;
	unsigned int i, o;
	unsigned long idx;

	lockdep_assert_held(&mdevice->lock);

	for (o = order; o <= HPAGE_PMD_ORDER; o++) {
		for (i = 0; i < mdevice->nr_chunks; i++) {
			chunk = mdevice->chunks[i];
			if (!chunk->removing && chunk->nr_free[o])
				goto found;
		}
	}
	return NULL;

found:
	idx = find_first_bit(chunk->free[o], DMIRROR_CHUNK_PAGES >> o);
	dmirror_pool_clear(chunk, o, idx);
	*off = idx << o;
	/* Give back the upper half at each order on the way down. */
	while (o > order) {
		o--;
		dmirror_pool_set(chunk, o, (*off >> o) + 1);
	}
	chunk->resident += 1UL << order;
	return chunk;
}

/* Give the block of @order at @off back to the pools, merging buddies. */
static void dmirror_pool_put(struct dmirror_chunk *chunk, unsigned long off,
			     unsigned int order)
{
	struct dmirror_device *mdevice = chunk->mdevice;
	unsigned long flags;

	spin_lock_irqsave(&mdevice->lock, flags);
	chunk->resident -= 1UL << order;
	while (order < HPAGE_PMD_ORDER &&
	       test_bit((off >> order) ^ 1, chunk->free[order])) {
		dmirror_pool_clear(chunk, order, (off >> order) ^ 1);
		off &= ~((2UL << order) - 1);
		order++;
	}
	dmirror_pool_set(chunk, order, off >> order);
	spin_unlock_irqrestore(&mdevice->lock, flags);
}

static void dmirror_chunk_free(struct dmirror_chunk *chunk)
{
	unsigned int o;

	bitmap_free(chunk->backing_whole);
	for (o = 0; o < DMIRROR_NR_ORDERS; o++)
		bitmap_free(chunk->free[o]);
	kvfree(chunk->backing);
	kfree(chunk);
}

/*
 * Grow the device by one chunk.  @seen is the chunk count the caller found
 * exhausted: if another thread grew the device meanwhile, just retry.
 */
static int dmirror_chunk_add(struct dmirror_device *mdevice, unsigned int seen)
{
	struct dmirror_chunk *chunk;
	struct resource *res;
	unsigned int o;
	void *ptr;
	int ret = 0;

	mutex_lock(&mdevice->devmem_lock);
	if (READ_ONCE(mdevice->nr_chunks) != seen)
		goto out;
	ret = -ENOMEM;
	if (mdevice->nr_chunks >= mdevice->max_chunks)
		goto out;

	chunk = kzalloc_obj(*chunk, GFP_KERNEL);
	if (!chunk)
		goto out;
	chunk->backing = kvcalloc(DMIRROR_CHUNK_PAGES, sizeof(*chunk->backing),
				  GFP_KERNEL);
	chunk->backing_whole = bitmap_zalloc(DMIRROR_CHUNK_PAGES, GFP_KERNEL);
	if (!chunk->backing || !chunk->backing_whole)
		goto err_free;
	for (o = 0; o < DMIRROR_NR_ORDERS; o++) {
		chunk->free[o] = bitmap_zalloc(DMIRROR_CHUNK_PAGES >> o,
					       GFP_KERNEL);
		if (!chunk->free[o])
			goto err_free;
	}

	res = request_free_mem_region(&iomem_resource, DMIRROR_CHUNK_SIZE,
				      "hmm_dmirror_thp");
	if (IS_ERR(res)) {
		ret = PTR_ERR(res);
		goto err_free;
	}
	chunk->mdevice = mdevice;
	chunk->base_pfn = PHYS_PFN(res->start);
	chunk->pagemap.type = MEMORY_DEVICE_PRIVATE;
	chunk->pagemap.range.start = res->start;
	chunk->pagemap.range.end = res->end;
	chunk->pagemap.nr_range = 1;
	chunk->pagemap.ops = mdevice->pgmap_ops;
	chunk->pagemap.owner = mdevice;
	if (!IS_ALIGNED(chunk->base_pfn, HPAGE_PMD_NR)) {
		ret = -ERANGE;
		goto err_region;
	}
	ptr = memremap_pages(&chunk->pagemap, numa_node_id());
	if (IS_ERR_OR_NULL(ptr)) {
		ret = ptr ? PTR_ERR(ptr) : -EFAULT;
		goto err_region;
	}

	bitmap_fill(chunk->free[HPAGE_PMD_ORDER], DMIRROR_CHUNK_BLOCKS);
	chunk->nr_free[HPAGE_PMD_ORDER] = DMIRROR_CHUNK_BLOCKS;
	spin_lock_irq(&mdevice->lock);
	mdevice->chunks[mdevice->nr_chunks] = chunk;
	WRITE_ONCE(mdevice->nr_chunks, mdevice->nr_chunks + 1);
	spin_unlock_irq(&mdevice->lock);
	ret = 0;
	goto out;

err_region:
	release_mem_region(res->start, resource_size(res));
err_free:
	dmirror_chunk_free(chunk);
out:
	mutex_unlock(&mdevice->devmem_lock);
	return ret;
}

/*
 * A device pfn's struct pages may still carry the compound state of an
 * earlier use at another order, so the folio is named by its first page, not
 * through page_folio(); zone_device_folio_init() re-initialises every page.
 */
static struct folio *dmirror_pfn_folio(unsigned long pfn)
{
	return (struct folio *)pfn_to_page(pfn);
}

/**
 * dmirror_devmem_alloc() - allocate a device folio
 * @mdevice: the device
 * @order:   0 to HPAGE_PMD_ORDER
 *
 * Sleeps: it may grow the device.
 *
 * Return: the head page of a locked device-private folio of @order, with its
 * backing store allocated, or NULL.
 */
struct page *dmirror_devmem_alloc(struct dmirror_device *mdevice,
				  unsigned int order)
{
	struct dmirror_chunk *chunk;
	struct folio *folio;
	unsigned long off;
	unsigned int seen;

	might_sleep();
	for (;;) {
		spin_lock_irq(&mdevice->lock);
		seen = mdevice->nr_chunks;
		chunk = dmirror_pool_take(mdevice, order, &off);
		spin_unlock_irq(&mdevice->lock);
		if (chunk)
			break;
		if (dmirror_chunk_add(mdevice, seen))
			return NULL;
	}

	if (dmirror_backing_alloc(chunk, off, order)) {
		dmirror_pool_put(chunk, off, order);
		return NULL;
	}

	folio = dmirror_pfn_folio(chunk->base_pfn + off);
	zone_device_folio_init(folio, &chunk->pagemap, order);
	folio_set_zone_device_data(folio, chunk);
	return folio_page(folio, 0);
}

/**
 * dmirror_devmem_free() - give a device folio back to the pools
 * @folio: the folio; its last reference is gone
 *
 * Context: any, IRQs included (dev_pagemap_ops.folio_free); never sleeps.
 */
void dmirror_devmem_free(struct folio *folio)
{
	struct dmirror_chunk *chunk = dmirror_page_chunk(&folio->page);
	unsigned int order = folio_order(folio);
	unsigned long off = folio_pfn(folio) - chunk->base_pfn;

	dmirror_backing_free(chunk, off, 1UL << order);
	dmirror_pool_put(chunk, off, order);
}

/**
 * dmirror_backing_page() - the system page holding a device page's data
 * @dpage: a device-private page of this module, in use
 *
 * Return: the backing page; the caller owns @dpage, so it is stable.
 */
struct page *dmirror_backing_page(struct page *dpage)
{
	struct dmirror_chunk *chunk = dmirror_page_chunk(dpage);

	return chunk->backing[page_to_pfn(dpage) - chunk->base_pfn];
}

/* True if @page is device-private memory of @mdevice. */
bool dmirror_is_local_page(struct dmirror_device *mdevice, struct page *page)
{
	return is_device_private_page(page) &&
	       page_pgmap(page)->owner == mdevice;
}

/* True if PMD block @blk of @chunk sits whole in the folio pool. */
bool dmirror_block_is_free(struct dmirror_chunk *chunk, unsigned long blk)
{
	struct dmirror_device *mdevice = chunk->mdevice;
	bool free;

	spin_lock_irq(&mdevice->lock);
	free = test_bit(blk, chunk->free[HPAGE_PMD_ORDER]);
	spin_unlock_irq(&mdevice->lock);
	return free;
}

/* Fill the gauges of HMM_DMIRROR_STATS. */
void dmirror_pool_gauges(struct dmirror_device *mdevice,
			 struct dmirror_thp_stats *st)
{
	unsigned int i, o;

	spin_lock_irq(&mdevice->lock);
	for (i = 0; i < mdevice->nr_chunks; i++) {
		struct dmirror_chunk *chunk = mdevice->chunks[i];

		st->capacity_pages += DMIRROR_CHUNK_PAGES;
		st->free_folios += chunk->nr_free[HPAGE_PMD_ORDER];
		for (o = 0; o < HPAGE_PMD_ORDER; o++)
			st->free_pages += chunk->nr_free[o] << o;
		st->resident_pages += chunk->resident;
	}
	spin_unlock_irq(&mdevice->lock);
}

/* The free blocks of each order, for HMM_DMIRROR_ORDER_STATS. */
void dmirror_pool_order_gauges(struct dmirror_device *mdevice,
			       struct dmirror_thp_order_stats *os)
{
	unsigned int i, o;

	spin_lock_irq(&mdevice->lock);
	for (i = 0; i < mdevice->nr_chunks; i++)
		for (o = 0; o < DMIRROR_NR_ORDERS; o++)
			os->free_blocks[o] += mdevice->chunks[i]->nr_free[o];
	spin_unlock_irq(&mdevice->lock);
}

/*
 * The first chunk is added at load time, as test_hmm does, so that the
 * common case never calls memremap_pages() under a process's mmap lock.
 */
int dmirror_devmem_init(struct dmirror_device *mdevice, unsigned int max_chunks,
			const struct dev_pagemap_ops *ops)
{
	int ret;

	mutex_init(&mdevice->devmem_lock);
	spin_lock_init(&mdevice->lock);
	mdevice->max_chunks = max_chunks;
	mdevice->pgmap_ops = ops;
	mdevice->chunks = kcalloc(max_chunks, sizeof(*mdevice->chunks),
				  GFP_KERNEL);
	if (!mdevice->chunks)
		return -ENOMEM;
	ret = dmirror_chunk_add(mdevice, 0);
	if (ret) {
		kfree(mdevice->chunks);
		mdevice->chunks = NULL;
	}
	return ret;
}

/*
 * Device removal, first step: no file is open (the module is going away),
 * so no allocation can race; stop growth and allocations from every chunk,
 * so that eviction (evict.c) can empty them.
 */
void dmirror_devmem_stop(struct dmirror_device *mdevice)
{
	unsigned int i;

	mutex_lock(&mdevice->devmem_lock);
	mdevice->max_chunks = 0;
	spin_lock_irq(&mdevice->lock);
	for (i = 0; i < mdevice->nr_chunks; i++)
		mdevice->chunks[i]->removing = true;
	spin_unlock_irq(&mdevice->lock);
	mutex_unlock(&mdevice->devmem_lock);
}

/*
 * Device removal, last step, after eviction: unmap and free every chunk.
 * memunmap_pages() waits for every page of the chunk to be freed, so a
 * chunk that eviction could not empty is left mapped, and leaked, with an
 * error: a hang in rmmod would hide the page that is still held.
 */
void dmirror_devmem_fini(struct dmirror_device *mdevice)
{
	unsigned int i;

	mutex_lock(&mdevice->devmem_lock);
	for (i = 0; i < mdevice->nr_chunks; i++) {
		struct dmirror_chunk *chunk = mdevice->chunks[i];
		unsigned long busy = READ_ONCE(chunk->resident);

		if (busy) {
			pr_err("dmirror_thp: %s: %lu pages of chunk %u still in use: leaking it\n",
			       dev_name(&mdevice->device), busy, i);
			continue;
		}
		memunmap_pages(&chunk->pagemap);
		release_mem_region(chunk->pagemap.range.start,
				   range_len(&chunk->pagemap.range));
		dmirror_chunk_free(chunk);
	}
	spin_lock_irq(&mdevice->lock);
	mdevice->nr_chunks = 0;
	spin_unlock_irq(&mdevice->lock);
	mutex_unlock(&mdevice->devmem_lock);
	kfree(mdevice->chunks);
	mdevice->chunks = NULL;
}
