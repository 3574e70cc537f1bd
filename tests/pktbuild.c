// SPDX-License-Identifier: MIT
/* Packet builder for the fixture tests; see pktbuild.h. */
#include <string.h>
#include <arpa/inet.h>
#include "pktbuild.h"

#define ETH_HLEN_ 14

static const __u8 mac_a[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const __u8 mac_b[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

struct pb *pb_init(struct pb *b)
{
	memset(b, 0, sizeof(*b));
	memcpy(b->eth_src, mac_a, 6);
	memcpy(b->eth_dst, mac_b, 6);
	b->ethertype = PB_AUTO;
	b->tot_len = PB_AUTO;
	b->ip_check = PB_AUTO;
	b->ip_proto = PB_AUTO;
	b->payload_len = PB_AUTO;
	b->udp_len = PB_AUTO;
	b->v6_ext = -1;
	b->ttl = 64;
	b->hop_limit = 64;
	b->ip_id = 0x1234;
	b->total = 1;
	pb_ipv4_addrs(b, "10.0.0.1", "10.0.0.2");
	pb_ipv6_addrs(b, "fd00::1", "fd00::2");
	return b;
}

struct pb *pb_macs(struct pb *b, const __u8 src[6], const __u8 dst[6])
{
	memcpy(b->eth_src, src, 6);
	memcpy(b->eth_dst, dst, 6);
	return b;
}

struct pb *pb_ipv4(struct pb *b)
{
	b->l3 = PB_L3_IPV4;
	return b;
}

struct pb *pb_ipv4_addrs(struct pb *b, const char *src, const char *dst)
{
	inet_pton(AF_INET, src, b->v4_src);
	inet_pton(AF_INET, dst, b->v4_dst);
	return b;
}

struct pb *pb_ipv4_frag(struct pb *b, __u16 frag_off)
{
	b->frag_off = frag_off;
	return b;
}

struct pb *pb_ipv4_opts(struct pb *b, const __u8 *opts, __u32 len)
{
	if (len > sizeof(b->v4_opts))
		len = sizeof(b->v4_opts);
	memcpy(b->v4_opts, opts, len);
	b->v4_opts_len = len & ~3u;
	return b;
}

struct pb *pb_tot_len(struct pb *b, int tot_len)
{
	b->tot_len = tot_len;
	return b;
}

struct pb *pb_ip_csum(struct pb *b, int check)
{
	b->ip_check = check;
	return b;
}

struct pb *pb_ipv6(struct pb *b)
{
	b->l3 = PB_L3_IPV6;
	b->v6_flow = 0x60012345; /* class 0x00, flow 0x12345 */
	return b;
}

struct pb *pb_ipv6_addrs(struct pb *b, const char *src, const char *dst)
{
	inet_pton(AF_INET6, src, b->v6_src);
	inet_pton(AF_INET6, dst, b->v6_dst);
	return b;
}

struct pb *pb_ipv6_ext(struct pb *b, int type)
{
	b->v6_ext = type;
	return b;
}

struct pb *pb_src(struct pb *b, const char *v4, const char *v6)
{
	inet_pton(AF_INET, v4, b->v4_src);
	inet_pton(AF_INET6, v6, b->v6_src);
	return b;
}

struct pb *pb_dst(struct pb *b, const char *v4, const char *v6)
{
	inet_pton(AF_INET, v4, b->v4_dst);
	inet_pton(AF_INET6, v6, b->v6_dst);
	return b;
}

struct pb *pb_payload_len(struct pb *b, int payload_len)
{
	b->payload_len = payload_len;
	return b;
}

struct pb *pb_udp(struct pb *b, __u16 sport, __u16 dport)
{
	b->l4 = PB_L4_UDP;
	b->sport = sport;
	b->dport = dport;
	return b;
}

struct pb *pb_udp_len(struct pb *b, int udp_len)
{
	b->udp_len = udp_len;
	return b;
}

struct pb *pb_udp_csum(struct pb *b, enum pb_csum mode)
{
	b->csum = mode;
	return b;
}

struct pb *pb_tcp(struct pb *b, __u16 sport, __u16 dport)
{
	b->l4 = PB_L4_TCP;
	b->sport = sport;
	b->dport = dport;
	b->tcp_seq = 1000;
	b->tcp_flags = 0x18; /* PSH|ACK */
	return b;
}

struct pb *pb_arp(struct pb *b)
{
	b->l3 = PB_L3_ARP;
	b->arp_op = 1;
	return b;
}

struct pb *pb_frame(struct pb *b, __u16 req_id, __u16 seq, __u16 total)
{
	b->has_frame = 1;
	b->req_id = req_id;
	b->seq = seq;
	b->total = total;
	b->reserved = 0;
	return b;
}

struct pb *pb_bytes(struct pb *b, const void *p, __u32 n)
{
	if (n > PB_MAX - b->payload_len_bytes)
		n = PB_MAX - b->payload_len_bytes;
	memcpy(b->payload + b->payload_len_bytes, p, n);
	b->payload_len_bytes += n;
	return b;
}

struct pb *pb_text(struct pb *b, const char *s)
{
	return pb_bytes(b, s, (__u32)strlen(s));
}

struct pb *pb_chop(struct pb *b, __u32 n)
{
	b->chop = n;
	return b;
}

/* ---- checksums ----------------------------------------------------------- */

__u32 pb_csum_add(__u32 sum, const void *p, size_t n)
{
	const __u8 *c = p;
	__u64 s = sum;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (__u32)(c[i] << 8 | c[i + 1]);
	if (i < n)
		s += (__u32)c[i] << 8;
	while (s >> 32)
		s = (s & 0xffffffff) + (s >> 32);
	return (__u32)s;
}

__u16 pb_csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void put32(__u8 *p, __u32 v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

/* Sum of the pseudo header of an L4 segment of `len` bytes. */
static __u32 pseudo_sum(int v6, const __u8 *src, const __u8 *dst, __u8 proto, __u32 len)
{
	__u32 s = 0;
	__u8 tail[8] = { 0 };

	s = pb_csum_add(s, src, v6 ? 16 : 4);
	s = pb_csum_add(s, dst, v6 ? 16 : 4);
	if (v6) {
		put32(tail, len);
		tail[7] = proto;
		return pb_csum_add(s, tail, 8);
	}
	tail[1] = proto;
	put16(tail + 2, (__u16)len);
	return pb_csum_add(s, tail, 4);
}

/* UDP/TCP checksum over the pseudo header (length len) and l4[0..n) */
static __u16 l4_csum(int v6, const __u8 *src, const __u8 *dst, __u8 proto,
		     const __u8 *l4, __u32 len, __u32 n)
{
	return (__u16)~pb_csum_fold(pb_csum_add(pseudo_sum(v6, src, dst, proto, len), l4, n));
}

/* ---- layout -------------------------------------------------------------- */

static size_t build_arp(const struct pb *b, __u8 *p)
{
	put16(p, 1);          /* Ethernet */
	put16(p + 2, 0x0800); /* IPv4 */
	p[4] = 6;
	p[5] = 4;
	put16(p + 6, b->arp_op);
	memcpy(p + 8, b->eth_src, 6);
	memcpy(p + 14, b->v4_src, 4);
	memset(p + 18, 0, 6);
	memcpy(p + 24, b->v4_dst, 4);
	return 28;
}

/* L4 header + frame header + payload at p; returns bytes written */
static size_t build_l4(const struct pb *b, __u8 *p, size_t room)
{
	size_t hl = b->l4 == PB_L4_TCP ? 20 : b->l4 == PB_L4_UDP ? 8 : 0;
	size_t body = (b->has_frame ? 8 : 0) + b->payload_len_bytes;

	if (hl + body > room)
		return 0;
	memset(p, 0, hl);
	__u8 *q = p + hl;
	if (b->has_frame) {
		put16(q, b->req_id);
		put16(q + 2, b->seq);
		put16(q + 4, b->total);
		put16(q + 6, b->reserved);
		q += 8;
	}
	memcpy(q, b->payload, b->payload_len_bytes);
	if (b->l4 == PB_L4_UDP) {
		put16(p, b->sport);
		put16(p + 2, b->dport);
		put16(p + 4, b->udp_len == PB_AUTO ? (__u16)(hl + body) : (__u16)b->udp_len);
	} else if (b->l4 == PB_L4_TCP) {
		put16(p, b->sport);
		put16(p + 2, b->dport);
		put32(p + 4, b->tcp_seq);
		put32(p + 8, 0);
		p[12] = 5 << 4;
		p[13] = b->tcp_flags;
		put16(p + 14, 65535);
	}
	return hl + body;
}

static void fill_l4_csum(const struct pb *b, int v6, const __u8 *src, const __u8 *dst,
			 __u8 *l4, size_t l4len)
{
	if (b->l4 == PB_L4_TCP) {
		put16(l4 + 16, l4_csum(v6, src, dst, 6, l4, (__u32)l4len, (__u32)l4len));
		return;
	}
	if (b->l4 != PB_L4_UDP)
		return;
	if (b->csum == PB_CSUM_ZERO)
		return;
	/* the checksum covers what the UDP length says, not the bytes after it */
	__u32 ulen = b->udp_len == PB_AUTO ? (__u32)l4len : (__u32)b->udp_len;
	__u32 n = ulen < l4len ? ulen : (__u32)l4len;
	if (b->csum == PB_CSUM_PARTIAL) {
		put16(l4 + 6, pb_csum_fold(pseudo_sum(v6, src, dst, 17, ulen)));
		return;
	}
	__u16 c = l4_csum(v6, src, dst, 17, l4, ulen, n);
	c = c ? c : 0xffff;
	if (b->csum == PB_CSUM_BAD) /* wrong, and not 0 (IPv4's "none") */
		c ^= c == 0x0100 ? 0x0200 : 0x0100;
	put16(l4 + 6, c);
}

static int l4_proto(const struct pb *b)
{
	if (b->ip_proto != PB_AUTO)
		return b->ip_proto;
	return b->l4 == PB_L4_TCP ? 6 : b->l4 == PB_L4_UDP ? 17 : 59;
}

static size_t build_ipv4(const struct pb *b, __u8 *p, size_t room)
{
	size_t ihl = 20 + b->v4_opts_len;
	if (ihl > room)
		return 0;
	size_t l4len = build_l4(b, p + ihl, room - ihl);
	if (!l4len && b->l4 != PB_L4_NONE)
		return 0;
	p[0] = 0x40 | (__u8)(ihl / 4);
	p[1] = b->tos;
	put16(p + 2, b->tot_len == PB_AUTO ? (__u16)(ihl + l4len) : (__u16)b->tot_len);
	put16(p + 4, b->ip_id);
	put16(p + 6, b->frag_off);
	p[8] = b->ttl;
	p[9] = (__u8)l4_proto(b);
	put16(p + 10, 0);
	memcpy(p + 12, b->v4_src, 4);
	memcpy(p + 16, b->v4_dst, 4);
	memcpy(p + 20, b->v4_opts, b->v4_opts_len);
	put16(p + 10, b->ip_check != PB_AUTO ? (__u16)b->ip_check :
				       (__u16)~pb_csum_fold(pb_csum_add(0, p, ihl)));
	fill_l4_csum(b, 0, b->v4_src, b->v4_dst, p + ihl, l4len);
	return ihl + l4len;
}

static size_t build_ipv6(const struct pb *b, __u8 *p, size_t room)
{
	size_t ext = b->v6_ext >= 0 ? 8 : 0;
	if (40 + ext > room)
		return 0;
	size_t l4len = build_l4(b, p + 40 + ext, room - 40 - ext);
	if (!l4len && b->l4 != PB_L4_NONE)
		return 0;
	put32(p, (b->v6_flow & 0x0fffffff) | 0x60000000);
	put16(p + 4, b->payload_len == PB_AUTO ? (__u16)(ext + l4len) : (__u16)b->payload_len);
	p[6] = ext ? (__u8)b->v6_ext : (__u8)l4_proto(b);
	p[7] = b->hop_limit;
	memcpy(p + 8, b->v6_src, 16);
	memcpy(p + 24, b->v6_dst, 16);
	if (ext) {
		__u8 *e = p + 40;
		memset(e, 0, 8);
		e[0] = (__u8)l4_proto(b); /* next header */
		e[1] = 0;                 /* 8 bytes in all */
		e[2] = 1;                 /* PadN option, 4 bytes of padding */
		e[3] = 4;
	}
	fill_l4_csum(b, 1, b->v6_src, b->v6_dst, p + 40 + ext, l4len);
	return 40 + ext + l4len;
}

size_t pb_build(const struct pb *b, __u8 *out, size_t cap)
{
	size_t n = 0;
	int et = b->ethertype;

	if (cap < ETH_HLEN_)
		return 0;
	if (et == PB_AUTO)
		et = b->l3 == PB_L3_IPV4 ? 0x0800 : b->l3 == PB_L3_IPV6 ? 0x86dd :
		     b->l3 == PB_L3_ARP ? 0x0806 : 0x88b5;
	memcpy(out, b->eth_dst, 6);
	memcpy(out + 6, b->eth_src, 6);
	put16(out + 12, (__u16)et);
	switch (b->l3) {
	case PB_L3_IPV4:
		n = build_ipv4(b, out + ETH_HLEN_, cap - ETH_HLEN_);
		break;
	case PB_L3_IPV6:
		n = build_ipv6(b, out + ETH_HLEN_, cap - ETH_HLEN_);
		break;
	case PB_L3_ARP:
		n = cap - ETH_HLEN_ >= 28 ? build_arp(b, out + ETH_HLEN_) : 0;
		break;
	case PB_L3_NONE:
		n = b->payload_len_bytes <= cap - ETH_HLEN_ ? b->payload_len_bytes : 0;
		memcpy(out + ETH_HLEN_, b->payload, n);
		break;
	}
	if (!n)
		return 0;
	n += ETH_HLEN_;
	if (b->chop >= n)
		return 0;
	n -= b->chop;
	if (b->trailer > cap - n)
		return 0;
	memset(out + n, 0, b->trailer);
	return n + b->trailer;
}

void pb_reply_of(const struct pb *req, struct pb *rep, const void *text, __u32 len)
{
	pb_init(rep);
	pb_macs(rep, req->eth_dst, req->eth_src);
	rep->l3 = req->l3;
	memcpy(rep->v4_src, req->v4_dst, 4);
	memcpy(rep->v4_dst, req->v4_src, 4);
	memcpy(rep->v6_src, req->v6_dst, 16);
	memcpy(rep->v6_dst, req->v6_src, 16);
	/* never echo congestion experienced: the reply did not cross that path */
	rep->tos = req->tos & ~3;
	rep->v6_flow = req->v6_flow & ~0x00300000u;
	rep->ip_id = 0;
	rep->frag_off = 0x4000; /* DF */
	rep->ttl = 64;
	rep->hop_limit = 64;
	pb_udp(rep, req->dport, req->sport);
	pb_udp_csum(rep, PB_CSUM_COMPUTE);
	pb_frame(rep, req->req_id, 0, 1);
	pb_bytes(rep, text, len);
}

const char *pb_check_csums(const __u8 *pkt, size_t len)
{
	if (len < ETH_HLEN_ + 8)
		return "frame too short";
	__u16 et = (__u16)(pkt[12] << 8 | pkt[13]);
	const __u8 *ip = pkt + ETH_HLEN_;
	size_t iplen = len - ETH_HLEN_;

	if (et == 0x0800) {
		size_t ihl = (size_t)(ip[0] & 15) * 4;
		if (iplen < ihl + 8 || ip[9] != 17)
			return "not IPv4/UDP";
		if (pb_csum_fold(pb_csum_add(0, ip, ihl)) != 0xffff)
			return "bad IPv4 header checksum";
		const __u8 *u = ip + ihl;
		size_t ul = (size_t)(u[4] << 8 | u[5]);
		if (ul < 8 || ihl + ul > iplen)
			return "bad UDP length";
		if (u[6] == 0 && u[7] == 0)
			return NULL;
		__u32 s = pb_csum_add(0, ip + 12, 8);
		__u8 t[4] = { 0, 17, (__u8)(ul >> 8), (__u8)ul };
		s = pb_csum_add(s, t, 4);
		s = pb_csum_add(s, u, ul);
		return pb_csum_fold(s) == 0xffff ? NULL : "bad UDP checksum (IPv4)";
	}
	if (et == 0x86dd) {
		if (iplen < 48 || ip[6] != 17)
			return "not IPv6/UDP";
		const __u8 *u = ip + 40;
		size_t ul = (size_t)(u[4] << 8 | u[5]);
		if (ul < 8 || 40 + ul > iplen)
			return "bad UDP length";
		if (u[6] == 0 && u[7] == 0)
			return "UDP checksum 0 on IPv6";
		__u32 s = pb_csum_add(0, ip + 8, 32);
		__u8 t[8] = { 0, 0, (__u8)(ul >> 8), (__u8)ul, 0, 0, 0, 17 };
		s = pb_csum_add(s, t, 8);
		s = pb_csum_add(s, u, ul);
		return pb_csum_fold(s) == 0xffff ? NULL : "bad UDP checksum (IPv6)";
	}
	return "not IP";
}
