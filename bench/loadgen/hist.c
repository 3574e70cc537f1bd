/* SPDX-License-Identifier: MIT */
/* Log-linear latency histogram in nanoseconds, HdrHistogram's layout: the
 * first 2^(B+1) values exactly, then 2^B buckets per power of two, so any
 * recorded value is within 2^-B (0.8 % for B = 7) of its bucket.  Covers
 * 1 ns .. 2^35 ns (34 s); larger values land in the last bucket. */
#include "lg.h"

static unsigned msb(uint64_t v)
{
	return 63 - (unsigned)__builtin_clzll(v);
}

static unsigned bucket_of(uint64_t v)
{
	unsigned shift, i;

	if (v < (2u << LG_HIST_SUB_BITS))
		return (unsigned)v;
	shift = msb(v) - LG_HIST_SUB_BITS;
	i = (shift << LG_HIST_SUB_BITS) + (unsigned)(v >> shift);
	return i < LG_HIST_BUCKETS ? i : LG_HIST_BUCKETS - 1;
}

/* Middle of bucket i. */
static uint64_t value_of(unsigned i)
{
	unsigned shift;
	uint64_t lo;

	if (i < (2u << LG_HIST_SUB_BITS))
		return i;
	shift = (i >> LG_HIST_SUB_BITS) - 1;
	lo = (uint64_t)((i & ((1u << LG_HIST_SUB_BITS) - 1)) | (1u << LG_HIST_SUB_BITS)) << shift;
	return lo + ((1ULL << shift) >> 1);
}

void lg_hist_add(struct lg_hist *h, uint64_t ns)
{
	h->b[bucket_of(ns)]++;
	h->count++;
	h->sum += ns;
	if (ns > h->max)
		h->max = ns;
}

void lg_hist_merge(struct lg_hist *to, const struct lg_hist *from)
{
	for (unsigned i = 0; i < LG_HIST_BUCKETS; i++)
		to->b[i] += from->b[i];
	to->count += from->count;
	to->sum += from->sum;
	if (from->max > to->max)
		to->max = from->max;
}

/* The value below which a fraction q of the samples lie (never above max). */
uint64_t lg_hist_pct(const struct lg_hist *h, double q)
{
	uint64_t want, seen = 0, v;

	if (!h->count)
		return 0;
	want = (uint64_t)(q * (double)h->count + 0.999999);
	if (want < 1)
		want = 1;
	for (unsigned i = 0; i < LG_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			v = value_of(i);
			return v < h->max ? v : h->max;
		}
	}
	return h->max;
}
