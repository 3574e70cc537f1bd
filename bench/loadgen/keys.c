/* SPDX-License-Identifier: MIT */
/* Which key a request asks for: uniform, or Zipf as YCSB draws it
 * (ZipfianGenerator: Gray et al., "Quickly generating billion-record
 * synthetic databases", with zeta(n) computed once) and then scrambles it
 * (ScrambledZipfianGenerator: FNV-1a 64 of the rank, modulo n) so the hot
 * keys are spread over the key space instead of being 0, 1, 2, ... */
#include <math.h>
#include <linux/types.h>

#include "lg.h"
#include "fnv.h"

/* splitmix64: one multiply-xorshift chain per draw, good enough for
 * choosing keys and arrival gaps, and trivially seeded per thread. */
uint64_t lg_rand(struct lg_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
double lg_rand01(struct lg_rng *r)
{
	return (double)(lg_rand(r) >> 11) * (1.0 / 9007199254740992.0);
}

static double zeta(uint64_t n, double theta)
{
	double sum = 0;
	for (uint64_t i = 1; i <= n; i++)
		sum += 1.0 / pow((double)i, theta);
	return sum;
}

void lg_zipf_init(struct lg_zipf *z, uint64_t n, double theta)
{
	double zeta2 = zeta(2, theta);

	z->n = n;
	z->theta = theta;
	z->zetan = zeta(n, theta);
	z->alpha = 1.0 / (1.0 - theta);
	z->eta = (1.0 - pow(2.0 / (double)n, 1.0 - theta)) / (1.0 - zeta2 / z->zetan);
	z->half_pow_theta = pow(0.5, theta);
}

/* Rank 0 is the most popular. */
uint64_t lg_zipf_rank(const struct lg_zipf *z, struct lg_rng *r)
{
	double u = lg_rand01(r);
	double uz = u * z->zetan;
	uint64_t k;

	if (uz < 1.0)
		return 0;
	if (uz < 1.0 + z->half_pow_theta)
		return 1;
	k = (uint64_t)((double)z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));
	return k < z->n ? k : z->n - 1;
}

uint64_t lg_scramble(uint64_t rank, uint64_t n)
{
	__u8 b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (__u8)(rank >> (8 * i));
	return xkv_fnv1a(b, sizeof(b)) % n;
}

uint64_t lg_pick_key(const struct lg_config *c, struct lg_rng *r)
{
	if (c->dist == LG_ZIPF)
		return lg_scramble(lg_zipf_rank(&c->zipf, r), c->keys);
	return lg_rand(r) % c->keys;
}
