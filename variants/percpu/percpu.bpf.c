// SPDX-License-Identifier: MIT
/* percpu: BPF_MAP_TYPE_PERCPU_HASH.  One element per key, one value copy per
 * CPU.  A set from XDP writes only the copy of the CPU that served it (the
 * kernel zeroes the other copies of a new element: wtime_ns == 0 reads as a
 * miss); a get reads only its own CPU's copy, so it can be stale.  The slow
 * path and the CLI read every copy and take the newest live one; the CLI's
 * set writes every copy.  A delete removes the element for all CPUs and
 * answers DELETED if any CPU's copy was live. */
#include "prelude.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, 16);
	__uint(value_size, sizeof(struct xkv_entry));
} store SEC(".maps");

#include "store_hash.bpf.h"

/* A delete removes the key from every CPU, so it answers DELETED if any CPU's
 * copy is live (bpf_map_lookup_percpu_elem returns NULL past the last CPU). */
static __always_inline int live_on_any_cpu(struct xkv_scratch *sc, __u64 now)
{
	for (__u32 cpu = 0; cpu < 256; cpu++) {
		struct xkv_entry *e = bpf_map_lookup_percpu_elem(&store, sc->key, cpu);
		if (!e)
			break;
		if (xkv_entry_live(e, now))
			return 1;
	}
	return 0;
}
#define XKV_LIVE_FOR_DELETE(sc, e, now) live_on_any_cpu(sc, now)
#include "handler.bpf.h"
