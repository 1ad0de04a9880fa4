// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp mirror: the simulated device page table, and the commands that
 * use it (READ, WRITE, EXCLUSIVE, CHECK_EXCLUSIVE and the read-back after
 * MIGRATE_TO_DEV; SNAPSHOT is in snapshot.c).
 *
 * The page table is one xarray, dmirror->pt, keyed by virtual pfn.  An
 * entry maps an aligned run of 1 << order pages, as a device's large PTE
 * does: a multi-index entry of that order holding the tagged struct page *
 * of the run's first page; the page of a vpfn in the run is that page plus
 * the vpfn's offset.  A folio gets one entry when hmm_range_fault() found
 * all of it mapped in order, with the same permissions, at an address
 * aligned to its size (a THP by its PMD and an mTHP by its PTEs alike), so
 * that an invalidation erases it at once; any other page gets an entry of
 * its own.  Entries never overlap.  The table holds no page references: the
 * mmu interval notifier erases every entry of a range before the CPU page
 * table of that range changes, migrations of this device's own pages
 * included, and an entry that reaches out of the range with it.
 * Device pages are read and written through their backing store.
 * hmm_range_fault() never faults this device's own pages, so a device write
 * to a read-only one (COW after fork) first migrates its window back to
 * system memory, where the write fault breaks the COW.
 *
 * Device accesses go a PMD window at a time.  A read takes a reference on
 * each folio it found under dmirror->mutex and copies to user space after
 * dropping it, so a read costs one copy; a write copies the user's data into
 * a PMD-sized bounce buffer first, then into the pages under the mutex, so
 * that it cannot race with a migration of the pages it writes.
 *
 * Locking: dmirror->mutex protects the xarray.  The notifier takes it, so
 * nothing under it may fault on user memory or allocate with reclaim; stores
 * use GFP_ATOMIC.  hmm_range_fault() and make_device_exclusive() run under
 * the mmap read lock only; the notifier sequence is checked under
 * dmirror->mutex.
 */
#include <linux/delay.h>
#include <linux/hmm.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/rmap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "dmirror.h"

/* Lookups of a missing page before the read-back reports -ENOENT. */
#define DMIRROR_READ_BACK_TRIES	10
/*
 * Times a device write migrates one window back to system memory to break
 * COW (fork shared it read-only) before it gives up with -EBUSY.
 */
#define DMIRROR_COW_RETRIES	3

/* The entry that maps @vpfn, and its order; caller holds dmirror->mutex. */
static void *dmirror_pt_load(struct dmirror *dmirror, unsigned long vpfn,
			     unsigned int *order)
{
	XA_STATE(xas, &dmirror->pt, vpfn);
	void *entry;

	lockdep_assert_held(&dmirror->mutex);
	rcu_read_lock();
	entry = xas_load(&xas);
	*order = entry ? xas_get_order(&xas) : 0;
	rcu_read_unlock();
	return entry;
}

/*
 * The page that the mirror maps at @vpfn, with its entry's tag; *@nr is the
 * number of pages from @vpfn on that the entry maps (the next pages, at the
 * next vpfns).  Caller holds dmirror->mutex.
 */
static struct page *dmirror_pt_lookup(struct dmirror *dmirror,
				      unsigned long vpfn, unsigned long *tag,
				      unsigned long *nr)
{
	unsigned int order;
	void *entry = dmirror_pt_load(dmirror, vpfn, &order);
	unsigned long off;

	if (!entry)
		return NULL;
	off = vpfn & ((1UL << order) - 1);
	*tag = xa_pointer_tag(entry);
	*nr = (1UL << order) - off;
	return (struct page *)xa_untag_pointer(entry) + off;
}

/**
 * dmirror_pt_store() - record a mapping in the mirror page table
 * @dmirror: the mirror; caller holds dmirror->mutex
 * @vpfn:    virtual pfn of the first page, aligned to 1 << @order
 * @page:    the page at @vpfn; the pages that follow it map the next vpfns
 * @tag:     DPT_XA_TAG_*
 * @order:   0, or the order of the folio that @page starts, mapped whole
 *
 * The new entry replaces whatever it overlaps.
 *
 * Return: 0, -EINVAL if @vpfn is not aligned, or -ENOMEM if the xarray
 * could not allocate.
 */
static int dmirror_pt_store(struct dmirror *dmirror, unsigned long vpfn,
			    struct page *page, unsigned long tag,
			    unsigned int order)
{
	void *entry = xa_tag_pointer(page, tag);
	unsigned int old_order;

	lockdep_assert_held(&dmirror->mutex);
	if (WARN_ON_ONCE(!IS_ALIGNED(vpfn, 1UL << order)))
		return -EINVAL;
	/* A store into a larger entry would change all of that entry. */
	if (dmirror_pt_load(dmirror, vpfn, &old_order) && old_order > order)
		xa_erase(&dmirror->pt, vpfn);
	if (!order)
		return xa_err(xa_store(&dmirror->pt, vpfn, entry, GFP_ATOMIC));
	return xa_err(xa_store_range(&dmirror->pt, vpfn,
				     vpfn + (1UL << order) - 1, entry,
				     GFP_ATOMIC));
}

/*
 * Erase the entries that map any of [start, end), each at once, whatever it
 * maps beyond the range too; caller holds dmirror->mutex.
 */
static void dmirror_pt_zap(struct dmirror *dmirror, unsigned long start,
			   unsigned long end)
{
	XA_STATE(xas, &dmirror->pt, start >> PAGE_SHIFT);
	void *entry;

	lockdep_assert_held(&dmirror->mutex);
	xas_lock(&xas);
	xas_for_each(&xas, entry, (end - 1) >> PAGE_SHIFT)
		xas_store(&xas, NULL);
	xas_unlock(&xas);
}

static bool dmirror_interval_invalidate(struct mmu_interval_notifier *mni,
					const struct mmu_notifier_range *range,
					unsigned long cur_seq)
{
	struct dmirror *dmirror = container_of(mni, struct dmirror, notifier);

	/*
	 * Our own make_device_exclusive(): dmirror_exclusive_page() stores
	 * the entry, and would never see its sequence unchanged otherwise.
	 */
	if (range->event == MMU_NOTIFY_EXCLUSIVE &&
	    range->owner == dmirror->mdevice)
		return true;

	if (mmu_notifier_range_blockable(range))
		mutex_lock(&dmirror->mutex);
	else if (!mutex_trylock(&dmirror->mutex))
		return false;

	mmu_interval_set_seq(mni, cur_seq);
	dmirror_pt_zap(dmirror, range->start, range->end);
	mutex_unlock(&dmirror->mutex);
	return true;
}

const struct mmu_interval_notifier_ops dmirror_min_ops = {
	.invalidate = dmirror_interval_invalidate,
};

/* The page whose bytes the device sees for a mirror entry. */
static struct page *dmirror_data_page(struct dmirror *dmirror,
				      struct page *page)
{
	if (is_device_private_page(page))
		return dmirror_is_local_page(dmirror->mdevice, page) ?
		       dmirror_backing_page(page) : NULL;
	return page;
}

/*
 * What a device read holds of one page between the lookup and the copy: the
 * page whose bytes it copies (a system page, or the backing of a device
 * page) and the folio reference that keeps it alive, taken once per folio.
 */
struct dmirror_page_ref {
	struct page	*data;
	struct folio	*ref;
};

/*
 * Take a reference on the folio of each page of [start, end), within one
 * PMD, and note its data page, into @refs until one is missing from the
 * mirror; *@got counts them.  Caller holds dmirror->mutex, under which a
 * mirrored page cannot be freed.  A device folio holds its backing store,
 * so a reference on it keeps the data page too.
 */
static int dmirror_get_pages(struct dmirror *dmirror, unsigned long start,
			     unsigned long end, struct dmirror_page_ref *refs,
			     unsigned long *got)
{
	unsigned long vpfn = start >> PAGE_SHIFT, last = end >> PAGE_SHIFT;
	struct folio *held = NULL;
	unsigned long tag, nr;
	struct page *page;

	lockdep_assert_held(&dmirror->mutex);
	while (vpfn < last) {
		page = dmirror_pt_lookup(dmirror, vpfn, &tag, &nr);
		if (!page)
			return -ENOENT;
		for (nr = min(nr, last - vpfn); nr; nr--, vpfn++, page++) {
			struct page *data = dmirror_data_page(dmirror, page);

			if (!data)
				return -ENOENT;
			refs[*got].ref = NULL;
			if (page_folio(page) != held) {
				held = page_folio(page);
				folio_get(held);
				refs[*got].ref = held;
			}
			refs[(*got)++].data = data;
		}
	}
	return 0;
}

/*
 * Write @src into the pages of [start, end) that the device may write,
 * until one is missing; *@done counts them.  Caller holds dmirror->mutex.
 */
static int dmirror_put_data(struct dmirror *dmirror, unsigned long start,
			    unsigned long end, const void *src,
			    unsigned long *done)
{
	unsigned long vpfn = start >> PAGE_SHIFT, last = end >> PAGE_SHIFT;
	unsigned long tag, nr;
	struct page *page;

	lockdep_assert_held(&dmirror->mutex);
	while (vpfn < last) {
		page = dmirror_pt_lookup(dmirror, vpfn, &tag, &nr);
		if (!page || tag != DPT_XA_TAG_WRITE)
			return -ENOENT;
		for (nr = min(nr, last - vpfn); nr; nr--, vpfn++, page++) {
			struct page *data = dmirror_data_page(dmirror, page);

			if (!data)
				return -ENOENT;
			memcpy_to_page(data, 0, src, PAGE_SIZE);
			/*
			 * A system page: its PTE may be writable and clean
			 * (a read fault maps an exclusive swap-cache folio
			 * so), and reclaim frees a clean folio for its swap
			 * copy, this write with it.  No folio lock: reclaim
			 * holds it while it waits for dmirror->mutex in the
			 * invalidation; the mirror entry keeps the folio
			 * mapped until then.
			 */
			if (data == page)
				folio_mark_dirty(page_folio(page));
			src += PAGE_SIZE;
			(*done)++;
		}
	}
	return 0;
}

/*
 * The order of the entry for what @hpfns[0, n) map from @vpfn on: the
 * order of the folio they start if they map all of it, in order, with the
 * same permissions, and @vpfn is aligned to its size; else 0.  Caller
 * holds dmirror->mutex with the range's notifier sequence checked, so the
 * folios stay mapped.
 */
static unsigned int dmirror_run_order(struct dmirror *dmirror,
				      const unsigned long *hpfns,
				      unsigned long n, unsigned long vpfn)
{
	struct page *page = hmm_pfn_to_page(hpfns[0]);
	struct folio *folio = page_folio(page);
	unsigned long i, nr = folio_nr_pages(folio);

	lockdep_assert_held(&dmirror->mutex);
	if (nr == 1 || nr > n || !IS_ALIGNED(vpfn, nr) ||
	    folio_page(folio, 0) != page)
		return 0;
	/* The pfn is in the low bits: the flags must be the same. */
	for (i = 1; i < nr; i++)
		if (hpfns[i] != hpfns[0] + i)
			return 0;
	return folio_order(folio);
}

/*
 * Record what hmm_range_fault() found; caller holds dmirror->mutex.  Without
 * HMM_PFN_REQ_FAULT, pages that are not readable as they are get no entry.
 */
static int dmirror_do_fault(struct dmirror *dmirror, struct hmm_range *range)
{
	unsigned long n = (range->end - range->start) >> PAGE_SHIFT;
	unsigned long vpfn = range->start >> PAGE_SHIFT;
	bool fault = range->default_flags & HMM_PFN_REQ_FAULT;
	bool write = range->default_flags & HMM_PFN_REQ_WRITE;
	unsigned long i, step;
	unsigned int order;
	int ret;

	lockdep_assert_held(&dmirror->mutex);
	for (i = 0; i < n; i += step, vpfn += step) {
		unsigned long hpfn = range->hmm_pfns[i];
		unsigned long tag = DPT_XA_TAG_READ;

		step = 1;
		if (!(hpfn & HMM_PFN_VALID) || (hpfn & HMM_PFN_ERROR)) {
			if (fault)
				return -EFAULT;
			continue;
		}
		if (hpfn & HMM_PFN_WRITE)
			tag = DPT_XA_TAG_WRITE;
		else if (write)
			/*
			 * hmm_range_fault() does not fault our own pages:
			 * a read-only one (COW after fork) must come back
			 * to system memory first.
			 */
			return dmirror_is_local_page(dmirror->mdevice,
						     hmm_pfn_to_page(hpfn)) ?
			       -EAGAIN : -EFAULT;

		order = dmirror_run_order(dmirror, range->hmm_pfns + i, n - i,
					  vpfn);
		step = 1UL << order;
		ret = dmirror_pt_store(dmirror, vpfn, hmm_pfn_to_page(hpfn),
				       tag, order);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * hmm_range_fault() turns every VM_FAULT_ERROR into -EFAULT, VM_FAULT_OOM
 * included.  If the whole range is mapped anonymous memory with the access
 * asked for, the fault failed for memory: report that as -ENOMEM, which a
 * caller may retry.  Caller holds the mmap read lock.
 */
static int dmirror_fault_errno(struct mm_struct *mm, struct hmm_range *range)
{
	vm_flags_t need = VM_READ;
	unsigned long addr = range->start;
	struct vm_area_struct *vma;

	mmap_assert_locked(mm);
	if (range->default_flags & HMM_PFN_REQ_WRITE)
		need |= VM_WRITE;
	while (addr < range->end) {
		vma = vma_lookup(mm, addr);
		if (!vma || !vma_is_anonymous(vma) ||
		    (vma->vm_flags & need) != need)
			return -EFAULT;
		addr = vma->vm_end;
	}
	return -ENOMEM;
}

/*
 * One hmm_range_fault() of @range with the mmap lock held throughout, or
 * (@unlocked) with hmm_range_fault_unlocked_timeout(), whose faults may
 * drop the lock and wait, for a userfaultfd say; either way with
 * range->notifier_seq set.
 */
static int dmirror_hmm_range_fault(struct dmirror *dmirror,
				   struct hmm_range *range, bool unlocked)
{
	unsigned long timeout = msecs_to_jiffies(HMM_RANGE_DEFAULT_TIMEOUT);
	struct mm_struct *mm = dmirror->notifier.mm;
	int ret;

	if (unlocked) {
		ret = hmm_range_fault_unlocked_timeout(range, timeout);
		if (ret != -EFAULT)
			return ret;
		mmap_read_lock(mm);
	} else {
		range->notifier_seq = mmu_interval_read_begin(range->notifier);
		mmap_read_lock(mm);
		ret = hmm_range_fault(range);
	}
	if (ret == -EFAULT)
		ret = dmirror_fault_errno(mm, range);
	mmap_read_unlock(mm);
	return ret;
}

/**
 * dmirror_hmm_fault_and_lock() - hmm_range_fault(), then take dmirror->mutex
 * @dmirror:  the mirror
 * @range:    the range, with its notifier set
 * @unlocked: let the faults drop the mmap lock and wait (READ_UNLOCKED)
 *
 * Faults until the result is stable under dmirror->mutex, the lock that the
 * interval notifier takes: the caller uses @range->hmm_pfns, then unlocks.
 *
 * Context: takes dmirror->mutex on success, and returns with it held.
 * Return: 0, or without the lock: -EBUSY after HMM_RANGE_DEFAULT_TIMEOUT,
 * -EFAULT for a range the access is not allowed to, -ENOMEM, -EINTR.
 */
int dmirror_hmm_fault_and_lock(struct dmirror *dmirror,
			       struct hmm_range *range, bool unlocked)
{
	unsigned long timeout =
		jiffies + msecs_to_jiffies(HMM_RANGE_DEFAULT_TIMEOUT);
	int ret;

	for (;;) {
		if (time_after(jiffies, timeout))
			return -EBUSY;

		ret = dmirror_hmm_range_fault(dmirror, range, unlocked);
		if (ret == -EBUSY)
			continue;
		if (ret)
			return ret;

		mutex_lock(&dmirror->mutex);
		if (!mmu_interval_read_retry(range->notifier,
					     range->notifier_seq))
			return 0;
		mutex_unlock(&dmirror->mutex);
	}
}

static int dmirror_range_fault(struct dmirror *dmirror,
			       struct hmm_range *range, bool unlocked)
{
	int ret = dmirror_hmm_fault_and_lock(dmirror, range, unlocked);

	if (ret)
		return ret;
	ret = dmirror_do_fault(dmirror, range);
	mutex_unlock(&dmirror->mutex);
	return ret;
}

/* Migrate this device's pages in [start, end) back to system memory. */
static int dmirror_window_to_sys(struct dmirror *dmirror, unsigned long start,
				 unsigned long end)
{
	struct dmirror_migrate_ctx ctx = {
		.mdevice = dmirror->mdevice,
		.dmirror = dmirror,
	};
	u64 moved;

	dmirror_clock_start(&ctx, HMM_DMIRROR_PATH_TO_SYS);
	return dmirror_migrate_range(&ctx, start, end, false, &moved);
}

/*
 * Fault [start, end) into the mirror, one PMD-aligned window at a time.
 * @req: HMM_PFN_REQ_FAULT, optionally with HMM_PFN_REQ_WRITE; or 0 to only
 * record what is readable without a fault.  @unlocked: the faults may drop
 * the mmap lock and wait (see dmirror_hmm_fault_and_lock()).
 */
static int dmirror_fault(struct dmirror *dmirror, unsigned long start,
			 unsigned long end, unsigned long req, bool unlocked)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	struct hmm_range range = {
		.notifier = &dmirror->notifier,
		.default_flags = req,
		.dev_private_owner = dmirror->mdevice,
	};
	unsigned int cow = 0;
	unsigned long addr;
	int ret = 0;

	range.hmm_pfns = kvcalloc(HPAGE_PMD_NR, sizeof(*range.hmm_pfns),
				  GFP_KERNEL);
	if (!range.hmm_pfns)
		return -ENOMEM;
	if (!mmget_not_zero(mm)) {
		ret = -ENOENT;
		goto out;
	}
	for (addr = start; addr < end; addr = range.end) {
		range.start = addr;
		range.end = min(end, ALIGN_DOWN(addr, PMD_SIZE) + PMD_SIZE);
		ret = dmirror_range_fault(dmirror, &range, unlocked);
		if (ret == -EAGAIN) {
			if (++cow > DMIRROR_COW_RETRIES) {
				ret = -EBUSY;
				break;
			}
			/* Then the write fault breaks the COW; retry. */
			ret = dmirror_window_to_sys(dmirror, range.start,
						    range.end);
			if (ret)
				break;
			range.end = addr;
			continue;
		}
		if (ret)
			break;
		cow = 0;
	}
	mmput(mm);
out:
	kvfree(range.hmm_pfns);
	return ret;
}

enum dmirror_access {
	DMIRROR_READ,		/* READ: fault missing pages in */
	DMIRROR_READ_UNLOCKED,	/* READ_UNLOCKED: the same, waiting faults */
	DMIRROR_WRITE,		/* WRITE: fault them in writable */
	DMIRROR_READ_BACK,	/* after MIGRATE_TO_DEV: look up, retry */
	DMIRROR_LOOKUP,		/* after EXCLUSIVE: look up only */
};

/* Copy @n pages to user space at @uptr and drop their references. */
static int dmirror_copy_pages_out(char __user *uptr,
				  struct dmirror_page_ref *refs,
				  unsigned long n)
{
	unsigned long i;
	int ret = 0;

	for (i = 0; i < n; i++) {
		if (!ret)
			ret = dmirror_copy_page_to_user(uptr + i * PAGE_SIZE,
							refs[i].data);
	}
	for (i = 0; i < n; i++)
		if (refs[i].ref)
			folio_put(refs[i].ref);
	return ret;
}

/* Copy [uptr, uptr + size) into the write bounce buffer. */
static int dmirror_copy_in(void *bounce, const char __user *uptr,
			   unsigned long size)
{
	unsigned long off;

	for (off = 0; off < size; off += PAGE_SIZE)
		if (dmirror_copy_page_from_user(bounce + off, uptr + off))
			return -EFAULT;
	return 0;
}

/* One device access: the command, and its buffers. */
struct dmirror_access_state {
	struct dmirror		*dmirror;
	struct hmm_dmirror_cmd	*cmd;
	enum dmirror_access	acc;
	struct dmirror_page_ref	*refs;	/* a read's pages, one window's */
	void			*bounce;	/* a write's data, one window's */
	char __user		*uptr;	/* the window's place in cmd->ptr */
};

/*
 * One window [wstart, wend) of a device access: look the pages up (and
 * copy the bounce buffer into them for a write) under dmirror->mutex, fault
 * or look again where one is missing, and for a read copy them out to the
 * user buffer.  *@done counts the pages of the window that were accessed.
 */
static int dmirror_access_window(struct dmirror_access_state *as,
				 unsigned long wstart, unsigned long wend,
				 unsigned long *done)
{
	struct dmirror *dmirror = as->dmirror;
	struct hmm_dmirror_cmd *cmd = as->cmd;
	enum dmirror_access acc = as->acc;
	unsigned long end = cmd->addr + (cmd->npages << PAGE_SHIFT);
	unsigned long req = HMM_PFN_REQ_FAULT;
	unsigned int tries = 0;
	unsigned long miss;
	int ret;

	*done = 0;
	for (;;) {
		miss = wstart + (*done << PAGE_SHIFT);
		mutex_lock(&dmirror->mutex);
		if (acc == DMIRROR_WRITE)
			ret = dmirror_put_data(dmirror, miss, wend,
					       as->bounce + (*done << PAGE_SHIFT),
					       done);
		else
			ret = dmirror_get_pages(dmirror, miss, wend, as->refs,
						done);
		mutex_unlock(&dmirror->mutex);
		if (ret != -ENOENT)
			break;

		switch (acc) {
		case DMIRROR_WRITE:
			req |= HMM_PFN_REQ_WRITE;
			fallthrough;
		case DMIRROR_READ:
		case DMIRROR_READ_UNLOCKED:
			/* As test_hmm: one fault of the rest of the range. */
			ret = dmirror_fault(dmirror, miss, end, req,
					    acc == DMIRROR_READ_UNLOCKED);
			cmd->faults++;
			break;
		case DMIRROR_READ_BACK:
			if (tries == DMIRROR_READ_BACK_TRIES)
				goto out;
			if (tries++)
				usleep_range(500, 1000);
			ret = dmirror_fault(dmirror, miss, wend, 0, false);
			break;
		case DMIRROR_LOOKUP:
			goto out;
		}
		if (ret)
			break;
	}
out:
	if (acc != DMIRROR_WRITE) {
		int err = dmirror_copy_pages_out(as->uptr, as->refs,
						 *done);

		ret = ret ?: err;
	}
	return ret;
}

/*
 * READ, WRITE and the read-backs: the range a PMD window at a time, with
 * one array of page pointers for a read, or one PMD-sized bounce buffer for
 * a write.
 */
static int dmirror_access(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd,
			  enum dmirror_access acc)
{
	unsigned long size = cmd->npages << PAGE_SHIFT;
	unsigned long end = cmd->addr + size, wstart, wend, done;
	struct dmirror_access_state as = {
		.dmirror = dmirror,
		.cmd = cmd,
		.acc = acc,
		.uptr = u64_to_user_ptr(cmd->ptr),
	};
	int ret = 0;

	if (acc == DMIRROR_WRITE)
		as.bounce = kvmalloc(min(size, PMD_SIZE), GFP_KERNEL);
	else
		as.refs = kvmalloc_array(HPAGE_PMD_NR, sizeof(*as.refs),
					 GFP_KERNEL);
	if (!as.bounce && !as.refs)
		return -ENOMEM;

	cmd->cpages = 0;
	for (wstart = cmd->addr; wstart < end; wstart = wend) {
		wend = min(end, ALIGN_DOWN(wstart, PMD_SIZE) + PMD_SIZE);
		if (as.bounce) {
			ret = dmirror_copy_in(as.bounce, as.uptr, wend - wstart);
			if (ret)
				break;
		}
		ret = dmirror_access_window(&as, wstart, wend, &done);
		cmd->cpages += done;
		if (ret)
			break;
		as.uptr += wend - wstart;
	}
	kvfree(as.bounce);
	kvfree(as.refs);
	return ret;
}

/* HMM_DMIRROR_READ */
int dmirror_read(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd)
{
	return dmirror_access(dmirror, cmd, DMIRROR_READ);
}

/* HMM_DMIRROR_READ_UNLOCKED */
int dmirror_read_unlocked(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd)
{
	return dmirror_access(dmirror, cmd, DMIRROR_READ_UNLOCKED);
}

/* HMM_DMIRROR_WRITE */
int dmirror_write(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd)
{
	return dmirror_access(dmirror, cmd, DMIRROR_WRITE);
}

/**
 * dmirror_read_back() - copy what the mirror maps of the range to cmd->ptr
 * @dmirror: the mirror
 * @cmd:     the command (addr, npages, ptr; cpages is set)
 * @retry:   look again at pages that went back to system memory meanwhile
 *
 * Used after MIGRATE_TO_DEV and EXCLUSIVE.  Nothing is faulted in, so a page
 * the device cannot read as it is (not populated, on another device) gives
 * -ENOENT, as in test_hmm.  With @retry, a page that is missing from the
 * mirror (after MIGRATE_TO_DEV all of them are: the migration does not
 * record them) is looked up with hmm_range_fault() a few times before
 * giving up; without it, only the mirror is read.
 *
 * Return: 0, -ENOENT, -EFAULT for a bad cmd->ptr, or -ENOMEM.
 */
int dmirror_read_back(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd,
		      bool retry)
{
	return dmirror_access(dmirror, cmd,
			      retry ? DMIRROR_READ_BACK : DMIRROR_LOOKUP);
}

/*
 * Every page of [start, end) must be mapped, and with @anon in a readable
 * private anonymous mapping.  Caller holds the mmap lock.
 */
static int dmirror_check_vmas(struct mm_struct *mm, unsigned long start,
			      unsigned long end, bool anon)
{
	struct vm_area_struct *vma;
	unsigned long addr;

	mmap_assert_locked(mm);
	for (addr = start; addr < end; addr = vma->vm_end) {
		vma = vma_lookup(mm, addr);
		if (!vma)
			return -EINVAL;
		if (anon && (!vma_is_anonymous(vma) ||
			     !(vma->vm_flags & VM_READ)))
			return -EINVAL;
	}
	return 0;
}

/*
 * For race tests: hold each page between make_device_exclusive() and the
 * mirror's store this long, so that a zap can land in between (the life
 * suite's race2.exclusive_races_dontneed).
 */
static unsigned int exclusive_delay_ms;
module_param(exclusive_delay_ms, uint, 0644);
MODULE_PARM_DESC(exclusive_delay_ms,
		 "Test hook: milliseconds between making a page exclusive and mirroring it (default 0)");

#define DMIRROR_EXCLUSIVE_TRIES	10

/*
 * Make the page at @addr exclusive to the device and mirror it as atomic.
 * MADV_DONTNEED zaps under the mmap lock for read, as this runs, and the
 * page is freed when the reference below is dropped: an entry stored after
 * such a zap would outlive its page.  So the store checks the interval's
 * sequence, taken before make_device_exclusive() (whose own invalidation
 * the notifier ignores), and the page is made exclusive again if anything
 * else invalidated meanwhile.
 */
static int dmirror_exclusive_page(struct dmirror *dmirror, unsigned long addr)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	unsigned int tries;

	mmap_assert_locked(mm);
	for (tries = 0; tries < DMIRROR_EXCLUSIVE_TRIES; tries++) {
		unsigned long seq;
		struct folio *folio;
		struct page *page;
		bool stale;
		int ret = 0;

		/*
		 * A stale try leaves its device-exclusive entry in place (the
		 * first try of a PMD-mapped THP is stale after the split
		 * under it).  make_device_exclusive() would restore that entry
		 * by a fault whose invalidation (MMU_NOTIFY_CLEAR, no owner)
		 * makes the next try stale too, and so on until -EBUSY: fault
		 * the page back before the sequence is taken.
		 */
		if (tries) {
			ret = fixup_user_fault(mm, addr, FAULT_FLAG_WRITE, NULL);
			if (ret)
				return ret == -ENOMEM ? -ENOMEM : -EBUSY;
		}
		seq = mmu_interval_read_begin(&dmirror->notifier);

		/* The page comes back locked, its folio referenced. */
		page = make_device_exclusive(mm, addr, dmirror->mdevice, &folio);
		if (IS_ERR(page))
			return PTR_ERR(page) == -ENOMEM ? -ENOMEM : -EBUSY;
		if (READ_ONCE(exclusive_delay_ms))
			msleep(READ_ONCE(exclusive_delay_ms));
		mutex_lock(&dmirror->mutex);
		stale = mmu_interval_read_retry(&dmirror->notifier, seq);
		if (!stale)
			ret = dmirror_pt_store(dmirror, addr >> PAGE_SHIFT, page,
					       DPT_XA_TAG_ATOMIC, 0);
		mutex_unlock(&dmirror->mutex);
		folio_unlock(folio);
		folio_put(folio);
		if (!stale)
			return ret;
	}
	return -EBUSY;
}

/* HMM_DMIRROR_EXCLUSIVE */
int dmirror_exclusive(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	unsigned long start = cmd->addr;
	unsigned long end = start + (cmd->npages << PAGE_SHIFT);
	unsigned long addr;
	int ret;

	if (!mmget_not_zero(mm))
		return -ENOENT;

	mmap_read_lock(mm);
	ret = dmirror_check_vmas(mm, start, end, true);
	for (addr = start; !ret && addr < end; addr += PAGE_SIZE)
		ret = dmirror_exclusive_page(dmirror, addr);
	mmap_read_unlock(mm);
	mmput(mm);
	if (ret)
		return ret;

	/* Return the data for verification. */
	return dmirror_read_back(dmirror, cmd, false);
}

/*
 * HMM_DMIRROR_CHECK_EXCLUSIVE: -EPERM while any page is still atomic, and
 * -EINVAL if part of the range is not mapped.
 */
int dmirror_check_exclusive(struct dmirror *dmirror,
			    struct hmm_dmirror_cmd *cmd)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	unsigned long first = cmd->addr >> PAGE_SHIFT;
	unsigned long last = first + cmd->npages - 1;
	unsigned long idx;
	void *entry;
	int ret;

	if (!mmget_not_zero(mm))
		return -ENOENT;
	mmap_read_lock(mm);
	ret = dmirror_check_vmas(mm, cmd->addr,
				 cmd->addr + (cmd->npages << PAGE_SHIFT), false);
	mmap_read_unlock(mm);
	mmput(mm);
	if (ret)
		return ret;

	mutex_lock(&dmirror->mutex);
	xa_for_each_range(&dmirror->pt, idx, entry, first, last) {
		if (xa_pointer_tag(entry) == DPT_XA_TAG_ATOMIC) {
			ret = -EPERM;
			break;
		}
	}
	mutex_unlock(&dmirror->mutex);
	return ret;
}
