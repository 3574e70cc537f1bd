// SPDX-License-Identifier: MIT
/* stats: memcached's lines from the counters (both map slots and what this
 * process has not pushed yet), the store's limits and the slow path's own
 * figures (items, big values, TCP connections, fast path share). */
#include "engine_int.h"
#include <time.h>
#include <unistd.h>

static __u64 slow_start_ns;

__attribute__((constructor)) static void slow_start(void)
{
	slow_start_ns = xkv_now_ns();
}

static __u64 now_realtime_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec;
}

#define STAT_U(c, name, v) buf_printf((c)->out, "STAT %s %llu\r\n", (name), (unsigned long long)(v))

/* stats: memcached-style lines.  Counters are both slots summed, plus what
 * this process counted but has not pushed to the map yet (*delta).
 * fast_path_requests = datagrams the XDP program answered itself (seen minus
 * passed on); slow_path_requests = datagrams the slow path served;
 * fast_path_share = fast / (fast + slow) in percent. */
int slow_cmd_stats(struct slow_cmd *c)
{
	if (c->r->ntok > 1) { /* stats <group>: none of memcached's groups */
		STAT(c, err_unknown);
		return PUT_LIT(c->out, XKV_R_ERROR);
	}
	if (stats_lines(c))
		return -1;
	return PUT_LIT(c->out, XKV_R_END);
}

/* The lines of stats ("STAT <name> <value>\r\n" each, no END) into c->out:
 * shared with binproto.c.  0, or -1 without memory. */
int stats_lines(struct slow_cmd *c)
{
	struct xkv_store *s = c->s;
	struct xkv_stats fast = {}, slow = {};
	int err = 0;

	if (s->stats_fd >= 0) {
		if (xkv_stats_read(s, XKV_STATS_FAST, &fast, NULL))
			memset(&fast, 0, sizeof(fast));
		if (xkv_stats_read(s, XKV_STATS_SLOW, &slow, NULL))
			memset(&slow, 0, sizeof(slow));
	}
	for (int i = 0; i < XKV_STAT__MAX; i++)
		slow.v[i] += c->d->v[i];

	__u64 now = xkv_now_ns();
	err |= STAT_U(c, "pid", getpid());
	err |= STAT_U(c, "uptime", (now - slow_start_ns) / 1000000000ull);
	err |= STAT_U(c, "time", now_realtime_s());
	err |= buf_printf(c->out, "STAT version %s\r\n", XKV_VERSION);
	err |= buf_printf(c->out, "STAT layout %s\r\n", s->cfg.layout);
	/* counted off the request path (xkv_slow_count_refresh): its age says how old */
	__u64 counted = __atomic_load_n(&c->sl->items_ns, __ATOMIC_ACQUIRE);
	if (counted) {
		err |= STAT_U(c, "curr_items", __atomic_load_n(&c->sl->items, __ATOMIC_RELAXED));
		err |= STAT_U(c, "curr_items_age_s", now > counted ? (now - counted) / 1000000000ull : 0);
	}
	err |= STAT_U(c, "limit_items", s->cfg.entries);
	err |= STAT_U(c, "limit_maxbytes", (__u64)s->cfg.entries * s->cfg.entry_size);
	err |= STAT_U(c, "item_size_max", xkv_val_max(s));
	if (xkv_big_on(s)) { /* values above val_cap (docs/protocol.md, "Large values") */
		pthread_mutex_lock(&c->sl->big_mu);
		struct xkv_big_census cs = c->sl->big_last;
		pthread_mutex_unlock(&c->sl->big_mu);
		err |= STAT_U(c, "inline_value_max", s->cfg.val_cap);
		err |= STAT_U(c, "big_chunks", cs.chunks);
		/* the map's own size (a re-attach keeps the pinned one), once counted */
		err |= STAT_U(c, "big_chunks_max", cs.capacity ? cs.capacity : (__u64)s->cfg.big_chunks);
		err |= STAT_U(c, "big_items", cs.items);
		err |= STAT_U(c, "big_bytes", cs.bytes);
		err |= STAT_U(c, "big_chunks_removed", __atomic_load_n(&c->sl->big_removed, __ATOMIC_RELAXED));
	}
	err |= STAT_U(c, "key_size_max", s->cfg.key_cap);
	long long mem = xkv_map_memory(s->store_fd);
	if (mem >= 0)
		err |= STAT_U(c, "map_bytes", mem);
	for (int i = 0; i < XKV_STAT__MAX; i++)
		err |= STAT_U(c, xkv_stat_names[i], fast.v[i] + slow.v[i]);

	__u64 fast_n = xkv_fast_served(&fast), slow_n = slow.v[XKV_STAT_requests];
	__u64 permille = fast_n + slow_n ? (fast_n * 1000 + (fast_n + slow_n) / 2) / (fast_n + slow_n) : 0;
	err |= STAT_U(c, "fast_path_requests", fast_n);
	err |= STAT_U(c, "slow_path_requests", slow_n);
	err |= buf_printf(c->out, "STAT fast_path_share %llu.%llu\r\n",
			  (unsigned long long)(permille / 10), (unsigned long long)(permille % 10));
	if (__atomic_load_n(&c->sl->tcp_max, __ATOMIC_RELAXED)) { /* this process's TCP server */
		err |= STAT_U(c, "curr_connections", __atomic_load_n(&c->sl->conns_curr, __ATOMIC_RELAXED));
		err |= STAT_U(c, "total_connections", __atomic_load_n(&c->sl->conns_total, __ATOMIC_RELAXED));
		err |= STAT_U(c, "rejected_connections",
			      __atomic_load_n(&c->sl->conns_rejected, __ATOMIC_RELAXED));
		err |= STAT_U(c, "max_connections", c->sl->tcp_max);
	}
	return err ? -1 : 0;
}
