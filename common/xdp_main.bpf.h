/* SPDX-License-Identifier: MIT */
/* The XDP programs: xdpkv, the one attached, answers UDP (the request's
 * steps in order, xdp.bpf.h) and hands a TCP segment to xdpkv_tcpx
 * (tcpx_xdp.bpf.h) by a tail call: verified apart, each within the
 * verifier's budget, and UDP pays only a look at the IP protocol.  With
 * attach --no-xdp-tcp the program array stays empty and TCP goes to the
 * kernel untouched. */
#ifndef XDPKV_XDP_MAIN_BPF_H
#define XDPKV_XDP_MAIN_BPF_H

#include "xdp.bpf.h"
#include "tcpx_xdp.bpf.h"

/* IPv4 or IPv6 carrying TCP: for xdpkv_tcpx. */
static __always_inline int xdp_is_tcp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		return (void *)(ip + 1) <= data_end && ip->protocol == IPPROTO_TCP;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		return (void *)(ip6 + 1) <= data_end && ip6->nexthdr == IPPROTO_TCP;
	}
	return 0;
}

/* All refusals come before any parsing, so refused traffic costs little
 * (docs/security.md): the guards, then a bad IPv4 header or UDP checksum
 * -> XDP_PASS (the kernel drops and counts it), then a bad frame header, a
 * reply-shaped datagram or a write from a reader -> XDP_DROP; and the
 * amplification cap on every reply (xkv_emit). */
SEC("xdp")
int xdpkv(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct xdp_req q = { .sc = bpf_map_lookup_elem(&scratch, &zero) };
	int act, keyed = 0;

	if (!q.sc)
		return XDP_PASS;
	q.sc->tx.on = 0;
	if (xdp_is_tcp(ctx)) {
		bpf_tail_call(ctx, &tcpx_progs, XKV_TCPX_PROG_SEG);
		return XDP_PASS; /* no responder (--no-xdp-tcp) */
	}
	if ((act = xdp_read_headers(ctx, &q)) != XKV_NEXT)
		return act;
	q.st = bpf_map_lookup_elem(&stats, &zero);
	if (!q.st)
		return XDP_PASS;
	if (XKV_GUARDED && (act = xdp_check_source(&q)) != XKV_NEXT)
		return act;
	stat_inc(q.st, XKV_STAT_requests);
	/* flush_all under way (the slow path knows what it removes), stats
	 * detail on (the slow path counts every request) */
	if (q.h && (q.h->flags & XKV_HOST_SLOW_ALL)) {
		stat_inc(q.st, q.h->flags & XKV_HOST_FLUSHING ? XKV_STAT_pass_flush : XKV_STAT_pass_detail);
		return XDP_PASS;
	}
	if ((act = xdp_read_request(ctx, &q)) != XKV_NEXT)
		return act;
	if (q.sc->req[0] == XKV_BIN_REQ)
		return xdp_binary(ctx, &q);

	struct get_ctx g = { .sc = q.sc, .st = q.st, .now = q.now, .o = XKV_TEXT };
	if (!xdp_quick_get(&q, &g)) {
		if ((act = xdp_parse(ctx, &q, &keyed)) != XKV_NEXT)
			return act;
		if (q.sc->pr.op != XKV_OP_GET)
			return xdp_write(ctx, &q, keyed);
		xkv_op_get(&g);
	}
	return xdp_get_reply(ctx, &q, &g);
}

/* TCP to the service port (tail-called by xdpkv; defined after it, so
 * that xdpkv is the object's first XDP program). */
SEC("xdp")
int xdpkv_tcpx(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct xkv_scratch *sc = bpf_map_lookup_elem(&scratch, &zero);

	if (!sc)
		return XDP_PASS;
	sc->tx.on = sc->tx.on_ack = sc->tx.noreply = sc->tx.pipe = 0;
	int act = xkv_tcpx(ctx, sc);
	return act == XKV_NEXT ? XDP_PASS : act;
}

/* The segment on to the kernel whole, translated. */
static __always_inline int tcpx_pass_whole(struct xdp_md *ctx, struct xkv_scratch *sc,
					   struct xkv_tcpx_flow *f)
{
	struct tcpx_offs o;
	tcpx_offs_read(f, &o);
	return tcpx_pass(ctx, sc, f, &o);
}

/* The programs after xdpkv_tcpx (prog: a constant, which one): a request
 * program runs the segment's next request (sc->tx.pipe_i), text or binary,
 * then goes on to the next one's program, or to xdpkv_tcpx_fin after the
 * last (tcpx_chain); xdpkv_tcpx_fin sends the replies and sets the flow's
 * new correction point (tcpx_commit).  Anything not answered sends the
 * segment on whole, translated. */
static __always_inline int tcpx_tail(struct xdp_md *ctx, __u32 prog)
{
	__u32 zero = 0;
	struct xkv_scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
	struct xkv_stats *st = bpf_map_lookup_elem(&stats, &zero);

	if (!sc || !st)
		return XDP_PASS;
	struct xkv_tcpx_flow *f = bpf_map_lookup_elem(&tcpx_flows, &sc->tx.key);
	if (!f)
		return XDP_PASS; /* gone meanwhile (a RST): nothing answered, nothing to translate */
	if (prog == XKV_TCPX_PROG_FIN) {
		int act = tcpx_commit(ctx, sc, st, f);
		return act != XKV_NEXT ? act : tcpx_pass_whole(ctx, sc, f);
	}
#ifdef XKV_PERCPU
	/* never chained to: the scan leaves binary and meta out */
	if (prog == XKV_TCPX_PROG_BIN || prog == XKV_TCPX_PROG_META)
		return tcpx_pass_whole(ctx, sc, f);
#endif
	int kind = prog == XKV_TCPX_PROG_BIN    ? XKV_TCPX_KIND_BIN
		 : prog == XKV_TCPX_PROG_META ? XKV_TCPX_KIND_META
					      : XKV_TCPX_KIND_TEXT;
	if (tcpx_step(ctx, sc, st, kind) == XDP_TX) {
		tcpx_chain(ctx, sc);
		/* a failed tail call: nothing sane after a write ran */
		if (sc->tx.applied)
			return XDP_DROP;
	}
	return tcpx_pass_whole(ctx, sc, f);
}

/* A text request of a segment xdpkv_tcpx found answerable (sc->tx). */
SEC("xdp")
int xdpkv_tcpx_run(struct xdp_md *ctx)
{
	return tcpx_tail(ctx, XKV_TCPX_PROG_RUN);
}

/* A binary request of the segment. */
SEC("xdp")
int xdpkv_tcpx_bin(struct xdp_md *ctx)
{
	return tcpx_tail(ctx, XKV_TCPX_PROG_BIN);
}

/* A meta command of the segment. */
SEC("xdp")
int xdpkv_tcpx_meta(struct xdp_md *ctx)
{
	return tcpx_tail(ctx, XKV_TCPX_PROG_META);
}

/* Every request of the segment run: the replies sent. */
SEC("xdp")
int xdpkv_tcpx_fin(struct xdp_md *ctx)
{
	return tcpx_tail(ctx, XKV_TCPX_PROG_FIN);
}

#endif
