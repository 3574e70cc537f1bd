/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, the requests of a segment found answerable
 * (tcpx_xdp.bpf.h, I1-I5): split (xkv_tcpx_scan), run one a program in a
 * tail-call chain (tcpx_step in xdpkv_tcpx_run for text, in xdpkv_tcpx_bin
 * for binary, in xdpkv_tcpx_meta for the meta commands: the fast path's
 * own steps, xdp.bpf.h, with each reply added
 * to sc->tx.acc), and the replies sent as one segment (tcpx_commit, in
 * xdpkv_tcpx_fin), which the flow takes as its new correction point: one
 * per segment, however many requests it held.
 *
 * Exactly once: a segment is answered whole or passed whole, untouched.
 * Reads change nothing, so a read that cannot be answered here (its reply
 * too long, a busy item) passes the segment on; writes must come after
 * every read (the scan checks), and the first write runs only when the
 * longest replies of all of them fit the segment too.  After that nothing
 * turns back: a later write that meets a busy item is answered as memcached
 * answers a write it could not store.  Expects xdp.bpf.h, tcp.bpf.h and
 * tcpx_seg.bpf.h before it. */
#ifndef XDPKV_TCPX_PIPE_BPF_H
#define XDPKV_TCPX_PIPE_BPF_H

#define TCPX_REFUSE(why) ({ stat_inc(st, XKV_STAT_tcpx_##why); XKV_NEXT; })

#include "tcpx_bin.bpf.h"
#include "tcpx_meta.bpf.h"

/* The payload walked one request a bpf_loop() step (verified once).  The
 * walk's counts live in sc->tx (map memory, unknown to the verifier), not
 * in this struct on the stack, whose exact values would have it walk the
 * step once per count. */
struct tcpx_scan {
	struct xdp_md *ctx;
	struct xkv_scratch *sc;
};

/* The next request's bytes and kind: a text get, set or delete the fast
 * path answers (noreply on writes only), a meta command of the forms
 * tcpx_meta.bpf.h answers, or a binary get, getq, getk, getkq
 * (binget.bpf.h), set, setq, delete, deleteq or noop frame.  Its length into pipe_len[pipe_n];
 * pipe_off moves past it, pipe_w is the first write's index. */
static long tcpx_scan_step(__u32 idx, void *v)
{
	struct tcpx_scan *c = v;
	struct xkv_scratch *sc = c->sc;
	if (!sc)
		return 1;
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 off = p->pipe_off, n = p->pipe_n, len, writes = 0, replied = 1, binary = 0, meta = 0;
	__u32 left = p->plen - off;

	if (off >= p->plen)
		return 1;
	if (n >= XKV_TCPX_PIPE_MAX || left > XKV_REQ_MAX ||
	    bpf_xdp_load_bytes(c->ctx, p->l4 + p->doff + off, sc->req, XKV_LEN(left, XKV_REQ_MAX)))
		goto bad;
	/* the connection's protocol only, as memcached reads it (a binary
	 * frame on a text connection, or text on a binary one, is serve's).
	 * Not known (the flow was made after the connection's first byte
	 * went to serve: a handshake's last ACK still in GRO when its first
	 * data came): this segment starts where serve stopped, at a
	 * request, whose first byte tells (tcpx_commit keeps it) */
	__u32 speaks = sc->req[0] == XKV_BIN_REQ ? XKV_TCPX_PROTO_BIN : XKV_TCPX_PROTO_TEXT;
	if (p->proto == XKV_TCPX_PROTO_UNKNOWN && n == 0)
		p->proto = speaks;
	if (p->proto != speaks)
		goto bad;
	if (sc->req[0] == XKV_BIN_REQ) {
#ifdef XKV_PERCPU
		/* per-CPU layouts: binary requests are serve's (6.1's verifier
		 * refused their binary request program; docs/kernels.md) */
		goto bad;
#endif
		const struct xkv_bin_hdr *h = (const void *)sc->req;
		if (left < XKV_BIN_HDR_LEN || bpf_ntohl(h->bodylen) > left - XKV_BIN_HDR_LEN)
			goto cut;
		len = XKV_BIN_HDR_LEN + bpf_ntohl(h->bodylen);
		if (h->opcode == XKV_BIN_NOOP) {
			if (len != XKV_BIN_HDR_LEN || h->keylen || h->extlen || h->datatype)
				goto bad;
			/* after a write: a reply to make room for, no read */
			writes = p->pipe_w != XKV_TCPX_PIPE_MAX;
		} else if (bin_write_klen(sc, len)) {
			writes = 1; /* a quiet one too: it answers a failure */
		} else if (!bin_get_klen(sc, len)) {
			goto bad;
		}
		binary = 1;
	} else {
		__u32 k = xkv_quick_on() ? xkv_quick_get_req(sc, left) : 0;
		if (k) {
			len = left;
		} else {
			struct xkv_req *r = &sc->pr;
			if (xkv_parse_req(sc, left)) {
				/* no line end yet, or a set's data block not all
				 * there: memcached waits for more as well */
				if ((r->err == XKV_E_NO_CRLF && r->done == 0) ||
				    (r->err == XKV_E_DATA && (__u64)r->data_off + r->bytes + 2 > left))
					goto cut;
				goto bad;
			}
			if (xkv_meta_op(r->op)) {
#ifdef XKV_PERCPU
				goto bad; /* per-CPU layouts: serve's, as binary */
#endif
				/* a write's reply may carry its key: room in units */
				if (!xkv_meta_req(sc, left) || !r->next || r->next > left)
					goto bad;
				len = r->next;
				meta = 1;
				replied = p->meta.units;
				writes = r->op == XKV_OP_MS || r->op == XKV_OP_MD ||
					 (r->op == XKV_OP_MN && p->pipe_w != XKV_TCPX_PIPE_MAX);
			} else {
				if (r->op > XKV_OP_FAST_LAST || r->op == XKV_OP_NONE || r->too_many ||
				    !r->next || r->next > left || (r->noreply && !xkv_op_writes(r->op)))
					goto bad;
				len = r->next;
				writes = xkv_op_writes(r->op);
				replied = !r->noreply;
			}
		}
	}
	if (writes) {
		if (p->pipe_w == XKV_TCPX_PIPE_MAX)
			p->pipe_w = n;
		p->pipe_wreply += replied;
	} else if (p->pipe_w != XKV_TCPX_PIPE_MAX) {
		goto bad; /* a read after a write: its reply could not be sure to fit */
	}
	p->pipe_len[n & (XKV_TCPX_PIPE_SLOTS - 1)] = len;
	p->pipe_bin |= binary << (n & (XKV_TCPX_PIPE_SLOTS - 1));
	p->pipe_meta |= meta << (n & (XKV_TCPX_PIPE_SLOTS - 1));
	p->pipe_n = n + 1;
	p->pipe_off = off + len;
	return 0;
cut:
	p->cut = 1; /* the requests before it stand */
	return 1;
bad:
	p->pipe_n = 0;
	return 1;
}

/* The segment's payload split into up to XKV_TCPX_PIPE_MAX whole requests
 * this path answers, with no read after a write (sc->tx.pipe_*), and a
 * request cut at the end of at most XKV_TCPX_HOLD_MAX bytes to hold
 * (sc->tx.hold, its bytes in hold_b: tcpx.h) when the frame has the room
 * before it that putting it back in front of the next segment takes: 1,
 * or 0 when it is not (an unknown command, more than that many, nothing
 * to answer or hold).  Leaves sc->req and sc->pr to the run.  Global:
 * verified once. */
__attribute__((noinline)) int xkv_tcpx_scan(struct xdp_md *ctx, struct xkv_scratch *sc)
{
	if (!ctx || !sc)
		return 0;
	struct xkv_tcpx_seg *p = &sc->tx;
	struct tcpx_scan c = { .ctx = ctx, .sc = sc };

	p->pipe_n = 0;
	p->pipe_off = 0;
	p->pipe_w = XKV_TCPX_PIPE_MAX;
	p->pipe_wreply = 0;
	p->pipe_bin = 0;
	p->pipe_meta = 0;
	p->cut = 0;
	p->hold = 0;
	bpf_loop(XKV_TCPX_PIPE_MAX + 1, tcpx_scan_step, &c, 0);
	__u32 tail = p->plen - p->pipe_off;
	if (tail) {
		if (!p->cut || tail > XKV_TCPX_HOLD_MAX) /* (past plen: tail wraps above it) */
			return 0;
		/* the room xkv_tcpx_prepend will take in the next frame: this
		 * one's (the same device's), less what held bytes took of it */
		int more = (int)tail - (int)p->put;
		if (more > 0 && bpf_xdp_adjust_head(ctx, -more))
			return 0;
		if ((more > 0 && bpf_xdp_adjust_head(ctx, more)) ||
		    bpf_xdp_load_bytes(ctx, p->l4 + p->doff + p->pipe_off, p->hold_b, XKV_LEN(tail, 256)))
			return 0;
		p->hold = tail;
	} else if (!p->pipe_n) {
		return 0;
	}
	if (p->pipe_w > p->pipe_n)
		p->pipe_w = p->pipe_n;
	p->pipe_i = 0;
	p->pipe_off = 0;
	p->acc_len = 0;
	p->applied = 0;
	p->on = 1;   /* the replies are TCP's (xkv_emit_frame) */
	p->pipe = 1; /* ... collected (xkv_tcpx_emit) */
	return 1;
}

/* The host's flags and the access lists for the segment, before its
 * first request runs (the rate limit covers UDP alone: docs/security.md;
 * serve would answer what it refused here, at a higher cost): 1 to go on,
 * 0 (counted) when the segment goes on whole. */
static __always_inline int tcpx_guard(struct xkv_scratch *sc, struct xkv_stats *st)
{
	__u32 zero = 0;
	struct xkv_host *h = bpf_map_lookup_elem(&host, &zero);

	if (!XKV_GUARDED)
		return 1;
	if (!h || (h->flags & XKV_HOST_AUTH) || !acl_allowed(sc)) {
		stat_inc(st, XKV_STAT_tcpx_refused_acl);
		return 0;
	}
	if (h->flags & XKV_HOST_SLOW_ALL) { /* as xdpkv()'s */
		stat_inc(st, h->flags & XKV_HOST_FLUSHING ? XKV_STAT_pass_flush : XKV_STAT_pass_detail);
		return 0;
	}
	return 1;
}

/* Text request sc->tx.pipe_i (len bytes in sc->req) run by the fast path's
 * own steps (xdp.bpf.h), its reply collected: XDP_TX, also for one with no
 * reply (a noreply write), or XKV_NEXT when it is not one this path
 * answers (I6, I7) or the store was busy (then nothing was changed).  The
 * host's flags and the access lists were checked for the segment
 * (tcpx_guard), the write rules at its first write (xkv_tcpx_first_write). */
static __always_inline int tcpx_run(struct xdp_md *ctx, struct xkv_scratch *sc, struct xkv_stats *st,
				    __u32 len)
{
	struct xdp_req q = { .sc = sc, .st = st, .tlen = len };
	struct xkv_tcpx_seg *p = &sc->tx;
	struct xkv_req *r = &sc->pr;
	int act;

	struct get_ctx g = { .sc = sc, .st = st, .now = q.now, .o = XKV_TEXT };
	/* one way to a get's reply (as xdpkv()'s): the verifier walks it once */
	if (!xdp_quick_get(&q, &g)) {
		/* the tokenizer for writes, not xdpkv()'s set shortcut: a
		 * second way through the write (keyed or not) took arena's
		 * request program past the budget on 6.12 */
		int err = xkv_parse_req(sc, q.tlen);
		if (err || r->op > XKV_OP_FAST_LAST || r->op == XKV_OP_NONE || r->next != q.tlen ||
		    r->too_many || (r->noreply && !xkv_op_writes(r->op)))
			return TCPX_REFUSE(refused_shape);
		if (r->op != XKV_OP_GET) {
			act = xdp_write(ctx, &q, 0);
			if (act != XDP_PASS)
				p->applied = 1;
			/* noreply, done (XDP_DROP: nothing to send) */
			if (r->noreply && act == XDP_DROP)
				return XDP_TX;
			return act == XDP_TX ? XDP_TX : TCPX_REFUSE(refused_room);
		}
		xkv_op_get(&g);
	}
	act = xdp_get_reply(ctx, &q, &g);
	return act == XDP_TX ? XDP_TX : TCPX_REFUSE(refused_room);
}

/* Before the segment's first write: the last point where it may still go
 * on whole.  Exactly once: every write's reply must be sure to go out here
 * (one that did not would send the segment to serve, which would run it
 * again), and the write rules of xdp.bpf.h hold (the write list is the
 * caller's: 6.1 takes no map key from a global function's argument).  1 to
 * go on.  Global: verified once, its exits not multiplying the request's
 * paths. */
__attribute__((noinline)) int xkv_tcpx_first_write(struct xkv_scratch *sc, struct xkv_stats *st)
{
	__u32 zero = 0;
	if (!sc || !st)
		return 0;
	struct xkv_tcpx_seg *p = &sc->tx;
	struct xkv_host *h = bpf_map_lookup_elem(&host, &zero);

	if (h && (h->flags & XKV_HOST_PAUSE_WRITES)) {
		stat_inc(st, XKV_STAT_tcpx_refused_shape);
		return 0;
	}
	if (p->acc_len + XKV_TCPX_WRITE_REPLY * p->pipe_wreply > p->r_room) {
		stat_inc(st, XKV_STAT_tcpx_refused_room);
		return 0;
	}
#ifdef XKV_PERCPU
	/* a per-CPU store: a set here writes this CPU's copy only, and serve's
	 * reads on the connection would miss it (the verdict's rule,
	 * tcp.bpf.h); serve writes every CPU's copy */
	stat_inc(st, XKV_STAT_tcpx_refused_shape);
	return 0;
#endif
	return 1;
}

/* The answer to a write that met a busy item after writes of the segment
 * ran (tcpx_step): the slow path's to a write it could not store, text or
 * binary (none for a text noreply).  Global: verified once. */
__attribute__((noinline)) int xkv_tcpx_busy_reply(struct xdp_md *ctx, struct xkv_scratch *sc, int binary)
{
	__u32 o = XKV_TEXT;

	if (!ctx || !sc)
		return XKV_NEXT;
	if (binary) {
		bin_res_hdr(sc, XKV_BIN_ENOMEM, 0, 0, 4, 0);
		o = XKV_BIN_BODY;
		PUT_LIT(sc, &o, "busy");
	} else if (sc->pr.noreply) {
		return XDP_TX;
	} else {
		PUT_LIT(sc, &o, XKV_R_OOM);
	}
	return xkv_emit_frame(ctx, sc, o - 8) == XDP_TX ? XDP_TX : XKV_NEXT;
}

/* The requests' kinds, one program each (tcpx_xdp.bpf.h) */
#define XKV_TCPX_KIND_TEXT 0
#define XKV_TCPX_KIND_BIN 1
#define XKV_TCPX_KIND_META 2

/* The segment's next request (sc->tx.pipe_i) from the frame, run (kind: a
 * constant, the program's): XDP_TX (its reply collected, the walk moved
 * on) or XKV_NEXT (nothing changed: the segment is passed on). */
static __always_inline int tcpx_step(struct xdp_md *ctx, struct xkv_scratch *sc, struct xkv_stats *st,
				     int kind)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 i = p->pipe_i, off = p->pipe_off;
	__u32 len = p->pipe_len[i & (XKV_TCPX_PIPE_SLOTS - 1)];

	barrier_var(len);
	if (i >= p->pipe_n || len == 0 || len > XKV_REQ_MAX || off + len > p->plen)
		return TCPX_REFUSE(refused_shape);
	barrier_var(len);
	if (bpf_xdp_load_bytes(ctx, p->l4 + p->doff + off, sc->req, XKV_LEN(len, XKV_REQ_MAX)))
		return TCPX_REFUSE(refused_shape);
	__u8 applied = p->applied;
	if (i == p->pipe_w) {
		if (XKV_GUARDED && !acl_has(sc, &acl_write))
			return TCPX_REFUSE(refused_acl);
		if (!xkv_tcpx_first_write(sc, st))
			return XKV_NEXT;
	}
	struct xdp_req q = { .sc = sc, .st = st, .tlen = len };
	int act = kind == XKV_TCPX_KIND_BIN    ? tcpx_run_binary(ctx, &q)
		: kind == XKV_TCPX_KIND_META ? tcpx_run_meta(ctx, &q)
					     : tcpx_run(ctx, sc, st, len);
	if (act != XDP_TX && applied) {
		/* a write after writes that ran met a busy item: there is no
		 * passing the segment on now (serve would run them again);
		 * answered as the slow path answers a write it could not store */
		stat_inc(st, XKV_STAT_err_oom);
		act = xkv_tcpx_busy_reply(ctx, sc, kind == XKV_TCPX_KIND_BIN);
	}
	if (act != XDP_TX)
		return XKV_NEXT;
	p->pipe_i = i + 1;
	p->pipe_off = off + len;
	return XDP_TX;
}

/* An answer on the connection, for serve's --idle-timeout (its slot's
 * xdp_ns: serve sees no request the responder answered). */
static __always_inline void tcpx_mark_answer(struct xkv_scratch *sc, __u64 now)
{
	__u64 cookie = sc->tx.sk.cookie;
	__u32 *slot = bpf_map_lookup_elem(&tcp_slots, &cookie);
	if (!slot)
		return;
	struct xkv_tcp_conn *kc = bpf_map_lookup_elem(&tcp_conns, slot);
	if (kc)
		kc->xdp_ns = now;
}

/* Every request of the segment run: the collected replies sent as one
 * segment (none, for noreply writes and quiet misses alone: the segment
 * goes to the kernel as old data, whose immediate ACK acknowledges it),
 * and the flow takes the answer as its new correction point.  A cut
 * request at the end is held (tcpx.h), or, when the segment goes to the
 * kernel (its ACK news there), is the kernel's with it: new data there. */
static __always_inline int tcpx_commit(struct xdp_md *ctx, struct xkv_scratch *sc,
				       struct xkv_stats *st, struct xkv_tcpx_flow *f)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 rl = p->acc_len, cut = p->hold;

	p->pipe = 0;
	if (rl > XKV_TCPX_REPLY_MAX || cut > XKV_TCPX_HOLD_MAX || cut > p->plen)
		return XDP_DROP; /* cannot be: collected within it, the scan's */
	if (rl) {
		bpf_probe_read_kernel(&sc->reply[XKV_TEXT], XKV_LEN(rl, XKV_TCPX_REPLY_MAX), p->acc);
		/* XDP_PASS only for a reply over r_room, which collecting
		 * checked; XDP_DROP for a frame half rewritten */
		int act = xkv_tcpx_emit(ctx, sc, rl);
		if (act != XDP_TX)
			return XDP_DROP;
		/* the reply text, kept for a replay: after the unacknowledged
		 * one's when this extends it (both within r_room's cap) */
		__u32 old = p->merge ? f->r_len : 0;
		if (old > XKV_TCPX_REPLY_MAX || old + rl > XKV_TCPX_REPLY_MAX)
			return XDP_DROP; /* cannot be: r_room */
		if (old) {
			__u32 at = old;
			barrier_var(at); /* the mask below stays (6.1: see tcpx_meta_get) */
			bpf_probe_read_kernel(sc->reply, XKV_LEN(old, XKV_TCPX_REPLY_MAX), f->r);
			bpf_probe_read_kernel(&sc->reply[at & 2047], XKV_LEN(rl, XKV_TCPX_REPLY_MAX), p->acc);
			bpf_probe_read_kernel(f->r, XKV_LEN(old + rl, XKV_TCPX_REPLY_MAX), sc->reply);
		} else {
			bpf_probe_read_kernel(f->r, XKV_LEN(rl, XKV_TCPX_REPLY_MAX), p->acc);
		}
	} else {
		/* noreply writes alone: a pure ACK from here, or, when the
		 * segment's ACK is news to the kernel (I5) or the frame has no
		 * room, the segment to the kernel as old data, whose immediate
		 * ACK acknowledges it */
		p->noreply = 1;
		if (!p->on_ack && xkv_tcpx_emit(ctx, sc, 0) != XDP_TX)
			return XDP_DROP;
		p->r_len = 0;
	}
	__u32 held = p->on_ack ? 0 : cut, take = p->plen - cut;
	if (held)
		bpf_probe_read_kernel(f->hold, XKV_LEN(held, XKV_TCPX_HOLD_MAX), p->hold_b);
	__u64 now = bpf_ktime_get_ns();
	tcpx_mark_answer(sc, now);
	bpf_spin_lock(&f->lock);
	if (p->merge) {
		/* one answer from the old one's start to this segment's end:
		 * the points before it (dc_prev, ds_prev, s_k, s_wire, c_start)
		 * stay; still unacknowledged (a noreply segment among them too) */
		f->r_len += rl;
	} else {
		f->dc_prev = f->dc;
		f->ds_prev = f->ds;
		f->s_k = p->r_seq - f->ds;
		f->s_wire = p->r_seq;
		f->c_start = p->seq;
		f->r_len = rl;
	}
	f->dc += take;
	f->ds += rl;
	f->c_end = p->seq + take;
	f->held = held;
	if (cut && !held && seq_before(f->passed_end, p->seq + p->plen))
		f->passed_end = p->seq + p->plen; /* the cut request handed to the kernel */
	if (p->ts_at)
		f->ts_recent = p->tsval;
	f->replay_ns = now;
	f->proto = p->proto; /* learnt by the scan, where the flow did not know it */
	f->flags = (f->flags & ~(XKV_TCPX_F_ACKED | XKV_TCPX_F_ON_ACK | XKV_TCPX_F_NOREPLY)) |
		   XKV_TCPX_F_ANSWERED | (p->on_ack ? XKV_TCPX_F_ON_ACK : 0) |
		   (p->noreply && !p->merge ? XKV_TCPX_F_ACKED | XKV_TCPX_F_NOREPLY : 0);
	bpf_spin_unlock(&f->lock);
	st->v[XKV_STAT_tcpx_answered] += p->pipe_n;
	if (held)
		stat_inc(st, XKV_STAT_tcpx_held);
	if (p->pipe_n > 1)
		stat_inc(st, XKV_STAT_tcpx_pipelined);
	if (!p->on_ack)
		return XDP_TX;
	/* to the kernel as bytes it has (below rcv_nxt): it takes the ACK
	 * and acknowledges the duplicate at once */
	struct tcpx_offs cur;
	tcpx_offs_read(f, &cur);
	xkv_tcpx_translate_in(ctx, sc, &cur);
	return XDP_PASS;
}

#endif
