// SPDX-License-Identifier: MIT
/* The executor for front ends other than the text parser (slowexec.h;
 * binproto.c, memcached's binary protocol): a run holds the store, checks
 * the source and takes the thread's scratch; get, write, delete, flush and
 * stats with decoded arguments, through the text commands' own functions. */
#include "engine_int.h"
#include <stdlib.h>

_Static_assert((int)XKV_EX_STORED == WR_STORED && (int)XKV_EX_NOT_STORED == WR_NOT_STORED &&
		       (int)XKV_EX_EXISTS == WR_EXISTS && (int)XKV_EX_NOT_FOUND == WR_NOT_FOUND &&
		       (int)XKV_EX_NON_NUMERIC == WR_NON_NUMERIC && (int)XKV_EX_TOO_LARGE == WR_TOO_LARGE,
	       "slowexec.h's verdicts are wr_out's");

void xkv_slow_set_sasl(struct xkv_slow *sl, const struct xkv_sasl *db)
{
	sl->sasl = db;
}

const struct xkv_sasl *xkv_slow_sasl(const struct xkv_slow *sl)
{
	return sl->sasl;
}

int xkv_exec_run(struct xkv_slow *sl, const struct xkv_slow_src *src, bool udp,
		 struct xkv_rights_kept *kept, struct xkv_buf *out, struct xkv_stats *delta,
		 xkv_exec_fn fn, void *arg)
{
	struct slow_cmd c = { .sl = sl, .out = out, .d = delta, .out_start = out->len,
			      .budget = sl->lim.max_reply };
	struct xkv_rights r;
	int rc = XKV_EXEC_REFUSED;

	xkv_slow_hold(sl);
	const __u8 *addr = src ? src->addr : NULL;
	int drop = udp ? slow_admit(sl, src, &r)
		   : kept ? slow_rights_kept(sl, addr, kept, &r) : slow_rights(sl, addr, &r);
	if (drop > 0)
		delta->v[drop]++;
	if (!drop && slow_cmd_begin(&c))
		out->len = c.out_start; /* its reply is a text line: not ours to send */
	else if (!drop) {
		struct xkv_exec_rights rt = { .write = r.write, .trusted = r.trusted };
		c.may_write = r.write;
		rc = fn(&c, &rt, arg);
	}
	xkv_slow_release(sl);
	return rc;
}

const struct xkv_config *xkv_exec_cfg(const struct slow_cmd *c)
{
	return &c->s->cfg;
}

__u32 xkv_exec_val_max(const struct slow_cmd *c)
{
	return xkv_val_max(c->s);
}

struct xkv_stats *xkv_exec_delta(struct slow_cmd *c)
{
	return c->d;
}

/* May the run write now?  0, or the verdict that refuses it (as
 * slow_run_cmd and stream_one refuse a text write). */
static int exec_may_write(struct slow_cmd *c)
{
	if (!c->may_write) {
		STAT(c, drop_write_acl);
		return XKV_EX_DENIED;
	}
	if (c->sl->mig_state == MIG_NONE && xkv_writes_paused(c->s) > 0) {
		STAT(c, pass_paused);
		return XKV_EX_PAUSED;
	}
	return 0;
}

/* While migrating, a write and the mirror of its key go together under
 * mig_mu (mig_write); the mirror reads into an item of its own, so that
 * the run's item (a gat's value) stays. */
static bool exec_mig_begin(struct slow_cmd *c)
{
	if (c->sl->mig_state != MIG_MIRROR)
		return false;
	pthread_mutex_lock(&c->sl->mig_mu);
	return true;
}

static void exec_mig_end(struct slow_cmd *c, bool mirroring, const __u8 *key, __u32 klen)
{
	if (!mirroring)
		return;
	struct xkv_item *it = malloc(sizeof(*it));
	if (it)
		mirror_key(c->sl, c->s, key, klen, it, !c->sl->mig_copied);
	else
		c->sl->ms.failed++;
	free(it);
	pthread_mutex_unlock(&c->sl->mig_mu);
}

int xkv_exec_get(struct slow_cmd *c, const __u8 *key, __u32 klen, bool touch, __s64 exptime,
		 struct xkv_exec_item *out)
{
	struct wr w = { .mode = WR_TOUCH, .new_ttl = true, .bump = true };
	struct xkv_item *it = &c->sc->item;
	bool mirroring = false;
	int ret;

	if (touch) {
		ret = exec_may_write(c);
		if (ret)
			return ret;
		w.expire_ttl = xkv_expire_ns(exptime, xkv_now_ns(), c->s->cfg.realtime_off_ns);
		mirroring = exec_mig_begin(c);
	}
	ret = get_one(c, key, klen, touch ? &w : NULL, &out->val, VAL_ALL);
	exec_mig_end(c, mirroring, key, klen);
	if (ret >= 0)
		detail_count(c, key, klen, DETAIL_GET, ret == 1);
	out->len = it->len;
	out->flags = it->flags;
	out->cas = it->wtime_ns;
	return ret;
}

int xkv_exec_write(struct slow_cmd *c, const __u8 *key, __u32 klen, const struct xkv_exec_wr *x,
		   __u64 *cas, __u64 *num)
{
	static const __u8 modes[] = {
		[XKV_EX_SET] = WR_SET, [XKV_EX_ADD] = WR_ADD, [XKV_EX_REPLACE] = WR_REPLACE,
		[XKV_EX_APPEND] = WR_APPEND, [XKV_EX_PREPEND] = WR_PREPEND,
		[XKV_EX_INCR] = WR_INCR, [XKV_EX_DECR] = WR_DECR,
	};
	struct xkv_entry *e = NULL;
	if (x->mode != XKV_EX_INCR && x->mode != XKV_EX_DECR)
		detail_count(c, key, klen, DETAIL_SET, false);
	int ret = exec_may_write(c);

	if (ret)
		return ret;
	if (x->mode >= sizeof(modes) || (x->bytes > xkv_val_max(c->s) && x->data))
		return x->mode >= sizeof(modes) ? -EINVAL : WR_TOO_LARGE;
	struct wr w = {
		.mode = modes[x->mode], .has_cas = x->has_cas, .cas = x->cas, .vivify = x->vivify,
		.data = x->data, .bytes = x->bytes, .flags = x->flags,
		.expire_ns = xkv_expire_ns(x->exptime, xkv_now_ns(), c->s->cfg.realtime_off_ns),
		.delta = x->delta, .initial = x->initial,
	};
	bool mirroring = exec_mig_begin(c);
	ret = slow_write(c, key, klen, &w, &e);
	exec_mig_end(c, mirroring, key, klen);
	if (ret == WR_STORED) {
		STAT(c, stores);
		*cas = e->wtime_ns;
		if (num)
			*num = strtoull(w.num, NULL, 10);
	}
	free(e);
	return ret;
}

int xkv_exec_delete(struct slow_cmd *c, const __u8 *key, __u32 klen, __u64 cas)
{
	detail_count(c, key, klen, DETAIL_DEL, false);
	int ret = exec_may_write(c);

	if (ret)
		return ret;
	bool mirroring = exec_mig_begin(c);
	ret = slow_delete(c, key, klen, cas != 0, cas);
	exec_mig_end(c, mirroring, key, klen);
	return ret;
}

int xkv_exec_flush(struct slow_cmd *c, __s64 delay)
{
	int ret = exec_may_write(c);

	if (ret)
		return ret;
	if (c->sl->mig_state == MIG_MIRROR) /* a walk of two stores: not while copying */
		return XKV_EX_MIGRATING;
	return flush_run(c, delay);
}

int xkv_exec_detail(struct slow_cmd *c, const __u8 *rest, __u32 n, struct xkv_buf *dump)
{
	/* memcached compares " on", " off", " dump" as prefixes of the rest */
	static const char *const words[] = { " on", " off", " dump" };
	for (int i = 0; i < 3; i++) {
		size_t wl = strlen(words[i]);
		if (n >= wl && !memcmp(rest, words[i], wl))
			return detail_cmd(c->sl, (const __u8 *)words[i] + 1, (__u32)wl - 1, dump);
	}
	return 1;
}

int xkv_exec_stats(struct slow_cmd *c, const __u8 *group, __u32 glen, struct xkv_buf *lines)
{
	struct xkv_buf *out = c->out;
	c->out = lines;
	int ret = glen ? stats_group(c, group, glen) : stats_lines(c);
	c->out = out;
	return ret == STATS_RESET ? 0 : ret == STATS_NO_GROUP ? 1 : ret == STATS_NO_END ? 2 : ret;
}
