// SPDX-License-Identifier: MIT
/* Reference model: the fast path's text protocol (reply helpers, tokens,
 * get/set/delete and what it passes on or refuses). */
#include "refmodel_int.h"

/* ---- reply helpers ---------------------------------------------------------- */

void count(struct rm_result *r, enum xkv_stat st)
{
	r->delta.v[st]++;
}

void say(struct rm_result *r, const void *p, size_t n)
{
	if (r->text_len + n > sizeof(r->text))
		abort();
	memcpy(r->text + r->text_len, p, n);
	r->text_len += (__u32)n;
}

void say_str(struct rm_result *r, const char *s)
{
	say(r, s, strlen(s));
}

/* v in decimal at the end of d[24]; returns where it starts */
const char *decimal(__u64 v, char d[24], size_t *n)
{
	*n = 0;
	do {
		d[24 - 1 - (*n)++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return d + 24 - *n;
}

static void say_u32(struct rm_result *r, __u32 v)
{
	char d[24];
	size_t n;
	const char *p = decimal(v, d, &n);
	say(r, p, n);
}

/* one reply line: the fast path sends it (`replies` is counted once the
 * amplification cap has had its say) */
static void reply(struct rm_result *r, const char *line)
{
	r->text_len = 0;
	say_str(r, line);
	r->action = RM_XDP_TX;
}

/* An error of the command line with more of the datagram after it: the
 * slow path answers it and goes on with the next line, as memcached does
 * (after a bad data block or a value too large to keep, too). */
static int line_error_passes(struct rm_result *r, const char *line)
{
	if (!r->rest || !strcmp(line, XKV_R_DATA) || !strcmp(line, XKV_R_OOM))
		return 0;
	pass(r, XKV_STAT_pass_cmd);
	return 1;
}

static void client_error(struct rm_result *r, const char *line)
{
	if (line_error_passes(r, line))
		return;
	count(r, XKV_STAT_err_client);
	reply(r, line);
}

/* Passed on: the request is counted where it is answered (the slow path,
 * as memcached counts it: once), so what this path counted of it as a
 * command goes; the datagram (requests) and why it passed stay. */
void pass(struct rm_result *r, enum xkv_stat why)
{
	static const enum xkv_stat answered[] = {
		XKV_STAT_cmd_get, XKV_STAT_cmd_set, XKV_STAT_cmd_delete, XKV_STAT_cmd_other,
		XKV_STAT_get_keys, XKV_STAT_get_hits, XKV_STAT_get_misses, XKV_STAT_get_expired,
	};
	for (size_t i = 0; i < sizeof(answered) / sizeof(answered[0]); i++)
		r->delta.v[answered[i]] = 0;
	r->text_len = 0;
	r->action = RM_XDP_PASS;
	count(r, why);
}

void discard(struct rm_result *r, enum xkv_stat why)
{
	r->text_len = 0;
	r->action = RM_XDP_DROP;
	count(r, why);
}

void touch(struct rm_result *r, const __u8 *key, __u32 klen)
{
	if (r->ntouched < RM_TOUCHED_MAX && klen <= XKV_KEY_MAX) {
		memcpy(r->touched[r->ntouched].key, key, klen);
		r->touched[r->ntouched].klen = klen;
		r->ntouched++;
	}
}

/* ---- request text ----------------------------------------------------------- */

int tok_eq(const struct line *l, __u32 i, const char *s)
{
	return i < l->n && i < TOK_MAX && l->len[i] == strlen(s) && !memcmp(l->p[i], s, l->len[i]);
}

/* Strict unsigned decimal: digits only, value <= max. */
int number(const __u8 *p, __u32 n, __u64 max, __u64 *out)
{
	unsigned __int128 v = 0;
	if (n == 0 || n > 20)
		return -1;
	for (__u32 i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
		if (v > max)
			return -1;
	}
	*out = (__u64)v;
	return 0;
}

/* memcached's safe_strtoul / safe_strtoull: an optional sign, digits; a
 * '-' number is 2^64 less its magnitude, refused when that is negative as
 * an int64 (so -1 is refused, -0 is 0). */
int mc_unsigned(const __u8 *p, __u32 n, __u64 *out)
{
	__u32 sign = n > 1 && (p[0] == '+' || p[0] == '-');
	if (number(p + sign, n - sign, UINT64_MAX, out))
		return -1;
	if (sign && p[0] == '-') {
		*out = (__u64)0 - *out;
		return *out > (__u64)INT64_MAX ? -1 : 0;
	}
	return 0;
}

/* memcached's safe_strtol into an int32_t: strtol's range, then the low
 * 32 bits; *wide the value before the cut. */
int mc_int32(const __u8 *p, __u32 n, int64_t *out, int64_t *wide)
{
	__u64 v;
	__u32 sign = n > 1 && (p[0] == '+' || p[0] == '-');
	int neg = sign && p[0] == '-';
	if (number(p + sign, n - sign, neg ? (__u64)INT64_MAX + 1 : (__u64)INT64_MAX, &v))
		return -1;
	*wide = neg ? (int64_t)(0 - v) : (int64_t)v;
	*out = (int32_t)(uint32_t)(__u64)*wide;
	return 0;
}

int signed_number(const __u8 *p, __u32 n, int64_t *out)
{
	__u64 v;
	int neg = n > 1 && p[0] == '-';
	if (number(p + neg, n - neg, INT64_MAX, &v))
		return -1;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

const char RM_KEY_UNSTORABLE[] = "(a key longer than the store's)";

/* memcached's key rule (over 250 bytes its format error) plus the
 * configured cap (RM_KEY_UNSTORABLE); NULL when the key is fine */
const char *key_problem(const struct rm_config *c, const __u8 *k, __u32 n)
{
	if (n > XKV_KEY_MAX)
		return XKV_R_FORMAT;
	if (n > c->key_cap)
		return RM_KEY_UNSTORABLE;
	for (__u32 i = 0; i < n; i++)
		if (c->binary_keys ? k[i] == 0 : (k[i] <= ' ' || k[i] == 0x7f))
			return XKV_R_KEY_BAD;
	return NULL;
}

void split(const __u8 *p, __u32 n, struct line *l)
{
	__u32 i = 0;
	l->n = 0;
	while (i < n) {
		while (i < n && p[i] == ' ')
			i++;
		if (i == n)
			break;
		__u32 start = i;
		while (i < n && p[i] != ' ')
			i++;
		if (l->n < TOK_MAX) {
			l->p[l->n] = p + start;
			l->len[l->n] = i - start;
		}
		l->n++;
	}
}

/* A get hit on it: the layout's eviction state learns of it. */
void used(struct rm_store *s, struct rm_item *it)
{
	it->used = ++s->clock;
	it->fetched = 1;
	if (s->cfg.kind == RM_SET_ASSOC) {
		__u8 *ref = &set_state(s, set_of(s, it->key, it->klen))->ref[it->way];
		if (s->cfg.policy != RM_S3FIFO)
			*ref = 1;
		else if (*ref < 3)
			(*ref)++;
	}
}

static void do_get(struct rm_store *s, const struct line *l, int64_t now, struct rm_result *r)
{
	__u32 room = XKV_DGRAM_TEXT;

	r->text_len = 0;
	for (__u32 i = 1; i < l->n; i++) {
		touch(r, l->p[i], l->len[i]);
		count(r, XKV_STAT_get_keys);
		struct rm_item *it = find(s, l->p[i], l->len[i]);
		if (!it || !alive(it, now)) {
			if (it)
				count(r, XKV_STAT_get_expired);
			count(r, XKV_STAT_get_misses);
			continue;
		}
		/* "VALUE <key> <flags> <bytes>\r\n<data>\r\n", and END after all */
		struct rm_result tmp;
		tmp.text_len = 0;
		say_str(&tmp, XKV_R_VALUE);
		say(&tmp, it->key, it->klen);
		say_str(&tmp, " ");
		say_u32(&tmp, it->flags);
		say_str(&tmp, " ");
		say_u32(&tmp, it->len);
		say_str(&tmp, "\r\n");
		if (r->text_len + tmp.text_len + it->len + 2 + strlen(XKV_R_END) > room) {
			pass(r, XKV_STAT_pass_room);
			return;
		}
		count(r, XKV_STAT_get_hits);
		say(r, tmp.text, tmp.text_len);
		say(r, it->val, it->len);
		say_str(r, "\r\n");
		used(s, it);
	}
	say_str(r, XKV_R_END);
	r->action = RM_XDP_TX;
}

static void do_delete(struct rm_store *s, const struct line *l, int noreply, int64_t now,
		      struct rm_result *r)
{
	struct rm_item *it = find(s, l->p[1], l->len[1]);
	int found = it && alive(it, now);

	touch(r, l->p[1], l->len[1]);
	if (it)
		drop(s, it);
	count(r, found ? XKV_STAT_deletes : XKV_STAT_delete_misses);
	if (noreply) {
		discard(r, XKV_STAT_noreply);
		return;
	}
	reply(r, found ? XKV_R_DELETED : XKV_R_NOT_FOUND);
}

/* Check a storage command line and its data block.  Returns NULL when it
 * is well formed (filling flags/exptime/bytes), else the reply line. */
static const char *storage_problem(const struct rm_config *c, const struct line *l, int noreply,
				   const __u8 *data, __u32 avail, __u32 *flags, int64_t *exptime,
				   __u32 *bytes, enum xkv_stat *counter)
{
	__u64 v;
	const char *kp;

	int cas = tok_eq(l, 0, "cas"); /* cas <key> <flags> <exptime> <bytes> <unique> */

	int64_t b, wide;
	(void)noreply;
	/* memcached 1.6.18: 5 or 6 words (cas: 6 or 7), else ERROR; the last
	 * one noreply or ignored */
	*counter = XKV_STAT_err_unknown;
	if (l->n != 5u + (__u32)cas && l->n != 6u + (__u32)cas)
		return XKV_R_ERROR;
	*counter = XKV_STAT_err_client;
	if ((kp = key_problem(c, l->p[1], l->len[1])))
		return kp;
	if (mc_unsigned(l->p[2], l->len[2], &v))
		return XKV_R_FORMAT;
	*flags = (__u32)v; /* the low 32 bits, as memcached stores them */
	if (mc_int32(l->p[3], l->len[3], exptime, &wide))
		return XKV_R_FORMAT;
	/* 0 .. INT_MAX - 2; memcached cuts a wider number to 32 bits (not modelled: refused) */
	if (mc_int32(l->p[4], l->len[4], &b, &wide) || wide != b || b < 0 || b > INT32_MAX - 2)
		return XKV_R_FORMAT;
	*bytes = (__u32)b;
	if (cas && mc_unsigned(l->p[5], l->len[5], &v))
		return XKV_R_FORMAT;
	if (*bytes > c->val_cap) {
		*counter = XKV_STAT_err_too_large;
		return XKV_R_TOO_LARGE;
	}
	/* exactly <bytes> of data, then \r\n */
	if ((__u64)*bytes + 2 > avail || data[*bytes] != '\r' || data[*bytes + 1] != '\n')
		return XKV_R_DATA;
	return NULL;
}

/* The well-formedness rules of the commands the slow path serves: a bad
 * one is answered right here. */
static const char *slow_problem(const struct rm_config *c, const struct line *l, int noreply)
{
	__u64 v;
	if (tok_eq(l, 0, "incr") || tok_eq(l, 0, "decr")) {
		/* memcached: 3 or 4 words, else ERROR; a 4th other than noreply
		 * is ignored */
		if (l->n != 3 && l->n != 4)
			return XKV_R_ERROR;
		const char *kp = key_problem(c, l->p[1], l->len[1]);
		if (kp)
			return kp;
		return mc_unsigned(l->p[2], l->len[2], &v) ? XKV_R_DELTA : NULL;
	}
	if (tok_eq(l, 0, "flush_all")) {
		/* memcached: up to 3 words, else ERROR; the delay (unless the
		 * line is flush_all noreply) must be a signed number */
		int64_t d, wide;
		if (l->n > 3)
			return XKV_R_ERROR;
		if (l->n != 1u + (__u32)noreply && mc_int32(l->p[1], l->len[1], &d, &wide))
			return XKV_R_EXPTIME;
		return NULL;
	}
	/* memcached: whatever follows (lru_crawler: the slow path reads it) */
	if (tok_eq(l, 0, "version") || tok_eq(l, 0, "shutdown") || tok_eq(l, 0, "lru_crawler") ||
	    tok_eq(l, 0, "slabs"))
		return NULL;
	if (tok_eq(l, 0, "mg")) /* mg <key> <flag>*: the flags are the slow path's */
		return l->n < 2 ? XKV_R_FORMAT : key_problem(c, l->p[1], l->len[1]);
	/* stats takes anything; ms, md, ma, me: the slow path reads the rest
	 * (ms's data block too) */
	return NULL;
}

static int is_storage(const struct line *l)
{
	return tok_eq(l, 0, "set") || tok_eq(l, 0, "add") || tok_eq(l, 0, "replace") ||
	       tok_eq(l, 0, "append") || tok_eq(l, 0, "prepend") || tok_eq(l, 0, "cas");
}

/* gets <key>+, gat <exptime> <key>+, gats <exptime> <key>+ */
static int is_get_like(const struct line *l)
{
	return tok_eq(l, 0, "gets") || tok_eq(l, 0, "gat") || tok_eq(l, 0, "gats");
}

static int is_slow(const struct line *l)
{
	return tok_eq(l, 0, "add") || tok_eq(l, 0, "replace") || tok_eq(l, 0, "incr") ||
	       tok_eq(l, 0, "decr") || tok_eq(l, 0, "version") || tok_eq(l, 0, "stats") ||
	       tok_eq(l, 0, "flush_all") || tok_eq(l, 0, "append") || tok_eq(l, 0, "prepend") ||
	       tok_eq(l, 0, "cas") || is_get_like(l) || tok_eq(l, 0, "touch") ||
	       tok_eq(l, 0, "verbosity") || tok_eq(l, 0, "mg") || tok_eq(l, 0, "mn") ||
	       tok_eq(l, 0, "ms") || tok_eq(l, 0, "md") || tok_eq(l, 0, "ma") || tok_eq(l, 0, "me") ||
	       tok_eq(l, 0, "shutdown") || tok_eq(l, 0, "lru_crawler") || tok_eq(l, 0, "slabs");
}

/* Commands that change the store (gat and gats change expiries). */
static int is_write(const struct line *l)
{
	return tok_eq(l, 0, "incr") || tok_eq(l, 0, "decr") || tok_eq(l, 0, "flush_all") ||
	       tok_eq(l, 0, "touch") || tok_eq(l, 0, "gat") || tok_eq(l, 0, "gats") ||
	       tok_eq(l, 0, "ms") || tok_eq(l, 0, "md") || tok_eq(l, 0, "ma");
}

static void error_reply(struct rm_result *r, const char *line, enum xkv_stat counter)
{
	if (line_error_passes(r, line))
		return;
	count(r, counter);
	reply(r, line);
}

/* Would this word start a memcached reply (text or meta protocol), or is it
 * a number (an incr/decr reply)?  Exact case, the whole word. */
static int reply_word(const __u8 *w, __u32 n)
{
	static const char *const words[] = {
		"OK", "HD", "VA", "EN", "NF", "NS", "EX", "MN", "ME", "END", "STAT", "ITEM",
		"ERROR", "VALUE", "RESET", "STORED", "EXISTS", "DELETED", "TOUCHED", "VERSION",
		"NOT_FOUND", "NOT_STORED", "CLIENT_ERROR", "SERVER_ERROR", "ERROR:", "BADCLASS",
	};
	__u64 v;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (n == strlen(words[i]) && !memcmp(w, words[i], n))
			return 1;
	return number(w, n, UINT64_MAX, &v) == 0;
}

/* An unknown command: answered ERROR, unless it reads as a reply. */
/* memcached 1.6.18 closes a connection (a datagram: no answer) whose
 * unknown command line ends in a token starting "HTTP/" (the last of its
 * first 23), when the word reaches the end of its dispatch: 2 bytes or
 * more, not two bytes starting 'm', not starting with a letter one of its
 * command groups takes (g s a c i d t), not watch or lru. */
static int http_line(const struct line *l)
{
	if (l->n == 0 || l->len[0] < 2 || strchr("gsacidt", l->p[0][0]) ||
	    (l->p[0][0] == 'm' && l->len[0] == 2) || tok_eq(l, 0, "watch") || tok_eq(l, 0, "lru"))
		return 0;
	__u32 last = (l->n < 23 ? l->n : 23) - 1;
	return last < TOK_MAX && l->len[last] >= 5 && !memcmp(l->p[last], "HTTP/", 5);
}

static void unknown(struct rm_result *r, const struct line *l)
{
	if (l->n > 0 && reply_word(l->p[0], l->len[0])) {
		discard(r, XKV_STAT_drop_reply);
		return;
	}
	if (http_line(l)) { /* the slow path's: it sends nothing */
		pass(r, XKV_STAT_pass_cmd);
		return;
	}
	error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
}

/* A well-formed write from a source that may not write is dropped, and one
 * that may, while writes are paused (may_write 2), passes to the slow path;
 * 1 if either. */
static int write_refused(struct rm_result *r, int may_write)
{
	if (may_write == 2) {
		pass(r, XKV_STAT_pass_paused);
		return 1;
	}
	if (may_write)
		return 0;
	discard(r, XKV_STAT_drop_write_acl);
	return 1;
}

void handle_text(struct rm_store *s, const __u8 *t, __u32 n, int64_t now, int may_write,
			struct rm_result *r)
{
	const struct rm_config *c = &s->cfg;
	const __u8 *nl = memchr(t, '\n', n);
	struct line l;

	if (!nl || nl == t || nl[-1] != '\r') {
		client_error(r, XKV_R_NO_CRLF);
		return;
	}
	__u32 line_len = (__u32)(nl - t) - 1;
	__u32 rest = n - line_len - 2;     /* bytes after the command line */
	r->rest = rest;
	const __u8 *after = nl + 1;
	split(t, line_len, &l);
	int is_get = tok_eq(&l, 0, "get") || tok_eq(&l, 0, "bget"), is_set = tok_eq(&l, 0, "set");
	int is_del = tok_eq(&l, 0, "delete");
	if (!is_get && !is_set && !is_del && !is_slow(&l)) {
		unknown(r, &l);
		return;
	}
	int noreply = l.n > 1 && tok_eq(&l, l.n - 1, "noreply");
	int fast_tokens = l.n <= XKV_TOKENS_MAX;
	/* an error of a line ending in noreply: to the slow path (it is silent) */
#define CLIENT_ERROR(line) \
	(noreply && fast_tokens ? pass(r, XKV_STAT_pass_cmd) : client_error(r, (line)))
/* a key the store cannot hold is the slow path's; another problem answered */
#define KEY_PROBLEM(kp) ((kp) == RM_KEY_UNSTORABLE ? pass(r, XKV_STAT_pass_cmd) : CLIENT_ERROR(kp))
#define ERROR_REPLY(line, counter) \
	(noreply && fast_tokens ? pass(r, XKV_STAT_pass_cmd) : error_reply(r, (line), (counter)))

	if (is_get) {
		if (l.n < 2) {
			error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
			return;
		}
		if (!fast_tokens) {           /* more keys than the fast path takes */
			count(r, XKV_STAT_cmd_get);
			pass(r, XKV_STAT_pass_cmd);
			return;
		}
		for (__u32 i = 1; i < l.n; i++) {
			const char *kp = key_problem(c, l.p[i], l.len[i]);
			if (l.len[i] > XKV_KEY_MAX && i > 1) { /* after valid keys: read those first */
				pass(r, XKV_STAT_pass_cmd);
				return;
			}
			if (kp) {
				KEY_PROBLEM(kp);
				return;
			}
		}
		count(r, XKV_STAT_cmd_get);
		if (rest) {
			pass(r, XKV_STAT_pass_cmd);
			return;
		}
		do_get(s, &l, now, r);
		return;
	}
	if (is_get_like(&l)) {
		/* the fast path passes them on once the line is well formed */
		__u32 first = tok_eq(&l, 0, "gets") ? 1 : 2;
		int64_t exptime;
		if (l.n < 2) { /* bare; "gat <exptime>" is an empty reply (END), as memcached */
			error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
			return;
		}
		int64_t wide;
		if (first == 2 && mc_int32(l.p[1], l.len[1], &exptime, &wide)) {
			CLIENT_ERROR(XKV_R_EXPTIME);
			return;
		}
		for (__u32 i = first; fast_tokens && i < l.n; i++) {
			const char *kp = key_problem(c, l.p[i], l.len[i]);
			if (l.len[i] > XKV_KEY_MAX && i > first) { /* memcached reads (touches) those before */
				pass(r, XKV_STAT_pass_cmd);
				return;
			}
			if (kp) {
				KEY_PROBLEM(kp);
				return;
			}
		}
		count(r, XKV_STAT_cmd_other);
		if (first == 2 && write_refused(r, may_write))
			return;
		pass(r, XKV_STAT_pass_cmd);
		return;
	}
	if (!fast_tokens) {
		/* more words than the fast path tokenizes: too many for a
		 * classic command (memcached: ERROR); the rest the slow path's */
		if (is_storage(&l) || is_del || tok_eq(&l, 0, "touch") || tok_eq(&l, 0, "verbosity") ||
		    tok_eq(&l, 0, "incr") || tok_eq(&l, 0, "decr") || tok_eq(&l, 0, "flush_all")) {
			error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
			return;
		}
		count(r, XKV_STAT_cmd_other);
		pass(r, XKV_STAT_pass_cmd);
		return;
	}
	if (tok_eq(&l, 0, "touch") || tok_eq(&l, 0, "verbosity")) {
		/* touch <key> <exptime> [noreply], verbosity <level> [noreply]:
		 * other field counts are ERROR, as memcached */
		int is_touch = tok_eq(&l, 0, "touch");
		int64_t exptime;
		/* touch: 3 or 4 words, verbosity 2 or 3 (a last word other than
		 * noreply is ignored) */
		if (is_touch ? l.n != 3 && l.n != 4 : l.n < 2 || l.n > 3) {
			error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
			return;
		}
		if (is_touch) {
			const char *kp = key_problem(c, l.p[1], l.len[1]);
			if (kp) {
				KEY_PROBLEM(kp);
				return;
			}
			int64_t wide;
			if (mc_int32(l.p[2], l.len[2], &exptime, &wide)) {
				CLIENT_ERROR(XKV_R_EXPTIME);
				return;
			}
		} else {
			__u64 level; /* a level that is no number: memcached's format error */
			if (mc_unsigned(l.p[1], l.len[1], &level)) {
				CLIENT_ERROR(XKV_R_FORMAT);
				return;
			}
		}
		count(r, XKV_STAT_cmd_other);
		if (is_touch && write_refused(r, may_write))
			return;
		pass(r, XKV_STAT_pass_cmd);
		return;
	}
	if (is_del) {
		/* delete <key> [0] [noreply]: 2 to 4 words, else ERROR; a
		 * third word that is not 0 (or noreply), or a fourth that is
		 * not noreply after a 0: memcached's usage line */
		noreply = l.n > 2 && noreply; /* "delete noreply": the key "noreply" */
		__u32 args = l.n - 1 - (__u32)noreply;
		if (l.n < 2 || l.n > 4) {
			error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
			return;
		}
		if (args > 2 || (args == 2 && !tok_eq(&l, 2, "0"))) {
			CLIENT_ERROR(XKV_R_DEL_USAGE);
			return;
		}
		const char *kp = key_problem(c, l.p[1], l.len[1]);
		if (kp) {
			KEY_PROBLEM(kp);
			return;
		}
		count(r, XKV_STAT_cmd_delete);
		if (write_refused(r, may_write))
			return;
		if (rest) {
			pass(r, XKV_STAT_pass_cmd);
			return;
		}
		do_delete(s, &l, noreply, now, r);
		return;
	}
	if (is_storage(&l)) {
		__u32 flags = 0, bytes = 0;
		int64_t exptime = 0;
		enum xkv_stat counter;
		const char *p = storage_problem(c, &l, noreply, after, rest, &flags, &exptime,
						&bytes, &counter);
		if (p == RM_KEY_UNSTORABLE) {
			pass(r, XKV_STAT_pass_cmd);
			return;
		}
		if (p && counter == XKV_STAT_err_too_large && c->big_max && bytes <= c->big_max) {
			pass(r, XKV_STAT_pass_cmd); /* the big map's: serve stores it */
			return;
		}
		if (p && !strcmp(p, XKV_R_ERROR)) { /* a word count memcached does not take: noreply or not */
			error_reply(r, p, counter);
			return;
		}
		if (p) {
			ERROR_REPLY(p, counter);
			return;
		}
		count(r, is_set ? XKV_STAT_cmd_set : XKV_STAT_cmd_other);
		if (write_refused(r, may_write))
			return;
		if (!is_set || rest != bytes + 2) {
			pass(r, XKV_STAT_pass_cmd);
			return;
		}
		touch(r, l.p[1], l.len[1]);
		if (put(s, l.p[1], l.len[1], flags, exptime, after, bytes, now, &r->delta) != PUT_OK) {
			if (noreply) { /* memcached drops the line too */
				count(r, XKV_STAT_err_oom);
				discard(r, XKV_STAT_noreply);
				return;
			}
			error_reply(r, XKV_R_OOM, XKV_STAT_err_oom);
			return;
		}
		count(r, XKV_STAT_stores);
		if (noreply) {
			discard(r, XKV_STAT_noreply);
			return;
		}
		reply(r, XKV_R_STORED);
		return;
	}
	const char *p = slow_problem(c, &l, noreply);
	if (p == RM_KEY_UNSTORABLE) {
		pass(r, XKV_STAT_pass_cmd);
		return;
	}
	if (p && !strcmp(p, XKV_R_ERROR)) { /* a field count memcached does not take: noreply or not */
		error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
		return;
	}
	if (p) {
		CLIENT_ERROR(p);
		return;
	}
	count(r, XKV_STAT_cmd_other);
	if (is_write(&l) && write_refused(r, may_write))
		return;
	pass(r, XKV_STAT_pass_cmd);
#undef CLIENT_ERROR
#undef KEY_PROBLEM
#undef ERROR_REPLY
}

__u16 be16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}
