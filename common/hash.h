/* SPDX-License-Identifier: MIT */
/* The keyed hash that places keys in array_fnv, arena and the bucketed layouts
 * (set_assoc, sieve, s3fifo; docs/layouts-buckets-arena.md,
 * "Keyed placement").  Written once for the XDP programs, the userspace
 * accessors, the tests and the benchmarks.
 *
 * cfg.hash_seed != 0: SipHash-1-3 (the round counts the kernel's hsiphash
 * uses on 64-bit) keyed with (seed, splitmix64(seed)).  Without the seed a
 * client cannot compute which keys share a slot or a bucket, so it cannot
 * craft keys that evict chosen items.
 * cfg.hash_seed == 0: plain FNV-1a (fnv.h), BMC's placement, for anyone who
 * needs it (array_fnv --fnv-unseeded); a client can compute it. */
#ifndef XDPKV_HASH_H
#define XDPKV_HASH_H

#include <linux/types.h>
#include "fnv.h"

#define XKV_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define XKV_SIPROUND(v0, v1, v2, v3)                                                    \
	do {                                                                            \
		v0 += v1; v1 = XKV_ROTL64(v1, 13); v1 ^= v0; v0 = XKV_ROTL64(v0, 32);  \
		v2 += v3; v3 = XKV_ROTL64(v3, 16); v3 ^= v2;                           \
		v0 += v3; v3 = XKV_ROTL64(v3, 21); v3 ^= v0;                           \
		v2 += v1; v1 = XKV_ROTL64(v1, 17); v1 ^= v2; v2 = XKV_ROTL64(v2, 32);  \
	} while (0)

/* Little-endian 64-bit word i of p (8-aligned in BPF, any alignment here). */
static inline __u64 xkv_word64(const __u8 *p, __u32 i)
{
#ifdef __bpf__
	return ((const __u64 *)p)[i & 31];
#else
	__u64 w;
	__builtin_memcpy(&w, p + (size_t)i * 8, 8);
	return w;
#endif
}

/* SipHash-c-d of len bytes at p (len <= 255).  p must be readable up to len
 * rounded up to 8; the bytes past len are masked off.  c, d are constants at
 * every call (1, 3 in production; the test checks the 2-4 reference vector
 * with the same code). */
static inline __u64 xkv_siphash_cd(__u32 c, __u32 d, __u64 k0, __u64 k1, const __u8 *p, __u32 len)
{
	__u64 v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
	__u64 v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	__u32 nw = len / 8;
	for (__u32 i = 0; i < 32; i++) {
		if (i >= nw)
			break;
		__u64 m = xkv_word64(p, i);
		v3 ^= m;
		for (__u32 r = 0; r < c; r++)
			XKV_SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	__u64 b = (__u64)(len & 0xff) << 56;
	if (len & 7)
		b |= xkv_word64(p, nw) & ((1ull << ((len & 7) * 8)) - 1);
	v3 ^= b;
	for (__u32 r = 0; r < c; r++)
		XKV_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (__u32 r = 0; r < d; r++)
		XKV_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* The second SipHash key word from the seed (splitmix64's finalizer). */
static inline __u64 xkv_seed_k1(__u64 seed)
{
	__u64 z = seed + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The placement hash of a key: key is the packed map key (zero padded to
 * cfg.key_size, so readable to klen rounded up to 8), klen its length. */
static inline __u64 xkv_key_hash(__u64 seed, const __u8 *key, __u32 klen)
{
	if (!seed)
		return xkv_fnv1a(key, klen);
	return xkv_siphash_cd(1, 3, seed, xkv_seed_k1(seed), key, klen);
}

#endif
