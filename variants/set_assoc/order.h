/* SPDX-License-Identifier: MIT */
/* The insertion order of a bucket's ways (bucket.h: ord[]), for the policies
 * that keep one: sieve (a hand that walks it) and s3fifo (two FIFOs in it).
 * BPF and userspace both compile it.
 *
 * ord[] is a permutation of the ways 0..ways-1, oldest first.  Position i is
 * stored XOR i, so the all-zero bucket of a new map is the identity order
 * without an initialising pass.  A way that takes a new key moves to the
 * newest end; the ways after it move down one place.  Empty ways stay in
 * the order (a store takes them first anyway). */
#ifndef XDPKV_SET_ASSOC_ORDER_H
#define XDPKV_SET_ASSOC_ORDER_H

#include "set_assoc/bucket.h"

#define XKV_SA_WM (XKV_SA_WAYS_MAX - 1) /* index mask: every array index is bounded */

/* The way at position i (0 = oldest). */
static inline __u32 ord_at(const struct xkv_sa_bucket *b, __u32 i)
{
	return (b->ord[i & XKV_SA_WM] ^ i) & XKV_SA_WM;
}

static inline void ord_put(struct xkv_sa_bucket *b, __u32 i, __u32 w)
{
	b->ord[i & XKV_SA_WM] = (__u8)((w ^ i) & XKV_SA_WM);
}

/* The position of way w (ways if absent: a corrupt order, never built here). */
static inline __u32 ord_pos(const struct xkv_sa_bucket *b, __u32 ways, __u32 w)
{
	for (__u32 i = 0; i < XKV_SA_WAYS_MAX; i++) {
		if (i >= ways)
			break;
		if (ord_at(b, i) == w)
			return i;
	}
	return ways;
}

/* Move the way at position pos to the newest end. */
static inline void ord_to_newest(struct xkv_sa_bucket *b, __u32 ways, __u32 pos)
{
	__u32 w = ord_at(b, pos);
	for (__u32 i = 0; i < XKV_SA_WAYS_MAX - 1; i++) {
		if (i + 1 >= ways)
			break;
		if (i >= pos)
			ord_put(b, i, ord_at(b, i + 1));
	}
	ord_put(b, ways - 1, w);
}

#endif
