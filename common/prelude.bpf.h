/* SPDX-License-Identifier: MIT */
/* Everything a variant needs before it defines its store: the load-time
 * configuration, the stats and scratch maps, and small helpers.
 * A variant file is:
 *     #include "prelude.bpf.h"
 *     <its store map>
 *     #define XKV_KEY_IN_VALUE 0|1
 *     store_lookup(), store_set(), store_del() [, XKV_STORE_MATCH]
 *     #include "handler.bpf.h"
 */
#ifndef XDPKV_PRELUDE_BPF_H
#define XDPKV_PRELUDE_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "wire.h"
#include "entry.h"
#include "stats.h"
#include "fnv.h"
#include "parse.h"
#include "policy.h"
#include "tcpx.h"

#ifndef E2BIG
#define E2BIG 7
#define ENOMEM 12
#define EBUSY 16
#define ENOENT 2
#endif

/* Filled in by userspace between open and load; the verifier sees constants. */
const volatile struct xkv_config cfg SEC(".rodata.cfg") = {
	.key_cap = 16, .key_size = 16, .val_cap = 128, .entries = 1024,
	.port = XKV_DEFAULT_PORT,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XKV_STATS_SLOTS);
	__type(key, __u32);
	__type(value, struct xkv_stats);
} stats SEC(".maps");

/* Values longer than cfg.val_cap, in chunks (entry.h): written and read by
 * userspace only; max_entries is --big-memory's, set at load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, struct xkv_big_key);
	__type(value, struct xkv_big_chunk);
} big SEC(".maps");

/* ---- the access policy (policy.h, docs/security.md) ---- */
#define XKV_ACL_TRIE(name)                                   \
	struct {                                             \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);         \
		__uint(max_entries, XKV_ACL_MAX_ENTRIES);    \
		__uint(map_flags, BPF_F_NO_PREALLOC);        \
		__type(key, struct xkv_acl_key);             \
		__type(value, __u32);                        \
	} name SEC(".maps")
XKV_ACL_TRIE(acl_allow);
XKV_ACL_TRIE(acl_write);
XKV_ACL_TRIE(acl_trust);

/* A token userspace rewrites (a fresh random value) after every change of
 * an ACL trie (policy.c, xkv_acl_changed): the per-CPU cache of the last
 * source's allow-list answer (xkv_scratch.acl_last) is valid only under the
 * token it was filled with.  Mappable: `xdpkv serve` reads it from its own
 * memory to keep a TCP connection's rights between changes (engine/admit.c). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} acl_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xkv_host);
} host SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XKV_LOCAL_ADDRS_MAX);
	__type(key, struct xkv_rl_key); /* 16 bytes: the address */
	__type(value, __u8);
} local_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XKV_TCP_PEERS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xkv_rl_key); /* 16 bytes: the address */
	__type(value, __u32);
} tcp_peers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XKV_RL_ENTRIES); /* 1 when --rate-limit is off (loader) */
	__type(key, struct xkv_rl_key);
	__type(value, __u64);
} ratelimit SEC(".maps");

/* Where the reply goes: what we keep from the request headers. */
struct xkv_addr {
	__u8 eth_src[ETH_ALEN], eth_dst[ETH_ALEN];
	__u16 family;      /* 4 or 6 */
	__u16 l3_len;      /* 20 or 40 */
	__be16 sport, dport;
	__be32 v6_first;   /* IPv6 version/class/flow word */
	__u8 src[16], dst[16]; /* IPv4: the first 4 bytes; at offset 24: summed as words */
	__u8 src16[16];        /* the source in policy.h's 16-byte form */
	__u32 req_bytes;       /* request UDP payload, for the amplification cap */
	__u8 tos;
	__u8 trusted;          /* 0 unknown yet, 1 trusted, 2 not */
	__u8 _pad[2];
};

/* The addresses of a request's IPv4 or IPv6 header into a (XDP's UDP and
 * TCP paths alike). */
static __always_inline void xkv_addr_ip4(struct xkv_addr *a, const struct iphdr *ip)
{
	a->family = 4;
	a->l3_len = 20;
	a->tos = ip->tos;
	__builtin_memcpy(a->src, &ip->saddr, 4);
	__builtin_memcpy(a->dst, &ip->daddr, 4);
	xkv_addr_from_v4(a->src16, &ip->saddr);
}

static __always_inline void xkv_addr_ip6(struct xkv_addr *a, const struct ipv6hdr *ip6)
{
	a->family = 6;
	a->l3_len = 40;
	a->tos = 0;
	__builtin_memcpy(&a->v6_first, ip6, 4);
	__builtin_memcpy(a->src, &ip6->saddr, 16);
	__builtin_memcpy(a->dst, &ip6->daddr, 16);
	__builtin_memcpy(a->src16, &ip6->saddr, 16);
}

/* Per-CPU working memory.  The map's value_size is grown at load time by the
 * entry's data bytes, so entry.data[] holds a whole value. */
struct xkv_scratch {
	__u8 req[XKV_REQ_MAX + 8];     /* request text (payload after the frame header) */
	__u8 reply[XKV_REPLY_BUF];     /* [udp hdr 8][frame hdr 8][reply text] */
	struct xkv_req pr;             /* parser output */
	__u8 key[XKV_KEY_MAX + 6];     /* map key, zero padded to cfg.key_size */
	__u32 klen;
	__u32 _pad;
	struct xkv_addr addr;          /* where the reply goes */
	struct xkv_acl_key acl;        /* ACL lookup key */
	__u32 ip_id;                   /* IPv4 id of the next reply from this CPU */
	__u32 _pad2;
	__u64 stamp;                   /* this CPU's last write stamp (entry.h, xkv_stamp) */
	struct {                       /* the allow list's answer for the last source */
		__u64 src[2];          /* its 16-byte form */
		__u64 token;           /* acl_gen when it was looked up */
		__u32 valid, allowed;
	} acl_last;
	struct {                       /* the get under way's counters (ops.bpf.h, get_count) */
		__u32 keys, hits, misses, expired;
	} tally;
	struct xkv_tcpx_seg tx;        /* a TCP segment answered in XDP (tcpx_xdp.bpf.h) */
	struct xkv_entry entry;        /* entry being stored; data follows */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct xkv_scratch)); /* + entry data, set at load */
} scratch SEC(".maps");

static __always_inline void stat_inc(struct xkv_stats *st, __u32 i)
{
	if (i < XKV_STAT__MAX)
		st->v[i]++;
}

#define READ_ONCE_U32(x) (*(volatile __u32 *)&(x))
#define READ_ONCE_U64(x) (*(volatile __u64 *)&(x))
#define barrier() asm volatile("" ::: "memory")

/* One 8-byte word (i) of key token t into sc->key, the bytes past the key
 * zero: an xkv_loop step, verified once whatever the key's length. */
struct xkv_key_walk {
	struct xkv_scratch *sc;
	__u32 off, len;
};

static long xkv_key_word(__u32 i, void *v)
{
	struct xkv_key_walk *c = v;
	struct xkv_scratch *sc = c->sc;
	__u32 len = c->len;
	__u64 w = 0;

	if (!sc || i >= (XKV_KEY_MAX + 6) / 8)
		return 1;
	if (i * 8 < len) {
		w = *(__u64 *)&sc->req[(c->off + i * 8) & (XKV_REQ_MAX - 1)];
		__u32 rem = len - i * 8;
		if (rem < 8)
			w &= (1ULL << (rem * 8)) - 1;
	}
	((__u64 *)sc->key)[i] = w;
	return 0;
}

/* Copy key token t of the parsed request into sc->key, zero padded to
 * cfg.key_size, one 8-byte word at a time. */
static __always_inline void xkv_load_key_words(struct xkv_scratch *sc, __u32 t)
{
	if (t >= XKV_PARSE_TOKENS)
		return;
	struct xkv_key_walk c = { .sc = sc, .off = sc->pr.tok[t].off, .len = sc->pr.tok[t].len };
	sc->klen = c.len;
	xkv_loop(cfg.key_size / 8, xkv_key_word, &c);
}

/* The same as a global function: verified once.  (A get's keys, in
 * get_one, take the inline one: a frame less on the TCP verdict's call
 * chain, whose stack 6.1 counts against 512 bytes.) */
__attribute__((noinline)) int xkv_load_key(struct xkv_scratch *sc, __u32 t)
{
	if (sc)
		xkv_load_key_words(sc, t);
	return 0;
}

/* The one parser over the request text in sc->req, with the load-time
 * limits. */
static __always_inline int xkv_parse_sc(struct xkv_scratch *sc, __u32 len)
{
	sc->pr.key_cap = cfg.key_cap;
	sc->pr.val_cap = cfg.val_cap;
	sc->pr.binary_keys = !!(cfg.flags & XKV_CFG_BINARY_KEYS);
	return xkv_parse(sc->req, len, &sc->pr);
}

/* The same as a global function: verified once.  (The TCP verdict's
 * tcp_one, global itself, calls xkv_parse_sc: a frame less on its call
 * chain, whose stack 6.1 counts against 512 bytes.) */
__attribute__((noinline)) int xkv_parse_req(struct xkv_scratch *sc, __u32 len)
{
	if (!sc)
		return XKV_E_FORMAT;
	return xkv_parse_sc(sc, len);
}

/* The set shortcut (parse.h, xkv_quick_set) over sc->req: fills sc->pr and
 * packs the key into sc->key.  Global: verified once, whatever the caller's
 * state. */
__attribute__((noinline)) int xkv_quick_set_req(struct xkv_scratch *sc, __u32 len)
{
	if (!sc)
		return 0;
	sc->pr.key_cap = cfg.key_cap;
	sc->pr.val_cap = cfg.val_cap;
	return xkv_quick_set(sc->req, len, &sc->pr, (__u64 *)sc->key, cfg.key_size);
}

/* The get shortcut (parse.h, xkv_quick_get) over sc->req: the key's length
 * (packed into sc->key), or 0 to parse.  Global: verified once (its word
 * loop's exits would otherwise multiply the paths after it). */
__attribute__((noinline)) __u32 xkv_quick_get_req(struct xkv_scratch *sc, __u32 len)
{
	if (!sc)
		return 0;
	__u32 k = xkv_quick_get(sc->req, len, cfg.key_cap, (__u64 *)sc->key, cfg.key_size);
	/* what the callers know of it: a key length */
	return k <= XKV_KEY_MAX ? k : 0;
}

/* A helper's length, 1 .. max (max <= 32768), computed in the register the
 * call takes: 6.1's verifier takes no lower bound from a "!= 0" check and
 * keeps no bounds of a 32-bit value saved on the stack, and a range check
 * clang makes on a copy of the register (v - 1 > max - 1) bounds the copy
 * only.  v in 1 .. max comes out as it went in; callers check that first. */
#define XKV_LEN(v, max) ({                                  \
	__u32 l_ = (v);                                     \
	barrier_var(l_);                                    \
	l_ = ((l_ - 1) & 0x7fff) + 1;                       \
	barrier_var(l_);                                    \
	if (l_ > (max))                                     \
		l_ = (max);                                 \
	barrier_var(l_);                                    \
	l_;                                                 \
})

/* A 16-bit wire field (a length) in host order, its bounds (0 .. 65535)
 * in the register that is used: 6.12's verifier takes a byte swap's result
 * as any 64-bit value (a packet pointer plus it is refused), and clang drops
 * a mask it knows to be redundant, hence the barrier. */
static __always_inline __u32 xkv_ntohs(__u16 v)
{
	__u32 x = bpf_ntohs(v);
	barrier_var(x);
	return x & 0xffff;
}

/* key_size bytes of a and b equal (both 8-aligned buffers) */
static __always_inline int xkv_key_eq(const __u8 *a, const __u8 *b)
{
#pragma unroll
	for (__u32 i = 0; i < (XKV_KEY_MAX + 6) / 8; i++) {
		if (i * 8 >= cfg.key_size)
			break;
		if (((const __u64 *)a)[i] != ((const __u64 *)b)[i])
			return 0;
	}
	return 1;
}

#endif
