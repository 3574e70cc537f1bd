/* SPDX-License-Identifier: MIT */
/* The XDP request handler: parse, call the variant's store, write the reply
 * in place and XDP_TX it.  Included once by every variant after it defined
 * store_lookup/store_set/store_del.  The one reply writer lives here. */
#ifndef XDPKV_HANDLER_BPF_H
#define XDPKV_HANDLER_BPF_H

#ifndef XKV_KEY_IN_VALUE
#error "variant must define XKV_KEY_IN_VALUE"
#endif
#ifndef XKV_STORE_MATCH
#define XKV_STORE_MATCH(sc, e) 1
#endif
/* Is the item e (found by store_lookup) live, for the reply to a delete?
 * The per-CPU layouts override it (store_hash.bpf.h, XKV_PERCPU): their
 * delete removes every CPU's copy. */
#ifndef XKV_LIVE_FOR_DELETE
#define XKV_LIVE_FOR_DELETE(sc, e, now) (XKV_STORE_MATCH(sc, e) && xkv_entry_live(e, now))
#endif
/* offset of the value bytes in entry.data */
#define XKV_VOFF (XKV_KEY_IN_VALUE ? cfg.key_size : 0)
#define XKV_TEXT 16       /* reply text starts after udp + frame header */
#define XKV_RMASK 2047    /* offsets into reply[] while writing */
/* Copy the len (<= 2047) value bytes of item e to reply[o].  A layout whose
 * items are not kernel memory a helper can read (arena) defines its own. */
#ifndef XKV_STORE_COPY_VALUE
#define XKV_STORE_COPY_VALUE(sc, o, e, len) \
	bpf_probe_read_kernel(&(sc)->reply[(o) & XKV_RMASK], (len), &(e)->data[XKV_VOFF])
#endif

static __always_inline void put_lit(struct xkv_scratch *sc, __u32 *o, const char *s, __u32 n)
{
	__builtin_memcpy(&sc->reply[*o & XKV_RMASK], s, n);
	*o += n;
}
#define PUT_LIT(sc, o, s) put_lit(sc, o, s, sizeof(s) - 1)

static __always_inline __u32 ndigits(__u32 v)
{
	return 1 + (v >= 10) + (v >= 100) + (v >= 1000) + (v >= 10000) + (v >= 100000) +
	       (v >= 1000000) + (v >= 10000000) + (v >= 100000000) + (v >= 1000000000);
}

/* v / 10 for any u32 without a division instruction (BPF's is slow):
 * 0xcccccccd / 2^35 rounds to 1/10 closely enough over all of u32. */
static __always_inline __u32 div10(__u32 v)
{
	return (__u32)(((__u64)v * 0xcccccccdULL) >> 35);
}

static __always_inline void put_u32(struct xkv_scratch *sc, __u32 *o, __u32 v)
{
	__u32 n = ndigits(v);
	__u32 end = *o + n;
#pragma unroll
	for (int i = 1; i <= 10; i++) {
		__u32 q = div10(v);
		sc->reply[(end - i) & XKV_RMASK] = '0' + (v - q * 10);
		v = q;
		if (!v)
			break;
	}
	*o = end;
}


/* ---- get ---------------------------------------------------------------- */

struct get_ctx {
	struct xkv_scratch *sc;
	struct xkv_stats *st;
	__u64 now;     /* 0 until an item with an expiry needs it */
	__u32 o;       /* next free byte in reply[] */
	__u32 full;    /* reply outgrew one datagram */
	__u32 keyed;   /* the first key is in sc->key already (xkv_quick_get) */
};

/* Write "VALUE <key> <flags> <bytes>\r\n" (key = token t, loaded in sc->key)
 * at reply[o]; returns the offset after it, or 0 if it would not fit.  A
 * global function: the verifier checks it once on its own, so its digit
 * branches do not multiply the states of the get loop. */
__attribute__((noinline)) int xkv_put_value_hdr(struct xkv_scratch *sc, __u32 o, __u32 t,
						__u32 flags, __u32 len)
{
	if (!sc || o > 2048 || t >= XKV_PARSE_TOKENS)
		return 0;
	__u32 klen = sc->pr.tok[t].len;
	if (klen > XKV_KEY_MAX)
		return 0;
	PUT_LIT(sc, &o, XKV_R_VALUE);
	/* the key is in sc->key (xkv_load_key), zero padded to 8-byte words:
	 * copy whole words; the padding past klen is overwritten next */
	const __u64 *k = (const __u64 *)sc->key;
	for (__u32 i = 0; i < (XKV_KEY_MAX + 6) / 8; i++) {
		if (i * 8 >= cfg.key_size)
			break;
		*(__u64 *)&sc->reply[(o + i * 8) & XKV_RMASK] = k[i];
	}
	o += klen;
	PUT_LIT(sc, &o, " ");
	put_u32(sc, &o, flags);
	PUT_LIT(sc, &o, " ");
	put_u32(sc, &o, len);
	PUT_LIT(sc, &o, "\r\n");
	return o;
}

/* Append one key's hit (if any).  Returns 1 to stop the loop. */
static long get_one(__u32 i, void *vctx)
{
	struct get_ctx *g = vctx;
	struct xkv_scratch *sc = g->sc;
	__u32 t = i + 1;

	if (t >= sc->pr.ntok || t >= XKV_PARSE_TOKENS)
		return 1;
	__u32 klen = sc->pr.tok[t].len;
	if (klen > XKV_KEY_MAX)
		return 1;
	if (!g->keyed)
		xkv_load_key(sc, t);
	stat_inc(g->st, XKV_STAT_get_keys);

	struct xkv_entry *e = store_lookup(sc);
	if (!e)
		goto miss;
	/* one optimistic read; a writer inside (array_fnv) sends the request
	 * to the slow path, which waits for it */
	__u32 s1 = READ_ONCE_U32(e->seq);
	if (s1 & 1)
		goto busy;
	barrier();
	if (!XKV_STORE_MATCH(sc, e))
		goto miss;
	/* the clock only for items that can expire (reading it is ~30 ns here) */
	if (e->expire_ns && !g->now)
		g->now = bpf_ktime_get_ns();
	if (!xkv_entry_live(e, g->now)) {
		if (e->wtime_ns)
			stat_inc(g->st, XKV_STAT_get_expired);
		goto miss;
	}
	__u32 len = e->len, flags = e->flags;
	/* the whole reply, END included, must fit one datagram */
	if (len > cfg.val_cap ||
	    g->o + 6 + klen + 1 + ndigits(flags) + 1 + ndigits(len) + 2 + len + 2 + 5 >
		    XKV_TEXT + XKV_DGRAM_TEXT) {
		g->full = 1;
		return 1;
	}
	__u32 o = xkv_put_value_hdr(sc, g->o, t, flags, len);
	if (!o || o > 2048 || len > 2047) {
		g->full = 1;
		return 1;
	}
	if (len)
		XKV_STORE_COPY_VALUE(sc, o, e, len);
	o += len;
	PUT_LIT(sc, &o, "\r\n");
	barrier();
	if (READ_ONCE_U32(e->seq) != s1)
		goto busy;
	g->o = o;
	stat_inc(g->st, XKV_STAT_get_hits);
	return 0;
busy:
	stat_inc(g->st, XKV_STAT_seq_retries);
	g->full = 2;
	return 1;
miss:
	stat_inc(g->st, XKV_STAT_get_misses);
	return 0;
}

/* ---- reply emission ------------------------------------------------------- */

static __always_inline __u16 csum_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* Fold a sum of 32-bit words into 32 bits with end-around carry: the form
 * bpf_csum_diff takes as its seed and returns. */
static __always_inline __u32 csum_fold32(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	return (__u32)s;
}

/* Sum of the UDP pseudo header for family sc->addr.family, UDP length
 * udp_len, from src to dst (16-byte, word-aligned buffers, IPv4 in the first
 * 4 bytes): words added in memory order, as bpf_csum_diff adds them, without
 * a helper call. */
static __always_inline __s64 pseudo_sum(struct xkv_scratch *sc, const __u8 *src, const __u8 *dst,
					__u32 udp_len)
{
	const __u32 *s = (const __u32 *)src, *d = (const __u32 *)dst;
	__u64 sum;
	if (sc->addr.family == 4)
		sum = (__u64)s[0] + d[0] + bpf_htonl((IPPROTO_UDP << 16) | (udp_len & 0xffff));
	else
		sum = (__u64)s[0] + s[1] + s[2] + s[3] + d[0] + d[1] + d[2] + d[3] +
		      bpf_htonl(udp_len) + bpf_htonl(IPPROTO_UDP);
	return csum_fold32(sum);
}

#define XKV_CSUM_INLINE 256 /* up to this many bytes without bpf_csum_diff */

/* Add buf[0 .. n) to the sum s; buf has 8 writable bytes past n, the
 * first 7 zeroed here (the checksum pads to whole words with zeros);
 * n <= 2047. */
static __always_inline __s64 buf_sum(__u8 *buf, __u32 n, __s64 s)
{
	n &= 2047;
	*(__u64 *)&buf[n] = 0;
	__u32 padded = (n + 3) & ~3u;
	if (padded <= XKV_CSUM_INLINE) {
		/* short: summed here, no helper call, eight bytes a step (the two
		 * 32-bit halves of a word are the words bpf_csum_diff adds) */
		__u64 t = (__u32)s;
		for (__u32 w = 0; w < XKV_CSUM_INLINE / 8; w++) {
			if (w * 8 >= padded)
				break;
			__u64 x = *(const __u64 *)&buf[w * 8];
			t += (x & 0xffffffff) + (x >> 32);
		}
		return csum_fold32(t);
	}
#pragma unroll
	for (__u32 c = 0; c < 4; c++) {
		__u32 off = c * 512;
		if (off >= padded)
			break;
		__u32 k = padded - off;
		if (k > 512)
			k = 512;
		s = bpf_csum_diff(0, 0, (__be32 *)&buf[off], k & 0x3fc, (__u32)s);
	}
	return s;
}

/* reply[0 .. 8+plen) = [udp header][frame header][text].  Rewrite the frame
 * into the reply, addressed back to sc->addr, and return XDP_TX, or XDP_PASS
 * when it does not fit.  Global: verified once, whatever the caller's state.
 * The headers are new, not the request's: TTL/hop limit 64, IPv4 DF and an
 * id from this CPU's counter, ECN bits cleared (never echo CE), the UDP
 * checksum computed for both families. */
__attribute__((noinline)) int xkv_emit_frame(struct xdp_md *ctx, struct xkv_scratch *sc, __u32 plen)
{
	if (!ctx || !sc)
		return XDP_PASS;
	struct xkv_addr *a = &sc->addr;
	__u32 udp_len = 8 + plen;
	__u32 l2l3 = ETH_HLEN + a->l3_len;
	int old_len = (int)(ctx->data_end - ctx->data);
	int delta = (int)(l2l3 + udp_len) - old_len;

	/* n: udp_len as the verifier must see it, bounded */
	__u32 n = udp_len;
	barrier_var(n);
	if (n < 8 || n > 2047)
		goto no_room;
	if (delta > 0) {
		/* grow at the head first: no tail to clear, and veth frames have
		 * headroom but no tailroom */
		if (bpf_xdp_adjust_head(ctx, -delta) && bpf_xdp_adjust_tail(ctx, delta))
			goto no_room;
	} else if (delta < 0) {
		if (bpf_xdp_adjust_tail(ctx, delta) && bpf_xdp_adjust_head(ctx, -delta))
			goto no_room;
	}

	struct udphdr *uh = (void *)sc->reply;
	uh->source = a->dport;
	uh->dest = a->sport;
	uh->len = bpf_htons(udp_len);
	uh->check = 0;
	__u16 ck = ~csum_fold((__u32)buf_sum(sc->reply, n, pseudo_sum(sc, a->dst, a->src, udp_len)));
	uh->check = ck ? ck : 0xffff;

	/* the headers, written in place: the frame now has l2l3 + udp_len bytes */
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) + 40 > data_end)
		goto no_room; /* cannot happen: the reply has a UDP header and more */
	__builtin_memcpy(eth->h_dest, a->eth_src, ETH_ALEN);
	__builtin_memcpy(eth->h_source, a->eth_dst, ETH_ALEN);
	if (a->family == 4) {
		struct iphdr *ip = (void *)(eth + 1);
		if (!sc->ip_id)
			sc->ip_id = bpf_get_prandom_u32() | 1;
		eth->h_proto = bpf_htons(ETH_P_IP);
		/* version 4, ihl 5, the request's TOS without its ECN bits */
		__u16 w0 = bpf_htons(0x4500 | (a->tos & ~3));
		__u16 w1 = bpf_htons(20 + udp_len);
		__u16 w2 = bpf_htons((__u16)sc->ip_id++);
		__u16 w3 = bpf_htons(0x4000); /* DF */
		__u16 w4 = bpf_htons((64 << 8) | IPPROTO_UDP);
		__u32 sa, da;
		__builtin_memcpy(&sa, a->dst, 4);
		__builtin_memcpy(&da, a->src, 4);
		__u64 cs = (__u64)w0 + w1 + w2 + w3 + w4 + (sa & 0xffff) + (sa >> 16) + (da & 0xffff) +
			   (da >> 16);
		__u16 *iw = (void *)ip;
		iw[0] = w0;
		iw[1] = w1;
		iw[2] = w2;
		iw[3] = w3;
		iw[4] = w4;
		ip->check = ~csum_fold(cs);
		ip->saddr = sa;
		ip->daddr = da;
	} else {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		eth->h_proto = bpf_htons(ETH_P_IPV6);
		/* version, traffic class without its ECN bits, flow label */
		__be32 first = a->v6_first & ~bpf_htonl(0x00300000);
		__builtin_memcpy(ip6, &first, 4);
		ip6->payload_len = bpf_htons(udp_len);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = 64;
		__builtin_memcpy(&ip6->saddr, a->dst, 16);
		__builtin_memcpy(&ip6->daddr, a->src, 16);
	}
	if (bpf_xdp_store_bytes(ctx, l2l3, sc->reply, n))
		goto no_room;
	return XDP_TX;
no_room:
	/* adjust_* failed before anything was written, so the request is intact */
	return XDP_PASS;
}

/* ---- the access policy ------------------------------------------------------ */

#define XKV_GUARDED (!(cfg.flags & XKV_CFG_UNGUARDED))

/* Is the request's source in the trie `list`? */
static __always_inline int acl_has(struct xkv_scratch *sc, void *list)
{
	sc->acl.prefixlen = 128;
	__builtin_memcpy(sc->acl.addr, sc->addr.src16, 16);
	return bpf_map_lookup_elem(list, &sc->acl) != NULL;
}

/* Is the request's source in the allow list?  The trie lookup is ~45 ns
 * (docs/results.md); a run of requests from one source (the common case on
 * a CPU) asks it once per ACL change: the answer for the last source is
 * kept per CPU under the acl_gen token, which every change of a trie
 * replaces (read before the lookup, so a change racing with it leaves a
 * stale token, never a stale answer). */
static __always_inline int acl_allowed(struct xkv_scratch *sc)
{
	__u32 zero = 0;
	__u64 *tok = bpf_map_lookup_elem(&acl_gen, &zero);
	__u64 t = tok ? *tok : 0;
	const __u64 *s = (const __u64 *)sc->addr.src16;
	if (sc->acl_last.valid && sc->acl_last.token == t && sc->acl_last.src[0] == s[0] &&
	    sc->acl_last.src[1] == s[1])
		return sc->acl_last.allowed;
	barrier();
	int ok = acl_has(sc, &acl_allow);
	sc->acl_last.src[0] = s[0];
	sc->acl_last.src[1] = s[1];
	sc->acl_last.token = t;
	sc->acl_last.allowed = ok;
	sc->acl_last.valid = 1;
	return ok;
}

/* Is a (16-byte form) one of the host entry's inline addresses? */
static __always_inline int addr_inline(const struct xkv_host *h, const __u8 *a)
{
	const __u32 *w = (const __u32 *)a;
#pragma unroll
	for (int i = 0; i < XKV_HOST_INLINE; i++) {
		if (i >= h->n_inline)
			break;
		const __u32 *x = (const __u32 *)h->addr[i];
		if (x[3] == w[3] && x[2] == w[2] && x[1] == w[1] && x[0] == w[0])
			return 1;
	}
	return 0;
}

/* Replies to this source are not capped by --max-amplification: it is in
 * the trust list.  (A TCP connection from the address used to count too;
 * a UDP datagram's source address proves nothing, so an off-path spoofer
 * could aim replies at every pooled TCP client: no more.) */
static __always_inline int src_trusted(struct xkv_scratch *sc)
{
	if (cfg.flags & XKV_CFG_STRICT)
		return 0;
	if (!sc->addr.trusted)
		sc->addr.trusted = acl_has(sc, &acl_trust) ? 1 : 2;
	return sc->addr.trusted == 1;
}

/* A source no host can have: the kernel drops such "martians" in ip_rcv,
 * but XDP runs first, and a reply to one would go to a group or a
 * broadcast address.  IPv4 0/8, 127/8, 224/4 (multicast) and 240/4
 * (reserved, broadcast); IPv6 ::, ::1, ff00::/8 and v4-mapped addresses. */
static __always_inline int src_martian(const struct xkv_addr *a)
{
	if (a->family == 4) {
		__u8 b = a->src[0];
		return b == 0 || b == 127 || b >= 224;
	}
	const __u32 *w = (const __u32 *)a->src;
	if (a->src[0] == 0xff)
		return 1;
	if (w[0] || w[1])
		return 0;
	/* ::, ::1, ::ffff:a.b.c.d (IPv4 must arrive as IPv4) */
	return (!w[2] && (!w[3] || w[3] == bpf_htonl(1))) || w[2] == bpf_htonl(0xffff);
}

/* Per-source rate limit (GCRA): the source's /24 or /64 may send rate_burst
 * requests at once and rate_limit per second after that.  The update is not
 * atomic across CPUs: two CPUs may both admit the last request of a burst. */
static __always_inline int rate_ok(struct xkv_scratch *sc, __u64 now)
{
	struct xkv_rl_key k;
	__u64 T = 1000000000ull / cfg.rate_limit;
	__u64 burst = cfg.rate_burst ? cfg.rate_burst : 1;
	__u64 tau = T * (burst - 1);

	__builtin_memcpy(k.addr, sc->addr.src16, 16);
	if (sc->addr.family == 4) {
		k.addr[15] = 0;
	} else {
		__builtin_memset(&k.addr[8], 0, 8);
	}
	__u64 *tat = bpf_map_lookup_elem(&ratelimit, &k);
	if (!tat) {
		__u64 v = now + T;
		bpf_map_update_elem(&ratelimit, &k, &v, BPF_ANY);
		return 1;
	}
	__u64 t = *tat > now ? *tat : now;
	if (t - now > tau)
		return 0;
	*tat = t + T;
	return 1;
}

/* The request's UDP checksum (v4 or v6; the text is in sc->req, tlen bytes,
 * the frame header in fh) is right, or absent where that is allowed (IPv4),
 * or, with XKV_CFG_CSUM_PARTIAL, only the pseudo-header sum a local veth
 * peer leaves for the hardware it does not have. */
static __always_inline int udp_csum_ok(struct xkv_scratch *sc, const struct udphdr *udp,
				       const struct xkv_udp_hdr *fh, __u32 tlen)
{
	struct xkv_addr *a = &sc->addr;
	__u16 check = udp->check;
	if (!check)
		return a->family == 4;
	__u32 ulen = 16 + tlen;
	__s64 p = pseudo_sum(sc, a->src, a->dst, ulen);
	if ((cfg.flags & XKV_CFG_CSUM_PARTIAL) && check == csum_fold((__u32)p))
		return 1;
	/* the UDP and frame headers, 16 bytes, as four words */
	const __u32 *u = (const __u32 *)udp, *f = (const __u32 *)fh;
	__s64 s = csum_fold32((__u64)(__u32)p + u[0] + u[1] + f[0] + f[1]);
	s = buf_sum(sc->req, tlen, s);
	return csum_fold((__u32)s) == 0xffff;
}

/* Send reply[0 .. 8+plen).  An untrusted source gets at most max_amp bytes
 * per byte it sent: a longer reply is cut to XKV_R_AMP, or to nothing when
 * even that is too long. */
static __always_inline int xkv_emit(struct xdp_md *ctx, struct xkv_addr *a,
				    struct xkv_scratch *sc, struct xkv_stats *st, __u32 plen)
{
	if (XKV_GUARDED && cfg.max_amp &&
	    (__u64)plen > (__u64)cfg.max_amp * a->req_bytes && !src_trusted(sc)) {
		if (XKV_UDP_HDR_LEN + sizeof(XKV_R_AMP) - 1 > (__u64)cfg.max_amp * a->req_bytes) {
			stat_inc(st, XKV_STAT_drop_amp);
			return XDP_DROP;
		}
		stat_inc(st, XKV_STAT_amp_capped);
		__u32 o = XKV_TEXT;
		PUT_LIT(sc, &o, XKV_R_AMP);
		plen = o - 8;
	}
	int act = xkv_emit_frame(ctx, sc, plen);
	stat_inc(st, act == XDP_TX ? XKV_STAT_replies : XKV_STAT_pass_room);
	return act;
}

/* Reply with one constant line. */
static __always_inline int xkv_reply_line(struct xdp_md *ctx, struct xkv_addr *a,
					  struct xkv_scratch *sc, struct xkv_stats *st,
					  const char *line, __u32 n)
{
	__u32 o = XKV_TEXT;
	put_lit(sc, &o, line, n);
	return xkv_emit(ctx, a, sc, st, o - 8);
}
#define REPLY_LINE(s) xkv_reply_line(ctx, a, sc, st, s, sizeof(s) - 1)

static __always_inline int xkv_reply_err(struct xdp_md *ctx, struct xkv_addr *a,
					 struct xkv_scratch *sc, struct xkv_stats *st, int err)
{
#define E(code, str, counter) case code: stat_inc(st, XKV_STAT_##counter); \
	return xkv_reply_line(ctx, a, sc, st, str, sizeof(str) - 1);
	switch (err) {
	E(XKV_E_UNKNOWN, XKV_R_ERROR, err_unknown)
	E(XKV_E_FORMAT, XKV_R_FORMAT, err_client)
	E(XKV_E_KEY_LONG, XKV_R_KEY_LONG, err_client)
	E(XKV_E_KEY_BAD, XKV_R_KEY_BAD, err_client)
	E(XKV_E_DATA, XKV_R_DATA, err_client)
	E(XKV_E_NO_CRLF, XKV_R_NO_CRLF, err_client)
	E(XKV_E_MULTI_DGRAM, XKV_R_MULTI_DGRAM, err_client)
	E(XKV_E_TOO_LARGE, XKV_R_TOO_LARGE, err_too_large)
	E(XKV_E_OOM, XKV_R_OOM, err_oom)
	E(XKV_E_EXPTIME, XKV_R_EXPTIME, err_client)
	}
#undef E
	stat_inc(st, XKV_STAT_err_unknown);
	return xkv_reply_line(ctx, a, sc, st, XKV_R_ERROR, sizeof(XKV_R_ERROR) - 1);
}

/* The entry of a set in sc->entry, all but its value bytes (also the TCP
 * fast path's, tcp.bpf.h). */
static __always_inline void xkv_entry_head(struct xkv_scratch *sc, __u64 now)
{
	struct xkv_entry *e = &sc->entry;
	e->expire_ns = xkv_expire_ns(sc->pr.exptime, now, cfg.realtime_off_ns);
	/* unique per write: the item's cas unique (entry.h) */
	sc->stamp = xkv_stamp(sc->stamp, now, bpf_get_smp_processor_id() % XKV_STAMP_CPUS);
	e->wtime_ns = sc->stamp;
	e->seq = 0;
	e->flags = sc->pr.flags;
	e->len = sc->pr.bytes;
	e->klen = sc->klen;
	if (XKV_KEY_IN_VALUE) {
		for (__u32 w = 0; w < (XKV_KEY_MAX + 6) / 8; w++) {
			if (w * 8 >= cfg.key_size)
				break;
			((__u64 *)e->data)[w] = ((const __u64 *)sc->key)[w];
		}
	}
}

/* ---- the program ---------------------------------------------------------- */

/* Order of the checks (docs/security.md): the cheapest refusals first and
 * all of them before any parsing, so refused traffic costs little:
 *   not for this host (MAC, IP) -> XDP_PASS, untouched, for the kernel
 *   a source no host has (multicast, broadcast, loopback, unspecified) -> XDP_DROP
 *   source port 0, the service port, < 1024 -> XDP_DROP
 *   source not allowed, over its rate -> XDP_DROP
 *   bad IPv4 header or UDP checksum -> XDP_PASS (the kernel drops and counts it)
 *   bad frame header, a reply-shaped datagram, a write from a reader -> XDP_DROP
 * and the amplification cap on every reply (xkv_emit). */
SEC("xdp")
int xdpkv(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	struct iphdr *ip4 = NULL;
	struct xkv_stats *st = NULL;
	__u32 frame_left, zero = 0;
	struct xkv_scratch *sc = bpf_map_lookup_elem(&scratch, &zero);

	if (!sc || (void *)(eth + 1) > data_end)
		return XDP_PASS;
	struct xkv_addr *a = &sc->addr;
	__builtin_memcpy(a->eth_src, eth->h_source, ETH_ALEN);
	__builtin_memcpy(a->eth_dst, eth->h_dest, ETH_ALEN);

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > data_end)
			return XDP_PASS;
		/* options, fragments, not UDP: the kernel's business */
		if (ip->ihl != 5 || ip->version != 4 || ip->protocol != IPPROTO_UDP ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return XDP_PASS;
		udp = (void *)(ip + 1);
		if ((void *)(udp + 1) > data_end)
			return XDP_PASS;
		if (udp->dest != bpf_htons(cfg.port))
			return XDP_PASS;
		__u32 tot = bpf_ntohs(ip->tot_len);
		if (tot < 28 || (void *)ip + tot > data_end)
			goto malformed;
		ip4 = ip;
		frame_left = tot - 20;
		a->family = 4;
		a->l3_len = 20;
		a->tos = ip->tos;
		__builtin_memcpy(a->src, &ip->saddr, 4);
		__builtin_memcpy(a->dst, &ip->daddr, 4);
		xkv_addr_from_v4(a->src16, &ip->saddr);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > data_end)
			return XDP_PASS;
		if (ip6->nexthdr != IPPROTO_UDP) /* extension headers too */
			return XDP_PASS;
		udp = (void *)(ip6 + 1);
		if ((void *)(udp + 1) > data_end)
			return XDP_PASS;
		if (udp->dest != bpf_htons(cfg.port))
			return XDP_PASS;
		__u32 pl = bpf_ntohs(ip6->payload_len);
		if (pl < 8 || (void *)(ip6 + 1) + pl > data_end)
			goto malformed;
		frame_left = pl;
		a->family = 6;
		a->l3_len = 40;
		a->tos = 0;
		__builtin_memcpy(&a->v6_first, ip6, 4);
		__builtin_memcpy(a->src, &ip6->saddr, 16);
		__builtin_memcpy(a->dst, &ip6->daddr, 16);
		__builtin_memcpy(a->src16, &ip6->saddr, 16);
	} else {
		return XDP_PASS;
	}
	a->sport = udp->source;
	a->dport = udp->dest;
	a->trusted = 0;

	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return XDP_PASS;

	__u64 now = 0; /* read when something needs it: the rate limit, a write, a TTL */
	struct xkv_host *h = NULL;

	if (XKV_GUARDED) {
		/* addressed to this host?  (promiscuous mode, a bridge, a
		 * flooding switch, broadcast and multicast: not ours to answer) */
		h = bpf_map_lookup_elem(&host, &zero);
		if (!h)
			return XDP_PASS;
		if (h->flags & XKV_HOST_AUTH) { /* SASL required: nobody is answered over UDP */
			stat_inc(st, XKV_STAT_drop_acl);
			return XDP_DROP;
		}
		if (h->flags & XKV_HOST_CHECK_MAC) {
			if (*(__u32 *)eth->h_dest != *(__u32 *)h->mac ||
			    *(__u16 *)&eth->h_dest[4] != *(__u16 *)&h->mac[4]) {
				stat_inc(st, XKV_STAT_pass_not_local);
				return XDP_PASS;
			}
		}
		if (h->flags & XKV_HOST_CHECK_IP) {
			if (a->family == 4)
				xkv_addr_from_v4(sc->acl.addr, a->dst);
			else
				__builtin_memcpy(sc->acl.addr, a->dst, 16);
			if (!(h->flags & XKV_HOST_ADDRS_INLINE) ? !bpf_map_lookup_elem(&local_addrs, sc->acl.addr) :
			    !addr_inline(h, sc->acl.addr)) {
				stat_inc(st, XKV_STAT_pass_not_local);
				return XDP_PASS;
			}
		}
		if (src_martian(a)) {
			stat_inc(st, XKV_STAT_drop_src);
			return XDP_DROP;
		}
		__u16 sport = bpf_ntohs(udp->source);
		if (sport == 0 || sport == cfg.port ||
		    (sport < 1024 && !(cfg.flags & XKV_CFG_LOW_PORTS))) {
			stat_inc(st, XKV_STAT_drop_port);
			return XDP_DROP;
		}
		if (!acl_allowed(sc)) {
			stat_inc(st, XKV_STAT_drop_acl);
			return XDP_DROP;
		}
		if (cfg.rate_limit && !rate_ok(sc, now = bpf_ktime_get_ns())) {
			stat_inc(st, XKV_STAT_drop_ratelimit);
			return XDP_DROP;
		}
	}
	stat_inc(st, XKV_STAT_requests);

	/* the UDP length must agree with the IP length; the payload is what
	 * the UDP header claims, never bytes past the end of the frame */
	__u32 ulen = bpf_ntohs(udp->len);
	if (ulen < 8 + XKV_UDP_HDR_LEN || ulen > frame_left)
		goto malformed;
	__u32 plen = ulen - 8;
	__u32 tlen = plen - XKV_UDP_HDR_LEN; /* request text */
	__u32 poff = (__u32)((void *)(udp + 1) - data);
	a->req_bytes = plen;

	if (XKV_GUARDED && ip4) {
		__u64 s4 = 0;
		__u16 *w = (void *)ip4;
		if ((void *)(w + 10) > data_end)
			return XDP_PASS;
#pragma unroll
		for (int i = 0; i < 10; i++)
			s4 += w[i];
		if (csum_fold(s4) != 0xffff) {
			stat_inc(st, XKV_STAT_pass_csum);
			return XDP_PASS;
		}
	}

	/* the frame header, read in place (ulen covers it) */
	const struct xkv_udp_hdr *fh = (const void *)(udp + 1);
	if ((void *)(fh + 1) > data_end)
		goto malformed;
	/* one datagram per request; anything else is answered with silence,
	 * as memcached does */
	if (fh->total != bpf_htons(1) || fh->seq != 0) {
		stat_inc(st, XKV_STAT_drop_frame);
		return XDP_DROP;
	}
	/* the reply echoes the request id; one datagram */
	struct xkv_udp_hdr *rfh = (void *)&sc->reply[8];
	rfh->req_id = fh->req_id;
	rfh->seq = 0;
	rfh->total = bpf_htons(1);
	rfh->reserved = 0;

	if (tlen > XKV_REQ_MAX) {
		stat_inc(st, XKV_STAT_pass_room); /* the kernel checks its checksum */
		return XDP_PASS;
	}
	if (tlen && bpf_xdp_load_bytes(ctx, poff + XKV_UDP_HDR_LEN, sc->req, tlen & (XKV_REQ_MAX * 2 - 1) & 4095))
		goto malformed;
	if (XKV_GUARDED && !udp_csum_ok(sc, udp, fh, tlen)) {
		stat_inc(st, XKV_STAT_pass_csum);
		return XDP_PASS;
	}
	if (tlen == 0)
		return xkv_reply_err(ctx, a, sc, st, XKV_E_NO_CRLF);
	/* memcached's binary protocol (its magic first): the slow path's (binproto.c) */
	if (sc->req[0] == 0x80) {
		stat_inc(st, XKV_STAT_pass_cmd);
		return XDP_PASS;
	}

	struct xkv_req *r = &sc->pr;
	struct get_ctx g = { .sc = sc, .st = st, .now = now, .o = XKV_TEXT };
	/* "get <key>\r\n", the commonest request, without the tokenizer */
	__u32 qk = (cfg.flags & XKV_CFG_BINARY_KEYS) ? 0 :
		   xkv_quick_get(sc->req, tlen, cfg.key_cap, (__u64 *)sc->key, cfg.key_size);
	if (qk) {
		stat_inc(st, XKV_STAT_cmd_get);
		r->ntok = 2;
		r->tok[1].off = 4;
		r->tok[1].len = qk;
		sc->klen = qk;
		g.keyed = 1;
		get_one(0, &g);
		goto get_reply;
	}
	/* "set <key> <flags> <exptime> <bytes>", the commonest write, likewise */
	int keyed = 0, err;
	if (!(cfg.flags & XKV_CFG_BINARY_KEYS))
		keyed = xkv_quick_set_req(sc, tlen);
	err = keyed ? XKV_OK : xkv_parse_req(sc, tlen);
	switch (r->op) {
	case XKV_OP_GET: stat_inc(st, XKV_STAT_cmd_get); break;
	case XKV_OP_SET: stat_inc(st, XKV_STAT_cmd_set); break;
	case XKV_OP_DELETE: stat_inc(st, XKV_STAT_cmd_delete); break;
	case XKV_OP_NONE: break;
	default: stat_inc(st, XKV_STAT_cmd_other);
	}
	if (err) {
		if (err == XKV_E_UNKNOWN && xkv_reply_shaped(sc->req, r)) {
			stat_inc(st, XKV_STAT_drop_reply);
			return XDP_DROP;
		}
		/* a value above --value-size that the big map takes (entry.h):
		 * the slow path stores it */
		if (err == XKV_E_TOO_LARGE && cfg.big_chunks && r->bytes <= XKV_BIG_MAX) {
			stat_inc(st, XKV_STAT_pass_cmd);
			return XDP_PASS;
		}
		/* a command ending in noreply gets no error line either (as
		 * memcached): the slow path knows which commands read it */
		__u32 last = r->ntok - 1;
		if (err != XKV_E_UNKNOWN && err != XKV_E_NO_CRLF && !r->too_many && r->ntok > 1 &&
		    last < XKV_PARSE_TOKENS &&
		    xkv_tok_is(sc->req, &r->tok[last], "noreply", 7)) {
			stat_inc(st, XKV_STAT_pass_cmd);
			return XDP_PASS;
		}
		return xkv_reply_err(ctx, a, sc, st, err);
	}
	if (XKV_GUARDED && xkv_op_writes(r->op) && !acl_has(sc, &acl_write)) {
		stat_inc(st, XKV_STAT_drop_write_acl);
		return XDP_DROP;
	}
	/* snapshot --pause-writes: the slow path refuses writes meanwhile */
	if (h && (h->flags & XKV_HOST_PAUSE_WRITES) && xkv_op_writes(r->op)) {
		stat_inc(st, XKV_STAT_pass_paused);
		return XDP_PASS;
	}
	/* other commands, several commands in one datagram, huge multi-gets:
	 * the slow path answers them */
	if (r->op > XKV_OP_FAST_LAST || r->next != tlen || r->too_many) {
		stat_inc(st, XKV_STAT_pass_cmd);
		return XDP_PASS;
	}

	if (r->op == XKV_OP_GET) {
		bpf_loop(XKV_PARSE_TOKENS - 1, get_one, &g, 0);
get_reply:
		if (g.full) {
			stat_inc(st, g.full == 1 ? XKV_STAT_pass_room : XKV_STAT_pass_busy);
			return XDP_PASS;
		}
		__u32 o = g.o;
		PUT_LIT(sc, &o, XKV_R_END);
		return xkv_emit(ctx, a, sc, st, o - 8);
	}

	if (keyed)
		sc->klen = r->tok[1].len;
	else
		xkv_load_key(sc, 1);
	if (!now)
		now = bpf_ktime_get_ns();

	if (r->op == XKV_OP_DELETE) {
		/* an expired item is gone already: NOT_FOUND, but free its slot */
		struct xkv_entry *old = store_lookup(sc);
		int live = old && XKV_LIVE_FOR_DELETE(sc, old, now);
		int found = store_del(sc, st);
		if (found < 0) {
			stat_inc(st, XKV_STAT_pass_busy);
			return XDP_PASS;
		}
		found = found && live;
		stat_inc(st, found ? XKV_STAT_deletes : XKV_STAT_delete_misses);
		if (r->noreply)
			goto noreply;
		if (found)
			return REPLY_LINE(XKV_R_DELETED);
		return REPLY_LINE(XKV_R_NOT_FOUND);
	}

	/* set: build the entry in scratch, then hand it to the store */
	struct xkv_entry *e = &sc->entry;
	__u32 bytes = r->bytes;
	xkv_entry_head(sc, now);
	if (bytes > cfg.val_cap || bytes >= XKV_REQ_MAX) /* the parser checked; this tells the verifier */
		return xkv_reply_err(ctx, a, sc, st, XKV_E_TOO_LARGE);
	/* the value from the request text already in scratch, a word at a time
	 * (the entry's data is padded to 8; sc->req has 8 bytes of slack) */
	__u32 doff = r->data_off;
	for (__u32 w = 0; w < XKV_REQ_MAX / 8; w++) {
		if (w * 8 >= bytes)
			break;
		__u64 v;
		__builtin_memcpy(&v, &sc->req[(doff + w * 8) & (XKV_REQ_MAX - 1)], 8);
		*(__u64 *)&e->data[XKV_VOFF + w * 8] = v;
	}
	err = store_set(sc, st);
	if (err == -EBUSY) {
		stat_inc(st, XKV_STAT_pass_busy);
		return XDP_PASS;
	}
	if (err && r->noreply) {
		stat_inc(st, XKV_STAT_err_oom); /* memcached drops the line too */
		goto noreply;
	}
	if (err)
		return xkv_reply_err(ctx, a, sc, st, XKV_E_OOM);
	stat_inc(st, XKV_STAT_stores);
	if (r->noreply)
		goto noreply;
	return REPLY_LINE(XKV_R_STORED);

noreply:
	stat_inc(st, XKV_STAT_noreply);
	return XDP_DROP;
malformed:
	if (st)
		stat_inc(st, XKV_STAT_pass_malformed);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* The TCP fast path's stream verdict over the same store (common/tcp.bpf.h). */
#include "tcp.bpf.h"

#endif
