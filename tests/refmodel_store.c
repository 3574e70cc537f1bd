// SPDX-License-Identifier: MIT
/* Reference model: the store (items, expiry) and each layout's placement
 * and eviction policy (slot, set-associative CLOCK/SIEVE/S3-FIFO, LRU). */
#include "refmodel_int.h"

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

int alive(const struct rm_item *it, int64_t now)
{
	return it->expire == RM_NEVER || (it->expire != RM_EXPIRED && it->expire > now);
}

struct rm_item *find(const struct rm_store *s, const void *key, __u32 klen)
{
	for (__u32 i = 0; i < s->n; i++)
		if (s->items[i].klen == klen && !memcmp(s->items[i].key, key, klen))
			return &s->items[i];
	return NULL;
}

static void set_forget(struct rm_store *s, const struct rm_item *it);

void drop(struct rm_store *s, struct rm_item *it)
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

__u32 set_of(const struct rm_store *s, const void *key, __u32 klen)
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
struct rm_set *set_state(struct rm_store *s, __u32 b)
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

int64_t expiry(int64_t exptime, int64_t now)
{
	if (exptime == 0)
		return RM_NEVER;
	if (exptime < 0)
		return RM_EXPIRED;
	if (exptime <= 30LL * 24 * 3600)
		return now + exptime;
	return exptime;  /* absolute unix time; dead already if <= now */
}

/* Store an item under the layout's rule; counts store_new/overwrites in
 * delta when given. */
enum put_res put(struct rm_store *s, const void *key, __u32 klen, __u32 flags,
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
	it->stale = it->won = it->fetched = 0; /* a new item: not stale, no token out, unread */
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
