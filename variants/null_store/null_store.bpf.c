// SPDX-License-Identifier: MIT
/* null: the benchmarks' floor.  The same handler as every layout, with a
 * store that costs nothing: every lookup hits one global item in .bss that
 * userspace fills before timing, every set succeeds (its entry copied into
 * a per-CPU slot, entry_sink), every delete finds.
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

/* Where a set's entry goes: one per-CPU slot of the entry's size (the
 * loader sizes it as the layouts' store values, cfg.entry_size), so a SET
 * pays for the same value copy into map memory a layout's update makes,
 * and no more: no hashing, no lock, no allocation. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xkv_entry)); /* cfg.entry_size, set at load */
} entry_sink SEC(".maps");

static __always_inline int store_set(struct xkv_scratch *sc, struct xkv_stats *st)
{
	__u32 zero = 0;

	return bpf_map_update_elem(&entry_sink, &zero, &sc->entry, BPF_ANY) ? -EBUSY : 0;
}

static __always_inline int store_del(struct xkv_scratch *sc, struct xkv_stats *st)
{
	return 1;
}

#include "handler.bpf.h"
