/* SPDX-License-Identifier: MIT */
/* Userspace API of xdpkv: layouts, loading, pins, store accessors, counters.
 * Used by the CLI, the slow path, the tests and the benchmarks. */
#ifndef XDPKV_H
#define XDPKV_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "wire.h"
#include "entry.h"
#include "stats.h"
#include "policy.h"
#include "errf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XKV_PIN_ROOT "/sys/fs/bpf/xdpkv"
#define XKV_ERRLEN 4096
/* The layout attach loads when none is named: one that makes room when
 * full (an LRU map evicts, as memcached does), not one that refuses a new
 * key (hash_map: a layout to compare, not a default to run). */
#define XKV_LAYOUT_DEFAULT "lru"

struct xkv_store;
struct xkv_entry;
struct xkv_slot_ops;

/* A live item met by a scan: its key bytes, the entry header (expiry, flags,
 * len) and the value bytes.  Non-zero stops the scan (returned by it). */
typedef int (*xkv_visit_fn)(void *arg, const __u8 *key, __u32 klen, const struct xkv_entry *e,
			    const __u8 *val);

/* A value read back from a store. */
struct xkv_item {
	__u32 flags;
	__u32 len;
	__u64 expire_ns;
	__u64 wtime_ns;
	__u32 state;            /* XKV_ENT_STALE | XKV_ENT_WON (entry.h) */
	__u8 data[XKV_VAL_MAX];
};

/* A conditional store's decision, from the live item now at the key (cur;
 * NULL: none): fill *e (entry header + value at e->data, as for set, cfg.
 * entry_size bytes) and return 0 to store it; >0: do not store, returned
 * by set_if as it is; <0: -errno.  May be called more than once per
 * set_if (each time the item changed under it); must not keep state from
 * an earlier call. */
typedef int (*xkv_decide_fn)(void *arg, const struct xkv_item *cur, struct xkv_entry *e);

/* One storage layout: its BPF object and its userspace accessor.  The
 * registry (variants/registry.c) lists them; adding a layout is one folder
 * and one line there. */
struct xkv_layout {
	const char *name;
	const char *summary;          /* one line for --help and status */
	const char *loses;            /* what the layout gives up, one line */
	__u32 map_type;               /* enum bpf_map_type of the store */
	bool key_in_value;            /* entry.data holds the key first (array_fnv) */
	const void *(*elf)(size_t *sz); /* the compiled BPF object (from its skeleton) */
	/* the load-time map options (XKV_CFG_NO_PREALLOC, XKV_CFG_NO_COMMON_LRU)
	 * its prepare() honours; xkv_config_finish refuses the others */
	__u32 map_opts;
	/* places keys with hash.h's keyed hash: cfg.hash_seed applies */
	bool hash_seeded;
	/* optional: array_fnv, arena: the slot stores' hooks behind the shared
	 * set, set_if and add of variants/array_fnv/slot_user.c */
	const struct xkv_slot_ops *slot_ops;
	/* optional: the layout's own checks and rounding at the end of
	 * xkv_config_finish (set_assoc, sieve, s3fifo: entries to whole buckets) */
	int (*finish)(struct xkv_config *cfg, char *err, size_t errlen);
	/* optional: adjust the store map before load (e.g. BPF_F_NO_PREALLOC) */
	int (*prepare)(struct bpf_map *store, const struct xkv_config *cfg);
	/* optional: after fds are known (array_fnv mmaps its slots) */
	int (*open)(struct xkv_store *s);
	void (*close)(struct xkv_store *s);
	/* 1 hit (live item copied to *it), 0 miss, <0 -errno */
	int (*get)(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it);
	/* store e (entry header + value bytes at e->data, key NOT in e->data);
	 * 0 ok, -ENOMEM full (hash_map), -EBUSY slot busy, other -errno */
	int (*set)(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *e);
	/* Read the item, decide (fn), store what fn filled into e: a read-modify-
	 * write as atomic as the layout can make it (docs/protocol.md,
	 * "Atomicity"): array_fnv under the slot's lock, set_assoc, sieve and s3fifo under the
	 * bucket's (atomic against XDP writers too); the hash-like ones with BPF_NOEXIST when there was no
	 * element and BPF_EXIST plus a re-check of the write stamp when there
	 * was, retried when either fails.  0 stored, fn's >0, <0 -errno as set
	 * (-EAGAIN: the item kept changing under it). */
	int (*set_if)(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		      struct xkv_entry *e);
	/* 1 deleted, 0 absent, <0 -errno */
	int (*del)(struct xkv_store *s, const void *key, __u32 klen);
	/* live (unexpired) items; <0 -errno */
	long (*count)(struct xkv_store *s);
	/* remove every item whose write stamp is <= cut (flush_all's cut,
	 * engine/flush.c; XKV_FLUSH_ALL: every item); an item stamped above
	 * it stays (per-CPU maps: the newest live copy's stamp decides).
	 * Exact against XDP writers where the layout checks the stamp under
	 * its lock (array_fnv, arena: the slot's; set_assoc, sieve, s3fifo:
	 * the bucket's); the hash-like ones re-read an element just before
	 * deleting it, and a write (XDP's or anyone's) between the two
	 * syscalls is deleted (docs/protocol.md, "flush_all").  0 or -errno */
	int (*flush)(struct xkv_store *s, __u64 cut);
	/* optional: store n items; keys packed at cfg.key_size bytes each, entries
	 * (as for set) at cfg.entry_size bytes each.  Returns items stored or -errno.
	 * Use xkv_store_set_batch(), which falls back to set() one by one. */
	long (*set_batch)(struct xkv_store *s, const __u8 *keys, const __u8 *entries, __u32 n);
	/* optional: after the object is loaded (attach); the null store writes
	 * the one item it answers with.  0 or -errno with a message in err. */
	int (*loaded)(struct bpf_object *obj, const struct xkv_config *cfg, char *err, size_t errlen);
	bool bench_only;              /* a benchmark floor, not a store (the null store) */
	/* optional (snapshot, dump): the positions a scan splits into ranges
	 * (array_fnv: slots; hash-like: hash buckets) */
	__u64 (*span)(const struct xkv_store *s);
	/* Visit every live item whose position is in [lo, hi) once (hi ==
	 * UINT64_MAX: to the end), each as one whole version (docs/snapshots.md).
	 * Ranges that do not overlap visit disjoint items, so threads can split
	 * the span.  *busy += items skipped because a writer held them through
	 * every retry.  Returns items visited, fn's non-zero return, or -errno. */
	long (*scan)(struct xkv_store *s, __u64 lo, __u64 hi, xkv_visit_fn fn, void *arg, __u64 *busy);
	/* optional (migrate): store e (as set) only where the key's place is
	 * free: 0 stored; -EEXIST the key is there (a newer version); -EADDRINUSE
	 * (array_fnv) its slot holds another live key; else as set. */
	int (*add)(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *e);
};

/* flush's cut that removes every item (a test's or a benchmark's empty store) */
#define XKV_FLUSH_ALL UINT64_MAX

/* The layouts (NULL-terminated): what tests, compare and 'xdpkv layouts' iterate. */
extern const struct xkv_layout *const xkv_layouts[];
/* A layout of xkv_layouts by name, or NULL. */
const struct xkv_layout *xkv_layout_find(const char *name);
/* The same, or a benchmark-only layout (the null store, variants/null_store/null_layout.c) by
 * name: what attach and the loader accept.  Never listed. */
const struct xkv_layout *xkv_layout_find_any(const char *name);

/* What a layout's map type implies.  Per-CPU: one value copy per CPU (reads
 * take the newest live copy, writes from userspace go to every copy).  LRU:
 * a store never fails, the kernel evicts when full (new items are counted
 * for the eviction estimate). */
static inline bool xkv_map_percpu(__u32 map_type)
{
	return map_type == BPF_MAP_TYPE_PERCPU_HASH || map_type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}
static inline bool xkv_map_lru(__u32 map_type)
{
	return map_type == BPF_MAP_TYPE_LRU_HASH || map_type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

/* A store opened from pins or from an object loaded in this process. */
struct xkv_store {
	const struct xkv_layout *L;
	struct xkv_config cfg;
	int store_fd, stats_fd, cfg_fd;
	/* access policy (policy.h): -1 where the object has none (the null store) */
	int acl_fd[XKV_ACL__N], acl_gen_fd, host_fd, local_fd, rl_fd, tcp_fd;
	/* the TCP fast path (tcpfast.h): connections, their slots, bytes passed, bytes paid */
	int tcp_socks_fd, tcp_slots_fd, tcp_conns_fd, tcp_paid_fd;
	/* TCP answered in XDP (common/tcpx.h): the flows it translates */
	int tcpx_flows_fd, tcpx_progs_fd;
	/* values above val_cap (bigval.c); -1 where the object has none */
	int big_fd;
	int ncpus;              /* libbpf_num_possible_cpus() */
	void *mm;               /* array_fnv, set_assoc, sieve, s3fifo: mmapped slots / buckets */
	size_t mm_len;
	__u32 slot_stride;      /* array_fnv: bytes between slots in mm; bucketed: between buckets */
	bool owns_fds;          /* opened from pins: close() closes the fds */
	/* What this process's stores did, counted by the accessor as the XDP
	 * side counts them (store_new: lru, array_fnv; overwrites: array_fnv).
	 * The slow path moves them into its counters per command; what is left
	 * goes to the slow-path slot at xkv_store_close (the CLI's set, load). */
	__u64 new_items, overwrites;
};

/* xkv_errf (lib/errf.h): the one way every libxdpkv function reports a
 * failure. */

/* ---- configuration and loading (store/loader.c) ---- */

/* Fill cfg with defaults for layout (entries 65536, key 64, value 1024, port 11211,
 * no flags: the strict key rule; the CLI's attach and verify add XKV_CFG_BINARY_KEYS
 * unless --strict-keys, as memcached takes any key byte but NUL).
 * See docs/architecture.md.  Returns 0 or -EINVAL with a message in err. */
int xkv_config_defaults(struct xkv_config *cfg, const char *layout);
/* Check ranges and derive key_size/entry_size; message in err. */
int xkv_config_finish(struct xkv_config *cfg, char *err, size_t errlen);

/* Open the layout's BPF object, configured by cfg (rodata, map sizes).
 * Not loaded yet.  NULL with a message in err. */
struct bpf_object *xkv_object_open(const struct xkv_config *cfg, char *err, size_t errlen);
/* Same with an explicit layout (not in the registry: the benchmarks' null store). */
struct bpf_object *xkv_object_open_with(const struct xkv_layout *L, const struct xkv_config *cfg,
					char *err, size_t errlen);
/* Attach the loaded object's TCP verdict program (common/tcp.bpf.h) to its
 * sockhash: serve's connections get the kernel fast path.  0 or -errno. */
int xkv_tcp_fast_attach(struct bpf_object *obj, char *err, size_t errlen);
/* Detach the TCP verdict program from s's pinned sockhash (its fd in *prog,
 * -1 if none was attached; new connections get no verdict meanwhile) and
 * count the connections the sockhash holds, which keep the program they
 * were linked with until they close.  xkv_tcp_fast_resume attaches prog
 * again (prog < 0: nothing to do). */
int xkv_tcp_fast_pause(const struct xkv_store *s, int *prog, long *conns, char *err, size_t errlen);
int xkv_tcp_fast_resume(const struct xkv_store *s, int prog, char *err, size_t errlen);
/* Load it; on a verifier rejection err holds the tail of the verifier log. */
int xkv_object_load(struct bpf_object *obj, char *err, size_t errlen);
struct bpf_program *xkv_object_prog(struct bpf_object *obj);
/* The verifier log captured while loading (libxdp may be the one that loads
 * it: the buffer is attached to the program by xkv_object_open).  Copies the
 * last lines that fit into buf; returns buf. */
const char *xkv_object_log_tail(struct bpf_object *obj, char *buf, size_t len);

/* What this kernel's verifier says of one program of a layout (store/verify.c). */
struct xkv_prog_cost {
	char name[64];      /* the program's name in the object */
	int err;            /* 0 loaded, else -errno of the load */
	unsigned insns;     /* "processed N insns" (0: the verifier never ran) */
	unsigned time_us;   /* the verifier's own "verification time" */
	unsigned stack;     /* the deepest frame's stack depth, bytes */
	unsigned wall_ms;   /* the whole load as this process saw it */
	char reason[256];   /* a refusal: the verifier's last line, or strerror */
};
typedef int (*xkv_verify_fn)(void *arg, const struct xkv_prog_cost *c);
/* Load each program cfg's configuration would load (cfg finished), alone
 * and not attached, with the verifier's statistics; fn gets each result in
 * the object's order (a non-zero return stops).  0, fn's return, or -errno
 * with a message in err (the object could not be opened). */
int xkv_verify_layout(const struct xkv_config *cfg, xkv_verify_fn fn, void *arg, char *err, size_t errlen);

/* Can this kernel hold the layout's store (its map created as attach would,
 * then dropped; kept per process)?  1 yes; 0 no, why holds the kernel's
 * reason ("this kernel refuses its BPF_MAP_TYPE_ARENA map: ..."); <0 the
 * probe could not run (not root), message in why. */
int xkv_layout_probe(const struct xkv_layout *L, char *why, size_t len);

/* Fill s from a loaded object (fds are borrowed, not dup'ed); L may be NULL
 * to look the layout up by cfg.layout. */
int xkv_store_from_object(struct xkv_store *s, const struct xkv_layout *L, struct bpf_object *obj,
			  char *err, size_t errlen);

/* Pins: <XKV_PIN_ROOT>/<ifname>/{store,stats,cfg}.  Mounts bpffs if needed. */
int xkv_pin_dir(const char *ifname, char *buf, size_t len);
/* Pin every map of a loaded obj; a pin of another map is replaced atomically
 * (pinned beside, renamed over), one of the same map (reused) is left. */
int xkv_pins_create(struct bpf_object *obj, const char *ifname, char *err, size_t errlen);
/* Re-attach (docs/architecture.md): does the pinned store match what obj
 * (opened for cfg, not loaded) would create?  1 yes, 0 no with what differs
 * in diff ("--entries: 16384 pinned, 8192 now"), <0 -errno with a message. */
int xkv_pins_match(struct bpf_object *obj, const struct xkv_config *cfg, const char *ifname,
		   char *diff, size_t difflen);
/* Before load: make obj use the pinned maps that match its own (the store,
 * which must, stats, the policy maps...), never cfg (the program's).  Returns
 * the number reused or -errno with a message. */
int xkv_object_reuse_pins(struct bpf_object *obj, const char *ifname, char *err, size_t errlen);
/* The same for every pinned map but the store (migrate: a new store, the
 * same lists, counters and host map).  Returns the number reused or -errno. */
int xkv_object_reuse_pins_but_store(struct bpf_object *obj, const char *ifname, char *err,
				    size_t errlen);
int xkv_pins_remove(const char *ifname);
/* The config pinned for ifname (what the attached program was built with). */
int xkv_pins_cfg(const char *ifname, struct xkv_config *cfg, char *err, size_t errlen);
bool xkv_pins_exist(const char *ifname);
/* Open a store through its pins; -ENOENT (xdpkv not attached) etc. */
int xkv_store_open_pinned(struct xkv_store *s, const char *ifname, char *err, size_t errlen);
void xkv_store_close(struct xkv_store *s);
/* Migration (docs/snapshots.md): a handle on another store map, store_fd
 * (owned by s from now on: close with xkv_store_drop) made for cfg, that
 * shares base's other maps (lists, counters, host).  0 or -errno with a
 * message. */
int xkv_store_adopt(struct xkv_store *s, const struct xkv_store *base, int store_fd,
		    const struct xkv_config *cfg, char *err, size_t errlen);
/* Exchange the store-specific parts (layout, cfg, store fd, the mmapped
 * slots) of a and b; the shared maps stay where they are. */
void xkv_store_swap(struct xkv_store *a, struct xkv_store *b);
/* Close what xkv_store_adopt opened: the layout's mapping and store_fd. */
void xkv_store_drop(struct xkv_store *s);
/* Before load: create obj's store map now (as the load would) and make the
 * object use it, so it can be filled before the program exists.  Returns
 * its fd (the caller's) or -errno with a message. */
int xkv_object_make_store(struct bpf_object *obj, char *err, size_t errlen);
int xkv_bpffs_mount(char *err, size_t errlen);

/* "native", "skb" or "test" for enum xkv_mode */
const char *xkv_mode_name(int mode);

/* ---- store helpers ---- */

__u64 xkv_now_ns(void); /* CLOCK_MONOTONIC */
/* A write stamp for an entry's wtime_ns (entry.h, xkv_stamp): unique per
 * write, strictly increasing within the process, from any thread. */
__u64 xkv_write_stamp(void);
/* The stamp of an item a snapshot restore or a JSONL load writes, cas its
 * cas unique in the file (0: none).  A cas from this clock's past is kept
 * (a client holding it can still `cas`); a fresh stamp otherwise: for a cas
 * from another boot's later clock (such an item would outlive flush_all,
 * whose cut is a stamp) and for a value above --value-size (the big-value
 * collector keeps chunks younger than its grace only: an old stamp let it
 * remove a restored value's chunks before its entry landed). */
__u64 xkv_restore_stamp(__u64 cas, bool big);
/* key bytes -> zero-padded map key of cfg.key_size; -EINVAL if too long or bad */
int xkv_key_pack(const struct xkv_config *cfg, const void *key, __u32 klen, __u8 *out);
/* memcached key rule + cfg.key_cap; returns enum xkv_perr */
int xkv_key_check(const struct xkv_config *cfg, const void *key, __u32 klen);
/* memcached's key rule as the wire answers it (1..250 bytes, else
 * XKV_E_FORMAT; the bytes cfg allows), not cfg.key_cap: a longer key is one
 * no item has (the slow path's reads miss, its writes are refused) */
int xkv_key_rule(const struct xkv_config *cfg, const void *key, __u32 klen);
/* Allocate an entry buffer of cfg.entry_size bytes and fill it.  exptime as
 * memcached takes it.  Free with free(). */
struct xkv_entry *xkv_entry_make(const struct xkv_store *s, __u32 flags, __s64 exptime,
				 const void *val, __u32 len);

/* Store n items (see xkv_layout.set_batch); keys packed (xkv_key_pack), entries
 * of cfg.entry_size bytes with the value at e->data.  Returns stored or -errno. */
long xkv_store_set_batch(struct xkv_store *s, const __u8 *keys, const __u8 *entries, __u32 n);

/* ---- values above val_cap (store/bigval.c; entry.h has the design) ---- */

/* Does the store keep values above cfg.val_cap (a big map, --big-memory > 0)? */
bool xkv_big_on(const struct xkv_store *s);
/* The largest value the store takes: XKV_BIG_MAX with a big map, else val_cap. */
__u32 xkv_val_max(const struct xkv_store *s);
/* Put the chunks of a value of len bytes (> cfg.val_cap) for key at the
 * stamp its entry will carry; the entry is written after.  0, -ENOMEM (the
 * big map is full, or the kernel out of memory), -E2BIG (no big map, or len
 * over XKV_BIG_MAX), -errno; nothing is left behind on a failure. */
int xkv_big_put(const struct xkv_store *s, const void *key, __u32 klen, __u64 stamp, const __u8 *val,
		__u32 len);
/* Read the value of the entry (key, stamp, len) into out (len bytes): 1,
 * 0 when a chunk is missing (the item was replaced or removed meanwhile:
 * read the entry again), -errno. */
int xkv_big_get(const struct xkv_store *s, const void *key, __u32 klen, __u64 stamp, __u32 len,
		__u8 *out);
/* Remove them (missing ones are skipped). */
void xkv_big_del(const struct xkv_store *s, const void *key, __u32 klen, __u64 stamp, __u32 len);
/* The item at key with its whole value: the header in it, the value in
 * it->data, or for a big one in *buf (grown as needed, *cap its size; the
 * caller frees it).  1 hit, 0 miss, <0 -errno. */
int xkv_item_get_whole(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it,
		       __u8 **buf, size_t *cap);
/* Make e (to's entry_size bytes) the entry of an item of from (header src;
 * value val, NULL for one of from's big values, read from its chunks) for
 * the store to, its write stamp kept: a value above to's val_cap gets its
 * chunks in to's big map first (none to write when from's are in the same
 * map).  from may be NULL (val holds the value).  0; -E2BIG when to cannot
 * hold it; -ESTALE when from's chunks are gone (the item was replaced);
 * -ENOMEM; -errno. */
int xkv_big_carry(const struct xkv_store *from, const struct xkv_store *to, const void *key, __u32 klen,
		  const struct xkv_entry *src, const __u8 *val, struct xkv_entry *e);

/* For a scan's visitor (snapshot, dump): the whole value of the entry
 * *e it was given, *val its inline bytes.  A big one is read into br's
 * buffer; one replaced since the scan read it is taken as it is now (*e
 * and *val then point into br).  1, 0 when the item is gone, -errno.
 * Free br with xkv_big_reader_free. */
struct xkv_big_reader {
	__u8 *buf;
	size_t cap;
	struct xkv_item *it;
	struct xkv_entry cur;
};
int xkv_big_resolve(struct xkv_store *s, struct xkv_big_reader *br, const __u8 *key, __u32 klen,
		    const struct xkv_entry **e, const __u8 **val);
void xkv_big_reader_free(struct xkv_big_reader *br);

/* What a collection found. */
struct xkv_big_census {
	__u64 chunks;    /* kept */
	__u64 items;     /* big items live in the store */
	__u64 bytes;     /* their value bytes */
	__u64 removed;   /* chunks removed: no live item has their stamp */
	__u64 capacity;  /* the big map's max_entries */
};
/* Writes in progress in the collecting process, whose chunks stay whatever
 * their age: their stamps, listed after since_ns was read (a write that
 * starts later has a stamp past it, so the cut is since_ns - grace). */
struct xkv_big_keep {
	__u64 since_ns;
	const __u64 *stamps;
	size_t n;
};
/* Remove the chunks no live item points at (overwritten or deleted by XDP,
 * evicted, expired, flushed) that are older than grace_ns (a write puts its
 * chunks before its entry; one of this process's in keep, if not NULL,
 * stays at any age).  Walks the big map and looks each (key, stamp) up in
 * the store once.  Returns the chunks kept or -errno. */
long xkv_big_collect(struct xkv_store *s, __u64 grace_ns, const struct xkv_big_keep *keep,
		     struct xkv_big_census *out);

/* ---- access policy (access/policy.c, docs/security.md) ---- */

/* "any", "10.0.0.0/8", "10.1.2.3" (= /32), "fd00::/8", "::1" (= /128).
 * 0, or -EINVAL with a message in err. */
int xkv_cidr_parse(const char *s, struct xkv_acl_key *k, char *err, size_t errlen);
/* "10.0.0.0/8", "fd00::/8", "any" */
const char *xkv_cidr_format(const struct xkv_acl_key *k, char *buf, size_t len);
extern const char *const xkv_acl_list_names[XKV_ACL__N]; /* "allow", "write", "trust" */
int xkv_acl_list_find(const char *name); /* enum xkv_acl_list or -1 */
/* Add (origin XKV_ACL_USER/AUTO, or-ed into an existing entry) / remove
 * origin bits of an entry (gone when none is left).  0 or -errno;
 * del: -ENOENT when the entry has none of those bits. */
int xkv_acl_add(const struct xkv_store *s, int list, const struct xkv_acl_key *k, __u32 origin);
int xkv_acl_del(const struct xkv_store *s, int list, const struct xkv_acl_key *k, __u32 origin);
/* After a change of an ACL trie made other than by xkv_acl_add/del (which
 * call it): a fresh token in acl_gen, so that the XDP program's per-CPU
 * cache of the last source's answer is not used again.  0 or -errno. */
int xkv_acl_changed(const struct xkv_store *s);
/* Every entry of list, in key order; stops when cb returns non-zero.
 * Returns entries visited or -errno. */
int xkv_acl_walk(const struct xkv_store *s, int list,
		 int (*cb)(const struct xkv_acl_key *k, __u32 origin, void *arg), void *arg);
/* Is the 16-byte address in list (the same longest-prefix lookup XDP does)?
 * 1 yes, 0 no, <0 -errno. */
int xkv_acl_match(const struct xkv_store *s, int list, const __u8 addr[16]);
/* The 16-byte form and the port of a sockaddr_in / sockaddr_in6 (mapped
 * IPv6 addresses come out as IPv4 ones).  0 or -EAFNOSUPPORT. */
int xkv_addr_from_sockaddr(const void *sa, __u8 out[16], __u16 *port);
/* Rights of a source, as the XDP program decides them (for the slow path):
 * allowed, may write, trusted (not amplification-capped; never with
 * XKV_CFG_STRICT).  0 or -errno. */
struct xkv_rights {
	bool allow, write, trusted;
};
int xkv_rights_of(const struct xkv_store *s, const __u8 addr[16], struct xkv_rights *r);
/* Copy the interface's MAC and addresses into the host and local_addrs maps
 * and make the AUTO entries of the lists that follow the connected subnets
 * (XKV_HOST_AUTO_*) equal to them.  changes: entries added + removed.
 * flags_set: XKV_HOST_* to set first (attach), 0 to keep (resync). */
int xkv_host_sync(const struct xkv_store *s, const char *ifname, __u16 flags_set, int *changes,
		  char *err, size_t errlen);
/* One more (delta 1) or one fewer (-1) open TCP connection from addr in
 * tcp_peers (policy.h); the entry goes at 0.  Serialised within the process.
 * 0 or -errno. */
int xkv_tcp_peer(const struct xkv_store *s, const __u8 addr[16], int delta);
/* Hold writes for a consistent snapshot (policy.h, XKV_HOST_PAUSE_WRITES):
 * on = 1 sets the flag, 0 clears it.  0 or -errno. */
int xkv_writes_pause(const struct xkv_store *s, int on);
/* 1 while writes are held, 0 if not, -errno when the host map cannot be read. */
int xkv_writes_paused(const struct xkv_store *s);
/* The host entry's XKV_HOST_* flags after setting `set` and clearing `clear`
 * (both 0: read only), or -errno. */
int xkv_host_flags(const struct xkv_store *s, __u16 set, __u16 clear);
/* Empty tcp_peers (serve starts and stops with no connection). */
int xkv_tcp_peers_clear(const struct xkv_store *s);
/* Set h's inline copy of the local addresses (policy.h, XKV_HOST_ADDRS_INLINE)
 * to addrs[0 .. n) when they fit, or clear it so XDP looks in local_addrs;
 * the caller writes the same addresses into local_addrs and then h. */
void xkv_host_set_inline(struct xkv_host *h, const __u8 (*addrs)[16], int n);
/* Tests and benchmarks that run the program without attaching it: allow,
 * write and trust everyone (::/0), no MAC/IP checks. */
int xkv_policy_open_all(const struct xkv_store *s);
/* The same for a loaded object that has no xkv_store (the null store). */
int xkv_object_open_policy(struct bpf_object *obj);

/* ---- counters ---- */
extern const char *const xkv_stat_names[XKV_STAT__MAX];
extern const char *const xkv_stat_help[XKV_STAT__MAX];
/* Sum of one slot over CPUs; percpu != NULL receives ncpus rows. */
int xkv_stats_read(const struct xkv_store *s, __u32 slot, struct xkv_stats *sum,
		   struct xkv_stats *percpu);
/* Requests the XDP program answered itself: datagrams it saw on the port
 * minus those it passed on (pass_*).  `fast` is the fast path's slot. */
__u64 xkv_fast_served(const struct xkv_stats *fast);
/* Add delta to the slow path's slot (the slow path is its only writer). */
int xkv_stats_slow_add(const struct xkv_store *s, const struct xkv_stats *delta);
/* The kernel's own figure for a map's memory: memlock from fdinfo. */
long long xkv_map_memory(int map_fd);

/* ---- helpers shared by the hash-like layouts (store/store_hash.c) ---- */
int xkv_hash_get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it);
int xkv_hash_set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *e);
int xkv_hash_set_if(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		    struct xkv_entry *e);
int xkv_hash_add(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *e);
int xkv_hash_del(struct xkv_store *s, const void *key, __u32 klen);
long xkv_hash_count(struct xkv_store *s);
long xkv_hash_set_batch(struct xkv_store *s, const __u8 *keys, const __u8 *entries, __u32 n);
__u64 xkv_hash_span(const struct xkv_store *s);
long xkv_hash_scan(struct xkv_store *s, __u64 lo, __u64 hi, xkv_visit_fn fn, void *arg, __u64 *busy);
/* The accessor fields of a hash-like struct xkv_layout. */
#define XKV_HASH_ACCESSOR                                                   \
	.get = xkv_hash_get, .set = xkv_hash_set, .del = xkv_hash_del,      \
	.set_if = xkv_hash_set_if,                                          \
	.count = xkv_hash_count, .flush = xkv_hash_flush, .set_batch = xkv_hash_set_batch, \
	.span = xkv_hash_span, .scan = xkv_hash_scan, .add = xkv_hash_add

/* A layout's BPF object, embedded by its bpftool skeleton NAME.skel.h. */
#define XKV_LAYOUT_ELF(name)                                 \
	static const void *elf(size_t *sz)                  \
	{                                                    \
		return name##__elf_bytes(sz);                \
	}
int xkv_hash_flush(struct xkv_store *s, __u64 cut);

#ifdef __cplusplus
}
#endif
#endif
