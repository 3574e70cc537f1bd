// SPDX-License-Identifier: MIT
/* The writes that must read a big value whole first: append and prepend
 * to or into a value above val_cap, md I of a big item, incr/decr of a big
 * value or to a number longer than val_cap.  Read, make the new value,
 * store it only over the item read (its cas); another writer between: again. */
#include "engine_int.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* append / prepend where the item or the result is above val_cap, and md I
 * of a big item (its new cas needs its chunks put again): read the whole
 * value, make the new one, store it only over the item read (its cas);
 * another writer between the two: again. */
static int big_arith(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
		     struct xkv_entry *e);

/* A vivifying read-modify-write found no item: w2 (a copy of w with the
 * new item's data) added.  -EAGAIN: one was made meanwhile (read again). */
static int big_add(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w, struct wr *w2,
		   struct xkv_entry *e)
{
	w2->mode = WR_ADD;
	int r = write_once(c, key, klen, w2, e);
	if (r == WR_NOT_STORED)
		return -EAGAIN;
	w->created = r == WR_STORED;
	return r;
}

int big_rmw(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
	    struct xkv_entry *e)
{
	struct xkv_item *it = &c->sc->item;

	if (w->mode == WR_INCR || w->mode == WR_DECR)
		return big_arith(c, key, klen, w, e);

	for (int i = 0; i < SLOW_BUSY_TRIES; i++) {
		const __u8 *val;
		int hit = store_get_val(c, key, klen, it, &val, VAL_ALL);
		if (hit < 0)
			return hit;
		struct wr w2 = *w;
		bool inval = w->mode == WR_INVALIDATE;
		if (!hit && inval)
			return WR_NOT_FOUND;
		if (!hit) {
			if (!w->vivify)
				return WR_NOT_STORED;
			/* N: the data alone makes the item */
			int r = big_add(c, key, klen, w, &w2, e);
			if (r == -EAGAIN)
				continue;
			return r;
		}
		if (w->has_cas && it->wtime_ns != w->cas)
			return WR_EXISTS;
		__u64 total = (__u64)it->len + w->bytes;
		if (total > xkv_val_max(c->s))
			return WR_TOO_LARGE;
		__u8 *buf = malloc(total ? total : 1);
		if (!buf)
			return -ENOMEM;
		bool after = w->mode == WR_APPEND;
		memcpy(buf + (after ? 0 : w->bytes), val, it->len);
		if (w->bytes)
			memcpy(buf + (after ? it->len : 0), w->data, w->bytes);
		/* memcached keeps the item's flags and expiry */
		w2.mode = WR_REPLACE;
		w2.new_ttl = inval && w->new_ttl;
		w2.state = inval ? XKV_ENT_STALE | (it->state & XKV_ENT_READ) : 0;
		w2.has_cas = true;
		w2.cas = it->wtime_ns;
		w2.data = buf;
		w2.bytes = (__u32)total;
		w2.flags = it->flags;
		w2.expire_ns = it->expire_ns;
		int r = write_once(c, key, klen, &w2, e);
		free(buf);
		if (r != WR_EXISTS && r != WR_NOT_FOUND)
			return r;
	}
	return -EBUSY;
}

/* incr / decr where the number or the item is not inline: a big value
 * (memcached reads its leading number, mc_number), or a result longer
 * than --value-size.  Read, then replace under the cas read (vivify: add),
 * as big_rmw.  The result is the digits alone (memcached pads them with
 * spaces in place; the inline path does not either). */
static int big_arith(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
		     struct xkv_entry *e)
{
	struct xkv_item *it = &c->sc->item;

	for (int i = 0; i < SLOW_BUSY_TRIES; i++) {
		const __u8 *val;
		__u64 v;
		int hit = store_get_val(c, key, klen, it, &val, VAL_ALL);
		if (hit < 0)
			return hit;
		struct wr w2 = *w;
		w2.data = (const __u8 *)w->num;
		if (!hit) {
			if (!w->vivify)
				return WR_NOT_FOUND;
			w->num_len = (__u32)snprintf(w->num, sizeof(w->num), "%" PRIu64, (uint64_t)w->initial);
			w2.bytes = w->num_len;
			w2.flags = 0;
			int r = big_add(c, key, klen, w, &w2, e);
			if (r == -EAGAIN)
				continue;
			return r;
		}
		if (w->has_cas && it->wtime_ns != w->cas)
			return WR_EXISTS;
		if (mc_number(val, it->len, &v))
			return WR_NON_NUMERIC;
		w->num_len = (__u32)snprintf(w->num, sizeof(w->num), "%" PRIu64, (uint64_t)arith(w, v));
		w2.bytes = w->num_len;
		__u8 *pad = NULL;
		if (w->num_len < it->len) { /* in place, padded (as wr_decide) */
			pad = malloc(it->len);
			if (!pad)
				return -ENOMEM;
			memcpy(pad, w->num, w->num_len);
			memset(pad + w->num_len, ' ', it->len - w->num_len);
			w2.data = pad;
			w2.bytes = it->len;
		}
		w2.mode = WR_REPLACE;
		w2.has_cas = true;
		w2.cas = it->wtime_ns;
		w2.flags = it->flags;
		w2.expire_ns = it->expire_ns;
		w2.state = it->state; /* changed in place: the meta state stays */
		int r = write_once(c, key, klen, &w2, e);
		free(pad);
		if (r != WR_EXISTS && r != WR_NOT_FOUND)
			return r;
	}
	return -EBUSY;
}
