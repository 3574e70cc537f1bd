/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, a binary request of a segment (xdpkv_tcpx_bin):
 * get, getq, getk, getkq (binget.bpf.h), noop, and set, setq, delete,
 * deleteq, each answered as the slow path answers it (engine/binproto.c:
 * run_store, run_delete, put_res, put_err).  A set stores as a text set
 * does (xdp.bpf.h's entry, its value from the request), its response the
 * new item's cas; a quiet form answers only a failure.  What this path does
 * not answer — a cas, add, replace and the other opcodes, a value over
 * --value-size, an exptime past 2^31, a key the store refuses; every
 * binary write of a layout that defines XKV_TCPX_NO_BIN_WRITES, every
 * binary request of a per-CPU layout — the scan
 * left out, or goes on whole before anything changed.  Expects
 * tcpx_pipe.bpf.h's beginning (TCPX_REFUSE). */
#ifndef XDPKV_TCPX_BIN_BPF_H
#define XDPKV_TCPX_BIN_BPF_H

/* Is the binary frame in sc->req (len bytes) a write this path answers:
 * set or setq (extras of 8, a key, no cas), delete or deleteq (a key
 * alone, no cas)?  Its key's length, or 0. */
static __always_inline __u32 bin_write_klen(struct xkv_scratch *sc, __u32 len)
{
#ifdef XKV_TCPX_NO_BIN_WRITES
	return 0;
#endif
	const struct xkv_bin_hdr *h = (const void *)sc->req;
	__u8 op = h->opcode;
	__u32 klen = xkv_ntohs(h->keylen), body = bpf_ntohl(h->bodylen);

	if (h->datatype || h->cas || !klen || klen > cfg.key_cap || len != XKV_BIN_HDR_LEN + body)
		return 0;
	if (op == XKV_BIN_SET || op == XKV_BIN_SETQ)
		return h->extlen == 8 && body >= klen + 8 && body - klen - 8 <= cfg.val_cap ? klen : 0;
	if (op == XKV_BIN_DELETE || op == XKV_BIN_DELETEQ)
		return !h->extlen && body == klen ? klen : 0;
	return 0;
}

/* A response of a header and msg (mlen bytes), collected: XDP_TX, or
 * XKV_NEXT when it does not fit. */
static __always_inline int tcpx_bin_reply(struct xdp_md *ctx, struct xkv_scratch *sc, struct xkv_stats *st,
					  __u16 status, const char *msg, __u32 mlen, __u64 cas)
{
	__u32 o = XKV_BIN_BODY;

	bin_res_hdr(sc, status, 0, 0, mlen, cas);
	if (mlen)
		put_lit(sc, &o, msg, mlen);
	return xkv_emit_binary(ctx, &sc->addr, sc, st, o - 8) == XDP_TX ? XDP_TX : XKV_NEXT;
}
#define TCPX_BIN_REPLY(status, m, cas) tcpx_bin_reply(ctx, sc, st, status, m, sizeof(m) - 1, cas)

/* set or setq: the entry as a text set builds it (flags and exptime from
 * the extras, the value after the key), stored. */
static __always_inline int tcpx_bin_set(struct xdp_md *ctx, struct xdp_req *q, __u32 klen, int quiet)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	struct xkv_req *r = &sc->pr;
	const struct xkv_bin_hdr *h = (const void *)sc->req;
	__u32 ext[2], bytes = bpf_ntohl(h->bodylen) - 8 - klen;

	__builtin_memcpy(ext, &sc->req[XKV_BIN_HDR_LEN], 8);
	if (bpf_ntohl(ext[1]) > 0x7fffffff || bytes > cfg.val_cap || bytes >= XKV_REQ_MAX ||
	    !xkv_bin_load_key(sc, XKV_BIN_HDR_LEN + 8, klen))
		return TCPX_REFUSE(refused_shape);
	r->flags = bpf_ntohl(ext[0]);
	r->exptime = (__s64)bpf_ntohl(ext[1]);
	r->bytes = bytes;
	r->noreply = 0;
	if (!q->now)
		q->now = bpf_ktime_get_ns();
	xkv_entry_head(sc, q->now);
	xdp_set_value(sc, XKV_BIN_HDR_LEN + 8 + klen, bytes);
	int err = xkv_op_set(sc, st);
	if (err == -EBUSY) {
		stat_inc(st, XKV_STAT_pass_busy);
		return TCPX_REFUSE(refused_room);
	}
	stat_inc(st, XKV_STAT_cmd_set);
	if (err) {
		stat_inc(st, XKV_STAT_err_oom);
		return TCPX_BIN_REPLY(XKV_BIN_ENOMEM, "Out of memory", 0);
	}
	sc->tx.applied = 1;
	return quiet ? XDP_TX : TCPX_BIN_REPLY(XKV_BIN_OK, "", sc->entry.wtime_ns);
}

/* delete or deleteq: a miss is answered "Not found" by both. */
static __always_inline int tcpx_bin_delete(struct xdp_md *ctx, struct xdp_req *q, __u32 klen, int quiet)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;

	if (!xkv_bin_load_key(sc, XKV_BIN_HDR_LEN, klen))
		return TCPX_REFUSE(refused_shape);
	if (!q->now)
		q->now = bpf_ktime_get_ns();
	int found = xkv_op_delete(sc, st, q->now);
	if (found < 0) {
		stat_inc(st, XKV_STAT_pass_busy);
		return TCPX_REFUSE(refused_room);
	}
	stat_inc(st, XKV_STAT_cmd_delete);
	sc->tx.applied = 1;
	if (!found)
		return TCPX_BIN_REPLY(XKV_BIN_ENOENT, XKV_BIN_M_ENOENT, 0);
	return quiet ? XDP_TX : TCPX_BIN_REPLY(XKV_BIN_OK, "", 0);
}

/* A binary request (scanned: a noop, one of the gets, one of the writes
 * above) run; its response collected, or none for a quiet miss or a
 * quiet write done. */
static __always_inline int tcpx_run_binary(struct xdp_md *ctx, struct xdp_req *q)
{
	struct xkv_scratch *sc = q->sc;
	struct xkv_stats *st = q->st;
	__u8 op = sc->req[1];
	int act;

	if (op == XKV_BIN_NOOP) {
		act = TCPX_BIN_REPLY(XKV_BIN_OK, "", 0);
		if (act == XDP_TX)
			stat_inc(st, XKV_STAT_cmd_other);
		return act == XDP_TX ? XDP_TX : TCPX_REFUSE(refused_room);
	}
	__u32 wk = bin_write_klen(sc, q->tlen);
	if (wk) {
		int quiet = op == XKV_BIN_SETQ || op == XKV_BIN_DELETEQ;
		act = op == XKV_BIN_SET || op == XKV_BIN_SETQ ? tcpx_bin_set(ctx, q, wk, quiet)
							   : tcpx_bin_delete(ctx, q, wk, quiet);
		return act == XDP_TX ? XDP_TX : XKV_NEXT;
	}
	struct get_ctx g = { .sc = sc, .st = st, .now = q->now };
	int plen = bin_get(&g, q->tlen);
	if (plen == XKV_BIN_SILENT) {
		get_count(&g, st);
		return XDP_TX;
	}
	if (plen <= 0)
		return plen == XKV_BIN_NOT_OURS ? TCPX_REFUSE(refused_shape) : TCPX_REFUSE(refused_room);
	act = xkv_emit_binary(ctx, &sc->addr, sc, st, plen);
	if (act != XDP_TX)
		return TCPX_REFUSE(refused_room);
	get_count(&g, st);
	return XDP_TX;
}

#endif
