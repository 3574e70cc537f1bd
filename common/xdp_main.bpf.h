/* SPDX-License-Identifier: MIT */
/* The XDP program itself: TCP to the service port first (tcpx_xdp.bpf.h),
 * then the UDP request's steps in order (xdp.bpf.h). */
#ifndef XDPKV_XDP_MAIN_BPF_H
#define XDPKV_XDP_MAIN_BPF_H

#include "xdp.bpf.h"
#include "tcpx_xdp.bpf.h"

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
	q.sc->tx.on = q.sc->tx.replay = 0;
	if ((act = xkv_tcpx(ctx, q.sc)) != XKV_NEXT) /* TCP (tcpx_xdp.bpf.h) */
		return act;
	if ((act = xdp_read_headers(ctx, &q)) != XKV_NEXT)
		return act;
	q.st = bpf_map_lookup_elem(&stats, &zero);
	if (!q.st)
		return XDP_PASS;
	if (XKV_GUARDED && (act = xdp_check_source(&q)) != XKV_NEXT)
		return act;
	stat_inc(q.st, XKV_STAT_requests);
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

#endif
