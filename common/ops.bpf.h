/* SPDX-License-Identifier: MIT */
/* The one get, set and delete over the variant's store, called by the XDP
 * program (xdp.bpf.h) and the TCP verdict (tcp.bpf.h): the rules of a hit,
 * of an expired item, of a write's entry and of a delete's answer live here
 * only; a program adds its transport (where the value comes from, where
 * the reply goes, what a busy store means).  Expects prelude.bpf.h and the
 * variant's store before it: XKV_KEY_IN_VALUE, store_lookup(), store_set(),
 * store_del(), and optionally XKV_STORE_MATCH, XKV_LIVE_FOR_DELETE,
 * XKV_STORE_COPY_VALUE. */
#ifndef XDPKV_OPS_BPF_H
#define XDPKV_OPS_BPF_H

#include "reply.bpf.h"

#ifndef XKV_KEY_IN_VALUE
#error "variant must define XKV_KEY_IN_VALUE"
#endif
#ifndef XKV_STORE_MATCH
#define XKV_STORE_MATCH(sc, e) 1
#endif
/* Is the item e (found by store_lookup) live, for the reply to a delete?
 * The per-CPU layouts override it (store_hash.bpf.h, XKV_PERCPU): their
 * delete removes every CPU's copy. */
#ifndef XKV_LIVE_FOR_DELETE
#define XKV_LIVE_FOR_DELETE(sc, e, now) (XKV_STORE_MATCH(sc, e) && xkv_entry_live(e, now))
#endif
/* offset of the value bytes in entry.data */
#define XKV_VOFF (XKV_KEY_IN_VALUE ? cfg.key_size : 0)
/* Copy the len (<= 2047) value bytes of item e to reply[o].  A layout whose
 * items are not kernel memory a helper can read (arena) defines its own. */
#ifndef XKV_STORE_COPY_VALUE
#define XKV_STORE_COPY_VALUE(sc, o, e, len) \
	bpf_probe_read_kernel(&(sc)->reply[(o) & XKV_RMASK], XKV_LEN(len, 2047), &(e)->data[XKV_VOFF])
#endif

/* ---- get ---------------------------------------------------------------- */

struct get_ctx {
	struct xkv_scratch *sc;
	struct xkv_stats *st;
	__u64 now;     /* 0 until an item with an expiry needs it */
	__u32 o;       /* next free byte in reply[] */
	__u32 full;    /* reply outgrew one datagram */
	__u32 keyed;   /* the first key is in sc->key already (xkv_quick_get) */
};

/* A get's counters are held in sc->tally (scratch memory: on the stack,
 * counts the verifier tracks would keep bpf_loop's states apart) and added
 * by get_count where the get is answered: one passed on to userspace is
 * counted there, once, as memcached counts a request.  st takes only
 * seq_retries, an event of this program. */
static __always_inline void get_begin(struct get_ctx *g)
{
	__builtin_memset(&g->sc->tally, 0, sizeof(g->sc->tally));
}

/* The get answered: its counters into st (cmd_get once). */
static __always_inline void get_count(const struct get_ctx *g, struct xkv_stats *st)
{
	st->v[XKV_STAT_cmd_get]++;
	st->v[XKV_STAT_get_keys] += g->sc->tally.keys;
	st->v[XKV_STAT_get_hits] += g->sc->tally.hits;
	st->v[XKV_STAT_get_misses] += g->sc->tally.misses;
	st->v[XKV_STAT_get_expired] += g->sc->tally.expired;
}

/* A writer was inside the item: the request goes to the slow path, which
 * waits for it (g->full = 2, counted). */
static __always_inline void get_busy(struct get_ctx *g)
{
	stat_inc(g->st, XKV_STAT_seq_retries);
	g->full = 2;
}

/* The rules of a hit, for every get (text and binary): the live item
 * under the key in sc->key into *ep, and 1; 0 when there is none (a miss,
 * counted in g; an expired item is one); -1 when a writer is inside (get_busy).
 * *seq: the item's sequence counter, for get_intact once its value is
 * copied.  One optimistic read: a writer inside (array_fnv) sends the
 * request to the slow path. */
static __always_inline int get_live(struct get_ctx *g, struct xkv_entry **ep, __u32 *seq)
{
	struct xkv_scratch *sc = g->sc;
	struct xkv_entry *e = store_lookup(sc);

	if (!e)
		goto miss;
	__u32 s1 = READ_ONCE_U32(e->seq);
	if (s1 & 1) {
		get_busy(g);
		return -1;
	}
	barrier();
	if (!XKV_STORE_MATCH(sc, e))
		goto miss;
	/* the clock only for items that can expire (reading it is ~30 ns here) */
	if (e->expire_ns && !g->now)
		g->now = bpf_ktime_get_ns();
	if (!xkv_entry_live(e, g->now)) {
		if (e->wtime_ns)
			g->sc->tally.expired++;
		goto miss;
	}
	*ep = e;
	*seq = s1;
	return 1;
miss:
	g->sc->tally.misses++;
	return 0;
}

/* xkv_access_bump (entry.h) as a global function: its branches verified
 * once, not multiplied into every path of a get after it. */
__attribute__((noinline)) __u32 xkv_access_bump_g(__u32 k, __u64 w, __u64 now)
{
	return xkv_access_bump(k, w, now);
}

/* A hit, read for a client: the item's read state moved in place (entry.h,
 * xkv_access_bump, memcached's fetch), by a compare-and-swap of its klen
 * word that a writer meanwhile wins.  Written by an item's first two reads
 * and then at most once a minute; the clock is read only for an item read
 * before (a coarse one once it is ACTIVE: the once-a-minute check). */
static __always_inline void get_access(struct get_ctx *g, struct xkv_entry *e)
{
	__u32 k = READ_ONCE_U32(e->klen);
	__u64 now = 0;

	if (k & XKV_ENT_FETCHED)
		now = g->now ? g->now
		    : (k & XKV_ENT_ACTIVE) ? bpf_ktime_get_coarse_ns() : bpf_ktime_get_ns();
	__u32 n = xkv_access_bump_g(k, e->wtime_ns, now);
	if (n != k)
		__sync_val_compare_and_swap(&e->klen, k, n);
}

/* After the item's value is copied: 1 when no writer came meanwhile (a
 * hit, counted in g, its read marked: get_access), else 0 (get_busy). */
static __always_inline int get_intact(struct get_ctx *g, struct xkv_entry *e, __u32 seq)
{
	barrier();
	if (READ_ONCE_U32(e->seq) != seq) {
		get_busy(g);
		return 0;
	}
	g->sc->tally.hits++;
	get_access(g, e);
	return 1;
}

/* Append one key's hit (if any).  Returns 1 to stop the loop. */
static long get_one(__u32 i, void *vctx)
{
	struct get_ctx *g = vctx;
	struct xkv_scratch *sc = g->sc;
	__u32 t = i + 1, s1;

	if (t >= sc->pr.ntok || t >= XKV_PARSE_TOKENS)
		return 1;
	__u32 klen = sc->pr.tok[t].len;
	if (klen > XKV_KEY_MAX)
		return 1;
	if (!g->keyed)
		xkv_load_key_words(sc, t);
	g->sc->tally.keys++;

	struct xkv_entry *e;
	int live = get_live(g, &e, &s1);
	if (live <= 0)
		return live < 0;
	__u32 len = e->len, flags = e->flags;
	/* the whole reply, END included, must fit one datagram */
	if (len > cfg.val_cap ||
	    g->o + 6 + klen + 1 + xkv_ndigits(flags) + 1 + xkv_ndigits(len) + 2 + len + 2 + 5 >
		    XKV_TEXT + XKV_DGRAM_TEXT) {
		g->full = 1;
		return 1;
	}
	__u32 o = xkv_put_value_hdr(sc, g->o, t, flags, len);
	if (!o || o > 2048 || len > 2047) {
		g->full = 1;
		return 1;
	}
	if (len)
		XKV_STORE_COPY_VALUE(sc, o, e, len);
	o += len;
	PUT_LIT(sc, &o, "\r\n");
	if (!get_intact(g, e, s1))
		return 1;
	g->o = o;
	return 0;
}

/* Every key of the parsed get (tokens 1 ..): the hits' VALUE blocks from
 * reply[g->o] on. */
static __always_inline void xkv_op_get(struct get_ctx *g)
{
	get_begin(g);
	bpf_loop(XKV_PARSE_TOKENS - 1, get_one, g, 0);
}

/* The get's reply text ends with END; returns the offset after it. */
static __always_inline __u32 xkv_get_end(struct get_ctx *g)
{
	__u32 o = g->o;
	PUT_LIT(g->sc, &o, XKV_R_END);
	return o;
}

/* ---- set ---------------------------------------------------------------- */

/* The entry of a set in sc->entry, all but its value bytes (the program
 * copies those from its request). */
static __always_inline void xkv_entry_head(struct xkv_scratch *sc, __u64 now)
{
	struct xkv_entry *e = &sc->entry;
	e->expire_ns = xkv_expire_ns(sc->pr.exptime, now, cfg.realtime_off_ns);
	/* unique per write: the item's cas unique (entry.h) */
	sc->stamp = xkv_stamp(sc->stamp, now, bpf_get_smp_processor_id() % XKV_STAMP_CPUS);
	e->wtime_ns = sc->stamp;
	e->seq = 0;
	e->flags = sc->pr.flags;
	e->len = sc->pr.bytes;
	e->klen = sc->klen;
	if (XKV_KEY_IN_VALUE) {
		for (__u32 w = 0; w < (XKV_KEY_MAX + 6) / 8; w++) {
			if (w * 8 >= cfg.key_size)
				break;
			((__u64 *)e->data)[w] = ((const __u64 *)sc->key)[w];
		}
	}
}

/* Store the entry built in sc->entry under sc->key: 0 (counted as a store),
 * or store_set's -ENOMEM (full) or -EBUSY (lock not taken). */
static __always_inline int xkv_op_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	int err = store_set(sc, st);

	if (!err)
		stat_inc(st, XKV_STAT_stores);
	return err;
}

/* ---- delete ------------------------------------------------------------- */

/* Delete the key in sc->key: 1 DELETED, 0 NOT_FOUND (counted), or -EBUSY
 * when the lock was not taken (nothing changed, nothing counted).  An
 * expired item is gone already: NOT_FOUND, but its slot is freed. */
static __always_inline int xkv_op_delete(struct xkv_scratch *sc, struct xkv_stats *st, __u64 now)
{
	struct xkv_entry *old = store_lookup(sc);
	int live = old && XKV_LIVE_FOR_DELETE(sc, old, now);
	int found = store_del(sc, st);

	if (found < 0)
		return found;
	found = found && live;
	stat_inc(st, found ? XKV_STAT_deletes : XKV_STAT_delete_misses);
	return found;
}

#endif
