// SPDX-License-Identifier: MIT
/* What the parts of microbench share: the constants, the options, the
 * requests and runs, the stores, and each file's functions the others call.
 *
 *   request.cc       frames (text and binary), expected replies, reply checks, one test run
 *   setup.cc         the operation benchmarks' stores, loaded once
 *   bench_op.cc      the operation benchmarks: validate, then time against the null store
 *   matrix_store.cc  the matrix's stores: load, fill, keys, undo
 *   matrix.cc        the matrix's requests, cells and their registration
 *   main.cc          the command line and main
 */
#ifndef XKV_BENCH_MICROBENCH_MB_H
#define XKV_BENCH_MICROBENCH_MB_H

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
#include "xdpkv.h"
#include "null_layout.h"
#include "array_fnv/slot.h"
#include "set_assoc/bucket.h"

namespace mb {

constexpr uint32_t kKeyLen = 16;       /* "key:%012u" */
constexpr uint32_t kValLen = 128;
constexpr uint16_t kClientPort = 40000;
constexpr uint32_t kNullBlock = 64;    /* null-store runs per block, interleaved */
constexpr uint32_t kOutMax = 4096;
/* Benchmarks run with 1 … g_max_threads threads (the CPUs online); key
 * sets are built for that many. */
extern uint32_t g_max_threads;
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
extern Options opt;

extern std::atomic<bool> g_failed;
extern std::atomic<unsigned long> g_validated;

/* Get: text "get <key>"; BinGet: memcached's binary get of the same key
 * (docs/protocol.md, "Binary protocol"), the same value in its reply. */
enum class Op { Get, Set, BinGet };

/* With more than one thread: each thread its own keys (disjoint), or every
 * thread the same keys (shared: the same bucket, slot, LRU node and cache
 * lines are hit by several CPUs at once). */
enum class Keys { Disjoint, Shared };

struct Req {
	uint32_t key;
	uint16_t req_id;
	uint32_t reply_len;        /* bytes of the reply frame */
	std::vector<uint8_t> pkt;
};

struct Run {
	int err;          /* 0 or -errno of the syscall */
	uint32_t retval;  /* XDP action */
	uint32_t size;    /* bytes of the resulting frame */
	uint32_t ns;      /* the kernel's duration of the one run */
};

struct Bench {
	std::string name;
	const xkv_layout *L = nullptr;
	bpf_object *obj = nullptr;
	int prog_fd = -1;
	bool null_store = false;
	xkv_store store{};
	long live = -1;                /* items the store holds after the preload */
	std::vector<uint32_t> keys;    /* request keys, all present after the preload */
	std::vector<Req> get, set, bin_get;
	std::string err;
};

extern std::mutex g_mu;
extern std::map<std::string, std::unique_ptr<Bench>> g_benches;

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
extern MatrixOptions mopt;

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

extern std::unique_ptr<MStore> g_mstore;
extern std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<MNull>> g_mnull;

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

/* request.cc */
const char *op_name(Op op);
std::string key_text(uint32_t k, uint32_t klen = kKeyLen);
std::string value_for(uint32_t k, uint32_t vlen = kValLen);
const std::string &null_value();
bool policy_as_attach(bpf_object *obj);
std::vector<uint8_t> make_packet(const std::string &text, uint16_t req_id);
std::string want_text(Op op, uint32_t key, bool null_store);
Req make_req(Op op, uint32_t key, uint16_t req_id);
std::string check_reply(const uint8_t *out, uint32_t n, const Req &r, const std::string &want);
std::string take_cas(const uint8_t *out, uint32_t n, std::string *want);
Run test_run(int prog_fd, const Req &r, uint8_t *out);

/* setup.cc */
double secs_since(std::chrono::steady_clock::time_point t0);
std::string store_keys(xkv_store &store, const std::string &name, const std::vector<uint32_t> &ks,
		       uint32_t klen = kKeyLen, uint32_t vlen = kValLen);
std::string store_keys(Bench &b, const std::vector<uint32_t> &ks);
void load(Bench &b);
Bench *get_bench(const std::string &name);
void close_benches();

/* bench_op.cc */
void fail(benchmark::State &st, const std::string &msg);
void pin(int thread);
bool timed_ok(const Run &res, const Req &r);
void register_all();

/* matrix_store.cc */
void m_close_store();
MNull *m_null(uint32_t klen, uint32_t vlen);
MStore *m_store(const std::string &layout, uint32_t klen, uint32_t vlen);
std::string m_set_fill(MStore &b, uint32_t items);
std::string m_pick_keys(MStore &b, MOp op, std::vector<uint32_t> *out);
std::string m_undo_prepare(MStore &b, MOp op, const std::vector<uint32_t> &keys,
			   std::vector<MUndo> *undo);
std::string m_restore(MStore &b, MOp op, const MUndo &u);

/* matrix.cc */
bool m_hit_op(MOp op);
void register_matrix();

} // namespace mb

#endif
