// SPDX-License-Identifier: MIT
/* flush_all: the cut of a flush (what it removes), the flusher thread that
 * walks the store while requests go on, and the command itself. */
#include "engine_int.h"
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* The cut of a flush: what it removes is what was stamped up to it.  A
 * write stamp is the clock with the writer's id in its low bits, and a
 * writer's stamps run ahead of the clock when it writes faster than one
 * stamp a microsecond (entry.h, xkv_stamp): a flush_all that answers at
 * once takes a stamp of its own (above every stamp this process gave,
 * and above every other writer's of the same microsecond); a delayed one
 * cuts at the end of its due microsecond. */
static __u64 flush_cut_of(__u64 at, __u64 mark)
{
	return mark ? mark : at | XKV_STAMP_ID_MASK;
}

/* The cut that covers an item read while a flush was due or since a walk
 * ended: flushed (engine_int.h) asks only then. */
bool flushed_by_cut(struct xkv_slow *sl, __u64 wtime_ns, __u64 walks)
{
	pthread_mutex_lock(&sl->mu);
	__u64 cut = sl->flush_cut;
	if (sl->flush_walks != walks && sl->flush_last_cut > cut)
		cut = sl->flush_last_cut;
	if (sl->flush_at && sl->flush_at <= xkv_now_ns()) {
		__u64 due = flush_cut_of(sl->flush_at, sl->flush_mark);
		if (due > cut)
			cut = due;
	}
	pthread_mutex_unlock(&sl->mu);
	return cut && wtime_ns <= cut;
}

/* The accessor's flush: what was stamped up to cut goes, an item written
 * since stays (the slot and bucket layouts check under their locks; the
 * hash-like ones re-read just before the delete: xdpkv.h).  array_fnv gives
 * up on a slot a writer holds. */
static int flush_walk(struct xkv_store *s, __u64 cut)
{
	int e = -EBUSY;
	for (int i = 0; i < SLOW_FLUSH_TRIES && e == -EBUSY; i++) {
		if (i)
			usleep(1000);
		e = s->L->flush(s, cut);
	}
	return e;
}

/* Tell the XDP programs whether a flush is due or walking (the host
 * entry's XKV_HOST_FLUSHING): meanwhile they pass every request here,
 * where flushed() hides what the flush removes. */
static void flush_mark_xdp(struct xkv_slow *sl, int on)
{
	if (sl->s && sl->s->host_fd >= 0)
		xkv_host_flags(sl->s, on ? XKV_HOST_FLUSHING : 0, on ? 0 : XKV_HOST_FLUSHING);
}

static void *flusher_main(void *arg)
{
	struct xkv_slow *sl = arg;

	pthread_mutex_lock(&sl->mu);
	for (;;) {
		__u64 now = xkv_now_ns();
		/* a flush that is due runs even when asked to quit: its OK went out */
		if (!sl->flush_at || sl->flush_at > now) {
			if (sl->quit)
				break;
			if (!sl->flush_at) {
				pthread_cond_wait(&sl->cv, &sl->mu);
			} else {
				struct timespec ts = { .tv_sec = (time_t)(sl->flush_at / 1000000000ull),
						       .tv_nsec = (long)(sl->flush_at % 1000000000ull) };
				pthread_cond_timedwait(&sl->cv, &sl->mu, &ts);
			}
			continue;
		}
		__u64 cut = flush_cut_of(sl->flush_at, sl->flush_mark);
		sl->flush_cut = cut;
		sl->flush_at = 0;
		sl->flush_mark = 0;
		flush_mark_xdp(sl, 1); /* a delayed one is due now */
		pthread_mutex_unlock(&sl->mu);
		xkv_slow_hold(sl);
		int e = flush_walk(sl->s, cut);
		xkv_slow_release(sl);
		if (e) /* nobody to answer: the OK went out already */
			fprintf(stderr, "xdpkv slow path: flush_all failed: %s\n", strerror(-e));
		xkv_slow_count_refresh(sl);
		pthread_mutex_lock(&sl->mu);
		sl->flush_last_cut = sl->flush_cut;
		__atomic_add_fetch(&sl->flush_walks, 1, __ATOMIC_RELEASE);
		sl->flush_cut = 0;
		__atomic_store_n(&sl->flush_busy, sl->flush_at != 0, __ATOMIC_RELEASE);
		if (!sl->flush_at)
			flush_mark_xdp(sl, 0);
	}
	pthread_mutex_unlock(&sl->mu);
	return NULL;
}

/* flush_all: due at `at`, removing what was stamped up to mark (0: up to
 * at's microsecond).  A later flush_all replaces one still waiting for its
 * delay (memcached keeps one flush time too); one that comes while a walk
 * runs is queued behind it, with its own cut: what was written before it
 * goes as well.
 * One flusher thread, started on the first flush_all. */
static int flush_schedule(struct xkv_slow *sl, __u64 at, __u64 mark)
{
	int e = 0;

	pthread_mutex_lock(&sl->mu);
	if (!sl->flusher_up) {
		e = -pthread_create(&sl->flusher, NULL, flusher_main, sl);
		sl->flusher_up = !e;
	}
	if (!e) {
		sl->flush_at = at ? at : 1;
		sl->flush_mark = mark;
		__atomic_store_n(&sl->flush_busy, 1, __ATOMIC_RELEASE);
		/* due at once: XDP passes requests on before the OK goes out
		 * (set and cleared under mu, as flush_at) */
		if (sl->flush_at <= xkv_now_ns())
			flush_mark_xdp(sl, 1);
		pthread_cond_signal(&sl->cv);
	}
	pthread_mutex_unlock(&sl->mu);
	return e;
}

int xkv_slow_flush_busy(struct xkv_slow *sl)
{
	return __atomic_load_n(&sl->flush_busy, __ATOMIC_ACQUIRE);
}

/* flush_all [delay] [noreply]: OK at once, as memcached answers; the walk
 * runs on the flusher thread when the delay is up (a delay as exptime
 * reads it: seconds, or a unix time past 30 days).  Without a thread, the
 * walk runs here. */
static __u64 flushes_in_process; /* __atomic: xkv_slow_flushes */

__u64 xkv_slow_flushes(void)
{
	return __atomic_load_n(&flushes_in_process, __ATOMIC_RELAXED);
}

int flush_run(struct slow_cmd *c, __s64 delay)
{
	__atomic_add_fetch(&c->sl->flush_cmds, 1, __ATOMIC_RELAXED); /* stats' cmd_flush */
	__atomic_add_fetch(&flushes_in_process, 1, __ATOMIC_RELAXED);
	__u64 now = xkv_now_ns();
	__u64 at = delay ? xkv_expire_ns(delay, now, c->s->cfg.realtime_off_ns) : now;
	bool at_once = at <= now;

	/* at once: every item stamped so far goes, however far ahead of the
	 * clock its stamp runs (flush_cut_of) */
	__u64 mark = at_once ? xkv_write_stamp() : 0;
	if (flush_schedule(c->sl, at_once ? now : at, mark)) {
		int ret = flush_walk(c->s, flush_cut_of(at, mark));
		if (ret < 0)
			return ret;
	}
	return 0;
}

int slow_cmd_flush(struct slow_cmd *c)
{
	int ret = flush_run(c, (__s64)c->r->num);
	return ret < 0 ? reply_store_errno(c, ret) : answer(c, R_OK_LINE);
}
