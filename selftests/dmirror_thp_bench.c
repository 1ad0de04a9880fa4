// SPDX-License-Identifier: GPL-2.0
/*
 * dmirror-thp-bench: THP vs 4K migration throughput and latency.
 *
 * For each buffer size (2 MB aligned) and each mode (THP: MADV_HUGEPAGE,
 * 4K: MADV_NOHUGEPAGE), in the same run:
 *   to_dev   HMM_DMIRROR_MIGRATE_TO_DEV of the whole buffer
 *   to_sys   HMM_DMIRROR_MIGRATE_TO_SYS of the whole buffer
 *   fault    CPU fault-back of a device-resident buffer, one byte read per
 *            2 MB (THP: brings back everything; 4K: one page per 2 MB)
 *   faultall one byte read per 4 KB page (brings back everything, both modes)
 * plus the physical reference, memcpy of the same size.
 * One warm-up round, then N timed rounds (CLOCK_MONOTONIC); the report is
 * the median and min/max, as GiB/s and as microseconds per 2 MB, the
 * THP/4K ratios, and the THP round trip (2 x size / (to_dev + to_sys)) as
 * a fraction of memcpy bandwidth.  Each round also checks, with the
 * device's counters, what really moved as a THP (thp_frac).
 *
 * Note: MIGRATE_TO_DEV, as in test_hmm, also has the device read the range
 * back into a separate mirror buffer, so to_dev includes one extra copy.
 *
 * This is a report, not a test: the exit status is 0 unless the device
 * could not be used at all or an ioctl failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

#define MAX_SIZES	16
#define MAX_ITERS	1000
#define GIB		(1024.0 * 1024.0 * 1024.0)

struct opts {
	size_t sizes_mb[MAX_SIZES];
	int nsizes;
	int iters;
	int warmup;
	int dev;
	double budget;		/* seconds; 0: none */
	const char *csv;
	const char *json;
	bool memcpy_only;	/* no device: the reference alone */
	bool dry_run;
};

enum metric { M_TO_DEV, M_TO_SYS, M_FAULT, M_FAULTALL, M_NR };
static const char *const metric_name[M_NR] = {
	"to_dev", "to_sys", "fault_2m", "fault_all",
};

struct result {
	bool done;
	double t[M_NR][MAX_ITERS];	/* seconds per round */
	double thp_frac;		/* THPs moved / THPs expected, to_dev */
	double sys_thp_frac;		/* of the source, from smaps */
};

struct summary { double med, min, max; };

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
"usage: %s [options]\n"
"  -s, --sizes LIST     buffer sizes in MB, comma separated, multiples of 2\n"
"                       (default 2,8,64; 512 only when asked: -s 2,8,64,512\n"
"                       or --large)\n"
"      --large          add 512 MB to the sizes\n"
"  -i, --iters N        timed rounds per case (default 5; 5 or more for a\n"
"                       report, fewer for a quick look)\n"
"  -w, --warmup N       untimed warm-up rounds (default 1)\n"
"  -d, --device N       /dev/hmm_dmirrorN (default 0)\n"
"  -t, --budget SEC     stop starting new cases after SEC seconds (default\n"
"                       none); skipped cases are reported as skipped\n"
"  -o, --csv PATH       write the results as CSV to PATH\n"
"  -j, --json PATH      write the results as JSON to PATH\n"
"      --memcpy-only    only the memcpy reference (needs no device)\n"
"  -n, --dry-run        print the plan and exit\n"
"  -h, --help\n", argv0);
}

static int parse_sizes(struct opts *o, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return -1;
	o->nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || !v || v % 2 || v > 65536 || o->nsizes >= MAX_SIZES) {
			fprintf(stderr, "bad size '%s' (MB, even, 2..65536, at most %d)\n",
				tok, MAX_SIZES);
			ret = -1;
			break;
		}
		o->sizes_mb[o->nsizes++] = v;
	}
	if (!ret && !o->nsizes)
		ret = -1;
	free(copy);
	return ret;
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
		{ "large", no_argument, NULL, 'L' },
		{ "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "device", required_argument, NULL, 'd' },
		{ "budget", required_argument, NULL, 't' },
		{ "csv", required_argument, NULL, 'o' },
		{ "json", required_argument, NULL, 'j' },
		{ "memcpy-only", no_argument, NULL, 'M' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	bool large = false;
	int c, i;

	memset(o, 0, sizeof(*o));
	o->sizes_mb[0] = 2;
	o->sizes_mb[1] = 8;
	o->sizes_mb[2] = 64;
	o->nsizes = 3;
	o->iters = 5;
	o->warmup = 1;

	while ((c = getopt_long(argc, argv, "s:i:w:d:t:o:j:nh", lopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 's':
			if (parse_sizes(o, optarg))
				return -1;
			break;
		case 'L':
			large = true;
			break;
		case 'i':
			if (parse_int(optarg, 1, MAX_ITERS, &o->iters)) {
				fprintf(stderr, "bad --iters '%s' (1..%d)\n", optarg, MAX_ITERS);
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
				fprintf(stderr, "bad --device '%s' (0..%d)\n", optarg,
					DM_NDEVICES - 1);
				return -1;
			}
			break;
		case 't':
			o->budget = strtod(optarg, &end);
			if (*end || end == optarg || o->budget < 0) {
				fprintf(stderr, "bad --budget '%s'\n", optarg);
				return -1;
			}
			break;
		case 'o':
			o->csv = optarg;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'M':
			o->memcpy_only = true;
			break;
		case 'n':
			o->dry_run = true;
			break;
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
	if (large) {
		for (i = 0; i < o->nsizes; i++)
			if (o->sizes_mb[i] == 512)
				break;
		if (i == o->nsizes) {
			if (o->nsizes >= MAX_SIZES)
				return -1;
			o->sizes_mb[o->nsizes++] = 512;
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct summary summarize(const double *t, int n)
{
	double s[MAX_ITERS];
	struct summary r;

	memcpy(s, t, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	r.min = s[0];
	r.max = s[n - 1];
	r.med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	return r;
}

static double gibps(size_t bytes, double sec)
{
	return sec > 0 ? bytes / sec / GIB : 0;
}

/* ---- the measurements ---- */

static void touch_all(char *p, size_t size)
{
	size_t i;

	for (i = 0; i < size; i += DM_PAGE_SIZE)
		p[i] = (char)(i >> 12) | 1;
}

/* One round: to_dev, to_sys; then to_dev and the two fault variants. */
static int run_case(int fd, size_t size, bool thp, int warmup, int iters,
		    struct result *r)
{
	const size_t np = dm_npages(size), nthp = size / DM_THP_SIZE;
	struct dmirror_thp_stats st;
	unsigned long thp_moved = 0;
	struct dm_buf b;
	int it, ret;

	ret = dm_buf_alloc(&b, size, PROT_READ | PROT_WRITE,
			   thp ? DM_THP_ON : DM_THP_OFF);
	if (ret)
		return ret;
	touch_all(b.ptr, size);
	{
		long kb = smaps_anon_huge_kb(b.ptr);

		r->sys_thp_frac = kb > 0 ? kb * 1024.0 / size : 0;
	}

	for (it = -warmup; it < iters; it++) {
		double t0, t1, t2;

		dm_stats_reset(fd);
		t0 = dm_now();
		ret = dm_to_dev(fd, b.ptr, np, b.mirror, NULL);
		t1 = dm_now();
		if (ret)
			goto out;
		ret = dm_to_sys(fd, b.ptr, np, NULL);
		t2 = dm_now();
		if (ret)
			goto out;
		if (it < 0)
			continue;
		r->t[M_TO_DEV][it] = t1 - t0;
		r->t[M_TO_SYS][it] = t2 - t1;
		if (!dm_stats(fd, &st))
			thp_moved += st.thp_to_dev;
	}
	r->thp_frac = nthp ? (double)thp_moved / (nthp * iters) : 0;

	for (it = -warmup; it < iters; it++) {
		double t0, t1;
		int m;

		for (m = M_FAULT; m <= M_FAULTALL; m++) {
			ret = dm_to_dev(fd, b.ptr, np, b.mirror, NULL);
			if (ret)
				goto out;
			t0 = dm_now();
			(void)dm_touch_read(b.ptr, size,
					    m == M_FAULT ? DM_THP_SIZE : DM_PAGE_SIZE);
			t1 = dm_now();
			/* what one byte per 2 MB left behind (4K mode) */
			ret = dm_to_sys(fd, b.ptr, np, NULL);
			if (ret)
				goto out;
			if (it >= 0)
				r->t[m][it] = t1 - t0;
		}
	}
	r->done = true;
out:
	dm_buf_free(&b);
	return ret;
}

static double memcpy_round(char *dst, const char *src, size_t size)
{
	double t0 = dm_now();

	memcpy(dst, src, size);
	__asm__ __volatile__("" : : "r"(dst) : "memory");
	return dm_now() - t0;
}

static int run_memcpy(size_t size, int warmup, int iters, double *t)
{
	char *src, *dst;
	int it;

	src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED)
		return -ENOMEM;
	memset(src, 0x5a, size);
	memset(dst, 0, size);
	for (it = -warmup; it < iters; it++) {
		double s = memcpy_round(dst, src, size);

		if (it >= 0)
			t[it] = s;
	}
	munmap(src, size);
	munmap(dst, size);
	return 0;
}

/* ---- the report ---- */

struct row {
	size_t size_mb;
	struct result res[2];	/* [0] THP, [1] 4K */
	double memcpy_t[MAX_ITERS];
	bool memcpy_done;
};

static const char *const mode_name[2] = { "thp", "4k" };

static void emit_csv_line(FILE *f, size_t mb, const char *mode, const char *metric,
			  double med, double min, double max, const char *unit,
			  int iters)
{
	fprintf(f, "%zu,%s,%s,%.6g,%.6g,%.6g,%s,%d\n", mb, mode, metric, med, min,
		max, unit, iters);
}

/*
 * Throughput from times: median of the rate is the rate of the median;
 * min rate comes from the max time and vice versa.
 */
static struct summary rate_summary(const double *t, int n, size_t bytes)
{
	struct summary s = summarize(t, n), r;

	r.med = gibps(bytes, s.med);
	r.min = gibps(bytes, s.max);
	r.max = gibps(bytes, s.min);
	return r;
}

static struct summary us_per_2m(const double *t, int n, size_t size)
{
	struct summary s = summarize(t, n);
	double k = 1e6 / (size / DM_THP_SIZE);

	s.med *= k;
	s.min *= k;
	s.max *= k;
	return s;
}

static void report(const struct opts *o, struct row *rows, int nrows, FILE *csv,
		   FILE *json)
{
	int i, m, k;

	printf("\n# dmirror-thp-bench: device %d, %d timed round(s) after %d warm-up; "
	       "median [min..max]\n", o->dev, o->iters, o->warmup);
	printf("# %-6s %-4s %-8s %24s %26s %9s\n", "MB", "mode", "metric",
	       "GiB/s", "us per 2 MB", "thp_frac");
	if (csv)
		fprintf(csv, "size_mb,mode,metric,median,min,max,unit,iters\n");
	if (json)
		fprintf(json, "{\n  \"device\": %d, \"iters\": %d, \"warmup\": %d,\n"
			"  \"results\": [\n", o->dev, o->iters, o->warmup);

	for (i = 0; i < nrows; i++) {
		struct row *rw = &rows[i];
		size_t size = rw->size_mb << 20;
		struct summary cp = { 0 };

		if (rw->memcpy_done) {
			cp = rate_summary(rw->memcpy_t, o->iters, size);
			printf("  %-6zu %-4s %-8s %8.3f [%6.3f..%6.3f]\n", rw->size_mb,
			       "ref", "memcpy", cp.med, cp.min, cp.max);
			if (csv)
				emit_csv_line(csv, rw->size_mb, "ref", "memcpy", cp.med,
					      cp.min, cp.max, "GiB/s", o->iters);
			if (json)
				fprintf(json, "    {\"size_mb\": %zu, \"mode\": \"ref\", "
					"\"metric\": \"memcpy\", \"unit\": \"GiB/s\", "
					"\"median\": %.6g, \"min\": %.6g, \"max\": %.6g},\n",
					rw->size_mb, cp.med, cp.min, cp.max);
		}
		for (k = 0; k < 2; k++) {
			struct result *r = &rw->res[k];

			if (!r->done) {
				if (!o->memcpy_only) {
					printf("  %-6zu %-4s %-8s skipped\n", rw->size_mb,
					       mode_name[k], "all");
					if (csv)
						fprintf(csv, "%zu,%s,skipped,,,,,0\n",
							rw->size_mb, mode_name[k]);
				}
				continue;
			}
			for (m = 0; m < M_NR; m++) {
				struct summary g = rate_summary(r->t[m], o->iters, size);
				struct summary u = us_per_2m(r->t[m], o->iters, size);

				/* fault_2m moves 4 KB per 2 MB in 4K mode: no GiB/s */
				if (m == M_FAULT && k == 1)
					g.med = g.min = g.max = 0;
				printf("  %-6zu %-4s %-9s", rw->size_mb, mode_name[k],
				       metric_name[m]);
				if (g.med)
					printf(" %7.3f [%6.3f..%6.3f]", g.med, g.min, g.max);
				else
					printf(" %23s", "-");
				printf(" %9.1f [%7.1f..%7.1f]", u.med, u.min, u.max);
				if (m == M_TO_DEV)
					printf(" %8.2f", r->thp_frac);
				printf("\n");
				if (csv) {
					if (g.med)
						emit_csv_line(csv, rw->size_mb, mode_name[k],
							      metric_name[m], g.med, g.min,
							      g.max, "GiB/s", o->iters);
					emit_csv_line(csv, rw->size_mb, mode_name[k],
						      metric_name[m], u.med, u.min, u.max,
						      "us_per_2MB", o->iters);
				}
				if (json)
					fprintf(json, "    {\"size_mb\": %zu, \"mode\": \"%s\", "
						"\"metric\": \"%s\", \"gib_s\": %.6g, "
						"\"us_per_2mb\": {\"median\": %.6g, \"min\": %.6g, "
						"\"max\": %.6g}},\n", rw->size_mb, mode_name[k],
						metric_name[m], g.med, u.med, u.min, u.max);
			}
			if (csv) {
				emit_csv_line(csv, rw->size_mb, mode_name[k], "thp_frac",
					      r->thp_frac, r->thp_frac, r->thp_frac,
					      "fraction", o->iters);
				emit_csv_line(csv, rw->size_mb, mode_name[k], "source_thp_frac",
					      r->sys_thp_frac, r->sys_thp_frac,
					      r->sys_thp_frac, "fraction", 1);
			}
		}
		/* THP/4K ratios of the medians, and THP vs memcpy. */
		if (rw->res[0].done && rw->res[1].done) {
			for (m = 0; m < M_NR; m++) {
				/*
				 * One touch per 2 MB brings a whole THP back but
				 * only one 4K page: against 4K, the like for like
				 * is touching every page (fault_all).
				 */
				int m4k = m == M_FAULT ? M_FAULTALL : m;
				double a = summarize(rw->res[0].t[m], o->iters).med;
				double b = summarize(rw->res[1].t[m4k], o->iters).med;
				double ratio = a > 0 ? b / a : 0;	/* speedup of THP */

				printf("  %-6zu %-4s %-9s THP/4K speedup %.2fx%s\n",
				       rw->size_mb, "x", metric_name[m], ratio,
				       m != m4k ? " (4K: fault_all)" : "");
				if (csv)
					emit_csv_line(csv, rw->size_mb, "thp/4k", metric_name[m],
						      ratio, ratio, ratio, "ratio", o->iters);
				if (json)
					fprintf(json, "    {\"size_mb\": %zu, \"mode\": \"thp/4k\", "
						"\"metric\": \"%s\", \"ratio\": %.6g},\n",
						rw->size_mb, metric_name[m], ratio);
			}
		}
		if (rw->res[0].done && rw->memcpy_done && cp.med > 0) {
			double rt[MAX_ITERS], frac;
			struct summary s;
			int it;

			for (it = 0; it < o->iters; it++)
				rt[it] = rw->res[0].t[M_TO_DEV][it] + rw->res[0].t[M_TO_SYS][it];
			/* a round trip copies every byte twice */
			s = rate_summary(rt, o->iters, 2 * size);
			frac = s.med / cp.med;
			printf("  %-6zu %-4s %-9s %7.3f GiB/s = %.1f%% of memcpy\n",
			       rw->size_mb, "thp", "roundtrip", s.med, 100 * frac);
			if (csv) {
				emit_csv_line(csv, rw->size_mb, "thp", "roundtrip", s.med,
					      s.min, s.max, "GiB/s", o->iters);
				emit_csv_line(csv, rw->size_mb, "thp", "roundtrip_vs_memcpy",
					      frac, frac, frac, "fraction", o->iters);
			}
			if (json)
				fprintf(json, "    {\"size_mb\": %zu, \"mode\": \"thp\", "
					"\"metric\": \"roundtrip_vs_memcpy\", \"gib_s\": %.6g, "
					"\"fraction\": %.6g},\n", rw->size_mb, s.med, frac);
		}
	}
	if (json)
		fprintf(json, "    {}\n  ]\n}\n");
}

int main(int argc, char **argv)
{
	static struct row rows[MAX_SIZES];
	FILE *csv = NULL, *json = NULL;
	double start = dm_now();
	struct opts o;
	int fd = -1, i, k, status = 0;

	if (parse_opts(&o, argc, argv)) {
		usage(stderr, argv[0]);
		return 2;
	}
	printf("# plan: sizes");
	for (i = 0; i < o.nsizes; i++)
		printf(" %zu", o.sizes_mb[i]);
	printf(" MB; modes thp 4k; %d warm-up + %d timed rounds; device %d%s",
	       o.warmup, o.iters, o.dev, o.memcpy_only ? "; memcpy only" : "");
	if (o.budget > 0)
		printf("; budget %.0f s", o.budget);
	printf("; csv %s; json %s\n", o.csv ?: "-", o.json ?: "-");
	if (o.iters < 5)
		printf("# note: fewer than 5 rounds: a quick look, not a report\n");
	if (o.dry_run)
		return 0;

	if (!o.memcpy_only) {
		fd = dm_open(o.dev);
		if (fd < 0) {
			fprintf(stderr, "cannot open /dev/hmm_dmirror%d: %s\n", o.dev,
				strerror(-fd));
			return 1;
		}
		if (!thp_available())
			printf("# warning: THP disabled: the thp rows measure 4K pages\n");
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
		size_t size = o.sizes_mb[i] << 20;

		rows[i].size_mb = o.sizes_mb[i];
		if (o.budget > 0 && dm_now() - start > o.budget) {
			printf("# budget of %.0f s used up: skipping %zu MB\n", o.budget,
			       o.sizes_mb[i]);
			continue;
		}
		if (!run_memcpy(size, o.warmup, o.iters, rows[i].memcpy_t))
			rows[i].memcpy_done = true;
		if (o.memcpy_only)
			continue;
		for (k = 0; k < 2; k++) {
			int ret;

			if (o.budget > 0 && dm_now() - start > o.budget)
				break;
			fprintf(stderr, "# %zu MB %s...\n", o.sizes_mb[i], mode_name[k]);
			ret = run_case(fd, size, k == 0, o.warmup, o.iters, &rows[i].res[k]);
			if (ret) {
				fprintf(stderr, "%zu MB %s: %s\n", o.sizes_mb[i],
					mode_name[k], strerror(-ret));
				status = 1;
			}
		}
	}
	report(&o, rows, o.nsizes, csv, json);
	if (csv && fclose(csv))
		status = 1;
	if (json && fclose(json))
		status = 1;
	if (fd >= 0)
		close(fd);
	printf("# total %.1f s\n", dm_now() - start);
	return status;
}
