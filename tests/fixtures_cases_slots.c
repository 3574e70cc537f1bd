// SPDX-License-Identifier: MIT
/* Packet fixtures, layout scenarios: array_fnv collisions, the arena's
 * window and addresses, set_assoc/sieve/s3fifo eviction order. */
#include "fixtures_test.h"

/* ---- layout-specific scenarios ------------------------------------------------------- */

/* arena, 4 slots (one window holds the whole table, from each key's home
 * on): a full window takes a new key only by replacing the item written
 * longest ago; a deleted slot is taken first (no tombstones: the keys
 * stored past it are still found); a key stored again stays where it is
 * and counts as written now; the accessor stores by the same rule.  Every
 * step is checked against the model (refmodel.c, RM_PROBE), the counters
 * also by hand. */
/* A store counted store_new +nw and overwrites +ov (d: the counters' change). */
static void counted(struct where *w, const struct xkv_stats *d, __u64 nw, __u64 ov, const char *what)
{
	if (d->v[XKV_STAT_store_new] != nw || d->v[XKV_STAT_overwrites] != ov)
		fail(w, "%s: store_new +%llu overwrites +%llu, expected +%llu +%llu", what,
		     (unsigned long long)d->v[XKV_STAT_store_new], (unsigned long long)d->v[XKV_STAT_overwrites],
		     (unsigned long long)nw, (unsigned long long)ov);
}

void case_arena_window(struct run *r)
{
	struct where w = { .r = r, .name = "arena window: first free slot, else the oldest write", .fam = FAM4 };
	struct rm_store m;
	struct xkv_stats d;
	char key[8][16], line[160], want[160];
	__u8 keys[8][XKV_KEY_MAX];
	__u32 kl[8];

	rm_store_init(&m, &r->mc);
	for (__u32 i = 0; i < 8; i++) {
		snprintf(key[i], sizeof(key[i]), "win%u", i);
		kl[i] = (__u32)strlen(key[i]);
		memcpy(keys[i], key[i], kl[i]);
	}
	flush_store(r);
	for (__u32 i = 0; i < 4; i++) { /* fill: every store new */
		snprintf(line, sizeof(line), "set %s %u 0 1\r\nv\r\n", key[i], i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
		counted(&w, &d, 1, 0, "filling the table");
	}
	/* a hole: the other three are still found */
	snprintf(line, sizeof(line), "delete %s\r\n", key[1]);
	xdp_req(&w, &m, line, TX, XKV_R_DELETED, NULL);
	snprintf(line, sizeof(line), "get %s %s %s %s\r\n", key[0], key[1], key[2], key[3]);
	snprintf(want, sizeof(want), "VALUE %s 0 1\r\nv\r\nVALUE %s 2 1\r\nv\r\nVALUE %s 3 1\r\nv\r\nEND\r\n",
		 key[0], key[2], key[3]);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* the hole is taken: new, nothing replaced */
	snprintf(line, sizeof(line), "set %s 4 0 1\r\nn\r\n", key[4]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	counted(&w, &d, 1, 0, "store into the hole");
	/* key 0 written again in place: neither new nor a replacement */
	snprintf(line, sizeof(line), "set %s 10 0 1\r\nw\r\n", key[0]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	counted(&w, &d, 0, 0, "store of a present key");
	/* full: key 2, now the oldest write, is replaced */
	snprintf(line, sizeof(line), "set %s 5 0 1\r\nf\r\n", key[5]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	counted(&w, &d, 0, 1, "store into a full window");
	snprintf(line, sizeof(line), "get %s %s %s\r\n", key[2], key[0], key[5]);
	snprintf(want, sizeof(want), "VALUE %s 10 1\r\nw\r\nVALUE %s 5 1\r\nf\r\nEND\r\n", key[0], key[5]);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* the accessor: key 3 is the oldest now */
	__u8 v = 'u';
	seed_one(&w, &m, key[6], 6, 0, &v, 1);
	snprintf(line, sizeof(line), "get %s %s\r\n", key[3], key[6]);
	snprintf(want, sizeof(want), "VALUE %s 6 1\r\nu\r\nEND\r\n", key[6]);
	xdp_req(&w, &m, line, TX, want, NULL);
	w.step = 0;
	check_store(&w, &m, keys, kl, 8);
	rm_store_free(&m);
	case_done(r, &w);
}

/* arena: every process maps the arena at the address in cfg.arena_base.  A
 * second open in this process shares the mapping; an open at an address
 * something else occupies fails, naming the address. */
void case_arena_address(struct run *r)
{
	struct where w = { .r = r, .name = "arena address: shared in a process, occupied refused by name", .fam = FAM4 };
	struct xkv_store s2;
	char err[XKV_ERRLEN] = "", want[32];
	int e = xkv_store_adopt(&s2, &r->st, dup(r->st.store_fd), &r->st.cfg, err, sizeof(err));
	if (e || s2.mm != r->st.mm)
		fail(&w, "second open of the same arena: %s, mapped at %p, first at %p", e ? err : "ok", s2.mm,
		     r->st.mm);
	if (!e)
		xkv_store_drop(&s2); /* the first mapping stays */
	if (*(volatile __u64 *)r->st.mm != XKV_AR_READY)
		fail(&w, "the first mapping went with the second");
	/* another window, occupied by an anonymous mapping */
	__u64 other = r->st.cfg.arena_base - XKV_AR_WINDOW_BYTES * (XKV_AR_BASES - 1);
	void *p = mmap((void *)(uintptr_t)other, XKV_AR_PAGE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)(uintptr_t)other) {
		fail(&w, "test bug: cannot occupy %#llx", (unsigned long long)other);
	} else {
		struct xkv_config c = r->st.cfg;
		c.arena_base = other;
		snprintf(want, sizeof(want), "%#llx", (unsigned long long)other);
		err[0] = 0;
		e = xkv_store_adopt(&s2, &r->st, dup(r->st.store_fd), &c, err, sizeof(err));
		if (!e || !strstr(err, want))
			fail(&w, "open at occupied %s: %s (%s)", want, e ? "refused" : "accepted", err);
		if (!e)
			xkv_store_drop(&s2);
		else
			close(s2.store_fd);
		munmap(p, XKV_AR_PAGE);
	}
	case_done(r, &w);
}

/* The bucketed layouts' one-bucket cases (entries 1 rounds up to the ways):
 * check that the store is one bucket, name n keys "<prefix><i>" (at most
 * 24, each under 16 bytes), empty the store.  -1 (failed) if it is not one
 * bucket. */
static int one_bucket(struct where *w, const char *prefix, __u32 n, char (*key)[16],
		      __u8 (*keys)[XKV_KEY_MAX], __u32 *kl)
{
	struct run *r = w->r;
	if (r->st.cfg.entries != r->mc.ways || r->mc.ways > 8 || n > 24) {
		fail(w, "entries %u, expected one bucket of %u ways", r->st.cfg.entries, r->mc.ways);
		return -1;
	}
	for (__u32 i = 0; i < n; i++) {
		snprintf(key[i], 16, "%s%u", prefix, i);
		kl[i] = (__u32)strlen(key[i]);
		memcpy(keys[i], key[i], kl[i]);
	}
	flush_store(r);
	return 0;
}

/* set_assoc, one bucket (entries 1 rounds up to the ways): CLOCK.  The
 * bucket fills without evicting; a get hit sets a way's reference bit; a new
 * key then evicts the first way from the hand without one (clearing the bits
 * it passes); a deleted or expired way is taken before anything is evicted;
 * the accessor stores by the same rule.  Every step is checked against the
 * model's CLOCK (refmodel.c), the counters also by hand. */
void case_set_assoc_clock(struct run *r)
{
	struct where w = { .r = r, .name = "set_assoc CLOCK within a bucket", .fam = FAM4 };
	struct rm_store m;
	struct xkv_stats d;
	const __u32 W = r->mc.ways, nk = W + 5;
	char key[16][16], line[96], want[96];
	__u8 keys[16][XKV_KEY_MAX];
	__u32 kl[16];

	rm_store_init(&m, &r->mc);
	if (one_bucket(&w, "clk", nk, key, keys, kl))
		goto out;
	for (__u32 i = 0; i < W; i++) { /* fill: every store new */
		snprintf(line, sizeof(line), "set %s %u 0 1\r\nv\r\n", key[i], i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
		if (d.v[XKV_STAT_store_new] != 1 || d.v[XKV_STAT_overwrites])
			fail(&w, "filling way %u: store_new +%llu overwrites +%llu, expected +1 +0", i,
			     (unsigned long long)d.v[XKV_STAT_store_new],
			     (unsigned long long)d.v[XKV_STAT_overwrites]);
	}
	/* referenced: way 0 and way 2 */
	snprintf(line, sizeof(line), "get %s %s\r\n", key[0], key[2]);
	snprintf(want, sizeof(want), "VALUE %s 0 1\r\nv\r\nVALUE %s 2 1\r\nv\r\nEND\r\n", key[0], key[2]);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* hand at 0: way 0 loses its bit, way 1 is the victim */
	snprintf(line, sizeof(line), "set %s 9 0 1\r\nn\r\n", key[W]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	if (d.v[XKV_STAT_overwrites] != 1 || d.v[XKV_STAT_store_new])
		fail(&w, "store into a full bucket: overwrites +%llu store_new +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_overwrites], (unsigned long long)d.v[XKV_STAT_store_new]);
	snprintf(line, sizeof(line), "get %s\r\n", key[1]);
	xdp_req(&w, &m, line, TX, XKV_R_END, NULL);
	/* hand at 2: way 2 loses its bit, way 3 goes (from the accessor) */
	__u8 v = 'u';
	seed_one(&w, &m, key[W + 1], 7, 0, &v, 1);
	snprintf(line, sizeof(line), "get %s %s %s\r\n", key[3], key[0], key[W + 1]);
	snprintf(want, sizeof(want), "VALUE %s 0 1\r\nv\r\nVALUE %s 7 1\r\nu\r\nEND\r\n", key[0],
		 key[W + 1]);
	xdp_req(&w, &m, line, TX, want, NULL);
	/* a deleted way is taken first: new, nothing evicted */
	snprintf(line, sizeof(line), "delete %s\r\n", key[W]);
	xdp_req(&w, &m, line, TX, XKV_R_DELETED, NULL);
	snprintf(line, sizeof(line), "set %s 0 0 1\r\nd\r\n", key[W + 2]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	if (d.v[XKV_STAT_store_new] != 1 || d.v[XKV_STAT_overwrites])
		fail(&w, "store after a delete: store_new +%llu overwrites +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_store_new], (unsigned long long)d.v[XKV_STAT_overwrites]);
	/* so is an expired one (key 0 rewritten in place as already expired) */
	snprintf(line, sizeof(line), "set %s 0 -1 1\r\nx\r\n", key[0]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	snprintf(line, sizeof(line), "set %s 0 0 1\r\ne\r\n", key[W + 3]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	if (d.v[XKV_STAT_store_new] != 1 || d.v[XKV_STAT_overwrites])
		fail(&w, "store over an expired way: store_new +%llu overwrites +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_store_new], (unsigned long long)d.v[XKV_STAT_overwrites]);
	/* and one more eviction, from where the hand is now */
	snprintf(line, sizeof(line), "set %s 0 0 1\r\nf\r\n", key[W + 4]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, &d);
	w.step = 0;
	check_store(&w, &m, keys, kl, nk);
	if (rm_store_live(&m, unix_now()) != (long)W || r->st.L->count(&r->st) != (long)W)
		fail(&w, "live items: model %ld, store %ld, expected %u (a full bucket)",
		     rm_store_live(&m, unix_now()), r->st.L->count(&r->st), W);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* A bucketed layout (set_assoc, sieve, s3fifo), one bucket: 600 random
 * requests over 3 x ways keys (get, set, delete through XDP, sets through
 * the accessor, some items already expired), every reply and counter checked
 * against the model's policy (refmodel.c), which picks each victim its own
 * way (insertion times, not the store's order array); at the end the store
 * holds what the model holds.  A wrong victim shows as a get that hits in one
 * and misses in the other. */
void case_bucket_random(struct run *r)
{
	struct where w = { .r = r, .name = "bucket policy against the model, random requests", .fam = FAM4 };
	struct rm_store m;
	const __u32 W = r->mc.ways, nk = 3 * W;
	char key[24][16], line[128];
	__u8 keys[24][XKV_KEY_MAX];
	__u32 kl[24];
	__u64 x = 0x9e3779b97f4a7c15ull ^ (__u64)W;

	rm_store_init(&m, &r->mc);
	if (one_bucket(&w, "rnd", nk, key, keys, kl))
		goto out;
	for (int step = 0; step < 600 && !w.bad; step++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
		__u32 k = (__u32)(x >> 8) % nk, op = (__u32)(x >> 40) % 100;
		/* skewed: low keys more often, so hits and frequencies build up */
		if (op & 1)
			k = k % (W + 1);
		if (op < 50) {
			snprintf(line, sizeof(line), "get %s\r\n", key[k]);
		} else if (op < 85) {
			snprintf(line, sizeof(line), "set %s %u %d 2\r\nv%u\r\n", key[k], op, op < 53 ? -1 : 0, k % 10);
		} else if (op < 90) {
			snprintf(line, sizeof(line), "delete %s\r\n", key[k]);
		} else {
			__u8 v = (__u8)('a' + k);
			seed_one(&w, &m, key[k], op, 0, &v, 1);
			continue;
		}
		xdp_req(&w, &m, line, -1, NULL, NULL);
	}
	w.step = 0;
	check_store(&w, &m, keys, kl, nk);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* sieve, one bucket, by hand (and against the model): where SIEVE and CLOCK
 * part.  Fill k0..k7 (oldest first); get k0; a new key A: the hand passes k0
 * (clearing it) and evicts k1, A is the newest.  Get k2..k7; a new key B:
 * the hand clears k2..k7 and then reaches A before k0 (A is newer than k0 in
 * the insertion order), so A goes.  CLOCK would have put A in k1's way,
 * behind the hand, and evicted k0 instead. */
void case_sieve_hand(struct run *r)
{
	struct where w = { .r = r, .name = "sieve: a new item is the newest, not behind the hand", .fam = FAM4 };
	struct rm_store m;
	const __u32 W = r->mc.ways, nk = W + 2;
	char key[10][16], line[256];
	__u8 keys[10][XKV_KEY_MAX];
	__u32 kl[10];

	rm_store_init(&m, &r->mc);
	if (one_bucket(&w, "sv", nk, key, keys, kl))
		goto out;
	for (__u32 i = 0; i < W; i++) {
		snprintf(line, sizeof(line), "set %s %u 0 1\r\nv\r\n", key[i], i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	}
	snprintf(line, sizeof(line), "get %s\r\n", key[0]);
	xdp_req(&w, &m, line, TX, NULL, NULL);
	snprintf(line, sizeof(line), "set %s 0 0 1\r\nA\r\n", key[W]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	for (__u32 i = 2; i < W; i++) {
		snprintf(line, sizeof(line), "get %s\r\n", key[i]);
		xdp_req(&w, &m, line, TX, NULL, NULL);
	}
	snprintf(line, sizeof(line), "set %s 0 0 1\r\nB\r\n", key[W + 1]);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	/* by hand: k1 and A gone, k0 kept */
	static struct xkv_item it;
	if (r->L->get(&r->st, keys[1], kl[1], &it) != 0 || r->L->get(&r->st, keys[W], kl[W], &it) != 0)
		fail(&w, "%s or %s still there: SIEVE evicts them", key[1], key[W]);
	if (r->L->get(&r->st, keys[0], kl[0], &it) != 1)
		fail(&w, "%s is gone: SIEVE keeps it (the hand passed it, A was newer)", key[0]);
	w.step = 0;
	check_store(&w, &m, keys, kl, nk);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* s3fifo, one bucket, by hand (and against the model).  Fill k0..k(W-1):
 * k0 goes to small, the rest (small holds its share) to main.  A new key A:
 * small's k0 (not read twice) is evicted and its tag kept as a ghost; A goes
 * to small.  k0 again: small's A goes (ghost), k0 is a ghost hit and goes to
 * main, as the newest.  B: small is empty, so main's oldest unread way goes:
 * k1.  Read B twice and k2 once; C: small's B was read twice and moves to
 * main, then main's oldest, k2, was read, so it is kept (count down, to
 * main's newest end) and k3 goes. */
void case_s3fifo_queues(struct run *r)
{
	struct where w = { .r = r, .name = "s3fifo: small, ghost, main", .fam = FAM4 };
	struct rm_store m;
	const __u32 W = r->mc.ways, A = W, B = W + 1, C = W + 2;
	char key[12][16], line[256];
	__u8 keys[12][XKV_KEY_MAX];
	__u32 kl[12];
	static struct xkv_item it;

	rm_store_init(&m, &r->mc);
	if (one_bucket(&w, "s3k", W + 3, key, keys, kl))
		goto out;
#define S3SET(i) (snprintf(line, sizeof(line), "set %s %u 0 1\r\nv\r\n", key[i], i), \
		  xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL))
#define S3GET(i) (snprintf(line, sizeof(line), "get %s\r\n", key[i]), xdp_req(&w, &m, line, TX, NULL, NULL))
#define S3HAS(i, want, why) \
	do { \
		if (r->L->get(&r->st, keys[i], kl[i], &it) != (want)) \
			fail(&w, "%s %s, expected %s (%s)", key[i], (want) ? "absent" : "present", \
			     (want) ? "present" : "absent", why); \
	} while (0)
	for (__u32 i = 0; i < W; i++)
		S3SET(i);
	S3SET(A);
	S3HAS(0, 0, "evicted from small");
	S3SET(0);
	S3HAS(A, 0, "evicted from small");
	S3HAS(0, 1, "a ghost hit: into main");
	S3SET(B);
	S3HAS(1, 0, "small empty: main's oldest");
	S3GET(B);
	S3GET(B);
	S3GET(2);
	S3SET(C);
	S3HAS(B, 1, "read twice in small: moved to main");
	S3HAS(2, 1, "read in main: kept");
	S3HAS(3, 0, "main's oldest unread");
#undef S3SET
#undef S3GET
#undef S3HAS
	/* the accessor's gets above count as reads in the store, not in the
	 * model: compare the contents only */
	w.step = 0;
	check_store(&w, &m, keys, kl, W + 3);
out:
	rm_store_free(&m);
	case_done(r, &w);
}

/* lru, 16 entries (lru_percpu: 15): 48 new keys all store; with one LRU
 * list shared by the CPUs, the first eviction comes with key entries + 1
 * even though they are all stored from CPU 0 (lru_percpu: the kernel counts
 * keys, not per-CPU copies, and does not round 15 to a multiple of the
 * CPUs); some early ones are evicted; what the accessor sees and what XDP
 * answers agree. */
void case_lru_evict(struct run *r)
{
	struct where w = { .r = r, .name = "lru evicts, stores never fail", .fam = FAM4 };
	struct rm_store m, seen;
	static struct xkv_item it;
	const int n = 48;
	char line[64], key[16];
	int present = 0, last_present = 0, first_evict = 0;

	rm_store_init(&m, &r->mc);
	rm_store_init(&seen, &r->mc);
	seen.cfg.entries = 1u << 30;
	flush_store(r);
	for (int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "set e%d %d 0 3\r\nv%02d\r\n", i, i, i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
		if (!first_evict && r->L->count(&r->st) < i + 1)
			first_evict = i + 1;
	}
	if (first_evict != (int)r->st.cfg.entries + 1)
		fail(&w, "the first eviction came with new key %d, expected %u (one shared LRU list: "
		     "CPU 0 alone fills every entry)", first_evict, r->st.cfg.entries + 1);
	long cnt = r->L->count(&r->st);
	if (cnt < 1 || cnt > (long)r->st.cfg.entries)
		fail(&w, "count %ld, expected 1..%u", cnt, r->st.cfg.entries);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "e%d", i);
		int e = r->L->get(&r->st, key, (__u32)strlen(key), &it);
		char want[8];
		snprintf(want, sizeof(want), "v%02d", i);
		if (e < 0) {
			fail(&w, "get %s: %s", key, strerror(-e));
			continue;
		}
		if (e == 1) {
			present++;
			last_present = i == n - 1;
			if (it.flags != (__u32)i || it.len != 3 || memcmp(it.data, want, 3))
				fail(&w, "%s holds a wrong value", key);
			rm_store_put(&seen, key, (__u32)strlen(key), (__u32)i, 0, want, 3,
				     unix_now());
		}
	}
	if (present != cnt)
		fail(&w, "%d keys readable, count says %ld", present, cnt);
	if (present >= n)
		fail(&w, "nothing was evicted from %u entries after %d new keys",
		     r->st.cfg.entries, n);
	if (!last_present)
		fail(&w, "the newest key is gone");
	/* XDP agrees with the accessor on every key, hit or miss */
	for (int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "get e%d\r\n", i);
		xdp_req(&w, &seen, line, TX, NULL, NULL);
	}
	rm_store_free(&m);
	rm_store_free(&seen);
	case_done(r, &w);
}
