// SPDX-License-Identifier: MIT
/* status and layouts: what is attached, how full and how big it is, and
 * which path served the requests. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "cli.h"

struct status_opts {
	struct xo_iface ifc;
	bool json, percpu, prometheus;
};

/* Why the XDP TCP responder left a segment to the kernel (common/tcpx_xdp.bpf.h). */
static const struct {
	const char *what;
	enum xkv_stat stat;
} tcpx_refusals[] = {
	{ "shape", XKV_STAT_tcpx_refused_shape },     { "unacked", XKV_STAT_tcpx_refused_unacked },
	{ "socket", XKV_STAT_tcpx_refused_socket },   { "order", XKV_STAT_tcpx_refused_order },
	{ "serve", XKV_STAT_tcpx_refused_serve },     { "kernel", XKV_STAT_tcpx_refused_kernel },
	{ "room", XKV_STAT_tcpx_refused_room },       { "table", XKV_STAT_tcpx_refused_table },
	{ "access", XKV_STAT_tcpx_refused_acl },
};
#define XKV_TCPX_REFUSALS (sizeof(tcpx_refusals) / sizeof(tcpx_refusals[0]))

static const struct xo status_table[] = {
	{ "IFACE", 0, XO_IFACE, offsetof(struct status_opts, ifc), NULL,
	  "interface to show (default: every interface with pins)", .flags = XO_POS | XO_IF_ANY },
	{ "json", 'j', XO_BOOL, offsetof(struct status_opts, json), NULL,
	  "print one JSON object for scripts" },
	{ "percpu", 0, XO_BOOL, offsetof(struct status_opts, percpu), NULL,
	  "also show the fast path's counters per CPU" },
	{ "prometheus", 0, XO_BOOL, offsetof(struct status_opts, prometheus), NULL,
	  "print metrics in the Prometheus text format (node_exporter's textfile collector)" },
	XO_END,
};

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

static const char *map_type_str(__u32 t)
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

static int collect(struct status *st, const char *ifname, bool percpu)
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

/* What the access rules refused, both paths summed (docs/security.md). */
static const struct {
	enum xkv_stat stat;
	const char *what, *key;
} refusals[] = {
	{ XKV_STAT_drop_acl, "not allowed", "not_allowed" },
	{ XKV_STAT_drop_write_acl, "writes", "writes" },
	{ XKV_STAT_drop_src, "source address", "source_address" },
	{ XKV_STAT_drop_port, "source port", "source_port" },
	{ XKV_STAT_drop_ratelimit, "rate", "rate" },
	{ XKV_STAT_drop_reply, "reply-shaped", "reply_shaped" },
	{ XKV_STAT_drop_frame, "frame header", "frame_header" },
	{ XKV_STAT_drop_amp, "amplification", "amplification" },
};

static unsigned long long both(const struct status *st, int i)
{
	return st->fast.v[i] + st->slow.v[i];
}

static void release(struct status *st)
{
	xkv_store_close(&st->s);
	free(st->cpu);
	st->cpu = NULL;
}

static double pct(unsigned long long part, unsigned long long whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static bool is_lru(const struct status *st)
{
	return xkv_map_lru(st->s.L->map_type);
}

/* ---- text ---- */

static void print_counters(const struct status *st, bool percpu)
{
	int ncpu = percpu ? st->s.ncpus : 0;

	printf("\n  %-15s %12s %12s", "counter", "fast path", "slow path");
	for (int c = 0; c < ncpu; c++) {
		char h[16];
		snprintf(h, sizeof(h), "cpu%d", c);
		printf(" %12s", h);
	}
	printf("   meaning\n");
	for (int i = 0; i < XKV_STAT__MAX; i++) {
		printf("  %-15s %12llu %12llu", xkv_stat_names[i], (unsigned long long)st->fast.v[i],
		       (unsigned long long)st->slow.v[i]);
		for (int c = 0; c < ncpu; c++)
			printf(" %12llu", (unsigned long long)st->cpu[c].v[i]);
		printf("   %s\n", xkv_stat_help[i]);
	}
}

static void print_text(const struct status *st, bool percpu)
{
	const struct xkv_config *c = &st->s.cfg;
	unsigned long long total = st->fast_reqs + st->slow_reqs;

	printf("%s: %s (%s), %s mode, UDP port %u\n", st->ifname, c->layout,
	       map_type_str(st->s.L->map_type), xkv_mode_name(c->mode), c->port);
	if (st->attached)
		printf("  %-14s attached, program id %u, %s\n", "program", st->prog_id,
		       st->legacy ? "single program" : "under libxdp's dispatcher");
	else if (st->ifindex)
		printf("  %-14s NOT attached to %s: stale pins ('xdpkv detach %s' removes them)\n",
		       "program", st->ifname, st->ifname);
	else
		printf("  %-14s interface %s is not in this network namespace (run status there)\n",
		       "program", st->ifname);
	printf("  %-14s %u entries, keys <= %u B, values <= %u B (map key %u B, value %u B)%s%s%s\n",
	       "capacity", c->entries, c->key_cap, c->val_cap, c->key_size, c->entry_size,
	       c->flags & XKV_CFG_NO_PREALLOC ? ", no prealloc" : "",
	       c->flags & XKV_CFG_NO_COMMON_LRU ? ", no common LRU (an LRU list per CPU)" : "",
	       c->flags & XKV_CFG_BINARY_KEYS ? ", binary keys" : "");
	if (st->s.L->hash_seeded)
		printf("  %-14s %s\n", "placement", c->hash_seed ?
		       "keyed hash (SipHash-1-3, secret seed set at attach)" :
		       "unseeded FNV-1a (BMC's): clients can compute which keys collide");
	if (st->big_chunks >= 0)
		printf("  %-14s up to 1 MiB: %ld of %u chunks in use, %u B of value each (--big-memory %u MiB)\n",
		       "large values", st->big_chunks, st->big_max, XKV_BIG_CHUNK,
		       (unsigned)(((__u64)st->big_max * XKV_BIG_ELEM) >> 20));
	else
		printf("  %-14s none above --value-size (--no-big-values)\n", "large values");
	if (st->live >= 0)
		printf("  %-14s %ld (%.1f%% of capacity)\n", "live items", st->live,
		       pct((unsigned long long)st->live, c->entries));
	else
		printf("  %-14s unknown (%s)\n", "live items", strerror((int)-st->live));
	if (st->mem >= 0) {
		printf("  %-14s %lld B = %.1f MiB (kernel's figure): %.1f B per entry of capacity",
		       "map memory", st->mem, st->mem / 1048576.0, (double)st->mem / c->entries);
		if (st->live > 0)
			printf(", %.1f B per live item", (double)st->mem / (double)st->live);
		printf("\n");
	} else {
		printf("  %-14s unknown\n", "map memory");
	}
	printf("  %-14s %llu served: fast path %llu (%.1f%%), slow path %llu (%.1f%%)\n", "requests",
	       total, st->fast_reqs, pct(st->fast_reqs, total), st->slow_reqs,
	       pct(st->slow_reqs, total));
	printf("  %-14s fast = datagrams XDP saw minus those it passed on (%llu); slow = datagrams "
	       "the slow path read\n", "", st->passed);
	printf("  %-14s", "refused");
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		printf("%s %s %llu", i ? "," : "", refusals[i].what, both(st, refusals[i].stat));
	printf("\n  %-14s (no reply to any of these: docs/security.md); capped replies %llu\n", "",
	       both(st, XKV_STAT_amp_capped));
	unsigned long long tk = st->fast.v[XKV_STAT_tcp_fast], tu = st->slow.v[XKV_STAT_tcp_slow];
	unsigned long long tx = st->fast.v[XKV_STAT_tcpx_answered], tt = tk + tu + tx;
	printf("  %-14s in XDP: %llu of %llu requests (%.1f%%), in the kernel: %llu (%.1f%%), userspace %llu; %s\n",
	       "TCP", tx, tt, pct(tx, tt), tk, pct(tk, tt), tu,
	       !(c->flags & XKV_CFG_NO_XDP_TCP) ? "XDP responder on (sk_skb verdict off)" :
	       c->flags & XKV_CFG_NO_TCP_FAST ? "XDP responder and fast path off" : "sk_skb verdict on (--no-xdp-tcp)");
	if (!(c->flags & XKV_CFG_NO_XDP_TCP)) {
		printf("  %-14s", "TCP in XDP");
		printf(" sent again %llu, repeats dropped %llu; not answered:", st->fast.v[XKV_STAT_tcpx_replayed],
		       st->fast.v[XKV_STAT_tcpx_dup_dropped]);
		for (size_t i = 0; i < XKV_TCPX_REFUSALS; i++)
			printf("%s %s %llu", i ? "," : "", tcpx_refusals[i].what, st->fast.v[tcpx_refusals[i].stat]);
		printf("\n");
	}
	if (is_lru(st))
		printf("  %-14s %lld (estimated: new items - deletes - live items)\n", "lru evictions",
		       st->evict_est);
	int hf = xkv_host_flags(&st->s, 0, 0);
	if (hf > 0 && (hf & XKV_HOST_MIGRATING))
		printf("  %-14s MIGRATING: 'xdpkv migrate' is running (writes pass to the slow path, "
		       "which applies them to the old and the new store), or was killed while it ran "
		       "without a slow path (the next migrate clears it)\n", "writes");
	else if (hf > 0 && (hf & XKV_HOST_PAUSE_WRITES))
		printf("  %-14s PAUSED: 'snapshot --pause-writes' is running, or was killed while it ran "
		       "(writes get SERVER_ERROR; run a snapshot with --pause-writes to clear it)\n",
		       "writes");
	if (hf > 0 && (hf & XKV_HOST_AUTH))
		printf("  %-14s SASL required ('serve --sasl-pwdb'): XDP and the kernel's TCP path answer "
		       "nobody; every client authenticates over binary TCP first (docs/security.md)\n",
		       "auth");
	print_counters(st, percpu);
}

/* ---- JSON ---- */

static void json_refused(const struct status *st)
{
	printf(",\"refused\":{");
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		printf("%s\"%s\":%llu", i ? "," : "", refusals[i].key, both(st, refusals[i].stat));
	printf(",\"amp_capped\":%llu}", both(st, XKV_STAT_amp_capped));
}

static void json_counters(const struct xkv_stats *v)
{
	printf("{");
	for (int i = 0; i < XKV_STAT__MAX; i++)
		printf("%s\"%s\":%llu", i ? "," : "", xkv_stat_names[i], (unsigned long long)v->v[i]);
	printf("}");
}

static void print_json(const struct status *st, bool percpu)
{
	const struct xkv_config *c = &st->s.cfg;
	unsigned long long total = st->fast_reqs + st->slow_reqs;

	printf("{\"iface\":");
	json_cstr(stdout, st->ifname);
	printf(",\"ifindex\":%d,\"attached\":%s,\"prog_id\":%u,\"attach_path\":\"%s\"", st->ifindex,
	       st->attached ? "true" : "false", st->attached ? st->prog_id : 0,
	       !st->attached ? "none" : st->legacy ? "single" : "dispatcher");
	printf(",\"layout\":\"%s\",\"map_type\":\"%s\",\"mode\":\"%s\",\"port\":%u", st->s.L->name,
	       map_type_str(st->s.L->map_type), xkv_mode_name(c->mode), c->port);
	printf(",\"entries\":%u,\"key_cap\":%u,\"val_cap\":%u,\"key_size\":%u,\"entry_size\":%u",
	       c->entries, c->key_cap, c->val_cap, c->key_size, c->entry_size);
	printf(",\"no_prealloc\":%s,\"no_common_lru\":%s,\"binary_keys\":%s,\"live\":%ld,\"map_memory\":%lld",
	       c->flags & XKV_CFG_NO_PREALLOC ? "true" : "false",
	       c->flags & XKV_CFG_NO_COMMON_LRU ? "true" : "false",
	       c->flags & XKV_CFG_BINARY_KEYS ? "true" : "false", st->live, st->mem);
	if (st->big_chunks >= 0)
		printf(",\"big\":{\"chunks\":%ld,\"chunks_max\":%u,\"chunk_bytes\":%u}", st->big_chunks,
		       st->big_max, XKV_BIG_CHUNK);
	else
		printf(",\"big\":null");
	printf(",\"placement\":%s", !st->s.L->hash_seeded ? "null" :
	       c->hash_seed ? "\"keyed\"" : "\"fnv1a-unseeded\"");
	printf(",\"bytes_per_entry\":%.2f", st->mem >= 0 ? (double)st->mem / c->entries : -1.0);
	if (st->live > 0 && st->mem >= 0)
		printf(",\"bytes_per_item\":%.2f", (double)st->mem / (double)st->live);
	else
		printf(",\"bytes_per_item\":null");
	printf(",\"requests\":{\"fast\":%llu,\"slow\":%llu,\"total\":%llu,\"passed\":%llu"
	       ",\"fast_share\":%.4f,\"slow_share\":%.4f}",
	       st->fast_reqs, st->slow_reqs, total, st->passed,
	       total ? (double)st->fast_reqs / total : 0.0, total ? (double)st->slow_reqs / total : 0.0);
	unsigned long long tk = st->fast.v[XKV_STAT_tcp_fast], tu = st->slow.v[XKV_STAT_tcp_slow];
	unsigned long long tx = st->fast.v[XKV_STAT_tcpx_answered], tt = tk + tu + tx;
	printf(",\"tcp\":{\"fast_path\":%s,\"xdp_responder\":%s,\"xdp\":%llu,\"kernel\":%llu"
	       ",\"userspace\":%llu,\"total\":%llu,\"xdp_share\":%.4f,\"kernel_share\":%.4f"
	       ",\"passed_segments\":%llu,\"xdp_sent_again\":%llu,\"xdp_repeats_dropped\":%llu"
	       ",\"xdp_not_answered\":{",
	       c->flags & XKV_CFG_NO_TCP_FAST ? "false" : "true",
	       c->flags & XKV_CFG_NO_XDP_TCP ? "false" : "true", tx, tk, tu, tt,
	       tt ? (double)tx / (double)tt : 0.0, tt ? (double)tk / (double)tt : 0.0,
	       st->fast.v[XKV_STAT_tcp_pass], st->fast.v[XKV_STAT_tcpx_replayed],
	       st->fast.v[XKV_STAT_tcpx_dup_dropped]);
	for (size_t i = 0; i < XKV_TCPX_REFUSALS; i++)
		printf("%s\"%s\":%llu", i ? "," : "", tcpx_refusals[i].what, st->fast.v[tcpx_refusals[i].stat]);
	printf("}}");
	json_refused(st);
	int hf = xkv_host_flags(&st->s, 0, 0);
	printf(",\"writes_paused\":%s,\"migrating\":%s,\"sasl_required\":%s",
	       hf > 0 && (hf & XKV_HOST_PAUSE_WRITES) ? "true" : "false",
	       hf > 0 && (hf & XKV_HOST_MIGRATING) ? "true" : "false",
	       hf > 0 && (hf & XKV_HOST_AUTH) ? "true" : "false");
	if (is_lru(st))
		printf(",\"evictions_estimated\":%lld", st->evict_est);
	printf(",\"counters\":{\"fast\":");
	json_counters(&st->fast);
	printf(",\"slow\":");
	json_counters(&st->slow);
	printf("}");
	if (percpu) {
		printf(",\"percpu\":[");
		for (int i = 0; i < st->s.ncpus; i++) {
			printf(i ? "," : "");
			json_counters(&st->cpu[i]);
		}
		printf("]");
	}
	printf("}");
}

/* ---- Prometheus text format (docs/cli.md "status --prometheus") ----
 * One family at a time, over every interface shown: a family's HELP and TYPE
 * come once, before all of its samples. */

static void prom_label_value(const char *v)
{
	putchar('"');
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			printf("\\%c", *v);
		else if (*v == '\n')
			printf("\\n");
		else
			putchar(*v);
	}
	putchar('"');
}

/* name{iface="...",layout="..."[,extra]} value */
static void prom_sample(const struct status *st, const char *name, const char *extra,
			unsigned long long v)
{
	printf("%s{iface=", name);
	prom_label_value(st->ifname);
	printf(",layout=");
	prom_label_value(st->s.L->name);
	printf("%s%s} %llu\n", extra ? "," : "", extra ? extra : "", v);
}

static void prom_requests(const struct status *st, const char *n)
{
	prom_sample(st, n, "path=\"fast\"", st->fast_reqs);
	prom_sample(st, n, "path=\"slow\"", st->slow_reqs);
}

static void prom_passed(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, st->passed);
}

static void prom_get_hits(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, both(st, XKV_STAT_get_hits));
}

static void prom_get_misses(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, both(st, XKV_STAT_get_misses));
}

static void prom_refused(const struct status *st, const char *n)
{
	char l[64];
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", refusals[i].key);
		prom_sample(st, n, l, both(st, refusals[i].stat));
	}
}

static void prom_amp_capped(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, both(st, XKV_STAT_amp_capped));
}

static void prom_items(const struct status *st, const char *n)
{
	if (st->live >= 0)
		prom_sample(st, n, NULL, (unsigned long long)st->live);
}

static void prom_capacity(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, st->s.cfg.entries);
}

static void prom_memory(const struct status *st, const char *n)
{
	if (st->mem >= 0)
		prom_sample(st, n, NULL, (unsigned long long)st->mem);
}

static void prom_evictions(const struct status *st, const char *n)
{
	if (is_lru(st))
		prom_sample(st, n, NULL, (unsigned long long)st->evict_est);
}

static void prom_attached(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, st->attached);
}

static void prom_info(const struct status *st, const char *n)
{
	char l[128];
	snprintf(l, sizeof(l), "map_type=\"%s\",mode=\"%s\",version=\"%s\"",
		 map_type_str(st->s.L->map_type), xkv_mode_name(st->s.cfg.mode), XKV_VERSION);
	prom_sample(st, n, l, 1);
}

static void prom_counters(const struct status *st, const char *n)
{
	char l[96];
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < XKV_STAT__MAX; i++) {
			snprintf(l, sizeof(l), "path=\"%s\",counter=\"%s\"", p ? "slow" : "fast",
				 xkv_stat_names[i]);
			prom_sample(st, n, l, (p ? st->slow.v[i] : st->fast.v[i]));
		}
}

static void prom_tcp(const struct status *st, const char *n)
{
	prom_sample(st, n, "path=\"xdp\"", st->fast.v[XKV_STAT_tcpx_answered]);
	prom_sample(st, n, "path=\"kernel\"", st->fast.v[XKV_STAT_tcp_fast]);
	prom_sample(st, n, "path=\"userspace\"", st->slow.v[XKV_STAT_tcp_slow]);
}

/* memcached_exporter's names, where xdpkv counts the same thing */
static void prom_mc_commands(const struct status *st, const char *n)
{
	prom_sample(st, n, "command=\"get\",status=\"hit\"", both(st, XKV_STAT_get_hits));
	prom_sample(st, n, "command=\"get\",status=\"miss\"", both(st, XKV_STAT_get_misses));
	prom_sample(st, n, "command=\"set\",status=\"hit\"", both(st, XKV_STAT_stores));
	prom_sample(st, n, "command=\"delete\",status=\"hit\"", both(st, XKV_STAT_deletes));
	prom_sample(st, n, "command=\"delete\",status=\"miss\"", both(st, XKV_STAT_delete_misses));
}

static const struct {
	const char *name, *type, *help;
	void (*emit)(const struct status *st, const char *name);
} prom_families[] = {
	{ "xdpkv_info", "gauge", "Always 1; labels: the store's map type, XDP mode and the xdpkv version.", prom_info },
	{ "xdpkv_attached", "gauge", "1 if the xdpkv program is attached to the interface, 0 for stale pins.", prom_attached },
	{ "xdpkv_requests_total", "counter", "Requests served, by path: fast = datagrams XDP saw minus those it passed on, slow = datagrams the slow path read.", prom_requests },
	{ "xdpkv_tcp_requests_total", "counter", "TCP requests served, by path: xdp = the driver hook (sequence translation), kernel = the sk_skb verdict, userspace = xdpkv serve.", prom_tcp },
	{ "xdpkv_passed_total", "counter", "Datagrams the XDP program passed on to the kernel (pass_* counters).", prom_passed },
	{ "xdpkv_get_hits_total", "counter", "Keys found by get, both paths.", prom_get_hits },
	{ "xdpkv_get_misses_total", "counter", "Keys not found (or expired) by get, both paths.", prom_get_misses },
	{ "xdpkv_refused_total", "counter", "Requests refused by the access rules, both paths, by reason (docs/security.md).", prom_refused },
	{ "xdpkv_amp_capped_total", "counter", "Replies cut to SERVER_ERROR by --max-amplification, both paths.", prom_amp_capped },
	{ "xdpkv_curr_items", "gauge", "Live items in the store.", prom_items },
	{ "xdpkv_capacity_items", "gauge", "Store capacity in items (attach --entries).", prom_capacity },
	{ "xdpkv_map_memory_bytes", "gauge", "The kernel's memory figure for the store map.", prom_memory },
	{ "xdpkv_evictions_estimated", "gauge", "lru layouts: evictions, estimated as new items - deletes - live items.", prom_evictions },
	{ "xdpkv_counter_total", "counter", "Every raw counter of common/stats.h, by path (xdpkv status shows their meaning).", prom_counters },
	{ "memcached_current_items", "gauge", "Current number of items stored (memcached_exporter's name).", prom_items },
	{ "memcached_commands_total", "counter", "Commands by command and status, both paths (memcached_exporter's name; get counts keys).", prom_mc_commands },
};

static void print_prometheus(const struct status *sts, int n)
{
	for (size_t f = 0; f < sizeof(prom_families) / sizeof(prom_families[0]); f++) {
		printf("# HELP %s %s\n# TYPE %s %s\n", prom_families[f].name, prom_families[f].help,
		       prom_families[f].name, prom_families[f].type);
		for (int i = 0; i < n; i++)
			prom_families[f].emit(&sts[i], prom_families[f].name);
	}
}

/* ---- every attached interface ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the directories under XKV_PIN_ROOT, sorted; *n receives the count. */
static char **pinned_ifaces(int *n)
{
	DIR *d = opendir(XKV_PIN_ROOT);
	char **names = NULL;
	struct dirent *de;
	int cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			char **nn = realloc(names, cap * sizeof(*names));
			if (!nn)
				break;
			names = nn;
		}
		if (!(names[*n] = strdup(de->d_name)))
			break;
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(names, *n, sizeof(*names), cmp_str);
	return names;
}

static int show_one(const char *ifname, const struct status_opts *o, bool first)
{
	struct status st = {};
	int rc = collect(&st, ifname, o->percpu);

	if (!rc) {
		if (o->json) {
			printf(first ? "" : ",");
			print_json(&st, o->percpu);
		} else {
			printf(first ? "" : "\n");
			print_text(&st, o->percpu);
		}
	}
	release(&st);
	return rc;
}

/* --prometheus: every interface collected first (a family's samples come together) */
static int run_prometheus(char *const *names, int n)
{
	struct status *sts = calloc(n ? n : 1, sizeof(*sts));
	int rc = 0, shown = 0;

	if (!sts)
		return EXIT_SYS;
	for (int i = 0; i < n; i++) {
		int r = collect(&sts[shown], names[i], false);
		if (r) {
			rc = r;
			release(&sts[shown]);
			memset(&sts[shown], 0, sizeof(sts[shown]));
		} else {
			shown++;
		}
	}
	print_prometheus(sts, shown);
	for (int i = 0; i < shown; i++)
		release(&sts[i]);
	free(sts);
	return rc;
}

static int run_status(void *vo, const struct global_opts *g)
{
	struct status_opts *o = vo;
	int n, rc = 0, shown = 0;

	if (o->prometheus && (o->json || o->percpu)) {
		xerr("status: --prometheus goes alone (not with --json or --percpu)");
		return EXIT_USAGE;
	}
	if (o->ifc.name[0]) {
		if (o->prometheus) {
			char *one = o->ifc.name;
			return run_prometheus(&one, 1);
		}
		rc = show_one(o->ifc.name, o, true);
		if (!rc && o->json)
			printf("\n");
		return rc;
	}
	char **names = pinned_ifaces(&n);
	if (o->prometheus)
		rc = run_prometheus(names, n);
	else if (o->json)
		printf("{\"interfaces\":[");
	for (int i = 0; i < n; i++) {
		int r = o->prometheus ? 0 : show_one(names[i], o, shown == 0);
		if (r)
			rc = r;
		else
			shown++;
		free(names[i]);
	}
	free(names);
	if (o->json)
		printf("]}\n");
	else if (!n && !o->prometheus)
		printf("xdpkv is not attached anywhere (no pins under %s)\n", XKV_PIN_ROOT);
	if (!n && bpffs_hidden())
		xhint("this process sees another /sys/fs/bpf than the system's ('ip netns exec' "
		      "remounts /sys): use 'nsenter --net=/run/netns/NAME xdpkv status'");
	return rc;
}

const struct cmd cmd_status = {
	.name = "status",
	.synopsis = "[IFACE] [--json] [--percpu] [--prometheus]",
	.summary = "show layout, fill, memory and counters of attached stores",
	.doc = "For IFACE, or every interface with pins in /sys/fs/bpf/xdpkv: the layout and its\n"
	       "limits, live items, the kernel's memory figure for the store map, and the counters\n"
	       "of both paths.  'fast path' requests are datagrams the XDP program saw minus those it\n"
	       "passed on (pass_*); 'slow path' requests are datagrams the slow path read.\n"
	       "--json prints one object (with IFACE) or {\"interfaces\":[...]} (without).\n"
	       "--prometheus prints the Prometheus text format (HELP and TYPE once per metric, labels\n"
	       "iface and layout; memcached_exporter's names too where a counter means the same), for\n"
	       "node_exporter's textfile collector; docs/cli.md lists the metrics.\n\n"
	       "Example: xdpkv status veth0 --json\n"
	       "         xdpkv status --prometheus > /var/lib/node_exporter/xdpkv.prom.$$ &&\n"
	       "           mv /var/lib/node_exporter/xdpkv.prom.$$ /var/lib/node_exporter/xdpkv.prom",
	.opts = status_table,
	.opts_size = sizeof(struct status_opts),
	.run = run_status,
};

/* ---- layouts ---- */

struct layouts_opts {
	bool json;
};

static const struct xo layouts_table[] = {
	{ "json", 'j', XO_BOOL, offsetof(struct layouts_opts, json), NULL, "print JSON" },
	XO_END,
};

static int run_layouts(void *vo, const struct global_opts *g)
{
	struct layouts_opts *o = vo;

	/* what this kernel allows: known only to root (a map is created) */
	bool probe = geteuid() == 0;
	char why[200];
	if (o->json) {
		printf("[");
		for (int i = 0; xkv_layouts[i]; i++) {
			const struct xkv_layout *L = xkv_layouts[i];
			printf("%s{\"name\":", i ? "," : "");
			json_cstr(stdout, L->name);
			printf(",\"map_type\":\"%s\",\"summary\":", map_type_str(L->map_type));
			json_cstr(stdout, L->summary ? L->summary : "");
			printf(",\"loses\":");
			json_cstr(stdout, L->loses ? L->loses : "");
			int av = probe ? xkv_layout_probe(L, why, sizeof(why)) : -1;
			printf(",\"available\":%s", av < 0 ? "null" : av ? "true" : "false");
			if (av == 0) {
				printf(",\"unavailable_reason\":");
				json_cstr(stdout, why);
			}
			printf("}");
		}
		printf("]\n");
		return EXIT_OK;
	}
	printf("%-10s %-16s %s\n", "LAYOUT", "MAP TYPE", "SUMMARY / WHAT IT GIVES UP");
	for (int i = 0; xkv_layouts[i]; i++) {
		const struct xkv_layout *L = xkv_layouts[i];
		printf("%-10s %-16s %s\n", L->name, map_type_str(L->map_type), L->summary ? L->summary : "");
		printf("%-10s %-16s loses: %s\n", "", "", L->loses ? L->loses : "-");
		if (probe && xkv_layout_probe(L, why, sizeof(why)) == 0)
			printf("%-10s %-16s NOT AVAILABLE here: %s\n", "", "", why);
	}
	if (!probe)
		printf("\n(run as root to see which layouts this kernel allows)\n");
	printf("\nChoose one with: xdpkv --layout NAME attach IFACE (--variant: the same)\n");
	printf("'xdpkv verify --all' loads every layout's programs and shows the verifier's cost.\n");
	printf("Benchmarks only: --layout null attaches the handler with no map, a floor that\n"
	       "answers every get with one fixed value and drops sets (bench/README.md).\n");
	return EXIT_OK;
}

const struct cmd cmd_layouts = {
	.name = "layouts",
	.synopsis = "[--json]",
	.summary = "list the storage layouts (--layout names)",
	.doc = "Example: xdpkv layouts",
	.opts = layouts_table,
	.opts_size = sizeof(struct layouts_opts),
	.run = run_layouts,
};
