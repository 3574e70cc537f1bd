// SPDX-License-Identifier: MIT
/* hash_map: BPF_MAP_TYPE_HASH (jhash, chaining).  Authoritative: a store
 * either succeeds and stays readable, or fails with SERVER_ERROR. */
#include "prelude.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);            /* --entries */
	__uint(key_size, 16);                 /* cfg.key_size, set at load */
	__uint(value_size, sizeof(struct xkv_entry)); /* cfg.entry_size, set at load */
} store SEC(".maps");

#include "store_hash.bpf.h"
#include "handler.bpf.h"
#include "tcp.bpf.h"
