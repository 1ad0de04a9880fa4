// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp copies between a device page's backing store and user space:
 * one page with copy_to_user() or copy_from_user(), as a driver's copy
 * through a bounce buffer does.
 */
#include <linux/highmem.h>
#include <linux/uaccess.h>

#include "dmirror.h"

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
	void *from = kmap_local_page(page);
	unsigned long left = copy_to_user(to, from, PAGE_SIZE);

	kunmap_local(from);
	return left ? -EFAULT : 0;
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
	return copy_from_user(to, from, PAGE_SIZE) ? -EFAULT : 0;
}
