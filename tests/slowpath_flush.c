// SPDX-License-Identifier: MIT
/* Slow path tests: paused writes, flush_all and its order against write
 * stamps, stamps from two writers, a store of 100000 items. */
#include "slowpath_test.h"

/* snapshot --pause-writes: every write is refused and changes nothing,
 * reads go on; resumed, writes work again. */
void t_paused(struct env *e)
{
	flush_store(e);
	EXPECT(e, "set p 0 0 3\r\nold\r\n", "STORED\r\n");
	report(xkv_writes_pause(&e->s, 1) == 0 && xkv_writes_paused(&e->s) == 1,
	       "%s: writes paused", e->layout);
	EXPECT(e, "set p 0 0 3\r\nnew\r\nget p\r\ndelete p\r\nincr p 1\r\nflush_all\r\n"
		  "set q 0 0 1 noreply\r\nx\r\nversion\r\n",
	       XKV_R_PAUSED "VALUE p 0 3\r\nold\r\nEND\r\n" XKV_R_PAUSED XKV_R_PAUSED XKV_R_PAUSED
	       XKV_VERSION_LINE);
	EXPECT(e, "get p q\r\n", "VALUE p 0 3\r\nold\r\nEND\r\n");
	report(xkv_writes_pause(&e->s, 0) == 0 && xkv_writes_paused(&e->s) == 0,
	       "%s: writes resumed", e->layout);
	EXPECT(e, "set p 0 0 3\r\nnew\r\nget p\r\n", "STORED\r\nVALUE p 0 3\r\nnew\r\nEND\r\n");
}

/* A writer's stamps run ahead of the clock when it writes faster than one
 * a microsecond (entry.h, xkv_stamp).  A flush_all that cut at the clock's
 * "now" missed an item written just before it whose stamp was still ahead:
 * the get in the same datagram saw it until the walk came by (seen once in
 * CI on array_fnv).  Here the stamps are pushed ~50 ms ahead first, so
 * that cut would miss every time; each round's get must be a miss. */
static void t_flush_ahead(struct env *e)
{
	int hits = 0;
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 50000; i++)
			xkv_write_stamp();
		struct xkv_buf out = {};
		static const char req[] = "set fa 0 0 1\r\n1\r\nflush_all noreply\r\nget fa\r\n";
		ask(e, req, sizeof(req) - 1, &out);
		static const char want[] = "STORED\r\nEND\r\n";
		hits += !(out.len == sizeof(want) - 1 && !memcmp(out.p, want, sizeof(want) - 1));
		xkv_buf_free(&out);
		flush_wait(e, 5000);
	}
	report(hits == 0, "%s: a set, flush_all, get with write stamps ahead of the clock: "
	       "%d of 20 gets saw the flushed item", e->layout, hits);
}

#define FLUSH_ORDER_ROUNDS 200

/* ---- flush's cut: what was stamped after it stays ---------------------------
 * A store of CUT_ENTRIES entries (lossy layouts: CUT_N items per group stay
 * well below it; what a later key evicted is left out of the counts). */
enum { CUT_ENTRIES = 65536, CUT_N = 8000, CUT_ROUNDS = 20, CUT_OLD = 2000 };

static int cut_key(char *k, size_t n, const char *pre, int i)
{
	return snprintf(k, n, "%s%05d", pre, i);
}

/* Store keys pre0..pre(n-1), each with a write stamp of its own (the
 * packed batch as set_batch takes it); 0 or -1. */
static int cut_fill(struct env *e, const char *pre, int n)
{
	__u32 ks = e->s.cfg.key_size, es = e->s.cfg.entry_size;
	__u8 *keys = calloc((size_t)n, ks), *ents = calloc((size_t)n, es);
	long stored = -1;
	if (keys && ents) {
		for (int i = 0; i < n; i++) {
			char k[32];
			int kl = cut_key(k, sizeof(k), pre, i);
			xkv_key_pack(&e->s.cfg, k, (__u32)kl, keys + (size_t)i * ks);
			struct xkv_entry *en = (void *)(ents + (size_t)i * es);
			en->wtime_ns = xkv_write_stamp();
			en->len = 1;
			en->data[0] = (__u8)pre[0];
		}
		stored = xkv_store_set_batch(&e->s, keys, ents, (__u32)n);
	}
	free(keys);
	free(ents);
	return stored == n ? 0 : -1;
}

/* The stamp key pre<i> has in the store (0: absent). */
static __u64 cut_stamp(struct env *e, struct xkv_item *it, const char *pre, int i)
{
	char k[32];
	int kl = cut_key(k, sizeof(k), pre, i);
	return e->s.L->get(&e->s, k, (__u32)kl, it) == 1 ? it->wtime_ns : 0;
}

/* Group A, a stamp, group B; the accessor's flush at that stamp: every A
 * item goes, every B item stays with its stamp.  (The accessor used to
 * take no cut and remove everything.) */
static void cut_accessor(struct env *e, struct xkv_item *it, __u64 *had)
{
	if (cut_fill(e, "ca", CUT_N))
		return (void)report(0, "%s: flush cut: storing group A", e->layout);
	__u64 cut = xkv_write_stamp();
	if (cut_fill(e, "cb", CUT_N))
		return (void)report(0, "%s: flush cut: storing group B", e->layout);
	int had_a = 0, had_b = 0, left_a = 0, kept_b = 0;
	for (int i = 0; i < CUT_N; i++) {
		had_a += cut_stamp(e, it, "ca", i) != 0;
		had[i] = cut_stamp(e, it, "cb", i);
		had_b += had[i] != 0;
	}
	int r = e->s.L->flush(&e->s, cut);
	for (int i = 0; i < CUT_N; i++) {
		left_a += cut_stamp(e, it, "ca", i) != 0;
		kept_b += had[i] && cut_stamp(e, it, "cb", i) == had[i];
	}
	long n = e->s.L->count(&e->s);
	report(!r && had_a >= CUT_N / 2 && had_b >= CUT_N / 2 && !left_a && kept_b == had_b && n == had_b,
	       "%s: flush at a stamp between two groups of %d: %d of %d stamped before it left, "
	       "%d of %d stamped after it kept (%ld items; flush returned %d)",
	       e->layout, CUT_N, left_a, had_a, kept_b, had_b, n, r);
}

/* Per-CPU maps: an element whose newest live copy is above the cut stays,
 * one whose newest live copy is at or below it goes (what get answers). */
static void cut_percpu(struct env *e, struct xkv_item *it)
{
	int n = e->s.ncpus;
	__u32 es = e->s.cfg.entry_size;
	__u8 *vals = calloc((size_t)n, es), k[XKV_KEY_MAX + 8];
	if (!vals)
		return (void)report(0, "%s: flush cut, per-CPU copies: calloc", e->layout);
	__u64 old = xkv_write_stamp(), cut = xkv_write_stamp(), young = xkv_write_stamp();
	static const char *const key[2] = { "pc_new", "pc_old" };
	for (int j = 0; j < 2; j++) {
		memset(vals, 0, (size_t)n * es);
		for (int c = 0; c < n; c++) {
			struct xkv_entry *en = (void *)(vals + (size_t)c * es);
			en->len = 1;
			en->data[0] = 'p';
			en->wtime_ns = c == n - 1 ? young : old;
			/* pc_old: the young copy has expired, get answers an old one */
			en->expire_ns = c == n - 1 && j == 1 ? 1 : 0;
		}
		xkv_key_pack(&e->s.cfg, key[j], (__u32)strlen(key[j]), k);
		if (bpf_map_update_elem(e->s.store_fd, k, vals, BPF_ANY))
			report(0, "%s: flush cut, per-CPU copies: update %s: %s", e->layout, key[j], strerror(errno));
	}
	free(vals);
	int r = e->s.L->flush(&e->s, cut);
	__u64 got_new = e->s.L->get(&e->s, key[0], 6, it) == 1 ? it->wtime_ns : 0;
	int got_old = e->s.L->get(&e->s, key[1], 6, it);
	report(!r && got_new == young && got_old == 0,
	       "%s: flush cut, %d per-CPU copies: the newest live copy decides (kept %d, left %d)", e->layout,
	       n, got_new == young, got_old);
}

/* flush_all, then a set in the same datagram, while the walk has a store
 * of CUT_OLD items to go through: once the walk is done the new item is
 * there (memcached keeps it: it was stored after the flush).  The walk
 * used to delete what it found, the new item too. */
static void cut_engine(struct env *e, struct xkv_item *it)
{
	int lost = 0, stale = 0;
	struct xkv_buf out = {};
	for (int round = 0; round < CUT_ROUNDS; round++) {
		if (cut_fill(e, "co", CUT_OLD))
			return (void)report(0, "%s: flush_all then set: storing %d items", e->layout, CUT_OLD);
		char req[96], key[32];
		int kl = cut_key(key, sizeof(key), "nk", round);
		int rl = snprintf(req, sizeof(req), "flush_all noreply\r\nset %s 0 0 1\r\nn\r\n", key);
		ask(e, req, (size_t)rl, &out);
		if (out.len != 8 || memcmp(out.p, "STORED\r\n", 8))
			report(0, "%s: flush_all then set %s: the set answered \"%.*s\"", e->layout, key,
			       (int)(out.len < 100 ? out.len : 100), (const char *)out.p);
		if (flush_wait(e, 20000))
			report(0, "%s: flush_all then set: the walk still runs after 20 s", e->layout);
		rl = snprintf(req, sizeof(req), "get %.*s\r\n", kl, key);
		ask(e, req, (size_t)rl, &out);
		char want[64];
		int wl = snprintf(want, sizeof(want), "VALUE %s 0 1\r\nn\r\nEND\r\n", key);
		lost += !(out.len == (size_t)wl && !memcmp(out.p, want, (size_t)wl));
		for (int i = 0; i < CUT_OLD; i += 97)
			stale += cut_stamp(e, it, "co", i) != 0;
	}
	xkv_buf_free(&out);
	report(!lost && !stale, "%s: %d rounds of flush_all; set (one datagram) over %d items, the walk "
	       "waited for, then get: %d new items lost, %d flushed items left", e->layout, CUT_ROUNDS,
	       CUT_OLD, lost, stale);
}

/* flush's cut, on a store of its own (larger than the unit tests' one). */
static void t_flush_cut(const char *layout)
{
	struct env f;
	if (env_open(&f, layout, CUT_ENTRIES, 64))
		return (void)n_fail++;
	struct xkv_item *it = malloc(sizeof(*it));
	__u64 *had = calloc(CUT_N, sizeof(*had));
	if (it && had) {
		cut_accessor(&f, it, had);
		if (xkv_map_percpu(f.s.L->map_type) && f.s.ncpus > 1)
			cut_percpu(&f, it);
		flush_store(&f);
		cut_engine(&f, it);
	} else {
		report(0, "%s: flush cut: malloc", layout);
	}
	free(it);
	free(had);
	env_close(&f);
}

/* flush_all answers OK at once and walks the store on a thread; until the
 * walk is done the slow path answers what it flushes as misses. */
void t_flush(struct env *e)
{
	flush_store(e);
	EXPECT(e, "set f1 0 0 1\r\n1\r\nset f2 0 0 1\r\n2\r\n", "STORED\r\nSTORED\r\n");
	long c1 = e->s.L->count(&e->s);
	EXPECT(e, "flush_all\r\n", "OK\r\n");
	EXPECT(e, "get f1 f2\r\n", "END\r\n");
	EXPECT(e, "delete f1\r\n", "NOT_FOUND\r\n");
	/* a flushed item does not block add.  After the walk: the hash-like
	 * layouts re-read an element just before deleting it, and a write
	 * between the two may be deleted (docs/protocol.md, "flush_all"), so an
	 * add during the walk may be lost there (seen on percpu) */
	int idle = flush_wait(e, 5000);
	EXPECT(e, "add f2 0 0 1\r\nn\r\n", "STORED\r\n");
	long c2 = e->s.L->count(&e->s);
	report(c1 == 2 && !idle && c2 == 1, "%s: flush_all empties the store (%ld -> %ld items, f2 re-added)",
	       e->layout, c1, c2);
	EXPECT(e, "get f2\r\n", "VALUE f2 0 1\r\nn\r\nEND\r\n");
	EXPECT(e, "get f1\r\n", "END\r\n");
	EXPECT(e, "set f1 0 0 1\r\n1\r\n", "STORED\r\n");
	/* issue 6: the delay is honoured (it used to flush at once); a later
	 * flush_all replaces a pending one, as memcached's single flush time */
	EXPECT(e, "flush_all 10\r\n", "OK\r\n");
	EXPECT(e, "get f1\r\n", "VALUE f1 0 1\r\n1\r\nEND\r\n");
	report(xkv_slow_flush_busy(e->sl) == 1, "%s: flush_all 10 is scheduled", e->layout);
	EXPECT(e, "flush_all 0 noreply\r\n", "");
	EXPECT(e, "get f1\r\n", "END\r\n");
	report(!flush_wait(e, 5000), "%s: flush_all 0 replaced the one due in 10 s", e->layout);
	EXPECT(e, "set f1 0 0 1\r\n1\r\nflush_all noreply\r\nget f1\r\n", "STORED\r\nEND\r\n");
	flush_wait(e, 5000);
	t_flush_ahead(e);
	EXPECT(e, "set f1 0 0 1\r\n1\r\nflush_all 1\r\nget f1\r\n", "STORED\r\nOK\r\nVALUE f1 0 1\r\n1\r\nEND\r\n");
	usleep(1100 * 1000);
	EXPECT(e, "get f1\r\n", "END\r\n");
	int idle2 = flush_wait(e, 5000);
	long c3 = e->s.L->count(&e->s);
	report(!idle2 && c3 == 0, "%s: flush_all 1 empties the store a second later (%ld items)", e->layout, c3);
	/* A write just before flush_all, in the same datagram, is gone at once:
	 * the cut is exact, not to the write stamp's microsecond (it used to be
	 * the raw clock, which a stamp, rounded up to its microsecond, could pass;
	 * a set less than 1 us before flush_all then outlived it until the walk).
	 * The other order: t_flush_cut. */
	int gone = 0;
	struct xkv_buf out = {};
	for (int i = 0; i < FLUSH_ORDER_ROUNDS; i++) {
		static const char req[] = "set f1 0 0 1\r\n1\r\nflush_all noreply\r\nget f1\r\n";
		ask(e, req, sizeof(req) - 1, &out);
		bool ok = out.len == 13 && !memcmp(out.p, "STORED\r\nEND\r\n", 13);
		gone += ok;
		if (!ok)
			printf("    round %d answered \"%.*s\"\n", i, (int)(out.len < 200 ? out.len : 200),
			       (const char *)out.p);
		flush_wait(e, 5000);
	}
	xkv_buf_free(&out);
	report(gone == FLUSH_ORDER_ROUNDS, "%s: %d rounds of set; flush_all; get in one datagram: "
	       "%d misses", e->layout, FLUSH_ORDER_ROUNDS, gone);
	t_flush_cut(e->layout);
}

/* Write stamps from two processes at once (serve and a `load` beside it):
 * each strictly increasing, ids of their own, no stamp in both.  With the one
 * userspace id they had before (1023) the two runs overlapped at once. */
static int u64_cmp(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;
	return x < y ? -1 : x > y;
}

void t_stamp_ids(void)
{
	enum { N = 50000 };
	__u64 *m = mmap(NULL, 2 * N * sizeof(__u64), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return (void)report(0, "stamps: mmap");
	pid_t child;
	for (;;) { /* two processes whose pids are equal mod 512 share an id (entry.h) */
		child = fork();
		if (child == 0) {
			for (int i = 0; i < N; i++)
				m[N + i] = xkv_write_stamp();
			_exit(0);
		}
		if (child < 0 || (child - getpid()) % 512)
			break;
		waitpid(child, NULL, 0);
	}
	if (child < 0)
		return (void)report(0, "stamps: fork");
	for (int i = 0; i < N; i++)
		m[i] = xkv_write_stamp();
	waitpid(child, NULL, 0);
	bool inc = true;
	for (int i = 1; i < N && inc; i++)
		inc = m[i] > m[i - 1] && m[N + i] > m[N + i - 1];
	__u32 id_a = (__u32)(m[0] & XKV_STAMP_ID_MASK), id_b = (__u32)(m[N] & XKV_STAMP_ID_MASK);
	qsort(m, 2 * N, sizeof(__u64), u64_cmp);
	long dup = 0;
	for (int i = 1; i < 2 * N; i++)
		dup += m[i] == m[i - 1];
	report(inc && id_a != id_b && id_a >= XKV_STAMP_CPUS && id_b >= XKV_STAMP_CPUS && !dup,
	       "stamps: two processes, %d each at once: each increasing, ids %u and %u (userspace: >= %u), "
	       "%ld equal", N, id_a, id_b, XKV_STAMP_CPUS, dup);
	munmap(m, 2 * N * sizeof(__u64));
}

/* A store of 100000 items: stats answers from the cached count, flush_all
 * answers before its walk is done. */
void t_big(void)
{
	struct env e;
	struct xkv_buf out = {};
	enum { N = 100000 };
	char v[64];

	printf("== hash_map, %d items\n", N);
	if (env_open(&e, "hash_map", 131072, 64))
		return (void)n_fail++;
	__u32 ks = e.s.cfg.key_size, es = e.s.cfg.entry_size;
	__u8 *keys = calloc(N, ks), *ents = calloc(N, es);
	for (int i = 0; i < N; i++) {
		char k[32];
		int kl = snprintf(k, sizeof(k), "big%06d", i);
		xkv_key_pack(&e.s.cfg, k, (__u32)kl, keys + (size_t)i * ks);
		struct xkv_entry *en = (void *)(ents + (size_t)i * es);
		en->wtime_ns = xkv_now_ns();
		en->len = 1;
		en->data[0] = 'x';
	}
	long stored = xkv_store_set_batch(&e.s, keys, ents, N);
	__u64 t0 = xkv_now_ns();
	long counted = xkv_slow_count_refresh(e.sl);
	__u64 walk_us = (xkv_now_ns() - t0) / 1000;
	report(stored == N && counted == N, "hash_map: %ld stored, %ld counted (a walk: %llu us)", stored,
	       counted, (unsigned long long)walk_us);

	EXPECT(&e, "set extra1 0 0 1\r\n1\r\nset extra2 0 0 1\r\n2\r\n", "STORED\r\nSTORED\r\n");
	t0 = xkv_now_ns();
	ask(&e, "stats\r\n", 7, &out);
	__u64 stats_us = (xkv_now_ns() - t0) / 1000;
	int ok = !stat_field(&out, "curr_items", v, sizeof(v)) && atol(v) == N;
	report(ok, "hash_map: stats answers the cached curr_items %s (want %d, not %d) in %llu us", v, N,
	       N + 2, (unsigned long long)stats_us);
	xkv_slow_count_refresh(e.sl);
	ask(&e, "stats\r\n", 7, &out);
	ok = !stat_field(&out, "curr_items", v, sizeof(v)) && atol(v) == N + 2;
	report(ok, "hash_map: after a refresh curr_items %s (want %d)", v, N + 2);

	/* flush_all: OK at once; the walk still has items to delete then */
	t0 = xkv_now_ns();
	int r = ask(&e, "flush_all\r\n", 11, &out);
	__u64 flush_us = (xkv_now_ns() - t0) / 1000;
	__u8 k1[XKV_KEY_MAX + 8];
	int left = !bpf_map_get_next_key(e.s.store_fd, NULL, k1);
	ok = r == 1 && out.len == 4 && !memcmp(out.p, "OK\r\n", 4) && left;
	report(ok, "hash_map: flush_all answered OK in %llu us, items still in the map then (%d)",
	       (unsigned long long)flush_us, left);
	EXPECT(&e, "get big000001 big099999 extra1\r\n", "END\r\n");
	EXPECT(&e, "version\r\n", XKV_VERSION_LINE);
	t0 = xkv_now_ns();
	int idle = flush_wait(&e, 20000);
	__u64 wait_ms = (xkv_now_ns() - t0) / 1000000;
	long after = e.s.L->count(&e.s);
	report(!idle && after == 0, "hash_map: the store empty %llu ms later (%ld items)",
	       (unsigned long long)wait_ms, after);
	ask(&e, "stats\r\n", 7, &out);
	ok = !stat_field(&out, "curr_items", v, sizeof(v)) && atol(v) == 0;
	report(ok, "hash_map: the flusher recounted: curr_items %s", v);
	free(keys);
	free(ents);
	xkv_buf_free(&out);
	env_close(&e);
}
