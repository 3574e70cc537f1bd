/* SPDX-License-Identifier: MIT */
/* Unit test of xkv-loadgen's server-free parts: the latency histogram,
 * self-checking values (ours and `xdpkv load --generate`'s) and the Zipf
 * key generator.  Exit 0 on success, 1 with a message on the first failure. */
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

int main(void)
{
	test_hist();
	test_values();
	test_zipf();
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("loadgen unit: all checks passed\n");
	return 0;
}
