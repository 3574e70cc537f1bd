/* SPDX-License-Identifier: MIT */
/* What a map stores, and the load-time configuration.  Shared by the BPF
 * programs, the userspace accessors, the slow path and the tests. */
#ifndef XDPKV_ENTRY_H
#define XDPKV_ENTRY_H

#include <linux/types.h>
#include "wire.h"

/* Map key: the item key zero-padded to cfg.key_size bytes (key_cap rounded
 * up to 8).  Keys never contain NUL (control characters are refused), so the
 * padding is unambiguous. */
#define XKV_KEY_SIZE(key_cap) (((key_cap) + 7u) & ~7u)

/* Map value.  Every layout stores the same header; array_fnv also stores
 * the full key (key_size bytes) in front of the value bytes. */
struct xkv_entry {
	__u64 expire_ns; /* CLOCK_MONOTONIC ns after which the item is gone; 0 = never */
	__u64 wtime_ns;  /* write stamp (xkv_stamp): CLOCK_MONOTONIC ns of the write with the
			  * writer's id in the low bits; also the item's cas unique.
			  * 0 = empty slot / empty CPU copy */
	__u32 seq;       /* array_fnv sequence counter: odd while a writer is inside */
	__u32 flags;     /* client flags, round-trip as u32 */
	__u32 len;       /* value bytes */
	__u32 klen;      /* low 8 bits: key bytes (array_fnv compares them with the stored
			  * key); above: the item's state (XKV_ENT_STATE, below) */
	__u8 data[];     /* [key (array_fnv only)] value, padded to 8 */
};
#define XKV_ENTRY_HDR ((__u32)sizeof(struct xkv_entry))

/* The per-item state in klen's upper bits (keys are at most 250 bytes, so
 * bits 0-7 hold the key's length): every writer that stores klen afresh
 * (an XDP set, any slow-path write that makes a new item) clears them, as a
 * new item in memcached starts without them; a write that keeps the item
 * (touch, an incr that fits, md I's mark) keeps them.  A pinned store from
 * before them reads as "no state".
 * - the meta protocol's (memcached's ITEM_STALE and ITEM_TOKEN_SENT), set
 *   by the slow path only: md I / ms I mark an item stale, mg marks that it
 *   sent the win token (W);
 * - the reads' (memcached's ITEM_FETCHED and ITEM_ACTIVE and its time of
 *   last access, for mg's h and l): every path that reads an item for a
 *   client, the XDP programs too, calls xkv_access_bump (below). */
#define XKV_ENT_KLEN 0xffu            /* klen & this: the key's length */
#define XKV_ENT_FETCHED (1u << 8)     /* read once (ITEM_FETCHED): mg h answers 1 */
#define XKV_ENT_ACTIVE (1u << 9)      /* read twice (ITEM_ACTIVE): the access time was set */
#define XKV_ENT_STALE (1u << 16)      /* invalidated (md I, ms I): mg answers X */
#define XKV_ENT_WON (1u << 17)        /* a client got the win token (W): mg answers Z */
#define XKV_ENT_ATIME_SHIFT 18        /* bits 18-31: the last access, xkv_atime_enc */
#define XKV_ENT_ATIME (0x3fffu << XKV_ENT_ATIME_SHIFT)
#define XKV_ENT_READ (XKV_ENT_FETCHED | XKV_ENT_ACTIVE)
#define XKV_ENT_ACCESS (XKV_ENT_READ | XKV_ENT_ATIME)
#define XKV_ENT_STATE (XKV_ENT_STALE | XKV_ENT_WON | XKV_ENT_ACCESS)

/* The last access, as seconds after the item's write (its stamp,
 * wtime_ns): exact to 8,191 s, then in minutes to ~5.7 days, then held
 * there (l then answers the time since that).  memcached's l counts from
 * its own item time, which a read moves at most as the rules below do. */
#define XKV_ATIME_EXACT 8192u
#define XKV_ATIME_MAX 0x3fffu
static inline __u32 xkv_atime_enc(__u64 secs)
{
	if (secs < XKV_ATIME_EXACT)
		return (__u32)secs;
	__u64 m = (secs - XKV_ATIME_EXACT) / 60;
	return m < XKV_ATIME_MAX - XKV_ATIME_EXACT ? XKV_ATIME_EXACT + (__u32)m : XKV_ATIME_MAX;
}
static inline __u64 xkv_atime_dec(__u32 v)
{
	return v < XKV_ATIME_EXACT ? v : XKV_ATIME_EXACT + (__u64)(v - XKV_ATIME_EXACT) * 60;
}

/* Whole seconds from the write stamp w to now (monotonic ns). */
static inline __u64 xkv_secs_since(__u64 w, __u64 now)
{
	return now > w ? (now - w) / 1000000000ull : 0;
}

/* mg's l: seconds since the item was last accessed (written, or read as
 * the rules below record it). */
static inline __u64 xkv_access_age(__u32 klen, __u64 wtime, __u64 now)
{
	__u64 since = xkv_secs_since(wtime, now);
	__u64 at = xkv_atime_dec(klen >> XKV_ENT_ATIME_SHIFT);
	return since > at ? since - at : 0;
}

/* How often a read moves the access time of an item read before: at most
 * once this many seconds (memcached's ITEM_UPDATE_INTERVAL). */
#define XKV_ATIME_EVERY 60u

/* A read of the item (klen word k, write stamp w) at now: the klen word it
 * leaves (k itself when the read changes nothing, the common case).  As
 * memcached 1.6's segmented LRU (items.c, do_item_bump): the first read
 * sets FETCHED; the second sets ACTIVE and takes the time; after that the
 * time moves at most once a minute (memcached's LRU maintainer clears
 * ACTIVE at its own pace, and the next read takes the time again).  So an
 * item is written at most twice by its first reads and once a minute
 * after.  now matters only when FETCHED is set (a coarse clock will do
 * for the once-a-minute check). */
static inline __u32 xkv_access_bump(__u32 k, __u64 w, __u64 now)
{
	if (!(k & XKV_ENT_FETCHED))
		return k | XKV_ENT_FETCHED;
	__u64 d = now > w ? now - w : 0;
	__u32 at = (k & XKV_ENT_ATIME) >> XKV_ENT_ATIME_SHIFT;
	/* the common case, an item read often: no division */
	if ((k & XKV_ENT_ACTIVE) && d < (xkv_atime_dec(at) + XKV_ATIME_EVERY) * 1000000000ull)
		return k;
	__u32 n = xkv_atime_enc(d / 1000000000ull);
	if ((k & XKV_ENT_ACTIVE) && n == at)
		return k;
	return (k & ~XKV_ENT_ATIME) | XKV_ENT_ACTIVE | (n << XKV_ENT_ATIME_SHIFT);
}

/* value_size of the store map for a layout */
#define XKV_ENTRY_SIZE(key_in_value, key_cap, val_cap) \
	(XKV_ENTRY_HDR + ((key_in_value) ? XKV_KEY_SIZE(key_cap) : 0u) + (((val_cap) + 7u) & ~7u))

enum xkv_mode { XKV_MODE_NATIVE = 0, XKV_MODE_SKB = 1, XKV_MODE_TEST = 2 };

/* Load-time configuration: a const volatile in section .rodata.cfg on the BPF
 * side (exact bounds for the verifier); the same bytes are pinned as the
 * "cfg" map so the CLI and the slow path read what the program was built with. */
struct xkv_config {
	char layout[16];         /* variant name */
	__u32 key_cap;           /* --key-size: max key bytes (<= 250) */
	__u32 key_size;          /* XKV_KEY_SIZE(key_cap): map key size */
	__u32 val_cap;           /* --value-size: max value bytes */
	__u32 entry_size;        /* map value size */
	__u32 entries;           /* --entries */
	__u16 port;              /* --port, host order */
	__u16 mode;              /* enum xkv_mode */
	__u32 ifindex;
	__u32 flags;             /* XKV_CFG_* */
	__s64 realtime_off_ns;   /* CLOCK_REALTIME - CLOCK_MONOTONIC at load, for absolute exptimes */
	/* abuse resistance (docs/security.md); the lists themselves are maps */
	__u32 max_amp;           /* --max-amplification: reply bytes per request byte for
				  * untrusted sources; 0 = no cap */
	__u32 rate_limit;        /* --rate-limit: requests/s per source /24 or /64; 0 = off */
	__u32 rate_burst;        /* --rate-burst: requests a source may send at once */
	__u32 _pad;
	/* --hash-seed (array_fnv, set_assoc, sieve, s3fifo, arena): the key of the placement hash
	 * (hash.h); 0 = unseeded FNV-1a.  Added after the 72 bytes of before:
	 * a cfg pinned by an older xdpkv reads as 0, which is what it used. */
	__u64 hash_seed;
	/* arena: the user address the store's arena is mapped at in every
	 * process (map_extra at creation; variants/arena/table.h).  0 for the
	 * other layouts, and in a cfg pinned before it existed. */
	__u64 arena_base;
	/* --big-memory: chunks the big map may hold (below); 0 = no values
	 * above val_cap (and in a cfg pinned before it existed) */
	__u32 big_chunks;
	__u32 _pad2;
};
#define XKV_CFG_NO_PREALLOC 1u
#define XKV_CFG_KEY_IN_VALUE 2u /* array_fnv */
#define XKV_CFG_BINARY_KEYS 4u  /* --binary-keys: control bytes allowed in keys */
#define XKV_CFG_STRICT 8u       /* --strict: the amplification cap applies to trusted sources too */
#define XKV_CFG_LOW_PORTS 16u   /* --allow-low-ports: serve source ports 1..1023 */
#define XKV_CFG_CSUM_PARTIAL 32u /* accept a UDP checksum that holds only the pseudo-header
				  * sum (CHECKSUM_PARTIAL frames from a local veth peer) */
#define XKV_CFG_UNGUARDED 64u   /* benchmarks only: skip every access and hygiene check, to
				  * measure what they cost; attach never sets it */
#define XKV_CFG_NO_TCP_FAST 256u /* --no-tcp-fast-path: serve answers TCP in userspace only */
#define XKV_CFG_NO_XDP_TCP 512u /* --no-xdp-tcp: XDP answers UDP only (no TCP responder) */
#define XKV_CFG_NO_COMMON_LRU 128u /* --no-common-lru (lru): BPF_F_NO_COMMON_LRU, an LRU list
				    * per CPU, each with entries / possible CPUs elements */

/* Values longer than val_cap (up to XKV_BIG_MAX): the store's entry holds
 * the header only (len > val_cap is the mark, no value bytes); the value is
 * in the "big" map, a hash map without preallocation, in chunks keyed by
 * the item's key, its write stamp and the chunk's number.  A write puts the
 * chunks first, then the entry; a reader takes the entry, then the chunks
 * of its stamp (missing ones: the item was replaced meanwhile, read again).
 * XDP and the TCP verdict never read it: an entry with len > val_cap goes to
 * the slow path (get_one's length check).  Chunks nobody's entry points at
 * (overwritten or deleted from XDP, evicted, expired, flushed) are removed
 * by serve's collector (bigval.c).  The sizes keep one element of the
 * kernel's hash map (its ~48-byte element header, key and value) within a
 * 4 KiB allocation. */
struct xkv_big_key {
	__u64 stamp;          /* the entry's wtime_ns */
	__u32 idx;            /* chunk number, from 0 */
	__u32 klen;
	__u8 key[XKV_KEY_SIZE(XKV_KEY_MAX)]; /* zero-padded */
};
#define XKV_BIG_CHUNK 3712
struct xkv_big_chunk {
	__u32 len;            /* bytes used in data */
	__u32 total;          /* the value's length (as the entry says) */
	__u8 data[XKV_BIG_CHUNK];
};
#define XKV_BIG_ELEM 4096u    /* what one chunk costs, as sized above */
#define XKV_BIG_DEFAULT_MB 64 /* --big-memory default (memcached's default -m) */

/* The value bytes an entry holds itself: all of them, or none for a big one. */
static inline __u32 xkv_inline_len(__u32 len, __u32 val_cap)
{
	return len <= val_cap ? len : 0;
}

#define XKV_EXPTIME_MAX 0xffffffffll /* year 2106 */

/* memcached's exptime rule -> expire_ns (monotonic).  now_ns is monotonic. */
static inline __u64 xkv_expire_ns(__s64 exptime, __u64 now_ns, __s64 realtime_off_ns)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1; /* already expired */
	if (exptime <= XKV_REALTIME_MAXDELTA)
		return now_ns + (__u64)exptime * 1000000000ull;
	if (exptime > XKV_EXPTIME_MAX) /* beyond 2^32 s: far future, and no overflow below */
		exptime = XKV_EXPTIME_MAX;
	__s64 mono = exptime * 1000000000ll - realtime_off_ns;
	return mono > 0 ? (__u64)mono : 1;
}

/* Write stamps.  wtime_ns is the item's cas unique (gets, cas), so every
 * write must give its key a value no earlier write had: the clock with its
 * low XKV_STAMP_ID_BITS bits replaced by the writer's id, and strictly above
 * the writer's previous stamp (the XDP CPU's in its scratch, a process's in
 * an atomic).  Ids: a CPU of the BPF programs cpu % XKV_STAMP_CPUS (0..511);
 * a userspace process XKV_STAMP_CPUS + pid % 512 (512..1023: serve, and a
 * `load`, `kv` or `snapshot restore` beside it, have ids of their own; they
 * all shared 1023 before 2026-11-27, issue 17, and two of them could give
 * the same cas in one microsecond).  Two writers share an id only on
 * machines of more than 512 CPUs, or for processes whose pids are equal
 * modulo 512; one writer never repeats a stamp.  The clock loses 1 us of
 * resolution, which nothing here needs. */
#define XKV_STAMP_ID_BITS 10
#define XKV_STAMP_ID_MASK ((1ull << XKV_STAMP_ID_BITS) - 1)
#define XKV_STAMP_CPUS 512u
static inline __u32 xkv_stamp_user_id(__u32 pid)
{
	return XKV_STAMP_CPUS + pid % (__u32)(XKV_STAMP_ID_MASK + 1 - XKV_STAMP_CPUS);
}

static inline __u64 xkv_stamp(__u64 last, __u64 now_ns, __u32 id)
{
	__u64 t = now_ns & ~XKV_STAMP_ID_MASK, l = last & ~XKV_STAMP_ID_MASK;
	if (last && t <= l)
		t = l + XKV_STAMP_ID_MASK + 1;
	return t | (id & XKV_STAMP_ID_MASK);
}

static inline int xkv_entry_live(const struct xkv_entry *e, __u64 now_ns)
{
	return e->wtime_ns != 0 && (e->expire_ns == 0 || e->expire_ns > now_ns);
}

#endif
