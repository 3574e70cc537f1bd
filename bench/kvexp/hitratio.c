// SPDX-License-Identifier: MIT
/* xkv-kvexp hitratio: hit ratio per byte of each storage layout.
 *
 * For each layout and memory budget (a fraction of the working set's raw
 * bytes, keys x (key + value)), a store is loaded whose map the kernel
 * reports (fdinfo memlock, xkv_map_memory) at the budget: the entries are
 * rescaled from the measured figure until it is within --budget-tol (or the
 * closest of a few loads).  Then, per key distribution (Zipf alpha or
 * uniform) and seed, the store is flushed and a request sequence runs
 * through the real XDP program (BPF_PROG_TEST_RUN, repeat 1, pinned CPU) as a
 * cache-aside client does: `get`, and on a miss `set` of the same key.  The
 * first --warmup x keys requests warm the store; the next --requests x keys
 * are counted.
 *
 * The sequence is the one bench/kvexp/cachesim_models.py regenerates for the
 * simulators (same generator and seed; each run reports an FNV-1a checksum of
 * its ranks, `trace_fnv`, which the simulator checks):
 *   splitmix64(state = seed); u = (next >> 11) * 2^-53
 *   zipf(alpha): rank = first k with cdf[k] > u * cdf[W-1],
 *                cdf[k] = sum_{j<=k} (j + 1)^-alpha summed in order
 *   uniform:     rank = next % W
 * Rank r is key id r: "key:%012u" padded with '-' to its key size.
 *
 * Sizes: --key-size and --value-size for every key (--workload fixed), or
 * key id i's sizes under a production workload (--workload etc|twitter,
 * bench/loadgen/workload.h); the store's key and value capacities are then
 * the largest of the key space, and the working set is the sum of the keys'
 * key + value bytes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvexp.h"
#include "workload.h"

#define HR_MAX 16
#define HR_LOADS 6 /* store loads at most per budget when sizing */

struct hr_dist {
	bool uniform;
	double alpha;
	char name[24];
};

static struct {
	bool json, quick, verbose;
	__u32 nlayouts;
	char *layouts[HR_MAX];
	__u32 nbudgets;
	double budgets[HR_MAX];
	char budget_names[HR_MAX][16];
	__u32 ndists;
	struct hr_dist dists[HR_MAX];
	__u32 nseeds;
	__u32 seeds[HR_MAX];
	__u32 keys, key_size, value_size, cpu;
	double warmup_x, requests_x, tol;
	struct wl wl;
	__u16 *klen, *vlen;          /* key id -> its key and value bytes */
	__u32 key_cap, val_cap;      /* the largest of them: the store's capacities */
	unsigned long long ws_bytes; /* sum of key + value bytes over the key space */
} h;

#define HR_VAL_MIN 16   /* value_for's header and some pattern */
#define HR_VAL_MAX 1024 /* a set request fits the fast path's frame */

/* Every key's sizes, their largest and the working set's bytes. */
static void hr_sizes(void)
{
	h.wl.key_size = h.key_size;
	h.wl.value_size = h.value_size;
	h.klen = malloc(sizeof(*h.klen) * h.keys);
	h.vlen = malloc(sizeof(*h.vlen) * h.keys);
	if (!h.klen || !h.vlen)
		die("out of memory");
	h.key_cap = h.val_cap = 0;
	h.ws_bytes = 0;
	for (__u32 i = 0; i < h.keys; i++) {
		h.klen[i] = (__u16)wl_key_size(&h.wl, i);
		h.vlen[i] = (__u16)wl_value_size(&h.wl, i);
		h.key_cap = h.klen[i] > h.key_cap ? h.klen[i] : h.key_cap;
		h.val_cap = h.vlen[i] > h.val_cap ? h.vlen[i] : h.val_cap;
		h.ws_bytes += h.klen[i] + h.vlen[i];
	}
}

/* ---- the request sequence --------------------------------------------------- */

struct hr_gen {
	__u64 state;
	const double *cdf;
	__u32 keys;
	bool uniform;
};

static __u64 splitmix64(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static __u32 hr_next(struct hr_gen *g)
{
	__u64 x = splitmix64(&g->state);
	if (g->uniform)
		return (__u32)(x % g->keys);
	double t = (double)(x >> 11) * 0x1.0p-53 * g->cdf[g->keys - 1];
	__u32 lo = 0, hi = g->keys - 1; /* first k with cdf[k] > t */
	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;
		if (g->cdf[mid] > t)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static double *zipf_cdf(double alpha, __u32 keys)
{
	double *c = malloc(sizeof(double) * keys), s = 0;
	if (!c)
		die("out of memory");
	for (__u32 k = 0; k < keys; k++) {
		s += pow((double)(k + 1), -alpha);
		c[k] = s;
	}
	return c;
}

/* ---- sizing a store to a budget in bytes ------------------------------------ */

struct hr_store {
	struct kv kv;
	__u32 entries;      /* cfg.entries after xkv_config_finish */
	long long bytes;    /* the kernel's figure for the store map */
	__u32 loads;
};

static int hr_load(struct kv *kv, const char *layout, __u32 entries, long long *bytes)
{
	char err[XKV_ERRLEN];
	if (kv_load(kv, layout, entries, h.key_cap, h.val_cap, 0, err, sizeof(err))) {
		progress("%s at %u entries: %s", layout, entries, err);
		return -1;
	}
	*bytes = xkv_map_memory(kv->s.store_fd);
	if (*bytes <= 0)
		die("%s: reading memlock of the store map: %s", layout, strerror((int)-*bytes));
	return 0;
}

/* *per_entry: bytes per entry seen at the last load (a guess on entry). */
static void hr_size(struct hr_store *st, const char *layout, long long budget, double *per_entry)
{
	double want = budget / *per_entry;
	long long best_diff = -1;
	memset(st, 0, sizeof(*st));
	for (__u32 i = 0; i < HR_LOADS; i++) {
		__u32 e = want < 16 ? 16 : want > (1u << 26) ? (1u << 26) : (__u32)(want + 0.5);
		struct kv kv;
		long long bytes;
		if (i && e == st->entries)
			break;
		if (hr_load(&kv, layout, e, &bytes))
			die("%s: cannot load a store of %u entries for a budget of %lld bytes", layout, e,
			    budget);
		st->loads++;
		__u32 got = kv.s.cfg.entries;
		long long diff = llabs(bytes - budget);
		*per_entry = (double)bytes / got;
		if (best_diff < 0 || diff < best_diff) {
			if (best_diff >= 0)
				kv_close(&st->kv);
			st->kv = kv;
			st->entries = got;
			st->bytes = bytes;
			best_diff = diff;
		} else {
			kv_close(&kv);
		}
		if (diff <= h.tol * budget)
			break;
		want = (double)e * budget / bytes;
	}
}

/* ---- one run: a distribution and a seed on a flushed store ------------------ */

struct hr_run {
	__u32 seed;
	__u64 hits, misses, set_stored, set_failed, set_other, wrong, fnv;
	__u64 warm_hits;
	long live;
	__u64 evictions, overwrites;
	double secs;
};

static void hr_run(struct hr_store *st, const char *layout, const struct hr_dist *d,
		   const double *cdf, __u32 seed, struct hr_run *r)
{
	struct kv *kv = &st->kv;
	struct xkv_stats before, delta;
	struct reply rep;
	struct hr_gen g = {.state = seed, .cdf = cdf, .keys = h.keys, .uniform = d->uniform};
	__u64 warm = (__u64)(h.warmup_x * h.keys + 0.5), total = warm + (__u64)(h.requests_x * h.keys + 0.5);
	double t0 = now_s();

	memset(r, 0, sizeof(*r));
	r->seed = seed;
	r->fnv = 0xcbf29ce484222325ull;
	int e = kv->L->flush(&kv->s, XKV_FLUSH_ALL);
	if (e)
		die("%s: flush: %s", layout, strerror(-e));
	if (kv->L->count(&kv->s) != 0)
		die("%s: the store is not empty after a flush", layout);
	if (xkv_stats_read(&kv->s, XKV_STATS_FAST, &before, NULL))
		die("%s: reading counters failed", layout);
	for (__u64 i = 0; i < total; i++) {
		__u32 id = hr_next(&g), ver = 0, kl, vl;
		r->fnv = (r->fnv ^ id) * 0x100000001b3ull;
		kl = h.klen[id];
		vl = h.vlen[id];
		e = xdp_get(kv->prog_fd, id, kl, &rep);
		if (e)
			die("%s: BPF_PROG_TEST_RUN of get %u: %s", layout, id, strerror(-e));
		int v = get_verdict(&rep, id, kl, vl, &ver);
		if (v == GET_HIT && ver == 1) {
			if (i >= warm)
				r->hits++;
			else
				r->warm_hits++;
			continue;
		}
		if (v != GET_MISS) {
			if (r->wrong++ < 3)
				fprintf(stderr, "xkv-kvexp: %s: get of key %u: action %u, reply \"%.60s\"\n",
					layout, id, rep.action, rep.text);
			continue;
		}
		if (i >= warm)
			r->misses++;
		e = xdp_set(kv->prog_fd, id, 1, kl, vl, &rep);
		if (e)
			die("%s: BPF_PROG_TEST_RUN of set %u: %s", layout, id, strerror(-e));
		if (rep.action == XDP_TX && !strcmp(rep.text, XKV_R_STORED))
			r->set_stored++;
		else if (rep.action == XDP_TX && !strcmp(rep.text, XKV_R_OOM))
			r->set_failed++;
		else
			r->set_other++;
	}
	if (stats_delta(kv, &before, &delta))
		die("%s: reading counters failed", layout);
	r->live = kv->L->count(&kv->s);
	r->overwrites = delta.v[XKV_STAT_overwrites];
	if (xkv_map_lru(kv->L->map_type) && r->live >= 0 &&
	    delta.v[XKV_STAT_store_new] > (__u64)r->live)
		r->evictions = delta.v[XKV_STAT_store_new] - (__u64)r->live;
	r->secs = now_s() - t0;
}

/* ---- output ------------------------------------------------------------------ */

static bool first_point = true;

static void stats3(const double *x, __u32 n, double *mean, double *sd, double *lo, double *hi)
{
	double s = 0, q = 0;
	*lo = *hi = x[0];
	for (__u32 i = 0; i < n; i++) {
		s += x[i];
		*lo = x[i] < *lo ? x[i] : *lo;
		*hi = x[i] > *hi ? x[i] : *hi;
	}
	*mean = s / n;
	for (__u32 i = 0; i < n; i++)
		q += (x[i] - *mean) * (x[i] - *mean);
	*sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

static void hr_print(const char *layout, __u32 b, long long budget, const struct hr_store *st,
		     const struct hr_dist *d, const struct hr_run *runs)
{
	double hr[HR_MAX] = {0}, mean, sd, lo, hi, mib = st->bytes / 1048576.0;
	__u64 req = (__u64)(h.requests_x * h.keys + 0.5);
	for (__u32 s = 0; s < h.nseeds; s++)
		hr[s] = (double)runs[s].hits / req;
	stats3(hr, h.nseeds, &mean, &sd, &lo, &hi);
	if (!h.json) {
		if (first_point)
			printf("%-10s %7s %11s %11s %8s %-8s %8s %7s %7s %12s %8s\n", "layout", "budget",
			       "budget_B", "map_B", "entries", "dist", "hit", "sd", "spread", "hits/MiB",
			       "live");
		printf("%-10s %7s %11lld %11lld %8u %-8s %7.2f%% %6.2f%% %6.2f%% %12.0f %8ld\n", layout,
		       h.budget_names[b], budget, st->bytes, st->entries, d->name, mean * 100,
		       sd * 100, (hi - lo) * 100, mean * req / mib, runs[0].live);
		first_point = false;
		fflush(stdout);
		return;
	}
	printf("%s    {\"layout\": \"%s\", \"budget\": \"%s\", \"budget_frac\": %.6f, "
	       "\"budget_bytes\": %lld, \"map_bytes\": %lld, \"map_vs_budget\": %.4f, \"entries\": %u, "
	       "\"entry_size\": %u, \"hash_seed\": \"%016llx\", \"loads\": %u, \"dist\": \"%s\", ",
	       first_point ? "" : ",\n", layout, h.budget_names[b], h.budgets[b], budget, st->bytes,
	       (double)st->bytes / budget, st->entries, st->kv.s.cfg.entry_size,
	       (unsigned long long)st->kv.s.cfg.hash_seed, st->loads, d->name);
	if (d->uniform)
		printf("\"alpha\": null, ");
	else
		printf("\"alpha\": %.4f, ", d->alpha);
	printf("\"keys\": %u, \"warmup\": %llu, \"requests\": %llu, \"hit_ratio\": %.6f, "
	       "\"hit_ratio_sd\": %.6f, \"hit_ratio_min\": %.6f, \"hit_ratio_max\": %.6f, "
	       "\"hits_per_mib\": %.1f, \"hit_ratio_per_mib\": %.6f, \"seeds\": [",
	       h.keys, (unsigned long long)(h.warmup_x * h.keys + 0.5), (unsigned long long)req, mean,
	       sd, lo, hi, mean * req / mib, mean / mib);
	for (__u32 s = 0; s < h.nseeds; s++) {
		const struct hr_run *r = &runs[s];
		printf("%s\n      {\"seed\": %u, \"hits\": %llu, \"misses\": %llu, \"hit_ratio\": %.6f, "
		       "\"warmup_hits\": %llu, \"set_stored\": %llu, \"set_failed\": %llu, "
		       "\"set_other\": %llu, \"wrong\": %llu, \"live\": %ld, \"evictions\": %llu, "
		       "\"overwrites\": %llu, \"trace_fnv\": \"%016llx\", \"secs\": %.2f}",
		       s ? "," : "", r->seed, (unsigned long long)r->hits,
		       (unsigned long long)r->misses, hr[s], (unsigned long long)r->warm_hits,
		       (unsigned long long)r->set_stored, (unsigned long long)r->set_failed,
		       (unsigned long long)r->set_other, (unsigned long long)r->wrong, r->live,
		       (unsigned long long)r->evictions, (unsigned long long)r->overwrites,
		       (unsigned long long)r->fnv, r->secs);
	}
	printf("]}");
	first_point = false;
	fflush(stdout);
}

/* ---- options ------------------------------------------------------------------ */

static void hr_usage(FILE *f)
{
	fprintf(f,
		"usage: xkv-kvexp hitratio [--layouts L,..] [--keys W] [--budgets 1/64,..,1,2]\n"
		"                          [--dists 0.6,0.9,0.99,1.2,uniform] [--seeds 1,2,3]\n"
		"                          [--warmup X] [--requests X] [--key-size 16] [--value-size 128]\n"
		"                          [--workload fixed|etc|twitter] [--budget-tol 0.02] [--cpu 0]\n"
		"                          [--quick] [--json]\n"
		"Per layout and budget (a fraction of the working set: the keys' key + value bytes)\n"
		"a store whose map the kernel reports at that many bytes; per distribution (Zipf\n"
		"alpha, or uniform) and seed: --warmup x W warm-up requests, then --requests x W\n"
		"counted, each a get and on a miss a set (cache-aside), through the XDP program on\n"
		"--cpu.  --workload etc|twitter: each key's sizes from a production study\n"
		"(bench/loadgen/workload.h), instead of --key-size and --value-size.\n"
		"Defaults: layouts %s\n"
		"(the registry's, per-CPU ones left out: on one pinned CPU they are their shared\n"
		"twins); --keys 65536,\n"
		"--budgets 1/64,1/32,1/16,1/8,1/4,1/2,1,2, --warmup 2 --requests 4.\n"
		"--quick: --keys 4096, --budgets 1/16,1/4,1, --dists 0.99,uniform, --warmup 1\n"
		"--requests 2, --budget-tol 0.05 (each unless given).  Needs root (exit 77 otherwise).\n",
		kv_registry_layouts(true));
}

static char *hr_tok(char **save, char *s)
{
	return strtok_r(s, ",", save);
}

static void hr_layouts(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	h.nlayouts = 0;
	for (char *t = hr_tok(&save, copy); t; t = hr_tok(&save, NULL)) {
		__u32 f = 0;
		if (!kv_layout_base(t, &f) || h.nlayouts == HR_MAX)
			die("--layouts: unknown layout \"%s\" (or too many)", t);
		h.layouts[h.nlayouts++] = t;
	}
	if (!h.nlayouts)
		die("--layouts: empty list");
}

static void hr_budgets(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	h.nbudgets = 0;
	for (char *t = hr_tok(&save, copy); t; t = hr_tok(&save, NULL)) {
		char *end;
		double v = strtod(t, &end);
		if (*end == '/')
			v /= strtod(end + 1, &end);
		if (*end || !(v > 0) || v > 64 || h.nbudgets == HR_MAX || strlen(t) >= 16)
			die("--budgets: bad item \"%s\" (a fraction such as 1/64 or 0.5, at most 64)", t);
		h.budgets[h.nbudgets] = v;
		snprintf(h.budget_names[h.nbudgets++], 16, "%s", t);
	}
	if (!h.nbudgets)
		die("--budgets: empty list");
}

static void hr_dists(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	h.ndists = 0;
	for (char *t = hr_tok(&save, copy); t; t = hr_tok(&save, NULL)) {
		struct hr_dist *d = &h.dists[h.ndists];
		char *end;
		if (h.ndists == HR_MAX)
			die("--dists: too many");
		memset(d, 0, sizeof(*d));
		if (!strcmp(t, "uniform")) {
			d->uniform = true;
			snprintf(d->name, sizeof(d->name), "uniform");
		} else {
			d->alpha = strtod(t, &end);
			if (*end || !(d->alpha > 0) || d->alpha > 4)
				die("--dists: bad item \"%s\" (a Zipf alpha in (0, 4], or uniform)", t);
			snprintf(d->name, sizeof(d->name), "zipf%g", d->alpha);
		}
		h.ndists++;
	}
	if (!h.ndists)
		die("--dists: empty list");
}

static void hr_seeds(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	h.nseeds = 0;
	for (char *t = hr_tok(&save, copy); t; t = hr_tok(&save, NULL)) {
		char *end;
		unsigned long v = strtoul(t, &end, 10);
		if (*end || !*t || v > 0xffffffffu || h.nseeds == HR_MAX)
			die("--seeds: bad item \"%s\"", t);
		h.seeds[h.nseeds++] = (__u32)v;
	}
	if (!h.nseeds)
		die("--seeds: empty list");
}

static double hr_num(const char *flag, const char *arg, double min, double max)
{
	char *end;
	double v = strtod(arg, &end);
	if (!*arg || *end || !(v >= min) || v > max)
		die("%s: \"%s\" is not a number in %g..%g", flag, arg, min, max);
	return v;
}

static void hr_args(int argc, char **argv)
{
	bool given[8] = {0}; /* layouts keys budgets dists warmup requests tol sizes */
	h.key_size = 16;
	h.value_size = 128;
	h.tol = 0.02;
	hr_seeds("1,2,3");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json") || !strcmp(a, "--quick") || !strcmp(a, "--verbose")) {
			*(a[2] == 'j' ? &h.json : a[2] == 'q' ? &h.quick : &h.verbose) = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			hr_usage(stdout);
			exit(0);
		}
		if (!v || strncmp(a, "--", 2)) {
			fprintf(stderr, "xkv-kvexp: hitratio: %s: %s\n", a, v ? "unknown argument" : "needs a value");
			hr_usage(stderr);
			exit(2);
		}
		i++;
		if (!strcmp(a, "--layouts") || !strcmp(a, "--layout"))
			hr_layouts(v), given[0] = true;
		else if (!strcmp(a, "--keys"))
			h.keys = (__u32)hr_num(a, v, 16, 1 << 24), given[1] = true;
		else if (!strcmp(a, "--budgets"))
			hr_budgets(v), given[2] = true;
		else if (!strcmp(a, "--dists"))
			hr_dists(v), given[3] = true;
		else if (!strcmp(a, "--warmup"))
			h.warmup_x = hr_num(a, v, 0, 1000), given[4] = true;
		else if (!strcmp(a, "--requests"))
			h.requests_x = hr_num(a, v, 0.001, 1000), given[5] = true;
		else if (!strcmp(a, "--seeds"))
			hr_seeds(v);
		else if (!strcmp(a, "--key-size"))
			h.key_size = (__u32)hr_num(a, v, 16, XKV_KEY_MAX), given[7] = true;
		else if (!strcmp(a, "--value-size"))
			h.value_size = (__u32)hr_num(a, v, HR_VAL_MIN, HR_VAL_MAX), given[7] = true;
		else if (!strcmp(a, "--workload")) {
			if (wl_parse(&h.wl, v, 16, XKV_KEY_MAX, HR_VAL_MIN, HR_VAL_MAX))
				die("--workload: \"%s\" is not fixed, etc or twitter", v);
		}
		else if (!strcmp(a, "--budget-tol"))
			h.tol = hr_num(a, v, 0, 1), given[6] = true;
		else if (!strcmp(a, "--cpu"))
			h.cpu = (__u32)hr_num(a, v, 0, 4095);
		else {
			fprintf(stderr, "xkv-kvexp: hitratio: unknown option %s\n", a);
			hr_usage(stderr);
			exit(2);
		}
	}
	if (given[7] && h.wl.kind != WL_FIXED)
		die("--workload %s sizes keys and values itself: no --key-size or --value-size",
		    wl_name(h.wl.kind));
	if (!given[0])
		hr_layouts(h.quick ? "lru,array_fnv" : kv_registry_layouts(true));
	if (!given[1])
		h.keys = h.quick ? 4096 : 65536;
	if (!given[2])
		hr_budgets(h.quick ? "1/16,1/4,1" : "1/64,1/32,1/16,1/8,1/4,1/2,1,2");
	if (!given[3])
		hr_dists(h.quick ? "0.99,uniform" : "0.6,0.9,0.99,1.2,uniform");
	if (!given[4])
		h.warmup_x = h.quick ? 1 : 2;
	if (!given[5])
		h.requests_x = h.quick ? 2 : 4;
	if (!given[6] && h.quick)
		h.tol = 0.05; /* fewer store loads */
}

static unsigned long long hr_sum(const __u16 *x)
{
	unsigned long long s = 0;
	for (__u32 i = 0; i < h.keys; i++)
		s += x[i];
	return s;
}

int cmd_hitratio(int argc, char **argv)
{
	double t0 = now_s();
	__u64 wrong = 0, other = 0;

	hr_args(argc, argv);
	hr_sizes();
	if (geteuid() != 0) {
		fprintf(stderr, "xkv-kvexp: needs root (map creation, BPF_PROG_TEST_RUN); skipped\n");
		return 77;
	}
	xkv_log_set_verbose(h.verbose); /* libbpf: its warnings, or all with -v */
	xkv_log_libbpf();
	int e = pin_cpu((int)h.cpu);
	if (e)
		die("pinning to CPU %u: %s", h.cpu, strerror(-e));
	if (h.json) {
		json_head("hitratio");
		printf("  \"params\": {\"keys\": %u, \"workload\": \"%s\", \"workload_source\": ",
		       h.keys, wl_name(h.wl.kind));
		xkv_json_cstr(stdout, wl_source(h.wl.kind), XKV_JSON_MINIMAL);
		printf(", \"key_size\": %u, \"value_size\": %u, \"key_size_mean\": %.2f, "
		       "\"value_size_mean\": %.2f, "
		       "\"working_set_bytes\": %llu, \"warmup_x\": %g, \"requests_x\": %g, "
		       "\"budget_tol\": %g, \"cpu\": %u, ",
		       h.key_cap, h.val_cap, (double)hr_sum(h.klen) / h.keys,
		       (double)hr_sum(h.vlen) / h.keys, h.ws_bytes, h.warmup_x, h.requests_x, h.tol,
		       h.cpu);
		if (h.wl.kind != WL_FIXED) { /* the simulators place keys by their bytes */
			printf("\"key_sizes_hex\": \"");
			for (__u32 i = 0; i < h.keys; i++)
				printf("%02x", h.klen[i]);
			printf("\", ");
		}
		printf("\"seeds\": [");
		for (__u32 s = 0; s < h.nseeds; s++)
			printf("%s%u", s ? ", " : "", h.seeds[s]);
		printf("], \"generator\": \"splitmix64(seed); u = (next >> 11) * 2^-53; zipf: first "
		       "rank k with cdf[k] > u * cdf[W-1], cdf of (k+1)^-alpha summed in order; "
		       "uniform: next %% W; key id = rank\", \"pattern\": \"cache-aside: get, on a miss "
		       "set (value version 1); warm-up requests not counted\", \"budget\": "
		       "\"fraction x working_set_bytes (the keys' key + value bytes); key_size and "
		       "value_size: the store's capacities (the largest key and value); map_bytes: fdinfo memlock "
		       "of the store map (xkv_map_memory), entries rescaled until within budget_tol or "
		       "the closest of %d loads\", \"requests_via\": \"BPF_PROG_TEST_RUN repeat=1, "
		       "pinned to cpu\"},\n  \"results\": [\n", HR_LOADS);
	}
	for (__u32 l = 0; l < h.nlayouts; l++) {
		const char *layout = h.layouts[l];
		double per_entry = 1.6 * (h.key_cap + h.val_cap); /* a first guess */
		for (__u32 b = 0; b < h.nbudgets; b++) {
			long long budget = (long long)(h.budgets[b] * h.ws_bytes + 0.5);
			struct hr_store st;
			double tb = now_s();
			hr_size(&st, layout, budget, &per_entry);
			progress("hitratio %s budget %s: %lld B wanted, %lld B measured, %u entries (%u loads)",
				 layout, h.budget_names[b], budget, st.bytes, st.entries, st.loads);
			for (__u32 d = 0; d < h.ndists; d++) {
				struct hr_run runs[HR_MAX];
				double *cdf = h.dists[d].uniform ? NULL : zipf_cdf(h.dists[d].alpha, h.keys);
				for (__u32 s = 0; s < h.nseeds; s++) {
					hr_run(&st, layout, &h.dists[d], cdf, h.seeds[s], &runs[s]);
					wrong += runs[s].wrong;
					other += runs[s].set_other;
				}
				free(cdf);
				hr_print(layout, b, budget, &st, &h.dists[d], runs);
			}
			kv_close(&st.kv);
			progress("hitratio %s budget %s: %.1f s", layout, h.budget_names[b], now_s() - tb);
		}
	}
	if (h.json)
		printf("\n  ],\n  \"secs\": %.1f\n}\n", now_s() - t0);
	if (wrong)
		die("%llu wrong replies (another key's bytes or a version never stored)",
		    (unsigned long long)wrong);
	if (other)
		progress("warning: %llu sets answered neither STORED nor out of memory",
			 (unsigned long long)other);
	return 0;
}
