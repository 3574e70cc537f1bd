/* SPDX-License-Identifier: MIT */
/* set_assoc's replacement policy: CLOCK within a bucket (bucket.h has the
 * policy interface).  A get hit sets the way's ref byte (only if clear:
 * repeated hits do not dirty the line); the victim of a full bucket is found
 * by sweeping from `hand`: a way with ref set loses it and is passed, the
 * first without is the victim; hand then points past the victim, so a new
 * item (which takes the victim's way) is the last the next sweep reaches. */
#ifndef XDPKV_SET_ASSOC_CLOCK_H
#define XDPKV_SET_ASSOC_CLOCK_H

#include "set_assoc/bucket.h"

static inline void pol_hit(struct xkv_sa_bucket *b, __u32 w)
{
	w &= XKV_SA_WAYS_MAX - 1;
	if (!b->ref[w])
		b->ref[w] = 1;
}

static inline __u32 pol_victim(struct xkv_sa_bucket *b, __u32 ways)
{
	__u32 h = b->hand, w = 0;
	for (__u32 i = 0; i < 2 * XKV_SA_WAYS_MAX + 1; i++) {
		w = h & (ways - 1) & (XKV_SA_WAYS_MAX - 1);
		if (!b->ref[w])
			break;
		b->ref[w] = 0;
		h++;
	}
	b->hand = (__u8)((w + 1) & (ways - 1));
	return w;
}

static inline void pol_insert(struct xkv_sa_bucket *b, __u32 ways, __u32 w, __u16 tag, int fresh)
{
	b->ref[w & (XKV_SA_WAYS_MAX - 1)] = 0;
}

static inline void pol_drop(struct xkv_sa_bucket *b, __u32 w)
{
	b->ref[w & (XKV_SA_WAYS_MAX - 1)] = 0;
}

#endif
