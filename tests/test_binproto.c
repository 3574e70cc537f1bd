// SPDX-License-Identifier: MIT
/* The binary protocol (engine/binproto.c) in-process, every layout, through
 * the entries the servers use (xkv_slow_stream for TCP, xkv_slow_handle for
 * UDP): each opcode's response (status, extras, key, value, cas, opaque),
 * quiet rules, a pipeline fed one byte at a time, malformed frames, a value
 * over the limit swallowed, SASL PLAIN.  The expected answers are memcached
 * 1.6.18's (proto_bin.c); tests/e2e/binproto.sh checks them against the real
 * memcached with real clients.
 *   test_binproto unit */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "inproc.h"
#include "xdpkv.h"
#include "slowpath.h"
#include "binproto.h"
#include "sasl.h"

#define VAL_CAP 4096
#define ENTRIES 4096
#define BIG_CHUNKS 2048

static int n_pass, n_fail;
static const char *layout;

static void report(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s %s: ", ok ? "PASS" : "FAIL", layout);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	ok ? n_pass++ : n_fail++;
}

struct env {
	struct bpf_object *obj;
	struct xkv_store s;
	struct xkv_slow *sl;
	struct xkv_stats delta;
};

static int env_open(struct env *e, const char *name)
{
	char err[XKV_ERRLEN];
	struct xkv_config cfg;

	memset(e, 0, sizeof(*e));
	if (xkv_config_defaults(&cfg, name))
		return -1;
	cfg.entries = ENTRIES;
	cfg.val_cap = VAL_CAP;
	cfg.key_cap = XKV_KEY_MAX;
	cfg.big_chunks = BIG_CHUNKS;
	if (xkv_inproc_load(&cfg, NULL, &e->obj, &e->s, err, sizeof(err))) {
		printf("FAIL %s: %s\n", name, err);
		return -1;
	}
	if (!(e->sl = xkv_slow_new(&e->s, NULL))) {
		printf("FAIL %s: load: %s\n", name, err);
		bpf_object__close(e->obj);
		return -1;
	}
	return 0;
}

static void env_close(struct env *e)
{
	xkv_slow_free(e->sl);
	xkv_store_close(&e->s);
	bpf_object__close(e->obj);
}

/* ---- frames ---------------------------------------------------------------- */

static void be(__u8 *p, __u64 v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (__u8)v;
}

static __u64 rd(const __u8 *p, int n)
{
	__u64 v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Append one request frame to b. */
static void req(struct xkv_buf *b, __u8 op, __u32 opaque, __u64 cas, const void *ext, __u8 extlen,
		const char *key, const void *val, __u32 vlen)
{
	__u8 h[24] = { XKV_BIN_REQ, op };
	size_t kl = key ? strlen(key) : 0;
	be(h + 2, kl, 2);
	h[4] = extlen;
	be(h + 8, extlen + kl + vlen, 4);
	be(h + 12, opaque, 4);
	be(h + 16, cas, 8);
	xkv_buf_put(b, h, 24);
	xkv_buf_put(b, ext, extlen);
	xkv_buf_put(b, key, kl);
	xkv_buf_put(b, val, vlen);
}

static void req_set(struct xkv_buf *b, __u8 op, __u32 opaque, __u64 cas, const char *key,
		    const char *val, __u32 flags, __u32 exp)
{
	__u8 ext[8];
	be(ext, flags, 4);
	be(ext + 4, exp, 4);
	req(b, op, opaque, cas, ext, 8, key, val, (__u32)strlen(val));
}

static void req_arith(struct xkv_buf *b, __u8 op, __u32 opaque, const char *key, __u64 delta,
		      __u64 initial, __u32 exp)
{
	__u8 ext[20];
	be(ext, delta, 8);
	be(ext + 8, initial, 8);
	be(ext + 16, exp, 4);
	req(b, op, opaque, 0, ext, 20, key, NULL, 0);
}

/* One response, decoded. */
struct res {
	__u8 op, extlen;
	__u16 status, keylen;
	__u32 opaque, flags;
	__u64 cas;
	const __u8 *key, *val;
	__u32 vlen;
};

/* The responses in out, from *off on: 1 and the next in *r, 0 at the end,
 * -1 on a broken frame. */
static int next_res(const struct xkv_buf *out, size_t *off, struct res *r)
{
	const __u8 *p = out->p + *off;
	size_t n = out->len - *off;
	if (!n)
		return 0;
	if (n < 24 || p[0] != XKV_BIN_RES)
		return -1;
	__u32 body = (__u32)rd(p + 8, 4);
	if (n < 24 + (size_t)body)
		return -1;
	r->op = p[1];
	r->keylen = (__u16)rd(p + 2, 2);
	r->extlen = p[4];
	r->status = (__u16)rd(p + 6, 2);
	r->opaque = (__u32)rd(p + 12, 4);
	r->cas = rd(p + 16, 8);
	r->flags = r->extlen == 4 ? (__u32)rd(p + 24, 4) : 0;
	r->key = p + 24 + r->extlen;
	r->val = r->key + r->keylen;
	r->vlen = body - r->extlen - r->keylen;
	*off += 24 + body;
	return 1;
}

/* Run in through a fresh connection (one call); the responses in out, the
 * stream's verdict returned. */
static int run(struct env *e, struct xkv_slow_stream *st, const struct xkv_buf *in, struct xkv_buf *out,
	       size_t *used)
{
	size_t u = 0;
	out->len = 0;
	int rc = xkv_slow_stream(e->sl, NULL, st, in->p, in->len, &u, out, &e->delta);
	if (used)
		*used = u;
	return rc;
}

/* One request, one response expected: *r. */
static bool one(struct env *e, const struct xkv_buf *in, struct res *r)
{
	struct xkv_slow_stream st = {};
	struct xkv_buf out = {};
	size_t off = 0, used;
	int rc = run(e, &st, in, &out, &used);
	bool ok = rc == XKV_STREAM_MORE && used == in->len && next_res(&out, &off, r) == 1 &&
		  off == out.len;
	static struct xkv_buf keep; /* r points into it */
	xkv_buf_free(&keep);
	keep = out;
	if (ok) { /* re-point into keep (same bytes) */
		r->key = keep.p + (r->key - out.p);
		r->val = keep.p + (r->val - out.p);
	}
	return ok;
}

/* The flush walk runs after flush_all's reply; on the hash layouts it may
 * remove what is written between its re-read of an item and the delete
 * (docs/protocol.md, "flush_all"): let it end (up to
 * 60 s: beside other tests on a loaded machine it took longer than 5). */
static void flush_settle(struct env *e)
{
	for (int i = 0; i < 60000 && xkv_slow_flush_busy(e->sl); i++)
		usleep(1000);
}

static bool val_is(const struct res *r, const char *v)
{
	return r->vlen == strlen(v) && !memcmp(r->val, v, r->vlen);
}

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

/* Malformed frames: the wrong shape gets 0x04 and the end; bad magic the
 * end without a word; a value over the limit 0x03, its bytes skipped. */
static void t_malformed(struct env *e)
{
	struct xkv_buf b = {}, out = {};
	struct xkv_slow_stream st = {};
	struct res r;
	size_t off = 0, used;
	__u8 ex[4] = {};

	req(&b, XKV_BIN_GET, 1, 0, ex, 4, "k", NULL, 0);
	req(&b, XKV_BIN_NOOP, 2, 0, NULL, 0, NULL, NULL, 0);
	int rc = run(e, &st, &b, &out, NULL);
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_EINVAL &&
	       off == out.len, "get with extras: 0x04, closed");
	b.len = 0;
	req(&b, XKV_BIN_NOOP, 2, 0, NULL, 0, NULL, NULL, 0);
	xkv_buf_put(&b, "\x81garbage-after-a-frame..", 24);
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.op == XKV_BIN_NOOP &&
	       off == out.len, "bad magic mid-stream: closed without a reply");
	/* a key of 251 bytes */
	char longkey[252];
	memset(longkey, 'a', 251);
	longkey[251] = 0;
	b.len = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, longkey, NULL, 0);
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_EINVAL,
	       "a 251-byte key: 0x04, closed");
	/* memcached reads header, extras and key before it checks them: a
	 * head still coming gets nothing yet, whatever it says */
	size_t whole = b.len;
	b.len = 24 + 10;
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, &used);
	report(rc == XKV_STREAM_MORE && !out.len && !used && st.need == whole,
	       "a 251-byte key not all in: nothing yet, need %zu (want %zu)", st.need, whole);
	b.len = 0;
	xkv_buf_put(&b, "\x80GET /index.html HTTP/1.0\r\n", 28); /* keylen 'ET' = 17748 */
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, &used);
	report(rc == XKV_STREAM_MORE && !out.len && !used && st.need == 24 + 0x4554 + ' ',
	       "0x80 then text: waits for the head its bytes say (need %zu)", st.need);
	/* a stat with a value: the body would never be used */
	b.len = 0;
	req(&b, XKV_BIN_STAT, 1, 0, NULL, 0, NULL, "xyz", 3);
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_EINVAL,
	       "stat with a value: 0x04, closed");
	/* keylen + extlen over the body */
	b.len = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "abc", NULL, 0);
	b.p[11] = 1; /* bodylen 1 < keylen 3 */
	b.len = 26;
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	report(rc == XKV_STREAM_MORE && !out.len, "key longer than the body, the key not all in: nothing yet");
	b.len = 27;
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_UNKNOWN,
	       "key longer than the body, once the key is in: 0x81, closed");
	/* a value over the limit, then a noop: the value's bytes are skipped */
	size_t big = xkv_val_max(&e->s) + 1;
	char *v = malloc(big + 1);
	memset(v, 'v', big);
	v[big] = 0;
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 0, "t", "old", 0, 0);
	req_set(&b, XKV_BIN_SET, 2, 0, "t", v, 0, 0);
	req(&b, XKV_BIN_GET, 3, 0, NULL, 0, "t", NULL, 0);
	memset(&st, 0, sizeof(st));
	struct xkv_buf got = {}, in = {};
	/* in pieces of 64 KiB, as a socket hands them over */
	for (size_t at = 0; at < b.len;) {
		size_t n = b.len - at < 65536 ? b.len - at : 65536;
		xkv_buf_put(&in, b.p + at, n);
		at += n;
		out.len = 0;
		rc = xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
		xkv_buf_put(&got, out.p, out.len);
		memmove(in.p, in.p + used, in.len - used);
		in.len -= used;
	}
	off = 0;
	bool ok = next_res(&got, &off, &r) == 1 && r.status == 0 &&
		  next_res(&got, &off, &r) == 1 && r.status == XKV_BIN_E2BIG && val_is(&r, "Too large.") &&
		  next_res(&got, &off, &r) == 1 && r.opaque == 3 && r.status == XKV_BIN_ENOENT &&
		  off == got.len && rc == XKV_STREAM_MORE;
	report(ok, "set of %zu bytes: 0x03, the old value removed (as memcached), the stream in step", big);
	/* the largest value round trips */
	v[big - 1] = 0;
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 0, "big", v, 0, 0);
	report(one(e, &b, &r) && r.status == 0, "set of %zu bytes", big - 1);
	b.len = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "big", NULL, 0);
	memset(&r, 0, sizeof(r));
	bool one_ok = one(e, &b, &r);
	report(one_ok && r.status == 0 && r.vlen == big - 1 && !memcmp(r.val, v, big - 1),
	       "get of %zu bytes (%s, status 0x%x, %u bytes)", big - 1, one_ok ? "one reply" : "not one reply",
	       r.status, (unsigned)r.vlen);
	/* serve has no room for a body (--max-buffer-mib): need says how much
	 * the frame takes; told no_room, 0x82, the old value removed, the body
	 * swallowed as it arrives, the stream in step */
	b.len = 0;
	req_set(&b, XKV_BIN_SET, 1, 0, "nr", "old", 0, 0);
	req_set(&b, XKV_BIN_SET, 2, 0, "nr", v, 0, 0);
	size_t first = 24 + 8 + 2 + 3, frame2 = b.len - first;
	memset(&st, 0, sizeof(st));
	in.len = 0;
	got.len = 0;
	xkv_buf_put(&in, b.p, first + 1000);
	out.len = 0;
	rc = xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
	bool waits = rc == XKV_STREAM_MORE && used == first && st.need == frame2;
	report(waits, "a body not in yet: need %zu bytes (want %zu)", st.need, frame2);
	xkv_buf_put(&got, out.p, out.len);
	memmove(in.p, in.p + used, in.len - used);
	in.len -= used;
	st.no_room = true;
	out.len = 0;
	rc = xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
	xkv_buf_put(&got, out.p, out.len);
	bool refused = used == in.len && st.swallow == frame2 - 1000 && !st.no_room;
	if (!refused)
		printf("    used %zu of %zu, swallow %llu (want %zu), no_room %d\n", used, in.len,
		       (unsigned long long)st.swallow, frame2 - 1000, st.no_room);
	in.len = 0;
	xkv_buf_put(&in, b.p + first + 1000, b.len - first - 1000);
	req(&in, XKV_BIN_GET, 3, 0, NULL, 0, "nr", NULL, 0);
	out.len = 0;
	rc = xkv_slow_stream(e->sl, NULL, &st, in.p, in.len, &used, &out, &e->delta);
	xkv_buf_put(&got, out.p, out.len);
	off = 0;
	ok = refused && used == in.len && next_res(&got, &off, &r) == 1 && r.status == 0 &&
	     next_res(&got, &off, &r) == 1 && r.opaque == 2 && r.status == XKV_BIN_ENOMEM &&
	     next_res(&got, &off, &r) == 1 && r.opaque == 3 && r.status == XKV_BIN_ENOENT && off == got.len &&
	     rc == XKV_STREAM_MORE;
	if (!ok) {
		off = 0;
		printf("    used %zu of %zu, rc %d, replies:", used, in.len, rc);
		while (next_res(&got, &off, &r) == 1)
			printf(" [op %u status 0x%x]", r.opaque, r.status);
		printf("\n");
	}
	report(ok, "no room for a %zu-byte body: 0x82, the old value removed, the body swallowed, in step",
	       big - 1);
	free(v);
	xkv_buf_free(&got);
	xkv_buf_free(&in);
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}

/* A binary request over UDP: the 8-byte frame header, then frames. */
static void t_udp(struct env *e)
{
	struct xkv_buf b = {}, out = {};
	struct xkv_udp_hdr h = { .req_id = htons(77), .total = htons(1) };
	struct res r;

	xkv_buf_put(&b, &h, sizeof(h));
	req_set(&b, XKV_BIN_SET, 1, 0, "u", "uv", 0, 0);
	req(&b, XKV_BIN_GETK, 2, 0, NULL, 0, "u", NULL, 0);
	struct xkv_udp_hdr got;
	int rc = xkv_slow_handle(e->sl, NULL, b.p, b.len, &got, &out, &e->delta);
	size_t off = 0;
	report(rc == 1 && got.req_id == htons(77) && next_res(&out, &off, &r) == 1 && r.status == 0 &&
	       next_res(&out, &off, &r) == 1 && val_is(&r, "uv") && off == out.len,
	       "udp: set and getk in one datagram");
	b.len = 0;
	xkv_buf_put(&b, &h, sizeof(h));
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "u", NULL, 0);
	b.len -= 1; /* a frame cut short */
	out.len = 0;
	rc = xkv_slow_handle(e->sl, NULL, b.p, b.len, &got, &out, &e->delta);
	report(rc == 0 && out.len == 0, "udp: a frame cut short gets nothing");
	xkv_buf_free(&b);
	xkv_buf_free(&out);
}

/* SASL PLAIN: the password file's checks; unauthenticated commands
 * refused (0x20, closed), text refused, UDP dropped; then served. */
static void t_sasl(struct env *e)
{
	char path[] = "/tmp/xkvbin-pwdb-XXXXXX", err[256];
	int fd = mkstemp(path);
	const char *text = "# users\nalice:s3cret\nbob:pw:with:colons\n";
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		report(false, "sasl: write the password file");
		return;
	}
	fchmod(fd, 0644);
	struct xkv_sasl *db = xkv_sasl_load(path, err, sizeof(err));
	report(!db && strstr(err, "owned by root"), "sasl: a file readable by others refused: %s", err);
	xkv_sasl_free(db);
	fchmod(fd, 0600);
	close(fd);
	db = xkv_sasl_load(path, err, sizeof(err));
	unlink(path);
	report(db && xkv_sasl_users(db) == 2, "sasl: mode 0600 read, 2 users");
	if (!db)
		return;
	xkv_slow_set_sasl(e->sl, db);

	struct xkv_buf b = {}, out = {};
	struct xkv_slow_stream st = {};
	struct res r;
	size_t off = 0;
	req(&b, XKV_BIN_GET, 1, 0, NULL, 0, "k", NULL, 0);
	req(&b, XKV_BIN_NOOP, 2, 0, NULL, 0, NULL, NULL, 0);
	int rc = run(e, &st, &b, &out, NULL);
	report(rc == XKV_STREAM_CLOSE && next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_AUTH_ERROR &&
	       off == out.len, "sasl: get before auth: 0x20, closed");
	b.len = 0;
	xkv_buf_put(&b, "get k\r\n", 7);
	memset(&st, 0, sizeof(st));
	rc = run(e, &st, &b, &out, NULL);
	report(rc == XKV_STREAM_CLOSE && out.len == 0, "sasl: a text connection closed without a reply");
	b.len = 0;
	struct xkv_udp_hdr h = { .total = htons(1) }, got;
	xkv_buf_put(&b, &h, 8);
	xkv_buf_put(&b, "get k\r\n", 7);
	out.len = 0;
	rc = xkv_slow_handle(e->sl, NULL, b.p, b.len, &got, &out, &e->delta);
	report(rc == 0 && out.len == 0, "sasl: a datagram gets nothing");

	memset(&st, 0, sizeof(st));
	const char bad[] = "\0alice\0wrong", good[] = "\0alice\0s3cret";
	b.len = 0;
	req(&b, XKV_BIN_SASL_LIST, 1, 0, NULL, 0, NULL, NULL, 0);
	req(&b, XKV_BIN_VERSION, 2, 0, NULL, 0, NULL, NULL, 0);
	req(&b, XKV_BIN_SASL_AUTH, 3, 0, NULL, 0, "PLAIN", bad, sizeof(bad) - 1);
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	bool ok = next_res(&out, &off, &r) == 1 && r.status == 0 && val_is(&r, "PLAIN") &&
		  next_res(&out, &off, &r) == 1 && r.status == 0 && r.op == XKV_BIN_VERSION &&
		  next_res(&out, &off, &r) == 1 && r.status == XKV_BIN_AUTH_ERROR && off == out.len &&
		  rc == XKV_STREAM_MORE;
	report(ok, "sasl: list mechs PLAIN, version free, a wrong password 0x20 (connection stays)");
	b.len = 0;
	req(&b, XKV_BIN_SASL_AUTH, 4, 0, NULL, 0, "PLAIN", good, sizeof(good) - 1);
	req_set(&b, XKV_BIN_SET, 5, 0, "k", "authed", 0, 0);
	req(&b, XKV_BIN_GET, 6, 0, NULL, 0, "k", NULL, 0);
	rc = run(e, &st, &b, &out, NULL);
	off = 0;
	ok = next_res(&out, &off, &r) == 1 && r.status == 0 && val_is(&r, "Authenticated") &&
	     next_res(&out, &off, &r) == 1 && r.status == 0 && next_res(&out, &off, &r) == 1 &&
	     val_is(&r, "authed") && rc == XKV_STREAM_MORE;
	report(ok, "sasl: authenticated, then served");
	xkv_slow_set_sasl(e->sl, NULL);
	xkv_sasl_free(db);
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
