// SPDX-License-Identifier: MIT
/* The store lock every request holds (a migration's switch takes it to
 * change stores), and the cached item count `stats` answers from. */
#include "engine_int.h"

void xkv_slow_hold(struct xkv_slow *sl)
{
	pthread_rwlock_rdlock(&sl->store_lk);
}

void xkv_slow_release(struct xkv_slow *sl)
{
	pthread_rwlock_unlock(&sl->store_lk);
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
