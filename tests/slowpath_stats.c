// SPDX-License-Identifier: MIT
/* Slow path tests: the counters and the stats reply. */
#include "slowpath_test.h"

/* Every line is "STAT <name> <value>\r\n", the last "END\r\n". */
static int stats_well_formed(const struct xkv_buf *b)
{
	size_t i = 0;
	while (i < b->len) {
		const __u8 *nl = memchr(b->p + i, '\n', b->len - i);
		if (!nl)
			return 0;
		size_t ll = (size_t)(nl - (b->p + i)) + 1;
		if (ll == 5 && !memcmp(b->p + i, "END\r\n", 5))
			return i + 5 == b->len;
		int spaces = 0;
		for (size_t k = 0; k < ll - 2; k++)
			spaces += b->p[i + k] == ' ';
		if (ll < 9 || memcmp(b->p + i, "STAT ", 5) || b->p[i + ll - 2] != '\r' || spaces != 2)
			return 0;
		i += ll;
	}
	return 0;
}

void t_stats(struct env *e)
{
	struct xkv_buf out = {};
	struct xkv_stats *rows = calloc(e->s.ncpus, sizeof(*rows)), slow_map;
	__u32 slot = XKV_STATS_FAST;
	char v[128], want[128];

	flush_store(e);
	/* the fast path's slot: 400 seen over the CPUs, 100 passed on */
	rows[0].v[XKV_STAT_requests] = 300;
	rows[0].v[XKV_STAT_pass_cmd] = 60;
	rows[0].v[XKV_STAT_get_hits] = 1000;
	rows[e->s.ncpus - 1].v[XKV_STAT_requests] += 100;
	rows[e->s.ncpus - 1].v[XKV_STAT_pass_room] = 40;
	if (bpf_map_update_elem(e->s.stats_fd, &slot, rows, BPF_ANY))
		report(0, "%s: write the fast slot: %s", e->layout, strerror(errno));
	/* the slow slot: what earlier tests counted, pushed, plus a pending delta */
	if (xkv_stats_slow_add(&e->s, &e->delta))
		report(0, "%s: xkv_stats_slow_add", e->layout);
	memset(&e->delta, 0, sizeof(e->delta));
	const char *setup = "set s1 0 0 1\r\n1\r\nset s2 0 0 1\r\n2\r\nget s1 s3\r\n";
	ask(e, setup, strlen(setup), &out);
	xkv_slow_count_refresh(e->sl); /* stats answers curr_items from the cached count */
	xkv_stats_read(&e->s, XKV_STATS_SLOW, &slow_map, NULL);
	struct xkv_stats pending = e->delta;

	int ret = ask(e, "stats\r\n", 7, &out);
	report(ret == 1 && stats_well_formed(&out), "%s: stats reply is STAT lines then END", e->layout);

	/* the stats command counts itself before answering */
	pending.v[XKV_STAT_requests]++;
	pending.v[XKV_STAT_cmd_other]++;
	int ok = 1;
	for (int i = 0; i < XKV_STAT__MAX; i++) {
		__u64 w = slow_map.v[i] + pending.v[i];
		for (int c = 0; c < e->s.ncpus; c++)
			w += rows[c].v[i];
		snprintf(want, sizeof(want), "%llu", (unsigned long long)w);
		if (stat_field(&out, xkv_stat_names[i], v, sizeof(v)) || strcmp(v, want)) {
			ok = 0;
			printf("    STAT %s: got '%s' want '%s'\n", xkv_stat_names[i], v, want);
		}
	}
	report(ok, "%s: stats lists every counter, both slots and the pending delta summed", e->layout);

	__u64 slow_n = slow_map.v[XKV_STAT_requests] + pending.v[XKV_STAT_requests];
	snprintf(want, sizeof(want), "%.1f", 100.0 * 300 / (300.0 + (double)slow_n));
	char fr[64] = "-", sr[64] = "-", share[64] = "-";
	char slow_s[32];
	snprintf(slow_s, sizeof(slow_s), "%llu", (unsigned long long)slow_n);
	ok = !stat_field(&out, "fast_path_requests", fr, sizeof(fr));
	ok &= !stat_field(&out, "slow_path_requests", sr, sizeof(sr));
	ok &= !stat_field(&out, "fast_path_share", share, sizeof(share));
	ok &= !strcmp(fr, "300") && !strcmp(sr, slow_s) && !strcmp(share, want);
	report(ok, "%s: fast_path_requests %s (want 300) slow_path_requests %s (want %s) share %s (want %s)",
	       e->layout, fr, sr, slow_s, share, want);

	char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	ok = !stat_field(&out, "pid", v, sizeof(v)) && !strcmp(v, pid);
	ok &= !stat_field(&out, "xdpkv_version", v, sizeof(v)) && !strcmp(v, XKV_VERSION);
	ok &= !stat_field(&out, "layout", v, sizeof(v)) && !strcmp(v, e->layout);
	ok &= !stat_field(&out, "curr_items", v, sizeof(v)) && !strcmp(v, "2");
	ok &= !stat_field(&out, "curr_items_age_s", v, sizeof(v)) && !strcmp(v, "0");
	ok &= !stat_field(&out, "limit_items", v, sizeof(v)) && atol(v) == ENTRIES;
	ok &= !stat_field(&out, "item_size_max", v, sizeof(v)) && atol(v) == VAL_CAP;
	ok &= !stat_field(&out, "uptime", v, sizeof(v)) && !stat_field(&out, "time", v, sizeof(v)) &&
	      labs(atol(v) - (long)time(NULL)) <= 2;
	report(ok, "%s: stats pid, version, layout, curr_items 2, limits, time", e->layout);
	if (!ok)
		print_escaped("stats", out.p, out.len, 4000);

	/* counters back to zero for the next tests */
	memset(rows, 0, e->s.ncpus * sizeof(*rows));
	bpf_map_update_elem(e->s.stats_fd, &slot, rows, BPF_ANY);
	slot = XKV_STATS_SLOW;
	bpf_map_update_elem(e->s.stats_fd, &slot, rows, BPF_ANY);
	memset(&e->delta, 0, sizeof(e->delta));
	ask(e, "stats\r\n", 7, &out);
	strcpy(share, "-");
	strcpy(sr, "-");
	ok = !stat_field(&out, "fast_path_share", share, sizeof(share));
	ok &= !stat_field(&out, "slow_path_requests", sr, sizeof(sr));
	ok &= !strcmp(share, "0.0") && !strcmp(sr, "1");
	report(ok, "%s: no fast-path traffic: share %s (want 0.0), slow %s (want 1)", e->layout, share, sr);
	free(rows);
	xkv_buf_free(&out);
}

/* stats sizes_enable / sizes_disable (engine/sizes.c): memcached's one
 * line, no END.  Enabled, the items written since, in 32-byte buckets of
 * memcached's item size, 48 + key + 1 + value + 2 (+ 4 with flags) + 8:
 * sz:a (5 bytes) 68 -> 96, sz:b (100) 163 -> 192, sz:c (33) 96 -> 96,
 * sz:d (33, flags 1) 100 -> 128, g1 (2) 63 -> 64; what was written before
 * the enable and an expired item not counted (tests/e2e/readstate.py
 * compares with memcached itself). */
#define D10 "0123456789"
#define D33 D10 D10 D10 "012"
static void stats_sizes_steps(struct env *e)
{
	static const char *const steps[][2] = {
		{ "stats sizes_enabled\r\n", "ERROR\r\n" },
		{ "stats sizes_enable extra words\r\n", "STAT sizes_status enabled\r\n" },
		{ "stats sizes\r\n", "END\r\n" },
		{ "set sz:a 0 0 5\r\nhello\r\nset sz:b 0 0 100\r\n" D10 D10 D10 D10 D10 D10 D10 D10 D10 D10
		  "\r\nset sz:c 0 0 33\r\n" D33 "\r\nset sz:d 1 0 33\r\n" D33 "\r\nset sz:e 0 -1 1\r\nx\r\n",
		  "STORED\r\nSTORED\r\nSTORED\r\nSTORED\r\nSTORED\r\n" },
		{ "stats sizes\r\n", "STAT 96 2\r\nSTAT 128 1\r\nSTAT 192 1\r\nEND\r\n" },
		{ "stats sizes_enable\r\n", "STAT sizes_status enabled\r\n" }, /* keeps its mark */
		{ "delete sz:a\r\nset g1 0 0 2\r\n11\r\n", "DELETED\r\nSTORED\r\n" },
		{ "stats sizes\r\n", "STAT 64 1\r\nSTAT 96 1\r\nSTAT 128 1\r\nSTAT 192 1\r\nEND\r\n" },
		{ "stats sizes_disable x\r\n", "STAT sizes_status disabled\r\n" },
		{ "stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n" },
		{ "stats sizes_enable\r\n", "STAT sizes_status enabled\r\n" },
		{ "stats sizes\r\n", "END\r\n" }, /* from zero again */
		{ "stats sizes_disable\r\n", "STAT sizes_status disabled\r\n" },
		{ "delete sz:b\r\ndelete sz:c\r\ndelete sz:d\r\n", "DELETED\r\nDELETED\r\nDELETED\r\n" },
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		expect_n(e, NULL, steps[i][0], strlen(steps[i][0]), steps[i][1], strlen(steps[i][1]));
}
#undef D10
#undef D33

/* stats <group>: memcached's groups this store answers (settings, items,
 * slabs, sizes, reset), others ERROR.  Run last on a layout's store: stats
 * reset leaves its base behind. */
void t_stats_groups(struct env *e)
{
	struct xkv_buf out = {};
	char v[128], want[128];
	const struct xkv_layout *L = xkv_layout_find(e->layout);
	bool evicts = L->map_type != BPF_MAP_TYPE_HASH && L->map_type != BPF_MAP_TYPE_PERCPU_HASH;

	flush_store(e);
	const char *setup = "set g1 0 0 1\r\n1\r\nset g2 0 0 1\r\n2\r\nset g3 0 0 1\r\n3\r\n";
	ask(e, setup, strlen(setup), &out);
	xkv_slow_count_refresh(e->sl);

	ask(e, "stats settings\r\n", 16, &out);
	int ok = stats_well_formed(&out);
	snprintf(want, sizeof(want), "%llu", (unsigned long long)e->s.cfg.entries * e->s.cfg.entry_size);
	ok &= !stat_field(&out, "maxbytes", v, sizeof(v)) && !strcmp(v, want);
	ok &= !stat_field(&out, "evictions", v, sizeof(v)) && !strcmp(v, evicts ? "on" : "off");
	ok &= !stat_field(&out, "udpport", v, sizeof(v)) && atol(v) == (long)e->s.cfg.port;
	ok &= !stat_field(&out, "item_size_max", v, sizeof(v)) && atol(v) == VAL_CAP;
	ok &= !stat_field(&out, "key_size_max", v, sizeof(v)) && atol(v) == (long)e->s.cfg.key_cap;
	ok &= !stat_field(&out, "cas_enabled", v, sizeof(v)) && !strcmp(v, "yes");
	report(ok, "%s: stats settings: maxbytes, evictions %s, udpport, item_size_max, key_size_max",
	       e->layout, evicts ? "on" : "off");
	if (!ok)
		print_escaped("stats settings", out.p, out.len, 2000);

	ask(e, "stats items\r\n", 13, &out);
	ok = stats_well_formed(&out) && !stat_field(&out, "items:1:number", v, sizeof(v)) &&
	     !strcmp(v, "3") && !stat_field(&out, "items:1:evicted", v, sizeof(v));
	report(ok, "%s: stats items: the store as class 1, its 3 items", e->layout);
	if (!ok)
		print_escaped("stats items", out.p, out.len, 2000);
	ask(e, "stats slabs extra\r\n", 19, &out);
	char tc[32], uc[32], fc[32];
	snprintf(tc, sizeof(tc), "%u", ENTRIES);
	snprintf(fc, sizeof(fc), "%u", ENTRIES - 3);
	ok = stats_well_formed(&out) && !stat_field(&out, "1:total_chunks", v, sizeof(v)) && !strcmp(v, tc);
	ok &= !stat_field(&out, "1:used_chunks", uc, sizeof(uc)) && !strcmp(uc, "3");
	ok &= !stat_field(&out, "1:free_chunks", v, sizeof(v)) && !strcmp(v, fc);
	ok &= !stat_field(&out, "active_slabs", v, sizeof(v)) && atol(v) >= 1;
	report(ok, "%s: stats slabs (a word after it ignored): class 1 of %s chunks, 3 used", e->layout, tc);
	if (!ok)
		print_escaped("stats slabs", out.p, out.len, 2000);
	EXPECT(e, "stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n");
	stats_sizes_steps(e);
	/* stats detail: per-prefix counts while on (memcached's stats_prefix.c;
	 * tests/e2e/readstate.sh checks them against memcached itself) */
	EXPECT(e, "stats detail dump\r\n", "END\r\n");
	EXPECT(e, "stats detail on\r\n", "OK\r\n");
	EXPECT(e, "set dt:1 0 0 1\r\nx\r\n", "STORED\r\n");
	EXPECT(e, "get dt:1 dt:2 nodelim\r\n", "VALUE dt:1 0 1\r\nx\r\nEND\r\n");
	EXPECT(e, "delete dt:9\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "incr dt:1 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "stats detail dump\r\n", "PREFIX dt get 2 hit 1 set 1 del 1\r\nEND\r\n");
	EXPECT(e, "stats detail off extra\r\n", "OK\r\n");
	EXPECT(e, "get dt:1\r\n", "VALUE dt:1 0 1\r\nx\r\nEND\r\n");
	EXPECT(e, "stats detail dump\r\n", "PREFIX dt get 2 hit 1 set 1 del 1\r\nEND\r\n");
	EXPECT(e, "stats detail On\r\n", "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
	EXPECT(e, "delete dt:1\r\n", "DELETED\r\n");
	EXPECT(e, "stats nonsense\r\n", "ERROR\r\n");

	/* reset: the counts over the wire start again; the maps keep theirs */
	struct xkv_stats before, after;
	xkv_stats_slow_add(&e->s, &e->delta);
	memset(&e->delta, 0, sizeof(e->delta));
	xkv_stats_read(&e->s, XKV_STATS_SLOW, &before, NULL);
	EXPECT(e, "stats reset now\r\n", "RESET\r\n");
	EXPECT(e, "stats detail dump\r\n", "END\r\n"); /* the prefixes go too */
	EXPECT(e, "set g4 0 0 1\r\n4\r\n", "STORED\r\n");
	ask(e, "stats\r\n", 7, &out);
	char sets[32] = "-", hits[32] = "-", items[32] = "-";
	ok = !stat_field(&out, "cmd_set", sets, sizeof(sets)) && !strcmp(sets, "1");
	ok &= !stat_field(&out, "get_hits", hits, sizeof(hits)) && !strcmp(hits, "0");
	ok &= !stat_field(&out, "curr_items", items, sizeof(items)) && !strcmp(items, "3");
	xkv_stats_slow_add(&e->s, &e->delta);
	memset(&e->delta, 0, sizeof(e->delta));
	xkv_stats_read(&e->s, XKV_STATS_SLOW, &after, NULL);
	ok &= after.v[XKV_STAT_cmd_set] == before.v[XKV_STAT_cmd_set] + 1 && before.v[XKV_STAT_cmd_set] >= 3;
	report(ok, "%s: stats reset: cmd_set %s (want 1), get_hits %s (want 0), curr_items %s (kept: 3); "
	       "the map's cmd_set %llu -> %llu (kept counting)", e->layout, sets, hits, items,
	       (unsigned long long)before.v[XKV_STAT_cmd_set], (unsigned long long)after.v[XKV_STAT_cmd_set]);
	xkv_buf_free(&out);
}

/* lru_crawler metadump (engine/crawler.c): a line per live item in
 * memcached's form (the key uri-encoded, exp absolute or -1, the cas as
 * gets shows it), then END; over TCP only; other subcommands ERROR. */
void t_metadump(struct env *e)
{
	struct conn c = {};
	struct xkv_buf out = {};
	char want[256];

	flush_store(e);
	const char *setup = "set md%1 5 0 3\r\nabc\r\nset md2 0 100 1\r\nx\r\nset gone 0 -1 1\r\nz\r\n";
	ask(e, setup, strlen(setup), &out);
	ask(e, "gets md%1\r\n", 11, &out);
	unsigned long long cas = 0;
	sscanf((const char *)out.p, "VALUE md%%1 5 3 %llu", &cas);
	feed(e, &c, "lru_crawler metadump all\r\n", 26);
	/* one line per item, in the layout's order */
	int lines = 0, ok = c.out.len > 5 && !memcmp(c.out.p + c.out.len - 5, "END\r\n", 5);
	bool seen1 = false, seen2 = false;
	for (size_t i = 0; ok && i < c.out.len - 5;) {
		const char *l = (const char *)c.out.p + i, *nl = memchr(l, '\n', c.out.len - 5 - i);
		if (!nl)
			break;
		char line[256];
		size_t n = (size_t)(nl - l);
		snprintf(line, sizeof(line), "%.*s", (int)(n < 255 ? n : 255), l);
		i += n + 1;
		lines++;
		long long exp, la;
		unsigned long long lcas, size;
		unsigned cls;
		char key[64], fetch[8];
		if (sscanf(line, "key=%63s exp=%lld la=%lld cas=%llu fetch=%7s cls=%u size=%llu", key, &exp, &la,
			   &lcas, fetch, &cls, &size) != 7) {
			ok = 0;
			printf("    line: %s\n", line);
			continue;
		}
		long long now = (long long)time(NULL);
		ok &= cls == 1 && size >= 3 && llabs(la - now) <= 2;
		if (!strcmp(key, "md%251")) { /* read by the gets: fetched */
			seen1 = true;
			ok &= exp == -1 && lcas == cas && !strcmp(fetch, "yes");
		} else if (!strcmp(key, "md2")) {
			seen2 = true;
			ok &= llabs(exp - (now + 100)) <= 2 && !strcmp(fetch, "no");
		} else {
			ok = 0; /* the expired item is not dumped */
		}
	}
	report(ok && seen1 && seen2 && lines == 2,
	       "%s: lru_crawler metadump all: %d lines (md%%1 as md%%251, exp -1, its cas; md2's exp "
	       "now + 100), the expired item left out, END", e->layout, lines);
	if (!ok)
		print_escaped("metadump", c.out.p, c.out.len, 1000);
	conn_free(&c);
	expect(e, "lru_crawler metadump 2: no big values here", "lru_crawler metadump 2\r\n", "END\r\n", 0);
	expect(e, "lru_crawler metadump 0: memcached's BADCLASS", "lru_crawler metadump 0\r\n",
	       "BADCLASS invalid class id\r\n", 0);
	expect(e, "lru_crawler crawl all: no crawler here", "lru_crawler crawl all\r\n", "ERROR\r\n", 0);
	snprintf(want, sizeof(want), "SERVER_ERROR lru_crawler metadump is served over TCP only\r\n");
	expect_n(e, "lru_crawler metadump over UDP: refused", "lru_crawler metadump all\r\n", 26, want,
		 strlen(want));
	xkv_buf_free(&out);
}
