/* SPDX-License-Identifier: MIT */
/* Production-like key and value sizes (workload.h). */
#include <math.h>
#include <string.h>

#include "workload.h"

/* Atikoglu, Xu, Frachtenberg, Jiang, Paleczny, "Workload Analysis of a
 * Large-Scale Key-Value Store", SIGMETRICS'12, Table 5 (ETC), MATLAB's
 * parameterisation (k > 0: a heavy right tail). */
#define ETC_KEY_MU    30.7984
#define ETC_KEY_SIGMA 8.20449
#define ETC_KEY_K     0.078688
#define ETC_VAL_THETA 0.0
#define ETC_VAL_SIGMA 214.476
#define ETC_VAL_K     0.348238

/* twitter/cache-trace, stat/2020Mar.md (the statistics of the traces of
 * Yang, Yue, Rashmi, "A large scale analysis of hundreds of in-memory cache
 * clusters at Twitter", OSDI'20): columns "key size" and "value size" of the
 * clusters whose operation mix is >= 90 % get and whose value size is at
 * most 1024 bytes (21 of the 54).  The table gives one figure per cluster,
 * not a distribution: the spread inside a cluster is not modelled. */
const struct wl_cluster wl_twitter[] = {
	{ 80, 267, 1 },  { 21, 68, 2 },   { 19, 120, 3 },  { 44, 252, 6 },  { 32, 39, 9 },
	{ 24, 170, 11 }, { 18, 115, 16 }, { 19, 212, 17 }, { 18, 37, 18 },  { 26, 55, 20 },
	{ 32, 699, 24 }, { 49, 28, 25 },  { 45, 85, 28 },  { 22, 689, 30 }, { 33, 322, 34 },
	{ 23, 78, 36 },  { 25, 22, 44 },  { 44, 267, 47 }, { 44, 221, 51 }, { 20, 273, 52 },
	{ 19, 246, 54 },
};
const unsigned wl_twitter_n = sizeof(wl_twitter) / sizeof(wl_twitter[0]);

/* Salts: the key size, the value size and the cluster of an id are drawn
 * from independent streams. */
#define SALT_KEY   0x6b65792d73697a65ull
#define SALT_VALUE 0x76616c75652d737aull
#define SALT_CLUST 0x636c75737465722dull

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1), never 0 or 1 (the quantile functions are infinite there). */
static double unit(uint64_t id, uint64_t salt)
{
	return ((double)(mix64(id ^ salt) >> 11) + 0.5) * 0x1.0p-53;
}

double wl_etc_key_quantile(double p)
{
	return ETC_KEY_MU + ETC_KEY_SIGMA * (pow(-log(p), -ETC_KEY_K) - 1) / ETC_KEY_K;
}

double wl_etc_value_quantile(double p)
{
	return ETC_VAL_THETA + ETC_VAL_SIGMA * (pow(1 - p, -ETC_VAL_K) - 1) / ETC_VAL_K;
}

static unsigned clamp(double v, unsigned lo, unsigned hi)
{
	double r = round(v);
	if (!(r >= lo)) /* NaN too */
		return lo;
	return r >= hi ? hi : (unsigned)r;
}

int wl_parse(struct wl *w, const char *name, unsigned key_min, unsigned key_max,
	     unsigned val_min, unsigned val_max)
{
	if (!strcmp(name, "fixed"))
		w->kind = WL_FIXED;
	else if (!strcmp(name, "etc"))
		w->kind = WL_ETC;
	else if (!strcmp(name, "twitter"))
		w->kind = WL_TWITTER;
	else
		return -1;
	w->key_min = key_min;
	w->key_max = key_max;
	w->val_min = val_min;
	w->val_max = val_max;
	return 0;
}

const char *wl_name(enum wl_kind k)
{
	return k == WL_ETC ? "etc" : k == WL_TWITTER ? "twitter" : "fixed";
}

const char *wl_source(enum wl_kind k)
{
	switch (k) {
	case WL_ETC:
		return "Facebook ETC, Atikoglu et al. SIGMETRICS'12 Table 5: key GEV(30.7984, 8.20449, "
		       "0.078688), value Generalized Pareto(0, 214.476, 0.348238); clamped to the "
		       "tool's limits";
	case WL_TWITTER:
		return "Twitter, Yang et al. OSDI'20, twitter/cache-trace stat/2020Mar.md: key and "
		       "value size of the 21 clusters with >= 90% gets and values <= 1024 B, one "
		       "cluster per key, equal shares; no spread inside a cluster";
	default:
		return "fixed sizes";
	}
}

unsigned wl_key_size(const struct wl *w, uint64_t id)
{
	switch (w->kind) {
	case WL_ETC:
		return clamp(wl_etc_key_quantile(unit(id, SALT_KEY)), w->key_min, w->key_max);
	case WL_TWITTER:
		return clamp(wl_twitter[mix64(id ^ SALT_CLUST) % wl_twitter_n].key, w->key_min,
			     w->key_max);
	default:
		return w->key_size;
	}
}

unsigned wl_value_size(const struct wl *w, uint64_t id)
{
	switch (w->kind) {
	case WL_ETC:
		return clamp(wl_etc_value_quantile(unit(id, SALT_VALUE)), w->val_min, w->val_max);
	case WL_TWITTER:
		return clamp(wl_twitter[mix64(id ^ SALT_CLUST) % wl_twitter_n].value, w->val_min,
			     w->val_max);
	default:
		return w->value_size;
	}
}
