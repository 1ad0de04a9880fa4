// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp selftests: shared helpers (see dmirror_thp_helpers.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

#define ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((a) - 1))

unsigned long dm_pmd_size(void)
{
	static unsigned long size;

	/* A kernel without THP has no hpage_pmd_size: a page of PTEs. */
	if (!size)
		size = read_pmd_pagesize();
	if (!size)
		size = DM_PAGE_SIZE * (DM_PAGE_SIZE / sizeof(uint64_t));
	return size;
}

unsigned int dm_pmd_order(void)
{
	return __builtin_ctzl(DM_THP_PAGES);
}

int dm_open(int dev)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/hmm_dmirror%d", dev);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

bool dm_devices_present(void)
{
	return access("/dev/hmm_dmirror0", F_OK) == 0 &&
	       access("/dev/hmm_dmirror1", F_OK) == 0;
}

int dm_cmd(int fd, unsigned long request, uint64_t addr, uint64_t ptr,
	   uint64_t npages, struct hmm_dmirror_cmd *out)
{
	struct hmm_dmirror_cmd cmd;
	int ret;

	do {
		memset(&cmd, 0, sizeof(cmd));
		cmd.addr = addr;
		cmd.ptr = ptr;
		cmd.npages = npages;
		ret = ioctl(fd, request, &cmd);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	if (out)
		*out = cmd;
	return 0;
}

int dm_to_dev(int fd, void *addr, size_t npages, void *mirror,
	      struct hmm_dmirror_cmd *out)
{
	return dm_cmd(fd, HMM_DMIRROR_MIGRATE_TO_DEV, (uintptr_t)addr,
		      (uintptr_t)mirror, npages, out);
}

int dm_to_sys(int fd, void *addr, size_t npages, struct hmm_dmirror_cmd *out)
{
	return dm_cmd(fd, HMM_DMIRROR_MIGRATE_TO_SYS, (uintptr_t)addr, 0,
		      npages, out);
}

int dm_read(int fd, void *addr, size_t npages, void *mirror,
	    struct hmm_dmirror_cmd *out)
{
	return dm_cmd(fd, HMM_DMIRROR_READ, (uintptr_t)addr,
		      (uintptr_t)mirror, npages, out);
}

int dm_write(int fd, void *addr, size_t npages, void *mirror,
	     struct hmm_dmirror_cmd *out)
{
	return dm_cmd(fd, HMM_DMIRROR_WRITE, (uintptr_t)addr,
		      (uintptr_t)mirror, npages, out);
}

int dm_release(int fd)
{
	return dm_cmd(fd, HMM_DMIRROR_RELEASE, 0, 0, 0, NULL);
}

int dm_set_flags(int fd, uint64_t flags)
{
	return dm_cmd(fd, HMM_DMIRROR_FLAGS, 0, 0, flags, NULL);
}

/* A row of dm_iocs[], from the lists of the helpers' header. */
#define IOC(cmd, arg, dir, ...)						\
	[DM_IOC_##cmd] = { #cmd, HMM_DMIRROR_##cmd, DM_ARG_##arg,	\
			   DM_PTR_##dir, (const int[]){ __VA_ARGS__, 0 } },
const struct dm_ioc dm_iocs[DM_IOC_NR] = {
	DM_CMD_IOCS(IOC)
	DM_OWN_IOCS(IOC)
};
#undef IOC

bool dm_ioc_errno_ok(const struct dm_ioc *ioc, int err)
{
	const int *e;

	for (e = ioc->errnos; *e; e++)
		if (*e == err)
			return true;
	return false;
}

const char *dm_ioc_name(unsigned long nr)
{
	unsigned int i;

	for (i = 0; i < DM_IOC_NR; i++)
		if (dm_iocs[i].nr == nr)
			return dm_iocs[i].name;
	return "unknown";
}

/* An ioctl, retried on EINTR; 0 or -errno. */
static int dm_ioctl(int fd, unsigned long request, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, request, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

int dm_stats(int fd, struct dmirror_thp_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->version = DMIRROR_THP_STATS_VERSION;
	st->size = sizeof(*st);
	return dm_ioctl(fd, HMM_DMIRROR_STATS, st);
}

int dm_order_stats(int fd, struct dmirror_thp_order_stats *os)
{
	memset(os, 0, sizeof(*os));
	os->version = DMIRROR_THP_ORDER_STATS_VERSION;
	os->size = sizeof(*os);
	return dm_ioctl(fd, HMM_DMIRROR_ORDER_STATS, os);
}

int dm_stats_reset(int fd)
{
	return dm_ioctl(fd, HMM_DMIRROR_STATS_RESET, NULL);
}

bool dm_pool_balanced(const struct dmirror_thp_stats *st)
{
	return st->free_pages + st->free_folios * DM_THP_PAGES +
	       st->resident_pages == st->capacity_pages;
}

/* The counters of struct dmirror_thp_stats, in the order of the struct. */
#define DM_STAT(f)	{ #f, offsetof(struct dmirror_thp_stats, f) }
static const struct {
	const char *name;
	size_t off;
} dm_stat_fields[] = {
	DM_STAT(thp_to_dev), DM_STAT(base_to_dev), DM_STAT(thp_to_sys),
	DM_STAT(base_to_sys), DM_STAT(split_migrate), DM_STAT(split_fault),
	DM_STAT(split_callback), DM_STAT(alloc_fail_inject),
	DM_STAT(alloc_fail_real), DM_STAT(cpu_faults), DM_STAT(evicted_pages),
	DM_STAT(capacity_pages), DM_STAT(free_folios), DM_STAT(free_pages),
	DM_STAT(resident_pages),
};

void dm_stats_print(const char *tag, const struct dmirror_thp_stats *st)
{
	size_t i;

	fprintf(stderr, "# %s:", tag);
	for (i = 0; i < sizeof(dm_stat_fields) / sizeof(dm_stat_fields[0]); i++)
		fprintf(stderr, " %s %llu", dm_stat_fields[i].name,
			*(const unsigned long long *)((const char *)st +
						      dm_stat_fields[i].off));
	fprintf(stderr, "\n");
}

/*
 * The byte per page that @request (SNAPSHOT, CPU_MAP) writes for
 * [addr, addr + npages pages), in a buffer the caller frees; NULL with
 * -errno in *err.  @cmd gets the command's answer.
 */
static unsigned char *dm_range_bytes(int fd, unsigned long request,
				     void *addr, size_t npages,
				     struct hmm_dmirror_cmd *cmd, int *err)
{
	unsigned char *bytes = malloc(npages);

	if (!bytes) {
		*err = -ENOMEM;
		return NULL;
	}
	memset(bytes, 0xEE, npages);	/* no valid value, so a stale byte shows */
	*err = dm_cmd(fd, request, (uintptr_t)addr, (uintptr_t)bytes, npages,
		      cmd);
	if (*err) {
		free(bytes);
		return NULL;
	}
	return bytes;
}

long dm_snap_count(int fd, void *addr, size_t npages, uint8_t mask,
		   uint8_t want)
{
	struct hmm_dmirror_cmd cmd;
	unsigned char *snap;
	long n = 0;
	size_t i;
	int ret;

	snap = dm_range_bytes(fd, HMM_DMIRROR_SNAPSHOT, addr, npages, &cmd, &ret);
	if (!snap)
		return ret;
	for (i = 0; i < npages; i++)
		if (snap[i] != HMM_DMIRROR_PROT_ERROR && (snap[i] & mask) == want)
			n++;
	free(snap);
	return n;
}

long dm_cpu_count(int fd, void *addr, size_t npages, uint8_t mask,
		  uint8_t want)
{
	struct hmm_dmirror_cmd cmd;
	unsigned char *map;
	long n = 0;
	size_t i;
	int ret;

	map = dm_range_bytes(fd, HMM_DMIRROR_CPU_MAP, addr, npages, &cmd, &ret);
	if (!map)
		return ret;
	if (cmd.cpages != npages)
		ret = -EIO;
	for (i = 0; !ret && i < npages; i++) {
		if (map[i] & ~(HMM_DMIRROR_CPU_PRESENT | HMM_DMIRROR_CPU_PMD |
			       HMM_DMIRROR_CPU_CONT))
			ret = -EIO;
		else if ((map[i] & mask) == want)
			n++;
	}
	free(map);
	return ret ? ret : n;
}

long dm_cpu_cont(int fd, void *addr, size_t npages)
{
	return dm_cpu_count(fd, addr, npages, HMM_DMIRROR_CPU_CONT,
			    HMM_DMIRROR_CPU_CONT);
}

size_t dm_cont_ptes(void)
{
#ifdef __aarch64__
	/* CONT_PTES: 64 kB of 4 kB pages, 2 MB of 16 kB, 2 MB of 64 kB */
	switch (psize()) {
	case 4096:
		return 16;
	case 16384:
		return 128;
	case 65536:
		return 32;
	}
#endif
	return 0;
}

uint64_t dm_user_top(void)
{
#ifdef __aarch64__
	return 1ULL << 48;
#else
	return (1ULL << 47) - DM_PAGE_SIZE;
#endif
}

long dm_snap_local(int fd, void *addr, size_t npages)
{
	return dm_snap_count(fd, addr, npages, DM_SNAP_TYPE_MASK,
			     DM_SNAP_DEV_LOCAL);
}

long dm_snap_local_pmd(int fd, void *addr, size_t npages)
{
	return dm_snap_count(fd, addr, npages, DM_SNAP_TYPE_MASK | DM_SNAP_PMD,
			     DM_SNAP_DEV_LOCAL | DM_SNAP_PMD);
}

long dm_snap_local_write(int fd, void *addr, size_t npages)
{
	return dm_snap_count(fd, addr, npages,
			     DM_SNAP_TYPE_MASK | DM_SNAP_WRITE,
			     DM_SNAP_DEV_LOCAL | DM_SNAP_WRITE);
}

bool pm_enabled(void)
{
	const char *e = getenv("DMIRROR_THP_NO_PAGEMAP");

	return !(e && *e && *e != '0');
}

bool pm_pmd_enabled(void)
{
	const char *e = getenv("DMIRROR_THP_PAGEMAP_PMD");

	return pm_enabled() && !(e && *e == '0');
}

/*
 * The pagemap entries of npages pages at addr (vm_util's reader), malloc()ed;
 * NULL and *err.
 */
static uint64_t *pm_entries(void *addr, size_t npages, long *err)
{
	uint64_t *ent = malloc(npages * sizeof(*ent));
	size_t i;
	int fd;

	if (!ent) {
		*err = -ENOMEM;
		return NULL;
	}
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = -errno;
		free(ent);
		return NULL;
	}
	for (i = 0; i < npages; i++)
		ent[i] = pagemap_get_entry(fd, (char *)addr + i * DM_PAGE_SIZE);
	close(fd);
	return ent;
}

long pm_count(void *addr, size_t npages, uint64_t mask, uint64_t want)
{
	uint64_t *ent;
	long n = 0;
	size_t i;

	if (!pm_enabled())
		return -ENOSYS;
	ent = pm_entries(addr, npages, &n);
	if (!ent)
		return n;
	for (i = 0; i < npages; i++)
		if ((ent[i] & mask) == want)
			n++;
	free(ent);
	return n;
}

/*
 * Whether the nr pagemap entries at ent map one whole folio of nr pages, in
 * order: consecutive pfns, the first a compound head, the others its tails,
 * and the pfn after them not a tail (the folio ends there).
 */
static bool pm_is_folio(const uint64_t *ent, size_t nr, int kpf)
{
	uint64_t pfn = ent[0] & PM_PFN_MASK;
	uint64_t flags;
	size_t j;

	if (!(ent[0] & PM_PRESENT) || !pfn)
		return false;
	for (j = 1; j < nr; j++)
		if (!(ent[j] & PM_PRESENT) || (ent[j] & PM_PFN_MASK) != pfn + j)
			return false;
	if (pageflags_get(pfn, kpf, &flags) || !(flags & KPF_COMPOUND_HEAD))
		return false;
	for (j = 1; j < nr; j++)
		if (pageflags_get(pfn + j, kpf, &flags) ||
		    !(flags & KPF_COMPOUND_TAIL))
			return false;
	/* Past the end of memory there is no flag to read: the folio ends. */
	return pageflags_get(pfn + nr, kpf, &flags) ||
	       !(flags & KPF_COMPOUND_TAIL);
}

/*
 * DMIRROR_THP_NO_PAGEMAP does not turn this one off: it is the proof of a
 * folio's order, which nothing else gives.
 */
long pm_count_folios(void *addr, size_t npages, size_t nr)
{
	uint64_t *ent;
	long n = 0;
	size_t i;
	int kpf;

	if (nr < 2 || nr > DM_THP_PAGES)
		return -EINVAL;
	ent = pm_entries(addr, npages, &n);
	if (!ent)
		return n;
	kpf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (kpf < 0) {
		n = -errno;
		free(ent);
		return n;
	}
	for (i = 0; i + nr <= npages; ) {
		if (pm_is_folio(&ent[i], nr, kpf)) {
			n++;
			i += nr;
		} else {
			i++;
		}
	}
	close(kpf);
	free(ent);
	return n;
}

long pm_count_dev(void *addr, size_t npages)
{
	return pm_count(addr, npages, PM_SWAP | PM_PRESENT, PM_SWAP);
}

long pm_count_present(void *addr, size_t npages)
{
	return pm_count(addr, npages, PM_PRESENT, PM_PRESENT);
}

long smaps_anon_huge_kb(void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	char line[512];
	bool in = false;
	long kb = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		long v;

		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a >= start && a < end;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1) {
			kb = v;
			break;
		}
	}
	fclose(f);
	return kb;
}

bool dm_is_sys_thp(void *addr, size_t nthp)
{
	long kb = smaps_anon_huge_kb(addr);
	long present;

	if (kb < (long)(nthp * DM_THP_SIZE / DM_ONEKB))
		return false;
	present = pm_count_present(addr, nthp * DM_THP_PAGES);
	/* Without pagemap, smaps alone (it also counts device PMDs). */
	return present == -ENOSYS || present == (long)(nthp * DM_THP_PAGES);
}

long vmstat_get(const char *name)
{
	char key[128];
	long v, ret = -1;
	FILE *f;

	f = fopen("/proc/vmstat", "re");
	if (!f)
		return -1;
	while (fscanf(f, "%127s %ld", key, &v) == 2) {
		if (!strcmp(key, name)) {
			ret = v;
			break;
		}
	}
	fclose(f);
	return ret;
}

long vmstat_get_exact(const char *name)
{
	int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY | O_CLOEXEC);

	/* Folds the per-CPU deltas into the global counters first. */
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			fprintf(stderr, "stat_refresh: %s\n", strerror(errno));
		close(fd);
	}
	return vmstat_get(name);
}

void *dm_reserve_aligned(size_t size, void **res, size_t *res_len)
{
	size_t len = size + 2 * DM_THP_SIZE;
	void *r;

	r = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	*res = r;
	*res_len = len;
	/* At least one guard page below, and size + a guard above. */
	return (void *)ALIGN_UP((uintptr_t)r + DM_PAGE_SIZE, DM_THP_SIZE);
}

int dm_buf_alloc(struct dm_buf *b, size_t size, int prot, enum dm_thp_mode thp)
{
	void *p;

	memset(b, 0, sizeof(*b));
	p = dm_reserve_aligned(size, &b->res, &b->res_len);
	if (!p)
		return -ENOMEM;
	b->ptr = mmap(p, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		      -1, 0);
	if (b->ptr == MAP_FAILED) {
		b->ptr = NULL;
		dm_buf_free(b);
		return -ENOMEM;
	}
	b->size = size;
	if (thp == DM_THP_ON && madvise(b->ptr, size, MADV_HUGEPAGE)) {
		dm_buf_free(b);
		return -errno;
	}
	if (thp == DM_THP_OFF && madvise(b->ptr, size, MADV_NOHUGEPAGE)) {
		dm_buf_free(b);
		return -errno;
	}
	b->mirror = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->mirror == MAP_FAILED) {
		b->mirror = NULL;
		dm_buf_free(b);
		return -ENOMEM;
	}
	/* 0xA5 is neither the pattern nor zero: an unwritten mirror shows. */
	memset(b->mirror, 0xA5, size);
	return 0;
}

void dm_buf_free(struct dm_buf *b)
{
	if (b->res)
		munmap(b->res, b->res_len);
	if (b->mirror)
		munmap(b->mirror, b->size);
	memset(b, 0, sizeof(*b));
}

static inline uint64_t dm_word(uint32_t seed, size_t idx)
{
	return ((uint64_t)seed << 32) | (uint32_t)idx;
}

void dm_fill_at(void *p, size_t off, size_t size, uint32_t seed)
{
	uint64_t *w = p;
	size_t i, first = off / 8;

	for (i = 0; i < size / 8; i++)
		w[i] = dm_word(seed, first + i);
}

void dm_fill(void *p, size_t size, uint32_t seed)
{
	dm_fill_at(p, 0, size, seed);
}

long dm_verify_at(const void *p, size_t off, size_t size, uint32_t seed)
{
	const uint64_t *w = p;
	size_t i, first = off / 8;

	for (i = 0; i < size / 8; i++)
		if (w[i] != dm_word(seed, first + i))
			return (long)(i * 8);
	return -1;
}

long dm_verify(const void *p, size_t size, uint32_t seed)
{
	return dm_verify_at(p, 0, size, seed);
}

long dm_verify_zero(const void *p, size_t size)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < size / 8; i++)
		if (w[i])
			return (long)(i * 8);
	return -1;
}

uint64_t dm_touch_read(const void *p, size_t size, size_t stride)
{
	const volatile uint64_t *w;
	uint64_t sum = 0;
	size_t off;

	for (off = 0; off < size; off += stride) {
		w = (const volatile uint64_t *)((const char *)p + off);
		sum += *w;
	}
	return sum;
}

int dm_run(const char *cmd)
{
	int st = system(cmd);

	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

bool dm_wait_devices(int seconds)
{
	int i;

	for (i = 0; i < seconds * 10; i++) {
		if (dm_devices_present())
			return true;
		usleep(100000);
	}
	return dm_devices_present();
}

bool dm_ensure_module(void)
{
	if (dm_devices_present())
		return true;
	dm_run("insmod " DM_MODULE_PATH " >/dev/null 2>&1");
	return dm_wait_devices(5);
}

static long dm_read_long(const char *path)
{
	long v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static bool dm_write_long(const char *path, long v)
{
	FILE *f = fopen(path, "we");
	bool ok;

	if (!f)
		return false;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok;
}

#define HP2M "/sys/kernel/mm/hugepages/hugepages-2048kB/"

bool dm_hugetlb_reserve(long *old)
{
	long nr = dm_read_long(HP2M "nr_hugepages");
	long free_hp = dm_read_long(HP2M "free_hugepages");

	*old = -1;
	if (nr < 0 || free_hp < 0)
		return false;
	if (free_hp >= 1)
		return true;
	*old = nr;
	if (!dm_write_long(HP2M "nr_hugepages", nr + 1))
		return false;
	return dm_read_long(HP2M "free_hugepages") >= 1;
}

void dm_hugetlb_restore(long old)
{
	if (old >= 0)
		dm_write_long(HP2M "nr_hugepages", old);
}

double dm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- THP sizes: the tree's hugepage_settings ---- */

void dm_thp_only(unsigned int order, enum thp_enabled mode)
{
	unsigned long orders = thp_supported_orders();
	static bool saved;
	struct thp_settings s;
	enum thp_enabled want;
	unsigned int o;

	if (!saved)
		thp_save_settings();
	saved = true;
	/*
	 * Write only the sizes that change: thp_write_settings() also writes
	 * khugepaged's sleep times, and each of those writes wakes khugepaged
	 * for a scan at once, of this mm too.
	 */
	thp_read_settings(&s);
	for (o = 0; o < NR_ORDERS; o++) {
		if (!(orders & (1UL << o)))
			continue;
		want = o == order ? mode : THP_NEVER;
		if (s.hugepages[o].enabled != want)
			dm_thp_size_enable(o, want);
	}
}

void dm_thp_size_enable(unsigned int order, enum thp_enabled mode)
{
	static const char * const modes[] = {
		[THP_NEVER] = "never", [THP_ALWAYS] = "always",
		[THP_INHERIT] = "inherit", [THP_MADVISE] = "madvise",
	};
	char name[64];

	snprintf(name, sizeof(name), "hugepages-%lukB/enabled",
		 dm_order_kb(order));
	thp_write_string(name, modes[mode]);
}

long mthp_stat(unsigned int order, const char *name)
{
	char path[96];

	snprintf(path, sizeof(path), "hugepages-%lukB/stats/%s",
		 dm_order_kb(order), name);
	return thp_read_num(path);
}
