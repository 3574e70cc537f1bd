// SPDX-License-Identifier: MIT
/* The null store's layout record and its .bss filler. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "null_layout.h"
#include "null_store.skel.h"

XKV_LAYOUT_ELF(null_store)

/* No store map and no accessors: the loader skips sizing a "store" map
 * when the object has none. */
const struct xkv_layout xkv_layout_null = {
	.name = "null",
	.summary = "benchmark floor: the XDP handler with a store that costs nothing",
	.loses = "everything: every get returns one fixed item, sets are dropped",
	.map_type = BPF_MAP_TYPE_UNSPEC,
	.key_in_value = false,
	.elf = elf,
};

#define NULL_ITEM_OFF offsetof(struct null_store__bss, null_item)
#define NULL_ITEM_SIZE sizeof(((struct null_store__bss *)0)->null_item)

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
