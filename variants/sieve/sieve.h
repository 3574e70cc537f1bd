/* SPDX-License-Identifier: MIT */
/* sieve's replacement policy: SIEVE (Zhang et al., NSDI'24) within a bucket
 * (set_assoc/bucket.h has the policy interface and the bucket).
 *
 * Per way a visited bit (ref[]), per bucket the ways' insertion order
 * (ord[], set_assoc/order.h: oldest first) and a hand, a position in that
 * order.  A get hit sets the visited bit (only if clear).  The victim of a
 * full bucket: from the hand towards the newest, a visited way loses its bit
 * and is passed (past the newest the hand goes back to the oldest), the
 * first unvisited way is the victim.  The new key takes the victim's way,
 * which moves to the newest end; the hand stays where it stopped, which is
 * now the way that was next newer than the victim, as the paper's hand moves
 * to the victim's neighbour towards the head.
 *
 * The difference from CLOCK (set_assoc) is only where a new item goes: CLOCK
 * puts it in the victim's place in the circle, just behind the hand; SIEVE
 * puts it at the newest end, so items that survived a sweep keep their place
 * and stay older than every new item. */
#ifndef XDPKV_SIEVE_SIEVE_H
#define XDPKV_SIEVE_SIEVE_H

#include "set_assoc/order.h"

static inline void pol_hit(struct xkv_sa_bucket *b, __u32 w)
{
	w &= XKV_SA_WM;
	if (!b->ref[w])
		b->ref[w] = 1;
}

static inline __u32 pol_victim(struct xkv_sa_bucket *b, __u32 ways)
{
	__u32 h = b->hand, w = 0;
	if (h >= ways)
		h = 0;
	/* every way is passed at most once with its bit set: 2 * ways + 1 looks */
	for (__u32 i = 0; i < 2 * XKV_SA_WAYS_MAX + 1; i++) {
		w = ord_at(b, h);
		if (!b->ref[w])
			break;
		b->ref[w] = 0;
		h = h + 1 >= ways ? 0 : h + 1;
	}
	b->hand = (__u8)h;
	return w;
}

/* A new key in way w (the victim, or an empty way): it becomes the newest.
 * The hand keeps pointing at the same way unless that way is w itself: then
 * it points at the way that was next newer (the oldest, if w was newest). */
static inline void pol_insert(struct xkv_sa_bucket *b, __u32 ways, __u32 w, __u16 tag, int fresh)
{
	__u32 pos = ord_pos(b, ways, w & XKV_SA_WM), h = b->hand;
	if (pos >= ways)
		return;
	if (h >= ways)
		h = 0;
	if (pos < h)
		h--;
	else if (pos == h && h == ways - 1)
		h = 0;
	ord_to_newest(b, ways, pos);
	b->hand = (__u8)h;
	b->ref[w & XKV_SA_WM] = 0;
}

static inline void pol_drop(struct xkv_sa_bucket *b, __u32 w)
{
	b->ref[w & XKV_SA_WM] = 0;
}

#endif
