// SPDX-License-Identifier: MIT
/* arena: userspace side.  The arena is mmapped at the user address it was
 * created with (cfg.arena_base, pinned with cfg), in every process: the
 * kernel lets a second mapping of an arena lie only there.  Slots are read
 * and written with array_fnv's sequence-counter protocol (slot.h,
 * slot_user.c), so neither side sees a torn value, and a store takes the
 * home slot's counter before the slot it writes, as the XDP side does
 * (arena.bpf.c).  The first opener faults in every page and sets the
 * header's ready word; XDP stores wait for it. */
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "array_fnv/slot.h"
#include "array_fnv/slot_user.h"
#include "arena/table.h"
#include "arena.skel.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

XKV_LAYOUT_ELF(arena)

static __u64 steal_ns = XKV_SLOT_STEAL_MS * 1000000ull;
static int die_in_slot; /* test_wedge, as array_fnv's */

static size_t arena_len(const struct xkv_config *cfg)
{
	return (size_t)xkv_ar_pages(cfg->entries, cfg->entry_size) * XKV_AR_PAGE;
}

/* Is [base, base + len) free in this process? */
static bool range_free(__u64 base, size_t len)
{
	void *p = mmap((void *)(uintptr_t)base, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return false;
	munmap(p, len);
	return p == (void *)(uintptr_t)base;
}

/* Is base the arena address of a store pinned for another interface?  (A
 * process that opens two stores, as migrate does, maps both.) */
static bool base_pinned(__u64 base)
{
	glob_t g;
	bool used = false;
	if (glob(XKV_PIN_ROOT "/*/cfg", 0, NULL, &g))
		return false;
	for (size_t i = 0; i < g.gl_pathc && !used; i++) {
		char ifname[64];
		struct xkv_config c;
		const char *p = g.gl_pathv[i] + strlen(XKV_PIN_ROOT "/");
		size_t n = strcspn(p, "/");
		if (n >= sizeof(ifname))
			continue;
		memcpy(ifname, p, n);
		ifname[n] = 0;
		used = !xkv_pins_cfg(ifname, &c, NULL, 0) && c.arena_base == base;
	}
	globfree(&g);
	return used;
}

/* xkv_config_finish: the arena's size and its user address. */
static int finish(struct xkv_config *cfg, char *err, size_t errlen)
{
	size_t len = arena_len(cfg);
	if (len > XKV_AR_WINDOW_BYTES)
		return xkv_errf(err, errlen, -EINVAL,
				"--entries %u of %u-byte slots need %zu bytes: an arena holds at most 4 GiB",
				cfg->entries, xkv_ar_stride(cfg->entry_size), len);
	if (cfg->arena_base) {
		__u64 b = cfg->arena_base;
		if (b & (XKV_AR_PAGE - 1) || b >> 32 != (b + len - 1) >> 32)
			return xkv_errf(err, errlen, -EINVAL,
					"arena address %#llx: not page aligned, or the arena would cross a 4 GiB boundary",
					(unsigned long long)b);
		return 0;
	}
	for (__u32 k = 0; k < XKV_AR_BASES; k++) {
		__u64 b = XKV_AR_BASE_TOP - (__u64)k * XKV_AR_WINDOW_BYTES;
		if (range_free(b, len) && !base_pinned(b)) {
			cfg->arena_base = b;
			return 0;
		}
	}
	return xkv_errf(err, errlen, -EADDRINUSE, "no free 4 GiB window for the arena below %#llx",
			(unsigned long long)XKV_AR_BASE_TOP);
}

/* Before load: the arena's pages and its user address (libbpf 1.1 does not
 * map the arena itself: the verifier needs the address from map_extra). */
static int prepare(struct bpf_map *m, const struct xkv_config *cfg)
{
	int e;
	if ((e = bpf_map__set_key_size(m, 0)) || (e = bpf_map__set_value_size(m, 0)) ||
	    (e = bpf_map__set_max_entries(m, (__u32)xkv_ar_pages(cfg->entries, cfg->entry_size))) ||
	    (e = bpf_map__set_map_extra(m, cfg->arena_base)))
		return e;
	return 0;
}

/* The arenas this process has mapped.  The kernel lets an arena be mapped
 * at one address only, so a process that opens a store twice shares one
 * mapping.  A forked child inherits this table but not the mappings (the
 * kernel does not copy an arena's on fork): it starts afresh. */
#define MAPPED_MAX 8
static struct {
	__u64 base;
	__u32 map_id, refs;
	size_t len;
} mapped[MAPPED_MAX];
static pid_t mapped_pid;
static pthread_mutex_t mapped_mu = PTHREAD_MUTEX_INITIALIZER;

static __u32 map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* Map the arena at base (or take this process's mapping of it): 0, -EEXIST
 * (something else is there), or -errno. */
static int map_arena(struct xkv_store *s, __u64 base, size_t len)
{
	__u32 id = map_id(s->store_fd);
	int e = 0, i, hole = -1;
	pthread_mutex_lock(&mapped_mu);
	if (mapped_pid != getpid()) {
		memset(mapped, 0, sizeof(mapped));
		mapped_pid = getpid();
	}
	for (i = 0; i < MAPPED_MAX; i++) {
		if (mapped[i].refs && mapped[i].base == base)
			break;
		if (!mapped[i].refs && hole < 0)
			hole = i;
	}
	if (i < MAPPED_MAX) {
		if (mapped[i].map_id == id && id && mapped[i].len == len)
			mapped[i].refs++;
		else
			e = -EEXIST; /* another arena at the same address */
	} else if (hole < 0) {
		e = -ENOMEM;
	} else {
		void *mm = mmap((void *)(uintptr_t)base, len, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_FIXED_NOREPLACE, s->store_fd, 0);
		if (mm == MAP_FAILED) {
			e = -errno;
		} else if (mm != (void *)(uintptr_t)base) { /* MAP_FIXED_NOREPLACE taken as a hint */
			munmap(mm, len);
			e = -EEXIST;
		} else {
			mapped[hole].base = base;
			mapped[hole].len = len;
			mapped[hole].map_id = id;
			mapped[hole].refs = 1;
		}
	}
	pthread_mutex_unlock(&mapped_mu);
	return e;
}

static void close_arena(struct xkv_store *s)
{
	if (!s->mm)
		return;
	pthread_mutex_lock(&mapped_mu);
	for (int i = 0; i < MAPPED_MAX; i++) {
		if (!mapped[i].refs || mapped[i].base != (__u64)(uintptr_t)s->mm)
			continue;
		if (--mapped[i].refs == 0) {
			xkv_wedge_forget(s->mm, (__u8 *)s->mm + s->mm_len);
			munmap(s->mm, s->mm_len);
		}
		break;
	}
	pthread_mutex_unlock(&mapped_mu);
	s->mm = NULL;
}

static int open_arena(struct xkv_store *s)
{
	size_t len = arena_len(&s->cfg);
	steal_ns = xkv_wedge_steal_ns();
	die_in_slot = xkv_wedge_die_signal();
	if (!s->cfg.arena_base)
		return -EINVAL;
	int e = map_arena(s, s->cfg.arena_base, len);
	if (e)
		return e;
	s->mm = (void *)(uintptr_t)s->cfg.arena_base;
	s->mm_len = len;
	s->slot_stride = xkv_ar_stride(s->cfg.entry_size);
	struct xkv_ar_hdr *h = s->mm;
	if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != XKV_AR_READY) {
		/* XDP cannot allocate arena pages: fault in every one now (a
		 * write that changes nothing, safe beside other writers) */
		for (size_t off = 0; off < len; off += XKV_AR_PAGE)
			__atomic_fetch_add((__u32 *)((__u8 *)s->mm + off), 0, __ATOMIC_RELAXED);
		h->entries = s->cfg.entries;
		h->stride = s->slot_stride;
		__atomic_store_n(&h->ready, XKV_AR_READY, __ATOMIC_RELEASE);
	} else if (h->entries != s->cfg.entries || h->stride != s->slot_stride) {
		close_arena(s); /* made for another size: the pinned cfg is not this arena's */
		return -EPROTO;
	}
	return 0;
}

static __u8 *table(const struct xkv_store *s)
{
	return (__u8 *)s->mm + XKV_AR_TABLE_OFF;
}

static struct xkv_entry *slot(const struct xkv_store *s, __u32 i)
{
	return (struct xkv_entry *)(table(s) + (size_t)i * s->slot_stride);
}

static struct xkv_entry *win_slot(const struct xkv_store *s, __u32 home, __u32 j)
{
	return slot(s, xkv_ar_slot(home, j, s->cfg.entries));
}

static __u32 home_of(const struct xkv_store *s, const __u8 *k, __u32 klen)
{
	return slot_index(s->cfg.hash_seed, k, klen, s->cfg.entries);
}

static int take(struct xkv_store *s, struct xkv_entry *e, __u32 *own)
{
	return xkv_seq_take(s, &e->seq, own, steal_ns, e, s->cfg.entry_size, xkv_slot_mend);
}

static int get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	__u32 home = home_of(s, k, klen);
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	for (__u32 j = 0; j < xkv_ar_win(s->cfg.entries) && rc != 1; j++) {
		struct xkv_entry *e = win_slot(s, home, j);
		__u32 q0 = slot_seq(e);
		int r = xkv_slot_read(s, e, buf, xkv_now_ns());
		if (r == 1 && xkv_slot_match(s, buf, k, klen)) {
			xkv_slot_item(s, buf, it);
			rc = 1;
		} else if (r == -EBUSY) {
			/* repaired: it holds nothing now; else the key may be there */
			__u32 own = xkv_seq_repair(s, &e->seq, q0, steal_ns, e, s->cfg.entry_size, xkv_slot_mend);
			if (own)
				slot_unlock(e, own);
			else
				rc = -EBUSY;
		}
	}
	free(buf);
	return rc;
}

/* The store's choice in the key's window (table.h: XKV_AR_SAME, XKV_AR_FREE,
 * else the live item written longest ago), as the XDP side's xkv_ar_pick. */
static int pick(struct xkv_store *s, const struct xkv_slot_where *at, __u64 now)
{
	__u32 win = xkv_ar_win(s->cfg.entries);
	for (__u32 j = 0; j < win; j++) {
		struct xkv_entry *e = win_slot(s, at->at, j);
		if (e->wtime_ns && xkv_slot_match(s, e, at->k, at->klen))
			return (int)j | XKV_AR_SAME;
	}
	return xkv_ar_choose(table(s), s->slot_stride, at->at, s->cfg.entries, now);
}

/* One try of a store (xkv_slot_store): under the home slot's lock, choose the
 * slot, take its lock too, check the choice still holds (else try again),
 * decide (fn) and write. */
static int store_try(struct xkv_store *s, void *where, xkv_decide_fn fn, void *arg, struct xkv_item *it,
		     struct xkv_entry *n)
{
	struct xkv_slot_where *at = where;
	struct xkv_entry *h = slot(s, at->at), *e;
	__u32 own_h, own, t;
	__u64 now = xkv_now_ns();
	int rc = 0, p;
	if (take(s, h, &own_h))
		return -EBUSY;
	p = pick(s, at, now);
	t = xkv_ar_slot(at->at, (__u32)p & 0xff, s->cfg.entries);
	e = slot(s, t);
	own = own_h;
	if (t != at->at && take(s, e, &own)) {
		slot_unlock(h, own_h);
		return -EBUSY;
	}
	bool same = e->wtime_ns && xkv_slot_match(s, e, at->k, at->klen);
	bool live = xkv_entry_live(e, now);
	if ((p & XKV_AR_SAME) ? !same : (p & XKV_AR_FREE) && live) {
		rc = XKV_ROBBED; /* another store took the slot meanwhile: choose again */
	} else if (at->only_free && live) {
		rc = same ? -EEXIST : -EADDRINUSE;
	} else if (!fn || !(rc = xkv_slot_decide(s, same ? e : NULL, fn, arg, it, n))) {
		int counts = xkv_slot_fill(s, e, at->k, at->klen, n, &die_in_slot);
		s->new_items += counts & 1;
		s->overwrites += counts >> 1;
	}
	bool robbed = (t != at->at && !slot_unlock(e, own)) | !slot_unlock(h, own_h);
	return robbed ? XKV_ROBBED : rc; /* robbed: a thief emptied a slot or stored its own value */
}

static const struct xkv_slot_ops slot_ops = { .locate = home_of, .try = store_try, .table_off = XKV_AR_TABLE_OFF };

static int del(struct xkv_store *s, const void *key, __u32 klen)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	__u32 home = home_of(s, k, klen);
	for (__u32 j = 0; j < xkv_ar_win(s->cfg.entries); j++) {
		struct xkv_entry *e = win_slot(s, home, j);
		__u32 own;
		if (!e->wtime_ns || !xkv_slot_match(s, e, k, klen))
			continue;
		if (take(s, e, &own))
			return -EBUSY;
		int found = e->wtime_ns && xkv_slot_match(s, e, k, klen);
		int live = found && xkv_entry_live(e, xkv_now_ns());
		if (found)
			e->wtime_ns = 0;
		slot_unlock(e, own); /* robbed: nothing to redo for a delete (array_fnv's del) */
		return live;
	}
	return 0;
}

const struct xkv_layout xkv_layout_arena = {
	.name = "arena",
	.summary = "BPF_MAP_TYPE_ARENA, open addressing: a key in one of 4 slots from keyed hash(key) % entries",
	.loses = "the item written longest ago in a full 4-slot window (counted exactly)",
	.map_type = XKV_MAP_TYPE_ARENA,
	.key_in_value = true,
	.hash_seeded = true,
	.elf = elf,
	.finish = finish,
	.prepare = prepare,
	.open = open_arena,
	.close = close_arena,
	.slot_ops = &slot_ops,
	.get = get,
	.del = del,
	XKV_SLOTS_ACCESSOR,
};
