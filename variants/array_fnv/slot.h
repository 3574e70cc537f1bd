/* SPDX-License-Identifier: MIT */
/* array_fnv slot protocol, shared by the XDP program and the userspace
 * accessor (which works on the mmapped array).  xkv_entry.seq is even when
 * the slot is stable and odd while one writer is inside.
 *   writer: slot_lock (CAS even -> odd), write, slot_unlock (+1 -> even)
 *   reader: s1 = seq (retry if odd), read, s2 = seq, retry if s1 != s2   */
#ifndef XDPKV_ARRAY_FNV_SLOT_H
#define XDPKV_ARRAY_FNV_SLOT_H

#include "entry.h"
#include "fnv.h"

#ifndef EBUSY
#define EBUSY 16
#endif

static inline __u32 slot_seq(const struct xkv_entry *e)
{
	return *(const volatile __u32 *)&e->seq;
}

/* Take the slot's writer side; -EBUSY if another writer holds it. */
static inline int slot_lock(struct xkv_entry *e)
{
	__u32 s = slot_seq(e);
	if (s & 1)
		return -EBUSY;
	if (__sync_val_compare_and_swap(&e->seq, s, s + 1) != s)
		return -EBUSY;
	return 0;
}

static inline void slot_unlock(struct xkv_entry *e)
{
	__sync_fetch_and_add(&e->seq, 1);
}

/* Slot of a key: FNV-1a over the key bytes, modulo the number of slots. */
static inline __u32 slot_index(const __u8 *key, __u32 klen, __u32 entries)
{
	return (__u32)(xkv_fnv1a(key, klen) % entries);
}

#endif
