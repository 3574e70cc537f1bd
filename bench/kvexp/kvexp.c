// SPDX-License-Identifier: MIT
/* xkv-kvexp: experiments on the storage layouts, in process, through the
 * real XDP program run by BPF_PROG_TEST_RUN (no interface needed).
 *
 *   memory  the kernel's own figure for the store map's memory (fdinfo
 *           memlock) when filled, per item and over the raw key+value bytes
 *   lost    load ratio x capacity distinct keys with real `set` requests,
 *           then count how many are still readable with `get`
 *   stale   percpu (or lru_percpu): a set served on CPU 0, a get served on CPU 1; how often
 *           the get returns an older version or a miss (hash_map: control)
 *   hitratio cache-aside gets under Zipf / uniform keys per memory budget
 *           (hitratio.c; checked against libCacheSim by hitratio_vs_cachesim.py)
 *
 * See docs/results.md for runs and bench/README.md for the method. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stddef.h>
#include <unistd.h>

#include "kvexp.h"
#include "opts.h"

#define MAX_LIST 16

struct u32_list {
	__u32 n;
	__u32 v[MAX_LIST];
};

struct str_list {
	__u32 n;
	const char *v[MAX_LIST];
};

struct opts {
	const char *cmd;
	bool json, verbose, quick;
	struct str_list layouts;
	struct u32_list key_sizes, value_sizes, fills;
	__u32 items;          /* memory: capacity and items */
	__u32 capacity;       /* lost */
	__u32 nratios;
	double ratios[MAX_LIST];
	__u32 key_size, value_size; /* lost, stale */
	__u32 keys, rounds;   /* stale */
	__u32 cpu_set, cpu_get; /* stale */
	bool random;          /* stale --steering random */
	__u64 seed;
};

static struct opts o;

/* ---- memory ---------------------------------------------------------------- */

struct mem_row {
	const char *layout;
	const char *alloc;   /* "prealloc" (as the layout is built) or "no_prealloc" */
	__u32 klen, vlen, capacity, items, fill_pct;
	long live;
	long long bytes, bytes_empty;
	double secs;
};

static bool first_row = true;

static void mem_print(const struct mem_row *m)
{
	double per = m->items ? (double)m->bytes / m->items : 0, raw = m->klen + m->vlen;
	double per_live = m->live > 0 ? (double)m->bytes / m->live : 0;
	if (o.json) {
		printf("%s    {\"layout\": \"%s\", \"alloc\": \"%s\", \"key_size\": %u, \"value_size\": %u, "
		       "\"capacity\": %u, \"items\": %u, \"fill_pct\": %u, \"live\": %ld, "
		       "\"map_bytes\": %lld, \"map_bytes_empty\": %lld, \"bytes_per_item\": %.1f, "
		       "\"bytes_per_live_item\": %.1f, \"raw_bytes_per_item\": %.0f, "
		       "\"overhead_x\": %.3f, \"overhead_bytes_per_item\": %.1f, \"secs\": %.2f}",
		       first_row ? "" : ",\n", m->layout, m->alloc, m->klen, m->vlen, m->capacity, m->items,
		       m->fill_pct, m->live, m->bytes, m->bytes_empty, per, per_live, raw, per / raw,
		       per - raw, m->secs);
	} else {
		if (first_row)
			printf("%-10s %-11s %5s %6s %9s %9s %5s %9s %14s %10s %8s %9s\n", "layout", "alloc",
			       "key", "value", "capacity", "items", "fill", "live", "map_bytes", "B/item",
			       "raw B", "overhead");
		printf("%-10s %-11s %5u %6u %9u %9u %4u%% %9ld %14lld %10.1f %8.0f %8.2fx\n", m->layout,
		       m->alloc, m->klen, m->vlen, m->capacity, m->items, m->fill_pct, m->live, m->bytes,
		       per, raw, per / raw);
	}
	first_row = false;
	fflush(stdout);
}

static int mem_one(const char *layout, bool no_prealloc, __u32 klen, __u32 vlen)
{
	char err[XKV_ERRLEN];
	struct kv kv;
	struct mem_row m = {.layout = layout, .alloc = no_prealloc ? "no_prealloc" : "prealloc",
			    .klen = klen, .vlen = vlen, .capacity = o.items};
	double t0 = now_s();
	if (kv_load(&kv, layout, o.items, klen, vlen, no_prealloc ? XKV_CFG_NO_PREALLOC : 0, err,
		    sizeof(err)))
		die("%s (key %u, value %u, %u entries): %s", layout, klen, vlen, o.items, err);
	m.bytes_empty = xkv_map_memory(kv.s.store_fd);
	/* no_prealloc grows with the items: one row per fill level, then full */
	struct u32_list steps = {0};
	if (no_prealloc)
		steps = o.fills;
	steps.v[steps.n++] = 100;
	__u32 filled = 0;
	for (__u32 i = 0; i < steps.n; i++) {
		__u32 items = (__u32)((__u64)o.items * steps.v[i] / 100);
		if (items < filled)
			continue;
		long r = kv_fill(&kv, filled, items, klen, vlen);
		if (r < 0)
			die("%s: storing items %u..%u: %s", layout, filled, items, strerror((int)-r));
		filled = items;
		m.items = items;
		m.fill_pct = steps.v[i];
		m.live = kv.L->count(&kv.s);
		m.bytes = xkv_map_memory(kv.s.store_fd);
		if (m.bytes < 0)
			die("%s: reading memlock of the store map: %s", layout, strerror((int)-m.bytes));
		m.secs = now_s() - t0;
		mem_print(&m);
	}
	kv_close(&kv);
	progress("memory %s %s key %u value %u: %.1f s", layout, m.alloc, klen, vlen, now_s() - t0);
	return 0;
}

static int cmd_memory(void)
{
	double t0 = now_s();
	if (o.json) {
		json_head("memory");
		printf("  \"params\": {\"items\": %u, \"measure\": \"fdinfo memlock of the store map "
		       "(xkv_map_memory)\", \"fill\": \"xkv_store_set_batch, batches of %u\"},\n",
		       o.items, BATCH);
		printf("  \"results\": [\n");
	}
	for (__u32 l = 0; l < o.layouts.n; l++)
		for (__u32 k = 0; k < o.key_sizes.n; k++)
			for (__u32 v = 0; v < o.value_sizes.n; v++) {
				const char *name = o.layouts.v[l];
				mem_one(name, false, o.key_sizes.v[k], o.value_sizes.v[v]);
				if (!strcmp(name, "hash_map"))
					mem_one(name, true, o.key_sizes.v[k], o.value_sizes.v[v]);
			}
	if (o.json)
		printf("\n  ],\n  \"secs\": %.1f\n}\n", now_s() - t0);
	return 0;
}

/* ---- lost ------------------------------------------------------------------ */

struct lost_row {
	const char *layout;
	double ratio;
	__u32 capacity, keys;
	__u64 set_stored, set_failed, set_other, readable, missing, wrong;
	__u64 overwrites, store_new, evictions;
	long live;
	double secs;
};

static void lost_print(const struct lost_row *r)
{
	double share = r->keys ? (double)r->readable / r->keys : 0;
	if (o.json) {
		printf("%s    {\"layout\": \"%s\", \"ratio\": %.3f, \"capacity\": %u, \"keys\": %u, "
		       "\"set_stored\": %llu, \"set_failed\": %llu, \"set_other\": %llu, "
		       "\"readable\": %llu, \"missing\": %llu, \"wrong\": %llu, \"readable_share\": %.6f, "
		       "\"overwrites\": %llu, \"store_new\": %llu, \"evictions\": %llu, \"live\": %ld, "
		       "\"secs\": %.2f}",
		       first_row ? "" : ",\n", r->layout, r->ratio, r->capacity, r->keys,
		       (unsigned long long)r->set_stored, (unsigned long long)r->set_failed,
		       (unsigned long long)r->set_other, (unsigned long long)r->readable,
		       (unsigned long long)r->missing, (unsigned long long)r->wrong, share,
		       (unsigned long long)r->overwrites, (unsigned long long)r->store_new,
		       (unsigned long long)r->evictions, r->live, r->secs);
	} else {
		if (first_row)
			printf("%-10s %5s %9s %9s %9s %9s %9s %9s %10s %10s %9s\n", "layout", "ratio",
			       "capacity", "keys", "stored", "failed", "readable", "share", "overwrites",
			       "evictions", "live");
		printf("%-10s %5.2f %9u %9u %9llu %9llu %9llu %8.2f%% %10llu %10llu %9ld\n", r->layout,
		       r->ratio, r->capacity, r->keys, (unsigned long long)r->set_stored,
		       (unsigned long long)r->set_failed, (unsigned long long)r->readable, share * 100,
		       (unsigned long long)r->overwrites, (unsigned long long)r->evictions, r->live);
	}
	first_row = false;
	fflush(stdout);
}

/* One ratio on a loaded, empty store (loaded fresh or flushed). */
static void lost_one(struct kv *kvp, const char *layout, double ratio)
{
	struct kv kv = *kvp;
	struct reply rep;
	struct xkv_stats before, d;
	struct lost_row r = {.layout = layout, .ratio = ratio, .capacity = o.capacity};
	double t0 = now_s();
	__u32 klen = o.key_size, vlen = o.value_size;

	r.keys = (__u32)(ratio * o.capacity + 0.5);
	if (kv.L->count(&kv.s) != 0)
		die("%s: the store is not empty before ratio %.2f", layout, ratio);
	if (xkv_stats_read(&kv.s, XKV_STATS_FAST, &before, NULL))
		die("%s: reading counters failed", layout);
	for (__u32 id = 0; id < r.keys; id++) {
		int e = xdp_set(kv.prog_fd, id, 1, klen, vlen, &rep);
		if (e)
			die("%s: BPF_PROG_TEST_RUN of set %u: %s", layout, id, strerror(-e));
		if (rep.action == XDP_TX && !strcmp(rep.text, XKV_R_STORED))
			r.set_stored++;
		else if (rep.action == XDP_TX && !strcmp(rep.text, XKV_R_OOM))
			r.set_failed++;
		else
			r.set_other++;
	}
	for (__u32 id = 0; id < r.keys; id++) {
		__u32 ver = 0;
		int e = xdp_get(kv.prog_fd, id, klen, &rep);
		if (e)
			die("%s: BPF_PROG_TEST_RUN of get %u: %s", layout, id, strerror(-e));
		int verdict = get_verdict(&rep, id, klen, vlen, &ver);
		if (verdict == GET_HIT && ver == 1) {
			r.readable++;
		} else if (verdict == GET_MISS) {
			r.missing++;
		} else {
			/* another key's bytes, a version never stored, no reply */
			r.wrong++;
			if (r.wrong <= 3)
				fprintf(stderr, "xkv-kvexp: %s: get of key %u: action %u, reply \"%.60s\"\n",
					layout, id, rep.action, rep.text);
		}
	}
	if (stats_delta(&kv, &before, &d))
		die("%s: reading counters failed", layout);
	r.live = kv.L->count(&kv.s);
	r.overwrites = d.v[XKV_STAT_overwrites];
	r.store_new = d.v[XKV_STAT_store_new];
	/* lru, lru_percpu: items created minus what is left (no deletes here); counted as
	 * the CLI does (new items - deletes - live) */
	if (xkv_map_lru(kv.L->map_type) && r.live >= 0 && r.store_new > (__u64)r.live)
		r.evictions = r.store_new - (__u64)r.live;
	r.secs = now_s() - t0;
	lost_print(&r);
	progress("lost %s ratio %.2f: %u keys, %.1f s", layout, ratio, r.keys, r.secs);
}

static int cmd_lost(void)
{
	double t0 = now_s();
	int e = pin_cpu(0);
	if (e)
		die("pinning to CPU 0: %s", strerror(-e));
	if (o.json) {
		json_head("lost");
		printf("  \"params\": {\"capacity\": %u, \"key_size\": %u, \"value_size\": %u, "
		       "\"requests\": \"set then get through the XDP program, BPF_PROG_TEST_RUN repeat=1, "
		       "CPU 0; one load per layout, the store flushed between ratios (counters as deltas)\", "
		       "\"keys\": \"key:%%012u padded with '-', ids 0..N-1\"},\n",
		       o.capacity, o.key_size, o.value_size);
		printf("  \"results\": [\n");
	}
	for (__u32 l = 0; l < o.layouts.n; l++) {
		const char *layout = o.layouts.v[l];
		char err[XKV_ERRLEN];
		struct kv kv;
		if (kv_load(&kv, layout, o.capacity, o.key_size, o.value_size, 0, err, sizeof(err)))
			die("%s (%u entries): %s", layout, o.capacity, err);
		for (__u32 i = 0; i < o.nratios; i++) {
			int fe = i ? kv.L->flush(&kv.s, XKV_FLUSH_ALL) : 0;
			if (fe)
				die("%s: flush between ratios failed: %s", layout, strerror(-fe));
			lost_one(&kv, layout, o.ratios[i]);
		}
		kv_close(&kv);
	}
	if (o.json)
		printf("\n  ],\n  \"secs\": %.1f\n}\n", now_s() - t0);
	return 0;
}

/* ---- stale ----------------------------------------------------------------- */

struct stale_row {
	const char *layout;
	__u64 reads, cross, fresh, older, miss, wrong, userspace_newest;
	double secs;
};

/* After round v: does the map hold version v of key id in CPU cpu's copy
 * (percpu, lru_percpu) or in its one value?  1 yes, 0 no, <0 -errno. */
static int holds_version(struct kv *kv, __u32 id, __u32 v, int cpu)
{
	const struct xkv_config *c = &kv->s.cfg;
	__u8 k[XKV_KEY_MAX + 8];
	char kt[XKV_KEY_MAX + 1];
	int ncopies = xkv_map_percpu(kv->L->map_type) ? kv->s.ncpus : 1;
	__u8 *vals = malloc((size_t)ncopies * c->entry_size);
	int rc;
	if (!vals)
		return -ENOMEM;
	key_text(kt, id, o.key_size);
	if (xkv_key_pack(c, kt, o.key_size, k)) {
		free(vals);
		return -EINVAL;
	}
	if (bpf_map_lookup_elem(kv->s.store_fd, k, vals)) {
		rc = errno == ENOENT ? 0 : -errno;
	} else {
		const struct xkv_entry *e = (void *)(vals + (size_t)(ncopies > 1 ? cpu : 0) * c->entry_size);
		rc = e->wtime_ns && e->len >= 12 && strtoul((const char *)e->data + 1, NULL, 10) == v;
	}
	free(vals);
	return rc;
}

/* Which CPU serves key id's set and get in round v: split = always
 * --set-cpu / --get-cpu; random = each one of the two at random (flows of
 * different clients hashed to either CPU), seeded, the same for every layout. */
static void steer(__u32 id, __u32 v, __u32 *set_cpu, __u32 *get_cpu)
{
	__u64 x = ((__u64)id << 32 | v) * 0x9e3779b97f4a7c15ull + o.seed;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	*set_cpu = o.cpu_set;
	*get_cpu = o.cpu_get;
	if (!o.random)
		return;
	*set_cpu = (x & 1) ? o.cpu_get : o.cpu_set;
	*get_cpu = (x & 2) ? o.cpu_get : o.cpu_set;
}

static void stale_set_on(struct kv *kv, const char *layout, __u32 v, __u32 cpu)
{
	struct reply rep;
	int e = pin_cpu(cpu);
	if (e)
		die("pinning to CPU %u: %s", cpu, strerror(-e));
	for (__u32 id = 0; id < o.keys; id++) {
		__u32 sc, gc;
		steer(id, v, &sc, &gc);
		if (sc != cpu)
			continue;
		e = xdp_set(kv->prog_fd, id, v, o.key_size, o.value_size, &rep);
		if (e || rep.action != XDP_TX || strcmp(rep.text, XKV_R_STORED))
			die("%s: set of key %u version %u on CPU %u: %s \"%.40s\"", layout, id, v, cpu,
			    e ? strerror(-e) : "reply", rep.text);
		/* the newer value must exist on the set CPU, or nothing is measured */
		if (holds_version(kv, id, v, cpu) != 1)
			die("%s: version %u of key %u is not in CPU %u's copy after its set", layout, v,
			    id, cpu);
	}
}

static void stale_get_on(struct kv *kv, const char *layout, __u32 v, __u32 cpu, struct xkv_item *it,
			 struct stale_row *r)
{
	char kt[XKV_KEY_MAX + 1];
	struct reply rep;
	int e = pin_cpu(cpu);
	if (e)
		die("pinning to CPU %u: %s", cpu, strerror(-e));
	for (__u32 id = 0; id < o.keys; id++) {
		__u32 sc, gc, ver = 0;
		steer(id, v, &sc, &gc);
		if (gc != cpu)
			continue;
		e = xdp_get(kv->prog_fd, id, o.key_size, &rep);
		if (e)
			die("%s: get of key %u on CPU %u: %s", layout, id, cpu, strerror(-e));
		r->reads++;
		r->cross += sc != gc;
		int verdict = get_verdict(&rep, id, o.key_size, o.value_size, &ver);
		if (verdict == GET_HIT && ver == v)
			r->fresh++;
		else if (verdict == GET_HIT && ver < v)
			r->older++;
		else if (verdict == GET_MISS)
			r->miss++;
		else
			r->wrong++;
		/* what the slow path / CLI sees: the newest copy */
		key_text(kt, id, o.key_size);
		if (kv->L->get(&kv->s, kt, o.key_size, it) == 1 && it->len >= 12 &&
		    strtoul((const char *)it->data + 1, NULL, 10) == v)
			r->userspace_newest++;
	}
}

static void stale_one(const char *layout, struct stale_row *r)
{
	char err[XKV_ERRLEN];
	struct kv kv;
	struct xkv_item *it = malloc(sizeof(*it));
	double t0 = now_s();

	memset(r, 0, sizeof(*r));
	r->layout = layout;
	if (!it)
		die("out of memory");
	if (kv_load(&kv, layout, o.keys * 2 > 1024 ? o.keys * 2 : 1024, o.key_size, o.value_size, 0,
		    err, sizeof(err)))
		die("%s: %s", layout, err);
	/* version 0 of every key through the userspace accessor: every copy */
	if (kv_fill(&kv, 0, o.keys, o.key_size, o.value_size) != o.keys)
		die("%s: preloading %u keys failed", layout, o.keys);
	for (__u32 v = 1; v <= o.rounds; v++) {
		stale_set_on(&kv, layout, v, o.cpu_set);
		stale_set_on(&kv, layout, v, o.cpu_get);
		stale_get_on(&kv, layout, v, o.cpu_set, it, r);
		stale_get_on(&kv, layout, v, o.cpu_get, it, r);
	}
	free(it);
	kv_close(&kv);
	r->secs = now_s() - t0;
	progress("stale %s: %llu reads, %llu stale, %.1f s", layout, (unsigned long long)r->reads,
		 (unsigned long long)(r->older + r->miss), r->secs);
}

static void stale_print(const struct stale_row *r, bool first)
{
	double rate = r->reads ? (double)(r->older + r->miss) / r->reads : 0;
	if (o.json) {
		printf("%s    {\"layout\": \"%s\", \"role\": \"%s\", \"reads\": %llu, "
		       "\"reads_other_cpu\": %llu, \"fresh\": %llu, "
		       "\"older\": %llu, \"miss\": %llu, \"wrong\": %llu, \"stale\": %llu, "
		       "\"stale_rate\": %.6f, \"userspace_newest\": %llu, \"secs\": %.2f}",
		       first ? "" : ",\n", r->layout,
		       strcmp(r->layout, "hash_map") ? "measured" : "control",
		       (unsigned long long)r->reads, (unsigned long long)r->cross,
		       (unsigned long long)r->fresh,
		       (unsigned long long)r->older, (unsigned long long)r->miss,
		       (unsigned long long)r->wrong, (unsigned long long)(r->older + r->miss), rate,
		       (unsigned long long)r->userspace_newest, r->secs);
	} else {
		if (first)
			printf("%-10s %9s %9s %9s %9s %9s %9s %10s %12s\n", "layout", "reads", "other_cpu",
			       "fresh", "older", "miss", "wrong", "stale", "userspace_ok");
		printf("%-10s %9llu %9llu %9llu %9llu %9llu %9llu %9.2f%% %12llu\n", r->layout,
		       (unsigned long long)r->reads, (unsigned long long)r->cross,
		       (unsigned long long)r->fresh,
		       (unsigned long long)r->older, (unsigned long long)r->miss,
		       (unsigned long long)r->wrong, rate * 100, (unsigned long long)r->userspace_newest);
	}
	fflush(stdout);
}

static int cmd_stale(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct stale_row rows[2];
	double t0 = now_s();

	if (ncpu < 2 || o.cpu_set >= (__u32)ncpu || o.cpu_get >= (__u32)ncpu || o.cpu_set == o.cpu_get)
		die("stale needs two different online CPUs (have %ld; --set-cpu %u --get-cpu %u)", ncpu,
		    o.cpu_set, o.cpu_get);
	if (o.layouts.n != 1)
		die("stale takes one --layout (hash_map runs as the control)");
	stale_one(o.layouts.v[0], &rows[0]);
	stale_one("hash_map", &rows[1]);
	if (o.json) {
		json_head("stale");
		printf("  \"params\": {\"keys\": %u, \"rounds\": %u, \"key_size\": %u, \"value_size\": %u, "
		       "\"set_cpu\": %u, \"get_cpu\": %u, \"steering\": \"test_run on pinned CPUs\", "
		       "\"pattern\": \"%s\", \"seed\": %llu, "
		       "\"method\": \"version 0 of every key stored through the userspace accessor (every "
		       "copy); each round v: set version v of every key through the XDP program (split: on "
		       "set_cpu; random: on set_cpu or get_cpu at random), then get every key (split: on "
		       "get_cpu; random: either CPU at random); stale = an older version or a miss while "
		       "version v is in the setting CPU's copy\"},\n",
		       o.keys, o.rounds, o.key_size, o.value_size, o.cpu_set, o.cpu_get,
		       o.random ? "random" : "split", (unsigned long long)o.seed);
		printf("  \"results\": [\n");
	}
	stale_print(&rows[0], true);
	stale_print(&rows[1], false);
	if (o.json)
		printf("\n  ],\n  \"secs\": %.1f\n}\n", now_s() - t0);
	else
		printf("\n");
	if (rows[0].wrong || rows[1].wrong)
		die("wrong replies (another key's bytes or a version never stored)");
	return 0;
}

/* ---- options ----------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xkv-kvexp memory [--layouts L,..] [--items N | --quick] [--key-sizes K,..]\n"
		"                        [--value-sizes V,..] [--fills 10,50,95] [--json]\n"
		"       xkv-kvexp lost   [--layouts L,..] [--capacity C] [--ratios 0.5,0.9,1.0,1.5]\n"
		"                        [--key-size K] [--value-size V] [--json]\n"
		"       xkv-kvexp stale  [--layout percpu] [--keys K] [--rounds R] [--key-size K]\n"
		"                        [--value-size V] [--set-cpu 0] [--get-cpu 1]\n"
		"                        [--steering split|random] [--seed S] [--json]\n"
		"       xkv-kvexp hitratio --help   (hit ratio per memory budget, hitratio.c)\n"
		"Layouts: those of `xdpkv layouts`, and lru_no_common_lru (lru with --no-common-lru).\n"
		"Defaults: layouts %s (the registry's); memory --items 1000000 (--quick:\n"
		"100000), key sizes 16,64,128,250, value sizes 32,128,512,1024; lost --capacity 65536,\n"
		"key 16, value 32; stale --keys 4096 --rounds 4.  Needs root (exit 77 otherwise).\n",
		kv_registry_layouts(false));
}

static void parse_u32_list(const char *flag, const char *arg, struct u32_list *l, __u32 min, __u32 max)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	l->n = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);
		if (*end || v < min || v > max || l->n == MAX_LIST)
			die("%s: bad item \"%s\" (%u..%u, at most %d items)", flag, tok, min, max, MAX_LIST);
		l->v[l->n++] = (__u32)v;
	}
	free(copy);
	if (!l->n)
		die("%s: empty list", flag);
}

static __u32 parse_u32(const char *flag, const char *arg, __u32 min, __u32 max)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (!*arg || *end || v < min || v > max)
		die("%s: \"%s\" is not a number in %u..%u", flag, arg, min, max);
	return (__u32)v;
}

static void parse_layouts(const char *flag, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	o.layouts.n = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		__u32 f = 0;
		if (!kv_layout_base(tok, &f))
			die("%s: unknown layout \"%s\" (see `xdpkv layouts`; also %s: lru with "
			    "--no-common-lru)", flag, tok, KV_NO_COMMON_LRU);
		if (o.layouts.n == MAX_LIST)
			die("%s: too many layouts", flag);
		o.layouts.v[o.layouts.n++] = tok; /* copy is kept for the process */
	}
	if (!o.layouts.n)
		die("%s: empty list", flag);
}

static void parse_ratios(const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	o.nratios = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double r = strtod(tok, &end);
		if (*end || r <= 0 || r > 16 || o.nratios == MAX_LIST)
			die("--ratios: bad item \"%s\" (0 < ratio <= 16)", tok);
		o.ratios[o.nratios++] = r;
	}
	free(copy);
	if (!o.nratios)
		die("--ratios: empty list");
}

static void defaults(void)
{
	static const __u32 ks[] = {16, 64, 128, 250}, vs[] = {32, 128, 512, 1024}, fs[] = {10, 50, 95};
	static const double rs[] = {0.5, 0.9, 1.0, 1.5};
	parse_layouts("--layouts", kv_registry_layouts(false));
	o.key_sizes.n = 4;
	o.value_sizes.n = 4;
	o.fills.n = 3;
	memcpy(o.key_sizes.v, ks, sizeof(ks));
	memcpy(o.value_sizes.v, vs, sizeof(vs));
	memcpy(o.fills.v, fs, sizeof(fs));
	o.nratios = 4;
	memcpy(o.ratios, rs, sizeof(rs));
	o.items = 1000000;
	o.capacity = 65536;
	o.key_size = 16;
	o.value_size = 32;
	o.keys = 4096;
	o.rounds = 4;
	o.cpu_set = 0;
	o.cpu_get = 1;
}

/* The options, on lib/opts' parser.  Each value is checked by kvexp's own
 * functions above (their messages; a bad value ends the run at once), so
 * every option is one of kvexp's own types. */
enum {
	T_U32 = XO_EXT, /* __u32 in min..max */
	T_U32_64,       /* the same, into a __u64 */
	T_ITEMS,        /* --items: T_U32, and --quick no longer sets it */
	T_U32_LIST,     /* struct u32_list, each in min..max */
	T_LAYOUTS,      /* o.layouts */
	T_RATIOS,       /* o.ratios */
	T_STEERING,     /* o.random: split or random */
	T_HELP,         /* usage on stdout, exit 0 */
};

static bool items_given;

static int parse_own(const char *ctx, const struct xo *r, const char *arg, void *field)
{
	char flag[64];
	snprintf(flag, sizeof(flag), "--%s", r->name);
	switch (r->type) {
	case T_U32:
		*(__u32 *)field = parse_u32(flag, arg, (__u32)r->min, (__u32)r->max);
		return 0;
	case T_U32_64:
		*(__u64 *)field = parse_u32(flag, arg, (__u32)r->min, (__u32)r->max);
		return 0;
	case T_ITEMS:
		*(__u32 *)field = parse_u32(flag, arg, (__u32)r->min, (__u32)r->max);
		items_given = true;
		return 0;
	case T_U32_LIST:
		parse_u32_list(flag, arg, field, (__u32)r->min, (__u32)r->max);
		return 0;
	case T_LAYOUTS:
		parse_layouts(flag, arg);
		return 0;
	case T_RATIOS:
		parse_ratios(arg);
		return 0;
	case T_STEERING:
		if (strcmp(arg, "split") && strcmp(arg, "random")) {
			fprintf(stderr, "xkv-kvexp: unknown option %s\n", flag);
			usage(stderr);
			exit(2);
		}
		*(bool *)field = !strcmp(arg, "random");
		return 0;
	case T_HELP:
		usage(stdout);
		exit(0);
	}
	return -1;
}

static const struct xo_ext own_types[] = {
	{ T_U32, parse_own }, { T_U32_64, parse_own }, { T_ITEMS, parse_own },
	{ T_U32_LIST, parse_own }, { T_LAYOUTS, parse_own }, { T_RATIOS, parse_own },
	{ T_STEERING, parse_own }, { T_HELP, parse_own }, { 0, NULL },
};

#define KV_OPT(name, type, field, min, max) \
	{ name, 0, type, offsetof(struct opts, field), "V", NULL, min, max }
static const struct xo kvexp_opts[] = {
	{ "json", 0, XO_BOOL, offsetof(struct opts, json) },
	{ "verbose", 0, XO_BOOL, offsetof(struct opts, verbose) },
	{ "quick", 0, XO_BOOL, offsetof(struct opts, quick) },
	{ "help", 'h', T_HELP, 0, .flags = XO_NOVAL },
	KV_OPT("layouts", T_LAYOUTS, layouts, 0, 0),
	KV_OPT("layout", T_LAYOUTS, layouts, 0, 0),
	KV_OPT("key-sizes", T_U32_LIST, key_sizes, 16, XKV_KEY_MAX),
	KV_OPT("value-sizes", T_U32_LIST, value_sizes, 16, 1024),
	KV_OPT("fills", T_U32_LIST, fills, 1, 100),
	KV_OPT("items", T_ITEMS, items, 16, 1u << 24),
	KV_OPT("capacity", T_U32, capacity, 16, 1u << 24),
	KV_OPT("ratios", T_RATIOS, ratios, 0, 0),
	KV_OPT("key-size", T_U32, key_size, 16, XKV_KEY_MAX),
	KV_OPT("value-size", T_U32, value_size, 16, 1024),
	KV_OPT("keys", T_U32, keys, 1, 1u << 22),
	KV_OPT("rounds", T_U32, rounds, 1, 1000000),
	KV_OPT("steering", T_STEERING, random, 0, 0),
	KV_OPT("seed", T_U32_64, seed, 0, 0xffffffffu),
	KV_OPT("set-cpu", T_U32, cpu_set, 0, 4095),
	KV_OPT("get-cpu", T_U32, cpu_get, 0, 4095),
	XO_END,
};

static void parse_args(int argc, char **argv)
{
	defaults();
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		exit(argc < 2 ? 2 : 0);
	}
	o.cmd = argv[1];
	if (strcmp(o.cmd, "memory") && strcmp(o.cmd, "lost") && strcmp(o.cmd, "stale")) {
		fprintf(stderr, "xkv-kvexp: unknown subcommand \"%s\"\n", o.cmd);
		usage(stderr);
		exit(2);
	}
	if (!strcmp(o.cmd, "stale"))
		parse_layouts("--layout", "percpu");
	struct xo_set set = { kvexp_opts, &o };
	struct xo_parser p = { .ext = own_types, .quiet = true, .values_apart = true,
			       .no_end_marker = true };
	if (xo_parse(&p, argc - 2, argv + 2, &set, 1, false, o.cmd) < 0) {
		/* an option it does not know, a value missing, an argument */
		const char *a = argv[2 + p.at];
		bool v = 2 + p.at + 1 < argc;
		if (!v || strncmp(a, "--", 2))
			fprintf(stderr, "xkv-kvexp: %s: %s\n", a, v ? "unknown argument" : "needs a value");
		else
			fprintf(stderr, "xkv-kvexp: unknown option %s\n", a);
		usage(stderr);
		exit(2);
	}
	if (o.quick && !items_given)
		o.items = 100000;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "hitratio"))
		return cmd_hitratio(argc - 1, argv + 1); /* its own options (hitratio.c) */
	parse_args(argc, argv);
	if (geteuid() != 0) {
		fprintf(stderr, "xkv-kvexp: needs root (map creation, BPF_PROG_TEST_RUN); skipped\n");
		return 77;
	}
	xkv_log_set_verbose(o.verbose); /* libbpf: its warnings, or all with -v */
	xkv_log_libbpf();
	if (!strcmp(o.cmd, "memory"))
		return cmd_memory();
	if (!strcmp(o.cmd, "lost"))
		return cmd_lost();
	return cmd_stale();
}
