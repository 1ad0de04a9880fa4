/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmirror-thp compat: the module is written against Linux 7.3's API.  What
 * Debian's 6.12 with kernel-prereq-patches/6.12 names differently is
 * supplied here under the 7.3 name, one definition per difference, as
 * Kbuild's probes (DMIRROR_HAVE_*) find it missing.  On 7.3 this header
 * defines nothing but dmirror_split_set_pgmap().
 */
#ifndef _DMIRROR_THP_COMPAT_H
#define _DMIRROR_THP_COMPAT_H

#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/hmm.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/rmap.h>

#ifndef DMIRROR_HAVE_FOLIO_INIT_PGMAP
/* 6.12: the pgmap comes from the folio's own struct pages. */
static inline void dmirror_compat_folio_init(struct folio *folio,
					     struct dev_pagemap *pgmap,
					     unsigned int order)
{
	zone_device_folio_init(folio, order);
}

#define zone_device_folio_init dmirror_compat_folio_init
#endif

#ifndef DMIRROR_HAVE_VMA_ALLOC_FOLIO_4
/* 6.12 also took a hugepage hint, which it no longer read. */
#undef vma_alloc_folio
#define vma_alloc_folio(gfp, order, vma, addr)				\
	alloc_hooks(vma_alloc_folio_noprof(gfp, order, vma, addr, true))
#endif

#ifndef DMIRROR_HAVE_MAKE_DEVICE_EXCLUSIVE
/* 6.12 made a range exclusive; one page of it is 7.3's call. */
static inline struct page *
dmirror_compat_make_device_exclusive(struct mm_struct *mm, unsigned long addr,
				     void *owner, struct folio **foliop)
{
	struct page *page = NULL;
	int ret;

	ret = make_device_exclusive_range(mm, addr, addr + PAGE_SIZE, &page,
					  owner);
	if (ret < 0)
		return ERR_PTR(ret);
	if (!page)
		return ERR_PTR(-EBUSY);
	*foliop = page_folio(page);
	return page;
}

#define make_device_exclusive dmirror_compat_make_device_exclusive
#endif

#ifndef DMIRROR_HAVE_KZALLOC_OBJ
/* 7.x's typed allocation, GFP flags required. */
#define kzalloc_obj(P, gfp)	kzalloc(sizeof(P), gfp)
#endif

#ifndef DMIRROR_HAVE_SELECT_MTHP
/*
 * No way to ask for PTE-mapped large folios whole: 6.12's series collects
 * them whole with MIGRATE_VMA_SELECT_COMPOUND alone, upstream 7.3 splits
 * them.
 */
#define MIGRATE_VMA_SELECT_MTHP	0
#endif

#ifndef DMIRROR_HAVE_HMM_UNLOCKED
/* compat.c: for a tree without it. */
int dmirror_compat_hmm_range_fault_unlocked_timeout(struct hmm_range *range,
						    unsigned long timeout);
#define hmm_range_fault_unlocked_timeout \
	dmirror_compat_hmm_range_fault_unlocked_timeout
#endif

/*
 * The pgmap of a folio that a split of @head has just made.  7.3's core
 * leaves it to the folio_split callback (zone_device_private_split_cb());
 * 6.12's sets it before the callback, in the struct page, which 7.3's
 * struct folio no longer mirrors.
 */
static inline void dmirror_split_set_pgmap(struct folio *new,
					   struct folio *head)
{
#ifdef DMIRROR_HAVE_SPLIT_CB
	new->pgmap = head->pgmap;
#endif
}

#endif /* _DMIRROR_THP_COMPAT_H */
