// SPDX-License-Identifier: MIT
/* In-kernel microbenchmark: ns per request of the XDP handler, run through
 * BPF_PROG_TEST_RUN, for every layout and for the null store (the same
 * handler with a store that costs nothing: the floor).
 *
 * Every benchmark first runs each of its request packets once and checks
 * the action and the reply bytes; any mismatch fails the benchmark (and the
 * process exits 1).  Only then does it time.  The time of one request is the
 * kernel's own `duration` of a run with repeat = 1 (see README.md for why
 * not repeat > 1); null-store requests run in blocks between the layout's
 * so the ratio x_null compares numbers taken under the same conditions. */
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "inproc.h"
#include "log.h"
#include "opts.h"
#include "xdpkv.h"
#include "null_layout.h"
#include "array_fnv/slot.h"
#include "set_assoc/bucket.h"

namespace {

constexpr uint32_t kKeyLen = 16;       /* "key:%012u" */
constexpr uint32_t kValLen = 128;
constexpr uint16_t kClientPort = 40000;
constexpr uint32_t kNullBlock = 64;    /* null-store runs per block, interleaved */
constexpr uint32_t kOutMax = 4096;
/* Benchmarks run with 1 … g_max_threads threads (the CPUs online); key
 * sets are built for that many. */
uint32_t g_max_threads = 1;
constexpr size_t kHdrLen = ETH_HLEN + 20 + 8 + XKV_UDP_HDR_LEN;
/* The seed array_fnv and set_assoc run with here: keyed placement, as attach
 * gives them by default (a random one there; a fixed one here, so runs place
 * keys alike). */
constexpr uint64_t kBenchSeed = 0x6a09e667f3bcc908ull;
const uint8_t kClientMac[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0x02};
const uint8_t kServerMac[ETH_ALEN] = {0x02, 0, 0, 0, 0, 0x01};
const uint32_t kClientIp = 0xc0000202; /* 192.0.2.2 (TEST-NET-1): never sent anywhere */
const uint32_t kServerIp = 0xc0000201; /* 192.0.2.1 */

struct Options {
	uint32_t entries = 1u << 20; /* --xkv_entries: map size and items preloaded */
	uint32_t keys = 4096;        /* --xkv_keys: distinct request keys each thread cycles through */
	uint32_t batch = 8192;       /* items per xkv_store_set_batch call */
	uint32_t cpu = 0;            /* --xkv_cpu: CPU of thread 0; thread t runs on cpu + t */
	bool verbose = false;        /* --xkv_verbose: libbpf messages */
};
Options opt;

std::atomic<bool> g_failed{false};
std::atomic<unsigned long> g_validated{0};

enum class Op { Get, Set };

/* With more than one thread: each thread its own keys (disjoint), or every
 * thread the same keys (shared: the same bucket, slot, LRU node and cache
 * lines are hit by several CPUs at once). */
enum class Keys { Disjoint, Shared };

const char *op_name(Op op)
{
	return op == Op::Get ? "get_hit" : "set";
}

/* ---- requests and expected replies ---------------------------------------- */

/* "key:%012u" (16 bytes), padded with '-' to klen bytes (>= 16). */
std::string key_text(uint32_t k, uint32_t klen = kKeyLen)
{
	char b[32];
	snprintf(b, sizeof(b), "key:%012u", k);
	std::string s(b);
	if (klen > s.size())
		s.append(klen - s.size(), '-');
	return s;
}

/* The value stored under key k: key-dependent, so a reply with another
 * key's bytes is caught. */
std::string value_for(uint32_t k, uint32_t vlen = kValLen)
{
	std::string v(vlen, 'a');
	for (uint32_t j = 0; j < vlen; j++)
		v[j] = (char)('a' + (k * 7 + j) % 26);
	return v;
}

/* What the null store's single item holds. */
const std::string &null_value()
{
	static const std::string v = value_for(0x5eed);
	return v;
}

uint16_t csum16(const void *p, size_t n)
{
	const uint8_t *b = static_cast<const uint8_t *>(p);
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* The access policy as a default attach leaves it, so the checks cost what
 * they cost on a live interface: anyone allowed (one trie node) but only
 * frames to this host's MAC and address served. */
bool policy_as_attach(bpf_object *obj)
{
	if (xkv_object_open_policy(obj))
		return false;
	bpf_map *hm = bpf_object__find_map_by_name(obj, "host");
	bpf_map *lm = bpf_object__find_map_by_name(obj, "local_addrs");
	if (!hm || !lm)
		return false;
	xkv_host h = {};
	memcpy(h.mac, kServerMac, ETH_ALEN);
	h.flags = XKV_HOST_CHECK_MAC | XKV_HOST_CHECK_IP;
	uint32_t zero = 0, ip = htonl(kServerIp);
	uint8_t addr[1][16], plen = 96 + 24;
	xkv_addr_from_v4(addr[0], &ip);
	xkv_host_set_inline(&h, addr, 1); /* as xkv_host_sync leaves it */
	return !bpf_map_update_elem(bpf_map__fd(hm), &zero, &h, BPF_ANY) &&
	       !bpf_map_update_elem(bpf_map__fd(lm), addr[0], &plen, BPF_ANY);
}

/* Ethernet / IPv4 / UDP to port 11211 / 8-byte frame header / text. */
std::vector<uint8_t> make_packet(const std::string &text, uint16_t req_id)
{
	std::vector<uint8_t> p(kHdrLen + text.size());
	auto *eth = reinterpret_cast<ethhdr *>(p.data());
	auto *ip = reinterpret_cast<iphdr *>(p.data() + ETH_HLEN);
	auto *udp = reinterpret_cast<udphdr *>(p.data() + ETH_HLEN + 20);
	auto *fh = reinterpret_cast<xkv_udp_hdr *>(p.data() + ETH_HLEN + 28);

	memcpy(eth->h_dest, kServerMac, ETH_ALEN);
	memcpy(eth->h_source, kClientMac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons((uint16_t)(p.size() - ETH_HLEN));
	ip->id = htons(req_id);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = htonl(kClientIp);
	ip->daddr = htonl(kServerIp);
	ip->check = htons(csum16(ip, 20));
	udp->source = htons(kClientPort);
	udp->dest = htons(XKV_DEFAULT_PORT);
	udp->len = htons((uint16_t)(p.size() - ETH_HLEN - 20));
	fh->req_id = htons(req_id);
	fh->seq = 0;
	fh->total = htons(1);
	fh->reserved = 0;
	memcpy(p.data() + kHdrLen, text.data(), text.size());
	/* a real UDP checksum, as a Linux client sends: the program verifies it */
	size_t ulen = p.size() - ETH_HLEN - 20;
	std::vector<uint8_t> ph(12 + ulen);
	memcpy(ph.data(), &ip->saddr, 8);
	ph[9] = IPPROTO_UDP;
	ph[10] = (uint8_t)(ulen >> 8);
	ph[11] = (uint8_t)ulen;
	memcpy(ph.data() + 12, udp, ulen);
	uint16_t c = csum16(ph.data(), ph.size());
	udp->check = htons(c ? c : 0xffff);
	return p;
}

struct Req {
	uint32_t key;
	uint16_t req_id;
	uint32_t reply_len;        /* bytes of the reply frame */
	std::vector<uint8_t> pkt;
};

std::string want_text(Op op, uint32_t key, bool null_store)
{
	if (op == Op::Set)
		return XKV_R_STORED;
	return "VALUE " + key_text(key) + " 0 " + std::to_string(kValLen) + "\r\n" +
	       (null_store ? null_value() : value_for(key)) + XKV_R_DATA_END;
}

Req make_req(Op op, uint32_t key, uint16_t req_id)
{
	std::string t;
	if (op == Op::Get)
		t = "get " + key_text(key) + "\r\n";
	else
		t = "set " + key_text(key) + " 0 0 " + std::to_string(kValLen) + "\r\n" + value_for(key) +
		    "\r\n";
	uint32_t rlen = (uint32_t)(kHdrLen + want_text(op, key, false).size());
	return Req{key, req_id, rlen, make_packet(t, req_id)};
}

std::string printable(const std::string &s)
{
	std::string o;
	for (unsigned char c : s) {
		char b[8];
		if (c == '\r')
			o += "\\r";
		else if (c == '\n')
			o += "\\n";
		else if (c < 0x20 || c > 0x7e)
			snprintf(b, sizeof(b), "\\x%02x", c), o += b;
		else
			o += (char)c;
	}
	return o;
}

/* Empty when out[0..n) is the reply to r with text want; else what differs. */
std::string check_reply(const uint8_t *out, uint32_t n, const Req &r, const std::string &want)
{
	char m[256];
	if (n < kHdrLen)
		return "reply of " + std::to_string(n) + " bytes is shorter than its headers";
	auto *eth = reinterpret_cast<const ethhdr *>(out);
	auto *ip = reinterpret_cast<const iphdr *>(out + ETH_HLEN);
	auto *udp = reinterpret_cast<const udphdr *>(out + ETH_HLEN + 20);
	auto *fh = reinterpret_cast<const xkv_udp_hdr *>(out + ETH_HLEN + 28);
	if (memcmp(eth->h_dest, kClientMac, ETH_ALEN) || memcmp(eth->h_source, kServerMac, ETH_ALEN) ||
	    eth->h_proto != htons(ETH_P_IP))
		return "reply Ethernet header is not the request's, swapped";
	if (ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    ip->saddr != htonl(kServerIp) || ip->daddr != htonl(kClientIp) ||
	    ntohs(ip->tot_len) != n - ETH_HLEN || csum16(ip, 20) != 0) {
		snprintf(m, sizeof(m), "bad reply IPv4 header (tot_len %u for %u bytes, csum %s)",
			 ntohs(ip->tot_len), n - ETH_HLEN, csum16(ip, 20) ? "wrong" : "ok");
		return m;
	}
	if (udp->source != htons(XKV_DEFAULT_PORT) || udp->dest != htons(kClientPort) ||
	    ntohs(udp->len) != n - ETH_HLEN - 20) {
		snprintf(m, sizeof(m), "bad reply UDP header (ports %u->%u, len %u for %u bytes)",
			 ntohs(udp->source), ntohs(udp->dest), ntohs(udp->len), n - ETH_HLEN - 20);
		return m;
	}
	if (fh->req_id != htons(r.req_id) || fh->seq != 0 || fh->total != htons(1)) {
		snprintf(m, sizeof(m), "bad frame header: req_id %u (want %u) seq %u total %u",
			 ntohs(fh->req_id), r.req_id, ntohs(fh->seq), ntohs(fh->total));
		return m;
	}
	std::string got(reinterpret_cast<const char *>(out + kHdrLen), n - kHdrLen);
	if (got != want)
		return "reply text differs:\n  want \"" + printable(want) + "\"\n  got  \"" + printable(got) +
		       "\"";
	return "";
}

/* ---- BPF_PROG_TEST_RUN ----------------------------------------------------- */

struct Run {
	int err;          /* 0 or -errno of the syscall */
	uint32_t retval;  /* XDP action */
	uint32_t size;    /* bytes of the resulting frame */
	uint32_t ns;      /* the kernel's duration of the one run */
};

/* One run, repeat = 1.  out may be NULL: the kernel then copies nothing but
 * still reports the frame's size. */
Run test_run(int prog_fd, const Req &r, uint8_t *out)
{
	bpf_test_run_opts o{};
	o.sz = sizeof(o);
	o.data_in = r.pkt.data();
	o.data_size_in = (uint32_t)r.pkt.size();
	o.data_out = out;
	o.data_size_out = out ? kOutMax : 0;
	o.repeat = 1;
	Run res{};
	res.err = bpf_prog_test_run_opts(prog_fd, &o) ? -errno : 0;
	res.retval = o.retval;
	res.size = o.data_size_out;
	res.ns = o.duration;
	return res;
}

/* ---- layouts, loaded once, on first use ---------------------------------- */

struct Bench {
	std::string name;
	const xkv_layout *L = nullptr;
	bpf_object *obj = nullptr;
	int prog_fd = -1;
	bool null_store = false;
	xkv_store store{};
	long live = -1;                /* items the store holds after the preload */
	std::vector<uint32_t> keys;    /* request keys, all present after the preload */
	std::vector<Req> get, set;
	std::string err;
};

std::mutex g_mu;
std::map<std::string, std::unique_ptr<Bench>> g_benches;

double secs_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/* Store the given keys with their values through the userspace accessor,
 * in batches.  Empty or what went wrong. */
std::string store_keys(xkv_store &store, const std::string &name, const std::vector<uint32_t> &ks,
		       uint32_t klen = kKeyLen, uint32_t vlen = kValLen)
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
int preload(Bench &b)
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
bool bucket_ok(const Bench &b, uint32_t k, uint32_t i)
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
int choose_keys(Bench &b)
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

/* ---- the benchmarks --------------------------------------------------------- */

void fail(benchmark::State &st, const std::string &msg)
{
	g_failed = true;
	fprintf(stderr, "microbench: %s\n", msg.c_str());
	st.SkipWithError(msg.c_str());
}

/* Thread t of a benchmark runs on CPU (opt.cpu + t) mod the CPUs online. */
void pin(int thread)
{
	static const long ncpu = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((int)((opt.cpu + thread) % ncpu), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Run every request once through prog_fd and compare with the protocol. */
std::string validate(const Bench &b, int prog_fd, bool null_store, const std::vector<const Req *> &reqs,
		     Op op)
{
	std::vector<uint8_t> out(kOutMax);
	for (const Req *rp : reqs) {
		const Req &r = *rp;
		Run res = test_run(prog_fd, r, out.data());
		/* passed to the slow path because a slot or bucket was being
		 * written: other threads store or validate their keys at the same
		 * time (arena: a store holds its key's home slot, which may hold
		 * this thread's key).  Transient: ask again, a bounded number of
		 * times; a pass that persists is an error below. */
		for (int retry = 0; !null_store && !res.err && res.retval == XDP_PASS && retry < 1000; retry++) {
			sched_yield();
			res = test_run(prog_fd, r, out.data());
		}
		std::string where = std::string(null_store ? "null" : b.name.c_str()) + " " + op_name(op) +
				    " " + key_text(r.key) + ": ";
		if (res.err)
			return where + "BPF_PROG_TEST_RUN failed: " + strerror(-res.err);
		if (res.retval != XDP_TX)
			return where + "action " + std::to_string(res.retval) + ", want XDP_TX (" +
			       std::to_string(XDP_TX) + ")";
		std::string e = check_reply(out.data(), res.size, r, want_text(op, r.key, null_store));
		if (!e.empty())
			return where + e;
		g_validated++;
	}
	return "";
}

/* After the null store answered a set of key: its entry_sink copy on this
 * CPU holds that set's value (the floor copies the value as the layouts do,
 * null_store.bpf.c).  Empty or what is wrong. */
std::string check_null_sink(const Bench &nb, const Bench &b, uint32_t key)
{
	bpf_map *m = bpf_object__find_map_by_name(nb.obj, "entry_sink");
	int ncpu = libbpf_num_possible_cpus(), cpu = sched_getcpu();
	if (!m || ncpu <= 0 || cpu < 0 || cpu >= ncpu)
		return "null store: no entry_sink map (or CPU unknown)";
	size_t vsz = (bpf_map__value_size(m) + 7) & ~7u;
	std::vector<uint8_t> v(vsz * ncpu);
	__u32 zero = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(m), &zero, v.data()))
		return std::string("null store: reading entry_sink: ") + strerror(errno);
	const auto *e = reinterpret_cast<const xkv_entry *>(&v[vsz * cpu]);
	std::string want = value_for(key);
	/* array_fnv's entries hold the key too: theirs are larger */
	if (!b.null_store && !b.L->key_in_value && bpf_map__value_size(m) != b.store.cfg.entry_size)
		return "null store: entry_sink holds " + std::to_string(bpf_map__value_size(m)) +
		       " bytes, " + b.name + "'s entries " + std::to_string(b.store.cfg.entry_size);
	if (e->len != kValLen || memcmp(e->data, want.data(), kValLen))
		return "null store: entry_sink on CPU " + std::to_string(cpu) + " does not hold the value of " +
		       key_text(key) + " after its set (len " + std::to_string(e->len) + ")";
	return "";
}

/* Kernel durations of single requests (ns). */
struct Timer {
	std::vector<uint32_t> ns;
	uint64_t sum = 0;

	void add(uint32_t v)
	{
		ns.push_back(v);
		sum += v;
	}
	double mean() const { return ns.empty() ? 0 : (double)sum / ns.size(); }
	double p50()
	{
		if (ns.empty())
			return 0;
		auto mid = ns.begin() + ns.size() / 2;
		std::nth_element(ns.begin(), mid, ns.end());
		return *mid;
	}
};

/* While timing: the action and the reply's size (a miss is shorter). */
bool timed_ok(const Run &res, const Req &r)
{
	return !res.err && res.retval == XDP_TX && res.size == r.reply_len;
}

/* A set another thread is writing at the same moment may be passed to the
 * slow path (array_fnv: slot busy; the hash maps: bucket lock not taken):
 * with shared keys that is a correct answer, counted, not an error.  arena
 * also with disjoint keys: a store holds its key's home slot, which may
 * hold another thread's key (a key lives in any slot of its window). */
bool passed_busy(const Bench &b, const Run &res, Op op, Keys keys)
{
	bool neighbours = !b.null_store && !strcmp(b.store.cfg.layout, "arena");
	return !res.err && res.retval == XDP_PASS && op == Op::Set && (keys == Keys::Shared || neighbours);
}

/* kNullBlock requests from reqs[first] on (cyclically) through the null
 * store, timed into nt.  False (and the benchmark failed) on a wrong reply. */
bool null_block(benchmark::State &st, int null_fd, const std::vector<const Req *> &reqs, size_t first,
		Op op, Timer *nt)
{
	size_t n = reqs.size();
	for (uint32_t j = 0; j < kNullBlock; j++) {
		const Req &q = *reqs[(first + j) % n];
		Run nr = test_run(null_fd, q, nullptr);
		if (!timed_ok(nr, q)) { /* the null store has no locks: never busy */
			fail(st, "null " + std::string(op_name(op)) + " " + key_text(q.key) + ": action " +
				 std::to_string(nr.retval) + ", " + std::to_string(nr.size) +
				 " bytes while timing (validated before)");
			return false;
		}
		nt->add(nr.ns);
	}
	return true;
}

void bm_op(benchmark::State &st, const std::string &layout, Op op, Keys keys)
{
	pin(st.thread_index());
	Bench *b = get_bench(layout), *nb = get_bench("null");
	if (!b->err.empty() || !nb->err.empty()) {
		fail(st, !b->err.empty() ? b->err : nb->err);
		return;
	}
	/* Disjoint: thread t uses every g_max_threads-th key from the t-th on:
	 * each thread has opt.keys keys spread over the whole range, whatever
	 * the number of threads, and two threads never send the same key.
	 * Shared: every thread uses thread 0's keys, each starting at its own
	 * offset (threads walk the same keys, not in lockstep). */
	const std::vector<Req> &all = op == Op::Get ? b->get : b->set;
	std::vector<const Req *> reqs;
	size_t first = keys == Keys::Shared ? 0 : st.thread_index();
	for (size_t j = first; j < all.size(); j += g_max_threads)
		reqs.push_back(&all[j]);
	size_t n = reqs.size(), i = 0;
	if (keys == Keys::Shared && n)
		i = (size_t)st.thread_index() * n / (size_t)st.threads();
	std::string e = n ? "" : "no request keys";
	/* With shared keys thread 0 stores and validates them for all: two
	 * threads setting the same key at once may rightly be passed to the
	 * slow path.  The others wait at the timed loop's start, which Google
	 * Benchmark holds until every thread is there. */
	bool validates = keys == Keys::Disjoint || st.thread_index() == 0;
	/* lru evicts: a set benchmark may have pushed a get key out; store this
	 * thread's keys again (the same bytes; a no-op for the other layouts) */
	if (e.empty() && validates && op == Op::Get && !b->null_store) {
		std::vector<uint32_t> ks;
		for (const Req *r : reqs)
			ks.push_back(r->key);
		e = store_keys(*b, ks);
	}
	if (e.empty() && validates)
		e = validate(*b, b->prog_fd, b->null_store, reqs, op);
	if (e.empty() && validates)
		e = validate(*b, nb->prog_fd, true, reqs, op);
	if (e.empty() && validates && op == Op::Set)
		e = check_null_sink(*nb, *b, reqs.back()->key);
	if (!e.empty()) {
		fail(st, e);
		return;
	}

	Timer lt, nt;
	lt.ns.reserve(std::min<size_t>(st.max_iterations, 1u << 24));
	uint32_t k = 0;
	uint64_t busy = 0;
	for (auto _ : st) {
		const Req &r = *reqs[i];
		Run res = test_run(b->prog_fd, r, nullptr);
		if (passed_busy(*b, res, op, keys)) {
			busy++;
		} else if (!timed_ok(res, r)) {
			fail(st, b->name + " " + op_name(op) + " " + key_text(r.key) + ": action " +
				 std::to_string(res.retval) + ", " + std::to_string(res.size) +
				 " bytes while timing (validated before)");
			break;
		}
		st.SetIterationTime(res.ns * 1e-9);
		lt.add(res.ns);
		if (++i == n)
			i = 0;
		if (++k < kNullBlock)
			continue;
		/* the same requests again, through the null store */
		k = 0;
		if (!null_block(st, nb->prog_fd, reqs, (i + n - kNullBlock % n) % n, op, &nt))
			break;
	}
	/* too few iterations for a block: one block now, for the ratio */
	if (nt.ns.empty() && !st.error_occurred() && !null_block(st, nb->prog_fd, reqs, 0, op, &nt))
		return;

	using C = benchmark::Counter;
	double mean = lt.mean(), nmean = nt.mean(), p50 = lt.p50(), np50 = nt.p50();
	st.counters["ns_per_op"] = C(mean, C::kAvgThreads);
	st.counters["p50_ns"] = C(p50, C::kAvgThreads);
	st.counters["null_ns"] = C(nmean, C::kAvgThreads);
	st.counters["null_p50_ns"] = C(np50, C::kAvgThreads);
	st.counters["x_null"] = C(nmean > 0 ? mean / nmean : 0, C::kAvgThreads);
	st.counters["x_null_p50"] = C(np50 > 0 ? p50 / np50 : 0, C::kAvgThreads);
	st.counters["live_items"] = C((double)b->live, C::kAvgThreads);
	/* shared-key sets passed to the slow path, per request */
	st.counters["busy_share"] = C(lt.ns.empty() ? 0 : (double)busy / lt.ns.size(), C::kAvgThreads);
}

/* The harness alone: a program that only returns XDP_PASS, on the same get
 * packets.  Every other number includes this fixed cost. */
int pass_prog_fd()
{
	static int fd = -2;
	std::lock_guard<std::mutex> lk(g_mu);
	if (fd == -2) {
		const bpf_insn insns[] = {
			{BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
			{BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
		};
		fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xkv_pass", "GPL", insns, 2, nullptr);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

void bm_harness(benchmark::State &st)
{
	pin(st.thread_index());
	int fd = pass_prog_fd();
	Bench *nb = get_bench("null");
	if (fd < 0 || !nb->err.empty()) {
		fail(st, fd < 0 ? std::string("loading an XDP_PASS program: ") + strerror(-fd) : nb->err);
		return;
	}
	size_t n = nb->get.size(), i = 0;
	Timer t;
	for (auto _ : st) {
		Run res = test_run(fd, nb->get[i], nullptr);
		if (res.err || res.retval != XDP_PASS) {
			fail(st, "XDP_PASS program returned " + std::to_string(res.retval));
			break;
		}
		st.SetIterationTime(res.ns * 1e-9);
		t.add(res.ns);
		if (++i == n)
			i = 0;
	}
	using C = benchmark::Counter;
	st.counters["ns_per_op"] = C(t.mean(), C::kAvgThreads);
	st.counters["p50_ns"] = C(t.p50(), C::kAvgThreads);
}

/* ---- the matrix: layout x operation x key size x value size x fill ------- */

/* One layout loaded at a time (a 256 Ki-entry map of 1 KiB values is a few
 * hundred MB); cells are registered grouped by layout, key size and value
 * size, fills ascending, so each store is loaded once and filled up step by
 * step.  Every cell leaves the store as it found it (see m_restore). */

enum class MOp { GetHit, GetMiss, SetNew, SetOver, Delete };
const char *const kMOpNames[] = {"get_hit", "get_miss", "set_new", "set_overwrite", "delete"};
constexpr uint32_t kMissBase = 1u << 30; /* ids of keys never stored */

struct MatrixOptions {
	std::vector<MOp> ops = {MOp::GetHit, MOp::GetMiss, MOp::SetNew, MOp::SetOver, MOp::Delete};
	std::vector<uint32_t> key_sizes = {16, 64, 128, 250};
	std::vector<uint32_t> value_sizes = {32, 128, 512, 1024};
	std::vector<uint32_t> fills = {10, 50, 95};
	std::vector<std::string> layouts = {"hash_map", "array_fnv", "lru", "percpu", "lru_percpu", "set_assoc",
					    "sieve", "s3fifo"};
	uint32_t capacity = 1u << 18; /* --xkv_capacity: entries of every matrix store */
	uint32_t keys = 2048;         /* --xkv_matrix_keys: request keys per cell */
	uint32_t iters = 16384;       /* --xkv_iters: timed requests per cell and repetition */
};
MatrixOptions mopt;

bool m_hit_op(MOp op)
{
	return op == MOp::GetHit || op == MOp::SetOver || op == MOp::Delete;
}

/* Does the op change the store (and so need undoing after every run)? */
bool m_mutates(MOp op)
{
	return op == MOp::SetNew || op == MOp::Delete;
}

std::string m_want(MOp op, uint32_t key, uint32_t klen, uint32_t vlen, bool null_store)
{
	switch (op) {
	case MOp::GetHit:
		return "VALUE " + key_text(key, klen) + " 0 " + std::to_string(vlen) + "\r\n" +
		       value_for(null_store ? 0x5eed : key, vlen) + XKV_R_DATA_END;
	case MOp::GetMiss:
		return XKV_R_END;
	case MOp::SetNew:
	case MOp::SetOver:
		return XKV_R_STORED;
	case MOp::Delete:
		return XKV_R_DELETED;
	}
	return "";
}

Req m_req(MOp op, uint32_t key, uint16_t req_id, uint32_t klen, uint32_t vlen)
{
	std::string k = key_text(key, klen), t;
	if (op == MOp::GetHit || op == MOp::GetMiss)
		t = "get " + k + "\r\n";
	else if (op == MOp::Delete)
		t = "delete " + k + "\r\n";
	else
		t = "set " + k + " 0 0 " + std::to_string(vlen) + "\r\n" + value_for(key, vlen) + "\r\n";
	uint32_t rlen = (uint32_t)(kHdrLen + m_want(op, key, klen, vlen, false).size());
	return Req{key, req_id, rlen, make_packet(t, req_id)};
}

/* A layout loaded for one key and value size, filled with ids [0, filled). */
struct MStore {
	std::string layout;
	uint32_t klen = 0, vlen = 0;
	const xkv_layout *L = nullptr;
	bpf_object *obj = nullptr;
	int prog_fd = -1;
	xkv_store store{};
	uint32_t filled = 0;
	long live = -1;
	std::string err;
};

/* The null store for one key and value size: hit (its item filled, every
 * lookup finds it) and miss (.bss left zero: wtime_ns 0 reads as absent). */
struct MNull {
	bpf_object *hit = nullptr, *miss = nullptr;
	int hit_fd = -1, miss_fd = -1;
	std::string err;
};

std::unique_ptr<MStore> g_mstore;
std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<MNull>> g_mnull;

void m_close_store()
{
	if (!g_mstore)
		return;
	if (g_mstore->store.L)
		xkv_store_close(&g_mstore->store);
	bpf_object__close(g_mstore->obj);
	g_mstore.reset();
}

/* Open and load layout L (NULL: the null store) for klen/vlen keys and
 * values with the given entries.  Empty or what went wrong. */
std::string m_load(const xkv_layout *L, const std::string &name, uint32_t klen, uint32_t vlen,
		   uint32_t entries, bpf_object **obj, int *prog_fd)
{
	char err[XKV_ERRLEN] = "";
	xkv_config cfg;
	bool null_store = L == &xkv_layout_null;
	if (xkv_config_defaults(&cfg, null_store ? "hash_map" : name.c_str()))
		return "unknown layout " + name;
	cfg.key_cap = klen;
	cfg.val_cap = vlen;
	cfg.entries = entries;
	cfg.mode = XKV_MODE_TEST;
	if (L->hash_seeded)
		cfg.hash_seed = kBenchSeed;
	/* the null store is configured as hash_map, loaded as "null" */
	if (xkv_inproc_load(&cfg, L, obj, nullptr, err, sizeof(err)))
		return name + ": " + err;
	if (!policy_as_attach(*obj))
		return name + ": cannot set the access policy";
	*prog_fd = bpf_program__fd(xkv_object_prog(*obj));
	return "";
}

MNull *m_null(uint32_t klen, uint32_t vlen)
{
	auto &p = g_mnull[{klen, vlen}];
	if (p)
		return p.get();
	p = std::make_unique<MNull>();
	char err[XKV_ERRLEN] = "";
	p->err = m_load(&xkv_layout_null, "null", klen, vlen, 1, &p->hit, &p->hit_fd);
	if (p->err.empty())
		p->err = m_load(&xkv_layout_null, "null", klen, vlen, 1, &p->miss, &p->miss_fd);
	std::string v = value_for(0x5eed, vlen);
	if (p->err.empty() && xkv_null_fill(p->hit, 0, v.data(), vlen, err, sizeof(err)))
		p->err = err;
	return p.get();
}

MStore *m_store(const std::string &layout, uint32_t klen, uint32_t vlen)
{
	if (g_mstore && g_mstore->layout == layout && g_mstore->klen == klen && g_mstore->vlen == vlen)
		return g_mstore.get();
	m_close_store();
	g_mstore = std::make_unique<MStore>();
	MStore &b = *g_mstore;
	char err[XKV_ERRLEN] = "";
	b.layout = layout;
	b.klen = klen;
	b.vlen = vlen;
	b.L = xkv_layout_find(layout.c_str());
	if (!b.L) {
		b.err = "unknown layout " + layout;
		return &b;
	}
	b.err = m_load(b.L, layout, klen, vlen, mopt.capacity, &b.obj, &b.prog_fd);
	if (b.err.empty() && xkv_store_from_object(&b.store, b.L, b.obj, err, sizeof(err)))
		b.err = layout + ": " + err;
	return &b;
}

/* Grow (or, after a flush, rebuild) the store to ids [0, items). */
std::string m_set_fill(MStore &b, uint32_t items)
{
	if (b.filled == items)
		return "";
	auto t0 = std::chrono::steady_clock::now();
	if (items < b.filled) {
		int r = b.L->flush(&b.store);
		if (r)
			return b.layout + ": flush failed: " + strerror(-r);
		b.filled = 0;
	}
	std::vector<uint32_t> ks;
	for (uint32_t base = b.filled; base < items; base += opt.batch) {
		ks.clear();
		for (uint32_t k = base; k < items && k < base + opt.batch; k++)
			ks.push_back(k);
		std::string e = store_keys(b.store, b.layout, ks, b.klen, b.vlen);
		if (!e.empty())
			return e;
	}
	b.filled = items;
	b.live = b.L->count(&b.store);
	fprintf(stderr, "# matrix %s k%u v%u: %u of %u entries filled, %ld live, %.1f s\n",
		b.layout.c_str(), b.klen, b.vlen, items, mopt.capacity, b.live, secs_since(t0));
	return "";
}

/* Request keys for op: present ones (value checked) spread evenly over the
 * filled ids, or ids never stored (checked absent). */
std::string m_pick_keys(MStore &b, MOp op, std::vector<uint32_t> *out)
{
	auto it = std::make_unique<xkv_item>();
	uint32_t want = mopt.keys;
	if (m_hit_op(op)) {
		uint32_t stride = std::max(1u, b.filled / want), next = 0;
		for (uint32_t i = 0; i < want; i++) {
			uint32_t k = std::max(next, i * stride);
			for (; k < b.filled; k++) {
				std::string ks = key_text(k, b.klen), v = value_for(k, b.vlen);
				int r = b.L->get(&b.store, ks.data(), b.klen, it.get());
				if (r < 0)
					return b.layout + ": get " + ks + " failed: " + strerror(-r);
				if (r == 1 && it->len == b.vlen && !memcmp(it->data, v.data(), b.vlen))
					break;
			}
			if (k >= b.filled)
				return b.layout + ": only " + std::to_string(i) + " of " + std::to_string(want) +
				       " request keys are stored (" + std::to_string(b.live) + " live items)";
			out->push_back(k);
			next = k + 1;
		}
		return "";
	}
	for (uint32_t i = 0; i < want; i++) {
		uint32_t k = kMissBase + i;
		std::string ks = key_text(k, b.klen);
		int r = b.L->get(&b.store, ks.data(), b.klen, it.get());
		if (r != 0)
			return b.layout + ": key " + ks + " should be absent (get: " + std::to_string(r) + ")";
		out->push_back(k);
	}
	return "";
}

/* What undoes one request of a mutating op: array_fnv's slot bytes (set_assoc's
 * bucket bytes) as they were (a set of a new key may overwrite another key), for the
 * hash-like layouts the packed key (set_new: delete it again) or the entry
 * (delete: store it again). */
struct MUndo {
	uint32_t key;
	uint8_t *slot = nullptr;
	std::vector<uint8_t> bytes;
	std::vector<uint8_t> packed;
};

std::string m_undo_prepare(MStore &b, MOp op, const std::vector<uint32_t> &keys,
			   std::vector<MUndo> *undo)
{
	const xkv_config &c = b.store.cfg;
	if (b.layout == "arena") /* a key's slot is any of its window's: not undone here */
		return "arena: not in the matrix (its undo knows array_fnv's and set_assoc's slots only)";
	for (uint32_t k : keys) {
		MUndo u;
		u.key = k;
		std::string ks = key_text(k, b.klen);
		u.packed.assign(c.key_size + 8, 0);
		if (xkv_key_pack(&c, ks.data(), b.klen, u.packed.data()))
			return "cannot pack key " + ks;
		if (b.store.mm) { /* array_fnv: the key's slot; bucketed layouts: its whole bucket */
			bool sa = xkv_sa_layout(b.layout.c_str());
			uint64_t h = xkv_key_hash(c.hash_seed, u.packed.data(), b.klen);
			uint32_t idx = sa ? xkv_sa_bucket_of(h, xkv_sa_buckets(c.entries, c.entry_size))
					  : (uint32_t)(h % c.entries);
			u.slot = static_cast<uint8_t *>(b.store.mm) + (size_t)idx * b.store.slot_stride;
			u.bytes.assign(u.slot, u.slot + (sa ? b.store.slot_stride : c.entry_size));
		} else if (op == MOp::Delete) {
			std::string v = value_for(k, b.vlen);
			u.bytes.assign(c.entry_size, 0);
			auto *e = reinterpret_cast<xkv_entry *>(u.bytes.data());
			e->wtime_ns = xkv_now_ns();
			e->len = b.vlen;
			e->klen = b.klen;
			memcpy(e->data, v.data(), b.vlen);
		}
		undo->push_back(std::move(u));
	}
	return "";
}

/* Put the store back as it was before request u ran (untimed). */
std::string m_restore(MStore &b, MOp op, const MUndo &u)
{
	if (u.slot) {
		memcpy(u.slot, u.bytes.data(), u.bytes.size());
		return "";
	}
	if (op == MOp::SetNew) {
		if (bpf_map_delete_elem(b.store.store_fd, u.packed.data()))
			return b.layout + ": undoing set_new of " + key_text(u.key, b.klen) + ": " +
			       strerror(errno);
		return "";
	}
	int r = b.L->set(&b.store, key_text(u.key, b.klen).data(), b.klen,
			 reinterpret_cast<const xkv_entry *>(u.bytes.data()));
	if (r)
		return b.layout + ": undoing delete of " + key_text(u.key, b.klen) + ": " + strerror(-r);
	return "";
}

struct MCell {
	std::string layout;
	MOp op;
	uint32_t klen, vlen, fill;
};

std::string m_cell_name(const MCell &c)
{
	return "matrix/" + std::string(kMOpNames[(int)c.op]) + "/" + c.layout + "/k" +
	       std::to_string(c.klen) + "/v" + std::to_string(c.vlen) + "/fill" + std::to_string(c.fill);
}

/* Every request once through the layout (undone after each if it mutates)
 * and through the null store, replies compared with the protocol. */
std::string m_validate(MStore &b, int null_fd, const MCell &c, const std::vector<Req> &reqs,
		       const std::vector<MUndo> &undo)
{
	std::vector<uint8_t> out(kOutMax);
	for (int pass = 0; pass < 2; pass++) {
		bool null_store = pass == 1;
		for (size_t i = 0; i < reqs.size(); i++) {
			const Req &r = reqs[i];
			Run res = test_run(null_store ? null_fd : b.prog_fd, r, out.data());
			std::string where = std::string(null_store ? "null" : b.layout.c_str()) + " " +
					    kMOpNames[(int)c.op] + " " + key_text(r.key, c.klen) + ": ";
			if (res.err)
				return where + "BPF_PROG_TEST_RUN failed: " + strerror(-res.err);
			if (res.retval != XDP_TX)
				return where + "action " + std::to_string(res.retval) + ", want XDP_TX";
			std::string e = check_reply(out.data(), res.size, r,
						    m_want(c.op, r.key, c.klen, c.vlen, null_store));
			if (e.empty() && !null_store && m_mutates(c.op))
				e = m_restore(b, c.op, undo[i]);
			if (!e.empty())
				return where + e;
			g_validated++;
		}
	}
	return "";
}

void bm_matrix(benchmark::State &st, const MCell &c)
{
	pin(0);
	MStore *b = m_store(c.layout, c.klen, c.vlen);
	MNull *nb = m_null(c.klen, c.vlen);
	std::string e = !b->err.empty() ? b->err : nb->err;
	if (e.empty())
		e = m_set_fill(*b, (uint32_t)((uint64_t)mopt.capacity * c.fill / 100));
	std::vector<uint32_t> keys;
	std::vector<MUndo> undo;
	std::vector<Req> reqs;
	if (e.empty())
		e = m_pick_keys(*b, c.op, &keys);
	if (e.empty() && m_mutates(c.op))
		e = m_undo_prepare(*b, c.op, keys, &undo);
	for (uint32_t i = 0; e.empty() && i < keys.size(); i++)
		reqs.push_back(m_req(c.op, keys[i], (uint16_t)i, c.klen, c.vlen));
	int null_fd = c.op == MOp::GetMiss ? nb->miss_fd : nb->hit_fd;
	if (e.empty())
		e = m_validate(*b, null_fd, c, reqs, undo);
	if (!e.empty()) {
		fail(st, m_cell_name(c) + ": " + e);
		return;
	}

	Timer lt, nt;
	lt.ns.reserve(st.max_iterations);
	size_t n = reqs.size(), i = 0, first = 0;
	uint32_t k = 0;
	bool mut = m_mutates(c.op);
	for (auto _ : st) {
		const Req &r = reqs[i];
		Run res = test_run(b->prog_fd, r, nullptr);
		if (!timed_ok(res, r)) {
			fail(st, m_cell_name(c) + " " + key_text(r.key, c.klen) + ": action " +
				 std::to_string(res.retval) + ", " + std::to_string(res.size) +
				 " bytes while timing (validated before)");
			break;
		}
		st.SetIterationTime(res.ns * 1e-9);
		lt.add(res.ns);
		if (mut) {
			std::string re = m_restore(*b, c.op, undo[i]);
			if (!re.empty()) {
				fail(st, m_cell_name(c) + ": " + re);
				break;
			}
		}
		if (++i == n)
			i = 0;
		if (++k < kNullBlock)
			continue;
		/* the same requests again, through the null store */
		k = 0;
		for (uint32_t j = 0; j < kNullBlock; j++) {
			const Req &q = reqs[(first + j) % n];
			Run nr = test_run(null_fd, q, nullptr);
			if (!timed_ok(nr, q)) {
				fail(st, m_cell_name(c) + ": null store: action " + std::to_string(nr.retval) +
					 ", " + std::to_string(nr.size) + " bytes while timing");
				return;
			}
			nt.add(nr.ns);
		}
		first = i;
	}
	if (st.error_occurred())
		return;
	for (uint32_t j = 0; nt.ns.empty() && j < std::min<size_t>(n, kNullBlock); j++)
		nt.add(test_run(null_fd, reqs[j], nullptr).ns);

	double mean = lt.mean(), nmean = nt.mean(), p50 = lt.p50(), np50 = nt.p50();
	st.counters["ns_per_op"] = mean;
	st.counters["p50_ns"] = p50;
	st.counters["null_ns"] = nmean;
	st.counters["null_p50_ns"] = np50;
	st.counters["x_null"] = nmean > 0 ? mean / nmean : 0;
	st.counters["x_null_p50"] = np50 > 0 ? p50 / np50 : 0;
	st.counters["live_items"] = (double)b->live;
	st.counters["fill_items"] = (double)b->filled;
	st.counters["capacity"] = (double)mopt.capacity;
}

void register_matrix()
{
	for (const std::string &l : mopt.layouts)
		for (uint32_t klen : mopt.key_sizes)
			for (uint32_t vlen : mopt.value_sizes)
				for (uint32_t fill : mopt.fills)
					for (MOp op : mopt.ops) {
						MCell c{l, op, klen, vlen, fill};
						auto *bm = benchmark::RegisterBenchmark(
							m_cell_name(c).c_str(),
							[c](benchmark::State &st) { bm_matrix(st, c); });
						bm->UseManualTime()->Iterations(mopt.iters);
					}
}

const char *const kLayouts[] = {"null", "null_nochecks", "hash_map", "hash_map_nochecks",
				"array_fnv", "array_fnv_unseeded", "lru", "lru_no_common_lru", "percpu",
				"lru_percpu", "set_assoc", "sieve", "s3fifo",
#ifdef XKV_HAVE_ARENA
				"arena",
#endif
};

void register_all()
{
	benchmark::RegisterBenchmark("harness/xdp_pass", bm_harness)->UseManualTime();
	/* gets first: lru sets evict, and gets need their keys.  One thread,
	 * then 2 … g_max_threads threads with disjoint keys (OP/LAYOUT/threads:N)
	 * and with shared keys (OP_shared/LAYOUT/threads:N). */
	for (Op op : {Op::Get, Op::Set})
		for (uint32_t threads = 1; threads <= g_max_threads; threads++)
			for (Keys keys : {Keys::Disjoint, Keys::Shared}) {
				if (threads == 1 && keys == Keys::Shared)
					continue; /* the same as disjoint */
				for (const char *l : kLayouts) {
					std::string name = std::string(op_name(op)) +
							   (keys == Keys::Shared ? "_shared/" : "/") + l;
					auto *bm = benchmark::RegisterBenchmark(
						name.c_str(),
						[l, op, keys](benchmark::State &st) { bm_op(st, l, op, keys); });
					bm->UseManualTime();
					if (threads > 1)
						bm->Threads((int)threads);
				}
			}
}

bool parse_u32(const char *arg, const char *flag, uint32_t *v, unsigned long min = 1)
{
	size_t n = strlen(flag);
	if (strncmp(arg, flag, n) || arg[n] != '=')
		return false;
	char *end;
	unsigned long x = strtoul(arg + n + 1, &end, 0);
	if (*end || x < min || x > (1ul << 26)) {
		fprintf(stderr, "microbench: bad value in %s\n", arg);
		exit(2);
	}
	*v = (uint32_t)x;
	return true;
}

/* "--flag=a,b,c" -> its items; false if arg is not this flag. */
bool parse_list(const char *arg, const char *flag, std::vector<std::string> *items)
{
	size_t n = strlen(flag);
	if (strncmp(arg, flag, n) || arg[n] != '=')
		return false;
	items->clear();
	std::string cur;
	for (const char *p = arg + n + 1;; p++) {
		if (*p == ',' || !*p) {
			if (cur.empty()) {
				fprintf(stderr, "microbench: empty item in %s\n", arg);
				exit(2);
			}
			items->push_back(cur);
			cur.clear();
			if (!*p)
				break;
		} else {
			cur += *p;
		}
	}
	return true;
}

bool parse_u32_list(const char *arg, const char *flag, std::vector<uint32_t> *v, unsigned long min,
		    unsigned long max)
{
	std::vector<std::string> items;
	if (!parse_list(arg, flag, &items))
		return false;
	v->clear();
	for (const std::string &it : items) {
		char *end;
		unsigned long x = strtoul(it.c_str(), &end, 10);
		if (*end || x < min || x > max) {
			fprintf(stderr, "microbench: %s: %s is not in %lu..%lu\n", flag, it.c_str(), min, max);
			exit(2);
		}
		v->push_back((uint32_t)x);
	}
	return true;
}

bool parse_matrix_flag(const char *arg)
{
	std::vector<std::string> items;
	if (parse_list(arg, "--xkv_ops", &items)) {
		mopt.ops.clear();
		for (const std::string &it : items) {
			size_t j = 0;
			while (j < 5 && it != kMOpNames[j])
				j++;
			if (j == 5) {
				fprintf(stderr, "microbench: --xkv_ops: unknown operation %s (get_hit, get_miss, "
						"set_new, set_overwrite, delete)\n", it.c_str());
				exit(2);
			}
			mopt.ops.push_back((MOp)j);
		}
		return true;
	}
	if (parse_list(arg, "--xkv_layouts", &items)) {
		for (const std::string &it : items)
			if (!xkv_layout_find(it.c_str())) {
				fprintf(stderr, "microbench: --xkv_layouts: unknown layout %s\n", it.c_str());
				exit(2);
			}
		mopt.layouts = items;
		return true;
	}
	return parse_u32_list(arg, "--xkv_key_sizes", &mopt.key_sizes, kKeyLen, XKV_KEY_MAX) ||
	       parse_u32_list(arg, "--xkv_value_sizes", &mopt.value_sizes, 1, 1024) ||
	       parse_u32_list(arg, "--xkv_fills", &mopt.fills, 1, 99) ||
	       parse_u32(arg, "--xkv_capacity", &mopt.capacity, 64) ||
	       parse_u32(arg, "--xkv_matrix_keys", &mopt.keys, kNullBlock) ||
	       parse_u32(arg, "--xkv_iters", &mopt.iters);
}

/* Our own flags, on lib/opts' parser: each is T_FLAG, its value checked by
 * the functions above as "--name=value" (their messages); only that form
 * (values_joined); everything else stays in argv for Google Benchmark. */
enum { T_FLAG = XO_EXT };

int own_flag(const char *ctx, const struct xo *o, const char *arg, void *field)
{
	(void)ctx, (void)field;
	if (!arg) { /* --xkv_verbose */
		opt.verbose = true;
		return 0;
	}
	std::string a = std::string("--") + o->name + "=" + arg;
	const char *s = a.c_str();
	if (parse_matrix_flag(s) || parse_u32(s, "--xkv_entries", &opt.entries) ||
	    parse_u32(s, "--xkv_cpu", &opt.cpu, 0) || parse_u32(s, "--xkv_max_threads", &g_max_threads) ||
	    parse_u32(s, "--xkv_keys", &opt.keys))
		return 0;
	return -1;
}

#define MB_FLAG(name, meta) {name, 0, T_FLAG, 0, meta, NULL, 0, 0, NULL, 0}
const struct xo kFlags[] = {
	MB_FLAG("xkv_entries", "N"), MB_FLAG("xkv_keys", "N"), MB_FLAG("xkv_cpu", "N"), MB_FLAG("xkv_max_threads", "N"),
	{"xkv_verbose", 0, T_FLAG, 0, NULL, NULL, 0, 0, NULL, XO_NOVAL},
	MB_FLAG("xkv_layouts", "LIST"), MB_FLAG("xkv_ops", "LIST"), MB_FLAG("xkv_key_sizes", "LIST"), MB_FLAG("xkv_value_sizes", "LIST"),
	MB_FLAG("xkv_fills", "LIST"), MB_FLAG("xkv_capacity", "N"), MB_FLAG("xkv_matrix_keys", "N"), MB_FLAG("xkv_iters", "N"),
	XO_END,
};

/* Takes our own --xkv_* flags out of argv; the rest is Google Benchmark's. */
void parse_args(int *argc, char **argv)
{
	static const struct xo_ext own[] = {{T_FLAG, own_flag}, {0, NULL}};
	struct xo_parser p = {};
	p.ext = own;
	p.values_joined = true;
	p.no_end_marker = true;
	p.pass_unknown = true;
	struct xo_set set = {kFlags, NULL};
	g_max_threads = (uint32_t)std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
	int o = xo_parse(&p, *argc - 1, argv + 1, &set, 1, false, "microbench");
	if (o < 0)
		exit(2);
	o++; /* argv[0] */
	for (int i = 1; i < o; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			fprintf(stderr,
				"microbench [--xkv_entries=N (default 1048576)] [--xkv_keys=N (default 4096)]\n"
				"           [--xkv_cpu=N (default 0)] [--xkv_max_threads=N (default: CPUs online)]\n"
				"           [--xkv_verbose] [Google Benchmark flags]\n"
				"matrix (benchmarks matrix/<op>/<layout>/k<K>/v<V>/fill<F>; defaults = the full matrix):\n"
				"           [--xkv_layouts=hash_map,array_fnv,lru,percpu,lru_percpu,set_assoc,sieve,s3fifo]\n"
				"           [--xkv_ops=get_hit,get_miss,set_new,set_overwrite,delete]\n"
				"           [--xkv_key_sizes=16,64,128,250] [--xkv_value_sizes=32,128,512,1024]\n"
				"           [--xkv_fills=10,50,95 (%% of capacity)] [--xkv_capacity=262144]\n"
				"           [--xkv_matrix_keys=2048 (per cell)] [--xkv_iters=16384 (per cell)]\n");
	*argc = o;
	for (uint32_t k : mopt.key_sizes)
		for (uint32_t v : mopt.value_sizes)
			if (k + v + 40 > XKV_DGRAM_TEXT) {
				fprintf(stderr, "microbench: key %u + value %u bytes: a get reply would not fit "
						"one datagram\n", k, v);
				exit(2);
			}
	if ((uint64_t)mopt.keys > (uint64_t)mopt.capacity * *std::min_element(mopt.fills.begin(), mopt.fills.end()) / 100 / 2 &&
	    std::find(mopt.ops.begin(), mopt.ops.end(), MOp::GetHit) != mopt.ops.end()) {
		fprintf(stderr, "microbench: --xkv_matrix_keys %u is more than half the items at fill %u%% "
				"of --xkv_capacity %u\n", mopt.keys, mopt.fills[0], mopt.capacity);
		exit(2);
	}
	if ((uint64_t)opt.keys * g_max_threads > opt.entries) {
		fprintf(stderr, "microbench: %u threads x --xkv_keys %u exceeds --xkv_entries %u\n",
			g_max_threads, opt.keys, opt.entries);
		exit(2);
	}
}

} // namespace

int main(int argc, char **argv)
{
	parse_args(&argc, argv);
	if (geteuid() != 0) {
		fprintf(stderr, "microbench: needs root (BPF_PROG_TEST_RUN and map creation); skipped\n");
		return 77;
	}
	xkv_log_set_verbose(opt.verbose); /* libbpf: its warnings, or all with -v */
	xkv_log_libbpf();
	benchmark::AddCustomContext("xkv_entries", std::to_string(opt.entries));
	benchmark::AddCustomContext("xkv_keys", std::to_string(opt.keys));
	benchmark::AddCustomContext("xkv_key_bytes", std::to_string(kKeyLen));
	benchmark::AddCustomContext("xkv_value_bytes", std::to_string(kValLen));
	benchmark::AddCustomContext("xkv_timing", "BPF_PROG_TEST_RUN repeat=1, kernel duration per run");
	benchmark::AddCustomContext("xkv_capacity", std::to_string(mopt.capacity));
	benchmark::AddCustomContext("xkv_matrix_keys", std::to_string(mopt.keys));
	benchmark::AddCustomContext("xkv_iters", std::to_string(mopt.iters));
	register_all();
	register_matrix();
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 2;
	pin(0);
	size_t ran = benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	close_benches();
	m_close_store();
	fprintf(stderr, "# %zu benchmarks, %lu replies validated%s\n", ran, g_validated.load(),
		g_failed ? ", FAILED" : "");
	if (g_failed)
		return 1;
	if (!ran) {
		fprintf(stderr, "microbench: no benchmark matched the filter\n");
		return 1;
	}
	return 0;
}
