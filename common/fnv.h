/* SPDX-License-Identifier: MIT */
/* FNV-1a, 64-bit, as BMC uses it to index its array cache.  Written once:
 * the XDP program, the userspace accessor and the tests all call this. */
#ifndef XDPKV_FNV_H
#define XDPKV_FNV_H

#define XKV_FNV_OFFSET 0xcbf29ce484222325ULL
#define XKV_FNV_PRIME  0x100000001b3ULL

/* Hash the first len bytes of key; len <= XKV_KEY_MAX is enforced by the
 * caller, the loop bound keeps the verifier happy. */
static inline __u64 xkv_fnv1a(const __u8 *key, __u32 len)
{
	__u64 h = XKV_FNV_OFFSET;
	for (__u32 i = 0; i < 256; i++) {
		if (i >= len)
			break;
		h ^= key[i];
		h *= XKV_FNV_PRIME;
	}
	return h;
}

#endif
