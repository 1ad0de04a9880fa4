// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp copy ceiling: HMM_DMIRROR_COPY_BENCH times the copies a
 * migration of PMD-sized folios makes, with nothing of migration around
 * them, so that the bench can tell the copy's share of a path's time from
 * the core's.  The phase clock (clock.c) times the paths themselves; this
 * uses only copy.c.
 */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/huge_mm.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "dmirror.h"

#define DMIRROR_COPY_BENCH_MAX	4096
#define DMIRROR_COPY_NR		DMIRROR_THP_COPY_BENCH_FOLIOS

/**
 * dmirror_copy_bench() - HMM_DMIRROR_COPY_BENCH: time the migration copies
 * @cb: the command; @cb->copy_ns and @cb->to_user_ns are set
 *
 * Copies PMD-sized folios the way the migration paths do, @cb->iters times,
 * cycling over DMIRROR_THP_COPY_BENCH_FOLIOS distinct folios on each side:
 * copy_highpage() page by page from a system folio into another (as into a
 * device folio's backing block), then from that one to the user buffer
 * @cb->ptr with copy_to_user(), as READ and the read-back do.
 *
 * Return: 0, -EINVAL, -EFAULT or -ENOMEM.
 */
int dmirror_copy_bench(struct dmirror_thp_copy_bench *cb)
{
	char __user *uptr = u64_to_user_ptr(cb->ptr);
	struct folio *src[DMIRROR_COPY_NR] = {}, *dst[DMIRROR_COPY_NR] = {};
	unsigned long i, j, k;
	int ret = 0;
	u64 t;

	if (!cb->iters || cb->iters > DMIRROR_COPY_BENCH_MAX)
		return -EINVAL;
	for (k = 0; k < DMIRROR_COPY_NR; k++) {
		src[k] = folio_alloc(GFP_HIGHUSER | __GFP_NORETRY |
				     __GFP_NOWARN, HPAGE_PMD_ORDER);
		dst[k] = folio_alloc(GFP_HIGHUSER | __GFP_NORETRY |
				     __GFP_NOWARN, HPAGE_PMD_ORDER);
		if (!src[k] || !dst[k]) {
			ret = -ENOMEM;
			goto out;
		}
		for (j = 0; j < HPAGE_PMD_NR; j++)
			memset_page(folio_page(src[k], j), 0, 0x5a, PAGE_SIZE);
	}

	t = ktime_get_ns();
	for (i = 0; i < cb->iters; i++) {
		k = i % DMIRROR_COPY_NR;
		for (j = 0; j < HPAGE_PMD_NR; j++)
			copy_highpage(folio_page(dst[k], j),
				      folio_page(src[k], j));
		cond_resched();
	}
	cb->copy_ns = ktime_get_ns() - t;

	t = ktime_get_ns();
	for (i = 0; i < cb->iters && !ret; i++) {
		k = i % DMIRROR_COPY_NR;
		for (j = 0; j < HPAGE_PMD_NR && !ret; j++)
			ret = dmirror_copy_page_to_user(uptr + k * PMD_SIZE +
							j * PAGE_SIZE,
							folio_page(dst[k], j));
		cond_resched();
	}
	cb->to_user_ns = ktime_get_ns() - t;
out:
	for (k = 0; k < DMIRROR_COPY_NR; k++) {
		if (dst[k])
			folio_put(dst[k]);
		if (src[k])
			folio_put(src[k]);
	}
	return ret;
}
