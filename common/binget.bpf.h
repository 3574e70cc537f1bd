/* SPDX-License-Identifier: MIT */
/* memcached's binary get, getq, getk and getkq for the XDP program
 * (xdp.bpf.h, xdp_binary): which frames it answers, their key, and the
 * responses, byte for byte as the slow path writes them (engine/binproto.c:
 * run_get, put_res, put_err).  The hit's rules are the text get's
 * (ops.bpf.h, get_live).  Expects prelude.bpf.h and the variant's store
 * before it.  docs/protocol.md, "Binary protocol". */
#ifndef XDPKV_BINGET_BPF_H
#define XDPKV_BINGET_BPF_H

#include "ops.bpf.h"

#define XKV_BIN_BODY (XKV_TEXT + XKV_BIN_HDR_LEN) /* a response's extras in reply[] */

/* The request in sc->req (tlen bytes): its key length when it is one get,
 * getq, getk or getkq frame of the shape memcached checks (no extras, a
 * body of just the key) with data type and cas 0, nothing after it, and a
 * key of at most --key-size bytes (its bytes: xkv_bin_load_key); else 0 (the
 * slow path's). */
static __always_inline __u32 bin_get_klen(struct xkv_scratch *sc, __u32 tlen)
{
	const struct xkv_bin_hdr *h = (const void *)sc->req;
	__u8 op = h->opcode;
	__u32 klen = xkv_ntohs(h->keylen);

	if (op != XKV_BIN_GET && op != XKV_BIN_GETQ && op != XKV_BIN_GETK && op != XKV_BIN_GETKQ)
		return 0;
	if (h->extlen || h->datatype || h->cas || bpf_ntohl(h->bodylen) != klen)
		return 0;
	if (!klen || klen > cfg.key_cap || tlen != XKV_BIN_HDR_LEN + klen)
		return 0;
	return klen;
}

/* Does a byte of the 8 in w fall below b (b <= 0x80)?  The SWAR test of
 * parse.h's xkv_word_special, for any bound. */
static __always_inline __u64 bytes_below(__u64 w, __u64 b)
{
	return (w - b * XKV_ONES) & ~w & XKV_HIGHS;
}

/* Is a byte of the 8 in w equal to b? */
static __always_inline __u64 bytes_eq(__u64 w, __u64 b)
{
	return bytes_below(w ^ (b * XKV_ONES), 1);
}

/* The key of a binary request (klen bytes at off: after its header and
 * extras) into sc->key,
 * zero padded, by xkv_load_key: 1, or 0 when it holds a byte the store
 * refuses (its accessors' rule, xkv_key_check: a space, CR, LF, and what
 * wire.h's xkv_key_byte_bad refuses, NUL and without --binary-keys every
 * control byte and DEL), which the slow path answers.  Word by word.
 * Global: verified once (its exits do not multiply the states after it). */
__attribute__((noinline)) int xkv_bin_load_key(struct xkv_scratch *sc, __u32 off, __u32 klen)
{
	if (!sc || klen > XKV_KEY_MAX || off > XKV_BIN_HDR_LEN + 8)
		return 0;
	sc->pr.tok[1].off = off;
	sc->pr.tok[1].len = klen;
	xkv_load_key(sc, 1);
	const __u64 *k = (const __u64 *)sc->key;
	for (__u32 i = 0; i < (XKV_KEY_MAX + 6) / 8; i++) {
		if (i * 8 >= cfg.key_size || i * 8 >= klen)
			break;
		__u64 w = k[i];
		__u32 rem = klen - i * 8;
		if (rem < 8)
			w |= ~0ULL << (rem * 8); /* the padding: 0xff, a byte both rules take */
		__u64 bad = cfg.flags & XKV_CFG_BINARY_KEYS ?
				    bytes_below(w, 1) | bytes_eq(w, ' ') | bytes_eq(w, '\r') | bytes_eq(w, '\n') :
				    xkv_word_special(w); /* below 0x21, or DEL */
		if (bad)
			return 0;
	}
	return 1;
}

/* The response header at reply[XKV_TEXT], as put_res writes it: the
 * request's opcode and opaque echoed, body = extlen + kl + the rest. */
static __always_inline void bin_res_hdr(struct xkv_scratch *sc, __u16 status, __u32 kl,
					__u8 extlen, __u32 body, __u64 cas)
{
	struct xkv_bin_hdr *h = (void *)&sc->reply[XKV_TEXT];
	const struct xkv_bin_hdr *rq = (const void *)sc->req;

	h->magic = XKV_BIN_RES;
	h->opcode = rq->opcode;
	h->keylen = bpf_htons((__u16)kl);
	h->extlen = extlen;
	h->datatype = 0;
	h->status = bpf_htons(status);
	h->bodylen = bpf_htonl(body);
	h->opaque = rq->opaque;
	h->cas = bpf_cpu_to_be64(cas);
}

/* The key (sc->key, zero padded) at reply[o]: whole words, the padding
 * past its end overwritten by what follows.  Global: verified once, not on
 * each path through a get. */
__attribute__((noinline)) int xkv_bin_put_key(struct xkv_scratch *sc, __u32 o)
{
	if (!sc)
		return 0;
	const __u64 *k = (const __u64 *)sc->key;
	for (__u32 i = 0; i < (XKV_KEY_MAX + 6) / 8; i++) {
		if (i * 8 >= cfg.key_size)
			break;
		*(__u64 *)&sc->reply[(o + i * 8) & XKV_RMASK] = k[i];
	}
	return 0;
}

/* A miss's response (not the quiet ones': they send none): 0x0001 with
 * "Not found" (put_err), or for getk (kl: the key's length) the key and no
 * message.  Returns the offset after it. */
static __always_inline __u32 bin_put_miss(struct xkv_scratch *sc, __u32 kl)
{
	__u32 o = XKV_BIN_BODY;

	if (kl) {
		bin_res_hdr(sc, XKV_BIN_ENOENT, kl, 0, kl, 0);
		xkv_bin_put_key(sc, o);
		return o + kl;
	}
	bin_res_hdr(sc, XKV_BIN_ENOENT, 0, 0, sizeof(XKV_BIN_M_ENOENT) - 1, 0);
	PUT_LIT(sc, &o, XKV_BIN_M_ENOENT);
	return o;
}

/* A hit's response (run_get's put_res): the item's cas in the header, its
 * flags as the extras, the key when kl (getk, getkq), the value.  Returns
 * the offset after it, or 0 when it would not fit one datagram or the
 * value lives in the big map (entry.h): the slow path's. */
static __always_inline __u32 bin_put_hit(struct xkv_scratch *sc, struct xkv_entry *e, __u32 kl)
{
	__u32 len = e->len, o = XKV_BIN_BODY + 4;

	if (len > cfg.val_cap || len > 2047 || kl > XKV_KEY_MAX ||
	    XKV_BIN_HDR_LEN + 4 + kl + len > XKV_DGRAM_TEXT)
		return 0;
	bin_res_hdr(sc, XKV_BIN_OK, kl, 4, 4 + kl + len, e->wtime_ns);
	*(__be32 *)&sc->reply[XKV_BIN_BODY] = bpf_htonl(e->flags);
	if (kl)
		xkv_bin_put_key(sc, o);
	o += kl;
	if (len)
		XKV_STORE_COPY_VALUE(sc, o, e, len);
	return o + len;
}

/* What bin_get returns besides a response's length */
#define XKV_BIN_SILENT 0       /* a quiet miss: nothing to send */
#define XKV_BIN_NOT_OURS (-1)  /* not a frame the program answers: the slow path's */
#define XKV_BIN_ROOM (-2)      /* a value over one datagram or in the big map */
#define XKV_BIN_BUSY (-3)      /* a writer was inside the item */

/* The binary request in g->sc->req (tlen bytes) against the store: its
 * response at reply[XKV_TEXT] and that reply's UDP payload length (frame
 * header included), or one of the codes above.  Counted in g as a text get
 * is (get_count adds it where it is answered).  A hit: the
 * item's cas in the header, its flags, [key,] value; a miss: 0x0001 "Not
 * found" (getk: the key instead); a quiet miss: nothing.  Inline, not
 * global: a global function knows sc only as large as its struct, and
 * arena's value copy goes through sc->entry's data beyond it. */
static __always_inline int bin_get(struct get_ctx *g, __u32 tlen)
{
	struct xkv_scratch *sc = g->sc;
	__u32 klen = bin_get_klen(sc, tlen), seq;
	if (!klen || !xkv_bin_load_key(sc, XKV_BIN_HDR_LEN, klen))
		return XKV_BIN_NOT_OURS;
	__u8 op = sc->req[1];
	__u32 kl = op == XKV_BIN_GETK || op == XKV_BIN_GETKQ ? klen : 0; /* the key echoed */

	get_begin(g);
	sc->tally.keys++;
	struct xkv_entry *e;
	int live = get_live(g, &e, &seq);
	if (live < 0)
		return XKV_BIN_BUSY;
	if (!live)
		return op == XKV_BIN_GETQ || op == XKV_BIN_GETKQ ? XKV_BIN_SILENT
								 : (int)bin_put_miss(sc, kl) - 8;
	__u32 o = bin_put_hit(sc, e, kl);
	if (!o)
		return XKV_BIN_ROOM;
	if (!get_intact(g, e, seq))
		return XKV_BIN_BUSY;
	return (int)o - 8;
}

#endif
