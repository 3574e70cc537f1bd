// SPDX-License-Identifier: MIT
/* A whole write and a delete, each under its key's stripe lock:
 * flush_all's cut first, then one read-modify-write (rmw.c), or the
 * read-whole-then-write of a big value (big_rmw.c); the chunks of a deleted
 * big item retired; a read's mark (read_bump), one more write of the item. */
#include "engine_int.h"
#include <stdlib.h>
#include "fnv.h"

static __u64 key_hash(const void *key, __u32 klen)
{
	return xkv_fnv1a(key, klen);
}

static pthread_mutex_t *stripe_of(struct xkv_slow *sl, const void *key, __u32 klen)
{
	return &sl->stripe[key_hash(key, klen) % SLOW_STRIPES];
}

/* Run the write w on key.  0 with the stored entry in *out (free it; a big
 * value's bytes are not in it: entry_val), a wr_out verdict > 0, or <0
 * -errno. */
int slow_write(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
	       struct xkv_entry **out)
{
	struct xkv_store *s = c->s;
	struct xkv_entry *e = xkv_entry_make(s, 0, 0, NULL, 0);
	int ret;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	w->s = s;
	pthread_mutex_t *mu = stripe_of(c->sl, key, klen);
	pthread_mutex_lock(mu);
	/* flush_all's cut: an item written before it reads as gone (read
	 * into an item of its own: the thread's may hold a reply being made,
	 * whose read this write marks: read_bump) */
	if (xkv_slow_flush_busy(c->sl)) {
		struct xkv_item *it = malloc(sizeof(*it));
		if (!it) {
			pthread_mutex_unlock(mu);
			free(e);
			return -ENOMEM;
		}
		if (store_get(c, key, klen, it) == 0 && RETRY_BUSY(s->L->get(s, key, klen, it)) == 1)
			RETRY_BUSY(s->L->del(s, key, klen));
		free(it);
	}
	ret = write_once(c, key, klen, w, e);
	if (ret == WR_NEED_BIG)
		ret = big_rmw(c, key, klen, w, e);
	pthread_mutex_unlock(mu);
	c->d->v[XKV_STAT_store_new] += s->new_items;
	c->d->v[XKV_STAT_overwrites] += s->overwrites;
	s->new_items = s->overwrites = 0;
	if (ret == 0)
		*out = e;
	else
		free(e);
	return ret;
}

/* Delete key under its stripe lock, if the item's cas is cas (has_cas).
 * 1 deleted, 0 absent, WR_EXISTS (cas differs), <0 -errno.  The accessor
 * answers 0 for an expired item and frees its slot all the same. */
int slow_delete(struct slow_cmd *c, const void *key, __u32 klen, bool has_cas, __u64 cas)
{
	struct xkv_item *it = &c->sc->item;
	pthread_mutex_t *mu = stripe_of(c->sl, key, klen);
	bool gone = false;
	int ret = 0;

	if (key_unstorable(c, klen))
		return 0;
	pthread_mutex_lock(mu);
	bool must = has_cas || xkv_slow_flush_busy(c->sl);
	bool looked = must || xkv_big_on(c->s); /* a big item's chunks go with it */
	int r = 0;
	if (looked) {
		__u64 walks = __atomic_load_n(&c->sl->flush_walks, __ATOMIC_ACQUIRE);
		r = RETRY_BUSY(c->s->L->get(c->s, key, klen, it));
		/* flushed but not walked yet: already gone */
		gone = r == 1 && flushed(c->sl, it->wtime_ns, walks);
		if (r < 0 && must)
			ret = r;
		else if (has_cas && r == 1 && !gone && it->wtime_ns != cas)
			ret = WR_EXISTS;
	}
	if (!ret)
		ret = store_del(c, key, klen);
	if (ret == 1 && looked && r == 1 && it->len > c->s->cfg.val_cap)
		big_retire(c, key, klen, it->wtime_ns, it->len);
	pthread_mutex_unlock(mu);
	return gone && ret >= 0 && ret != WR_EXISTS ? 0 : ret;
}

/* A client's read of the item (its klen word state and write stamp
 * wtime, as store_get read them): its read state moved
 * as memcached's fetch moves it (entry.h, xkv_access_bump), when that
 * changes anything: by its first two reads and then at most once a
 * minute.  One more write of the same item (its cas kept), lost to any
 * write meanwhile, as memcached's flags are to a new item. */
void read_bump(struct slow_cmd *c, const void *key, __u32 klen, __u32 state, __u64 wtime)
{
	/* not on the benchmarks' null store (its write reads into the
	 * thread's item, which holds the reply being made) */
	if (!c->s->L->set_if || xkv_access_bump(state, wtime, xkv_now_ns()) == state)
		return;
	struct wr w = { .mode = WR_ACCESS, .bump = true, .has_cas = true, .cas = wtime };
	struct xkv_entry *e;
	if (slow_write(c, key, klen, &w, &e) == 0)
		free(e);
}
