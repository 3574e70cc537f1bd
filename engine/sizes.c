// SPDX-License-Identifier: MIT
/* stats sizes, sizes_enable, sizes_disable: memcached's item size
 * histogram (its items.c, item_stats_sizes_*, as 1.6.18 has them).
 * Enabled, it counts the items written since the enable, each in the
 * 32-byte bucket of the size memcached would give it (ITEM_ntotal: its
 * 48-byte item header, the key and a NUL, the value and its \r\n, 4 bytes
 * of client flags when they are not 0, 8 of cas), listed as
 * "STAT <bucket * 32> <count>" for each bucket not empty, in ascending
 * order.  memcached marks the enable with its cas counter and counts an
 * item linked with a cas at or above it; here the item's cas is its write
 * stamp (wtime_ns), and the mark a stamp taken at the enable.
 * memcached counts as it links and unlinks items; this store keeps no
 * count: each stats sizes while enabled walks the whole store (the
 * layout's scan, as lru_crawler metadump), so its cost grows with the
 * store's entries.  What that changes: an expired item memcached has not
 * unlinked yet still counts there, not here; an item whose cas changes
 * where it stands (md I) counts here from then, not there. */
#include "engine_int.h"
#include <stdlib.h>

#define SIZES_BUCKET 32 /* memcached's granularity */
/* memcached's ITEM_ntotal for a key of klen bytes, a value of len and the
 * client flags: sizeof(item) 48 (64-bit), key + NUL, value + \r\n, the
 * flags when not 0, the cas */
#define SIZES_ITEM_HDR 48u
static __u64 sizes_ntotal(__u32 klen, __u32 len, __u32 flags)
{
	return SIZES_ITEM_HDR + klen + 1u + (__u64)len + 2u + (flags ? 4u : 0u) + 8u;
}
/* buckets enough for the largest item: a longest key, a largest value */
#define SIZES_NBUCKETS \
	((SIZES_ITEM_HDR + XKV_KEY_MAX + 1u + XKV_BIG_MAX + 2u + 12u) / SIZES_BUCKET + 2u)

struct sizes_walk {
	struct xkv_slow *sl;
	__u64 from, now, walks;
	__u32 *hist; /* SIZES_NBUCKETS counts */
};

static int sizes_visit(void *arg, const __u8 *key, __u32 klen, const struct xkv_entry *e,
		       const __u8 *val)
{
	struct sizes_walk *w = arg;
	(void)key;
	(void)val;
	if (e->wtime_ns < w->from || (e->expire_ns && e->expire_ns <= w->now) ||
	    flushed(w->sl, e->wtime_ns, w->walks))
		return 0;
	__u64 b = (sizes_ntotal(klen, e->len, e->flags) + SIZES_BUCKET - 1) / SIZES_BUCKET;
	if (b < SIZES_NBUCKETS)
		w->hist[b]++;
	return 0;
}

/* The histogram's lines into c->out (none for an empty one): 0, or -1
 * without memory or when the walk fails (answered as a reply that could
 * not be built, text and binary alike). */
static int sizes_list(struct slow_cmd *c, __u64 from)
{
	struct xkv_store *s = c->s;
	struct sizes_walk w = { .sl = c->sl, .from = from, .now = xkv_now_ns(),
				.walks = __atomic_load_n(&c->sl->flush_walks, __ATOMIC_ACQUIRE) };
	if (!s->L->scan || !(w.hist = calloc(SIZES_NBUCKETS, sizeof(*w.hist))))
		return -1;
	__u64 busy = 0;
	long n = s->L->scan(s, 0, UINT64_MAX, sizes_visit, &w, &busy);
	int err = n < 0;
	for (__u32 i = 0; !err && i < SIZES_NBUCKETS; i++)
		if (w.hist[i])
			err = buf_printf(c->out, "STAT %u %u\r\n", i * SIZES_BUCKET, w.hist[i]);
	free(w.hist);
	return err ? -1 : 0;
}

int stats_sizes(struct slow_cmd *c, enum sizes_what what)
{
	struct xkv_slow *sl = c->sl;
	if (what == SIZES_ENABLE) {
		/* the mark: a write stamp less its writer's id, above every
		 * stamp this process gave before and at or below every one it
		 * gives after (another writer's, the XDP programs', is its
		 * clock: to within the microseconds its stamps may run ahead of
		 * it).  A second enable keeps the first one's mark, as memcached
		 * keeps its histogram; 0 is "off", so the mark never is. */
		__u64 off = 0, mark = (xkv_write_stamp() & ~XKV_STAMP_ID_MASK) ?: 1;
		__atomic_compare_exchange_n(&sl->sizes_from, &off, mark, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
		return PUT_LIT(c->out, "STAT sizes_status enabled\r\n") ? -1 : STATS_NO_END;
	}
	if (what == SIZES_DISABLE) {
		__atomic_store_n(&sl->sizes_from, 0, __ATOMIC_RELEASE);
		return PUT_LIT(c->out, "STAT sizes_status disabled\r\n") ? -1 : STATS_NO_END;
	}
	__u64 from = __atomic_load_n(&sl->sizes_from, __ATOMIC_ACQUIRE);
	if (!from)
		return PUT_LIT(c->out, "STAT sizes_status disabled\r\n") ? -1 : 0;
	return sizes_list(c, from);
}
