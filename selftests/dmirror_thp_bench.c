// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp-bench: THP vs 4K migration throughput and latency.
 *
 * For each buffer size (2 MB aligned) it measures, in the same run, with a
 * THP buffer (MADV_HUGEPAGE) and a 4K buffer (MADV_NOHUGEPAGE):
 *   to_dev   HMM_DMIRROR_MIGRATE_TO_DEV of the whole buffer (which, as in
 *            test_hmm, also has the device read the range back to a mirror)
 *   to_sys   HMM_DMIRROR_MIGRATE_TO_SYS of the whole buffer
 *   rt       the round trip, to_dev + to_sys of the same round
 *   fault    CPU faults that bring a device-resident buffer back: one byte
 *            read per 2 MB for THP, per 4 KB page for 4K (the same bytes
 *            come back); lat_2m is the time of one 2 MB region of it
 * The THP and 4K rounds alternate, so that a slow moment of the machine
 * costs both.  One warm-up round, then N timed rounds; the report is the
 * median with min and max, in microseconds per 2 MB and GiB/s.
 *
 * The ceiling is the kernel's own copy, measured in the same run with
 * HMM_DMIRROR_COPY_BENCH: a path's share of it is the time its copies take
 * at that rate (to_dev copies twice, into device memory and out to the
 * mirror; to_sys and fault once) over the time the path takes.  The device
 * reports where the time of each path went (HMM_DMIRROR_PHASES), printed
 * THP and 4K side by side.  The targets of the project are printed with
 * "met" or "missed" and the figure.
 *
 * Then the folio-order sweep (--orders): one buffer of --order-mb per order,
 * 4K, the mTHP orders asked for (default 16 kB, 64 kB, 1 MB) and the PMD,
 * each filled with that size alone enabled in sysfs, so that its folios
 * are of that order (checked with pagemap and kpageflags).  The orders'
 * rounds alternate, as THP and 4K do: the round trip (MIGRATE_TO_DEV and
 * MIGRATE_TO_SYS, us per 2 MB), and the CPU fault of each folio back (one
 * byte read per folio: the per-folio latency, and us per 2 MB), each
 * against 4K.  Every move must have been whole at the order
 * (HMM_DMIRROR_ORDER_STATS), or the sweep fails.
 *
 * The clock must be fine-grained: the bench refuses to report on a jiffies
 * clocksource or a clock_getres() above 1 us.  With --stock it measures the
 * 4K paths only, against the stock test_hmm module (no counters, phases or
 * ceiling), for the report's side-by-side comparison.
 *
 * Exit status: 0 when the bench ran (whether targets were met or not), 1
 * when it failed (a device error, a THP round that did not move THPs), 2
 * for bad options, 3 for a clock it cannot trust.
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
#define GIB		(1024.0 * 1024.0 * 1024.0)
#define COPY_ITERS	16
#define CLOCKSOURCE	"/sys/devices/system/clocksource/clocksource0/current_clocksource"

enum mode { MODE_THP, MODE_4K, MODE_NR };
static const char *const mode_name[MODE_NR] = { "thp", "4k" };

enum metric { M_TO_DEV, M_TO_SYS, M_RT, M_FAULT, M_LAT_2M, M_NR };
static const char *const metric_name[M_NR] = {
	"to_dev", "to_sys", "rt", "fault", "lat_2m",
};

/* The device paths each metric's phases come from. */
static const int metric_path[M_NR] = {
	HMM_DMIRROR_PATH_TO_DEV, HMM_DMIRROR_PATH_TO_SYS, -1,
	HMM_DMIRROR_PATH_FAULT, -1,
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
	const char *csv;
	const char *json;
	bool stock;
	bool dry_run;
	const char *meta[MAX_META];
	int nmeta;
	unsigned int orders[MAX_ORDERS];	/* the sweep: 0, mTHPs, PMD */
	int norders;
	size_t order_mb;
};

struct summary { double med, min, max; };

/*
 * One buffer, a (size, mode) or an order of the sweep: seconds per round of
 * each metric, the fault time of each region of every round, and how many
 * folios of its order moved whole, of how many.
 */
struct result {
	bool done;
	unsigned int order;
	size_t size;
	double t[M_NR][MAX_ITERS];
	double *lat;		/* every region of every round, us */
	size_t nlat;
	unsigned long long moved, expected;
	double phase_ns[HMM_DMIRROR_PATH_NR][HMM_DMIRROR_PHASE_NR];
};

/*
 * One size.  The copy ceiling is measured in every round, next to the
 * paths it bounds, so that a slow moment of the machine costs both.
 */
struct row {
	size_t size_mb;
	struct result res[MODE_NR];
	double copy_us[MAX_ITERS];	/* ceiling, us per 2 MB, per round */
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
"  -o, --csv PATH       the results as CSV\n"
"  -j, --json PATH      the results as JSON\n"
"      --orders LIST    mTHP orders of the order sweep, 2..8, comma\n"
"                       separated, or none (default 2,4,8; 4K and the PMD\n"
"                       are always swept)\n"
"      --order-mb N     buffer size of the order sweep, MB (default 8)\n"
"      --stock          the 4K paths only, against the stock test_hmm\n"
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
		{ "csv", required_argument, NULL, 'o' },
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

	while ((c = getopt_long(argc, argv, "s:i:w:d:o:j:nh", lopts, NULL)) != -1) {
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
		case 'o':
			o->csv = optarg;
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

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct summary summarize(const double *t, size_t n)
{
	struct summary r = { 0 };
	double *s;

	if (!n)
		return r;
	s = malloc(n * sizeof(*s));
	if (!s)
		return r;
	memcpy(s, t, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	r.min = s[0];
	r.max = s[n - 1];
	r.med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return r;
}

/* Seconds for @size bytes as microseconds per 2 MB. */
static double us_per_2m(double sec, size_t size)
{
	return sec * 1e6 / (size / DM_THP_SIZE);
}

static double gibps(double us_2m)
{
	return us_2m > 0 ? (double)DM_THP_SIZE / (us_2m / 1e6) / GIB : 0;
}

/* The median of a metric, in microseconds per 2 MB. */
static struct summary metric_us(const struct result *r, int m, int iters)
{
	struct summary s;

	if (m == M_LAT_2M)
		return summarize(r->lat, r->nlat);	/* already us per 2 MB */
	s = summarize(r->t[m], iters);
	s.med = us_per_2m(s.med, r->size);
	s.min = us_per_2m(s.min, r->size);
	s.max = us_per_2m(s.max, r->size);
	return s;
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

/* Add what happened between @a and @b on @path to @r. */
static void add_phases(double phase_ns[][HMM_DMIRROR_PHASE_NR],
		       const struct dmirror_thp_phases *a,
		       const struct dmirror_thp_phases *b, int path)
{
	int p;

	for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
		phase_ns[path][p] += b->ns[path][p] - a->ns[path][p];
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
 * A filled buffer of folios of @order (0: 4K pages).  Its CPU fault round
 * reads one byte per folio and times each @region apart.
 */
struct bench_buf {
	struct dm_buf b;
	unsigned int order;
	size_t region;
};

/*
 * MIGRATE_TO_DEV is best effort, as migrate_vma is: a page that reclaim,
 * compaction or another migration holds at that moment stays in system
 * memory, and the device's read-back then fails with ENOENT.  Such a round
 * did not move the whole buffer: everything goes back, and the round runs
 * again, at most MAX_REDO times in a run.  The report says how many.
 */
#define MAX_REDO	3
static int rounds_redone;

typedef int (*round_fn)(int fd, bool stock, struct bench_buf *bb,
			struct result *r, int it);

/* Run one round, again after an ENOENT (see above). */
static int run_round(round_fn round, int fd, bool stock, struct bench_buf *bb,
		     struct result *r, int it)
{
	int ret;

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

/* A 4K buffer (order 0) is MADV_NOHUGEPAGE, a PMD one MADV_HUGEPAGE. */
static int buf_setup(struct bench_buf *bb, size_t size, unsigned int order,
		     size_t region)
{
	int ret = dm_buf_alloc(&bb->b, size, PROT_READ | PROT_WRITE,
			       !order ? DM_THP_OFF :
			       order == DM_PMD_ORDER ? DM_THP_ON : DM_THP_NONE);

	bb->order = order;
	bb->region = region;
	if (ret)
		return ret;
	dm_fill(bb->b.ptr, size, 0xbe);
	return 0;
}

/* One migration round of one mode: to_dev then to_sys, timed apart. */
static int round_migrate(int fd, bool stock, struct bench_buf *bb,
			 struct result *r, int it)
{
	const size_t np = dm_npages(r->size);
	struct dmirror_thp_phases p0, p1, p2;
	struct dmirror_thp_order_stats os;
	double t0, t1, t2, t3;
	int ret;

	if (!stock && (dm_stats_reset(fd) || read_phases(fd, &p0)))
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
	if (it < 0)
		return 0;
	r->t[M_TO_DEV][it] = t1 - t0;
	r->t[M_TO_SYS][it] = t3 - t2;
	r->t[M_RT][it] = r->t[M_TO_DEV][it] + r->t[M_TO_SYS][it];
	if (stock)
		return 0;
	if (read_phases(fd, &p2) || dm_order_stats(fd, &os))
		return -EIO;
	add_phases(r->phase_ns, &p0, &p1, HMM_DMIRROR_PATH_TO_DEV);
	add_phases(r->phase_ns, &p1, &p2, HMM_DMIRROR_PATH_TO_SYS);
	if (bb->order) {
		r->moved += os.to_dev[bb->order] + os.to_sys[bb->order];
		r->expected += 2 * (np >> bb->order);
	}
	return 0;
}

/*
 * Fault [base, base + size) back, one byte read per @stride, timing each
 * @region apart: returns the total in seconds, and appends each region's
 * time in us to @lat unless it is NULL.
 */
static double fault_regions(char *base, size_t size, size_t region,
			    size_t stride, double *lat, size_t *nlat)
{
	double total = 0, t0, dt;
	size_t off;

	for (off = 0; off < size; off += region) {
		t0 = dm_now();
		(void)dm_touch_read(base + off, region, stride);
		dt = dm_now() - t0;
		total += dt;
		if (lat)
			lat[(*nlat)++] = dt * 1e6;
	}
	return total;
}

/*
 * One fault round: migrate (untimed), then read one byte per folio, timing
 * each region; the rest goes back with MIGRATE_TO_SYS, untimed.
 */
static int round_fault(int fd, bool stock, struct bench_buf *bb,
		       struct result *r, int it)
{
	const size_t np = dm_npages(r->size);
	const size_t stride = DM_PAGE_SIZE << bb->order;
	struct dmirror_thp_phases p0, p1;
	double total;
	int ret;

	ret = dm_to_dev(fd, bb->b.ptr, np, bb->b.mirror, NULL);
	if (ret)
		return ret;
	if (!stock && read_phases(fd, &p0))
		return -EIO;
	total = fault_regions(bb->b.ptr, r->size, bb->region, stride,
			      it >= 0 ? r->lat : NULL, &r->nlat);
	if (it >= 0) {
		r->t[M_FAULT][it] = total;
		if (!stock) {
			if (read_phases(fd, &p1))
				return -EIO;
			add_phases(r->phase_ns, &p0, &p1, HMM_DMIRROR_PATH_FAULT);
		}
	}
	/* Nothing is left on the device; this only checks that. */
	return dm_to_sys(fd, bb->b.ptr, np, NULL);
}

/*
 * All rounds of one size: in each, the copy ceiling, then THP and 4K one
 * after the other.
 */
static int run_size(int fd, const struct opts *o, struct row *rw)
{
	size_t size = rw->size_mb << 20, nreg = size / DM_THP_SIZE;
	size_t clen = DMIRROR_THP_COPY_BENCH_FOLIOS * DM_THP_SIZE;
	struct bench_buf bb[MODE_NR] = {};
	int first = o->stock ? MODE_4K : MODE_THP;
	char *cbuf = MAP_FAILED;
	int k, it, ret = 0;

	for (k = first; k < MODE_NR; k++) {
		rw->res[k].size = size;
		rw->res[k].order = k == MODE_THP ? DM_PMD_ORDER : 0;
		rw->res[k].lat = calloc(nreg * o->iters, sizeof(double));
		if (!rw->res[k].lat)
			return -ENOMEM;
		ret = buf_setup(&bb[k], size, rw->res[k].order, DM_THP_SIZE);
		if (ret)
			goto out;
	}
	if (!o->stock) {
		cbuf = mmap(NULL, clen, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (cbuf == MAP_FAILED) {
			ret = -ENOMEM;
			goto out;
		}
		memset(cbuf, 1, clen);
		if (!dm_is_sys_thp(bb[MODE_THP].b.ptr, nreg))
			printf("# warning: %zu MB: the THP buffer is not all THPs (AnonHugePages %ld kB)\n",
			       rw->size_mb, smaps_anon_huge_kb(bb[MODE_THP].b.ptr));
	}

	for (it = -o->warmup; it < o->iters && !ret; it++) {
		double c = 0, u = 0;

		if (!o->stock) {
			ret = measure_ceiling(fd, cbuf, &c, &u);
			if (ret)
				break;
			if (it >= 0) {
				rw->copy_us[it] = c;
				rw->to_user_us[it] = u;
			}
		}
		for (k = first; k < MODE_NR && !ret; k++)
			ret = run_round(round_migrate, fd, o->stock, &bb[k],
					&rw->res[k], it);
	}
	for (it = -o->warmup; it < o->iters && !ret; it++)
		for (k = first; k < MODE_NR && !ret; k++)
			ret = run_round(round_fault, fd, o->stock, &bb[k],
					&rw->res[k], it);
	for (k = first; k < MODE_NR && !ret; k++)
		if (dm_verify(bb[k].b.ptr, size, 0xbe) != -1) {
			fprintf(stderr, "%zu MB %s: data corrupted\n", rw->size_mb,
				mode_name[k]);
			ret = -EIO;
		}
	if (!ret) {
		for (k = first; k < MODE_NR; k++)
			rw->res[k].done = true;
		rw->have_ceiling = !o->stock;
	}
out:
	if (cbuf != MAP_FAILED)
		munmap(cbuf, clen);
	for (k = first; k < MODE_NR; k++)
		dm_buf_free(&bb[k].b);
	return ret;
}

/* ---- the folio-order sweep ---- */

/*
 * A buffer of folios of @order, each fault round timed folio by folio:
 * that size alone is enabled to fill it, and kpageflags must show it whole.
 */
static int order_buf_setup(struct bench_buf *bb, size_t size,
			   unsigned int order)
{
	size_t nr = 1UL << order, folio = DM_PAGE_SIZE << order;
	long whole;
	int ret;

	ret = mthp_policy_only(order ? order : DM_PMD_ORDER,
			       order ? "always" : "never");
	if (!ret)
		ret = buf_setup(bb, size, order, folio);
	if (ret || !order)
		return ret;
	whole = pm_count_folios(bb->b.ptr, dm_npages(size), nr);
	if (whole != (long)(dm_npages(size) / nr)) {
		fprintf(stderr, "order %u: %ld of %zu folios of the order\n",
			order, whole, dm_npages(size) / nr);
		return -EIO;
	}
	return 0;
}

/*
 * The sweep: a buffer per order, then in each round every order one after
 * the other, with every swept size enabled so that a fault may bring each
 * folio back at its order.  The policy is restored at the end.
 */
static int run_orders(int fd, const struct opts *o, struct result *rows)
{
	struct bench_buf bufs[MAX_ORDERS] = {};
	size_t size = o->order_mb << 20;
	struct mthp_policy saved;
	int k, it, ret;

	ret = mthp_policy_save(&saved);
	if (ret)
		return ret;
	for (k = 0; k < o->norders && !ret; k++) {
		rows[k].order = o->orders[k];
		rows[k].size = size;
		rows[k].lat = calloc((size >> (o->orders[k] + 12)) * o->iters,
				     sizeof(double));
		ret = rows[k].lat ? order_buf_setup(&bufs[k], size, o->orders[k]) :
				    -ENOMEM;
	}
	for (k = 1; k < o->norders && !ret; k++)
		ret = mthp_set_enabled(dm_order_kb(o->orders[k]), "always");
	for (it = -o->warmup; it < o->iters && !ret; it++)
		for (k = 0; k < o->norders && !ret; k++)
			ret = run_round(round_migrate, fd, false, &bufs[k],
					&rows[k], it);
	for (it = -o->warmup; it < o->iters && !ret; it++)
		for (k = 0; k < o->norders && !ret; k++)
			ret = run_round(round_fault, fd, false, &bufs[k],
					&rows[k], it);
	for (k = 0; k < o->norders && !ret; k++) {
		if (dm_verify(bufs[k].b.ptr, size, 0xbe) != -1) {
			fprintf(stderr, "order %u: data corrupted\n", rows[k].order);
			ret = -EIO;
		}
	}
	for (k = 0; k < o->norders; k++) {
		rows[k].done = !ret;
		dm_buf_free(&bufs[k].b);
	}
	if (mthp_policy_restore(&saved) && !ret)
		ret = -EIO;
	return ret;
}

/* ---- the report ---- */

/*
 * The ceiling time of metric @m's copies in round @it, in us per 2 MB (0:
 * none): to_dev copies into device memory and out to the mirror, to_sys
 * and the fault path copy once.
 */
static double ceiling_us(const struct row *rw, int m, int it)
{
	double copy = rw->copy_us[it], to_user = rw->to_user_us[it];

	if (!rw->have_ceiling)
		return 0;
	switch (m) {
	case M_TO_DEV:
		return copy + to_user;
	case M_TO_SYS:
	case M_FAULT:
		return copy;
	case M_RT:
		return 2 * copy + to_user;
	}
	return 0;
}

/* The median over the rounds of the THP path's share of its ceiling. */
static double ceiling_share(const struct row *rw, int m, int iters)
{
	const struct result *r = &rw->res[MODE_THP];
	double v[MAX_ITERS];
	int it;

	if (!ceiling_us(rw, m, 0))
		return 0;
	for (it = 0; it < iters; it++)
		v[it] = ceiling_us(rw, m, it) / us_per_2m(r->t[m][it], r->size);
	return summarize(v, iters).med;
}

struct target {
	const char *what;
	int metric;	/* THP/4K ratio of this metric, or -1: share of ceiling */
	double want;
	bool small;	/* the 2 and 8 MB check */
};

static const struct target targets[] = {
	{ "round trip THP/4K >= 2.5x", M_RT, 2.5, false },
	{ "to_dev THP/4K >= 2x", M_TO_DEV, 2.0, false },
	{ "to_sys THP/4K >= 2x", M_TO_SYS, 2.0, false },
	{ "THP round trip >= 80% of the copy ceiling", -1, 0.8, false },
	{ "fault THP/4K >= 5x", M_FAULT, 5.0, false },
	{ "fault latency per 2 MB 4K/THP >= 5x", M_LAT_2M, 5.0, false },
	{ "to_dev THP not slower than 4K", M_TO_DEV, 1.0, true },
	{ "to_sys THP not slower than 4K", M_TO_SYS, 1.0, true },
	{ "round trip THP not slower than 4K", M_RT, 1.0, true },
	{ "fault THP not slower than 4K", M_FAULT, 1.0, true },
};

/*
 * THP/4K speed-up: the median of the rounds' ratios (THP and 4K ran next to
 * each other in each round); for lat_2m, the ratio of the median regions.
 */
static double ratio(const struct row *rw, int m, int iters)
{
	const struct result *thp = &rw->res[MODE_THP], *k4 = &rw->res[MODE_4K];
	double v[MAX_ITERS];
	int it;

	if (m == M_LAT_2M)
		return metric_us(k4, m, iters).med / metric_us(thp, m, iters).med;
	for (it = 0; it < iters; it++)
		v[it] = k4->t[m][it] / thp->t[m][it];
	return summarize(v, iters).med;
}

static void json_summary(FILE *j, const char *key, struct summary s)
{
	fprintf(j, "\"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g}",
		key, s.med, s.min, s.max);
}

/*
 * One JSON array of objects, written as the report goes: jarr_item() opens
 * the next object (and returns NULL when there is no JSON output).
 */
struct jarr {
	FILE *f;
	const char *sep;
};

static struct jarr jarr_open(FILE *f, const char *key)
{
	if (f)
		fprintf(f, ",\n  \"%s\": [", key);
	return (struct jarr){ .f = f, .sep = "" };
}

static FILE *jarr_item(struct jarr *a)
{
	if (!a->f)
		return NULL;
	fprintf(a->f, "%s\n    {", a->sep);
	a->sep = ",";
	return a->f;
}

static void jarr_close(struct jarr *a)
{
	if (a->f)
		fprintf(a->f, "\n  ]");
}

/* Where the time of each order goes, per path and phase, us per 2 MB. */
static void report_order_phases(const struct opts *o, struct result *rows,
				FILE *json)
{
	static const int ms[] = { M_TO_DEV, M_TO_SYS, M_FAULT };
	struct jarr a = jarr_open(json, "orders_phases_us_per_2mb");
	double n2m = o->order_mb / 2.0 * o->iters;
	int k, i, p;
	FILE *j;

	printf("# phases by order, us per 2 MB\n# %-7s %-7s", "folio", "path");
	for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
		printf(" %9s", phase_name[p]);
	printf("\n");
	for (k = 0; k < o->norders; k++) {
		for (i = 0; i < 3; i++) {
			int path = metric_path[ms[i]];

			printf("# %-7lu %-7s", rows[k].order ?
			       dm_order_kb(rows[k].order) : 4, metric_name[ms[i]]);
			for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
				printf(" %9.0f", rows[k].phase_ns[path][p] / 1e3 / n2m);
			printf("\n");
			if (!(j = jarr_item(&a)))
				continue;
			fprintf(j, "\"order\": %u, \"folio_kb\": %lu, \"path\": \"%s\"",
				rows[k].order, dm_order_kb(rows[k].order),
				metric_name[ms[i]]);
			for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
				fprintf(j, ", \"%s\": %.6g", phase_name[p],
					rows[k].phase_ns[path][p] / 1e3 / n2m);
			fprintf(j, "}");
		}
	}
	jarr_close(&a);
}

/* The order table: each order against 4K, and the moves were whole. */
static int report_orders(const struct opts *o, struct result *rows,
			 FILE *json)
{
	static const int ms[] = { M_TO_DEV, M_TO_SYS, M_RT, M_FAULT };
	struct jarr a = jarr_open(json, "orders");
	double base[M_NR] = {}, last_rt = 0, last_fault = 0;
	bool grows_rt = true, grows_fault = true;
	int k, i, bad = 0;
	FILE *j;

	if (!o->norders || !rows[0].done)
		return 0;
	printf("\n# folio orders, %zu MB each: median [min..max] us per 2 MB; x4K is 4K's time over the order's\n",
	       o->order_mb);
	printf("# %-7s %22s %22s %22s %22s %7s %7s %18s\n", "folio", "to_dev",
	       "to_sys", "rt", "fault", "rt x4K", "flt x4K", "fault us/folio");
	for (k = 0; k < o->norders; k++) {
		struct result *or = &rows[k];
		struct summary sm[M_NR], lat = summarize(or->lat, or->nlat);
		char name[16];

		for (i = 0; i < 4; i++) {
			sm[ms[i]] = metric_us(or, ms[i], o->iters);
			if (!k)
				base[ms[i]] = sm[ms[i]].med;
		}
		snprintf(name, sizeof(name), "%lu kB", dm_order_kb(or->order));
		printf("# %-7s", or->order ? name : "4K");
		for (i = 0; i < 4; i++)
			printf(" %6.0f [%6.0f..%6.0f]", sm[ms[i]].med,
			       sm[ms[i]].min, sm[ms[i]].max);
		printf(" %6.2fx %6.2fx %7.0f [%.0f..%.0f]\n",
		       base[M_RT] / sm[M_RT].med, base[M_FAULT] / sm[M_FAULT].med,
		       lat.med, lat.min, lat.max);
		/* Each order must gain more than the order below it. */
		grows_rt &= base[M_RT] / sm[M_RT].med >= last_rt;
		grows_fault &= base[M_FAULT] / sm[M_FAULT].med >= last_fault;
		last_rt = base[M_RT] / sm[M_RT].med;
		last_fault = base[M_FAULT] / sm[M_FAULT].med;
		if (or->order && or->moved != or->expected) {
			printf("# order %u: %llu of %llu moves were whole folios\n",
			       or->order, or->moved, or->expected);
			bad = 1;
		}
		if (!(j = jarr_item(&a)))
			continue;
		fprintf(j, "\"order\": %u, \"folio_kb\": %lu, \"size_mb\": %zu, ",
			or->order, dm_order_kb(or->order), o->order_mb);
		for (i = 0; i < 4; i++) {
			json_summary(j, metric_name[ms[i]], sm[ms[i]]);
			fprintf(j, ", ");
		}
		json_summary(j, "lat_folio_us", lat);
		fprintf(j, ", \"rt_x4k\": %.4g, \"fault_x4k\": %.4g, \"moves_whole\": %llu, \"moves\": %llu}",
			base[M_RT] / sm[M_RT].med,
			base[M_FAULT] / sm[M_FAULT].med, or->moved, or->expected);
	}
	jarr_close(&a);
	printf("# target: the round-trip gain over 4K grows with the order: %s\n",
	       grows_rt ? "met" : "missed");
	printf("# target: the CPU-fault gain over 4K grows with the order: %s\n",
	       grows_fault ? "met" : "missed");
	if (json)
		fprintf(json, ",\n  \"orders_gain_grows\": {\"rt\": %s, \"fault\": %s}",
			grows_rt ? "true" : "false", grows_fault ? "true" : "false");
	report_order_phases(o, rows, json);
	return bad;
}

/* The run's metadata and the in-kernel copy ceiling. */
static void report_head(const struct opts *o, struct row *rows, FILE *json)
{
	struct jarr a;
	FILE *j;
	int i;

	printf("\n# dmirror-thp-bench: %s, device %d, %d round(s) after %d warm-up; median [min..max], us per 2 MB\n",
	       o->stock ? "stock test_hmm, 4K only" : "dmirror-thp", o->dev,
	       o->iters, o->warmup);
	printf("# rounds run again because a page stayed in system memory: %d (at most %d)\n",
	       rounds_redone, MAX_REDO);
	for (i = 0; i < o->nsizes; i++) {
		struct summary c = summarize(rows[i].copy_us, o->iters);
		struct summary u = summarize(rows[i].to_user_us, o->iters);

		if (!rows[i].have_ceiling)
			continue;
		printf("# %zu MB ceiling: copy_highpage %.0f [%.0f..%.0f] us per 2 MB (%.3f GiB/s), copy to user %.0f [%.0f..%.0f] (%.3f GiB/s)\n",
		       rows[i].size_mb, c.med, c.min, c.max, gibps(c.med),
		       u.med, u.min, u.max, gibps(u.med));
	}
	if (!json)
		return;
	fprintf(json, "{\n  \"tool\": \"dmirror-thp-bench\",\n  \"meta\": {");
	fprintf(json, "\"driver\": \"%s\", \"clocksource\": \"%s\", \"clock_res_ns\": %ld, \"cpu\": \"%s\", \"kernel\": \"%s\"",
		o->stock ? "test_hmm" : "dmirror-thp", env.clocksource,
		env.res_ns, env.cpu, env.kernel);
	for (i = 0; i < o->nmeta; i++) {
		const char *eq = strchr(o->meta[i], '=');

		fprintf(json, ", \"%.*s\": \"%s\"", (int)(eq - o->meta[i]),
			o->meta[i], eq + 1);
	}
	fprintf(json, "},\n  \"iters\": %d, \"warmup\": %d, \"device\": %d, \"rounds_redone\": %d",
		o->iters, o->warmup, o->dev, rounds_redone);
	a = jarr_open(json, "ceiling_us_per_2mb");
	for (i = 0; i < o->nsizes; i++) {
		if (!rows[i].have_ceiling || !(j = jarr_item(&a)))
			continue;
		fprintf(j, "\"size_mb\": %zu, ", rows[i].size_mb);
		json_summary(j, "copy", summarize(rows[i].copy_us, o->iters));
		fprintf(j, ", ");
		json_summary(j, "to_user", summarize(rows[i].to_user_us, o->iters));
		fprintf(j, "}");
	}
	jarr_close(&a);
}

/* Every metric of every size and mode; returns how many were measured. */
static int report_results(const struct opts *o, struct row *rows, FILE *csv,
			  FILE *json)
{
	int first = o->stock ? MODE_4K : MODE_THP;
	struct jarr a = jarr_open(json, "results");
	int i, m, k, nres = 0;
	FILE *j;

	if (csv)
		fprintf(csv, "size_mb,mode,metric,median,min,max,unit,iters\n");
	printf("# %-5s %-9s %26s %26s %8s %8s\n", "MB", "metric",
	       o->stock ? "" : "THP", "4K", o->stock ? "" : "THP/4K",
	       o->stock ? "" : "ceiling");
	for (i = 0; i < o->nsizes; i++) {
		struct row *rw = &rows[i];

		for (m = 0; m < M_NR; m++) {
			printf("  %-5zu %-9s", rw->size_mb, metric_name[m]);
			for (k = MODE_THP; k < MODE_NR; k++) {
				const struct result *r = &rw->res[k];
				struct summary s;

				if (k < first || !r->done) {
					printf(" %26s", k < first ? "" : "not measured");
					continue;
				}
				s = metric_us(r, m, o->iters);
				printf(" %8.0f [%7.0f..%7.0f]", s.med, s.min, s.max);
				nres++;
				if (csv)
					fprintf(csv, "%zu,%s,%s,%.6g,%.6g,%.6g,us_per_2MB,%d\n",
						rw->size_mb, mode_name[k], metric_name[m],
						s.med, s.min, s.max, o->iters);
				j = jarr_item(&a);
				if (j) {
					fprintf(j, "\"size_mb\": %zu, \"mode\": \"%s\", \"metric\": \"%s\", \"gib_s\": %.6g, ",
						rw->size_mb, mode_name[k],
						metric_name[m], gibps(s.med));
					json_summary(j, "us_per_2mb", s);
					/* The bench's figures, for the report to print as they are. */
					if (k == MODE_THP && rw->res[MODE_4K].done)
						fprintf(j, ", \"thp_4k\": %.4g",
							ratio(rw, m, o->iters));
					if (k == MODE_THP && ceiling_share(rw, m, o->iters) > 0)
						fprintf(j, ", \"ceiling_share\": %.4g",
							ceiling_share(rw, m, o->iters));
					fprintf(j, "}");
				}
			}
			if (!o->stock && rw->res[MODE_THP].done && rw->res[MODE_4K].done)
				printf(" %7.2fx", ratio(rw, m, o->iters));
			if (!o->stock && rw->res[MODE_THP].done &&
			    ceiling_share(rw, m, o->iters) > 0)
				printf(" %7.0f%%", 100 * ceiling_share(rw, m, o->iters));
			printf("\n");
		}
	}
	jarr_close(&a);
	return nres;
}

/* Where the time went, THP and 4K side by side. */
static void report_phases(const struct opts *o, struct row *rows, FILE *json)
{
	struct jarr a = jarr_open(json, "phases_us_per_2mb");
	int i, m, k, p;
	FILE *j;

	printf("\n# phases, us per 2 MB: THP | 4K\n");
	printf("# %-5s %-7s", "MB", "path");
	for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
		printf(" %17s", phase_name[p]);
	printf("\n");
	for (i = 0; i < o->nsizes; i++) {
		struct row *rw = &rows[i];
		double n2m = rw->size_mb / 2.0 * o->iters;

		if (!rw->res[MODE_THP].done || !rw->res[MODE_4K].done)
			continue;
		for (m = 0; m < M_NR; m++) {
			int path = metric_path[m];

			if (path < 0)
				continue;
			printf("  %-5zu %-7s", rw->size_mb, metric_name[m]);
			for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
				printf(" %8.0f |%7.0f",
				       rw->res[MODE_THP].phase_ns[path][p] / 1e3 / n2m,
				       rw->res[MODE_4K].phase_ns[path][p] / 1e3 / n2m);
			printf("\n");
			for (k = MODE_THP; k < MODE_NR && (j = jarr_item(&a)); k++) {
				fprintf(j, "\"size_mb\": %zu, \"mode\": \"%s\", \"path\": \"%s\"",
					rw->size_mb, mode_name[k], metric_name[m]);
				for (p = 0; p < HMM_DMIRROR_PHASE_NR; p++)
					fprintf(j, ", \"%s\": %.6g", phase_name[p],
						rw->res[k].phase_ns[path][p] / 1e3 / n2m);
				fprintf(j, "}");
			}
		}
	}
	jarr_close(&a);
}

/* Each target at 2, 8, 64 and 512 MB: met or missed, with the figure. */
static void report_targets(const struct opts *o, struct row *rows, FILE *json)
{
	struct jarr a = jarr_open(json, "targets");
	int i, missed = 0;
	FILE *j;

	printf("\n# targets\n");
	for (i = 0; i < o->nsizes; i++) {
		struct row *rw = &rows[i];
		bool small = rw->size_mb <= 8;
		size_t t;

		if (rw->size_mb != 2 && rw->size_mb != 8 &&
		    rw->size_mb != 64 && rw->size_mb != 512)
			continue;
		for (t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
			const struct target *tg = &targets[t];
			bool share = tg->metric < 0;
			double v;
			bool met;

			if (tg->small != small)
				continue;
			if (!rw->res[MODE_THP].done || !rw->res[MODE_4K].done) {
				printf("  %-5zu %-44s not measured\n", rw->size_mb, tg->what);
				missed++;
				continue;
			}
			v = share ? ceiling_share(rw, M_RT, o->iters) :
				    ratio(rw, tg->metric, o->iters);
			met = v >= tg->want;
			missed += !met;
			printf("  %-5zu %-44s %-6s %.*f%s\n", rw->size_mb, tg->what,
			       met ? "met" : "missed", share ? 0 : 2,
			       share ? 100 * v : v, share ? "%" : "x");
			j = jarr_item(&a);
			if (j)
				fprintf(j, "\"size_mb\": %zu, \"target\": \"%s\", \"value\": %.6g, \"met\": %s}",
					rw->size_mb, tg->what, v,
					met ? "true" : "false");
		}
	}
	jarr_close(&a);
	printf("# %d target(s) missed\n", missed);
}

static int report(const struct opts *o, struct row *rows,
		  struct result *orows, FILE *csv, FILE *json)
{
	int nres;

	report_head(o, rows, json);
	nres = report_results(o, rows, csv, json);
	if (!o->stock) {
		report_phases(o, rows, json);
		report_targets(o, rows, json);
		if (report_orders(o, orows, json))
			nres = -1;
	}
	if (json)
		fprintf(json, "\n}\n");
	return nres;
}

/* A THP round that did not move THPs measured 4K pages: not a figure. */
static int check_thp_moved(const struct opts *o, const struct row *rows)
{
	int i, bad = 0;

	for (i = 0; i < o->nsizes && !o->stock; i++) {
		const struct result *r = &rows[i].res[MODE_THP];

		if (r->done && r->moved != r->expected) {
			fprintf(stderr, "%zu MB: %llu of %llu THP moves were whole THPs\n",
				rows[i].size_mb, r->moved, r->expected);
			bad = 1;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	static struct row rows[MAX_SIZES];
	static struct result orows[MAX_ORDERS];
	FILE *csv = NULL, *json = NULL;
	double start = dm_now();
	struct opts o;
	int fd, i, ret, status = 0;

	if (parse_opts(&o, argc, argv)) {
		usage(stderr, argv[0]);
		return 2;
	}
	printf("# plan: sizes");
	for (i = 0; i < o.nsizes; i++)
		printf(" %zu", o.sizes_mb[i]);
	printf(" MB; %s; %d warm-up + %d timed rounds; device %d\n",
	       o.stock ? "4K only (stock test_hmm)" : "THP and 4K", o.warmup,
	       o.iters, o.dev);
	if (!o.stock && o.norders) {
		printf("# plan: folio orders");
		for (i = 0; i < o.norders; i++)
			printf(" %lu", o.orders[i] ? dm_order_kb(o.orders[i]) : 4);
		printf(" kB, %zu MB each\n", o.order_mb);
	}
	if (o.iters < 5)
		printf("# note: fewer than 5 rounds: a quick look, not a report\n");
	if (o.dry_run)
		return 0;
	if (check_clock())
		return 3;

	fd = dm_open(o.dev);
	if (fd < 0) {
		fprintf(stderr, "cannot open /dev/hmm_dmirror%d: %s\n", o.dev,
			strerror(-fd));
		return 1;
	}
	if (!o.stock && !thp_available()) {
		fprintf(stderr, "THP is disabled: no THP figures\n");
		return 1;
	}
	if (o.csv && !(csv = fopen(o.csv, "w"))) {
		fprintf(stderr, "cannot write %s: %s\n", o.csv, strerror(errno));
		return 1;
	}
	if (o.json && !(json = fopen(o.json, "w"))) {
		fprintf(stderr, "cannot write %s: %s\n", o.json, strerror(errno));
		return 1;
	}
	for (i = 0; i < o.nsizes; i++) {
		rows[i].size_mb = o.sizes_mb[i];
		fprintf(stderr, "# %zu MB...\n", o.sizes_mb[i]);
		ret = run_size(fd, &o, &rows[i]);
		if (ret) {
			fprintf(stderr, "%zu MB: %s\n", o.sizes_mb[i], strerror(-ret));
			status = 1;
		}
	}
	if (!o.stock && o.norders) {
		fprintf(stderr, "# folio orders...\n");
		ret = run_orders(fd, &o, orows);
		if (ret) {
			fprintf(stderr, "folio orders: %s\n", strerror(-ret));
			status = 1;
		}
	}
	if (report(&o, rows, orows, csv, json) < 0)
		status = 1;
	status |= check_thp_moved(&o, rows);
	if (csv && fclose(csv))
		status = 1;
	if (json && fclose(json))
		status = 1;
	close(fd);
	printf("# total %.1f s\n", dm_now() - start);
	return status;
}
