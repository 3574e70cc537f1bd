// SPDX-License-Identifier: MIT
/* The chunks of big values (above val_cap) that no item needs any more:
 * those of a replaced or deleted value linger a little (big_retire, a ring
 * drained as they fall due), and when the big map is full the chunks no
 * item points at are collected (big_collect_now, xkv_slow_big_collect). */
#include "engine_int.h"

#define SLOW_BIG_GRACE_NS (2ull * 1000000000ull)

/* Remove what is due (all: everything), under old_mu. */
static void big_old_drain(struct xkv_slow *sl, bool all)
{
	__u64 now = all ? 0 : xkv_now_ns();
	while (sl->old_n) {
		struct big_old *o = &sl->old[sl->old_head];
		if (!all && o->due > now && sl->old_n < SLOW_BIG_OLD_MAX && sl->old_bytes <= sl->old_max)
			break;
		xkv_big_del(sl->s, o->key, o->klen, o->stamp, o->len);
		sl->old_bytes -= o->len;
		sl->old_head = (sl->old_head + 1) % SLOW_BIG_OLD_MAX;
		sl->old_n--;
	}
}

void big_retire(struct slow_cmd *c, const void *key, __u32 klen, __u64 stamp, __u32 len)
{
	struct xkv_slow *sl = c->sl;
	/* (c->s is this thread's copy of sl->s: the same big map) */
	if (!sl->old || sl->mig_state != MIG_NONE || klen > XKV_KEY_MAX) {
		xkv_big_del(c->s, key, klen, stamp, len);
		return;
	}
	pthread_mutex_lock(&sl->old_mu);
	if (sl->old_n == SLOW_BIG_OLD_MAX) { /* full: the oldest goes now */
		struct big_old *o = &sl->old[sl->old_head];
		xkv_big_del(sl->s, o->key, o->klen, o->stamp, o->len);
		sl->old_bytes -= o->len;
		sl->old_head = (sl->old_head + 1) % SLOW_BIG_OLD_MAX;
		sl->old_n--;
	}
	struct big_old *o = &sl->old[(sl->old_head + sl->old_n) % SLOW_BIG_OLD_MAX];
	o->due = xkv_now_ns() + SLOW_BIG_LINGER_NS;
	o->stamp = stamp;
	o->len = len;
	o->klen = klen;
	memcpy(o->key, key, klen);
	sl->old_n++;
	sl->old_bytes += len;
	big_old_drain(sl, false);
	pthread_mutex_unlock(&sl->old_mu);
}

/* Everything waiting goes now (a migration begins, the slow path ends). */
void big_old_flush(struct xkv_slow *sl)
{
	if (!sl->old)
		return;
	pthread_mutex_lock(&sl->old_mu);
	big_old_drain(sl, true);
	pthread_mutex_unlock(&sl->old_mu);
}

__u64 big_write_begin(struct xkv_slow *sl)
{
	pthread_mutex_lock(&sl->wr_mu);
	__u64 stamp = xkv_write_stamp(); /* under the lock: see big_keep */
	if (sl->wr_n < SLOW_BIG_WRITES)
		sl->wr_stamp[sl->wr_n++] = stamp;
	pthread_mutex_unlock(&sl->wr_mu);
	return stamp;
}

void big_write_end(struct xkv_slow *sl, __u64 stamp)
{
	pthread_mutex_lock(&sl->wr_mu);
	for (unsigned i = 0; i < sl->wr_n; i++)
		if (sl->wr_stamp[i] == stamp) {
			sl->wr_stamp[i] = sl->wr_stamp[--sl->wr_n];
			break;
		}
	pthread_mutex_unlock(&sl->wr_mu);
}

/* The writes in progress, for a collection: since_ns read first, then the
 * list under wr_mu; a write listed later took its stamp (under wr_mu)
 * after since_ns, so the collection's cut (since_ns - grace) keeps it. */
static void big_keep(struct xkv_slow *sl, struct xkv_big_keep *keep, __u64 *stamps)
{
	keep->since_ns = xkv_now_ns();
	pthread_mutex_lock(&sl->wr_mu);
	memcpy(stamps, sl->wr_stamp, sl->wr_n * sizeof(*stamps));
	keep->n = sl->wr_n;
	pthread_mutex_unlock(&sl->wr_mu);
	keep->stamps = stamps;
}

/* The big map is full: remove the chunks nobody points at (not while a
 * migration runs: the new store's items are not looked at).  Returns the
 * chunks removed (by this call or a concurrent one), 0 if none could be. */
__u64 big_collect_now(struct slow_cmd *c)
{
	struct xkv_slow *sl = c->sl;
	struct xkv_big_census cs;

	if (sl->mig_state != MIG_NONE)
		return 0;
	big_old_flush(sl); /* the lingering ones first */
	pthread_mutex_lock(&sl->big_mu);
	__u64 stamps[SLOW_BIG_WRITES];
	struct xkv_big_keep keep;
	big_keep(sl, &keep, stamps);
	long r = xkv_big_collect(c->s, SLOW_BIG_GRACE_NS, &keep, &cs);
	if (r >= 0) {
		sl->big_last = cs;
		__atomic_add_fetch(&sl->big_removed, cs.removed, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&sl->big_mu);
	return r >= 0 ? cs.removed : 0;
}

long xkv_slow_big_collect(struct xkv_slow *sl, struct xkv_big_census *out)
{
	struct slow_cmd c = { .sl = sl, .s = sl->s };
	struct xkv_big_census cs = {};
	long r = 0;

	xkv_slow_hold(sl);
	if (xkv_big_on(sl->s) && sl->mig_state == MIG_NONE) {
		if (sl->old) {
			pthread_mutex_lock(&sl->old_mu);
			big_old_drain(sl, false);
			pthread_mutex_unlock(&sl->old_mu);
		}
		pthread_mutex_lock(&sl->big_mu);
		__u64 stamps[SLOW_BIG_WRITES];
		struct xkv_big_keep keep;
		big_keep(sl, &keep, stamps);
		r = xkv_big_collect(c.s, SLOW_BIG_GRACE_NS, &keep, &cs);
		if (r >= 0) {
			sl->big_last = cs;
			__atomic_add_fetch(&sl->big_removed, cs.removed, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&sl->big_mu);
	}
	xkv_slow_release(sl);
	if (out)
		*out = cs;
	return r;
}
