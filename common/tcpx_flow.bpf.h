/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, what both programs share: the flow table, the
 * socket's state read through BTF, the offsets read under the flow's lock,
 * and the translation of one sequence number or acknowledgement
 * (tcpx.h says which numbering is which).  Expects prelude.bpf.h. */
#ifndef XDPKV_TCPX_FLOW_BPF_H
#define XDPKV_TCPX_FLOW_BPF_H

#include <linux/tcp.h>
#include "tcpx.h"

/* Flows with state: created at a connection's first data segment in order
 * (before any answer: what was handed to the kernel is tracked from
 * there), and only for a socket serve accepted, from an allowed source,
 * on a segment the kernel accepts (tcpx_xdp.bpf.h).  A flow dies with its
 * socket: removed by the responder when a segment finds no socket (or a
 * new connection's SYN finds the old one gone), by the TC program on the
 * kernel's RST, and by serve's sweep once serve no longer holds the
 * connection (at once, or after TIME-WAIT's length when the close was
 * under way: FIN retransmissions are still translated), and when serve
 * starts.  A client's RST or SYN never removes one: the kernel decides on
 * them (RFC 5961). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, XKV_TCPX_FLOWS_MAX);
	__type(key, struct xkv_tcpx_key);
	__type(value, struct xkv_tcpx_flow);
} tcpx_flows SEC(".maps");

/* The kernel's socket, the fields the responder reads (CO-RE: the offsets
 * come from the running kernel's BTF at load). */
struct sock_common___xkv {
	unsigned char skc_state;
	struct { __s64 counter; } skc_cookie;
} __attribute__((preserve_access_index));
struct sock___xkv {
	struct sock_common___xkv __sk_common;
} __attribute__((preserve_access_index));
struct inet_sock___xkv {
	struct sock___xkv sk;
} __attribute__((preserve_access_index));
struct inet_connection_sock___xkv {
	struct inet_sock___xkv icsk_inet;
} __attribute__((preserve_access_index));
struct rb_root___xkv {
	void *rb_node;
} __attribute__((preserve_access_index));
struct tcp_options_received___xkv {
	__u32 ts_recent;
	__u16 tstamp_ok : 1;
	__u16 snd_wscale : 4;
	__u16 rcv_wscale : 4;
} __attribute__((preserve_access_index));
struct tcp_sock___xkv {
	struct inet_connection_sock___xkv inet_conn;
	__u32 tsoffset, snd_wnd, mss_cache, copied_seq, write_seq;
	__u32 rcv_nxt, snd_nxt, snd_una, rcv_wnd, rcv_wup, max_window;
	__u64 tcp_mstamp, bytes_received;
	struct rb_root___xkv out_of_order_queue;
	struct tcp_options_received___xkv rx_opt;
} __attribute__((preserve_access_index));

#define XKV_TCP_ESTABLISHED 1
#define XKV_TCP_SYN_SENT 2
#define XKV_TCP_SYN_RECV 3
#define XKV_TCP_TIME_WAIT 6
#define XKV_TCP_LISTEN 10
#define XKV_TCP_NEW_SYN_RECV 12

/* The offsets of a flow, copied under its lock. */
struct tcpx_offs {
	__u32 flags, dc_prev, dc, ds_prev, ds, c_start, c_end, s_k, s_wire, r_len, passed_end;
	__u32 ts_recent, proto, held;
	__u64 replay_ns;
};

static __always_inline void tcpx_offs_read(struct xkv_tcpx_flow *f, struct tcpx_offs *o)
{
	bpf_spin_lock(&f->lock);
	o->flags = f->flags;
	o->dc_prev = f->dc_prev;
	o->dc = f->dc;
	o->ds_prev = f->ds_prev;
	o->ds = f->ds;
	o->c_start = f->c_start;
	o->c_end = f->c_end;
	o->s_k = f->s_k;
	o->s_wire = f->s_wire;
	o->r_len = f->r_len;
	o->passed_end = f->passed_end;
	o->ts_recent = f->ts_recent;
	o->proto = f->proto;
	o->replay_ns = f->replay_ns;
	o->held = f->held;
	bpf_spin_unlock(&f->lock);
}

static __always_inline int seq_before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

/* The client's acknowledgement of the server stream, wire -> kernel: inside
 * the injected reply it means the reply's place. */
static __always_inline __u32 tcpx_ack_in(const struct tcpx_offs *o, __u32 ack)
{
	if (seq_before(ack, o->s_wire))
		return ack - o->ds_prev;
	if (seq_before(ack, o->s_wire + o->r_len))
		return o->s_k;
	return ack - o->ds;
}

/* The kernel's sequence number, kernel -> wire. */
static __always_inline __u32 tcpx_seq_out(const struct tcpx_offs *o, __u32 seq)
{
	return seq + (seq_before(seq, o->s_k) ? o->ds_prev : o->ds);
}

/* The kernel's acknowledgement of the client stream, kernel -> wire.  While
 * the client has not acknowledged the last reply, the request it answers
 * stays unacknowledged too (c_start): a client whose reply was lost
 * retransmits the request, and the responder sends the reply again. */
static __always_inline __u32 tcpx_ack_out(const struct tcpx_offs *o, __u32 ack, int hold)
{
	__u32 c_k = o->c_end - o->dc; /* the request's end, in the kernel's numbering */
	if (seq_before(ack, c_k))
		return ack + o->dc_prev;
	if (hold && !(o->flags & XKV_TCPX_F_ACKED))
		return o->c_start;
	/* the kernel's rcv_nxt, with a cut request held after it: the client
	 * had those bytes acknowledged (tcpx.h) */
	if (o->held && ack == c_k)
		return o->c_end + o->held;
	return ack + o->dc;
}

/* A client segment's sequence number [seq, end), wire -> kernel.  One
 * with nothing in it (an ACK, a RST, a keepalive probe) inside or right
 * after held bytes is where it would be had they not been held: at the
 * kernel's rcv_nxt, or before it (a probe's, which the kernel answers). */
static __always_inline __u32 tcpx_seq_in(const struct tcpx_offs *o, __u32 seq, __u32 end)
{
	__u32 k = seq - (seq_before(o->c_start, end) ? o->dc : o->dc_prev);
	if (o->held && seq == end && seq_before(o->c_end, seq) && !seq_before(o->c_end + o->held, seq))
		k -= o->held;
	return k;
}

/* A segment's TCP options walked, one option a bpf_loop() step (verified
 * once; a bounded loop had the verifier walk every path through its 40
 * iterations): where the timestamps and the SACK blocks are, and whether
 * anything else is there.  b: the options, at most 40 bytes, in map memory
 * readable at any index masked with 63 (4 bytes past it too). */
struct tcpx_optwalk {
	const __u8 *b;
	__u32 i, olen;
	__u32 ts_at, sack_at; /* offset in b of the option's data, + 1 (0: none) */
	__u32 sack_n;         /* SACK blocks (of 8 bytes) */
	__u32 odd;            /* an option the translation does not know, or a broken list */
};

static long tcpx_opt_step(__u32 idx, void *v)
{
	struct tcpx_optwalk *c = v;
	const __u8 *b = c->b;
	__u32 i = c->i, olen = c->olen;

	if (!b || i >= olen || i >= 40)
		return 1;
	__u8 kind = b[i & 63];
	if (kind == 0)
		return 1;
	if (kind == 1) {
		c->i = i + 1;
		return 0;
	}
	__u8 len = b[(i + 1) & 63];
	if (i + 1 >= olen || len < 2 || i + len > olen) {
		c->odd = 1;
		return 1;
	}
	if (kind == 8 && len == 10)
		c->ts_at = i + 2 + 1;
	else if (kind == 5 && (len == 10 || len == 18 || len == 26 || len == 34)) {
		c->sack_at = i + 2 + 1;
		c->sack_n = (len - 2) / 8;
	} else
		c->odd = 1; /* MSS, window scale, SACK-permitted outside a SYN; MD5, AO, MPTCP ... */
	c->i = i + len;
	return 0;
}

static __always_inline void tcpx_opts_walk(struct tcpx_optwalk *c, const __u8 *b, __u32 olen)
{
	__builtin_memset(c, 0, sizeof(*c));
	c->b = b;
	c->olen = olen;
	bpf_loop(40, tcpx_opt_step, c, 0);
}

/* RFC 1624 incremental update of a 16-bit ones' complement checksum for a
 * 32-bit word changed from `from` to `to` (both in network order). */
static __always_inline void csum_replace4(__u16 *sum, __u32 from, __u32 to)
{
	__u32 s = (__u16)~*sum;
	s += (__u16)~from + (__u16)~(from >> 16);
	s += (to & 0xffff) + (to >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	*sum = ~(__u16)s;
}

#endif
