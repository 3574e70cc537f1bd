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

#define XKV_PERCPU
#include "store_hash.bpf.h"
#include "handler.bpf.h"
#include "tcp.bpf.h"
