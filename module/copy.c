// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp copies between a device page's backing store and user space.
 *
 * They move a page 64 bytes at a time, eight loads then eight stores, as
 * the kernel's copy_page_regs() does, instead of through copy_to_user()'s
 * word-by-word `rep movsq`.  On hardware the two cost the same.  Under
 * QEMU's TCG, whose softmmu TLB is direct-mapped, a source and destination
 * that are both 2 MB aligned (the backing of a device THP, and any
 * anonymous mapping of 2 MB or more, which the kernel aligns to 2 MB) can
 * share a TLB slot while the TLB is small, and a word-by-word copy then
 * misses on every word: measured at 13x the normal time, depending on the
 * TLB size of the moment, that is on what ran before.  In batches the
 * misses are 16 times fewer and lost in the copy.  The guest boots with
 * clearcpuid=rep_good for the same reason, which makes copy_page() (and so
 * copy_highpage()) use copy_page_regs().
 */
#include <linux/highmem.h>
#include <linux/uaccess.h>

#include "dmirror.h"

/*
 * @op on eight words w0..w7 and (p)[i..i+7]: a batch is one load of eight
 * words into registers, then one store.  Written out by hand so that the
 * compiler keeps them in registers, as copy_page_regs() does.
 */
#define DMIRROR_EACH8(op, w, p, i)					\
	do {								\
		op(w##0, (p) + (i) + 0); op(w##1, (p) + (i) + 1);	\
		op(w##2, (p) + (i) + 2); op(w##3, (p) + (i) + 3);	\
		op(w##4, (p) + (i) + 4); op(w##5, (p) + (i) + 5);	\
		op(w##6, (p) + (i) + 6); op(w##7, (p) + (i) + 7);	\
	} while (0)

#define DMIRROR_KLOAD(w, p)		((w) = *(p))
#define DMIRROR_KSTORE(w, p)		(*(p) = (w))
#define DMIRROR_ULOAD(w, p)		unsafe_get_user(w, p, efault)
#define DMIRROR_USTORE(w, p)		unsafe_put_user(w, p, efault)

/**
 * dmirror_copy_page_to_user() - copy one page to user space
 * @to:   user destination of PAGE_SIZE bytes
 * @page: the page
 *
 * Context: may fault on @to, so no lock that the fault path takes.
 * Return: 0, or -EFAULT.
 */
int dmirror_copy_page_to_user(void __user *to, struct page *page)
{
	const u64 *from = kmap_local_page(page);
	u64 __user *dst = to;
	u64 w0, w1, w2, w3, w4, w5, w6, w7;
	unsigned int i;

	if (!user_access_begin(to, PAGE_SIZE))
		goto efault_unmap;
	for (i = 0; i < PAGE_SIZE / sizeof(u64); i += 8) {
		DMIRROR_EACH8(DMIRROR_KLOAD, w, from, i);
		DMIRROR_EACH8(DMIRROR_USTORE, w, dst, i);
	}
	user_access_end();
	kunmap_local(from);
	return 0;

efault:
	user_access_end();
efault_unmap:
	kunmap_local(from);
	return -EFAULT;
}

/**
 * dmirror_copy_page_from_user() - copy one page from user space
 * @to:   the kernel destination of PAGE_SIZE bytes
 * @from: user source
 *
 * Context: may fault on @from, so no lock that the fault path takes.
 * Return: 0, or -EFAULT.
 */
int dmirror_copy_page_from_user(void *to, const void __user *from)
{
	const u64 __user *src = from;
	u64 w0, w1, w2, w3, w4, w5, w6, w7;
	u64 *dst = to;
	unsigned int i;

	if (!user_access_begin(from, PAGE_SIZE))
		return -EFAULT;
	for (i = 0; i < PAGE_SIZE / sizeof(u64); i += 8) {
		DMIRROR_EACH8(DMIRROR_ULOAD, w, src, i);
		DMIRROR_EACH8(DMIRROR_KSTORE, w, dst, i);
	}
	user_access_end();
	return 0;

efault:
	user_access_end();
	return -EFAULT;
}
