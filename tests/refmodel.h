/* SPDX-License-Identifier: MIT */
/* An independent userspace model of what the XDP fast path must do with a
 * frame: written from the protocol rules (docs, wire.h reply lines,
 * stats.h counter meanings), sharing no code with common/parse.h or the BPF
 * program, so the two can disagree and the fixture tests catch it. */
#ifndef XKV_REFMODEL_H
#define XKV_REFMODEL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "wire.h"
#include "stats.h"

/* XDP actions, as the kernel numbers them */
#define RM_XDP_DROP 1
#define RM_XDP_PASS 2
#define RM_XDP_TX   3

/* How the layout behaves when keys compete for room. */
enum rm_kind {
	RM_HASH,    /* authoritative: a new key beyond `entries` is refused */
	RM_ARRAY,   /* slot = FNV-1a(key) % entries, a new key overwrites the slot */
	RM_LRU,     /* a new key beyond `entries` evicts the least recently used */
	RM_PERCPU,  /* as RM_HASH, as seen from one CPU */
	RM_LRU_PERCPU, /* as RM_LRU, as seen from one CPU: the map's element count is
			* shared, so a new key beyond `entries` evicts the least
			* recently used key, all CPUs' copies with it */
	RM_SET_ASSOC, /* bucket = hash(key) % (entries / ways); a new key takes the
		       * first empty or expired way, else the victim of the bucket's
		       * policy (rm_config.policy): CLOCK, SIEVE or S3-FIFO */
	RM_PROBE,   /* arena: home = hash(key) % entries; a key lives in one of the
		     * min(4, entries) slots from home on (wrapping); a new key takes
		     * the first without a live item, else replaces the live item
		     * written longest ago in that window */
};

/* A network in the one form the policy uses for both families: IPv6 as
 * is, IPv4 as ::ffff:a.b.c.d (so an IPv4 /n spans 96 + n bits). */
struct rm_net {
	__u8 addr[16];
	__u32 bits;
};
#define RM_NETS_MAX 8
struct rm_nets {
	__u32 n;
	struct rm_net net[RM_NETS_MAX];
};
/* "10.0.0.0/24", "fd00::/64", "10.0.0.2" (/32), "::1" (/128), "any"; 0 or -1 */
int rm_net_parse(const char *s, struct rm_net *n);
int rm_nets_add(struct rm_nets *l, const char *s);

/* Who the fast path serves and how much it may say back (the XDP access
 * rules).  All zero: nobody is allowed. */
struct rm_policy {
	int unguarded;         /* none of the access or hygiene checks (benchmarks) */
	int check_mac;         /* serve only frames sent to mac */
	__u8 mac[6];
	int check_ip;          /* serve only packets sent to one of `local` */
	struct rm_nets local;  /* this host's addresses (exact) */
	struct rm_nets allow;  /* may send requests */
	struct rm_nets write;  /* may change the store */
	struct rm_nets trust;  /* replies are not amplification-capped */
	struct rm_nets tcp;    /* hold an open TCP connection: trusted too (exact) */
	int low_ports;         /* source ports 1..1023 are served */
	int strict;            /* the cap applies to trusted sources too */
	int csum_partial;      /* a UDP checksum of the pseudo header only is accepted */
	int pause_writes;      /* snapshot --pause-writes: allowed writes pass to the slow path */
	__u32 max_amp;         /* reply bytes per request byte (UDP payloads); 0 = no cap */
	__u32 rate_limit;      /* requests/s per source /24 (IPv4) or /64 (IPv6); 0 = off */
	__u32 rate_burst;      /* requests a quiet source may send at once; 0 counts as 1 */
};

struct rm_config {
	enum rm_kind kind;
	__u32 key_cap;
	__u32 val_cap;
	__u32 entries;
	__u16 port;
	int counts_new;  /* the layout counts store_new */
	__u64 hash_seed; /* RM_ARRAY, RM_SET_ASSOC, RM_PROBE: placement hash key (hash.h; 0 = FNV-1a) */
	__u32 ways;      /* RM_SET_ASSOC: ways per bucket */
	enum rm_set_policy {
		RM_CLOCK,  /* set_assoc: from the bucket's hand, a way whose reference
			    * bit (set by a get hit) is set loses it and is passed, the
			    * first without is evicted and the hand moves past it */
		RM_SIEVE,  /* sieve: as CLOCK, but the hand walks the ways from the
			    * oldest written to the newest, and stops on the way after
			    * the victim; a new key is the newest */
		RM_S3FIFO, /* s3fifo: a small FIFO (1 way), a main FIFO with a 0..3
			    * count, 8 ghost tags of keys evicted from small */
	} policy;        /* RM_SET_ASSOC */
	int binary_keys; /* --binary-keys: only NUL is refused in keys */
	__u32 big_max;   /* values above val_cap up to this go to the slow path (the big map); 0: none */
	struct rm_policy pol;
};

#define RM_NEVER 0
#define RM_EXPIRED INT64_MIN

struct rm_item {
	__u8 key[XKV_KEY_MAX];
	__u32 klen;
	__u32 flags;
	__u32 len;
	__u8 *val;
	int64_t expire;  /* unix seconds; RM_NEVER, RM_EXPIRED, or the moment it dies */
	__u64 used;      /* last use, for RM_LRU and RM_LRU_PERCPU */
	__u32 way;       /* RM_SET_ASSOC: the way it occupies in its bucket; RM_PROBE: its slot */
	__u64 wrote;     /* RM_PROBE: when it was last written (the store's clock) */
	__u64 cas;       /* cas unique (the slow-path model; see rm_cas_fn) */
	int stale;       /* md I / ms I: mg answers X (memcached's ITEM_STALE) */
	int won;         /* mg sent the win token W: later ones answer Z (ITEM_TOKEN_SENT) */
	int fetched;     /* read by a client since it was made: mg h answers 1 (ITEM_FETCHED) */
};

/* A source network's token bucket for the rate limit. */
struct rm_bucket {
	__u8 net[16];   /* the /24 or /64, the rest zero */
	__u64 credit;   /* ns worth of requests it may still send, at most burst / rate */
	__u64 at;       /* CLOCK_MONOTONIC ns of the last look */
};
#define RM_BUCKETS_MAX 64

struct rm_store {
	struct rm_config cfg;
	struct rm_item *items;  /* dead (expired) items stay until deleted/replaced */
	__u32 n, cap;
	__u64 clock;            /* use counter for RM_LRU and RM_LRU_PERCPU */
	struct rm_bucket bucket[RM_BUCKETS_MAX];
	__u32 nbuckets;
	struct rm_set {          /* RM_SET_ASSOC: policy state per bucket */
		__u8 hand, ref[8];       /* CLOCK: hand a way; SIEVE: hand the way
					  * it points at + 1 (0: the oldest) */
		__u64 wrote[8];          /* SIEVE, S3FIFO: when the way took its key */
		__u8 small[8];           /* S3FIFO: the way is in the small FIFO */
		__u16 ghost[8];          /* S3FIFO: ring of tags, 0 = none */
		__u8 ghost_next;
	} *sets;
};

#define RM_TOUCHED_MAX 64
struct rm_result {
	int action;                /* RM_XDP_* */
	__u8 text[XKV_REPLY_BUF];  /* reply text when action is TX */
	__u32 text_len;
	struct xkv_stats delta;    /* counters the fast path should add */
	int binary;                /* a binary response: over the amplification cap, none */
	__u32 cas_at;              /* > 0: text[cas_at..+8) is the cas of the item touched[0]
				    * names (big-endian), which no model can know (a write
				    * stamp): 0 here, for the caller to fill from the store */
	__u32 ntouched;            /* keys the request named (to check the store after) */
	__u32 rest;                /* bytes after the command line: an error of the line
				    * alone is then the slow path's (it goes on after it) */
	struct { __u8 key[XKV_KEY_MAX]; __u32 klen; } touched[RM_TOUCHED_MAX];
};

void rm_store_init(struct rm_store *s, const struct rm_config *cfg);
void rm_store_free(struct rm_store *s);
/* Put an item as the CLI/slow path would (no counters, no capacity check
 * beyond the layout's own rule).  exptime as memcached takes it. */
int rm_store_put(struct rm_store *s, const void *key, __u32 klen, __u32 flags,
		 int64_t exptime, const void *val, __u32 len, int64_t now);
/* The live item for key, or NULL. */
const struct rm_item *rm_store_get(const struct rm_store *s, const void *key, __u32 klen,
				   int64_t now);
long rm_store_live(const struct rm_store *s, int64_t now);

/* What the fast path must do with the Ethernet frame pkt[0..len) at unix
 * time now; mutates the model store (and the rate limit's buckets, on
 * CLOCK_MONOTONIC) as the fast path would. */
void rm_handle_frame(struct rm_store *s, const __u8 *pkt, size_t len, int64_t now,
		     struct rm_result *res);

/* ---- the userspace slow path (xkv_slow_stream, xkv_slow_handle) ----------
 *
 * A model of what the slow path must answer to one request: the classic
 * commands (get, gets, gat, gats, set, add, replace, append, prepend, cas,
 * incr, decr, touch, delete, flush_all) and the meta ones (mg, ms, md, ma,
 * me, mn) with their flags, written from memcached's doc/protocol.txt and
 * docs/protocol.md, sharing no code with engine/.
 *
 * A cas unique is the store's write stamp (a clock), which no model can
 * predict.  The model decides when a write gives an item a new cas and when
 * it keeps it (touch, gat, mg T); for the new value it asks cas(arg, key),
 * which reads what the real store now holds, and checks the rule a cas
 * unique obeys: never 0, and never the one the item had before the write.
 * The item's cas then goes into the model's replies like any other field.
 *
 * Time: now is unix seconds; relative exptimes start then.  The model
 * answers "t"/"exp" for a finite expiry as whole seconds left, which only
 * agrees with a real clock when no second boundary falls in between:
 * callers leave those out. */
typedef __u64 (*rm_cas_fn)(void *arg, const __u8 *key, __u32 klen);

struct rm_text {
	__u8 *p;
	size_t len, cap;
	char fault[256];   /* why the model gave up or a real cas broke its rule */
};
void rm_text_free(struct rm_text *t);

/* Answer one request, req[0..len): a command line ending in \r\n and, for
 * ms and the storage commands, its data block.  Appends the reply to out.
 * 0, or -1 with out->fault set: a request outside what the model covers
 * (a malformed line: the fixture tables pin those), or a cas rule broken. */
int rm_slow_request(struct rm_store *s, const __u8 *req, size_t len, int64_t now, rm_cas_fn cas,
		    void *arg, struct rm_text *out);

#endif
