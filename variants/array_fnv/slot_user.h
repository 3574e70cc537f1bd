/* SPDX-License-Identifier: MIT */
/* Userspace side of the slot protocol (slot.h) shared by array_fnv and
 * set_assoc: reading one whole version of a slot (a set_assoc way), telling
 * a writer that died inside a slot (or a bucket) from a live one, and the
 * test knobs that make one die. */
#ifndef XDPKV_SLOT_USER_H
#define XDPKV_SLOT_USER_H

#include <errno.h>
#include <stdbool.h>
#include <linux/types.h>

#include "xdpkv.h"

/* Copy slot e's header, key and value into buf (cfg.entry_size bytes) as one
 * whole version (the reader side of slot.h): 1 a live item, 0 empty or
 * expired, -EBUSY a writer held it through every retry. */
int xkv_slot_read(const struct xkv_store *s, const struct xkv_entry *e, struct xkv_entry *buf,
		  __u64 now);

/* XKV_SLOT_STEAL_MS, or XDPKV_SLOT_STEAL_MS from the environment (tests). */
__u64 xkv_wedge_steal_ns(void);
/* XDPKV_TEST_DIE_IN_SLOT: "1" SIGKILL, "stop" SIGSTOP, else 0 (test_wedge
 * makes a writer die halfway through a value; once per process). */
int xkv_wedge_die_signal(void);
/* Has the counter at addr been odd at seq q for the steal timeout?  The
 * first sight starts the clock; nobody waits for it: requests fail fast
 * until then. */
bool xkv_wedged(const void *addr, __u32 q, __u64 steal_ns);
/* Forget the counters in [lo, hi) (taken back, or unmapped). */
void xkv_wedge_forget(const void *lo, const void *hi);

/* The item of a slot copy read by xkv_slot_read (key_size bytes of key first). */
void xkv_slot_item(const struct xkv_store *s, const struct xkv_entry *buf, struct xkv_item *it);
/* A conditional store's decision (set_if), made by a writer holding the
 * slot's (the bucket's) lock: cur is the slot (way) holding the key, NULL if
 * none; a live item in it is copied to *it and given to fn, which fills n.
 * fn's verdict (0: store n), or -E2BIG when the value it chose is over
 * cfg.val_cap. */
int xkv_slot_decide(const struct xkv_store *s, const struct xkv_entry *cur, xkv_decide_fn fn, void *arg,
		    struct xkv_item *it, struct xkv_entry *n);
/* One try of a store under a slot's (a bucket's) lock, by a layout: at is
 * where the key goes (the layout's own struct), it room for the current
 * item (NULL without fn).  Take the lock, decide (fn: xkv_slot_decide; NULL:
 * store n as it is), write, release.  0 stored, fn's >0, <0 -errno, or
 * XKV_ROBBED: the lock was stolen while it wrote (it stalled inside longer
 * than XKV_SLOT_STEAL_MS), so what it wrote may be mixed with the thief's. */
typedef int (*xkv_store_try_fn)(struct xkv_store *s, void *at, xkv_decide_fn fn, void *arg,
				struct xkv_item *it, struct xkv_entry *n);
#define XKV_ROBBED (-EINTR)
/* A layout's set (fn NULL) and set_if: tries until one is not robbed.  A
 * robbed writer takes the lock again, decides again on what is there now
 * and rewrites its whole value; until then (or until whoever holds it now
 * rewrites it) readers can see the mix: the one torn read left, and only
 * for a writer stalled past the timeout. */
int xkv_slot_store(struct xkv_store *s, void *at, xkv_decide_fn fn, void *arg, struct xkv_entry *n,
		   xkv_store_try_fn try);
/* Write n's value at v; with die (test_wedge's signal, once per process)
 * die halfway through it. */
void xkv_slot_put_value(const struct xkv_store *s, __u8 *v, const struct xkv_entry *n, int *die);
/* One slot of a scan: a live item in e is copied whole and given to fn;
 * *n counts visits, *busy slots a writer held.  fn's non-zero return, or 0. */
int xkv_slot_visit(const struct xkv_store *s, const struct xkv_entry *e, struct xkv_entry *buf, __u64 now,
		   xkv_visit_fn fn, void *arg, long *n, __u64 *busy);

/* mmap the store's n slots (or buckets) of stride bytes into s->mm. */
int xkv_slots_map(struct xkv_store *s, __u32 stride, __u32 n);
void xkv_slots_unmap(struct xkv_store *s);

/* Empty what a writer that died inside [at, at + len) held; the caller owns
 * its counter at odd seq own. */
typedef void (*xkv_mend_fn)(struct xkv_store *s, void *at, __u32 own);
/* The counter seq (of the slot or bucket at [at, at + len)) stayed odd
 * through a whole retry loop that began at q0.  If it is still q0 (a live
 * writer's section is microseconds; a seq that only wrapped around to q0
 * would have moved meanwhile) and was q0 steal_ns ago, its writer died
 * inside: steal it, mend it, count a slot_repair.  The odd seq now owned
 * (the caller writes or not, then releases), or 0. */
__u32 xkv_seq_repair(struct xkv_store *s, __u32 *seq, __u32 q0, __u64 steal_ns, void *at, size_t len,
		     xkv_mend_fn mend);
/* Take the counter's writer side (retrying, then repairing a dead writer's):
 * 0 and the seq owned in *own, or -EBUSY. */
int xkv_seq_take(struct xkv_store *s, __u32 *seq, __u32 *own, __u64 steal_ns, void *at, size_t len,
		 xkv_mend_fn mend);

/* Where a slot store goes: the packed key, add's only_free, and the layout's
 * place for it (array_fnv: the slot index; arena: the home slot). */
struct xkv_slot_where {
	__u8 k[XKV_KEY_MAX + 8];
	__u32 klen;
	bool only_free;
	__u32 at;
};
struct xkv_slot_ops {
	__u32 (*locate)(const struct xkv_store *s, const __u8 *k, __u32 klen); /* -> where.at */
	xkv_store_try_fn try; /* where: a struct xkv_slot_where */
	__u32 table_off;      /* slot 0 in the mapping (arena: past its header) */
};
/* set, set_if and add (only where no live item is replaced: -EEXIST the
 * key's, -EADDRINUSE another key's) of a layout with slot_ops */
int xkv_slots_set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n);
int xkv_slots_set_if(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		     struct xkv_entry *n);
int xkv_slots_add(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n);

/* The slots of array_fnv and arena (cfg.entries of s->slot_stride bytes from
 * slot_ops->table_off in s->mm), for both accessors. */
/* mend for a slot: empty it */
void xkv_slot_mend(struct xkv_store *s, void *at, __u32 own);
/* Does slot e hold key k (packed, klen bytes)? */
bool xkv_slot_match(const struct xkv_store *s, const struct xkv_entry *e, const __u8 *k, __u32 klen);
/* Write n (key k) into slot e, whose writer side the caller holds (die:
 * xkv_slot_put_value's).  What it counts: bit 0 a new item, bit 1 an item of
 * another key overwritten (as the XDP side counts them). */
int xkv_slot_fill(struct xkv_store *s, struct xkv_entry *e, const __u8 *k, __u32 klen, const struct xkv_entry *n,
		  int *die);
/* count, flush, span and scan (xkv_layout) over the slots of a layout with slot_ops */
long xkv_slots_count(struct xkv_store *s);
int xkv_slots_flush(struct xkv_store *s, __u64 cut);
__u64 xkv_slots_span(const struct xkv_store *s);
long xkv_slots_scan(struct xkv_store *s, __u64 lo, __u64 hi, xkv_visit_fn fn, void *arg, __u64 *busy);
/* The accessor fields those give a layout (get and del are its own). */
#define XKV_SLOTS_ACCESSOR                                                                 \
	.set = xkv_slots_set, .set_if = xkv_slots_set_if, .add = xkv_slots_add,            \
	.count = xkv_slots_count, .flush = xkv_slots_flush, .span = xkv_slots_span,        \
	.scan = xkv_slots_scan

#endif
