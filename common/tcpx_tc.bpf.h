/* SPDX-License-Identifier: MIT */
/* TCP in the driver hook, the send side: a TC egress program on the same
 * interface translates every segment the kernel sends on a flow the XDP
 * responder answered on (tcpx.h has the numbering): its sequence number
 * past the injected replies, its acknowledgement past the requests taken
 * out (held at the last request's start while its reply is unacknowledged,
 * so a lost reply brings the request back), its SACK blocks; checksums
 * updated incrementally (bpf_l4_csum_replace keeps CHECKSUM_PARTIAL right;
 * a GSO packet's segments inherit the header).  Expects prelude.bpf.h and
 * tcpx_flow.bpf.h. */
#ifndef XDPKV_TCPX_TC_BPF_H
#define XDPKV_TCPX_TC_BPF_H

#include "tcpx_flow.bpf.h"

#ifndef TC_ACT_OK
#define TC_ACT_OK 0
#endif

/* Rewrite the 32-bit word at off from `from` to `to` (network order),
 * the TCP checksum at csum with it. */
static __always_inline void tcpx_put32(struct __sk_buff *skb, __u32 off, __u32 csum, __u32 from,
				       __u32 to)
{
	if (from == to)
		return;
	bpf_l4_csum_replace(skb, csum, from, to, sizeof(to));
	bpf_skb_store_bytes(skb, off, &to, sizeof(to), 0);
}

/* A segment's TCP options: at most 40 bytes, in a buffer where every index
 * masked with 63 stays inside it, a 4-byte read at one too; per CPU, for
 * the egress program (a map value: the walk below reads it at variable
 * offsets). */
struct tcpx_optbuf {
	__u8 b[64 + 4];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcpx_optbuf);
} tcpx_tc_opts SEC(".maps");

/* The options of the kernel's segment (TCP header at l4, doff bytes) into
 * ob; their length, 0 when there are none or they cannot be read. */
static __always_inline __u32 tcpx_opts_load(struct __sk_buff *skb, __u32 l4, __u32 doff,
					    struct tcpx_optbuf *ob)
{
	__u32 olen = doff > 20 ? doff - 20 : 0;
	barrier_var(olen);
	if (olen > 40)
		return 0;
	barrier_var(olen);
	if (!olen || bpf_skb_load_bytes(skb, l4 + 20, ob->b, XKV_LEN(olen, 40)))
		return 0;
	return olen;
}

/* The SACK blocks of the kernel's segment (of the client's stream),
 * kernel -> wire.  Global: verified once. */
__attribute__((noinline)) int xkv_tcpx_sack_out(struct __sk_buff *skb, const struct tcpx_offs *o,
						__u32 l4, __u32 doff)
{
	__u32 zero = 0;
	struct tcpx_optbuf *ob = bpf_map_lookup_elem(&tcpx_tc_opts, &zero);

	if (!skb || !o || !ob || l4 > 128)
		return 0;
	struct tcpx_optwalk c;
	__u32 olen = tcpx_opts_load(skb, l4, doff, ob);
	tcpx_opts_walk(&c, ob->b, olen);
	if (!c.sack_at)
		return 0;
	for (__u32 e = 0; e < 4; e++) {
		__u32 bo = c.sack_at - 1 + e * 8;
		if (e >= c.sack_n || bo + 8 > olen || bo + 8 > 40)
			break;
		for (__u32 k = 0; k < 2; k++) {
			__u32 v;
			__builtin_memcpy(&v, &ob->b[(bo + k * 4) & 63], 4);
			tcpx_put32(skb, l4 + 20 + bo + k * 4, l4 + 16, v,
				   bpf_htonl(tcpx_ack_out(o, bpf_ntohl(v), 0)));
		}
	}
	return 0;
}

/* The kernel's segment translated (tcpx.h): seq, ack (held while the last
 * reply is unacknowledged), SACK blocks.  Its new sequence number. */
static __always_inline __u32 tcpx_translate_out(struct __sk_buff *skb, const struct tcpx_offs *o,
						 const struct tcphdr *th, __u32 l4, __u32 doff)
{
	__u32 csum = l4 + 16;
	__u8 fl = ((__u8 *)th)[13];
	__u32 nseq = tcpx_seq_out(o, bpf_ntohl(th->seq));
	tcpx_put32(skb, l4 + 4, csum, th->seq, bpf_htonl(nseq));
	if (fl & 0x10)
		tcpx_put32(skb, l4 + 8, csum, th->ack_seq, bpf_htonl(tcpx_ack_out(o, bpf_ntohl(th->ack_seq), 1)));
	if (doff > 20)
		xkv_tcpx_sack_out(skb, o, l4, doff);
	return nseq;
}

/* Where the kernel's options may end for a reply on its pure ACK: after
 * its timestamps when they come first (NOP NOP TS, tcp_options_write's
 * order), 20 without options, 0 when they are laid out otherwise.  Its
 * SACK blocks (the duplicate's D-SACK) go: the reply takes their place, so
 * the segment is no longer than the MSS the kernel sized the reply for
 * (mss_cache counts the timestamps alone).  Global: verified once. */
__attribute__((noinline)) int xkv_tcpx_ack_hdr(struct __sk_buff *skb, __u32 l4, __u32 doff)
{
	__u32 zero = 0;
	struct tcpx_optbuf *ob = bpf_map_lookup_elem(&tcpx_tc_opts, &zero);

	if (!skb || !ob || l4 > 128)
		return 0;
	if (doff <= 20)
		return 20;
	struct tcpx_optwalk c;
	__u32 olen = tcpx_opts_load(skb, l4, doff, ob);
	if (!olen)
		return 0;
	tcpx_opts_walk(&c, ob->b, olen);
	if (c.odd)
		return 0;
	if (!c.ts_at)
		return 20;
	return c.ts_at == 2 + 2 + 1 ? 32 : 0; /* TS's data at 4: NOP NOP TS, 12 bytes */
}

/* The flow's last reply on the kernel's pure ACK at its place (s_k): the
 * ACK the kernel sent for the request's duplicate (tcpx_xdp.bpf.h, I5; a
 * noreply write's has no reply: the ACK alone, its D-SACK cut).
 * The header is cut to its timestamps (xkv_tcpx_ack_hdr), the reply text
 * goes after it, the lengths and the pseudo-header sum follow (the
 * kernel's own segments are CHECKSUM_PARTIAL here: the rest of the sum is
 * the device's).  1 when the reply is on it. */
static __always_inline int tcpx_reply_on_ack(struct __sk_buff *skb, struct xkv_tcpx_flow *f,
					     const struct tcpx_offs *o, __u32 l4, __u32 doff, __u32 ipl,
					     int v4)
{
	__u32 len = o->r_len, csum = l4 + 16;
	int none = (o->flags & XKV_TCPX_F_NOREPLY) != 0; /* a noreply write's: the ACK alone */

	if (none)
		len = 0;
	if ((!len && !none) || len > XKV_TCPX_REPLY_MAX || ipl != doff || doff > 60)
		return 0;
	__u32 hl = xkv_tcpx_ack_hdr(skb, l4, doff);
	if (hl != 20 && hl != 32)
		return 0;
	__u32 was = skb->len;
	if (was < l4 + doff || bpf_skb_change_tail(skb, was - (doff - hl) + len, 0))
		return 0;
	if (len && bpf_skb_store_bytes(skb, l4 + hl, f->r, XKV_LEN(len, XKV_TCPX_REPLY_MAX), 0)) {
		bpf_skb_change_tail(skb, was, 0);
		return 0;
	}
	__u16 old_l4 = bpf_htons(doff), new_l4 = bpf_htons(hl + len);
	bpf_l4_csum_replace(skb, csum, old_l4, new_l4, BPF_F_PSEUDO_HDR | sizeof(__u16));
	if (v4) {
		__u16 old_tot = bpf_htons(20 + doff), new_tot = bpf_htons(20 + hl + len);
		bpf_l3_csum_replace(skb, ETH_HLEN + 10, old_tot, new_tot, sizeof(__u16));
		bpf_skb_store_bytes(skb, ETH_HLEN + 2, &new_tot, sizeof(new_tot), 0);
	} else {
		bpf_skb_store_bytes(skb, ETH_HLEN + 4, &new_l4, sizeof(new_l4), 0);
	}
	__u8 hb[2] = { (__u8)((hl / 4) << 4), len ? 0x18 : 0x10 }; /* the header's length; ACK (PSH) */
	bpf_skb_store_bytes(skb, l4 + 12, hb, 2, 0);
	return 1;
}

SEC("tc")
int xdpkv_tcpx_egress(struct __sk_buff *skb)
{
	struct xkv_tcpx_key k = {};
	__u32 l4, ipl;

	if (cfg.flags & XKV_CFG_NO_XDP_TCP)
		return TC_ACT_OK;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;
		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) || ip.ihl != 5 ||
		    ip.protocol != IPPROTO_TCP)
			return TC_ACT_OK;
		xkv_addr_from_v4(k.peer, &ip.daddr);
		xkv_addr_from_v4(k.local, &ip.saddr);
		l4 = ETH_HLEN + 20;
		ipl = xkv_ntohs(ip.tot_len) - 20;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;
		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)) || ip6.nexthdr != IPPROTO_TCP)
			return TC_ACT_OK;
		__builtin_memcpy(k.peer, &ip6.daddr, 16);
		__builtin_memcpy(k.local, &ip6.saddr, 16);
		l4 = ETH_HLEN + 40;
		ipl = xkv_ntohs(ip6.payload_len);
	} else {
		return TC_ACT_OK;
	}
	struct tcphdr th;
	if (bpf_skb_load_bytes(skb, l4, &th, sizeof(th)) || th.source != bpf_htons(cfg.port))
		return TC_ACT_OK;
	k.pport = th.dest;
	k.lport = th.source;
	struct xkv_tcpx_flow *f = bpf_map_lookup_elem(&tcpx_flows, &k);
	if (!f)
		return TC_ACT_OK;
	struct tcpx_offs o;
	tcpx_offs_read(f, &o);
	__u32 doff = th.doff * 4;
	__u8 fl = ((__u8 *)&th)[13];
	__u32 nseq = bpf_ntohl(th.seq);
	if ((o.flags & XKV_TCPX_F_ON_ACK) && fl == 0x10 && ipl == doff) {
		/* a pure ACK (the kernel's of the request's duplicate): the
		 * reply on it, at the reply's place, acknowledging the request */
		int mine = 0;
		bpf_spin_lock(&f->lock);
		if (f->flags & XKV_TCPX_F_ON_ACK) {
			f->flags &= ~XKV_TCPX_F_ON_ACK;
			mine = 1;
		}
		bpf_spin_unlock(&f->lock);
		if (mine && tcpx_reply_on_ack(skb, f, &o, l4, doff, ipl, skb->protocol == bpf_htons(ETH_P_IP))) {
			__u32 zero = 0;
			struct xkv_stats *st = bpf_map_lookup_elem(&stats, &zero);
			if (st)
				stat_inc(st, XKV_STAT_tcpx_on_ack);
			__u32 ack = bpf_ntohl(th.ack_seq);
			ack = seq_before(ack, o.c_end - o.dc) ? o.c_end : tcpx_ack_out(&o, ack, 0);
			tcpx_put32(skb, l4 + 4, l4 + 16, th.seq, bpf_htonl(o.s_wire));
			tcpx_put32(skb, l4 + 8, l4 + 16, th.ack_seq, bpf_htonl(ack));
			return TC_ACT_OK;
		}
	}
	if (o.flags & XKV_TCPX_F_ANSWERED)
		nseq = tcpx_translate_out(skb, &o, &th, l4, doff);
	/* the kernel's FIN recorded; its RST ends the connection, and the
	 * flow with it.  A close otherwise keeps the flow while the socket
	 * lasts (TIME-WAIT answers a retransmitted FIN in the kernel's
	 * numbering; after a passive close, LAST-ACK retransmits the FIN):
	 * the responder or serve's sweep removes it after. */
	if (fl & 0x04) {
		bpf_map_delete_elem(&tcpx_flows, &k);
	} else if (fl & 0x01) {
		bpf_spin_lock(&f->lock);
		/* after the client's: a passive close, no TIME-WAIT here */
		if ((f->flags & (XKV_TCPX_F_FIN_C | XKV_TCPX_F_FIN_K)) == XKV_TCPX_F_FIN_C)
			f->flags |= XKV_TCPX_F_PASSIVE;
		f->flags |= XKV_TCPX_F_FIN_K;
		f->fin_k = nseq + (ipl > doff ? ipl - doff : 0) + 1;
		bpf_spin_unlock(&f->lock);
	}
	return TC_ACT_OK;
}

#endif
