// SPDX-License-Identifier: MIT
/* A TCP byte stream: one request at a time out of what the connection
 * read (a line, then its data block once it is all in; blocks swallowed,
 * connections closed as memcached does), and the TCP server's connection
 * counters. */
#include "engine_int.h"
#include "binproto.h"

/* A request is copied whole into the parse buffer: the longest line and
 * the largest data block must fit it together. */
_Static_assert(XKV_STREAM_REQ_MAX <= XKV_PARSE_SPAN, "a stream request must fit the parse span");

#define R_LINE_LONG "CLIENT_ERROR line too long\r\n"

#define STREAM_SHORT_LINE 2048
#define STREAM_READ_BUF 16384 /* memcached's read buffer: a line longer never holds its \n there */

static bool getlike(__u8 op)
{
	return op == XKV_OP_GET || op == XKV_OP_GETS || op == XKV_OP_GAT || op == XKV_OP_GATS;
}

/* Does p start, after at most 100 spaces (memcached's), with one of the
 * first n of get, gets, gat, gats and a space? */
static bool multiget_start(const __u8 *p, size_t len, size_t n)
{
	static const char *const words[] = { "get ", "gets ", "gat ", "gats " };
	size_t i = 0;
	while (i < len && p[i] == ' ')
		if (++i > 100)
			return false;
	for (size_t k = 0; k < n && k < sizeof(words) / sizeof(words[0]); k++) {
		size_t w = strlen(words[k]);
		if (len - i >= w && !memcmp(p + i, words[k], w))
			return true;
	}
	return false;
}

/* A multi-get line: get, gets, gat or gats. */
static bool multiget_word(const __u8 *p, size_t len)
{
	return multiget_start(p, len, 4);
}

/* May a line go on past STREAM_SHORT_LINE bytes without its newline?
 * memcached 1.6.18 reads on only into get and gets (not gat:
 * try_read_command_ascii). */
static bool long_line_ok(const __u8 *p, size_t len)
{
	return multiget_start(p, len, 2);
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
	/* a trusted client's multi-get may be as long as the buffer (mget.c) */
	bool mget = c->budget == SIZE_MAX && multiget_word(p, len);
	size_t lmax = mget ? XKV_STREAM_MGET_LINE_MAX : XKV_STREAM_LINE_MAX;
	size_t scan = len < lmax + 2 ? len : lmax + 2;
	const __u8 *nl = memchr(p, '\n', scan);
	int err;

	*used = 0;
	st->need = 0;
	/* memcached closes, without a word, a connection whose line has no
	 * newline in the first 2048 bytes read, or none in its 16 KiB read
	 * buffer at all, unless it is a multi-get (long_line_ok: anything
	 * else that long is a data block being read as commands); a longer
	 * line whose newline came with it is read as any other */
	if ((nl ? (size_t)(nl - p) >= STREAM_READ_BUF : len > STREAM_SHORT_LINE) && !long_line_ok(p, len))
		return XKV_STREAM_CLOSE;
	if (!nl) {
		if (len < lmax + 2 && !st->no_room) {
			if (len > XKV_STREAM_LINE_MAX)
				st->need = len + 1; /* not before it has grown */
			return XKV_STREAM_MORE;
		}
		/* nothing to resynchronise on: memcached closes too */
		st->no_room = false;
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
	if (mget && (st->mg.parts || (!st->mg.on && mget_long(p, line + bare - 1)))) {
		int rc = mget_parts(c, rt, st, p, line + bare - 1, tlen, used);
		if (rc >= 0)
			return rc;
		STAT(c, err_client);
		PUT_LIT(c->out, R_LINE_LONG);
		return XKV_STREAM_CLOSE;
	}
	bool resumed = st->mg.on; /* a multi-get stopped when out was full */
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
	/* quit, whatever words follow it (memcached) */
	if (err == XKV_E_UNKNOWN && c->r->ntok >= 1 && xkv_tok_is(c->buf, &c->r->tok[0], "quit", 4))
		return XKV_STREAM_CLOSE;
	/* The UDP slow path's refusals (silence), then the end of the
	 * connection: a client waiting for the reply learns at once. */
	if (err == XKV_E_UNKNOWN && xkv_reply_shaped(c->buf, c->r)) {
		STAT(c, drop_reply);
		return XKV_STREAM_CLOSE;
	}
	if (err == XKV_E_HTTP) { /* memcached's defence against cross-protocol posts */
		STAT(c, err_unknown);
		return XKV_STREAM_CLOSE;
	}
	if (!err && slow_cmd_writes(c) && !rt->write) {
		STAT(c, drop_write_acl);
		return XKV_STREAM_CLOSE;
	}
	c->may_write = rt->write;
	/* memcached swallows the data block of a value too large to store */
	if (err == XKV_E_TOO_LARGE)
		st->swallow = (__u64)c->r->bytes + 2;
	/* A storage line refused before its data block was framed (a bad
	 * key, number or field count) is answered and the stream goes on at
	 * the next line, as memcached 1.6.18 goes on: a data block sent after
	 * it is read as commands there and here. */

	if (!resumed)
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
		if (!err && ((mget && getlike(c->r->op)) ||
			     (c->budget == SIZE_MAX && st->out_max && c->r->op == XKV_OP_LRU_CRAWLER))) {
			c->mg = &st->mg; /* stops once out holds out_max bytes */
			c->mg_max = st->out_max;
			st->mg.paused = false;
			st->mg.last = true; /* one line, one part */
		}
		slow_run(c, err);
		settle_over_reply(c);
	}
	if (c->mg) {
		c->mg = NULL;
		if (st->mg.paused) {
			st->mg.on = true;
			*used = 0; /* the line again at the next call */
		} else {
			memset(&st->mg, 0, sizeof(st->mg));
		}
	}
	if (c->out->len > c->out_start && !resumed)
		STAT(c, replies);
	return XKV_STREAM_MORE;
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
	int drop = slow_rights_kept(sl, src ? src->addr : NULL, &st->rights, &rt);
	if (drop) {
		delta->v[drop]++;
		return XKV_STREAM_CLOSE;
	}
	if (slow_cmd_begin(&c))
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
	if (rc == XKV_STREAM_CLOSE) /* a reply in parts goes no further */
		memset(&st->mg, 0, sizeof(st->mg));
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
	case XKV_TCP_IDLE_ON:
		__atomic_store_n(&sl->idle_on, true, __ATOMIC_RELAXED);
		break;
	case XKV_TCP_IDLE_KICK:
		__atomic_add_fetch(&sl->idle_kicks, 1, __ATOMIC_RELAXED);
		break;
	}
	return __atomic_load_n(&sl->conns_curr, __ATOMIC_RELAXED);
}
