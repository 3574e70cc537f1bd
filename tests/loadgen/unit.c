/* SPDX-License-Identifier: MIT */
/* Unit test of xkv-loadgen's server-free parts: the latency histogram,
 * self-checking values (ours and `xdpkv load --generate`'s), the Zipf
 * key generator and the production workloads' key and value sizes
 * (workload.c) against the published distributions.  Exit 0 on success, 1 with a message on the first failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg.h"
#include "loadgen.h"

static int failures;

#define CHECK(cond, ...)                                              \
	do {                                                          \
		if (!(cond)) {                                        \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                 \
			fputc('\n', stderr);                          \
			failures++;                                   \
		}                                                     \
	} while (0)

static void test_hist(void)
{
	static struct lg_hist h;
	const uint64_t vals[] = { 1000, 12345, 999999, 3000000, 10000000000ULL };

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		memset(&h, 0, sizeof(h));
		lg_hist_add(&h, vals[i]);
		double got = (double)lg_hist_pct(&h, 0.5), want = (double)vals[i];
		CHECK(fabs(got - want) / want <= 0.01, "hist: %g recorded, p50 %g", want, got);
	}
	/* 1..100000 ns uniformly: p50 ~ 50000, p99 ~ 99000 within 1 % */
	memset(&h, 0, sizeof(h));
	for (uint64_t v = 1; v <= 100000; v++)
		lg_hist_add(&h, v);
	CHECK(fabs((double)lg_hist_pct(&h, 0.5) - 50000) <= 500, "hist p50 %llu",
	      (unsigned long long)lg_hist_pct(&h, 0.5));
	CHECK(fabs((double)lg_hist_pct(&h, 0.99) - 99000) <= 990, "hist p99 %llu",
	      (unsigned long long)lg_hist_pct(&h, 0.99));
	CHECK(lg_hist_pct(&h, 1.0) == 100000, "hist p100 %llu != max",
	      (unsigned long long)lg_hist_pct(&h, 1.0));
	CHECK(h.sum / h.count == 50000, "hist mean %llu", (unsigned long long)(h.sum / h.count));
}

static void test_values(void)
{
	const unsigned ks[] = { 16, 40, 250 }, vs[] = { 32, 33, 128, 1000, 1024 };
	char v[LG_VAL_MAX], k[LG_KEY_MAX + 1];

	for (size_t a = 0; a < 3; a++) {
		for (size_t b = 0; b < 5; b++) {
			unsigned K = ks[a], V = vs[b];
			uint64_t key = 123456, ver = 987654321;

			CHECK(lg_value_make(v, V, key, K, ver) == (int)V, "make K=%u V=%u", K, V);
			CHECK(lg_value_check(v, V, key, K), "own value K=%u V=%u does not verify", K, V);
			CHECK(!lg_value_check(v, V, key + 1, K), "K=%u V=%u verifies under another key", K, V);
			CHECK(!lg_value_check(v, V - 1, key, K), "K=%u V=%u verifies cut short", K, V);
			for (unsigned j = 0; j < V; j++) {
				v[j] ^= 0x01;
				CHECK(!lg_value_check(v, V, key, K), "K=%u V=%u byte %u flipped verifies", K, V, j);
				v[j] ^= 0x01;
			}
			/* `xdpkv load --generate` values, any seed */
			xkv_gen_key(k, K, key);
			xkv_gen_value(v, V, k, K, 0);
			CHECK(lg_value_check(v, V, key, K), "generated K=%u V=%u seed 0 does not verify", K, V);
			xkv_gen_value(v, V, k, K, 77);
			CHECK(lg_value_check(v, V, key, K), "generated K=%u V=%u seed 77 does not verify", K, V);
			if (V > K + 4) {
				CHECK(!lg_value_check(v, V, key + 1, K), "generated K=%u V=%u: wrong key verifies",
				      K, V);
				v[V - 1] ^= 0x01;
				CHECK(!lg_value_check(v, V, key, K), "generated K=%u V=%u: last byte flipped verifies",
				      K, V);
			}
		}
	}
	CHECK(lg_key_index("key:000000000042", 16, 16) == 42, "key index");
	CHECK(lg_key_index("key:00000000004x", 16, 16) == -1, "bad key index");
}

static void test_zipf(void)
{
	const uint64_t n = 100000, draws = 2000000;
	struct lg_zipf z;
	struct lg_rng r = { 42 };
	uint32_t *rank = calloc(n, sizeof(*rank)), *key = calloc(n, sizeof(*key));
	uint32_t top = 0;
	uint64_t distinct = 0;

	lg_zipf_init(&z, n, 0.99);
	for (uint64_t i = 0; i < draws; i++) {
		uint64_t k = lg_zipf_rank(&z, &r);
		CHECK(k < n, "rank %llu out of range", (unsigned long long)k);
		if (k >= n)
			break;
		rank[k]++;
		key[lg_scramble(k, n)]++;
	}
	/* rank 0 has probability 1 / zeta(n), rank 1 that over 2^theta */
	double p0 = (double)rank[0] / draws, p1 = (double)rank[1] / draws;
	CHECK(fabs(p0 - 1 / z.zetan) < 0.1 / z.zetan, "zipf p0 %.4f, expected %.4f", p0, 1 / z.zetan);
	CHECK(fabs(p1 - p0 / pow(2, 0.99)) < 0.1 * p1, "zipf p1 %.4f, expected %.4f", p1,
	      p0 / pow(2, 0.99));
	for (uint64_t i = 0; i < n; i++) {
		if (key[i] > top)
			top = key[i];
		distinct += key[i] > 0;
	}
	CHECK((double)top / draws > 1000.0 / n, "hottest key share %.5f is not far above uniform %.5f",
	      (double)top / draws, 1.0 / n);
	CHECK(key[0] < top, "scrambling left the hottest key at index 0");
	CHECK(distinct > n / 10, "only %llu distinct keys drawn", (unsigned long long)distinct);
	free(rank);
	free(key);
}

/* ---- workload sizes (bench/loadgen/workload.c) ---- */

/* The published distributions, written here from the papers and not from
 * workload.c (whose quantile functions they check): the CDFs in MATLAB's
 * parameterisation, which Atikoglu et al. (SIGMETRICS'12, Table 5) use. */
static double gev_cdf(double x, double mu, double sigma, double k)
{
	double t = 1 + k * (x - mu) / sigma;
	return t <= 0 ? (k > 0 ? 0 : 1) : exp(-pow(t, -1 / k));
}

static double gp_cdf(double x, double theta, double sigma, double k)
{
	return x <= theta ? 0 : 1 - pow(1 + k * (x - theta) / sigma, -1 / k);
}

#define WL_N 200000

/* Kolmogorov-Smirnov distance between the sizes of ids 0..WL_N-1 and a size
 * distribution that was rounded to whole bytes and clamped to [lo, hi]:
 * P(size <= x) = F(x + 0.5) for lo <= x < hi. */
static double ks_sizes(const unsigned *sizes, unsigned lo, unsigned hi, double (*F)(double))
{
	static unsigned count[LG_VAL_MAX + 2];
	double emp = 0, d = 0;

	memset(count, 0, sizeof(count));
	for (unsigned i = 0; i < WL_N; i++)
		count[sizes[i]]++;
	for (unsigned x = lo; x < hi; x++) {
		emp += (double)count[x] / WL_N;
		double diff = fabs(emp - F(x + 0.5));
		d = diff > d ? diff : d;
	}
	return d;
}

static double etc_key_cdf(double x)
{
	return gev_cdf(x, 30.7984, 8.20449, 0.078688);
}

static double etc_value_cdf(double x)
{
	return gp_cdf(x, 0, 214.476, 0.348238);
}

static void test_workload(void)
{
	static unsigned ks[WL_N], vs[WL_N];
	struct wl w;
	/* The ids are fixed, so the sizes are too; the bound is what a correct
	 * sampler stays under: the KS critical value at alpha = 0.001,
	 * 1.95 / sqrt(N) = 0.0044 for N = 200000 (conservative for a discrete
	 * distribution).  Wrong parameters, a flipped shape sign or a swapped
	 * key/value stream move the CDF by 0.05 or more. */
	const double ks_max = 1.95 / sqrt(WL_N);

	CHECK(wl_parse(&w, "nonsense", 16, 250, 32, 1024) < 0, "workload: a bad name is accepted");
	CHECK(wl_parse(&w, "etc", LG_KEY_MIN, LG_KEY_MAX, LG_VAL_MIN, LG_VAL_MAX) == 0, "parse etc");
	for (unsigned i = 0; i < WL_N; i++) {
		ks[i] = wl_key_size(&w, i);
		vs[i] = wl_value_size(&w, i);
		CHECK(ks[i] >= LG_KEY_MIN && ks[i] <= LG_KEY_MAX && vs[i] >= LG_VAL_MIN &&
		      vs[i] <= LG_VAL_MAX, "etc id %u: sizes %u, %u outside the clamps", i, ks[i], vs[i]);
		if (ks[i] < LG_KEY_MIN || ks[i] > LG_KEY_MAX || vs[i] < LG_VAL_MIN || vs[i] > LG_VAL_MAX)
			return;
	}
	CHECK(wl_key_size(&w, 12345) == ks[12345] && wl_value_size(&w, 12345) == vs[12345],
	      "etc: the sizes of an id change between calls");
	double dk = ks_sizes(ks, LG_KEY_MIN, LG_KEY_MAX, etc_key_cdf);
	double dv = ks_sizes(vs, LG_VAL_MIN, LG_VAL_MAX, etc_value_cdf);
	CHECK(dk <= ks_max, "etc key sizes: KS distance %.4f > %.4f from GEV(30.7984, 8.20449, 0.078688)",
	      dk, ks_max);
	CHECK(dv <= ks_max, "etc value sizes: KS distance %.4f > %.4f from GP(0, 214.476, 0.348238)",
	      dv, ks_max);
	/* the quantile functions invert the CDFs */
	for (double p = 0.05; p < 1; p += 0.1) {
		CHECK(fabs(etc_key_cdf(wl_etc_key_quantile(p)) - p) < 1e-9, "etc key quantile at %.2f", p);
		CHECK(fabs(etc_value_cdf(wl_etc_value_quantile(p)) - p) < 1e-9,
		      "etc value quantile at %.2f", p);
	}
	/* the key and value of an id are drawn independently: the correlation of
	 * N independent pairs is within 4 / sqrt(N) = 0.009 of 0 */
	double mk = 0, mv = 0, sk = 0, sv = 0, skv = 0;
	for (unsigned i = 0; i < WL_N; i++)
		mk += ks[i], mv += vs[i];
	mk /= WL_N, mv /= WL_N;
	for (unsigned i = 0; i < WL_N; i++) {
		sk += (ks[i] - mk) * (ks[i] - mk);
		sv += (vs[i] - mv) * (vs[i] - mv);
		skv += (ks[i] - mk) * (vs[i] - mv);
	}
	CHECK(fabs(skv / sqrt(sk * sv)) < 4 / sqrt(WL_N), "etc: key and value sizes correlate (%.4f)",
	      skv / sqrt(sk * sv));

	/* twitter: every id gets one cluster's pair; each cluster an equal share.
	 * Chi-square over the clusters (df = n - 1 = 20): the alpha = 0.001
	 * critical value is 45.3. */
	CHECK(wl_parse(&w, "twitter", LG_KEY_MIN, LG_KEY_MAX, LG_VAL_MIN, LG_VAL_MAX) == 0,
	      "parse twitter");
	CHECK(wl_twitter_n == 21, "twitter: %u clusters, the docs name 21", wl_twitter_n);
	static unsigned hits[64];
	unsigned unmatched = 0;
	for (unsigned i = 0; i < WL_N; i++) {
		unsigned k = wl_key_size(&w, i), v = wl_value_size(&w, i), found = 0;
		for (unsigned c = 0; c < wl_twitter_n; c++) {
			unsigned ck = wl_twitter[c].key < LG_KEY_MIN ? LG_KEY_MIN : wl_twitter[c].key;
			unsigned cv = wl_twitter[c].value < LG_VAL_MIN ? LG_VAL_MIN : wl_twitter[c].value;
			if (ck == k && cv == v) {
				hits[c]++;
				found = 1;
				break; /* the 21 (key, value) pairs are distinct, clamped too */
			}
		}
		unmatched += !found;
	}
	CHECK(!unmatched, "twitter: %u ids have sizes of no cluster", unmatched);
	double chi = 0, e = (double)WL_N / wl_twitter_n;
	for (unsigned c = 0; c < wl_twitter_n; c++)
		chi += (hits[c] - e) * (hits[c] - e) / e;
	CHECK(chi < 45.3, "twitter: clusters not equally likely (chi-square %.1f, 20 df)", chi);
	CHECK(wl_parse(&w, "fixed", 16, 250, 32, 1024) == 0, "parse fixed");
	w.key_size = 40;
	w.value_size = 700;
	CHECK(wl_key_size(&w, 7) == 40 && wl_value_size(&w, 7) == 700, "fixed sizes");
}

int main(void)
{
	test_hist();
	test_values();
	test_zipf();
	test_workload();
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("loadgen unit: all checks passed\n");
	return 0;
}
