/* SPDX-License-Identifier: MIT */
/* Internet checksums without a helper call where it is cheaper: folding,
 * the UDP pseudo header, and the sum of a buffer.  Expects prelude.bpf.h
 * (struct xkv_scratch) before it. */
#ifndef XDPKV_CSUM_BPF_H
#define XDPKV_CSUM_BPF_H

static __always_inline __u16 csum_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* Fold a sum of 32-bit words into 32 bits with end-around carry: the form
 * bpf_csum_diff takes as its seed and returns. */
static __always_inline __u32 csum_fold32(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	return (__u32)s;
}

/* Sum of the pseudo header of protocol proto (UDP, TCP) for family
 * sc->addr.family, layer-4 length len, from src to dst (16-byte,
 * word-aligned buffers, IPv4 in the first 4 bytes): words added in memory
 * order, as bpf_csum_diff adds them, without a helper call. */
static __always_inline __s64 pseudo_sum_proto(struct xkv_scratch *sc, const __u8 *src,
					      const __u8 *dst, __u32 len, __u32 proto)
{
	const __u32 *s = (const __u32 *)src, *d = (const __u32 *)dst;
	__u64 sum;
	if (sc->addr.family == 4)
		sum = (__u64)s[0] + d[0] + bpf_htonl((proto << 16) | (len & 0xffff));
	else
		sum = (__u64)s[0] + s[1] + s[2] + s[3] + d[0] + d[1] + d[2] + d[3] +
		      bpf_htonl(len) + bpf_htonl(proto);
	return csum_fold32(sum);
}

static __always_inline __s64 pseudo_sum(struct xkv_scratch *sc, const __u8 *src, const __u8 *dst,
					__u32 udp_len)
{
	return pseudo_sum_proto(sc, src, dst, udp_len, IPPROTO_UDP);
}

#define XKV_CSUM_INLINE 256 /* up to this many bytes without bpf_csum_diff */

/* Add buf[0 .. n) to the sum s; buf has 8 writable bytes past n, the
 * first 7 zeroed here (the checksum pads to whole words with zeros);
 * n <= 2047. */
static __always_inline __s64 buf_sum(__u8 *buf, __u32 n, __s64 s)
{
	n &= 2047;
	*(__u64 *)&buf[n] = 0;
	__u32 padded = (n + 3) & ~3u;
	if (padded <= XKV_CSUM_INLINE) {
		/* short: summed here, no helper call, eight bytes a step (the two
		 * 32-bit halves of a word are the words bpf_csum_diff adds) */
		__u64 t = (__u32)s;
		for (__u32 w = 0; w < XKV_CSUM_INLINE / 8; w++) {
			if (w * 8 >= padded)
				break;
			__u64 x = *(const __u64 *)&buf[w * 8];
			t += (x & 0xffffffff) + (x >> 32);
		}
		return csum_fold32(t);
	}
#pragma unroll
	for (__u32 c = 0; c < 4; c++) {
		__u32 off = c * 512;
		if (off >= padded)
			break;
		__u32 k = padded - off;
		if (k > 512)
			k = 512;
		s = bpf_csum_diff(0, 0, (__be32 *)&buf[off], k & 0x3fc, (__u32)s);
	}
	return s;
}

#endif
