// SPDX-License-Identifier: MIT
/* In-kernel microbenchmark: ns per request of the XDP handler, run through
 * BPF_PROG_TEST_RUN, for every layout and for the null store (the same
 * handler with a store that costs nothing: the floor).
 *
 * Every benchmark first runs each of its request packets once and checks
 * the action and the reply bytes; any mismatch fails the benchmark (and the
 * process exits 1).  Only then does it time.  The time of one request is the
 * kernel's own `duration` of a run with repeat = 1 (see bench/README.md for why
 * not repeat > 1); null-store requests run in blocks between the layout's
 * so the ratio x_null compares numbers taken under the same conditions. */

/* microbench's command line (its --xkv_* flags on lib/opts; the rest
 * goes to Google Benchmark) and main: parse, register, run, summarise. */
#include "mb.h"
#include "opts.h"

namespace mb {

uint32_t g_max_threads = 1;
Options opt;
std::atomic<bool> g_failed{false};
std::atomic<unsigned long> g_validated{0};

static bool parse_u32(const char *arg, const char *flag, uint32_t *v, unsigned long min = 1)
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
static bool parse_list(const char *arg, const char *flag, std::vector<std::string> *items)
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

static bool parse_u32_list(const char *arg, const char *flag, std::vector<uint32_t> *v, unsigned long min,
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

static bool parse_matrix_flag(const char *arg)
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

static int own_flag(const char *ctx, const struct xo *o, const char *arg, void *field)
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
static void parse_args(int *argc, char **argv)
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

} // namespace mb

using namespace mb;

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
