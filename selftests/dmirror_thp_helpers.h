/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmirror-thp selftests: helpers shared by the test binaries and the
 * benchmark.  Nothing here uses the kselftest harness: every helper returns
 * a value (0 or -errno, a count, a bool) and the tests assert on it, so a
 * failure is reported at the line of the test that made the claim.
 *
 * Residency has three independent witnesses, and the tests use all three:
 *   - the device's counters (HMM_DMIRROR_STATS): what the driver did;
 *   - SNAPSHOT: what the device's mirror sees (LOCAL, PMD, WRITE bits);
 *   - /proc/self/pagemap and smaps: what the CPU page tables hold
 *     (PM_SWAP && !PM_PRESENT for a device-private entry; AnonHugePages).
 * Note that smaps counts a device-private PMD in AnonHugePages too, so
 * "the range is a system THP" is AnonHugePages AND every page PM_PRESENT.
 */
#ifndef DMIRROR_THP_HELPERS_H
#define DMIRROR_THP_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dmirror_thp_uapi.h"
/* The tree's selftests/mm helpers: page and PMD sizes, pagemap, kpageflags. */
#include "vm_util.h"
#include "hugepage_settings.h"

/*
 * Sizes of the running kernel, read at run time (vm_util): the base page,
 * and the PMD that maps a THP and a device THP.
 */
unsigned long dm_pmd_size(void);
unsigned int dm_pmd_order(void);
#define DM_PAGE_SIZE	((unsigned long)psize())
#define DM_THP_SIZE	dm_pmd_size()
#define DM_THP_PAGES	(DM_THP_SIZE / DM_PAGE_SIZE)
#define DM_PMD_ORDER	dm_pmd_order()
#define DM_ONEKB	1024UL
#define DM_ONEMB	(1UL << 20)
#define DM_NDEVICES	2
#define DM_MODULE_PATH	"/lib/modules/dmirror-thp.ko"
#define DM_MODULE_NAME	"dmirror_thp"

/* SNAPSHOT bytes: the memory type sits in bits 4-7, permissions below. */
#define DM_SNAP_TYPE_MASK	0xF0
#define DM_SNAP_DEV_LOCAL	HMM_DMIRROR_PROT_DEV_PRIVATE_LOCAL
#define DM_SNAP_PMD		HMM_DMIRROR_PROT_PMD
#define DM_SNAP_WRITE		HMM_DMIRROR_PROT_WRITE

/* The pfn of a /proc/self/pagemap entry (vm_util.h has the flag bits). */
#define PM_PFN_MASK		((1ULL << 55) - 1)

/* Folio orders: anonymous mTHPs from order 2 up to the PMD's. */
#define DM_MTHP_MIN_ORDER	2
/* The most orders a size table here needs (hugepage_settings' too). */
#define DM_MAX_ORDERS		NR_ORDERS
static inline unsigned long dm_order_kb(unsigned int order)
{
	return (DM_PAGE_SIZE >> 10) << order;
}

/* ---- device and ioctls ---- */

/* Open /dev/hmm_dmirror<dev>; returns the fd or -errno. */
int dm_open(int dev);
/* true if both device nodes exist (the module is loaded) */
bool dm_devices_present(void);

/*
 * Issue a range command.  Retries on EINTR.  Returns 0 or -errno; the
 * command as the kernel returned it goes to *out when out is not NULL.
 */
int dm_cmd(int fd, unsigned long request, uint64_t addr, uint64_t ptr,
	   uint64_t npages, struct hmm_dmirror_cmd *out);
int dm_to_dev(int fd, void *addr, size_t npages, void *mirror,
	      struct hmm_dmirror_cmd *out);
int dm_to_sys(int fd, void *addr, size_t npages, struct hmm_dmirror_cmd *out);
int dm_read(int fd, void *addr, size_t npages, void *mirror,
	    struct hmm_dmirror_cmd *out);
int dm_write(int fd, void *addr, size_t npages, void *mirror,
	     struct hmm_dmirror_cmd *out);
int dm_release(int fd);
int dm_set_flags(int fd, uint64_t flags);

/*
 * Every ioctl of uapi/dmirror_thp_uapi.h, in the order of its numbers: a
 * test that walks the commands walks the table dm_iocs[] (DM_IOC_* index
 * it), made from the two lists below, the one place a new ioctl goes.
 * @arg: what the argument is; @dir: which way the bytes behind cmd.ptr
 * go, i.e. what a test may aim ptr at; @errnos: what the uapi documents
 * for the command to a caller whose opener is alive, 0-terminated (the
 * command may also succeed).
 */
enum dm_ioc_arg {
	DM_ARG_RANGE,	/* struct hmm_dmirror_cmd: addr, ptr, npages */
	DM_ARG_RELEASE,	/* struct hmm_dmirror_cmd, read and ignored */
	DM_ARG_FLAGS,	/* struct hmm_dmirror_cmd, npages the flag word */
	DM_ARG_OWN,	/* a struct of its own, or none */
};

enum dm_ioc_dir {
	DM_PTR_NONE,	/* ptr is not used */
	DM_PTR_OUT,	/* the device writes device data or SNAPSHOT bytes */
	DM_PTR_IN,	/* the device reads the bytes it writes (WRITE) */
};

struct dm_ioc {
	const char	*name;
	unsigned long	nr;
	enum dm_ioc_arg	arg;
	enum dm_ioc_dir	dir;
	const int	*errnos;
};

/*
 * X(name, arg, dir, errno...): name is the uapi's, without HMM_DMIRROR_.
 * EFAULT: a bad argument pointer, for every command that takes one.
 * First the commands that take struct hmm_dmirror_cmd ...
 */
#define DM_CMD_IOCS(X)							\
	X(READ, RANGE, OUT, EFAULT, EINVAL, ENOMEM, EBUSY)		\
	X(WRITE, RANGE, IN, EFAULT, EINVAL, ENOMEM, EBUSY, EPERM)	\
	X(MIGRATE_TO_DEV, RANGE, OUT, EFAULT, EINVAL, ENOENT, ENOMEM, EBUSY) \
	X(MIGRATE_TO_SYS, RANGE, NONE, EFAULT, EINVAL, ENOMEM, EBUSY)	\
	X(SNAPSHOT, RANGE, OUT, EFAULT, EINVAL, ENOMEM, EBUSY)		\
	X(EXCLUSIVE, RANGE, OUT, EFAULT, EINVAL, ENOENT, ENOMEM, EBUSY)	\
	X(CHECK_EXCLUSIVE, RANGE, NONE, EFAULT, EINVAL, EPERM)		\
	X(RELEASE, RELEASE, NONE, EFAULT)				\
	X(FLAGS, FLAGS, NONE, EFAULT, EINVAL)				\
	X(READ_UNLOCKED, RANGE, OUT, EFAULT, EINVAL, ENOMEM, EBUSY, EINTR) \
	X(CPU_MAP, RANGE, OUT, EFAULT, EINVAL, EINTR)
/* ... then those with a struct of their own, or none. */
#define DM_OWN_IOCS(X)							\
	X(STATS, OWN, NONE, EFAULT, EINVAL)				\
	X(STATS_RESET, OWN, NONE, 0)					\
	X(PHASES, OWN, NONE, EFAULT, EINVAL)				\
	X(COPY_BENCH, OWN, NONE, EFAULT, EINVAL, ENOMEM)		\
	X(ORDER_STATS, OWN, NONE, EFAULT, EINVAL)

#define DM_IOC_ENUM(name, ...)	DM_IOC_##name,
enum {
	DM_CMD_IOCS(DM_IOC_ENUM)
	DM_IOC_NR_CMD,
	DM_IOC_OWN_0 = DM_IOC_NR_CMD - 1,
	DM_OWN_IOCS(DM_IOC_ENUM)
	DM_IOC_NR,
};
#undef DM_IOC_ENUM

extern const struct dm_ioc dm_iocs[DM_IOC_NR];
/* err is among ioc's documented errnos */
bool dm_ioc_errno_ok(const struct dm_ioc *ioc, int err);
/* the command's name, for a log line, or "unknown" */
const char *dm_ioc_name(unsigned long nr);

int dm_stats(int fd, struct dmirror_thp_stats *st);
int dm_order_stats(int fd, struct dmirror_thp_order_stats *os);
int dm_stats_reset(int fd);
/* free_pages + free_folios * 512 + resident_pages == capacity_pages */
bool dm_pool_balanced(const struct dmirror_thp_stats *st);
void dm_stats_print(const char *tag, const struct dmirror_thp_stats *st);

/*
 * SNAPSHOT [addr, addr + npages) and count the pages whose byte v has
 * (v & mask) == want.  Returns the count or -errno.
 */
long dm_snap_count(int fd, void *addr, size_t npages, uint8_t mask,
		   uint8_t want);
/* pages mirrored as device-private pages of this device */
long dm_snap_local(int fd, void *addr, size_t npages);
/* pages mirrored as local device pages inside a device PMD */
long dm_snap_local_pmd(int fd, void *addr, size_t npages);
/* local device pages the device may write */
long dm_snap_local_write(int fd, void *addr, size_t npages);

/* ---- CPU page tables ---- */

/*
 * CPU_MAP [addr, addr + npages) and count the pages whose byte v has
 * (v & mask) == want.  Returns the count or -errno.
 */
long dm_cpu_count(int fd, void *addr, size_t npages, uint8_t mask,
		  uint8_t want);
/* pages a PTE with the contiguous bit maps (arm64's contpte) */
long dm_cpu_cont(int fd, void *addr, size_t npages);
/*
 * The pages of one contpte block: 0 where the architecture has no
 * contiguous bit (every one but arm64).
 */
size_t dm_cont_ptes(void);
/*
 * The end of the user address space, the kernel's TASK_SIZE, in the
 * guests' configurations: x86_64 with 4-level paging (47 bits, less a
 * page), arm64 with 48-bit addresses.
 */
uint64_t dm_user_top(void);

/*
 * Count the pages of [addr, addr + npages) whose pagemap entry has
 * (e & mask) == want.  Returns the count or -errno.
 */
long pm_count(void *addr, size_t npages, uint64_t mask, uint64_t want);
/* PM_SWAP set and PM_PRESENT clear: not in system memory */
long pm_count_dev(void *addr, size_t npages);
long pm_count_present(void *addr, size_t npages);
/* set DMIRROR_THP_NO_PAGEMAP=1 to skip pagemap proofs (pm_* return -ENOSYS) */
bool pm_enabled(void);
/*
 * Reading pagemap over a device-private PMD: stock 6.12 has
 * VM_BUG_ON(!is_pmd_migration_entry(pmd)) in pagemap_pmd_range(), fatal with
 * CONFIG_DEBUG_VM=y; the prereq series teaches it device-private PMDs.  On
 * by default; DMIRROR_THP_PAGEMAP_PMD=0 turns these proofs off (for a kernel
 * without the series' pagemap fix).
 */
bool pm_pmd_enabled(void);

/*
 * The system folios of exactly nr pages (nr >= 2) that [addr, addr + npages)
 * maps whole and in order, found from the pfns of pagemap and the compound
 * head and tail bits of /proc/kpageflags (root only): the kernel's witness
 * of a folio's order, which no driver writes.  Returns the count or -errno.
 */
long pm_count_folios(void *addr, size_t npages, size_t nr);

/* AnonHugePages of the vma that contains addr, in kB, or -errno. */
long smaps_anon_huge_kb(void *addr);
/*
 * The nthp THPs at addr are system THPs: every page present and the vma
 * holds at least nthp * 2 MB of AnonHugePages.
 */
bool dm_is_sys_thp(void *addr, size_t nthp);

/* A /proc/vmstat counter, or -1 if the kernel has none by that name. */
long vmstat_get(const char *name);
/* The same after /proc/sys/vm/stat_refresh: per-CPU drift folded in. */
long vmstat_get_exact(const char *name);

/* ---- THP sizes: /sys/kernel/mm/transparent_hugepage/hugepages-<kb>kB/ ---- */

/*
 * Let a fault allocate folios of @order alone, with @mode, every other size
 * never (the top-level enabled stays).  The first call saves the settings
 * for thp_restore_settings(), which also runs at exit.
 */
void dm_thp_only(unsigned int order, enum thp_enabled mode);
/* One size's enabled mode. */
void dm_thp_size_enable(unsigned int order, enum thp_enabled mode);
/* A counter of the size's stats/ directory. */
long mthp_stat(unsigned int order, const char *name);

/* ---- buffers ---- */

/*
 * A 2 MB-aligned private anonymous buffer in its own vma: a PROT_NONE
 * reservation of size + 4 MB with the buffer mapped MAP_FIXED inside it,
 * so the buffer never merges with a neighbour and smaps of its vma is
 * about it alone.  mirror is a separate buffer of the same size for the
 * device's copies (never inside the migrated range).
 */
struct dm_buf {
	void	*res;
	size_t	res_len;
	char	*ptr;
	size_t	size;
	char	*mirror;
};

enum dm_thp_mode { DM_THP_NONE, DM_THP_ON, DM_THP_OFF };

int dm_buf_alloc(struct dm_buf *b, size_t size, int prot, enum dm_thp_mode thp);
void dm_buf_free(struct dm_buf *b);
static inline size_t dm_npages(size_t size) { return size / DM_PAGE_SIZE; }

/* A 2 MB-aligned PROT_NONE reservation to mremap into; res_len bytes. */
void *dm_reserve_aligned(size_t size, void **res, size_t *res_len);

/* ---- data ---- */

/* 64-bit words: (seed << 32) | word index from the start of the buffer */
void dm_fill(void *p, size_t size, uint32_t seed);
/* offset in bytes of the first mismatch, or -1 */
long dm_verify(const void *p, size_t size, uint32_t seed);
/* the same, starting at byte offset off of a buffer filled from 0 */
long dm_verify_at(const void *p, size_t off, size_t size, uint32_t seed);
void dm_fill_at(void *p, size_t off, size_t size, uint32_t seed);
/* offset of the first non-zero byte, or -1 */
long dm_verify_zero(const void *p, size_t size);
/* one read per page, so each page faults (returns a checksum) */
uint64_t dm_touch_read(const void *p, size_t size, size_t stride);

/* ---- module control (guest only) ---- */
int dm_run(const char *cmd);	/* system(); exit status or -1 */
bool dm_wait_devices(int seconds);
/* reload the module if the device nodes are gone; true if present after */
bool dm_ensure_module(void);

/* ---- hugetlb ---- */
/* make sure one free 2 MB huge page exists; old nr in *old, -1 if untouched */
bool dm_hugetlb_reserve(long *old);
void dm_hugetlb_restore(long old);

double dm_now(void);	/* CLOCK_MONOTONIC seconds */

/*
 * xorshift64*, the fuzzer's and the stress's: cheap, and the same draws
 * from the same seed, so that a failure's seed replays it.  0 is its
 * fixed point (it would draw 0 for ever): a state of 0 is replaced.
 */
static inline uint64_t dm_rand(uint64_t *state)
{
	if (!*state)
		*state = 0x9E3779B97F4A7C15ULL;
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545F4914F6CDD1DULL;
}

#endif /* DMIRROR_THP_HELPERS_H */
