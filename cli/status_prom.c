// SPDX-License-Identifier: MIT
/* status --prometheus: the Prometheus text format for node_exporter's
 * textfile collector (docs/cli.md, "status --prometheus"). */
#include <stdlib.h>
#include <string.h>
#include "status.h"

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
	for (size_t i = 0; i < n_refusals; i++) {
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

static void prom_tcp(const struct status *st, const char *n)
{
	prom_sample(st, n, "path=\"xdp\"", st->fast.v[XKV_STAT_tcpx_answered]);
	prom_sample(st, n, "path=\"kernel\"", st->fast.v[XKV_STAT_tcp_fast]);
	prom_sample(st, n, "path=\"userspace\"", st->slow.v[XKV_STAT_tcp_slow]);
}

/* ---- memcached_exporter's names, types and labels, for what xdpkv has ---- */

/* Bytes in the same unit as limit_maxbytes (and the TCP 'stats'): a live
 * item holds one map value of entry_size bytes. */
static void prom_current_bytes(const struct status *st, const char *n)
{
	if (st->live >= 0)
		prom_sample(st, n, NULL, (unsigned long long)st->live * st->s.cfg.entry_size);
}

static void prom_limit_bytes(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, (unsigned long long)st->s.cfg.entries * st->s.cfg.entry_size);
}

/* stores over another live key where the layout counts them (overwrites:
 * array_fnv, set_assoc, arena); lru layouts: the estimate */
static void prom_evicted(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, both(st, XKV_STAT_overwrites) +
		    (is_lru(st) ? (unsigned long long)st->evict_est : 0));
}

/* Established TCP connections to the store's port in this network
 * namespace (the kernel's sockets: answered by serve or the fast paths). */
static long tcp_conns(unsigned port)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512];
	long n = 0;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		FILE *in = fopen(files[f], "r");
		if (!in)
			continue;
		while (fgets(line, sizeof(line), in)) {
			unsigned lport, state;
			/* "  0: 0100007F:2BCB 0100007F:C350 01 ..." */
			if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", &lport, &state) == 2 &&
			    lport == port && state == 1)
				n++;
		}
		fclose(in);
	}
	return n;
}

static void prom_connections(const struct status *st, const char *n)
{
	prom_sample(st, n, NULL, (unsigned long long)tcp_conns(st->s.cfg.port));
}

/* memcached_exporter's command/status pairs, where xdpkv counts the same thing */
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
	{ "memcached_up", "gauge", "Could the memcached server be reached: 1 while the xdpkv program is attached.", prom_attached },
	{ "memcached_current_bytes", "gauge", "Current number of bytes used to store items: live items x the map's value size.", prom_current_bytes },
	{ "memcached_limit_bytes", "gauge", "Number of bytes this server is allowed to use for storage: entries x the map's value size.", prom_limit_bytes },
	{ "memcached_current_items", "gauge", "Current number of items stored by this instance.", prom_items },
	{ "memcached_items_evicted_total", "counter", "Valid items removed to make room for new ones: exact where the layout counts them (overwrites), estimated for the lru layouts.", prom_evicted },
	{ "memcached_current_connections", "gauge", "Current number of open connections: established TCP connections to the store's port in this network namespace.", prom_connections },
	{ "memcached_commands_total", "counter", "Total number of all requests broken down by command (get, set, etc.) and status; both paths, get counts keys.", prom_mc_commands },
};

/* The counters of common/stats.h that no family above exports: one family
 * each, xdpkv_stat_NAME_total{path}. */
static bool exported_above(int i)
{
	static const int above[] = {
		XKV_STAT_get_hits, XKV_STAT_get_misses, XKV_STAT_amp_capped, XKV_STAT_stores,
		XKV_STAT_deletes, XKV_STAT_delete_misses, XKV_STAT_overwrites, XKV_STAT_evictions_est,
		XKV_STAT_tcp_fast, XKV_STAT_tcp_slow, XKV_STAT_tcpx_answered,
	};
	for (size_t k = 0; k < sizeof(above) / sizeof(above[0]); k++)
		if (above[k] == i)
			return true;
	for (size_t k = 0; k < n_refusals; k++)
		if ((int)refusals[k].stat == i)
			return true;
	return false;
}

static void print_prometheus(const struct status *sts, int n)
{
	for (size_t f = 0; f < sizeof(prom_families) / sizeof(prom_families[0]); f++) {
		printf("# HELP %s %s\n# TYPE %s %s\n", prom_families[f].name, prom_families[f].help,
		       prom_families[f].name, prom_families[f].type);
		for (int i = 0; i < n; i++)
			prom_families[f].emit(&sts[i], prom_families[f].name);
	}
	for (int c = 0; c < XKV_STAT__MAX; c++) {
		if (exported_above(c))
			continue;
		char name[96];
		snprintf(name, sizeof(name), "xdpkv_stat_%s_total", xkv_stat_names[c]);
		printf("# HELP %s %s, by path.\n# TYPE %s counter\n", name, xkv_stat_help[c], name);
		for (int i = 0; i < n; i++) {
			prom_sample(&sts[i], name, "path=\"fast\"", sts[i].fast.v[c]);
			prom_sample(&sts[i], name, "path=\"slow\"", sts[i].slow.v[c]);
		}
	}
}

/* --prometheus: every interface collected first (a family's samples come together) */
int run_prometheus(char *const *names, int n)
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
	if (shown || !rc) /* nothing at all when the one interface asked for failed */
		print_prometheus(sts, shown);
	for (int i = 0; i < shown; i++)
		release(&sts[i]);
	free(sts);
	return rc;
}

