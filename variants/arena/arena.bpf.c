// SPDX-License-Identifier: MIT
/* arena: an open-addressing table in a BPF arena (BPF_MAP_TYPE_ARENA): slots
 * of array_fnv's record (xkv_entry with its sequence counter, key and value
 * inline) in one allocation, a key in one of XKV_AR_WINDOW slots from its
 * home slot (keyed hash mod entries); table.h has the layout.
 *
 * Lookups scan the whole window, so a delete only empties its slot (no
 * tombstones).  A store takes the home slot's counter first (so two stores
 * of one key never both insert it), then the slot it writes: the key's own,
 * else the first without a live item, else the one written longest ago
 * (smallest write stamp), whose item is replaced (counted in overwrites).
 * Readers follow the slot's counter exactly as array_fnv's do.
 *
 * Needs clang >= 18 (BPF address spaces).  The arena's user address comes
 * from cfg.arena_base (the loader creates the arena there, map_extra); XDP
 * never allocates: userspace faults in every page when it first opens the
 * store and then sets the header's ready word; stores wait for it (-EBUSY:
 * the slow path answers), lookups need not (a page nobody faulted in reads
 * as 0, an empty slot). */
#include "prelude.bpf.h"
#include "array_fnv/slot.h"
#include "arena/table.h"

#ifndef __BPF_FEATURE_ADDR_SPACE_CAST
#error "arena.bpf.c needs a clang with BPF address spaces (clang >= 18)"
#endif
#define __arena __attribute__((address_space(1)))

struct {
	__uint(type, XKV_MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* pages; sized by the loader */
} store SEC(".maps");

#define XKV_KEY_IN_VALUE 1
/* binary writes over TCP go to serve: with its value copies, the binary
 * request program (a get's and a set's) took 342,471 instructions of the
 * verifier on 6.12, over the budget (docs/kernels.md) */
#define XKV_TCPX_NO_BIN_WRITES
/* with binary keys (attach's default) a request goes through the tokenizer,
 * not the get/set shortcuts: with both, the entry program took 250,605
 * instructions on 6.12 at keys 250 / values 16384 (docs/kernels.md) */
#define XKV_QUICK_STRICT_ONLY
#include "array_fnv/slot_del.bpf.h"
/* Out of the arena in aligned words into the scratch entry (unused by a
 * get), then to the reply by the helper: no helper can take an arena
 * pointer (the program holds it as a 32-bit offset into the arena), and a
 * word copy straight to reply[o] (any o) compiles to byte moves.  The
 * handler checked len <= cfg.val_cap, the room after sc->entry. */
#define XKV_STORE_COPY_VALUE(sc, o, e, len)                                         \
	do {                                                                        \
		__u64 *to_ = (__u64 *)(sc)->entry.data;                             \
		const __u64 *from_ = (const __u64 *)(e)->data + cfg.key_size / 8;   \
		for (__u32 w_ = 0; w_ < 2048 / 8; w_++) {                           \
			if (w_ * 8 >= (len))                                        \
				break;                                              \
			to_[w_] = from_[w_];                                        \
		}                                                                   \
		bpf_probe_read_kernel(&(sc)->reply[(o) & XKV_RMASK], XKV_LEN(len, 2047), to_); \
	} while (0)

/* The arena as the program reaches it: the user address, cast to the
 * kernel's view.  Naming the map makes it the program's arena (without it
 * the verifier refuses the cast). */
static __always_inline __u8 *arena(void)
{
	asm volatile("" : : "r"(&store));
	return (__u8 *)(__u8 __arena *)cfg.arena_base;
}

static __always_inline struct xkv_entry *slot_at(__u32 i)
{
	return (struct xkv_entry *)(arena() + XKV_AR_TABLE_OFF + (__u64)i * xkv_ar_stride(cfg.entry_size));
}

static __always_inline int ready(void)
{
	return ((struct xkv_ar_hdr *)arena())->ready == XKV_AR_READY;
}

/* The home slot: the placement hash over up to 250 key bytes, a global
 * function verified once. */
__attribute__((noinline)) int xkv_ar_home(struct xkv_scratch *sc)
{
	if (!sc || sc->klen > XKV_KEY_MAX)
		return 0;
	return slot_index(cfg.hash_seed, sc->key, sc->klen, cfg.entries);
}

/* The window position of the slot holding sc's key, or -1. */
__attribute__((noinline)) int xkv_ar_find(struct xkv_scratch *sc, __u32 home)
{
	if (!sc || home >= cfg.entries)
		return -1;
	for (__u32 j = 0; j < XKV_AR_WINDOW; j++) {
		if (j >= xkv_ar_win(cfg.entries))
			break;
		struct xkv_entry *e = slot_at(xkv_ar_slot(home, j, cfg.entries));
		if (e->wtime_ns && XKV_STORE_MATCH(sc, e))
			return (int)j;
	}
	return -1;
}

/* Where a store of sc's key goes (table.h, XKV_AR_SAME / XKV_AR_FREE);
 * read without locks, checked again under the chosen slot's. */
__attribute__((noinline)) int xkv_ar_pick(struct xkv_scratch *sc, __u32 home)
{
	int m = xkv_ar_find(sc, home);
	if (m >= 0)
		return m | XKV_AR_SAME;
	if (!sc || home >= cfg.entries)
		return 0;
	return xkv_ar_choose(arena() + XKV_AR_TABLE_OFF, xkv_ar_stride(cfg.entry_size), home, cfg.entries,
			     sc->entry.wtime_ns);
}

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	__u32 home = (__u32)xkv_ar_home(sc);
	int j = xkv_ar_find(sc, home);
	if (j < 0)
		return NULL;
	/* the handler checks the key again under the slot's seq */
	return slot_at(xkv_ar_slot(home, (__u32)j & (XKV_AR_WINDOW - 1), cfg.entries));
}

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	struct xkv_entry *n = &sc->entry;
	__u32 len = n->len; /* once: the copy below is bounded by it */
	if (!ready())
		return -EBUSY;
	if (len > cfg.val_cap)
		return -E2BIG;
	__u32 home = (__u32)xkv_ar_home(sc);
	struct xkv_entry *h = slot_at(home);
	__u32 own_h = slot_lock(h);
	if (!own_h)
		return -EBUSY;
	int pick = xkv_ar_pick(sc, home);
	__u32 t = xkv_ar_slot(home, (__u32)pick & (XKV_AR_WINDOW - 1), cfg.entries);
	struct xkv_entry *e = h;
	__u32 own = own_h;
	if (t != home) {
		e = slot_at(t);
		own = slot_lock(e);
		if (!own) {
			slot_unlock(h, own_h);
			return -EBUSY;
		}
	}
	int rc = 0, same = e->wtime_ns && XKV_STORE_MATCH(sc, e);
	/* changed since the pick (another key's store took it): the slow path
	 * stores it again */
	if ((pick & XKV_AR_SAME) ? !same : (pick & XKV_AR_FREE) && xkv_entry_live(e, n->wtime_ns)) {
		rc = -EBUSY;
		goto out;
	}
	if (e->wtime_ns && !same)
		stat_inc(st, xkv_entry_live(e, n->wtime_ns) ? XKV_STAT_overwrites : XKV_STAT_store_new);
	else if (!e->wtime_ns)
		stat_inc(st, XKV_STAT_store_new);
	slot_put_head(e, n, n->klen);
	__u32 sz = cfg.key_size + len;
	__u64 *dst = (__u64 *)e->data;
	const __u64 *src = (const __u64 *)n->data;
	for (__u32 w = 0; w < (XKV_KEY_MAX + 6) / 8 + XKV_VAL_MAX / 8; w++) {
		if (w * 8 >= sz)
			break;
		dst[w] = src[w];
	}
out:
	/* robbed only if this section outlasted XKV_SLOT_STEAL_MS, which it
	 * cannot; if it ever were, the slow path redoes the store */
	if (t != home && !slot_unlock(e, own))
		rc = -EBUSY;
	if (!slot_unlock(h, own_h))
		rc = -EBUSY;
	return rc;
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	if (!ready())
		return 0; /* nothing was stored before */
	__u32 home = (__u32)xkv_ar_home(sc);
	int j = xkv_ar_find(sc, home);
	if (j < 0)
		return 0;
	return slot_del(sc, slot_at(xkv_ar_slot(home, (__u32)j & (XKV_AR_WINDOW - 1), cfg.entries)));
}

#include "handler.bpf.h"
