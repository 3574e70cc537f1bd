// SPDX-License-Identifier: MIT
/* Binary protocol tests, the shared helpers: pass/fail reporting, the store
 * loaded in-process (env), request frames built and responses decoded, a
 * stream call through a fresh connection, one request and its one response. */
#include "binproto_test.h"

int n_pass, n_fail;
const char *layout;

void report(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s %s: ", ok ? "PASS" : "FAIL", layout);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	ok ? n_pass++ : n_fail++;
}

int env_open(struct env *e, const char *name)
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

void env_close(struct env *e)
{
	xkv_slow_free(e->sl);
	xkv_store_close(&e->s);
	bpf_object__close(e->obj);
}

/* ---- frames ---------------------------------------------------------------- */

void be(__u8 *p, __u64 v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (__u8)v;
}

__u64 rd(const __u8 *p, int n)
{
	__u64 v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Append one request frame to b. */
void req(struct xkv_buf *b, __u8 op, __u32 opaque, __u64 cas, const void *ext, __u8 extlen,
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

void req_set(struct xkv_buf *b, __u8 op, __u32 opaque, __u64 cas, const char *key,
	     const char *val, __u32 flags, __u32 exp)
{
	__u8 ext[8];
	be(ext, flags, 4);
	be(ext + 4, exp, 4);
	req(b, op, opaque, cas, ext, 8, key, val, (__u32)strlen(val));
}

void req_arith(struct xkv_buf *b, __u8 op, __u32 opaque, const char *key, __u64 delta,
	       __u64 initial, __u32 exp)
{
	__u8 ext[20];
	be(ext, delta, 8);
	be(ext + 8, initial, 8);
	be(ext + 16, exp, 4);
	req(b, op, opaque, 0, ext, 20, key, NULL, 0);
}

/* The responses in out, from *off on: 1 and the next in *r, 0 at the end,
 * -1 on a broken frame. */
int next_res(const struct xkv_buf *out, size_t *off, struct res *r)
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
int run(struct env *e, struct xkv_slow_stream *st, const struct xkv_buf *in, struct xkv_buf *out,
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
bool one(struct env *e, const struct xkv_buf *in, struct res *r)
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
void flush_settle(struct env *e)
{
	for (int i = 0; i < 60000 && xkv_slow_flush_busy(e->sl); i++)
		usleep(1000);
}

bool val_is(const struct res *r, const char *v)
{
	return r->vlen == strlen(v) && !memcmp(r->val, v, r->vlen);
}
