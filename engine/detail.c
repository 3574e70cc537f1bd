// SPDX-License-Identifier: MIT
/* stats detail on|off|dump: memcached's per-prefix counters (its
 * stats_prefix.c, as 1.6.18 has them).  A key's prefix is its bytes before
 * the first ':' (a key without one is not counted); each prefix counts the
 * keys gets asked for, how many of them hit, the sets (set, add, replace,
 * append, prepend, cas: the command, whatever it answered) and the deletes
 * (found or not).  The meta commands, incr, decr and the text touch count
 * nothing, as there.  The dump lists the prefixes in memcached's order: its
 * 256 buckets by MurmurHash3 (memcached's default hash) of the prefix, each
 * bucket newest first.
 * While detail is on, the XDP programs and the TCP verdict hand every
 * request to the slow path (the host entry's XKV_HOST_DETAIL), which is the
 * one that counts: the fast path costs nothing while it is off. */
#include "engine_int.h"
#include <murmurhash.h>
#include <stdio.h>
#include <stdlib.h>

#define DETAIL_BUCKETS 256 /* memcached's PREFIX_HASH_SIZE */
#define DETAIL_DELIM ':'   /* memcached's default -D */

struct detail_prefix {
	struct detail_prefix *next;
	__u64 gets, hits, sets, dels;
	__u32 len;
	__u8 p[];
};

void detail_init(struct slow_detail *d)
{
	pthread_mutex_init(&d->mu, NULL);
}

/* Every prefix counted so far goes (stats reset, the end). */
void detail_clear(struct slow_detail *d)
{
	pthread_mutex_lock(&d->mu);
	for (int i = 0; i < DETAIL_BUCKETS; i++) {
		for (struct detail_prefix *p = d->bucket[i], *n; p; p = n) {
			n = p->next;
			free(p);
		}
		d->bucket[i] = NULL;
	}
	pthread_mutex_unlock(&d->mu);
}

void detail_destroy(struct slow_detail *d)
{
	detail_clear(d);
	pthread_mutex_destroy(&d->mu);
}

/* The key's prefix entry (made on first use), NULL without a delimiter or
 * memory.  As memcached's stats_prefix_find, which compares the stored
 * prefix's first n bytes only: a shorter key prefix in the same bucket is
 * counted under a longer one that starts with it.  Under d->mu. */
static struct detail_prefix *find(struct slow_detail *d, const __u8 *key, __u32 klen)
{
	__u32 n = 0;
	while (n < klen && key[n] && key[n] != DETAIL_DELIM)
		n++;
	if (n == klen || !key[n])
		return NULL;
	uint32_t h;
	lmmh_x86_32(key, n, 0, &h);
	struct detail_prefix **b = &d->bucket[h % DETAIL_BUCKETS];
	for (struct detail_prefix *p = *b; p; p = p->next)
		if (p->len >= n && !memcmp(p->p, key, n))
			return p;
	struct detail_prefix *p = calloc(1, sizeof(*p) + n + 1);
	if (!p)
		return NULL;
	memcpy(p->p, key, n);
	p->len = n;
	p->next = *b;
	*b = p;
	return p;
}

void detail_count(struct slow_cmd *c, const __u8 *key, __u32 klen, enum detail_what what, bool hit)
{
	struct slow_detail *d = &c->sl->detail;
	if (!__atomic_load_n(&d->on, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&d->mu);
	struct detail_prefix *p = find(d, key, klen);
	if (p) {
		switch (what) {
		case DETAIL_GET: p->gets++, p->hits += hit; break;
		case DETAIL_SET: p->sets++; break;
		case DETAIL_DEL: p->dels++; break;
		}
	}
	pthread_mutex_unlock(&d->mu);
}

void detail_switch(struct xkv_slow *sl, bool on)
{
	__atomic_store_n(&sl->detail.on, on, __ATOMIC_RELAXED);
	if (sl->s && sl->s->host_fd >= 0)
		xkv_host_flags(sl->s, on ? XKV_HOST_DETAIL : 0, on ? 0 : XKV_HOST_DETAIL);
}

int detail_dump(struct xkv_slow *sl, struct xkv_buf *out)
{
	struct slow_detail *d = &sl->detail;
	int err = 0;
	pthread_mutex_lock(&d->mu);
	for (int i = 0; i < DETAIL_BUCKETS && !err; i++)
		for (struct detail_prefix *p = d->bucket[i]; p && !err; p = p->next)
			err = PUT_LIT(out, "PREFIX ") || xkv_buf_put(out, p->p, p->len) ||
			      buf_printf(out, " get %llu hit %llu set %llu del %llu\r\n",
					 (unsigned long long)p->gets, (unsigned long long)p->hits,
					 (unsigned long long)p->sets, (unsigned long long)p->dels);
	pthread_mutex_unlock(&d->mu);
	return err || PUT_LIT(out, XKV_R_END) ? -1 : 0;
}

/* The word after "detail" (w, n bytes): on, off or dump, done (out: the
 * dump); 1: none of them. */
int detail_cmd(struct xkv_slow *sl, const __u8 *w, __u32 n, struct xkv_buf *out)
{
	if (n == 2 && !memcmp(w, "on", 2))
		detail_switch(sl, true);
	else if (n == 3 && !memcmp(w, "off", 3))
		detail_switch(sl, false);
	else if (n == 4 && !memcmp(w, "dump", 4))
		return detail_dump(sl, out);
	else
		return 1;
	return 0;
}
