// SPDX-License-Identifier: MIT
/* The operation benchmarks (get_hit/, bin_get_hit/, set/, their _shared/ forms and
 * harness/): validate every request once, then time single requests of the
 * layout interleaved with blocks of the null store; report ns and x_null. */
#include "mb.h"

namespace mb {

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
static std::string validate(const Bench &b, int prog_fd, bool null_store, const std::vector<const Req *> &reqs,
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
		std::string want = want_text(op, r.key, null_store), e;
		if (op == Op::BinGet)
			e = take_cas(out.data(), res.size, &want);
		if (e.empty())
			e = check_reply(out.data(), res.size, r, want);
		if (!e.empty())
			return where + e;
		g_validated++;
	}
	return "";
}

/* After the null store answered a set of key: its entry_sink copy on this
 * CPU holds that set's value (the floor copies the value as the layouts do,
 * null_store.bpf.c).  Empty or what is wrong. */
static std::string check_null_sink(const Bench &nb, const Bench &b, uint32_t key)
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
static bool passed_busy(const Bench &b, const Run &res, Op op, Keys keys)
{
	bool neighbours = !b.null_store && !strcmp(b.store.cfg.layout, "arena");
	return !res.err && res.retval == XDP_PASS && op == Op::Set && (keys == Keys::Shared || neighbours);
}

/* kNullBlock requests from reqs[first] on (cyclically) through the null
 * store, timed into nt.  False (and the benchmark failed) on a wrong reply. */
static bool null_block(benchmark::State &st, int null_fd, const std::vector<const Req *> &reqs, size_t first,
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

static void bm_op(benchmark::State &st, const std::string &layout, Op op, Keys keys)
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
	const std::vector<Req> &all = op == Op::Get ? b->get : op == Op::BinGet ? b->bin_get : b->set;
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
	if (e.empty() && validates && op != Op::Set && !b->null_store) {
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
static int pass_prog_fd()
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

static void bm_harness(benchmark::State &st)
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

const char *const kLayouts[] = {"null", "null_nochecks", "hash_map", "hash_map_nochecks",
				"array_fnv", "array_fnv_unseeded", "lru", "lru_no_common_lru", "percpu",
				"lru_percpu", "set_assoc", "sieve", "s3fifo",
#ifdef XKV_HAVE_ARENA
				"arena",
#endif
};

/* A layout this kernel cannot hold (its map refused: arena where BPF arenas
 * are missing or not permitted) is not measured: one SKIP line says why. */
static bool kernel_holds(const char *l)
{
	const struct xkv_layout *L = xkv_layout_find(l);
	char why[200];
	if (!L || xkv_layout_probe(L, why, sizeof(why)) != 0)
		return true;
	fprintf(stderr, "SKIP %s: not available on this kernel: %s\n", l, why); /* stdout: JSON */
	return false;
}

void register_all()
{
	std::vector<const char *> layouts;
	for (const char *l : kLayouts)
		if (kernel_holds(l))
			layouts.push_back(l);
	benchmark::RegisterBenchmark("harness/xdp_pass", bm_harness)->UseManualTime();
	/* gets first (text, then binary): lru sets evict, and gets need their
	 * keys.  One thread, then 2 … g_max_threads threads with disjoint keys
	 * (OP/LAYOUT/threads:N) and with shared keys (OP_shared/LAYOUT/threads:N). */
	for (Op op : {Op::Get, Op::BinGet, Op::Set})
		for (uint32_t threads = 1; threads <= g_max_threads; threads++)
			for (Keys keys : {Keys::Disjoint, Keys::Shared}) {
				if (threads == 1 && keys == Keys::Shared)
					continue; /* the same as disjoint */
				for (const char *l : layouts) {
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

} // namespace mb
