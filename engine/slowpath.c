// SPDX-License-Identifier: MIT
/* The slow path of one store (struct xkv_slow, slowpath.h): made and
 * freed; its limits.  The protocol
 * executor's other files, one job each (engine_int.h holds what they share):
 *
 *   hold.c            the store lock each request holds; the cached item count
 *   reply.c           the reply buffer, error lines, one-line answers
 *   flush.c           flush_all: its cut, the flusher thread, the command
 *   read.c            reading an item (flush_all's cut, a big value's chunks)
 *   rmw.c             one read-modify-write for every write command
 *   write.c           a whole write and a delete, under the key's stripe lock
 *   big_rmw.c         the writes that must read a big value whole first
 *   big_chunks.c      the chunks of replaced and deleted big values
 *   classic.c         get/gets/gat/gats, set family, touch, delete, incr/decr
 *   meta.c            the meta commands mg, ms, md, ma, me (and base64 keys)
 *   stats_cmd.c       stats
 *   migrate_mirror.c  live migration: writes mirrored to the new store
 *   dispatch.c        the text command loop: parse, count, refuse, run
 *   admit.c           who may: access lists, the datagram checks, rate limit
 *   datagram.c        one UDP request datagram, and framing replies
 *   stream.c          a TCP byte stream, and the TCP server's hooks
 *   exec.c            the executor for other front ends (slowexec.h)
 *
 * No sockets here (serve.c owns them), so the tests drive it directly. */
#include "engine_int.h"
#include <stdlib.h>
#include <time.h>

static __u32 limit_or(__u32 v, __u32 dflt, __u32 max)
{
	return !v ? dflt : v > max ? max : v;
}

struct xkv_slow *xkv_slow_new(struct xkv_store *s, const struct xkv_slow_limits *lim)
{
	struct xkv_slow *sl = calloc(1, sizeof(*sl));
	pthread_condattr_t ca;

	if (!sl)
		return NULL;
	sl->s = s;
	sl->lim.max_keys = limit_or(lim ? lim->max_keys : 0, XKV_SLOW_MAX_KEYS, XKV_SLOW_MAX_KEYS_CAP);
	sl->lim.max_reply = limit_or(lim ? lim->max_reply : 0, XKV_SLOW_MAX_REPLY,
				     (__u32)SLOW_REPLY_CAP);
	pthread_mutex_init(&sl->mu, NULL);
	for (int i = 0; i < SLOW_STRIPES; i++)
		pthread_mutex_init(&sl->stripe[i], NULL);
	pthread_mutex_init(&sl->mig_mu, NULL);
	pthread_mutex_init(&sl->big_mu, NULL);
	pthread_mutex_init(&sl->wr_mu, NULL);
	pthread_mutex_init(&sl->old_mu, NULL);
	detail_init(&sl->detail);
	sl->old = calloc(SLOW_BIG_OLD_MAX, sizeof(*sl->old)); /* NULL: chunks go at once */
	sl->old_max = (__u64)s->cfg.big_chunks * XKV_BIG_CHUNK / 4;
	if (sl->old_max > SLOW_BIG_OLD_BYTES)
		sl->old_max = SLOW_BIG_OLD_BYTES;
	slow_hold_init(sl);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sl->cv, &ca);
	pthread_condattr_destroy(&ca);
	bool guarded = !(s->cfg.flags & XKV_CFG_UNGUARDED);
	xkv_rl_init(&sl->rl, guarded ? s->cfg.rate_limit : 0, s->cfg.rate_burst);
	xkv_slow_count_refresh(sl);
	slow_acl_tok_map(sl);
	return sl;
}

void xkv_slow_free(struct xkv_slow *sl)
{
	if (!sl)
		return;
	pthread_mutex_lock(&sl->mu);
	sl->quit = true;
	pthread_cond_signal(&sl->cv);
	pthread_mutex_unlock(&sl->mu);
	if (sl->flusher_up)
		pthread_join(sl->flusher, NULL);
	big_old_flush(sl); /* the chunks still lingering, while the store is the one they are in */
	pthread_cond_destroy(&sl->cv);
	pthread_mutex_destroy(&sl->mu);
	for (int i = 0; i < SLOW_STRIPES; i++)
		pthread_mutex_destroy(&sl->stripe[i]);
	xkv_slow_mig_end(sl);
	slow_acl_tok_unmap(sl);
	slow_hold_destroy(sl);
	pthread_mutex_destroy(&sl->mig_mu);
	pthread_mutex_destroy(&sl->wr_mu);
	xkv_rl_destroy(&sl->rl);
	free(sl->old);
	pthread_mutex_destroy(&sl->old_mu);
	if (__atomic_load_n(&sl->detail.on, __ATOMIC_RELAXED))
		detail_switch(sl, false); /* the fast path answers again */
	detail_destroy(&sl->detail);
	free(sl);
}

struct xkv_slow_limits xkv_slow_limits_of(const struct xkv_slow *sl)
{
	return sl->lim;
}
