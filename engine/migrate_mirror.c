// SPDX-License-Identifier: MIT
/* Live migration (docs/snapshots.md, "Live migration"): while a copier
 * fills a new store, every write runs on the old one and its keys are
 * mirrored to the new one (deletes kept as tombstones for the fixup); then
 * the switch to the new store, and the end. */
#include "engine_int.h"
#include <stdlib.h>

#define R_MIG_FLUSH "SERVER_ERROR flush_all refused while the store migrates\r\n"

static void tomb_add(struct xkv_slow *sl, const __u8 *key, __u32 klen)
{
	__u8 n = (__u8)klen;
	if (xkv_buf_put(&sl->tombs, &n, 1) || xkv_buf_put(&sl->tombs, key, klen))
		sl->ms.failed++; /* out of memory: a delete may come back */
	else
		sl->ms.tombstones++;
}

/* Make the new store hold what the old one holds for key: its item (value,
 * flags, expiry, write stamp, so its cas unique) or nothing.  Reading the
 * old store's state, not replaying the command, makes every write command
 * the same here.  Called under mig_mu; remember: keep a deleted key for
 * xkv_slow_mig_fixup. */
void mirror_key(struct xkv_slow *sl, struct xkv_store *old, const __u8 *key, __u32 klen,
		struct xkv_item *it, bool remember)
{
	struct xkv_store *m = sl->mig;
	if (klen > old->cfg.key_cap)
		return; /* no item has it (its writes were refused): nothing to mirror */
	int r = RETRY_BUSY(old->L->get(old, key, klen, it));
	if (r < 0) {
		sl->ms.failed++;
		return;
	}
	if (r == 0) {
		r = RETRY_BUSY(m->L->del(m, key, klen));
		if (r < 0 && r != -EINVAL) /* -EINVAL: a key the new store cannot hold */
			sl->ms.failed++;
		sl->ms.deleted++;
		sl->ms.removed += r == 1;
		if (remember)
			tomb_add(sl, key, klen);
		return;
	}
	if (klen > m->cfg.key_cap || xkv_key_check(&m->cfg, key, klen) != XKV_OK) {
		sl->ms.too_big++;
		return;
	}
	struct xkv_entry *e = xkv_entry_make(m, 0, 0, NULL, 0);
	if (!e) {
		sl->ms.failed++;
		return;
	}
	/* the value inline or in chunks, as the new store's value size says */
	struct xkv_entry hdr = { .expire_ns = it->expire_ns, .wtime_ns = it->wtime_ns,
				 .flags = it->flags, .len = it->len };
	r = xkv_big_carry(old, m, key, klen, &hdr, it->len > old->cfg.val_cap ? NULL : it->data, e);
	if (r) {
		free(e);
		if (r == -E2BIG)
			sl->ms.too_big++;
		else if (r == -ENOMEM)
			sl->ms.full++;
		else
			sl->ms.failed++;
		return;
	}
	/* add first: whether the key is new is known exactly (lru evictions) */
	r = RETRY_BUSY(m->L->add(m, key, klen, e));
	sl->ms.created += r == 0;
	if (r == -EEXIST || r == -EADDRINUSE)
		r = RETRY_BUSY(m->L->set(m, key, klen, e));
	free(e);
	if (r == -ENOMEM)
		sl->ms.full++;
	else if (r)
		sl->ms.failed++;
	else
		sl->ms.mirrored++;
	sl->ms.collisions += m->overwrites; /* array_fnv: another key's item replaced */
	m->overwrites = 0;
}

/* A write while migrating runs on the old store (dispatch.c), then every
 * key it names is mirrored, the two under mig_mu so that no other write
 * comes between: mig_write_begin before it, mig_write_end after.  A
 * flush_all is refused (a walk of two stores: not while copying): begin
 * answers it and returns false. */
bool mig_write_begin(struct slow_cmd *c, int *rc)
{
	if (c->r->op == XKV_OP_FLUSH_ALL) {
		STAT(c, err_client);
		*rc = PUT_LIT(c->out, R_MIG_FLUSH);
		return false;
	}
	pthread_mutex_lock(&c->sl->mig_mu);
	c->key = NULL; /* a meta command's key, decoded (b), once meta_key took it */
	return true;
}

void mig_write_end(struct slow_cmd *c)
{
	struct xkv_slow *sl = c->sl;
	struct xkv_req *r = c->r;
	bool getlike = r->op == XKV_OP_GAT || r->op == XKV_OP_GATS;
	bool meta = r->op == XKV_OP_MS || r->op == XKV_OP_MD || r->op == XKV_OP_MA || r->op == XKV_OP_MG;

	if (meta) {
		if (c->key)
			mirror_key(sl, c->s, c->key, c->klen, &c->sc->item, !sl->mig_copied);
	} else {
		for (__u32 t = getlike ? r->key1 : 1; t < (getlike ? r->ntok : 2) && t < r->ntok; t++)
			mirror_key(sl, c->s, tok_ptr(c, t), r->tok[t].len, &c->sc->item,
				   !sl->mig_copied);
	}
	pthread_mutex_unlock(&sl->mig_mu);
}

int xkv_slow_mig_begin(struct xkv_slow *sl, int store_fd, const struct xkv_config *cfg, char *err,
		       size_t errlen)
{
	struct xkv_store *m = calloc(1, sizeof(*m));
	int e;

	if (!m)
		return xkv_errf(err, errlen, -ENOMEM, "out of memory");
	slow_hold_all(sl);
	big_old_flush(sl); /* the list names chunks of the store that stays behind */
	if (sl->mig_state != MIG_NONE)
		e = xkv_errf(err, errlen, -EBUSY, "a migration is running already");
	else if (xkv_slow_flush_busy(sl))
		e = xkv_errf(err, errlen, -EAGAIN, "a flush_all is pending; try again after it");
	else
		e = xkv_store_adopt(m, sl->s, store_fd, cfg, err, errlen);
	if (!e) {
		sl->mig = m;
		sl->mig_state = MIG_MIRROR;
		sl->mig_copied = false;
		memset(&sl->ms, 0, sizeof(sl->ms));
		sl->ms.live = -1;
		sl->tombs.len = 0;
	}
	slow_release_all(sl);
	if (e)
		free(m);
	return e;
}

long xkv_slow_mig_fixup(struct xkv_slow *sl, struct xkv_slow_mig_stats *at)
{
	long n = 0;
	xkv_slow_hold(sl);
	if (sl->mig_state != MIG_MIRROR) {
		xkv_slow_release(sl);
		return -EINVAL;
	}
	struct xkv_item *it = malloc(sizeof(*it));
	struct xkv_store old = *sl->s; /* a view: its counters are ours */
	pthread_mutex_lock(&sl->mig_mu);
	for (size_t off = 0; it && off < sl->tombs.len; n++) {
		__u32 klen = sl->tombs.p[off];
		mirror_key(sl, &old, sl->tombs.p + off + 1, klen, it, false);
		off += 1 + klen;
	}
	sl->mig_copied = true;
	xkv_buf_free(&sl->tombs);
	sl->ms.live = sl->mig->L->count(sl->mig);
	*at = sl->ms;
	pthread_mutex_unlock(&sl->mig_mu);
	xkv_slow_release(sl);
	free(it);
	return it ? n : -ENOMEM;
}

int xkv_slow_mig_switch(struct xkv_slow *sl)
{
	slow_hold_all(sl);
	if (sl->mig_state != MIG_MIRROR) {
		slow_release_all(sl);
		return -EINVAL;
	}
	xkv_store_swap(sl->s, sl->mig);
	if (!sl->s->owns_fds) /* the old fd is its object's (attach --serve): it closes it */
		sl->mig->store_fd = -1;
	xkv_store_drop(sl->mig);
	free(sl->mig);
	sl->mig = NULL;
	sl->mig_state = MIG_SWITCHED;
	slow_release_all(sl);
	xkv_slow_count_refresh(sl);
	return 0;
}

int xkv_slow_mig_end(struct xkv_slow *sl)
{
	slow_hold_all(sl);
	int was = sl->mig_state;
	if (sl->mig) {
		xkv_store_drop(sl->mig);
		free(sl->mig);
		sl->mig = NULL;
	}
	sl->mig_state = MIG_NONE;
	xkv_buf_free(&sl->tombs);
	slow_release_all(sl);
	return was;
}

void xkv_slow_mig_stats(struct xkv_slow *sl, struct xkv_slow_mig_stats *st)
{
	pthread_mutex_lock(&sl->mig_mu);
	*st = sl->ms;
	pthread_mutex_unlock(&sl->mig_mu);
}
