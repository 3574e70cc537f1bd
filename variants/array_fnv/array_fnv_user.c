// SPDX-License-Identifier: MIT
/* array_fnv: userspace side.  The slots are mmapped (BPF_F_MMAPABLE) and
 * read and written with the same sequence-counter protocol as the XDP
 * program (slot.h), so neither side sees a torn value.  A userspace writer
 * can be killed inside a slot: this side takes such slots back (repair,
 * below), at the price of one rare torn read (set()). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "array_fnv/slot.h"
#include "array_fnv.skel.h"

#define RETRIES 1000

XKV_LAYOUT_ELF(array_fnv)

static __u64 steal_ns = XKV_SLOT_STEAL_MS * 1000000ull;
/* test_wedge: XDPKV_TEST_DIE_IN_SLOT=1 makes set() SIGKILL itself inside a
 * slot, =stop SIGSTOP (a writer that is only slow); once per process */
static int die_in_slot;

/* Slots found odd through a whole retry loop: the seq they had and when that
 * was first seen.  Still odd at that seq XKV_SLOT_STEAL_MS later means the
 * writer died inside.  Process-wide, keyed by slot address (struct xkv_store
 * has no room for it); a few wedged slots at once is already a disaster, so
 * a small table does, and losing an entry only delays a repair. */
#define WEDGES 16
static struct {
	const struct xkv_entry *e;
	__u32 seq;
	__u64 since;
} wedges[WEDGES];
static unsigned wedge_next;
static pthread_mutex_t wedge_mu = PTHREAD_MUTEX_INITIALIZER;

/* Has e been odd at seq q for the timeout?  The first sight starts the clock;
 * nobody waits for it: requests fail fast until then. */
static bool wedged(const struct xkv_entry *e, __u32 q)
{
	__u64 now = xkv_now_ns();
	bool old = false;
	pthread_mutex_lock(&wedge_mu);
	unsigned i;
	for (i = 0; i < WEDGES && wedges[i].e != e; i++)
		;
	if (i == WEDGES)
		i = wedge_next++ % WEDGES;
	if (wedges[i].e == e && wedges[i].seq == q) {
		old = now - wedges[i].since >= steal_ns;
	} else {
		wedges[i].e = e;
		wedges[i].seq = q;
		wedges[i].since = now;
	}
	pthread_mutex_unlock(&wedge_mu);
	return old;
}

static void forget(const void *lo, const void *hi)
{
	pthread_mutex_lock(&wedge_mu);
	for (unsigned i = 0; i < WEDGES; i++)
		if ((const void *)wedges[i].e >= lo && (const void *)wedges[i].e < hi)
			wedges[i].e = NULL;
	pthread_mutex_unlock(&wedge_mu);
}

/* Slot e stayed odd through a whole retry loop that began at seq q0.  If it
 * is still q0 (a live writer's section is microseconds; a seq that only
 * wrapped around to q0 would have moved meanwhile) and was q0 a timeout ago,
 * its writer died inside: steal it and empty it (its bytes may be half
 * written).  The seq now owned (the caller writes or not, then releases),
 * or 0. */
static __u32 repair(struct xkv_store *s, struct xkv_entry *e, __u32 q0)
{
	if (!(q0 & 1) || slot_seq(e) != q0 || !wedged(e, q0))
		return 0;
	__u32 own = slot_steal(e, q0);
	if (!own)
		return 0;
	forget(e, e + 1);
	e->wtime_ns = 0;
	e->expire_ns = 0;
	e->len = 0;
	e->klen = 0;
	/* rare: counted in the userspace slot at once (slot_repairs) */
	struct xkv_stats d = {};
	d.v[XKV_STAT_slot_repairs] = 1;
	xkv_stats_slow_add(s, &d);
	return own;
}

static int open_slots(struct xkv_store *s)
{
	long page = sysconf(_SC_PAGESIZE);
	s->slot_stride = (s->cfg.entry_size + 7) & ~7u;
	s->mm_len = ((size_t)s->slot_stride * s->cfg.entries + page - 1) & ~(size_t)(page - 1);
	void *mm = mmap(NULL, s->mm_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->store_fd, 0);
	if (mm == MAP_FAILED)
		return -errno;
	s->mm = mm;
	const char *v = getenv("XDPKV_SLOT_STEAL_MS");
	char *end;
	unsigned long long ms = v ? strtoull(v, &end, 10) : 0;
	steal_ns = (v && *v && !*end ? ms : XKV_SLOT_STEAL_MS) * 1000000ull;
	v = getenv("XDPKV_TEST_DIE_IN_SLOT");
	die_in_slot = !v ? 0 : !strcmp(v, "1") ? SIGKILL : !strcmp(v, "stop") ? SIGSTOP : 0;
	return 0;
}

static void close_slots(struct xkv_store *s)
{
	if (s->mm) {
		forget(s->mm, (__u8 *)s->mm + s->mm_len);
		munmap(s->mm, s->mm_len);
	}
	s->mm = NULL;
}

static struct xkv_entry *slot(struct xkv_store *s, __u32 i)
{
	return (struct xkv_entry *)((__u8 *)s->mm + (size_t)i * s->slot_stride);
}

static bool match(const struct xkv_store *s, const struct xkv_entry *e, const __u8 *k, __u32 klen)
{
	return e->klen == klen && !memcmp(e->data, k, s->cfg.key_size);
}

/* Copy slot e's header, key and value into buf as one whole version (the
 * reader side of slot.h): 1 a live item, 0 empty or expired, -EBUSY a writer
 * held it through every retry. */
static int read_slot(const struct xkv_store *s, const struct xkv_entry *e, struct xkv_entry *buf,
		     __u64 now)
{
	for (int i = 0; i < RETRIES; i++) {
		__u32 s1 = slot_seq(e);
		if (s1 & 1) {
			sched_yield();
			continue;
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		memcpy(buf, e, XKV_ENTRY_HDR);
		__u32 len = buf->len <= s->cfg.val_cap ? buf->len : 0;
		if (buf->wtime_ns)
			memcpy(buf->data, e->data, s->cfg.key_size + len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (slot_seq(e) == s1)
			return xkv_entry_live(buf, now) && buf->len <= s->cfg.val_cap &&
			       buf->klen && buf->klen <= s->cfg.key_cap;
	}
	return -EBUSY;
}

static int get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	struct xkv_entry *e = slot(s, slot_index(k, klen, s->cfg.entries));
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	if (!buf)
		return -ENOMEM;
	__u32 q0 = slot_seq(e);
	int r = read_slot(s, e, buf, xkv_now_ns());
	if (r == 1 && match(s, buf, k, klen)) {
		it->flags = buf->flags;
		it->len = buf->len;
		it->expire_ns = buf->expire_ns;
		it->wtime_ns = buf->wtime_ns;
		memcpy(it->data, buf->data + s->cfg.key_size, buf->len);
	} else if (r == 1) {
		r = 0;
	}
	free(buf);
	if (r != -EBUSY)
		return r;
	/* repaired: it holds nothing now (if another writer stole it from us
	 * meanwhile, that writer makes it whole; a miss is still true) */
	__u32 own = repair(s, e, q0);
	if (own) {
		slot_unlock(e, own);
		return 0;
	}
	return -EBUSY;
}

/* Take slot e's writer side: 0 and the seq owned in *own, or -EBUSY.  A slot
 * whose writer died inside comes back repaired, i.e. empty. */
static int take(struct xkv_store *s, struct xkv_entry *e, __u32 *own)
{
	__u32 q0 = slot_seq(e);
	for (int i = 0; i < RETRIES; i++) {
		if ((*own = slot_lock(e)))
			return 0;
		sched_yield();
	}
	return (*own = repair(s, e, q0)) ? 0 : -EBUSY;
}

/* Write n (key k) into slot e, whose writer side this thread holds.
 * Returns what it counts: bit 0 a new item, bit 1 an item of another key
 * overwritten (as the XDP side counts them, array_fnv.bpf.c). */
static int fill_slot(struct xkv_store *s, struct xkv_entry *e, const __u8 *k, __u32 klen,
		     const struct xkv_entry *n)
{
	int fresh = !e->wtime_ns || (!match(s, e, k, klen) && !xkv_entry_live(e, n->wtime_ns));
	int evicts = !fresh && !match(s, e, k, klen);
	e->expire_ns = n->expire_ns;
	e->wtime_ns = n->wtime_ns;
	e->flags = n->flags;
	e->len = n->len;
	e->klen = klen;
	memcpy(e->data, k, s->cfg.key_size);
	__u8 *v = e->data + s->cfg.key_size;
	if (die_in_slot) { /* halfway through the value */
		memcpy(v, n->data, n->len / 2);
		int sig = die_in_slot;
		die_in_slot = 0;
		raise(sig);
	}
	memcpy(v, n->data, n->len);
	return fresh | evicts << 1;
}

/* The store under the slot's lock: fn (NULL: store n as it is) decides
 * from the live item of this key in the slot, so the read, the decision
 * and the write are one step for every writer that takes the lock, XDP
 * included. */
static int store_locked(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn,
			void *arg, struct xkv_entry *n)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	if (!fn && n->len > s->cfg.val_cap)
		return -E2BIG;
	struct xkv_entry *e = slot(s, slot_index(k, klen, s->cfg.entries));
	struct xkv_item *it = fn ? malloc(sizeof(*it)) : NULL;
	if (fn && !it)
		return -ENOMEM;
	__u32 own;
	int rc;
	for (;;) {
		if (take(s, e, &own)) {
			rc = -EBUSY;
			break;
		}
		if (fn) {
			bool hit = e->wtime_ns && match(s, e, k, klen) &&
				   xkv_entry_live(e, xkv_now_ns()) && e->len <= s->cfg.val_cap;
			if (hit) {
				it->flags = e->flags;
				it->len = e->len;
				it->expire_ns = e->expire_ns;
				it->wtime_ns = e->wtime_ns;
				memcpy(it->data, e->data + s->cfg.key_size, e->len);
			}
			rc = fn(arg, hit ? it : NULL, n);
			if (!rc && n->len > s->cfg.val_cap)
				rc = -E2BIG;
			if (rc) {
				slot_unlock(e, own);
				break;
			}
		}
		int counts = fill_slot(s, e, k, klen, n);
		if (slot_unlock(e, own)) {
			s->new_items += counts & 1;
			s->overwrites += counts >> 1;
			rc = 0;
			break;
		}
		/* Robbed: we stalled inside past the timeout, a thief emptied the
		 * slot (or stored its own value) and others may have written since,
		 * all while we went on copying, so it may hold a mix.  Take it again
		 * and rewrite our whole value (deciding again on what is there now).
		 * Until then (or until whoever holds it now rewrites it) readers can
		 * see that mix: the one torn read left, and only for a writer
		 * stalled longer than XKV_SLOT_STEAL_MS. */
	}
	free(it);
	return rc;
}

static int set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n)
{
	return store_locked(s, key, klen, NULL, NULL, (struct xkv_entry *)n);
}

static int set_if(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		  struct xkv_entry *n)
{
	return store_locked(s, key, klen, fn, arg, n);
}

static int del(struct xkv_store *s, const void *key, __u32 klen)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	struct xkv_entry *e = slot(s, slot_index(k, klen, s->cfg.entries));
	__u32 own;
	if (take(s, e, &own))
		return -EBUSY;
	int found = e->wtime_ns && match(s, e, k, klen);
	int live = found && xkv_entry_live(e, xkv_now_ns());
	if (found)
		e->wtime_ns = 0;
	/* robbed (stalled past the timeout): the thief emptied the slot or
	 * stored over it, and our late wtime_ns = 0 may have dropped what it
	 * stored; nothing to redo for a delete */
	slot_unlock(e, own);
	return live;
}

static long count(struct xkv_store *s)
{
	__u64 now = xkv_now_ns();
	long n = 0;
	for (__u32 i = 0; i < s->cfg.entries; i++)
		n += xkv_entry_live(slot(s, i), now);
	return n;
}

static int flush(struct xkv_store *s)
{
	for (__u32 i = 0; i < s->cfg.entries; i++) {
		struct xkv_entry *e = slot(s, i);
		__u32 own;
		if (!e->wtime_ns)
			continue;
		if (take(s, e, &own))
			return -EBUSY;
		e->wtime_ns = 0;
		slot_unlock(e, own); /* robbed: the thief emptied it, or stored after the flush */
	}
	return 0;
}

static __u64 span(const struct xkv_store *s)
{
	return s->cfg.entries;
}

static long scan(struct xkv_store *s, __u64 lo, __u64 hi, xkv_visit_fn fn, void *arg, __u64 *busy)
{
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	__u64 end = hi < s->cfg.entries ? hi : s->cfg.entries, now = xkv_now_ns();
	long n = 0;
	if (!buf)
		return -ENOMEM;
	for (__u64 i = lo; i < end; i++) {
		const struct xkv_entry *e = slot(s, (__u32)i);
		if (!*(const volatile __u64 *)&e->wtime_ns)
			continue; /* empty: skip without the protocol */
		int r = read_slot(s, e, buf, now);
		if (r == -EBUSY)
			(*busy)++;
		if (r != 1)
			continue;
		if ((r = fn(arg, buf->data, buf->klen, buf, buf->data + s->cfg.key_size))) {
			n = r;
			break;
		}
		n++;
	}
	free(buf);
	return n;
}

const struct xkv_layout xkv_layout_array_fnv = {
	.name = "array_fnv",
	.summary = "BPF_MAP_TYPE_ARRAY indexed by FNV-1a(key) % entries (BMC-style cache)",
	.loses = "items overwritten by a colliding key (counted exactly)",
	.map_type = BPF_MAP_TYPE_ARRAY,
	.key_in_value = true,
	.elf = elf,
	.open = open_slots,
	.close = close_slots,
	.get = get,
	.set = set,
	.set_if = set_if,
	.del = del,
	.count = count,
	.flush = flush,
	.span = span,
	.scan = scan,
};
