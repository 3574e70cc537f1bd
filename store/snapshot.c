// SPDX-License-Identifier: MIT
/* Snapshot and restore of a store (docs/snapshots.md).  A snapshot splits the
 * layout's scan span into one range per thread; each thread packs the live
 * items it visits into blocks and appends them (store/snapfile.c).  A
 * restore hands the file's blocks to threads, which check, decompress and
 * store them in batches through the target layout's accessor. */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "snapshot.h"

double xkv_secs(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- threads ---- */

struct thr {
	void *(*fn)(void *);
	void *arg;
	atomic_int *left;
};

static void *thr_main(void *p)
{
	struct thr *t = p;
	t->fn(t->arg);
	atomic_fetch_sub(t->left, 1);
	return NULL;
}

int xkv_run_threads(int n, void *(*fn)(void *), void **args, void (*tick)(void *ctx, double secs),
		    void *ctx)
{
	pthread_t *tid = calloc((size_t)n, sizeof(*tid));
	struct thr *t = calloc((size_t)n, sizeof(*t));
	atomic_int left = n;
	int started = 0, e = 0;
	double t0 = xkv_secs(), last = t0;

	if (!tid || !t) {
		free(tid);
		free(t);
		return -ENOMEM;
	}
	for (; started < n; started++) {
		t[started] = (struct thr){ fn, args[started], &left };
		if ((e = -pthread_create(&tid[started], NULL, thr_main, &t[started])))
			break;
	}
	atomic_fetch_sub(&left, n - started);
	while (atomic_load(&left) > 0) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		double now = xkv_secs();
		if (tick && now - last >= 1.0) {
			last = now;
			tick(ctx, now - t0);
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	free(tid);
	free(t);
	return e;
}

int xkv_default_threads(int n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (n > 0)
		return n;
	return cpus > 0 ? (int)cpus : 1;
}

void xkv_scan_range(__u64 span, int idx, int n, __u64 *lo, __u64 *hi)
{
	*lo = span * (__u64)idx / (__u64)n;
	*hi = idx == n - 1 ? UINT64_MAX : span * (__u64)(idx + 1) / (__u64)n;
}

/* Keep the first error of several threads. */
static void first_error(atomic_int *slot, int e)
{
	int zero = 0;
	if (e)
		atomic_compare_exchange_strong(slot, &zero, e);
}

/* ---- snapshot ---- */

struct snap_ctx {
	struct xkv_store *s;
	struct xkv_snap_writer *w;
	const struct xkv_snap_opts *o;
	__u64 span;
	size_t block;         /* uncompressed bytes per block */
	int nthr;
	atomic_ullong busy;
	atomic_int error;
};

struct snap_thr {
	struct snap_ctx *c;
	int idx;
	__u8 *buf;
	size_t len;
	__u32 items;
	struct xkv_big_reader big; /* a value above val_cap, from its chunks */
};

static int snap_flush(struct snap_thr *t)
{
	int e = 0;
	if (t->items)
		e = xkv_snap_put_block(t->c->w, t->buf, t->len, t->items);
	t->len = 0;
	t->items = 0;
	return e;
}

static int snap_visit(void *arg, const __u8 *key, __u32 klen, const struct xkv_entry *e, const __u8 *val)
{
	struct snap_thr *t = arg;
	int r = xkv_big_resolve(t->c->s, &t->big, key, klen, &e, &val); /* above val_cap */
	if (r <= 0)
		return r; /* 0: gone meanwhile */
	struct xkv_snap_item it = {
		.key = key, .klen = klen, .val = val, .vlen = e->len, .flags = e->flags,
		.expire_unix_ns = e->expire_ns ? (__u64)((__s64)e->expire_ns + t->c->s->cfg.realtime_off_ns) : 0,
		.has_cas = true, .cas = e->wtime_ns, /* the write stamp is the cas unique */
	};
	size_t need = xkv_snap_item_size(klen, e->len, true);
	if (t->len + need > t->c->block) {
		int r = snap_flush(t);
		if (r)
			return r;
	}
	t->len += xkv_snap_item_put(t->buf + t->len, &it);
	t->items++;
	return atomic_load(&t->c->error) ? -ECANCELED : 0;
}

static void *snap_worker(void *arg)
{
	struct snap_thr *t = arg;
	struct snap_ctx *c = t->c;
	__u64 lo, hi, busy = 0;
	xkv_scan_range(c->span, t->idx, c->nthr, &lo, &hi);
	/* a block holds at least one item, whatever its size */
	t->buf = malloc(c->block + xkv_snap_item_size(XKV_KEY_MAX, XKV_BIG_MAX, true));
	if (!t->buf) {
		first_error(&c->error, -ENOMEM);
		return NULL;
	}
	long r = c->s->L->scan(c->s, lo, hi, snap_visit, t, &busy);
	atomic_fetch_add(&c->busy, busy);
	if (r < 0 && r != -ECANCELED)
		first_error(&c->error, (int)r);
	else if (r >= 0)
		first_error(&c->error, snap_flush(t));
	free(t->buf);
	xkv_big_reader_free(&t->big);
	return NULL;
}

static void snap_tick(void *ctx, double secs)
{
	struct snap_ctx *c = ctx;
	struct xkv_snap_totals t;
	xkv_snap_writer_totals(c->w, &t);
	c->o->progress(c->o->arg, t.items, t.file_bytes, secs);
}

int xkv_snapshot(struct xkv_store *s, const char *path, const struct xkv_snap_opts *o,
		 struct xkv_snap_result *res, char *err, size_t errlen)
{
	struct snap_ctx c = { .s = s, .o = o };
	struct xkv_snap_info info = { .key_cap = s->cfg.key_cap, .val_cap = s->cfg.val_cap,
				      .entries = s->cfg.entries };
	double t0 = xkv_secs();
	int e;

	memset(res, 0, sizeof(*res));
	if (!s->L->scan || !s->L->span)
		return xkv_errf(err, errlen, -EOPNOTSUPP, "layout %s cannot be scanned", s->L->name);
	snprintf(info.layout, sizeof(info.layout), "%s", s->L->name);
	c.nthr = xkv_default_threads(o->threads);
	c.block = o->block_bytes ? o->block_bytes : XKV_SNAP_BLOCK_RAW;
	c.span = s->L->span(s);
	if ((e = xkv_snap_create(&c.w, path, &info, o->codec, o->level, err, errlen)))
		return e;
	struct snap_thr *t = calloc((size_t)c.nthr, sizeof(*t));
	void **args = calloc((size_t)c.nthr, sizeof(*args));
	if (!t || !args) {
		e = xkv_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	for (int i = 0; i < c.nthr; i++) {
		t[i] = (struct snap_thr){ .c = &c, .idx = i };
		args[i] = &t[i];
	}
	e = xkv_run_threads(c.nthr, snap_worker, args, o->progress ? snap_tick : NULL, &c);
	if (e || (e = atomic_load(&c.error))) {
		xkv_errf(err, errlen, e, "reading the store or writing %s: %s", path, strerror(-e));
		goto fail;
	}
	struct xkv_snap_totals tot;
	xkv_snap_writer_totals(c.w, &tot);
	res->items = tot.items;
	res->raw_bytes = tot.raw_bytes;
	res->file_bytes = tot.file_bytes;
	res->blocks = tot.blocks;
	res->busy = atomic_load(&c.busy);
	res->threads = c.nthr;
	if (tot.items < o->min_items) {
		e = xkv_errf(err, errlen, -ERANGE, "the store holds %llu items, fewer than the %llu "
			     "that %s held: it is not replaced", (unsigned long long)tot.items,
			     (unsigned long long)o->min_items, path);
		goto fail;
	}
	e = xkv_snap_commit(c.w, err, errlen);
	c.w = NULL;
	if (e)
		goto fail;
	res->seconds = xkv_secs() - t0;
	free(t);
	free(args);
	return 0;
fail:
	xkv_snap_abort(c.w);
	free(t);
	free(args);
	return e;
}

/* ---- restore ---- */

#define RESTORE_BATCH 1024u

struct rest_ctx {
	struct xkv_store *s;
	struct xkv_snap_reader *r;
	const struct xkv_snap_opts *o;
	bool verify_only;
	atomic_size_t next;
	atomic_ullong items, bytes, stored, expired, too_big, bad_key, full, busy, bad_blocks, lost;
	atomic_ullong new_items, overwrites;
	atomic_int error;
	pthread_mutex_t mu;    /* bad_block callback */
};

struct rest_thr {
	struct rest_ctx *c;
	struct xkv_store s;   /* a copy: its new_items/overwrites are this thread's */
	__u8 *keys, *ents;
	__u32 n;
	__u64 now;
};

static void bad_block(struct rest_ctx *c, size_t i, const char *why)
{
	char name[96];
	atomic_fetch_add(&c->bad_blocks, 1);
	atomic_fetch_add(&c->lost, c->r->blk[i].h.items); /* 0 when its header is unreadable */
	if (c->o->bad_block) {
		pthread_mutex_lock(&c->mu);
		c->o->bad_block(c->o->arg, xkv_snap_blk_name(c->r, i, name, sizeof(name)), why);
		pthread_mutex_unlock(&c->mu);
	}
}

/* Count one item's store result r by what it was; 0, or r when it is an
 * error that ends the restore. */
static int rest_count(struct rest_thr *t, int r)
{
	if (!r)
		atomic_fetch_add(&t->c->stored, 1);
	else if (r == -ENOMEM || r == -E2BIG)
		atomic_fetch_add(&t->c->full, 1);
	else if (r == -EBUSY)
		atomic_fetch_add(&t->c->busy, 1);
	else
		return r;
	return 0;
}

/* Store the batch; items the store refuses are counted by why.  0 or -errno. */
static int rest_flush(struct rest_thr *t)
{
	struct xkv_store *s = &t->s;
	__u32 i = 0;
	while (i < t->n) {
		const __u8 *k = t->keys + (size_t)i * s->cfg.key_size;
		const __u8 *en = t->ents + (size_t)i * s->cfg.entry_size;
		long r = xkv_store_set_batch(s, k, en, t->n - i);
		if (r > 0) {
			atomic_fetch_add(&t->c->stored, (__u64)r);
			i += (__u32)r;
			continue;
		}
		/* item i was refused (a batch stops at the first error): why? */
		const struct xkv_entry *e = (const void *)en;
		int e2 = rest_count(t, s->L->set(s, k, e->klen, e));
		if (e2)
			return e2;
		i++;
	}
	t->n = 0;
	return 0;
}

/* A value above val_cap: its chunks, then its entry, at once (not batched). */
static int rest_big(struct rest_thr *t, const struct xkv_snap_item *it, __u64 expire)
{
	struct xkv_store *s = &t->s;
	if (xkv_key_check(&s->cfg, it->key, it->klen) != XKV_OK) {
		atomic_fetch_add(&t->c->bad_key, 1);
		return 0;
	}
	struct xkv_entry hdr = { .expire_ns = expire, .flags = it->flags, .len = it->vlen,
				 .wtime_ns = xkv_restore_stamp(it->has_cas ? it->cas : 0, true) };
	struct xkv_entry *e = malloc(s->cfg.entry_size);
	if (!e)
		return -ENOMEM;
	int r = xkv_big_carry(NULL, s, it->key, it->klen, &hdr, it->val, e);
	if (!r) {
		r = s->L->set(s, it->key, it->klen, e);
		if (r)
			xkv_big_del(s, it->key, it->klen, hdr.wtime_ns, it->vlen);
	}
	free(e);
	return rest_count(t, r);
}

/* Append one item to the batch, or count why it cannot go in.  0 or -errno. */
static int rest_add(struct rest_thr *t, const struct xkv_snap_item *it)
{
	struct xkv_store *s = &t->s;
	__u8 *k = t->keys + (size_t)t->n * s->cfg.key_size;
	struct xkv_entry *e = (void *)(t->ents + (size_t)t->n * s->cfg.entry_size);
	__u64 expire = 0;

	if (it->expire_unix_ns) {
		/* a file's expiry is any u64: one past the signed range (or
		 * whose conversion overflows) is the far future, not UB */
		__s64 mono;
		if (it->expire_unix_ns > (__u64)INT64_MAX ||
		    __builtin_sub_overflow((__s64)it->expire_unix_ns, s->cfg.realtime_off_ns, &mono))
			mono = INT64_MAX;
		if (mono <= (__s64)t->now) {
			atomic_fetch_add(&t->c->expired, 1);
			return 0;
		}
		expire = (__u64)mono;
	}
	if (it->klen > s->cfg.key_cap || it->vlen > xkv_val_max(s)) {
		atomic_fetch_add(&t->c->too_big, 1);
		return 0;
	}
	if (it->vlen > s->cfg.val_cap)
		return rest_big(t, it, expire);
	if (xkv_key_check(&s->cfg, it->key, it->klen) != XKV_OK || xkv_key_pack(&s->cfg, it->key, it->klen, k)) {
		atomic_fetch_add(&t->c->bad_key, 1);
		return 0;
	}
	memset(e, 0, XKV_ENTRY_HDR);
	e->expire_ns = expire;
	/* the item's cas unique as it was where that is safe (xdpkv.h); a file
	 * without one (written before xdpkv kept them) gets a fresh stamp */
	e->wtime_ns = xkv_restore_stamp(it->has_cas ? it->cas : 0, false);
	e->flags = it->flags;
	e->len = it->vlen;
	e->klen = it->klen;
	memcpy(e->data, it->val, it->vlen);
	memset(e->data + it->vlen, 0, s->cfg.entry_size - XKV_ENTRY_HDR - it->vlen);
	return ++t->n == RESTORE_BATCH ? rest_flush(t) : 0;
}

static int rest_block(struct rest_thr *t, size_t i)
{
	struct rest_ctx *c = t->c;
	struct xkv_snap_blkref *b = &c->r->blk[i];
	__u8 *raw = NULL;
	int e = xkv_snap_read_block(c->r, i, c->verify_only ? NULL : &raw);
	atomic_fetch_add(&c->bytes, sizeof(b->h) + b->h.comp_len);
	if (e == -EBADMSG) {
		bad_block(c, i, b->why);
		return 0;
	}
	if (e || c->verify_only)
		return e;
	const __u8 *p = raw, *end = raw + b->h.raw_len;
	struct xkv_snap_item it;
	__u32 got = 0;
	t->now = xkv_now_ns();
	while ((e = xkv_snap_item_next(&p, end, &it)) == 1) {
		got++;
		if ((e = rest_add(t, &it)))
			break;
	}
	if (!e && got != b->h.items)
		e = -1;
	if (e == -1) { /* the checksum held: a writer's bug, not damage */
		xkv_snap_blk_why(b, "malformed after %u of %u items", got, b->h.items);
		bad_block(c, i, b->why);
		e = 0;
	}
	atomic_fetch_add(&c->items, got);
	free(raw);
	return e ? e : rest_flush(t);
}

static void *rest_worker(void *arg)
{
	struct rest_thr *t = arg;
	struct rest_ctx *c = t->c;
	size_t i;
	t->keys = malloc((size_t)RESTORE_BATCH * t->s.cfg.key_size);
	t->ents = malloc((size_t)RESTORE_BATCH * t->s.cfg.entry_size);
	if (!t->keys || !t->ents)
		first_error(&c->error, -ENOMEM);
	while (!atomic_load(&c->error) && (i = atomic_fetch_add(&c->next, 1)) < c->r->nblk)
		first_error(&c->error, rest_block(t, i));
	atomic_fetch_add(&c->new_items, t->s.new_items);
	atomic_fetch_add(&c->overwrites, t->s.overwrites);
	free(t->keys);
	free(t->ents);
	return NULL;
}

static void rest_tick(void *ctx, double secs)
{
	struct rest_ctx *c = ctx;
	c->o->progress(c->o->arg, atomic_load(&c->items), atomic_load(&c->bytes), secs);
}

/* One pass over the blocks on n threads: verify only, or restore. */
static int rest_pass(struct rest_ctx *c, int n, bool verify)
{
	struct rest_thr *t = calloc((size_t)n, sizeof(*t));
	void **args = calloc((size_t)n, sizeof(*args));
	int e = -ENOMEM;
	c->verify_only = verify;
	atomic_store(&c->next, 0);
	if (t && args) {
		for (int i = 0; i < n; i++) {
			t[i].c = c;
			t[i].s = *c->s;
			t[i].s.new_items = t[i].s.overwrites = 0;
			args[i] = &t[i];
		}
		e = xkv_run_threads(n, rest_worker, args, c->o->progress && !verify ? rest_tick : NULL, c);
	}
	free(t);
	free(args);
	return e ? e : atomic_load(&c->error);
}

int xkv_restore(struct xkv_store *s, const char *path, const struct xkv_snap_opts *o,
		struct xkv_snap_result *res, char *err, size_t errlen)
{
	struct xkv_snap_reader r;
	struct rest_ctx c = { .s = s, .r = &r, .o = o };
	double t0 = xkv_secs();
	bool lru = s->L->map_type == BPF_MAP_TYPE_LRU_HASH;
	long live0 = 0;
	int n = xkv_default_threads(o->threads), e;

	memset(res, 0, sizeof(*res));
	if ((e = xkv_snap_open(&r, path, o->salvage, err, errlen)))
		return e;
	pthread_mutex_init(&c.mu, NULL);
	if (!o->salvage) { /* refuse a damaged file before changing the store */
		if ((e = rest_pass(&c, n, true))) {
			xkv_errf(err, errlen, e, "reading %s: %s", path, strerror(-e));
			goto out;
		}
		for (size_t i = 0; i < r.nblk; i++)
			if (r.blk[i].why) {
				char name[96];
				e = xkv_errf(err, errlen, -EBADMSG, "%s: %s: %s (%llu damaged blocks); "
					     "nothing restored; --salvage restores the blocks that are intact",
					     path, xkv_snap_blk_name(&r, i, name, sizeof(name)), r.blk[i].why,
					     (unsigned long long)atomic_load(&c.bad_blocks));
				goto out;
			}
		atomic_store(&c.bytes, 0);
	}
	if (lru && (live0 = s->L->count(s)) < 0) {
		e = xkv_errf(err, errlen, (int)live0, "counting the items: %s", strerror((int)-live0));
		goto out;
	}
	if ((e = rest_pass(&c, n, false))) {
		xkv_errf(err, errlen, e, "restoring %s: %s", path, strerror(-e));
		goto out;
	}
	s->new_items += atomic_load(&c.new_items);
	s->overwrites += atomic_load(&c.overwrites);
	if (lru) {
		long live1 = s->L->count(s);
		__u64 grew = live1 > live0 ? (__u64)(live1 - live0) : 0;
		__u64 fresh = atomic_load(&c.new_items);
		res->evicted = live1 >= 0 && fresh > grew ? fresh - grew : 0;
	}
	/* the layouts that store over another key's live item (array_fnv,
	 * set_assoc, sieve, s3fifo, arena) count it in overwrites */
	res->collisions = s->L->key_in_value ? atomic_load(&c.overwrites) : 0;
	/* the file's field need not end in a NUL: at most its 16 bytes */
	snprintf(res->layout, sizeof(res->layout), "%.*s", (int)sizeof(r.hdr.layout),
		 r.hdr_ok ? r.hdr.layout : "?");
	res->threads = n;
	res->items = atomic_load(&c.items);
	res->stored = atomic_load(&c.stored);
	res->expired = atomic_load(&c.expired);
	res->too_big = atomic_load(&c.too_big);
	res->bad_key = atomic_load(&c.bad_key);
	res->full = atomic_load(&c.full);
	res->busy = atomic_load(&c.busy);
	res->bad_blocks = atomic_load(&c.bad_blocks);
	res->lost_items = atomic_load(&c.lost);
	res->blocks = r.nblk;
	res->hdr_items = r.hdr_ok ? r.hdr.items : 0;
	res->hdr_blocks = r.hdr_ok ? r.hdr.blocks : 0;
	res->file_bytes = r.size;
	for (size_t i = 0; i < r.nblk; i++)
		res->raw_bytes += r.blk[i].bad ? 0 : r.blk[i].h.raw_len;
	res->seconds = xkv_secs() - t0;
out:
	pthread_mutex_destroy(&c.mu);
	xkv_snap_close(&r);
	return e;
}
