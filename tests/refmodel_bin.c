// SPDX-License-Identifier: MIT
/* Reference model: memcached's binary protocol as the fast path serves it,
 * written from memcached's protocol_binary.h and proto_bin.c (1.6.18):
 * a request is a 24-byte header (magic 0x80, opcode, key length, extras
 * length, data type, vbucket, body length, opaque, cas; big-endian) then
 * extras, key, value; a response the same header (magic 0x81, the status
 * where the vbucket was, the opaque echoed) then its body. */
#include "refmodel_int.h"

#define OP_GET 0x00
#define OP_GETQ 0x09
#define OP_GETK 0x0c
#define OP_GETKQ 0x0d
#define HDR 24

static __u32 be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static void put_be(__u8 *p, __u64 v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (__u8)v;
}

/* A response: the header (cas 0), then body[0..blen) after extras of
 * elen bytes and a key of klen bytes, which body holds in that order. */
static void respond(struct rm_result *r, const __u8 *req, __u16 status, __u8 elen, __u16 klen,
		    const void *body, __u32 blen)
{
	__u8 h[HDR] = { 0x81, req[1] };
	put_be(h + 2, klen, 2);
	h[4] = elen;
	put_be(h + 6, status, 2);
	put_be(h + 8, blen, 4);
	memcpy(h + 12, req + 12, 4); /* the opaque, as it came */
	r->text_len = 0;
	say(r, h, HDR);
	say(r, body, blen);
	r->action = RM_XDP_TX;
	r->binary = 1;
}

/* The datagram's request t[0..n) starts with the binary magic.  Served:
 * one get, getq, getk or getkq frame and nothing after it, its key one the
 * store takes (a text key's rule; a space, CR or LF, which end a text key,
 * neither); the rest is the slow path's. */
void handle_binary(struct rm_store *s, const __u8 *t, __u32 n, int64_t now, struct rm_result *r)
{
	static const __u8 zero_cas[8];
	__u8 body[HDR + XKV_KEY_MAX + XKV_VAL_MAX];

	if (n < HDR) {
		pass(r, XKV_STAT_pass_cmd);
		return;
	}
	__u8 op = t[1], elen = t[4], dtype = t[5];
	__u32 klen = be16(t + 2), blen = be32(t + 8);
	const __u8 *key = t + HDR;
	int get = op == OP_GET || op == OP_GETQ || op == OP_GETK || op == OP_GETKQ;
	int quiet = op == OP_GETQ || op == OP_GETKQ, with_key = op == OP_GETK || op == OP_GETKQ;
	if (!get || elen || dtype || memcmp(t + 16, zero_cas, 8) || blen != klen || n != HDR + klen ||
	    !klen || key_problem(&s->cfg, key, klen) || memchr(key, ' ', klen) ||
	    memchr(key, '\r', klen) || memchr(key, '\n', klen)) {
		pass(r, XKV_STAT_pass_cmd);
		return;
	}
	count(r, XKV_STAT_cmd_get);
	count(r, XKV_STAT_get_keys);
	touch(r, key, klen);
	struct rm_item *it = find(s, key, klen);
	if (!it || !alive(it, now)) {
		if (it)
			count(r, XKV_STAT_get_expired);
		count(r, XKV_STAT_get_misses);
		if (quiet)
			discard(r, XKV_STAT_noreply);
		else if (with_key)
			respond(r, t, 0x0001, 0, (__u16)klen, key, klen);
		else
			respond(r, t, 0x0001, 0, 0, "Not found", 9);
		return;
	}
	__u32 kl = with_key ? klen : 0;
	if (it->len > s->cfg.val_cap || HDR + 4 + kl + it->len > XKV_DGRAM_TEXT) {
		pass(r, XKV_STAT_pass_room);
		return;
	}
	count(r, XKV_STAT_get_hits);
	used(s, it);
	put_be(body, it->flags, 4);
	memcpy(body + 4, key, kl);
	memcpy(body + 4 + kl, it->val, it->len);
	respond(r, t, 0x0000, 4, (__u16)kl, body, 4 + kl + it->len);
	r->cas_at = 16;
}
