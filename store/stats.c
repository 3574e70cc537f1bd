// SPDX-License-Identifier: MIT
/* Counters and small store helpers shared by every tool. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "xdpkv.h"

const char *const xkv_stat_names[XKV_STAT__MAX] = {
#define XKV_STAT_NAME(n, h) #n,
	XKV_STATS_LIST(XKV_STAT_NAME)
#undef XKV_STAT_NAME
};

const char *const xkv_stat_help[XKV_STAT__MAX] = {
#define XKV_STAT_HELP(n, h) h,
	XKV_STATS_LIST(XKV_STAT_HELP)
#undef XKV_STAT_HELP
};

static int stats_rows(const struct xkv_store *s, __u32 slot, struct xkv_stats *rows)
{
	return bpf_map_lookup_elem(s->stats_fd, &slot, rows) ? -errno : 0;
}

int xkv_stats_read(const struct xkv_store *s, __u32 slot, struct xkv_stats *sum,
		   struct xkv_stats *percpu)
{
	struct xkv_stats *rows = calloc(s->ncpus, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	int e = stats_rows(s, slot, rows);
	if (!e) {
		memset(sum, 0, sizeof(*sum));
		for (int c = 0; c < s->ncpus; c++)
			for (int i = 0; i < XKV_STAT__MAX; i++)
				sum->v[i] += rows[c].v[i];
		if (percpu)
			memcpy(percpu, rows, s->ncpus * sizeof(*rows));
	}
	free(rows);
	return e;
}

__u64 xkv_fast_served(const struct xkv_stats *fast)
{
	__u64 passed = fast->v[XKV_STAT_pass_room] + fast->v[XKV_STAT_pass_cmd] +
		       fast->v[XKV_STAT_pass_busy] + fast->v[XKV_STAT_pass_malformed] +
		       fast->v[XKV_STAT_pass_csum] + fast->v[XKV_STAT_pass_paused];
	__u64 seen = fast->v[XKV_STAT_requests];
	return seen > passed ? seen - passed : 0;
}

const char *xkv_mode_name(int mode)
{
	return mode == XKV_MODE_NATIVE ? "native" : mode == XKV_MODE_SKB ? "skb" : "test";
}

int xkv_stats_slow_add(const struct xkv_store *s, const struct xkv_stats *delta)
{
	__u32 slot = XKV_STATS_SLOW;
	struct xkv_stats *rows = calloc(s->ncpus, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	int e = stats_rows(s, slot, rows);
	if (!e) {
		for (int i = 0; i < XKV_STAT__MAX; i++)
			rows[0].v[i] += delta->v[i];
		e = bpf_map_update_elem(s->stats_fd, &slot, rows, BPF_ANY) ? -errno : 0;
	}
	free(rows);
	return e;
}

long long xkv_map_memory(int map_fd)
{
	char path[64], line[256];
	long long v = -1;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", map_fd);
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lld", &v) == 1)
			break;
	fclose(f);
	/* An arena (type 33) says 0: its pages are counted when allocated, not
	 * in memlock.  The arena layout allocates every page at attach, so its
	 * pages (max_entries) are its memory. */
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	if (v == 0 && !bpf_obj_get_info_by_fd(map_fd, &info, &len) && info.type == 33)
		v = (long long)info.max_entries * sysconf(_SC_PAGESIZE);
	return v;
}

__u64 xkv_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int key_bytes_check(const struct xkv_config *cfg, const __u8 *k, __u32 klen)
{
	for (__u32 i = 0; i < klen; i++)
		if (k[i] == ' ' || k[i] == '\r' || k[i] == '\n' ||
		    xkv_key_byte_bad(k[i], cfg->flags & XKV_CFG_BINARY_KEYS))
			return XKV_E_KEY_BAD;
	return XKV_OK;
}

int xkv_key_check(const struct xkv_config *cfg, const void *key, __u32 klen)
{
	if (klen == 0)
		return XKV_E_FORMAT;
	if (klen > XKV_KEY_MAX || klen > cfg->key_cap)
		return XKV_E_KEY_LONG;
	return key_bytes_check(cfg, key, klen);
}

int xkv_key_rule(const struct xkv_config *cfg, const void *key, __u32 klen)
{
	if (klen == 0 || klen > XKV_KEY_MAX)
		return XKV_E_FORMAT;
	return key_bytes_check(cfg, key, klen);
}

int xkv_key_pack(const struct xkv_config *cfg, const void *key, __u32 klen, __u8 *out)
{
	if (xkv_key_check(cfg, key, klen))
		return -EINVAL;
	memset(out, 0, cfg->key_size);
	memcpy(out, key, klen);
	return 0;
}

/* This process's writer id, asked of the kernel once (getpid is a system
 * call, and a write asks twice); a forked child asks again. */
static __u32 stamp_pid; /* __atomic; 0: not asked yet */

static void stamp_pid_forget(void)
{
	stamp_pid = 0;
}

static void stamp_pid_hook(void)
{
	pthread_atfork(NULL, NULL, stamp_pid_forget);
}

static __u32 stamp_user_id(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	__u32 pid = __atomic_load_n(&stamp_pid, __ATOMIC_RELAXED);

	if (!pid) {
		pthread_once(&once, stamp_pid_hook);
		pid = (__u32)getpid();
		__atomic_store_n(&stamp_pid, pid, __ATOMIC_RELAXED);
	}
	return xkv_stamp_user_id(pid);
}

__u64 xkv_write_stamp(void)
{
	static __u64 last; /* __atomic */
	__u64 now = xkv_now_ns(), old = __atomic_load_n(&last, __ATOMIC_RELAXED), st;
	__u32 id = stamp_user_id();

	do
		st = xkv_stamp(old, now, id);
	while (!__atomic_compare_exchange_n(&last, &old, st, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED));
	return st;
}

__u64 xkv_restore_stamp(__u64 cas, bool big)
{
	if (!cas || big || (cas & ~XKV_STAMP_ID_MASK) >= (xkv_now_ns() & ~XKV_STAMP_ID_MASK))
		return xkv_write_stamp();
	return cas;
}

struct xkv_entry *xkv_entry_make(const struct xkv_store *s, __u32 flags, __s64 exptime,
				 const void *val, __u32 len)
{
	if (len > s->cfg.val_cap) {
		errno = E2BIG;
		return NULL;
	}
	struct xkv_entry *e = calloc(1, s->cfg.entry_size);
	if (!e)
		return NULL;
	__u64 now = xkv_now_ns();
	e->expire_ns = xkv_expire_ns(exptime, now, s->cfg.realtime_off_ns);
	e->wtime_ns = xkv_write_stamp();
	e->flags = flags;
	e->len = len;
	if (len) /* an empty value may come without a pointer */
		memcpy(e->data, val, len);
	return e;
}

long xkv_store_set_batch(struct xkv_store *s, const __u8 *keys, const __u8 *entries, __u32 n)
{
	if (s->L->set_batch)
		return s->L->set_batch(s, keys, entries, n);
	for (__u32 i = 0; i < n; i++) {
		const __u8 *k = keys + (size_t)i * s->cfg.key_size;
		int e = s->L->set(s, k, strnlen((const char *)k, s->cfg.key_size),
				  (const void *)(entries + (size_t)i * s->cfg.entry_size));
		if (e)
			return i ? (long)i : e;
	}
	return n;
}
