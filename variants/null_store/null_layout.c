// SPDX-License-Identifier: MIT
/* The null store's layout record, its accessors and its .bss filler.  Built
 * into libxdpkv (variants/CMakeLists.txt) so that attach can find it by name. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "null_layout.h"
#include "null_store.skel.h"

#define NULL_ITEM_OFF offsetof(struct null_store__bss, null_item)
#define NULL_ITEM_SIZE sizeof(((struct null_store__bss *)0)->null_item)

XKV_LAYOUT_ELF(null_store)

/* ---- accessors: the store map of an attached null store is its .bss
 * (store/loader.c pins it as "store"); they do what the XDP side does ---- */

/* The whole .bss into a new buffer (free()); NULL with errno set. */
static __u8 *bss_read(int fd)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), zero = 0;

	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return NULL;
	if (info.value_size < NULL_ITEM_OFF + NULL_ITEM_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	__u8 *buf = calloc(1, info.value_size);
	if (buf && bpf_map_lookup_elem(fd, &zero, buf)) {
		int e = errno;
		free(buf);
		errno = e;
		return NULL;
	}
	return buf;
}

/* Every key hits the one item (once it is written: wtime_ns != 0). */
static int null_get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it)
{
	__u8 *buf = bss_read(s->store_fd);
	if (!buf)
		return -errno;
	const struct xkv_entry *e = (const struct xkv_entry *)(buf + NULL_ITEM_OFF);
	int hit = e->wtime_ns != 0 && e->len <= XKV_VAL_MAX;
	if (hit) {
		it->flags = e->flags;
		it->len = e->len;
		it->expire_ns = e->expire_ns;
		it->wtime_ns = e->wtime_ns;
		it->state = e->klen & XKV_ENT_STATE;
		memcpy(it->data, e->data, e->len);
	}
	free(buf);
	return hit;
}

/* Sets succeed and are dropped, deletes find, as in null_store.bpf.c. */
static int null_set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *e)
{
	return 0;
}

static int null_del(struct xkv_store *s, const void *key, __u32 klen)
{
	return 1;
}

static long null_count(struct xkv_store *s)
{
	struct xkv_item *it = malloc(sizeof(*it));
	if (!it)
		return -ENOMEM;
	int r = null_get(s, "", 0, it);
	free(it);
	return r;
}

static int null_flush(struct xkv_store *s, __u64 cut)
{
	return 0;
}

/* After attach: the item every GET returns, --value-size bytes of a fixed
 * pattern, flags 0. */
static int null_loaded(struct bpf_object *obj, const struct xkv_config *cfg, char *err, size_t errlen)
{
	static const char pat[] = "0123456789abcdef";
	__u8 *v = malloc(cfg->val_cap ? cfg->val_cap : 1);
	if (!v) {
		snprintf(err, errlen, "null store: out of memory");
		return -ENOMEM;
	}
	for (__u32 i = 0; i < cfg->val_cap; i++)
		v[i] = (__u8)pat[i % (sizeof(pat) - 1)];
	int e = xkv_null_fill(obj, 0, v, cfg->val_cap, err, errlen);
	free(v);
	return e;
}

/* Not in the registry's list: found by name only (xkv_layout_find_any), so
 * that 'xdpkv --variant null attach' gives a capacity run its floor. */
const struct xkv_layout xkv_layout_null = {
	.name = "null",
	.summary = "benchmark floor: the XDP handler with a store that costs nothing",
	.loses = "everything: every get returns one fixed value of --value-size bytes, sets are dropped",
	.map_type = BPF_MAP_TYPE_UNSPEC,
	.key_in_value = false,
	.elf = elf,
	.get = null_get,
	.set = null_set,
	.del = null_del,
	.count = null_count,
	.flush = null_flush,
	.loaded = null_loaded,
	.bench_only = true,
};

int xkv_null_fill(struct bpf_object *obj, __u32 flags, const void *data, __u32 len,
		  char *err, size_t errlen)
{
	struct bpf_map *bss = bpf_object__find_map_by_name(obj, ".bss");
	__u32 zero = 0;
	int rc = 0;

	if (!bss || bpf_map__fd(bss) < 0) {
		snprintf(err, errlen, "null store: no loaded .bss map");
		return -ENOENT;
	}
	__u32 vsz = bpf_map__value_size(bss);
	if (vsz < NULL_ITEM_OFF + NULL_ITEM_SIZE || len > XKV_VAL_MAX) {
		snprintf(err, errlen, "null store: .bss is %u bytes, null_item needs %zu (len %u)",
			 vsz, NULL_ITEM_OFF + NULL_ITEM_SIZE, len);
		return -EINVAL;
	}
	__u8 *buf = calloc(2, vsz);
	if (!buf) {
		snprintf(err, errlen, "null store: out of memory");
		return -ENOMEM;
	}
	struct xkv_entry *e = (struct xkv_entry *)(buf + NULL_ITEM_OFF);
	e->wtime_ns = 1; /* live, never expires */
	e->flags = flags;
	e->len = len;
	memcpy(e->data, data, len);
	if (bpf_map_update_elem(bpf_map__fd(bss), &zero, buf, BPF_ANY) ||
	    bpf_map_lookup_elem(bpf_map__fd(bss), &zero, buf + vsz)) {
		rc = -errno;
		snprintf(err, errlen, "null store: writing .bss failed: %s", strerror(errno));
	} else if (memcmp(buf, buf + vsz, vsz)) {
		rc = -EIO;
		snprintf(err, errlen, "null store: .bss reads back different bytes");
	}
	free(buf);
	return rc;
}
