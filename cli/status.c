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
#include "status.h"

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


static double pct(unsigned long long part, unsigned long long whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
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
	       c->flags & XKV_CFG_BINARY_KEYS ? "" : ", strict keys (no control bytes)");
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
	for (size_t i = 0; i < n_refusals; i++)
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
		printf(" segments of several requests %llu, replies on the kernel's ACK %llu (their segment "
		       "reached the TCP stack), sent again %llu, repeats dropped %llu, ACKs of them absorbed %llu, "
		       "cut requests held %llu (sent alone for want of room before the next segment %llu, "
		       "a next segment dropped %llu); not answered:",
		       st->fast.v[XKV_STAT_tcpx_pipelined], st->fast.v[XKV_STAT_tcpx_on_ack],
		       st->fast.v[XKV_STAT_tcpx_replayed], st->fast.v[XKV_STAT_tcpx_dup_dropped],
		       st->fast.v[XKV_STAT_tcpx_acks_absorbed], st->fast.v[XKV_STAT_tcpx_held],
		       st->fast.v[XKV_STAT_tcpx_held_alone], st->fast.v[XKV_STAT_tcpx_held_dropped]);
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
	for (size_t i = 0; i < n_refusals; i++)
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
	       ",\"xdp_pipelined_segments\":%llu,\"xdp_replies_on_kernel_ack\":%llu"
	       ",\"xdp_acks_absorbed\":%llu,\"xdp_cut_held\":%llu,\"xdp_held_alone\":%llu"
	       ",\"xdp_held_dropped\":%llu"
	       ",\"xdp_not_answered\":{",
	       c->flags & XKV_CFG_NO_TCP_FAST ? "false" : "true",
	       c->flags & XKV_CFG_NO_XDP_TCP ? "false" : "true", tx, tk, tu, tt,
	       tt ? (double)tx / (double)tt : 0.0, tt ? (double)tk / (double)tt : 0.0,
	       st->fast.v[XKV_STAT_tcp_pass], st->fast.v[XKV_STAT_tcpx_replayed],
	       st->fast.v[XKV_STAT_tcpx_dup_dropped], st->fast.v[XKV_STAT_tcpx_pipelined],
	       st->fast.v[XKV_STAT_tcpx_on_ack], st->fast.v[XKV_STAT_tcpx_acks_absorbed],
	       st->fast.v[XKV_STAT_tcpx_held], st->fast.v[XKV_STAT_tcpx_held_alone],
	       st->fast.v[XKV_STAT_tcpx_held_dropped]);
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
	/* bpffs is one for every network namespace: the pins of interfaces
	 * that are not here (another namespace's, or removed) are left out of
	 * the list, and named at its end */
	int here = 0, away = 0;
	char away_list[256] = "";
	for (int i = 0; i < n; i++) {
		if (if_nametoindex(names[i])) {
			names[here++] = names[i];
			continue;
		}
		size_t l = strlen(away_list);
		if (l + strlen(names[i]) + 2 < sizeof(away_list))
			snprintf(away_list + l, sizeof(away_list) - l, " %s", names[i]);
		away++;
		free(names[i]);
	}
	n = here;
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
		printf("xdpkv is not attached to an interface of this network namespace (no pins under "
		       "%s)\n", XKV_PIN_ROOT);
	if (away && !o->json && !o->prometheus)
		printf("%s%d more stores pinned for interfaces not in this network namespace (another "
		       "namespace's, or removed):%s; 'xdpkv status IFACE' there, or 'xdpkv detach "
		       "IFACE' for a removed one\n", n ? "\n" : "", away, away_list);
	if (!n && !away && bpffs_hidden())
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
