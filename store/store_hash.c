// SPDX-License-Identifier: MIT
/* Userspace accessor shared by the hash-like layouts (hash_map, lru, percpu,
 * lru_percpu).  A per-CPU map returns one value copy per CPU: reads take the
 * newest live copy (largest wtime_ns), writes go to every copy. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "xdpkv.h"

#define BATCH 1024

static int copies(const struct xkv_store *s)
{
	return xkv_map_percpu(s->L->map_type) ? s->ncpus : 1;
}

/* The newest live copy among n, or NULL. */
static const struct xkv_entry *newest_live(const struct xkv_store *s, const __u8 *vals, int n, __u64 now)
{
	const struct xkv_entry *best = NULL;
	for (int c = 0; c < n; c++) {
		const struct xkv_entry *e = (const void *)(vals + (size_t)c * s->cfg.entry_size);
		if (xkv_entry_live(e, now) && (!best || e->wtime_ns > best->wtime_ns))
			best = e;
	}
	return best;
}

/* The element of packed key k, raw (every copy) into vals: 1 present, 0
 * absent, <0 -errno. */
static int lookup_raw(const struct xkv_store *s, const __u8 *k, __u8 *vals)
{
	if (!bpf_map_lookup_elem(s->store_fd, k, vals))
		return 1;
	return errno == ENOENT ? 0 : -errno;
}

/* The newest live copy among vals that fits the value cap, or NULL. */
static const struct xkv_entry *live_entry(const struct xkv_store *s, const __u8 *vals)
{
	const struct xkv_entry *e = newest_live(s, vals, copies(s), xkv_now_ns());
	return e && e->len <= XKV_BIG_MAX ? e : NULL;
}

static void item_from(const struct xkv_store *s, const struct xkv_entry *e, struct xkv_item *it)
{
	it->flags = e->flags;
	it->len = e->len;
	it->expire_ns = e->expire_ns;
	it->wtime_ns = e->wtime_ns;
	it->state = e->klen & XKV_ENT_STATE;
	memcpy(it->data, e->data, xkv_inline_len(e->len, s->cfg.val_cap));
}

int xkv_hash_get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	__u8 *vals = malloc((size_t)copies(s) * s->cfg.entry_size);
	if (!vals)
		return -ENOMEM;
	int rc = lookup_raw(s, k, vals);
	if (rc == 1) {
		const struct xkv_entry *e = live_entry(s, vals);
		if (e)
			item_from(s, e, it);
		else
			rc = 0;
	}
	free(vals);
	return rc;
}

/* Lay out one entry as the map wants it: n identical copies. */
static __u8 *replicate(const struct xkv_store *s, const struct xkv_entry *e, int n)
{
	__u8 *vals = malloc((size_t)n * s->cfg.entry_size);
	if (vals)
		for (int c = 0; c < n; c++)
			memcpy(vals + (size_t)c * s->cfg.entry_size, e, s->cfg.entry_size);
	return vals;
}

static int map_err(int e)
{
	return e == E2BIG || e == ENOMEM ? -ENOMEM : -e;
}

/* The LRU layouts count the stores that create an item (store_new, as their
 * XDP side does: new items - deletes - live items estimates the evictions).
 * absent[i] = key i is not in the map; the other layouts do not count
 * (returns 0). */
static int lru_absent(const struct xkv_store *s, const __u8 *keys, __u32 n, bool *absent)
{
	memset(absent, 0, n * sizeof(*absent));
	if (!xkv_map_lru(s->L->map_type))
		return 0;
	void *val = malloc((size_t)copies(s) * s->cfg.entry_size); /* per-CPU: every copy */
	if (!val)
		return -ENOMEM;
	for (__u32 i = 0; i < n; i++)
		absent[i] = bpf_map_lookup_elem(s->store_fd, keys + (size_t)i * s->cfg.key_size, val) &&
			    errno == ENOENT;
	free(val);
	return 0;
}

/* set (BPF_ANY) and add (BPF_NOEXIST) */
static int hash_put(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *e,
		    __u64 how)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	if (e->len > XKV_BIG_MAX)
		return -E2BIG;
	int n = copies(s), rc = 0;
	const void *v = e;
	__u8 *vals = NULL;
	bool absent;
	if (lru_absent(s, k, 1, &absent))
		return -ENOMEM;
	if (n > 1) {
		v = vals = replicate(s, e, n);
		if (!vals)
			return -ENOMEM;
	}
	if (bpf_map_update_elem(s->store_fd, k, v, how))
		rc = errno == EEXIST ? -EEXIST : map_err(errno);
	else
		s->new_items += absent;
	free(vals);
	return rc;
}

int xkv_hash_set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *e)
{
	return hash_put(s, key, klen, e, BPF_ANY);
}

int xkv_hash_add(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *e)
{
	return hash_put(s, key, klen, e, BPF_NOEXIST);
}

#define SET_IF_TRIES 64

/* One try of xkv_hash_set_if; -EAGAIN: the element changed under it. */
static int set_if_once(struct xkv_store *s, const __u8 *k, xkv_decide_fn fn, void *arg,
		       struct xkv_entry *e, __u8 *vals, struct xkv_item *it)
{
	int present = lookup_raw(s, k, vals);
	if (present < 0)
		return present;
	const struct xkv_entry *cur = present ? live_entry(s, vals) : NULL;
	__u64 stamp = cur ? cur->wtime_ns : 0;
	if (cur)
		item_from(s, cur, it);
	int rc = fn(arg, cur ? it : NULL, e);
	if (rc)
		return rc;
	if (e->len > XKV_BIG_MAX)
		return -E2BIG;
	if (present) {
		/* Has a writer been here since the read?  What lands between this
		 * look and the update below is not seen: the window left. */
		int again = lookup_raw(s, k, vals);
		if (again < 0)
			return again;
		cur = again ? live_entry(s, vals) : NULL;
		if (!again || (cur ? cur->wtime_ns : 0) != stamp)
			return -EAGAIN;
	}
	int n = copies(s);
	__u8 *many = n > 1 ? replicate(s, e, n) : NULL;
	if (n > 1 && !many)
		return -ENOMEM;
	/* NOEXIST: nobody created it since we found none; EXIST: nobody deleted it */
	rc = bpf_map_update_elem(s->store_fd, k, many ? (void *)many : (void *)e,
				 present ? BPF_EXIST : BPF_NOEXIST) ? -errno : 0;
	free(many);
	if (rc == -EEXIST || rc == -ENOENT)
		return -EAGAIN;
	if (rc)
		return map_err(-rc);
	s->new_items += !present && xkv_map_lru(s->L->map_type);
	return 0;
}

int xkv_hash_set_if(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		    struct xkv_entry *e)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	__u8 *vals = malloc((size_t)copies(s) * s->cfg.entry_size);
	struct xkv_item *it = malloc(sizeof(*it));
	int rc = -ENOMEM;
	if (vals && it) {
		for (int i = 0; i < SET_IF_TRIES; i++) {
			if (i)
				sched_yield();
			rc = set_if_once(s, k, fn, arg, e, vals, it);
			if (rc != -EAGAIN)
				break;
		}
	}
	free(vals);
	free(it);
	return rc;
}

int xkv_hash_del(struct xkv_store *s, const void *key, __u32 klen)
{
	__u8 k[XKV_KEY_MAX + 8];
	int n = copies(s);
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	__u8 *vals = malloc((size_t)n * s->cfg.entry_size);
	if (!vals)
		return -ENOMEM;
	/* an expired item is already gone: NOT_FOUND, but free it anyway */
	bool found = !bpf_map_lookup_elem(s->store_fd, k, vals);
	int live = found && newest_live(s, vals, n, xkv_now_ns()) != NULL;
	free(vals);
	if (bpf_map_delete_elem(s->store_fd, k))
		return errno == ENOENT ? 0 : -errno;
	return found ? live : 1; /* absent a moment ago: a write made it meanwhile */
}

/* Walk the map in batches; visit(s, keys, vals, n, now, arg) for each batch. */
typedef long (*walk_fn)(struct xkv_store *s, __u8 *keys, __u8 *vals, __u32 cnt, __u64 now, void *arg);
static long walk(struct xkv_store *s, walk_fn visit, void *arg)
{
	int n = copies(s);
	size_t vsz = (size_t)n * s->cfg.entry_size;
	__u8 *keys = malloc((size_t)BATCH * s->cfg.key_size), *vals = malloc(BATCH * vsz);
	__u64 in = 0, out = 0, now = xkv_now_ns();
	long total = 0;
	bool first = true;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (!keys || !vals) {
		total = -ENOMEM;
		goto done;
	}
	for (;;) {
		__u32 cnt = BATCH;
		int e = bpf_map_lookup_batch(s->store_fd, first ? NULL : &in, &out, keys, vals, &cnt, &opts);
		int err = e ? errno : 0;
		first = false;
		if (e && err != ENOENT) {
			total = -err;
			break;
		}
		if (cnt) {
			long r = visit(s, keys, vals, cnt, now, arg);
			if (r < 0) {
				total = r;
				break;
			}
			total += r;
		}
		if (err == ENOENT)
			break;
		in = out;
	}
done:
	free(keys);
	free(vals);
	return total;
}

static long count_live(struct xkv_store *s, __u8 *keys, __u8 *vals, __u32 cnt, __u64 now, void *arg)
{
	size_t vsz = (size_t)copies(s) * s->cfg.entry_size;
	long live = 0;
	for (__u32 i = 0; i < cnt; i++)
		live += newest_live(s, vals + i * vsz, copies(s), now) != NULL;
	return live;
}

/* Stamped above the cut: the element's newest live copy is (what get
 * answers); one with no live copy goes. */
static bool above_cut(const struct xkv_store *s, const __u8 *vals, __u64 now, __u64 cut)
{
	const struct xkv_entry *e = newest_live(s, vals, copies(s), now);
	return e && e->wtime_ns > cut;
}

/* Delete the batch's elements stamped up to the cut (*arg); returns those
 * deleted.  The batch was copied a while ago: an element it shows at or
 * below the cut is read again just before its delete, and kept if a write
 * put it above the cut meanwhile.  What the maps cannot close: a write
 * between that read and the delete (two syscalls apart; from XDP, or any
 * process's, the slow path's too) is deleted with the element: a map delete
 * takes no condition, and the entries hold no bpf_spin_lock for BPF_F_LOCK. */
static long delete_upto(struct xkv_store *s, __u8 *keys, __u8 *vals, __u32 cnt, __u64 now, void *arg)
{
	__u64 cut = *(const __u64 *)arg;
	size_t vsz = (size_t)copies(s) * s->cfg.entry_size;
	__u8 *cur = cut == XKV_FLUSH_ALL ? NULL : malloc(vsz);
	long gone = 0;
	if (cut != XKV_FLUSH_ALL && !cur)
		return -ENOMEM;
	for (__u32 i = 0; i < cnt; i++) {
		const __u8 *k = keys + (size_t)i * s->cfg.key_size;
		if (cur) {
			if (above_cut(s, vals + i * vsz, now, cut))
				continue;
			int r = lookup_raw(s, k, cur);
			if (r < 0) {
				gone = r;
				break;
			}
			if (!r || above_cut(s, cur, xkv_now_ns(), cut))
				continue;
		}
		if (!bpf_map_delete_elem(s->store_fd, k))
			gone++;
		else if (errno != ENOENT) {
			gone = -errno;
			break;
		}
	}
	free(cur);
	return gone;
}

long xkv_hash_count(struct xkv_store *s)
{
	return walk(s, count_live, NULL);
}

int xkv_hash_flush(struct xkv_store *s, __u64 cut)
{
	/* deleting during a batch walk can skip buckets: repeat until a walk
	 * finds nothing more to delete */
	for (int round = 0; round < 16; round++) {
		long r = walk(s, delete_upto, &cut);
		if (r <= 0)
			return r < 0 ? (int)r : 0;
	}
	return -EAGAIN;
}

long xkv_hash_set_batch(struct xkv_store *s, const __u8 *keys, const __u8 *entries, __u32 n)
{
	int c = copies(s);
	const __u8 *vals = entries;
	__u8 *rep = NULL; /* c > 1: each entry once per CPU */
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);

	if (!n)
		return 0;
	bool *absent = malloc(n * sizeof(*absent));
	if (!absent || lru_absent(s, keys, n, absent)) {
		free(absent);
		return -ENOMEM;
	}
	if (c > 1) {
		rep = malloc((size_t)n * c * s->cfg.entry_size);
		if (!rep) {
			free(absent);
			return -ENOMEM;
		}
		for (__u32 i = 0; i < n; i++)
			for (int k = 0; k < c; k++)
				memcpy(rep + ((size_t)i * c + k) * s->cfg.entry_size,
				       entries + (size_t)i * s->cfg.entry_size, s->cfg.entry_size);
		vals = rep;
	}
	__u32 cnt = n;
	int e = bpf_map_update_batch(s->store_fd, keys, vals, &cnt, &opts);
	int err = e ? errno : 0;
	free(rep);
	for (__u32 i = 0; i < cnt && i < n; i++)
		s->new_items += absent[i];
	free(absent);
	if (e && !cnt)
		return map_err(err);
	return cnt;
}

/* ---- scans (snapshot, dump) ----
 * A hash map's batch token is its bucket index (kernel/bpf/hashtab.c, since
 * 5.6): a walk may start at any bucket, and a batch holds whole buckets, each
 * copied under its bucket lock, so an entry read this way is one whole
 * version (an update replaces the element under that lock; docs/snapshots.md).
 * A range [lo, hi) of buckets is walked from lo; the batch that crosses hi
 * may hold buckets past it, which belong to the next range: their keys are
 * found by one more batch from hi and dropped.  If the token were ever not a
 * bucket index the walk would stay correct for one range (lo 0, hi the end). */

/* Elements per lookup_batch call: the kernel still copies bucket by bucket
 * inside a call, so larger batches only save system calls (docs/results.md,
 * "Snapshots"); the buffer stays under SCAN_BATCH_BYTES (per-CPU values are
 * one copy per CPU). */
#define SCAN_BATCH 8192u
#define SCAN_BATCH_MIN 256u
#define SCAN_BATCH_BYTES (16u << 20)

static __u32 scan_batch(size_t vsz)
{
	size_t n = SCAN_BATCH_BYTES / vsz;
	return n > SCAN_BATCH ? SCAN_BATCH : n < SCAN_BATCH_MIN ? SCAN_BATCH_MIN : (__u32)n;
}

__u64 xkv_hash_span(const struct xkv_store *s)
{
	__u64 n = 1;
	while (n < s->cfg.entries) /* the kernel's n_buckets: entries rounded up to a power of 2 */
		n <<= 1;
	return n;
}

struct keyset {
	__u8 *keys;
	__u32 n, size;
};

static int key_cmp(const void *a, const void *b, void *size)
{
	return memcmp(a, b, *(__u32 *)size);
}

static bool keyset_has(const struct keyset *ks, const __u8 *k)
{
	__u32 lo = 0, hi = ks->n;
	while (lo < hi) {
		__u32 mid = (lo + hi) / 2;
		int c = memcmp(ks->keys + (size_t)mid * ks->size, k, ks->size);
		if (!c)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* The keys of buckets [from, ...) that one batch of up to n items returns:
 * those of the crossing batch that lie past the range.  Sorted into ks. */
static int keys_past(struct xkv_store *s, __u32 from, __u32 n, struct keyset *ks, __u8 *vals)
{
	__u32 in = from, out, cnt = n;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	ks->n = 0;
	ks->size = s->cfg.key_size;
	if (bpf_map_lookup_batch(s->store_fd, &in, &out, ks->keys, vals, &cnt, &opts) &&
	    errno != ENOENT) {
		if (errno == ENOSPC) /* its first bucket is larger than the crossing batch: none of it */
			return 0;
		return -errno;
	}
	ks->n = cnt;
	qsort_r(ks->keys, cnt, ks->size, key_cmp, &ks->size);
	return 0;
}

/* Maps without batch operations: one walk with get_next_key (lo 0 only). */
static long scan_iterate(struct xkv_store *s, xkv_visit_fn fn, void *arg, __u8 *key, __u8 *next,
			 __u8 *vals)
{
	long n = 0;
	bool first = true;
	while (!bpf_map_get_next_key(s->store_fd, first ? NULL : key, next)) {
		first = false;
		memcpy(key, next, s->cfg.key_size);
		if (bpf_map_lookup_elem(s->store_fd, key, vals))
			continue; /* deleted meanwhile */
		const struct xkv_entry *e = newest_live(s, vals, copies(s), xkv_now_ns());
		if (!e || e->len > XKV_BIG_MAX)
			continue;
		int r = fn(arg, key, (__u32)strnlen((const char *)key, s->cfg.key_size), e, e->data);
		if (r)
			return r;
		n++;
	}
	return errno == ENOENT ? n : -errno;
}

long xkv_hash_scan(struct xkv_store *s, __u64 lo, __u64 hi, xkv_visit_fn fn, void *arg, __u64 *busy)
{
	int c = copies(s);
	size_t vsz = (size_t)c * s->cfg.entry_size;
	__u32 batch = scan_batch(vsz);
	struct keyset past = { .keys = malloc((size_t)batch * s->cfg.key_size) };
	__u8 *keys = malloc((size_t)batch * s->cfg.key_size), *vals = malloc(batch * vsz);
	__u32 in = lo > UINT32_MAX ? UINT32_MAX : (__u32)lo, out = 0;
	bool first = true;
	long total = 0;
	int retries = 0;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (!keys || !vals || !past.keys) {
		total = -ENOMEM;
		goto done;
	}
	if (lo >= xkv_hash_span(s) && hi != UINT64_MAX)
		goto done;
	for (;;) {
		__u32 cnt = batch;
		int e = bpf_map_lookup_batch(s->store_fd, &in, &out, keys, vals, &cnt, &opts);
		int err = e ? errno : 0;
		if (e && first && (err == EINVAL || err == EOPNOTSUPP || err == 524 /* ENOTSUPP */)) {
			total = lo ? 0 : scan_iterate(s, fn, arg, keys, past.keys, vals);
			break;
		}
		first = false;
		/* the kernel could not take a bucket lock (re-entry, or 6.15+'s
		 * resilient lock gave up): nothing was copied; try that batch again */
		if (e && (err == EBUSY || err == EDEADLK || err == ETIMEDOUT) && ++retries < 100) {
			sched_yield();
			continue;
		}
		if (e && err != ENOENT) {
			total = -err;
			break;
		}
		retries = 0;
		bool last = err == ENOENT || out >= hi;
		if (last && hi != UINT64_MAX && cnt) {
			__u8 *pvals = malloc(batch * vsz);
			int r = pvals ? keys_past(s, (__u32)hi, cnt, &past, pvals) : -ENOMEM;
			free(pvals);
			if (r) {
				total = r;
				break;
			}
		}
		__u64 now = xkv_now_ns();
		for (__u32 i = 0; i < cnt; i++) {
			const __u8 *k = keys + (size_t)i * s->cfg.key_size;
			if (last && past.n && keyset_has(&past, k))
				continue;
			const struct xkv_entry *en = newest_live(s, vals + i * vsz, c, now);
			if (!en || en->len > XKV_BIG_MAX)
				continue;
			int r = fn(arg, k, (__u32)strnlen((const char *)k, s->cfg.key_size), en, en->data);
			if (r) {
				total = r;
				goto done;
			}
			total++;
		}
		if (last)
			break;
		in = out;
	}
done:
	free(past.keys);
	free(keys);
	free(vals);
	(void)busy;
	return total;
}
