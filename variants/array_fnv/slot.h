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
#include "fnv.h"

#ifndef EBUSY
#define EBUSY 16
#endif

/* How long a slot must stay odd with one seq value before userspace takes it
 * from its writer.  Far above any live section (an XDP one is microseconds,
 * a userspace one a memcpy of at most a few KiB), low enough that a key does
 * not answer "busy" for long after a crashed `xdpkv set`.  Overridden per
 * process by the environment variable XDPKV_SLOT_STEAL_MS (tests). */
#define XKV_SLOT_STEAL_MS 1000

static inline __u32 slot_seq(const struct xkv_entry *e)
{
	return *(const volatile __u32 *)&e->seq;
}

/* Take the slot's writer side: the odd seq now owned, or 0 (never odd) if
 * another writer holds it. */
static inline __u32 slot_lock(struct xkv_entry *e)
{
	__u32 s = slot_seq(e);
	if (s & 1)
		return 0;
	if (__sync_val_compare_and_swap(&e->seq, s, s + 1) != s)
		return 0;
	return s + 1;
}

/* Take the slot from a writer that holds it at odd seq s (presumed dead):
 * the odd seq now owned, or 0 if seq moved (the writer was alive after all,
 * or another thief was faster). */
static inline __u32 slot_steal(struct xkv_entry *e, __u32 s)
{
	if (!(s & 1) || __sync_val_compare_and_swap(&e->seq, s, s + 2) != s)
		return 0;
	return s + 2;
}

/* Release what slot_lock/slot_steal returned.  A CAS rather than +1, so a
 * writer that was robbed neither makes the thief's section look even nor
 * goes on unaware: 1 released, 0 the slot was stolen while we were inside
 * (our bytes may be mixed with the thief's: the caller redoes or gives up). */
static inline int slot_unlock(struct xkv_entry *e, __u32 own)
{
	return __sync_val_compare_and_swap(&e->seq, own, own + 1) == own;
}

/* Slot of a key: FNV-1a over the key bytes, modulo the number of slots. */
static inline __u32 slot_index(const __u8 *key, __u32 klen, __u32 entries)
{
	return (__u32)(xkv_fnv1a(key, klen) % entries);
}

#endif
