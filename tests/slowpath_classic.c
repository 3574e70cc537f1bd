// SPDX-License-Identifier: MIT
/* Slow path tests: the classic text commands (get/set/add/replace, incr/decr,
 * append/prepend, gets/cas, touch/gat), errors, large values, multi-get,
 * a full hash_map, per-CPU copies. */
#include "slowpath_test.h"

/* ---- the unit tests ------------------------------------------------------- */

void t_basic(struct env *e)
{
	flush_store(e);
	EXPECT(e, "version\r\n", XKV_VERSION_LINE);
	EXPECT(e, "get nothere\r\n", "END\r\n");
	EXPECT(e, "set k1 5 0 3\r\nabc\r\n", "STORED\r\n");
	EXPECT(e, "get k1\r\n", "VALUE k1 5 3\r\nabc\r\nEND\r\n");
	EXPECT(e, "set k1 4294967295 0 0\r\n\r\n", "STORED\r\n");
	EXPECT(e, "get k1\r\n", "VALUE k1 4294967295 0\r\n\r\nEND\r\n");
	EXPECT(e, "set gone 0 -1 2\r\nxy\r\n", "STORED\r\n");
	EXPECT(e, "get gone\r\n", "END\r\n");
	EXPECT(e, "delete gone\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "set later 0 100 2\r\nxy\r\n", "STORED\r\n");
	EXPECT(e, "get later\r\n", "VALUE later 0 2\r\nxy\r\nEND\r\n");
	EXPECT(e, "delete k1\r\n", "DELETED\r\n");
	EXPECT(e, "delete k1\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "get k1\r\n", "END\r\n");
	EXPECT(e, "set k2 0 0 1 noreply\r\nz\r\n", "");
	EXPECT(e, "get k2\r\n", "VALUE k2 0 1\r\nz\r\nEND\r\n");
	EXPECT(e, "delete k2 0\r\n", "DELETED\r\n");
	EXPECT(e, "set k2 0 0 1\r\nz\r\n", "STORED\r\n");
	EXPECT(e, "delete k2 noreply\r\n", "");
	EXPECT(e, "get k2\r\n", "END\r\n");
	EXPECT(e, "delete k2 noreply\r\n", "");
}

void t_add_replace(struct env *e)
{
	flush_store(e);
	EXPECT(e, "replace r 0 0 1\r\nA\r\n", "NOT_STORED\r\n");
	EXPECT(e, "get r\r\n", "END\r\n");
	EXPECT(e, "add r 3 0 1\r\nB\r\n", "STORED\r\n");
	EXPECT(e, "add r 0 0 1\r\nC\r\n", "NOT_STORED\r\n");
	EXPECT(e, "get r\r\n", "VALUE r 3 1\r\nB\r\nEND\r\n");
	EXPECT(e, "replace r 7 0 2\r\nDD\r\n", "STORED\r\n");
	EXPECT(e, "get r\r\n", "VALUE r 7 2\r\nDD\r\nEND\r\n");
	EXPECT(e, "add r 0 0 1 noreply\r\nE\r\n", "");
	EXPECT(e, "replace nope 0 0 1 noreply\r\nE\r\n", "");
	EXPECT(e, "get r nope\r\n", "VALUE r 7 2\r\nDD\r\nEND\r\n");
	/* an expired item does not block add, and cannot be replaced */
	EXPECT(e, "set old 0 -1 1\r\nx\r\n", "STORED\r\n");
	EXPECT(e, "replace old 0 0 1\r\ny\r\n", "NOT_STORED\r\n");
	EXPECT(e, "add old 0 0 1\r\nz\r\n", "STORED\r\n");
	EXPECT(e, "get old\r\n", "VALUE old 0 1\r\nz\r\nEND\r\n");
}

void t_arith(struct env *e)
{
	struct xkv_item it;

	flush_store(e);
	EXPECT(e, "incr n 1\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "decr n 1\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "incr n 1 noreply\r\n", "");
	EXPECT(e, "set n 77 100 2\r\n10\r\n", "STORED\r\n");
	int r1 = e->s.L->get(&e->s, "n", 1, &it);
	__u64 exp_before = it.expire_ns;
	EXPECT(e, "incr n 5\r\n", "15\r\n");
	EXPECT(e, "get n\r\n", "VALUE n 77 2\r\n15\r\nEND\r\n");
	EXPECT(e, "incr n 85\r\n", "100\r\n");
	EXPECT(e, "get n\r\n", "VALUE n 77 3\r\n100\r\nEND\r\n");
	EXPECT(e, "decr n 1\r\n", "99\r\n");
	/* a shorter number is written in place, padded (memcached) */
	EXPECT(e, "get n\r\n", "VALUE n 77 3\r\n99 \r\nEND\r\n");
	int r2 = e->s.L->get(&e->s, "n", 1, &it);
	report(r1 == 1 && r2 == 1 && exp_before != 0 && it.expire_ns == exp_before && it.flags == 77,
	       "%s: incr/decr keep flags and expiry (expire_ns %llu -> %llu)", e->layout,
	       (unsigned long long)exp_before, (unsigned long long)it.expire_ns);
	EXPECT(e, "decr n 1000\r\n", "0\r\n");
	EXPECT(e, "get n\r\n", "VALUE n 77 3\r\n0  \r\nEND\r\n");
	EXPECT(e, "incr n 7 noreply\r\n", "");
	EXPECT(e, "get n\r\n", "VALUE n 77 3\r\n7  \r\nEND\r\n");
	EXPECT(e, "set big 0 0 20\r\n18446744073709551615\r\n", "STORED\r\n");
	EXPECT(e, "incr big 2\r\n", "1\r\n");
	EXPECT(e, "decr big 18446744073709551615\r\n", "0\r\n");
	EXPECT(e, "incr big 18446744073709551615\r\n", "18446744073709551615\r\n");
	EXPECT(e, "set txt 0 0 3\r\nabc\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "set txt 0 0 0\r\n\r\n", "STORED\r\n");
	EXPECT(e, "decr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "set txt 0 0 20\r\n18446744073709551616\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "set txt 0 0 3\r\n-12\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	/* memcached's safe_strtoull (the differential tester found both): the
	 * digits may end at a NUL byte; at 2^63 and above a '-' anywhere before
	 * the first NUL refuses the number, below it does not */
	EXPECT(e, "set txt 0 0 8\r\n107563\0x\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "107564\r\n");
	EXPECT(e, "set txt 0 0 8\r\n107563x\0\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "set txt 0 0 23\r\n9223372036854775808 a-b\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "set txt 0 0 24\r\n9223372036854775808 \0a-b\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "9223372036854775809\r\n");
	EXPECT(e, "set txt 0 0 23\r\n9223372036854775807 a-b\r\n", "STORED\r\n");
	EXPECT(e, "decr txt 7\r\n", "9223372036854775800\r\n");
	EXPECT(e, "incr n abc\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
	EXPECT(e, "incr n -1\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
	EXPECT(e, "incr n\r\n", "ERROR\r\n"); /* memcached 1.6.18 */
	EXPECT(e, "set ex 0 -1 1\r\n5\r\n", "STORED\r\n");
	EXPECT(e, "incr ex 1\r\n", "NOT_FOUND\r\n");
}

void t_errors(struct env *e)
{
	struct xkv_buf req = {}, want = {};
	char key251[252];

	flush_store(e);
	EXPECT(e, "bogus\r\n", "ERROR\r\n");
	EXPECT(e, "get\r\n", "ERROR\r\n");
	EXPECT(e, "\r\n", "ERROR\r\n");
	EXPECT(e, "set k 0 0\r\n", "ERROR\r\n");
	EXPECT(e, "set k x 0 1\r\na\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
	EXPECT(e, "delete\r\n", "ERROR\r\n");
	EXPECT(e, "delete k 1\r\n", XKV_R_DEL_USAGE);
	EXPECT(e, "delete k 0 x\r\n", XKV_R_DEL_USAGE);
	EXPECT(e, "delete k 1 noreply\r\n", "");
	EXPECT(e, "delete k 0 0 0\r\n", "ERROR\r\n");
	EXPECT(e, "shutdown\r\n", "ERROR: shutdown not enabled\r\n");
	EXPECT(e, "shutdown graceful noreply\r\n", "ERROR: shutdown not enabled\r\n");
	EXPECT(e, "delete k 5\r\n", XKV_R_DEL_USAGE);
	EXPECT(e, "version extra\r\n", XKV_VERSION_LINE);
	EXPECT(e, "flush_all soon\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
	EXPECT(e, "stats conns\r\n", "ERROR\r\n"); /* a group this store has not */
	EXPECT(e, "set k 0 0 5\r\nabc\r\n", "CLIENT_ERROR bad data chunk\r\n");
	EXPECT(e, "set k 0 0 2\r\nabcd\r\n", "CLIENT_ERROR bad data chunk\r\n");
	EXPECT(e, "get k", "CLIENT_ERROR line not terminated by \\r\\n\r\n");
	EXPECT(e, "get k\n", "CLIENT_ERROR line not terminated by \\r\\n\r\n");
	EXPECT(e, "", "CLIENT_ERROR line not terminated by \\r\\n\r\n");
	EXPECT(e, "get a\tb\r\n", "CLIENT_ERROR bad key\r\n");
	EXPECT(e, "set k 0 0 8193\r\n", "SERVER_ERROR object too large for cache\r\n");
	/* issue 6: silence, as memcached (was CLIENT_ERROR multi-datagram) */
	expect_hdr(e, "multi-datagram request (total 2): silence", 0, 2, "get k\r\n", 7, "", 0);
	expect_hdr(e, "multi-datagram request (seq 1): silence", 1, 1, "get k\r\n", 7, "", 0);
	expect_hdr(e, "frame header total 0: silence", 0, 0, "get k\r\n", 7, "", 0);

	memset(key251, 'k', 251);
	key251[251] = 0;
	tprintf(&req, "get %s\r\n", key251);
	EXPECTL(e, "get of a 251-byte key: memcached's format error", &req, XKV_R_FORMAT);
	req.len = 0;
	tprintf(&req, "set %.250s 0 0 1\r\nv\r\n", key251);
	EXPECTL(e, "set of a 250-byte key", &req, "STORED\r\n");

	/* keys past the parser's 32 checked tokens are checked too */
	req.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 40; i++) {
		if (i == 36)
			tprintf(&req, " %s", key251);
		else
			tprintf(&req, " k%d", i);
	}
	tprintf(&req, "\r\n");
	want.len = 0;
	tprintf(&want, "%s", XKV_R_FORMAT);
	EXPECTB(e, "get with a 251-byte 37th key", &req, &want);
	req.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 40; i++)
		tprintf(&req, " k%d%s", i, i == 38 ? "\x01" : "");
	tprintf(&req, "\r\n");
	want.len = 0;
	tprintf(&want, "%s", XKV_R_KEY_BAD);
	EXPECTB(e, "get with a control character in the 39th key", &req, &want);

	/* more keys than the parser's token array (issue 6: over max_keys) */
	req.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 5000; i++)
		tprintf(&req, " a");
	tprintf(&req, "\r\n");
	want.len = 0;
	tprintf(&want, "%s", XKV_R_TOO_MANY_KEYS);
	EXPECTB(e, "get with 5000 keys", &req, &want);

	/* an error of a line alone does not end the datagram (memcached goes
	 * on); a bad data block does */
	EXPECT(e, "version\r\nbogus\r\nversion\r\n", XKV_VERSION_LINE "ERROR\r\n" XKV_VERSION_LINE);
	EXPECT(e, "set q 0 0 5\r\nabc\r\nget q\r\n", "CLIENT_ERROR bad data chunk\r\n");

	/* a datagram too short for a frame header gets no answer */
	struct xkv_buf out = {};
	struct xkv_udp_hdr h;
	int ret = xkv_slow_handle(e->sl, NULL, (const __u8 *)"\0\1\0", 3, &h, &out, &e->delta);
	report(ret == 0 && out.len == 0, "%s: 3-byte datagram: no reply (ret %d, %zu bytes)",
	       e->layout, ret, out.len);
	xkv_buf_free(&out);
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

void t_multi_cmd(struct env *e)
{
	flush_store(e);
	EXPECT(e, "get k\r\nversion\r\n", "END\r\n" XKV_VERSION_LINE);
	EXPECT(e, "set a 1 0 1\r\nA\r\nset b 2 0 2 noreply\r\nBB\r\nget a b c\r\ndelete a\r\n"
		  "get a b\r\nincr c 1\r\nadd c 0 0 1\r\n9\r\nincr c 1\r\nversion\r\n",
	       "STORED\r\nVALUE a 1 1\r\nA\r\nVALUE b 2 2\r\nBB\r\nEND\r\nDELETED\r\n"
	       "VALUE b 2 2\r\nBB\r\nEND\r\nNOT_FOUND\r\nSTORED\r\n10\r\n" XKV_VERSION_LINE);
	EXPECT(e, "delete b noreply\r\nset c 0 0 1 noreply\r\nx\r\n", "");
	EXPECT(e, "get b c\r\n", "VALUE c 0 1\r\nx\r\nEND\r\n");
}

void t_large(struct env *e)
{
	static __u8 val[VAL_CAP + 1];
	struct xkv_buf req = {}, want = {};

	flush_store(e);
	fill(val, sizeof(val), 1);
	tprintf(&req, "set big 42 0 5000\r\n");
	tput(&req, val, 5000);
	tprintf(&req, "\r\n");
	EXPECTL(e, "set of 5000 bytes", &req, "STORED\r\n");

	req.len = 0;
	tprintf(&req, "get big\r\n");
	tprintf(&want, "VALUE big 42 5000\r\n");
	tput(&want, val, 5000);
	tprintf(&want, "\r\nEND\r\n");
	EXPECTB(e, "get of 5000 bytes", &req, &want);
	expect_framed(e, "get of 5000 bytes", &req, &want, (int)((want.len + 1391) / 1392));

	/* exactly the value cap, and one byte over */
	req.len = 0;
	tprintf(&req, "set cap 0 0 %d\r\n", VAL_CAP);
	tput(&req, val, VAL_CAP);
	tprintf(&req, "\r\nget cap\r\n");
	want.len = 0;
	tprintf(&want, "STORED\r\nVALUE cap 0 %d\r\n", VAL_CAP);
	tput(&want, val, VAL_CAP);
	tprintf(&want, "\r\nEND\r\n");
	EXPECTB(e, "set+get of exactly --value-size bytes", &req, &want);
	req.len = 0;
	tprintf(&req, "set cap 0 0 %d\r\n", VAL_CAP + 1);
	tput(&req, val, VAL_CAP + 1);
	tprintf(&req, "\r\n");
	want.len = 0;
	tprintf(&want, "%s", XKV_R_TOO_LARGE);
	EXPECTB(e, "set of --value-size + 1 bytes", &req, &want);

	/* a reply of exactly one full datagram, and one byte more */
	for (int extra = 0; extra < 2; extra++) {
		/* "VALUE e 0 NNNN\r\n" (16) + data + "\r\nEND\r\n" (7) */
		int n = XKV_DGRAM_TEXT - 16 - 7 + extra;
		req.len = 0;
		tprintf(&req, "set e 0 0 %d\r\n", n);
		tput(&req, val, (size_t)n);
		tprintf(&req, "\r\n");
		ask(e, req.p, req.len, &want);
		req.len = 0;
		tprintf(&req, "get e\r\n");
		want.len = 0;
		tprintf(&want, "VALUE e 0 %d\r\n", n);
		tput(&want, val, (size_t)n);
		tprintf(&want, "\r\nEND\r\n");
		expect_framed(e, extra ? "reply of 1393 bytes" : "reply of 1392 bytes", &req, &want, 1 + extra);
	}
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

/* n keys whose array_fnv slots differ (so no layout overwrites another). */
static int pick_keys(char keys[][16], int n, __u32 entries)
{
	static __u8 used[1 << 16];
	int got = 0;
	memset(used, 0, sizeof(used));
	for (int i = 0; got < n && i < 100000; i++) {
		char k[16];
		snprintf(k, sizeof(k), "mk%05d", i);
		__u32 slot = (__u32)(xkv_fnv1a((const __u8 *)k, (__u32)strlen(k)) % entries);
		if (used[slot])
			continue;
		used[slot] = 1;
		strcpy(keys[got++], k);
	}
	return got;
}

void t_multiget(struct env *e)
{
	static char keys[200][16];
	static __u8 val[400];
	struct xkv_buf req = {}, want = {};

	flush_store(e);
	pick_keys(keys, 200, ENTRIES);
	fill(val, sizeof(val), 3);
	for (int i = 0; i < 200; i++) {
		if (i % 10 == 9)
			continue; /* every tenth key is never stored: a miss */
		req.len = 0;
		tprintf(&req, "set %s %d 0 %d\r\n", keys[i], i, i % 300 + 1);
		tput(&req, val + i % 50, (size_t)(i % 300 + 1));
		tprintf(&req, "\r\n");
		ask(e, req.p, req.len, &want);
		if (want.len != 8 || memcmp(want.p, "STORED\r\n", 8))
			report(0, "%s: multi-get setup: set %s", e->layout, keys[i]);
	}
	req.len = 0;
	want.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 200; i++) {
		tprintf(&req, " %s", keys[i]);
		if (i % 10 == 9)
			continue;
		tprintf(&want, "VALUE %s %d %d\r\n", keys[i], i, i % 300 + 1);
		tput(&want, val + i % 50, (size_t)(i % 300 + 1));
		tprintf(&want, "\r\n");
	}
	tprintf(&req, " %s\r\n", keys[0]); /* asked twice: answered twice */
	tprintf(&want, "VALUE %s 0 1\r\n", keys[0]);
	tput(&want, val, 1);
	tprintf(&want, "\r\nEND\r\n");

	memset(&e->delta, 0, sizeof(e->delta));
	EXPECTB(e, "get of 201 keys (20 misses)", &req, &want);
	struct xkv_stats *d = &e->delta;
	report(d->v[XKV_STAT_get_keys] == 201 && d->v[XKV_STAT_get_hits] == 181 &&
	       d->v[XKV_STAT_get_misses] == 20 && d->v[XKV_STAT_cmd_get] == 1 &&
	       d->v[XKV_STAT_requests] == 1 &&
	       d->v[XKV_STAT_replies] == (want.len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT,
	       "%s: multi-get counters (keys %llu hits %llu misses %llu replies %llu)", e->layout,
	       (unsigned long long)d->v[XKV_STAT_get_keys], (unsigned long long)d->v[XKV_STAT_get_hits],
	       (unsigned long long)d->v[XKV_STAT_get_misses], (unsigned long long)d->v[XKV_STAT_replies]);
	expect_framed(e, "get of 201 keys", &req, &want, (int)((want.len + 1391) / 1392));
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

/* Every counter the slow path touches, after a known sequence. */
void t_counters(struct env *e)
{
	struct xkv_buf out = {};
	struct xkv_stats want = {};
	static const struct { const char *req; } seq[] = {
		{ "set a 0 0 1\r\nA\r\n" },           /* cmd_set stores */
		{ "get a b c\r\n" },                  /* cmd_get keys 3 hits 1 misses 2 */
		{ "set x 0 0 1 noreply\r\nx\r\n" },   /* cmd_set stores noreply, no reply */
		{ "delete zz\r\n" },                  /* cmd_delete delete_misses */
		{ "delete x\r\n" },                   /* cmd_delete deletes */
		{ "bogus\r\n" },                      /* err_unknown */
		{ "get a\x02\r\n" },                  /* err_client */
		{ "set k 0 0 9000\r\n" },             /* err_too_large */
		{ "version\r\nincr a 1\r\n" },        /* cmd_other x2, err_client */
		{ "add a 0 0 1\r\nZ\r\n" },           /* cmd_other, NOT_STORED */
		{ "add n 0 0 1\r\nZ\r\n" },           /* cmd_other stores */
	};

	flush_store(e);
	memset(&e->delta, 0, sizeof(e->delta));
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		ask(e, seq[i].req, strlen(seq[i].req), &out);
	want.v[XKV_STAT_requests] = 11;
	want.v[XKV_STAT_cmd_get] = 1;
	want.v[XKV_STAT_cmd_set] = 2;
	want.v[XKV_STAT_cmd_delete] = 2;
	want.v[XKV_STAT_cmd_other] = 4;
	want.v[XKV_STAT_get_keys] = 3;
	want.v[XKV_STAT_get_hits] = 1;
	want.v[XKV_STAT_get_misses] = 2;
	want.v[XKV_STAT_stores] = 3;
	/* a, x and n were new; counted by the layouts that count new items
	 * (as their XDP side does: array_fnv, lru, lru_percpu, the bucketed
	 * set_assoc, sieve and s3fifo, arena) */
	if (!strcmp(e->layout, "array_fnv") || !strcmp(e->layout, "lru") ||
	    !strcmp(e->layout, "lru_percpu") || xkv_sa_layout(e->layout) || !strcmp(e->layout, "arena"))
		want.v[XKV_STAT_store_new] = 3;
	want.v[XKV_STAT_deletes] = 1;
	want.v[XKV_STAT_delete_misses] = 1;
	want.v[XKV_STAT_err_unknown] = 1;
	want.v[XKV_STAT_err_client] = 2;
	want.v[XKV_STAT_err_too_large] = 1;
	want.v[XKV_STAT_replies] = 10;
	want.v[XKV_STAT_noreply] = 1;
	int ok = 1;
	for (int i = 0; i < XKV_STAT__MAX; i++) {
		if (e->delta.v[i] != want.v[i]) {
			ok = 0;
			printf("    %s: got %llu want %llu\n", xkv_stat_names[i],
			       (unsigned long long)e->delta.v[i], (unsigned long long)want.v[i]);
		}
	}
	report(ok, "%s: counters after a known sequence", e->layout);
	xkv_buf_free(&out);
}

/* hash_map is authoritative: a full map refuses new keys, keeps old ones. */
void t_oom(void)
{
	struct env e;
	struct xkv_buf req = {}, out = {};
	int stored = 0;

	if (env_open(&e, "hash_map", 64, 64)) {
		report(0, "hash_map: open a 64-entry store");
		return;
	}
	for (int i = 0; i < 64; i++) {
		req.len = 0;
		tprintf(&req, "set f%d 0 0 1\r\nx\r\n", i);
		ask(&e, req.p, req.len, &out);
		stored += out.len == 8 && !memcmp(out.p, "STORED\r\n", 8);
	}
	report(stored == 64, "hash_map: 64 of 64 entries stored (%d)", stored);
	EXPECT(&e, "set one-more 0 0 1\r\nx\r\n", "SERVER_ERROR out of memory storing object\r\n");
	/* noreply: nothing, the error too (memcached) */
	EXPECT(&e, "set one-more 0 0 1 noreply\r\nx\r\n", "");
	EXPECT(&e, "set f3 0 0 1\r\ny\r\nget f3\r\n", "STORED\r\nVALUE f3 0 1\r\ny\r\nEND\r\n");
	report(e.delta.v[XKV_STAT_err_oom] == 2, "hash_map: err_oom counted (%llu)",
	       (unsigned long long)e.delta.v[XKV_STAT_err_oom]);
	env_close(&e);
	xkv_buf_free(&req);
	xkv_buf_free(&out);
}

/* percpu, lru_percpu: write different copies directly; the slow path answers
 * the newest live. */
static void percpu_write(struct env *e, const char *key, const __u64 *wtime, const __u64 *expire,
			 const char *const *vals)
{
	__u32 es = e->s.cfg.entry_size;
	__u8 *all = calloc(e->s.ncpus, es);
	__u8 k[XKV_KEY_MAX + 8];

	xkv_key_pack(&e->s.cfg, key, (__u32)strlen(key), k);
	for (int c = 0; c < e->s.ncpus; c++) {
		struct xkv_entry *en = (void *)(all + (size_t)c * es);
		en->wtime_ns = wtime[c];
		en->expire_ns = expire[c];
		en->flags = 100 + c;
		en->len = (__u32)strlen(vals[c]);
		memcpy(en->data, vals[c], en->len);
	}
	if (bpf_map_update_elem(e->s.store_fd, k, all, BPF_ANY))
		report(0, "%s: raw update: %s", e->layout, strerror(errno));
	free(all);
}

void t_percpu(struct env *e)
{
	int n = e->s.ncpus;
	__u64 now = xkv_now_ns();
	__u64 *wt = calloc(n, 8), *ex = calloc(n, 8);
	const char **vals = calloc(n, sizeof(*vals));
	char line[128], want[256];
	struct xkv_buf out = {};

	flush_store(e);
	if (n < 2) {
		report(0, "%s: needs at least 2 possible CPUs (have %d)", e->layout, n);
		goto out;
	}
	for (int c = 0; c < n; c++) {
		wt[c] = now - 5000000 + (__u64)c * 1000; /* older than the last two below */
		vals[c] = "stale";
	}
	/* newest on CPU 0, the second newest on the last CPU */
	wt[0] = now - 1000;
	vals[0] = "newest";
	wt[n - 1] = now - 2000;
	vals[n - 1] = "second";
	percpu_write(e, "pc", wt, ex, vals);
	snprintf(want, sizeof(want), "VALUE pc 100 6\r\nnewest\r\nEND\r\n");
	expect_n(e, "newest copy (CPU 0) wins", "get pc\r\n", 8, want, strlen(want));

	ex[0] = 1; /* the newest copy expired: the next newest live one */
	percpu_write(e, "pc", wt, ex, vals);
	snprintf(want, sizeof(want), "VALUE pc %d 6\r\nsecond\r\nEND\r\n", 100 + n - 1);
	expect_n(e, "newest copy expired: next newest", "get pc\r\n", 8, want, strlen(want));

	ex[0] = 0;
	wt[0] = 0; /* an empty copy (as a new element's other CPUs) */
	percpu_write(e, "pc", wt, ex, vals);
	expect_n(e, "empty copy ignored", "get pc\r\n", 8, want, strlen(want));

	for (int c = 0; c < n; c++)
		ex[c] = 1;
	percpu_write(e, "pc", wt, ex, vals);
	EXPECT(e, "get pc\r\n", "END\r\n");
	EXPECT(e, "delete pc\r\n", "NOT_FOUND\r\n");

	for (int c = 0; c < n; c++) {
		ex[c] = 0;
		vals[c] = "7";
		wt[c] = now - 10000;
	}
	vals[n - 1] = "41";
	wt[n - 1] = now - 10;
	percpu_write(e, "num", wt, ex, vals);
	EXPECT(e, "incr num 1\r\n", "42\r\n");
	snprintf(line, sizeof(line), "VALUE num %d 2\r\n42\r\nEND\r\n", 100 + n - 1);
	expect_n(e, "incr of the newest copy", "get num\r\n", 9, line, strlen(line));

	/* a slow path set writes every copy */
	EXPECT(e, "set all 9 0 3\r\nxyz\r\n", "STORED\r\n");
	__u8 *raw = calloc(n, e->s.cfg.entry_size), k[XKV_KEY_MAX + 8];
	xkv_key_pack(&e->s.cfg, "all", 3, k);
	int ok = !bpf_map_lookup_elem(e->s.store_fd, k, raw);
	for (int c = 0; ok && c < n; c++) {
		struct xkv_entry *en = (void *)(raw + (size_t)c * e->s.cfg.entry_size);
		ok = en->wtime_ns && en->flags == 9 && en->len == 3 && !memcmp(en->data, "xyz", 3);
	}
	report(ok, "%s: a slow-path set writes all %d copies", e->layout, n);
	free(raw);
out:
	free(wt);
	free(ex);
	free(vals);
	xkv_buf_free(&out);
}

/* ---- append, prepend, gets, cas, touch, gat, gats, verbosity (issue 7) ---- */

static void expect_s(struct env *e, const char *req, const char *want)
{
	expect_n(e, NULL, req, strlen(req), want, strlen(want));
}

void t_append(struct env *e)
{
	static struct xkv_item it;
	static __u8 val[VAL_CAP];
	struct xkv_buf req = {}, want = {};

	flush_store(e);
	EXPECT(e, "append a 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	EXPECT(e, "prepend a 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
	EXPECT(e, "append a 0 0 1 noreply\r\nx\r\n", "");
	EXPECT(e, "prepend a 0 0 1 noreply\r\nx\r\n", "");
	EXPECT(e, "get a\r\n", "END\r\n");
	EXPECT(e, "set a 5 100 2\r\nmm\r\n", "STORED\r\n");
	int r1 = item_of(e, "a", &it);
	__u64 exp0 = it.expire_ns, cas0 = it.wtime_ns;
	/* the command's flags and exptime are ignored, as memcached does */
	EXPECT(e, "append a 9 0 2\r\nzz\r\n", "STORED\r\n");
	EXPECT(e, "prepend a 9 -1 2\r\naa\r\n", "STORED\r\n");
	EXPECT(e, "get a\r\n", "VALUE a 5 6\r\naammzz\r\nEND\r\n");
	int r2 = item_of(e, "a", &it);
	report(!r1 && !r2 && exp0 && it.expire_ns == exp0 && it.wtime_ns > cas0,
	       "%s: append/prepend keep flags and expiry, give a new cas", e->layout);
	EXPECT(e, "append a 0 0 0\r\n\r\n", "STORED\r\n");
	EXPECT(e, "prepend a 0 0 1 noreply\r\n<\r\n", "");
	EXPECT(e, "append a 0 0 1 noreply\r\n>\r\n", "");
	EXPECT(e, "get a\r\n", "VALUE a 5 8\r\n<aammzz>\r\nEND\r\n");
	/* an expired item is absent */
	EXPECT(e, "set old 0 -1 1\r\nx\r\n", "STORED\r\n");
	EXPECT(e, "append old 0 0 1\r\ny\r\n", "NOT_STORED\r\n");
	EXPECT(e, "prepend old 0 0 1\r\ny\r\n", "NOT_STORED\r\n");
	/* bad lines: the item is unchanged */
	EXPECT(e, "append a 0 0\r\n", "ERROR\r\n");
	EXPECT(e, "append a x 0 1\r\nb\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
	EXPECT(e, "prepend a 0 0 -1\r\nb\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
	EXPECT(e, "append nokey 0 0 1 2\r\nb\r\n", "NOT_STORED\r\n");
	EXPECT(e, "append a 0 0 2\r\nabc\r\n", "CLIENT_ERROR bad data chunk\r\n");
	EXPECT(e, "append a 0 0 8193\r\n", "SERVER_ERROR object too large for cache\r\n");
	EXPECT(e, "get a\r\n", "VALUE a 5 8\r\n<aammzz>\r\nEND\r\n");

	/* the result must fit the value cap (VAL_CAP) */
	fill(val, sizeof(val), 3);
	tprintf(&req, "set big 1 0 %d\r\n", VAL_CAP - 2);
	tput(&req, val, VAL_CAP - 2);
	tprintf(&req, "\r\n");
	EXPECTL(e, "set of the cap less 2", &req, "STORED\r\n");
	EXPECT(e, "append big 0 0 3\r\nxyz\r\n", "SERVER_ERROR object too large for cache\r\n");
	/* noreply: no line at all, errors included (memcached) */
	EXPECT(e, "prepend big 0 0 3 noreply\r\nxyz\r\n", "");
	EXPECT(e, "append big 0 0 2\r\nxy\r\n", "STORED\r\n");
	req.len = 0;
	tprintf(&req, "get big\r\n");
	tprintf(&want, "VALUE big 1 %d\r\n", VAL_CAP);
	tput(&want, val, VAL_CAP - 2);
	tprintf(&want, "xy\r\nEND\r\n");
	EXPECTB(e, "append up to the cap exactly; the refused ones changed nothing", &req, &want);
	EXPECT(e, "append big 0 0 1\r\nz\r\n", "SERVER_ERROR object too large for cache\r\n");
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

void t_gets_cas(struct env *e)
{
	char req[160], want[160];

	flush_store(e);
	EXPECT(e, "gets nothere\r\n", "END\r\n");
	EXPECT(e, "gets\r\n", "ERROR\r\n");
	EXPECT(e, "set c 3 0 2\r\nab\r\n", "STORED\r\n");
	EXPECT(e, "set d 0 0 1\r\nd\r\n", "STORED\r\n");
	__u64 c1 = cas_of(e, "c"), d1 = cas_of(e, "d");
	report(c1 && d1 && c1 != d1, "%s: two writes, two cas uniques (%llu, %llu)", e->layout,
	       (unsigned long long)c1, (unsigned long long)d1);
	snprintf(want, sizeof(want), "VALUE c 3 2 %llu\r\nab\r\nVALUE d 0 1 %llu\r\nd\r\nEND\r\n",
		 (unsigned long long)c1, (unsigned long long)d1);
	expect_s(e, "gets c nothere d\r\n", want);
	EXPECT(e, "get c\r\n", "VALUE c 3 2\r\nab\r\nEND\r\n"); /* get has no cas */

	/* cas: NOT_FOUND, EXISTS, STORED */
	EXPECT(e, "cas nothere 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "cas nothere 0 0 1 1 noreply\r\nx\r\n", "");
	EXPECT(e, "get nothere\r\n", "END\r\n");
	snprintf(req, sizeof(req), "cas c 7 0 1 %llu\r\nX\r\n", (unsigned long long)(c1 + 1));
	expect_s(e, req, "EXISTS\r\n");
	snprintf(req, sizeof(req), "cas c 7 0 1 %llu noreply\r\nX\r\n", (unsigned long long)d1);
	expect_s(e, req, "");
	EXPECT(e, "get c\r\n", "VALUE c 3 2\r\nab\r\nEND\r\n");
	snprintf(req, sizeof(req), "cas c 7 0 1 %llu\r\nX\r\n", (unsigned long long)c1);
	expect_s(e, req, "STORED\r\n");
	__u64 c2 = cas_of(e, "c");
	snprintf(want, sizeof(want), "VALUE c 7 1 %llu\r\nX\r\nEND\r\n", (unsigned long long)c2);
	expect_s(e, "gets c\r\n", want);
	report(c2 > c1, "%s: a cas store gives a new, larger cas unique", e->layout);
	snprintf(req, sizeof(req), "cas c 0 0 1 %llu\r\nY\r\n", (unsigned long long)c1);
	expect_s(e, req, "EXISTS\r\n"); /* the old unique is stale now */
	snprintf(req, sizeof(req), "cas c 0 0 1 %llu noreply\r\nY\r\n", (unsigned long long)c2);
	expect_s(e, req, "");
	EXPECT(e, "get c\r\n", "VALUE c 0 1\r\nY\r\nEND\r\n");
	/* any write changes it: set, append, incr */
	__u64 u[4] = { cas_of(e, "c") };
	EXPECT(e, "set c 0 0 1\r\n5\r\n", "STORED\r\n");
	u[1] = cas_of(e, "c");
	EXPECT(e, "append c 0 0 1\r\n5\r\n", "STORED\r\n");
	u[2] = cas_of(e, "c");
	EXPECT(e, "incr c 1\r\n", "56\r\n");
	u[3] = cas_of(e, "c");
	report(u[0] < u[1] && u[1] < u[2] && u[2] < u[3],
	       "%s: set, append, incr each give the item a new cas unique", e->layout);
	/* an expired item is NOT_FOUND */
	EXPECT(e, "set old 0 -1 1\r\nx\r\n", "STORED\r\n");
	EXPECT(e, "cas old 0 0 1 1\r\ny\r\n", "NOT_FOUND\r\n");
	/* bad lines */
	EXPECT(e, "cas c 0 0 1\r\nx\r\n", "ERROR\r\nERROR\r\n");
	EXPECT(e, "cas c 0 0 1 abc\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
	EXPECT(e, "cas c 0 0 1 -1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
	EXPECT(e, "cas c 0 0 1 18446744073709551616\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
	EXPECT(e, "cas nokey 0 0 1 1 2\r\nx\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "cas c 0 0 2 1\r\nx\r\n", "CLIENT_ERROR bad data chunk\r\n");
	EXPECT(e, "cas c 0 0 8193 1\r\n", "SERVER_ERROR object too large for cache\r\n");
	EXPECT(e, "gets a\tb\r\n", "CLIENT_ERROR bad key\r\n");
	EXPECT(e, "get c\r\n", "VALUE c 0 2\r\n56\r\nEND\r\n");
}

void t_touch(struct env *e)
{
	static struct xkv_item it;
	char want[160];

	flush_store(e);
	EXPECT(e, "touch t 10\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "touch t 10 noreply\r\n", "");
	EXPECT(e, "set t 4 0 1\r\nx\r\n", "STORED\r\n");
	__u64 c0 = cas_of(e, "t"), now = xkv_now_ns();
	EXPECT(e, "touch t 100\r\n", "TOUCHED\r\n");
	int r1 = item_of(e, "t", &it);
	report(!r1 && it.expire_ns >= now + 100000000000ull && it.expire_ns <= xkv_now_ns() + 100000000000ull &&
	       it.wtime_ns == c0 && it.flags == 4 && it.len == 1 && it.data[0] == 'x',
	       "%s: touch t 100: expires in 100 s, value, flags and cas kept", e->layout);
	EXPECT(e, "touch t 0 noreply\r\n", "");
	r1 = item_of(e, "t", &it);
	report(!r1 && it.expire_ns == 0, "%s: touch t 0: never expires", e->layout);
	/* gat / gats: the hits get the new exptime */
	now = xkv_now_ns();
	EXPECT(e, "gat 50 t nothere\r\n", "VALUE t 4 1\r\nx\r\nEND\r\n");
	r1 = item_of(e, "t", &it);
	report(!r1 && it.expire_ns >= now + 50000000000ull && it.expire_ns <= xkv_now_ns() + 50000000000ull &&
	       it.wtime_ns == c0, "%s: gat 50: expires in 50 s, cas kept", e->layout);
	snprintf(want, sizeof(want), "VALUE t 4 1 %llu\r\nx\r\nEND\r\n", (unsigned long long)c0);
	expect_s(e, "gats 0 t\r\n", want);
	r1 = item_of(e, "t", &it);
	report(!r1 && it.expire_ns == 0, "%s: gats 0: never expires", e->layout);
	EXPECT(e, "gat 10 nothere\r\n", "END\r\n");
	/* a key over 250 bytes after valid ones: memcached touches the keys
	 * before it (not after), sends none of their lines, then the error */
	char line[400];
	snprintf(line, sizeof(line), "gat 50 t %0251d t2\r\n", 0);
	EXPECT(e, "set t2 0 0 1\r\nz\r\n", "STORED\r\n");
	now = xkv_now_ns();
	expect_s(e, line, XKV_R_FORMAT);
	r1 = item_of(e, "t", &it);
	struct xkv_item it2;
	int r2 = item_of(e, "t2", &it2);
	report(!r1 && it.expire_ns >= now + 50000000000ull && !r2 && !it2.expire_ns,
	       "%s: gat 50 t <251 bytes> t2: t touched (expires in 50 s), t2 not", e->layout);
	snprintf(line, sizeof(line), "gats 0 t%0*d\r\n", 251, 0);
	expect_s(e, line, XKV_R_FORMAT);
	r1 = item_of(e, "t", &it);
	report(!r1 && it.expire_ns, "%s: gats with its first key over 250 bytes: nothing touched", e->layout);
	expect_s(e, "gats 0 t\r\n", want);
	/* a negative exptime: answered, then gone */
	EXPECT(e, "gat -1 t\r\n", "VALUE t 4 1\r\nx\r\nEND\r\n");
	EXPECT(e, "get t\r\n", "END\r\n");
	EXPECT(e, "touch t 10\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "set t 0 0 1\r\ny\r\n", "STORED\r\n");
	EXPECT(e, "touch t -1\r\n", "TOUCHED\r\n");
	EXPECT(e, "get t\r\n", "END\r\n");
	/* a short exptime runs out */
	EXPECT(e, "set s 0 0 1\r\nz\r\n", "STORED\r\n");
	EXPECT(e, "touch s 1\r\n", "TOUCHED\r\n");
	EXPECT(e, "get s\r\n", "VALUE s 0 1\r\nz\r\nEND\r\n");
	usleep(1100 * 1000);
	EXPECT(e, "get s\r\n", "END\r\n");
	/* bad lines, with memcached's replies */
	EXPECT(e, "touch t\r\n", "ERROR\r\n");
	EXPECT(e, "touch t 1 2 3\r\n", "ERROR\r\n");
	EXPECT(e, "touch nokey 1 2\r\n", "NOT_FOUND\r\n"); /* a 4th word: memcached ignores it */
	EXPECT(e, "touch t abc\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
	EXPECT(e, "gat 10\r\n", "END\r\n"); /* no key: memcached 1.6.18 answers END */
	EXPECT(e, "gats\r\n", "ERROR\r\n");
	EXPECT(e, "gat x t\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
	EXPECT(e, "gats 1x t\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
	EXPECT(e, "verbosity 1\r\n", "OK\r\n");
	EXPECT(e, "verbosity 1 noreply\r\n", "");
	EXPECT(e, "verbosity\r\n", "ERROR\r\n");
	EXPECT(e, "verbosity noreply\r\n", ""); /* memcached 1.6.18: silent */
	EXPECT(e, "verbosity 1\r\nversion\r\n", "OK\r\n" XKV_VERSION_LINE);
}
