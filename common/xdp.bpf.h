/* SPDX-License-Identifier: MIT */
/* The XDP program's steps: a memcached request in one UDP datagram is
 * answered from the same frame (XDP_TX), left to the kernel and the slow
 * path (XDP_PASS) or dropped.  xdpkv() (xdp_main.bpf.h) is their sequence;
 * each step returns XKV_NEXT to go on, or the program's verdict.  Expects
 * prelude.bpf.h and the variant's store (ops.bpf.h says what) before it. */
#ifndef XDPKV_XDP_BPF_H
#define XDPKV_XDP_BPF_H

#include "guards.bpf.h"
#include "emit.bpf.h"
#include "ops.bpf.h"
#include "binget.bpf.h"

#define XKV_NEXT (-1) /* a step's "go on" */

/* What the steps of xdpkv() hand on. */
struct xdp_req {
	struct xkv_scratch *sc;
	struct xkv_stats *st;     /* NULL until the frame is known to be ours */
	struct xkv_host *h;       /* the host entry; NULL when unguarded */
	void *data, *data_end;    /* the frame */
	struct ethhdr *eth;
	struct udphdr *udp;
	struct iphdr *ip4;        /* NULL for IPv6 */
	__u32 frame_left;         /* bytes after the IP header, as it says */
	__u32 tlen;               /* request text in sc->req */
	__u64 now;                /* read when something needs it: the rate limit, a write, a TTL */
};

/* Ethernet, IPv4 or IPv6 without options or extension headers, UDP to the
 * service port: the reply's addresses into sc->addr.  Anything else is the
 * kernel's (XDP_PASS). */
static __always_inline int xdp_read_headers(struct xdp_md *ctx, struct xdp_req *q)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	struct xkv_addr *a = &q->sc->addr;
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
		__u32 tot = xkv_ntohs(ip->tot_len);
		if (tot < 28 || (void *)ip + tot > data_end)
			return XDP_PASS; /* malformed; not counted: no stats yet */
		q->ip4 = ip;
		q->frame_left = tot - 20;
		xkv_addr_ip4(a, ip);
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
		__u32 pl = xkv_ntohs(ip6->payload_len);
		if (pl < 8 || (void *)(ip6 + 1) + pl > data_end)
			return XDP_PASS; /* malformed; not counted: no stats yet */
		q->frame_left = pl;
		xkv_addr_ip6(a, ip6);
	} else {
		return XDP_PASS;
	}
	a->sport = udp->source;
	a->dport = udp->dest;
	a->trusted = 0;
	q->data = data;
	q->data_end = data_end;
	q->eth = eth;
	q->udp = udp;
	return XKV_NEXT;
}

/* The guards (guards.bpf.h), cheapest first:
 *   not for this host (MAC, IP) -> XDP_PASS, untouched, for the kernel
 *   a source no host has (multicast, broadcast, loopback, unspecified) -> XDP_DROP
 *   source port 0, the service port, < 1024 -> XDP_DROP
 *   source not allowed, over its rate -> XDP_DROP */
static __always_inline int xdp_check_source(struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_addr *a = &sc->addr;
	struct ethhdr *eth = q->eth;
	__u32 zero = 0;

	/* addressed to this host?  (promiscuous mode, a bridge, a
	 * flooding switch, broadcast and multicast: not ours to answer) */
	struct xkv_host *h = bpf_map_lookup_elem(&host, &zero);
	q->h = h;
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
	__u16 sport = bpf_ntohs(q->udp->source);
	if (sport == 0 || sport == cfg.port ||
	    (sport < 1024 && !(cfg.flags & XKV_CFG_LOW_PORTS))) {
		stat_inc(st, XKV_STAT_drop_port);
		return XDP_DROP;
	}
	if (!acl_allowed(sc)) {
		stat_inc(st, XKV_STAT_drop_acl);
		return XDP_DROP;
	}
	if (cfg.rate_limit && !rate_ok(sc, q->now = bpf_ktime_get_ns())) {
		stat_inc(st, XKV_STAT_drop_ratelimit);
		return XDP_DROP;
	}
	return XKV_NEXT;
}

/* The datagram: lengths that agree, right checksums (else XDP_PASS: the
 * kernel drops and counts it), one datagram per request (else dropped);
 * the request text into sc->req and the reply's frame header written.  An
 * empty request is answered. */
static __always_inline int xdp_read_request(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_addr *a = &sc->addr;
	struct udphdr *udp = q->udp;
	void *data_end = q->data_end;

	/* the UDP length must agree with the IP length; the payload is what
	 * the UDP header claims, never bytes past the end of the frame */
	__u32 ulen = xkv_ntohs(udp->len);
	if (ulen < 8 + XKV_UDP_HDR_LEN || ulen > q->frame_left)
		goto malformed;
	__u32 plen = ulen - 8;
	__u32 tlen = plen - XKV_UDP_HDR_LEN; /* request text */
	__u32 poff = (__u32)((void *)(udp + 1) - q->data);
	a->req_bytes = plen;
	q->tlen = tlen;

	if (XKV_GUARDED && q->ip4) {
		__u64 s4 = 0;
		__u16 *w = (void *)q->ip4;
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
	if (tlen && bpf_xdp_load_bytes(ctx, poff + XKV_UDP_HDR_LEN, sc->req, XKV_LEN(tlen, XKV_REQ_MAX)))
		goto malformed;
	if (XKV_GUARDED && !udp_csum_ok(sc, udp, fh, tlen)) {
		stat_inc(st, XKV_STAT_pass_csum);
		return XDP_PASS;
	}
	if (tlen == 0)
		return xkv_reply_err(ctx, a, sc, st, XKV_E_NO_CRLF);
	return XKV_NEXT;
malformed:
	stat_inc(st, XKV_STAT_pass_malformed);
	return XDP_PASS;
}

/* The get and set shortcuts in use: always, but for a layout that defines
 * XKV_QUICK_STRICT_ONLY (its verifier budget) with binary keys, which
 * leaves every request to the tokenizer (a constant at load: the other
 * branch is not verified).  Here, not in prelude.bpf.h: a layout defines
 * it after the prelude. */
static __always_inline int xkv_quick_on(void)
{
#ifdef XKV_QUICK_STRICT_ONLY
	return !(cfg.flags & XKV_CFG_BINARY_KEYS);
#else
	return 1;
#endif
}

/* "get <key>\r\n", the commonest request, without the tokenizer: 1 when it
 * was one (its hit or miss is in g), 0 to parse the request. */
static __always_inline int xdp_quick_get(struct xdp_req *q, struct get_ctx *g)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_req *r = &sc->pr;
	__u32 qk = xkv_quick_on() ? xkv_quick_get_req(sc, q->tlen) : 0;

	if (!qk)
		return 0;
	r->ntok = 2;
	r->tok[1].off = 4;
	r->tok[1].len = qk;
	sc->klen = qk;
	g->keyed = 1;
	get_begin(g);
	get_one(0, g);
	return 1;
}

/* A request answered or refused here counts its command; one passed on is
 * counted where it is answered (a get's, get_count). */
static __always_inline int xdp_count_cmd(struct xkv_stats *st, __u32 op, int act)
{
	if (act == XDP_PASS)
		return act;
	switch (op) {
	case XKV_OP_GET: stat_inc(st, XKV_STAT_cmd_get); break;
	case XKV_OP_SET: stat_inc(st, XKV_STAT_cmd_set); break;
	case XKV_OP_DELETE: stat_inc(st, XKV_STAT_cmd_delete); break;
	case XKV_OP_NONE: break;
	default: stat_inc(st, XKV_STAT_cmd_other);
	}
	return act;
}

/* Parse the request into sc->pr (*keyed: the set shortcut loaded the key).
 * Answered or passed here: a parse error, a write refused or paused, and
 * what the fast path does not do (other commands, several commands in one
 * datagram, huge multi-gets: the slow path's). */
static __always_inline int xdp_parse(struct xdp_md *ctx, struct xdp_req *q, int *keyed)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_addr *a = &sc->addr;
	struct xkv_req *r = &sc->pr;
	__u32 tlen = q->tlen;
	int err;

	/* "set <key> <flags> <exptime> <bytes>", the commonest write, without
	 * the tokenizer */
	if (xkv_quick_on())
		*keyed = xkv_quick_set_req(sc, tlen);
	err = *keyed ? XKV_OK : xkv_parse_req(sc, tlen);
	if (err) {
		if (err == XKV_E_UNKNOWN && xkv_reply_shaped(sc->req, r)) {
			stat_inc(st, XKV_STAT_drop_reply);
			return xdp_count_cmd(st, r->op, XDP_DROP);
		}
		/* the slow path's: a value above --value-size that the big map
		 * takes (entry.h), stored there; a key longer than the store's
		 * (not than memcached's 250), a miss or a refused write */
		/* ... and a line in error with more after it (memcached answers
		 * it and goes on with the next line), an HTTP line (silence) */
		if ((err == XKV_E_TOO_LARGE && cfg.big_chunks && r->bytes <= XKV_BIG_MAX) ||
		    err == XKV_E_KEY_LONG || err == XKV_E_HTTP ||
		    (err != XKV_E_NO_CRLF && err != XKV_E_DATA && r->next < tlen)) {
			stat_inc(st, XKV_STAT_pass_cmd);
			return XDP_PASS;
		}
		/* a command ending in noreply gets no error line either (as
		 * memcached): the slow path knows which commands read it */
		__u32 last = r->ntok - 1;
		barrier_var(last); /* the check below on the register indexed with (6.1) */
		if (err != XKV_E_UNKNOWN && err != XKV_E_NO_CRLF && !r->too_many && r->ntok > 1 &&
		    last < XKV_PARSE_TOKENS &&
		    xkv_tok_is(sc->req, &r->tok[last], "noreply", 7)) {
			stat_inc(st, XKV_STAT_pass_cmd);
			return XDP_PASS;
		}
		return xdp_count_cmd(st, r->op, xkv_reply_err(ctx, a, sc, st, err));
	}
	if (XKV_GUARDED && xkv_op_writes(r->op) && !acl_has(sc, &acl_write)) {
		stat_inc(st, XKV_STAT_drop_write_acl);
		return xdp_count_cmd(st, r->op, XDP_DROP);
	}
	/* snapshot --pause-writes: the slow path refuses writes meanwhile */
	if (q->h && (q->h->flags & XKV_HOST_PAUSE_WRITES) && xkv_op_writes(r->op)) {
		stat_inc(st, XKV_STAT_pass_paused);
		return XDP_PASS;
	}
	if (r->op > XKV_OP_FAST_LAST || r->next != tlen || r->too_many) {
		stat_inc(st, XKV_STAT_pass_cmd);
		return XDP_PASS;
	}
	return XKV_NEXT;
}

/* The reply to a get: its hits and END, or the slow path's when it did not
 * fit one datagram or met a write in progress (counted there). */
static __always_inline int xdp_get_reply(struct xdp_md *ctx, struct xdp_req *q, struct get_ctx *g)
{
	struct xkv_scratch *sc = q->sc;

	if (g->full) {
		stat_inc(q->st, g->full == 1 ? XKV_STAT_pass_room : XKV_STAT_pass_busy);
		return XDP_PASS;
	}
	int act = xkv_emit(ctx, &sc->addr, sc, q->st, xkv_get_end(g) - 8);
	if (act != XDP_PASS)
		get_count(g, q->st);
	return act;
}

/* A noreply command done: nothing to send. */
static __always_inline int xdp_noreply(struct xkv_stats *st)
{
	stat_inc(st, XKV_STAT_noreply);
	return XDP_DROP;
}

/* A binary request (its magic first): one get, getq, getk or getkq frame
 * alone in the datagram is answered here as the slow path answers it
 * (binget.bpf.h, bin_get); a quiet miss with nothing.  Anything else
 * binary is the slow path's (pass_cmd); a value over one datagram or in the
 * big map, or a writer inside the item, passes on as for a text get. */
static __always_inline int xdp_binary(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct get_ctx g = { .sc = sc, .st = q->st, .now = q->now };
	int plen = bin_get(&g, q->tlen);

	if (plen > 0) {
		int act = xkv_emit_binary(ctx, &sc->addr, sc, q->st, plen);
		if (act != XDP_PASS)
			get_count(&g, q->st);
		return act;
	}
	if (plen == XKV_BIN_SILENT) {
		get_count(&g, q->st);
		return xdp_noreply(q->st);
	}
	if (plen == XKV_BIN_NOT_OURS) {
		stat_inc(q->st, XKV_STAT_pass_cmd);
		return XDP_PASS;
	}
	g.full = plen == XKV_BIN_BUSY ? 2 : 1;
	return xdp_get_reply(ctx, q, &g);
}

/* delete <key> [noreply] */
static __always_inline int xdp_delete(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_addr *a = &sc->addr;
	int found = xkv_op_delete(sc, st, q->now);

	if (found < 0) {
		stat_inc(st, XKV_STAT_pass_busy);
		return XDP_PASS;
	}
	if (sc->pr.noreply)
		return xdp_noreply(st);
	if (found)
		return REPLY_LINE(XKV_R_DELETED);
	return REPLY_LINE(XKV_R_NOT_FOUND);
}

/* The value of a write, bytes (< XKV_REQ_MAX, <= val_cap: checked) at
 * sc->req[doff], into the entry built in scratch: a word at a time (the
 * entry's data is padded to 8; sc->req has 8 bytes of slack). */
static __always_inline void xdp_set_value(struct xkv_scratch *sc, __u32 doff, __u32 bytes)
{
	struct xkv_entry *e = &sc->entry;

	for (__u32 w = 0; w < XKV_REQ_MAX / 8; w++) {
		/* val_cap too: 6.1's verifier may have lost bytes' bound (a
		 * value saved on the stack); a rodata read clang cannot fold */
		if (w * 8 >= bytes || w * 8 >= cfg.val_cap)
			break;
		__u64 v;
		__builtin_memcpy(&v, &sc->req[(doff + w * 8) & (XKV_REQ_MAX - 1)], 8);
		*(__u64 *)&e->data[XKV_VOFF + w * 8] = v;
	}
}

/* set <key> <flags> <exptime> <bytes> [noreply]: the entry built in
 * scratch, its value from the request text already there. */
static __always_inline int xdp_set(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_addr *a = &sc->addr;
	struct xkv_req *r = &sc->pr;
	__u32 bytes = r->bytes;

	xkv_entry_head(sc, q->now);
	if (bytes > cfg.val_cap || bytes >= XKV_REQ_MAX) /* the parser checked; this tells the verifier */
		return xkv_reply_err(ctx, a, sc, st, XKV_E_TOO_LARGE);
	xdp_set_value(sc, r->data_off, bytes);
	int err = xkv_op_set(sc, st);
	if (err == -EBUSY) {
		stat_inc(st, XKV_STAT_pass_busy);
		return XDP_PASS;
	}
	if (err && r->noreply) {
		stat_inc(st, XKV_STAT_err_oom); /* memcached drops the line too */
		return xdp_noreply(st);
	}
	if (err)
		return xkv_reply_err(ctx, a, sc, st, XKV_E_OOM);
	if (r->noreply)
		return xdp_noreply(st);
	return REPLY_LINE(XKV_R_STORED);
}

/* A parsed set or delete: its key into sc->key, the clock, the store. */
static __always_inline int xdp_write(struct xdp_md *ctx, struct xdp_req *q, int keyed)
{
	struct xkv_scratch *sc = q->sc;

	if (keyed)
		sc->klen = sc->pr.tok[1].len;
	else
		xkv_load_key(sc, 1);
	if (!q->now)
		q->now = bpf_ktime_get_ns();
	return xdp_count_cmd(q->st, sc->pr.op,
			     sc->pr.op == XKV_OP_DELETE ? xdp_delete(ctx, q) : xdp_set(ctx, q));
}

#endif
