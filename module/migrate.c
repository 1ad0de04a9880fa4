// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp migration: the migrate_vma loop of MIGRATE_TO_DEV and
 * MIGRATE_TO_SYS, and the destinations (folios and their data) that
 * the CPU fault and eviction paths share.
 *
 * The loop walks the range in PMD-aligned windows of up to
 * DMIRROR_WINDOW_PMDS PMDs, with one pair of src/dst arrays allocated once
 * per call: one migrate_vma_setup() per window, so that the TLB flushes,
 * notifier rounds and LRU drains of a migration are paid per window, not per
 * PMD.  A compound src entry (MIGRATE_PFN_COMPOUND) stands for its source
 * folio, of any order from 2 to HPAGE_PMD_ORDER (with
 * MIGRATE_VMA_SELECT_MTHP where the core has it), or for an empty PMD range
 * when it has no page.  It is given one destination folio of that order
 * when one can be had, and otherwise a base page for each of its pages,
 * which makes the core split the source; HMM_DMIRROR_FLAG_FAIL_ALLOC forces
 * the latter, at every order.  Every window's destinations are made in two
 * passes, as a DMA engine would be driven: first every destination is
 * allocated, then every entry that has one is copied in full, before
 * migrate_vma_pages().  Each pass is one phase of the HMM_DMIRROR_PHASES
 * clock.
 *
 * Locking: dmirror_migrate_range() holds the mmap read lock of the mirrored
 * mm across setup, copy, pages and finalize; device allocation may take
 * devmem_lock under it.  dmirror->mutex is not taken: the mirror page table
 * learns of the moved pages from hmm_range_fault().  The destination
 * helpers take no lock and sleep only in page allocation.
 */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "dmirror.h"

#define DMIRROR_GFP_THP	(GFP_TRANSHUGE | __GFP_NORETRY)

#define DMIRROR_WINDOW_PMDS	8
#define DMIRROR_WINDOW_PAGES	(DMIRROR_WINDOW_PMDS * HPAGE_PMD_NR)

/**
 * dmirror_fail_large_alloc() - consume an armed HMM_DMIRROR_FLAG_FAIL_ALLOC
 * @ctx: the migration
 *
 * Every large allocation, on either side, asks this first.  An ioctl
 * consumes the flag of its own file; a CPU fault the flag of the first
 * armed file that its mm opened on this device.
 *
 * Return: true if the allocation must fail.
 */
bool dmirror_fail_large_alloc(struct dmirror_migrate_ctx *ctx)
{
	struct dmirror_device *mdevice = ctx->mdevice;
	struct dmirror *dmirror;
	bool fail = false;

	if (ctx->dmirror) {
		fail = test_and_clear_bit(DMIRROR_FLAG_FAIL_ALLOC_BIT,
					  &ctx->dmirror->flags);
	} else if (ctx->mm) {
		spin_lock(&mdevice->files_lock);
		list_for_each_entry(dmirror, &mdevice->files, link) {
			if (dmirror->notifier.mm == ctx->mm &&
			    test_and_clear_bit(DMIRROR_FLAG_FAIL_ALLOC_BIT,
					       &dmirror->flags)) {
				fail = true;
				break;
			}
		}
		spin_unlock(&mdevice->files_lock);
	}
	if (fail)
		dmirror_count(mdevice, DSTAT_ALLOC_FAIL_INJECT, 1);
	return fail;
}

/*
 * Order of the src entry at @mpfn: a compound entry stands for its source
 * folio, or for an empty PMD range when it has no page.
 */
static unsigned int dmirror_entry_order(unsigned long mpfn)
{
	struct page *page = migrate_pfn_to_page(mpfn);

	if (!(mpfn & MIGRATE_PFN_COMPOUND))
		return 0;
	return page ? folio_order(page_folio(page)) : HPAGE_PMD_ORDER;
}

static unsigned long dmirror_entry_nr(unsigned long mpfn)
{
	return 1UL << dmirror_entry_order(mpfn);
}

/*
 * Count one destination folio that was migrated (@dst, valid); returns its
 * pages.
 */
static unsigned long dmirror_count_moved(struct dmirror_device *mdevice,
					 unsigned long dst, bool to_dev)
{
	unsigned int order = 0;

	if (dst & MIGRATE_PFN_COMPOUND)
		order = folio_order(page_folio(migrate_pfn_to_page(dst)));
	atomic64_inc(to_dev ? &mdevice->order_to_dev[order] :
			      &mdevice->order_to_sys[order]);
	if (order == HPAGE_PMD_ORDER)
		dmirror_count(mdevice, to_dev ? DSTAT_THP_TO_DEV :
						DSTAT_THP_TO_SYS, 1);
	else if (!order)
		dmirror_count(mdevice, to_dev ? DSTAT_BASE_TO_DEV :
						DSTAT_BASE_TO_SYS, 1);
	return 1UL << order;
}

/* ---- to the device ---- */

/* One device folio for a compound src entry; false to fall back. */
static bool dmirror_alloc_dev_folio(struct dmirror_migrate_ctx *ctx,
				    unsigned long *dst, unsigned long write,
				    unsigned int order)
{
	struct page *dpage;

	if (dmirror_fail_large_alloc(ctx))
		return false;
	dpage = dmirror_devmem_alloc(ctx->mdevice, order);
	if (!dpage) {
		dmirror_count(ctx->mdevice, DSTAT_ALLOC_FAIL_REAL, 1);
		return false;
	}
	*dst = migrate_pfn(page_to_pfn(dpage)) | MIGRATE_PFN_COMPOUND | write;
	return true;
}

/* Give back the @nr locked destination pages of @dst and clear them. */
static void dmirror_dst_release(unsigned long *dst, unsigned long nr)
{
	while (nr--) {
		struct page *page = migrate_pfn_to_page(dst[nr]);

		unlock_page(page);
		put_page(page);
		dst[nr] = 0;
	}
}

/* Base device pages for @nr entries; all or nothing. */
static void dmirror_alloc_dev_base(struct dmirror_device *mdevice,
				   unsigned long *dst, unsigned long nr,
				   unsigned long write)
{
	unsigned long i;

	for (i = 0; i < nr; i++) {
		struct page *dpage = dmirror_devmem_alloc(mdevice, 0);

		if (!dpage)
			goto undo;
		dst[i] = migrate_pfn(page_to_pfn(dpage)) | write;
	}
	return;

undo:
	dmirror_dst_release(dst, i);
}

/*
 * Allocate device memory for the collected entries.  Returns -EINVAL if a
 * collected page is not anonymous (page cache, shmem): only anonymous memory
 * can move to device-private memory, and such an entry gets no destination.
 */
static int dmirror_alloc_to_dev(struct dmirror_migrate_ctx *ctx,
				struct migrate_vma *args)
{
	unsigned long npages = args->npages;
	unsigned long i, nr;
	unsigned int order;
	int ret = 0;

	memset(args->dst, 0, npages * sizeof(*args->dst));
	for (i = 0; i < npages; i += nr) {
		unsigned long mpfn = args->src[i];
		struct page *spage = migrate_pfn_to_page(mpfn);
		unsigned long write = 0;

		order = dmirror_entry_order(mpfn);
		nr = 1UL << order;
		if (!(mpfn & MIGRATE_PFN_MIGRATE) || i + nr > npages)
			continue;
		/* SELECT_SYSTEM never collects device pages. */
		if (spage && is_zone_device_page(spage))
			continue;
		/* The source is locked: its anon state is stable. */
		if (spage && !folio_test_anon(page_folio(spage))) {
			ret = -EINVAL;
			continue;
		}
		if ((mpfn & MIGRATE_PFN_WRITE) ||
		    (!spage && (args->vma->vm_flags & VM_WRITE)))
			write = MIGRATE_PFN_WRITE;

		if (nr > 1) {
			if (dmirror_alloc_dev_folio(ctx, &args->dst[i], write,
						    order))
				continue;
			if (spage)
				dmirror_count(ctx->mdevice, DSTAT_SPLIT_MIGRATE,
					      1);
		}
		dmirror_alloc_dev_base(ctx->mdevice, &args->dst[i], nr, write);
	}
	return ret;
}

/*
 * Copy a source page (NULL: a hole or the zero page) into the backing store
 * of a device page.
 */
static void dmirror_copy_page_to_dev(struct page *dpage, struct page *spage)
{
	struct page *rpage = dmirror_backing_page(dpage);

	if (spage)
		copy_highpage(rpage, spage);
	else
		clear_highpage(rpage);
}

/*
 * The second pass: copy every entry that has a destination, a compound one
 * as one folio, base destinations of a compound source page by page.
 */
static void dmirror_copy_to_dev(struct migrate_vma *args)
{
	unsigned long i, j, nr;

	for (i = 0; i < args->npages; i += nr) {
		struct page *spage = migrate_pfn_to_page(args->src[i]);
		struct page *dpage = migrate_pfn_to_page(args->dst[i]);
		struct page *sp;

		nr = dmirror_entry_nr(args->src[i]);
		if (!(args->src[i] & MIGRATE_PFN_MIGRATE) ||
		    i + nr > args->npages)
			continue;
		if (args->dst[i] & MIGRATE_PFN_COMPOUND) {
			for (j = 0; j < nr; j++) {
				sp = spage ? spage + j : NULL;
				dmirror_copy_page_to_dev(dpage + j, sp);
			}
			continue;
		}
		for (j = 0; j < nr; j++) {
			dpage = migrate_pfn_to_page(args->dst[i + j]);
			sp = spage ? spage + j : NULL;
			if (dpage)
				dmirror_copy_page_to_dev(dpage, sp);
		}
	}
}

/*
 * Count the pages that moved.  They are not recorded in the mirror page
 * table here: between migrate_vma_setup() and migrate_vma_finalize() a
 * concurrent MADV_DONTNEED (it takes the mmap lock for read only) can zap
 * the migration entries, and an entry recorded now would then outlive the
 * device page.  The next device access finds them with hmm_range_fault(),
 * under the notifier sequence.
 */
static unsigned long dmirror_count_to_dev(struct dmirror_device *mdevice,
					  struct migrate_vma *args)
{
	unsigned long i, nr, moved = 0;

	for (i = 0; i < args->npages; i += nr) {
		nr = 1;
		if (!migrate_pfn_to_page(args->dst[i]) ||
		    !(args->src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		nr = dmirror_count_moved(mdevice, args->dst[i], true);
		moved += nr;
	}
	return moved;
}

/* ---- to system memory ---- */

/*
 * One system folio of @order for a compound device entry; false to
 * fall back.
 */
static bool dmirror_alloc_sys_folio(struct dmirror_migrate_ctx *ctx,
				    struct vm_area_struct *vma,
				    unsigned long addr, unsigned long *dst,
				    unsigned long write, unsigned int order)
{
	struct folio *folio;

	if (dmirror_fail_large_alloc(ctx))
		return false;
	/* One compaction attempt, no retries: base pages are the fallback. */
	if (vma)
		folio = vma_alloc_folio(DMIRROR_GFP_THP, order, vma, addr);
	else
		folio = folio_alloc(DMIRROR_GFP_THP, order);
	if (!folio) {
		dmirror_count(ctx->mdevice, DSTAT_ALLOC_FAIL_REAL, 1);
		return false;
	}
	folio_lock(folio);
	*dst = migrate_pfn(folio_pfn(folio)) | MIGRATE_PFN_COMPOUND | write;
	return true;
}

/*
 * Base system pages for @nr entries, all or nothing.  Without a vma
 * (eviction) the allocation cannot fail: nothing may be lost.
 */
static int dmirror_alloc_sys_base(struct vm_area_struct *vma,
				  unsigned long addr, unsigned long *dst,
				  unsigned long nr, unsigned long write)
{
	unsigned long i;

	for (i = 0; i < nr; i++) {
		struct page *page;

		if (vma)
			page = alloc_page_vma(GFP_HIGHUSER_MOVABLE | __GFP_NOWARN,
					      vma, addr + i * PAGE_SIZE);
		else
			page = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_NOFAIL);
		if (!page)
			goto undo;
		lock_page(page);
		dst[i] = migrate_pfn(page_to_pfn(page)) | write;
	}
	return 0;

undo:
	dmirror_dst_release(dst, i);
	return -ENOMEM;
}

/* The second pass: copy every device page that has a destination. */
static void dmirror_copy_to_sys(const unsigned long *src,
				const unsigned long *dst, unsigned long npages)
{
	unsigned long i, j, nr;

	for (i = 0; i < npages; i += nr) {
		struct page *spage = migrate_pfn_to_page(src[i]);
		struct page *page = migrate_pfn_to_page(dst[i]);
		struct page *from;

		nr = dmirror_entry_nr(src[i]);
		if (!spage || i + nr > npages)
			continue;
		if (dst[i] & MIGRATE_PFN_COMPOUND) {
			for (j = 0; j < nr; j++) {
				from = dmirror_backing_page(spage + j);
				copy_highpage(page + j, from);
			}
			continue;
		}
		for (j = 0; j < nr; j++) {
			page = migrate_pfn_to_page(dst[i + j]);
			if (!page)
				continue;
			from = dmirror_backing_page(spage + j);
			copy_highpage(page, from);
		}
	}
}

/**
 * dmirror_alloc_copy_sys() - allocate and fill system pages for device ones
 * @ctx:        the migration (its phase clock is lapped: ALLOC, COPY)
 * @vma:        the vma (migrate_vma paths), or NULL (eviction)
 * @start:      virtual address of src[0] (ignored without @vma)
 * @src:        collected entries
 * @dst:        destinations; every entry is written
 * @npages:     entries
 * @split_stat: counter for a compound entry given base pages
 *
 * Return: 0, or -ENOMEM if some entries got no destination (they stay on the
 * device).
 */
int dmirror_alloc_copy_sys(struct dmirror_migrate_ctx *ctx,
			   struct vm_area_struct *vma, unsigned long start,
			   const unsigned long *src, unsigned long *dst,
			   unsigned long npages, enum dmirror_stat split_stat)
{
	struct dmirror_device *mdevice = ctx->mdevice;
	unsigned long i, nr;
	unsigned int order;
	int ret = 0;

	/* It allocates: the fault and eviction paths call it where they may. */
	might_sleep();
	memset(dst, 0, npages * sizeof(*dst));
	for (i = 0; i < npages; i += nr) {
		struct page *spage = migrate_pfn_to_page(src[i]);
		unsigned long addr = start + i * PAGE_SIZE;
		unsigned long write = src[i] & MIGRATE_PFN_WRITE;

		order = dmirror_entry_order(src[i]);
		nr = 1UL << order;
		if (!spage || !(src[i] & MIGRATE_PFN_MIGRATE) ||
		    i + nr > npages || !dmirror_is_local_page(mdevice, spage))
			continue;

		if (nr > 1) {
			if (dmirror_alloc_sys_folio(ctx, vma, addr, &dst[i],
						    write, order))
				continue;
			dmirror_count(mdevice, split_stat, 1);
		}
		if (dmirror_alloc_sys_base(vma, addr, &dst[i], nr, write))
			ret = -ENOMEM;
	}
	dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_ALLOC);
	dmirror_copy_to_sys(src, dst, npages);
	dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_COPY);
	return ret;
}

/* After *_pages(): count what moved to system memory; returns pages. */
unsigned long dmirror_count_to_sys(struct dmirror_device *mdevice,
				   const unsigned long *src,
				   const unsigned long *dst,
				   unsigned long npages)
{
	unsigned long i, nr, moved = 0;

	for (i = 0; i < npages; i += nr) {
		nr = 1;
		if (!(src[i] & MIGRATE_PFN_MIGRATE) ||
		    !(dst[i] & MIGRATE_PFN_VALID))
			continue;
		nr = dmirror_count_moved(mdevice, dst[i], false);
		moved += nr;
	}
	return moved;
}

/* ---- the loop ---- */

/* Next window: up to DMIRROR_WINDOW_PMDS PMDs, within the vma. */
static unsigned long dmirror_window_end(struct vm_area_struct *vma,
					unsigned long addr, unsigned long end)
{
	return min3(end, vma->vm_end, ALIGN_DOWN(addr, PMD_SIZE) +
				      DMIRROR_WINDOW_PMDS * PMD_SIZE);
}

/* Destinations for one collected window; 0 or an error to stop the loop. */
static int dmirror_alloc_copy_window(struct dmirror_migrate_ctx *ctx,
				     struct migrate_vma *args, bool to_dev)
{
	int ret;

	/* The loop's mmap lock keeps args->vma and the collected folios. */
	mmap_assert_locked(args->vma->vm_mm);
	if (!to_dev)
		return dmirror_alloc_copy_sys(ctx, args->vma, args->start,
					      args->src, args->dst, args->npages,
					      DSTAT_SPLIT_MIGRATE);
	ret = dmirror_alloc_to_dev(ctx, args);
	dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_ALLOC);
	dmirror_copy_to_dev(args);
	dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_COPY);
	return ret;
}

/**
 * dmirror_migrate_range() - MIGRATE_TO_DEV or MIGRATE_TO_SYS of a range
 * @ctx:    the migration: device, file, and phase clock (started)
 * @start:  page-aligned start
 * @end:    end, above @start
 * @to_dev: to this device's memory, or back to system memory
 * @moved:  (out) pages that moved
 *
 * Every window of [@start, @end) goes through setup, destinations, pages and
 * finalize; the first window that fails stops the walk, and what moved
 * before it stays moved.
 *
 * Return: 0; -EINVAL for a hole or a vma that cannot be read, or a page
 * that cannot move to device memory (not anonymous); -ENOMEM; -ENOENT if
 * the mm is gone; an error of migrate_vma_setup().
 */
int dmirror_migrate_range(struct dmirror_migrate_ctx *ctx, unsigned long start,
			  unsigned long end, bool to_dev, u64 *moved)
{
	struct dmirror *dmirror = ctx->dmirror;
	struct mm_struct *mm = dmirror->notifier.mm;
	struct migrate_vma args = {
		.pgmap_owner = ctx->mdevice,
		.flags = MIGRATE_VMA_SELECT_COMPOUND | MIGRATE_VMA_SELECT_MTHP |
			 (to_dev ? MIGRATE_VMA_SELECT_SYSTEM :
				   MIGRATE_VMA_SELECT_DEVICE_PRIVATE),
	};
	unsigned long addr;
	int ret = 0;

	*moved = 0;
	args.src = kvcalloc(DMIRROR_WINDOW_PAGES, sizeof(*args.src), GFP_KERNEL);
	args.dst = kvcalloc(DMIRROR_WINDOW_PAGES, sizeof(*args.dst), GFP_KERNEL);
	if (!args.src || !args.dst) {
		ret = -ENOMEM;
		goto out_free;
	}
	if (!mmget_not_zero(mm)) {
		ret = -ENOENT;
		goto out_free;
	}

	mmap_read_lock(mm);
	for (addr = start; addr < end; addr = args.end) {
		args.vma = vma_lookup(mm, addr);
		if (!args.vma || !(args.vma->vm_flags & VM_READ)) {
			ret = -EINVAL;
			break;
		}
		args.start = addr;
		args.end = dmirror_window_end(args.vma, addr, end);
		ret = migrate_vma_setup(&args);
		if (ret)
			break;
		dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_SETUP);
		dmirror_trace_window(ctx, &args);
		ret = dmirror_alloc_copy_window(ctx, &args, to_dev);
		migrate_vma_pages(&args);
		dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_PAGES);
		*moved += to_dev ? dmirror_count_to_dev(ctx->mdevice, &args) :
			  dmirror_count_to_sys(ctx->mdevice, args.src, args.dst,
					       args.npages);
		migrate_vma_finalize(&args);
		dmirror_clock_lap(ctx, HMM_DMIRROR_PHASE_FINALIZE);
		if (ret)
			break;
	}
	mmap_read_unlock(mm);
	mmput(mm);
out_free:
	kvfree(args.dst);
	kvfree(args.src);
	return ret;
}
