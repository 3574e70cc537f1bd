/* SPDX-License-Identifier: MIT */
/* A small packet builder for the fixture tests.  A struct pb describes a
 * frame layer by layer (each setter returns the builder, so calls chain);
 * pb_build() lays the bytes out, fixing lengths and checksums unless a
 * field was overridden on purpose.
 *
 *     struct pb b;
 *     pb_text(pb_frame(pb_udp(pb_ipv4(pb_init(&b)), 40000, 11211), 7, 0, 1),
 *             "get k\r\n");
 *     len = pb_build(&b, buf, sizeof(buf));
 */
#ifndef XKV_PKTBUILD_H
#define XKV_PKTBUILD_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#define PB_MAX 4096
#define PB_AUTO (-1)

enum pb_l3 { PB_L3_NONE = 0, PB_L3_IPV4, PB_L3_IPV6, PB_L3_ARP };
enum pb_l4 { PB_L4_NONE = 0, PB_L4_UDP, PB_L4_TCP };
enum pb_csum {
	PB_CSUM_AUTO = 0,
	PB_CSUM_ZERO,
	PB_CSUM_COMPUTE,
	PB_CSUM_BAD,     /* the right one with a bit flipped */
	PB_CSUM_PARTIAL, /* the folded pseudo-header sum only, as a sender that left the
			  * rest to the hardware (CHECKSUM_PARTIAL) puts it on the wire */
};

struct pb {
	__u8 eth_src[6], eth_dst[6];
	int ethertype;          /* PB_AUTO: from l3 */
	enum pb_l3 l3;
	/* IPv4 */
	__u8 v4_src[4], v4_dst[4];
	__u8 tos, ttl;
	__u16 ip_id;
	__u16 frag_off;         /* host order: flags (0x4000 DF, 0x2000 MF) | offset */
	__u8 v4_opts[40];
	__u32 v4_opts_len;      /* multiple of 4 */
	int tot_len;            /* PB_AUTO or forced */
	int ip_check;           /* PB_AUTO or forced header checksum */
	int ip_proto;           /* PB_AUTO: from l4 */
	/* IPv6 */
	__u8 v6_src[16], v6_dst[16];
	__u32 v6_flow;          /* host order: version/class/flow word, version forced to 6 */
	__u8 hop_limit;
	int v6_ext;             /* -1 none, else the extension header's type (0 hop-by-hop) */
	int payload_len;        /* PB_AUTO or forced */
	/* L4 */
	enum pb_l4 l4;
	__u16 sport, dport;
	int udp_len;            /* PB_AUTO or forced; the checksum covers only its bytes */
	enum pb_csum csum;      /* AUTO: computed (IPv6 must have one; IPv4 too, it is allowed) */
	__u32 tcp_seq;
	__u8 tcp_flags;
	/* memcached frame header */
	int has_frame;
	__u16 req_id, seq, total, reserved;
	/* payload after the frame header */
	__u8 payload[PB_MAX];
	__u32 payload_len_bytes;
	/* ARP */
	__u16 arp_op;
	/* drop this many bytes from the end of the built frame */
	__u32 chop;
	/* then append this many zero bytes (an Ethernet trailer) */
	__u32 trailer;
};

struct pb *pb_init(struct pb *b);  /* Ethernet, no L3, default MACs/addresses */
struct pb *pb_macs(struct pb *b, const __u8 src[6], const __u8 dst[6]);
struct pb *pb_ipv4(struct pb *b);  /* 10.0.0.1 -> 10.0.0.2 */
struct pb *pb_ipv4_addrs(struct pb *b, const char *src, const char *dst);
struct pb *pb_ipv4_frag(struct pb *b, __u16 frag_off);
struct pb *pb_ipv4_opts(struct pb *b, const __u8 *opts, __u32 len);
struct pb *pb_tot_len(struct pb *b, int tot_len);
struct pb *pb_ip_csum(struct pb *b, int check);
struct pb *pb_ipv6(struct pb *b);  /* fd00::1 -> fd00::2 */
struct pb *pb_ipv6_addrs(struct pb *b, const char *src, const char *dst);
struct pb *pb_ipv6_ext(struct pb *b, int type); /* 0 hop-by-hop, 60 dest opts, ... */
/* source / destination of either family, keeping the other end */
struct pb *pb_src(struct pb *b, const char *v4, const char *v6);
struct pb *pb_dst(struct pb *b, const char *v4, const char *v6);
struct pb *pb_payload_len(struct pb *b, int payload_len);
struct pb *pb_udp(struct pb *b, __u16 sport, __u16 dport);
struct pb *pb_udp_len(struct pb *b, int udp_len);
struct pb *pb_udp_csum(struct pb *b, enum pb_csum mode);
struct pb *pb_tcp(struct pb *b, __u16 sport, __u16 dport);
struct pb *pb_arp(struct pb *b);   /* who-has 10.0.0.2 tell 10.0.0.1 */
struct pb *pb_frame(struct pb *b, __u16 req_id, __u16 seq, __u16 total);
struct pb *pb_bytes(struct pb *b, const void *p, __u32 n); /* append payload */
struct pb *pb_text(struct pb *b, const char *s);           /* append a C string */
struct pb *pb_chop(struct pb *b, __u32 n);

/* Lay the frame out in out[0..cap); returns its length, or 0 if it does not fit. */
size_t pb_build(const struct pb *b, __u8 *out, size_t cap);

/* The reply the fast path should send to request b: MACs, addresses and
 * ports swapped, new IP headers (TTL/hop limit 64, IPv4 DF, the request's
 * TOS / IPv6 flow word without the two ECN bits, no options or extension
 * headers), UDP checksum computed on both families, frame header echoing
 * req_id with seq 0 / total 1, then text.  The IPv4 id is the sender's
 * counter, which no test can know: rep->ip_id is 0, for the caller to fill. */
void pb_reply_of(const struct pb *req, struct pb *rep, const void *text, __u32 len);

/* Internet checksum helpers. */
__u32 pb_csum_add(__u32 sum, const void *p, size_t n);
__u16 pb_csum_fold(__u32 sum);
/* Verify the checksums of a built Ethernet/IPv4|IPv6/UDP frame: returns 0 if
 * the IPv4 header checksum is right and the UDP checksum is right (or 0 on
 * IPv4), else a short reason. */
const char *pb_check_csums(const __u8 *pkt, size_t len);

#endif
