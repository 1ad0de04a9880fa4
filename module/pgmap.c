// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp dev_pagemap_ops: what the core asks of the device's pages.
 *
 * migrate_to_ram: a CPU access to a device-private entry of this device.
 * The core hands vmf->page locked and referenced, and unlocks and releases
 * it when the callback returns (on the page's new folio if the migration
 * split it); it is the fault page of the migration, which uses that lock as
 * its own.  Other faults on the folio back off until it is unlocked, and
 * find it migrated.  For a PMD-mapped device THP (vmf->page is the head page)
 * the whole PMD-aligned range is migrated with
 * SELECT_DEVICE_PRIVATE | SELECT_COMPOUND: back as one system THP when a
 * PMD-order folio can be allocated (and HMM_DMIRROR_FLAG_FAIL_ALLOC does not
 * say otherwise), else as HPAGE_PMD_NR base pages, all of them copied, which
 * makes the core split the device folio.  A device mTHP, mapped by PTEs
 * (vmf->page is the page that faulted), is migrated as the range of its
 * folio, found from the page's index in it: the core brings it back whole as
 * a system folio of its order where the mTHP policy of that size allows a
 * fault to allocate one, and splits it otherwise.  A base page, or a large
 * folio that the vma no longer covers whole, migrates on its own.  Called
 * with the mmap lock (or the vma lock) held for read; it takes no lock of its
 * own.  The mirror page tables are cleaned by the mmu interval notifier that
 * migrate_vma_setup() fires, so the fault path needs no mirror.
 *
 * folio_split: called for every new folio while the core splits a large
 * device folio, then once with a NULL tail.  The backing store is addressed
 * by device pfn (see devmem.c); the callback splits the block that backs the
 * folio, if it is one, gives the new folio its pgmap (7.3's core leaves that
 * to the callback) and points its zone_device_data at its chunk, and counts
 * the split.  The per-folio calls run with IRQs off and spinlocks held, the
 * last one with the head folio still locked: it neither sleeps nor
 * allocates.
 *
 * folio_free: the folio goes back to the allocator.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "dmirror.h"

static vm_fault_t dmirror_devmem_fault(struct vm_fault *vmf)
{
	struct dmirror_device *mdevice = dmirror_page_chunk(vmf->page)->mdevice;
	struct vm_area_struct *vma = vmf->vma;
	unsigned long start = vmf->address & PAGE_MASK;
	unsigned long pmd_start = ALIGN_DOWN(vmf->address, PMD_SIZE);
	struct folio *folio = page_folio(vmf->page);
	unsigned long fstart;
	struct dmirror_migrate_ctx ctx = {
		.mdevice = mdevice,
		.mm = vma->vm_mm,
	};
	struct migrate_vma args = {
		.vma = vma,
		.pgmap_owner = mdevice,
		.flags = MIGRATE_VMA_SELECT_DEVICE_PRIVATE,
		.fault_page = vmf->page,
	};
	unsigned long src_pfn = 0, dst_pfn = 0, nr = 1;
	vm_fault_t ret = 0;

	assert_fault_locked(vmf);
	/* Both kernels lock the fault page; migrate_vma_setup() relies on it. */
	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	dmirror_count(mdevice, DSTAT_CPU_FAULTS, 1);
	dmirror_clock_start(&ctx, HMM_DMIRROR_PATH_FAULT);

	/*
	 * The folio's range: on a PMD (the core leaves vmf->pte NULL),
	 * vmf->page is the head whatever the address; on a PTE, it is the
	 * page that faulted, in a folio of any order, PMD-sized ones too.
	 */
	if (!vmf->pte)
		fstart = pmd_start;
	else
		fstart = start - folio_page_idx(folio, vmf->page) * PAGE_SIZE;
	if (folio_test_large(folio) && fstart >= vma->vm_start &&
	    fstart <= start && fstart + folio_size(folio) <= vma->vm_end) {
		start = fstart;
		nr = folio_nr_pages(folio);
		args.flags |= MIGRATE_VMA_SELECT_COMPOUND |
			      MIGRATE_VMA_SELECT_MTHP;
	}
	args.start = start;
	args.end = start + nr * PAGE_SIZE;

	/*
	 * A base page needs one entry each way, on the stack, as in test_hmm:
	 * two kvcalloc() per fault cost as much as migrate_vma_setup() in the
	 * debug flavour (a stack trace each for KASAN and kmemleak).  An
	 * allocation failure returns 0: the access faults again and retries
	 * (the page allocator has already done what it can, OOM kill
	 * included, before an order-0 allocation fails).
	 */
	args.src = &src_pfn;
	args.dst = &dst_pfn;
	if (nr > 1) {
		args.src = kvcalloc(nr, sizeof(*args.src), GFP_KERNEL);
		args.dst = kvcalloc(nr, sizeof(*args.dst), GFP_KERNEL);
		if (!args.src || !args.dst)
			goto out;
	}

	if (migrate_vma_setup(&args)) {
		ret = VM_FAULT_SIGBUS;
		goto out;
	}
	dmirror_clock_lap(&ctx, HMM_DMIRROR_PHASE_SETUP);
	dmirror_alloc_copy_sys(&ctx, vma, start, args.src, args.dst,
			       args.npages, DSTAT_SPLIT_FAULT);
	migrate_vma_pages(&args);
	dmirror_clock_lap(&ctx, HMM_DMIRROR_PHASE_PAGES);
	dmirror_count_to_sys(mdevice, args.src, args.dst, args.npages);
	migrate_vma_finalize(&args);
	dmirror_clock_lap(&ctx, HMM_DMIRROR_PHASE_FINALIZE);
out:
	if (nr > 1) {
		kvfree(args.dst);
		kvfree(args.src);
	}
	return ret;
}

static void dmirror_folio_split(struct folio *head, struct folio *tail)
{
	struct dmirror_chunk *chunk = dmirror_page_chunk(folio_page(head, 0));

	if (!tail) {
		VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(head), head);
		dmirror_count(chunk->mdevice, DSTAT_SPLIT_CALLBACK, 1);
		return;
	}
	lockdep_assert_irqs_disabled();
	/* The first call splits the block; the later ones find it split. */
	dmirror_backing_split(folio_page(head, 0));
	dmirror_split_set_pgmap(tail, head);
	folio_set_zone_device_data(tail, chunk);
}

static void dmirror_folio_free(struct folio *folio)
{
	dmirror_devmem_free(folio);
}

#ifndef DMIRROR_HAVE_FOLIO_FREE
/* 6.12 names the folio by its head page. */
static void dmirror_page_free(struct page *page)
{
	dmirror_folio_free(page_folio(page));
}
#endif

const struct dev_pagemap_ops dmirror_pgmap_ops = {
#ifdef DMIRROR_HAVE_FOLIO_FREE
	.folio_free	= dmirror_folio_free,
#else
	.page_free	= dmirror_page_free,
#endif
	.migrate_to_ram	= dmirror_devmem_fault,
	.folio_split	= dmirror_folio_split,
};
