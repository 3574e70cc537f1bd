// SPDX-License-Identifier: MIT
/* What status reads about one interface (status.h), for its text and JSON
 * views (status.c) and the Prometheus one (status_prom.c). */
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <stdlib.h>
#include "status.h"

const char *map_type_str(__u32 t)
{
	const char *s = libbpf_bpf_map_type_str(t);
	if (!s && t == 33) /* BPF_MAP_TYPE_ARENA: newer than the system libbpf (1.1) */
		return "arena";
	return s ? s : "?";
}

/* Values above --value-size: the big map's chunks now (a walk of its keys)
 * and its size. */
static void big_count(struct status *st)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	struct xkv_big_key k, n;

	st->big_chunks = -1;
	st->big_max = 0;
	if (!xkv_big_on(&st->s) || bpf_obj_get_info_by_fd(st->s.big_fd, &info, &ilen))
		return;
	st->big_max = info.max_entries;
	st->big_chunks = 0;
	for (void *p = NULL; !bpf_map_get_next_key(st->s.big_fd, p, &n); p = &k, st->big_chunks++)
		k = n;
}

int collect(struct status *st, const char *ifname, bool percpu)
{
	int rc = open_pinned(&st->s, "status", ifname);
	const struct xkv_stats *f = &st->fast;
	int e;

	st->ifname = ifname;
	if (rc)
		return rc;
	st->ifindex = (int)if_nametoindex(ifname);
	st->attached = xdpkv_prog_on(st->ifindex, &st->prog_id, &st->legacy, NULL, 0);
	st->live = st->s.L->count(&st->s);
	st->mem = xkv_map_memory(st->s.store_fd);
	big_count(st);
	if (percpu && !(st->cpu = calloc(st->s.ncpus, sizeof(*st->cpu))))
		return EXIT_SYS;
	if ((e = xkv_stats_read(&st->s, XKV_STATS_FAST, &st->fast, st->cpu)) ||
	    (e = xkv_stats_read(&st->s, XKV_STATS_SLOW, &st->slow, NULL)))
		return sys_fail("status", "reading the stats map", e);
	/* A datagram the fast path saw and did not pass on was served there. */
	st->fast_reqs = xkv_fast_served(f);
	st->passed = f->v[XKV_STAT_requests] - st->fast_reqs;
	st->slow_reqs = st->slow.v[XKV_STAT_requests];
	long long news = (long long)(f->v[XKV_STAT_store_new] + st->slow.v[XKV_STAT_store_new]);
	long long dels = (long long)(f->v[XKV_STAT_deletes] + st->slow.v[XKV_STAT_deletes]);
	st->evict_est = news - dels - (st->live > 0 ? st->live : 0);
	if (st->evict_est < 0)
		st->evict_est = 0;
	return 0;
}

const struct refusal refusals[] = {
	{ XKV_STAT_drop_acl, "not allowed", "not_allowed" },
	{ XKV_STAT_drop_write_acl, "writes", "writes" },
	{ XKV_STAT_drop_src, "source address", "source_address" },
	{ XKV_STAT_drop_port, "source port", "source_port" },
	{ XKV_STAT_drop_ratelimit, "rate", "rate" },
	{ XKV_STAT_drop_reply, "reply-shaped", "reply_shaped" },
	{ XKV_STAT_drop_frame, "frame header", "frame_header" },
	{ XKV_STAT_drop_amp, "amplification", "amplification" },
};
const size_t n_refusals = sizeof(refusals) / sizeof(refusals[0]);

void release(struct status *st)
{
	xkv_store_close(&st->s);
	free(st->cpu);
	st->cpu = NULL;
}
