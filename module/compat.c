// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp compat: hmm_range_fault_unlocked_timeout() for a tree that
 * lacks it (6.12).  Built only there (Kbuild); see compat.h.
 *
 * hmm_range_fault() faults with the mmap lock held and no
 * FAULT_FLAG_ALLOW_RETRY, so a fault that must wait with the lock dropped
 * (a userfaultfd-registered range, for one) fails with -EFAULT.  6.12's way
 * around it is the one that get_user_pages() callers use: look with
 * hmm_range_fault() without faulting, fault what is missing with
 * fixup_user_fault(), which may drop and retake the lock, then look again.
 */
#include <linux/hmm.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/signal.h>

#include "compat.h"

/* Would hmm_range_fault() fault the entry @hpfn for the request @req? */
static bool dmirror_compat_need_fault(const struct hmm_range *range,
				      unsigned long hpfn, unsigned long req)
{
	struct page *page;

	if (!(req & HMM_PFN_REQ_FAULT))
		return false;
	if (!(hpfn & HMM_PFN_VALID) || (hpfn & HMM_PFN_ERROR))
		return true;
	/* hmm_range_fault() reports the owner's device pages, never faults. */
	page = hmm_pfn_to_page(hpfn);
	if (is_device_private_page(page) &&
	    page_pgmap(page)->owner == range->dev_private_owner)
		return false;
	return (req & HMM_PFN_REQ_WRITE) && !(hpfn & HMM_PFN_WRITE);
}

/*
 * Fault what the look found missing, with the mmap lock held (and maybe
 * dropped and retaken).  Return: -EBUSY to look again, 0 if nothing was
 * missing, or an error.
 */
static int dmirror_compat_fault_missing(struct hmm_range *range,
					unsigned long req, bool *unlocked)
{
	struct mm_struct *mm = range->notifier->mm;
	unsigned long i, n = (range->end - range->start) >> PAGE_SHIFT;
	unsigned int flags = (req & HMM_PFN_REQ_WRITE) ? FAULT_FLAG_WRITE : 0;
	bool faulted = false;
	int ret;

	for (i = 0; i < n && !*unlocked; i++) {
		if (!dmirror_compat_need_fault(range, range->hmm_pfns[i], req))
			continue;
		ret = fixup_user_fault(mm, range->start + (i << PAGE_SHIFT),
				       flags, unlocked);
		if (ret)
			return ret;
		faulted = true;
	}
	return faulted ? -EBUSY : 0;
}

/**
 * dmirror_compat_hmm_range_fault_unlocked_timeout() - 7.3's call, on 6.12
 * @range:   as for hmm_range_fault(); the caller holds no mmap lock
 * @timeout: jiffies of -EBUSY retries without progress, 0 for no limit
 *
 * Return: 0 with @range->hmm_pfns filled in under @range->notifier_seq,
 * which the caller checks with mmu_interval_read_retry(); -EBUSY after
 * @timeout; -EINTR for a fatal signal; an error of hmm_range_fault() or
 * of the fault.
 */
int dmirror_compat_hmm_range_fault_unlocked_timeout(struct hmm_range *range,
						    unsigned long timeout)
{
	struct mm_struct *mm = range->notifier->mm;
	unsigned long req = range->default_flags;
	unsigned long deadline = jiffies + timeout;
	bool unlocked;
	int ret;

	do {
		if (fatal_signal_pending(current))
			return -EINTR;
		if (timeout && time_after(jiffies, deadline))
			return -EBUSY;
		range->notifier_seq = mmu_interval_read_begin(range->notifier);
		ret = mmap_read_lock_killable(mm);
		if (ret)
			return ret;
		/* Look only: a fault here could not wait for a userfaultfd. */
		range->default_flags = 0;
		ret = hmm_range_fault(range);
		range->default_flags = req;
		unlocked = false;
		if (!ret)
			ret = dmirror_compat_fault_missing(range, req, &unlocked);
		mmap_read_unlock(mm);
		/* A fault that dropped the lock made progress. */
		if (unlocked)
			deadline = jiffies + timeout;
	} while (ret == -EBUSY);
	return ret;
}
