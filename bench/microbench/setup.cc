// SPDX-License-Identifier: MIT
/* Setup of the operation benchmarks: each layout (and the null store)
 * opened, loaded and preloaded once, on first use, with the request keys
 * each thread cycles through. */
#include "mb.h"

namespace mb {

/* ---- layouts, loaded once, on first use ---------------------------------- */

std::mutex g_mu;
std::map<std::string, std::unique_ptr<Bench>> g_benches;


double secs_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/* Store the given keys with their values through the userspace accessor,
 * in batches.  Empty or what went wrong. */
std::string store_keys(xkv_store &store, const std::string &name, const std::vector<uint32_t> &ks,
		       uint32_t klen, uint32_t vlen)
{
	const xkv_config &c = store.cfg;
	std::vector<uint8_t> keys((size_t)opt.batch * c.key_size), ents((size_t)opt.batch * c.entry_size);
	uint64_t now = xkv_now_ns();

	for (size_t base = 0; base < ks.size(); base += opt.batch) {
		uint32_t n = (uint32_t)std::min<size_t>(opt.batch, ks.size() - base);
		std::fill(keys.begin(), keys.end(), 0);
		std::fill(ents.begin(), ents.end(), 0);
		for (uint32_t i = 0; i < n; i++) {
			std::string k = key_text(ks[base + i], klen), v = value_for(ks[base + i], vlen);
			memcpy(&keys[(size_t)i * c.key_size], k.data(), k.size());
			auto *e = reinterpret_cast<xkv_entry *>(&ents[(size_t)i * c.entry_size]);
			e->wtime_ns = now;
			e->flags = 0;
			e->len = vlen;
			e->klen = klen;
			memcpy(e->data, v.data(), v.size());
		}
		long r = xkv_store_set_batch(&store, keys.data(), ents.data(), n);
		if (r != (long)n)
			return name + ": storing " + key_text(ks[base], klen) + " and " + std::to_string(n - 1) +
			       " more: " + (r < 0 ? std::string(strerror((int)-r)) :
			       "stored " + std::to_string(r) + " of " + std::to_string(n));
	}
	return "";
}

std::string store_keys(Bench &b, const std::vector<uint32_t> &ks)
{
	return store_keys(b.store, b.name, ks);
}

/* The preload moves from CPU to CPU, one batch each: an LRU map with
 * BPF_F_NO_COMMON_LRU (lru --no-common-lru, lru_percpu) keeps one LRU list
 * per CPU, each of entries / nCPU nodes, and an update takes its node from
 * the writing CPU's list, so a writer on one CPU can hold only 1/nCPU of
 * the map (on 16 CPUs 16,384 of 262,144: the rest evict each other). */
static int preload(Bench &b)
{
	std::vector<uint32_t> ks;
	cpu_set_t old;
	bool pinned = !sched_getaffinity(0, sizeof(old), &old);
	std::vector<int> cpus; /* every online CPU, not only this thread's */
	for (long c = 0, n = sysconf(_SC_NPROCESSORS_ONLN); pinned && c < n && c < CPU_SETSIZE; c++)
		cpus.push_back((int)c);
	uint32_t n = 0;
	for (uint32_t base = 0; base < opt.entries; base += opt.batch, n++) {
		if (!cpus.empty()) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpus[n % cpus.size()], &one);
			sched_setaffinity(0, sizeof(one), &one);
		}
		ks.clear();
		for (uint32_t k = base; k < opt.entries && k < base + opt.batch; k++)
			ks.push_back(k);
		b.err = store_keys(b, ks);
		if (!b.err.empty())
			break;
	}
	if (pinned)
		sched_setaffinity(0, sizeof(old), &old);
	return b.err.empty() ? 0 : -1;
}

/* set_assoc, sieve, s3fifo: is key k's bucket one thread i % g_max_threads may use?  Threads
 * get disjoint buckets, as they get disjoint keys (bm_op): a set in a bucket
 * that another thread's set holds goes to the slow path.  Other layouts: yes. */
static bool bucket_ok(const Bench &b, uint32_t k, uint32_t i)
{
	const xkv_config &c = b.store.cfg;
	if (b.null_store || !xkv_sa_layout(c.layout))
		return true;
	std::vector<uint8_t> packed(c.key_size + 8, 0);
	std::string ks = key_text(k);
	if (xkv_key_pack(&c, ks.data(), kKeyLen, packed.data()))
		return false;
	uint64_t h = xkv_key_hash(c.hash_seed, packed.data(), kKeyLen);
	return xkv_sa_bucket_of(h, xkv_sa_buckets(c.entries, c.entry_size)) % g_max_threads == i % g_max_threads;
}

/* opt.keys * g_max_threads distinct keys spread evenly over the preloaded
 * range: for each stretch the first key at or after its start that the
 * store still holds (array_fnv loses colliding keys, and FNV-1a modulo a
 * power of two loses sequential keys in clusters; lru may evict while
 * loading) and, for the bucketed layouts, whose bucket belongs to its thread. */
static int choose_keys(Bench &b)
{
	uint32_t nkeys = opt.keys * g_max_threads;
	uint32_t stride = std::max(1u, opt.entries / nkeys);
	/* set_assoc, sieve, s3fifo: one cursor per thread (a thread's keys come from 1/T of
	 * the buckets: one shared cursor passes T keys to find one and, with T
	 * above the stride, runs out of keys), wrapping round to the start
	 * once before it gives up; every key is used once */
	uint32_t classes = !b.null_store && xkv_sa_layout(b.store.cfg.layout) ? g_max_threads : 1;
	std::vector<uint32_t> next(classes, 0);
	std::vector<bool> used(opt.entries, false);
	auto it = std::make_unique<xkv_item>();
	for (uint32_t i = 0; i < nkeys; i++) {
		uint32_t &nx = next[i % classes];
		uint32_t start = std::max(nx, i * stride), k, tried = 0;
		if (start >= opt.entries && !b.null_store && classes > 1)
			start = 0; /* this cursor passed the end: wrap (used[] keeps keys distinct) */
		k = start;
		for (; !b.null_store && start < opt.entries && tried < opt.entries;
		     tried++, k = k + 1 < opt.entries ? k + 1 : 0) {
			if (classes == 1 && k < start)
				break; /* one cursor: no wrap (the keys stay in order) */
			if (used[k] || !bucket_ok(b, k, i))
				continue;
			std::string ks = key_text(k), v = value_for(k);
			int r = b.L->get(&b.store, ks.data(), kKeyLen, it.get());
			if (r < 0) {
				b.err = b.name + ": get " + ks + " failed: " + strerror(-r);
				return -1;
			}
			if (r == 1 && it->len == kValLen && !memcmp(it->data, v.data(), kValLen))
				break;
		}
		if (!b.null_store && (start >= opt.entries || tried >= opt.entries || (classes == 1 && k < start))) {
			b.err = b.name + ": only " + std::to_string(i) + " of the " + std::to_string(nkeys) +
				" request keys are stored (" + std::to_string(b.live) + " live items)";
			return -1;
		}
		b.keys.push_back(k);
		if (k < opt.entries) /* the null store's keys may run past entries */
			used[k] = true;
		nx = k + 1;
	}
	return 0;
}

void load(Bench &b)
{
	char err[XKV_ERRLEN] = "";
	xkv_config cfg;
	auto t0 = std::chrono::steady_clock::now();

	/* NAME_nochecks: the same program with its access checks compiled out
	 * (XKV_CFG_UNGUARDED), to measure what they cost in the same run;
	 * lru_no_common_lru: lru loaded with --no-common-lru;
	 * array_fnv_unseeded: array_fnv placed by plain FNV-1a (--fnv-unseeded),
	 * where array_fnv and set_assoc run keyed, as attach makes them */
	static const struct {
		const char *sfx;
		__u32 flag;
	} suffixes[] = {
		{ "_nochecks", XKV_CFG_UNGUARDED },
		{ "_no_common_lru", XKV_CFG_NO_COMMON_LRU },
		{ "_unseeded", 0 },
	};
	bool unseeded = b.name.size() > 9 && !b.name.compare(b.name.size() - 9, 9, "_unseeded");
	std::string base = b.name;
	__u32 flags = 0;
	for (const auto &x : suffixes) {
		const std::string sfx = x.sfx;
		if (base.size() > sfx.size() && !base.compare(base.size() - sfx.size(), sfx.size(), sfx)) {
			base.resize(base.size() - sfx.size());
			flags |= x.flag;
		}
	}
	b.null_store = base == "null";
	b.L = b.null_store ? &xkv_layout_null : xkv_layout_find(base.c_str());
	/* the null store has no registry entry: configure it as hash_map */
	if (!b.L || xkv_config_defaults(&cfg, b.null_store ? "hash_map" : base.c_str())) {
		b.err = "unknown layout " + b.name;
		return;
	}
	cfg.key_cap = kKeyLen;
	cfg.val_cap = kValLen;
	cfg.entries = b.null_store ? 1 : opt.entries;
	cfg.mode = XKV_MODE_TEST;
	cfg.flags |= flags;
	if (b.L->hash_seeded && !unseeded)
		cfg.hash_seed = kBenchSeed;
	/* the null store is configured as hash_map, loaded as "null" */
	if (xkv_inproc_load(&cfg, b.L, &b.obj, nullptr, err, sizeof(err))) {
		b.err = b.name + ": " + err;
		return;
	}
	if (!policy_as_attach(b.obj)) {
		b.err = b.name + ": cannot set the access policy";
		return;
	}
	b.prog_fd = bpf_program__fd(xkv_object_prog(b.obj));
	if (b.null_store) {
		if (xkv_null_fill(b.obj, 0, null_value().data(), kValLen, err, sizeof(err))) {
			b.err = err;
			return;
		}
	} else {
		if (xkv_store_from_object(&b.store, b.L, b.obj, err, sizeof(err))) {
			b.err = b.name + ": " + err;
			return;
		}
		if (preload(b))
			return;
		b.live = b.L->count(&b.store);
	}
	if (choose_keys(b))
		return;
	for (uint32_t i = 0; i < b.keys.size(); i++) {
		b.get.push_back(make_req(Op::Get, b.keys[i], (uint16_t)i));
		b.set.push_back(make_req(Op::Set, b.keys[i], (uint16_t)i));
		b.bin_get.push_back(make_req(Op::BinGet, b.keys[i], (uint16_t)i));
	}
	fprintf(stderr, "# loaded %s: entries %u, live items %ld, %zu request keys, %.1f s\n",
		b.name.c_str(), cfg.entries, b.live, b.keys.size(), secs_since(t0));
}

Bench *get_bench(const std::string &name)
{
	std::lock_guard<std::mutex> lk(g_mu);
	auto &p = g_benches[name];
	if (!p) {
		p = std::make_unique<Bench>();
		p->name = name;
		load(*p);
	}
	return p.get();
}

void close_benches()
{
	for (auto &kv : g_benches) {
		if (kv.second->store.L)
			xkv_store_close(&kv.second->store);
		bpf_object__close(kv.second->obj);
	}
	g_benches.clear();
}

} // namespace mb
