/* SPDX-License-Identifier: MIT */
/* Userspace side of the slot protocol (slot.h) shared by array_fnv and
 * set_assoc: reading one whole version of a slot (a set_assoc way), telling
 * a writer that died inside a slot (or a bucket) from a live one, and the
 * test knobs that make one die. */
#ifndef XDPKV_SLOT_USER_H
#define XDPKV_SLOT_USER_H

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
/* Write n's value at v; with die (test_wedge's signal, once per process)
 * die halfway through it. */
void xkv_slot_put_value(__u8 *v, const struct xkv_entry *n, int *die);
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

#endif
