// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp: a THP-aware HMM mirror test device (module, devices, ioctls).
 *
 * A software stand-in for a GPU driver's device-memory manager.  It creates
 * /dev/hmm_dmirror0 and /dev/hmm_dmirror1 (device-private, mode 0600
 * root:root), speaks a superset of the lib/test_hmm ABI of 6.12 and 7.3 (see
 * dmirror_thp_uapi.h) and migrates anonymous THPs and mTHPs to and from
 * device memory as whole folios.
 *
 * This file: the module, the devices, ioctl validation and dispatch; the
 * other files are listed, top to bottom, in dmirror.h.
 *
 * Locking: an open file is bound to the opener's mm, and every command that
 * takes a range runs only in that mm; a command holds no lock of this file
 * across the call into its handler.  The device structure lives as long as
 * its struct device: an open file pins it through the cdev.  The device's
 * list of open files (for HMM_DMIRROR_FLAG_FAIL_ALLOC on CPU faults) is
 * protected by files_lock; the flag words and the counters are atomic.
 */
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "dmirror.h"

static unsigned int max_mb = 1024;
module_param(max_mb, uint, 0444);
MODULE_PARM_DESC(max_mb,
		 "Device memory per device in MiB, a multiple of the 256 MiB chunk (default 1024)");

static dev_t dmirror_dev;
static struct dmirror_device *dmirror_devices[DMIRROR_NDEVICES];

static int dmirror_fops_open(struct inode *inode, struct file *filp)
{
	struct dmirror_device *mdevice =
		container_of(inode->i_cdev, struct dmirror_device, cdevice);
	struct dmirror *dmirror;
	int ret;

	if (!current->mm)
		return -ENOENT;
	dmirror = kzalloc_obj(*dmirror, GFP_KERNEL);
	if (!dmirror)
		return -ENOMEM;
	dmirror->mdevice = mdevice;
	mutex_init(&dmirror->mutex);
	xa_init(&dmirror->pt);

	/* Mirror the opener's address space, and only that. */
	ret = mmu_interval_notifier_insert(&dmirror->notifier, current->mm, 0,
					   ULONG_MAX & PAGE_MASK,
					   &dmirror_min_ops);
	if (ret) {
		kfree(dmirror);
		return ret;
	}
	spin_lock(&mdevice->files_lock);
	list_add(&dmirror->link, &mdevice->files);
	spin_unlock(&mdevice->files_lock);
	filp->private_data = dmirror;
	return 0;
}

/*
 * Device pages stay where they are: they live in the mm's page tables, not
 * in the mirror, and a CPU fault brings them back without it.  The file's
 * flags (an armed FAIL_ALLOC) go with it.
 */
static int dmirror_fops_release(struct inode *inode, struct file *filp)
{
	struct dmirror *dmirror = filp->private_data;
	struct dmirror_device *mdevice = dmirror->mdevice;

	spin_lock(&mdevice->files_lock);
	list_del(&dmirror->link);
	spin_unlock(&mdevice->files_lock);
	mmu_interval_notifier_remove(&dmirror->notifier);
	xa_destroy(&dmirror->pt);
	kfree(dmirror);
	return 0;
}

/* As test_hmm: a private mapping of the device is zeroed system memory. */
static int dmirror_fops_mmap(struct file *file, struct vm_area_struct *vma)
{
	unsigned long addr;

	for (addr = vma->vm_start; addr < vma->vm_end; addr += PAGE_SIZE) {
		struct page *page;
		int ret;

		page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!page)
			return -ENOMEM;
		ret = vm_insert_page(vma, addr, page);
		put_page(page);
		if (ret)
			return ret;
	}
	return 0;
}

/* The common checks of every command that takes a range. */
static int dmirror_check_range(struct dmirror *dmirror,
			       const struct hmm_dmirror_cmd *cmd)
{
	struct mm_struct *mm = dmirror->notifier.mm;
	u64 end;

	if (current->mm != mm)
		return -EINVAL;
	if (cmd->addr & ~PAGE_MASK)
		return -EINVAL;
	if (!cmd->npages || cmd->npages > DMIRROR_THP_MAX_PAGES)
		return -EINVAL;
	if (check_add_overflow(cmd->addr, cmd->npages << PAGE_SHIFT, &end) ||
	    end > TASK_SIZE)
		return -EINVAL;
	return 0;
}

/* HMM_DMIRROR_FLAGS: the flags in cmd->npages, for this open file */
static int dmirror_set_flags(struct dmirror *dmirror,
			     struct hmm_dmirror_cmd *cmd)
{
	u64 flags = cmd->npages;

	if (flags & ~HMM_DMIRROR_FLAGS_ALL)
		return -EINVAL;
	if (flags & HMM_DMIRROR_FLAG_FAIL_ALLOC)
		set_bit(DMIRROR_FLAG_FAIL_ALLOC_BIT, &dmirror->flags);
	else
		clear_bit(DMIRROR_FLAG_FAIL_ALLOC_BIT, &dmirror->flags);
	return 0;
}

static int dmirror_get_stats(struct dmirror_device *mdevice,
			     void __user *uarg)
{
	struct dmirror_thp_stats st = {};
	atomic64_t *c = mdevice->stats;

	if (copy_from_user(&st, uarg, offsetofend(typeof(st), size)))
		return -EFAULT;
	if (st.version != DMIRROR_THP_STATS_VERSION || st.size < sizeof(st))
		return -EINVAL;

	st.size = sizeof(st);
	st.thp_to_dev = atomic64_read(&c[DSTAT_THP_TO_DEV]);
	st.base_to_dev = atomic64_read(&c[DSTAT_BASE_TO_DEV]);
	st.thp_to_sys = atomic64_read(&c[DSTAT_THP_TO_SYS]);
	st.base_to_sys = atomic64_read(&c[DSTAT_BASE_TO_SYS]);
	st.split_migrate = atomic64_read(&c[DSTAT_SPLIT_MIGRATE]);
	st.split_fault = atomic64_read(&c[DSTAT_SPLIT_FAULT]);
	st.split_callback = atomic64_read(&c[DSTAT_SPLIT_CALLBACK]);
	st.alloc_fail_inject = atomic64_read(&c[DSTAT_ALLOC_FAIL_INJECT]);
	st.alloc_fail_real = atomic64_read(&c[DSTAT_ALLOC_FAIL_REAL]);
	st.cpu_faults = atomic64_read(&c[DSTAT_CPU_FAULTS]);
	st.evicted_pages = atomic64_read(&c[DSTAT_EVICTED_PAGES]);
	dmirror_pool_gauges(mdevice, &st);

	return copy_to_user(uarg, &st, sizeof(st)) ? -EFAULT : 0;
}

static int dmirror_get_order_stats(struct dmirror_device *mdevice,
				   void __user *uarg)
{
	struct dmirror_thp_order_stats os = {};
	unsigned int o;

	BUILD_BUG_ON(DMIRROR_NR_ORDERS > DMIRROR_THP_NR_ORDERS);
	if (copy_from_user(&os, uarg, offsetofend(typeof(os), size)))
		return -EFAULT;
	if (os.version != DMIRROR_THP_ORDER_STATS_VERSION ||
	    os.size < sizeof(os))
		return -EINVAL;

	os.size = sizeof(os);
	os.max_order = HPAGE_PMD_ORDER;
	for (o = 0; o < DMIRROR_NR_ORDERS; o++) {
		os.to_dev[o] = atomic64_read(&mdevice->order_to_dev[o]);
		os.to_sys[o] = atomic64_read(&mdevice->order_to_sys[o]);
	}
	dmirror_pool_order_gauges(mdevice, &os);

	return copy_to_user(uarg, &os, sizeof(os)) ? -EFAULT : 0;
}

static int dmirror_get_phases(struct dmirror_device *mdevice,
			      void __user *uarg)
{
	struct dmirror_thp_phases ph = {};
	int path, phase;

	if (copy_from_user(&ph, uarg, offsetofend(typeof(ph), size)))
		return -EFAULT;
	if (ph.version != DMIRROR_THP_PHASES_VERSION || ph.size < sizeof(ph))
		return -EINVAL;

	ph.size = sizeof(ph);
	for (path = 0; path < HMM_DMIRROR_PATH_NR; path++) {
		ph.calls[path] = atomic64_read(&mdevice->path_calls[path]);
		for (phase = 0; phase < HMM_DMIRROR_PHASE_NR; phase++)
			ph.ns[path][phase] =
				atomic64_read(&mdevice->phase_ns[path][phase]);
	}
	return copy_to_user(uarg, &ph, sizeof(ph)) ? -EFAULT : 0;
}

static int dmirror_copy_bench_ioctl(void __user *uarg)
{
	struct dmirror_thp_copy_bench cb;
	int ret;

	if (copy_from_user(&cb, uarg, sizeof(cb)))
		return -EFAULT;
	ret = dmirror_copy_bench(&cb);
	if (ret)
		return ret;
	return copy_to_user(uarg, &cb, sizeof(cb)) ? -EFAULT : 0;
}

static void dmirror_reset_stats(struct dmirror_device *mdevice)
{
	int i, j;

	for (i = 0; i < DSTAT_NR; i++)
		atomic64_set(&mdevice->stats[i], 0);
	for (i = 0; i < DMIRROR_NR_ORDERS; i++) {
		atomic64_set(&mdevice->order_to_dev[i], 0);
		atomic64_set(&mdevice->order_to_sys[i], 0);
	}
	for (i = 0; i < HMM_DMIRROR_PATH_NR; i++) {
		atomic64_set(&mdevice->path_calls[i], 0);
		for (j = 0; j < HMM_DMIRROR_PHASE_NR; j++)
			atomic64_set(&mdevice->phase_ns[i][j], 0);
	}
}

/* HMM_DMIRROR_MIGRATE_TO_DEV and _TO_SYS */
static int dmirror_migrate(struct dmirror *dmirror, struct hmm_dmirror_cmd *cmd,
			   bool to_dev)
{
	struct dmirror_migrate_ctx ctx = {
		.mdevice = dmirror->mdevice,
		.dmirror = dmirror,
	};
	unsigned long end = cmd->addr + (cmd->npages << PAGE_SHIFT);
	u64 moved;
	int ret;

	dmirror_clock_start(&ctx, to_dev ? HMM_DMIRROR_PATH_TO_DEV :
					   HMM_DMIRROR_PATH_TO_SYS);
	ret = dmirror_migrate_range(&ctx, cmd->addr, end, to_dev, &moved);
	if (ret || !to_dev) {
		cmd->cpages = moved;
		return ret;
	}
	/* As test_hmm: return what the device now reads of the range. */
	ret = dmirror_read_back(dmirror, cmd, true);
	dmirror_clock_lap(&ctx, HMM_DMIRROR_PHASE_READBACK);
	return ret;
}

static int dmirror_migrate_to_dev(struct dmirror *dmirror,
				  struct hmm_dmirror_cmd *cmd)
{
	return dmirror_migrate(dmirror, cmd, true);
}

static int dmirror_migrate_to_sys(struct dmirror *dmirror,
				  struct hmm_dmirror_cmd *cmd)
{
	return dmirror_migrate(dmirror, cmd, false);
}

/* HMM_DMIRROR_RELEASE: evict this file's pages from the device */
static int dmirror_release(struct dmirror *dmirror,
			   struct hmm_dmirror_cmd *cmd)
{
	dmirror_evict_all(dmirror->mdevice, dmirror);
	return 0;
}

/*
 * The commands that take a struct hmm_dmirror_cmd, each with its handler;
 * @range: the command names an address range of the opener's mm, checked
 * first.
 */
static const struct dmirror_cmd_op {
	unsigned int	command;
	bool		range;
	int		(*fn)(struct dmirror *dmirror,
			      struct hmm_dmirror_cmd *cmd);
} dmirror_cmd_ops[] = {
	{ HMM_DMIRROR_READ,		true,	dmirror_read },
	{ HMM_DMIRROR_READ_UNLOCKED,	true,	dmirror_read_unlocked },
	{ HMM_DMIRROR_WRITE,		true,	dmirror_write },
	{ HMM_DMIRROR_MIGRATE_TO_DEV,	true,	dmirror_migrate_to_dev },
	{ HMM_DMIRROR_MIGRATE_TO_SYS,	true,	dmirror_migrate_to_sys },
	{ HMM_DMIRROR_SNAPSHOT,		true,	dmirror_snapshot },
	{ HMM_DMIRROR_CPU_MAP,		true,	dmirror_cpu_map },
	{ HMM_DMIRROR_EXCLUSIVE,	true,	dmirror_exclusive },
	{ HMM_DMIRROR_CHECK_EXCLUSIVE,	true,	dmirror_check_exclusive },
	{ HMM_DMIRROR_RELEASE,		false,	dmirror_release },
	{ HMM_DMIRROR_FLAGS,		false,	dmirror_set_flags },
};

static long dmirror_cmd_ioctl(struct dmirror *dmirror,
			      const struct dmirror_cmd_op *op,
			      void __user *uarg)
{
	struct hmm_dmirror_cmd cmd;
	int ret;

	if (copy_from_user(&cmd, uarg, sizeof(cmd)))
		return -EFAULT;
	cmd.cpages = 0;
	cmd.faults = 0;
	ret = op->range ? dmirror_check_range(dmirror, &cmd) : 0;
	if (!ret)
		ret = op->fn(dmirror, &cmd);
	if (ret)
		return ret;
	return copy_to_user(uarg, &cmd, sizeof(cmd)) ? -EFAULT : 0;
}

static long dmirror_fops_unlocked_ioctl(struct file *filp,
					unsigned int command,
					unsigned long arg)
{
	struct dmirror *dmirror = filp->private_data;
	struct dmirror_device *mdevice = dmirror->mdevice;
	void __user *uarg = (void __user *)arg;
	size_t i;

	switch (command) {
	case HMM_DMIRROR_STATS:
		return dmirror_get_stats(mdevice, uarg);
	case HMM_DMIRROR_ORDER_STATS:
		return dmirror_get_order_stats(mdevice, uarg);
	case HMM_DMIRROR_STATS_RESET:
		dmirror_reset_stats(mdevice);
		return 0;
	case HMM_DMIRROR_PHASES:
		return dmirror_get_phases(mdevice, uarg);
	case HMM_DMIRROR_COPY_BENCH:
		return dmirror_copy_bench_ioctl(uarg);
	}
	for (i = 0; i < ARRAY_SIZE(dmirror_cmd_ops); i++)
		if (dmirror_cmd_ops[i].command == command)
			return dmirror_cmd_ioctl(dmirror, &dmirror_cmd_ops[i],
						 uarg);
	return -ENOTTY;
}

static const struct file_operations dmirror_fops = {
	.owner		= THIS_MODULE,
	.open		= dmirror_fops_open,
	.release	= dmirror_fops_release,
	.mmap		= dmirror_fops_mmap,
	.unlocked_ioctl	= dmirror_fops_unlocked_ioctl,
	.llseek		= default_llseek,
};

static char *dmirror_devnode(const struct device *dev, umode_t *mode,
			     kuid_t *uid, kgid_t *gid)
{
	if (mode)
		*mode = 0600;
	if (uid)
		*uid = GLOBAL_ROOT_UID;
	if (gid)
		*gid = GLOBAL_ROOT_GID;
	return NULL;
}

static void dmirror_device_release(struct device *dev)
{
	kfree(container_of(dev, struct dmirror_device, device));
}

static const struct device_type dmirror_device_type = {
	.name		= "hmm_dmirror_thp",
	.devnode	= dmirror_devnode,
	.release	= dmirror_device_release,
};

static int dmirror_device_create(int id, unsigned int max_chunks)
{
	struct dmirror_device *mdevice;
	int ret;

	mdevice = kzalloc_obj(*mdevice, GFP_KERNEL);
	if (!mdevice)
		return -ENOMEM;
	device_initialize(&mdevice->device);
	mdevice->device.type = &dmirror_device_type;
	mdevice->device.devt = MKDEV(MAJOR(dmirror_dev), id);
	INIT_LIST_HEAD(&mdevice->files);
	spin_lock_init(&mdevice->files_lock);
	/* From here on, put_device() frees mdevice. */
	ret = dmirror_devmem_init(mdevice, max_chunks, &dmirror_pgmap_ops);
	if (ret)
		goto err_put;
	ret = dev_set_name(&mdevice->device, "hmm_dmirror%d", id);
	if (ret)
		goto err_fini;

	cdev_init(&mdevice->cdevice, &dmirror_fops);
	mdevice->cdevice.owner = THIS_MODULE;
	ret = cdev_device_add(&mdevice->cdevice, &mdevice->device);
	if (ret)
		goto err_fini;
	mdevice->registered = true;
	dmirror_devices[id] = mdevice;
	return 0;

err_fini:
	dmirror_devmem_stop(mdevice);
	dmirror_devmem_fini(mdevice);
err_put:
	put_device(&mdevice->device);
	return ret;
}

static void dmirror_device_destroy(struct dmirror_device *mdevice)
{
	if (mdevice->registered)
		cdev_device_del(&mdevice->cdevice, &mdevice->device);
	/* Evict what is still resident, then unmap the chunks. */
	dmirror_devmem_stop(mdevice);
	dmirror_evict_drain(mdevice);
	dmirror_devmem_fini(mdevice);
	put_device(&mdevice->device);
}

static int __init dmirror_thp_init(void)
{
	unsigned int max_chunks = max_mb / (DMIRROR_CHUNK_SIZE >> 20);
	int ret, id;

	if (!max_chunks) {
		pr_err("dmirror_thp: max_mb=%u is below one %lu MiB chunk\n",
		       max_mb, DMIRROR_CHUNK_SIZE >> 20);
		return -EINVAL;
	}
	ret = alloc_chrdev_region(&dmirror_dev, 0, DMIRROR_NDEVICES,
				  "HMM_DMIRROR");
	if (ret)
		return ret;
	for (id = 0; id < DMIRROR_NDEVICES; id++) {
		ret = dmirror_device_create(id, max_chunks);
		if (ret)
			goto err;
	}
	pr_info("dmirror_thp: loaded, %u MiB of device memory per device\n",
		max_chunks * (unsigned int)(DMIRROR_CHUNK_SIZE >> 20));
	return 0;

err:
	while (--id >= 0) {
		dmirror_device_destroy(dmirror_devices[id]);
		dmirror_devices[id] = NULL;
	}
	unregister_chrdev_region(dmirror_dev, DMIRROR_NDEVICES);
	return ret;
}

static void __exit dmirror_thp_exit(void)
{
	int id;

	for (id = 0; id < DMIRROR_NDEVICES; id++) {
		if (!dmirror_devices[id])
			continue;
		dmirror_device_destroy(dmirror_devices[id]);
		dmirror_devices[id] = NULL;
	}
	unregister_chrdev_region(dmirror_dev, DMIRROR_NDEVICES);
}

module_init(dmirror_thp_init);
module_exit(dmirror_thp_exit);
MODULE_DESCRIPTION("THP-aware HMM mirror test device (device-private)");
MODULE_LICENSE("GPL");
