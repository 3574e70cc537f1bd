/* SPDX-License-Identifier: MIT */
/* s3fifo's replacement policy: S3-FIFO (Yang et al., SOSP'23) within a
 * bucket (set_assoc/bucket.h has the policy interface and the bucket).
 *
 * Per way a frequency 0..3 (ref[]) and a queue: small (bit w of `small`) or
 * main; one insertion order for the bucket (ord[], set_assoc/order.h), in
 * which each queue's FIFO order is the order of its ways.  A ghost ring of
 * XKV_SA_WAYS_MAX tags of keys evicted from small (ghost[], ghead; 0 = none).
 *
 *   get hit        frequency + 1, at most 3 (a byte written only below 3)
 *   new key        its tag in the ghost ring: the entry is cleared and the
 *                  key goes to main; else to small, unless it takes a free
 *                  way while small already holds its share: then to main
 *                  (libCacheSim's S3FIFO fills main before its first
 *                  eviction; here also after a delete frees a way)
 *   full bucket    while small holds a way: its oldest way, if its frequency
 *                  is at least 2, moves to main (newest, frequency 0) and the
 *                  next is looked at; else it is the victim, its tag goes to
 *                  the ghost ring.  Small empty: main's oldest way, if its
 *                  frequency is above 0, is kept with one less and moved to
 *                  main's newest end; else it is the victim.
 *
 * Small's share is S3_SMALL ways of the bucket's 8 (1 of 4 for large values):
 * 10 % of 8 rounds to 1.  When the bucket is full, small holds at most its
 * share after an eviction, so "small holds a way" is libCacheSim's "main is
 * over its size or small is empty" test. */
#ifndef XDPKV_S3FIFO_S3FIFO_H
#define XDPKV_S3FIFO_S3FIFO_H

#include "set_assoc/order.h"

#define S3_SMALL 1u          /* ways of the small FIFO (its share) */
#define S3_FREQ_MAX 3u       /* 2-bit frequency */
#define S3_TO_MAIN 2u        /* frequency that moves a small way to main */

static inline void pol_hit(struct xkv_sa_bucket *b, __u32 w)
{
	w &= XKV_SA_WM;
	if (b->ref[w] < S3_FREQ_MAX)
		b->ref[w]++;
}

static inline int s3_in_small(const struct xkv_sa_bucket *b, __u32 w)
{
	return (b->small >> (w & XKV_SA_WM)) & 1;
}

/* The ways of small (small != 0) or of main, oldest first: the position of
 * the first, or ways if the queue is empty. */
static inline __u32 s3_oldest(const struct xkv_sa_bucket *b, __u32 ways, int small)
{
	for (__u32 i = 0; i < XKV_SA_WAYS_MAX; i++) {
		if (i >= ways)
			break;
		if (s3_in_small(b, ord_at(b, i)) == small)
			return i;
	}
	return ways;
}

static inline __u32 pol_victim(struct xkv_sa_bucket *b, __u32 ways)
{
	/* each way moves small -> main at most once and is kept in main at
	 * most S3_FREQ_MAX times: (S3_FREQ_MAX + 1) * ways + 1 looks */
	for (__u32 i = 0; i < (S3_FREQ_MAX + 1) * XKV_SA_WAYS_MAX + 1; i++) {
		__u32 pos = s3_oldest(b, ways, 1);
		if (pos < ways) {
			__u32 w = ord_at(b, pos);
			if (b->ref[w] < S3_TO_MAIN) {
				b->ghost[b->ghead & XKV_SA_WM] = b->tag[w];
				b->ghead = (b->ghead + 1) & XKV_SA_WM;
				return w;
			}
			b->small &= (__u8)~(1u << w);
			b->ref[w] = 0;
			ord_to_newest(b, ways, pos);
			continue;
		}
		pos = s3_oldest(b, ways, 0);
		if (pos >= ways) /* not reached: small and main both empty in a full bucket */
			break;
		__u32 w = ord_at(b, pos);
		if (!b->ref[w])
			return w;
		b->ref[w]--;
		ord_to_newest(b, ways, pos);
	}
	return ord_at(b, 0); /* not reached: the loop finds one */
}

/* A new key with tag `tag` in way w: the victim (fresh 0) or a free way
 * (fresh 1). */
static inline void pol_insert(struct xkv_sa_bucket *b, __u32 ways, __u32 w, __u16 tag, int fresh)
{
	int ghost = 0;
	__u32 nsmall = 0;
	w &= XKV_SA_WM;
	for (__u32 i = 0; i < XKV_SA_WAYS_MAX; i++) {
		if (b->ghost[i] == tag && !ghost) {
			b->ghost[i] = 0;
			ghost = 1;
		}
		if (i < ways && i != w)
			nsmall += s3_in_small(b, i);
	}
	if (ghost || (fresh && nsmall >= S3_SMALL))
		b->small &= (__u8)~(1u << w);
	else
		b->small |= (__u8)(1u << w);
	b->ref[w] = 0;
	ord_to_newest(b, ways, ord_pos(b, ways, w));
}

static inline void pol_drop(struct xkv_sa_bucket *b, __u32 w)
{
	w &= XKV_SA_WM;
	b->ref[w] = 0;
	b->small &= (__u8)~(1u << w);
}

#endif
