// SPDX-License-Identifier: MIT
/* The classic text commands: get, gets, gat, gats; set, add, replace,
 * append, prepend, cas; touch; delete; incr, decr.  Each reads or writes
 * through read.c and rmw.c and answers as memcached does. */
#include "engine_int.h"
#include <stdio.h>
#include <stdlib.h>

#define R_NON_NUMERIC "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"

/* A write verdict as the classic commands answer it. */
int answer_wr(struct slow_cmd *c, int ret)
{
	switch (ret) {
	case WR_STORED: STAT(c, stores); return answer(c, XKV_R_STORED);
	case WR_NOT_STORED: return answer(c, XKV_R_NOT_STORED);
	case WR_EXISTS: return answer(c, XKV_R_EXISTS);
	case WR_NOT_FOUND: return answer(c, XKV_R_NOT_FOUND);
	case WR_TOO_LARGE: return reply_err(c, XKV_E_TOO_LARGE);
	case WR_NON_NUMERIC: STAT(c, err_client); return PUT_LIT(c->out, R_NON_NUMERIC);
	}
	return reply_store_errno(c, ret);
}

/* One key of a get (w: a gat's touch, else NULL) into c->sc->item, *val
 * its value: 1 hit, 0 miss (counted), <0 -errno.  Shared with binproto.c. */
int get_one(struct slow_cmd *c, const __u8 *key, __u32 klen, struct wr *w, const __u8 **val,
	    int want)
{
	struct xkv_item *it = &c->sc->item;
	struct xkv_entry *e = NULL;
	int ret;

	*val = it->data;
	STAT(c, get_keys);
	if (w) {
		ret = slow_write(c, key, klen, w, &e);
		if (ret == 0) {
			it->flags = e->flags;
			it->len = e->len;
			it->wtime_ns = e->wtime_ns;
			ret = entry_val(c, key, klen, e, val); /* 0: replaced since: a miss */
			if (*val == e->data) {
				memcpy(it->data, e->data, e->len);
				*val = it->data;
			}
			free(e);
		} else if (ret == WR_NOT_FOUND) {
			ret = 0;
		}
	} else {
		ret = store_get_val(c, key, klen, it, val, want);
		if (ret == 1)
			read_bump(c, key, klen, it->state, it->wtime_ns);
	}
	if (ret == 0)
		STAT(c, get_misses);
	return ret;
}

/* get|gets <key>*, gat|gats <exptime> <key>*: every hit as VALUE (gets,
 * gats: with its cas unique), then END; gat and gats give each hit the new
 * exptime first (value, flags and cas kept).  Returns <0 to stop the
 * datagram. */
int slow_cmd_get(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	struct xkv_item *it = &c->sc->item;
	__u8 op = r->op;
	bool with_cas = op == XKV_OP_GETS || op == XKV_OP_GATS;
	bool touch = op == XKV_OP_GAT || op == XKV_OP_GATS;
	struct wr w = { .mode = WR_TOUCH, .new_ttl = true, .bump = true };

	if (touch)
		w.expire_ttl = xkv_expire_ns(r->exptime, xkv_now_ns(), c->s->cfg.realtime_off_ns);
	if (r->too_many) /* more keys than tok[] holds: we do not re-tokenize */
		return stop(reply_err(c, XKV_E_FORMAT));
	size_t mark = c->out->len;
	for (__u32 t = r->key1 + (c->mg ? c->mg->done : 0); t < r->ntok; t++) {
		if (c->mg && mget_pause(c, t))
			return 0; /* the rest once out has drained (mget.c) */
		const __u8 *key = tok_ptr(c, t);
		__u32 klen = r->tok[t].len;
		const __u8 *val;
		/* a key memcached refuses (over 250 bytes; the parser checked
		 * the first 31) ends the line: the keys before it were read,
		 * and touched by a gat, as memcached does; their lines are not
		 * sent, the error is */
		int bad = t >= 32 || klen > XKV_KEY_MAX ? key_verdict(c, t) : 0;
		if (bad) {
			c->out->len = mark;
			return stop(reply_err(c, bad));
		}
		int ret = get_one(c, key, klen, touch ? &w : NULL, &val, VAL_REPLY);

		if (ret == 2)
			return -1; /* its value would put the reply over the budget (c->over) */
		if (ret < 0)
			return stop(reply_store_errno(c, ret));
		detail_count(c, key, klen, DETAIL_GET, ret == 1);
		if (ret == 0)
			continue;
		__u32 len = it->len;
		char tail[64];
		int tl = with_cas ? snprintf(tail, sizeof(tail), " %u %u %llu\r\n", it->flags, len,
					     (unsigned long long)it->wtime_ns)
				  : snprintf(tail, sizeof(tail), " %u %u\r\n", it->flags, len);
		if (over_budget(c, sizeof(XKV_R_VALUE) - 1 + klen + (size_t)tl + len + 2))
			return -1;
		STAT(c, get_hits);
		if (PUT_LIT(c->out, XKV_R_VALUE) || xkv_buf_put(c->out, key, klen) ||
		    xkv_buf_put(c->out, tail, (size_t)tl) ||
		    xkv_buf_put(c->out, val, len) || PUT_LIT(c->out, "\r\n"))
			return -1;
	}
	if (c->mg && !c->mg->last)
		return 0; /* a part of a longer line: END after its last */
	return PUT_LIT(c->out, XKV_R_END);
}

/* Errors are answered even with noreply, as the fast path does (memcached
 * drops most of them, which leaves a noreply client guessing). */

/* set / add / replace / append / prepend / cas: one slow_write. */
int slow_cmd_store(struct slow_cmd *c)
{
	static const __u8 modes[] = {
		[XKV_OP_SET] = WR_SET, [XKV_OP_ADD] = WR_ADD, [XKV_OP_REPLACE] = WR_REPLACE,
		[XKV_OP_APPEND] = WR_APPEND, [XKV_OP_PREPEND] = WR_PREPEND, [XKV_OP_CAS] = WR_SET,
	};
	struct xkv_req *r = c->r;
	struct xkv_entry *e;

	detail_count(c, tok_ptr(c, 1), r->tok[1].len, DETAIL_SET, false);
	if (r->bytes > xkv_val_max(c->s)) /* the parser checked it too */
		return reply_err(c, XKV_E_TOO_LARGE);
	struct wr w = {
		.mode = modes[r->op], .has_cas = r->op == XKV_OP_CAS, .cas = r->num,
		.data = c->data, .bytes = r->bytes, .flags = r->flags,
		.expire_ns = xkv_expire_ns(r->exptime, xkv_now_ns(), c->s->cfg.realtime_off_ns),
	};
	int ret = slow_write(c, tok_ptr(c, 1), r->tok[1].len, &w, &e);
	free(e);
	return answer_wr(c, ret);
}

/* touch <key> <exptime>: the item's new expiry, its value and cas kept. */
int slow_cmd_touch(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	struct xkv_entry *e;
	struct wr w = { .mode = WR_TOUCH, .new_ttl = true, .bump = true,
			.expire_ttl = xkv_expire_ns(r->exptime, xkv_now_ns(), c->s->cfg.realtime_off_ns) };

	int ret = slow_write(c, tok_ptr(c, 1), r->tok[1].len, &w, &e);
	free(e);
	if (ret == WR_STORED)
		return answer(c, XKV_R_TOUCHED);
	return answer_wr(c, ret);
}

int slow_cmd_delete(struct slow_cmd *c)
{
	detail_count(c, tok_ptr(c, 1), c->r->tok[1].len, DETAIL_DEL, false);
	int ret = slow_delete(c, tok_ptr(c, 1), c->r->tok[1].len, false, 0);
	if (ret < 0)
		return reply_store_errno(c, ret);
	if (ret > 0)
		STAT(c, deletes);
	else
		STAT(c, delete_misses);
	return answer(c, ret > 0 ? XKV_R_DELETED : XKV_R_NOT_FOUND);
}

/* incr / decr: the new value, same flags and expiry. */
int slow_cmd_arith(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	struct xkv_entry *e;
	struct wr w = { .mode = c->r->op == XKV_OP_INCR ? WR_INCR : WR_DECR, .delta = r->num };

	int ret = slow_write(c, tok_ptr(c, 1), r->tok[1].len, &w, &e);
	if (ret != WR_STORED)
		return answer_wr(c, ret);
	int err = 0;
	if (r->noreply)
		STAT(c, noreply);
	else
		err = xkv_buf_put(c->out, w.num, w.num_len) || PUT_LIT(c->out, "\r\n") ? -1 : 0;
	free(e);
	return err;
}
