// SPDX-License-Identifier: MIT
/* Reading an item for a command: the accessor's get, retried while busy,
 * with flush_all's cut applied (store_get, engine_int.h), and a value above
 * val_cap read from its chunks into the thread's buffer; delete's call. */
#include "engine_int.h"
#include <stdlib.h>

/* A big value (len > val_cap) into the thread's buffer: 1, 0 when its
 * chunks are gone (the item was replaced meanwhile), <0 -errno. */
static int big_load(struct slow_cmd *c, const void *key, __u32 klen, __u64 stamp, __u32 len,
		    const __u8 **val)
{
	struct slow_scratch *sc = c->sc;
	if (sc->big_cap < len) {
		__u8 *p = realloc(sc->big, len);
		if (!p)
			return -ENOMEM;
		sc->big = p;
		sc->big_cap = len;
	}
	*val = sc->big;
	return xkv_big_get(c->s, key, klen, stamp, len, sc->big);
}

/* The value of an entry a write returned (inline or in chunks). */
int entry_val(struct slow_cmd *c, const void *key, __u32 klen, const struct xkv_entry *e,
	      const __u8 **val)
{
	if (e->len <= c->s->cfg.val_cap) {
		*val = e->data;
		return 1;
	}
	return big_load(c, key, klen, e->wtime_ns, e->len, val);
}

int store_get_val(struct slow_cmd *c, const void *key, __u32 klen, struct xkv_item *it,
		  const __u8 **val, int want)
{
	for (int i = 0; i < SLOW_BUSY_TRIES; i++) {
		int ret = store_get(c, key, klen, it);
		*val = it->data;
		if (ret != 1 || it->len <= c->s->cfg.val_cap)
			return ret;
		*val = NULL;
		if (want == VAL_NONE)
			return ret;
		if (want == VAL_REPLY && over_budget(c, it->len))
			return 2;
		ret = big_load(c, key, klen, it->wtime_ns, it->len, val);
		if (ret != 0)
			return ret;
	}
	return -EBUSY;
}

int store_del(struct slow_cmd *c, const void *key, __u32 klen)
{
	return RETRY_BUSY(c->s->L->del(c->s, key, klen));
}
