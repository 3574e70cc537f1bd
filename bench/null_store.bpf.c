// SPDX-License-Identifier: MIT
/* null: the benchmarks' floor.  The same handler as every layout, with a
 * store that costs nothing: every lookup hits one global item in .bss that
 * userspace fills before timing, every set succeeds, every delete finds.
 * What a layout costs is its time minus this one's. */
#include "prelude.bpf.h"

#define XKV_KEY_IN_VALUE 0

/* Not static: the compiler must not assume the zero-filled .bss stays zero.
 * The entry's flexible data[] is followed by the value bytes on purpose. */
#pragma clang diagnostic ignored "-Wgnu-variable-sized-type-not-at-end"
struct {
	struct xkv_entry e;
	__u8 data[XKV_VAL_MAX];
} null_item;

static __always_inline struct xkv_entry *store_lookup(struct xkv_scratch *sc)
{
	return &null_item.e;
}

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	return 0;
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	return 1;
}

#include "handler.bpf.h"
#include "tcp.bpf.h"
