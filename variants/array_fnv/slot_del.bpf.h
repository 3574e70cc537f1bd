/* SPDX-License-Identifier: MIT */
/* The XDP side's delete in one slot (slot.h's protocol), shared by array_fnv
 * and arena.  Included after slot.h, which defines XKV_STORE_MATCH. */
#ifndef XDPKV_ARRAY_FNV_SLOT_DEL_BPF_H
#define XDPKV_ARRAY_FNV_SLOT_DEL_BPF_H

/* Under slot e's lock, empty it if it holds sc's key: 1 emptied, 0 it does
 * not, -EBUSY the lock was not taken (or was stolen: the slow path retries). */
static __always_inline int slot_del(struct xkv_scratch *sc, struct xkv_entry *e)
{
	__u32 own = slot_lock(e);
	if (!own)
		return -EBUSY;
	int found = e->wtime_ns && XKV_STORE_MATCH(sc, e);
	if (found)
		e->wtime_ns = 0;
	if (!slot_unlock(e, own))
		return -EBUSY;
	return found;
}

#endif
