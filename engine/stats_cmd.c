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

/* Both counter slots as they stand: the maps plus what this process
 * counted but has not pushed yet (*delta). */
static void counters_now(struct slow_cmd *c, struct xkv_stats *fast, struct xkv_stats *slow)
{
	struct xkv_store *s = c->s;
	memset(fast, 0, sizeof(*fast));
	memset(slow, 0, sizeof(*slow));
	if (s->stats_fd >= 0) {
		if (xkv_stats_read(s, XKV_STATS_FAST, fast, NULL))
			memset(fast, 0, sizeof(*fast));
		if (xkv_stats_read(s, XKV_STATS_SLOW, slow, NULL))
			memset(slow, 0, sizeof(*slow));
	}
	for (int i = 0; i < XKV_STAT__MAX; i++)
		slow->v[i] += c->d->v[i];
}

/* stats reset (memcached's): the counters start again from 0 for stats,
 * over the wire; curr_items, curr_connections and uptime do not.  The maps
 * keep counting (xdpkv status, the tests' deltas): what is answered is the
 * count since the base taken here (both slots' sum, as stats adds them). */
static void stats_reset(struct slow_cmd *c)
{
	struct xkv_stats fast, slow;
	struct xkv_slow *sl = c->sl;
	counters_now(c, &fast, &slow);
	for (int i = 0; i < XKV_STAT__MAX; i++)
		__atomic_store_n(&sl->stats_base.v[i], fast.v[i] + slow.v[i], __ATOMIC_RELAXED);
	__atomic_store_n(&sl->conns_total_base, __atomic_load_n(&sl->conns_total, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&sl->conns_rejected_base,
			 __atomic_load_n(&sl->conns_rejected, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	__atomic_store_n(&sl->flush_cmds_base, __atomic_load_n(&sl->flush_cmds, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&sl->idle_kicks_base, __atomic_load_n(&sl->idle_kicks, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	detail_clear(&sl->detail); /* and stats detail's prefixes, as memcached */
}

/* A count since the last stats reset. */
static __u64 since_reset(__u64 now, __u64 base)
{
	return now > base ? now - base : 0;
}

/* One of struct xkv_slow's own counters (__atomic) since the last reset. */
static __u64 own_since(const __u64 *now, const __u64 *base)
{
	return since_reset(__atomic_load_n(now, __ATOMIC_RELAXED), __atomic_load_n(base, __ATOMIC_RELAXED));
}

/* Counter i as stats answers it: both slots, since the last reset. */
static __u64 count_since(const struct slow_cmd *c, const struct xkv_stats *fast,
			 const struct xkv_stats *slow, int i)
{
	return since_reset(fast->v[i] + slow->v[i],
			   __atomic_load_n(&c->sl->stats_base.v[i], __ATOMIC_RELAXED));
}

/* The big map's census as the collector last took it, its capacity the
 * configured one until a collection has read the map's own. */
static struct xkv_big_census big_census(struct slow_cmd *c)
{
	pthread_mutex_lock(&c->sl->big_mu);
	struct xkv_big_census cs = c->sl->big_last;
	pthread_mutex_unlock(&c->sl->big_mu);
	if (!cs.capacity)
		cs.capacity = c->s->cfg.big_chunks;
	return cs;
}

/* The lines of stats items and stats slabs (memcached's groups): the store
 * map as slab class 1 (its entries are one size, allocated at attach: one
 * page of --entries chunks) and the big map as class 2 (3712-byte chunks of
 * values above --value-size).  Only what this store knows: no ages, no
 * per-class hit counts. */
static int stats_classes(struct slow_cmd *c, bool slabs)
{
	struct xkv_store *s = c->s;
	struct xkv_stats fast, slow;
	int err = 0;
	counters_now(c, &fast, &slow);
	__u64 counted = __atomic_load_n(&c->sl->items_ns, __ATOMIC_ACQUIRE);
	long n = counted ? __atomic_load_n(&c->sl->items, __ATOMIC_RELAXED) : 0;
	__u64 items = n > 0 ? (__u64)n : 0;
	__u64 evicted = count_since(c, &fast, &slow, XKV_STAT_evictions_est);
	__u64 oom = count_since(c, &fast, &slow, XKV_STAT_err_oom);
	bool big = xkv_big_on(s);
	struct xkv_big_census cs = big ? big_census(c) : (struct xkv_big_census){ 0 };
	if (!slabs) {
		if (items)
			err |= buf_printf(c->out, "STAT items:1:number %llu\r\nSTAT items:1:evicted %llu\r\n"
					  "STAT items:1:outofmemory %llu\r\n", (unsigned long long)items,
					  (unsigned long long)evicted, (unsigned long long)oom);
		if (big && cs.items)
			err |= buf_printf(c->out, "STAT items:2:number %llu\r\n", (unsigned long long)cs.items);
		return err;
	}
	__u64 entries = s->cfg.entries, used = items < entries ? items : entries;
	err |= buf_printf(c->out, "STAT 1:chunk_size %u\r\nSTAT 1:chunks_per_page %llu\r\n"
			  "STAT 1:total_pages 1\r\nSTAT 1:total_chunks %llu\r\nSTAT 1:used_chunks %llu\r\n"
			  "STAT 1:free_chunks %llu\r\n", s->cfg.entry_size, (unsigned long long)entries,
			  (unsigned long long)entries, (unsigned long long)used,
			  (unsigned long long)(entries - used));
	if (big)
		err |= buf_printf(c->out, "STAT 2:chunk_size %u\r\nSTAT 2:total_chunks %llu\r\n"
				  "STAT 2:used_chunks %llu\r\n", XKV_BIG_CHUNK,
				  (unsigned long long)cs.capacity, (unsigned long long)cs.chunks);
	long long mem = xkv_map_memory(s->store_fd);
	err |= buf_printf(c->out, "STAT active_slabs %d\r\nSTAT total_malloced %lld\r\n", big ? 2 : 1,
			  mem > 0 ? mem : (long long)entries * s->cfg.entry_size);
	return err;
}

/* stats settings: memcached's names where this store has the value, then
 * its own sizes. */
static int stats_settings(struct slow_cmd *c)
{
	struct xkv_store *s = c->s;
	__u32 tcp = __atomic_load_n(&c->sl->tcp_max, __ATOMIC_RELAXED);
	/* a plain hash map refuses a new key when full; every other layout
	 * makes room (docs/layouts.md) */
	bool evicts = s->L->map_type != BPF_MAP_TYPE_HASH && s->L->map_type != BPF_MAP_TYPE_PERCPU_HASH;
	int err = 0;
	err |= STAT_U(c, "maxbytes", (__u64)s->cfg.entries * s->cfg.entry_size);
	if (tcp)
		err |= STAT_U(c, "maxconns", tcp);
	err |= STAT_U(c, "tcpport", tcp ? s->cfg.port : 0);
	err |= STAT_U(c, "udpport", s->cfg.port);
	err |= buf_printf(c->out, "STAT verbosity 0\r\nSTAT evictions %s\r\n", evicts ? "on" : "off");
	err |= PUT_LIT(c->out, "STAT domain_socket NULL\r\n"); /* no unix socket is served */
	err |= buf_printf(c->out, "STAT cas_enabled yes\r\nSTAT binding_protocol auto-negotiate\r\n"
			  "STAT auth_enabled_sasl %s\r\n", c->sl->sasl ? "yes" : "no");
	err |= STAT_U(c, "item_size_max", xkv_val_max(s));
	err |= buf_printf(c->out, "STAT flush_enabled yes\r\nSTAT layout %s\r\n", s->cfg.layout);
	err |= STAT_U(c, "key_size_max", s->cfg.key_cap);
	err |= STAT_U(c, "inline_value_max", s->cfg.val_cap);
	err |= STAT_U(c, "limit_items", s->cfg.entries);
	return err;
}

/* The lines of stats <group> (no END) into c->out, for the text command
 * and binproto.c's stat with a key: 0; STATS_RESET (done: no lines);
 * STATS_NO_END (sizes_enable, sizes_disable: memcached ends their line
 * with no END, and with no empty response over binary); STATS_NO_GROUP
 * (none of the groups below); -1 without memory. */
int stats_group(struct slow_cmd *c, const __u8 *w, __u32 wl)
{
#define IS(s) (wl == sizeof(s) - 1 && !memcmp(w, s, wl))
	if (IS("settings"))
		return stats_settings(c) ? -1 : 0;
	if (IS("items"))
		return stats_classes(c, false) ? -1 : 0;
	if (IS("slabs"))
		return stats_classes(c, true) ? -1 : 0;
	if (IS("sizes"))
		return stats_sizes(c, SIZES_LIST);
	if (IS("sizes_enable"))
		return stats_sizes(c, SIZES_ENABLE);
	if (IS("sizes_disable"))
		return stats_sizes(c, SIZES_DISABLE);
	if (IS("reset")) {
		stats_reset(c);
		return STATS_RESET;
	}
#undef IS
	return STATS_NO_GROUP;
}

/* stats [group]: memcached-style lines.  Counters are both slots summed,
 * plus what this process counted but has not pushed to the map yet
 * (*delta), less the base of the last stats reset.
 * fast_path_requests = datagrams the XDP program answered itself (seen minus
 * passed on); slow_path_requests = datagrams the slow path served;
 * fast_path_share = fast / (fast + slow) in percent.  The groups memcached
 * 1.6.18 has and this store can answer: settings, items, slabs, sizes,
 * sizes_enable, sizes_disable, reset (words after the group are ignored,
 * as there); others (detail,
 * conns, extstore, an unknown word): ERROR. */
int slow_cmd_stats(struct slow_cmd *c)
{
	const struct xkv_req *q = c->r;
	/* stats detail <on|off|dump> (detail.c; words after it are
	 * ignored, as there); memcached's usage line for the rest */
	if (q->ntok >= 2 && q->tok[1].len == 6 && !memcmp(tok_ptr(c, 1), "detail", 6)) {
		int r = q->ntok >= 3 ? detail_cmd(c->sl, tok_ptr(c, 2), q->tok[2].len, c->out) : 1;
		if (r < 0)
			return -1;
		if (r == 0)
			return tok_ptr(c, 2)[0] == 'd' ? 0 : PUT_LIT(c->out, "OK\r\n");
		STAT(c, err_client);
		return PUT_LIT(c->out, "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
	}
	/* stats cachedump <class> <limit>: memcached's line for fewer words;
	 * the listing itself this store does not make (ERROR below) */
	if (q->ntok >= 2 && q->ntok < 4 && q->tok[1].len == 9 && !memcmp(tok_ptr(c, 1), "cachedump", 9)) {
		STAT(c, err_client);
		return PUT_LIT(c->out, "CLIENT_ERROR bad command line\r\n");
	}
	int r = q->ntok < 2 ? stats_lines(c) : stats_group(c, tok_ptr(c, 1), q->tok[1].len);
	if (r == STATS_RESET)
		return PUT_LIT(c->out, "RESET\r\n");
	if (r == STATS_NO_END)
		return 0;
	if (r == STATS_NO_GROUP) {
		STAT(c, err_unknown);
		return PUT_LIT(c->out, XKV_R_ERROR);
	}
	if (r)
		return -1;
	return PUT_LIT(c->out, XKV_R_END);
}

/* The lines of stats ("STAT <name> <value>\r\n" each, no END) into c->out:
 * shared with binproto.c.  0, or -1 without memory. */
int stats_lines(struct slow_cmd *c)
{
	struct xkv_store *s = c->s;
	struct xkv_stats fast, slow;
	int err = 0;

	counters_now(c, &fast, &slow);

	__u64 now = xkv_now_ns();
	err |= STAT_U(c, "pid", getpid());
	err |= STAT_U(c, "uptime", (now - slow_start_ns) / 1000000000ull);
	err |= STAT_U(c, "time", now_realtime_s());
	err |= PUT_LIT(c->out, "STAT version " XKV_PROTO_VERSION "\r\n");
	err |= buf_printf(c->out, "STAT xdpkv_version %s\r\n", XKV_VERSION);
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
		struct xkv_big_census cs = big_census(c);
		err |= STAT_U(c, "inline_value_max", s->cfg.val_cap);
		err |= STAT_U(c, "big_chunks", cs.chunks);
		/* the map's own size (a re-attach keeps the pinned one), once counted */
		err |= STAT_U(c, "big_chunks_max", cs.capacity);
		err |= STAT_U(c, "big_items", cs.items);
		err |= STAT_U(c, "big_bytes", cs.bytes);
		err |= STAT_U(c, "big_chunks_removed", __atomic_load_n(&c->sl->big_removed, __ATOMIC_RELAXED));
	}
	err |= STAT_U(c, "key_size_max", s->cfg.key_cap);
	long long mem = xkv_map_memory(s->store_fd);
	if (mem >= 0)
		err |= STAT_U(c, "map_bytes", mem);
	for (int i = 0; i < XKV_STAT__MAX; i++)
		err |= STAT_U(c, xkv_stat_names[i], count_since(c, &fast, &slow, i));
	struct xkv_slow *sl = c->sl;
	err |= STAT_U(c, "cmd_flush", own_since(&sl->flush_cmds, &sl->flush_cmds_base));
	if (__atomic_load_n(&sl->idle_on, __ATOMIC_RELAXED))
		err |= STAT_U(c, "idle_kicks", own_since(&sl->idle_kicks, &sl->idle_kicks_base));

	/* the share over all time (the split of a reset's base is not kept) */
	__u64 fast_n = xkv_fast_served(&fast), slow_n = slow.v[XKV_STAT_requests];
	__u64 permille = fast_n + slow_n ? (fast_n * 1000 + (fast_n + slow_n) / 2) / (fast_n + slow_n) : 0;
	err |= STAT_U(c, "fast_path_requests", fast_n);
	err |= STAT_U(c, "slow_path_requests", slow_n);
	err |= buf_printf(c->out, "STAT fast_path_share %llu.%llu\r\n",
			  (unsigned long long)(permille / 10), (unsigned long long)(permille % 10));
	if (__atomic_load_n(&c->sl->tcp_max, __ATOMIC_RELAXED)) { /* this process's TCP server */
		err |= STAT_U(c, "curr_connections", __atomic_load_n(&c->sl->conns_curr, __ATOMIC_RELAXED));
		err |= STAT_U(c, "total_connections",
			      since_reset(__atomic_load_n(&c->sl->conns_total, __ATOMIC_RELAXED),
					  __atomic_load_n(&c->sl->conns_total_base, __ATOMIC_RELAXED)));
		err |= STAT_U(c, "rejected_connections",
			      since_reset(__atomic_load_n(&c->sl->conns_rejected, __ATOMIC_RELAXED),
					  __atomic_load_n(&c->sl->conns_rejected_base, __ATOMIC_RELAXED)));
		err |= STAT_U(c, "max_connections", c->sl->tcp_max);
	}
	return err ? -1 : 0;
}
