/* SPDX-License-Identifier: MIT */
/* The XDP program's reply: the one reply writer (xkv_emit_frame) turns the
 * request frame into the reply datagram (new headers, checksums) and sends
 * it back, under the amplification cap (xkv_emit for text, xkv_emit_binary);
 * one constant line or an error line as a whole reply.  Expects
 * prelude.bpf.h before it. */
#ifndef XDPKV_EMIT_BPF_H
#define XDPKV_EMIT_BPF_H

#include "csum.bpf.h"
#include "guards.bpf.h"
#include "reply.bpf.h"

/* Resize the frame to the reply's Ethernet and IP headers and l4len bytes
 * after them, and write those headers, addressed back to sc->addr, for
 * protocol proto.  A frame that grows takes the room at its head, or with
 * tail set at its end when the head has too little.  The headers are new,
 * not the request's: TTL/hop limit 64, IPv4 DF and an id from this CPU's
 * counter, ECN bits cleared (never echo CE).  0, or -1 with the frame untouched (adjust_* failed before
 * anything was written). */
static __always_inline int xkv_put_l2l3(struct xdp_md *ctx, struct xkv_scratch *sc, __u32 l4len,
					__u8 proto, int tail)
{
	struct xkv_addr *a = &sc->addr;
	__u32 l2l3 = ETH_HLEN + a->l3_len;
	int old_len = (int)(ctx->data_end - ctx->data);
	int delta = (int)(l2l3 + l4len) - old_len;

	if (delta > 0) {
		/* grow at the head first: no tail to clear, and veth frames have
		 * headroom but no tailroom */
		if (bpf_xdp_adjust_head(ctx, -delta) && (!tail || bpf_xdp_adjust_tail(ctx, delta)))
			return -1;
	} else if (delta < 0) {
		if (bpf_xdp_adjust_tail(ctx, delta) && bpf_xdp_adjust_head(ctx, -delta))
			return -1;
	}
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) + 40 > data_end)
		return -1; /* cannot happen: the reply has an L4 header and more */
	__builtin_memcpy(eth->h_dest, a->eth_src, ETH_ALEN);
	__builtin_memcpy(eth->h_source, a->eth_dst, ETH_ALEN);
	if (a->family == 4) {
		struct iphdr *ip = (void *)(eth + 1);
		if (!sc->ip_id)
			sc->ip_id = bpf_get_prandom_u32() | 1;
		eth->h_proto = bpf_htons(ETH_P_IP);
		/* version 4, ihl 5, the request's TOS without its ECN bits */
		__u16 w0 = bpf_htons(0x4500 | (a->tos & ~3));
		__u16 w1 = bpf_htons(20 + l4len);
		__u16 w2 = bpf_htons((__u16)sc->ip_id++);
		__u16 w3 = bpf_htons(0x4000); /* DF */
		__u16 w4 = bpf_htons((64 << 8) | proto);
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
		ip6->payload_len = bpf_htons(l4len);
		ip6->nexthdr = proto;
		ip6->hop_limit = 64;
		__builtin_memcpy(&ip6->saddr, a->dst, 16);
		__builtin_memcpy(&ip6->daddr, a->src, 16);
	}
	return 0;
}

/* A reply as one TCP segment (tcpx_xdp.bpf.h): the text of reply[XKV_TEXT
 * .. 8+plen). */
int xkv_tcpx_emit(struct xdp_md *ctx, struct xkv_scratch *sc, __u32 tlen);

/* reply[0 .. 8+plen) = [udp header][frame header][text].  Rewrite the frame
 * into the reply, addressed back to sc->addr, and return XDP_TX, or XDP_PASS
 * when it does not fit.  Global: verified once, whatever the caller's state.
 * The UDP checksum is computed for both families.  On a TCP connection
 * (sc->tx.on) the text goes out as a TCP segment instead. */
__attribute__((noinline)) int xkv_emit_frame(struct xdp_md *ctx, struct xkv_scratch *sc, __u32 plen)
{
	if (!ctx || !sc)
		return XDP_PASS;
	if (sc->tx.on)
		return plen >= 8 ? xkv_tcpx_emit(ctx, sc, plen - 8) : XDP_PASS;
	struct xkv_addr *a = &sc->addr;
	__u32 udp_len = 8 + plen;

	/* n: udp_len as the verifier must see it, bounded */
	__u32 n = udp_len;
	barrier_var(n);
	if (n < 8 || n > 2047)
		return XDP_PASS;
	struct udphdr *uh = (void *)sc->reply;
	uh->source = a->dport;
	uh->dest = a->sport;
	uh->len = bpf_htons(udp_len);
	uh->check = 0;
	__u16 ck = ~csum_fold((__u32)buf_sum(sc->reply, n, pseudo_sum(sc, a->dst, a->src, udp_len)));
	uh->check = ck ? ck : 0xffff;
	if (xkv_put_l2l3(ctx, sc, udp_len, IPPROTO_UDP, 1))
		return XDP_PASS;
	if (bpf_xdp_store_bytes(ctx, ETH_HLEN + a->l3_len, sc->reply, n))
		return XDP_PASS;
	return XDP_TX;
}

/* Would a reply of plen bytes (UDP payload) break the amplification cap:
 * an untrusted source gets at most max_amp bytes per byte it sent? */
static __always_inline int xkv_amp_over(struct xkv_addr *a, struct xkv_scratch *sc, __u32 plen)
{
	return XKV_GUARDED && !sc->tx.on && cfg.max_amp && (__u64)plen > (__u64)cfg.max_amp * a->req_bytes &&
	       !src_trusted(sc);
}

/* Send reply[0 .. 8+plen) as it is, counted. */
static __always_inline int xkv_send(struct xdp_md *ctx, struct xkv_scratch *sc,
				    struct xkv_stats *st, __u32 plen)
{
	int act = xkv_emit_frame(ctx, sc, plen);
	stat_inc(st, act == XDP_TX ? XKV_STAT_replies : XKV_STAT_pass_room);
	return act;
}

/* Send reply[0 .. 8+plen), a text reply: over the amplification cap it is
 * cut to XKV_R_AMP, or to nothing when even that is too long. */
static __always_inline int xkv_emit(struct xdp_md *ctx, struct xkv_addr *a,
				    struct xkv_scratch *sc, struct xkv_stats *st, __u32 plen)
{
	if (xkv_amp_over(a, sc, plen)) {
		if (XKV_UDP_HDR_LEN + sizeof(XKV_R_AMP) - 1 > (__u64)cfg.max_amp * a->req_bytes) {
			stat_inc(st, XKV_STAT_drop_amp);
			return XDP_DROP;
		}
		stat_inc(st, XKV_STAT_amp_capped);
		__u32 o = XKV_TEXT;
		PUT_LIT(sc, &o, XKV_R_AMP);
		plen = o - 8;
	}
	return xkv_send(ctx, sc, st, plen);
}

/* Send reply[0 .. 8+plen), a binary response: over the amplification cap
 * nothing is sent, as the slow path does (a text line would break a
 * binary client). */
static __always_inline int xkv_emit_binary(struct xdp_md *ctx, struct xkv_addr *a,
					   struct xkv_scratch *sc, struct xkv_stats *st, __u32 plen)
{
	if (xkv_amp_over(a, sc, plen)) {
		stat_inc(st, XKV_STAT_drop_amp);
		return XDP_DROP;
	}
	return xkv_send(ctx, sc, st, plen);
}

/* Reply with one constant line. */
static __always_inline int xkv_reply_line(struct xdp_md *ctx, struct xkv_addr *a,
					  struct xkv_scratch *sc, struct xkv_stats *st,
					  const char *line, __u32 n)
{
	/* plen: the frame header and the line */
	return xkv_emit(ctx, a, sc, st, XKV_TEXT - 8 + reply_line_text(sc, line, n));
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
	E(XKV_E_DEL_USAGE, XKV_R_DEL_USAGE, err_client)
	E(XKV_E_DELTA, XKV_R_DELTA, err_client)
	}
#undef E
	stat_inc(st, XKV_STAT_err_unknown);
	return xkv_reply_line(ctx, a, sc, st, XKV_R_ERROR, sizeof(XKV_R_ERROR) - 1);
}

#endif
