/* SPDX-License-Identifier: MIT */
/* set_assoc bucket geometry and protocol, shared by the XDP program and the
 * userspace accessor (which works on the mmapped array).
 *
 * The store is a BPF_MAP_TYPE_ARRAY of buckets.  A bucket is one 64-byte
 * header line and `ways` ways; a way is a struct xkv_entry with the key in
 * front of the value (as array_fnv's slot):
 *
 *   [seq u32][hand u8][pad 3][ref u8 x 8][tag u16 x 8][policy 32] | way 0 | way 1 | ...
 *
 * Three layouts share this bucket, its locking and its code (bucket_store.bpf.h,
 * bucket_user.h) and differ only in the replacement policy inside a bucket:
 * set_assoc (CLOCK, clock.h), sieve (variants/sieve/sieve.h) and s3fifo
 * (variants/s3fifo/s3fifo.h).  The last 32 header bytes are the policy's
 * (insertion order, queue membership, ghost tags); CLOCK leaves them zero.
 *
 * A lookup reads the header line, compares the 16-bit tags, and touches only
 * the ways whose tag matches (the full key compare decides).
 *
 * Locking: bucket.seq is the bucket's writer lock and sequence counter (the
 * slot.h protocol: CAS even -> odd, CAS odd -> even).  A writer holding it
 * at odd value `own` marks the way it writes with way.seq = own (odd), writes
 * tag, key and value, then sets way.seq = own + 1 (a CAS, so a writer robbed
 * meanwhile knows).  A reader of one item (the XDP get, userspace get and
 * scan) follows the way's seq as array_fnv's readers follow a slot's: even,
 * copy, unchanged -> one whole version.  Way seqs come from the bucket's
 * counter, so they only grow.  A userspace writer killed inside leaves the
 * bucket odd at one value; userspace steals it after XKV_SLOT_STEAL_MS
 * (seq_steal), empties every way left odd, and releases it.
 *
 * Replacement: a store of a new key takes an empty or expired way first
 * (the lowest), else the policy's victim; the policy sees every get hit
 * (pol_hit), picks the victim of a full bucket (pol_victim), is told which
 * way a new key took (pol_insert) and which way was emptied (pol_drop).
 * Only ref[] is written outside the bucket lock (by a get hit); the rest of
 * the header is written under it. */
#ifndef XDPKV_SET_ASSOC_BUCKET_H
#define XDPKV_SET_ASSOC_BUCKET_H

#include "entry.h"

#define XKV_SA_HDR 64u
#define XKV_SA_WAYS_MAX 8u

struct xkv_sa_bucket {
	__u32 seq;                    /* writer lock / sequence counter */
	__u8 hand;                    /* CLOCK hand: next way a sweep looks at */
	__u8 _pad[3];
	__u8 ref[XKV_SA_WAYS_MAX];    /* per way: CLOCK reference bit, SIEVE visited
				       * bit, S3-FIFO 2-bit frequency (a byte each) */
	__u16 tag[XKV_SA_WAYS_MAX];   /* 16 bits of the key's hash, per way */
	/* policy state (sieve, s3fifo; zero for set_assoc) */
	__u8 ord[XKV_SA_WAYS_MAX];    /* insertion order, oldest first (order.h) */
	__u8 small;                   /* s3fifo: bit w set = way w is in the small FIFO */
	__u8 ghead;                   /* s3fifo: next ghost[] entry to overwrite */
	__u8 _pad2[6];
	__u16 ghost[XKV_SA_WAYS_MAX]; /* s3fifo: tags of keys evicted from small (0: none) */
};
/* the header is one line (a typedef, not _Static_assert: C++ includes it too) */
typedef char xkv_sa_hdr_is_one_line[sizeof(struct xkv_sa_bucket) == XKV_SA_HDR ? 1 : -1];

/* Bytes between ways: the entry rounded up to a cache line, unless that
 * wastes more than an eighth of it (then to 8 bytes, as the map does). */
static inline __u32 xkv_sa_stride(__u32 entry_size)
{
	__u32 line = (entry_size + 63u) & ~63u;
	return line - entry_size <= entry_size / 8 ? line : ((entry_size + 7u) & ~7u);
}

/* 8 ways while a way is at most 512 bytes; 4 for larger values, so that a
 * writer copying a large value (the bucket is locked meanwhile) holds up
 * fewer items, and entries round to 4 instead of 8. */
static inline __u32 xkv_sa_ways(__u32 entry_size)
{
	return xkv_sa_stride(entry_size) <= 512 ? 8u : 4u;
}

static inline __u32 xkv_sa_bucket_size(__u32 entry_size)
{
	return XKV_SA_HDR + xkv_sa_ways(entry_size) * xkv_sa_stride(entry_size);
}

/* cfg.entries is a whole number of buckets (xkv_config_finish rounds it). */
static inline __u32 xkv_sa_buckets(__u32 entries, __u32 entry_size)
{
	return entries / xkv_sa_ways(entry_size);
}

/* The bucket and the tag of a key's hash (hash.h): the low 32 bits pick the
 * bucket, the top 16 are the tag (never 0: 0 marks a way never written). */
static inline __u32 xkv_sa_bucket_of(__u64 h, __u32 nbuckets)
{
	return (__u32)((__u32)h % nbuckets);
}
static inline __u16 xkv_sa_tag_of(__u64 h)
{
	__u16 t = (__u16)(h >> 48);
	return t ? t : 1;
}

#ifndef __bpf__
#include <string.h>
/* The layouts built on this bucket, by name (tests and tools that look
 * inside a bucket, or that treat these layouts alike). */
static inline int xkv_sa_layout(const char *name)
{
	return !strcmp(name, "set_assoc") || !strcmp(name, "sieve") || !strcmp(name, "s3fifo");
}
#endif

#endif
