// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp snapshot: HMM_DMIRROR_SNAPSHOT reports, one byte per page, what
 * the CPU page table maps, as the device would see it through
 * hmm_range_fault() without faulting anything in.  A device-private PMD of
 * this device is reported with HMM_DMIRROR_PROT_PMD: the PMD bit comes only
 * from the order hmm_range_fault() reports, that is from the core's page
 * table holding a PMD, never from the driver's own mirror table.
 *
 * Locking: each PMD-aligned window registers a temporary interval notifier
 * that only bumps its sequence; hmm_range_fault() runs under the mmap read
 * lock, and the bytes are computed under dmirror->mutex once the sequence is
 * known to be current, then copied to user space with no lock held.  The
 * pfn and byte buffers are allocated once per call.
 *
 * HMM_DMIRROR_CPU_MAP reports what the CPU's own page table holds, for what
 * hmm_range_fault() does not say: whether a PMD or a contiguous run of PTEs
 * (arm64's contpte) maps the page.  It reads the table as gup_fast() does,
 * under the mmap read lock and with interrupts off, without the page table
 * lock.
 */
#include <linux/hmm.h>
#include <linux/irqflags.h>
#include <linux/mm.h>
#include <linux/pgtable.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "dmirror.h"

/* The SNAPSHOT byte of one hmm pfn. */
static unsigned char dmirror_mkentry(struct dmirror *dmirror,
				     unsigned long hpfn)
{
	unsigned int order = hmm_pfn_to_map_order(hpfn);
	unsigned char perm;
	struct page *page;

	if (hpfn & HMM_PFN_ERROR)
		return HMM_DMIRROR_PROT_ERROR;
	if (!(hpfn & HMM_PFN_VALID))
		return HMM_DMIRROR_PROT_NONE;

	page = hmm_pfn_to_page(hpfn);
	if (is_device_private_page(page)) {
		if (dmirror_is_local_page(dmirror->mdevice, page))
			perm = HMM_DMIRROR_PROT_DEV_PRIVATE_LOCAL;
		else
			perm = HMM_DMIRROR_PROT_DEV_PRIVATE_REMOTE;
	} else if (is_zero_pfn(page_to_pfn(page))) {
		perm = HMM_DMIRROR_PROT_ZERO;
	} else {
		perm = HMM_DMIRROR_PROT_NONE;
	}
	perm |= (hpfn & HMM_PFN_WRITE) ? HMM_DMIRROR_PROT_WRITE :
					 HMM_DMIRROR_PROT_READ;
	if (order + PAGE_SHIFT == PMD_SHIFT)
		perm |= HMM_DMIRROR_PROT_PMD;
	else if (order + PAGE_SHIFT == PUD_SHIFT)
		perm |= HMM_DMIRROR_PROT_PUD;
	return perm;
}

struct dmirror_interval {
	struct mmu_interval_notifier	notifier;
	struct dmirror			*dmirror;
};

static bool dmirror_snapshot_invalidate(struct mmu_interval_notifier *mni,
					const struct mmu_notifier_range *range,
					unsigned long cur_seq)
{
	struct dmirror_interval *dmi =
		container_of(mni, struct dmirror_interval, notifier);
	struct dmirror *dmirror = dmi->dmirror;

	if (mmu_notifier_range_blockable(range))
		mutex_lock(&dmirror->mutex);
	else if (!mutex_trylock(&dmirror->mutex))
		return false;
	/* Any invalidation in the interval invalidates the whole snapshot. */
	mmu_interval_set_seq(mni, cur_seq);
	mutex_unlock(&dmirror->mutex);
	return true;
}

static const struct mmu_interval_notifier_ops dmirror_snapshot_ops = {
	.invalidate = dmirror_snapshot_invalidate,
};

static int dmirror_range_snapshot(struct dmirror *dmirror,
				  struct hmm_range *range, unsigned char *perm)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	struct dmirror_interval notifier = { .dmirror = dmirror };
	unsigned long i, n;
	int ret;

	range->notifier = &notifier.notifier;
	ret = mmu_interval_notifier_insert(range->notifier, mm, range->start,
					   range->end - range->start,
					   &dmirror_snapshot_ops);
	if (ret)
		return ret;

	ret = dmirror_hmm_fault_and_lock(dmirror, range, false);
	if (ret)
		goto out;

	/* hmm_pfns hold only while the notifier's lock is held. */
	lockdep_assert_held(&dmirror->mutex);
	n = (range->end - range->start) >> PAGE_SHIFT;
	for (i = 0; i < n; i++)
		perm[i] = dmirror_mkentry(dmirror, range->hmm_pfns[i]);
	mutex_unlock(&dmirror->mutex);
out:
	mmu_interval_notifier_remove(range->notifier);
	return ret;
}

/* HMM_DMIRROR_SNAPSHOT */
int dmirror_snapshot(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	unsigned long start = cmd->addr;
	unsigned long end = start + (cmd->npages << PAGE_SHIFT);
	char __user *uptr = u64_to_user_ptr(cmd->ptr);
	struct hmm_range range = {
		.dev_private_owner = dmirror->mdevice,
	};
	unsigned char *perm;
	unsigned long addr;
	int ret = 0;

	range.hmm_pfns = kvcalloc(HPAGE_PMD_NR, sizeof(*range.hmm_pfns),
				  GFP_KERNEL);
	perm = kvmalloc(HPAGE_PMD_NR, GFP_KERNEL);
	if (!range.hmm_pfns || !perm) {
		ret = -ENOMEM;
		goto out;
	}
	if (!mmget_not_zero(mm)) {
		ret = -ENOENT;
		goto out;
	}
	for (addr = start; addr < end; addr = range.end) {
		unsigned long n;

		range.start = addr;
		range.end = min(end, ALIGN_DOWN(addr, PMD_SIZE) + PMD_SIZE);
		ret = dmirror_range_snapshot(dmirror, &range, perm);
		if (ret)
			break;

		n = (range.end - range.start) >> PAGE_SHIFT;
		if (copy_to_user(uptr, perm, n)) {
			ret = -EFAULT;
			break;
		}
		cmd->cpages += n;
		uptr += n;
	}
	mmput(mm);
out:
	kvfree(perm);
	kvfree(range.hmm_pfns);
	return ret;
}

/* The contiguous bit of a present PTE (arm64's contpte), as a CPU_MAP flag. */
static u8 dmirror_pte_cont(pte_t pte)
{
#ifdef CONFIG_ARM64_CONTPTE
	return pte_cont(pte) ? HMM_DMIRROR_CPU_CONT : 0;
#else
	return 0;
#endif
}

/*
 * The CPU_MAP byte of @addr in @mm.  The mmap lock keeps the upper levels of
 * the table; interrupts off keep a PTE table that a concurrent collapse or
 * zap frees, since tables are freed after an RCU grace period or an IPI
 * (as gup_fast() relies on).  The PMD is read once, and the PTE table is
 * found from that copy.
 */
static u8 dmirror_cpu_entry(struct mm_struct *mm, unsigned long addr)
{
	unsigned long flags;
	pgd_t *pgdp;
	p4d_t *p4dp;
	pud_t *pudp, pud;
	pmd_t pmd;
	pte_t pte;
	u8 ret = 0;

	mmap_assert_locked(mm);
	pgdp = pgd_offset(mm, addr);
	if (!pgd_present(pgdp_get(pgdp)))
		return 0;
	p4dp = p4d_offset(pgdp, addr);
	if (!p4d_present(p4dp_get(p4dp)))
		return 0;
	pudp = pud_offset(p4dp, addr);
	pud = pudp_get(pudp);
	if (!pud_present(pud))
		return 0;
	if (pud_leaf(pud))
		return HMM_DMIRROR_CPU_PRESENT;

	local_irq_save(flags);
	pmd = pmdp_get_lockless(pmd_offset(pudp, addr));
	if (!pmd_present(pmd))
		goto out;
	if (pmd_leaf(pmd)) {
		ret = HMM_DMIRROR_CPU_PRESENT | HMM_DMIRROR_CPU_PMD;
		goto out;
	}
	pte = ptep_get_lockless(pte_offset_kernel(&pmd, addr));
	if (pte_present(pte))
		ret = HMM_DMIRROR_CPU_PRESENT | dmirror_pte_cont(pte);
out:
	local_irq_restore(flags);
	return ret;
}

/* HMM_DMIRROR_CPU_MAP */
int dmirror_cpu_map(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	u8 __user *uptr = u64_to_user_ptr(cmd->ptr);
	unsigned long i, j, n;
	u8 buf[64];
	int ret = 0;

	if (!mmget_not_zero(mm))
		return -ENOENT;
	for (i = 0; i < cmd->npages; i += n) {
		n = min_t(unsigned long, cmd->npages - i, ARRAY_SIZE(buf));
		if (mmap_read_lock_killable(mm)) {
			ret = -EINTR;
			break;
		}
		for (j = 0; j < n; j++)
			buf[j] = dmirror_cpu_entry(mm, cmd->addr +
						   ((i + j) << PAGE_SHIFT));
		mmap_read_unlock(mm);
		/* The user buffer may fault: no lock held. */
		if (copy_to_user(uptr + i, buf, n)) {
			ret = -EFAULT;
			break;
		}
		cmd->cpages += n;
		cond_resched();
	}
	mmput(mm);
	return ret;
}
