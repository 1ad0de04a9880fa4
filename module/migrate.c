// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp migration: HMM_DMIRROR_MIGRATE_TO_DEV and _TO_SYS, and the
 * device to system copy that the CPU fault and eviction paths share.
 *
 * Both ioctls walk the range in PMD-aligned windows with one pair of src/dst
 * arrays of HPAGE_PMD_NR entries, allocated once per call.  A compound src
 * entry (MIGRATE_PFN_COMPOUND) is answered with one PMD-order folio when one
 * can be had, and otherwise with HPAGE_PMD_NR base pages, which makes the
 * core split the source; HMM_DMIRROR_FLAG_FAIL_ALLOC forces the latter.
 * Every answered entry is copied in full before migrate_vma_pages().
 *
 * Locking: the ioctls hold the mmap read lock of the mirrored mm across
 * setup, copy, pages and finalize; device allocation may take devmem_lock
 * under it.  dmirror->mutex is not taken: the mirror page table learns of
 * the moved pages from hmm_range_fault().  The helpers for the device to
 * system copy take no lock and sleep only in page allocation.
 */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "dmirror.h"

#define DMIRROR_GFP_THP	(GFP_TRANSHUGE | __GFP_NORETRY)

/*
 * Copy @nr pages of a source (NULL: a hole or the zero page) into the backing
 * store of a device folio; @dpage is the device page for the first one.
 */
static void dmirror_copy_to_dev(struct page *dpage, struct page *spage,
				unsigned long nr)
{
	unsigned long i;

	for (i = 0; i < nr; i++) {
		struct page *rpage = dmirror_backing_page(nth_page(dpage, i));

		if (spage)
			copy_highpage(rpage, nth_page(spage, i));
		else
			clear_highpage(rpage);
	}
}

/* Answer a compound src entry with one device THP; false to fall back. */
static bool dmirror_to_dev_thp(struct dmirror_device *mdevice,
			       struct page *spage, unsigned long *dst,
			       unsigned long write)
{
	struct page *dpage;

	if (dmirror_fail_large_alloc(mdevice))
		return false;
	dpage = dmirror_devmem_alloc(mdevice, HPAGE_PMD_ORDER);
	if (!dpage) {
		dmirror_count(mdevice, DSTAT_ALLOC_FAIL_REAL, 1);
		return false;
	}
	dmirror_copy_to_dev(dpage, spage, HPAGE_PMD_NR);
	*dst = migrate_pfn(page_to_pfn(dpage)) | MIGRATE_PFN_COMPOUND | write;
	return true;
}

/* Answer @nr entries with base device pages; all or nothing. */
static void dmirror_to_dev_base(struct dmirror_device *mdevice,
				struct page *spage, unsigned long *dst,
				unsigned long nr, unsigned long write)
{
	unsigned long i;

	for (i = 0; i < nr; i++) {
		struct page *dpage = dmirror_devmem_alloc(mdevice, 0);

		if (!dpage)
			goto undo;
		dmirror_copy_to_dev(dpage, spage ? nth_page(spage, i) : NULL, 1);
		dst[i] = migrate_pfn(page_to_pfn(dpage)) | write;
	}
	return;

undo:
	while (i--) {
		struct page *dpage = migrate_pfn_to_page(dst[i]);

		unlock_page(dpage);
		put_page(dpage);
		dst[i] = 0;
	}
}

/*
 * Answer the collected entries with device memory.  Returns -EINVAL if a
 * collected page is not anonymous (page cache, shmem): only anonymous memory
 * can move to device-private memory, and such an entry is not answered.
 */
static int dmirror_answer_to_dev(struct dmirror_device *mdevice,
				 struct migrate_vma *args)
{
	unsigned long npages = args->npages;
	unsigned long i, nr;
	int ret = 0;

	memset(args->dst, 0, npages * sizeof(*args->dst));
	for (i = 0; i < npages; i += nr) {
		unsigned long mpfn = args->src[i];
		struct page *spage = migrate_pfn_to_page(mpfn);
		unsigned long write = 0;

		nr = (mpfn & MIGRATE_PFN_COMPOUND) ? HPAGE_PMD_NR : 1;
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
			/* A compound entry is a PMD-sized folio, or a hole. */
			if (spage &&
			    folio_nr_pages(page_folio(spage)) != HPAGE_PMD_NR)
				continue;
			if (dmirror_to_dev_thp(mdevice, spage, &args->dst[i],
					       write))
				continue;
			if (spage)
				dmirror_count(mdevice, DSTAT_SPLIT_MIGRATE, 1);
		}
		dmirror_to_dev_base(mdevice, spage, &args->dst[i], nr, write);
	}
	return ret;
}

/*
 * Count the pages that moved.  They are not recorded in the mirror page
 * table here: between migrate_vma_setup() and migrate_vma_finalize() a
 * concurrent MADV_DONTNEED (it takes the mmap lock for read only) can zap
 * the migration entries, and an entry recorded now would then outlive the
 * device page.  The next device access finds them with hmm_range_fault(),
 * under the notifier sequence.
 */
static void dmirror_count_to_dev(struct dmirror_device *mdevice,
				 struct migrate_vma *args)
{
	unsigned long i, nr;

	for (i = 0; i < args->npages; i += nr) {
		bool pmd = args->dst[i] & MIGRATE_PFN_COMPOUND;

		nr = pmd ? HPAGE_PMD_NR : 1;
		if (!migrate_pfn_to_page(args->dst[i]) ||
		    !(args->src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		dmirror_count(mdevice, pmd ? DSTAT_THP_TO_DEV : DSTAT_BASE_TO_DEV,
			      1);
	}
}

/* Next window: at most one PMD, within the vma. */
static unsigned long dmirror_window_end(struct vm_area_struct *vma,
					unsigned long addr, unsigned long end)
{
	return min3(end, vma->vm_end, ALIGN_DOWN(addr, PMD_SIZE) + PMD_SIZE);
}

/* HMM_DMIRROR_MIGRATE_TO_DEV */
int dmirror_migrate_to_device(struct dmirror *dmirror,
			      struct hmm_dmirror_cmd *cmd)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	unsigned long start = cmd->addr;
	unsigned long end = start + (cmd->npages << PAGE_SHIFT);
	struct migrate_vma args = {
		.pgmap_owner = dmirror->mdevice,
		.flags = MIGRATE_VMA_SELECT_SYSTEM | MIGRATE_VMA_SELECT_COMPOUND,
	};
	unsigned long addr;
	int ret = 0, refused;

	args.src = kvcalloc(HPAGE_PMD_NR, sizeof(*args.src), GFP_KERNEL);
	args.dst = kvcalloc(HPAGE_PMD_NR, sizeof(*args.dst), GFP_KERNEL);
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
		refused = dmirror_answer_to_dev(dmirror->mdevice, &args);
		migrate_vma_pages(&args);
		dmirror_count_to_dev(dmirror->mdevice, &args);
		migrate_vma_finalize(&args);
		if (refused) {
			ret = refused;
			break;
		}
	}
	mmap_read_unlock(mm);
	mmput(mm);
out_free:
	kvfree(args.dst);
	kvfree(args.src);
	if (ret)
		return ret;

	/* As test_hmm: return what the device now reads of the range. */
	return dmirror_read_back(dmirror, cmd, true);
}

/* Answer a compound device entry with one system THP; false to fall back. */
static bool dmirror_to_sys_thp(struct dmirror_device *mdevice,
			       struct vm_area_struct *vma, unsigned long addr,
			       struct page *spage, unsigned long *dst,
			       unsigned long write)
{
	struct folio *folio;
	unsigned long i;

	if (dmirror_fail_large_alloc(mdevice))
		return false;
	/* One compaction attempt, no retries: base pages are the fallback. */
	if (vma)
		folio = vma_alloc_folio(DMIRROR_GFP_THP, HPAGE_PMD_ORDER, vma,
					addr, true);
	else
		folio = folio_alloc(DMIRROR_GFP_THP, HPAGE_PMD_ORDER);
	if (!folio) {
		dmirror_count(mdevice, DSTAT_ALLOC_FAIL_REAL, 1);
		return false;
	}
	folio_lock(folio);
	for (i = 0; i < HPAGE_PMD_NR; i++)
		copy_highpage(folio_page(folio, i),
			      dmirror_backing_page(nth_page(spage, i)));
	*dst = migrate_pfn(folio_pfn(folio)) | MIGRATE_PFN_COMPOUND | write;
	return true;
}

/*
 * Answer @nr entries with base system pages, all or nothing.  Without a vma
 * (eviction) the allocation cannot fail: nothing may be lost.
 */
static int dmirror_to_sys_base(struct vm_area_struct *vma, unsigned long addr,
			       struct page *spage, unsigned long *dst,
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
		copy_highpage(page, dmirror_backing_page(nth_page(spage, i)));
		dst[i] = migrate_pfn(page_to_pfn(page)) | write;
	}
	return 0;

undo:
	while (i--) {
		struct page *page = migrate_pfn_to_page(dst[i]);

		unlock_page(page);
		put_page(page);
		dst[i] = 0;
	}
	return -ENOMEM;
}

/**
 * dmirror_answer_to_sys() - allocate and fill system pages for device pages
 * @mdevice:    the device whose pages were collected
 * @vma:        the vma (migrate_vma paths), or NULL (eviction)
 * @start:      virtual address of src[0] (ignored without @vma)
 * @src:        collected entries
 * @dst:        answers; every entry is written
 * @npages:     entries
 * @split_stat: counter for a compound entry answered with base pages
 *
 * Return: 0, or -ENOMEM if some entries got no answer (they stay on the
 * device).
 */
int dmirror_answer_to_sys(struct dmirror_device *mdevice,
			  struct vm_area_struct *vma, unsigned long start,
			  const unsigned long *src, unsigned long *dst,
			  unsigned long npages, enum dmirror_stat split_stat)
{
	unsigned long i, nr;
	int ret = 0;

	memset(dst, 0, npages * sizeof(*dst));
	for (i = 0; i < npages; i += nr) {
		struct page *spage = migrate_pfn_to_page(src[i]);
		unsigned long addr = start + i * PAGE_SIZE;
		unsigned long write = src[i] & MIGRATE_PFN_WRITE;

		nr = (src[i] & MIGRATE_PFN_COMPOUND) ? HPAGE_PMD_NR : 1;
		if (!spage || !(src[i] & MIGRATE_PFN_MIGRATE) ||
		    i + nr > npages || !dmirror_is_local_page(mdevice, spage))
			continue;

		if (nr > 1) {
			if (folio_nr_pages(page_folio(spage)) != HPAGE_PMD_NR)
				continue;
			if (dmirror_to_sys_thp(mdevice, vma, addr, spage,
					       &dst[i], write))
				continue;
			dmirror_count(mdevice, split_stat, 1);
		}
		if (dmirror_to_sys_base(vma, addr, spage, &dst[i], nr, write))
			ret = -ENOMEM;
	}
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
		bool thp = dst[i] & MIGRATE_PFN_COMPOUND;

		nr = thp ? HPAGE_PMD_NR : 1;
		if (!(src[i] & MIGRATE_PFN_MIGRATE) ||
		    !(dst[i] & MIGRATE_PFN_VALID))
			continue;
		dmirror_count(mdevice, thp ? DSTAT_THP_TO_SYS : DSTAT_BASE_TO_SYS,
			      1);
		moved += nr;
	}
	return moved;
}

/* HMM_DMIRROR_MIGRATE_TO_SYS */
int dmirror_migrate_to_system(struct dmirror *dmirror,
			      struct hmm_dmirror_cmd *cmd)
{
	struct dmirror_device *mdevice = dmirror->mdevice;
	struct mm_struct *mm = dmirror->notifier.mm;
	unsigned long start = cmd->addr;
	unsigned long end = start + (cmd->npages << PAGE_SHIFT);
	struct migrate_vma args = {
		.pgmap_owner = mdevice,
		.flags = MIGRATE_VMA_SELECT_DEVICE_PRIVATE |
			 MIGRATE_VMA_SELECT_COMPOUND,
	};
	unsigned long addr;
	int ret = 0;

	args.src = kvcalloc(HPAGE_PMD_NR, sizeof(*args.src), GFP_KERNEL);
	args.dst = kvcalloc(HPAGE_PMD_NR, sizeof(*args.dst), GFP_KERNEL);
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
		ret = dmirror_answer_to_sys(mdevice, args.vma, addr, args.src,
					    args.dst, args.npages,
					    DSTAT_SPLIT_MIGRATE);
		migrate_vma_pages(&args);
		cmd->cpages += dmirror_count_to_sys(mdevice, args.src,
						    args.dst, args.npages);
		migrate_vma_finalize(&args);
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
