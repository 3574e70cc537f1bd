// SPDX-License-Identifier: MIT
/* lru: BPF_MAP_TYPE_LRU_HASH.  A store never fails; when the map is full the
 * kernel evicts a least-recently-used item (one LRU list shared by the CPUs;
 * --no-common-lru: one per CPU, see lru_user.c).  The kernel does not count
 * evictions, so new items are counted here and the CLI estimates
 * evictions = new items - deletes - live items. */
#include "prelude.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, 16);
	__uint(value_size, sizeof(struct xkv_entry));
} store SEC(".maps");

#define XKV_COUNT_NEW
#include "store_hash.bpf.h"
#include "handler.bpf.h"
#include "tcp.bpf.h"
