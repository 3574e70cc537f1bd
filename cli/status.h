/* SPDX-License-Identifier: MIT */
/* What status collects about one interface (status_collect.c), shared by
 * its text and JSON views (status.c) and the Prometheus one (status_prom.c). */
#ifndef XDPKV_CLI_STATUS_H
#define XDPKV_CLI_STATUS_H

#include "cli.h"

/* Everything status shows about one interface. */
struct status {
	const char *ifname;
	struct xkv_store s;
	int ifindex;            /* in this network namespace, 0 if absent */
	bool attached, legacy;
	unsigned prog_id;
	long live;
	long big_chunks;        /* values above --value-size: chunks in use; -1: no big map */
	__u32 big_max;
	long long mem;
	struct xkv_stats fast, slow, *cpu;
	/* derived: see docs/cli.md "status" */
	unsigned long long fast_reqs, slow_reqs, passed;
	long long evict_est;
};

/* What the access rules refused, both paths summed (docs/security.md). */
struct refusal {
	enum xkv_stat stat;
	const char *what, *key;
};
extern const struct refusal refusals[];
extern const size_t n_refusals;

const char *map_type_str(__u32 t);
/* Open ifname's pins and read everything; release() in any case. */
int collect(struct status *st, const char *ifname, bool percpu);
void release(struct status *st);

static inline unsigned long long both(const struct status *st, int i)
{
	return st->fast.v[i] + st->slow.v[i];
}

static inline bool is_lru(const struct status *st)
{
	return xkv_map_lru(st->s.L->map_type);
}

/* status_prom.c: --prometheus for the interfaces named; an exit code. */
int run_prometheus(char *const *names, int n);

#endif
