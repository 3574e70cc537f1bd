// SPDX-License-Identifier: MIT
/* array_fnv: userspace side.  The slots are mmapped (BPF_F_MMAPABLE) and
 * read and written with the same sequence-counter protocol as the XDP
 * program (slot.h), so neither side ever sees a torn value. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "array_fnv/slot.h"
#include "array_fnv.skel.h"

#define RETRIES 1000

XKV_LAYOUT_ELF(array_fnv)

static int open_slots(struct xkv_store *s)
{
	long page = sysconf(_SC_PAGESIZE);
	s->slot_stride = (s->cfg.entry_size + 7) & ~7u;
	s->mm_len = ((size_t)s->slot_stride * s->cfg.entries + page - 1) & ~(size_t)(page - 1);
	void *mm = mmap(NULL, s->mm_len, PROT_READ | PROT_WRITE, MAP_SHARED, s->store_fd, 0);
	if (mm == MAP_FAILED)
		return -errno;
	s->mm = mm;
	return 0;
}

static void close_slots(struct xkv_store *s)
{
	if (s->mm)
		munmap(s->mm, s->mm_len);
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

static int get(struct xkv_store *s, const void *key, __u32 klen, struct xkv_item *it)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	struct xkv_entry *e = slot(s, slot_index(k, klen, s->cfg.entries));
	for (int i = 0; i < RETRIES; i++) {
		__u32 s1 = slot_seq(e);
		if (s1 & 1) {
			sched_yield();
			continue;
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		__u32 len = *(const volatile __u32 *)&e->len;
		int hit = match(s, e, k, klen) && xkv_entry_live(e, xkv_now_ns()) && len <= s->cfg.val_cap;
		if (hit) {
			it->flags = e->flags;
			it->len = len;
			it->expire_ns = e->expire_ns;
			it->wtime_ns = e->wtime_ns;
			memcpy(it->data, e->data + s->cfg.key_size, it->len);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (slot_seq(e) == s1)
			return hit;
	}
	return -EBUSY;
}

static int lock(struct xkv_entry *e)
{
	for (int i = 0; i < RETRIES; i++) {
		if (!slot_lock(e))
			return 0;
		sched_yield();
	}
	return -EBUSY;
}

static int set(struct xkv_store *s, const void *key, __u32 klen, const struct xkv_entry *n)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	if (n->len > s->cfg.val_cap)
		return -E2BIG;
	struct xkv_entry *e = slot(s, slot_index(k, klen, s->cfg.entries));
	if (lock(e))
		return -EBUSY;
	/* counted as the XDP side counts them (array_fnv.bpf.c) */
	if (!e->wtime_ns)
		s->new_items++;
	else if (!match(s, e, k, klen))
		xkv_entry_live(e, n->wtime_ns) ? s->overwrites++ : s->new_items++;
	e->expire_ns = n->expire_ns;
	e->wtime_ns = n->wtime_ns;
	e->flags = n->flags;
	e->len = n->len;
	e->klen = klen;
	memcpy(e->data, k, s->cfg.key_size);
	memcpy(e->data + s->cfg.key_size, n->data, n->len);
	slot_unlock(e);
	return 0;
}

static int del(struct xkv_store *s, const void *key, __u32 klen)
{
	__u8 k[XKV_KEY_MAX + 8];
	if (xkv_key_pack(&s->cfg, key, klen, k))
		return -EINVAL;
	struct xkv_entry *e = slot(s, slot_index(k, klen, s->cfg.entries));
	if (lock(e))
		return -EBUSY;
	int found = e->wtime_ns && match(s, e, k, klen);
	int live = found && xkv_entry_live(e, xkv_now_ns());
	if (found)
		e->wtime_ns = 0;
	slot_unlock(e);
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
		if (!e->wtime_ns)
			continue;
		if (lock(e))
			return -EBUSY;
		e->wtime_ns = 0;
		slot_unlock(e);
	}
	return 0;
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
	.del = del,
	.count = count,
	.flush = flush,
};
