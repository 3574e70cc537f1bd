// SPDX-License-Identifier: MIT
/* lru_crawler metadump (memcached's): a line per live item, then END.
 * memcached-tool's dump and keys read it.  memcached's crawler streams the
 * lines from a thread of its own; here, on a stream with an output bound
 * (TCP), the layout's scan writes them into the reply MD_STEP positions at
 * a time, as the connection drains (c->mg, stream.c), whatever the store
 * holds; otherwise (a client outside the trust list: --max-reply; a caller
 * with no bound) the dump is built whole, at most METADUMP_MAX bytes.  Over
 * TCP only.  The other lru_crawler
 * subcommands drive memcached's crawler, which this store has not: ERROR. */
#include "engine_int.h"
#include <stdint.h>

#define METADUMP_MAX (16u << 20) /* bytes of lines one dump built whole may hold */
#define MD_STEP 256              /* positions of the store's span walked at a time */
#define R_METADUMP_LARGE "SERVER_ERROR metadump over 16 MiB; 'xdpkv dump' writes the whole store\r\n"
#define R_METADUMP_UDP "SERVER_ERROR lru_crawler metadump is served over TCP only\r\n"
#define R_BADCLASS "BADCLASS invalid class id\r\n"

struct md_walk {
	struct slow_cmd *c;
	__u64 now, walks;
	__u64 classes;    /* bit n: slab class n (1: the store map, 2: big values) */
	size_t mark;      /* where the dump's lines start in c->out */
	bool whole;       /* built whole: at most METADUMP_MAX */
	int stop;         /* 1: over METADUMP_MAX; -1: out of memory */
};

/* memcached's uriencode: unreserved bytes (RFC 3986) as they are, every
 * other as %XX. */
static int put_uri(struct xkv_buf *b, const __u8 *k, __u32 n)
{
	static const char hex[] = "0123456789ABCDEF";
	for (__u32 i = 0; i < n; i++) {
		__u8 x = k[i];
		bool plain = (x >= 'a' && x <= 'z') || (x >= 'A' && x <= 'Z') || (x >= '0' && x <= '9') ||
			     x == '-' || x == '.' || x == '_' || x == '~';
		char e[3] = { '%', hex[x >> 4], hex[x & 15] };
		if (plain ? xkv_buf_put(b, &x, 1) : xkv_buf_put(b, e, 3))
			return -1;
	}
	return 0;
}

static __u64 unix_secs(const struct slow_cmd *c, __u64 mono_ns)
{
	__s64 t = (__s64)mono_ns + c->s->cfg.realtime_off_ns;
	return t > 0 ? (__u64)t / 1000000000ull : 0;
}

/* One item's line: key=<uri> exp=<unix time, -1: none> la=<unix time of
 * its last access> cas=<cas unique> fetch=<yes|no> cls=<1|2> size=<bytes
 * it takes here>. */
static int md_visit(void *arg, const __u8 *key, __u32 klen, const struct xkv_entry *e,
		    const __u8 *val)
{
	struct md_walk *w = arg;
	struct slow_cmd *c = w->c;
	const struct xkv_config *cfg = &c->s->cfg;
	(void)val;

	if ((e->expire_ns && e->expire_ns <= w->now) || flushed(c->sl, e->wtime_ns, w->walks))
		return 0; /* gone for every reader: not dumped (as memcached) */
	bool big = e->len > cfg->val_cap;
	unsigned cls = big ? 2 : 1;
	if (!(w->classes & (1ull << cls)))
		return 0;
	if (w->whole && c->out->len - w->mark > METADUMP_MAX) {
		w->stop = 1;
		return 1;
	}
	__u64 size = cfg->entry_size +
		     (big ? (__u64)(e->len + XKV_BIG_CHUNK - 1) / XKV_BIG_CHUNK * XKV_BIG_CHUNK : 0);
	long long exp = e->expire_ns ? (long long)unix_secs(c, e->expire_ns) : -1;
	if (PUT_LIT(c->out, "key=") || put_uri(c->out, key, klen) ||
	    buf_printf(c->out, " exp=%lld la=%llu cas=%llu fetch=%s cls=%u size=%llu\n", exp,
		       (unsigned long long)(unix_secs(c, e->wtime_ns & ~XKV_STAMP_ID_MASK) +
					    xkv_atime_dec(e->klen >> XKV_ENT_ATIME_SHIFT)),
		       (unsigned long long)e->wtime_ns, e->klen & XKV_ENT_FETCHED ? "yes" : "no",
		       cls, (unsigned long long)size)) {
		w->stop = -1;
		return 1;
	}
	return 0;
}

/* The dump in parts: MD_STEP positions of the span at a time, stopping
 * once out holds mg_max bytes (the stream calls again when it has drained;
 * an item written meanwhile may be in it or not, as with memcached's
 * crawler).  A scan that fails part way ends the dump with its error line. */
static int md_parts(struct slow_cmd *c, struct md_walk *w)
{
	struct xkv_stream_mget *mg = c->mg;
	struct xkv_store *s = c->s;
	__u64 span = s->L->span(s), busy = 0;

	while (mg->pos < span) {
		if (c->out->len >= c->mg_max) {
			mg->paused = true;
			return 0;
		}
		__u64 hi = span - mg->pos > MD_STEP ? mg->pos + MD_STEP : UINT64_MAX;
		long n = s->L->scan(s, mg->pos, hi, md_visit, w, &busy);
		if (n < 0 || w->stop)
			return n < 0 && !w->stop ? reply_store_errno(c, (int)n) : -1;
		mg->pos = hi == UINT64_MAX ? span : hi;
	}
	return PUT_LIT(c->out, XKV_R_END);
}

/* <all|hash|class[,class]...>, memcached's classes 1..63: the classes
 * asked for (0: a bad list, memcached's BADCLASS). */
static __u64 md_classes(const __u8 *p, __u32 n)
{
	if ((n == 3 && !memcmp(p, "all", 3)) || (n == 4 && !memcmp(p, "hash", 4)))
		return ~0ull;
	__u64 set = 0;
	for (__u32 i = 0; i < n;) {
		unsigned v = 0, d = 0;
		while (i < n && p[i] >= '0' && p[i] <= '9' && d < 3)
			v = v * 10 + (unsigned)(p[i++] - '0'), d++;
		if (!d || v < 1 || v > 63 || (i < n && p[i++] != ',') || (i == n && p[n - 1] == ','))
			return 0;
		set |= 1ull << v;
	}
	return set;
}

int slow_cmd_lru_crawler(struct slow_cmd *c)
{
	const struct xkv_req *r = c->r;
	struct xkv_store *s = c->s;

	if (r->ntok != 3 || !xkv_tok_is(c->buf, &r->tok[1], "metadump", 8)) {
		STAT(c, err_unknown);
		return PUT_LIT(c->out, XKV_R_ERROR);
	}
	if (c->framed)
		return reply_err_line(c, R_METADUMP_UDP);
	__u64 classes = md_classes(tok_ptr(c, 2), r->tok[2].len);
	if (!classes)
		return PUT_LIT(c->out, R_BADCLASS);
	if (!s->L->scan)
		return reply_err_line(c, "SERVER_ERROR this layout cannot be walked\r\n");
	struct md_walk w = { .c = c, .now = xkv_now_ns(), .classes = classes, .mark = c->out->len,
			     .walks = __atomic_load_n(&c->sl->flush_walks, __ATOMIC_ACQUIRE) };
	__u64 busy = 0;
	if (c->mg && c->mg_max && s->L->span)
		return md_parts(c, &w);
	w.whole = true;
	long n = s->L->scan(s, 0, UINT64_MAX, md_visit, &w, &busy);
	if (w.stop < 0 || (n < 0 && !w.stop)) {
		c->out->len = w.mark;
		return n < 0 && !w.stop ? reply_store_errno(c, (int)n) : -1;
	}
	if (w.stop > 0) {
		c->out->len = w.mark;
		return reply_err_line(c, R_METADUMP_LARGE);
	}
	return PUT_LIT(c->out, XKV_R_END);
}
