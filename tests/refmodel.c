// SPDX-License-Identifier: MIT
/* Reference model of the XDP fast path; see refmodel.h.
 *
 * The rules, as the fast path promises them:
 *  - Only IPv4 without options or fragmentation, and IPv6 without
 *    extension headers, carrying UDP to the configured port, are looked at;
 *    everything else (and anything whose IP header promises more bytes than
 *    the frame has) goes on to the kernel untouched and uncounted.
 *  - The guards (none of them when the policy is unguarded), before a
 *    datagram counts as a request: a frame not sent to this host's MAC or
 *    a packet not sent to one of its addresses is passed on; a source port
 *    0, equal to the service port, or below 1024 (unless low ports are
 *    allowed), a source outside the allow list, or a source /24 or /64 over
 *    its rate (a token bucket: burst requests at once, then rate per
 *    second) is dropped.
 *  - A datagram past them is a request.  If its UDP length cannot hold the
 *    frame header, or claims more than the IP payload, it is passed on.
 *    Guarded, a bad IPv4 header checksum is passed on (the kernel drops it).
 *  - One datagram, one command: frame header seq 0 / total 1, else it is
 *    dropped unanswered (always, as memcached does).  Requests longer than
 *    XKV_REQ_MAX bytes of text are passed on.
 *  - Guarded, the UDP checksum over the UDP length's bytes must hold; IPv4
 *    may send none (0), IPv6 may not; with csum_partial the pseudo-header
 *    sum alone (what a CHECKSUM_PARTIAL sender leaves) is accepted too.  A
 *    bad one is passed on.
 *  - A line that is no command and reads as a reply (its first word a reply
 *    word, or a number) is dropped, always: two servers must not talk to
 *    each other forever.  Guarded, a well-formed write from a source outside
 *    the write list is dropped.
 *  - Guarded, a reply to an untrusted source (or any, when strict) longer
 *    than max_amp times the request (UDP payloads) becomes one SERVER_ERROR
 *    line, or nothing when even that is too long.
 *  - The command line ends at the first \r\n; a bare \n or no end is an error.
 *    Tokens are separated by spaces.  get/set/delete are served; the other
 *    known commands, well formed, are passed on, as is anything followed by
 *    more bytes (a second command) and get with more keys than the fast path
 *    tokenizes.  A get reply must fit one datagram or it is passed on.
 *  - Errors get their reply line, except where the line ends in "noreply"
 *    (and the tokens fit the parser): such an error is passed on, the slow
 *    path sends nothing for it (memcached); a full store with noreply is
 *    silent here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include "refmodel.h"
#include "base64.h"
#include "policy.h" /* XKV_R_AMP: the line, like wire.h's */
#include "hash.h"

#define TOK_MAX 64   /* the model keeps more tokens than the fast path serves */

struct line {
	const __u8 *p[TOK_MAX];
	__u32 len[TOK_MAX];
	__u32 n;        /* tokens seen, may exceed TOK_MAX */
};

/* ---- store ---------------------------------------------------------------- */

void rm_store_init(struct rm_store *s, const struct rm_config *cfg)
{
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
}

static void item_free(struct rm_item *it)
{
	free(it->val);
	it->val = NULL;
}

void rm_store_free(struct rm_store *s)
{
	for (__u32 i = 0; i < s->n; i++)
		item_free(&s->items[i]);
	free(s->items);
	free(s->sets);
	memset(s, 0, sizeof(*s));
}

static int alive(const struct rm_item *it, int64_t now)
{
	return it->expire == RM_NEVER || (it->expire != RM_EXPIRED && it->expire > now);
}

static struct rm_item *find(const struct rm_store *s, const void *key, __u32 klen)
{
	for (__u32 i = 0; i < s->n; i++)
		if (s->items[i].klen == klen && !memcmp(s->items[i].key, key, klen))
			return &s->items[i];
	return NULL;
}

static void set_forget(struct rm_store *s, const struct rm_item *it);

static void drop(struct rm_store *s, struct rm_item *it)
{
	set_forget(s, it);
	item_free(it);
	*it = s->items[--s->n];
}

/* the placement hash, over the key zero-padded to a whole word */
static __u64 key_hash(const struct rm_store *s, const void *key, __u32 klen)
{
	__u8 k[XKV_KEY_MAX + 8] = { 0 };
	memcpy(k, key, klen);
	return xkv_key_hash(s->cfg.hash_seed, k, klen);
}

static __u32 slot_of(const struct rm_store *s, const void *key, __u32 klen)
{
	return (__u32)(key_hash(s, key, klen) % s->cfg.entries);
}

static __u32 set_of(const struct rm_store *s, const void *key, __u32 klen)
{
	return (__u32)key_hash(s, key, klen) % (s->cfg.entries / s->cfg.ways);
}

/* RM_SET_ASSOC: the item in way w of set b, if any */
static struct rm_item *set_way(const struct rm_store *s, __u32 b, __u32 w)
{
	for (__u32 i = 0; i < s->n; i++)
		if (s->items[i].way == w && set_of(s, s->items[i].key, s->items[i].klen) == b)
			return &s->items[i];
	return NULL;
}

/* RM_SET_ASSOC: set b's policy state */
static struct rm_set *set_state(struct rm_store *s, __u32 b)
{
	if (!s->sets) {
		s->sets = calloc(s->cfg.entries / s->cfg.ways, sizeof(*s->sets));
		if (!s->sets)
			abort();
	}
	return &s->sets[b];
}

/* RM_SET_ASSOC: an item leaves its way (deleted, replaced, evicted): the
 * way's reference bit or count and its S3FIFO queue are cleared */
static void set_forget(struct rm_store *s, const struct rm_item *it)
{
	if (s->cfg.kind != RM_SET_ASSOC)
		return;
	struct rm_set *set = set_state(s, set_of(s, it->key, it->klen));
	set->ref[it->way] = 0;
	set->small[it->way] = 0;
}

/* the tag the store keeps of a key: the hash's top 16 bits, never 0 */
static __u16 tag_of(const struct rm_store *s, const void *key, __u32 klen)
{
	__u16 t = (__u16)(key_hash(s, key, klen) >> 48);
	return t ? t : 1;
}

/* SIEVE, S3FIFO: way a took its key before way b (ways never written first,
 * lowest first) */
static int older(const struct rm_set *set, __u32 a, __u32 b)
{
	return set->wrote[a] != set->wrote[b] ? set->wrote[a] < set->wrote[b] : a < b;
}

/* the oldest way (queue -1), or the oldest of the S3FIFO small (1) or main
 * (0) queue; -1 if there is none */
static int oldest_way(const struct rm_store *s, const struct rm_set *set, int queue)
{
	int best = -1;
	for (__u32 v = 0; v < s->cfg.ways; v++)
		if ((queue < 0 || set->small[v] == queue) && (best < 0 || older(set, v, (__u32)best)))
			best = (int)v;
	return best;
}

/* the way that took its key next after way w's; -1 if w's is the newest */
static int next_newer(const struct rm_store *s, const struct rm_set *set, __u32 w)
{
	int best = -1;
	for (__u32 v = 0; v < s->cfg.ways; v++)
		if (v != w && older(set, w, v) && (best < 0 || older(set, v, (__u32)best)))
			best = (int)v;
	return best;
}

/* the victim of a full set under the policy */
static __u32 set_victim(struct rm_store *s, __u32 b)
{
	struct rm_set *set = set_state(s, b);
	__u32 W = s->cfg.ways;
	int w;
	switch (s->cfg.policy) {
	case RM_CLOCK:
		w = (int)(set->hand % W);
		while (set->ref[w]) {
			set->ref[w] = 0;
			w = (int)((w + 1) % W);
		}
		set->hand = (__u8)((w + 1) % W);
		return (__u32)w;
	case RM_SIEVE:
		w = set->hand ? set->hand - 1 : oldest_way(s, set, -1);
		while (set->ref[w]) {
			set->ref[w] = 0;
			int n = next_newer(s, set, (__u32)w);
			w = n >= 0 ? n : oldest_way(s, set, -1);
		}
		int n = next_newer(s, set, (__u32)w);
		set->hand = (__u8)(n >= 0 ? n + 1 : 0);
		return (__u32)w;
	case RM_S3FIFO:
		for (;;) {
			w = oldest_way(s, set, 1);
			if (w >= 0 && set->ref[w] < 2) { /* evicted from small: remembered */
				struct rm_item *it = set_way(s, b, (__u32)w);
				set->ghost[set->ghost_next++ % 8] = tag_of(s, it->key, it->klen);
				return (__u32)w;
			}
			if (w >= 0) { /* small -> main */
				set->small[w] = 0;
				set->ref[w] = 0;
				set->wrote[w] = ++s->clock;
				continue;
			}
			w = oldest_way(s, set, 0);
			if (!set->ref[w])
				return (__u32)w;
			set->ref[w]--; /* main: kept, moved to main's newest end */
			set->wrote[w] = ++s->clock;
		}
	}
	abort();
}

/* a new key with tag `tag` took way w of set b (fresh: w was free) */
static void set_took(struct rm_store *s, __u32 b, __u32 w, __u16 tag, int fresh)
{
	struct rm_set *set = set_state(s, b);
	set->ref[w] = 0;
	if (s->cfg.policy == RM_SIEVE && set->hand == w + 1) {
		int n = next_newer(s, set, w);
		set->hand = (__u8)(n >= 0 ? n + 1 : 0);
	}
	if (s->cfg.policy == RM_S3FIFO) {
		int ghost = 0;
		__u32 nsmall = 0;
		for (__u32 i = 0; i < 8 && !ghost; i++)
			if (set->ghost[i] == tag) {
				set->ghost[i] = 0;
				ghost = 1;
			}
		for (__u32 v = 0; v < s->cfg.ways; v++)
			nsmall += v != w && set->small[v];
		set->small[w] = !(ghost || (fresh && nsmall >= 1));
	}
	set->wrote[w] = ++s->clock;
}

/* RM_SET_ASSOC: the way a new key takes in set b, dropping what was there;
 * counts store_new or overwrites in delta */
static __u32 set_place(struct rm_store *s, __u32 b, __u16 tag, int64_t now, struct xkv_stats *delta)
{
	for (__u32 w = 0; w < s->cfg.ways; w++) {
		struct rm_item *it = set_way(s, b, w);
		if (it && alive(it, now))
			continue;
		if (it)
			drop(s, it);
		if (delta)
			delta->v[XKV_STAT_store_new]++;
		set_took(s, b, w, tag, 1);
		return w;
	}
	__u32 w = set_victim(s, b);
	drop(s, set_way(s, b, w));
	if (delta)
		delta->v[XKV_STAT_overwrites]++;
	set_took(s, b, w, tag, 0);
	return w;
}

/* RM_PROBE: the slot a new key takes in its window, dropping what was there;
 * counts store_new or overwrites in delta */
static __u32 probe_place(struct rm_store *s, const void *key, __u32 klen, int64_t now, struct xkv_stats *delta)
{
	__u32 home = slot_of(s, key, klen), win = s->cfg.entries < 4 ? s->cfg.entries : 4;
	struct rm_item *oldest = NULL;
	for (__u32 j = 0; j < win; j++) {
		__u32 t = (home + j) % s->cfg.entries;
		struct rm_item *it = NULL;
		for (__u32 i = 0; i < s->n && !it; i++)
			if (s->items[i].way == t)
				it = &s->items[i];
		if (it && alive(it, now)) {
			if (!oldest || it->wrote < oldest->wrote)
				oldest = it;
			continue;
		}
		if (it)
			drop(s, it);
		if (delta)
			delta->v[XKV_STAT_store_new]++;
		return t;
	}
	__u32 t = oldest->way;
	drop(s, oldest);
	if (delta)
		delta->v[XKV_STAT_overwrites]++;
	return t;
}

/* the item sharing key's array slot (another key), if any */
static struct rm_item *slot_rival(const struct rm_store *s, const void *key, __u32 klen)
{
	__u32 slot = slot_of(s, key, klen);
	for (__u32 i = 0; i < s->n; i++) {
		struct rm_item *it = &s->items[i];
		if (slot_of(s, it->key, it->klen) == slot &&
		    !(it->klen == klen && !memcmp(it->key, key, klen)))
			return it;
	}
	return NULL;
}

static struct rm_item *lru_victim(const struct rm_store *s)
{
	struct rm_item *v = NULL;
	for (__u32 i = 0; i < s->n; i++)
		if (!v || s->items[i].used < v->used)
			v = &s->items[i];
	return v;
}

static int64_t expiry(int64_t exptime, int64_t now)
{
	if (exptime == 0)
		return RM_NEVER;
	if (exptime < 0)
		return RM_EXPIRED;
	if (exptime <= 30LL * 24 * 3600)
		return now + exptime;
	return exptime;  /* absolute unix time; dead already if <= now */
}

enum put_res { PUT_OK, PUT_FULL };

/* Store an item under the layout's rule; counts store_new/overwrites in
 * delta when given. */
static enum put_res put(struct rm_store *s, const void *key, __u32 klen, __u32 flags,
			int64_t exptime, const void *val, __u32 len, int64_t now,
			struct xkv_stats *delta)
{
	struct rm_item *it = find(s, key, klen);
	int is_new = it == NULL;

	if (!it && s->cfg.kind == RM_ARRAY) {
		struct rm_item *r = slot_rival(s, key, klen);
		if (r) {
			if (delta && alive(r, now))
				delta->v[XKV_STAT_overwrites]++;
			else if (delta && s->cfg.counts_new)
				delta->v[XKV_STAT_store_new]++;
			is_new = 0;
			drop(s, r);
		}
	}
	if (!it && (s->cfg.kind == RM_HASH || s->cfg.kind == RM_PERCPU) && s->n >= s->cfg.entries)
		return PUT_FULL;
	if (!it && (s->cfg.kind == RM_LRU || s->cfg.kind == RM_LRU_PERCPU) && s->n >= s->cfg.entries)
		drop(s, lru_victim(s));
	__u32 way = 0;
	if (!it && s->cfg.kind == RM_SET_ASSOC) {
		way = set_place(s, set_of(s, key, klen), tag_of(s, key, klen), now, delta);
		is_new = 0; /* counted by set_place */
	}
	if (!it && s->cfg.kind == RM_PROBE) {
		way = probe_place(s, key, klen, now, delta);
		is_new = 0; /* counted by probe_place */
	}
	if (!it) {
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 16;
			s->items = realloc(s->items, s->cap * sizeof(*s->items));
			if (!s->items)
				abort();
		}
		it = &s->items[s->n++];
		memset(it, 0, sizeof(*it));
		memcpy(it->key, key, klen);
		it->klen = klen;
		it->way = way;
	}
	if (is_new && delta && s->cfg.counts_new)
		delta->v[XKV_STAT_store_new]++;
	item_free(it);
	it->val = malloc(len ? len : 1);
	if (!it->val)
		abort();
	memcpy(it->val, val, len);
	it->len = len;
	it->flags = flags;
	it->stale = it->won = 0; /* a new item: not stale, no token out */
	it->expire = expiry(exptime, now);
	it->used = ++s->clock;
	it->wrote = it->used;
	return PUT_OK;
}

int rm_store_put(struct rm_store *s, const void *key, __u32 klen, __u32 flags,
		 int64_t exptime, const void *val, __u32 len, int64_t now)
{
	return put(s, key, klen, flags, exptime, val, len, now, NULL) == PUT_OK ? 0 : -1;
}

const struct rm_item *rm_store_get(const struct rm_store *s, const void *key, __u32 klen,
				   int64_t now)
{
	const struct rm_item *it = find(s, key, klen);
	return it && alive(it, now) ? it : NULL;
}

long rm_store_live(const struct rm_store *s, int64_t now)
{
	long n = 0;
	for (__u32 i = 0; i < s->n; i++)
		n += alive(&s->items[i], now);
	return n;
}

/* ---- reply helpers ---------------------------------------------------------- */

static void count(struct rm_result *r, enum xkv_stat st)
{
	r->delta.v[st]++;
}

static void say(struct rm_result *r, const void *p, size_t n)
{
	if (r->text_len + n > sizeof(r->text))
		abort();
	memcpy(r->text + r->text_len, p, n);
	r->text_len += (__u32)n;
}

static void say_str(struct rm_result *r, const char *s)
{
	say(r, s, strlen(s));
}

/* v in decimal at the end of d[24]; returns where it starts */
static const char *decimal(__u64 v, char d[24], size_t *n)
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

static void client_error(struct rm_result *r, const char *line)
{
	count(r, XKV_STAT_err_client);
	reply(r, line);
}

static void pass(struct rm_result *r, enum xkv_stat why)
{
	r->text_len = 0;
	r->action = RM_XDP_PASS;
	count(r, why);
}

static void discard(struct rm_result *r, enum xkv_stat why)
{
	r->text_len = 0;
	r->action = RM_XDP_DROP;
	count(r, why);
}

static void touch(struct rm_result *r, const __u8 *key, __u32 klen)
{
	if (r->ntouched < RM_TOUCHED_MAX && klen <= XKV_KEY_MAX) {
		memcpy(r->touched[r->ntouched].key, key, klen);
		r->touched[r->ntouched].klen = klen;
		r->ntouched++;
	}
}

/* ---- request text ----------------------------------------------------------- */

static int tok_eq(const struct line *l, __u32 i, const char *s)
{
	return i < l->n && i < TOK_MAX && l->len[i] == strlen(s) && !memcmp(l->p[i], s, l->len[i]);
}

/* Strict unsigned decimal: digits only, value <= max. */
static int number(const __u8 *p, __u32 n, __u64 max, __u64 *out)
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

static int signed_number(const __u8 *p, __u32 n, int64_t *out)
{
	__u64 v;
	int neg = n > 1 && p[0] == '-';
	if (number(p + neg, n - neg, INT64_MAX, &v))
		return -1;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

/* memcached's key rule plus the configured cap; NULL when the key is fine */
static const char *key_problem(const struct rm_config *c, const __u8 *k, __u32 n)
{
	__u32 cap = c->key_cap < XKV_KEY_MAX ? c->key_cap : XKV_KEY_MAX;
	if (n > cap)
		return XKV_R_KEY_LONG;
	for (__u32 i = 0; i < n; i++)
		if (c->binary_keys ? k[i] == 0 : (k[i] <= ' ' || k[i] == 0x7f))
			return XKV_R_KEY_BAD;
	return NULL;
}

static void split(const __u8 *p, __u32 n, struct line *l)
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
		it->used = ++s->clock;
		if (s->cfg.kind == RM_SET_ASSOC) { /* a get hit */
			__u8 *ref = &set_state(s, set_of(s, it->key, it->klen))->ref[it->way];
			if (s->cfg.policy != RM_S3FIFO)
				*ref = 1;
			else if (*ref < 3)
				(*ref)++;
		}
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

	*counter = XKV_STAT_err_client;
	if (l->n != 5u + (__u32)cas + (__u32)noreply)
		return XKV_R_FORMAT;
	if ((kp = key_problem(c, l->p[1], l->len[1])))
		return kp;
	if (number(l->p[2], l->len[2], UINT32_MAX, &v))
		return XKV_R_FORMAT;
	*flags = (__u32)v;
	if (signed_number(l->p[3], l->len[3], exptime))
		return XKV_R_FORMAT;
	if (number(l->p[4], l->len[4], UINT32_MAX, &v))
		return XKV_R_FORMAT;
	*bytes = (__u32)v;
	if (cas && number(l->p[5], l->len[5], UINT64_MAX, &v))
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
		if (l->n != 3u + (__u32)noreply)
			return XKV_R_FORMAT;
		const char *kp = key_problem(c, l->p[1], l->len[1]);
		if (kp)
			return kp;
		return number(l->p[2], l->len[2], UINT64_MAX, &v) ? XKV_R_FORMAT : NULL;
	}
	if (tok_eq(l, 0, "flush_all")) {
		__u32 args = l->n - 1 - (__u32)noreply;
		if (l->n > 3 || args > 1)
			return XKV_R_FORMAT;
		if (args == 1 && number(l->p[1], l->len[1], UINT32_MAX, &v))
			return XKV_R_FORMAT;
		return NULL;
	}
	if (tok_eq(l, 0, "version"))
		return l->n == 1 ? NULL : XKV_R_FORMAT;
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
	       tok_eq(l, 0, "ms") || tok_eq(l, 0, "md") || tok_eq(l, 0, "ma") || tok_eq(l, 0, "me");
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
		"NOT_FOUND", "NOT_STORED", "CLIENT_ERROR", "SERVER_ERROR",
	};
	__u64 v;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (n == strlen(words[i]) && !memcmp(w, words[i], n))
			return 1;
	return number(w, n, UINT64_MAX, &v) == 0;
}

/* An unknown command: answered ERROR, unless it reads as a reply. */
static void unknown(struct rm_result *r, const struct line *l)
{
	if (l->n > 0 && reply_word(l->p[0], l->len[0])) {
		discard(r, XKV_STAT_drop_reply);
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

static void handle_text(struct rm_store *s, const __u8 *t, __u32 n, int64_t now, int may_write,
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
	const __u8 *after = nl + 1;
	split(t, line_len, &l);
	int is_get = tok_eq(&l, 0, "get"), is_set = tok_eq(&l, 0, "set");
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
			if (kp) {
				CLIENT_ERROR(kp);
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
		if (l.n <= first) {
			error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
			return;
		}
		if (first == 2 && signed_number(l.p[1], l.len[1], &exptime)) {
			CLIENT_ERROR(XKV_R_EXPTIME);
			return;
		}
		for (__u32 i = first; fast_tokens && i < l.n; i++) {
			const char *kp = key_problem(c, l.p[i], l.len[i]);
			if (kp) {
				CLIENT_ERROR(kp);
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
		client_error(r, XKV_R_FORMAT); /* the parser's tokens end before noreply */
		return;
	}
	if (tok_eq(&l, 0, "touch") || tok_eq(&l, 0, "verbosity")) {
		/* touch <key> <exptime> [noreply], verbosity <level> [noreply]:
		 * other field counts are ERROR, as memcached */
		int is_touch = tok_eq(&l, 0, "touch");
		int64_t exptime;
		if (l.n != (is_touch ? 3u : 2u) + (__u32)noreply) {
			error_reply(r, XKV_R_ERROR, XKV_STAT_err_unknown);
			return;
		}
		if (is_touch) {
			const char *kp = key_problem(c, l.p[1], l.len[1]);
			if (kp) {
				CLIENT_ERROR(kp);
				return;
			}
			if (signed_number(l.p[2], l.len[2], &exptime)) {
				CLIENT_ERROR(XKV_R_EXPTIME);
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
		/* delete <key> [0] [noreply] */
		__u32 args = l.n - 1 - (__u32)noreply;
		if (l.n < 2 || args < 1 || args > 2 || (args == 2 && !tok_eq(&l, 2, "0"))) {
			CLIENT_ERROR(XKV_R_FORMAT);
			return;
		}
		const char *kp = key_problem(c, l.p[1], l.len[1]);
		if (kp) {
			CLIENT_ERROR(kp);
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
		if (p && counter == XKV_STAT_err_too_large && c->big_max && bytes <= c->big_max) {
			pass(r, XKV_STAT_pass_cmd); /* the big map's: serve stores it */
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
	if (p) {
		CLIENT_ERROR(p);
		return;
	}
	count(r, XKV_STAT_cmd_other);
	if (is_write(&l) && write_refused(r, may_write))
		return;
	pass(r, XKV_STAT_pass_cmd);
#undef CLIENT_ERROR
#undef ERROR_REPLY
}

static __u16 be16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

/* ---- the access policy ---------------------------------------------------------- */

int rm_net_parse(const char *str, struct rm_net *n)
{
	char buf[64];
	const char *slash = strchr(str, '/');
	long bits = -1;
	__u8 v4[4];

	memset(n, 0, sizeof(*n));
	if (!strcmp(str, "any"))
		return 0;
	size_t alen = slash ? (size_t)(slash - str) : strlen(str);
	if (alen >= sizeof(buf))
		return -1;
	memcpy(buf, str, alen);
	buf[alen] = 0;
	if (slash) {
		char *end;
		bits = strtol(slash + 1, &end, 10);
		if (*end || bits < 0)
			return -1;
	}
	if (inet_pton(AF_INET, buf, v4) == 1) {
		if (bits > 32)
			return -1;
		n->addr[10] = n->addr[11] = 0xff;
		memcpy(n->addr + 12, v4, 4);
		n->bits = 96 + (__u32)(bits < 0 ? 32 : bits);
		return 0;
	}
	if (inet_pton(AF_INET6, buf, n->addr) == 1 && bits <= 128) {
		n->bits = (__u32)(bits < 0 ? 128 : bits);
		return 0;
	}
	return -1;
}

int rm_nets_add(struct rm_nets *l, const char *s)
{
	if (l->n == RM_NETS_MAX || rm_net_parse(s, &l->net[l->n]))
		return -1;
	l->n++;
	return 0;
}

/* Is addr (16-byte form) inside one of the networks? */
static int in_nets(const struct rm_nets *l, const __u8 addr[16])
{
	for (__u32 i = 0; i < l->n; i++) {
		const struct rm_net *net = &l->net[i];
		__u32 whole = net->bits / 8, part = net->bits % 8;
		if (memcmp(net->addr, addr, whole))
			continue;
		if (part && ((net->addr[whole] ^ addr[whole]) & (__u8)(0xff00 >> part)))
			continue;
		return 1;
	}
	return 0;
}

static __u64 mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* The rate limit as a token bucket per source network: it holds up to
 * `burst` requests' worth of time and refills at one request per 1/rate s.
 * A network never seen starts full. */
static int rate_admits(struct rm_store *s, const __u8 src[16], int v6)
{
	const struct rm_policy *p = &s->cfg.pol;
	__u64 cost = 1000000000ull / p->rate_limit;
	__u64 full = cost * (p->rate_burst ? p->rate_burst : 1);
	__u64 now = mono_ns();
	__u8 net[16] = { 0 };
	struct rm_bucket *b = NULL;

	memcpy(net, src, v6 ? 8 : 15); /* the /64, or the /24 of the mapped address */
	for (__u32 i = 0; i < s->nbuckets && !b; i++)
		if (!memcmp(s->bucket[i].net, net, 16))
			b = &s->bucket[i];
	if (!b) {
		if (s->nbuckets == RM_BUCKETS_MAX)
			abort();
		b = &s->bucket[s->nbuckets++];
		memcpy(b->net, net, 16);
		b->credit = full;
		b->at = now;
	}
	b->credit += now - b->at;
	if (b->credit > full)
		b->credit = full;
	b->at = now;
	if (b->credit < cost)
		return 0;
	b->credit -= cost;
	return 1;
}

/* Internet checksum: the one's complement sum of big-endian 16-bit words
 * (an odd last byte padded with zero), folded to 16 bits. */
static __u64 ones_add(__u64 acc, const __u8 *p, size_t n)
{
	for (size_t i = 0; i < n; i += 2)
		acc += (__u64)p[i] << 8 | (i + 1 < n ? p[i + 1] : 0);
	return acc;
}

static __u16 ones_fold(__u64 acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (__u16)acc;
}

/* The UDP checksum of the datagram udp[0..ulen) between the addresses at
 * ip (as the IP header holds them) is acceptable. */
static int udp_csum_ok(const struct rm_policy *p, int v6, const __u8 *ip, const __u8 *udp,
		       __u32 ulen)
{
	__u16 field = be16(udp + 6);
	__u64 ph;
	if (field == 0)
		return !v6; /* "no checksum": IPv4 only */
	if (v6) {
		__u8 tail[8] = { (__u8)(ulen >> 24), (__u8)(ulen >> 16), (__u8)(ulen >> 8), (__u8)ulen,
				 0, 0, 0, 17 };
		ph = ones_add(ones_add(0, ip + 8, 32), tail, 8);
	} else {
		__u8 tail[4] = { 0, 17, (__u8)(ulen >> 8), (__u8)ulen };
		ph = ones_add(ones_add(0, ip + 12, 8), tail, 4);
	}
	if (ones_fold(ones_add(ph, udp, ulen)) == 0xffff)
		return 1;
	return p->csum_partial && field == ones_fold(ph);
}

/* Cut or drop a reply that says too much to a source that did not prove
 * its address (UDP payloads: frame header + text). */
static void amp_cap(const struct rm_policy *p, int trusted, __u32 req_bytes, struct rm_result *r)
{
	__u64 most = (__u64)p->max_amp * req_bytes;
	if (!p->max_amp || trusted || XKV_UDP_HDR_LEN + r->text_len <= most)
		return;
	if (XKV_UDP_HDR_LEN + strlen(XKV_R_AMP) > most) {
		discard(r, XKV_STAT_drop_amp);
		return;
	}
	r->text_len = 0;
	say_str(r, XKV_R_AMP);
	count(r, XKV_STAT_amp_capped);
}

/* ---- frames ------------------------------------------------------------------ */

static void untouched(struct rm_result *r)
{
	memset(r, 0, sizeof(*r));
	r->action = RM_XDP_PASS;
}

/* Source addresses no host has (RFC 1122 3.2.1.3 and RFC 4291): IPv4
 * "this network" 0/8, loopback 127/8, class D multicast and class E
 * (which holds the limited broadcast); IPv6 unspecified, loopback,
 * multicast ff00::/8, and IPv4-mapped (never on the wire).  a: 16 bytes,
 * IPv4 in the last 4. */
static int martian(const __u8 *a, int v6)
{
	static const __u8 zero[16];
	if (!v6)
		return a[12] == 0 || a[12] == 127 || (a[12] & 0xe0) == 0xe0;
	if (a[0] == 0xff)
		return 1;
	if (memcmp(a, zero, 10))
		return 0;
	if (a[10] == 0xff && a[11] == 0xff)
		return 1;
	return !memcmp(a, zero, 15) && (a[15] == 0 || a[15] == 1);
}

void rm_handle_frame(struct rm_store *s, const __u8 *pkt, size_t len, int64_t now,
		     struct rm_result *r)
{
	const struct rm_policy *p = &s->cfg.pol;
	int guarded = !p->unguarded, v6;
	const __u8 *udp;
	size_t l3_payload;   /* bytes the IP header says follow it */
	__u8 src[16] = { 0 }, dst[16] = { 0 };

	untouched(r);
	if (len < 14)
		return;
	__u16 et = be16(pkt + 12);
	const __u8 *ip = pkt + 14;
	size_t avail = len - 14;

	if (et == 0x0800) {
		if (avail < 20 || ip[0] != 0x45 || ip[9] != 17 || (be16(ip + 6) & 0x3fff))
			return;
		if (avail < 28)
			return;
		udp = ip + 20;
		if (be16(udp + 2) != s->cfg.port)
			return;
		size_t tot = be16(ip + 2);
		if (tot < 28 || tot > avail)
			return;  /* the kernel drops it; nothing counted */
		l3_payload = tot - 20;
		v6 = 0;
		src[10] = src[11] = dst[10] = dst[11] = 0xff;
		memcpy(src + 12, ip + 12, 4);
		memcpy(dst + 12, ip + 16, 4);
	} else if (et == 0x86dd) {
		if (avail < 48 || ip[6] != 17)
			return;
		udp = ip + 40;
		if (be16(udp + 2) != s->cfg.port)
			return;
		size_t pl = be16(ip + 4);
		if (pl < 8 || pl > avail - 40)
			return;
		l3_payload = pl;
		v6 = 1;
		memcpy(src, ip + 8, 16);
		memcpy(dst, ip + 24, 16);
	} else {
		return;
	}

	if (guarded) {
		__u16 sport = be16(udp);
		if ((p->check_mac && memcmp(pkt, p->mac, 6)) ||
		    (p->check_ip && !in_nets(&p->local, dst))) {
			pass(r, XKV_STAT_pass_not_local);
			return;
		}
		if (martian(src, v6)) {
			discard(r, XKV_STAT_drop_src);
			return;
		}
		if (sport == 0 || sport == s->cfg.port || (sport < 1024 && !p->low_ports)) {
			discard(r, XKV_STAT_drop_port);
			return;
		}
		if (!in_nets(&p->allow, src)) {
			discard(r, XKV_STAT_drop_acl);
			return;
		}
		if (p->rate_limit && !rate_admits(s, src, v6)) {
			discard(r, XKV_STAT_drop_ratelimit);
			return;
		}
	}
	count(r, XKV_STAT_requests);

	size_t ulen = be16(udp + 4);
	if (ulen < 8 + XKV_UDP_HDR_LEN || ulen > l3_payload) {
		pass(r, XKV_STAT_pass_malformed);
		return;
	}
	if (guarded && !v6 && ones_fold(ones_add(0, ip, 20)) != 0xffff) {
		pass(r, XKV_STAT_pass_csum);
		return;
	}
	const __u8 *d = udp + 8;
	if (be16(d + 2) != 0 || be16(d + 4) != 1) {
		discard(r, XKV_STAT_drop_frame);
		return;
	}
	size_t n = ulen - 8 - XKV_UDP_HDR_LEN;
	if (n > XKV_REQ_MAX) {
		pass(r, XKV_STAT_pass_room);
		return;
	}
	if (guarded && !udp_csum_ok(p, v6, ip, udp, (__u32)ulen)) {
		pass(r, XKV_STAT_pass_csum);
		return;
	}
	int may_write = !guarded || in_nets(&p->write, src);
	if (may_write && guarded && p->pause_writes)
		may_write = 2;
	handle_text(s, d + XKV_UDP_HDR_LEN, (__u32)n, now, may_write, r);
	if (r->action != RM_XDP_TX)
		return;
	if (guarded)
		/* an open TCP connection from the address is no trust for UDP */
		amp_cap(p, !p->strict && in_nets(&p->trust, src),
			(__u32)(ulen - 8), r);
	if (r->action == RM_XDP_TX)
		count(r, XKV_STAT_replies);
}

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

static void out_put(struct rm_text *t, const void *p, size_t n)
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

static void out_str(struct rm_text *t, const char *s)
{
	out_put(t, s, strlen(s));
}

static void out_u64(struct rm_text *t, __u64 v)
{
	char d[24];
	size_t n;
	const char *p = decimal(v, d, &n);
	out_put(t, p, n);
}

static void out_s64(struct rm_text *t, int64_t v)
{
	if (v < 0) {
		out_str(t, "-");
		out_u64(t, (__u64)-v);
	} else {
		out_u64(t, (__u64)v);
	}
}

static int model_fault(struct rm_text *t, const char *why, const struct line *l)
{
	int n = snprintf(t->fault, sizeof(t->fault), "%s", why);
	if (l && l->n && n > 0 && (size_t)n < sizeof(t->fault))
		snprintf(t->fault + n, sizeof(t->fault) - (size_t)n, " (%.*s)", (int)l->len[0],
			 (const char *)l->p[0]);
	return -1;
}

/* the present item of key, or NULL (an expired one stays until replaced) */
static struct rm_item *present(struct rm_store *s, const __u8 *k, __u32 n, int64_t now)
{
	struct rm_item *it = find(s, k, n);
	return it && alive(it, now) ? it : NULL;
}

/* A write gave key a new cas: the real store's, under the model's rule.
 * (An item stored already expired shows no cas to anyone: not checked.) */
static int new_cas(struct rm_store *s, const __u8 *k, __u32 n, __u64 before, rm_cas_fn cas,
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
static struct rm_item *model_store(struct rm_store *s, const __u8 *k, __u32 n, __u32 flags,
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
	if (i == d0 || (i < n && !WS(p[i])) || (neg && x))
		return 1;
#undef WS
	*v = x;
	return 0;
}

static void model_digits(__u64 v, __u8 *d, __u32 *n)
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

#define R_NON_NUMERIC_M "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"

static int model_put_number(struct rm_store *s, struct rm_item *it, const __u8 *d, __u32 n,
			    int64_t now);

/* a number's digits, before the padding of an in-place incr/decr */
static __u32 digits_len(const struct rm_item *it)
{
	__u32 n = it->len;
	while (n && it->val[n - 1] == ' ')
		n--;
	return n;
}

/* the number after incr/decr (or ma); 0 done, 1 non-numeric */
static int model_arith(struct rm_store *s, struct rm_item *it, int incr, __u64 delta, int64_t now)
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
	int stale = it->stale, won = it->won; /* memcached changes the number in place */
	it = model_store(s, it->key, it->klen, it->flags, it->expire, d, n, now);
	it->stale = stale;
	it->won = won;
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
	if (it)
		it->expire = expiry(exptime, now);
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
			     const char *takes, int one_error, struct mreq *m)
{
	const char *dup = one_error ? "CLIENT_ERROR invalid or duplicate flag\r\n"
				    : "CLIENT_ERROR duplicate flag\r\n";
	const char *inval = one_error ? dup : "CLIENT_ERROR invalid flag\r\n";
	const char *bad_tok = one_error ? dup : "CLIENT_ERROR bad token in command line format\r\n";

	memset(m, 0, sizeof(*m));
	m->l = l;
	m->first = first;
	m->key = l->p[1];
	m->klen = l->len[1];
	for (__u32 i = first; i < l->n; i++)
		m->b |= l->len[i] == 1 && l->p[i][0] == 'b';
	if (m->b) {
		/* base64 as RFC 4648 defines it: the standard alphabet, = padding */
		int n = (int)xkv_b64_decode(l->p[1], l->len[1], m->kbuf, sizeof(m->kbuf),
					    XKV_B64_STRICT);
		if (n <= 0)
			return one_error ? dup : "CLIENT_ERROR error decoding key\r\n";
		m->key = m->kbuf;
		m->klen = (__u32)n;
	}
	const char *kp = key_problem(cfg, m->key, m->klen);
	if (kp)
		return kp;
	for (__u32 i = first; i < l->n; i++) {
		__u8 f = l->p[i][0];
		const __u8 *a = l->p[i] + 1;
		__u32 an = l->len[i] - 1;
		int with_arg = f && strchr("OCDJTNFMR", f);
		if (f >= 128 || !f || !strchr(takes, f) || (!with_arg && an))
			return inval;
		if (m->has[f])
			return dup;
		m->has[f] = 1;
		if (f == 'C' && number(a, an, UINT64_MAX, &m->C))
			return bad_tok;
		if (f == 'D' && number(a, an, UINT64_MAX, &m->D))
			return one_error ? dup : "CLIENT_ERROR invalid numeric delta value\r\n";
		if (f == 'J' && number(a, an, UINT64_MAX, &m->J))
			return one_error ? dup : "CLIENT_ERROR invalid numeric initial value\r\n";
		if ((f == 'T' || f == 'N' || f == 'R') &&
		    signed_number(a, an, f == 'T' ? &m->T : f == 'N' ? &m->N : &m->R))
			return bad_tok;
		if (f == 'F') {
			__u64 v;
			if (number(a, an, UINT32_MAX, &v))
				return "CLIENT_ERROR bad command line format\r\n";
			m->F = (__u32)v;
		}
		if (f == 'M') {
			if (an != 1)
				return one_error ? dup : "CLIENT_ERROR incorrect length for M token\r\n";
			m->M = (char)a[0];
		}
		if (f == 'O' && l->len[i] > 32)
			return one_error ? dup : "CLIENT_ERROR opaque token too long\r\n";
	}
	return NULL;
}

/* meta_read, answering its error: 1 when answered */
static int meta_begin(struct rm_store *s, const struct line *l, __u32 first, const char *takes,
		      int one_error, struct mreq *m, struct rm_text *t)
{
	const char *err = meta_read(&s->cfg, l, first, takes, one_error, m);
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

static int model_mg(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t)
{
	struct mreq m;
	if (meta_begin(s, l, 2, "bvftcksqOuTNR", 0, &m, t))
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
	meta_out(t, code, "ftcksO", &m, it, now, tail);
	if (m.has['v'])
		meta_value(t, it);
	return 0;
}

static int model_ms(struct rm_store *s, const struct line *l, const __u8 *data, int64_t now,
		    rm_cas_fn cas, void *arg, struct rm_text *t)
{
	struct mreq m;
	__u64 bytes;
	if (l->n < 3 || number(l->p[2], l->len[2], 0x7ffffffd, &bytes))
		return model_fault(t, "model: a malformed ms line", l);
	const char *err = meta_read(&s->cfg, l, 3, "bFTCMNqOkcI", 0, &m);
	char mode = m.M; /* upper case only (memcached 1.6.18) */
	if (!err && m.M && !strchr("SEAPR", mode))
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

static int model_md(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t)
{
	struct mreq m;
	if (meta_begin(s, l, 2, "bCqOkIT", 1, &m, t))
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

static int model_ma(struct rm_store *s, const struct line *l, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *t)
{
	struct mreq m;
	const char *err = meta_read(&s->cfg, l, 2, "bDMNJTCqvtcOk", 1, &m);
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

static int model_me(struct rm_store *s, const struct line *l, int64_t now, struct rm_text *t)
{
	struct mreq m;
	if (meta_begin(s, l, 2, "b", 0, &m, t))
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
	out_str(t, " la=0 cas=");
	out_u64(t, it->cas);
	out_str(t, " fetch=no cls=0 size=");
	out_u64(t, it->len);
	out_str(t, "\r\n");
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
