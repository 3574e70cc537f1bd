/* SPDX-License-Identifier: MIT */
/* Reply text: writing literals, numbers and a get's VALUE line into
 * sc->reply, after the UDP and frame headers (XKV_TEXT), for the XDP and
 * the TCP program alike.  Expects prelude.bpf.h before it. */
#ifndef XDPKV_REPLY_BPF_H
#define XDPKV_REPLY_BPF_H

#define XKV_TEXT 16       /* reply text starts after udp + frame header */
#define XKV_RMASK 2047    /* offsets into reply[] while writing */

static __always_inline void put_lit(struct xkv_scratch *sc, __u32 *o, const char *s, __u32 n)
{
	__builtin_memcpy(&sc->reply[*o & XKV_RMASK], s, n);
	*o += n;
}
#define PUT_LIT(sc, o, s) put_lit(sc, o, s, sizeof(s) - 1)

static __always_inline __u32 ndigits(__u32 v)
{
	return 1 + (v >= 10) + (v >= 100) + (v >= 1000) + (v >= 10000) + (v >= 100000) +
	       (v >= 1000000) + (v >= 10000000) + (v >= 100000000) + (v >= 1000000000);
}

/* ndigits where the caller goes on: a global function, so the verifier
 * walks what follows once, not once per digit count (two of them in a
 * get's size check made a hundred paths). */
__attribute__((noinline)) __u32 xkv_ndigits(__u32 v)
{
	return ndigits(v);
}

/* v / 10 for any u32 without a division instruction (BPF's is slow):
 * 0xcccccccd / 2^35 rounds to 1/10 closely enough over all of u32. */
static __always_inline __u32 div10(__u32 v)
{
	return (__u32)(((__u64)v * 0xcccccccdULL) >> 35);
}

static __always_inline void put_u32(struct xkv_scratch *sc, __u32 *o, __u32 v)
{
	__u32 n = ndigits(v);
	__u32 end = *o + n;
#pragma unroll
	for (int i = 1; i <= 10; i++) {
		__u32 q = div10(v);
		sc->reply[(end - i) & XKV_RMASK] = '0' + (v - q * 10);
		v = q;
		if (!v)
			break;
	}
	*o = end;
}

/* The same for a u64 (a cas): at most 20 digits. */
static __always_inline void put_u64(struct xkv_scratch *sc, __u32 *o, __u64 v)
{
	__u32 n = 1;
	__u64 p10 = 10;
#pragma unroll
	for (int i = 0; i < 19; i++) { /* 10^19 is the last power below 2^64 */
		n += v >= p10;
		p10 *= 10;
	}
	__u32 end = *o + n;
#pragma unroll
	for (int i = 1; i <= 20; i++) {
		sc->reply[(end - i) & XKV_RMASK] = '0' + (__u8)(v % 10);
		v /= 10;
		if (!v)
			break;
	}
	*o = end;
}

/* Write "VALUE <key> <flags> <bytes>\r\n" (key = token t, loaded in sc->key)
 * at reply[o]; returns the offset after it, or 0 if it would not fit.  A
 * global function: the verifier checks it once on its own, so its digit
 * branches do not multiply the states of the get loop. */
__attribute__((noinline)) int xkv_put_value_hdr(struct xkv_scratch *sc, __u32 o, __u32 t,
						__u32 flags, __u32 len)
{
	if (!sc || o > 2048 || t >= XKV_PARSE_TOKENS)
		return 0;
	__u32 klen = sc->pr.tok[t].len;
	if (klen > XKV_KEY_MAX)
		return 0;
	PUT_LIT(sc, &o, XKV_R_VALUE);
	/* the key is in sc->key (xkv_load_key), zero padded to 8-byte words:
	 * copy whole words; the padding past klen is overwritten next */
	const __u64 *k = (const __u64 *)sc->key;
	for (__u32 i = 0; i < (XKV_KEY_MAX + 6) / 8; i++) {
		if (i * 8 >= cfg.key_size)
			break;
		*(__u64 *)&sc->reply[(o + i * 8) & XKV_RMASK] = k[i];
	}
	o += klen;
	PUT_LIT(sc, &o, " ");
	put_u32(sc, &o, flags);
	PUT_LIT(sc, &o, " ");
	put_u32(sc, &o, len);
	PUT_LIT(sc, &o, "\r\n");
	return o;
}

/* Put one constant line at reply[XKV_TEXT]; its length. */
static __always_inline __u32 reply_line_text(struct xkv_scratch *sc, const char *line, __u32 n)
{
	__u32 o = XKV_TEXT;
	put_lit(sc, &o, line, n);
	return o - XKV_TEXT;
}

#endif
