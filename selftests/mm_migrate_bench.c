// SPDX-License-Identifier: GPL-2.0
/*
 * mm-migrate-bench: what migrating ordinary anonymous memory between NUMA
 * nodes costs, folio order by folio order.  No device memory: this is the
 * path of mbind(), move_pages(), NUMA balancing and compaction, which
 * remove_migration_pte() ends for every one of them.
 *
 * For each order (0 is base pages; 2 up to below the PMD's are mTHPs of
 * that size alone, the others "never"), a buffer is faulted in, checked
 * to be folios of that order (pagemap and /proc/kpageflags), then moved
 * with mbind(MPOL_MF_MOVE) to node 1 and back to node 0, --iters times,
 * each move timed.  After each move every page must be on the node it was
 * sent to (move_pages() without nodes says where each is) and the folios
 * must still be of their order: a round where either fails is reported,
 * and the run fails.
 *
 *   mm-migrate-bench [-s MB] [-i ITERS] [-o ORDERS] [-j JSON]
 *
 * Output: one TAP result, the table as comments, and with -j the figures
 * as JSON, for vm/report/migrate_report.py to compare kernels.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dmirror_thp_helpers.h"

#define MPOL_BIND	2
#define MPOL_MF_MOVE	(1 << 1)

struct order_result {
	unsigned int order;
	double *to1, *to0;	/* us per move, one per round */
	unsigned int rounds, whole;
	long splits, failed;	/* the order's split stat, pgmigrate_fail */
	const char *skip;
};

/* Bind [p, p + size) to @node, moving what is elsewhere. */
static long move_to(char *p, size_t size, int node)
{
	unsigned long mask = 1UL << node;

	return syscall(SYS_mbind, p, size, MPOL_BIND, &mask,
		       sizeof(mask) * 8, MPOL_MF_MOVE);
}

/* Whether every page is on @node, as move_pages() without nodes says. */
static bool all_on(void **pages, int *status, unsigned long n, int node)
{
	unsigned long i;

	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
		return false;
	for (i = 0; i < n; i++)
		if (status[i] != node)
			return false;
	return true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned int n)
{
	double *s = malloc(n * sizeof(*s));
	double m;

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static bool folios_whole(char *p, unsigned long npages, unsigned int order)
{
	if (!order)
		return true;
	return pm_count_folios(p, npages, 1UL << order) ==
	       (long)(npages >> order);
}

static int run_order(struct order_result *r, size_t size, unsigned int iters)
{
	unsigned long npages = size / DM_PAGE_SIZE, i;
	void **pages;
	unsigned int k;
	int *status;
	char *p;
	int ret = 0;

	dm_thp_only(r->order, THP_ALWAYS);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	pages = calloc(npages, sizeof(*pages));
	status = calloc(npages, sizeof(*status));
	r->to1 = calloc(iters, sizeof(double));
	r->to0 = calloc(iters, sizeof(double));
	if (!pages || !status || !r->to1 || !r->to0) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < npages; i++) {
		pages[i] = p + i * DM_PAGE_SIZE;
		p[i * DM_PAGE_SIZE] = (char)i;
	}
	if (!folios_whole(p, npages, r->order)) {
		r->skip = "no folios of this order to move";
		goto out;
	}
	if (move_to(p, size, 0) || !all_on(pages, status, npages, 0)) {
		ret = -EIO;
		goto out;
	}

	r->splits = r->order ? mthp_stat(r->order, "split") : 0;
	r->failed = vmstat_get("pgmigrate_fail");
	for (k = 0; k < iters; k++) {
		double t0;
		bool ok;

		t0 = dm_now();
		ok = !move_to(p, size, 1);
		r->to1[k] = (dm_now() - t0) * 1e6;
		ok &= all_on(pages, status, npages, 1) &&
		      folios_whole(p, npages, r->order);
		t0 = dm_now();
		ok &= !move_to(p, size, 0);
		r->to0[k] = (dm_now() - t0) * 1e6;
		ok &= all_on(pages, status, npages, 0) &&
		      folios_whole(p, npages, r->order);
		r->rounds++;
		r->whole += ok;
	}
	r->splits = (r->order ? mthp_stat(r->order, "split") : 0) - r->splits;
	r->failed = vmstat_get("pgmigrate_fail") - r->failed;
	for (i = 0; i < npages; i++)
		if (p[i * DM_PAGE_SIZE] != (char)i)
			ret = -EIO;
out:
	free(pages);
	free(status);
	munmap(p, size);
	return ret;
}

int main(int argc, char **argv)
{
	const char *orders_arg = "0,2,4,6,8", *json = NULL;
	struct order_result res[DM_MAX_ORDERS];
	unsigned int iters = 7, nres = 0, i;
	unsigned long size_mb = 16;
	bool failed = false;
	char *list, *tok;
	int c;

	while ((c = getopt(argc, argv, "s:i:o:j:")) != -1) {
		switch (c) {
		case 's':
			size_mb = strtoul(optarg, NULL, 0);
			break;
		case 'i':
			iters = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			orders_arg = optarg;
			break;
		case 'j':
			json = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-s MB] [-i ITERS] [-o ORDERS] [-j JSON]\n",
				argv[0]);
			return 2;
		}
	}
	if (!size_mb || !iters || iters > 1000) {
		fprintf(stderr, "bad -s or -i\n");
		return 2;
	}

	printf("TAP version 13\n1..1\n");
	if (access("/sys/devices/system/node/node1", F_OK)) {
		printf("ok 1 mm-migrate-bench # SKIP one NUMA node\n");
		return 0;
	}

	list = strdup(orders_arg);
	for (tok = strtok(list, ","); tok && nres < DM_MAX_ORDERS;
	     tok = strtok(NULL, ",")) {
		struct order_result *r = &res[nres++];
		int ret;

		memset(r, 0, sizeof(*r));
		r->order = strtoul(tok, NULL, 0);
		if (r->order && (r->order >= DM_PMD_ORDER ||
				 !(thp_supported_orders() & (1UL << r->order)))) {
			r->skip = "no anonymous mTHP of this order";
			continue;
		}
		ret = run_order(r, size_mb << 20, iters);
		if (ret) {
			printf("# order %u: %s\n", r->order, strerror(-ret));
			failed = true;
		} else if (!r->skip && r->whole != r->rounds) {
			printf("# order %u: %u of %u rounds kept the folios whole on the right node\n",
			       r->order, r->whole, r->rounds);
			failed = true;
		}
	}
	free(list);
	thp_restore_settings();

	printf("# mbind(MPOL_MF_MOVE) of %lu MB, node 0 -> 1 -> 0, %u rounds, median us\n",
	       size_mb, iters);
	printf("# %-8s %12s %12s %10s %8s %8s\n", "folio", "to node 1",
	       "to node 0", "whole", "splits", "failed");
	for (i = 0; i < nres; i++) {
		struct order_result *r = &res[i];

		if (r->skip) {
			printf("# %6lukB %s\n", dm_order_kb(r->order), r->skip);
			continue;
		}
		if (!r->rounds)
			continue;
		printf("# %6lukB %12.0f %12.0f %6u/%-3u %8ld %8ld\n",
		       dm_order_kb(r->order), median(r->to1, r->rounds),
		       median(r->to0, r->rounds), r->whole, r->rounds,
		       r->splits, r->failed);
	}

	if (json) {
		FILE *f = fopen(json, "w");
		unsigned int k;

		if (!f) {
			perror(json);
			return 1;
		}
		fprintf(f, "{\"size_mb\": %lu, \"iters\": %u, \"orders\": [",
			size_mb, iters);
		for (i = 0; i < nres; i++) {
			struct order_result *r = &res[i];

			fprintf(f, "%s{\"order\": %u, \"kb\": %lu, \"skip\": %s%s%s, \"whole\": %u, \"rounds\": %u, \"splits\": %ld, \"failed\": %ld, \"to1_us\": [",
				i ? ", " : "", r->order, dm_order_kb(r->order),
				r->skip ? "\"" : "", r->skip ? r->skip : "null",
				r->skip ? "\"" : "", r->whole, r->rounds,
				r->splits, r->failed);
			for (k = 0; k < r->rounds; k++)
				fprintf(f, "%s%.1f", k ? ", " : "", r->to1[k]);
			fprintf(f, "], \"to0_us\": [");
			for (k = 0; k < r->rounds; k++)
				fprintf(f, "%s%.1f", k ? ", " : "", r->to0[k]);
			fprintf(f, "]}");
		}
		fprintf(f, "]}\n");
		fclose(f);
	}
	printf("%s 1 mm-migrate-bench\n", failed ? "not ok" : "ok");
	return failed;
}
