// SPDX-License-Identifier: MIT
/* lru_percpu: BPF_MAP_TYPE_LRU_PERCPU_HASH.  percpu's value copies (a set
 * from XDP writes the serving CPU's copy, a get reads its own: stale across
 * CPUs; a delete removes every copy) with lru's eviction (a store never
 * fails; when the map is full the kernel evicts an element, all its copies
 * with it).  New items are counted for the eviction estimate, as lru does. */
#include "prelude.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, 16);
	__uint(value_size, sizeof(struct xkv_entry));
} store SEC(".maps");

#define XKV_COUNT_NEW
#define XKV_PERCPU
#include "store_hash.bpf.h"
#include "handler.bpf.h"
#include "tcp.bpf.h"
