/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, the receive side: on a connection `xdpkv serve`
 * holds or is about to accept, a client segment of whole gets, sets and
 * deletes (text or binary) is answered here (XDP_TX) when nothing can
 * reorder the stream (the
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
 *   I2 it acknowledges every byte injected before (the flow's last reply),
 *      or it extends that answer: it starts where the answered requests
 *      end and acknowledges everything before their reply (tcpx_answer);
 *   I3 translated, it is the socket's next byte (seq == rcv_nxt), nothing
 *      is out of order, serve has read everything (copied_seq == rcv_nxt);
 *   I4 serve has answered every byte it read (tcp_paid == bytes_received:
 *      it publishes that after the replies are in the socket; before its
 *      accept, nothing received: bytes_received == 0);
 *   I5 the kernel has nothing unsent, and the segment acknowledges all it
 *      sent (ack == snd_nxt == write_seq).  If that is news to the kernel
 *      (snd_una < snd_nxt), the segment is not dropped: it goes to the
 *      kernel as old data (its bytes taken out first), which the kernel
 *      acknowledges at once (a duplicate), and that acknowledgement takes
 *      the reply out (tcpx_tc.bpf.h, XKV_TCPX_F_ON_ACK) — no ACK is lost;
 *   I6 it holds whole requests the fast path answers (up to
 *      XKV_TCPX_PIPE_MAX; no read after a write) and at most a request
 *      cut at its end, which is held (tcpx.h), and their replies fit
 *      one segment (the MSS, the client's window): tcpx_pipe.bpf.h; noreply
 *      writes alone have none: a pure ACK from here acknowledges them (or,
 *      their ACK news to the kernel, the I5 way);
 *   I7 the access lists and SASL allow it as on UDP (the rate limit covers
 *      UDP alone: docs/security.md).
 * Otherwise XDP_PASS, translated.  A retransmitted answered request whose
 * reply the client has not acknowledged gets the same reply bytes again. */
#ifndef XDPKV_TCPX_XDP_BPF_H
#define XDPKV_TCPX_XDP_BPF_H

#include <bpf/bpf_core_read.h>
#include "xdp.bpf.h"
#include "tcp.bpf.h" /* tcp_slots, tcp_paid */
#include "tcpx_seg.bpf.h"
#include "tcpx_pipe.bpf.h"

/* The responder's programs, tail-called (xdp_main.bpf.h; put there by
 * attach, cli/xdpprog.c): [0] xdpkv_tcpx, the segment; [1] xdpkv_tcpx_run,
 * a text request of a segment found answerable; [2] xdpkv_tcpx_bin, a
 * binary request; [3] xdpkv_tcpx_fin, the answer sent after the last
 * request; [4] xdpkv_tcpx_meta, a meta command.  Each is verified apart, within the budget: a request's many
 * ends do not multiply the answer's paths, and the value copies of a text
 * and a binary get are not in one program. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, XKV_TCPX_PROGS); /* tcpx.h: XKV_TCPX_PROG_* */
	__type(key, __u32);
	__type(value, __u32);
} tcpx_progs SEC(".maps");

/* On to the program of the segment's next request (sc->tx.pipe_i), or to
 * xdpkv_tcpx_fin for the answer after the last.  Returns only when the
 * tail call fails, which it cannot: the chain (xdpkv, xdpkv_tcpx, a
 * program a request, xdpkv_tcpx_fin) makes at most XKV_TCPX_PIPE_MAX + 2
 * tail calls, the kernel's limit (33), and the programs are in the array
 * while attached. */
static __always_inline void tcpx_chain(struct xdp_md *ctx, struct xkv_scratch *sc)
{
	__u32 i = sc->tx.pipe_i, prog = XKV_TCPX_PROG_FIN;

	if (i < sc->tx.pipe_n)
		prog = (sc->tx.pipe_bin >> (i & (XKV_TCPX_PIPE_SLOTS - 1))) & 1	 ? XKV_TCPX_PROG_BIN
		     : (sc->tx.pipe_meta >> (i & (XKV_TCPX_PIPE_SLOTS - 1))) & 1 ? XKV_TCPX_PROG_META
									     : XKV_TCPX_PROG_RUN;
	bpf_tail_call(ctx, &tcpx_progs, prog);
}

/* The slot serve gave the connection (tcpfast.h): has serve answered
 * every byte the kernel received (I4)?  A connection serve has not taken
 * yet (its first request comes before serve's accept and the slot it
 * publishes) has nothing owed while the kernel has received nothing. */
static __always_inline int tcpx_serve_idle(struct tcp_sock___xkv *tp)
{
	__u64 cookie = tp->inet_conn.icsk_inet.sk.__sk_common.skc_cookie.counter;
	__u32 *slot = bpf_map_lookup_elem(&tcp_slots, &cookie);
	if (!slot)
		return tp->bytes_received == 0;
	__u64 *paid = bpf_map_lookup_elem(&tcp_paid, slot);
	if (!paid)
		return 0;
	/* the byte count first, then what serve published (it publishes after
	 * its replies are in the socket: read before snd_nxt and write_seq) */
	__u64 got = tp->bytes_received;
	return __sync_fetch_and_add(paid, 0) == got;
}

/* The socket the segment is for, read into sc->tx.sk: which kind it is,
 * and for a connection's socket what the kernel would check the segment
 * against (tcpx_acceptable).  The responder decides on this snapshot; an
 * answer reads the socket again (tcpx_answer).  Global: verified once. */
__attribute__((noinline)) int xkv_tcpx_look(struct xdp_md *ctx, struct xkv_scratch *sc)
{
	if (!ctx || !sc)
		return 0;
	struct xkv_tcpx_seg *p = &sc->tx;
	struct tcp_sock___xkv *tp = NULL;

	__builtin_memset(&p->sk, 0, sizeof(p->sk));
	struct bpf_sock *sk = tcpx_sock(ctx, sc, &tp);
	if (!sk)
		return 0;
	__u32 state = sk->state;
	if (state == XKV_TCP_TIME_WAIT) {
		p->sk.found = XKV_TCPX_SK_TW;
	} else if (!tp || state == XKV_TCP_LISTEN || state == XKV_TCP_NEW_SYN_RECV ||
		   state == XKV_TCP_SYN_RECV || state == XKV_TCP_SYN_SENT) {
		p->sk.found = XKV_TCPX_SK_OTHER;
	} else {
		p->sk.found = XKV_TCPX_SK_CONN;
		p->sk.established = state == XKV_TCP_ESTABLISHED;
		p->sk.fresh = tp->bytes_received == 0;
		p->sk.rcv_nxt = tp->rcv_nxt;
		p->sk.rcv_wup = tp->rcv_wup;
		p->sk.rcv_wnd = tp->rcv_wnd;
		p->sk.snd_una = tp->snd_una;
		p->sk.snd_nxt = tp->snd_nxt;
		p->sk.max_window = tp->max_window;
		p->sk.write_seq = tp->write_seq;
		p->sk.snd_wnd = tp->snd_wnd;
		p->sk.snd_wscale = BPF_CORE_READ_BITFIELD(tp, rx_opt.snd_wscale);
		p->sk.ts_recent = BPF_CORE_READ(tp, rx_opt.ts_recent);
		p->sk.tstamp_ok = BPF_CORE_READ_BITFIELD(tp, rx_opt.tstamp_ok);
		__u64 cookie = tp->inet_conn.icsk_inet.sk.__sk_common.skc_cookie.counter;
		p->sk.cookie = cookie;
		p->sk.served = bpf_map_lookup_elem(&tcp_slots, &cookie) != NULL;
	}
	bpf_sk_release(sk);
	return p->sk.found;
}

/* What the kernel would accept of the segment on its connection's socket
 * (sc->tx.sk), its numbers translated with the flow's offsets o: sequence
 * within the receive window (tcp_sequence), acknowledgement not past what
 * was sent nor older than the largest window (RFC 5961 3.2, tcp_ack), a
 * timestamp not older than the newest seen (PAWS: the kernel's ts_recent,
 * or the last answered request's, which the kernel never saw), and right
 * checksums.  1: accepted.  Global: verified once. */
__attribute__((noinline)) int xkv_tcpx_acceptable(struct xdp_md *ctx, struct xkv_scratch *sc,
						  const struct tcpx_offs *o)
{
	if (!ctx || !sc || !o)
		return 0;
	struct xkv_tcpx_seg *p = &sc->tx;
	if (p->sk.found != XKV_TCPX_SK_CONN)
		return 0;
	__u32 end = p->seq + p->plen;
	__u32 kseq = tcpx_seq_in(o, p->seq, end);
	__u32 kend = kseq + p->plen + (p->fl & TCPX_FIN ? 1 : 0);
	/* a copy of the answered requests' first ones (an answer extended,
	 * tcpx_answer): the kernel would have taken the answered stretch as a
	 * whole, which ends at its rcv_nxt */
	if ((o->flags & XKV_TCPX_F_ANSWERED) && !seq_before(p->seq, o->c_start) && seq_before(end, o->c_end))
		kend = o->c_end - o->dc;
	__u32 used = p->sk.rcv_nxt - p->sk.rcv_wup, wnd = p->sk.rcv_wnd;
	wnd = used < wnd ? wnd - used : 0;
	if (seq_before(kend, p->sk.rcv_wup) || seq_before(p->sk.rcv_nxt + wnd, kseq))
		return 0;
	if (p->fl & TCPX_ACK) {
		__u32 kack = tcpx_ack_in(o, p->ack);
		if (seq_before(p->sk.snd_nxt, kack) ||
		    seq_before(kack, p->sk.snd_una - p->sk.max_window))
			return 0;
	}
	if (p->sk.tstamp_ok && p->ts_at) {
		__u32 recent = p->sk.ts_recent;
		if ((o->flags & XKV_TCPX_F_ANSWERED) && seq_before(recent, o->ts_recent))
			recent = o->ts_recent;
		if ((__s32)(recent - p->tsval) > 1)
			return 0;
	}
	return xkv_tcpx_csum_ok(ctx, sc);
}

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
	/* The last reply not acknowledged yet (a client that pipelines on
	 * TCP_NODELAY: libmemcached's getkq, then its noop): the segment
	 * extends that answer when it is the stream's next byte after it and
	 * acknowledges everything before that reply — the two then stand as
	 * one answered segment would: one correction point, the replies kept
	 * as one for a replay (tcpx_commit).  I5 below checks that the kernel
	 * sent nothing since. */
	p->merge = !(o->flags & XKV_TCPX_F_ACKED);
	if (p->merge && (!(o->flags & XKV_TCPX_F_ANSWERED) || (o->flags & XKV_TCPX_F_ON_ACK) ||
			 p->seq != o->c_end || seq_before(p->ack, o->s_wire)))
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
	/* extending an answer: the replies kept together fit one segment (a
	 * replay sends them at once), so the window from the client's ACK,
	 * which is not past the old reply's start, holds them too */
	if (p->merge)
		p->r_room = p->r_room > o->r_len ? p->r_room - o->r_len : 0;
	if (!tcpx_guard(sc, st))
		return XKV_NEXT;
	p->proto = o->proto;
	if (!xkv_tcpx_scan(ctx, sc))
		return TCPX_REFUSE(refused_shape);
	p->r_len = 0;
	/* the requests in programs of their own (verified apart), one a
	 * tail call (tcpx_pipe.bpf.h) */
	tcpx_chain(ctx, sc);
	return TCPX_REFUSE(refused_room);
out:
	if (sk)
		bpf_sk_release(sk);
	return act;
}

/* The segment on to the kernel, translated; what it hands over counted
 * (passed_end).  Held bytes (tcpx.h) are the kernel's once a segment that
 * holds them all goes (the next one with them put in front, or a copy of
 * the answered one); one with more than a byte of them but not all is
 * dropped (no client sends that: they were acknowledged; a byte alone is
 * a keepalive probe's, which the kernel answers). */
static __always_inline int tcpx_pass(struct xdp_md *ctx, struct xkv_scratch *sc,
				     struct xkv_tcpx_flow *f, const struct tcpx_offs *o)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	if (p->plen) {
		__u32 end = p->seq + p->plen, h0 = o->c_end, h1 = o->c_end + o->held;
		int drop = 0;
		bpf_spin_lock(&f->lock);
		if (o->held && seq_before(p->seq, h1) && seq_before(h0, end)) {
			if (seq_before(h0, p->seq) || seq_before(end, h1))
				drop = p->plen > 1;
			else if (f->held == o->held && f->c_end == o->c_end)
				f->held = 0;
		}
		if (!drop && seq_before(f->passed_end, end))
			f->passed_end = end;
		bpf_spin_unlock(&f->lock);
		if (drop)
			return XDP_DROP;
	}
	if (o->flags & XKV_TCPX_F_ANSWERED)
		xkv_tcpx_translate_in(ctx, sc, o);
	return XDP_PASS;
}

/* The client's acknowledgement and FIN into the flow's flags (a segment
 * the kernel accepts: the flow's end is its socket's, never a segment's). */
static __always_inline void tcpx_track(struct xkv_tcpx_flow *f, struct xkv_tcpx_seg *p)
{
	__u64 now = bpf_ktime_get_ns();

	bpf_spin_lock(&f->lock);
	if ((p->fl & TCPX_ACK) && !seq_before(p->ack, f->s_wire + f->r_len))
		f->flags |= XKV_TCPX_F_ACKED;
	if (p->sk.served)
		f->flags |= XKV_TCPX_F_SERVED;
	/* a socket's cookie is made when first asked for: 0 until serve's
	 * accept asks (SO_COOKIE), which a flow made before it must learn */
	if (p->sk.cookie)
		f->cookie = p->sk.cookie;
	if (p->fl & TCPX_FIN)
		f->flags |= XKV_TCPX_F_FIN_C;
	f->seen_ns = now;
	bpf_spin_unlock(&f->lock);
}

/* The connection's first data, in order, on an established socket (one
 * serve accepted, or one waiting for its accept: a one-shot client's
 * request comes before serve can publish the slot), from an allowed
 * source, the kernel accepting it: its flow from here on (nothing injected
 * yet; what is handed to the kernel is tracked from p->seq).  NULL: no flow
 * (never answered, never translated).  An established socket took a whole
 * handshake: no outsider makes one. */
static __always_inline struct xkv_tcpx_flow *tcpx_flow_new(struct xdp_md *ctx, struct xkv_scratch *sc,
							  struct xkv_stats *st)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	__u32 zero = 0;

	if (!p->plen || (p->fl & (TCPX_RST | TCPX_FIN | TCPX_SYN)) || !(p->fl & TCPX_ACK))
		return NULL;
	if (p->sk.found != XKV_TCPX_SK_CONN || !p->sk.established) {
		stat_inc(st, XKV_STAT_tcpx_refused_socket);
		return NULL;
	}
	if (XKV_GUARDED && !acl_allowed(sc)) {
		stat_inc(st, XKV_STAT_tcpx_refused_acl);
		return NULL;
	}
	struct tcpx_offs none = {};
	if (p->seq != p->sk.rcv_nxt || !xkv_tcpx_acceptable(ctx, sc, &none)) {
		stat_inc(st, XKV_STAT_tcpx_rejected);
		return NULL;
	}
	struct tcpx_blank_flow *blank = bpf_map_lookup_elem(&tcpx_blank, &zero);
	if (!blank || bpf_map_update_elem(&tcpx_flows, &p->key, blank, BPF_NOEXIST)) {
		stat_inc(st, XKV_STAT_tcpx_refused_table);
		return NULL;
	}
	struct xkv_tcpx_flow *f = bpf_map_lookup_elem(&tcpx_flows, &p->key);
	if (!f)
		return NULL;
	/* the connection's protocol, when this is its first byte */
	__u8 first = 0;
	__u32 proto = XKV_TCPX_PROTO_UNKNOWN;
	if (p->sk.fresh && !bpf_xdp_load_bytes(ctx, p->l4 + p->doff, &first, 1))
		proto = first == XKV_BIN_REQ ? XKV_TCPX_PROTO_BIN : XKV_TCPX_PROTO_TEXT;
	__u64 now = bpf_ktime_get_ns();
	bpf_spin_lock(&f->lock);
	f->flags = XKV_TCPX_F_ACKED | (p->sk.served ? XKV_TCPX_F_SERVED : 0);
	f->proto = proto;
	f->passed_end = p->seq;
	f->cookie = p->sk.cookie;
	f->seen_ns = now;
	bpf_spin_unlock(&f->lock);
	return f;
}

/* A repeat of the answered request (or a part of it).  Its reply not
 * acknowledged: sent again, at most once in XKV_TCPX_REPLAY_NS (as the
 * kernel would retransmit it; copies in between are dropped).  Its reply
 * acknowledged: a keepalive probe (a byte at most), or a copy of a noreply
 * write (whose acknowledgement was lost), goes to the kernel as old data,
 * which it acknowledges; a copy of more is dropped (nothing in it the
 * kernel lacks).  XKV_NEXT: not a repeat. */
static __always_inline int tcpx_repeat(struct xdp_md *ctx, struct xkv_scratch *sc, struct xkv_stats *st,
				       struct xkv_tcpx_flow *f, const struct tcpx_offs *o)
{
	struct xkv_tcpx_seg *p = &sc->tx;

	if (!p->plen || !(o->flags & XKV_TCPX_F_ANSWERED) || !seq_before(p->seq, o->c_end) ||
	    !seq_before(o->c_start, p->seq + p->plen))
		return XKV_NEXT;
	if (!(o->flags & XKV_TCPX_F_ACKED)) {
		__u64 now = bpf_ktime_get_ns();
		int due = 0;
		bpf_spin_lock(&f->lock);
		if (now - f->replay_ns >= XKV_TCPX_REPLAY_NS) {
			f->replay_ns = now;
			due = 1;
		}
		bpf_spin_unlock(&f->lock);
		if (due)
			return xkv_tcpx_replay(ctx, sc, o);
		stat_inc(st, XKV_STAT_tcpx_dup_dropped);
		return XDP_DROP;
	}
	if (p->plen <= 1 || (o->flags & XKV_TCPX_F_NOREPLY))
		return XKV_NEXT; /* to the kernel, which acknowledges it */
	if (!seq_before(o->c_end, p->seq + p->plen)) {
		stat_inc(st, XKV_STAT_tcpx_dup_dropped);
		return XDP_DROP;
	}
	return XKV_NEXT;
}

/* A pure ACK that acknowledges a reply injected here and nothing else the
 * kernel could use (was: the flow's flags before it; o: after it, its reply
 * acknowledged now): at the socket's rcv_nxt, no SACK, the kernel with nothing in flight
 * or unsent (the ACK is no news to it) and the window it has.  Dropped
 * (tcpx_acks_absorbed) instead of reaching the TCP stack as a duplicate.
 * Any other ACK goes on: one of the kernel's FIN, a keepalive's answer (it
 * acknowledges nothing new), a window update. */
static __always_inline int tcpx_ack_idle(struct xkv_scratch *sc, const struct tcpx_offs *o, __u32 was)
{
	struct xkv_tcpx_seg *p = &sc->tx;

	if (!(o->flags & XKV_TCPX_F_ACKED) || (was & (XKV_TCPX_F_ACKED | XKV_TCPX_F_ON_ACK)) ||
	    !(was & XKV_TCPX_F_ANSWERED) ||
	    p->plen || p->fl != TCPX_ACK || p->sack_n || p->odd || !p->sk.established)
		return 0;
	return tcpx_seq_in(o, p->seq, p->seq) == p->sk.rcv_nxt && tcpx_ack_in(o, p->ack) == p->sk.snd_nxt &&
	       p->sk.snd_una == p->sk.snd_nxt && p->sk.write_seq == p->sk.snd_nxt &&
	       ((__u32)p->win << (p->sk.snd_wscale & 15)) == p->sk.snd_wnd;
}

/* A TCP segment to the service port: answered (XDP_TX), a repeat dropped or
 * answered again, or passed on (translated where a flow has offsets).
 * XKV_NEXT: not TCP to the port.  Nothing changes on a segment the kernel
 * would not accept (tcpx_acceptable): it goes on translated, for the
 * kernel to drop and acknowledge as it does.  Inline in xdpkv_tcpx: a set
 * writes the entry's data past struct xkv_scratch (the map's value is
 * sized at load), which a global function's argument type would not
 * allow. */
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
	int found = xkv_tcpx_look(ctx, sc);
	if (p->fl & TCPX_SYN) {
		/* on a live connection the kernel answers it with a challenge
		 * ACK (RFC 5961 4.2), translated on its way out; a flow whose
		 * socket is gone (or in TIME-WAIT: the SYN may open a new
		 * connection on these addresses) is stale */
		if (f && found != XKV_TCPX_SK_CONN)
			bpf_map_delete_elem(&tcpx_flows, &p->key);
		return XDP_PASS;
	}
	if (!f)
		f = tcpx_flow_new(ctx, sc, st);
	if (!f)
		return XDP_PASS; /* nothing answered on it: nothing to translate */
	struct tcpx_offs o = {};
	tcpx_offs_read(f, &o);
	if (found == XKV_TCPX_SK_NONE || found == XKV_TCPX_SK_OTHER) {
		/* its socket is gone: so is the flow (the kernel answers the
		 * segment as it answers any for no connection) */
		bpf_map_delete_elem(&tcpx_flows, &p->key);
		return XDP_PASS;
	}
	/* a RST is the kernel's to judge (RFC 5961 3.2: exact, in the window:
	 * a challenge ACK, else dropped); in TIME-WAIT the numbers alone */
	if (found == XKV_TCPX_SK_TW || (p->fl & TCPX_RST) || !xkv_tcpx_acceptable(ctx, sc, &o)) {
		if (found != XKV_TCPX_SK_TW && !(p->fl & TCPX_RST))
			stat_inc(st, XKV_STAT_tcpx_rejected);
		if (o.flags & XKV_TCPX_F_ANSWERED)
			xkv_tcpx_translate_in(ctx, sc, &o);
		return XDP_PASS;
	}
	tcpx_track(f, p);
	__u32 was = o.flags; /* tcpx_track changes the flags alone */
	tcpx_offs_read(f, &o);
	if (tcpx_ack_idle(sc, &o, was)) {
		stat_inc(st, XKV_STAT_tcpx_acks_absorbed);
		return XDP_DROP;
	}
	int act = tcpx_repeat(ctx, sc, st, f, &o);
	if (act != XKV_NEXT)
		return act;
	/* the client's next bytes after held ones: those put in front */
	int alone = 0;
	if (o.held && (p->plen || (p->fl & TCPX_FIN)) && p->seq == o.c_end + o.held) {
		act = xkv_tcpx_prepend(ctx, sc, &o);
		if (act <= 0) {
			stat_inc(st, XKV_STAT_tcpx_held_dropped);
			return XDP_DROP; /* no room before it nor in it (sent again) */
		}
		alone = act == 2; /* they alone in its place: a cut request, the kernel's */
		if (alone)
			stat_inc(st, XKV_STAT_tcpx_held_alone);
	}
	if (p->plen && !(p->fl & TCPX_FIN) && !alone) {
		act = tcpx_answer(ctx, sc, st, &o);
		if (act != XKV_NEXT)
			return act;
	}
	return tcpx_pass(ctx, sc, f, &o);
}

#endif
