// SPDX-License-Identifier: MIT
/* Values longer than --value-size: their chunks in the "big" map (the design
 * is in entry.h, above struct xkv_big_key; docs/protocol.md, "Large values").
 * Userspace only: the slow path, snapshot/restore, migrate and the CLI. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "xdpkv.h"

bool xkv_big_on(const struct xkv_store *s)
{
	return s->big_fd >= 0 && s->cfg.big_chunks > 0;
}

__u32 xkv_val_max(const struct xkv_store *s)
{
	return xkv_big_on(s) ? XKV_BIG_MAX : s->cfg.val_cap;
}

static __u32 chunks_of(__u32 len)
{
	return (len + XKV_BIG_CHUNK - 1) / XKV_BIG_CHUNK;
}

static int big_key(struct xkv_big_key *k, const void *key, __u32 klen, __u64 stamp)
{
	if (klen > XKV_KEY_MAX)
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	k->stamp = stamp;
	k->klen = klen;
	memcpy(k->key, key, klen);
	return 0;
}

void xkv_big_del(const struct xkv_store *s, const void *key, __u32 klen, __u64 stamp, __u32 len)
{
	struct xkv_big_key k;

	if (s->big_fd < 0 || big_key(&k, key, klen, stamp))
		return;
	for (__u32 i = 0, n = chunks_of(len); i < n; i++) {
		k.idx = i;
		bpf_map_delete_elem(s->big_fd, &k); /* a missing one is fine */
	}
}

int xkv_big_put(const struct xkv_store *s, const void *key, __u32 klen, __u64 stamp, const __u8 *val,
		__u32 len)
{
	struct xkv_big_key k;
	struct xkv_big_chunk *c;
	int e = 0;

	if (!xkv_big_on(s) || len > XKV_BIG_MAX)
		return -E2BIG;
	if (big_key(&k, key, klen, stamp))
		return -EINVAL;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	__u32 n = chunks_of(len), i;
	for (i = 0; i < n; i++) {
		__u32 off = i * XKV_BIG_CHUNK, m = len - off < XKV_BIG_CHUNK ? len - off : XKV_BIG_CHUNK;
		k.idx = i;
		c->len = m;
		c->total = len;
		memcpy(c->data, val + off, m);
		if (m < XKV_BIG_CHUNK)
			memset(c->data + m, 0, XKV_BIG_CHUNK - m);
		if (bpf_map_update_elem(s->big_fd, &k, c, BPF_ANY)) {
			/* the map is full (E2BIG) or the kernel is out of memory */
			e = errno == E2BIG ? -ENOMEM : -errno;
			break;
		}
	}
	free(c);
	if (e)
		xkv_big_del(s, key, klen, stamp, i * XKV_BIG_CHUNK);
	return e;
}

int xkv_big_get(const struct xkv_store *s, const void *key, __u32 klen, __u64 stamp, __u32 len,
		__u8 *out)
{
	struct xkv_big_key k;
	struct xkv_big_chunk *c;
	int ret = 1;

	if (s->big_fd < 0 || len > XKV_BIG_MAX)
		return 0;
	if (big_key(&k, key, klen, stamp))
		return -EINVAL;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (__u32 i = 0, n = chunks_of(len); i < n && ret == 1; i++) {
		__u32 off = i * XKV_BIG_CHUNK, m = len - off < XKV_BIG_CHUNK ? len - off : XKV_BIG_CHUNK;
		k.idx = i;
		if (bpf_map_lookup_elem(s->big_fd, &k, c))
			ret = errno == ENOENT ? 0 : -errno;
		else if (c->len != m || c->total != len)
			ret = 0; /* not this value's: cannot happen with the stamp in the key */
		else
			memcpy(out + off, c->data, m);
	}
	free(c);
	return ret;
}

/* ---- the collector ---- */

static int key_cmp(const void *a, const void *b)
{
	const struct xkv_big_key *x = a, *y = b;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	int c = memcmp(x->key, y->key, x->klen);
	if (c)
		return c;
	if (x->stamp != y->stamp)
		return x->stamp < y->stamp ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool big_kept(const struct xkv_big_keep *keep, __u64 stamp)
{
	for (size_t i = 0; keep && i < keep->n; i++)
		if (keep->stamps[i] == stamp)
			return true;
	return false;
}

long xkv_big_collect(struct xkv_store *s, __u64 grace_ns, const struct xkv_big_keep *keep,
		     struct xkv_big_census *out)
{
	struct xkv_big_census cs = {};
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);

	if (out)
		*out = cs;
	if (s->big_fd < 0)
		return 0;
	if (bpf_obj_get_info_by_fd(s->big_fd, &info, &ilen))
		return -errno;
	/* the keys first (the map changes under a walk that deletes), then
	 * one look at the store per (key, stamp); the list grows with the map
	 * (272 bytes per 4 KiB chunk), not with its max_entries */
	size_t cap = 1024, n = 0;
	struct xkv_big_key *keys = malloc(cap * sizeof(*keys));
	struct xkv_item *it = malloc(sizeof(*it));
	long rc = 0;
	if (!keys || !it) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (n == cap) {
			struct xkv_big_key *k2 = realloc(keys, 2 * cap * sizeof(*keys));
			if (!k2) {
				rc = -ENOMEM;
				goto out;
			}
			keys = k2;
			cap *= 2;
		}
		if (bpf_map_get_next_key(s->big_fd, n ? &keys[n - 1] : NULL, &keys[n])) {
			if (errno != ENOENT)
				rc = -errno;
			break;
		}
		n++;
	}
	if (rc)
		goto out;
	qsort(keys, n, sizeof(*keys), key_cmp);
	__u64 now = keep && keep->since_ns ? keep->since_ns : xkv_now_ns();
	__u64 cut = now > grace_ns ? now - grace_ns : 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && keys[j].klen == keys[i].klen && keys[j].stamp == keys[i].stamp &&
		       !memcmp(keys[j].key, keys[i].key, keys[i].klen))
			j++;
		/* live: the store's item for the key has this stamp; young: a write
		 * may be putting its chunks before its entry; busy: asked again next time */
		int hit = s->L->get(s, keys[i].key, keys[i].klen, it);
		bool stays = hit == -EBUSY || hit == -ENOMEM ||
			     (hit == 1 && it->wtime_ns == keys[i].stamp && it->len > s->cfg.val_cap) ||
			     (keys[i].stamp & ~XKV_STAMP_ID_MASK) >= cut || big_kept(keep, keys[i].stamp);
		if (stays) {
			cs.chunks += j - i;
			if (hit == 1 && it->wtime_ns == keys[i].stamp) {
				cs.items++;
				cs.bytes += it->len;
			}
		} else {
			for (size_t m = i; m < j; m++)
				if (!bpf_map_delete_elem(s->big_fd, &keys[m]))
					cs.removed++;
		}
		i = j;
	}
	cs.capacity = info.max_entries;
	if (out)
		*out = cs;
	rc = (long)cs.chunks;
out:
	free(keys);
	free(it);
	return rc;
}

/* ---- whole items, for those that copy them (snapshot, migrate) ---- */

int xkv_item_get_whole(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it,
		       __u8 **buf, size_t *cap)
{
	for (int i = 0; i < 16; i++) {
		int hit = s->L->get(s, key, klen, it);
		if (hit != 1 || it->len <= s->cfg.val_cap)
			return hit;
		if (*cap < it->len) {
			__u8 *p = realloc(*buf, it->len);
			if (!p)
				return -ENOMEM;
			*buf = p;
			*cap = it->len;
		}
		int r = xkv_big_get(s, key, klen, it->wtime_ns, it->len, *buf);
		if (r != 0)
			return r;
	}
	return -EBUSY;
}

/* Do two fds name one map? */
static bool same_map(int a, int b)
{
	struct bpf_map_info x = {}, y = {};
	__u32 lx = sizeof(x), ly = sizeof(y);
	return a >= 0 && b >= 0 && !bpf_obj_get_info_by_fd(a, &x, &lx) && !bpf_obj_get_info_by_fd(b, &y, &ly) &&
	       x.id == y.id;
}

int xkv_big_carry(const struct xkv_store *from, const struct xkv_store *to, const void *key, __u32 klen,
		  const struct xkv_entry *src, const __u8 *val, struct xkv_entry *e)
{
	__u32 len = src->len;
	bool fbig = from && len > from->cfg.val_cap, tbig = len > to->cfg.val_cap;
	__u8 *tmp = NULL;
	int r = 0;

	if (len > XKV_BIG_MAX || (tbig && !xkv_big_on(to)))
		return -E2BIG;
	memset(e, 0, to->cfg.entry_size);
	e->expire_ns = src->expire_ns;
	e->wtime_ns = src->wtime_ns;
	e->flags = src->flags;
	e->len = len;
	e->klen = klen;
	if (!tbig) {
		if (!fbig) {
			memcpy(e->data, val, len);
			return 0;
		}
		r = xkv_big_get(from, key, klen, src->wtime_ns, len, e->data);
		return r == 1 ? 0 : r == 0 ? -ESTALE : r;
	}
	if (fbig && same_map(from->big_fd, to->big_fd))
		return 0; /* its chunks are there under this stamp already */
	if (fbig) {
		tmp = malloc(len);
		if (!tmp)
			return -ENOMEM;
		r = xkv_big_get(from, key, klen, src->wtime_ns, len, tmp);
		if (r != 1) {
			free(tmp);
			return r == 0 ? -ESTALE : r;
		}
		val = tmp;
	}
	r = xkv_big_put(to, key, klen, src->wtime_ns, val, len);
	free(tmp);
	return r;
}

int xkv_big_resolve(struct xkv_store *s, struct xkv_big_reader *br, const __u8 *key, __u32 klen,
		    const struct xkv_entry **e, const __u8 **val)
{
	if ((*e)->len <= s->cfg.val_cap)
		return 1;
	if (br->cap < (*e)->len) {
		__u8 *p = realloc(br->buf, (*e)->len);
		if (!p)
			return -ENOMEM;
		br->buf = p;
		br->cap = (*e)->len;
	}
	int r = xkv_big_get(s, key, klen, (*e)->wtime_ns, (*e)->len, br->buf);
	if (r == 0) { /* replaced since the scan read it: the item as it is now */
		if (!br->it && !(br->it = malloc(sizeof(*br->it))))
			return -ENOMEM;
		r = xkv_item_get_whole(s, key, klen, br->it, &br->buf, &br->cap);
		if (r != 1)
			return r;
		br->cur = (struct xkv_entry){ .expire_ns = br->it->expire_ns, .wtime_ns = br->it->wtime_ns,
					      .flags = br->it->flags, .len = br->it->len };
		*e = &br->cur;
		*val = br->it->len > s->cfg.val_cap ? br->buf : br->it->data;
		return 1;
	}
	if (r == 1)
		*val = br->buf;
	return r;
}

void xkv_big_reader_free(struct xkv_big_reader *br)
{
	free(br->buf);
	free(br->it);
	memset(br, 0, sizeof(*br));
}
