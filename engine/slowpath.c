// SPDX-License-Identifier: MIT
/* The slow path's protocol logic: answer every command of one request
 * datagram from the store, through the layout's accessor.  No sockets here
 * (serve.c owns them), so the tests drive it directly.
 *
 * The parser is the fast path's own (parse.h), built with a span that holds
 * the largest UDP payload and a token array big enough for large multi-gets. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#endif
#define XKV_PARSE_SPAN 65536
#define XKV_PARSE_TOKENS 4096
#include "parse.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "ratelimit.h"
#include "slowpath.h"
#include "binproto.h"
#include "fnv.h"
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
#define R_BUSY       "SERVER_ERROR busy\r\n"
#define R_NON_NUMERIC "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"

static __u64 slow_start_ns;

__attribute__((constructor)) static void slow_start(void)
{
	slow_start_ns = xkv_now_ns();
}

/* ---- reply buffer ------------------------------------------------------- */

int xkv_buf_put(struct xkv_buf *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		__u8 *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, src, n);
	b->len += n;
	return 0;
}

void xkv_buf_free(struct xkv_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static int buf_printf(struct xkv_buf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	return xkv_buf_put(b, line, (size_t)n);
}

#define PUT_LIT(b, s) xkv_buf_put((b), (s), sizeof(s) - 1)

/* ---- the slow path of one store ------------------------------------------ */

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
#define SLOW_BIG_OLD_BYTES (64ull << 20)
struct big_old {
	__u64 due, stamp;
	__u32 len, klen;
	__u8 key[XKV_KEY_MAX];
};

static void big_old_flush(struct xkv_slow *sl);

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
	__u32 tcp_max;
	/* every slow-path write of a key holds its stripe (key hash % SLOW_STRIPES) */
	pthread_mutex_t stripe[SLOW_STRIPES];
	/* Live migration (docs/snapshots.md).  Every request holds store_lk
	 * shared; what changes the store under it (begin, switch, end) holds
	 * it exclusively, so a request sees one state and one store. */
	pthread_rwlock_t store_lk;
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
	/* UDP that came past the XDP program's rate limit (ratelimit.h) */
	struct xkv_rl rl;
	/* chunks of replaced and deleted big values, removed a little later
	 * (big_retire) */
	pthread_mutex_t old_mu;
	struct big_old *old;     /* ring of SLOW_BIG_OLD_MAX */
	unsigned old_head, old_n;
	__u64 old_bytes, old_max;
	const struct xkv_sasl *sasl; /* SASL required (binproto.c) */
};
enum { MIG_NONE, MIG_MIRROR, MIG_SWITCHED };

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

/* Until the walk has reached them, items written before a due flush are
 * answered as misses here.  (The fast path does not know: it may still
 * serve them until the walk removes them, and the walk may remove an item
 * written after the flush_all before it gets there: the accessors have no
 * "delete what is older than" walk.)  walks: flush_walks before the item
 * was read; a walk that finished since then removed it if it was stamped
 * up to that walk's cut (the read saw it just before; it used to be
 * answered: about 1 get in 200 right after a flush_all on a busy machine). */
static bool flushed(struct xkv_slow *sl, __u64 wtime_ns, __u64 walks)
{
	if (!__atomic_load_n(&sl->flush_busy, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&sl->flush_walks, __ATOMIC_ACQUIRE) == walks)
		return false;
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

void xkv_slow_hold(struct xkv_slow *sl)
{
	pthread_rwlock_rdlock(&sl->store_lk);
}

void xkv_slow_release(struct xkv_slow *sl)
{
	pthread_rwlock_unlock(&sl->store_lk);
}

long xkv_slow_count_refresh(struct xkv_slow *sl)
{
	xkv_slow_hold(sl);
	long n = sl->s->L->count(sl->s);
	xkv_slow_release(sl);
	if (n >= 0) {
		__atomic_store_n(&sl->items, n, __ATOMIC_RELAXED);
		__atomic_store_n(&sl->items_ns, xkv_now_ns(), __ATOMIC_RELEASE);
	}
	return n;
}

/* The accessor's flush; array_fnv gives up on a slot a writer holds. */
static int flush_walk(struct xkv_store *s)
{
	int e = -EBUSY;
	for (int i = 0; i < SLOW_FLUSH_TRIES && e == -EBUSY; i++) {
		if (i)
			usleep(1000);
		e = s->L->flush(s);
	}
	return e;
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
		sl->flush_cut = flush_cut_of(sl->flush_at, sl->flush_mark);
		sl->flush_at = 0;
		sl->flush_mark = 0;
		pthread_mutex_unlock(&sl->mu);
		xkv_slow_hold(sl);
		int e = flush_walk(sl->s);
		xkv_slow_release(sl);
		if (e) /* nobody to answer: the OK went out already */
			fprintf(stderr, "xdpkv slow path: flush_all failed: %s\n", strerror(-e));
		xkv_slow_count_refresh(sl);
		pthread_mutex_lock(&sl->mu);
		sl->flush_last_cut = sl->flush_cut;
		__atomic_add_fetch(&sl->flush_walks, 1, __ATOMIC_RELEASE);
		sl->flush_cut = 0;
		__atomic_store_n(&sl->flush_busy, sl->flush_at != 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sl->mu);
	return NULL;
}

/* flush_all: due at `at`, removing what was stamped up to mark (0: up to
 * at's microsecond).  A later flush_all replaces one still waiting for its
 * delay (memcached keeps one flush time too); one that comes while a walk
 * runs is queued behind it, so what was written meanwhile goes as well.
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
		pthread_cond_signal(&sl->cv);
	}
	pthread_mutex_unlock(&sl->mu);
	return e;
}

int xkv_slow_flush_busy(struct xkv_slow *sl)
{
	return __atomic_load_n(&sl->flush_busy, __ATOMIC_ACQUIRE);
}

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
	pthread_mutex_init(&sl->old_mu, NULL);
	sl->old = calloc(SLOW_BIG_OLD_MAX, sizeof(*sl->old)); /* NULL: chunks go at once */
	sl->old_max = (__u64)s->cfg.big_chunks * XKV_BIG_CHUNK / 4;
	if (sl->old_max > SLOW_BIG_OLD_BYTES)
		sl->old_max = SLOW_BIG_OLD_BYTES;
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	/* a switch must not wait behind a stream of requests */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&sl->store_lk, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sl->cv, &ca);
	pthread_condattr_destroy(&ca);
	bool guarded = !(s->cfg.flags & XKV_CFG_UNGUARDED);
	xkv_rl_init(&sl->rl, guarded ? s->cfg.rate_limit : 0, s->cfg.rate_burst);
	xkv_slow_count_refresh(sl);
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
	pthread_rwlock_destroy(&sl->store_lk);
	pthread_mutex_destroy(&sl->mig_mu);
	xkv_rl_destroy(&sl->rl);
	free(sl->old);
	pthread_mutex_destroy(&sl->old_mu);
	free(sl);
}

struct xkv_slow_limits xkv_slow_limits_of(const struct xkv_slow *sl)
{
	return sl->lim;
}

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
static pthread_once_t slow_once = PTHREAD_ONCE_INIT;
static pthread_key_t slow_key;

static void slow_scratch_free(void *p)
{
	struct slow_scratch *sc = p;
	free(sc->big);
	free(sc);
}

static void slow_key_make(void)
{
	pthread_key_create(&slow_key, slow_scratch_free);
}

static struct slow_scratch *slow_scratch(void)
{
	pthread_once(&slow_once, slow_key_make);
	struct slow_scratch *sc = pthread_getspecific(slow_key);
	if (!sc) {
		sc = calloc(1, sizeof(*sc));
		if (sc && pthread_setspecific(slow_key, sc)) {
			free(sc);
			sc = NULL;
		}
	}
	return sc;
}

#define STAT(c, name) ((c)->d->v[XKV_STAT_##name]++)

static const __u8 *tok_ptr(const struct slow_cmd *c, __u32 t)
{
	return c->buf + c->r->tok[t].off;
}

/* Append the reply line for a parser/store verdict and count it. */
static int reply_err(struct slow_cmd *c, int err)
{
	switch (err) {
	case XKV_E_UNKNOWN: STAT(c, err_unknown); break;
	case XKV_E_TOO_LARGE: STAT(c, err_too_large); break;
	case XKV_E_OOM: STAT(c, err_oom); break;
	default: STAT(c, err_client); break;
	}
	const char *line = xkv_err_line(err);
	return xkv_buf_put(c->out, line, strlen(line));
}

/* A client error with its own line (not a parser verdict). */
static int reply_err_line(struct slow_cmd *c, const char *line)
{
	STAT(c, err_client);
	return xkv_buf_put(c->out, line, strlen(line));
}

/* After this reply, stop the datagram (rc is the reply's append result). */
static int stop(int rc)
{
	return rc < 0 ? rc : -1;
}

/* A store error other than "full": busy after retries, or the kernel's. */
static int reply_store_errno(struct slow_cmd *c, int err)
{
	if (err == -ENOMEM)
		return reply_err(c, XKV_E_OOM);
	if (err == -EBUSY)
		return PUT_LIT(c->out, R_BUSY);
	return buf_printf(c->out, "SERVER_ERROR %s\r\n", strerror(-err));
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

static int store_get(struct slow_cmd *c, const void *key, __u32 klen, struct xkv_item *it)
{
	__u64 walks = __atomic_load_n(&c->sl->flush_walks, __ATOMIC_ACQUIRE);
	int ret = RETRY_BUSY(c->s->L->get(c->s, key, klen, it));
	return ret == 1 && flushed(c->sl, it->wtime_ns, walks) ? 0 : ret;
}

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
static int entry_val(struct slow_cmd *c, const void *key, __u32 klen, const struct xkv_entry *e,
		     const __u8 **val)
{
	if (e->len <= c->s->cfg.val_cap) {
		*val = e->data;
		return 1;
	}
	return big_load(c, key, klen, e->wtime_ns, e->len, val);
}

/* store_get with the value: *val points at it (it->data, or the thread's
 * big buffer).  A big item replaced between the two reads is read again. */
/* What store_get_val reads of a value above val_cap: all of it; none (the
 * caller needs the item's head only: *val NULL); or all of it unless the
 * value alone would put the reply over its budget (returns 2, *val NULL,
 * c->over set: reading the chunks costs about what sending them does, and
 * an unverified 10-byte datagram must not make this side read 1 MiB). */
enum { VAL_ALL, VAL_NONE, VAL_REPLY };

static bool over_budget(struct slow_cmd *c, size_t extra);

static int store_get_val(struct slow_cmd *c, const void *key, __u32 klen, struct xkv_item *it,
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

static int store_del(struct slow_cmd *c, const void *key, __u32 klen)
{
	return RETRY_BUSY(c->s->L->del(c->s, key, klen));
}

/* The parser checks the first 32 tokens' keys (its control-character mask
 * has 32 bits); the rest of a long multi-get is checked here by the same rule. */
static int key_verdict(const struct slow_cmd *c, __u32 t)
{
	return xkv_key_check(&c->s->cfg, tok_ptr(c, t), c->r->tok[t].len);
}

/* Bytes on the wire for n bytes of reply text: the frame headers too. */
static size_t wire_bytes(size_t n)
{
	return n + XKV_UDP_HDR_LEN * ((n + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
}

/* Would the reply, grown by extra bytes, outgrow this datagram's budget
 * (a TCP command's: no frame headers)?  The reply only grows, so the
 * answer cannot change later: stop building. */
static bool over_budget(struct slow_cmd *c, size_t extra)
{
	size_t n = c->out->len - c->out_start + extra;
	if ((c->framed ? wire_bytes(n) : n) <= c->budget)
		return false;
	c->over = c->budget_amp ? OVER_AMP : OVER_REPLY;
	return true;
}

/* A command's one-line answer, or none with noreply. */
static int answer(struct slow_cmd *c, const char *line)
{
	if (c->r->noreply) {
		STAT(c, noreply);
		return 0;
	}
	return xkv_buf_put(c->out, line, strlen(line));
}

static bool mc_isspace(__u8 ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* A stored value as memcached's incr reads it (safe_strtoull over the item's
 * data and its \r\n): white space, a sign, decimal digits that fit in 64
 * bits, then white space or the value's end; the rest is not looked at
 * ("12\rabc" is 12).  A minus sign only on zero.  0, or -1: not a number. */
static int mc_number(const __u8 *p, __u32 n, __u64 *out)
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
	if (i == d0 || (i < n && !mc_isspace(p[i])) || (neg && v))
		return -1;
	*out = v;
	return 0;
}

/* An inline value as a number (a big one's bytes are in its chunks:
 * big_arith reads them). */
static int value_u64(const struct xkv_item *it, __u64 *out)
{
	return mc_number(it->data, it->len, out);
}

/* ---- writes: one read-modify-write for every write command ---------------- */

/* What a write does with the item it finds.  Every slow-path write of a key
 * runs under the key's stripe lock (one at a time per key in this process)
 * and through the layout's set_if (atomic against XDP writers as far as the
 * layout allows: docs/protocol.md, "Atomicity"). */
enum wr_mode { WR_SET, WR_ADD, WR_REPLACE, WR_APPEND, WR_PREPEND, WR_TOUCH, WR_INCR, WR_DECR,
	       WR_INVALIDATE, /* md I: the item stays, stale, with a new cas */
	       WR_MARK_WON    /* mg: note that the win token went out (cas kept) */ };
/* set_if's verdicts (>0); WR_STORED: stored */
enum wr_out { WR_STORED, WR_NOT_STORED, WR_EXISTS, WR_NOT_FOUND, WR_NON_NUMERIC, WR_TOO_LARGE,
	      WR_NEED_BIG /* internal: append/prepend to or into a big value (big_rmw) */ };

struct wr {
	const struct xkv_store *s;
	__u8 mode;               /* enum wr_mode */
	bool has_cas;            /* store only over the item of this cas unique */
	bool vivify;             /* append, prepend, incr, decr: a miss creates the item */
	bool new_ttl;            /* give the item expire_ttl (touch, ma T, mg T, md I T) */
	bool stale_ok;           /* ms I: a cas below the item's stores the value, stale */
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

static __u64 key_hash(const void *key, __u32 klen)
{
	return xkv_fnv1a(key, klen);
}

static pthread_mutex_t *stripe_of(struct xkv_slow *sl, const void *key, __u32 klen)
{
	return &sl->stripe[key_hash(key, klen) % SLOW_STRIPES];
}

/* incr / decr of v: incr wraps at 2^64, decr stops at 0 (memcached). */
static __u64 arith(const struct wr *w, __u64 v)
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
		if (cur) /* memcached changes the number in place: the state stays */
			e->klen = cur->state;
	} else if (cur && (w->mode == WR_APPEND || w->mode == WR_PREPEND)) {
		if ((__u64)cur->len + w->bytes > cap)
			return WR_NEED_BIG; /* or too large: big_rmw says */
		bool after = w->mode == WR_APPEND;
		memcpy(e->data + (after ? 0 : w->bytes), cur->data, cur->len);
		memcpy(e->data + (after ? cur->len : 0), w->data, w->bytes);
		e->len = cur->len + w->bytes;
		e->flags = cur->flags;    /* memcached keeps the item's flags and expiry */
		e->expire_ns = cur->expire_ns;
	} else if (w->mode == WR_TOUCH || w->mode == WR_MARK_WON || w->mode == WR_INVALIDATE) {
		/* big: the chunks stay (the cas is kept; invalidate's are not big) */
		memcpy(e->data, cur->data, xkv_inline_len(cur->len, cap));
		e->len = cur->len;
		e->flags = cur->flags;
		e->expire_ns = cur->expire_ns;
		if (w->mode != WR_INVALIDATE)
			e->wtime_ns = cur->wtime_ns; /* a touch keeps the cas, as memcached */
		e->klen = w->mode == WR_TOUCH	   ? cur->state
			  : w->mode == WR_MARK_WON ? cur->state | XKV_ENT_WON
						   : XKV_ENT_STALE; /* the token may go out again */
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
	if (w->new_ttl)
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
#define SLOW_BIG_GRACE_NS (2ull * 1000000000ull)

/* Remove what is due (all: everything), under old_mu. */
static void big_old_drain(struct xkv_slow *sl, bool all)
{
	__u64 now = all ? 0 : xkv_now_ns();
	while (sl->old_n) {
		struct big_old *o = &sl->old[sl->old_head];
		if (!all && o->due > now && sl->old_n < SLOW_BIG_OLD_MAX && sl->old_bytes <= sl->old_max)
			break;
		xkv_big_del(sl->s, o->key, o->klen, o->stamp, o->len);
		sl->old_bytes -= o->len;
		sl->old_head = (sl->old_head + 1) % SLOW_BIG_OLD_MAX;
		sl->old_n--;
	}
}

static void big_retire(struct slow_cmd *c, const void *key, __u32 klen, __u64 stamp, __u32 len)
{
	struct xkv_slow *sl = c->sl;
	/* (c->s is this thread's copy of sl->s: the same big map) */
	if (!sl->old || sl->mig_state != MIG_NONE || klen > XKV_KEY_MAX) {
		xkv_big_del(c->s, key, klen, stamp, len);
		return;
	}
	pthread_mutex_lock(&sl->old_mu);
	if (sl->old_n == SLOW_BIG_OLD_MAX) { /* full: the oldest goes now */
		struct big_old *o = &sl->old[sl->old_head];
		xkv_big_del(sl->s, o->key, o->klen, o->stamp, o->len);
		sl->old_bytes -= o->len;
		sl->old_head = (sl->old_head + 1) % SLOW_BIG_OLD_MAX;
		sl->old_n--;
	}
	struct big_old *o = &sl->old[(sl->old_head + sl->old_n) % SLOW_BIG_OLD_MAX];
	o->due = xkv_now_ns() + SLOW_BIG_LINGER_NS;
	o->stamp = stamp;
	o->len = len;
	o->klen = klen;
	memcpy(o->key, key, klen);
	sl->old_n++;
	sl->old_bytes += len;
	big_old_drain(sl, false);
	pthread_mutex_unlock(&sl->old_mu);
}

/* Everything waiting goes now (a migration begins, the slow path ends). */
static void big_old_flush(struct xkv_slow *sl)
{
	if (!sl->old)
		return;
	pthread_mutex_lock(&sl->old_mu);
	big_old_drain(sl, true);
	pthread_mutex_unlock(&sl->old_mu);
}

/* The big map is full: remove the chunks nobody points at (not while a
 * migration runs: the new store's items are not looked at).  Returns the
 * chunks removed (by this call or a concurrent one), 0 if none could be. */
static __u64 big_collect_now(struct slow_cmd *c)
{
	struct xkv_slow *sl = c->sl;
	struct xkv_big_census cs;

	if (sl->mig_state != MIG_NONE)
		return 0;
	big_old_flush(sl); /* the lingering ones first */
	pthread_mutex_lock(&sl->big_mu);
	long r = xkv_big_collect(c->s, SLOW_BIG_GRACE_NS, &cs);
	if (r >= 0) {
		sl->big_last = cs;
		__atomic_add_fetch(&sl->big_removed, cs.removed, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&sl->big_mu);
	return r >= 0 ? cs.removed : 0;
}

long xkv_slow_big_collect(struct xkv_slow *sl, struct xkv_big_census *out)
{
	struct slow_cmd c = { .sl = sl, .s = sl->s };
	struct xkv_big_census cs = {};
	long r = 0;

	xkv_slow_hold(sl);
	if (xkv_big_on(sl->s) && sl->mig_state == MIG_NONE) {
		if (sl->old) {
			pthread_mutex_lock(&sl->old_mu);
			big_old_drain(sl, false);
			pthread_mutex_unlock(&sl->old_mu);
		}
		pthread_mutex_lock(&sl->big_mu);
		r = xkv_big_collect(c.s, SLOW_BIG_GRACE_NS, &cs);
		if (r >= 0) {
			sl->big_last = cs;
			__atomic_add_fetch(&sl->big_removed, cs.removed, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&sl->big_mu);
	}
	xkv_slow_release(sl);
	if (out)
		*out = cs;
	return r;
}

/* One set_if of w on key (under its stripe lock), with a value above
 * val_cap put in chunks first, under the stamp its entry gets.  The
 * chunks of a big item it replaced are removed after (readers of the old
 * version read the entry again); a write that did not store removes its own. */
static int write_once(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
		      struct xkv_entry *e)
{
	struct xkv_store *s = c->s;
	bool big = w->data && w->bytes > s->cfg.val_cap && w->mode != WR_TOUCH;
	int ret;

	w->stamp = 0;
	w->old_len = 0;
	if (big) {
		if (w->mode == WR_APPEND || w->mode == WR_PREPEND)
			return WR_NEED_BIG;
		if (w->bytes > xkv_val_max(s))
			return WR_TOO_LARGE;
		w->stamp = xkv_write_stamp();
		ret = xkv_big_put(s, key, klen, w->stamp, w->data, w->bytes);
		if (ret == -ENOMEM && big_collect_now(c))
			ret = xkv_big_put(s, key, klen, w->stamp, w->data, w->bytes);
		if (ret)
			return ret;
	}
	if (s->L->set_if)
		ret = RETRY_BUSY(s->L->set_if(s, key, klen, wr_decide, w, e));
	else
		ret = RETRY_BUSY(set_if_plain(s, key, klen, wr_decide, w, e, &c->sc->item));
	if (big && ret != 0)
		xkv_big_del(s, key, klen, w->stamp, w->bytes);
	if (ret == 0 && w->old_len && w->old_stamp != e->wtime_ns)
		big_retire(c, key, klen, w->old_stamp, w->old_len);
	return ret;
}

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

static int big_rmw(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
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
		w2.state = inval ? XKV_ENT_STALE : 0;
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

/* Run the write w on key.  0 with the stored entry in *out (free it; a big
 * value's bytes are not in it: entry_val), a wr_out verdict > 0, or <0
 * -errno. */
static int slow_write(struct slow_cmd *c, const void *key, __u32 klen, struct wr *w,
		      struct xkv_entry **out)
{
	struct xkv_store *s = c->s;
	struct xkv_item *it = &c->sc->item;
	struct xkv_entry *e = xkv_entry_make(s, 0, 0, NULL, 0);
	int ret;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	w->s = s;
	pthread_mutex_t *mu = stripe_of(c->sl, key, klen);
	pthread_mutex_lock(mu);
	/* flush_all's cut: an item written before it reads as gone */
	if (xkv_slow_flush_busy(c->sl) && store_get(c, key, klen, it) == 0 &&
	    RETRY_BUSY(s->L->get(s, key, klen, it)) == 1)
		RETRY_BUSY(s->L->del(s, key, klen));
	ret = write_once(c, key, klen, w, e);
	if (ret == WR_NEED_BIG)
		ret = big_rmw(c, key, klen, w, e);
	pthread_mutex_unlock(mu);
	c->d->v[XKV_STAT_store_new] += s->new_items;
	c->d->v[XKV_STAT_overwrites] += s->overwrites;
	s->new_items = s->overwrites = 0;
	if (ret == 0)
		*out = e;
	else
		free(e);
	return ret;
}

/* A write verdict as the classic commands answer it. */
static int answer_wr(struct slow_cmd *c, int ret)
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
static int get_one(struct slow_cmd *c, const __u8 *key, __u32 klen, struct wr *w, const __u8 **val,
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
	}
	if (ret == 0)
		STAT(c, get_misses);
	return ret;
}

/* get|gets <key>*, gat|gats <exptime> <key>*: every hit as VALUE (gets,
 * gats: with its cas unique), then END; gat and gats give each hit the new
 * exptime first (value, flags and cas kept).  Returns <0 to stop the
 * datagram. */
static int cmd_get(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	struct xkv_item *it = &c->sc->item;
	__u8 op = r->op;
	bool with_cas = op == XKV_OP_GETS || op == XKV_OP_GATS;
	bool touch = op == XKV_OP_GAT || op == XKV_OP_GATS;
	struct wr w = { .mode = WR_TOUCH, .new_ttl = true };

	if (touch)
		w.expire_ttl = xkv_expire_ns(r->exptime, xkv_now_ns(), c->s->cfg.realtime_off_ns);
	if (r->too_many) /* more keys than tok[] holds: we do not re-tokenize */
		return stop(reply_err(c, XKV_E_FORMAT));
	for (__u32 t = 32; t < r->ntok; t++) {
		int e = key_verdict(c, t);
		if (e)
			return stop(reply_err(c, e));
	}
	for (__u32 t = r->key1; t < r->ntok; t++) {
		const __u8 *key = tok_ptr(c, t);
		__u32 klen = r->tok[t].len;
		const __u8 *val;
		int ret = get_one(c, key, klen, touch ? &w : NULL, &val, VAL_REPLY);

		if (ret == 2)
			return -1; /* its value would put the reply over the budget (c->over) */
		if (ret < 0)
			return stop(reply_store_errno(c, ret));
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
	return PUT_LIT(c->out, XKV_R_END);
}

/* Errors are answered even with noreply, as the fast path does (memcached
 * drops most of them, which leaves a noreply client guessing). */

/* set / add / replace / append / prepend / cas: one slow_write. */
static int cmd_store(struct slow_cmd *c)
{
	static const __u8 modes[] = {
		[XKV_OP_SET] = WR_SET, [XKV_OP_ADD] = WR_ADD, [XKV_OP_REPLACE] = WR_REPLACE,
		[XKV_OP_APPEND] = WR_APPEND, [XKV_OP_PREPEND] = WR_PREPEND, [XKV_OP_CAS] = WR_SET,
	};
	struct xkv_req *r = c->r;
	struct xkv_entry *e;

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
static int cmd_touch(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	struct xkv_entry *e;
	struct wr w = { .mode = WR_TOUCH, .new_ttl = true,
			.expire_ttl = xkv_expire_ns(r->exptime, xkv_now_ns(), c->s->cfg.realtime_off_ns) };

	int ret = slow_write(c, tok_ptr(c, 1), r->tok[1].len, &w, &e);
	free(e);
	if (ret == WR_STORED)
		return answer(c, XKV_R_TOUCHED);
	return answer_wr(c, ret);
}

/* Delete key under its stripe lock, if the item's cas is cas (has_cas).
 * 1 deleted, 0 absent, WR_EXISTS (cas differs), <0 -errno.  The accessor
 * answers 0 for an expired item and frees its slot all the same. */
static int slow_delete(struct slow_cmd *c, const void *key, __u32 klen, bool has_cas, __u64 cas)
{
	struct xkv_item *it = &c->sc->item;
	pthread_mutex_t *mu = stripe_of(c->sl, key, klen);
	bool gone = false;
	int ret = 0;

	pthread_mutex_lock(mu);
	bool must = has_cas || xkv_slow_flush_busy(c->sl);
	bool looked = must || xkv_big_on(c->s); /* a big item's chunks go with it */
	int r = 0;
	if (looked) {
		__u64 walks = __atomic_load_n(&c->sl->flush_walks, __ATOMIC_ACQUIRE);
		r = RETRY_BUSY(c->s->L->get(c->s, key, klen, it));
		/* flushed but not walked yet: already gone */
		gone = r == 1 && flushed(c->sl, it->wtime_ns, walks);
		if (r < 0 && must)
			ret = r;
		else if (has_cas && r == 1 && !gone && it->wtime_ns != cas)
			ret = WR_EXISTS;
	}
	if (!ret)
		ret = store_del(c, key, klen);
	if (ret == 1 && looked && r == 1 && it->len > c->s->cfg.val_cap)
		big_retire(c, key, klen, it->wtime_ns, it->len);
	pthread_mutex_unlock(mu);
	return gone && ret >= 0 && ret != WR_EXISTS ? 0 : ret;
}

static int cmd_delete(struct slow_cmd *c)
{
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
static int cmd_arith(struct slow_cmd *c)
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

/* ---- the meta commands: mg, ms, md, ma, me, mn ----------------------------- */

#define R_INVALID_FLAG "CLIENT_ERROR invalid flag\r\n"
#define R_BAD_TOKEN "CLIENT_ERROR bad token in command line format\r\n"
#define META_MAX_TOKENS 19       /* memcached: 20 with its end marker */
#define META_OPAQUE_MAX 32

/* The flags of one meta command, read once (memcached's preparse). */
struct mflags {
	bool seen[128];
	bool q, v, has_C, has_T, has_N, has_D, has_J, has_F, has_R;
	char M;
	__u64 C, D, J;
	__s64 T, N, R;
	__u32 F;
};

/* A token flag's argument: the token after its letter. */
static struct xkv_tok tok_arg(const struct xkv_tok *t)
{
	struct xkv_tok a = { .off = t->off + 1, .len = t->len - 1 };
	return a;
}

/* Read the flags from token first on; allowed: the letters this command
 * takes.  NULL, or the error line (memcached's). */
static const char *meta_flags(struct slow_cmd *c, __u32 first, const char *allowed, struct mflags *f)
{
	const struct xkv_req *r = c->r;
	__u64 v;

	memset(f, 0, sizeof(*f));
	if (r->ntok > META_MAX_TOKENS)
		return "CLIENT_ERROR options flags too long\r\n";
	for (__u32 t = first; t < r->ntok; t++) {
		const struct xkv_tok *tk = &r->tok[t];
		struct xkv_tok a = tok_arg(tk);
		__u8 ch = *tok_ptr(c, t);
		bool arg = strchr("OCDJTNFMR", ch) != NULL;

		if (!ch || ch >= 128 || !strchr(allowed, ch) || (!arg && tk->len != 1))
			return R_INVALID_FLAG;
		if (f->seen[ch])
			return "CLIENT_ERROR duplicate flag\r\n";
		f->seen[ch] = true;
		switch (ch) {
		case 'q': f->q = true; break;
		case 'v': f->v = true; break;
		case 'O':
			if (tk->len > META_OPAQUE_MAX)
				return "CLIENT_ERROR opaque token too long\r\n";
			break;
		case 'C':
			if (xkv_tok_u64(c->buf, &a, ~0ULL, &f->C))
				return R_BAD_TOKEN;
			f->has_C = true;
			break;
		case 'D':
			if (xkv_tok_u64(c->buf, &a, ~0ULL, &f->D))
				return "CLIENT_ERROR invalid numeric delta value\r\n";
			f->has_D = true;
			break;
		case 'J':
			if (xkv_tok_u64(c->buf, &a, ~0ULL, &f->J))
				return "CLIENT_ERROR invalid numeric initial value\r\n";
			f->has_J = true;
			break;
		case 'T':
		case 'N':
		case 'R': {
			__s64 *n = ch == 'T' ? &f->T : ch == 'N' ? &f->N : &f->R;
			if (xkv_tok_s64(c->buf, &a, n) || *n < INT32_MIN || *n > INT32_MAX)
				return R_BAD_TOKEN;
			*(ch == 'T' ? &f->has_T : ch == 'N' ? &f->has_N : &f->has_R) = true;
			break;
		}
		case 'F':
			if (xkv_tok_u64(c->buf, &a, 0xffffffffULL, &v))
				return XKV_R_FORMAT;
			f->F = (__u32)v;
			f->has_F = true;
			break;
		case 'M':
			if (tk->len != 2)
				return "CLIENT_ERROR incorrect length for M token\r\n";
			f->M = (char)c->buf[(tk->off + 1) & XKV_PMASK];
			break;
		}
	}
	return NULL;
}

/* ---- base64 (RFC 4648, standard alphabet, padded), for the b flag ---- */

static const char b64_abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_val(__u8 ch)
{
	const char *p = ch ? strchr(b64_abc, ch) : NULL;
	return p ? (int)(p - b64_abc) : -1;
}

/* Decode src[0..n) into dst (room for cap bytes): the decoded length, or
 * -1 (not a multiple of 4 characters, a character outside the alphabet,
 * '=' other than as the last one or two, or more than cap bytes). */
static int b64_decode(const __u8 *src, __u32 n, __u8 *dst, __u32 cap)
{
	__u32 out = 0;

	if (n == 0 || n % 4)
		return -1;
	for (__u32 i = 0; i < n; i += 4) {
		bool last = i + 4 == n;
		int pad = last ? (src[i + 3] == '=') + (src[i + 3] == '=' && src[i + 2] == '=') : 0;
		__u32 v = 0;
		for (int j = 0; j < 4; j++) {
			int d = j >= 4 - pad ? 0 : b64_val(src[i + j]);
			if (d < 0)
				return -1;
			v = v << 6 | (__u32)d;
		}
		if (out + 3 - pad > cap)
			return -1;
		for (int j = 0; j < 3 - pad; j++)
			dst[out++] = (__u8)(v >> (16 - 8 * j));
	}
	return (int)out;
}

/* Append the base64 text of src[0..n). */
static int b64_put(struct xkv_buf *b, const __u8 *src, __u32 n)
{
	for (__u32 i = 0; i < n; i += 3) {
		__u32 left = n - i, v = (__u32)src[i] << 16;
		if (left > 1)
			v |= (__u32)src[i + 1] << 8;
		if (left > 2)
			v |= src[i + 2];
		char q[4];
		for (int j = 0; j < 4; j++)
			q[j] = (__u32)j <= left ? b64_abc[(v >> (18 - 6 * j)) & 63] : '=';
		if (xkv_buf_put(b, q, 4))
			return -1;
	}
	return 0;
}

/* The key of a meta command (token 1) into c->key: as it is, or, with the
 * flag b among its tokens, base64-decoded (memcached: the encoded token
 * within the key length limit; the decoded key must then pass the key rule
 * like any other).  0, or it answered the error. */
static int meta_key(struct slow_cmd *c, int *err)
{
	const struct xkv_req *r = c->r;
	int e;

	*err = 0;
	if (r->ntok < 2) {
		*err = reply_err(c, XKV_E_FORMAT);
		return -1;
	}
	c->key = tok_ptr(c, 1);
	c->klen = r->tok[1].len;
	c->key_b = false;
	for (__u32 t = 2; t < r->ntok && t < META_MAX_TOKENS; t++)
		c->key_b |= r->tok[t].len == 1 && *tok_ptr(c, t) == 'b';
	if (!c->key_b) {
		e = key_verdict(c, 1);
	} else if (c->klen > XKV_KEY_MAX || c->klen > c->s->cfg.key_cap) {
		e = XKV_E_KEY_LONG;
	} else {
		int n = b64_decode(c->key, c->klen, c->key_buf, sizeof(c->key_buf));
		if (n <= 0) { /* md and ma answer every flag error so, as memcached */
			bool md_ma = r->op == XKV_OP_MD || r->op == XKV_OP_MA;
			*err = reply_err_line(c, md_ma ? "CLIENT_ERROR invalid or duplicate flag\r\n"
						       : "CLIENT_ERROR error decoding key\r\n");
			return -1;
		}
		c->key = c->key_buf;
		c->klen = (__u32)n;
		e = xkv_key_check(&c->s->cfg, c->key, c->klen);
	}
	if (e) {
		*err = reply_err(c, e);
		return -1;
	}
	return 0;
}

/* The key as a reply shows it: base64 again when the request sent it so
 * (memcached adds the flag b after it). */
static int meta_key_put(struct slow_cmd *c)
{
	if (!c->key_b)
		return xkv_buf_put(c->out, c->key, c->klen);
	return b64_put(c->out, c->key, c->klen);
}

static __s64 secs_left(__u64 expire_ns)
{
	__u64 now = xkv_now_ns();
	if (!expire_ns)
		return -1;
	return expire_ns <= now ? 0 : (__s64)((expire_ns - now + 999999999ull) / 1000000000ull);
}

/* The token of the first flag ch (0: none). */
static __u32 flag_pos(const struct slow_cmd *c, __u8 ch)
{
	for (__u32 t = 2; t < c->r->ntok && t < META_MAX_TOKENS; t++)
		if (*tok_ptr(c, t) == ch)
			return t;
	return 0;
}

/* The expiry a t flag at token t shows: e's, or with tw on (mg with T or
 * N) the one the item had when memcached met the token: T and (on a new
 * item) N take effect where they stand. */
static __u64 ttl_at(const struct slow_cmd *c, __u32 t, const struct xkv_entry *e)
{
	if (!c->tw.on)
		return e->expire_ns;
	__u64 cur = c->tw.start;
	bool touched = false;
	for (__u32 i = 2; i < t; i++) {
		__u8 ch = *tok_ptr(c, i);
		if (ch == 'T')
			cur = c->tw.T, touched = true;
		else if (ch == 'N' && c->tw.created)
			cur = c->tw.N, touched = true;
	}
	/* no T or N before it, and no old item read: the item's own */
	return touched || c->tw.created || flag_pos(c, 'T') ? cur : e->expire_ns;
}

/* The return flags a meta reply carries, in request order: of what the
 * command asked (which), those it has (e: the item, NULL: none, then only
 * O, k and c, which is then 0: ms's refusals, as memcached 1.6.18). */
static int meta_ret(struct slow_cmd *c, const char *which, const struct xkv_entry *e)
{
	const struct xkv_req *r = c->r;
	int err = 0;

	for (__u32 t = 2; t < r->ntok && !err; t++) {
		const __u8 *p = tok_ptr(c, t);
		if (!strchr(which, *p) || (!e && *p != 'O' && *p != 'k' && *p != 'c'))
			continue;
		switch (*p) {
		case 'f': err = buf_printf(c->out, " f%u", e->flags); break;
		case 't': err = buf_printf(c->out, " t%lld", (long long)secs_left(ttl_at(c, t, e))); break;
		case 'c': err = buf_printf(c->out, " c%llu", e ? (unsigned long long)e->wtime_ns : 0ull); break;
		case 's': err = buf_printf(c->out, " s%u", e->len); break;
		case 'k':
			err = PUT_LIT(c->out, " k") || meta_key_put(c) || (c->key_b && PUT_LIT(c->out, " b"));
			break;
		case 'O': err = PUT_LIT(c->out, " ") || xkv_buf_put(c->out, p, r->tok[t].len); break;
		}
	}
	return err ? -1 : 0;
}

/* "<code><return flags>\r\n" */
static int meta_line(struct slow_cmd *c, const char *code, const char *which, const struct xkv_entry *e)
{
	if (xkv_buf_put(c->out, code, strlen(code)) || meta_ret(c, which, e) || PUT_LIT(c->out, "\r\n"))
		return -1;
	return 0;
}

/* A meta command's exptime token (T, N) as an expiry. */
static __u64 meta_expire(struct slow_cmd *c, __s64 secs)
{
	return xkv_expire_ns(secs, xkv_now_ns(), c->s->cfg.realtime_off_ns);
}

/* mg <key> <flag>*: v (value), f, t, c, k, s, O, q (a miss says nothing),
 * u (no LRU bump: accepted, there is none), T<ttl> (touch: new expiry, cas
 * kept), N<ttl> (a miss creates an empty item with that ttl and answers
 * for it with W: this client won the right to fill it), R<secs> (a hit
 * with less ttl left wins the token too).  A hit answers "VA <bytes>" with
 * v, else "HD", then the asked-for flags, then Z (the token went out
 * before), X (the item is stale: md I, ms I) and W (this client won; the
 * first to read a stale item wins too) as memcached orders them; a miss
 * "EN". */
static int cmd_mg(struct slow_cmd *c)
{
	struct mflags f;
	struct xkv_entry *e = NULL;
	int err;

	if (meta_key(c, &err))
		return err;
	const char *bad = meta_flags(c, 2, "vftcksqOuTNbR", &f);
	if (bad)
		return reply_err_line(c, bad);
	const __u8 *key = c->key;
	__u32 klen = c->klen;
	bool won = false;
	int ret;

	if (f.has_T || f.has_N) {
		/* N: a miss stores an empty item; T: a hit gets the new ttl.
		 * memcached applies them as it meets their tokens: of both on a
		 * new item the later one wins, and a t before them shows the
		 * ttl the item had then (ttl_walk) */
		__u32 pos_T = flag_pos(c, 'T'), pos_N = flag_pos(c, 'N');
		c->tw.on = true;
		c->tw.T = f.has_T ? meta_expire(c, f.T) : 0;
		c->tw.N = f.has_N ? meta_expire(c, f.N) : 0;
		if (f.has_T && flag_pos(c, 't')) {
			struct xkv_item *old = &c->sc->item;
			if (store_get(c, key, klen, old) == 1)
				c->tw.start = old->expire_ns;
		}
		struct wr w = { .mode = f.has_N ? WR_ADD : WR_TOUCH,
				.new_ttl = f.has_T && (!f.has_N || pos_T > pos_N),
				.expire_ttl = f.has_T ? meta_expire(c, f.T) : 0,
				.expire_ns = f.has_N ? meta_expire(c, f.N) : 0,
				.state = f.has_N ? XKV_ENT_WON : 0 };
		ret = slow_write(c, key, klen, &w, &e);
		won = f.has_N && ret == WR_STORED;
		c->tw.created = won;
		if (won)
			c->tw.start = 0;
		if (ret == WR_NOT_STORED && f.has_T) { /* N found it: touch it */
			w.mode = WR_TOUCH;
			w.new_ttl = true;
			ret = slow_write(c, key, klen, &w, &e);
		}
		if (ret == WR_NOT_STORED || ret == WR_NOT_FOUND)
			ret = f.has_N ? 1 : 0;
		else if (ret == WR_STORED)
			ret = 1;
	} else {
		ret = 1;
	}
	const __u8 *val = NULL;
	if (ret == 1 && !e) { /* a plain read */
		struct xkv_item *it = &c->sc->item;
		ret = store_get_val(c, key, klen, it, &val, f.v ? VAL_REPLY : VAL_NONE);
		if (ret == 2)
			return -1; /* its value would put the reply over the budget (c->over) */
		if (ret == 1) {
			bool big = it->len > c->s->cfg.val_cap;
			e = xkv_entry_make(c->s, it->flags, 0, it->data, big ? 0 : it->len);
			if (!e)
				return reply_err(c, XKV_E_OOM);
			e->len = it->len;
			e->expire_ns = it->expire_ns;
			e->wtime_ns = it->wtime_ns;
			e->klen = it->state;
			if (!big)
				val = e->data;
		}
	} else if (ret == 1 && f.v) { /* written here: its value (0: replaced since, a miss) */
		ret = entry_val(c, key, klen, e, &val);
		if (ret != 1) {
			free(e);
			e = NULL;
		}
	}
	if (ret < 0)
		return reply_store_errno(c, ret);
	if (ret == 0) {
		STAT(c, get_misses);
		return f.q ? 0 : meta_line(c, "EN", "Ok", NULL);
	}
	STAT(c, get_hits);
	__u32 st = e->klen & XKV_ENT_STATE;
	if (!won && !(st & XKV_ENT_WON) && c->may_write &&
	    ((st & XKV_ENT_STALE) || (f.has_R && e->expire_ns && secs_left(e->expire_ns) < f.R))) {
		/* the first to see it stale (or near its end) gets the token */
		struct wr w = { .mode = WR_MARK_WON, .has_cas = true, .cas = e->wtime_ns };
		struct xkv_entry *e2;
		int r = slow_write(c, key, klen, &w, &e2);
		if (r == WR_STORED)
			won = true, free(e2);
		else if (r == WR_NOT_FOUND && f.has_T && e->expire_ns && e->expire_ns <= xkv_now_ns())
			won = true; /* this mg's own T ended it: nobody else can win it */
		else if (r == WR_NOT_STORED)
			st |= XKV_ENT_WON; /* another client won it meanwhile */
		/* else the item changed meanwhile: answered as read, no token */
	}
	size_t start = c->out->len;
	err = f.v ? buf_printf(c->out, "VA %u", e->len) : PUT_LIT(c->out, "HD");
	if (!err)
		err = meta_ret(c, "ftcksO", e);
	if (!err && !won && (st & XKV_ENT_WON))
		err = PUT_LIT(c->out, " Z");
	if (!err && (st & XKV_ENT_STALE))
		err = PUT_LIT(c->out, " X");
	if (!err && won)
		err = PUT_LIT(c->out, " W");
	if (!err)
		err = PUT_LIT(c->out, "\r\n");
	if (!err && f.v) {
		if (over_budget(c, e->len + 2)) {
			c->out->len = start;
			err = -1;
		} else if (xkv_buf_put(c->out, val, e->len) || PUT_LIT(c->out, "\r\n")) {
			err = -1;
		}
	}
	free(e);
	return err;
}

/* ms <key> <datalen> <flag>*\r\n<data>\r\n: F (client flags), T (ttl), C
 * (compare cas), M (mode: S set, E add, A append, P prepend, R replace), N
 * (append/prepend: create on a miss, with that ttl), I (with C: a cas
 * older than the item's stores the value anyway, stale, keeping the item's
 * ttl and token), q (no HD), and the return flags O, k, c (the new cas).
 * HD stored, NS not stored, EX cas differs, NF cas given and no item. */
static int cmd_ms(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	struct mflags f;
	struct xkv_entry *e;
	int err;

	if (meta_key(c, &err))
		return err;
	const char *bad = meta_flags(c, 3, "FTCMNqOkcIb", &f);
	if (bad)
		return reply_err_line(c, bad);
	struct wr w = { .mode = WR_SET, .has_cas = f.has_C, .cas = f.C, .data = c->data,
			.bytes = r->bytes, .flags = f.F, .expire_ns = f.has_T ? meta_expire(c, f.T) : 0,
			.vivify = f.has_N, .stale_ok = f.seen['I'] };
	switch (f.M) {
	case 0: case 'S': break; /* upper case only, as memcached 1.6.18 */
	case 'E': w.mode = WR_ADD; break;
	case 'A': w.mode = WR_APPEND; break;
	case 'P': w.mode = WR_PREPEND; break;
	case 'R': w.mode = WR_REPLACE; break;
	default: return reply_err_line(c, "CLIENT_ERROR invalid mode for ms M token\r\n");
	}
	/* N: append and prepend create a missing item, with that ttl; the other
	 * modes ignore it (memcached) */
	w.vivify = f.has_N && (w.mode == WR_APPEND || w.mode == WR_PREPEND);
	if (w.vivify)
		w.expire_ns = meta_expire(c, f.N);
	if (w.mode == WR_ADD)
		w.has_cas = false; /* memcached: add with a cas is an add */
	/* C0 is no cas to append and prepend; set and replace compare it
	 * (and fail): memcached's do_store_item */
	if (w.has_cas && !w.cas && (w.mode == WR_APPEND || w.mode == WR_PREPEND))
		w.has_cas = false;
	if (w.has_cas && !w.cas)
		w.stale_ok = false;
	/* I: a stale store in set and replace modes only (memcached 1.6.18:
	 * append and prepend answer EX) */
	w.stale_ok = w.stale_ok && (w.mode == WR_SET || w.mode == WR_REPLACE);
	int ret = slow_write(c, c->key, c->klen, &w, &e);
	switch (ret) {
	case WR_STORED:
		STAT(c, stores);
		err = f.q ? 0 : meta_line(c, "HD", "Okc", e);
		free(e);
		return err;
	case WR_NOT_STORED:
		return meta_line(c, "NS", "Okc", NULL);
	case WR_EXISTS:
		return meta_line(c, "EX", "Okc", NULL);
	case WR_NOT_FOUND:
		return meta_line(c, "NF", "Okc", NULL);
	}
	return answer_wr(c, ret);
}

/* md <key> <flag>*: C (only if the cas is this), q (no HD), O, k,
 * I (invalidate: the item stays, stale, with a new cas; the next mg wins
 * the token), T (with I: a new ttl).  HD deleted (or invalidated), NF no
 * item, EX cas differs. */
static int cmd_md(struct slow_cmd *c)
{
	struct mflags f;
	int err;

	if (meta_key(c, &err))
		return err;
	if (meta_flags(c, 2, "CqOkbIT", &f))
		return reply_err_line(c, "CLIENT_ERROR invalid or duplicate flag\r\n");
	int ret;
	if (f.seen['I']) {
		struct wr w = { .mode = WR_INVALIDATE, .has_cas = f.has_C, .cas = f.C, .new_ttl = f.has_T,
				.expire_ttl = f.has_T ? meta_expire(c, f.T) : 0 };
		struct xkv_entry *e;
		ret = slow_write(c, c->key, c->klen, &w, &e);
		if (ret == WR_STORED)
			free(e), ret = 1;
		else if (ret == WR_NOT_FOUND)
			ret = 0;
	} else { /* T alone: ignored, as memcached */
		ret = slow_delete(c, c->key, c->klen, f.has_C, f.C);
	}
	if (ret < 0)
		return reply_store_errno(c, ret);
	if (ret == WR_EXISTS)
		return meta_line(c, "EX", "Ok", NULL);
	if (ret > 0 && !f.seen['I'])
		STAT(c, deletes);
	else if (ret == 0)
		STAT(c, delete_misses);
	if (f.q && ret > 0) /* memcached 1.6.18 hides HD only: NF still shows */
		return 0;
	return meta_line(c, ret > 0 ? "HD" : "NF", "Ok", NULL);
}

/* ma's return flags: as meta_ret, but memcached 1.6.18 applies N to a
 * vivified item as it meets the token, so a t before the N shows no ttl. */
static int ma_ret(struct slow_cmd *c, const struct xkv_entry *e, bool created)
{
	const struct xkv_req *r = c->r;
	bool ttl_set = !created;

	for (__u32 t = 2; t < r->ntok; t++) {
		const __u8 *p = tok_ptr(c, t);
		int err = 0;
		if (*p == 'N')
			ttl_set = true;
		else if (*p == 't')
			err = buf_printf(c->out, " t%lld", ttl_set ? (long long)secs_left(e->expire_ns) : -1ll);
		else if (*p == 'c')
			err = buf_printf(c->out, " c%llu", (unsigned long long)e->wtime_ns);
		else if (*p == 'k')
			err = PUT_LIT(c->out, " k") || meta_key_put(c) || (c->key_b && PUT_LIT(c->out, " b"));
		else if (*p == 'O')
			err = PUT_LIT(c->out, " ") || xkv_buf_put(c->out, p, r->tok[t].len);
		if (err)
			return -1;
	}
	return 0;
}

/* ma <key> <flag>*: D (delta, default 1), M (I or + incr, D or - decr), N
 * (a miss creates the item with the value J, default 0, and that ttl), T
 * (new ttl), C (only if the cas is this), q (no HD), v (the value: VA),
 * return flags t, c, O, k.  HD / VA done, NF no item, EX cas differs. */
static int cmd_ma(struct slow_cmd *c)
{
	struct mflags f;
	struct xkv_entry *e;
	int err;

	if (meta_key(c, &err))
		return err;
	if (meta_flags(c, 2, "DMNJTCqvtcOkb", &f))
		return reply_err_line(c, "CLIENT_ERROR invalid or duplicate flag\r\n");
	/* C0 compares nothing (memcached's do_add_delta) */
	struct wr w = { .mode = WR_INCR, .delta = f.has_D ? f.D : 1, .initial = f.J, .vivify = f.has_N,
			.has_cas = f.has_C && f.C, .cas = f.C, .new_ttl = f.has_T };
	switch (f.M) {
	case 0: case 'I': case '+': break; /* upper case only, as memcached 1.6.18 */
	case 'D': case '-': w.mode = WR_DECR; break;
	default: return reply_err_line(c, "CLIENT_ERROR invalid mode for ma M token\r\n");
	}
	if (f.has_N)
		w.expire_ns = meta_expire(c, f.N);
	if (f.has_T)
		w.expire_ttl = meta_expire(c, f.T);
	int ret = slow_write(c, c->key, c->klen, &w, &e);
	switch (ret) {
	case WR_STORED:
		err = 0;
		if (!f.q || w.created) {
			err = f.v ? buf_printf(c->out, "VA %u", w.num_len) : PUT_LIT(c->out, "HD");
			err = err || ma_ret(c, e, w.created) || PUT_LIT(c->out, "\r\n");
			if (!err && f.v)
				err = xkv_buf_put(c->out, w.num, w.num_len) || PUT_LIT(c->out, "\r\n");
		}
		free(e);
		return err ? -1 : 0;
	case WR_NOT_FOUND:
		return meta_line(c, "NF", "Ok", NULL);
	case WR_EXISTS:
		return meta_line(c, "EX", "Ok", NULL);
	}
	return answer_wr(c, ret);
}

/* me <key>: memcached's debug line, with what this store knows of an item:
 * "ME <key> exp=<seconds left, -1: none> la=0 cas=<cas> fetch=no cls=0
 * size=<value bytes>" (there is no last access, fetch bit or slab class
 * here: la, fetch and cls are fixed); a miss EN. */
static int cmd_me(struct slow_cmd *c)
{
	struct xkv_item *it = &c->sc->item;
	int err;

	if (meta_key(c, &err))
		return err;
	if (c->r->ntok > 2u + c->key_b) /* memcached reads b only */
		return reply_err_line(c, R_INVALID_FLAG);
	int ret = store_get(c, c->key, c->klen, it);
	if (ret < 0)
		return reply_store_errno(c, ret);
	if (ret == 0)
		return PUT_LIT(c->out, "EN\r\n");
	return PUT_LIT(c->out, "ME ") || meta_key_put(c) ||
	       buf_printf(c->out, " exp=%lld la=0 cas=%llu fetch=no cls=0 size=%u\r\n",
			  (long long)secs_left(it->expire_ns), (unsigned long long)it->wtime_ns, it->len)
		       ? -1 : 0;
}

/* flush_all [delay] [noreply]: OK at once, as memcached answers; the walk
 * runs on the flusher thread when the delay is up (a delay as exptime
 * reads it: seconds, or a unix time past 30 days).  Without a thread, the
 * walk runs here. */
static int flush_run(struct slow_cmd *c, __s64 delay)
{
	__u64 now = xkv_now_ns();
	__u64 at = delay ? xkv_expire_ns(delay, now, c->s->cfg.realtime_off_ns) : now;
	bool at_once = at <= now;

	/* at once: every item stamped so far goes, however far ahead of the
	 * clock its stamp runs (flush_cut_of) */
	if (flush_schedule(c->sl, at_once ? now : at, at_once ? xkv_write_stamp() : 0)) {
		int ret = flush_walk(c->s);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int cmd_flush(struct slow_cmd *c)
{
	int ret = flush_run(c, (__s64)c->r->num);
	return ret < 0 ? reply_store_errno(c, ret) : answer(c, R_OK_LINE);
}

static __u64 now_realtime_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec;
}

#define STAT_U(c, name, v) buf_printf((c)->out, "STAT %s %llu\r\n", (name), (unsigned long long)(v))

/* stats: memcached-style lines.  Counters are both slots summed, plus what
 * this process counted but has not pushed to the map yet (*delta).
 * fast_path_requests = datagrams the XDP program answered itself (seen minus
 * passed on); slow_path_requests = datagrams the slow path served;
 * fast_path_share = fast / (fast + slow) in percent. */
static int stats_lines(struct slow_cmd *c);
static int cmd_stats(struct slow_cmd *c)
{
	if (c->r->ntok > 1) { /* stats <group>: none of memcached's groups */
		STAT(c, err_unknown);
		return PUT_LIT(c->out, XKV_R_ERROR);
	}
	if (stats_lines(c))
		return -1;
	return PUT_LIT(c->out, XKV_R_END);
}

/* The lines of stats ("STAT <name> <value>\r\n" each, no END) into c->out:
 * shared with binproto.c.  0, or -1 without memory. */
static int stats_lines(struct slow_cmd *c)
{
	struct xkv_store *s = c->s;
	struct xkv_stats fast = {}, slow = {};
	int err = 0;

	if (s->stats_fd >= 0) {
		if (xkv_stats_read(s, XKV_STATS_FAST, &fast, NULL))
			memset(&fast, 0, sizeof(fast));
		if (xkv_stats_read(s, XKV_STATS_SLOW, &slow, NULL))
			memset(&slow, 0, sizeof(slow));
	}
	for (int i = 0; i < XKV_STAT__MAX; i++)
		slow.v[i] += c->d->v[i];

	__u64 now = xkv_now_ns();
	err |= STAT_U(c, "pid", getpid());
	err |= STAT_U(c, "uptime", (now - slow_start_ns) / 1000000000ull);
	err |= STAT_U(c, "time", now_realtime_s());
	err |= buf_printf(c->out, "STAT version %s\r\n", XKV_VERSION);
	err |= buf_printf(c->out, "STAT layout %s\r\n", s->cfg.layout);
	/* counted off the request path (xkv_slow_count_refresh): its age says how old */
	__u64 counted = __atomic_load_n(&c->sl->items_ns, __ATOMIC_ACQUIRE);
	if (counted) {
		err |= STAT_U(c, "curr_items", __atomic_load_n(&c->sl->items, __ATOMIC_RELAXED));
		err |= STAT_U(c, "curr_items_age_s", now > counted ? (now - counted) / 1000000000ull : 0);
	}
	err |= STAT_U(c, "limit_items", s->cfg.entries);
	err |= STAT_U(c, "limit_maxbytes", (__u64)s->cfg.entries * s->cfg.entry_size);
	err |= STAT_U(c, "item_size_max", xkv_val_max(s));
	if (xkv_big_on(s)) { /* values above val_cap (docs/protocol.md, "Large values") */
		pthread_mutex_lock(&c->sl->big_mu);
		struct xkv_big_census cs = c->sl->big_last;
		pthread_mutex_unlock(&c->sl->big_mu);
		err |= STAT_U(c, "inline_value_max", s->cfg.val_cap);
		err |= STAT_U(c, "big_chunks", cs.chunks);
		/* the map's own size (a re-attach keeps the pinned one), once counted */
		err |= STAT_U(c, "big_chunks_max", cs.capacity ? cs.capacity : (__u64)s->cfg.big_chunks);
		err |= STAT_U(c, "big_items", cs.items);
		err |= STAT_U(c, "big_bytes", cs.bytes);
		err |= STAT_U(c, "big_chunks_removed", __atomic_load_n(&c->sl->big_removed, __ATOMIC_RELAXED));
	}
	err |= STAT_U(c, "key_size_max", s->cfg.key_cap);
	long long mem = xkv_map_memory(s->store_fd);
	if (mem >= 0)
		err |= STAT_U(c, "map_bytes", mem);
	for (int i = 0; i < XKV_STAT__MAX; i++)
		err |= STAT_U(c, xkv_stat_names[i], fast.v[i] + slow.v[i]);

	__u64 fast_n = xkv_fast_served(&fast), slow_n = slow.v[XKV_STAT_requests];
	__u64 permille = fast_n + slow_n ? (fast_n * 1000 + (fast_n + slow_n) / 2) / (fast_n + slow_n) : 0;
	err |= STAT_U(c, "fast_path_requests", fast_n);
	err |= STAT_U(c, "slow_path_requests", slow_n);
	err |= buf_printf(c->out, "STAT fast_path_share %llu.%llu\r\n",
			  (unsigned long long)(permille / 10), (unsigned long long)(permille % 10));
	if (__atomic_load_n(&c->sl->tcp_max, __ATOMIC_RELAXED)) { /* this process's TCP server */
		err |= STAT_U(c, "curr_connections", __atomic_load_n(&c->sl->conns_curr, __ATOMIC_RELAXED));
		err |= STAT_U(c, "total_connections", __atomic_load_n(&c->sl->conns_total, __ATOMIC_RELAXED));
		err |= STAT_U(c, "rejected_connections",
			      __atomic_load_n(&c->sl->conns_rejected, __ATOMIC_RELAXED));
		err |= STAT_U(c, "max_connections", c->sl->tcp_max);
	}
	return err ? -1 : 0;
}

static void count_cmd(struct slow_cmd *c)
{
	switch (c->r->op) {
	case XKV_OP_GET: STAT(c, cmd_get); break;
	case XKV_OP_SET: STAT(c, cmd_set); break;
	case XKV_OP_DELETE: STAT(c, cmd_delete); break;
	case XKV_OP_NONE: break;
	default: STAT(c, cmd_other); break;
	}
}

/* Does the command change the store?  xkv_op_writes, and an mg that
 * touches (T) or creates (N). */
static bool cmd_writes(const struct slow_cmd *c)
{
	const struct xkv_req *r = c->r;
	if (xkv_op_writes(r->op))
		return true;
	if (r->op != XKV_OP_MG)
		return false;
	for (__u32 t = 2; t < r->ntok; t++) {
		__u8 ch = *tok_ptr(c, t);
		if (ch == 'T' || ch == 'N')
			return true;
	}
	return false;
}

/* One parsed command.  Returns <0 to stop processing the datagram. */
static int slow_dispatch(struct slow_cmd *c)
{
	switch (c->r->op) {
	case XKV_OP_GET:
	case XKV_OP_GETS:
	case XKV_OP_GAT:
	case XKV_OP_GATS: return cmd_get(c);
	case XKV_OP_SET:
	case XKV_OP_ADD:
	case XKV_OP_REPLACE:
	case XKV_OP_APPEND:
	case XKV_OP_PREPEND:
	case XKV_OP_CAS: return cmd_store(c);
	case XKV_OP_TOUCH: return cmd_touch(c);
	case XKV_OP_VERBOSITY: return answer(c, R_OK_LINE); /* memcached's log level: none here */
	case XKV_OP_MG: return cmd_mg(c);
	case XKV_OP_MN: return PUT_LIT(c->out, "MN\r\n");
	case XKV_OP_MS: return cmd_ms(c);
	case XKV_OP_MD: return cmd_md(c);
	case XKV_OP_MA: return cmd_ma(c);
	case XKV_OP_ME: return cmd_me(c);
	case XKV_OP_DELETE: return cmd_delete(c);
	case XKV_OP_INCR:
	case XKV_OP_DECR: return cmd_arith(c);
	case XKV_OP_VERSION: return PUT_LIT(c->out, XKV_VERSION_LINE);
	case XKV_OP_STATS: return cmd_stats(c);
	case XKV_OP_FLUSH_ALL: return cmd_flush(c);
	}
	return stop(reply_err(c, XKV_E_UNKNOWN));
}

/* ---- live migration (docs/snapshots.md, "Live migration") ---------------- */

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
static void mirror_key(struct xkv_slow *sl, struct xkv_store *old, const __u8 *key, __u32 klen,
		       struct xkv_item *it, bool remember)
{
	struct xkv_store *m = sl->mig;
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

/* A write while migrating: run it on the old store, then mirror every key
 * it names, the two under mig_mu so that no other write comes between. */
static int mig_write(struct slow_cmd *c)
{
	struct xkv_slow *sl = c->sl;
	struct xkv_req *r = c->r;

	if (r->op == XKV_OP_FLUSH_ALL) { /* a walk of two stores: not while copying */
		STAT(c, err_client);
		return PUT_LIT(c->out, R_MIG_FLUSH);
	}
	bool getlike = r->op == XKV_OP_GAT || r->op == XKV_OP_GATS;
	bool meta = r->op == XKV_OP_MS || r->op == XKV_OP_MD || r->op == XKV_OP_MA || r->op == XKV_OP_MG;
	pthread_mutex_lock(&sl->mig_mu);
	c->key = NULL; /* a meta command's key, decoded (b), once meta_key took it */
	int rc = slow_dispatch(c);
	if (meta) {
		if (c->key)
			mirror_key(sl, c->s, c->key, c->klen, &c->sc->item, !sl->mig_copied);
	} else {
		for (__u32 t = getlike ? r->key1 : 1; t < (getlike ? r->ntok : 2) && t < r->ntok; t++)
			mirror_key(sl, c->s, tok_ptr(c, t), r->tok[t].len, &c->sc->item,
				   !sl->mig_copied);
	}
	pthread_mutex_unlock(&sl->mig_mu);
	return rc;
}

int xkv_slow_mig_begin(struct xkv_slow *sl, int store_fd, const struct xkv_config *cfg, char *err,
		       size_t errlen)
{
	struct xkv_store *m = calloc(1, sizeof(*m));
	int e;

	if (!m)
		return xkv_errf(err, errlen, -ENOMEM, "out of memory");
	pthread_rwlock_wrlock(&sl->store_lk);
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
	pthread_rwlock_unlock(&sl->store_lk);
	if (e)
		free(m);
	return e;
}

long xkv_slow_mig_fixup(struct xkv_slow *sl)
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
	pthread_mutex_unlock(&sl->mig_mu);
	xkv_slow_release(sl);
	free(it);
	return it ? n : -ENOMEM;
}

int xkv_slow_mig_switch(struct xkv_slow *sl)
{
	pthread_rwlock_wrlock(&sl->store_lk);
	if (sl->mig_state != MIG_MIRROR) {
		pthread_rwlock_unlock(&sl->store_lk);
		return -EINVAL;
	}
	xkv_store_swap(sl->s, sl->mig);
	if (!sl->s->owns_fds) /* the old fd is its object's (attach --serve): it closes it */
		sl->mig->store_fd = -1;
	xkv_store_drop(sl->mig);
	free(sl->mig);
	sl->mig = NULL;
	sl->mig_state = MIG_SWITCHED;
	pthread_rwlock_unlock(&sl->store_lk);
	xkv_slow_count_refresh(sl);
	return 0;
}

int xkv_slow_mig_end(struct xkv_slow *sl)
{
	pthread_rwlock_wrlock(&sl->store_lk);
	int was = sl->mig_state;
	if (sl->mig) {
		xkv_store_drop(sl->mig);
		free(sl->mig);
		sl->mig = NULL;
	}
	sl->mig_state = MIG_NONE;
	xkv_buf_free(&sl->tombs);
	pthread_rwlock_unlock(&sl->store_lk);
	return was;
}

void xkv_slow_mig_stats(struct xkv_slow *sl, struct xkv_slow_mig_stats *st)
{
	pthread_mutex_lock(&sl->mig_mu);
	*st = sl->ms;
	pthread_mutex_unlock(&sl->mig_mu);
}

/* Count and run one command the parser read (err: its verdict), appending
 * its reply: the per-command path of both transports.  Returns <0 when the
 * rest of a datagram must not run (a parse error, a reply over budget). */
/* The command word's op, read again where a parser verdict cleared r->op
 * (xkv_parse reads get, set and delete itself, the rest with
 * xkv_parse_slow_op).  XKV_OP_NONE for no word or an unknown one. */
static __u8 word_op(const struct slow_cmd *c)
{
	const struct xkv_tok *w = &c->r->tok[0];
	if (!c->r->ntok)
		return XKV_OP_NONE;
	if (xkv_tok_is(c->buf, w, "get", 3))
		return XKV_OP_GET;
	if (xkv_tok_is(c->buf, w, "set", 3))
		return XKV_OP_SET;
	if (xkv_tok_is(c->buf, w, "delete", 6))
		return XKV_OP_DELETE;
	return xkv_parse_slow_op(c->buf, w);
}

/* A classic command ending in "noreply" gets no reply at all, errors
 * included: memcached reads the token before anything else and drops
 * every line of that command (a client that sent noreply never reads one;
 * an error line would answer its next request).  A line that is not the
 * command's shape (ERROR) is answered.  The parser clears op on a verdict:
 * the command word is read again. */
static bool text_noreply(const struct slow_cmd *c, int err)
{
	const struct xkv_req *r = c->r;

	if (!err)
		return r->noreply;
	if (err == XKV_E_UNKNOWN || err == XKV_E_NO_CRLF || r->too_many || r->ntok < 2 ||
	    r->ntok > XKV_PARSE_TOKENS)
		return false;
	switch (word_op(c)) {
	case XKV_OP_SET: case XKV_OP_ADD: case XKV_OP_REPLACE: case XKV_OP_APPEND:
	case XKV_OP_PREPEND: case XKV_OP_CAS: case XKV_OP_DELETE: case XKV_OP_INCR:
	case XKV_OP_DECR: case XKV_OP_TOUCH: case XKV_OP_VERBOSITY: case XKV_OP_FLUSH_ALL:
		return xkv_tok_is(c->buf, &r->tok[r->ntok - 1], "noreply", 7);
	default:
		return false;
	}
}

/* A set or ms refused as too large removes the key's item: memcached
 * does so that a failed set cannot leave the old value readable. */
static void too_large_unlink(struct slow_cmd *c)
{
	const struct xkv_req *r = c->r;
	__u8 op = word_op(c);

	if (!c->may_write || r->ntok < 2 || (op != XKV_OP_SET && op != XKV_OP_MS) ||
	    xkv_key_check(&c->s->cfg, tok_ptr(c, 1), r->tok[1].len))
		return;
	slow_delete(c, tok_ptr(c, 1), r->tok[1].len, false, 0);
}

static int slow_run_cmd(struct slow_cmd *c, int err)
{
	count_cmd(c);
	if (err == XKV_E_TOO_LARGE || err == XKV_E_OOM)
		too_large_unlink(c);
	if (err) {
		reply_err(c, err);
		over_budget(c, 0);
		return -1;
	}
	/* migrate: the write goes to the old store and the new one */
	if (cmd_writes(c) && c->sl->mig_state == MIG_MIRROR)
		return mig_write(c) < 0 || over_budget(c, 0) ? -1 : 0;
	/* snapshot --pause-writes holds the store still: refuse, change nothing
	 * (after a migration's switch the flag is still up for a moment: the
	 * store written is the new one, which XDP serves) */
	if (cmd_writes(c) && c->sl->mig_state == MIG_NONE && xkv_writes_paused(c->s) > 0) {
		STAT(c, pass_paused);
		if (!c->r->noreply && PUT_LIT(c->out, XKV_R_PAUSED) < 0)
			return -1;
		return over_budget(c, 0) ? -1 : 0;
	}
	return slow_dispatch(c) < 0 || over_budget(c, 0) ? -1 : 0;
}

static int slow_run(struct slow_cmd *c, int err)
{
	size_t mark = c->out->len;
	int rc = slow_run_cmd(c, err);
	if (c->out->len > mark && text_noreply(c, err)) {
		c->out->len = mark; /* counted as answered: the error counters stay */
		c->over = OVER_NONE;
		STAT(c, noreply);
	}
	return rc;
}

/* A reply that outgrew max_reply is taken back (from out_start) and
 * replaced by the error line. */
static void settle_over_reply(struct slow_cmd *c)
{
	if (c->over != OVER_REPLY)
		return;
	c->out->len = c->out_start;
	STAT(c, drop_oversize);
	PUT_LIT(c->out, XKV_R_REPLY_LARGE);
}

/* This thread's scratch and its own view of the store (see struct
 * slow_scratch) for the commands to come.  <0 (answered) without memory. */
static int cmd_begin(struct slow_cmd *c)
{
	c->sc = slow_scratch();
	if (!c->sc) {
		reply_err(c, XKV_E_OOM);
		return -1;
	}
	c->r = &c->sc->req;
	c->sc->store = *c->sl->s;
	c->sc->store.new_items = c->sc->store.overwrites = 0;
	c->s = &c->sc->store;
	return 0;
}

/* Copy the request text into the zero-padded parse buffer. */
static void slow_load_text(struct slow_scratch *sc, const __u8 *text, size_t tlen)
{
	memcpy(sc->text, text, tlen);
	if (sc->text_used > tlen)
		memset(sc->text + tlen, 0, sc->text_used - tlen);
	sc->text_used = tlen;
}

/* ---- one datagram --------------------------------------------------------- */

/* A get-like command with more keys than this slow path takes? */
static bool too_many_keys(const struct slow_cmd *c)
{
	const struct xkv_req *r = c->r;
	bool getlike = r->op == XKV_OP_GET || r->op == XKV_OP_GETS || r->op == XKV_OP_GAT ||
		       r->op == XKV_OP_GATS;
	return getlike && (r->too_many || r->ntok - r->key1 > c->sl->lim.max_keys);
}

/* ms <key> <datalen> <flag>*\r\n<data>\r\n: the parser reads its line
 * only; its data block is framed here with the verdicts the parser gives a
 * storage command's (data_off and bytes set for the stream's wait). */
static int frame_ms(struct slow_cmd *c, size_t avail)
{
	struct xkv_req *r = c->r;
	__u64 v;

	if (r->ntok < 3 || xkv_tok_u64(c->buf, &r->tok[2], 0x7ffffffdULL, &v))
		return xkv_fail(r, XKV_E_FORMAT);
	r->bytes = (__u32)v;
	r->data_off = r->line_len + 2;
	if (r->bytes > r->val_cap)
		return xkv_fail(r, XKV_E_TOO_LARGE);
	size_t end = (size_t)r->data_off + r->bytes; /* where \r\n must be */
	if (end + 2 > avail || c->buf[end] != '\r' || c->buf[end + 1] != '\n')
		return xkv_fail(r, XKV_E_DATA);
	r->next = (__u32)end + 2;
	return XKV_OK;
}

static void parse_at(struct slow_cmd *c, size_t off, size_t tlen, int *err)
{
	memset(&c->tw, 0, sizeof(c->tw));
	c->buf = c->sc->text + off;
	c->r->key_cap = c->s->cfg.key_cap;
	c->r->val_cap = xkv_val_max(c->s);
	c->r->binary_keys = !!(c->s->cfg.flags & XKV_CFG_BINARY_KEYS);
	*err = xkv_parse(c->buf, (__u32)(tlen - off), c->r);
	if (!*err && c->r->op == XKV_OP_MS)
		*err = frame_ms(c, tlen - off);
	c->data = c->buf + (c->r->data_off & (SLOW_BUF / 2 - 1));
}


/* What the datagram would do, read before any of it runs, so that a refused
 * datagram changes nothing: the commands up to the first parse error (the
 * ones that would run).  Returns the counter of a silent drop, or -1. */
enum { SCAN_TOO_MANY_KEYS = 1 };
static int scan_datagram(struct slow_cmd *c, size_t tlen, bool may_write, int *flags)
{
	size_t off = 0;
	bool writes = false;
	int err;

	*flags = 0;
	do {
		parse_at(c, off, tlen, &err);
		if (err) {
			/* answering a reply is how two servers talk forever */
			if (err == XKV_E_UNKNOWN && xkv_reply_shaped(c->buf, c->r))
				return XKV_STAT_drop_reply;
			break;
		}
		writes |= cmd_writes(c);
		if (too_many_keys(c))
			*flags |= SCAN_TOO_MANY_KEYS;
		off += c->r->next;
	} while (off < tlen);
	if (writes && !may_write)
		return XKV_STAT_drop_write_acl;
	return -1;
}

/* The checks the XDP program makes before it parses (handler.bpf.h, in its
 * order), for what reaches the socket without passing them: IP options,
 * fragments, frames for another MAC, skb paths.  0 to go on, or the
 * counter of a silent drop (-1: dropped, not counted). */
/* The lists' verdict on a source (addr NULL: a trusted local caller): 0
 * with its rights, or XKV_STAT_drop_acl (a lookup error refuses too). */
static int slow_rights(struct xkv_slow *sl, const __u8 *addr, struct xkv_rights *rt)
{
	struct xkv_store *s = sl->s;

	rt->allow = rt->write = rt->trusted = true;
	if (!addr || (s->cfg.flags & XKV_CFG_UNGUARDED))
		return 0;
	if (xkv_rights_of(s, addr, rt) || !rt->allow)
		return XKV_STAT_drop_acl;
	return 0;
}

static int slow_admit(struct xkv_slow *sl, const struct xkv_slow_src *src, struct xkv_rights *rt)
{
	struct xkv_store *s = sl->s;
	__u32 zero = 0;

	rt->allow = rt->write = rt->trusted = true;
	if (!src || (s->cfg.flags & XKV_CFG_UNGUARDED))
		return 0;
	/* sent to this host?  (a subnet broadcast reaches the socket too) */
	struct xkv_host h;
	__u8 plen;
	if (src->has_dst && s->host_fd >= 0 && s->local_fd >= 0 &&
	    !bpf_map_lookup_elem(s->host_fd, &zero, &h) && (h.flags & XKV_HOST_CHECK_IP) &&
	    bpf_map_lookup_elem(s->local_fd, src->dst, &plen))
		return XKV_STAT_pass_not_local; /* XDP passed it on; here it ends */
	if (src->port == 0 || src->port == s->cfg.port ||
	    (src->port < 1024 && !(s->cfg.flags & XKV_CFG_LOW_PORTS)))
		return XKV_STAT_drop_port;
	int drop = slow_rights(sl, src->addr, rt);
	if (drop)
		return drop;
	/* what reached the socket past the program's limit: fragments, IP
	 * options, extension headers, VLAN tags (ratelimit.h) */
	if (!xkv_rl_ok(&sl->rl, src->addr, xkv_now_ns()))
		return XKV_STAT_drop_ratelimit;
	return 0;
}

static int slow_handle(struct xkv_slow *sl, const struct xkv_slow_src *src, const __u8 *dgram,
		       size_t len, struct xkv_udp_hdr *hdr, struct xkv_buf *out, struct xkv_stats *delta)
{
	struct xkv_store *s = sl->s;
	struct slow_cmd c = { .sl = sl, .s = s, .out = out, .d = delta, .out_start = out->len,
			      .framed = true };
	struct xkv_rights rt;

	if (len >= XKV_UDP_HDR_LEN)
		memcpy(hdr, dgram, sizeof(*hdr));
	int drop = slow_admit(sl, src, &rt);
	if (drop) {
		if (drop > 0)
			delta->v[drop]++;
		return 0;
	}
	STAT(&c, requests); /* counted as the fast path does: past the access checks */
	if (len < XKV_UDP_HDR_LEN)
		return 0; /* no header to echo: nobody to answer */
	/* one datagram per request; anything else gets silence, as memcached */
	if (hdr->total != htons(1) || hdr->seq != 0) {
		STAT(&c, drop_frame);
		return 0;
	}
	/* An untrusted source gets at most max_amp reply bytes per request
	 * byte; everyone at most max_reply. */
	__u64 amp_cap = 0;
	c.budget = sl->lim.max_reply;
	if (src && !rt.trusted && s->cfg.max_amp && !(s->cfg.flags & XKV_CFG_UNGUARDED)) {
		amp_cap = (__u64)s->cfg.max_amp * len;
		if (amp_cap < c.budget) {
			c.budget = (size_t)amp_cap;
			c.budget_amp = 1;
		}
	}
	if (cmd_begin(&c))
		goto done;

	size_t tlen = len - XKV_UDP_HDR_LEN;
	if (tlen > XKV_PARSE_SPAN)
		tlen = XKV_PARSE_SPAN; /* cannot happen: UDP payloads are < 64 KiB */
	slow_load_text(c.sc, dgram + XKV_UDP_HDR_LEN, tlen);

	int scan;
	c.may_write = rt.write;
	drop = scan_datagram(&c, tlen, rt.write, &scan);
	if (drop >= 0) {
		delta->v[drop]++;
		return 0;
	}
	if (scan & SCAN_TOO_MANY_KEYS) { /* refused before anything runs */
		STAT(&c, drop_oversize);
		PUT_LIT(out, XKV_R_TOO_MANY_KEYS);
		goto done;
	}

	/* Every command in order.  On a parse error the error line is the last
	 * thing answered: memcached would resynchronise on the next line and go
	 * on, we stop (after a bad data block the next line is a guess).  A
	 * reply over the budget stops it too (what ran, ran). */
	size_t off = 0;
	do {
		int err;
		parse_at(&c, off, tlen, &err);
		if (slow_run(&c, err) < 0)
			break;
		off += c.r->next;
	} while (off < tlen);
	settle_over_reply(&c);
done:;
	size_t n = out->len - c.out_start;
	if (amp_cap && (c.over == OVER_AMP || wire_bytes(n) > amp_cap)) {
		out->len = c.out_start;
		if (XKV_UDP_HDR_LEN + sizeof(XKV_R_AMP) - 1 > amp_cap) {
			STAT(&c, drop_amp);
			return 0;
		}
		STAT(&c, amp_capped);
		PUT_LIT(out, XKV_R_AMP);
		n = out->len - c.out_start;
	}
	if (n == 0)
		return 0;
	delta->v[XKV_STAT_replies] += (n + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT;
	return 1;
}

int xkv_slow_handle(struct xkv_slow *sl, const struct xkv_slow_src *src, const __u8 *dgram,
		    size_t len, struct xkv_udp_hdr *hdr, struct xkv_buf *out, struct xkv_stats *delta)
{
	int rc;
	if (xkv_bin_dgram_take(sl, src, dgram, len, hdr, out, delta, &rc))
		return rc;
	xkv_slow_hold(sl);
	rc = slow_handle(sl, src, dgram, len, hdr, out, delta);
	xkv_slow_release(sl);
	return rc;
}

/* ---- a byte stream (TCP) --------------------------------------------------- */

/* A request is copied whole into the parse buffer: the longest line and
 * the largest data block must fit it together. */
_Static_assert(XKV_STREAM_REQ_MAX <= XKV_PARSE_SPAN, "a stream request must fit the parse span");

#define R_LINE_LONG "CLIENT_ERROR line too long\r\n"

#define STREAM_SHORT_LINE 2048

/* Is the command word one that a data block follows? */
static bool storage_word(const struct slow_cmd *c)
{
	switch (word_op(c)) {
	case XKV_OP_SET: case XKV_OP_ADD: case XKV_OP_REPLACE: case XKV_OP_APPEND:
	case XKV_OP_PREPEND: case XKV_OP_CAS: case XKV_OP_MS:
		return true;
	default:
		return false;
	}
}

/* Does p start (after at most 100 spaces, as memcached) with get, gets,
 * gat or gats and a space? */
static bool multiget_word(const __u8 *p, size_t len)
{
	size_t i = 0;
	while (i < len && i <= 100 && p[i] == ' ')
		i++;
	static const char *const words[] = { "get ", "gets ", "gat ", "gats " };
	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		size_t n = strlen(words[k]);
		if (len - i >= n && !memcmp(p + i, words[k], n))
			return true;
	}
	return false;
}

/* p[0..src_len) into the parse buffer; bare: the line ends at p[line], a
 * \n without \r, which goes in as \r\n.  Returns the bytes loaded. */
static size_t stream_load(struct slow_scratch *sc, const __u8 *p, size_t line, size_t src_len,
			  size_t bare)
{
	if (!bare) {
		slow_load_text(sc, p, src_len);
		return src_len;
	}
	size_t n = src_len + 1;
	memcpy(sc->text, p, line);
	sc->text[line] = '\r';
	memcpy(sc->text + line + 1, p + line, src_len - line);
	if (sc->text_used > n)
		memset(sc->text + n, 0, sc->text_used - n);
	sc->text_used = n;
	return n;
}

/* The first request of p[0..len): runs it and sets *used to its bytes, or
 * leaves *used 0 when it is not complete yet.  XKV_STREAM_CLOSE when the
 * connection must end after what out holds. */
static int stream_one(struct slow_cmd *c, const struct xkv_rights *rt, struct xkv_slow_stream *st,
		      const __u8 *p, size_t len, size_t *used)
{
	size_t scan = len < XKV_STREAM_LINE_MAX + 2 ? len : XKV_STREAM_LINE_MAX + 2;
	const __u8 *nl = memchr(p, '\n', scan);
	int err;

	*used = 0;
	st->need = 0;
	/* memcached closes a connection whose line passes 2048 bytes unless
	 * it is a multi-get (only those are that long; anything else is a
	 * data block being read as commands); gat and gats are multi-gets too */
	size_t line_len = nl ? (size_t)(nl - p) : len;
	if (line_len > STREAM_SHORT_LINE && !multiget_word(p, len)) {
		STAT(c, err_client);
		PUT_LIT(c->out, R_LINE_LONG);
		return XKV_STREAM_CLOSE;
	}
	if (!nl) {
		if (len < XKV_STREAM_LINE_MAX + 2)
			return XKV_STREAM_MORE;
		/* nothing to resynchronise on: memcached closes too */
		STAT(c, err_client);
		PUT_LIT(c->out, R_LINE_LONG);
		return XKV_STREAM_CLOSE;
	}
	/* The line alone first; a storage command then reads as a short data
	 * block (XKV_E_DATA, with data_off and bytes filled in): wait for the
	 * whole block and parse the request again with it.  A line ended by
	 * a bare \n is a command line too, as memcached reads it: the parser
	 * gets it with \r\n (bare: one byte more there than here). */
	size_t line = (size_t)(nl - p);
	size_t bare = line == 0 || nl[-1] != '\r';
	size_t tlen = line + 1;
	parse_at(c, 0, stream_load(c->sc, p, line, tlen, bare), &err);
	if (err == XKV_E_DATA) {
		size_t need = (size_t)c->r->data_off + c->r->bytes + 2 - bare;
		if (len < need && !st->no_room) {
			st->need = need;
			return XKV_STREAM_MORE;
		}
		if (len < need) {
			/* no memory for the block: answered now, swallowed as
			 * it arrives (the old item goes, as for a too-large one) */
			st->no_room = false;
			c->r->op = word_op(c);
			c->r->err = err = XKV_E_OOM;
			st->swallow = need - len;
			tlen = len;
		} else if (need + bare <= XKV_PARSE_SPAN) {
			tlen = need;
			parse_at(c, 0, stream_load(c->sc, p, line, tlen, bare), &err);
		} else {
			/* a value above the parse buffer (only a big one): the
			 * line is parsed, the block stays where it is, and its
			 * end is checked here as the parser would */
			tlen = need;
			if (p[need - 2] == '\r' && p[need - 1] == '\n') {
				c->r->op = word_op(c); /* the verdict cleared it */
				c->r->err = err = XKV_OK;
				c->r->next = (__u32)need;
				c->data = p + c->r->data_off - bare;
			}
		}
	}
	*used = tlen; /* == c->r->next when err == XKV_OK */
	if (err == XKV_E_UNKNOWN && c->r->ntok == 1 && xkv_tok_is(c->buf, &c->r->tok[0], "quit", 4))
		return XKV_STREAM_CLOSE;
	/* The UDP slow path's refusals (silence), then the end of the
	 * connection: a client waiting for the reply learns at once. */
	if (err == XKV_E_UNKNOWN && xkv_reply_shaped(c->buf, c->r)) {
		STAT(c, drop_reply);
		return XKV_STREAM_CLOSE;
	}
	if (!err && cmd_writes(c) && !rt->write) {
		STAT(c, drop_write_acl);
		return XKV_STREAM_CLOSE;
	}
	c->may_write = rt->write;
	/* memcached swallows the data block of a value too large to store */
	if (err == XKV_E_TOO_LARGE)
		st->swallow = (__u64)c->r->bytes + 2;
	/* A storage line refused before its data block was framed (a bad
	 * key, number or field count): its data would run as commands (a
	 * value "flush_all" would flush the store; memcached 1.6.18 does run
	 * it).  Answer, then end the connection. */
	bool refused_store = err && err != XKV_E_DATA && err != XKV_E_TOO_LARGE &&
			     err != XKV_E_OOM && err != XKV_E_UNKNOWN && storage_word(c);

	STAT(c, requests);
	c->out_start = c->out->len;
	c->over = OVER_NONE;
	/* a trusted client (the trust list; connected subnets by default) gets
	 * any multi-get as memcached streams it (proxies batch hundreds of
	 * keys); the parser's bounds stay: XKV_STREAM_LINE_MAX bytes, 4095 keys */
	if (!err && !rt->trusted && too_many_keys(c)) {
		count_cmd(c);
		STAT(c, drop_oversize);
		PUT_LIT(c->out, XKV_R_TOO_MANY_KEYS);
	} else {
		slow_run(c, err);
		settle_over_reply(c);
	}
	if (c->out->len > c->out_start)
		STAT(c, replies);
	return refused_store ? XKV_STREAM_CLOSE : XKV_STREAM_MORE;
}

static int slow_stream(struct xkv_slow *sl, const struct xkv_slow_src *src, struct xkv_slow_stream *st,
		       const __u8 *buf, size_t len, size_t *consumed, struct xkv_buf *out,
		       struct xkv_stats *delta)
{
	struct slow_cmd c = { .sl = sl, .out = out, .d = delta, .budget = sl->lim.max_reply };
	struct xkv_rights rt;
	size_t off = 0, used;
	int rc = XKV_STREAM_MORE;

	*consumed = 0;
	/* the lists may change while a client is connected: a source that
	 * left the allow list is cut off at its next request */
	int drop = slow_rights(sl, src ? src->addr : NULL, &rt);
	if (drop) {
		delta->v[drop]++;
		return XKV_STREAM_CLOSE;
	}
	if (cmd_begin(&c))
		return XKV_STREAM_CLOSE;
	if (rt.trusted)
		c.budget = SIZE_MAX; /* no --max-reply over TCP for a trusted client */
	while (off < len) {
		if (st->swallow) {
			size_t n = len - off < st->swallow ? len - off : (size_t)st->swallow;
			off += n;
			st->swallow -= n;
			continue;
		}
		if (st->out_max && out->len >= st->out_max)
			break;
		rc = stream_one(&c, &rt, st, buf + off, len - off, &used);
		off += used;
		if (rc != XKV_STREAM_MORE || !used)
			break;
	}
	*consumed = off;
	return rc;
}

int xkv_slow_stream(struct xkv_slow *sl, const struct xkv_slow_src *src, struct xkv_slow_stream *st,
		    const __u8 *buf, size_t len, size_t *consumed, struct xkv_buf *out,
		    struct xkv_stats *delta)
{
	int rc;
	if (xkv_bin_stream_take(sl, src, st, buf, len, consumed, out, delta, &rc))
		return rc;
	xkv_slow_hold(sl);
	rc = slow_stream(sl, src, st, buf, len, consumed, out, delta);
	xkv_slow_release(sl);
	return rc;
}

long xkv_slow_tcp_event(struct xkv_slow *sl, enum xkv_tcp_event ev, unsigned max_conns)
{
	switch (ev) {
	case XKV_TCP_LISTEN:
		__atomic_store_n(&sl->tcp_max, max_conns, __ATOMIC_RELAXED);
		break;
	case XKV_TCP_OPEN:
		__atomic_add_fetch(&sl->conns_total, 1, __ATOMIC_RELAXED);
		return __atomic_add_fetch(&sl->conns_curr, 1, __ATOMIC_RELAXED);
	case XKV_TCP_CLOSE:
		return __atomic_sub_fetch(&sl->conns_curr, 1, __ATOMIC_RELAXED);
	case XKV_TCP_REJECT:
		__atomic_add_fetch(&sl->conns_rejected, 1, __ATOMIC_RELAXED);
		break;
	}
	return __atomic_load_n(&sl->conns_curr, __ATOMIC_RELAXED);
}

int xkv_slow_tcp_admit(struct xkv_slow *sl, const __u8 addr[16], struct xkv_stats *delta)
{
	struct xkv_rights rt;
	int drop = slow_rights(sl, addr, &rt);

	if (drop)
		delta->v[drop]++;
	return !drop;
}

/* ---- framing -------------------------------------------------------------- */

int xkv_slow_frame(__u16 req_id_be, const __u8 *text, size_t len,
		   int (*emit)(void *arg, const __u8 *dgram, size_t dlen), void *arg)
{
	size_t total = (len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT;
	__u8 d[XKV_DGRAM_MAX];

	if (total > 0xffff)
		return -E2BIG;
	for (size_t i = 0; i < total; i++) {
		struct xkv_udp_hdr h = {
			.req_id = req_id_be,
			.seq = htons((__u16)i),
			.total = htons((__u16)total),
		};
		size_t off = i * XKV_DGRAM_TEXT;
		size_t n = len - off < XKV_DGRAM_TEXT ? len - off : XKV_DGRAM_TEXT;

		memcpy(d, &h, sizeof(h));
		memcpy(d + XKV_UDP_HDR_LEN, text + off, n);
		int ret = emit(arg, d, XKV_UDP_HDR_LEN + n);
		if (ret < 0)
			return ret;
	}
	return (int)total;
}

/* ---- the executor for other front ends (slowexec.h, binproto.c) ----------- */

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
		 struct xkv_buf *out, struct xkv_stats *delta, xkv_exec_fn fn, void *arg)
{
	struct slow_cmd c = { .sl = sl, .out = out, .d = delta, .out_start = out->len,
			      .budget = sl->lim.max_reply };
	struct xkv_rights r;
	int rc = XKV_EXEC_REFUSED;

	xkv_slow_hold(sl);
	int drop = udp ? slow_admit(sl, src, &r) : slow_rights(sl, src ? src->addr : NULL, &r);
	if (drop > 0)
		delta->v[drop]++;
	if (!drop && cmd_begin(&c))
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
	struct wr w = { .mode = WR_TOUCH, .new_ttl = true };
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

int xkv_exec_stats(struct slow_cmd *c, struct xkv_buf *lines)
{
	struct xkv_buf *out = c->out;
	c->out = lines;
	int ret = stats_lines(c);
	c->out = out;
	return ret;
}
