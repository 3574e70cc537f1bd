/* SPDX-License-Identifier: MIT */
/* array_fnv slot protocol, shared by the XDP program and the userspace
 * accessor (which works on the mmapped array).  xkv_entry.seq is even when
 * the slot is stable and odd while one writer is inside.
 *   writer: own = slot_lock (CAS even s -> s+1), write,
 *           slot_unlock(own) (CAS own -> own+1); it fails if the slot was stolen
 *   reader: s1 = seq (retry if odd), read, s2 = seq, retry if s1 != s2
 * A userspace writer can die inside (SIGKILL), leaving the slot odd for good.
 * Userspace takes such a slot back (array_fnv_user.c): odd with the same
 * value for XKV_SLOT_STEAL_MS -> slot_steal (CAS s -> s+2: still odd, the
 * thief owns it), empty it, release.  The XDP side never steals: its
 * sections last microseconds and cannot be killed halfway. */
#ifndef XDPKV_ARRAY_FNV_SLOT_H
#define XDPKV_ARRAY_FNV_SLOT_H

#include "entry.h"
#include "hash.h"

#ifndef EBUSY
#define EBUSY 16
#endif

/* How long a slot must stay odd with one seq value before userspace takes it
 * from its writer.  Far above any live section (an XDP one is microseconds,
 * a userspace one a memcpy of at most a few KiB), low enough that a key does
 * not answer "busy" for long after a crashed `xdpkv set`.  Overridden per
 * process by the environment variable XDPKV_SLOT_STEAL_MS (tests). */
#define XKV_SLOT_STEAL_MS 1000

/* The protocol on any sequence counter (set_assoc uses it for its buckets). */
static inline __u32 seq_read(const __u32 *seq)
{
	return *(const volatile __u32 *)seq;
}

/* Take the writer side: the odd seq now owned, or 0 (never odd) if another
 * writer holds it. */
static inline __u32 seq_lock(__u32 *seq)
{
	__u32 s = seq_read(seq);
	if (s & 1)
		return 0;
	if (__sync_val_compare_and_swap(seq, s, s + 1) != s)
		return 0;
	return s + 1;
}

/* Take it from a writer that holds it at odd seq s (presumed dead): the odd
 * seq now owned, or 0 if seq moved (the writer was alive after all, or
 * another thief was faster). */
static inline __u32 seq_steal(__u32 *seq, __u32 s)
{
	if (!(s & 1) || __sync_val_compare_and_swap(seq, s, s + 2) != s)
		return 0;
	return s + 2;
}

/* Release what seq_lock/seq_steal returned.  A CAS rather than +1, so a
 * writer that was robbed neither makes the thief's section look even nor
 * goes on unaware: 1 released, 0 it was stolen while we were inside (our
 * bytes may be mixed with the thief's: the caller redoes or gives up). */
static inline int seq_unlock(__u32 *seq, __u32 own)
{
	return __sync_val_compare_and_swap(seq, own, own + 1) == own;
}

/* The same on a slot's own counter (xkv_entry.seq). */
static inline __u32 slot_seq(const struct xkv_entry *e)
{
	return seq_read(&e->seq);
}
static inline __u32 slot_lock(struct xkv_entry *e)
{
	return seq_lock(&e->seq);
}
static inline __u32 slot_steal(struct xkv_entry *e, __u32 s)
{
	return seq_steal(&e->seq, s);
}
static inline int slot_unlock(struct xkv_entry *e, __u32 own)
{
	return seq_unlock(&e->seq, own);
}

/* A writer inside slot e copies the new item's header (n: the entry being
 * stored, klen its key length, n's meta state kept); key and value bytes
 * follow. */
static inline void slot_put_head(struct xkv_entry *e, const struct xkv_entry *n, __u32 klen)
{
	e->expire_ns = n->expire_ns;
	e->wtime_ns = n->wtime_ns;
	e->flags = n->flags;
	e->len = n->len;
	e->klen = klen | (n->klen & XKV_ENT_STATE);
}

/* BPF side: does slot entry e hold the request's key (sc: the handler's
 * scratch)?  klen's meta state bits are not the key's (entry.h).  Used by
 * every layout that keeps the key in the value (ops.bpf.h's hook). */
#define XKV_STORE_MATCH(sc, e) \
	(((e)->klen & XKV_ENT_KLEN) == (sc)->klen && xkv_key_eq((e)->data, (sc)->key))

/* Slot of a key: the placement hash (hash.h: keyed by cfg.hash_seed, FNV-1a
 * when it is 0) modulo the number of slots.  key is the packed map key. */
static inline __u32 slot_index(__u64 seed, const __u8 *key, __u32 klen, __u32 entries)
{
	return (__u32)(xkv_key_hash(seed, key, klen) % entries);
}

#endif
