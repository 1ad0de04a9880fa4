// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp-tests-fuzz: the ioctl surface under arguments drawn from
 * boundary values, alone, from several threads on one file, and from a
 * forked child on its parent's file.
 *
 * Each call takes a command, an address, a buffer pointer and a page count
 * from tables of what a caller can get wrong:
 *   addr:   an anonymous THP (filled), the same read-only, PROT_NONE, a
 *           private file mapping, a shared anonymous mapping, hugetlbfs
 *           (where the guest has huge pages), the vDSO, a hole, a range
 *           across two VMAs, NULL, a kernel address, the top of the user
 *           address space, and each of those off by one byte;
 *   ptr:    a read-only buffer holding the THP's own bytes, NULL, a
 *           kernel address, a scratch buffer, the THP itself, PROT_NONE,
 *           and unaligned;
 *   npages: 0, 1, 511, 512, 513, DMIRROR_THP_MAX_PAGES and one more, ~0.
 * The commands are the rows of the helpers' dm_iocs[] that take struct
 * hmm_dmirror_cmd.  The errno must be one that uapi/dmirror_thp_uapi.h
 * documents for the command (dm_iocs[] lists them); where the arguments
 * decide it alone (an unaligned address, no pages, too many, a range that
 * ends above user space, a foreign mm), it must be exactly that one.  The
 * THP's bytes never change: nothing reads into it, and a WRITE over it
 * takes its bytes from the read-only copy or from itself (fuzz_safe_ptr()
 * redirects the other draws).  Every mapping is followed by a PROT_NONE
 * guard, so that a range or a buffer that runs past its end meets EFAULT,
 * not the next mapping.  The fixture's teardown checks that the device
 * pools balance and hold nothing.
 *
 * DMIRROR_THP_FUZZ_SECONDS (default 10) bounds each random test,
 * DMIRROR_THP_FUZZ_SEED (default: the time) seeds it; a failure prints the
 * seed, and the same seed draws the same calls.  DMIRROR_THP_FUZZ_DEVICE
 * (default 0) picks the device: the fuzzer opens that one only, and
 * neither resets nor checks the other, which the soak's stress uses.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kselftest_harness.h"
#include "dmirror_thp_test.h"

#define SEED_BYTE	151
#define FUZZ_THREADS	4

/* What the tables point at: made once per test by maps_setup(). */
struct fuzz_maps {
	char *thp;		/* 2 MB anonymous, filled with SEED_BYTE's pattern */
	char *copy;		/* read-only, the THP's bytes */
	char *scratch;		/* read-write, for what the device reads */
	char *ro;		/* read-only anonymous */
	char *none;		/* PROT_NONE */
	char *file;		/* private mapping of a memfd */
	char *shared;		/* shared anonymous */
	char *huge;		/* hugetlbfs, or NULL */
	char *hole;		/* unmapped */
	char *straddle;		/* the last page of a RW VMA, then a RO one */
	char *vdso;
	int memfd;
};

/* The addresses and pointers to draw from; the last flag says "exact". */
static uint64_t fuzz_addr(const struct fuzz_maps *m, unsigned int i)
{
	const uint64_t a[] = {
		(uintptr_t)m->thp, (uintptr_t)m->ro, (uintptr_t)m->none,
		(uintptr_t)m->file, (uintptr_t)m->shared,
		(uintptr_t)(m->huge ? m->huge : m->thp), (uintptr_t)m->vdso,
		(uintptr_t)m->hole, (uintptr_t)m->straddle, 0,
		0xffff888000000000ULL, dm_user_top() - DM_PAGE_SIZE,
	};
	const unsigned int n = sizeof(a) / sizeof(a[0]);

	/* The second half of the draws is each one off by a byte. */
	return a[i % n] + (i / n % 2);
}
#define NR_ADDRS	24

static uint64_t fuzz_ptr(const struct fuzz_maps *m, unsigned int i)
{
	const uint64_t p[] = {
		(uintptr_t)m->copy, 0, 0xffff888000000000ULL,
		(uintptr_t)m->scratch, (uintptr_t)m->thp, (uintptr_t)m->copy + 1,
		(uintptr_t)m->none, (uintptr_t)m->scratch + 1,
	};

	return p[i % (sizeof(p) / sizeof(p[0]))];
}
#define NR_PTRS		8

static const uint64_t npages_table[] = {
	0, 1, 511, 512, 513, DMIRROR_THP_MAX_PAGES, DMIRROR_THP_MAX_PAGES + 1,
	~0ULL,
};
#define NR_NPAGES	(sizeof(npages_table) / sizeof(npages_table[0]))

/*
 * @size bytes mapped as asked, then a PROT_NONE guard of 2 MB: tracked by
 * the fixture, which unmaps it.
 */
static char *guarded(struct dm_ctx *c, size_t size, int prot, int flags,
		     int fd)
{
	char *res = mmap(NULL, size + DM_THP_SIZE, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (res == MAP_FAILED)
		return NULL;
	dm_ctx_track(c, res, size + DM_THP_SIZE);
	if (mmap(res, size, prot, flags | MAP_FIXED, fd, 0) == MAP_FAILED)
		return NULL;
	return res;
}

static void maps_setup(struct __test_metadata *_metadata, struct dm_ctx *c,
		       struct fuzz_maps *m)
{
	const size_t sz = DM_THP_SIZE, rw = PROT_READ | PROT_WRITE;
	const int anon = MAP_PRIVATE | MAP_ANONYMOUS;
	struct dm_buf *b;
	char *p;

	memset(m, 0, sizeof(*m));
	m->memfd = -1;
	/* dm_buf: a 2 MB-aligned THP with PROT_NONE around it. */
	b = DM_BUF(c, sz, rw, DM_THP_ON);
	m->thp = b->ptr;
	dm_fill(m->thp, sz, SEED_BYTE);
	m->copy = guarded(c, sz + DM_PAGE_SIZE, rw, anon, -1);
	ASSERT_NE(NULL, m->copy);
	memcpy(m->copy, m->thp, sz);
	ASSERT_EQ(0, mprotect(m->copy, sz + DM_PAGE_SIZE, PROT_READ));
	m->scratch = guarded(c, sz + DM_PAGE_SIZE, rw, anon, -1);
	m->ro = guarded(c, sz, PROT_READ, anon, -1);
	m->none = guarded(c, sz, PROT_NONE, anon, -1);
	m->memfd = memfd_create("dmirror-fuzz", MFD_CLOEXEC);
	ASSERT_LE(0, m->memfd);
	ASSERT_EQ(0, ftruncate(m->memfd, sz));
	m->file = guarded(c, sz, rw, MAP_PRIVATE, m->memfd);
	m->shared = guarded(c, sz, rw, MAP_SHARED | MAP_ANONYMOUS, -1);
	ASSERT_NE(NULL, m->scratch);
	ASSERT_NE(NULL, m->ro);
	ASSERT_NE(NULL, m->none);
	ASSERT_NE(NULL, m->file);
	ASSERT_NE(NULL, m->shared);
	memset(m->file, 1, sz);
	memset(m->shared, 2, sz);
	/* hugetlbfs where the guest has a huge page to give. */
	m->huge = guarded(c, sz, rw, anon | MAP_HUGETLB, -1);
	if (m->huge)
		memset(m->huge, 3, sz);
	/* A hole: mapped, then unmapped. */
	p = mmap(NULL, DM_PAGE_SIZE, PROT_NONE, anon, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, DM_PAGE_SIZE);
	m->hole = p;
	/* Two pages, two VMAs: read-write, then read-only. */
	p = guarded(c, 2 * DM_PAGE_SIZE, rw, anon, -1);
	ASSERT_NE(NULL, p);
	memset(p, 4, 2 * DM_PAGE_SIZE);
	ASSERT_EQ(0, mprotect(p + DM_PAGE_SIZE, DM_PAGE_SIZE, PROT_READ));
	m->straddle = p;
	m->vdso = (char *)getauxval(AT_SYSINFO_EHDR);
}

static void maps_teardown(struct fuzz_maps *m)
{
	if (m->memfd >= 0)
		close(m->memfd);
}

/*
 * The errno the arguments alone decide, or 0 when the kernel's state
 * decides (then any documented one, or success, will do).
 */
static int decided_errno(const struct dm_ioc *fc, uint64_t addr,
			 uint64_t npages, bool foreign)
{
	uint64_t end;

	if (fc->arg == DM_ARG_FLAGS)
		return npages & ~(uint64_t)HMM_DMIRROR_FLAGS_ALL ? EINVAL : 0;
	if (fc->arg == DM_ARG_RELEASE)
		return 0;
	if (foreign || addr % DM_PAGE_SIZE || !npages ||
	    npages > DMIRROR_THP_MAX_PAGES ||
	    __builtin_add_overflow(addr, npages * DM_PAGE_SIZE, &end) ||
	    end > dm_user_top())
		return EINVAL;
	return 0;
}

/* Whether [a, a + n pages) and [b, b + len) meet. */
static bool overlaps(uint64_t a, uint64_t n, uint64_t b, uint64_t len)
{
	uint64_t alen = n > DMIRROR_THP_MAX_PAGES ? DMIRROR_THP_MAX_PAGES : n;

	alen *= DM_PAGE_SIZE;
	return a < b + len && b < a + alen;
}

/*
 * Keep the THP's bytes: a command that writes into @ptr (every one that
 * reads device data) never gets the THP there, and a WRITE over the THP
 * takes its bytes from the copy or from the THP itself.
 */
static uint64_t fuzz_safe_ptr(const struct fuzz_maps *m,
			      const struct dm_ioc *fc, uint64_t addr,
			      uint64_t ptr, uint64_t npages)
{
	uint64_t thp = (uintptr_t)m->thp;

	switch (fc->dir) {
	case DM_PTR_IN:
		return overlaps(addr, npages, thp, DM_THP_SIZE) &&
		       ptr != (uintptr_t)m->copy && ptr != thp ?
		       (uintptr_t)m->copy : ptr;
	case DM_PTR_OUT:
		return overlaps(ptr, npages, thp, DM_THP_SIZE) ?
		       (uintptr_t)m->scratch : ptr;
	default:
		return ptr;
	}
}

/* One call: 0 if its outcome is one the uapi allows, else -1 with why. */
static int fuzz_one(int fd, const struct fuzz_maps *m,
		    const struct dm_ioc *fc, uint64_t addr, uint64_t ptr,
		    uint64_t npages, bool foreign, char *why, size_t len)
{
	struct hmm_dmirror_cmd cmd = {
		.addr = addr, .npages = npages,
		.ptr = fuzz_safe_ptr(m, fc, addr, ptr, npages),
	};
	int want, err;

	/* FLAGS with FAIL_ALLOC would only arm a failure: keep it disarmed. */
	if (fc->arg == DM_ARG_FLAGS)
		cmd.npages &= ~(uint64_t)HMM_DMIRROR_FLAG_FAIL_ALLOC;
	want = decided_errno(fc, addr, cmd.npages, foreign);
	err = ioctl(fd, fc->nr, &cmd) ? errno : 0;
	if (want ? err == want : !err || dm_ioc_errno_ok(fc, err))
		return 0;
	snprintf(why, len, "%s addr %#llx ptr %#llx npages %#llx%s: %s, want %s",
		 fc->name, (unsigned long long)addr, (unsigned long long)cmd.ptr,
		 (unsigned long long)npages, foreign ? " (foreign mm)" : "",
		 err ? strerror(err) : "success",
		 want ? strerror(want) : "success or a documented errno");
	return -1;
}

static uint64_t fuzz_seed(void)
{
	const char *e = getenv("DMIRROR_THP_FUZZ_SEED");

	return e && *e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL);
}

static double fuzz_seconds(void)
{
	const char *e = getenv("DMIRROR_THP_FUZZ_SECONDS");

	return e && *e ? atof(e) : 10;
}

struct fuzz_run {
	int fd;
	const struct fuzz_maps *m;
	uint64_t seed;
	double end;
	bool foreign;
	unsigned long calls;
	char why[256];
	int failed;
};

/* Random calls until the deadline or the first unexpected outcome. */
static void *fuzz_loop(void *arg)
{
	struct fuzz_run *r = arg;
	uint64_t s = r->seed | 1;

	while (dm_now() < r->end && !r->failed) {
		uint64_t x = dm_rand(&s);
		const struct dm_ioc *fc = &dm_iocs[x % DM_IOC_NR_CMD];

		x /= DM_IOC_NR_CMD;
		r->failed = fuzz_one(r->fd, r->m, fc,
				     fuzz_addr(r->m, x % NR_ADDRS),
				     fuzz_ptr(r->m, x / NR_ADDRS % NR_PTRS),
				     npages_table[x / NR_ADDRS / NR_PTRS % NR_NPAGES],
				     r->foreign, r->why, sizeof(r->why));
		r->calls++;
	}
	return NULL;
}

static int fuzz_device(void)
{
	const char *e = getenv("DMIRROR_THP_FUZZ_DEVICE");

	return e && *e == '1' ? 1 : 0;
}

FIXTURE(fuzz) {
	struct dm_ctx c;
	struct fuzz_maps m;
	int fd;
};

/* dm_ctx_setup() for one device, without resetting its counters. */
FIXTURE_SETUP(fuzz)
{
	int d = fuzz_device();

	memset(&self->c, 0, sizeof(self->c));
	self->c.fd[0] = self->c.fd[1] = self->fd = -1;
	if (!dm_devices_present())
		SKIP(return, "no /dev/hmm_dmirror0 and 1: module " DM_MODULE_NAME " not loaded");
	self->fd = self->c.fd[d] = dm_open(d);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, dm_set_flags(self->fd, 0));
	ASSERT_EQ(0, dm_stats(self->fd, &self->c.base[d]));
	maps_setup(_metadata, &self->c, &self->m);
}

FIXTURE_TEARDOWN(fuzz)
{
	/* Whatever the calls moved to the device goes back first. */
	if (self->fd >= 0)
		dm_release(self->fd);
	maps_teardown(&self->m);
	dm_ctx_teardown(_metadata, &self->c);
}

/* The THP still holds its bytes, wherever the calls left it. */
#define ASSERT_THP_INTACT(m)						\
	ASSERT_EQ(-1, dm_verify((m)->thp, DM_THP_SIZE, SEED_BYTE))

/* Every command × address × pointer × page count, once, in order. */
TEST_F_TIMEOUT(fuzz, every_combination, 300)
{
	unsigned int c, a, p, n;
	int bad = 0;
	char why[256];

	for (c = 0; c < DM_IOC_NR_CMD; c++)
		for (a = 0; a < NR_ADDRS; a++)
			for (p = 0; p < NR_PTRS; p++)
				for (n = 0; n < NR_NPAGES; n++) {
					if (!fuzz_one(self->fd, &self->m,
						      &dm_iocs[c],
						      fuzz_addr(&self->m, a),
						      fuzz_ptr(&self->m, p),
						      npages_table[n], false,
						      why, sizeof(why)))
						continue;
					if (bad++ < 10)
						TH_LOG("%s", why);
				}
	ASSERT_EQ(0, bad);
	ASSERT_THP_INTACT(&self->m);
}

/* Random calls from four threads on one file. */
TEST_F_TIMEOUT(fuzz, random_threads, 600)
{
	struct fuzz_run r[FUZZ_THREADS];
	pthread_t t[FUZZ_THREADS];
	uint64_t seed = fuzz_seed();
	double end = dm_now() + fuzz_seconds();
	unsigned long calls = 0;
	int i, failed = 0;

	TH_LOG("seed %#llx (DMIRROR_THP_FUZZ_SEED replays it)",
	       (unsigned long long)seed);
	for (i = 0; i < FUZZ_THREADS; i++) {
		r[i] = (struct fuzz_run){ .fd = self->fd, .m = &self->m,
					  .seed = seed + i, .end = end };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, fuzz_loop, &r[i]));
	}
	for (i = 0; i < FUZZ_THREADS; i++) {
		pthread_join(t[i], NULL);
		calls += r[i].calls;
		if (r[i].failed) {
			failed++;
			TH_LOG("thread %d, seed %#llx: %s", i,
			       (unsigned long long)r[i].seed, r[i].why);
		}
	}
	TH_LOG("%lu calls", calls);
	ASSERT_EQ(0, failed);
	ASSERT_THP_INTACT(&self->m);
}

static int child_fuzz(void *arg)
{
	struct fuzz_run *r = arg;

	fuzz_loop(r);
	if (r->failed)
		fprintf(stderr, "# child, seed %#llx: %s\n",
			(unsigned long long)r->seed, r->why);
	return r->failed ? 1 : 0;
}

/*
 * A forked child calls on its parent's file while the parent does too:
 * every range command is EINVAL for the child (not the file's mm), and
 * neither disturbs the other.
 */
TEST_F_TIMEOUT(fuzz, random_parent_and_child, 600)
{
	uint64_t seed = fuzz_seed();
	struct fuzz_run parent = {
		.fd = self->fd, .m = &self->m, .seed = seed,
		.end = dm_now() + fuzz_seconds(),
	};
	struct fuzz_run child = parent;
	pthread_t t;

	TH_LOG("seed %#llx (DMIRROR_THP_FUZZ_SEED replays it)",
	       (unsigned long long)seed);
	child.seed = seed + 100;
	child.foreign = true;
	ASSERT_EQ(0, pthread_create(&t, NULL, fuzz_loop, &parent));
	ASSERT_EQ(0, dm_run_child(child_fuzz, &child,
				  (int)fuzz_seconds() + 60));
	pthread_join(t, NULL);
	if (parent.failed)
		TH_LOG("parent: %s", parent.why);
	ASSERT_EQ(0, parent.failed);
	ASSERT_THP_INTACT(&self->m);
}

TEST_HARNESS_MAIN
