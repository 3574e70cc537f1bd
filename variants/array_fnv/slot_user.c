// SPDX-License-Identifier: MIT
/* See wedge.h. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "xdpkv.h"
#include "array_fnv/slot.h"
#include "array_fnv/slot_user.h"

#define READ_RETRIES 1000 /* reads, and takes before a counter counts as held */

/* Counters found odd through a whole retry loop: the seq they had and when
 * that was first seen.  Still odd at that seq XKV_SLOT_STEAL_MS later means
 * the writer died inside.  Process-wide, keyed by the counter's address
 * (struct xkv_store has no room for it); a few wedged slots at once is
 * already a disaster, so a small table does, and losing an entry only delays
 * a repair. */
#define WEDGES 16
static struct {
	const void *addr;
	__u32 seq;
	__u64 since;
} wedges[WEDGES];
static unsigned wedge_next;
static pthread_mutex_t wedge_mu = PTHREAD_MUTEX_INITIALIZER;

__u64 xkv_wedge_steal_ns(void)
{
	const char *v = getenv("XDPKV_SLOT_STEAL_MS");
	char *end;
	unsigned long long ms = v ? strtoull(v, &end, 10) : 0;
	return (v && *v && !*end ? ms : XKV_SLOT_STEAL_MS) * 1000000ull;
}

int xkv_wedge_die_signal(void)
{
	const char *v = getenv("XDPKV_TEST_DIE_IN_SLOT");
	return !v ? 0 : !strcmp(v, "1") ? SIGKILL : !strcmp(v, "stop") ? SIGSTOP : 0;
}

bool xkv_wedged(const void *addr, __u32 q, __u64 steal_ns)
{
	__u64 now = xkv_now_ns();
	bool old = false;
	pthread_mutex_lock(&wedge_mu);
	unsigned i;
	for (i = 0; i < WEDGES && wedges[i].addr != addr; i++)
		;
	if (i == WEDGES)
		i = wedge_next++ % WEDGES;
	if (wedges[i].addr == addr && wedges[i].seq == q) {
		old = now - wedges[i].since >= steal_ns;
	} else {
		wedges[i].addr = addr;
		wedges[i].seq = q;
		wedges[i].since = now;
	}
	pthread_mutex_unlock(&wedge_mu);
	return old;
}

void xkv_wedge_forget(const void *lo, const void *hi)
{
	pthread_mutex_lock(&wedge_mu);
	for (unsigned i = 0; i < WEDGES; i++)
		if ((const char *)wedges[i].addr >= (const char *)lo && (const char *)wedges[i].addr < (const char *)hi)
			wedges[i].addr = NULL;
	pthread_mutex_unlock(&wedge_mu);
}

int xkv_slot_read(const struct xkv_store *s, const struct xkv_entry *e, struct xkv_entry *buf,
		  __u64 now)
{
	for (int i = 0; i < READ_RETRIES; i++) {
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
			return xkv_entry_live(buf, now) && buf->len <= XKV_BIG_MAX &&
			       (buf->klen & XKV_ENT_KLEN) && (buf->klen & XKV_ENT_KLEN) <= s->cfg.key_cap;
	}
	return -EBUSY;
}

int xkv_slots_map(struct xkv_store *s, __u32 stride, __u32 n)
{
	long page = sysconf(_SC_PAGESIZE);
	s->slot_stride = stride;
	s->mm_len = ((size_t)stride * n + page - 1) & ~(size_t)(page - 1);
	void *mm = mmap(NULL, s->mm_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->store_fd, 0);
	if (mm == MAP_FAILED)
		return -errno;
	s->mm = mm;
	return 0;
}

void xkv_slots_unmap(struct xkv_store *s)
{
	if (s->mm) {
		xkv_wedge_forget(s->mm, (__u8 *)s->mm + s->mm_len);
		munmap(s->mm, s->mm_len);
	}
	s->mm = NULL;
}

__u32 xkv_seq_repair(struct xkv_store *s, __u32 *seq, __u32 q0, __u64 steal_ns, void *at, size_t len,
		     xkv_mend_fn mend)
{
	if (!(q0 & 1) || seq_read(seq) != q0 || !xkv_wedged(seq, q0, steal_ns))
		return 0;
	__u32 own = seq_steal(seq, q0);
	if (!own)
		return 0;
	xkv_wedge_forget(at, (__u8 *)at + len);
	mend(s, at, own);
	/* rare: counted in the userspace slot at once (slot_repairs) */
	struct xkv_stats d = {};
	d.v[XKV_STAT_slot_repairs] = 1;
	xkv_stats_slow_add(s, &d);
	return own;
}

int xkv_seq_take(struct xkv_store *s, __u32 *seq, __u32 *own, __u64 steal_ns, void *at, size_t len,
		 xkv_mend_fn mend)
{
	__u32 q0 = seq_read(seq);
	for (int i = 0; i < READ_RETRIES; i++) {
		if ((*own = seq_lock(seq)))
			return 0;
		sched_yield();
	}
	return (*own = xkv_seq_repair(s, seq, q0, steal_ns, at, len, mend)) ? 0 : -EBUSY;
}

void xkv_slot_item(const struct xkv_store *s, const struct xkv_entry *buf, struct xkv_item *it)
{
	it->flags = buf->flags;
	it->len = buf->len;
	it->expire_ns = buf->expire_ns;
	it->wtime_ns = buf->wtime_ns;
	it->state = buf->klen & XKV_ENT_STATE;
	memcpy(it->data, buf->data + s->cfg.key_size, xkv_inline_len(buf->len, s->cfg.val_cap));
}

int xkv_slot_decide(const struct xkv_store *s, const struct xkv_entry *cur, xkv_decide_fn fn, void *arg,
		    struct xkv_item *it, struct xkv_entry *n)
{
	bool hit = cur && xkv_entry_live(cur, xkv_now_ns()) && cur->len <= XKV_BIG_MAX;
	if (hit)
		xkv_slot_item(s, cur, it);
	int rc = fn(arg, hit ? it : NULL, n);
	return !rc && n->len > XKV_BIG_MAX ? -E2BIG : rc;
}

int xkv_slot_store(struct xkv_store *s, void *at, xkv_decide_fn fn, void *arg, struct xkv_entry *n,
		   xkv_store_try_fn try)
{
	if (!fn && n->len > XKV_BIG_MAX)
		return -E2BIG;
	struct xkv_item *it = fn ? malloc(sizeof(*it)) : NULL;
	if (fn && !it)
		return -ENOMEM;
	int rc;
	while ((rc = try(s, at, fn, arg, it, n)) == XKV_ROBBED)
		;
	free(it);
	return rc;
}

void xkv_slot_put_value(const struct xkv_store *s, __u8 *v, const struct xkv_entry *n, int *die)
{
	__u32 len = xkv_inline_len(n->len, s->cfg.val_cap); /* a big value: none here */
	if (*die) { /* halfway through the value */
		memcpy(v, n->data, len / 2);
		int sig = *die;
		*die = 0;
		raise(sig);
	}
	memcpy(v, n->data, len);
}

int xkv_slot_visit(const struct xkv_store *s, const struct xkv_entry *e, struct xkv_entry *buf, __u64 now,
		   xkv_visit_fn fn, void *arg, long *n, __u64 *busy)
{
	if (!*(const volatile __u64 *)&e->wtime_ns)
		return 0; /* empty: skip without the protocol */
	int r = xkv_slot_read(s, e, buf, now);
	if (r == -EBUSY)
		(*busy)++;
	if (r != 1)
		return 0;
	if ((r = fn(arg, buf->data, buf->klen & XKV_ENT_KLEN, buf, buf->data + s->cfg.key_size)))
		return r;
	(*n)++;
	return 0;
}

void xkv_slot_mend(struct xkv_store *s, void *at, __u32 own)
{
	struct xkv_entry *e = at;
	(void)s;
	(void)own;
	e->wtime_ns = 0;
	e->expire_ns = 0;
	e->len = 0;
	e->klen = 0;
}

bool xkv_slot_match(const struct xkv_store *s, const struct xkv_entry *e, const __u8 *k, __u32 klen)
{
	return (e->klen & XKV_ENT_KLEN) == klen && !memcmp(e->data, k, s->cfg.key_size);
}

int xkv_slot_fill(struct xkv_store *s, struct xkv_entry *e, const __u8 *k, __u32 klen, const struct xkv_entry *n,
		  int *die)
{
	int fresh = !e->wtime_ns || (!xkv_slot_match(s, e, k, klen) && !xkv_entry_live(e, n->wtime_ns));
	int evicts = !fresh && !xkv_slot_match(s, e, k, klen);
	slot_put_head(e, n, klen);
	memcpy(e->data, k, s->cfg.key_size);
	xkv_slot_put_value(s, e->data + s->cfg.key_size, n, die);
	return fresh | evicts << 1;
}

static struct xkv_entry *slot_in(const struct xkv_store *s, __u64 i)
{
	return (struct xkv_entry *)((__u8 *)s->mm + s->L->slot_ops->table_off + i * s->slot_stride);
}

long xkv_slots_count(struct xkv_store *s)
{
	__u64 now = xkv_now_ns();
	long n = 0;
	for (__u32 i = 0; i < s->cfg.entries; i++)
		n += xkv_entry_live(slot_in(s, i), now);
	return n;
}

/* The stamp is read under the slot's lock, which the XDP writer takes too:
 * an item stored after the cut stays, whoever stored it. */
int xkv_slots_flush(struct xkv_store *s, __u64 cut)
{
	__u64 steal_ns = xkv_wedge_steal_ns();
	for (__u32 i = 0; i < s->cfg.entries; i++) {
		struct xkv_entry *e = slot_in(s, i);
		__u32 own;
		if (!e->wtime_ns)
			continue;
		if (xkv_seq_take(s, &e->seq, &own, steal_ns, e, s->cfg.entry_size, xkv_slot_mend))
			return -EBUSY;
		if (e->wtime_ns <= cut)
			e->wtime_ns = 0;
		slot_unlock(e, own); /* robbed: the thief emptied it, or stored after the flush */
	}
	return 0;
}

__u64 xkv_slots_span(const struct xkv_store *s)
{
	return s->cfg.entries;
}

long xkv_slots_scan(struct xkv_store *s, __u64 lo, __u64 hi, xkv_visit_fn fn, void *arg, __u64 *busy)
{
	struct xkv_entry *buf = malloc(s->cfg.entry_size);
	__u64 end = hi < s->cfg.entries ? hi : s->cfg.entries, now = xkv_now_ns();
	long n = 0;
	if (!buf)
		return -ENOMEM;
	for (__u64 i = lo; i < end; i++) {
		int r = xkv_slot_visit(s, slot_in(s, i), buf, now, fn, arg, &n, busy);
		if (r) {
			n = r;
			break;
		}
	}
	free(buf);
	return n;
}

static int slots_store(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		       struct xkv_entry *n, bool only_free)
{
	struct xkv_slot_where w = { .klen = klen, .only_free = only_free };
	if (xkv_key_pack(&s->cfg, key, klen, w.k))
		return -EINVAL;
	w.at = s->L->slot_ops->locate(s, w.k, klen);
	return xkv_slot_store(s, &w, fn, arg, n, s->L->slot_ops->try);
}

int xkv_slots_set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n)
{
	return slots_store(s, key, klen, NULL, NULL, (struct xkv_entry *)n, false);
}

int xkv_slots_set_if(struct xkv_store *s, const void *key, __u32 klen, xkv_decide_fn fn, void *arg,
		     struct xkv_entry *n)
{
	return slots_store(s, key, klen, fn, arg, n, false);
}

int xkv_slots_add(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n)
{
	return slots_store(s, key, klen, NULL, NULL, (struct xkv_entry *)n, true);
}
