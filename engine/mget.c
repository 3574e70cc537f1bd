// SPDX-License-Identifier: MIT
/* A text multi-get on a stream, answered as the connection drains: the get
 * stops before a key once the connection's output holds out_max bytes
 * (mget_pause, engine_int.h) and goes on at the next call, its line left
 * in the caller's buffer until END is out.  So a connection holds at most
 * out_max bytes of replies plus one value, whatever it asks for, and one
 * that does not read stops costing anything.  A line longer than one parse
 * (XKV_STREAM_LINE_MAX bytes, or more keys than the parser's tokens), which
 * memcached reads whole and answers key by key, runs in parts of at most
 * MGET_PART_KEYS keys, each parsed as a get line of its own: one VALUE per
 * hit, one END after the last part.  Only for a client with no reply budget
 * (a trusted one, stream.c): a capped reply is built whole, to be taken back
 * whole when it passes --max-reply. */
#include "engine_int.h"

#define MGET_PART_KEYS 1024
#define MGET_PART_BYTES (16 * 1024)

_Static_assert(MGET_PART_KEYS + 3 <= XKV_PARSE_TOKENS, "a part's keys fit the parser's tokens");
_Static_assert(sizeof(((struct xkv_stream_mget *)0)->pre) + MGET_PART_BYTES + XKV_KEY_MAX + 4 <
	       XKV_PARSE_SPAN, "a part fits the parse span");

/* The token at or after p[*i] (spaces skipped) within [.., end): its start
 * and length, *i past it; false: none left. */
static bool tok_next(const __u8 *p, size_t end, size_t *i, size_t *start, size_t *len)
{
	size_t k = *i;
	while (k < end && p[k] == ' ')
		k++;
	if (k == end) {
		*i = k;
		return false;
	}
	*start = k;
	while (k < end && p[k] != ' ')
		k++;
	*len = k - *start;
	*i = k;
	return true;
}

bool mget_long(const __u8 *p, size_t line)
{
	if (line > XKV_STREAM_LINE_MAX)
		return true;
	if (line < 2 * (XKV_PARSE_TOKENS - 4))
		return false; /* too short for that many tokens */
	size_t i = 0, s, l, n = 0;
	while (tok_next(p, line, &i, &s, &l))
		if (++n > XKV_PARSE_TOKENS - 4)
			return true;
	return false;
}

/* The part after the one ending at mg->part_end (the first: from key1):
 * mg->part, part_end and last. */
static void part_next(struct xkv_stream_mget *mg, const __u8 *p)
{
	size_t i = mg->part_end, s, l, first = 0, end = 0, n = 0;
	while (n < MGET_PART_KEYS && tok_next(p, mg->line, &i, &s, &l)) {
		if (!n && l > XKV_KEY_MAX + 1) { /* a key too long: the line's error */
			first = s;
			end = s + XKV_KEY_MAX + 1;
			n++;
			break;
		}
		if (!n)
			first = s;
		else if (i - first > MGET_PART_BYTES)
			break;
		end = i;
		n++;
	}
	mg->part = (__u32)first;
	mg->part_end = (__u32)end;
	size_t rest = end;
	mg->last = !tok_next(p, mg->line, &rest, &s, &l);
	mg->done = 0;
}

/* The part running as a get line of its own (the line's command word and
 * exptime, then the part's keys), parsed: its verdict. */
static int part_parse(struct slow_cmd *c, const struct xkv_stream_mget *mg, const __u8 *p)
{
	struct slow_scratch *sc = c->sc;
	size_t keys = mg->part_end - mg->part, n = mg->pre_len + keys + 2;
	int err;

	memcpy(sc->text, mg->pre, mg->pre_len);
	memcpy(sc->text + mg->pre_len, p + mg->part, keys);
	memcpy(sc->text + mg->pre_len + keys, "\r\n", 2);
	if (sc->text_used > n)
		memset(sc->text + n, 0, sc->text_used - n);
	sc->text_used = n;
	parse_at(c, 0, n, &err);
	return err;
}

/* The line's first part, and every key checked as the get checks them
 * (memcached refuses the whole line for one bad key, before any VALUE):
 * *kerr that verdict, else 0.  false: no key at all (not run in parts). */
static bool parts_begin(struct slow_cmd *c, struct xkv_stream_mget *mg, const __u8 *p, size_t line,
			int *kerr)
{
	size_t i = 0, s, l, ntok = 0;
	bool gat = false;

	memset(mg, 0, sizeof(*mg));
	*kerr = 0;
	mg->line = (__u32)line;
	while (tok_next(p, line, &i, &s, &l)) {
		if (ntok == 0)
			gat = (l == 3 && !memcmp(p + s, "gat", 3)) || (l == 4 && !memcmp(p + s, "gats", 4));
		else if (ntok == 1u + gat)
			mg->key1 = (__u32)s;
		if (ntok < 1u + gat) { /* the command word, gat's exptime */
			if (mg->pre_len + l + 1 > sizeof(mg->pre))
				return false; /* an exptime of that many digits: a line too long */
			memcpy(mg->pre + mg->pre_len, p + s, l);
			mg->pre_len += (__u8)l;
			mg->pre[mg->pre_len++] = ' ';
		}
		if (ntok >= 1u + gat && !*kerr)
			*kerr = xkv_key_rule(&c->s->cfg, p + s, (__u32)l);
		ntok++;
	}
	if (!mg->key1)
		return false; /* no key at all */
	mg->parts = true;
	mg->part_end = mg->key1;
	part_next(mg, p);
	return true;
}

int mget_parts(struct slow_cmd *c, const struct xkv_rights *rt, struct xkv_slow_stream *st,
	       const __u8 *p, size_t line, size_t tlen, size_t *used)
{
	struct xkv_stream_mget *mg = &st->mg;
	int err, kerr;

	*used = 0;
	if (!mg->on) {
		if (!parts_begin(c, mg, p, line, &kerr))
			return -1;
		/* the first part's parse: the command word and gat's exptime */
		err = part_parse(c, mg, p);
		*used = tlen;
		if (!err && slow_cmd_writes(c) && !rt->write) {
			STAT(c, drop_write_acl);
			memset(mg, 0, sizeof(*mg));
			return XKV_STREAM_CLOSE;
		}
		c->may_write = rt->write;
		STAT(c, requests);
		STAT(c, replies);
		if (err || kerr) {
			memset(mg, 0, sizeof(*mg));
			if (err) {
				slow_run(c, err);
			} else {
				count_cmd(c);
				reply_err(c, kerr);
			}
			return XKV_STREAM_MORE;
		}
		*used = 0;
	} else if (part_parse(c, mg, p)) {
		return XKV_STREAM_CLOSE; /* the same bytes parsed before: cannot be */
	}
	for (;;) {
		c->mg = mg;
		c->mg_max = st->out_max;
		mg->paused = false;
		slow_run(c, XKV_OK);
		mg->on = true;
		if (mg->paused)
			return XKV_STREAM_MORE;
		if (mg->last)
			break;
		part_next(mg, p);
		if (st->out_max && c->out->len >= st->out_max)
			return XKV_STREAM_MORE;
		if (part_parse(c, mg, p))
			return XKV_STREAM_CLOSE;
	}
	c->mg = NULL;
	memset(mg, 0, sizeof(*mg));
	*used = tlen;
	return XKV_STREAM_MORE;
}
