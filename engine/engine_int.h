/* SPDX-License-Identifier: MIT */
/* Internal to engine/: what the protocol executor's files share (the slow
 * path object, one command's context, the write descriptor) and the
 * functions they call in one another.  Nothing outside engine/ includes
 * it: the public API is slowpath.h (and slowexec.h for other front ends).
 *
 * The parser is the fast path's own (parse.h), built with a span that holds
 * the largest UDP payload and a token array big enough for large multi-gets:
 * include this header first, before anything that includes parse.h.
 *
 * Which file does what: the comment at the top of slowpath.c.  What is
 * declared here is global in libxdpkv_core, so the command handlers are
 * slow_cmd_* (cli/ has cmd_* of its own). */
#ifndef XDPKV_ENGINE_INT_H
#define XDPKV_ENGINE_INT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#endif
#if defined(XKV_PARSE_SPAN) || defined(XKV_PARSE_TOKENS)
#error "engine_int.h sets the parser's span and tokens: include it first"
#endif
#define XKV_PARSE_SPAN 65536
#define XKV_PARSE_TOKENS 4096
/* parse.h's parser is static (the BPF programs compile it too): only
 * dispatch.c, datagram.c and stream.c call it */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "parse.h"
#pragma GCC diagnostic pop

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "ratelimit.h"
#include "slowpath.h"
#include "slowexec.h"

/* The parser masks every index with SPAN-1 relative to the command start;
 * twice the span keeps even a wrapped index inside the buffer. */
#define SLOW_BUF (2 * XKV_PARSE_SPAN)
/* A reply may not need more datagrams than the 16-bit "total" can count. */
#define SLOW_REPLY_CAP ((size_t)0xffff * XKV_DGRAM_MAX)
#define SLOW_BUSY_TRIES 16
#define SLOW_STRIPES 256         /* key locks of the slow-path writers */
#define SLOW_FLUSH_TRIES 100     /* array_fnv: a slot busy all through a flush walk */

#define R_OK_LINE    "OK\r\n"

/* The chunks of a big value that a write replaced or a delete removed stay
 * SLOW_BIG_LINGER_NS more: a reader that read the old entry (a get here, a
 * snapshot or a migration's copier in another process) still finds them,
 * so a value rewritten without pause can still be read whole (it used to
 * make a snapshot give up after 16 tries).  At most SLOW_BIG_OLD_MAX
 * values and SLOW_BIG_OLD_BYTES bytes, and a quarter of the big map, wait;
 * past that the oldest go at once, and all of them when the big map is
 * full.  Not while a migration runs (its stores change under the list). */
#define SLOW_BIG_LINGER_NS (XKV_BIG_LINGER_MS * 1000000ull)
#define SLOW_BIG_OLD_MAX 1024u
#define SLOW_BIG_WRITES 64u
#define SLOW_BIG_OLD_BYTES (64ull << 20)
struct big_old {
	__u64 due, stamp;
	__u32 len, klen;
	__u8 key[XKV_KEY_MAX];
};

#define SLOW_HOLD_SLOTS 64 /* reader slots of the store lock (hold.c) */

/* stats detail's per-prefix counters (detail.c) */
struct detail_prefix;
struct slow_detail {
	pthread_mutex_t mu;
	int on;                                 /* __atomic: stats detail on */
	struct detail_prefix *bucket[256];      /* memcached's buckets (under mu) */
};

struct xkv_slow {
	struct xkv_store *s;
	struct xkv_slow_limits lim;
	/* stats answers curr_items from here: counting walks the whole map */
	long items;              /* __atomic */
	__u64 items_ns;          /* __atomic; when it was counted */
	/* flush_all walks the map too: a thread does it while requests go on */
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* CLOCK_MONOTONIC, as xkv_now_ns */
	pthread_t flusher;
	bool flusher_up, quit;
	__u64 flush_at;          /* a flush is due then (monotonic ns); 0: none */
	__u64 flush_mark;        /* its cut (a write stamp); 0: flush_at's, taken when due */
	__u64 flush_cut;         /* the walk running removes items stamped up to then */
	int flush_busy;          /* __atomic: flush_at || flush_cut, read without mu */
	__u64 flush_walks;       /* __atomic: walks finished; the last one's cut: */
	__u64 flush_last_cut;    /* (under mu) */
	/* TCP connections, for stats (__atomic; tcp_max 0: no TCP server) */
	long conns_curr, conns_total, conns_rejected;
	/* stats reset: the counters then (__atomic each); stats answers the
	 * counts since (the maps stay monotonic for status and the tests) */
	struct xkv_stats stats_base;
	long conns_total_base, conns_rejected_base;
	__u32 tcp_max;
	bool idle_on;                     /* --idle-timeout set (XKV_TCP_IDLE_ON) */
	__u64 idle_kicks, idle_kicks_base; /* __atomic: closed for --idle-timeout */
	__u64 flush_cmds, flush_cmds_base; /* __atomic: flush_all and binary flush */
	struct slow_detail detail;         /* stats detail */
	__u64 sizes_from;                  /* __atomic: stats sizes_enable's mark (sizes.c); 0: off */
	/* every slow-path write of a key holds its stripe (key hash % SLOW_STRIPES) */
	pthread_mutex_t stripe[SLOW_STRIPES];
	/* Live migration (docs/snapshots.md).  Every request holds the store
	 * lock shared; what changes the store under it (begin, switch, end)
	 * holds it exclusively, so a request sees one state and one store.
	 * One rwlock a thread slot (hold.c), so that requests on different
	 * threads share no cache line; the exclusive side takes them all. */
	struct slow_hold_slot {
		pthread_rwlock_t lk;
	} __attribute__((aligned(64))) hold[SLOW_HOLD_SLOTS];
	int mig_state;           /* MIG_* */
	struct xkv_store *mig;   /* MIG_MIRROR: the new store */
	pthread_mutex_t mig_mu;  /* a write and its mirror, one at a time */
	bool mig_copied;         /* the copier is done: no more tombstones */
	struct xkv_buf tombs;    /* keys deleted while copying: u8 length, bytes */
	struct xkv_slow_mig_stats ms; /* under mig_mu */
	/* values above val_cap: one collection of the big map at a time; what
	 * the last one found (stats), the chunks removed ever (__atomic) */
	pthread_mutex_t big_mu;
	struct xkv_big_census big_last;
	__u64 big_removed;
	/* big writes between their chunks and their entry: a collection keeps
	 * their chunks at any age (a writer stalled past the grace once lost
	 * them); more at once than SLOW_BIG_WRITES fall back to the grace */
	pthread_mutex_t wr_mu;
	__u64 wr_stamp[SLOW_BIG_WRITES];
	unsigned wr_n;
	/* UDP that came past the XDP program's rate limit (ratelimit.h) */
	struct xkv_rl rl;
	/* chunks of replaced and deleted big values, removed a little later
	 * (big_retire) */
	pthread_mutex_t old_mu;
	struct big_old *old;     /* ring of SLOW_BIG_OLD_MAX */
	unsigned old_head, old_n;
	__u64 old_bytes, old_max;
	const struct xkv_sasl *sasl; /* SASL required (binproto.c) */
	/* the acl_gen token mapped read-only (NULL: a map pinned by an older
	 * xdpkv, not mappable): a connection keeps its rights while it stays */
	const __u64 *acl_tok;
};
enum { MIG_NONE, MIG_MIRROR, MIG_SWITCHED };

/* ---- one command ---------------------------------------------------------- */

enum { OVER_NONE, OVER_REPLY, OVER_AMP };

struct slow_cmd {
	struct xkv_slow *sl;
	struct xkv_store *s;
	const __u8 *buf;         /* command start (masked indexes as in parse.h) */
	struct xkv_req *r;
	struct xkv_buf *out;
	struct xkv_stats *d;
	size_t out_start;        /* out->len when the datagram started */
	struct slow_scratch *sc;
	bool framed;             /* UDP: every 1392 bytes of reply cost a frame header */
	size_t budget;           /* reply bytes on the wire this datagram may take */
	int budget_amp;          /* the budget is the amplification cap, not max_reply */
	int over;                /* OVER_*: the reply outgrew the budget */
	/* a meta command's key (meta_key): token 1, or its base64 decoding (b) */
	const __u8 *key;
	__u32 klen;
	bool key_b;
	__u8 key_buf[XKV_KEY_MAX];
	/* mg with T or N: the expiries in token order (ttl_at) */
	struct {
		bool on, created;
		__u64 start, T, N;
	} tw;
	/* the source may write (its rights): mg takes the win token only then
	 * (the token asks its holder to write the item) */
	bool may_write;
	/* a storage command's data block: buf + data_off, or (a block longer
	 * than the parse buffer, on a stream) in the stream's own buffer */
	const __u8 *data;
	/* a stream's multi-get answered in parts (mget.c; NULL elsewhere):
	 * the get stops before a key once out holds mg_max bytes */
	struct xkv_stream_mget *mg;
	size_t mg_max;
};

/* Per-thread scratch (~180 KiB, allocated on a thread's first request and
 * freed when the thread ends): the zero-padded request text, the parser
 * output, one item read back from the store, and this thread's copy of the
 * store handle: the accessors count what a set did in the handle
 * (new_items, overwrites), so threads sharing one would mix their counts. */
struct slow_scratch {
	__u8 text[SLOW_BUF];
	size_t text_used;
	struct xkv_req req;
	struct xkv_item item;
	struct xkv_store store;
	__u8 *big;               /* a value above val_cap, read from its chunks */
	size_t big_cap;
};

#define STAT(c, name) ((c)->d->v[XKV_STAT_##name]++)
#define PUT_LIT(b, s) xkv_buf_put((b), (s), sizeof(s) - 1)

static inline const __u8 *tok_ptr(const struct slow_cmd *c, __u32 t)
{
	return c->buf + c->r->tok[t].off;
}

/* After this reply, stop the datagram (rc is the reply's append result). */
static inline int stop(int rc)
{
	return rc < 0 ? rc : -1;
}

/* The accessors answer -EBUSY while a writer holds an array_fnv slot: retry
 * the call a few times, yielding between tries. */
#define RETRY_BUSY(call)                                              \
	({                                                            \
		int ret_ = -EBUSY;                                    \
		for (int i_ = 0; i_ < SLOW_BUSY_TRIES && ret_ == -EBUSY; i_++) { \
			if (i_)                                       \
				sched_yield();                        \
			ret_ = (call);                                \
		}                                                     \
		ret_;                                                 \
	})

/* ---- flush_all's cut (flush.c) -------------------------------------------- */

/* Until the walk has reached them, items written before a due flush are
 * answered as misses here.  (The fast path does not know: it may still
 * serve them until the walk removes them; the walk removes only what is
 * stamped up to its cut, but on the hash layouts a write that lands between
 * its re-read of an item and the delete goes too: docs/protocol.md.)  walks: flush_walks before the item
 * was read; a walk that finished since then removed it if it was stamped
 * up to that walk's cut (the read saw it just before; it used to be
 * answered: about 1 get in 200 right after a flush_all on a busy machine).
 * Without a flush pending or finished since the read, it answers at once
 * (every read asks); else flushed_by_cut looks at the cuts. */
bool flushed_by_cut(struct xkv_slow *sl, __u64 wtime_ns, __u64 walks);
static inline bool flushed(struct xkv_slow *sl, __u64 wtime_ns, __u64 walks)
{
	if (!__atomic_load_n(&sl->flush_busy, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&sl->flush_walks, __ATOMIC_ACQUIRE) == walks)
		return false;
	return flushed_by_cut(sl, wtime_ns, walks);
}
/* flush_all [delay]: 0 or <0 -errno (flush.c). */
int flush_run(struct slow_cmd *c, __s64 delay);

/* ---- reading the store (read.c) ------------------------------------------- */
/* A key longer than the store's keys (and not than memcached's): no item
 * has it, none can be stored under it. */
static inline bool key_unstorable(const struct slow_cmd *c, __u32 klen)
{
	return klen > c->s->cfg.key_cap;
}

/* The accessor's get, retried while busy: 1 hit, 0 miss (an item flush_all
 * removes counts as gone), <0 -errno.  Inline: every key of a get reads here. */
static inline int store_get(struct slow_cmd *c, const void *key, __u32 klen, struct xkv_item *it)
{
	if (key_unstorable(c, klen))
		return 0;
	__u64 walks = __atomic_load_n(&c->sl->flush_walks, __ATOMIC_ACQUIRE);
	int ret = RETRY_BUSY(c->s->L->get(c->s, key, klen, it));
	return ret == 1 && flushed(c->sl, it->wtime_ns, walks) ? 0 : ret;
}

/* store_get with the value: *val points at it (it->data, or the thread's
 * big buffer).  A big item replaced between the two reads is read again. */
/* What store_get_val reads of a value above val_cap: all of it; none (the
 * caller needs the item's head only: *val NULL); or all of it unless the
 * value alone would put the reply over its budget (returns 2, *val NULL,
 * c->over set: reading the chunks costs about what sending them does, and
 * an unverified 10-byte datagram must not make this side read 1 MiB). */
enum { VAL_ALL, VAL_NONE, VAL_REPLY };

int store_get_val(struct slow_cmd *c, const void *key, __u32 klen, struct xkv_item *it,
		  const __u8 **val, int want);
/* The value of an entry a write returned (inline or in chunks). */
int entry_val(struct slow_cmd *c, const void *key, __u32 klen, const struct xkv_entry *e,
	      const __u8 **val);
int store_del(struct slow_cmd *c, const void *key, __u32 klen);

/* The parser checks the first 32 tokens' keys (its control-character mask
 * has 32 bits); the rest of a long multi-get is checked here by the same
 * rule (memcached's 250 bytes; one over the store's key_cap reads as a miss). */
static inline int key_verdict(const struct slow_cmd *c, __u32 t)
{
	return xkv_key_rule(&c->s->cfg, tok_ptr(c, t), c->r->tok[t].len);
}

/* Bytes on the wire for n bytes of reply text: the frame headers too. */
static inline size_t wire_bytes(size_t n)
{
	return n + XKV_UDP_HDR_LEN * ((n + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
}

/* Would the reply, grown by extra bytes, outgrow this datagram's budget
 * (a TCP command's: no frame headers)?  The reply only grows, so the
 * answer cannot change later: stop building. */
static inline bool over_budget(struct slow_cmd *c, size_t extra)
{
	size_t n = c->out->len - c->out_start + extra;
	if ((c->framed ? wire_bytes(n) : n) <= c->budget)
		return false;
	c->over = c->budget_amp ? OVER_AMP : OVER_REPLY;
	return true;
}

/* ---- replies (reply.c) ---------------------------------------------------- */

int buf_printf(struct xkv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append the reply line for a parser/store verdict and count it. */
int reply_err(struct slow_cmd *c, int err);
/* A client error with its own line (not a parser verdict). */
int reply_err_line(struct slow_cmd *c, const char *line);
/* A store error other than "full": busy after retries, or the kernel's. */
int reply_store_errno(struct slow_cmd *c, int err);
/* A command's one-line answer, or none with noreply. */
int answer(struct slow_cmd *c, const char *line);

/* ---- writes: one read-modify-write for every write command ---------------- */

/* What a write does with the item it finds.  Every slow-path write of a key
 * runs under the key's stripe lock (one at a time per key in this process)
 * and through the layout's set_if (atomic against XDP writers as far as the
 * layout allows: docs/protocol.md, "Atomicity"). */
enum wr_mode { WR_SET, WR_ADD, WR_REPLACE, WR_APPEND, WR_PREPEND, WR_TOUCH, WR_INCR, WR_DECR,
	       WR_INVALIDATE, /* md I: the item stays, stale, with a new cas */
	       WR_MARK_WON,   /* mg: note that the win token went out (cas kept) */
	       WR_ACCESS      /* a read's mark (bump): the item as it is, its read state moved */ };
/* set_if's verdicts (>0); WR_STORED: stored */
enum wr_out { WR_STORED, WR_NOT_STORED, WR_EXISTS, WR_NOT_FOUND, WR_NON_NUMERIC, WR_TOO_LARGE,
	      WR_NEED_BIG /* internal: append/prepend to or into a big value (big_rmw) */ };

struct wr {
	const struct xkv_store *s;
	__u8 mode;               /* enum wr_mode */
	bool has_cas;            /* store only over the item of this cas unique */
	bool vivify;             /* append, prepend, incr, decr: a miss creates the item */
	bool new_ttl;            /* give the item expire_ttl (touch, ma T, mg T, md I T) */
	bool created_keeps_ttl;  /* ... but not an item the write creates (ma N after T) */
	bool stale_ok;           /* ms I: a cas below the item's stores the value, stale */
	bool bump;               /* touch, gat, WR_ACCESS: the write is a read too
				  * (xkv_access_bump); mg's T bumps after its reply */
	__u32 state;             /* the meta state a new item gets (mg N: XKV_ENT_WON) */
	__u64 cas;
	const __u8 *data;        /* set, add, replace, append, prepend */
	__u32 bytes, flags;
	__u64 expire_ns;         /* a stored or vivified item's expiry */
	__u64 expire_ttl;
	__u64 delta, initial;    /* incr, decr */
	bool created;            /* out: the item was made by vivify */
	char num[24];            /* out: incr/decr's result, digits only */
	__u32 num_len;
	/* a value above val_cap: its chunks are put before set_if, under the
	 * stamp the entry gets (0: a fresh one at the decision) */
	__u64 stamp;
	__u64 old_stamp;         /* out: the item replaced, when it was big */
	__u32 old_len;
};

/* rmw.c: the writes */
/* Run the write w on key.  0 with the stored entry in *out (free it; a big
 * value's bytes are not in it: entry_val), a wr_out verdict > 0, or <0
 * -errno. */
int slow_write(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
	       struct xkv_entry **out);
/* One set_if of w on key, under its stripe lock (a big value's chunks first). */
int write_once(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
	       struct xkv_entry *e);
/* Delete key under its stripe lock, if the item's cas is cas (has_cas).
 * 1 deleted, 0 absent, WR_EXISTS (cas differs), <0 -errno. */
int slow_delete(struct slow_cmd *c, const void *key, __u32 klen, bool has_cas, __u64 cas);
/* write.c: a client's read of the item (its state and write stamp, as
 * store_get read them): its read state moved (entry.h, xkv_access_bump)
 * where that changes it, by one more write of the item. */
void read_bump(struct slow_cmd *c, const void *key, __u32 klen, __u32 state, __u64 wtime);
/* A stored value as memcached's incr reads it: 0, or -1 (not a number). */
int mc_number(const __u8 *p, __u32 n, __u64 *out);
/* incr / decr of v: incr wraps at 2^64, decr stops at 0 (memcached). */
__u64 arith(const struct wr *w, __u64 v);

/* big_rmw.c: append / prepend / md I / incr / decr over a big value */
int big_rmw(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w, struct xkv_entry *e);

/* big_chunks.c: the chunks of replaced and deleted big values */
/* Remove a replaced or deleted big value's chunks (a little later). */
void big_retire(struct slow_cmd *c, const void *key, __u32 klen, __u64 stamp, __u32 len);
/* Everything waiting goes now (a migration begins, the slow path ends). */
void big_old_flush(struct xkv_slow *sl);
/* The big map is full: remove the chunks nobody points at; the chunks
 * removed, 0 if none could be. */
__u64 big_collect_now(struct slow_cmd *c);
/* A big write's stamp, taken and listed as in progress (big_write_end
 * unlists it): a collection keeps its chunks until its entry is in. */
__u64 big_write_begin(struct xkv_slow *sl);
void big_write_end(struct xkv_slow *sl, __u64 stamp);

/* ---- the commands --------------------------------------------------------- */

/* classic.c */
/* A write verdict as the classic commands answer it. */
int answer_wr(struct slow_cmd *c, int ret);
/* One key of a get (w: a gat's touch, else NULL) into c->sc->item, *val
 * its value: 1 hit, 0 miss (counted), <0 -errno. */
int get_one(struct slow_cmd *c, const __u8 *key, __u32 klen, struct wr *w, const __u8 **val,
	    int want);
int slow_cmd_get(struct slow_cmd *c);
int slow_cmd_store(struct slow_cmd *c);
int slow_cmd_touch(struct slow_cmd *c);
int slow_cmd_delete(struct slow_cmd *c);
int slow_cmd_arith(struct slow_cmd *c);

/* meta.c */
int slow_cmd_mg(struct slow_cmd *c);
int slow_cmd_ms(struct slow_cmd *c);
int slow_cmd_md(struct slow_cmd *c);
int slow_cmd_ma(struct slow_cmd *c);
int slow_cmd_me(struct slow_cmd *c);

/* flush.c, stats_cmd.c */
int slow_cmd_flush(struct slow_cmd *c);
int slow_cmd_stats(struct slow_cmd *c);
/* The lines of stats ("STAT <name> <value>\r\n" each, no END) into c->out.
 * 0, or -1 without memory. */
int stats_lines(struct slow_cmd *c);
/* The lines of stats <group> (settings, items, slabs, sizes; reset;
 * sizes_enable, sizes_disable) into c->out: 0, STATS_RESET, STATS_NO_GROUP,
 * STATS_NO_END (lines that memcached ends with no END), or -1 without memory. */
enum { STATS_RESET = 1, STATS_NO_GROUP = 2, STATS_NO_END = 3 };
int stats_group(struct slow_cmd *c, const __u8 *w, __u32 wl);
/* stats sizes, sizes_enable, sizes_disable (sizes.c): as stats_group */
enum sizes_what { SIZES_LIST, SIZES_ENABLE, SIZES_DISABLE };
int stats_sizes(struct slow_cmd *c, enum sizes_what what);
/* lru_crawler metadump <all|classes> (crawler.c) */
int slow_cmd_lru_crawler(struct slow_cmd *c);
int slow_cmd_slabs(struct slow_cmd *c);

/* migrate_mirror.c */
/* A write while migrating: mig_write_begin (false: refused and answered,
 * *rc its result), the write on the old store, mig_write_end mirrors every
 * key it names. */
bool mig_write_begin(struct slow_cmd *c, int *rc);
void mig_write_end(struct slow_cmd *c);
/* Make the new store hold what the old one holds for key (under mig_mu). */
void mirror_key(struct xkv_slow *sl, struct xkv_store *old, const __u8 *key, __u32 klen,
		struct xkv_item *it, bool remember);

/* ---- the text command loop (dispatch.c) ----------------------------------- */

/* This thread's scratch and its own view of the store for the commands to
 * come.  <0 (answered) without memory. */
int slow_cmd_begin(struct slow_cmd *c);
/* Copy the request text into the zero-padded parse buffer. */
void slow_load_text(struct slow_scratch *sc, const __u8 *text, size_t tlen);
/* Parse the command at off of the tlen bytes of text (ms: its data block
 * framed too); *err: the parser's verdict. */
void parse_at(struct slow_cmd *c, size_t off, size_t tlen, int *err);
/* A get-like command with more keys than this slow path takes? */
bool too_many_keys(const struct slow_cmd *c);
/* Does the command change the store? */
bool slow_cmd_writes(const struct slow_cmd *c);
void count_cmd(struct slow_cmd *c);
/* The command word's op, read again where a parser verdict cleared r->op. */
__u8 word_op(const struct slow_cmd *c);
/* One parsed command.  Returns <0 to stop processing the datagram. */
int slow_dispatch(struct slow_cmd *c);
/* Count and run one command the parser read (err: its verdict), with
 * noreply's silence.  <0: the rest of a datagram must not run. */
int slow_run(struct slow_cmd *c, int err);
/* A reply that outgrew max_reply is replaced by the error line. */
void settle_over_reply(struct slow_cmd *c);

/* ---- a stream's multi-get in parts (mget.c) ------------------------------- */

/* Does a get before key token t stop here, out holding mg_max bytes?
 * Then the get returns and the stream calls again once out has drained. */
static inline bool mget_pause(struct slow_cmd *c, __u32 t)
{
	if (!c->mg_max || c->out->len < c->mg_max)
		return false;
	c->mg->done = t - c->r->key1;
	c->mg->paused = true;
	return true;
}
/* Is the multi-get line p[0..line) (its end not counted) too long for one
 * parse: over XKV_STREAM_LINE_MAX bytes, or more keys than the tokens? */
bool mget_long(const __u8 *p, size_t line);
/* Run (or go on with) such a line, tlen bytes with its end: *used tlen
 * once its END is out, else 0.  -1: no key at all (too long a line). */
int mget_parts(struct slow_cmd *c, const struct xkv_rights *rt, struct xkv_slow_stream *st,
	       const __u8 *p, size_t line, size_t tlen, size_t *used);

/* The store lock exclusively: every reader slot (hold.c). */
void slow_hold_all(struct xkv_slow *sl);
void slow_release_all(struct xkv_slow *sl);
void slow_hold_init(struct xkv_slow *sl);
void slow_hold_destroy(struct xkv_slow *sl);

/* ---- who may (admit.c) ---------------------------------------------------- */

/* The lists' verdict on a source (addr NULL: a trusted local caller): 0
 * with its rights, or XKV_STAT_drop_acl. */
int slow_rights(struct xkv_slow *sl, const __u8 *addr, struct xkv_rights *rt);
/* slow_rights for a connection, kept in its cache until a list changes. */
int slow_rights_kept(struct xkv_slow *sl, const __u8 *addr, struct xkv_rights_kept *k,
		     struct xkv_rights *rt);
/* Map / unmap the acl_gen token (sl->acl_tok). */
void slow_acl_tok_map(struct xkv_slow *sl);
void slow_acl_tok_unmap(struct xkv_slow *sl);
/* A datagram's checks (the XDP program's, then the lists and the rate
 * limit): 0 to go on, or the counter of a silent drop (-1: not counted). */
int slow_admit(struct xkv_slow *sl, const struct xkv_slow_src *src, struct xkv_rights *rt);

/* detail.c: stats detail's per-prefix counters (memcached's stats_prefix.c) */
enum detail_what { DETAIL_GET, DETAIL_SET, DETAIL_DEL };
void detail_init(struct slow_detail *d);
void detail_destroy(struct slow_detail *d);
/* stats reset: every prefix goes */
void detail_clear(struct slow_detail *d);
/* A key's get (hit or not), set or delete, counted under its prefix while
 * detail is on. */
void detail_count(struct slow_cmd *c, const __u8 *key, __u32 klen, enum detail_what what, bool hit);
/* on/off: the counting, and the fast path's handing over (XKV_HOST_DETAIL) */
void detail_switch(struct xkv_slow *sl, bool on);
/* Every prefix's line, then END.  0 or -1 (memory). */
int detail_dump(struct xkv_slow *sl, struct xkv_buf *out);
/* stats detail's word w (n bytes): on, off (0), dump (its lines into out:
 * 0 or -1); 1 for any other word. */
int detail_cmd(struct xkv_slow *sl, const __u8 *w, __u32 n, struct xkv_buf *out);

#endif
