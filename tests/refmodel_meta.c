// SPDX-License-Identifier: MIT
/* Reference model: the slow path's meta commands (mg, ms, md, ma, me). */
#include "refmodel_int.h"

/* ---- meta commands ---- */

struct mreq {
	const struct line *l;
	__u32 first;               /* first flag token */
	const __u8 *key;
	__u32 klen;
	int b;                     /* the key came base64-encoded */
	__u8 kbuf[XKV_KEY_MAX];
	int has[128];
	__u64 C, D, J;
	int64_t T, N, R;
	__u32 F;
	char M;
};

/* Read the key and flags.  NULL, or the error line to answer. */
static const char *meta_read(const struct rm_config *cfg, const struct line *l, __u32 first,
			     int me, int one_error, struct mreq *m)
{
	const char *dup = one_error ? "CLIENT_ERROR invalid or duplicate flag\r\n"
				    : "CLIENT_ERROR duplicate flag\r\n";
	const char *inval = one_error ? dup : "CLIENT_ERROR invalid flag\r\n";

	memset(m, 0, sizeof(*m));
	m->l = l;
	m->first = first;
	m->key = l->p[1];
	m->klen = l->len[1];
	/* b: any flag starting with it; me reads b alone, as its third word */
	for (__u32 i = first; i < l->n; i++)
		m->b |= me ? i == 2 && l->len[i] == 1 && l->p[i][0] == 'b' : l->p[i][0] == 'b';
	if (m->b) {
		/* base64 as RFC 4648 defines it: the standard alphabet, = padding */
		int n = (int)xkv_b64_decode(l->p[1], l->len[1], m->kbuf, sizeof(m->kbuf),
					    XKV_B64_STRICT);
		if (n <= 0)
			return me ? "CLIENT_ERROR bad command line format\r\n"
			       : one_error ? dup : "CLIENT_ERROR error decoding key\r\n";
		m->key = m->kbuf;
		m->klen = (__u32)n;
	}
	const char *kp = key_problem(cfg, m->key, m->klen);
	if (kp)
		return kp;
	if (me)
		return NULL; /* its other words are not read */
	/* every letter a meta command takes, for all four, each by its first
	 * byte: a repeat ends the reading, so does a letter not here; a bad
	 * argument is remembered and reading goes on (memcached 1.6.18) */
	const char *wrong = NULL, *opaque = NULL;
	int any_wrong = 0;
	for (__u32 i = first; i < l->n; i++) {
		__u8 f = l->p[i][0];
		const __u8 *a = l->p[i] + 1;
		__u32 an = l->len[i] - 1;
		if (f >= 127 || m->has[f])
			return dup;
		m->has[f] = 1;
		if (!f || !strchr("bNTRlOPLkstcfvhuqFCMJDI", f))
			return inval;
		const char *w = NULL;
		int bad = 0;
		if (f == 'C' && (bad = number(a, an, UINT64_MAX, &m->C)))
			w = "CLIENT_ERROR bad token in command line format\r\n";
		if (f == 'D' && (bad = number(a, an, UINT64_MAX, &m->D)))
			w = "CLIENT_ERROR invalid numeric delta value\r\n";
		if (f == 'J' && (bad = number(a, an, UINT64_MAX, &m->J)))
			w = "CLIENT_ERROR invalid numeric initial value\r\n";
		if ((f == 'T' || f == 'N' || f == 'R') &&
		    (bad = signed_number(a, an, f == 'T' ? &m->T : f == 'N' ? &m->N : &m->R)))
			w = "CLIENT_ERROR bad token in command line format\r\n";
		if (f == 'F') {
			__u64 v;
			if ((bad = number(a, an, UINT32_MAX, &v)) == 0)
				m->F = (__u32)v;
		}
		if (f == 'M') {
			if ((bad = an != 1))
				w = "CLIENT_ERROR incorrect length for M token\r\n";
			else
				m->M = (char)a[0];
		}
		if (f == 'O' && l->len[i] > 32)
			opaque = "CLIENT_ERROR opaque token too long\r\n";
		any_wrong |= bad;
		if (w)
			wrong = w;
	}
	if (any_wrong)
		return one_error ? dup : wrong ? wrong : "CLIENT_ERROR bad command line format\r\n";
	return opaque;
}

/* meta_read, answering its error: 1 when answered */
static int meta_begin(struct rm_store *s, const struct line *l, __u32 first, int me,
		      int one_error, struct mreq *m, struct rm_text *t)
{
	const char *err = meta_read(&s->cfg, l, first, me, one_error, m);
	if (err)
		out_str(t, err);
	return err != NULL;
}

static void meta_key_out(struct rm_text *t, const struct mreq *m)
{
	char enc[XKV_B64_LEN(XKV_KEY_MAX)];

	if (m->b)
		out_put(t, enc, xkv_b64_encode(enc, m->key, m->klen));
	else
		out_put(t, m->key, m->klen);
}

/* code, then the return flags of `which` the request asked for, in its
 * order (it NULL: only O and k), then \r\n */
/* the token of a meta command's first flag ch (0: none) */
static __u32 flag_at(const struct mreq *m, char ch)
{
	for (__u32 i = m->first; i < m->l->n; i++)
		if (m->l->len[i] && m->l->p[i][0] == (__u8)ch)
			return i;
	return 0;
}

static void meta_out(struct rm_text *t, const char *code, const char *which, const struct mreq *m,
		     const struct rm_item *it, int64_t now, const char *tail)
{
	const struct line *l = m->l;
	out_str(t, code);
	for (__u32 i = m->first; i < l->n; i++) {
		__u8 f = l->p[i][0];
		if (!strchr(which, f) || (!it && f != 'O' && f != 'k' && f != 'c'))
			continue;
		out_str(t, " ");
		if (f == 'O') {
			out_put(t, l->p[i], l->len[i]);
			continue;
		}
		out_put(t, &f, 1);
		switch (f) {
		case 'f': out_u64(t, it->flags); break;
		case 'h': out_u64(t, (__u64)it->fetched); break;
		case 'l': out_u64(t, 0); break; /* compared as a number of any value */
		case 's': out_u64(t, it->len); break;
		case 'c': out_u64(t, it ? it->cas : 0); break; /* ms's refusals: c0 (memcached) */
		case 't': out_s64(t, it->expire == RM_NEVER ? -1 : it->expire - now); break;
		case 'k':
			meta_key_out(t, m);
			if (m->b)
				out_str(t, " b");
			break;
		}
	}
	if (tail)
		out_str(t, tail);
	out_str(t, "\r\n");
}

static void meta_value(struct rm_text *t, const struct rm_item *it)
{
	out_put(t, it->val, it->len);
	out_str(t, "\r\n");
}

int model_mg(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t)
{
	struct mreq m;
	if (meta_begin(s, l, 2, 0, 0, &m, t))
		return 0;
	struct rm_item *it = present(s, m.key, m.klen, now);
	int won = 0;
	if (!it && m.has['N']) { /* vivify: an empty item, flags 0, its token sent */
		it = model_store(s, m.key, m.klen, 0, expiry(m.N, now), "", 0, now);
		won = 1;
	}
	if (!it) {
		if (!m.has['q'])
			meta_out(t, "EN", "Ok", &m, NULL, now, NULL); /* O and k on a miss too */
		return 0;
	}
	/* a new ttl, the cas kept; on an item N made, the later of T and N
	 * wins (memcached applies them where their tokens stand) */
	if (m.has['T'] && !(won && flag_at(&m, 'N') > flag_at(&m, 'T')))
		it->expire = expiry(m.T, now);
	if (won && new_cas(s, m.key, m.klen, 0, cas, arg, t, now))
		return -1;
	/* the token: to the first to read a stale item, or one with less ttl
	 * left than R; Z to everyone after */
	int z = it->won && !won, x = it->stale;
	int ending = it->expire != RM_NEVER && (it->expire == RM_EXPIRED || it->expire - now < m.R);
	if (!it->won && (it->stale || (m.has['R'] && ending)))
		won = 1;
	if (won)
		it->won = 1;
	char tail[8] = "";
	snprintf(tail, sizeof(tail), "%s%s%s", z ? " Z" : "", x ? " X" : "", won ? " W" : "");
	char code[24] = "HD";
	if (m.has['v'])
		snprintf(code, sizeof(code), "VA %u", it->len);
	meta_out(t, code, "ftcksOhl", &m, it, now, tail);
	if (m.has['v'])
		meta_value(t, it);
	if (!m.has['u']) /* the read, after the reply that shows the state before it */
		it->fetched = 1;
	return 0;
}

int model_ms(struct rm_store *s, const struct line *l, const __u8 *data, int64_t now,
		    rm_cas_fn cas, void *arg, struct rm_text *t)
{
	struct mreq m;
	__u64 bytes;
	if (l->n < 3 || number(l->p[2], l->len[2], 0x7ffffffd, &bytes))
		return model_fault(t, "model: a malformed ms line", l);
	const char *err = meta_read(&s->cfg, l, 3, 0, 0, &m);
	char mode = m.M; /* upper case only (memcached 1.6.18) */
	/* the mode is checked before the opaque token's length */
	if ((!err || !strncmp(err, "CLIENT_ERROR opaque", 19)) && m.M && !strchr("SEAPR", mode))
		err = "CLIENT_ERROR invalid mode for ms M token\r\n";
	if (err) {
		out_str(t, err);
		return 0;
	}
	struct rm_item *it = present(s, m.key, m.klen, now);
	__u64 before = it ? it->cas : 0;
	int cas_given = m.has['C'] && mode != 'E'; /* add with a cas is an add */
	const char *fail = NULL;

	if (mode == 'E' && it)
		fail = "NS";
	else if ((mode == 'R' || mode == 'A' || mode == 'P') && !it && !(m.has['N'] && mode != 'R'))
		fail = cas_given && mode == 'R' ? "NF" : "NS";
	else if (cas_given && !it && (mode == 0 || mode == 'S'))
		fail = "NF";
	/* I: in set and replace modes a cas older than the item's still
	 * stores, stale, keeping the item's ttl and token */
	int stale = cas_given && it && it->cas != m.C && m.has['I'] && m.C < it->cas &&
		    (mode == 0 || mode == 'S' || mode == 'R');
	if (!fail && cas_given && it && it->cas != m.C && !stale)
		fail = "EX";
	if (fail) {
		meta_out(t, fail, "Okc", &m, NULL, now, NULL);
		return 0;
	}
	if ((mode == 'A' || mode == 'P') && it) {
		if (it->len + bytes > s->cfg.val_cap) {
			out_str(t, "SERVER_ERROR object too large for cache\r\n");
			return 0;
		}
		__u8 *v = malloc(it->len + bytes + 1);
		int app = mode == 'A';
		memcpy(v + (app ? 0 : bytes), it->val, it->len);
		memcpy(v + (app ? it->len : 0), data, bytes);
		it = model_store(s, m.key, m.klen, it->flags, it->expire, v, it->len + (__u32)bytes, now);
		free(v);
	} else if (stale) {
		int64_t expire = it->expire;
		int won = it->won;
		it = model_store(s, m.key, m.klen, m.F, 0, data, (__u32)bytes, now);
		it->expire = expire;
		it->stale = 1;
		it->won = won;
	} else {
		/* append/prepend that vivify: N's ttl; else T's (none: never) */
		int64_t ttl = (mode == 'A' || mode == 'P') ? m.N : m.has['T'] ? m.T : 0;
		it = model_store(s, m.key, m.klen, m.F, expiry(ttl, now), data, (__u32)bytes, now);
	}
	if (new_cas(s, m.key, m.klen, before, cas, arg, t, now))
		return -1;
	if (!m.has['q'])
		meta_out(t, "HD", "Okc", &m, it, now, NULL);
	return 0;
}

int model_md(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t)
{
	struct mreq m;
	if (meta_begin(s, l, 2, 0, 1, &m, t))
		return 0;
	struct rm_item *it = present(s, m.key, m.klen, now);
	if (it && m.has['C'] && it->cas != m.C) {
		meta_out(t, "EX", "Ok", &m, NULL, now, NULL);
		return 0;
	}
	if (it && m.has['I']) { /* invalidate: stale, a new cas, the token free again */
		__u64 before = it->cas;
		it->stale = 1;
		it->won = 0;
		if (m.has['T'])
			it->expire = expiry(m.T, now);
		if (new_cas(s, m.key, m.klen, before, cas, arg, t, now))
			return -1;
	} else if (!m.has['I']) { /* T without I: ignored */
		struct rm_item *any = find(s, m.key, m.klen);
		if (any)
			drop(s, any);
	}
	if (!m.has['q'] || !it) /* memcached 1.6.18: q hides HD, not NF */
		meta_out(t, it ? "HD" : "NF", "Ok", &m, NULL, now, NULL);
	return 0;
}

int model_ma(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t)
{
	struct mreq m;
	const char *err = meta_read(&s->cfg, l, 2, 0, 1, &m);
	if (!err && m.M && !strchr("ID+-", m.M)) /* upper case only (memcached 1.6.18) */
		err = "CLIENT_ERROR invalid mode for ma M token\r\n";
	if (err) {
		out_str(t, err);
		return 0;
	}
	int incr = !m.M || strchr("Ii+", m.M);
	__u64 delta = m.has['D'] ? m.D : 1;
	struct rm_item *it = present(s, m.key, m.klen, now);
	__u64 before = it ? it->cas : 0;

	if (!it && !m.has['N']) {
		meta_out(t, "NF", "Ok", &m, NULL, now, NULL);
		return 0;
	}
	if (it && !it->len) { /* memcached: an empty value is refused before the cas is compared */
		out_str(t, R_NON_NUMERIC_M);
		return 0;
	}
	if (it && m.has['C'] && m.C && it->cas != m.C) { /* C0 compares nothing */
		meta_out(t, "EX", "Ok", &m, NULL, now, NULL);
		return 0;
	}
	if (it) {
		if (model_arith(s, it, incr, delta, now)) {
			out_str(t, R_NON_NUMERIC_M);
			return 0;
		}
	} else { /* vivify with J (default 0), N's ttl */
		__u8 d[24];
		__u32 n;
		model_digits(m.J, d, &n);
		model_store(s, m.key, m.klen, 0, expiry(m.N, now), d, n, now);
	}
	it = find(s, m.key, m.klen);
	if (m.has['T'])
		it->expire = expiry(m.T, now);
	if (new_cas(s, m.key, m.klen, before, cas, arg, t, now))
		return -1;
	if (m.has['q'] && before) /* memcached 1.6.18: q hides an existing item's answer only */
		return 0;
	char code[24] = "HD";
	if (m.has['v'])
		snprintf(code, sizeof(code), "VA %u", digits_len(it));
	meta_out(t, code, "tcOk", &m, it, now, NULL);
	if (m.has['v']) {
		out_put(t, it->val, digits_len(it));
		out_str(t, "\r\n");
	}
	return 0;
}

int model_me(struct rm_store *s, const struct line *l, int64_t now, struct rm_text *t)
{
	struct mreq m;
	if (meta_begin(s, l, 2, 1, 0, &m, t))
		return 0;
	struct rm_item *it = present(s, m.key, m.klen, now);
	if (!it) {
		out_str(t, "EN\r\n");
		return 0;
	}
	out_str(t, "ME ");
	meta_key_out(t, &m);
	out_str(t, " exp=");
	out_s64(t, it->expire == RM_NEVER ? -1 : it->expire - now);
	out_str(t, " la=0 cas="); /* la: compared as a number of any value */
	out_u64(t, it->cas);
	out_str(t, it->fetched ? " fetch=yes cls=0 size=" : " fetch=no cls=0 size=");
	out_u64(t, it->len);
	out_str(t, "\r\n");
	return 0;
}
