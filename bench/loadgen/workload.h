/* SPDX-License-Identifier: MIT */
/* Key and value sizes that look like production caches, by name
 * (workload.c; sources and approximations in docs/compare.md "Workloads"):
 *
 *   fixed    every key and value the sizes given (the default)
 *   etc      Facebook's ETC pool, Atikoglu et al., SIGMETRICS'12, Table 5:
 *            key size GEV(mu 30.7984, sigma 8.20449, k 0.078688),
 *            value size Generalized Pareto(theta 0, sigma 214.476, k 0.348238)
 *   twitter  Twitter's Twemcache clusters, Yang et al., OSDI'20, per-cluster
 *            key and value size of twitter/cache-trace stat/2020Mar.md: the
 *            read-heavy clusters (get >= 90 %) whose values fit 1024 bytes,
 *            each an equal share of the keys
 *
 * A key's sizes are a function of its id (and nothing else), so a get and
 * the set before it agree without any state, and every tool that uses this
 * file (xkv-loadgen, xkv-kvexp hitratio) gives key i the same sizes.  Sizes
 * are clamped to [key_min, key_max] and [val_min, val_max]: the tools'
 * limits (a key needs "key:" and its digits; one request fits a frame). */
#ifndef XKV_WORKLOAD_H
#define XKV_WORKLOAD_H

#include <stdint.h>

enum wl_kind { WL_FIXED, WL_ETC, WL_TWITTER };

struct wl {
	enum wl_kind kind;
	unsigned key_size, value_size;   /* fixed */
	unsigned key_min, key_max, val_min, val_max;
};

/* name: fixed, etc or twitter; 0, or -1 for an unknown name.  Sets kind and
 * the clamps; key_size and value_size are the caller's (fixed). */
int wl_parse(struct wl *w, const char *name, unsigned key_min, unsigned key_max,
	     unsigned val_min, unsigned val_max);
const char *wl_name(enum wl_kind k);
/* One line saying where the sizes come from (for JSON and --help). */
const char *wl_source(enum wl_kind k);
unsigned wl_key_size(const struct wl *w, uint64_t id);
unsigned wl_value_size(const struct wl *w, uint64_t id);

/* The fitted distributions' quantile functions (before rounding and
 * clamping), for the tests. */
double wl_etc_key_quantile(double p);
double wl_etc_value_quantile(double p);

/* twitter: the clusters used, {key bytes, value bytes, cluster number} */
struct wl_cluster {
	unsigned key, value, cluster;
};
extern const struct wl_cluster wl_twitter[];
extern const unsigned wl_twitter_n;

#endif
