// SPDX-License-Identifier: MIT
/* One read-modify-write for every write command: the decision a write
 * makes over the item it finds (wr_decide, called by the layout's set_if)
 * and one set_if (write_once, under the key's stripe lock: write.c takes
 * it).  How memcached reads a number for incr/decr (mc_number, arith). */
#include "engine_int.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static bool mc_isspace(__u8 ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* A stored value as memcached's incr reads it (safe_strtoull over the item's
 * data and its \r\n, a C string to strtoull): white space, a sign, decimal
 * digits that fit in 64 bits, then white space, a NUL byte or the value's
 * end; the rest is not looked at ("12\rabc" and "12\0abc" are 12).  A
 * minus sign only on zero; and a number of 2^63 or more is refused when a
 * '-' comes anywhere before the first NUL byte (safe_strtoull's strchr:
 * "9223372036854775808 a-b" is not a number; memcached's strchr also reads
 * on past the item's \r\n, into memory this store does not have).  0, or
 * -1: not a number. */
int mc_number(const __u8 *p, __u32 n, __u64 *out)
{
	__u32 i = 0;
	bool neg = false;
	__u64 v = 0;

	while (i < n && mc_isspace(p[i]))
		i++;
	if (i < n && (p[i] == '+' || p[i] == '-'))
		neg = p[i++] == '-';
	__u32 d0 = i;
	for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		__u64 dig = (__u64)(p[i] - '0');
		if (v > (UINT64_MAX - dig) / 10)
			return -1; /* ERANGE */
		v = v * 10 + dig;
	}
	if (i == d0 || (i < n && p[i] && !mc_isspace(p[i])) || (neg && v))
		return -1;
	if (v > (__u64)INT64_MAX) {
		const __u8 *nul = memchr(p, 0, n);
		if (memchr(p, '-', nul ? (size_t)(nul - p) : n))
			return -1;
	}
	*out = v;
	return 0;
}

/* An inline value as a number (a big one's bytes are in its chunks:
 * big_arith reads them). */
static int value_u64(const struct xkv_item *it, __u64 *out)
{
	return mc_number(it->data, it->len, out);
}

/* incr / decr of v: incr wraps at 2^64, decr stops at 0 (memcached). */
__u64 arith(const struct wr *w, __u64 v)
{
	if (w->mode == WR_INCR)
		return v + w->delta;
	return v > w->delta ? v - w->delta : 0;
}

/* The entry the write stores (e: cfg.entry_size bytes), from cur, the live
 * item now there (NULL: none).  Called by the layout's set_if. */
static int wr_decide(void *arg, const struct xkv_item *cur, struct xkv_entry *e)
{
	struct wr *w = arg;
	__u32 cap = w->s->cfg.val_cap;
	__u64 v = 0;
	bool stale = false;

	w->created = false;
	w->old_len = cur && cur->len > cap ? cur->len : 0;
	w->old_stamp = cur ? cur->wtime_ns : 0;
	e->seq = 0;
	e->klen = w->state; /* the layout adds the key's length */
	if (!cur) {
		switch (w->mode) {
		case WR_SET:
			if (w->has_cas)
				return WR_NOT_FOUND;
			break;
		case WR_ADD:
			break;
		case WR_REPLACE:
			return w->has_cas ? WR_NOT_FOUND : WR_NOT_STORED;
		case WR_APPEND:
		case WR_PREPEND:
			if (!w->vivify)
				return WR_NOT_STORED;
			w->created = true;
			break;
		case WR_TOUCH:
		case WR_INVALIDATE:
		case WR_MARK_WON:
		case WR_ACCESS:
			return WR_NOT_FOUND;
		case WR_INCR:
		case WR_DECR:
			if (!w->vivify)
				return WR_NOT_FOUND;
			w->created = true;
			v = w->initial;
			break;
		}
	} else {
		if (w->mode == WR_ADD)
			return WR_NOT_STORED;
		if ((w->mode == WR_INCR || w->mode == WR_DECR) && cur->len == 0)
			return WR_NON_NUMERIC; /* memcached looks at this before the cas */
		if (w->has_cas && cur->wtime_ns != w->cas) {
			/* ms I: an older cas still stores, marked stale (memcached) */
			if (!w->stale_ok || w->cas > cur->wtime_ns)
				return WR_EXISTS;
			stale = true;
		}
		if (w->mode == WR_MARK_WON && (cur->state & XKV_ENT_WON))
			return WR_NOT_STORED; /* another client has the token */
		if (w->mode == WR_INVALIDATE && cur->len > cap)
			return WR_NEED_BIG; /* a new cas: its chunks again (big_rmw) */
	}
	e->wtime_ns = w->stamp ? w->stamp : xkv_write_stamp();
	if (w->mode == WR_INCR || w->mode == WR_DECR) {
		if (cur) {
			if (cur->len > cap)
				return WR_NEED_BIG; /* its number is in its chunks */
			if (value_u64(cur, &v))
				return WR_NON_NUMERIC;
			v = arith(w, v);
		}
		int n = snprintf(w->num, sizeof(w->num), "%" PRIu64, (uint64_t)v);
		w->num_len = (__u32)n;
		if (n > (int)cap)
			return WR_NEED_BIG; /* --value-size under 20: the number goes to chunks */
		memcpy(e->data, w->num, (size_t)n);
		e->len = (__u32)n;
		/* a shorter number is written in place, padded with spaces
		 * to the old length (memcached's do_add_delta) */
		if (cur && (__u32)n < cur->len) {
			memset(e->data + n, ' ', cur->len - (__u32)n);
			e->len = cur->len;
		}
		e->flags = cur ? cur->flags : 0;
		e->expire_ns = cur ? cur->expire_ns : w->expire_ns;
		/* memcached changes a number that fits in place, and the state
		 * (stale, token sent) stays; a longer one is a new item
		 * (do_add_delta: item_alloc, item_replace), which has none */
		if (cur && (__u32)n <= cur->len)
			e->klen = cur->state & ~XKV_ENT_ATIME; /* and its time is now */
	} else if (cur && (w->mode == WR_APPEND || w->mode == WR_PREPEND)) {
		if ((__u64)cur->len + w->bytes > cap)
			return WR_NEED_BIG; /* or too large: big_rmw says */
		bool after = w->mode == WR_APPEND;
		memcpy(e->data + (after ? 0 : w->bytes), cur->data, cur->len);
		memcpy(e->data + (after ? cur->len : 0), w->data, w->bytes);
		e->len = cur->len + w->bytes;
		e->flags = cur->flags;    /* memcached keeps the item's flags and expiry */
		e->expire_ns = cur->expire_ns;
	} else if (w->mode == WR_TOUCH || w->mode == WR_MARK_WON || w->mode == WR_INVALIDATE ||
		   w->mode == WR_ACCESS) {
		/* big: the chunks stay (the cas is kept; invalidate's are not big) */
		memcpy(e->data, cur->data, xkv_inline_len(cur->len, cap));
		e->len = cur->len;
		e->flags = cur->flags;
		e->expire_ns = cur->expire_ns;
		if (w->mode != WR_INVALIDATE)
			e->wtime_ns = cur->wtime_ns; /* a touch keeps the cas, as memcached */
		/* a read (touch, gat, a read's own mark) moves the read state
		 * (entry.h); md I: stale, the token may go out again, and its
		 * new cas starts the access time again (memcached keeps the
		 * item's time there: docs/protocol.md) */
		__u32 read = w->bump ? xkv_access_bump(cur->state, cur->wtime_ns, xkv_now_ns())
				     : cur->state;
		e->klen = w->mode == WR_TOUCH || w->mode == WR_ACCESS ? read
			  : w->mode == WR_MARK_WON ? cur->state | XKV_ENT_WON
						   : XKV_ENT_STALE | (cur->state & XKV_ENT_READ);
	} else {
		if (w->bytes) /* an empty value may have no data pointer */
			memcpy(e->data, w->data, xkv_inline_len(w->bytes, cap)); /* big: in chunks already */
		e->len = w->bytes;
		e->flags = w->flags;
		e->expire_ns = w->expire_ns;
	}
	if (stale) { /* memcached: the item's ttl and token stay */
		e->expire_ns = cur->expire_ns;
		e->klen = XKV_ENT_STALE | (cur->state & XKV_ENT_WON);
	}
	if (w->new_ttl && !(w->created && w->created_keeps_ttl))
		e->expire_ns = w->expire_ttl;
	return WR_STORED;
}

/* A layout without set_if (the benchmarks' null store): read, decide,
 * store; atomic only under the stripe lock. */
static int set_if_plain(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn,
			void *arg, struct xkv_entry *e, struct xkv_item *it)
{
	int hit = s->L->get(s, key, klen, it);
	if (hit < 0)
		return hit;
	int rc = fn(arg, hit ? it : NULL, e);
	return rc ? rc : s->L->set(s, key, klen, e);
}

/* Chunks no item points at go after this long (a write puts its chunks
 * before its entry: younger ones may be one in progress). */
/* One set_if of w on key (under its stripe lock), with a value above
 * val_cap put in chunks first, under the stamp its entry gets.  The
 * chunks of a big item it replaced are removed after (readers of the old
 * version read the entry again); a write that did not store removes its own. */
int write_once(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
	       struct xkv_entry *e)
{
	struct xkv_store *s = c->s;
	bool big = w->data && w->bytes > s->cfg.val_cap && w->mode != WR_TOUCH;
	int ret;

	w->stamp = 0;
	w->old_len = 0;
	if (key_unstorable(c, klen)) {
		/* what the write does where there is no item; where it would
		 * store, this store cannot: too large for it, as a value would be */
		int rc = wr_decide(w, NULL, e);
		return rc && rc != WR_NEED_BIG ? rc : WR_TOO_LARGE;
	}
	if (big) {
		if (w->mode == WR_APPEND || w->mode == WR_PREPEND)
			return WR_NEED_BIG;
		if (w->bytes > xkv_val_max(s))
			return WR_TOO_LARGE;
		w->stamp = big_write_begin(c->sl);
		ret = xkv_big_put(s, key, klen, w->stamp, w->data, w->bytes);
		if (ret == -ENOMEM && big_collect_now(c))
			ret = xkv_big_put(s, key, klen, w->stamp, w->data, w->bytes);
		if (ret) {
			big_write_end(c->sl, w->stamp);
			return ret;
		}
	}
	if (s->L->set_if)
		ret = RETRY_BUSY(s->L->set_if(s, key, klen, wr_decide, w, e));
	else
		ret = RETRY_BUSY(set_if_plain(s, key, klen, wr_decide, w, e, &c->sc->item));
	if (big) {
		big_write_end(c->sl, w->stamp);
		if (ret != 0)
			xkv_big_del(s, key, klen, w->stamp, w->bytes);
	}
	if (ret == 0 && w->old_len && w->old_stamp != e->wtime_ns)
		big_retire(c, key, klen, w->old_stamp, w->old_len);
	return ret;
}
