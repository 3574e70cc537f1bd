/* SPDX-License-Identifier: MIT */
/* arena: the table's layout in the BPF arena, shared by the XDP program and
 * the userspace accessor (which works on the arena's mmap).
 *
 *   arena offset 0:                header (64 B): ready word, entries, stride
 *   XKV_AR_TABLE_OFF + i * stride: slot i, an xkv_entry as array_fnv's
 *                                  (header with its sequence counter, key,
 *                                  value), stride = entry_size rounded to 8
 *
 * A key's home slot is the keyed placement hash mod entries (array_fnv's
 * slot_index); it lives in one of the XKV_AR_WINDOW slots from there on
 * (wrapping at the end), bounded linear probing.  Slot 0 starts past the
 * header so that no item is at arena offset 0, which the program's view of
 * the arena (a 32-bit offset) would read as NULL. */
#ifndef XDPKV_ARENA_TABLE_H
#define XDPKV_ARENA_TABLE_H

#include <linux/types.h>
#include "entry.h"

#define XKV_MAP_TYPE_ARENA 33 /* enum bpf_map_type (Linux 6.9); not in libbpf 1.1's headers */
#define XKV_AR_PAGE 4096u
#define XKV_AR_WINDOW 4u      /* slots a key may occupy, from its home slot on */
#define XKV_AR_TABLE_OFF 64u  /* header before slot 0 */
/* The header's ready word once the opener faulted in every page (XDP does not
 * write before: a page nobody faulted in drops its writes). */
#define XKV_AR_READY 0x31616e72617676b8ull
/* User addresses: one 4 GiB-aligned window per arena (the kernel keeps only
 * the low 32 bits of an arena address), taken downwards from here. */
#define XKV_AR_BASE_TOP 0x7e0000000000ull
#define XKV_AR_WINDOW_BYTES (1ull << 32)
#define XKV_AR_BASES 64u

struct xkv_ar_hdr {
	__u64 ready;   /* XKV_AR_READY once every page is faulted in */
	__u32 entries; /* slots, for a check by the next opener */
	__u32 stride;
	__u8 _pad[48];
};

static inline __u32 xkv_ar_stride(__u32 entry_size)
{
	return (entry_size + 7u) & ~7u;
}

/* Slots a key may occupy (fewer when the table is smaller than the window). */
static inline __u32 xkv_ar_win(__u32 entries)
{
	return entries < XKV_AR_WINDOW ? entries : XKV_AR_WINDOW;
}

/* Slot j of the window starting at home. */
static inline __u32 xkv_ar_slot(__u32 home, __u32 j, __u32 entries)
{
	__u32 t = home + j;
	return t >= entries ? t - entries : t;
}

static inline __u64 xkv_ar_bytes(__u32 entries, __u32 entry_size)
{
	return XKV_AR_TABLE_OFF + (__u64)entries * xkv_ar_stride(entry_size);
}

/* The arena's max_entries. */
static inline __u64 xkv_ar_pages(__u32 entries, __u32 entry_size)
{
	return (xkv_ar_bytes(entries, entry_size) + XKV_AR_PAGE - 1) / XKV_AR_PAGE;
}

/* What a store of a key into its window does (the program's and the
 * accessor's choice): the window position in the low byte, and whether that
 * slot holds the key (XKV_AR_SAME), holds no live item (XKV_AR_FREE), or
 * holds the live item written longest ago, to be replaced (neither). */
#define XKV_AR_SAME 0x100
#define XKV_AR_FREE 0x200

/* For a key not in its window (tbl: slot 0, in whichever view of the arena
 * the caller has): the first slot without a live item at now (XKV_AR_FREE),
 * else the one whose item was written longest ago (smallest write stamp). */
static inline int xkv_ar_choose(const __u8 *tbl, __u32 stride, __u32 home, __u32 entries, __u64 now)
{
	__u64 oldest = ~0ull;
	int victim = 0;
	for (__u32 j = 0; j < XKV_AR_WINDOW; j++) {
		if (j >= xkv_ar_win(entries))
			break;
		const struct xkv_entry *e =
			(const struct xkv_entry *)(tbl + (__u64)xkv_ar_slot(home, j, entries) * stride);
		if (!xkv_entry_live(e, now))
			return (int)j | XKV_AR_FREE;
		if (e->wtime_ns < oldest) {
			oldest = e->wtime_ns;
			victim = (int)j;
		}
	}
	return victim;
}

#endif
