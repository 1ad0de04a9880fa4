// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp-bench: measures THP, mTHP and 4K migration; judges nothing.
 *
 * For each buffer size (2 MB aligned) it times, in the same run, a THP
 * buffer (MADV_HUGEPAGE) and a 4K buffer (MADV_NOHUGEPAGE):
 *   to_dev   HMM_DMIRROR_MIGRATE_TO_DEV of the whole buffer (which, as in
 *            test_hmm, also has the device read the range back to a mirror)
 *   to_sys   HMM_DMIRROR_MIGRATE_TO_SYS of the whole buffer
 *   fault    CPU faults that bring a device-resident buffer back: one byte
 *            read per folio, each 2 MB region timed apart
 * The THP and 4K rounds alternate, so that a slow moment of the machine
 * costs both: warm-up rounds, then N timed ones.  With dmirror-thp it also
 * reads where each path's time went (HMM_DMIRROR_PHASES) and measures,
 * in rounds of their own before the paths', the kernel's own copies of a
 * 2 MB folio (HMM_DMIRROR_COPY_BENCH): the copy ceiling.
 *
 * Then the folio-order sweep (--orders): one buffer of --order-mb per order,
 * 4K, the mTHP orders asked for (default 16 kB, 64 kB, 1 MB) and the PMD,
 * each filled with that size alone enabled in sysfs, the same rounds.
 *
 * After every timed round, pagemap and /proc/kpageflags say whether the
 * buffer is still made of whole folios of its order: the kernel's witness,
 * which no driver writes, that both moves (or the fault) kept the folios
 * whole.  A buffer that is not is made again before the next round, so
 * that every round starts from whole folios.
 *
 * Everything goes to the JSON (--json): every round's time, every region's
 * fault latency, the phases, the ceiling and the witness.  The tables, the
 * targets and the plots are vm/report/bench_report.py's.  stdout has
 * progress and one TAP result for the run.  The clock must be fine-grained:
 * the bench refuses to measure on a jiffies clocksource or a clock_getres()
 * above 1 us.
 *
 * Buffer placement: the mirror that MIGRATE_TO_DEV reads the range back to
 * starts one page past a 2 MB boundary.  Under QEMU/TCG, a string copy
 * between two buffers at the same offset modulo the softmmu TLB's reach
 * misses that TLB on every word, a cost of the emulator that a CPU does
 * not have; a user buffer has no reason to be 2 MB-aligned.
 *
 * Exit status: 0 when every figure was measured, 1 when the bench failed
 * (a device error, corrupted data), 2 for bad options, 3 for a clock it
 * cannot trust.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

#define MAX_SIZES	16
#define MAX_ORDERS	8
#define MAX_ITERS	100
#define MAX_META	8
#define COPY_ITERS	16
#define CLOCKSOURCE	"/sys/devices/system/clocksource/clocksource0/current_clocksource"

enum mode { MODE_THP, MODE_4K, MODE_NR };
static const char *const mode_name[MODE_NR] = { "thp", "4k" };

/* What is timed per round; the report derives the round trip and rates. */
enum metric { M_TO_DEV, M_TO_SYS, M_FAULT, M_NR };
static const char *const metric_name[M_NR] = { "to_dev", "to_sys", "fault" };
static const int metric_path[M_NR] = {
	HMM_DMIRROR_PATH_TO_DEV, HMM_DMIRROR_PATH_TO_SYS, HMM_DMIRROR_PATH_FAULT,
};
static const char *const phase_name[HMM_DMIRROR_PHASE_NR] = {
	"setup", "alloc", "copy", "pages", "finalize", "readback",
};

struct opts {
	size_t sizes_mb[MAX_SIZES];
	int nsizes;
	int iters;
	int warmup;
	int dev;
	const char *json;
	bool stock;
	bool dry_run;
	const char *meta[MAX_META];
	int nmeta;
	unsigned int orders[MAX_ORDERS];	/* the sweep: 0, mTHPs, PMD */
	int norders;
	size_t order_mb;
};

/*
 * One buffer's measurements, a (size, mode) or an order of the sweep:
 * seconds per round of each metric, the fault time of each 2 MB region of
 * every round, the rounds after which its folios were still whole, and the
 * phases of each path (ns, summed over the timed rounds).
 */
struct result {
	bool done;
	unsigned int order;
	size_t size;
	double t[M_NR][MAX_ITERS];
	double *lat;		/* us, every region of every timed round */
	size_t nlat;
	int whole[M_NR];	/* timed rounds that left the folios whole */
	int remade;		/* buffers made again after a split */
	double phase_ns[M_NR][HMM_DMIRROR_PHASE_NR];
};

/* One size; the copy ceiling as many rounds as the paths. */
struct row {
	size_t size_mb;
	struct result res[MODE_NR];
	double copy_us[MAX_ITERS];	/* us per 2 MB, per round */
	double to_user_us[MAX_ITERS];
	bool have_ceiling;
};

static struct {
	char clocksource[64];
	long res_ns;
	char cpu[128];
	char kernel[160];
} env;

/* ---- options ---- */

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
"usage: %s [options]\n"
"  -s, --sizes LIST     buffer sizes in MB, comma separated, even\n"
"                       (default 2,8,64)\n"
"  -i, --iters N        timed rounds (default 5; at least 5 for a report)\n"
"  -w, --warmup N       untimed warm-up rounds (default 1)\n"
"  -d, --device N       /dev/hmm_dmirrorN (default 0)\n"
"  -j, --json PATH      the measurements as JSON (read by\n"
"                       vm/report/bench_report.py)\n"
"      --orders LIST    mTHP orders of the order sweep, 2..8, comma\n"
"                       separated, or none (default 2,4,8; 4K and the PMD\n"
"                       are always swept)\n"
"      --order-mb N     buffer size of the order sweep, MB (default 8)\n"
"      --stock          against the stock test_hmm: no phases, no copy\n"
"                       ceiling, no order sweep\n"
"      --meta KEY=VAL   an entry for the JSON's meta object (repeatable)\n"
"  -n, --dry-run        print the plan and exit\n"
"  -h, --help\n", argv0);
}

/*
 * A comma-separated list of at most @max numbers in [lo, hi], into @out;
 * returns how many, or -1 after naming the first bad one.
 */
static int parse_list(const char *arg, unsigned long lo, unsigned long hi,
		      unsigned long *out, int max, const char *what)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int n = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || v < lo || v > hi || n >= max) {
			fprintf(stderr, "bad %s '%s' (%lu..%lu, at most %d)\n",
				what, tok, lo, hi, max);
			n = -1;
			break;
		}
		out[n++] = v;
	}
	free(copy);
	return n;
}

static int parse_sizes(struct opts *o, const char *arg)
{
	unsigned long v[MAX_SIZES];
	int i, n = parse_list(arg, 2, 65536, v, MAX_SIZES, "size in MB");

	for (i = 0; i < n; i++) {
		if (v[i] % 2) {
			fprintf(stderr, "bad size '%lu' (MB, even)\n", v[i]);
			return -1;
		}
		o->sizes_mb[i] = v[i];
	}
	o->nsizes = n;
	return n > 0 ? 0 : -1;
}

/* --orders: 4K first, then the mTHP orders, then the PMD. */
static int parse_orders(struct opts *o, const char *arg)
{
	unsigned long v[MAX_ORDERS - 2];
	int i, n = 0;

	if (strcmp(arg, "none"))
		n = parse_list(arg, DM_MTHP_MIN_ORDER, DM_PMD_ORDER - 1, v,
			       MAX_ORDERS - 2, "order");
	if (n < 0)
		return -1;
	o->norders = 0;
	o->orders[o->norders++] = 0;
	for (i = 0; i < n; i++)
		o->orders[o->norders++] = v[i];
	o->orders[o->norders++] = DM_PMD_ORDER;
	return 0;
}

static int parse_int(const char *arg, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*end || end == arg || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "device", required_argument, NULL, 'd' },
		{ "json", required_argument, NULL, 'j' },
		{ "stock", no_argument, NULL, 'S' },
		{ "meta", required_argument, NULL, 'm' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "orders", required_argument, NULL, 'O' },
		{ "order-mb", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->sizes_mb[0] = 2;
	o->sizes_mb[1] = 8;
	o->sizes_mb[2] = 64;
	o->nsizes = 3;
	o->iters = 5;
	o->warmup = 1;
	o->order_mb = 8;
	parse_orders(o, "2,4,8");

	while ((c = getopt_long(argc, argv, "s:i:w:d:j:nh", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_sizes(o, optarg))
				return -1;
			break;
		case 'i':
			if (parse_int(optarg, 1, MAX_ITERS, &o->iters)) {
				fprintf(stderr, "bad --iters '%s' (1..%d)\n", optarg,
					MAX_ITERS);
				return -1;
			}
			break;
		case 'w':
			if (parse_int(optarg, 0, 100, &o->warmup)) {
				fprintf(stderr, "bad --warmup '%s' (0..100)\n", optarg);
				return -1;
			}
			break;
		case 'd':
			if (parse_int(optarg, 0, DM_NDEVICES - 1, &o->dev)) {
				fprintf(stderr, "bad --device '%s'\n", optarg);
				return -1;
			}
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'S':
			o->stock = true;
			break;
		case 'm':
			if (o->nmeta >= MAX_META || !strchr(optarg, '=')) {
				fprintf(stderr, "bad --meta '%s' (KEY=VAL, at most %d)\n",
					optarg, MAX_META);
				return -1;
			}
			o->meta[o->nmeta++] = optarg;
			break;
		case 'n':
			o->dry_run = true;
			break;
		case 'O':
			if (parse_orders(o, optarg))
				return -1;
			break;
		case 'M': {
			int mb;

			if (parse_int(optarg, 2, 1024, &mb) || mb % 2) {
				fprintf(stderr, "bad --order-mb '%s' (even, 2..1024)\n",
					optarg);
				return -1;
			}
			o->order_mb = mb;
			break;
		}
		case 'h':
			usage(stdout, argv[0]);
			exit(0);
		default:
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* ---- the environment ---- */

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = 0;
	if (f) {
		if (fgets(buf, len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

static void read_cpu_model(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && v) {
			v += 2;
			v[strcspn(v, "\n")] = 0;
			snprintf(buf, len, "%s", v);
			break;
		}
	}
	fclose(f);
}

/*
 * The clock must resolve microseconds: refuse jiffies, and a resolution of
 * a tick (no high-resolution timers).
 */
static int check_clock(void)
{
	struct timespec res;
	struct utsname u;

	read_line(CLOCKSOURCE, env.clocksource, sizeof(env.clocksource));
	clock_getres(CLOCK_MONOTONIC, &res);
	env.res_ns = res.tv_sec * 1000000000L + res.tv_nsec;
	read_cpu_model(env.cpu, sizeof(env.cpu));
	uname(&u);
	snprintf(env.kernel, sizeof(env.kernel), "%.64s %.64s", u.release, u.version);
	printf("# clocksource %s, clock_getres %ld ns; cpu %s; kernel %s\n",
	       env.clocksource[0] ? env.clocksource : "?", env.res_ns, env.cpu,
	       u.release);
	if (!env.clocksource[0] || strstr(env.clocksource, "jiffies") ||
	    env.res_ns > 1000) {
		fprintf(stderr, "dmirror-thp-bench: the clock (%s, %ld ns) is too coarse to report: no figures\n",
			env.clocksource[0] ? env.clocksource : "unknown",
			env.res_ns);
		return -1;
	}
	return 0;
}

/* ---- the measurements ---- */

static int read_phases(int fd, struct dmirror_thp_phases *ph)
{
	memset(ph, 0, sizeof(*ph));
	ph->version = DMIRROR_THP_PHASES_VERSION;
	ph->size = sizeof(*ph);
	return ioctl(fd, HMM_DMIRROR_PHASES, ph) ? -errno : 0;
}

/* Add what happened on metric @m's path between @a and @b to @r. */
static void add_phases(struct result *r, int m,
		       const struct dmirror_thp_phases *a,
		       const struct dmirror_thp_phases *b)
{
	int p, path = metric_path[m];

	for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
		r->phase_ns[m][p] += b->ns[path][p] - a->ns[path][p];
}

/* One measurement of the in-kernel copy ceiling, in us per 2 MB. */
static int measure_ceiling(int fd, char *buf, double *copy_us,
			   double *to_user_us)
{
	struct dmirror_thp_copy_bench cb = {
		.ptr = (uintptr_t)buf,
		.iters = COPY_ITERS,
	};

	if (ioctl(fd, HMM_DMIRROR_COPY_BENCH, &cb))
		return -errno;
	*copy_us = cb.copy_ns / 1e3 / COPY_ITERS;
	*to_user_us = cb.to_user_ns / 1e3 / COPY_ITERS;
	return 0;
}

/*
 * The first address of @map, a mapping of at least 2 MB more than it is
 * to hold, that lies one page past a 2 MB boundary (see the top).
 */
static char *page_past_boundary(char *map)
{
	uintptr_t m = ((uintptr_t)map + DM_THP_SIZE - 1) & ~(DM_THP_SIZE - 1);
	char *p = (char *)(m - DM_THP_SIZE + DM_PAGE_SIZE);

	return p < map ? p + DM_THP_SIZE : p;
}

/*
 * A filled buffer of folios of @order (0: 4K pages), its mirror one page
 * past a 2 MB boundary (see the top), and whether its folios are whole.
 */
struct bench_buf {
	struct dm_buf b;
	char *mirror_map;
	unsigned int order;
	bool whole;
};

static void buf_free(struct bench_buf *bb)
{
	if (bb->mirror_map) {
		munmap(bb->mirror_map, bb->b.size + DM_THP_SIZE);
		bb->b.mirror = NULL;	/* not dm_buf_free()'s to unmap */
	}
	bb->mirror_map = NULL;
	dm_buf_free(&bb->b);
}

/* The kernel's witness: every folio of the buffer whole at its order. */
static bool buf_whole(struct bench_buf *bb)
{
	size_t np = dm_npages(bb->b.size);

	if (!bb->order)
		return true;
	return pm_count_folios(bb->b.ptr, np, 1UL << bb->order) ==
	       (long)(np >> bb->order);
}

/* A 4K buffer (order 0) is MADV_NOHUGEPAGE, a PMD one MADV_HUGEPAGE. */
static int buf_setup(struct bench_buf *bb, size_t size, unsigned int order)
{
	size_t mlen = size + DM_THP_SIZE;
	int ret;

	memset(bb, 0, sizeof(*bb));
	bb->order = order;
	ret = dm_buf_alloc(&bb->b, size, PROT_READ | PROT_WRITE,
			   !order ? DM_THP_OFF :
			   order == DM_PMD_ORDER ? DM_THP_ON : DM_THP_NONE);
	if (ret)
		return ret;
	bb->mirror_map = mmap(NULL, mlen, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bb->mirror_map == MAP_FAILED) {
		bb->mirror_map = NULL;
		buf_free(bb);
		return -ENOMEM;
	}
	munmap(bb->b.mirror, size);
	bb->b.mirror = page_past_boundary(bb->mirror_map);
	memset(bb->b.mirror, 0xA5, size);
	dm_fill(bb->b.ptr, size, 0xbe);
	bb->whole = buf_whole(bb);
	return 0;
}

/* Start a round from whole folios: a split buffer is made again. */
static int buf_ready(struct bench_buf *bb, struct result *r)
{
	size_t size = bb->b.size;
	unsigned int order = bb->order;

	if (bb->whole)
		return 0;
	buf_free(bb);
	r->remade++;
	return buf_setup(bb, size, order);
}

/*
 * MIGRATE_TO_DEV is best effort, as migrate_vma is: a page that reclaim,
 * compaction or another migration holds at that moment stays in system
 * memory, and the device's read-back then fails with ENOENT.  Such a round
 * did not move the whole buffer: everything goes back, and the round runs
 * again, at most MAX_REDO times in a run.  The JSON says how many.
 */
#define MAX_REDO	3
static int rounds_redone;

/*
 * khugepaged's own counters across each sweep.  A collapse takes the mmap
 * lock for writing and invalidates a range of the bench's mm, which every
 * mirror of it sees: the report says whether one ran while it measured.
 */
enum sweep { SWEEP_SIZES, SWEEP_ORDERS, SWEEP_NR };
static const char *const sweep_name[SWEEP_NR] = { "sizes", "orders" };
static struct {
	long full_scans;
	long pages_collapsed;
} khugepaged[SWEEP_NR];

/* Called at a sweep's start (@sign -1) and end (+1). */
static void khugepaged_count(enum sweep w, int sign)
{
	khugepaged[w].full_scans += sign *
		(long)thp_read_num("khugepaged/full_scans");
	khugepaged[w].pages_collapsed += sign *
		(long)thp_read_num("khugepaged/pages_collapsed");
}

typedef int (*round_fn)(int fd, bool stock, struct bench_buf *bb,
			struct result *r, int it);

/* Run one round from whole folios, again after an ENOENT (see above). */
static int run_round(round_fn round, int fd, bool stock, struct bench_buf *bb,
		     struct result *r, int it)
{
	int ret = buf_ready(bb, r);

	if (ret)
		return ret;
	while ((ret = round(fd, stock, bb, r, it)) == -ENOENT &&
	       rounds_redone < MAX_REDO) {
		rounds_redone++;
		fprintf(stderr, "# %zu MB, order %u: a page stayed in system memory (ENOENT): the round runs again\n",
			r->size >> 20, bb->order);
		if (dm_to_sys(fd, bb->b.ptr, dm_npages(bb->b.size), NULL))
			break;
	}
	return ret;
}

/* One migration round: to_dev then to_sys, timed apart. */
static int round_migrate(int fd, bool stock, struct bench_buf *bb,
			 struct result *r, int it)
{
	const size_t np = dm_npages(r->size);
	struct dmirror_thp_phases p0, p1, p2;
	double t0, t1, t2, t3;
	int ret;

	if (!stock && read_phases(fd, &p0))
		return -EIO;
	t0 = dm_now();
	ret = dm_to_dev(fd, bb->b.ptr, np, bb->b.mirror, NULL);
	t1 = dm_now();
	if (ret)
		return ret;
	if (!stock && read_phases(fd, &p1))
		return -EIO;
	t2 = dm_now();
	ret = dm_to_sys(fd, bb->b.ptr, np, NULL);
	t3 = dm_now();
	if (ret)
		return ret;
	bb->whole = buf_whole(bb);
	if (it < 0)
		return 0;
	r->t[M_TO_DEV][it] = t1 - t0;
	r->t[M_TO_SYS][it] = t3 - t2;
	r->whole[M_TO_DEV] += bb->whole;
	r->whole[M_TO_SYS] += bb->whole;
	if (stock)
		return 0;
	if (read_phases(fd, &p2))
		return -EIO;
	add_phases(r, M_TO_DEV, &p0, &p1);
	add_phases(r, M_TO_SYS, &p1, &p2);
	return 0;
}

/*
 * One fault round: migrate (untimed), then read one byte per folio, timing
 * each 2 MB region (or each folio, if larger); what did not come back goes
 * with MIGRATE_TO_SYS, untimed.
 */
static int round_fault(int fd, bool stock, struct bench_buf *bb,
		       struct result *r, int it)
{
	const size_t np = dm_npages(r->size);
	const size_t stride = DM_PAGE_SIZE << bb->order;
	struct dmirror_thp_phases p0, p1;
	double total = 0, t0, dt;
	size_t off;
	int ret;

	ret = dm_to_dev(fd, bb->b.ptr, np, bb->b.mirror, NULL);
	if (ret)
		return ret;
	if (!stock && read_phases(fd, &p0))
		return -EIO;
	for (off = 0; off < r->size; off += DM_THP_SIZE) {
		t0 = dm_now();
		(void)dm_touch_read(bb->b.ptr + off, DM_THP_SIZE, stride);
		dt = dm_now() - t0;
		total += dt;
		if (it >= 0)
			r->lat[r->nlat++] = dt * 1e6;
	}
	bb->whole = buf_whole(bb);
	if (it >= 0) {
		r->t[M_FAULT][it] = total;
		r->whole[M_FAULT] += bb->whole;
		if (!stock) {
			if (read_phases(fd, &p1))
				return -EIO;
			add_phases(r, M_FAULT, &p0, &p1);
		}
	}
	/* Nothing is left on the device; this only checks that. */
	return dm_to_sys(fd, bb->b.ptr, np, NULL);
}

static int result_init(struct result *r, size_t size, unsigned int order,
		       int iters)
{
	r->size = size;
	r->order = order;
	r->lat = calloc(size / DM_THP_SIZE * iters, sizeof(double));
	return r->lat ? 0 : -ENOMEM;
}

/* Every buffer's data is intact at the end. */
static int verify(struct bench_buf *bb, size_t n, const char *const *what)
{
	size_t k;

	for (k = 0; k < n; k++) {
		if (dm_verify(bb[k].b.ptr, bb[k].b.size, 0xbe) != -1) {
			fprintf(stderr, "%s: data corrupted\n", what[k]);
			return -EIO;
		}
	}
	return 0;
}

/*
 * All rounds of one size: the copy ceiling's, then the migrations', THP
 * and 4K one after the other, then the faults'.
 */
static int run_size(int fd, const struct opts *o, struct row *rw)
{
	size_t size = rw->size_mb << 20;
	size_t clen = DMIRROR_THP_COPY_BENCH_FOLIOS * DM_THP_SIZE;
	struct bench_buf bb[MODE_NR] = {};
	char *cbuf = MAP_FAILED, *cptr = NULL;
	int k, it, ret = 0;

	for (k = 0; k < MODE_NR && !ret; k++) {
		unsigned int order = k == MODE_THP ? DM_PMD_ORDER : 0;

		ret = result_init(&rw->res[k], size, order, o->iters);
		if (!ret)
			ret = buf_setup(&bb[k], size, order);
	}
	if (!ret && !bb[MODE_THP].whole)
		printf("# %zu MB: the THP buffer is not all THPs (AnonHugePages %ld kB)\n",
		       rw->size_mb, smaps_anon_huge_kb(bb[MODE_THP].b.ptr));
	/* The ceiling's user buffer is placed as the mirrors are. */
	if (!ret && !o->stock) {
		cbuf = mmap(NULL, clen + DM_THP_SIZE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (cbuf == MAP_FAILED) {
			ret = -ENOMEM;
		} else {
			cptr = page_past_boundary(cbuf);
			memset(cptr, 1, clen);
		}
	}
	/*
	 * The ceiling's rounds come first, apart: each allocates, fills and
	 * frees 32 MB of PMD folios, which the migration after it would pay.
	 */
	for (it = -o->warmup; it < o->iters && !ret && !o->stock; it++) {
		double c = 0, u = 0;

		ret = measure_ceiling(fd, cptr, &c, &u);
		if (!ret && it >= 0) {
			rw->copy_us[it] = c;
			rw->to_user_us[it] = u;
		}
	}
	for (it = -o->warmup; it < o->iters && !ret; it++)
		for (k = 0; k < MODE_NR && !ret; k++)
			ret = run_round(round_migrate, fd, o->stock, &bb[k],
					&rw->res[k], it);
	for (it = -o->warmup; it < o->iters && !ret; it++)
		for (k = 0; k < MODE_NR && !ret; k++)
			ret = run_round(round_fault, fd, o->stock, &bb[k],
					&rw->res[k], it);
	if (!ret)
		ret = verify(bb, MODE_NR, mode_name);
	if (!ret) {
		for (k = 0; k < MODE_NR; k++)
			rw->res[k].done = true;
		rw->have_ceiling = !o->stock;
	}
	if (cbuf != MAP_FAILED)
		munmap(cbuf, clen + DM_THP_SIZE);
	for (k = 0; k < MODE_NR; k++)
		buf_free(&bb[k]);
	return ret;
}

/* ---- the folio-order sweep ---- */

/*
 * Each order's rounds run with that size alone enabled in sysfs: its buffer
 * is filled (and made again) with folios of the order, and a CPU fault may
 * bring a folio of the order back whole (the 7.3 series allows that only
 * where a fault could have allocated the order).  4K runs with all off.
 */
static int order_policy(unsigned int order)
{
	dm_thp_only(order ? order : DM_PMD_ORDER,
		    order ? THP_ALWAYS : THP_NEVER);
	return 0;
}

/* The sweep: a buffer per order; in each round every order in turn. */
static int run_orders(int fd, const struct opts *o, struct result *rows)
{
	static const round_fn rounds[] = { round_migrate, round_fault };
	struct bench_buf bufs[MAX_ORDERS] = {};
	const char *what[MAX_ORDERS];
	char names[MAX_ORDERS][16];
	size_t size = o->order_mb << 20;
	int k, it, r, ret = 0;

	for (k = 0; k < o->norders && !ret; k++) {
		snprintf(names[k], sizeof(names[k]), "order %u", o->orders[k]);
		what[k] = names[k];
		ret = result_init(&rows[k], size, o->orders[k], o->iters);
		if (!ret)
			ret = order_policy(o->orders[k]);
		if (!ret)
			ret = buf_setup(&bufs[k], size, o->orders[k]);
		if (!ret && !bufs[k].whole)
			printf("# order %u: the buffer is not made of whole folios of the order\n",
			       o->orders[k]);
	}
	for (r = 0; r < 2; r++)
		for (it = -o->warmup; it < o->iters && !ret; it++)
			for (k = 0; k < o->norders && !ret; k++) {
				ret = order_policy(o->orders[k]);
				if (!ret)
					ret = run_round(rounds[r], fd, false,
							&bufs[k], &rows[k], it);
			}
	if (!ret)
		ret = verify(bufs, o->norders, what);
	for (k = 0; k < o->norders; k++) {
		rows[k].done = !ret;
		buf_free(&bufs[k]);
	}
	thp_restore_settings();
	return ret;
}

/* ---- the JSON ---- */

static void json_list(FILE *j, const char *key, const double *v, size_t n,
		      double scale)
{
	size_t i;

	fprintf(j, "\"%s\": [", key);
	for (i = 0; i < n; i++)
		fprintf(j, "%s%.6g", i ? ", " : "", v[i] * scale);
	fprintf(j, "]");
}

/* One buffer's measurements: an object's members, without the braces. */
static void json_result(FILE *j, const struct result *r, int iters, bool stock)
{
	int m, p;

	fprintf(j, "\"order\": %u, \"folio_kb\": %lu, \"size_mb\": %zu, \"rounds\": %d, \"remade\": %d",
		r->order, dm_order_kb(r->order), r->size >> 20, iters, r->remade);
	for (m = 0; m < M_NR; m++) {
		char key[32];

		snprintf(key, sizeof(key), "%s_s", metric_name[m]);
		fprintf(j, ", ");
		json_list(j, key, r->t[m], iters, 1);
	}
	fprintf(j, ", ");
	json_list(j, "lat_2m_us", r->lat, r->nlat, 1);
	fprintf(j, ", \"whole\": {");
	for (m = 0; m < M_NR; m++)
		fprintf(j, "%s\"%s\": %d", m ? ", " : "", metric_name[m],
			r->whole[m]);
	fprintf(j, "}");
	if (stock)
		return;
	fprintf(j, ", \"phases_ns\": {");
	for (m = 0; m < M_NR; m++) {
		fprintf(j, "%s\"%s\": {", m ? ", " : "", metric_name[m]);
		for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
			fprintf(j, "%s\"%s\": %.6g", p ? ", " : "", phase_name[p],
				r->phase_ns[m][p]);
		fprintf(j, "}");
	}
	fprintf(j, "}");
}

static int write_json(const char *path, const struct opts *o,
		      const struct row *rows, const struct result *orows)
{
	FILE *j = fopen(path, "w");
	int i, k;

	if (!j)
		return -errno;
	fprintf(j, "{\n  \"tool\": \"dmirror-thp-bench\", \"version\": 2,\n  \"meta\": {");
	fprintf(j, "\"driver\": \"%s\", \"clocksource\": \"%s\", \"clock_res_ns\": %ld, \"cpu\": \"%s\", \"kernel\": \"%s\"",
		o->stock ? "test_hmm" : "dmirror-thp", env.clocksource,
		env.res_ns, env.cpu, env.kernel);
	for (i = 0; i < o->nmeta; i++) {
		const char *eq = strchr(o->meta[i], '=');

		fprintf(j, ", \"%.*s\": \"%s\"", (int)(eq - o->meta[i]),
			o->meta[i], eq + 1);
	}
	fprintf(j, "},\n  \"iters\": %d, \"warmup\": %d, \"device\": %d, \"rounds_redone\": %d,\n  \"khugepaged\": {",
		o->iters, o->warmup, o->dev, rounds_redone);
	for (i = 0; i < SWEEP_NR; i++)
		fprintf(j, "%s\"%s\": {\"full_scans\": %ld, \"pages_collapsed\": %ld}",
			i ? ", " : "", sweep_name[i], khugepaged[i].full_scans,
			khugepaged[i].pages_collapsed);
	fprintf(j, "},\n  \"sizes\": [");
	for (i = 0; i < o->nsizes; i++) {
		const struct row *rw = &rows[i];

		fprintf(j, "%s\n    {\"size_mb\": %zu", i ? "," : "", rw->size_mb);
		if (rw->have_ceiling) {
			fprintf(j, ", \"ceiling_us_per_2mb\": {");
			json_list(j, "copy", rw->copy_us, o->iters, 1);
			fprintf(j, ", ");
			json_list(j, "to_user", rw->to_user_us, o->iters, 1);
			fprintf(j, "}");
		}
		fprintf(j, ", \"modes\": {");
		for (k = 0; k < MODE_NR; k++) {
			fprintf(j, "%s\n      \"%s\": ", k ? "," : "", mode_name[k]);
			if (!rw->res[k].done) {
				fprintf(j, "null");
				continue;
			}
			fprintf(j, "{");
			json_result(j, &rw->res[k], o->iters, o->stock);
			fprintf(j, "}");
		}
		fprintf(j, "}}");
	}
	fprintf(j, "\n  ],\n  \"orders\": [");
	for (k = 0; !o->stock && k < o->norders; k++) {
		if (!orows[k].done)
			continue;
		fprintf(j, "%s\n    {", k ? "," : "");
		json_result(j, &orows[k], o->iters, false);
		fprintf(j, "}");
	}
	fprintf(j, "\n  ]\n}\n");
	return fclose(j) ? -errno : 0;
}

int main(int argc, char **argv)
{
	static struct row rows[MAX_SIZES];
	static struct result orows[MAX_ORDERS];
	double start = dm_now();
	int fd, i, ret, status = 0;
	struct opts o;

	if (parse_opts(&o, argc, argv)) {
		usage(stderr, argv[0]);
		return 2;
	}
	printf("# plan: sizes");
	for (i = 0; i < o.nsizes; i++)
		printf(" %zu", o.sizes_mb[i]);
	printf(" MB, THP and 4K, %s; %d warm-up + %d timed rounds; device %d\n",
	       o.stock ? "stock test_hmm" : "dmirror-thp", o.warmup, o.iters,
	       o.dev);
	if (!o.stock && o.norders) {
		printf("# plan: folio orders");
		for (i = 0; i < o.norders; i++)
			printf(" %lu", dm_order_kb(o.orders[i]));
		printf(" kB, %zu MB each\n", o.order_mb);
	}
	if (o.dry_run)
		return 0;
	printf("TAP version 13\n1..1\n");
	if (check_clock()) {
		printf("not ok 1 dmirror-thp-bench # the clock is too coarse\n");
		return 3;
	}
	fd = dm_open(o.dev);
	if (fd < 0) {
		fprintf(stderr, "cannot open /dev/hmm_dmirror%d: %s\n", o.dev,
			strerror(-fd));
		printf("not ok 1 dmirror-thp-bench\n");
		return 1;
	}
	if (!thp_is_enabled()) {
		fprintf(stderr, "THP is disabled: no THP figures\n");
		printf("not ok 1 dmirror-thp-bench\n");
		return 1;
	}
	khugepaged_count(SWEEP_SIZES, -1);
	for (i = 0; i < o.nsizes; i++) {
		rows[i].size_mb = o.sizes_mb[i];
		printf("# %zu MB...\n", o.sizes_mb[i]);
		fflush(stdout);
		ret = run_size(fd, &o, &rows[i]);
		if (ret) {
			fprintf(stderr, "%zu MB: %s\n", o.sizes_mb[i], strerror(-ret));
			status = 1;
		}
	}
	khugepaged_count(SWEEP_SIZES, 1);
	if (!o.stock && o.norders) {
		printf("# folio orders...\n");
		fflush(stdout);
		khugepaged_count(SWEEP_ORDERS, -1);
		ret = run_orders(fd, &o, orows);
		khugepaged_count(SWEEP_ORDERS, 1);
		if (ret) {
			fprintf(stderr, "folio orders: %s\n", strerror(-ret));
			status = 1;
		}
	}
	close(fd);
	if (o.json) {
		ret = write_json(o.json, &o, rows, orows);
		if (ret) {
			fprintf(stderr, "cannot write %s: %s\n", o.json, strerror(-ret));
			status = 1;
		}
	}
	printf("# total %.1f s; %d round(s) run again after ENOENT\n",
	       dm_now() - start, rounds_redone);
	printf("%s 1 dmirror-thp-bench\n", status ? "not ok" : "ok");
	return status;
}
