// SPDX-License-Identifier: MIT
/* Packet fixtures, layout scenarios: lru eviction and per-CPU lists, percpu
 * copies, hash_map full, binary keys; the scenario list and map options. */
#include "fixtures_test.h"

/* percpu: an XDP set writes only the serving CPU's copy. */
static void case_percpu(struct run *r)
{
	struct where w = { .r = r, .name = "percpu copies per CPU", .fam = FAM4 };
	struct rm_store cpu0, cpu1;
	static struct xkv_item it;

	if (two_cpus(r, &w))
		return;
	rm_store_init(&cpu0, &r->mc);
	rm_store_init(&cpu1, &r->mc);
	flush_store(r);
	if (run_on(&w, 0))
		goto out;
	xdp_req(&w, &cpu0, "set p 4 0 2\r\nP0\r\n", TX, XKV_R_STORED, NULL);
	xdp_req(&w, &cpu0, "get p\r\n", TX, "VALUE p 4 2\r\nP0\r\nEND\r\n", NULL);
	if (run_on(&w, 1))
		goto out;
	xdp_req(&w, &cpu1, "get p\r\n", TX, XKV_R_END, NULL); /* CPU 1's copy is empty */
	int e = r->L->get(&r->st, "p", 1, &it);
	if (e != 1 || it.len != 2 || memcmp(it.data, "P0", 2) || it.flags != 4)
		fail(&w, "the accessor does not see CPU 0's copy (get -> %d)", e);
	/* a userspace set writes every copy */
	__u8 v[2] = { 'U', 'S' };
	if (!seed_one(&w, &cpu1, "u", 9, 0, v, 2)) {
		rm_store_put(&cpu0, "u", 1, 9, 0, v, 2, unix_now());
		xdp_req(&w, &cpu1, "get u\r\n", TX, "VALUE u 9 2\r\nUS\r\nEND\r\n", NULL);
		if (run_on(&w, 0))
			goto out;
		xdp_req(&w, &cpu0, "get u\r\n", TX, "VALUE u 9 2\r\nUS\r\nEND\r\n", NULL);
	}
	if (r->L->count(&r->st) != 2)
		fail(&w, "count %ld, expected 2", r->L->count(&r->st));
	/* a delete served on CPU 1 removes p from every CPU, and says so although
	 * CPU 1's own copy of p is empty */
	if (run_on(&w, 1))
		goto out;
	rm_store_put(&cpu1, "p", 1, 4, 0, "P0", 2, unix_now());
	xdp_req(&w, &cpu1, "delete p\r\n", TX, XKV_R_DELETED, NULL);
	e = r->L->get(&r->st, "p", 1, &it);
	if (e != 0)
		fail(&w, "p still readable after the delete (get -> %d)", e);
	if (r->L->count(&r->st) != 1)
		fail(&w, "count %ld after the delete, expected 1", r->L->count(&r->st));
out:
	pin_cpu(0);
	rm_store_free(&cpu0);
	rm_store_free(&cpu1);
	case_done(r, &w);
}

/* lru --no-common-lru (BPF_F_NO_COMMON_LRU), asked for 15 entries: an LRU
 * list per possible CPU, each with an equal share of the elements.  The
 * kernel rounds max_entries up to a multiple of the possible CPUs (15 -> 16
 * on 2 CPUs) and xkv_config_finish does the same, so cfg says what the map
 * holds.  New keys stored from CPU 0 start evicting once CPU 0's share is
 * used although the map has room (case_lru_evict: only the entries+1st
 * without the flag); CPU 1 then stores its whole share without evicting
 * anything, and the hash table itself is shared: CPU 1 reads CPU 0's keys. */
static void case_lru_cpu_lists(struct run *r)
{
	struct where w = { .r = r, .name = "lru --no-common-lru: an LRU list per CPU", .fam = FAM4 };
	struct rm_store m;
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), ncpus = (__u32)r->st.ncpus, n, share;
	char line[64], want[64];
	int first_evict = 0;

	rm_store_init(&m, &r->mc);
	m.cfg.entries = 1u << 30; /* only the replies are the model's here */
	flush_store(r);
	if (bpf_obj_get_info_by_fd(r->st.store_fd, &info, &ilen)) {
		fail(&w, "map info: %s", strerror(errno));
		goto out;
	}
	if (!(info.map_flags & BPF_F_NO_COMMON_LRU))
		fail(&w, "the store map lacks BPF_F_NO_COMMON_LRU (map_flags 0x%x)", info.map_flags);
	if (info.max_entries != r->st.cfg.entries || info.max_entries % ncpus)
		fail(&w, "the kernel made %u entries, cfg says %u (%u possible CPUs): not the same "
		     "multiple of the CPUs", info.max_entries, r->st.cfg.entries, ncpus);
	n = info.max_entries;
	share = n / ncpus;
	if (ncpus < 2)
		fail(&w, "%u possible CPU: one LRU list, nothing per CPU to test", ncpus);
	if (two_cpus(r, &w) || run_on(&w, 0))
		goto out;
	for (__u32 i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "set c0-%u 0 0 1\r\nx\r\n", i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
		if (!first_evict && r->L->count(&r->st) < (long)i + 1)
			first_evict = (int)i + 1;
	}
	if (first_evict != (int)share + 1)
		fail(&w, "CPU 0's first eviction came with its new key %d, expected %u (%u entries / %u "
		     "possible CPUs + 1, while the map had room)", first_evict, share + 1, n, ncpus);
	long on_cpu0 = r->L->count(&r->st);
	if (on_cpu0 > (long)share)
		fail(&w, "%ld items stored from CPU 0, more than its share %u", on_cpu0, share);
	if (run_on(&w, 1))
		goto out;
	for (__u32 i = 0; i < share; i++) {
		snprintf(line, sizeof(line), "set c1-%u 0 0 1\r\nx\r\n", i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	}
	if (r->L->count(&r->st) != on_cpu0 + (long)share)
		fail(&w, "count %ld after CPU 1 stored its share %u on top of CPU 0's %ld: CPU 1 evicted",
		     r->L->count(&r->st), share, on_cpu0);
	/* CPU 0's newest key, read on CPU 1 */
	snprintf(line, sizeof(line), "get c0-%u\r\n", n - 1);
	snprintf(want, sizeof(want), "VALUE c0-%u 0 1\r\nx\r\nEND\r\n", n - 1);
	xdp_req(&w, &m, line, TX, want, NULL);
out:
	pin_cpu(0);
	rm_store_free(&m);
	case_done(r, &w);
}

/* lru_percpu, 16 entries: 48 new keys set through XDP alternately on CPU 0
 * and CPU 1.  Stores never fail and keys are evicted (as lru); a key's value
 * is in the copy of the CPU that set it only (as percpu): a get there agrees
 * with the accessor, a get on the other CPU misses whether the key is present
 * or evicted. */
static void case_lru_percpu_split(struct run *r)
{
	struct where w = { .r = r, .name = "lru_percpu evicts, copies per CPU", .fam = FAM4 };
	struct rm_store m, seen, none;
	static struct xkv_item it;
	const int n = 48;
	char line[64], key[16], want[8];
	int present = 0;

	if (two_cpus(r, &w))
		return;
	rm_store_init(&m, &r->mc);
	rm_store_init(&seen, &r->mc);
	rm_store_init(&none, &r->mc);
	seen.cfg.entries = 1u << 30;
	flush_store(r);
	for (int i = 0; i < n; i++) {
		if (run_on(&w, i % 2))
			goto out;
		snprintf(line, sizeof(line), "set s%d %d 0 3\r\nv%02d\r\n", i, i, i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	}
	long cnt = r->L->count(&r->st);
	if (cnt < 1 || cnt > (long)r->st.cfg.entries)
		fail(&w, "count %ld, expected 1..%u", cnt, r->st.cfg.entries);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "s%d", i);
		snprintf(want, sizeof(want), "v%02d", i);
		int e = r->L->get(&r->st, key, (__u32)strlen(key), &it);
		if (e < 0) {
			fail(&w, "get %s: %s", key, strerror(-e));
		} else if (e == 1) {
			present++;
			if (it.flags != (__u32)i || it.len != 3 || memcmp(it.data, want, 3))
				fail(&w, "%s holds a wrong value", key);
			rm_store_put(&seen, key, (__u32)strlen(key), (__u32)i, 0, want, 3, unix_now());
		}
	}
	if (present != cnt)
		fail(&w, "%d keys readable, count says %ld", present, cnt);
	if (present >= n)
		fail(&w, "nothing was evicted from %u entries after %d new keys", r->st.cfg.entries, n);
	for (int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "get s%d\r\n", i);
		if (run_on(&w, i % 2))
			goto out;
		xdp_req(&w, &seen, line, TX, NULL, NULL);        /* the setting CPU: as the accessor */
		if (run_on(&w, 1 - i % 2))
			goto out;
		xdp_req(&w, &none, line, TX, XKV_R_END, NULL);   /* the other CPU: its copy is empty */
	}
out:
	pin_cpu(0);
	rm_store_free(&m);
	rm_store_free(&seen);
	rm_store_free(&none);
	case_done(r, &w);
}

/* hash_map, 8 entries: the 9th new key is refused, nothing changes. */
static void case_hash_full(struct run *r)
{
	struct where w = { .r = r, .name = "hash_map full", .fam = FAM4 };
	struct rm_store m;
	static struct keyset ks;
	struct xkv_stats d;
	char line[64], key[16];
	__u32 cap = r->st.cfg.entries;

	ks.n = 0;
	rm_store_init(&m, &r->mc);
	flush_store(r);
	for (__u32 i = 0; i < cap; i++) {
		snprintf(key, sizeof(key), "h%u", i);
		snprintf(line, sizeof(line), "set %s %u 0 2\r\nhv\r\n", key, i);
		xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
		keyset_add(&ks, key, (__u32)strlen(key));
	}
	xdp_req(&w, &m, "set extra 0 0 1\r\nx\r\n", TX, XKV_R_OOM, &d);
	if (d.v[XKV_STAT_err_oom] != 1 || d.v[XKV_STAT_stores] != 0)
		fail(&w, "refused store: err_oom +%llu stores +%llu, expected +1 +0",
		     (unsigned long long)d.v[XKV_STAT_err_oom], (unsigned long long)d.v[XKV_STAT_stores]);
	keyset_add(&ks, "extra", 5);
	xdp_req(&w, &m, "get extra\r\n", TX, XKV_R_END, NULL);
	xdp_req(&w, &m, "set h0 77 0 3\r\nnew\r\n", TX, XKV_R_STORED, NULL);
	xdp_req(&w, &m, "get h0\r\n", TX, "VALUE h0 77 3\r\nnew\r\nEND\r\n", NULL);
	w.step = 0;
	check_store(&w, &m, ks.k, ks.len, ks.n);
	if (r->L->count(&r->st) != (long)cap)
		fail(&w, "count %ld, expected %u", r->L->count(&r->st), cap);
	rm_store_free(&m);
	case_done(r, &w);
}

/* --binary-keys: control bytes are key bytes (memaslap's keys need it);
 * NUL is still refused and changes nothing.  Strict mode refusing them is
 * covered by the fixture table. */
static void case_binary_keys(struct run *r)
{
	struct where w = { .r = r, .name = "binary keys", .fam = FAM4 };
	static const char key[] = "\x10\x1f\x01\tk\x7f";
	static const __u8 nul_req[] = "set a\0b 0 0 1\r\n"; /* no data: the line's own error */
	struct rm_store m;
	static struct keyset ks;
	struct xkv_item *it = malloc(sizeof(*it));
	char line[64];
	static __u8 out[PB_MAX + 64];
	__u32 outlen;

	ks.n = 0;
	rm_store_init(&m, &r->mc);
	flush_store(r);
	snprintf(line, sizeof(line), "set %s 3 0 2\r\nhi\r\n", key);
	xdp_req(&w, &m, line, TX, XKV_R_STORED, NULL);
	snprintf(line, sizeof(line), "get %s\r\n", key);
	char want[64];
	snprintf(want, sizeof(want), "VALUE %s 3 2\r\nhi\r\nEND\r\n", key);
	xdp_req(&w, &m, line, TX, want, NULL);
	keyset_add(&ks, key, sizeof(key) - 1);
	/* the userspace accessor follows the same rule */
	if (!it || r->L->get(&r->st, key, sizeof(key) - 1, it) != 1 || it->len != 2)
		fail(&w, "accessor does not find the binary key");
	/* NUL: CLIENT_ERROR bad key, nothing stored */
	struct pb *b = malloc(sizeof(*b));
	w.step++;
	request_frame(b, w.fam, w.step);
	pb_bytes(b, nul_req, sizeof(nul_req) - 1);
	send_frame(&w, &m, b, TX, XKV_R_KEY_BAD, 0, 0, out, &outlen, NULL);
	free(b);
	keyset_add(&ks, "a", 1);
	w.step = 0;
	check_store(&w, &m, ks.k, ks.len, ks.n);
	free(it);
	rm_store_free(&m);
	case_done(r, &w);
}

void run_binary_keys(struct run *r, const char *name)
{
	static struct run bin;
	memset(&bin, 0, sizeof(bin));
	bin.verbose = r->verbose;
	if (layout_open(&bin, name, 1024, &tables[0], XKV_CFG_BINARY_KEYS)) {
		r->failed++;
		return;
	}
	case_binary_keys(&bin);
	layout_close(&bin);
	r->passed += bin.passed;
	r->failed += bin.failed;
}

/* The scenarios each layout runs, each on a fresh store. */
static const struct {
	const char *layout;
	__u32 entries, flags;
	void (*fn)(struct run *);
	__u64 seed;
} layout_cases[] = {
	{ "array_fnv", 8, 0, case_array_collision, 0 },
	{ "array_fnv", 8, 0, case_array_collision, FIXTURE_SEED },
	{ "set_assoc", 1, 0, case_set_assoc_clock, FIXTURE_SEED },
	{ "set_assoc", 1, 0, case_bucket_random, FIXTURE_SEED },
	{ "sieve", 1, 0, case_bucket_random, FIXTURE_SEED },
	{ "sieve", 1, 0, case_sieve_hand, FIXTURE_SEED },
	{ "s3fifo", 1, 0, case_bucket_random, FIXTURE_SEED },
	{ "s3fifo", 1, 0, case_s3fifo_queues, FIXTURE_SEED },
	{ "arena", 4, 0, case_arena_window, FIXTURE_SEED },
	{ "arena", 64, 0, case_arena_address, FIXTURE_SEED },
	{ "lru", 16, 0, case_lru_evict },
	{ "lru", 15, XKV_CFG_NO_COMMON_LRU, case_lru_cpu_lists },
	{ "percpu", 8, 0, case_percpu },
	{ "lru_percpu", 15, 0, case_lru_evict },
	{ "lru_percpu", 16, 0, case_percpu },
	{ "lru_percpu", 16, 0, case_lru_percpu_split },
	{ "hash_map", 8, 0, case_hash_full },
};

void run_layout_cases(struct run *r, const char *name)
{
	static struct run small;

	for (size_t i = 0; i < sizeof(layout_cases) / sizeof(layout_cases[0]); i++) {
		if (strcmp(layout_cases[i].layout, name))
			continue;
		memset(&small, 0, sizeof(small));
		small.verbose = r->verbose;
		small.seed = layout_cases[i].seed;
		if (layout_open(&small, name, layout_cases[i].entries, &tables[0], layout_cases[i].flags)) {
			r->failed++;
			continue;
		}
		layout_cases[i].fn(&small);
		layout_close(&small);
		r->passed += small.passed;
		r->failed += small.failed;
		r->skipped += small.skipped;
	}
}

/* The load-time map options: --no-prealloc for hash_map only,
 * --no-common-lru for lru only; xkv_config_finish refuses the rest. */
void check_map_opts(struct run *r, const char *name)
{
	static const struct {
		__u32 flag;
		const char *opt, *layout;
	} opts[] = {
		{ XKV_CFG_NO_PREALLOC, "--no-prealloc", "hash_map" },
		{ XKV_CFG_NO_COMMON_LRU, "--no-common-lru", "lru" },
	};
	int bad = 0;

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		struct xkv_config cfg;
		char err[XKV_ERRLEN] = "";
		int want_ok = !strcmp(name, opts[i].layout);

		xkv_config_defaults(&cfg, name);
		cfg.flags |= opts[i].flag;
		int e = xkv_config_finish(&cfg, err, sizeof(err));
		if (want_ok ? e != 0 : (e != -EINVAL || !strstr(err, opts[i].opt))) {
			fprintf(stderr, "FAIL [%s] %s: %s (%s)\n", name, opts[i].opt,
				want_ok ? "refused" : "accepted, or refused without naming it", err);
			bad = 1;
		}
	}
	/* --hash-seed: only where the layout places keys itself */
	struct xkv_config cfg;
	char err[XKV_ERRLEN] = "";
	xkv_config_defaults(&cfg, name);
	cfg.hash_seed = 42;
	int e = xkv_config_finish(&cfg, err, sizeof(err));
	int want_ok = !strcmp(name, "array_fnv") || xkv_sa_layout(name) || !strcmp(name, "arena");
	if (want_ok ? e != 0 : (e != -EINVAL || !strstr(err, "--hash-seed"))) {
		fprintf(stderr, "FAIL [%s] --hash-seed: %s (%s)\n", name,
			want_ok ? "refused" : "accepted, or refused without naming it", err);
		bad = 1;
	}
	if (bad)
		r->failed++;
	else
		r->passed++;
	if (r->verbose && !bad)
		printf("ok   [%s] load-time map options\n", name);
}
