// SPDX-License-Identifier: MIT
/* The binary protocol (engine/binproto.c) in-process, every layout, through
 * the entries the servers use (xkv_slow_stream for TCP, xkv_slow_handle for
 * UDP): each opcode's response (status, extras, key, value, cas, opaque),
 * quiet rules, a pipeline fed one byte at a time, malformed frames, a value
 * over the limit swallowed, SASL PLAIN.  The expected answers are memcached
 * 1.6.18's (proto_bin.c); tests/e2e/binproto.sh checks them against the real
 * memcached with real clients.
 *   test_binproto unit */
/* This file: storage, arithmetic and delete, the quiet commands, touch,
 * flush and the rest, and main; the connection tests in binproto_conn.c. */
#include "binproto_test.h"
#include "layout_skip.h"

/* ---- the tests ------------------------------------------------------------- */

static void t_storage(struct env *e)
{
	struct xkv_buf b = {};
	struct res r, g;

	req_set(&b, XKV_BIN_SET, 7, 0, "k1", "hello", 42, 0);
	report(one(e, &b, &r) && r.op == XKV_BIN_SET && r.status == 0 && r.opaque == 7 && r.cas &&
	       !r.extlen && !r.keylen && !r.vlen, "set: ok, opaque echoed, cas in the header");
	__u64 cas = r.cas;
	b.len = 0;
	req(&b, XKV_BIN_GET, 8, 0, NULL, 0, "k1", NULL, 0);
	report(one(e, &b, &g) && g.status == 0 && g.extlen == 4 && g.flags == 42 && !g.keylen &&
	       val_is(&g, "hello") && g.cas == cas && g.opaque == 8, "get: flags, value, the set's cas");
	b.len = 0;
	req(&b, XKV_BIN_GETK, 9, 0, NULL, 0, "k1", NULL, 0);
	report(one(e, &b, &g) && g.status == 0 && g.keylen == 2 && !memcmp(g.key, "k1", 2) &&
	       val_is(&g, "hello"), "getk: the key too");
	b.len = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "nokey", NULL, 0);
	report(one(e, &b, &g) && g.status == XKV_BIN_ENOENT && val_is(&g, "Not found") && !g.cas,
	       "get miss: 0x01 Not found");
	b.len = 0;
	req(&b, XKV_BIN_GETK, 1, 0, NULL, 0, "nokey", NULL, 0);
	report(one(e, &b, &g) && g.status == XKV_BIN_ENOENT && g.keylen == 5 && val_is(&g, "") &&
	       !memcmp(g.key, "nokey", 5), "getk miss: 0x01 with the key, no message");
	/* a key the store's key rule refuses (a space, without --binary-keys):
	 * a write is 0x04, a get a miss (it was 0x82 "Invalid argument") */
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 0, "a b", "x", 0, 0);
	report(one(e, &b, &g) && g.status == XKV_BIN_EINVAL && val_is(&g, "Invalid arguments"),
	       "set of a key with a space: 0x04");
	b.len = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "a b", NULL, 0);
	report(one(e, &b, &g) && g.status == XKV_BIN_ENOENT && val_is(&g, "Not found"),
	       "get of a key with a space: 0x01 Not found");
	b.len = 0;
	req_set(&b, XKV_BIN_ADD, 1, 0, "k1", "x", 0, 0);
	report(one(e, &b, &g) && g.status == XKV_BIN_EEXISTS && val_is(&g, "Data exists for key."),
	       "add over an item: 0x02");
	b.len = 0;
	req_set(&b, XKV_BIN_REPLACE, 1, 0, "nokey", "x", 0, 0);
	report(one(e, &b, &g) && g.status == XKV_BIN_ENOENT, "replace of a missing key: 0x01");
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, cas + 1, "k1", "x", 0, 0);
	report(one(e, &b, &g) && g.status == XKV_BIN_EEXISTS, "set with a stale cas: 0x02");
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 5, "nokey", "x", 0, 0);
	report(one(e, &b, &g) && g.status == XKV_BIN_ENOENT, "set with a cas on a missing key: 0x01");
	b.len = 0;
	req_set(&b, XKV_BIN_REPLACE, 1, cas, "k1", "world", 3, 0);
	report(one(e, &b, &g) && g.status == 0 && g.cas && g.cas != cas, "replace with the cas: stored, new cas");
	b.len = 0;
	req(&b, XKV_BIN_APPEND, 1, 0, NULL, 0, "k1", "!!", 2);
	req(&b, XKV_BIN_PREPEND, 1, 0, NULL, 0, "k1", "<<", 2);
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "k1", NULL, 0);
	struct xkv_slow_stream st = {};
	struct xkv_buf out = {};
	size_t off = 0;
	run(e, &st, &b, &out, NULL);
	bool ok = next_res(&out, &off, &g) == 1 && g.status == 0 && g.op == XKV_BIN_APPEND &&
		  next_res(&out, &off, &g) == 1 && g.status == 0 && g.op == XKV_BIN_PREPEND &&
		  next_res(&out, &off, &g) == 1 && val_is(&g, "<<world!!") && g.flags == 3;
	report(ok, "append, prepend: value joined, flags kept");
	b.len = 0;
	req(&b, XKV_BIN_APPEND, 1, 0, NULL, 0, "nokey", "x", 1);
	report(one(e, &b, &g) && g.status == XKV_BIN_NOT_STORED && val_is(&g, "Not stored."),
	       "append to a missing key: 0x05");
	b.len = 0;
	req_set(&b, XKV_BIN_ADD, 1, 0, "k2", "", 0, 0);
	report(one(e, &b, &g) && g.status == 0, "add of an empty value");
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}

static void t_arith_delete(struct env *e)
{
	struct xkv_buf b = {};
	struct res r;

	req_arith(&b, XKV_BIN_INCR, 3, "n", 5, 100, 0);
	report(one(e, &b, &r) && r.status == 0 && r.vlen == 8 && rd(r.val, 8) == 100 && r.cas,
	       "incr of a missing key with an initial value: the initial value");
	b.len = 0;
	req_arith(&b, XKV_BIN_INCR, 3, "n", 5, 100, 0);
	report(one(e, &b, &r) && r.status == 0 && rd(r.val, 8) == 105, "incr: 105");
	b.len = 0;
	req_arith(&b, XKV_BIN_DECR, 3, "n", 1000, 0, 0);
	report(one(e, &b, &r) && r.status == 0 && rd(r.val, 8) == 0, "decr stops at 0");
	b.len = 0;
	req_arith(&b, XKV_BIN_INCR, 3, "m", 1, 0, 0xffffffffu);
	report(one(e, &b, &r) && r.status == XKV_BIN_ENOENT, "incr of a missing key, expiry 0xffffffff: 0x01");
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 0, "s", "abc", 0, 0);
	req_arith(&b, XKV_BIN_INCR, 3, "s", 1, 0, 0);
	struct xkv_slow_stream st = {};
	struct xkv_buf out = {};
	size_t off = 0;
	run(e, &st, &b, &out, NULL);
	bool ok = next_res(&out, &off, &r) == 1 && next_res(&out, &off, &r) == 1 &&
		  r.status == XKV_BIN_DELTA_BADVAL;
	report(ok, "incr of a non-number: 0x06");
	b.len = 0;
	req(&b, XKV_BIN_DELETE, 4, 0, NULL, 0, "s", NULL, 0);
	report(one(e, &b, &r) && r.status == 0 && r.opaque == 4, "delete");
	b.len = 0;
	req(&b, XKV_BIN_DELETE, 4, 0, NULL, 0, "s", NULL, 0);
	report(one(e, &b, &r) && r.status == XKV_BIN_ENOENT, "delete of a missing key: 0x01");
	b.len = 0;
	req(&b, XKV_BIN_DELETE, 4, 12345, NULL, 0, "n", NULL, 0);
	report(one(e, &b, &r) && r.status == XKV_BIN_EEXISTS, "delete with a stale cas: 0x02");
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}

/* Zero the cas of every response in b. */
static void no_cas(struct xkv_buf *b)
{
	size_t off = 0, at;
	struct res r;
	while (at = off, next_res(b, &off, &r) == 1)
		memset(b->p + at + 16, 0, 8);
}

/* Quiet commands: nothing on success (quiet gets: on a miss), errors sent;
 * noop answers; a pipeline fed one byte per call answers as the whole. */
static void t_quiet(struct env *e)
{
	struct xkv_buf b = {}, out = {}, all = {};
	struct res r;
	__u8 tex[4] = { 0, 0, 0, 0 };

	req_set(&b, XKV_BIN_SETQ, 1, 0, "q1", "v1", 0, 0);
	req(&b, XKV_BIN_GETQ, 2, 0, NULL, 0, "q1", NULL, 0);
	req(&b, XKV_BIN_GETQ, 3, 0, NULL, 0, "qmiss", NULL, 0);
	req(&b, XKV_BIN_GETKQ, 4, 0, NULL, 0, "qmiss", NULL, 0);
	req_set(&b, XKV_BIN_ADDQ, 5, 0, "q1", "v", 0, 0);
	req(&b, XKV_BIN_DELETEQ, 6, 0, NULL, 0, "qmiss", NULL, 0);
	req_arith(&b, XKV_BIN_INCRQ, 7, "qn", 1, 9, 0);
	req(&b, XKV_BIN_GATQ, 8, 0, tex, 4, "qmiss", NULL, 0);
	req(&b, XKV_BIN_APPENDQ, 9, 0, NULL, 0, "q1", "+", 1);
	req(&b, XKV_BIN_GETKQ, 10, 0, NULL, 0, "q1", NULL, 0);
	req(&b, XKV_BIN_NOOP, 11, 0, NULL, 0, NULL, NULL, 0);
	struct xkv_slow_stream st = {};
	run(e, &st, &b, &out, NULL);
	size_t off = 0;
	bool ok = next_res(&out, &off, &r) == 1 && r.opaque == 2 && val_is(&r, "v1") &&
		  next_res(&out, &off, &r) == 1 && r.opaque == 5 && r.status == XKV_BIN_EEXISTS &&
		  next_res(&out, &off, &r) == 1 && r.opaque == 6 && r.status == XKV_BIN_ENOENT &&
		  next_res(&out, &off, &r) == 1 && r.opaque == 10 && val_is(&r, "v1+") && r.keylen == 2 &&
		  next_res(&out, &off, &r) == 1 && r.opaque == 11 && r.op == XKV_BIN_NOOP &&
		  next_res(&out, &off, &r) == 0;
	report(ok, "quiet: hits and errors answered, the rest silent, noop last");
	xkv_buf_put(&all, out.p, out.len);

	/* the same pipeline again on an empty store, fed one byte per call:
	 * the same answers but for the cas values */
	struct xkv_buf fresh = {};
	req(&fresh, XKV_BIN_FLUSH, 1, 0, NULL, 0, NULL, NULL, 0);
	report(one(e, &fresh, &r) && r.status == 0, "flush");
	xkv_buf_free(&fresh);
	/* the walk runs after the reply (flush_settle says why to wait) */
	flush_settle(e);
	memset(&st, 0, sizeof(st));
	struct xkv_buf in = {}, got = {};
	size_t n = 0;
	for (size_t i = 0; i < b.len; i++) {
		xkv_buf_put(&in, b.p + i, 1);
		size_t used = 0;
		out.len = 0;
		xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
		xkv_buf_put(&got, out.p, out.len);
		memmove(in.p, in.p + used, in.len - used);
		in.len -= used;
		n++;
	}
	no_cas(&got);
	no_cas(&all);
	report(got.len == all.len && !memcmp(got.p, all.p, all.len) && !in.len,
	       "the pipeline fed a byte at a time answers the same (%zu calls)", n);
	xkv_buf_free(&in);
	xkv_buf_free(&got);
	xkv_buf_free(&all);
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}

static void t_touch_flush_misc(struct env *e)
{
	struct xkv_buf b = {}, out = {};
	struct res r;
	__u8 ex[4];

	req_set(&b, XKV_BIN_SET, 1, 0, "t", "tv", 9, 0);
	one(e, &b, &r);
	__u64 cas = r.cas;
	b.len = 0;
	be(ex, 100, 4);
	req(&b, XKV_BIN_TOUCH, 2, 0, ex, 4, "t", NULL, 0);
	report(one(e, &b, &r) && r.status == 0 && r.extlen == 4 && r.flags == 9 && !r.vlen && r.cas == cas,
	       "touch: flags only, cas kept");
	b.len = 0;
	req(&b, XKV_BIN_GATK, 3, 0, ex, 4, "t", NULL, 0);
	report(one(e, &b, &r) && r.status == 0 && val_is(&r, "tv") && r.keylen == 1 && r.cas == cas,
	       "gatk: key and value");
	b.len = 0;
	req(&b, XKV_BIN_GAT, 3, 0, ex, 4, "nokey", NULL, 0);
	report(one(e, &b, &r) && r.status == XKV_BIN_ENOENT, "gat miss: 0x01");
	b.len = 0;
	be(ex, 0xffffffffu - 1, 4); /* far future */
	req(&b, XKV_BIN_TOUCH, 2, 0, ex, 4, "nokey", NULL, 0);
	report(one(e, &b, &r) && r.status == XKV_BIN_ENOENT, "touch miss: 0x01");
	b.len = 0;
	req(&b, XKV_BIN_VERSION, 5, 0, NULL, 0, NULL, NULL, 0);
	bool vok = one(e, &b, &r) && r.status == 0 && r.vlen > 5 && !memcmp(r.val, XKV_PROTO_VERSION, 5);
	report(vok, "version: %.*s", (int)r.vlen, r.val);
	b.len = 0;
	req(&b, XKV_BIN_STAT, 6, 0, NULL, 0, NULL, NULL, 0);
	struct xkv_slow_stream st = {};
	run(e, &st, &b, &out, NULL);
	size_t off = 0;
	int n = 0, rc;
	bool ok = true, seen_pid = false;
	while ((rc = next_res(&out, &off, &r)) == 1 && r.keylen) {
		ok &= r.status == 0 && r.opaque == 6 && r.op == XKV_BIN_STAT;
		seen_pid |= r.keylen == 3 && !memcmp(r.key, "pid", 3) && r.vlen > 0;
		n++;
	}
	report(ok && seen_pid && rc == 1 && !r.keylen && !r.vlen && off == out.len && n > 20,
	       "stat: %d name/value responses, then an empty one", n);
	/* groups, as the text stats groups: settings' lines; reset the empty
	 * response alone; one this store has not (conns, as memcached's binary
	 * protocol: a text-only group): 0x01 */
	b.len = 0;
	req(&b, XKV_BIN_STAT, 6, 0, NULL, 0, "settings", NULL, 0);
	memset(&st, 0, sizeof(st));
	run(e, &st, &b, &out, NULL);
	off = 0;
	n = 0;
	bool seen_ev = false;
	ok = true;
	while ((rc = next_res(&out, &off, &r)) == 1 && r.keylen) {
		ok &= r.status == 0 && r.opaque == 6;
		seen_ev |= r.keylen == 9 && !memcmp(r.key, "evictions", 9) && r.vlen >= 2;
		n++;
	}
	report(ok && seen_ev && rc == 1 && !r.keylen && off == out.len && n >= 5,
	       "stat settings: %d name/value responses (evictions among them), then an empty one", n);
	b.len = 0;
	req(&b, XKV_BIN_STAT, 6, 0, NULL, 0, "reset", NULL, 0);
	report(one(e, &b, &r) && r.status == 0 && !r.keylen && !r.vlen, "stat reset: the empty response alone");
	b.len = 0;
	req(&b, XKV_BIN_STAT, 6, 0, NULL, 0, "conns", NULL, 0);
	report(one(e, &b, &r) && r.status == XKV_BIN_ENOENT, "stat conns: 0x01 (no such group here)");
	/* sizes_enable, sizes_disable: their one value and no empty response
	 * after it (memcached's); sizes while enabled: the items written since
	 * (szb, flags 3: 48 + 3 + 1 + 5 + 2 + 4 + 8 = 71 bytes, bucket 96),
	 * then the empty response */
	b.len = 0;
	req(&b, XKV_BIN_STAT, 6, 0, NULL, 0, "sizes_enable", NULL, 0);
	report(one(e, &b, &r) && r.status == 0 && r.keylen == 12 && !memcmp(r.key, "sizes_status", 12) &&
	       val_is(&r, "enabled"), "stat sizes_enable: sizes_status enabled, no empty response after");
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 6, 0, "szb", "hello", 3, 0);
	req(&b, XKV_BIN_STAT, 6, 0, NULL, 0, "sizes", NULL, 0);
	memset(&st, 0, sizeof(st));
	run(e, &st, &b, &out, NULL);
	off = 0;
	ok = next_res(&out, &off, &r) == 1 && r.op == XKV_BIN_SET && r.status == 0;
	ok &= next_res(&out, &off, &r) == 1 && r.status == 0 && r.keylen == 2 && !memcmp(r.key, "96", 2) &&
	      val_is(&r, "1");
	ok &= next_res(&out, &off, &r) == 1 && !r.keylen && !r.vlen && off == out.len;
	report(ok, "stat sizes while enabled: 96 1 (the item set since), then the empty response");
	b.len = 0;
	req(&b, XKV_BIN_STAT, 6, 0, NULL, 0, "sizes_disable", NULL, 0);
	report(one(e, &b, &r) && r.status == 0 && r.keylen == 12 && val_is(&r, "disabled"),
	       "stat sizes_disable: sizes_status disabled, no empty response after");
	b.len = 0;
	req(&b, XKV_BIN_STAT, 6, 0, NULL, 0, "sizes", NULL, 0);
	memset(&st, 0, sizeof(st));
	run(e, &st, &b, &out, NULL);
	off = 0;
	ok = next_res(&out, &off, &r) == 1 && r.keylen == 12 && val_is(&r, "disabled");
	ok &= next_res(&out, &off, &r) == 1 && !r.keylen && !r.vlen && off == out.len;
	report(ok, "stat sizes while disabled: sizes_status disabled, then the empty response");
	b.len = 0;
	be(ex, 0, 4);
	req(&b, XKV_BIN_FLUSHQ, 7, 0, ex, 4, NULL, NULL, 0);
	req(&b, XKV_BIN_GET, 8, 0, NULL, 0, "t", NULL, 0);
	memset(&st, 0, sizeof(st));
	run(e, &st, &b, &out, NULL);
	off = 0;
	report(next_res(&out, &off, &r) == 1 && r.opaque == 8 && r.status == XKV_BIN_ENOENT &&
	       off == out.len, "flushq: silent, the item gone");
	/* later writes (the 1 MiB set of t_malformed) must not meet its walk
	 * (flush_settle says why) */
	flush_settle(e);
	b.len = 0;
	req(&b, XKV_BIN_VERBOSITY, 9, 0, ex, 4, NULL, NULL, 0);
	req(&b, XKV_BIN_NOOP, 10, 0, NULL, 0, NULL, NULL, 0);
	memset(&st, 0, sizeof(st));
	int vrc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(vrc == XKV_STREAM_MORE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_UNKNOWN &&
	       val_is(&r, "Unknown command") && next_res(&out, &off, &r) == 1 && r.opaque == 10,
	       "verbosity: 0x81 (memcached 1.6.18 does not serve it), the stream goes on");
	b.len = 0;
	req(&b, XKV_BIN_QUIT, 11, 0, NULL, 0, NULL, NULL, 0);
	req(&b, XKV_BIN_NOOP, 12, 0, NULL, 0, NULL, NULL, 0);
	memset(&st, 0, sizeof(st));
	int qrc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(qrc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.op == XKV_BIN_QUIT &&
	       off == out.len, "quit: answered, then closed");
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; xkv_layouts[i]; i++) {
		struct env e;
		layout = xkv_layouts[i]->name;
		printf("== %s\n", layout);
		if (layout_unavailable(layout))
			continue;
		if (env_open(&e, layout)) {
			n_fail++;
			continue;
		}
		t_storage(&e);
		t_arith_delete(&e);
		t_quiet(&e);
		t_touch_flush_misc(&e);
		t_malformed(&e);
		t_udp(&e);
		t_sasl(&e);
		env_close(&e);
	}
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
