/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, the receive side: on a connection `xdpkv serve`
 * accepted, a client segment that is exactly one get, set or delete is
 * answered here (XDP_TX) when nothing can reorder the stream (the
 * invariants below); every later segment of the flow is translated
 * (sequence, acknowledgement, SACK blocks) so that the kernel's socket
 * never sees the answered exchange.  tcpx_tc.bpf.h translates the other
 * way; tcpx.h has the numbering.  Expects prelude.bpf.h, the store and
 * xdp.bpf.h's steps before it.
 *
 * A segment is answered only when (docs/architecture.md, "TCP in the
 * driver hook"):
 *   I1 its flags are ACK (PSH), its options only timestamps, SACK, NOP;
 *   I2 it acknowledges every byte injected before (the flow's last reply);
 *   I3 translated, it is the socket's next byte (seq == rcv_nxt), nothing
 *      is out of order, serve has read everything (copied_seq == rcv_nxt);
 *   I4 serve has answered every byte it read (tcp_paid == bytes_received:
 *      it publishes that after the replies are in the socket);
 *   I5 the kernel has nothing unsent or unacknowledged, and this segment
 *      acknowledges nothing new to it (ack == snd_una == snd_nxt ==
 *      write_seq): dropping the segment loses no acknowledgement;
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

/* The segment's options, parsed into sc->tx: timestamps and SACK blocks
 * located; anything else but NOP/EOL marks it odd (translated, never
 * answered). */
static __always_inline void tcpx_options(struct xdp_md *ctx, struct xkv_scratch *sc, __u32 at,
					 __u32 olen)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	__u8 *b = p->opt;

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
	if (bpf_xdp_load_bytes(ctx, at, b, n)) {
		p->odd = 1;
		return;
	}
	__u32 i = 0;
	for (int n = 0; n < 40; n++) {
		if (i >= olen)
			break;
		__u8 kind = b[i & 63];
		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= olen) {
			p->odd = 1;
			break;
		}
		__u8 len = b[(i + 1) & 63];
		if (len < 2 || i + len > olen) {
			p->odd = 1;
			break;
		}
		if (kind == 8 && len == 10) {
			p->ts_at = at + i + 2;
			__builtin_memcpy(&p->tsval, &b[(i + 2) & 31], 4);
			__builtin_memcpy(&p->tsecr, &b[(i + 6) & 31], 4);
			p->tsval = bpf_ntohl(p->tsval);
			p->tsecr = bpf_ntohl(p->tsecr);
		} else if (kind == 5 && (len == 10 || len == 18 || len == 26 || len == 34)) {
			p->sack_at = at + i + 2;
			p->sack_n = (len - 2) / 8;
		} else {
			p->odd = 1; /* MSS, window scale, SACK-permitted outside a SYN; MD5, AO, MPTCP ... */
		}
		i += len;
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
		ipl = bpf_ntohs(ip->tot_len);
		if (ipl < 40 || (void *)ip + ipl > data_end)
			return -1;
		ipl -= 20;
		a->family = 4;
		a->l3_len = 20;
		a->tos = ip->tos;
		__builtin_memcpy(a->src, &ip->saddr, 4);
		__builtin_memcpy(a->dst, &ip->daddr, 4);
		xkv_addr_from_v4(a->src16, &ip->saddr);
		xkv_addr_from_v4(p->key.local, &ip->daddr);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_TCP)
			return -1;
		th = (void *)(ip6 + 1);
		ipl = bpf_ntohs(ip6->payload_len);
		if (ipl < 20 || (void *)(ip6 + 1) + ipl > data_end)
			return -1;
		a->family = 6;
		a->l3_len = 40;
		a->tos = 0;
		__builtin_memcpy(&a->v6_first, ip6, 4);
		__builtin_memcpy(a->src, &ip6->saddr, 16);
		__builtin_memcpy(a->dst, &ip6->daddr, 16);
		__builtin_memcpy(a->src16, &ip6->saddr, 16);
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
	p->tsval = p->tsecr = 0;
	tcpx_options(ctx, sc, p->l4 + 20, doff - 20);
	return 0;
}

/* The segment, translated in place (sc->tx, the flow's offsets o): seq, ack
 * and SACK blocks, the checksum updated. */
static __always_inline void tcpx_translate_in(struct xdp_md *ctx, struct xkv_scratch *sc,
					      const struct tcpx_offs *o)
{
	struct xkv_tcpx_seg *p = &sc->tx;
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct tcphdr *th = data + (p->l4 & 127);

	if ((void *)(th + 1) > data_end)
		return;
	__u32 end = p->seq + p->plen;
	__u32 kseq = p->seq - (seq_before(o->c_start, end) ? o->dc : o->dc_prev);
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
	((__u8 *)h)[13] = TCPX_ACK | TCPX_PSH;
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
 * once.  XDP_PASS, the frame untouched, when it does not fit. */
__attribute__((noinline)) int xkv_tcpx_emit(struct xdp_md *ctx, struct xkv_scratch *sc, __u32 tlen)
{
	if (!ctx || !sc)
		return XDP_PASS;
	struct xkv_tcpx_seg *p = &sc->tx;
	if (tlen == 0 || tlen > p->r_room || tlen > XKV_TCPX_REPLY_MAX)
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
	/* an answer grows at the head only, so that a replay of it (the same
	 * request again: the same frame size) grows the same way; a replay
	 * may take the tail as well */
	if (xkv_put_l2l3(ctx, sc, l4len, IPPROTO_TCP, p->replay))
		return XDP_PASS;
	__u32 at = ETH_HLEN + sc->addr.l3_len;
	if (bpf_xdp_store_bytes(ctx, at, p->hdr, hl == 32 ? 32 : 20) ||
	    bpf_xdp_store_bytes(ctx, at + hl, &sc->reply[XKV_TEXT], tlen & 2047))
		return XDP_DROP; /* the frame is half rewritten: nothing sane to pass on */
	p->r_len = tlen;
	return XDP_TX;
}

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
 * (its request came again and the client has not acknowledged it). */
static __always_inline int tcpx_replay(struct xdp_md *ctx, struct xkv_scratch *sc,
				       struct xkv_stats *st, struct xkv_tcpx_flow *f,
				       const struct tcpx_offs *o)
{
	struct tcp_sock___xkv *tp = NULL;
	struct bpf_sock *sk = tcpx_sock(ctx, sc, &tp);
	int act = XDP_DROP;

	if (!sk)
		return XDP_DROP;
	if (tp) {
		__u32 len = o->r_len;
		tcpx_reply_fields(sc, tp, o->s_wire, tcpx_ack_out(o, tp->rcv_nxt, 0));
		sc->tx.r_room = XKV_TCPX_REPLY_MAX;
		if (len && len <= XKV_TCPX_REPLY_MAX &&
		    !bpf_probe_read_kernel(&sc->reply[XKV_TEXT], len, f->r)) {
			sc->tx.on = 1;
			sc->tx.replay = 1;
			act = xkv_tcpx_emit(ctx, sc, len);
			sc->tx.replay = 0;
		}
	}
	bpf_sk_release(sk);
	stat_inc(st, act == XDP_TX ? XKV_STAT_tcpx_replayed : XKV_STAT_tcpx_dup_dropped);
	return act == XDP_TX ? XDP_TX : XDP_DROP;
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
 * answer as its new correction point. */
static __always_inline int tcpx_answer(struct xdp_md *ctx, struct xkv_scratch *sc,
				       struct xkv_stats *st, struct xkv_tcpx_flow *f,
				       const struct tcpx_offs *o)
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
	if (tp->snd_una != snd_nxt || tp->write_seq != snd_nxt || kack != snd_nxt) {
		act = TCPX_REFUSE(refused_kernel);
		goto out;
	}
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
	if (n == 0 || bpf_xdp_load_bytes(ctx, p->l4 + p->doff, sc->req, n))
		return TCPX_REFUSE(refused_shape);
	p->r_len = 0;
	act = tcpx_run(ctx, sc, st);
	if (act != XDP_TX)
		return act;
	/* the reply text, kept for a replay */
	__u32 rl = p->r_len;
	if (rl > XKV_TCPX_REPLY_MAX)
		rl = XKV_TCPX_REPLY_MAX;
	if (rl)
		bpf_probe_read_kernel(f->r, rl, &sc->reply[XKV_TEXT]);
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
	f->r_tsval = p->r_tsval;
	f->r_tsecr = p->r_tsecr;
	f->flags = (f->flags & ~XKV_TCPX_F_ACKED) | XKV_TCPX_F_ANSWERED;
	f->answered++;
	bpf_spin_unlock(&f->lock);
	stat_inc(st, XKV_STAT_tcpx_answered);
	return XDP_TX;
out:
	if (sk)
		bpf_sk_release(sk);
	return act;
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
				tcpx_translate_in(ctx, sc, &o);
			bpf_map_delete_elem(&tcpx_flows, &p->key);
			return XDP_PASS;
		}
		tcpx_offs_read(f, &o);
		/* a repeat of the answered request (or a part of it) */
		if (p->plen && (o.flags & XKV_TCPX_F_ANSWERED) && seq_before(p->seq, o.c_end) &&
		    seq_before(o.c_start, p->seq + p->plen)) {
			if (!(o.flags & XKV_TCPX_F_ACKED))
				return tcpx_replay(ctx, sc, st, f, &o);
			if (!seq_before(o.c_end, p->seq + p->plen)) {
				stat_inc(st, XKV_STAT_tcpx_dup_dropped);
				return XDP_DROP; /* nothing in it the kernel lacks */
			}
		}
	}
	if (p->plen && !(p->fl & (TCPX_FIN | TCPX_RST))) {
		int act = tcpx_answer(ctx, sc, st, f, &o);
		if (act != XKV_NEXT)
			return act;
	}
	if (p->plen) {
		__u32 end = p->seq + p->plen;
		bpf_spin_lock(&f->lock);
		if (seq_before(f->passed_end, end))
			f->passed_end = end;
		bpf_spin_unlock(&f->lock);
	}
	if (o.flags & XKV_TCPX_F_ANSWERED)
		tcpx_translate_in(ctx, sc, &o);
	return XDP_PASS;
}

#endif
