/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, what both programs share: the flow table, the
 * socket's state read through BTF, the offsets read under the flow's lock,
 * and the translation of one sequence number or acknowledgement
 * (tcpx.h says which numbering is which).  Expects prelude.bpf.h. */
#ifndef XDPKV_TCPX_FLOW_BPF_H
#define XDPKV_TCPX_FLOW_BPF_H

#include <linux/tcp.h>
#include "tcpx.h"

/* Flows with state: created at a connection's first data segment (before
 * any answer: what was handed to the kernel is tracked from there),
 * removed when the connection's close is acknowledged both ways, on a RST,
 * on a new SYN for the same addresses, and by serve when it starts. */
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
	__u16 tstamp_ok : 1;
	__u16 snd_wscale : 4;
	__u16 rcv_wscale : 4;
} __attribute__((preserve_access_index));
struct tcp_sock___xkv {
	struct inet_connection_sock___xkv inet_conn;
	__u32 tsoffset, snd_wnd, mss_cache, copied_seq, write_seq;
	__u32 rcv_nxt, snd_nxt, snd_una, rcv_wnd, rcv_wup;
	__u64 tcp_mstamp, bytes_received;
	struct rb_root___xkv out_of_order_queue;
	struct tcp_options_received___xkv rx_opt;
} __attribute__((preserve_access_index));

#define XKV_TCP_ESTABLISHED 1

/* The offsets of a flow, copied under its lock. */
struct tcpx_offs {
	__u32 flags, dc_prev, dc, ds_prev, ds, c_start, c_end, s_k, s_wire, r_len, passed_end;
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
	return ack + o->dc;
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
