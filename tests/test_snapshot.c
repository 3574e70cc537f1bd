// SPDX-License-Identifier: MIT
/* Snapshot files (docs/snapshots.md): the format alone (round trip per codec,
 * a flipped byte in each block and in the header, truncation, the writer
 * killed at 100 random points), then through real stores (root: BPF maps, not attached): scans
 * split over threads see every item once, a damaged file is refused before
 * the store changes, salvage restores exactly the intact blocks, migrations
 * count what did not fit.
 *   test_snapshot format | store */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "inproc.h"
#include "snapshot.h"

static int fails;
#define CHECK(cond, ...)                                   \
	do {                                               \
		if (cond) {                                \
			printf("PASS ");                   \
		} else {                                   \
			printf("FAIL ");                   \
			fails++;                           \
		}                                          \
		printf(__VA_ARGS__);                       \
		printf("\n");                              \
	} while (0)

static char dir[] = "/tmp/xkv-snaptest.XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* ---- synthetic items: item i of a seed, binary keys and values ---- */

static __u32 item_klen(unsigned i) { return 1 + i % 40; }
static __u32 item_vlen(unsigned i) { return (i * 37) % 3000; }

static void item_make(unsigned i, __u8 *key, __u8 *val, struct xkv_snap_item *it)
{
	it->klen = item_klen(i);
	it->vlen = item_vlen(i);
	for (__u32 k = 0; k < it->klen; k++)
		key[k] = (__u8)('a' + (i + k * 7) % 26);
	key[it->klen - 1] = (__u8)('A' + i % 26);
	for (__u32 v = 0; v < it->vlen; v++)
		val[v] = v % 5 == 0 ? (__u8)"\r\n\0\xff"[i % 4] : (__u8)(i * 31 + v);
	it->key = key;
	it->val = val;
	it->flags = i * 2654435761u;
	it->expire_unix_ns = i % 3 ? 0 : 4000000000ull * 1000000000ull + i;
	it->has_cas = i % 5 == 0;
	it->cas = it->has_cas ? 1000000ull + i : 0;
}

/* Write items [0, n) in blocks of per items; returns blocks written. */
static int write_file(const char *path, int codec, int level, unsigned n, unsigned per)
{
	struct xkv_snap_writer *w;
	struct xkv_snap_info info = { .layout = "test", .key_cap = 250, .val_cap = 4096, .entries = n };
	char err[XKV_ERRLEN];
	__u8 *buf = malloc((size_t)per * 3400), key[64], val[4096];
	int blocks = 0;
	if (xkv_snap_create(&w, path, &info, codec, level, err, sizeof(err))) {
		printf("FAIL create: %s\n", err);
		fails++;
		free(buf);
		return -1;
	}
	for (unsigned i = 0; i < n; i += per) {
		size_t len = 0;
		unsigned j;
		for (j = i; j < n && j < i + per; j++) {
			struct xkv_snap_item it;
			item_make(j, key, val, &it);
			len += xkv_snap_item_put(buf + len, &it);
		}
		if (xkv_snap_put_block(w, buf, len, j - i)) {
			printf("FAIL put_block\n");
			fails++;
		}
		blocks++;
	}
	free(buf);
	if (xkv_snap_commit(w, err, sizeof(err))) {
		printf("FAIL commit: %s\n", err);
		fails++;
		return -1;
	}
	return blocks;
}

/* Read every block back; items must be exactly item i in order.  Returns the
 * items that matched, or -1 on a mismatch. */
static long read_check(const char *path, bool salvage, char *err, size_t errlen)
{
	struct xkv_snap_reader r;
	__u8 key[64], val[4096];
	long n = 0;
	if (xkv_snap_open(&r, path, salvage, err, errlen))
		return -2;
	for (size_t b = 0; b < r.nblk; b++) {
		__u8 *raw;
		if (xkv_snap_read_block(&r, b, &raw)) {
			if (salvage)
				continue; /* the tests damage the end only: the items before stay in order */
			snprintf(err, errlen, "block %zu: %s", b, r.blk[b].why ? r.blk[b].why : "?");
			xkv_snap_close(&r);
			return -3;
		}
		const __u8 *p = raw;
		struct xkv_snap_item got, want;
		while (xkv_snap_item_next(&p, raw + r.blk[b].h.raw_len, &got) == 1) {
			item_make((unsigned)n, key, val, &want);
			if (got.klen != want.klen || got.vlen != want.vlen || got.flags != want.flags ||
			    got.expire_unix_ns != want.expire_unix_ns || got.has_cas != want.has_cas ||
			    got.cas != want.cas || memcmp(got.key, want.key, got.klen) ||
			    memcmp(got.val, want.val, got.vlen)) {
				free(raw);
				xkv_snap_close(&r);
				snprintf(err, errlen, "item %ld differs", n);
				return -1;
			}
			n++;
		}
		free(raw);
	}
	xkv_snap_close(&r);
	return n;
}

static int copy_file(const char *from, const char *to, long cut, long flip)
{
	FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
	int c;
	long i = 0;
	if (!a || !b)
		return -1;
	while ((c = fgetc(a)) != EOF && (cut < 0 || i < cut)) {
		fputc(i == flip ? c ^ 0x40 : c, b);
		i++;
	}
	fclose(a);
	return fclose(b);
}

static void crash_points(const char *p, unsigned n_old);

static void test_format(void)
{
	char p[512], q[512], err[XKV_ERRLEN];
	const char *specs[] = { "none", "lz4", "zstd", "zstd:19" };
	const unsigned N = 2000, PER = 300;

	for (int i = 0; i < 4; i++) {
		int codec, level;
		xkv_codec_parse(specs[i], &codec, &level);
		path_of(p, sizeof(p), "rt.snap");
		int blocks = write_file(p, codec, level, N, PER);
		long n = read_check(p, false, err, sizeof(err));
		CHECK(blocks == (int)((N + PER - 1) / PER) && n == N, "round trip %s: %ld of %u items back, "
		      "%d blocks (%s)", specs[i], n, N, blocks, n < 0 ? err : "exact");
	}

	/* a block lz4 cannot shrink (random bytes) is stored raw, marked codec none,
	 * and reads back exactly; so is every block of a codec-none file */
	{
		struct xkv_snap_writer *w;
		struct xkv_snap_info info = { .layout = "test", .key_cap = 250, .val_cap = 4096, .entries = 1 };
		__u8 val[4096], buf[4200], key[] = "noise";
		unsigned seed = 12345;
		for (size_t v = 0; v < sizeof(val); v++)
			val[v] = (__u8)((seed = seed * 1103515245u + 12345u) >> 16);
		struct xkv_snap_item it = { .key = key, .klen = 5, .val = val, .vlen = sizeof(val), .flags = 7 };
		size_t len = xkv_snap_item_put(buf, &it);
		for (int k = 0; k < 2; k++) {
			int codec = k ? XKV_CODEC_NONE : XKV_CODEC_LZ4;
			path_of(p, sizeof(p), "raw.snap");
			bool ok = !xkv_snap_create(&w, p, &info, codec, 0, err, sizeof(err)) &&
				  !xkv_snap_put_block(w, buf, len, 1) && !xkv_snap_commit(w, err, sizeof(err));
			struct xkv_snap_reader r;
			__u8 *raw = NULL;
			struct xkv_snap_item got = { 0 };
			const __u8 *q2;
			ok = ok && !xkv_snap_open(&r, p, false, err, sizeof(err));
			if (ok) {
				ok = r.nblk == 1 && r.blk[0].h.codec == XKV_CODEC_NONE &&
				     r.blk[0].h.comp_len == len && r.blk[0].h.raw_len == len &&
				     !xkv_snap_read_block(&r, 0, &raw) && (q2 = raw) &&
				     xkv_snap_item_next(&q2, raw + len, &got) == 1 && got.vlen == sizeof(val) &&
				     got.klen == 5 && got.flags == 7 && !memcmp(got.val, val, sizeof(val));
				free(raw);
				xkv_snap_close(&r);
			}
			CHECK(ok, "%s: a block of random bytes is stored raw (codec none, %zu bytes) and "
			      "reads back exactly", k ? "codec none" : "lz4", len);
		}
	}

	/* lz4 file for the damage tests */
	path_of(p, sizeof(p), "good.snap");
	path_of(q, sizeof(q), "bad.snap");
	write_file(p, XKV_CODEC_LZ4, 0, N, PER);
	struct xkv_snap_reader r;
	if (xkv_snap_open(&r, p, false, err, sizeof(err))) {
		CHECK(0, "open good file: %s", err);
		return;
	}
	size_t nblk = r.nblk;
	struct xkv_snap_blkref *blk = malloc(nblk * sizeof(*blk));
	memcpy(blk, r.blk, nblk * sizeof(*blk));
	__u64 size = r.size;
	xkv_snap_close(&r);

	for (size_t b = 0; b < nblk; b++) {
		char want[64];
		snprintf(want, sizeof(want), "block %zu of", b);
		/* a byte of the payload: the open succeeds, the block check names it */
		copy_file(p, q, -1, (long)(blk[b].off + sizeof(blk[b].h) + blk[b].h.comp_len / 2));
		long n = read_check(q, false, err, sizeof(err));
		char want2[64];
		snprintf(want2, sizeof(want2), "block %zu:", b);
		CHECK(n == -3 && strstr(err, want2) && strstr(err, "checksum"),
		      "payload byte flipped in block %zu: detected (%s)", b, err);
		/* a byte of its header: refused at open, the block named */
		copy_file(p, q, -1, (long)(blk[b].off + 9));
		n = read_check(q, false, err, sizeof(err));
		CHECK(n == -2 && strstr(err, want) && strstr(err, "header damaged"),
		      "header byte flipped in block %zu: refused (%s)", b, err);
		/* salvage reads the other blocks: every item but this block's */
		n = read_check(q, true, err, sizeof(err));
		(void)n; /* items after the bad block shift: counted by the store test */
	}
	copy_file(p, q, -1, 20);
	long n = read_check(q, false, err, sizeof(err));
	CHECK(n == -2 && strstr(err, "file header is damaged"), "file header byte flipped: refused (%s)", err);

	/* truncated: inside the last payload, inside the last header, at a block boundary */
	long cuts[] = { (long)size - 10, (long)blk[nblk - 1].off + 20, (long)blk[nblk - 1].off };
	for (int i = 0; i < 3; i++) {
		copy_file(p, q, cuts[i], -1);
		n = read_check(q, false, err, sizeof(err));
		CHECK(n == -2 && strstr(err, "truncated"), "cut at %ld of %llu bytes: refused (%s)", cuts[i],
		      (unsigned long long)size, err);
		n = read_check(q, true, err, sizeof(err));
		CHECK(n == (long)((nblk - 1) * PER), "cut at %ld: salvage reads the %zu whole blocks (%ld items)",
		      cuts[i], nblk - 1, n);
	}
	n = read_check("/nonexistent/x.snap", false, err, sizeof(err));
	CHECK(n == -2 && strstr(err, "cannot open"), "missing file: %s", err);
	free(blk);

	crash_points(p, N);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The snapshot writer SIGKILLed at KILLS random points of its run (seeded:
 * XKV_CRASH_SEED, else the clock; printed): every time FILE must read back
 * whole, as the snapshot of before (killed before the rename) or the new one
 * (after it), never damaged or missing.  FILE holds n_old items. */
static void crash_points(const char *p, unsigned n_old)
{
	const unsigned N2 = 4000, PER2 = 200, KILLS = 100;
	const char *env = getenv("XKV_CRASH_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
	char orig[512], t[512], tmp[600], err[XKV_ERRLEN];
	int old = 0, fresh = 0, bad = 0;

	printf("crash points: seed %u (XKV_CRASH_SEED=%u repeats them)\n", seed, seed);
	srand(seed);
	path_of(orig, sizeof(orig), "orig.snap");
	path_of(t, sizeof(t), "timing.snap");
	copy_file(p, orig, -1, -1);
	/* one whole run of the writer, to spread the kills over it and a bit past */
	double t0 = now_s();
	write_file(t, XKV_CODEC_LZ4, 0, N2, PER2);
	double whole = now_s() - t0;
	unlink(t);
	for (unsigned k = 0; k < KILLS; k++) {
		copy_file(orig, p, -1, -1);
		int codec = k % 2 ? XKV_CODEC_LZ4 : XKV_CODEC_NONE;
		pid_t pid = fork();
		if (pid == 0) {
			write_file(p, codec, 0, N2, PER2);
			_exit(0);
		}
		useconds_t at = (useconds_t)((double)rand() / RAND_MAX * whole * 1.2e6);
		usleep(at);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		long n = read_check(p, false, err, sizeof(err));
		if (n == (long)n_old)
			old++;
		else if (n == (long)N2)
			fresh++;
		else if (++bad <= 3)
			printf("  killed at %u us (%s): %ld items: %s\n", (unsigned)at, xkv_codec_name(codec), n, err);
		snprintf(tmp, sizeof(tmp), "%s/.good.snap.tmp.%d", dir, (int)pid);
		unlink(tmp); /* what a killed writer leaves (docs/snapshots.md) */
	}
	unlink(orig);
	CHECK(!bad && old > 0, "writer SIGKILLed at %u random points of its %.0f ms run (seed %u): the file "
	      "read back whole every time: %d times the snapshot of before, %d times the new one, %d damaged",
	      KILLS, whole * 1e3, seed, old, fresh, bad);
}

/* ---- through stores ---- */

struct store {
	struct bpf_object *obj;
	struct xkv_store s;
};

/* The big map's chunks for the next store_open (0: no values above val_cap). */
static __u32 store_big_chunks;

static unsigned small_of(unsigned n)
{
	unsigned small = 0;
	for (unsigned i = 0; i < n; i++)
		small += 50 + i % 200 <= 100;
	return small;
}

static int store_open(struct store *st, const char *layout, __u32 entries, __u32 val_cap)
{
	char err[XKV_ERRLEN];
	struct xkv_config cfg;
	memset(st, 0, sizeof(*st));
	if (xkv_config_defaults(&cfg, layout))
		return -1;
	cfg.entries = entries;
	cfg.val_cap = val_cap;
	cfg.key_cap = 32;
	cfg.big_chunks = store_big_chunks;
	if (xkv_inproc_load(&cfg, NULL, &st->obj, &st->s, err, sizeof(err))) {
		printf("FAIL %s: %s\n", layout, err);
		fails++;
		return -1;
	}
	return 0;
}

static void store_close(struct store *st)
{
	xkv_store_close(&st->s);
	bpf_object__close(st->obj);
}

/* n items "k<i>" with value "v<i>/" repeated to 50 + i % 200 bytes, flags i */
static void fill(struct store *st, unsigned n)
{
	char key[32], val[400];
	for (unsigned i = 0; i < n; i++) {
		int kl = snprintf(key, sizeof(key), "k%u", i);
		unsigned vl = 50 + i % 200;
		for (unsigned v = 0; v < vl; v++)
			val[v] = v % 9 == 4 ? '\0' : v % 9 == 5 ? '\r' : v % 9 == 6 ? '\n' : (char)('a' + (i + v) % 26);
		struct xkv_entry *e = xkv_entry_make(&st->s, i, i % 2 ? 0 : 100000, val, vl);
		e->klen = (__u32)kl;
		st->s.L->set(&st->s, key, (__u32)kl, e);
		free(e);
	}
}

/* How many of items [0, n) does the store hold, exactly as fill() made them
 * (and, with src, with the cas unique src holds for it)? */
static unsigned present_as(struct store *st, unsigned n, struct store *src)
{
	struct xkv_item *it = malloc(sizeof(*it)), *si = malloc(sizeof(*si));
	char key[32], val[400];
	unsigned ok = 0;
	for (unsigned i = 0; i < n; i++) {
		int kl = snprintf(key, sizeof(key), "k%u", i);
		unsigned vl = 50 + i % 200;
		for (unsigned v = 0; v < vl; v++)
			val[v] = v % 9 == 4 ? '\0' : v % 9 == 5 ? '\r' : v % 9 == 6 ? '\n' : (char)('a' + (i + v) % 26);
		ok += st->s.L->get(&st->s, key, (__u32)kl, it) == 1 && it->len == vl && it->flags == i &&
		      !memcmp(it->data, val, vl) && (i % 2 || it->expire_ns) &&
		      (!src || (src->s.L->get(&src->s, key, (__u32)kl, si) == 1 && si->wtime_ns == it->wtime_ns));
	}
	free(it);
	free(si);
	return ok;
}

static unsigned present(struct store *st, unsigned n)
{
	return present_as(st, n, NULL);
}

/* The stamps restore gives (xkv_restore_stamp): a cas from this clock's past
 * is kept; one from a later clock (another boot's) is not, or the item would
 * outlive flush_all; a big value always gets a fresh one. */
static void test_restore_stamps(void)
{
	char p[512], err[XKV_ERRLEN];
	struct xkv_snap_writer *w;
	struct xkv_snap_info info = { .layout = "test", .key_cap = 250, .val_cap = 4096, .entries = 3 };
	static __u8 buf[3 * 6000], bigv[5000];
	__u64 now = xkv_now_ns();
	struct xkv_snap_item it[3] = {
		{ .key = (const __u8 *)"past", .klen = 4, .val = (const __u8 *)"p", .vlen = 1,
		  .has_cas = true, .cas = 12345 << XKV_STAMP_ID_BITS },
		{ .key = (const __u8 *)"future", .klen = 6, .val = (const __u8 *)"f", .vlen = 1,
		  .has_cas = true, .cas = now + 3600ull * 1000000000ull },
		{ .key = (const __u8 *)"bigpast", .klen = 7, .val = bigv, .vlen = sizeof(bigv),
		  .has_cas = true, .cas = 777 << XKV_STAMP_ID_BITS },
	};
	size_t len = 0;
	path_of(p, sizeof(p), "stamps.snap");
	if (xkv_snap_create(&w, p, &info, XKV_CODEC_LZ4, 0, err, sizeof(err))) {
		CHECK(0, "stamps: create: %s", err);
		return;
	}
	for (int i = 0; i < 3; i++)
		len += xkv_snap_item_put(buf + len, &it[i]);
	CHECK(!xkv_snap_put_block(w, buf, len, 3) && !xkv_snap_commit(w, err, sizeof(err)),
	      "stamps: a file of 3 items");
	struct store b;
	store_big_chunks = 64;
	if (store_open(&b, "hash_map", 1024, 1024)) {
		store_big_chunks = 0;
		return;
	}
	store_big_chunks = 0;
	struct xkv_snap_opts ro = { .threads = 1 };
	struct xkv_snap_result res;
	__u64 t0 = xkv_now_ns() & ~XKV_STAMP_ID_MASK;
	int e = xkv_restore(&b.s, p, &ro, &res, err, sizeof(err));
	__u64 t1 = xkv_now_ns();
	struct xkv_item *x = malloc(sizeof(*x));
	__u64 got[3] = { 0 };
	for (int i = 0; i < 3 && x; i++)
		got[i] = b.s.L->get(&b.s, it[i].key, it[i].klen, x) == 1 ? x->wtime_ns : 0;
	CHECK(!e && res.stored == 3, "stamps: restored %llu of 3 (%s)", (unsigned long long)res.stored,
	      e ? err : "ok");
	CHECK(got[0] == it[0].cas, "stamps: a cas from this clock's past kept (%llu)",
	      (unsigned long long)got[0]);
	CHECK(got[1] && got[1] != it[1].cas && got[1] < t1,
	      "stamps: a cas from a later clock (an hour ahead) replaced by a fresh stamp (%llu, now %llu)",
	      (unsigned long long)got[1], (unsigned long long)t1);
	CHECK(got[2] && got[2] != it[2].cas && (got[2] & ~XKV_STAMP_ID_MASK) >= t0,
	      "stamps: a value from chunks gets a fresh stamp (%llu)", (unsigned long long)got[2]);
	free(x);
	store_close(&b);
}

static void test_store(void)
{
	const char *layouts[] = { "hash_map", "array_fnv", "lru", "percpu" };
	const unsigned N = 3000;
	char p[512], q[512], err[XKV_ERRLEN];
	struct xkv_snap_result res;

	path_of(p, sizeof(p), "store.snap");
	path_of(q, sizeof(q), "store-bad.snap");
	struct store a, b;
	if (store_open(&b, "hash_map", 8192, 512))
		return;
	for (int l = 0; l < 4; l++) {
		if (store_open(&a, layouts[l], 8192, 512))
			continue;
		fill(&a, N);
		long live = a.s.L->count(&a.s);
		for (int t = 1; t <= 5; t += 2) {
			struct xkv_snap_opts o = { .threads = t, .codec = XKV_CODEC_LZ4 };
			int e = xkv_snapshot(&a.s, p, &o, &res, err, sizeof(err));
			CHECK(!e && (long)res.items == live, "%s: snapshot with %d threads: %llu items of %ld live (%s)",
			      layouts[l], t, (unsigned long long)res.items, live, e ? err : "ok");
			b.s.L->flush(&b.s, XKV_FLUSH_ALL);
			struct xkv_snap_opts ro = { .threads = 2 };
			e = xkv_restore(&b.s, p, &ro, &res, err, sizeof(err));
			unsigned got = present_as(&b, N, &a), had = present(&a, N);
			CHECK(!e && res.stored == (__u64)live && got == had && b.s.L->count(&b.s) == live,
			      "%s -> hash_map (%d threads): %u items back exactly, each with its cas unique, "
			      "as the source holds %u", layouts[l], t, got, had);
		}
		store_close(&a);
	}

	/* damage, through a store: refused before anything is stored; salvage
	 * restores exactly the intact blocks */
	if (store_open(&a, "hash_map", 8192, 512))
		return;
	fill(&a, N);
	struct xkv_snap_opts o = { .threads = 1, .codec = XKV_CODEC_ZSTD, .level = 3, .block_bytes = 64 << 10 };
	xkv_snapshot(&a.s, p, &o, &res, err, sizeof(err));
	struct xkv_snap_reader r;
	xkv_snap_open(&r, p, false, err, sizeof(err));
	size_t bad = r.nblk / 2;
	__u64 off = r.blk[bad].off + sizeof(r.blk[bad].h) + 5;
	__u32 bad_items = r.blk[bad].h.items;
	size_t nblk = r.nblk;
	xkv_snap_close(&r);
	copy_file(p, q, -1, (long)off);
	b.s.L->flush(&b.s, XKV_FLUSH_ALL);
	struct xkv_snap_opts ro = { .threads = 2 };
	int e = xkv_restore(&b.s, q, &ro, &res, err, sizeof(err));
	char want[64];
	snprintf(want, sizeof(want), "block %zu of %zu", bad, nblk);
	CHECK(e == -EBADMSG && strstr(err, want) && b.s.L->count(&b.s) == 0,
	      "damaged block refused, the store untouched: %s", err);
	ro.salvage = true;
	e = xkv_restore(&b.s, q, &ro, &res, err, sizeof(err));
	CHECK(!e && nblk > 2 && res.bad_blocks == 1 && res.lost_items == bad_items &&
	      res.stored == N - bad_items && present(&b, N) == N - bad_items,
	      "salvage: %llu stored = %u - %u of the bad block, all of them exact (%llu bad blocks)",
	      (unsigned long long)res.stored, N, bad_items, (unsigned long long)res.bad_blocks);
	store_close(&b);
	o.threads = 2;

	/* migrations: smaller hash_map, small array_fnv, smaller values */
	xkv_snapshot(&a.s, p, &o, &res, err, sizeof(err));
	if (!store_open(&b, "hash_map", 1000, 512)) {
		xkv_restore(&b.s, p, &ro, &res, err, sizeof(err));
		long live = b.s.L->count(&b.s);
		CHECK(res.full > 0 && res.stored + res.full == N && (long)res.stored == live,
		      "into a hash_map of 1000: %llu stored, %llu full, %ld live", (unsigned long long)res.stored,
		      (unsigned long long)res.full, live);
		store_close(&b);
	}
	if (!store_open(&b, "array_fnv", 2048, 512)) {
		xkv_restore(&b.s, p, &ro, &res, err, sizeof(err));
		long live = b.s.L->count(&b.s);
		CHECK(res.collisions > 0 && res.stored == N && (long)(res.stored - res.collisions) == live,
		      "into an array_fnv of 2048: %llu stored, %llu collisions, %ld live",
		      (unsigned long long)res.stored, (unsigned long long)res.collisions, live);
		store_close(&b);
	}
	if (!store_open(&b, "lru", 8192, 100)) {
		xkv_restore(&b.s, p, &ro, &res, err, sizeof(err));
		unsigned small = 0;
		for (unsigned i = 0; i < N; i++)
			small += 50 + i % 200 <= 100;
		CHECK(res.too_big == N - small && res.stored == small,
		      "into values <= 100 B: %llu too big, %llu stored", (unsigned long long)res.too_big,
		      (unsigned long long)res.stored);
		store_close(&b);
	}
	/* with a big map: the values above 100 B go there, and come back whole */
	store_big_chunks = 4096;
	if (!store_open(&b, "lru", 8192, 100)) {
		__u64 t0 = xkv_now_ns() & ~XKV_STAMP_ID_MASK;
		xkv_restore(&b.s, p, &ro, &res, err, sizeof(err));
		struct xkv_item *ia = malloc(sizeof(*ia)), *ib = malloc(sizeof(*ib));
		__u8 *big = NULL;
		size_t cap = 0;
		unsigned same = 0, bigs = 0;
		__u8 k[XKV_KEY_MAX + 8];
		for (__u32 i = 0; ia && ib; ) {
			/* every source item: the same value and flags; its cas
			 * back too, but a value from chunks gets a fresh stamp
			 * (xkv_restore_stamp: the collector keeps young chunks) */
			int kl = bpf_map_get_next_key(a.s.store_fd, i ? k : NULL, k) ? -1 : (int)strnlen((char *)k, a.s.cfg.key_size);
			if (kl < 0)
				break;
			i++;
			if (a.s.L->get(&a.s, k, (__u32)kl, ia) != 1 ||
			    xkv_item_get_whole(&b.s, k, (__u32)kl, ib, &big, &cap) != 1)
				continue;
			const __u8 *v = ib->len > 100 ? big : ib->data;
			bigs += ib->len > 100;
			bool cas_ok = ib->len > 100 ? (ib->wtime_ns & ~XKV_STAMP_ID_MASK) >= t0
						    : ia->wtime_ns == ib->wtime_ns;
			same += ia->len == ib->len && ia->flags == ib->flags && cas_ok &&
				!memcmp(ia->data, v, ia->len);
		}
		CHECK(res.too_big == 0 && res.stored == N && same == N && bigs == N - small_of(N),
		      "into values <= 100 B with a big map: %llu too big, %llu stored, %u read back the same, "
		      "cas kept, a fresh one for the %u from chunks", (unsigned long long)res.too_big, (unsigned long long)res.stored, same,
		      bigs);
		free(ia);
		free(ib);
		free(big);
		store_close(&b);
	}
	store_big_chunks = 0;
	store_close(&a);
	test_restore_stamps();
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "format") && strcmp(argv[1], "store"))) {
		fprintf(stderr, "usage: %s format|store\n", argv[0]);
		return 2;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	if (!strcmp(argv[1], "format"))
		test_format();
	else
		test_store();
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	printf("%s: %d failed checks\n", argv[1], fails);
	return fails ? 1 : 0;
}
