// SPDX-License-Identifier: MIT
/* The meta commands mg, ms, md, ma, me (mn is answered by dispatch.c):
 * their flags, their keys (base64 with the flag b: lib/base64.c), and
 * their return flags, as memcached 1.6 answers them. */
#include "engine_int.h"
#include "base64.h"
#include <stdio.h>
#include <stdlib.h>

#define R_INVALID_FLAG "CLIENT_ERROR invalid flag\r\n"
#define R_BAD_TOKEN "CLIENT_ERROR bad token in command line format\r\n"
#define META_MAX_TOKENS 19       /* memcached: 20 with its end marker */
#define META_OPAQUE_MAX 32

/* meta_flags' answer to an opaque token too long: the commands' own check,
 * told apart from the flag errors (md and ma answer those alike) */
static const char R_OPAQUE_LONG[] = "CLIENT_ERROR opaque token too long\r\n";

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

/* The flags from token first on, as memcached 1.6.18's _meta_flag_preparse
 * reads them for all four commands: every letter any meta command takes
 * is accepted by each (each then uses its own and ignores the rest), by
 * its first byte whatever follows it; a byte seen twice (or one >= 127)
 * and an unknown letter end the reading at once, a bad argument marks the
 * line wrong and reading goes on (the last such message stands; F's keeps
 * the command's own).  An opaque token too long is the command's own check,
 * after these.  NULL, or the error line. */
static const char *meta_flags(struct slow_cmd *c, __u32 first, struct mflags *f)
{
	const struct xkv_req *r = c->r;
	const char *bad = NULL, *opaque = NULL;
	bool has_error = false;
	__u64 v;

	memset(f, 0, sizeof(*f));
	if (r->ntok > META_MAX_TOKENS)
		return "CLIENT_ERROR options flags too long\r\n";
	for (__u32 t = first; t < r->ntok; t++) {
		const struct xkv_tok *tk = &r->tok[t];
		struct xkv_tok a = tok_arg(tk);
		__u8 ch = *tok_ptr(c, t);

		if (ch >= 127 || f->seen[ch])
			return "CLIENT_ERROR duplicate flag\r\n";
		f->seen[ch] = true;
		switch (ch) {
		case 'b': case 'l': case 'h': case 'P': case 'L': case 'k': case 's': case 't':
		case 'c': case 'f': case 'u': case 'I':
			break;
		case 'q': f->q = true; break;
		case 'v': f->v = true; break;
		case 'O':
			if (tk->len > META_OPAQUE_MAX)
				opaque = R_OPAQUE_LONG;
			break;
		case 'C':
			if (xkv_tok_u64(c->buf, &a, ~0ULL, &f->C))
				bad = R_BAD_TOKEN, has_error = true;
			else
				f->has_C = true;
			break;
		case 'D':
			if (xkv_tok_u64(c->buf, &a, ~0ULL, &f->D))
				bad = "CLIENT_ERROR invalid numeric delta value\r\n", has_error = true;
			else
				f->has_D = true;
			break;
		case 'J':
			if (xkv_tok_u64(c->buf, &a, ~0ULL, &f->J))
				bad = "CLIENT_ERROR invalid numeric initial value\r\n", has_error = true;
			else
				f->has_J = true;
			break;
		case 'T':
		case 'N':
		case 'R': {
			__s64 *n = ch == 'T' ? &f->T : ch == 'N' ? &f->N : &f->R;
			if (xkv_tok_s64(c->buf, &a, n) || *n < INT32_MIN || *n > INT32_MAX)
				bad = R_BAD_TOKEN, has_error = true;
			else
				*(ch == 'T' ? &f->has_T : ch == 'N' ? &f->has_N : &f->has_R) = true;
			break;
		}
		case 'F':
			if (xkv_tok_u64(c->buf, &a, 0xffffffffULL, &v)) {
				has_error = true;
			} else {
				f->F = (__u32)v;
				f->has_F = true;
			}
			break;
		case 'M':
			if (tk->len != 2)
				bad = "CLIENT_ERROR incorrect length for M token\r\n", has_error = true;
			else
				f->M = (char)c->buf[(tk->off + 1) & XKV_PMASK];
			break;
		default:
			return R_INVALID_FLAG;
		}
	}
	if (has_error)
		return bad ? bad : XKV_R_FORMAT;
	return opaque;
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
	/* any flag starting with b (memcached's preparse); me: b alone, second */
	bool me = r->op == XKV_OP_ME;
	for (__u32 t = 2; t < r->ntok && t < META_MAX_TOKENS && (!me || t == 2); t++)
		c->key_b |= *tok_ptr(c, t) == 'b' && (!me || r->tok[t].len == 1);
	if (!c->key_b) {
		e = key_verdict(c, 1);
	} else if (c->klen > XKV_KEY_MAX) {
		e = XKV_E_FORMAT;
	} else {
		/* base64: RFC 4648, the standard alphabet, padded (lib/base64.h) */
		int n = (int)xkv_b64_decode(c->key, c->klen, c->key_buf, sizeof(c->key_buf),
					    XKV_B64_STRICT);
		if (n <= 0) { /* md and ma answer every flag error so, as memcached */
			bool md_ma = r->op == XKV_OP_MD || r->op == XKV_OP_MA;
			*err = reply_err_line(c, me      ? XKV_R_FORMAT
						 : md_ma ? "CLIENT_ERROR invalid or duplicate flag\r\n"
							 : "CLIENT_ERROR error decoding key\r\n");
			return -1;
		}
		c->key = c->key_buf;
		c->klen = (__u32)n;
		e = xkv_key_rule(&c->s->cfg, c->key, c->klen);
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
	char enc[XKV_B64_LEN(sizeof(c->key_buf))];

	if (!c->key_b)
		return xkv_buf_put(c->out, c->key, c->klen);
	return xkv_buf_put(c->out, enc, xkv_b64_encode(enc, c->key, c->klen));
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
		case 'h': err = buf_printf(c->out, " h%d", !!(e->klen & XKV_ENT_FETCHED)); break;
		case 'l':
			err = buf_printf(c->out, " l%llu", (unsigned long long)xkv_access_age(
								e->klen, e->wtime_ns, xkv_now_ns()));
			break;
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
 * h (read before: 0 or 1), l (seconds since the last access), u (this read
 * leaves the item's read state as it is: entry.h), T<ttl> (touch: new expiry, cas
 * kept), N<ttl> (a miss creates an empty item with that ttl and answers
 * for it with W: this client won the right to fill it), R<secs> (a hit
 * with less ttl left wins the token too).  A hit answers "VA <bytes>" with
 * v, else "HD", then the asked-for flags, then Z (the token went out
 * before), X (the item is stale: md I, ms I) and W (this client won; the
 * first to read a stale item wins too) as memcached orders them; a miss
 * "EN". */
int slow_cmd_mg(struct slow_cmd *c)
{
	struct mflags f;
	struct xkv_entry *e = NULL;
	int err;

	if (meta_key(c, &err))
		return err;
	const char *bad = meta_flags(c, 2, &f);
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
		else if (ret > 0) /* N on a key longer than the store's: not created */
			return answer_wr(c, ret);
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
		err = meta_ret(c, "ftcksOhl", e);
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
	/* the read's mark after the reply, which shows the state before it
	 * (memcached bumps a locked mg late); u: none */
	if (!err && !f.seen['u'])
		read_bump(c, key, klen, e->klen, e->wtime_ns);
	free(e);
	return err;
}

/* ms <key> <datalen> <flag>*\r\n<data>\r\n: F (client flags), T (ttl), C
 * (compare cas), M (mode: S set, E add, A append, P prepend, R replace), N
 * (append/prepend: create on a miss, with that ttl), I (with C: a cas
 * older than the item's stores the value anyway, stale, keeping the item's
 * ttl and token), q (no HD), and the return flags O, k, c (the new cas).
 * HD stored, NS not stored, EX cas differs, NF cas given and no item. */
int slow_cmd_ms(struct slow_cmd *c)
{
	struct xkv_req *r = c->r;
	struct mflags f;
	struct xkv_entry *e;
	int err;

	if (meta_key(c, &err))
		return err;
	const char *bad = meta_flags(c, 3, &f);
	if (bad && bad != R_OPAQUE_LONG)
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
	if (bad) /* memcached: after the mode */
		return reply_err_line(c, bad);
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
int slow_cmd_md(struct slow_cmd *c)
{
	struct mflags f;
	int err;

	if (meta_key(c, &err))
		return err;
	const char *bad = meta_flags(c, 2, &f);
	if (bad)
		return reply_err_line(c, bad == R_OPAQUE_LONG ? bad
						       : "CLIENT_ERROR invalid or duplicate flag\r\n");
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

/* ma's return flags: as meta_ret, but memcached 1.6.18 applies T, and N
 * to a vivified item, as it meets their tokens (a vivified item starts
 * with no ttl, a hit with its old one: before), so a t shows the ttl the
 * item had at its place. */
static int ma_ret(struct slow_cmd *c, const struct xkv_entry *e, bool created, __u64 before,
		  __u64 T, __u64 N)
{
	const struct xkv_req *r = c->r;
	__u64 cur = created ? 0 : before;

	for (__u32 t = 2; t < r->ntok; t++) {
		const __u8 *p = tok_ptr(c, t);
		int err = 0;
		if (*p == 'T')
			cur = T;
		else if (*p == 'N' && created)
			cur = N;
		else if (*p == 't')
			err = buf_printf(c->out, " t%lld", (long long)secs_left(cur));
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
int slow_cmd_ma(struct slow_cmd *c)
{
	struct mflags f;
	struct xkv_entry *e;
	int err;

	if (meta_key(c, &err))
		return err;
	const char *bad = meta_flags(c, 2, &f);
	if (bad)
		return reply_err_line(c, bad == R_OPAQUE_LONG ? bad
						       : "CLIENT_ERROR invalid or duplicate flag\r\n");
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
	/* of T and N on a created item the later token wins */
	w.created_keeps_ttl = f.has_T && f.has_N && flag_pos(c, 'N') > flag_pos(c, 'T');
	/* a t before T shows the ttl the item had: read it first (a write
	 * between the read and this one shows, as in mg) */
	__u64 before = 0;
	bool read_before = false;
	if (f.has_T && flag_pos(c, 't') && flag_pos(c, 't') < flag_pos(c, 'T')) {
		struct xkv_item *old = &c->sc->item;
		if (store_get(c, c->key, c->klen, old) == 1) {
			before = old->expire_ns;
			read_before = true;
		}
	}
	int ret = slow_write(c, c->key, c->klen, &w, &e);
	switch (ret) {
	case WR_STORED:
		err = 0;
		if (!read_before)
			before = w.created ? 0 : e->expire_ns; /* no T: the incr kept it */
		if (!f.q || w.created) {
			err = f.v ? buf_printf(c->out, "VA %u", w.num_len) : PUT_LIT(c->out, "HD");
			err = err || ma_ret(c, e, w.created, before, w.expire_ttl, w.expire_ns) ||
			      PUT_LIT(c->out, "\r\n");
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
 * "ME <key> exp=<seconds left, -1: none> la=<seconds since its last
 * access> cas=<cas> fetch=<yes|no> cls=0 size=<value bytes>" (there is no
 * slab class here: cls is fixed); a miss EN.  Not a read: no bump. */
int slow_cmd_me(struct slow_cmd *c)
{
	struct xkv_item *it = &c->sc->item;
	int err;

	if (meta_key(c, &err))
		return err;
	/* memcached reads b alone as the third word and ignores the rest */
	int ret = store_get(c, c->key, c->klen, it);
	if (ret < 0)
		return reply_store_errno(c, ret);
	if (ret == 0)
		return PUT_LIT(c->out, "EN\r\n");
	return PUT_LIT(c->out, "ME ") || meta_key_put(c) ||
	       buf_printf(c->out, " exp=%lld la=%llu cas=%llu fetch=%s cls=0 size=%u\r\n",
			  (long long)secs_left(it->expire_ns),
			  (unsigned long long)xkv_access_age(it->state, it->wtime_ns, xkv_now_ns()),
			  (unsigned long long)it->wtime_ns,
			  it->state & XKV_ENT_FETCHED ? "yes" : "no", it->len)
		       ? -1 : 0;
}
