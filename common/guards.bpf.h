/* SPDX-License-Identifier: MIT */
/* The XDP program's refusals before it parses (docs/security.md): is the
 * frame for this host, is its source one a host can have, on an allowed
 * port, in the allow list and under its rate, are its checksums right; and
 * whether a source's replies escape the amplification cap.  Expects
 * prelude.bpf.h before it. */
#ifndef XDPKV_GUARDS_BPF_H
#define XDPKV_GUARDS_BPF_H

#include "acl.bpf.h"
#include "csum.bpf.h"

/* Is a (16-byte form) one of the host entry's inline addresses? */
static __always_inline int addr_inline(const struct xkv_host *h, const __u8 *a)
{
	const __u32 *w = (const __u32 *)a;
#pragma unroll
	for (int i = 0; i < XKV_HOST_INLINE; i++) {
		if (i >= h->n_inline)
			break;
		const __u32 *x = (const __u32 *)h->addr[i];
		if (x[3] == w[3] && x[2] == w[2] && x[1] == w[1] && x[0] == w[0])
			return 1;
	}
	return 0;
}

/* Replies to this source are not capped by --max-amplification: it is in
 * the trust list.  (A TCP connection from the address used to count too;
 * a UDP datagram's source address proves nothing, so an off-path spoofer
 * could aim replies at every pooled TCP client: no more.) */
static __always_inline int src_trusted(struct xkv_scratch *sc)
{
	if (cfg.flags & XKV_CFG_STRICT)
		return 0;
	if (!sc->addr.trusted)
		sc->addr.trusted = acl_has(sc, &acl_trust) ? 1 : 2;
	return sc->addr.trusted == 1;
}

/* A source no host can have: the kernel drops such "martians" in ip_rcv,
 * but XDP runs first, and a reply to one would go to a group or a
 * broadcast address.  IPv4 0/8, 127/8, 224/4 (multicast) and 240/4
 * (reserved, broadcast); IPv6 ::, ::1, ff00::/8 and v4-mapped addresses. */
static __always_inline int src_martian(const struct xkv_addr *a)
{
	if (a->family == 4) {
		__u8 b = a->src[0];
		return b == 0 || b == 127 || b >= 224;
	}
	const __u32 *w = (const __u32 *)a->src;
	if (a->src[0] == 0xff)
		return 1;
	if (w[0] || w[1])
		return 0;
	/* ::, ::1, ::ffff:a.b.c.d (IPv4 must arrive as IPv4) */
	return (!w[2] && (!w[3] || w[3] == bpf_htonl(1))) || w[2] == bpf_htonl(0xffff);
}

/* Per-source rate limit (GCRA): the source's /24 or /64 may send rate_burst
 * requests at once and rate_limit per second after that.  The update is not
 * atomic across CPUs: two CPUs may both admit the last request of a burst. */
static __always_inline int rate_ok(struct xkv_scratch *sc, __u64 now)
{
	struct xkv_rl_key k;
	__u64 T = 1000000000ull / cfg.rate_limit;
	__u64 burst = cfg.rate_burst ? cfg.rate_burst : 1;
	__u64 tau = T * (burst - 1);

	__builtin_memcpy(k.addr, sc->addr.src16, 16);
	if (sc->addr.family == 4) {
		k.addr[15] = 0;
	} else {
		__builtin_memset(&k.addr[8], 0, 8);
	}
	__u64 *tat = bpf_map_lookup_elem(&ratelimit, &k);
	if (!tat) {
		__u64 v = now + T;
		bpf_map_update_elem(&ratelimit, &k, &v, BPF_ANY);
		return 1;
	}
	__u64 t = *tat > now ? *tat : now;
	if (t - now > tau)
		return 0;
	*tat = t + T;
	return 1;
}

/* The request's UDP checksum (v4 or v6; the text is in sc->req, tlen bytes,
 * the frame header in fh) is right, or absent where that is allowed (IPv4),
 * or, with XKV_CFG_CSUM_PARTIAL, only the pseudo-header sum a local veth
 * peer leaves for the hardware it does not have. */
static __always_inline int udp_csum_ok(struct xkv_scratch *sc, const struct udphdr *udp,
				       const struct xkv_udp_hdr *fh, __u32 tlen)
{
	struct xkv_addr *a = &sc->addr;
	__u16 check = udp->check;
	if (!check)
		return a->family == 4;
	__u32 ulen = 16 + tlen;
	__s64 p = pseudo_sum(sc, a->src, a->dst, ulen);
	if ((cfg.flags & XKV_CFG_CSUM_PARTIAL) && check == csum_fold((__u32)p))
		return 1;
	/* the UDP and frame headers, 16 bytes, as four words */
	const __u32 *u = (const __u32 *)udp, *f = (const __u32 *)fh;
	__s64 s = csum_fold32((__u64)(__u32)p + u[0] + u[1] + f[0] + f[1]);
	s = buf_sum(sc->req, tlen, s);
	return csum_fold((__u32)s) == 0xffff;
}

#endif
