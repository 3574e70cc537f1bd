/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, the receive side: on a connection `xdpkv serve`
 * accepted, a client segment that is exactly one get, set or delete is
 * answered here (XDP_TX) when nothing can reorder the stream (the
 * invariants below); every later segment of the flow is translated
 * (sequence, acknowledgement, SACK blocks) so that the kernel's socket
 * never sees the answered exchange.  tcpx_seg.bpf.h reads and rewrites the
 * segment, tcpx_tc.bpf.h translates the other way; tcpx.h has the
 * numbering.  Expects prelude.bpf.h, the store and xdp.bpf.h's steps
 * before it.
 *
 * A segment is answered only when (docs/architecture.md, "TCP in the
 * driver hook"):
 *   I1 its flags are ACK (PSH), its options only timestamps, SACK, NOP;
 *   I2 it acknowledges every byte injected before (the flow's last reply);
 *   I3 translated, it is the socket's next byte (seq == rcv_nxt), nothing
 *      is out of order, serve has read everything (copied_seq == rcv_nxt);
 *   I4 serve has answered every byte it read (tcp_paid == bytes_received:
 *      it publishes that after the replies are in the socket);
 *   I5 the kernel has nothing unsent, and the segment acknowledges all it
 *      sent (ack == snd_nxt == write_seq).  If that is news to the kernel
 *      (snd_una < snd_nxt), the segment is not dropped: it goes to the
 *      kernel as old data (its bytes taken out first), which the kernel
 *      acknowledges at once (a duplicate), and that acknowledgement takes
 *      the reply out (tcpx_tc.bpf.h, XKV_TCPX_F_ON_ACK) — no ACK is lost;
 *   I6 it holds one whole request the fast path answers, not noreply, and
 *      its reply fits one segment (the MSS, the client's window);
 *   I7 the access lists, the rate limit and SASL allow it as on UDP.
 * Otherwise XDP_PASS, translated.  A retransmitted answered request whose
 * reply the client has not acknowledged gets the same reply bytes again. */
#ifndef XDPKV_TCPX_XDP_BPF_H
#define XDPKV_TCPX_XDP_BPF_H

#include <bpf/bpf_core_read.h>
#include "xdp.bpf.h"
#include "tcp.bpf.h" /* tcp_slots, tcp_paid */
#include "tcpx_seg.bpf.h"

/* The responder's programs, tail-called (xdp_main.bpf.h; put there by
 * attach, cli/xdpprog.c): [0] xdpkv_tcpx, the segment; [1] xdpkv_tcpx_run,
 * the request of a segment found answerable. */
#define XKV_TCPX_PROG_SEG 0
#define XKV_TCPX_PROG_RUN 1
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} tcpx_progs SEC(".maps");

/* The slot serve gave the connection (tcpfast.h): has serve answered
 * every byte the kernel received (I4)? */
static __always_inline int tcpx_serve_idle(struct tcp_sock___xkv *tp)
{
	__u64 cookie = tp->inet_conn.icsk_inet.sk.__sk_common.skc_cookie.counter;
	__u32 *slot = bpf_map_lookup_elem(&tcp_slots, &cookie);
	if (!slot)
		return 0;
	__u64 *paid = bpf_map_lookup_elem(&tcp_paid, slot);
	if (!paid)
		return 0;
	/* the byte count first, then what serve published (it publishes after
	 * its replies are in the socket: read before snd_nxt and write_seq) */
	__u64 got = tp->bytes_received;
	return __sync_fetch_and_add(paid, 0) == got;
}

#define TCPX_REFUSE(why) ({ stat_inc(st, XKV_STAT_tcpx_##why); XKV_NEXT; })

/* The reply's header fields from the socket: its place in the wire's
 * numbering, the acknowledgement of the request, the receive window, the
 * timestamps (TSval from the socket's clock, never behind what the client
 * echoes), and how many bytes it may carry. */
static __always_inline void tcpx_reply_fields(struct xkv_scratch *sc, struct tcp_sock___xkv *tp,
					      __u32 s_wire, __u32 ack)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 wscale = BPF_CORE_READ_BITFIELD(tp, rx_opt.rcv_wscale);
	__u32 sscale = BPF_CORE_READ_BITFIELD(tp, rx_opt.snd_wscale);
	__u32 used = tp->rcv_nxt - tp->rcv_wup, wnd = tp->rcv_wnd;

	wnd = used < wnd ? (wnd - used) >> wscale : 0;
	p->r_win = wnd > 0xffff ? 0xffff : wnd;
	p->r_seq = s_wire;
	p->r_ack = ack;
	p->r_has_ts = p->ts_at != 0;
	p->r_tsecr = p->tsval;
	p->r_tsval = (__u32)(tp->tcp_mstamp / 1000) + tp->tsoffset;
	if (seq_before(p->r_tsval, p->tsecr))
		p->r_tsval = p->tsecr;
	__u32 room = tp->mss_cache, cwin = (__u32)p->win << sscale;
	if (cwin < room)
		room = cwin;
	p->r_room = room;
}

/* Send the flow's last reply again, at the same place, with the same bytes
 * (its request came again and the client has not acknowledged it).  Global,
 * as the answer below: verified once, apart from the paths that lead to it. */
__attribute__((noinline)) int xkv_tcpx_replay(struct xdp_md *ctx, struct xkv_scratch *sc,
					      const struct tcpx_offs *o)
{
	__u32 zero = 0;
	if (!ctx || !sc || !o)
		return XDP_PASS;
	/* the key on the stack: 6.1 takes no map key from an argument's memory */
	struct xkv_tcpx_key k = sc->tx.key;
	struct xkv_stats *st = bpf_map_lookup_elem(&stats, &zero);
	struct xkv_tcpx_flow *f = bpf_map_lookup_elem(&tcpx_flows, &k);
	if (!st || !f)
		return XDP_PASS;
	struct tcp_sock___xkv *tp = NULL;
	struct bpf_sock *sk = tcpx_sock(ctx, sc, &tp);
	int act = XDP_DROP;

	if (!sk) {
		stat_inc(st, XKV_STAT_tcpx_dup_dropped);
		return XDP_DROP;
	}
	if (tp) {
		__u32 len = o->r_len;
		tcpx_reply_fields(sc, tp, o->s_wire, tcpx_ack_out(o, tp->rcv_nxt, 0));
		sc->tx.r_room = XKV_TCPX_REPLY_MAX;
		if (len && len <= XKV_TCPX_REPLY_MAX &&
		    !bpf_probe_read_kernel(&sc->reply[XKV_TEXT], XKV_LEN(len, XKV_TCPX_REPLY_MAX), f->r)) {
			sc->tx.on = 1;
			act = xkv_tcpx_emit(ctx, sc, len);
		}
	}
	bpf_sk_release(sk);
	stat_inc(st, XKV_STAT_tcpx_replayed);
	if (act == XDP_TX && !sc->tx.on_ack)
		return XDP_TX;
	/* no room in this frame: the request to the kernel as bytes it has,
	 * and the reply on its acknowledgement (as for an answer, I5) */
	bpf_spin_lock(&f->lock);
	f->flags |= XKV_TCPX_F_ON_ACK;
	bpf_spin_unlock(&f->lock);
	xkv_tcpx_translate_in(ctx, sc, o);
	return XDP_PASS;
}

/* The request in sc->req answered by the fast path's own steps (xdp.bpf.h),
 * the reply a TCP segment (sc->tx.on): XDP_TX, or XKV_NEXT when it is not
 * one this path answers (I6, I7) or the store was busy (then nothing was
 * changed). */
static __always_inline int tcpx_run(struct xdp_md *ctx, struct xkv_scratch *sc, struct xkv_stats *st)
{
	struct xdp_req q = { .sc = sc, .st = st, .tlen = sc->tx.plen };
	struct xkv_req *r = &sc->pr;
	__u32 zero = 0;
	int keyed = 0, act;

	q.h = bpf_map_lookup_elem(&host, &zero);
	if (XKV_GUARDED) {
		if (!q.h || (q.h->flags & XKV_HOST_AUTH))
			return TCPX_REFUSE(refused_acl);
		if (q.h->flags & XKV_HOST_SLOW_ALL) { /* as xdpkv()'s */
			stat_inc(st, q.h->flags & XKV_HOST_FLUSHING ? XKV_STAT_pass_flush
								     : XKV_STAT_pass_detail);
			return XKV_NEXT;
		}
		if (!acl_allowed(sc))
			return TCPX_REFUSE(refused_acl);
		if (cfg.rate_limit && !rate_ok(sc, q.now = bpf_ktime_get_ns()))
			return TCPX_REFUSE(refused_acl);
	}
	if (sc->req[0] == XKV_BIN_REQ)
		return TCPX_REFUSE(refused_shape);
	struct get_ctx g = { .sc = sc, .st = st, .now = q.now, .o = XKV_TEXT };
	sc->tx.on = 1;
	if (xdp_quick_get(&q, &g)) {
		act = xdp_get_reply(ctx, &q, &g);
	} else {
		if (!(cfg.flags & XKV_CFG_BINARY_KEYS))
			keyed = xkv_quick_set_req(sc, q.tlen);
		int err = keyed ? XKV_OK : xkv_parse_req(sc, q.tlen);
		if (err || r->op > XKV_OP_FAST_LAST || r->op == XKV_OP_NONE || r->next != q.tlen ||
		    r->too_many || r->noreply)
			return TCPX_REFUSE(refused_shape);
		if (XKV_GUARDED && xkv_op_writes(r->op) && !acl_has(sc, &acl_write))
			return TCPX_REFUSE(refused_acl);
		if (q.h && (q.h->flags & XKV_HOST_PAUSE_WRITES) && xkv_op_writes(r->op))
			return TCPX_REFUSE(refused_shape);
#ifdef XKV_PERCPU
		/* a per-CPU store: a set here writes this CPU's copy only, and
		 * serve's reads on the connection would miss it (the verdict's
		 * rule, tcp.bpf.h); serve writes every CPU's copy */
		if (xkv_op_writes(r->op))
			return TCPX_REFUSE(refused_shape);
#endif
		if (r->op == XKV_OP_GET) {
			xkv_op_get(&g);
			act = xdp_get_reply(ctx, &q, &g);
		} else {
			act = xdp_write(ctx, &q, keyed);
		}
	}
	if (act == XDP_TX)
		return XDP_TX;
	return TCPX_REFUSE(refused_room);
}

/* I2-I5 on the socket, then the request run; on XDP_TX the flow takes the
 * answer as its new correction point.  Inline, not a global function: its
 * tail call must be the program's own (made from a global subprogram, the
 * responder stalled a connection after its first answer on 6.18:
 * tests/e2e/tcpxdp.sh). */
static __always_inline int tcpx_answer(struct xdp_md *ctx, struct xkv_scratch *sc,
				       struct xkv_stats *st, const struct tcpx_offs *o)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	if (p->odd || (p->fl & ~TCPX_PSH) != TCPX_ACK)
		return TCPX_REFUSE(refused_shape);
	if (p->plen > XKV_REQ_MAX)
		return TCPX_REFUSE(refused_shape);
	if (!(o->flags & XKV_TCPX_F_ACKED))
		return TCPX_REFUSE(refused_unacked);
	/* bytes of it, or after it, handed to the kernel and not yet in
	 * rcv_nxt (a copy on its way through GRO or the backlog) */
	if (seq_before(p->seq, o->passed_end))
		return TCPX_REFUSE(refused_order);
	__u32 kseq = p->seq - o->dc, kack = tcpx_ack_in(o, p->ack);
	struct tcp_sock___xkv *tp = NULL;
	struct bpf_sock *sk = tcpx_sock(ctx, sc, &tp);
	if (!sk)
		return TCPX_REFUSE(refused_socket);
	int act = XKV_NEXT;
	if (!tp || tp->inet_conn.icsk_inet.sk.__sk_common.skc_state != XKV_TCP_ESTABLISHED) {
		act = TCPX_REFUSE(refused_socket);
		goto out;
	}
	__u32 rcv_nxt = tp->rcv_nxt;
	if (kseq != rcv_nxt || tp->copied_seq != rcv_nxt || tp->out_of_order_queue.rb_node) {
		act = TCPX_REFUSE(refused_order);
		goto out;
	}
	if (!tcpx_serve_idle(tp)) {
		act = TCPX_REFUSE(refused_serve);
		goto out;
	}
	__u32 snd_nxt = tp->snd_nxt;
	if (tp->write_seq != snd_nxt || kack != snd_nxt) {
		act = TCPX_REFUSE(refused_kernel);
		goto out;
	}
	p->on_ack = tp->snd_una != snd_nxt;
	if (!p->ts_at && BPF_CORE_READ_BITFIELD(tp, rx_opt.tstamp_ok)) {
		act = TCPX_REFUSE(refused_shape);
		goto out;
	}
	tcpx_reply_fields(sc, tp, snd_nxt + o->ds, p->seq + p->plen);
	bpf_sk_release(sk);
	sk = NULL;
	if (p->r_room > XKV_TCPX_REPLY_MAX)
		p->r_room = XKV_TCPX_REPLY_MAX;
	__u32 n = p->plen;
	barrier_var(n);
	if (n > XKV_REQ_MAX)
		return TCPX_REFUSE(refused_shape);
	barrier_var(n);
	if (n == 0 || bpf_xdp_load_bytes(ctx, p->l4 + p->doff, sc->req, XKV_LEN(n, XKV_REQ_MAX)))
		return TCPX_REFUSE(refused_shape);
	p->r_len = 0;
	/* the request itself in a program of its own (verified apart) */
	bpf_tail_call(ctx, &tcpx_progs, XKV_TCPX_PROG_RUN);
	return TCPX_REFUSE(refused_room);
out:
	if (sk)
		bpf_sk_release(sk);
	return act;
}

/* The request in sc->req run (tcpx_run); on XDP_TX the flow takes the
 * answer as its new correction point.  The second half of an answer, in
 * its own program (xdpkv_tcpx_run), so that the first half's checks and
 * the request's steps are each verified within the budget. */
static __always_inline int tcpx_commit(struct xdp_md *ctx, struct xkv_scratch *sc,
				       struct xkv_stats *st, struct xkv_tcpx_flow *f)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	int act = tcpx_run(ctx, sc, st);
	if (act != XDP_TX)
		return act;
	/* the reply text, kept for a replay */
	__u32 rl = p->r_len;
	if (rl > XKV_TCPX_REPLY_MAX)
		rl = XKV_TCPX_REPLY_MAX;
	if (rl)
		bpf_probe_read_kernel(f->r, XKV_LEN(rl, XKV_TCPX_REPLY_MAX), &sc->reply[XKV_TEXT]);
	bpf_spin_lock(&f->lock);
	f->dc_prev = f->dc;
	f->dc += p->plen;
	f->ds_prev = f->ds;
	f->s_k = p->r_seq - f->ds;
	f->s_wire = p->r_seq;
	f->ds += rl;
	f->c_start = p->seq;
	f->c_end = p->seq + p->plen;
	f->r_len = rl;
	f->flags = (f->flags & ~(XKV_TCPX_F_ACKED | XKV_TCPX_F_ON_ACK)) | XKV_TCPX_F_ANSWERED |
		   (p->on_ack ? XKV_TCPX_F_ON_ACK : 0);
	bpf_spin_unlock(&f->lock);
	stat_inc(st, XKV_STAT_tcpx_answered);
	if (!p->on_ack)
		return XDP_TX;
	/* to the kernel as bytes it has (below rcv_nxt): it takes the ACK
	 * and acknowledges the duplicate at once */
	struct tcpx_offs now;
	tcpx_offs_read(f, &now);
	xkv_tcpx_translate_in(ctx, sc, &now);
	return XDP_PASS;
}

/* The segment on to the kernel, translated; what it hands over counted
 * (passed_end). */
static __always_inline int tcpx_pass(struct xdp_md *ctx, struct xkv_scratch *sc,
				     struct xkv_tcpx_flow *f, const struct tcpx_offs *o)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	if (p->plen) {
		__u32 end = p->seq + p->plen;
		bpf_spin_lock(&f->lock);
		if (seq_before(f->passed_end, end))
			f->passed_end = end;
		bpf_spin_unlock(&f->lock);
	}
	if (o->flags & XKV_TCPX_F_ANSWERED)
		xkv_tcpx_translate_in(ctx, sc, o);
	return XDP_PASS;
}

/* The client's acknowledgement and FIN into the flow's flags; 1 when the
 * flow is done with (its close acknowledged both ways, or a RST). */
static __always_inline int tcpx_track(struct xkv_tcpx_flow *f, struct xkv_tcpx_seg *p)
{
	int done = 0;

	bpf_spin_lock(&f->lock);
	if ((p->fl & TCPX_ACK) && !seq_before(p->ack, f->s_wire + f->r_len))
		f->flags |= XKV_TCPX_F_ACKED;
	if ((p->fl & TCPX_ACK) && (f->flags & XKV_TCPX_F_FIN_K) && !seq_before(p->ack, f->fin_k)) {
		if (f->flags & XKV_TCPX_F_FIN_C)
			done = 1; /* the last ACK of a close the client began */
		f->flags |= XKV_TCPX_F_FIN_K_ACKED;
	}
	if (p->fl & TCPX_FIN)
		f->flags |= XKV_TCPX_F_FIN_C;
	bpf_spin_unlock(&f->lock);
	return done || (p->fl & TCPX_RST);
}

/* A TCP segment to the service port: answered (XDP_TX), a repeat dropped or
 * answered again, or passed on translated.  XKV_NEXT: not TCP to the port.
 * Inline in xdpkv(): a set writes the entry's data past struct xkv_scratch
 * (the map's value is sized at load), which a global function's argument
 * type would not allow. */
static __always_inline int xkv_tcpx(struct xdp_md *ctx, struct xkv_scratch *sc)
{
	__u32 zero = 0;

	if (tcpx_parse(ctx, sc))
		return XKV_NEXT;
	if (cfg.flags & XKV_CFG_NO_XDP_TCP)
		return XDP_PASS;
	struct xkv_stats *st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return XDP_PASS;
	struct xkv_tcpx_seg *p = &sc->tx;
	struct xkv_tcpx_flow *f = bpf_map_lookup_elem(&tcpx_flows, &p->key);
	if (p->fl & TCPX_SYN) {
		/* a new connection on these addresses: what was kept is stale */
		if (f)
			bpf_map_delete_elem(&tcpx_flows, &p->key);
		return XDP_PASS;
	}
	if (!f && p->plen && !(p->fl & TCPX_RST)) {
		/* the connection's first data: its state from here on (nothing
		 * injected yet); a full table: never answered, never translated */
		struct tcpx_blank_flow *blank = bpf_map_lookup_elem(&tcpx_blank, &zero);
		if (!blank || bpf_map_update_elem(&tcpx_flows, &p->key, blank, BPF_NOEXIST)) {
			stat_inc(st, XKV_STAT_tcpx_refused_table);
			return XDP_PASS;
		}
		f = bpf_map_lookup_elem(&tcpx_flows, &p->key);
		if (!f)
			return XDP_PASS;
		bpf_spin_lock(&f->lock);
		f->flags = XKV_TCPX_F_ACKED;
		f->passed_end = p->seq;
		bpf_spin_unlock(&f->lock);
	}
	if (!f)
		return XDP_PASS; /* nothing answered on it: nothing to translate */
	struct tcpx_offs o = {};
	{
		if (tcpx_track(f, p)) {
			tcpx_offs_read(f, &o);
			if (o.flags & XKV_TCPX_F_ANSWERED)
				xkv_tcpx_translate_in(ctx, sc, &o);
			bpf_map_delete_elem(&tcpx_flows, &p->key);
			return XDP_PASS;
		}
		tcpx_offs_read(f, &o);
		/* a repeat of the answered request (or a part of it) */
		if (p->plen && (o.flags & XKV_TCPX_F_ANSWERED) && seq_before(p->seq, o.c_end) &&
		    seq_before(o.c_start, p->seq + p->plen)) {
			if (!(o.flags & XKV_TCPX_F_ACKED))
				return xkv_tcpx_replay(ctx, sc, &o);
			if (!seq_before(o.c_end, p->seq + p->plen)) {
				stat_inc(st, XKV_STAT_tcpx_dup_dropped);
				return XDP_DROP; /* nothing in it the kernel lacks */
			}
		}
	}
	if (p->plen && !(p->fl & (TCPX_FIN | TCPX_RST))) {
		int act = tcpx_answer(ctx, sc, st, &o);
		if (act != XKV_NEXT)
			return act;
	}
	return tcpx_pass(ctx, sc, f, &o);
}

#endif
