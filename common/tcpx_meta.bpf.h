/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, a meta command of a segment (xdpkv_tcpx_meta):
 * mn, and the common forms of mg, ms and md, answered byte for byte as the
 * slow path answers them (engine/meta.c, which follows memcached 1.6.18):
 *   mg <key> [v f s c t k O<opaque> q]   a read: VA <bytes> (v) or HD, the
 *                                        return flags in request order, the
 *                                        value; a miss EN (k, O), q: none
 *   ms <key> <datalen> [F<flags> T<ttl> MS q O k c]
 *                                        a set: HD (O k c, c the new cas);
 *                                        q: none
 *   md <key> [q O k]                     HD, NF (O k); q hides HD only
 * Each flag once, a one-letter token (O and the numbers excepted).  What
 * else the meta protocol has — base64 keys, cas compares, modes other than
 * set, touches and vivify (T, N on mg), invalidation, the win tokens, h l u
 * on mg, a negative ttl, ma and me — and an item marked stale or won is the
 * slow path's: the segment goes on whole.  Expects tcpx_pipe.bpf.h's
 * beginning (TCPX_REFUSE). */
#ifndef XDPKV_TCPX_META_BPF_H
#define XDPKV_TCPX_META_BPF_H

/* the flags this path answers: one bit each (sc->tx.meta.mask) */
#define XKV_META_F_v (1u << 0)
#define XKV_META_F_f (1u << 1)
#define XKV_META_F_s (1u << 2)
#define XKV_META_F_c (1u << 3)
#define XKV_META_F_t (1u << 4)
#define XKV_META_F_k (1u << 5)
#define XKV_META_F_O (1u << 6)
#define XKV_META_F_q (1u << 7)
#define XKV_META_F_F (1u << 8)
#define XKV_META_F_T (1u << 9)
#define XKV_META_F_M (1u << 10)
#define XKV_META_MG (XKV_META_F_v | XKV_META_F_f | XKV_META_F_s | XKV_META_F_c | XKV_META_F_t | \
		     XKV_META_F_k | XKV_META_F_O | XKV_META_F_q)
#define XKV_META_MS (XKV_META_F_F | XKV_META_F_T | XKV_META_F_M | XKV_META_F_q | XKV_META_F_O | \
		     XKV_META_F_k | XKV_META_F_c)
#define XKV_META_MD (XKV_META_F_q | XKV_META_F_O | XKV_META_F_k)
#define XKV_META_TOKENS 12    /* a command's tokens at most here (memcached: 20) */
#define XKV_META_OPAQUE 32    /* O and its opaque, at most (memcached's limit) */

static __always_inline int xkv_meta_op(__u8 op)
{
	return op == XKV_OP_MG || op == XKV_OP_MS || op == XKV_OP_MD || op == XKV_OP_MN;
}

/* The flag of the token t: its bit, 0 when this path does not answer it
 * (the argument's value into sc->tx.meta). */
static __always_inline __u32 meta_flag(struct xkv_scratch *sc, __u32 t)
{
	struct xkv_req *r = &sc->pr;
	if (t >= XKV_PARSE_TOKENS)
		return 0;
	if (r->tok[t].len == 0)
		return 0;
	struct xkv_tok a = { .off = r->tok[t].off + 1, .len = r->tok[t].len - 1 };
	__u8 ch = sc->req[r->tok[t].off & XKV_PMASK];
	__u64 v;

	switch (ch) {
	case 'v': return a.len ? 0 : XKV_META_F_v;
	case 'f': return a.len ? 0 : XKV_META_F_f;
	case 's': return a.len ? 0 : XKV_META_F_s;
	case 'c': return a.len ? 0 : XKV_META_F_c;
	case 't': return a.len ? 0 : XKV_META_F_t;
	case 'k': return a.len ? 0 : XKV_META_F_k;
	case 'q': return a.len ? 0 : XKV_META_F_q;
	case 'O': return r->tok[t].len <= XKV_META_OPAQUE ? XKV_META_F_O : 0;
	case 'M': return a.len == 1 && sc->req[a.off & XKV_PMASK] == 'S' ? XKV_META_F_M : 0;
	case 'F':
		if (xkv_tok_u64(sc->req, &a, 0xffffffffULL, &v))
			return 0;
		sc->tx.meta.cflags = (__u32)v;
		return XKV_META_F_F;
	case 'T': /* a negative ttl (stored expired) is the slow path's */
		if (xkv_tok_u64(sc->req, &a, 0x7fffffffULL, &v))
			return 0;
		sc->tx.meta.ttl = (__s64)v;
		return XKV_META_F_T;
	}
	return 0;
}

struct meta_walk {
	struct xkv_scratch *sc;
	__u32 allowed;
};

/* One flag token (sc->tx.meta.t): 1 to stop (not answered here: mask 0). */
static long meta_flag_step(__u32 i, void *v)
{
	struct meta_walk *w = v;
	struct xkv_scratch *sc = w->sc;
	if (!sc)
		return 1;
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 t = p->meta.t;

	if (t >= sc->pr.ntok)
		return 1;
	__u32 b = meta_flag(sc, t);
	if (!b || !(b & w->allowed) || (p->meta.mask & b)) { /* each once, as memcached */
		p->meta.mask = 0;
		p->meta.t = XKV_META_TOKENS;
		return 1;
	}
	p->meta.mask |= b;
	p->meta.t = t + 1;
	return 0;
}

/* The meta command parsed in sc->pr (its op one of xkv_meta_op's), len
 * bytes of sc->req: 1 when this path answers it (its flags in
 * sc->tx.meta, an ms's data block framed: sc->pr.bytes, data_off, next),
 * 0 when it goes on.  Global: verified once, for the scan and the run. */
__attribute__((noinline)) int xkv_meta_req(struct xkv_scratch *sc, __u32 len)
{
	if (!sc)
		return 0;
	struct xkv_req *r = &sc->pr;
	struct xkv_tcpx_seg *p = &sc->tx;
	__u8 op = r->op;
	__u32 n = r->ntok, first = 2, allowed = XKV_META_MD;

	__builtin_memset(&p->meta, 0, sizeof(p->meta));
	if (r->too_many || n > XKV_META_TOKENS || n == 0)
		return 0;
	if (op == XKV_OP_MN)
		return n == 1;
	if (n < 2 || xkv_check_key(r, 1))
		return 0;
	if (op == XKV_OP_MG) {
		allowed = XKV_META_MG;
	} else if (op == XKV_OP_MS) {
		/* ms <key> <datalen> <flags>\r\n<data>\r\n (dispatch.c's frame_ms) */
		__u64 v;
		if (n < 3 || xkv_tok_u64(sc->req, &r->tok[2], 0x7ffffffdULL, &v) || v > cfg.val_cap ||
		    v >= XKV_REQ_MAX)
			return 0;
		__u32 end = r->line_len + 2 + (__u32)v;
		if (end + 2 > len || end + 2 > XKV_REQ_MAX || sc->req[end & XKV_PMASK] != '\r' ||
		    sc->req[(end + 1) & XKV_PMASK] != '\n')
			return 0;
		r->bytes = (__u32)v;
		r->data_off = r->line_len + 2;
		r->next = end + 2;
		allowed = XKV_META_MS;
		first = 3;
	} else if (op != XKV_OP_MD) {
		return 0;
	}
	p->meta.first = first;
	p->meta.t = first;
	p->meta.mask = XKV_META_F_q << 16; /* a mark: no flag yet, nothing refused */
	struct meta_walk w = { .sc = sc, .allowed = allowed };
	xkv_loop(XKV_META_TOKENS, meta_flag_step, &w);
	if (!p->meta.mask)
		return 0;
	p->meta.mask &= 0xffff;
	/* a write's reply room: "HD" or "NF", O, c and the line end fit one
	 * unit; k adds the key */
	p->meta.units = 1 + (p->meta.mask & XKV_META_F_k ? (r->tok[1].len + 2 + 63) / 64 : 0);
	return 1;
}

/* One return flag (token sc->tx.meta.t) written at reply[meta.o] when it
 * is one of meta.which, in memcached's form: " f<flags>", " s<bytes>",
 * " c<cas>", " t<seconds>" (-1: none), " k<key>", " O<opaque>". */
static long meta_ret_step(__u32 i, void *v)
{
	struct meta_walk *w = v;
	struct xkv_scratch *sc = w->sc;
	if (!sc)
		return 1;
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 t = p->meta.t, o = p->meta.o;

	if (t >= sc->pr.ntok || t >= XKV_PARSE_TOKENS || o > 1024)
		return 1;
	p->meta.t = t + 1;
	__u32 off = sc->pr.tok[t].off, tl = sc->pr.tok[t].len;
	__u8 ch = sc->req[off & XKV_PMASK];
	__u32 b = ch == 'f' ? XKV_META_F_f : ch == 's' ? XKV_META_F_s : ch == 'c' ? XKV_META_F_c :
		  ch == 't' ? XKV_META_F_t : ch == 'k' ? XKV_META_F_k : ch == 'O' ? XKV_META_F_O : 0;
	if (!(b & p->meta.which))
		return 0;
	sc->reply[o & XKV_RMASK] = ' ';
	sc->reply[(o + 1) & XKV_RMASK] = ch;
	o += 2;
	if (b == XKV_META_F_f) {
		put_u32(sc, &o, p->meta.cflags);
	} else if (b == XKV_META_F_s) {
		put_u32(sc, &o, p->meta.len);
	} else if (b == XKV_META_F_c) {
		put_u64(sc, &o, p->meta.cas);
	} else if (b == XKV_META_F_t) {
		if (p->meta.ttl < 0)
			PUT_LIT(sc, &o, "-1");
		else
			put_u64(sc, &o, (__u64)p->meta.ttl);
	} else if (b == XKV_META_F_k) {
		const __u64 *k = (const __u64 *)sc->key;
		for (__u32 j = 0; j < (XKV_KEY_MAX + 6) / 8; j++) {
			if (j * 8 >= cfg.key_size)
				break;
			*(__u64 *)&sc->reply[(o + j * 8) & XKV_RMASK] = k[j];
		}
		o += sc->klen & 0xff;
	} else { /* O: the token as sent, its letter written already */
		for (__u32 j = 0; j < XKV_META_OPAQUE / 8; j++)
			*(__u64 *)&sc->reply[(o + j * 8) & XKV_RMASK] =
				*(const __u64 *)&sc->req[(off + 1 + j * 8) & (XKV_REQ_MAX - 1)];
		o += (tl - 1) & (XKV_META_OPAQUE - 1);
	}
	p->meta.o = o;
	return 0;
}

/* "<code>" at reply[XKV_TEXT], then the return flags of which in request
 * order, then "\r\n": the offset after it.  Global: verified once. */
__attribute__((noinline)) __u32 xkv_meta_line(struct xkv_scratch *sc, __u32 code, __u32 which)
{
	if (!sc)
		return 0;
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 o = XKV_TEXT + 2;

	*(__u16 *)&sc->reply[XKV_TEXT] = (__u16)code;
	if (code == ('V' | 'A' << 8)) {
		PUT_LIT(sc, &o, " ");
		put_u32(sc, &o, p->meta.len);
	}
	p->meta.o = o;
	p->meta.t = p->meta.first;
	p->meta.which = which & p->meta.mask;
	struct meta_walk w = { .sc = sc };
	xkv_loop(XKV_META_TOKENS, meta_ret_step, &w);
	o = p->meta.o;
	if (o > 1024)
		return 0;
	PUT_LIT(sc, &o, "\r\n");
	return o;
}
#define META_CODE(s) ((__u32)(s)[0] | (__u32)(s)[1] << 8)

/* The line made (xkv_meta_line: 0 when it did not fit) collected. */
static __always_inline int meta_send(struct xdp_md *ctx, struct xdp_req *q, __u32 o)
{
	struct xkv_stats *st = q->st;

	if (!o || xkv_emit(ctx, &q->sc->addr, q->sc, q->st, o - 8) != XDP_TX)
		return TCPX_REFUSE(refused_room);
	return XDP_TX;
}

/* mg: a hit's VA or HD with its flags and value, a miss's EN (none with q).
 * An item marked stale or won answers X, Z or W, and may be won here: the
 * slow path's. */
static __always_inline int tcpx_meta_get(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_tcpx_seg *p = &sc->tx;
	struct get_ctx g = { .sc = sc, .st = st, .now = q->now };
	struct xkv_entry *e;
	__u32 seq;

	get_begin(&g);
	int live = get_live(&g, &e, &seq);
	if (live < 0)
		return TCPX_REFUSE(refused_room);
	if (!live) {
		stat_inc(st, XKV_STAT_get_misses);
		if (p->meta.mask & XKV_META_F_q)
			return XDP_TX;
		return meta_send(ctx, q, xkv_meta_line(sc, META_CODE("EN"), XKV_META_F_O | XKV_META_F_k));
	}
	__u32 len = e->len;
	if ((READ_ONCE_U32(e->klen) & (XKV_ENT_STALE | XKV_ENT_WON)) || len > cfg.val_cap || len > 1024)
		return TCPX_REFUSE(refused_room);
	p->meta.len = len;
	p->meta.cflags = e->flags;
	p->meta.cas = e->wtime_ns;
	p->meta.ttl = -1;
	if (e->expire_ns) /* live: after now */
		p->meta.ttl = (__s64)((e->expire_ns - q->now + 999999999ull) / 1000000000ull);
	int v = p->meta.mask & XKV_META_F_v;
	__u32 o = xkv_meta_line(sc, v ? META_CODE("VA") : META_CODE("HD"), XKV_META_MG);
	if (!o || o > 1024)
		return TCPX_REFUSE(refused_room);
	/* unknown to the compiler again: the masks below stay (6.1's verifier
	 * does not carry this check's 32-bit bound to the pointer) */
	barrier_var(o);
	if (v) {
		if (len)
			XKV_STORE_COPY_VALUE(sc, o, e, len);
		o += len;
		PUT_LIT(sc, &o, "\r\n");
	}
	if (!get_intact(&g, e, seq)) /* a writer came: nothing sent, nothing counted */
		return TCPX_REFUSE(refused_room);
	stat_inc(st, XKV_STAT_get_hits);
	return meta_send(ctx, q, o);
}

/* ms: the entry as a text set builds it (F, T), stored; HD with O k c. */
static __always_inline int tcpx_meta_set(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_req *r = &sc->pr;
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 bytes = r->bytes;

	r->flags = p->meta.cflags;
	r->exptime = p->meta.ttl;
	r->noreply = 0;
	xkv_entry_head(sc, q->now);
	if (bytes > cfg.val_cap || bytes >= XKV_REQ_MAX) /* checked; for the verifier */
		return TCPX_REFUSE(refused_shape);
	xdp_set_value(sc, r->data_off, bytes);
	int err = xkv_op_set(sc, st);
	if (err) {
		stat_inc(st, XKV_STAT_pass_busy);
		return TCPX_REFUSE(refused_room); /* nothing changed: the slow path answers it */
	}
	p->applied = 1;
	if (p->meta.mask & XKV_META_F_q)
		return XDP_TX;
	p->meta.cas = sc->entry.wtime_ns;
	return meta_send(ctx, q, xkv_meta_line(sc, META_CODE("HD"), XKV_META_F_O | XKV_META_F_k | XKV_META_F_c));
}

/* md: HD (none with q) or NF with O k. */
static __always_inline int tcpx_meta_delete(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_tcpx_seg *p = &sc->tx;
	int found = xkv_op_delete(sc, st, q->now);

	if (found < 0) {
		stat_inc(st, XKV_STAT_pass_busy);
		return TCPX_REFUSE(refused_room);
	}
	p->applied = 1;
	if (found && (p->meta.mask & XKV_META_F_q))
		return XDP_TX;
	return meta_send(ctx, q, xkv_meta_line(sc, found ? META_CODE("HD") : META_CODE("NF"),
					       XKV_META_F_O | XKV_META_F_k));
}

/* A meta request (scanned) run: its reply collected, or none. */
static __always_inline int tcpx_run_meta(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_req *r = &sc->pr;
	int act;

	if (xkv_parse_req(sc, q->tlen) || !xkv_meta_op(r->op) || !xkv_meta_req(sc, q->tlen) ||
	    r->next != q->tlen)
		return TCPX_REFUSE(refused_shape);
	__u8 op = r->op;
	if (op == XKV_OP_MN) {
		__u32 o = XKV_TEXT;
		PUT_LIT(sc, &o, "MN\r\n");
		act = meta_send(ctx, q, o);
	} else {
		xkv_load_key(sc, 1);
		if (!q->now)
			q->now = bpf_ktime_get_ns();
		act = op == XKV_OP_MG ? tcpx_meta_get(ctx, q)
		    : op == XKV_OP_MS ? tcpx_meta_set(ctx, q)
				      : tcpx_meta_delete(ctx, q);
	}
	if (act == XDP_TX)
		stat_inc(st, XKV_STAT_cmd_other);
	return act == XDP_TX ? XDP_TX : XKV_NEXT;
}

#endif
