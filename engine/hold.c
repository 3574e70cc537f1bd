// SPDX-License-Identifier: MIT
/* The store lock every request holds (a migration's switch takes it to
 * change stores: every slot), and the cached item count `stats` answers
 * from. */
#include "engine_int.h"

/* A thread's reader slot: given out in turn at its first request, so
 * that up to SLOW_HOLD_SLOTS threads each lock a rwlock of their own (an
 * uncontended lock whose cache line stays with its thread). */
static int hold_slot(void)
{
	static int next; /* __atomic */
	static __thread int slot = -1;

	if (slot < 0)
		slot = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % SLOW_HOLD_SLOTS;
	return slot;
}

void xkv_slow_hold(struct xkv_slow *sl)
{
	pthread_rwlock_rdlock(&sl->hold[hold_slot()].lk);
}

void xkv_slow_release(struct xkv_slow *sl)
{
	pthread_rwlock_unlock(&sl->hold[hold_slot()].lk);
}

void slow_hold_all(struct xkv_slow *sl)
{
	for (int i = 0; i < SLOW_HOLD_SLOTS; i++)
		pthread_rwlock_wrlock(&sl->hold[i].lk);
}

void slow_release_all(struct xkv_slow *sl)
{
	for (int i = SLOW_HOLD_SLOTS - 1; i >= 0; i--)
		pthread_rwlock_unlock(&sl->hold[i].lk);
}

void slow_hold_init(struct xkv_slow *sl)
{
	pthread_rwlockattr_t ra;

	pthread_rwlockattr_init(&ra);
	/* a switch must not wait behind a stream of requests */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (int i = 0; i < SLOW_HOLD_SLOTS; i++)
		pthread_rwlock_init(&sl->hold[i].lk, &ra);
	pthread_rwlockattr_destroy(&ra);
}

void slow_hold_destroy(struct xkv_slow *sl)
{
	for (int i = 0; i < SLOW_HOLD_SLOTS; i++)
		pthread_rwlock_destroy(&sl->hold[i].lk);
}

long xkv_slow_count_refresh(struct xkv_slow *sl)
{
	xkv_slow_hold(sl);
	long n = sl->s->L->count(sl->s);
	xkv_slow_release(sl);
	if (n >= 0) {
		__atomic_store_n(&sl->items, n, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->items_ns, xkv_now_ns(), __ATOMIC_RELEASE);
	}
	return n;
}
