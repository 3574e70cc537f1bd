// SPDX-License-Identifier: MIT
/* array_fnv: userspace side.  The slots are mmapped (BPF_F_MMAPABLE) and
 * read and written with the same sequence-counter protocol as the XDP
 * program (slot.h), so neither side sees a torn value.  A userspace writer
 * can be killed inside a slot: this side takes such slots back (repair,
 * below), at the price of one rare torn read (set()). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "array_fnv/slot.h"
#include "array_fnv/slot_user.h"
#include "array_fnv.skel.h"

XKV_LAYOUT_ELF(array_fnv)

static __u64 steal_ns = XKV_SLOT_STEAL_MS * 1000000ull;
/* test_wedge: XDPKV_TEST_DIE_IN_SLOT=1 makes set() SIGKILL itself inside a
 * slot, =stop SIGSTOP (a writer that is only slow); once per process */
static int die_in_slot;

static __u32 repair(struct xkv_store *s, struct xkv_entry *e, __u32 q0)
{
	return xkv_seq_repair(s, &e->seq, q0, steal_ns, e, s->cfg.entry_size, xkv_slot_mend);
}

static int open_slots(struct xkv_store *s)
{
	steal_ns = xkv_wedge_steal_ns();
	die_in_slot = xkv_wedge_die_signal();
	return xkv_slots_map(s, (s->cfg.entry_size + 7) & ~7u, s->cfg.entries);
}

static struct xkv_entry *slot(struct xkv_store *s, __u32 i)
{
	return (struct xkv_entry *)((__u8 *)s->mm + (size_t)i * s->slot_stride);
}

static int get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	struct xkv_entry *e = slot(s, slot_index(s->cfg.hash_seed, k, klen, s->cfg.entries));
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	if (!buf)
		return -ENOMEM;
	__u32 q0 = slot_seq(e);
	int r = xkv_slot_read(s, e, buf, xkv_now_ns());
	if (r == 1 && xkv_slot_match(s, buf, k, klen)) {
		xkv_slot_item(s, buf, it);
	} else if (r == 1) {
		r = 0;
	}
	free(buf);
	if (r != -EBUSY)
		return r;
	/* repaired: it holds nothing now (if another writer stole it from us
	 * meanwhile, that writer makes it whole; a miss is still true) */
	__u32 own = repair(s, e, q0);
	if (own) {
		slot_unlock(e, own);
		return 0;
	}
	return -EBUSY;
}

/* Take slot e's writer side: 0 and the seq owned in *own, or -EBUSY.  A slot
 * whose writer died inside comes back repaired, i.e. empty. */
static int take(struct xkv_store *s, struct xkv_entry *e, __u32 *own)
{
	return xkv_seq_take(s, &e->seq, own, steal_ns, e, s->cfg.entry_size, xkv_slot_mend);
}

/* One try of a store under the slot's lock (xkv_slot_store): fn decides
 * from the live item of this key in the slot, so the read, the decision
 * and the write are one step for every writer that takes the lock, XDP
 * included. */
static int store_try(struct xkv_store *s, void *where, xkv_decide_fn fn, void *arg, struct xkv_item *it,
		     struct xkv_entry *n)
{
	struct xkv_slot_where *at = where;
	struct xkv_entry *e = slot(s, at->at);
	__u32 own;
	int rc;
	if (take(s, e, &own))
		return -EBUSY;
	if (at->only_free && e->wtime_ns && xkv_entry_live(e, xkv_now_ns())) {
		rc = xkv_slot_match(s, e, at->k, at->klen) ? -EEXIST : -EADDRINUSE;
		slot_unlock(e, own);
		return rc;
	}
	if (fn && (rc = xkv_slot_decide(s, xkv_slot_match(s, e, at->k, at->klen) ? e : NULL, fn, arg, it, n))) {
		slot_unlock(e, own);
		return rc;
	}
	int counts = xkv_slot_fill(s, e, at->k, at->klen, n, &die_in_slot);
	if (!slot_unlock(e, own))
		return XKV_ROBBED; /* a thief emptied the slot or stored its own value */
	s->new_items += counts & 1;
	s->overwrites += counts >> 1;
	return 0;
}

static __u32 locate(const struct xkv_store *s, const __u8 *k, __u32 klen)
{
	return slot_index(s->cfg.hash_seed, k, klen, s->cfg.entries);
}

static const struct xkv_slot_ops slot_ops = { .locate = locate, .try = store_try };

static int del(struct xkv_store *s, const void *key, __u32 klen)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	struct xkv_entry *e = slot(s, slot_index(s->cfg.hash_seed, k, klen, s->cfg.entries));
	__u32 own;
	if (take(s, e, &own))
		return -EBUSY;
	int found = e->wtime_ns && xkv_slot_match(s, e, k, klen);
	int live = found && xkv_entry_live(e, xkv_now_ns());
	if (found)
		e->wtime_ns = 0;
	/* robbed (stalled past the timeout): the thief emptied the slot or
	 * stored over it, and our late wtime_ns = 0 may have dropped what it
	 * stored; nothing to redo for a delete */
	slot_unlock(e, own);
	return live;
}

const struct xkv_layout xkv_layout_array_fnv = {
	.name = "array_fnv",
	.summary = "BPF_MAP_TYPE_ARRAY, slot = keyed hash(key) % entries (BMC-style cache)",
	.loses = "items overwritten by a colliding key (counted exactly)",
	.map_type = BPF_MAP_TYPE_ARRAY,
	.key_in_value = true,
	.hash_seeded = true,
	.elf = elf,
	.open = open_slots,
	.close = xkv_slots_unmap,
	.slot_ops = &slot_ops,
	.get = get,
	.del = del,
	XKV_SLOTS_ACCESSOR,
};
