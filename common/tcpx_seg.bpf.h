/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, the segment: a client's segment parsed (headers,
 * options) into sc->tx, translated in place for the kernel (sequence,
 * acknowledgement, SACK blocks; tcpx.h has the numbering), the socket it
 * is for, and a reply frame built from it (xkv_tcpx_emit).  The decisions
 * are tcpx_xdp.bpf.h's.  Expects prelude.bpf.h and emit.bpf.h. */
#ifndef XDPKV_TCPX_SEG_BPF_H
#define XDPKV_TCPX_SEG_BPF_H

#include "emit.bpf.h"
#include "tcpx_flow.bpf.h"

/* A flow of zeros, to create flows from (never written; bytes, not the
 * struct: a value holding a spin lock cannot be read as memory). */
struct tcpx_blank_flow {
	__u8 b[sizeof(struct xkv_tcpx_flow)];
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcpx_blank_flow);
} tcpx_blank SEC(".maps");

#define TCPX_ACK 0x10
#define TCPX_PSH 0x08
#define TCPX_RST 0x04
#define TCPX_SYN 0x02
#define TCPX_FIN 0x01

/* The segment's options (olen bytes at frame offset at), parsed into
 * sc->tx: timestamps and SACK blocks located; anything else but NOP/EOL
 * marks it odd (translated, never answered). */
static __always_inline void tcpx_options(struct xdp_md *ctx, struct xkv_scratch *sc, __u32 at,
					 __u32 olen)
{
	struct xkv_tcpx_seg *p = &sc->tx;

	p->ts_at = p->sack_at = p->sack_n = 0;
	__u32 n = olen;
	barrier_var(n);
	if (n > 40) {
		p->odd = 1;
		return;
	}
	barrier_var(n);
	if (n == 0)
		return;
	if (bpf_xdp_load_bytes(ctx, at, p->opt, XKV_LEN(n, 40))) {
		p->odd = 1;
		return;
	}
	struct tcpx_optwalk c;
	tcpx_opts_walk(&c, p->opt, n);
	p->odd = !!c.odd;
	if (c.ts_at) {
		__u32 v1, v2, t = c.ts_at - 1;
		p->ts_at = at + t;
		__builtin_memcpy(&v1, &p->opt[t & 63], 4);
		__builtin_memcpy(&v2, &p->opt[(t + 4) & 63], 4);
		p->tsval = bpf_ntohl(v1);
		p->tsecr = bpf_ntohl(v2);
	}
	if (c.sack_at) {
		p->sack_at = at + c.sack_at - 1;
		p->sack_n = c.sack_n;
	}
}

/* Ethernet, IPv4 without options or IPv6 without extension headers, TCP to
 * the service port: the segment into sc->tx, the reply's addresses into
 * sc->addr.  -1: not such a segment. */
static __always_inline int tcpx_parse(struct xdp_md *ctx, struct xkv_scratch *sc)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct xkv_tcpx_seg *p = &sc->tx;
	struct xkv_addr *a = &sc->addr;
	struct tcphdr *th;
	__u32 ipl;

	if ((void *)(eth + 1) > data_end)
		return -1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_TCP ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return -1;
		th = (void *)(ip + 1);
		ipl = xkv_ntohs(ip->tot_len);
		if (ipl < 40 || (void *)ip + ipl > data_end)
			return -1;
		ipl -= 20;
		xkv_addr_ip4(a, ip);
		xkv_addr_from_v4(p->key.local, &ip->daddr);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_TCP)
			return -1;
		th = (void *)(ip6 + 1);
		ipl = xkv_ntohs(ip6->payload_len);
		if (ipl < 20 || (void *)(ip6 + 1) + ipl > data_end)
			return -1;
		xkv_addr_ip6(a, ip6);
		__builtin_memcpy(p->key.local, &ip6->daddr, 16);
	} else {
		return -1;
	}
	if ((void *)(th + 1) > data_end || th->dest != bpf_htons(cfg.port))
		return -1;
	__u32 doff = th->doff * 4;
	if (doff < 20 || doff > ipl)
		return -1;
	__builtin_memcpy(a->eth_src, eth->h_source, ETH_ALEN);
	__builtin_memcpy(a->eth_dst, eth->h_dest, ETH_ALEN);
	a->sport = th->source;
	a->dport = th->dest;
	a->trusted = 0;
	__builtin_memcpy(p->key.peer, a->src16, 16);
	p->key.pport = th->source;
	p->key.lport = th->dest;
	p->key._pad = 0;
	p->l4 = ETH_HLEN + a->l3_len;
	p->doff = doff;
	p->plen = ipl - doff;
	p->seq = bpf_ntohl(th->seq);
	p->ack = bpf_ntohl(th->ack_seq);
	p->win = bpf_ntohs(th->window);
	p->fl = ((__u8 *)th)[13];
	p->odd = 0;
	p->put = 0;
	p->tsval = p->tsecr = 0;
	tcpx_options(ctx, sc, p->l4 + 20, doff - 20);
	return 0;
}

/* The TCP checksum's payload part, a chunk (in sc->req) a bpf_loop() step. */
struct tcpx_csum_walk {
	struct xdp_md *ctx;
	struct xkv_scratch *sc;
	__u32 at, left, bad;
	__u32 sum;
};

#define TCPX_CSUM_CHUNK 2040 /* bytes a step: a multiple of 8, below XKV_REQ_MAX */

static long tcpx_csum_step(__u32 idx, void *v)
{
	struct tcpx_csum_walk *w = v;
	struct xkv_scratch *sc = w->sc;
	__u32 n = w->left;

	if (!sc || !n)
		return 1;
	if (n > TCPX_CSUM_CHUNK)
		n = TCPX_CSUM_CHUNK;
	barrier_var(n);
	if (bpf_xdp_load_bytes(w->ctx, w->at, sc->req, XKV_LEN(n, TCPX_CSUM_CHUNK))) {
		w->bad = 1;
		return 1;
	}
	w->sum = (__u32)buf_sum(sc->req, n & 2047, w->sum);
	w->at += n;
	w->left -= n;
	return 0;
}

/* The segment's TCP sum, folded: the pseudo-header's (ps), the header's
 * 20 bytes (w, its checksum field as it is there), its options (sc->tx.opt)
 * and the payload's; -1 when the payload cannot be read.  The payload is
 * left in sc->req when it fits one chunk. */
static __always_inline int tcpx_sum(struct xdp_md *ctx, struct xkv_scratch *sc, const __u32 *w, __s64 ps)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 olen = p->doff - 20, plen = p->plen;
	__u64 t = (__u32)ps;
	for (int i = 0; i < 5; i++)
		t += w[i];
	for (int i = 0; i < 10; i++) {
		if (i * 4 >= olen)
			break;
		__u32 x;
		__builtin_memcpy(&x, &p->opt[(i * 4) & 63], 4);
		t += x;
	}
	struct tcpx_csum_walk c = { .ctx = ctx, .sc = sc, .at = p->l4 + p->doff, .left = plen,
				    .sum = csum_fold32(t) };
	if (plen)
		bpf_loop(64, tcpx_csum_step, &c, 0);
	if (c.bad || c.left)
		return -1;
	return csum_fold(c.sum);
}

/* The segment's IPv4 header checksum and TCP checksum are right, as the
 * kernel checks them before it takes a segment (or, with
 * XKV_CFG_CSUM_PARTIAL, the TCP checksum is the pseudo-header sum a local
 * veth peer's CHECKSUM_PARTIAL frame carries, as on UDP: guards.bpf.h).
 * The payload is left in sc->req when it fits one chunk.  Global: verified
 * once. */
__attribute__((noinline)) int xkv_tcpx_csum_ok(struct xdp_md *ctx, struct xkv_scratch *sc)
{
	if (!ctx || !sc)
		return 0;
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 w[10];

	if (sc->addr.family == 4) {
		if (bpf_xdp_load_bytes(ctx, ETH_HLEN, w, 20))
			return 0;
		__u64 s4 = 0;
		for (int i = 0; i < 5; i++)
			s4 += w[i];
		if (csum_fold(s4) != 0xffff)
			return 0;
	}
	__u32 doff = p->doff;
	if (doff < 20 || doff > 60 || bpf_xdp_load_bytes(ctx, p->l4, w, 20))
		return 0;
	__s64 ps = pseudo_sum_proto(sc, sc->addr.src, sc->addr.dst, doff + p->plen, IPPROTO_TCP);
	__u16 check = ((__u16 *)w)[8];
	if ((cfg.flags & XKV_CFG_CSUM_PARTIAL) && check == csum_fold((__u32)ps))
		return 1;
	return tcpx_sum(ctx, sc, w, ps) == 0xffff;
}

/* The flow's held bytes (a cut request, tcpx.h: o->held from o->c_end on)
 * put in front of the segment's payload: the headers moved back into the
 * frame's headroom, the bytes after them, the IP length, the sequence
 * number (now c_end's) and the checksums set (the TCP one computed again,
 * or the pseudo-header's of a CHECKSUM_PARTIAL frame).  With no room
 * before the frame, the held bytes go alone in its place: the frame cut or
 * grown to carry them and nothing else, no FIN (the kernel acknowledges
 * them alone, and the client sends the segment's own bytes again).
 * sc->tx follows.  1: put in front; 2: alone in its place; 0: the frame
 * unchanged (no room before it nor after it); -1: the frame half
 * rewritten.  Global: verified once. */
__attribute__((noinline)) int xkv_tcpx_prepend(struct xdp_md *ctx, struct xkv_scratch *sc,
					       const struct tcpx_offs *o)
{
	if (!ctx || !sc || !o)
		return 0;
	struct xkv_tcpx_seg *p = &sc->tx;
	struct xkv_tcpx_key k = p->key; /* on the stack: 6.1 takes no map key from an argument */
	struct xkv_tcpx_flow *f = bpf_map_lookup_elem(&tcpx_flows, &k);
	__u32 n = o->held, hl = p->l4 + p->doff, w[5];

	if (!f || n == 0 || n > XKV_TCPX_HOLD_MAX || hl > 128 || p->doff < 20 ||
	    bpf_xdp_load_bytes(ctx, p->l4, w, 20))
		return 0;
	__s64 ps = pseudo_sum_proto(sc, sc->addr.src, sc->addr.dst, p->doff + p->plen, IPPROTO_TCP);
	int partial = (cfg.flags & XKV_CFG_CSUM_PARTIAL) && ((__u16 *)w)[8] == csum_fold((__u32)ps);
	if (bpf_xdp_load_bytes(ctx, 0, sc->req, XKV_LEN(hl, 128)))
		return 0;
	int alone = 0;
	if (!bpf_xdp_adjust_head(ctx, -(int)n)) {
		if (bpf_xdp_store_bytes(ctx, 0, sc->req, XKV_LEN(hl, 128)))
			return -1;
	} else {
		if (bpf_xdp_adjust_tail(ctx, (int)(hl + n) - (int)bpf_xdp_get_buff_len(ctx)))
			return 0;
		alone = 1;
	}
	if (bpf_xdp_store_bytes(ctx, hl, f->hold, XKV_LEN(n, XKV_TCPX_HOLD_MAX)))
		return -1;
	/* the IP length: the headers' and the payload's (the frame's end may
	 * be an Ethernet minimum's padding) */
	__u32 pl = alone ? n : p->plen + n, ipl = p->l4 - ETH_HLEN + p->doff + pl;
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	if (sc->addr.family == 4) {
		struct iphdr *ip = data + ETH_HLEN;
		if ((void *)(ip + 1) > data_end)
			return -1;
		__u32 w0 = *(__u32 *)ip;
		ip->tot_len = bpf_htons(ipl);
		csum_replace4(&ip->check, w0, *(__u32 *)ip);
	} else {
		struct ipv6hdr *ip6 = data + ETH_HLEN;
		if ((void *)(ip6 + 1) > data_end)
			return -1;
		ip6->payload_len = bpf_htons(ipl - sizeof(*ip6));
	}
	p->seq = o->c_end;
	p->plen = pl;
	p->put = alone ? 0 : n;
	if (alone) {
		p->fl &= ~TCPX_FIN;
		((__u8 *)w)[13] &= ~0x01; /* FIN: the segment's end is not here */
	}
	w[1] = bpf_htonl(p->seq);
	ps = pseudo_sum_proto(sc, sc->addr.src, sc->addr.dst, p->doff + p->plen, IPPROTO_TCP);
	__u16 *ck = (__u16 *)&w[4];
	if (partial) {
		*ck = csum_fold((__u32)ps);
	} else {
		*ck = 0;
		int sum = tcpx_sum(ctx, sc, w, ps);
		if (sum < 0)
			return -1;
		*ck = ~(__u16)sum;
	}
	if (bpf_xdp_store_bytes(ctx, p->l4 + 4, &w[1], 16))
		return -1;
	return alone ? 2 : 1;
}

/* The segment, translated in place (sc->tx, the flow's offsets o): seq, ack
 * and SACK blocks, the checksum updated.  Global: verified once, not at
 * each of the responder's exits. */
__attribute__((noinline)) int xkv_tcpx_translate_in(struct xdp_md *ctx, struct xkv_scratch *sc,
						    const struct tcpx_offs *o)
{
	if (!ctx || !sc || !o)
		return 0;
	struct xkv_tcpx_seg *p = &sc->tx;
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct tcphdr *th = data + (p->l4 & 127);

	if ((void *)(th + 1) > data_end)
		return 0;
	__u32 end = p->seq + p->plen;
	__u32 kseq = tcpx_seq_in(o, p->seq, end);
	__u32 nseq = bpf_htonl(kseq);
	csum_replace4(&th->check, th->seq, nseq);
	th->seq = nseq;
	if (p->fl & TCPX_ACK) {
		__u32 nack = bpf_htonl(tcpx_ack_in(o, p->ack));
		csum_replace4(&th->check, th->ack_seq, nack);
		th->ack_seq = nack;
	}
	for (__u32 b = 0; b < 4; b++) {
		if (b >= p->sack_n)
			break;
		__u32 *e = data + ((p->sack_at + b * 8) & 255);
		if ((void *)(e + 2) > data_end)
			break;
		for (int k = 0; k < 2; k++) {
			__u32 n = bpf_htonl(tcpx_ack_in(o, bpf_ntohl(e[k])));
			csum_replace4(&th->check, e[k], n);
			e[k] = n;
		}
	}
	return 0;
}

/* The socket the segment is for, and its TCP state (BTF), or NULL.  The
 * reference must be released (bpf_sk_release). */
static __always_inline struct bpf_sock *tcpx_sock(struct xdp_md *ctx, struct xkv_scratch *sc,
						  struct tcp_sock___xkv **tpp)
{
	struct bpf_sock_tuple t = {};
	struct xkv_addr *a = &sc->addr;
	struct bpf_sock *sk;

	if (a->family == 4) {
		__builtin_memcpy(&t.ipv4.saddr, a->src, 4);
		__builtin_memcpy(&t.ipv4.daddr, a->dst, 4);
		t.ipv4.sport = a->sport;
		t.ipv4.dport = a->dport;
		sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	} else {
		__builtin_memcpy(t.ipv6.saddr, a->src, 16);
		__builtin_memcpy(t.ipv6.daddr, a->dst, 16);
		t.ipv6.sport = a->sport;
		t.ipv6.dport = a->dport;
		sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
	}
	if (!sk)
		return NULL;
	*tpp = (struct tcp_sock___xkv *)bpf_skc_to_tcp_sock(sk);
	return sk;
}

/* The TCP header of a reply from sc->tx (seq, ack, window, timestamps)
 * into sc->tx.hdr: its length. */
static __always_inline __u32 tcpx_put_hdr(struct xkv_scratch *sc)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	struct tcphdr *h = (struct tcphdr *)p->hdr;
	__u32 hl = p->r_has_ts ? 32 : 20;

	__builtin_memset(p->hdr, 0, sizeof(p->hdr));
	h->source = sc->addr.dport;
	h->dest = sc->addr.sport;
	h->seq = bpf_htonl(p->r_seq);
	h->ack_seq = bpf_htonl(p->r_ack);
	((__u8 *)h)[12] = (hl / 4) << 4;
	((__u8 *)h)[13] = p->noreply ? TCPX_ACK : TCPX_ACK | TCPX_PSH; /* noreply: a pure ACK */
	h->window = bpf_htons(p->r_win);
	if (p->r_has_ts) {
		__u32 w0 = bpf_htonl(0x0101080a), v = bpf_htonl(p->r_tsval), e = bpf_htonl(p->r_tsecr);
		__builtin_memcpy(&p->hdr[20], &w0, 4);
		__builtin_memcpy(&p->hdr[24], &v, 4);
		__builtin_memcpy(&p->hdr[28], &e, 4);
	}
	return hl;
}

/* The reply segment: the request frame rewritten into [eth][ip][tcp hdr
 * sc->tx.hdr][text sc->reply[XKV_TEXT ..)] and sent back.  Global: verified
 * once.  XDP_PASS, the frame untouched, when it does not fit.  No text
 * (tlen 0, sc->tx.noreply): a pure ACK, the answer to noreply writes.  While a
 * segment's requests run (sc->tx.pipe) the text is added to sc->tx.acc
 * instead, the frame untouched: XDP_TX when the replies so far fit one
 * segment. */
__attribute__((noinline)) int xkv_tcpx_emit(struct xdp_md *ctx, struct xkv_scratch *sc, __u32 tlen)
{
	if (!ctx || !sc)
		return XDP_PASS;
	struct xkv_tcpx_seg *p = &sc->tx;
	if (p->pipe) {
		__u32 at = p->acc_len;
		if (tlen == 0 || at > XKV_TCPX_REPLY_MAX || tlen > XKV_TCPX_REPLY_MAX ||
		    at + tlen > p->r_room || at + tlen > XKV_TCPX_REPLY_MAX)
			return XDP_PASS;
		bpf_probe_read_kernel(&p->acc[at & 2047], XKV_LEN(tlen, XKV_TCPX_REPLY_MAX),
				      &sc->reply[XKV_TEXT]);
		p->acc_len = at + tlen;
		return XDP_TX;
	}
	/* no text: the pure ACK of noreply writes (sc->tx.noreply) */
	if ((tlen == 0 && !p->noreply) || tlen > p->r_room || tlen > XKV_TCPX_REPLY_MAX)
		return XDP_PASS;
	__u32 hl = tcpx_put_hdr(sc);
	__u32 l4len = hl + tlen;
	__u16 *ck = (__u16 *)&p->hdr[16];
	__s64 s = pseudo_sum_proto(sc, sc->addr.dst, sc->addr.src, l4len, IPPROTO_TCP);
	__u64 t = (__u32)s;
	for (int i = 0; i < 8; i++)
		if (i * 4 < hl)
			t += *(__u32 *)&p->hdr[i * 4];
	s = buf_sum(&sc->reply[XKV_TEXT], tlen & 2047, csum_fold32(t));
	*ck = ~csum_fold((__u32)s);
	/* no room in the frame for the reply (a veth frame has little at its
	 * tail): the same as when the request's ACK is news to the kernel */
	if (!p->on_ack && xkv_put_l2l3(ctx, sc, l4len, IPPROTO_TCP, 1))
		p->on_ack = 1;
	if (p->on_ack) {
		p->r_len = tlen; /* kept, sent by the TC program on the kernel's ACK */
		return XDP_TX;
	}
	__u32 at = ETH_HLEN + sc->addr.l3_len;
	if (bpf_xdp_store_bytes(ctx, at, p->hdr, hl == 32 ? 32 : 20) ||
	    (tlen && bpf_xdp_store_bytes(ctx, at + hl, &sc->reply[XKV_TEXT], XKV_LEN(tlen, XKV_TCPX_REPLY_MAX))))
		return XDP_DROP; /* the frame is half rewritten: nothing sane to pass on */
	p->r_len = tlen;
	return XDP_TX;
}

#endif
