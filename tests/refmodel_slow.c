// SPDX-License-Identifier: MIT
/* Reference model: the slow path's shared helpers, the classic commands
 * (get/gets/storage/incr/decr/touch/delete) and rm_slow_request. */
#include "refmodel_int.h"

/* ---- the slow path ------------------------------------------------------------
 *
 * The rules (memcached's doc/protocol.txt, as docs/protocol.md serves it):
 *  - An item reads as present while it lives; an expired one is absent to
 *    every command.  Every write that stores a value gives the item a new
 *    cas unique; touch, gat, gats and mg T change only its expiry.
 *  - append and prepend keep the item's flags and expiry; incr and decr
 *    too, and store the new number as its decimal digits (incr wraps at
 *    2^64, decr stops at 0); a value that is not a decimal number is a
 *    client error.
 *  - Errors are answered with noreply as well; noreply (and meta q) only
 *    hides a nominal answer.
 *  - The meta commands: a reply is a code, then the return flags the
 *    request asked for, in its order, each a space, the letter and its
 *    value (O: the token as sent; k: the key, in base64 followed by " b"
 *    when the request sent it so).  mg: HD or VA <bytes> on a hit (then the
 *    value), EN on a miss, which q hides; W when N made the item.  ms: HD,
 *    NS, EX, NF (q hides HD).  md: HD, NF (both hidden by q), EX.  ma: HD
 *    or VA with the number, NF, EX (q hides HD and VA).  Failures carry
 *    only O and k.
 *  - The meta flags each command takes; any other, a plain one with more
 *    characters, or one twice is a client error (md and ma say "invalid or
 *    duplicate flag" for every flag error). */

void rm_text_free(struct rm_text *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

void out_put(struct rm_text *t, const void *p, size_t n)
{
	if (t->len + n > t->cap) {
		t->cap = (t->len + n) * 2 + 64;
		t->p = realloc(t->p, t->cap);
		if (!t->p)
			abort();
	}
	memcpy(t->p + t->len, p, n);
	t->len += n;
}

void out_str(struct rm_text *t, const char *s)
{
	out_put(t, s, strlen(s));
}

void out_u64(struct rm_text *t, __u64 v)
{
	char d[24];
	size_t n;
	const char *p = decimal(v, d, &n);
	out_put(t, p, n);
}

void out_s64(struct rm_text *t, int64_t v)
{
	if (v < 0) {
		out_str(t, "-");
		out_u64(t, (__u64)-v);
	} else {
		out_u64(t, (__u64)v);
	}
}

int model_fault(struct rm_text *t, const char *why, const struct line *l)
{
	int n = snprintf(t->fault, sizeof(t->fault), "%s", why);
	if (l && l->n && n > 0 && (size_t)n < sizeof(t->fault))
		snprintf(t->fault + n, sizeof(t->fault) - (size_t)n, " (%.*s)", (int)l->len[0],
			 (const char *)l->p[0]);
	return -1;
}

/* the present item of key, or NULL (an expired one stays until replaced) */
struct rm_item *present(struct rm_store *s, const __u8 *k, __u32 n, int64_t now)
{
	struct rm_item *it = find(s, k, n);
	return it && alive(it, now) ? it : NULL;
}

/* A write gave key a new cas: the real store's, under the model's rule.
 * (An item stored already expired shows no cas to anyone: not checked.) */
int new_cas(struct rm_store *s, const __u8 *k, __u32 n, __u64 before, rm_cas_fn cas,
		   void *arg, struct rm_text *t, int64_t now)
{
	struct rm_item *it = find(s, k, n);
	__u64 v = cas(arg, k, n);
	if ((v == 0 || v == before) && it && alive(it, now)) {
		snprintf(t->fault, sizeof(t->fault), "a write of %.*s left its cas at %llu",
			 (int)n, (const char *)k, (unsigned long long)v);
		return -1;
	}
	if (it)
		it->cas = v;
	return 0;
}

/* Store a value (the item's cas: the caller's new_cas). expire: unix
 * seconds as rm_item holds it. */
struct rm_item *model_store(struct rm_store *s, const __u8 *k, __u32 n, __u32 flags,
				   int64_t expire, const void *val, __u32 len, int64_t now)
{
	if (put(s, k, n, flags, 0, val, len, now, NULL) != PUT_OK)
		return NULL;
	struct rm_item *it = find(s, k, n);
	it->expire = expire;
	return it;
}

/* a value as a number for incr/decr: decimal digits, fitting 64 bits */
/* memcached's safe_strtoull over the value and its \r\n: white space, a
 * sign, digits that fit 64 bits, then white space or the end ("7\rx" is
 * 7); a minus only on zero */
static int model_number(const struct rm_item *it, __u64 *v)
{
	const __u8 *p = it->val;
	__u32 n = it->len, i = 0, d0;
	int neg = 0;
	__u64 x = 0;
#define WS(ch) ((ch) == ' ' || ((ch) >= '\t' && (ch) <= '\r'))
	while (i < n && WS(p[i]))
		i++;
	if (i < n && (p[i] == '+' || p[i] == '-'))
		neg = p[i++] == '-';
	for (d0 = i; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		if (x > (UINT64_MAX - (__u64)(p[i] - '0')) / 10)
			return 1;
		x = x * 10 + (__u64)(p[i] - '0');
	}
	/* digits end at white space, a NUL or the value's end; at 2^63 and
	 * above a '-' before the first NUL refuses the number (memcached's
	 * safe_strtoull: strtoull, then strchr(str, '-')) */
	if (i == d0 || (i < n && p[i] != 0 && !WS(p[i])) || (neg && x))
		return 1;
	if (x > (__u64)INT64_MAX)
		for (__u32 k = 0; k < n && p[k]; k++)
			if (p[k] == '-')
				return 1;
#undef WS
	*v = x;
	return 0;
}

void model_digits(__u64 v, __u8 *d, __u32 *n)
{
	char tmp[24];
	size_t len;
	const char *p = decimal(v, tmp, &len);
	memcpy(d, p, len);
	*n = (__u32)len;
}

/* ---- classic commands ---- */

static int model_noreply(const struct line *l, __u32 fields)
{
	return l->n == fields + 1 && tok_eq(l, fields, "noreply");
}

static void model_answer(struct rm_text *t, int noreply, const char *s)
{
	if (!noreply)
		out_str(t, s);
}

static int model_get(struct rm_store *s, const struct line *l, int64_t now, struct rm_text *t)
{
	int gat = tok_eq(l, 0, "gat") || tok_eq(l, 0, "gats");
	int cas = tok_eq(l, 0, "gets") || tok_eq(l, 0, "gats");
	int64_t exptime = 0;

	if (gat && signed_number(l->p[1], l->len[1], &exptime))
		return model_fault(t, "model: a bad exptime", l);
	for (__u32 i = 1 + gat; i < l->n && i < TOK_MAX; i++) {
		struct rm_item *it = present(s, l->p[i], l->len[i], now);
		if (!it)
			continue;
		out_str(t, "VALUE ");
		out_put(t, it->key, it->klen);
		out_str(t, " ");
		out_u64(t, it->flags);
		out_str(t, " ");
		out_u64(t, it->len);
		if (cas) {
			out_str(t, " ");
			out_u64(t, it->cas);
		}
		out_str(t, "\r\n");
		out_put(t, it->val, it->len);
		out_str(t, "\r\n");
		it->fetched = 1;
		if (gat) /* after the read: a negative exptime shows it once */
			it->expire = expiry(exptime, now);
	}
	out_str(t, "END\r\n");
	return 0;
}

/* set add replace append prepend cas: <cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply] */
static int model_storage(struct rm_store *s, const struct line *l, const __u8 *data, int64_t now,
			 rm_cas_fn cas, void *arg, struct rm_text *t)
{
	int is_cas = tok_eq(l, 0, "cas");
	__u32 fields = 5 + is_cas;
	int noreply = model_noreply(l, fields);
	__u64 flags, bytes, want = 0;
	int64_t exptime;

	if ((l->n != fields && !noreply) || number(l->p[2], l->len[2], UINT32_MAX, &flags) ||
	    signed_number(l->p[3], l->len[3], &exptime) ||
	    number(l->p[4], l->len[4], UINT32_MAX, &bytes) ||
	    (is_cas && number(l->p[5], l->len[5], UINT64_MAX, &want)))
		return model_fault(t, "model: a malformed storage line", l);
	const __u8 *k = l->p[1];
	__u32 kn = l->len[1];
	struct rm_item *it = present(s, k, kn, now);
	__u64 before = it ? it->cas : 0;
	int app = tok_eq(l, 0, "append"), pre = tok_eq(l, 0, "prepend");

	if ((tok_eq(l, 0, "add") && it) || ((tok_eq(l, 0, "replace") || app || pre) && !it)) {
		model_answer(t, noreply, "NOT_STORED\r\n");
		return 0;
	}
	if (is_cas && (!it || it->cas != want)) {
		model_answer(t, noreply, it ? "EXISTS\r\n" : "NOT_FOUND\r\n");
		return 0;
	}
	if (app || pre) {
		if (it->len + bytes > s->cfg.val_cap) {
			/* noreply: not even the error (memcached) */
			model_answer(t, noreply, "SERVER_ERROR object too large for cache\r\n");
			return 0;
		}
		__u8 *v = malloc(it->len + bytes + 1);
		memcpy(v + (app ? 0 : bytes), it->val, it->len);
		memcpy(v + (app ? it->len : 0), data, bytes);
		model_store(s, k, kn, it->flags, it->expire, v, it->len + (__u32)bytes, now);
		free(v);
	} else {
		model_store(s, k, kn, (__u32)flags, expiry(exptime, now), data, (__u32)bytes, now);
	}
	if (new_cas(s, k, kn, before, cas, arg, t, now))
		return -1;
	model_answer(t, noreply, "STORED\r\n");
	return 0;
}

static int model_put_number(struct rm_store *s, struct rm_item *it, const __u8 *d, __u32 n,
			    int64_t now);

/* a number's digits, before the padding of an in-place incr/decr */
__u32 digits_len(const struct rm_item *it)
{
	__u32 n = it->len;
	while (n && it->val[n - 1] == ' ')
		n--;
	return n;
}

/* the number after incr/decr (or ma); 0 done, 1 non-numeric */
int model_arith(struct rm_store *s, struct rm_item *it, int incr, __u64 delta, int64_t now)
{
	__u64 v;
	__u8 d[24];
	__u32 n;
	if (model_number(it, &v))
		return 1;
	v = incr ? v + delta : v > delta ? v - delta : 0;
	model_digits(v, d, &n);
	if (n < it->len) { /* in place: padded with spaces to the old length */
		__u8 *padded = malloc(it->len);
		if (!padded)
			abort();
		memcpy(padded, d, n);
		memset(padded + n, ' ', it->len - n);
		int r = model_put_number(s, it, padded, it->len, now);
		free(padded);
		return r;
	}
	return model_put_number(s, it, d, n, now);
}

static int model_put_number(struct rm_store *s, struct rm_item *it, const __u8 *d, __u32 n,
			    int64_t now)
{
	/* memcached changes a number that fits in place: stale and the token
	 * stay; a longer number is a new item, without them */
	int keep = n <= it->len, stale = it->stale, won = it->won, fetched = it->fetched;
	it = model_store(s, it->key, it->klen, it->flags, it->expire, d, n, now);
	it->stale = keep && stale;
	it->won = keep && won;
	it->fetched = keep && fetched;
	return 0;
}

static int model_incr(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		      void *arg, struct rm_text *t)
{
	int noreply = model_noreply(l, 3);
	__u64 delta;
	if ((l->n != 3 && !noreply) || number(l->p[2], l->len[2], UINT64_MAX, &delta))
		return model_fault(t, "model: a malformed incr/decr", l);
	struct rm_item *it = present(s, l->p[1], l->len[1], now);
	if (!it) {
		model_answer(t, noreply, "NOT_FOUND\r\n");
		return 0;
	}
	__u64 before = it->cas;
	if (model_arith(s, it, tok_eq(l, 0, "incr"), delta, now)) {
		model_answer(t, noreply, R_NON_NUMERIC_M); /* noreply: no line at all */
		return 0;
	}
	if (new_cas(s, l->p[1], l->len[1], before, cas, arg, t, now))
		return -1;
	it = find(s, l->p[1], l->len[1]);
	if (!noreply) { /* the digits, not the padding */
		out_put(t, it->val, digits_len(it));
		out_str(t, "\r\n");
	}
	return 0;
}

static int model_touch(struct rm_store *s, const struct line *l, int64_t now, struct rm_text *t)
{
	int noreply = model_noreply(l, 3);
	int64_t exptime;
	if ((l->n != 3 && !noreply) || signed_number(l->p[2], l->len[2], &exptime))
		return model_fault(t, "model: a malformed touch", l);
	struct rm_item *it = present(s, l->p[1], l->len[1], now);
	if (it) {
		it->expire = expiry(exptime, now);
		it->fetched = 1; /* memcached's touch reads the item */
	}
	model_answer(t, noreply, it ? "TOUCHED\r\n" : "NOT_FOUND\r\n");
	return 0;
}

static int model_delete(struct rm_store *s, const struct line *l, int64_t now, struct rm_text *t)
{
	int noreply = model_noreply(l, 2);
	if (l->n != 2 && !noreply)
		return model_fault(t, "model: a malformed delete", l);
	struct rm_item *it = find(s, l->p[1], l->len[1]);
	int hit = it && alive(it, now);
	if (it)
		drop(s, it);
	model_answer(t, noreply, hit ? "DELETED\r\n" : "NOT_FOUND\r\n");
	return 0;
}

int rm_slow_request(struct rm_store *s, const __u8 *req, size_t len, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *out)
{
	const __u8 *eol = memchr(req, '\n', len);
	struct line l;

	out->fault[0] = 0;
	if (!eol || eol == req || eol[-1] != '\r')
		return model_fault(out, "model: no \\r\\n line", NULL);
	split(req, (__u32)(eol - 1 - req), &l);
	const __u8 *data = eol + 1;
	if (l.n == 0 || l.n > TOK_MAX)
		return model_fault(out, "model: an empty or long line", NULL);
	if ((tok_eq(&l, 0, "get") || tok_eq(&l, 0, "gets")) && l.n >= 2)
		return model_get(s, &l, now, out);
	if ((tok_eq(&l, 0, "gat") || tok_eq(&l, 0, "gats")) && l.n >= 3)
		return model_get(s, &l, now, out);
	if ((tok_eq(&l, 0, "set") || tok_eq(&l, 0, "add") || tok_eq(&l, 0, "replace") ||
	     tok_eq(&l, 0, "append") || tok_eq(&l, 0, "prepend") || tok_eq(&l, 0, "cas")) && l.n >= 5)
		return model_storage(s, &l, data, now, cas, arg, out);
	if ((tok_eq(&l, 0, "incr") || tok_eq(&l, 0, "decr")) && l.n >= 3)
		return model_incr(s, &l, now, cas, arg, out);
	if (tok_eq(&l, 0, "touch") && l.n >= 3)
		return model_touch(s, &l, now, out);
	if (tok_eq(&l, 0, "delete") && l.n >= 2)
		return model_delete(s, &l, now, out);
	if (tok_eq(&l, 0, "flush_all") && (l.n == 1 || (l.n == 2 && tok_eq(&l, 1, "noreply")))) {
		while (s->n)
			drop(s, &s->items[0]);
		free(s->sets); /* the bucketed layouts' flush resets the policy state */
		s->sets = NULL;
		model_answer(out, l.n == 2, "OK\r\n");
		return 0;
	}
	if (tok_eq(&l, 0, "verbosity") && (l.n == 2 || (l.n == 3 && tok_eq(&l, 2, "noreply")))) {
		model_answer(out, l.n == 3, "OK\r\n");
		return 0;
	}
	if (tok_eq(&l, 0, "mn")) {
		out_str(out, "MN\r\n");
		return 0;
	}
	if (l.n >= 2 && tok_eq(&l, 0, "mg"))
		return model_mg(s, &l, now, cas, arg, out);
	if (l.n >= 3 && tok_eq(&l, 0, "ms"))
		return model_ms(s, &l, data, now, cas, arg, out);
	if (l.n >= 2 && tok_eq(&l, 0, "md"))
		return model_md(s, &l, now, cas, arg, out);
	if (l.n >= 2 && tok_eq(&l, 0, "ma"))
		return model_ma(s, &l, now, cas, arg, out);
	if (l.n >= 2 && tok_eq(&l, 0, "me"))
		return model_me(s, &l, now, out);
	return model_fault(out, "model: a command it does not cover", &l);
}
