/* SPDX-License-Identifier: MIT */
/* The request parser: one piece of portable C used by the XDP fast path
 * (compiled for BPF) and by the userspace slow path.  It reads a request
 * payload (after the 8-byte frame header) from a buffer of XKV_PARSE_SPAN
 * bytes; every index is masked so the verifier sees in-bounds reads.
 *
 * The byte scan runs through xkv_loop(): bpf_loop() in BPF (verified once,
 * inlined by the kernel), a plain for loop in userspace. */
#ifndef XDPKV_PARSE_H
#define XDPKV_PARSE_H

#include <linux/types.h>
#include "wire.h"

#include "parse_tok.h"

static inline int xkv_check_key(const struct xkv_req *r, __u32 t)
{
	if (t >= XKV_PARSE_TOKENS)
		return XKV_E_FORMAT;
	__u32 len = r->tok[t].len;
	/* over 250 bytes: memcached's answer; over the store's --key-size (not
	 * over 250): XKV_E_KEY_LONG, which the fast paths pass on and the slow
	 * path (key_cap 250) never sees: no item can have such a key */
	if (len > XKV_KEY_MAX)
		return XKV_E_FORMAT;
	if (len > r->key_cap)
		return XKV_E_KEY_LONG;
	if (t < 32 && (r->ctrl_mask & (1u << t)))
		return XKV_E_KEY_BAD;
	return XKV_OK;
}

static inline int xkv_fail(struct xkv_req *r, int err)
{
	r->err = err;
	r->op = XKV_OP_NONE;
	return err;
}

/* The command word of a command only the slow path serves (the fast path
 * passes it on).  Its own function: one more branch in xkv_parse. */
static __attribute__((noinline)) int xkv_parse_slow_op(const __u8 *buf, const struct xkv_tok *c)
{
#define XKV_C(s, op) if (xkv_tok_is(buf, c, s, sizeof(s) - 1)) return op
	XKV_C("add", XKV_OP_ADD);
	XKV_C("replace", XKV_OP_REPLACE);
	XKV_C("incr", XKV_OP_INCR);
	XKV_C("decr", XKV_OP_DECR);
	XKV_C("version", XKV_OP_VERSION);
	XKV_C("stats", XKV_OP_STATS);
	XKV_C("flush_all", XKV_OP_FLUSH_ALL);
	XKV_C("append", XKV_OP_APPEND);
	XKV_C("prepend", XKV_OP_PREPEND);
	XKV_C("cas", XKV_OP_CAS);
	XKV_C("gets", XKV_OP_GETS);
	XKV_C("gat", XKV_OP_GAT);
	XKV_C("gats", XKV_OP_GATS);
	XKV_C("touch", XKV_OP_TOUCH);
	XKV_C("verbosity", XKV_OP_VERBOSITY);
	XKV_C("mg", XKV_OP_MG);
	XKV_C("mn", XKV_OP_MN);
	XKV_C("ms", XKV_OP_MS);
	XKV_C("md", XKV_OP_MD);
	XKV_C("ma", XKV_OP_MA);
	XKV_C("me", XKV_OP_ME);
	XKV_C("shutdown", XKV_OP_SHUTDOWN);
	XKV_C("lru_crawler", XKV_OP_LRU_CRAWLER);
	XKV_C("slabs", XKV_OP_SLABS);
	XKV_C("bget", XKV_OP_GET); /* memcached keeps its ancient name of get */
#undef XKV_C
	return XKV_OP_NONE;
}

/* An unknown command line that memcached 1.6.18 takes for an HTTP request
 * (a browser made to post to the cache port): the last of its first 23
 * tokens starts with "HTTP/", and the command word reaches the end of
 * memcached's dispatch (2 bytes or more, not a meta word, not a letter
 * its other branches take, not one of its commands this store has not).
 * memcached closes the connection without a word; so do we. */
static __attribute__((noinline)) int xkv_http_line(const __u8 *buf, const struct xkv_req *r)
{
	if (!buf || !r || r->ntok == 0)
		return 0;
	const struct xkv_tok *c = &r->tok[0];
	if (c->len < 2)
		return 0;
	__u8 f = buf[c->off & XKV_PMASK];
	if (f == 'g' || f == 's' || f == 'a' || f == 'c' || f == 'i' || f == 'd' || f == 't' ||
	    (f == 'm' && c->len == 2) || xkv_tok_is(buf, c, "watch", 5) || xkv_tok_is(buf, c, "lru", 3))
		return 0;
	__u32 last = r->ntok < 23 ? r->ntok - 1 : 22;
	barrier_var(last); /* the check below stays, on the register indexed with (6.1) */
	if (last >= XKV_PARSE_TOKENS)
		return 0;
	const struct xkv_tok *t = &r->tok[last];
	if (t->len < 5)
		return 0;
	const char *h = "HTTP/";
	for (__u32 i = 0; i < 5; i++)
		if (buf[(t->off + i) & XKV_PMASK] != (__u8)h[i])
			return 0;
	return 1;
}

/* Parse one command starting at buf[0]; len is the bytes left in the
 * datagram.  Returns r->err.  r->key_cap / r->val_cap must be set. */
static __attribute__((noinline)) int xkv_parse(const __u8 *buf, __u32 len, struct xkv_req *r)
{
	struct xkv_scan s = { .buf = buf, .len = len, .req = r };
	__u32 key_cap = r->key_cap, val_cap = r->val_cap, binary = r->binary_keys;

	__builtin_memset(r, 0, sizeof(*r) - sizeof(r->tok));
	r->key_cap = key_cap;
	r->val_cap = val_cap;
	r->binary_keys = binary;

	if (len > XKV_PARSE_SPAN)
		len = s.len = XKV_PARSE_SPAN;
	xkv_loop((len + 7) / 8, xkv_scan_word, &s);
	if (r->done != 1)
		return xkv_fail(r, XKV_E_NO_CRLF);
	r->next = r->line_len + 2;
	if (r->ntok == 0)
		return xkv_fail(r, XKV_E_UNKNOWN);

	const struct xkv_tok *c = &r->tok[0];
	if (xkv_tok_is(buf, c, "get", 3))
		r->op = XKV_OP_GET;
	else if (xkv_tok_is(buf, c, "set", 3))
		r->op = XKV_OP_SET;
	else if (xkv_tok_is(buf, c, "delete", 6))
		r->op = XKV_OP_DELETE;
	else
		r->op = xkv_parse_slow_op(buf, c);
	/* read back from memory: in BPF an unknown value, so the verifier
	 * walks what follows once for all commands, not once per command */
	__u8 op = *(volatile __u8 *)&r->op;
	if (op == XKV_OP_NONE)
		return xkv_fail(r, xkv_http_line(buf, r) ? XKV_E_HTTP : XKV_E_UNKNOWN);
	int storage = op == XKV_OP_SET || op == XKV_OP_ADD || op == XKV_OP_REPLACE ||
		      op == XKV_OP_APPEND || op == XKV_OP_PREPEND || op == XKV_OP_CAS;

	__u32 n = r->ntok;
	__u32 last = n - 1;
	if (last >= XKV_PARSE_TOKENS)
		last = XKV_PARSE_TOKENS - 1;
	int last_noreply = n > 1 && xkv_tok_is(buf, &r->tok[last], "noreply", 7);

	if (op == XKV_OP_GET || op == XKV_OP_GETS || op == XKV_OP_GAT || op == XKV_OP_GATS) {
		/* get|gets <key>*, gat|gats <exptime> <key>* */
		__u32 first = op == XKV_OP_GAT || op == XKV_OP_GATS ? 2 : 1;
		r->key1 = first;
		/* memcached: a bare "get" or "gat" is ERROR; "gat <exptime>" with
		 * no key is an empty reply (END) */
		if (n < 2)
			return xkv_fail(r, XKV_E_UNKNOWN);
		__s64 wide;
		if (first == 2 && xkv_tok_mc_i32(buf, &r->tok[1], &r->exptime, &wide))
			return xkv_fail(r, XKV_E_EXPTIME);
		if (r->too_many)
			return XKV_OK; /* keys beyond tok[]: the caller decides */
		for (__u32 t = 1; t < XKV_PARSE_TOKENS && t < 32; t++) {
			if (t >= n)
				break;
			if (t < first)
				continue;
			int e = xkv_check_key(r, t);
			/* a key over 250 bytes after valid ones: memcached reads
			 * those first (a gat touches them), then answers the
			 * format error: the slow path's (the op kept; the fast
			 * paths pass XKV_E_KEY_LONG on) */
			if (e == XKV_E_FORMAT && t > first && r->tok[t].len > XKV_KEY_MAX) {
				r->err = XKV_E_KEY_LONG;
				return XKV_E_KEY_LONG;
			}
			if (e)
				return xkv_fail(r, e);
		}
		return XKV_OK;
	}
	/* more tokens than tok[] holds (the fast path's 24): the classic
	 * commands' word counts are then wrong (memcached: ERROR); the others
	 * go to the slow path, which holds them all */
	int fixed = storage || op == XKV_OP_DELETE || op == XKV_OP_INCR || op == XKV_OP_DECR ||
		    op == XKV_OP_TOUCH || op == XKV_OP_VERBOSITY || op == XKV_OP_FLUSH_ALL;
	if (r->too_many)
		return fixed ? xkv_fail(r, XKV_E_UNKNOWN) : XKV_OK;

	if (op == XKV_OP_DELETE) {
		/* delete <key> [0] [noreply]: memcached 1.6.18 answers other
		 * word counts ERROR, other third and fourth words its usage line;
		 * "delete noreply" deletes the key "noreply", with a reply */
		if (n < 2 || n > 4)
			return xkv_fail(r, XKV_E_UNKNOWN);
		int nr = n > 2 && last_noreply;
		__u32 extra = n - 2 - (__u32)nr;
		if (extra > 1 || (extra == 1 && !xkv_tok_is(buf, &r->tok[2], "0", 1)))
			return xkv_fail(r, XKV_E_DEL_USAGE);
		r->noreply = nr;
		int e = xkv_check_key(r, 1);
		return e ? xkv_fail(r, e) : XKV_OK;
	}

	if (storage) {
		/* <cmd> <key> <flags> <exptime> <bytes> [<cas unique>] [noreply]\r\n<data>\r\n
		 * as memcached 1.6.18 reads it: another word count is ERROR (and
		 * the data block, if any, is read as commands); the word after
		 * <bytes> (<cas unique>) is noreply or ignored; flags are
		 * strtoul's, cut to 32 bits; exptime strtol's, cut to 32 bits;
		 * <bytes> a number from 0 to INT_MAX - 2 (memcached cuts a wider
		 * one to 32 bits, so 4294967300 reads as 4: not copied) */
		__u64 v;
		__s64 b, wide;
		__u32 is_cas = op == XKV_OP_CAS;
		if (n != 5 + is_cas && n != 6 + is_cas)
			return xkv_fail(r, XKV_E_UNKNOWN);
		int e = xkv_check_key(r, 1);
		if (e)
			return xkv_fail(r, e);
		if (xkv_tok_mc_u64(buf, &r->tok[2], &v))
			return xkv_fail(r, XKV_E_FORMAT);
		r->flags = (__u32)v;
		if (xkv_tok_mc_i32(buf, &r->tok[3], &r->exptime, &wide))
			return xkv_fail(r, XKV_E_FORMAT);
		if (xkv_tok_mc_i32(buf, &r->tok[4], &b, &wide) || wide != b || b < 0 || b > 0x7ffffffdLL)
			return xkv_fail(r, XKV_E_FORMAT);
		r->bytes = (__u32)b;
		if (is_cas && xkv_tok_mc_u64(buf, &r->tok[5], &r->num))
			return xkv_fail(r, XKV_E_FORMAT);
		r->noreply = n == 6 + is_cas && last_noreply;
		r->data_off = r->line_len + 2;
		if (r->bytes > val_cap)
			return xkv_fail(r, XKV_E_TOO_LARGE);
		__u32 end = r->data_off + r->bytes; /* where \r\n must be */
		if ((__u64)end + 2 > len || buf[end & XKV_PMASK] != '\r' ||
		    buf[(end + 1) & XKV_PMASK] != '\n')
			return xkv_fail(r, XKV_E_DATA);
		r->next = end + 2;
		return XKV_OK;
	}

	if (op == XKV_OP_INCR || op == XKV_OP_DECR) {
		/* incr <key> <value> [noreply]; memcached: other counts are ERROR,
		 * and a fourth word other than noreply is ignored */
		if (n != 3 && n != 4)
			return xkv_fail(r, XKV_E_UNKNOWN);
		int e = xkv_check_key(r, 1);
		if (e)
			return xkv_fail(r, e);
		if (xkv_tok_mc_u64(buf, &r->tok[2], &r->num))
			return xkv_fail(r, XKV_E_DELTA);
		r->noreply = n == 4 && last_noreply;
		return XKV_OK;
	}
	if (op == XKV_OP_MG) {
		/* mg <key> <flag>*: the slow path reads the flags */
		if (n < 2)
			return xkv_fail(r, XKV_E_FORMAT);
		int e = xkv_check_key(r, 1);
		return e ? xkv_fail(r, e) : XKV_OK;
	}
	if (op == XKV_OP_TOUCH) {
		/* touch <key> <exptime> [noreply]; memcached: other counts are
		 * ERROR, a fourth word other than noreply is ignored */
		if (n != 3 && n != 4)
			return xkv_fail(r, XKV_E_UNKNOWN);
		int e = xkv_check_key(r, 1);
		if (e)
			return xkv_fail(r, e);
		__s64 wide;
		if (xkv_tok_mc_i32(buf, &r->tok[2], &r->exptime, &wide))
			return xkv_fail(r, XKV_E_EXPTIME);
		r->noreply = n == 4 && last_noreply;
		return XKV_OK;
	}
	if (op == XKV_OP_VERBOSITY) {
		/* verbosity <level> [noreply]: memcached ignores the level's
		 * value and a third word other than noreply, but not a level
		 * that is no number; "verbosity" alone is ERROR, "verbosity
		 * noreply" silent (its level is no number, the error unsaid) */
		__u64 level;
		if (n < 2 || n > 3)
			return xkv_fail(r, XKV_E_UNKNOWN);
		if (xkv_tok_mc_u64(buf, &r->tok[1], &level))
			return xkv_fail(r, XKV_E_FORMAT);
		r->noreply = last_noreply;
		return XKV_OK;
	}
	if (op == XKV_OP_FLUSH_ALL) {
		/* flush_all [delay] [noreply], as memcached reads it: more words
		 * are ERROR; a delay that is no number is the exptime error, a
		 * negative one is now, and a word after the delay other than
		 * noreply is ignored */
		if (n > 3)
			return xkv_fail(r, XKV_E_UNKNOWN);
		if (n != 1 + (__u32)last_noreply) {
			__s64 d, wide;
			if (xkv_tok_mc_i32(buf, &r->tok[1], &d, &wide))
				return xkv_fail(r, XKV_E_EXPTIME);
			r->num = d < 0 ? 0 : d > 0xffffffffLL ? 0xffffffffULL : (__u64)d;
		}
		r->noreply = last_noreply;
		return XKV_OK;
	}
	return XKV_OK; /* version, stats, shutdown, lru_crawler [words]: the slow path's */
}

/* Does a command line that xkv_parse answered XKV_E_UNKNOWN read as a reply?
 * Its first word is one only a server says (memcached's reply lines, the
 * meta protocol's return codes) or a number (an incr/decr reply).  Answering
 * it with ERROR is how two servers are made to talk to each other forever
 * (the "loop DoS" class, CVE-2024-2169), so both paths stay silent.
 * Commands are lower case; these words are not. */
static __attribute__((noinline)) int xkv_reply_shaped(const __u8 *buf, const struct xkv_req *r)
{
	if (!buf || !r || r->ntok == 0)
		return 0;
	const struct xkv_tok *t = &r->tok[0];
	__u64 v;
	if (t->len == 0)
		return 0;
	__u8 c = buf[t->off & XKV_PMASK];
	if (c >= '0' && c <= '9') /* up to 20 digits: any u64 */
		return xkv_tok_u64(buf, t, ~0ULL, &v) == 0;
	if (c < 'A' || c > 'Z' || t->len > 12)
		return 0;
#define XKV_W(s) xkv_tok_is(buf, t, s, sizeof(s) - 1)
	switch (t->len) {
	case 2:
		return XKV_W("OK") || XKV_W("HD") || XKV_W("VA") || XKV_W("EN") || XKV_W("NF") ||
		       XKV_W("NS") || XKV_W("EX") || XKV_W("MN") || XKV_W("ME");
	case 3: return XKV_W("END");
	case 4: return XKV_W("STAT") || XKV_W("ITEM");
	case 5: return XKV_W("ERROR") || XKV_W("VALUE") || XKV_W("RESET");
	case 6: return XKV_W("STORED") || XKV_W("EXISTS") || XKV_W("ERROR:"); /* shutdown's */
	case 7: return XKV_W("DELETED") || XKV_W("TOUCHED") || XKV_W("VERSION");
	case 8: return XKV_W("BADCLASS"); /* lru_crawler's */
	case 9: return XKV_W("NOT_FOUND");
	case 10: return XKV_W("NOT_STORED");
	case 12: return XKV_W("CLIENT_ERROR") || XKV_W("SERVER_ERROR");
	}
#undef XKV_W
	return 0;
}

/* Reply line for a parser or store verdict. */
static inline const char *xkv_err_line(int err)
{
	switch (err) {
	case XKV_E_UNKNOWN: return XKV_R_ERROR;
	case XKV_E_FORMAT: return XKV_R_FORMAT;
	case XKV_E_KEY_LONG: return XKV_R_KEY_LONG;
	case XKV_E_KEY_BAD: return XKV_R_KEY_BAD;
	case XKV_E_DATA: return XKV_R_DATA;
	case XKV_E_NO_CRLF: return XKV_R_NO_CRLF;
	case XKV_E_MULTI_DGRAM: return XKV_R_MULTI_DGRAM;
	case XKV_E_TOO_LARGE: return XKV_R_TOO_LARGE;
	case XKV_E_EXPTIME: return XKV_R_EXPTIME;
	case XKV_E_OOM: return XKV_R_OOM;
	case XKV_E_DEL_USAGE: return XKV_R_DEL_USAGE;
	case XKV_E_HTTP: return ""; /* nothing: the connection is closed */
	case XKV_E_DELTA: return XKV_R_DELTA;
	}
	return XKV_R_ERROR;
}

struct xkv_qget_walk {
	const __u8 *buf;
	__u64 *key;
	__u32 klen, bad;
};

/* One 8-byte word of the key (i) into key[i]: bytes past the key zero,
 * bad set at a special byte inside it.  An xkv_loop step: verified once,
 * whatever the key's length. */
static long xkv_qget_word(__u32 i, void *v)
{
	struct xkv_qget_walk *c = v;
	__u32 klen = c->klen;
	__u64 w = 0;

	if (i >= (XKV_KEY_MAX + 7) / 8)
		return 1;
	if (i * 8 < klen) {
		__builtin_memcpy(&w, &c->buf[(4 + i * 8) & XKV_PMASK], 8);
		__u32 rem = klen - i * 8;
		if (rem < 8) { /* bytes past the key: zero in key[], plain here */
			__u64 m = (1ULL << (rem * 8)) - 1;
			w &= m;
			if (xkv_word_special(w | (0x4141414141414141ULL & ~m))) {
				c->bad = 1;
				return 1;
			}
		} else if (xkv_word_special(w)) {
			c->bad = 1;
			return 1;
		}
	}
	c->key[i] = w;
	return 0;
}

/* The commonest request, recognised without the tokenizer: is buf[0 .. len)
 * exactly "get <key>\r\n" with one key of 1 .. key_cap plain bytes (none
 * below 0x21, no DEL)?  Returns the key's length (it starts at buf[4]) and
 * leaves the key in key[], zero padded to key_size bytes (a multiple of 8,
 * at least key_cap); 0 when xkv_parse must decide (key[] is then undefined).
 * Where it returns k > 0, xkv_parse yields the same request: op GET, two
 * tokens, tok[1] = {4, k}, next = len (tests/test_parse.c checks that on
 * random and edge-case input, under both key rules).  Plain keys only,
 * which both rules take: a key with a control byte (--binary-keys, the
 * default) is the parser's.  buf must have 8 readable bytes past len. */
static inline __attribute__((always_inline)) __u32 xkv_quick_get(const __u8 *buf, __u32 len,
								 __u32 key_cap, __u64 *key,
								 __u32 key_size)
{
	if (len < 7 || len > 6 + XKV_KEY_MAX || len - 6 > key_cap)
		return 0;
	if (buf[0] != 'g' || buf[1] != 'e' || buf[2] != 't' || buf[3] != ' ' ||
	    buf[(len - 2) & XKV_PMASK] != '\r' || buf[(len - 1) & XKV_PMASK] != '\n')
		return 0;
	struct xkv_qget_walk c = { .buf = buf, .key = key, .klen = len - 6 };
	__u32 words = key_size / 8;
	if (words > (XKV_KEY_MAX + 7) / 8)
		words = (XKV_KEY_MAX + 7) / 8;
	xkv_loop(words, xkv_qget_word, &c);
	return c.bad ? 0 : c.klen;
}

/* Decimal digits at buf[*p ..] (1 .. 10 of them) into *v; *p moves past
 * them.  0 when there are none or more than 10. */
static inline __attribute__((always_inline)) int xkv_quick_num(const __u8 *buf, __u32 *p, __u64 *v)
{
	__u64 x = 0;
	__u32 i = *p, n = 0;
	for (__u32 k = 0; k < 11; k++) {
		__u8 c = buf[(i + k) & XKV_PMASK];
		if (c < '0' || c > '9')
			break;
		x = x * 10 + (c - '0');
		n++;
	}
	if (n == 0 || n > 10)
		return 0;
	*p = i + n;
	*v = x;
	return 1;
}

/* The commonest write, recognised without the tokenizer: is buf[0 .. len)
 * exactly one "set <key> <flags> <exptime> <bytes>[ noreply]\r\n<data>\r\n"
 * with a plain key of 1 .. key_cap bytes, single spaces, numbers of at most
 * 10 digits (exptime not negative), flags < 2^32 and bytes <= val_cap?  Then
 * it fills r as xkv_parse would (op SET, tok[1], flags, exptime, bytes,
 * noreply, data_off, line_len, next = len), packs the key into key[] as
 * xkv_quick_get does, and returns 1; otherwise 0 and xkv_parse decides
 * (tests/test_parse.c).  r->key_cap / val_cap must be set. */
static inline __attribute__((always_inline)) int xkv_quick_set(const __u8 *buf, __u32 len,
							       struct xkv_req *r, __u64 *key,
							       __u32 key_size)
{
	if (len < 14 || buf[0] != 's' || buf[1] != 'e' || buf[2] != 't' || buf[3] != ' ')
		return 0;
	for (__u32 i = 0; i < (XKV_KEY_MAX + 7) / 8; i++) {
		if (i * 8 >= key_size)
			break;
		*(volatile __u64 *)&key[i] = 0; /* volatile: no memset call in BPF */
	}
	/* the key: whole plain words, then the word holding its first
	 * special byte, which must be the space after it */
	__u32 klen = 0, found = 0;
	for (__u32 i = 0; i < (XKV_KEY_MAX + 7) / 8 + 1; i++) {
		__u64 w;
		__builtin_memcpy(&w, &buf[(4 + i * 8) & XKV_PMASK], 8);
		__u64 m = xkv_word_special(w);
		if (m) {
			/* the lowest flagged byte is the first special one */
			__u64 low = m & (~m + 1);
			__u32 at = (__u32)(((low >> 7) * 0x0001020304050607ULL) >> 56);
			klen = i * 8 + at;
			w &= at ? (1ULL << (at * 8)) - 1 : 0;
			found = 1;
		}
		if (i * 8 < key_size && i < (XKV_KEY_MAX + 7) / 8)
			key[i] = w;
		if (found)
			break;
	}
	if (!found)
		return 0;
	/* Read back from memory: in BPF an unknown value, so the verifier
	 * walks what follows once, not once per key length (the same for
	 * each number below: once, not once per digit count). */
	r->tok[1].len = klen;
	klen = *(volatile __u32 *)&r->tok[1].len;
	if (klen == 0 || klen > r->key_cap || klen > XKV_KEY_MAX || 4 + klen >= len)
		return 0;
	if (buf[(4 + klen) & XKV_PMASK] != ' ')
		return 0;
	__u32 p = 4 + klen + 1;
	__u64 flags, exptime, bytes;
	if (!xkv_quick_num(buf, &p, &flags) || flags > 0xffffffffULL)
		return 0;
	r->flags = (__u32)flags;
	r->line_len = p;
	flags = *(volatile __u32 *)&r->flags;
	p = *(volatile __u32 *)&r->line_len;
	if (p >= len || buf[p & XKV_PMASK] != ' ')
		return 0;
	p++;
	if (!xkv_quick_num(buf, &p, &exptime))
		return 0;
	r->exptime = (__s32)(__u32)exptime; /* memcached's int32, as xkv_parse */
	r->line_len = p;
	exptime = (__u64) * (volatile __s64 *)&r->exptime;
	p = *(volatile __u32 *)&r->line_len;
	if (p >= len || buf[p & XKV_PMASK] != ' ')
		return 0;
	p++;
	if (!xkv_quick_num(buf, &p, &bytes) || bytes > r->val_cap)
		return 0;
	r->bytes = (__u32)bytes;
	r->line_len = p;
	bytes = *(volatile __u32 *)&r->bytes;
	p = *(volatile __u32 *)&r->line_len;
	if (p >= len)
		return 0;
	__u32 noreply = 0;
	if (buf[p & XKV_PMASK] == ' ') {
		const char *nr = " noreply";
		for (__u32 k = 0; k < 8; k++)
			if (buf[(p + k) & XKV_PMASK] != (__u8)nr[k])
				return 0;
		p += 8;
		noreply = 1;
	}
	if (p + 2 > len || buf[p & XKV_PMASK] != '\r' || buf[(p + 1) & XKV_PMASK] != '\n')
		return 0;
	__u32 data_off = p + 2;
	if ((__u64)data_off + bytes + 2 != len || buf[(data_off + bytes) & XKV_PMASK] != '\r' ||
	    buf[(data_off + bytes + 1) & XKV_PMASK] != '\n')
		return 0;
	r->op = XKV_OP_SET;
	r->err = XKV_OK;
	r->noreply = noreply;
	r->too_many = 0;
	r->ntok = 5 + noreply;
	r->line_len = p;
	r->next = len;
	r->data_off = data_off;
	r->bytes = (__u32)bytes;
	r->flags = (__u32)flags;
	r->exptime = (__s64)exptime;
	r->tok[1].off = 4;
	r->tok[1].len = klen;
	return 1;
}

#endif
