/* SPDX-License-Identifier: MIT */
/* The command line: one table of options (name, argument, help) drives both
 * --help and lib/opts' parser (getopt_long's forms: abbreviations, --x=v and
 * --x v); every value is checked here with a message naming the option. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg.h"
#include "loadgen.h"
#include "opts.h"

enum {
	O_SERVER = 1000, O_PORT, O_PROTO, O_THREADS, O_CPUS, O_DEPTH, O_CONNS, O_RATE,
	O_KEYS, O_DIST, O_KEY_SIZE, O_VALUE_SIZE, O_VALUE_DIST, O_WRITE, O_SCAN, O_SCAN_LEN,
	O_TIMEOUT, O_DURATION, O_WARMUP, O_REQUESTS, O_PRELOAD, O_VERIFY_ONLY, O_JSON,
	O_QUIET, O_SPIN, O_ECHO, O_KSTAMP, O_PROGRESS, O_SEED, O_DUMP, O_WORKLOAD, O_HELP,
};

struct opt {
	const char *name, *arg, *help;
	int id;
};

static const struct opt opts[] = {
	{ "server", "HOST", "server address (default 127.0.0.1)", O_SERVER },
	{ "port", "PORT", "server port (default 11211, Redis 6379)", O_PORT },
	{ "proto", "P", "mc-udp (default), mc-tcp or redis", O_PROTO },
	{ "threads", "N", "client threads (default 1)", O_THREADS },
	{ "cpus", "LIST", "pin thread i to the i-th CPU of LIST (e.g. 0 or 0,1 or 0-3)", O_CPUS },
	{ "depth", "N", "requests in flight per thread (default 16; open loop: the cap, 1024)", O_DEPTH },
	{ "conns", "N", "TCP connections per thread; --depth is pipelined over them (default 1)", O_CONNS },
	{ "rate", "R", "open loop: R requests/s in total, Poisson arrivals (default: closed loop)", O_RATE },
	{ "keys", "N", "key space: keys 0 .. N-1 (default 1000000)", O_KEYS },
	{ "dist", "D", "uniform (default) or zipf:THETA (0 < THETA < 1, e.g. zipf:0.99)", O_DIST },
	{ "key-size", "K", "key bytes, 16..250 (default 16), as `xdpkv load --generate`", O_KEY_SIZE },
	{ "value-size", "V", "value bytes, 32..1024 (default 128)", O_VALUE_SIZE },
	{ "value-dist", "D", "mixed:V1,V2,... one size chosen uniformly per write", O_VALUE_DIST },
	{ "write-ratio", "P", "percent of requests that are sets (default 10)", O_WRITE },
	{ "scan-ratio", "P", "percent of requests that are scans (default 0)", O_SCAN },
	{ "scan-len", "L", "keys per scan, one multi-key get (default 100)", O_SCAN_LEN },
	{ "timeout-ms", "T", "UDP: a request without reply after T ms is a timeout (default 100);"
			     " TCP: fatal (default 2000)", O_TIMEOUT },
	{ "duration", "S", "measure for S seconds (default 5)", O_DURATION },
	{ "warmup", "S", "run S seconds first, not measured (default 0)", O_WARMUP },
	{ "requests", "N", "measure N requests in total instead of a duration", O_REQUESTS },
	{ "preload", NULL, "set every key once (pipelined) before measuring", O_PRELOAD },
	{ "verify-only", NULL, "get every key once and check it, nothing else", O_VERIFY_ONLY },
	{ "json", NULL, "print one JSON object instead of the summary", O_JSON },
	{ "quiet", NULL, "no progress line", O_QUIET },
	{ "spin", NULL, "UDP: poll the socket without sleeping, so a reply's time is taken when it "
			"arrives, not when the client wakes up (one CPU busy)", O_SPIN },
	{ "echo", NULL, "UDP: a datagram carrying a request's id answers it, unparsed (a reflector "
			"that sends the request back: the testbed's own latency)", O_ECHO },
	{ "kernel-stamps", NULL, "UDP: a reply's time is when the client's network stack received "
				 "it (SO_TIMESTAMPNS), not when the client read it", O_KSTAMP },
	{ "progress", NULL, "progress line on stderr even if it is not a terminal", O_PROGRESS },
	{ "seed", "S", "random seed (default 1)", O_SEED },
	{ "dump-key-histogram", "N", "draw N keys, print the hottest keys as JSON, exit", O_DUMP },
	{ "workload", "W", "key and value sizes: fixed (default: --key-size, --value-size), etc "
			   "(Facebook ETC, SIGMETRICS'12) or twitter (Twitter clusters, OSDI'20); "
			   "each key's sizes follow from its id (docs/compare.md)", O_WORKLOAD },
	{ "help", NULL, "this text", O_HELP },
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: xkv-loadgen [OPTIONS]\n"
		   "Drive a memcached-protocol (UDP or TCP) or Redis server with self-checking\n"
		   "values; report throughput, latency percentiles and errors.\n\n");
	for (size_t i = 0; i < NOPTS; i++) {
		char lhs[64];
		snprintf(lhs, sizeof(lhs), "--%s%s%s", opts[i].name, opts[i].arg ? " " : "",
			 opts[i].arg ? opts[i].arg : "");
		fprintf(f, "  %-26s %s\n", lhs, opts[i].help);
	}
	fprintf(f, "\nExit status: 0 ok, 1 run failed, 2 bad options, 3 wrong values were read.\n");
}

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "xkv-loadgen: --%s %s: %s (see --help)\n", opt, val, why);
	return -1;
}

static int parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		return bad(opt, s, "not a whole number");
	if (v < lo || v > hi) {
		char why[96];
		snprintf(why, sizeof(why), "must be %llu..%llu", (unsigned long long)lo,
			 (unsigned long long)hi);
		return bad(opt, s, why);
	}
	*out = v;
	return 0;
}

static int parse_uint(const char *opt, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	uint64_t v;
	if (parse_u64(opt, s, lo, hi, &v) < 0)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v))
		return bad(opt, s, "not a number");
	if (v < lo || v > hi) {
		char why[96];
		snprintf(why, sizeof(why), "must be %g..%g", lo, hi);
		return bad(opt, s, why);
	}
	*out = v;
	return 0;
}

static int parse_cpus(struct lg_config *c, const char *s)
{
	const char *p = s;

	c->ncpus = 0;
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b;
		if (end == p || a < 0 || a >= 1024)
			return bad("cpus", s, "expected a list like 0,1 or 0-3");
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a || b >= 1024)
				return bad("cpus", s, "expected a list like 0,1 or 0-3");
		}
		for (long i = a; i <= b; i++) {
			if (c->ncpus == LG_CPUS_MAX)
				return bad("cpus", s, "too many CPUs");
			c->cpus[c->ncpus++] = (unsigned)i;
		}
		if (*end == ',')
			end++;
		else if (*end)
			return bad("cpus", s, "expected a list like 0,1 or 0-3");
		p = end;
	}
	return c->ncpus ? 0 : bad("cpus", s, "empty list");
}

static int parse_dist(struct lg_config *c, const char *s)
{
	if (!strcmp(s, "uniform")) {
		c->dist = LG_UNIFORM;
		return 0;
	}
	if (strncmp(s, "zipf:", 5))
		return bad("dist", s, "expected uniform or zipf:THETA");
	if (parse_double("dist", s + 5, 0.01, 0.999, &c->theta) < 0)
		return -1;
	c->dist = LG_ZIPF;
	return 0;
}

static int parse_value_dist(struct lg_config *c, const char *s)
{
	char buf[256], *tok, *save;

	if (strncmp(s, "mixed:", 6) || strlen(s) >= sizeof(buf))
		return bad("value-dist", s, "expected mixed:V1,V2,...");
	strcpy(buf, s + 6);
	c->nvalues = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (c->nvalues == LG_VAL_CHOICES)
			return bad("value-dist", s, "at most 16 sizes");
		if (parse_uint("value-dist", tok, LG_VAL_MIN, LG_VAL_MAX, &c->values[c->nvalues]) < 0)
			return -1;
		c->nvalues++;
	}
	if (!c->nvalues)
		return bad("value-dist", s, "no sizes");
	c->mixed = true;
	return 0;
}

static int parse_proto(struct lg_config *c, const char *s)
{
	if (!strcmp(s, "mc-udp") || !strcmp(s, "udp"))
		c->proto = LG_MC_UDP;
	else if (!strcmp(s, "mc-tcp") || !strcmp(s, "tcp"))
		c->proto = LG_MC_TCP;
	else if (!strcmp(s, "redis"))
		c->proto = LG_REDIS;
	else
		return bad("proto", s, "expected mc-udp, mc-tcp or redis");
	return 0;
}

const char *lg_proto_name(enum lg_proto p)
{
	return p == LG_MC_UDP ? "mc-udp" : p == LG_MC_TCP ? "mc-tcp" : "redis";
}

static int resolve(struct lg_config *c)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC }, *ai;
	char port[16];
	int e;

	hints.ai_socktype = c->proto == LG_MC_UDP ? SOCK_DGRAM : SOCK_STREAM;
	snprintf(port, sizeof(port), "%u", c->port);
	e = getaddrinfo(c->server, port, &hints, &ai);
	if (e) {
		fprintf(stderr, "xkv-loadgen: --server %s: %s\n", c->server, gai_strerror(e));
		return -1;
	}
	memcpy(&c->addr, ai->ai_addr, ai->ai_addrlen);
	c->addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static int set_opt(struct lg_config *c, int id, const char *name, const char *a, const bool *seen)
{
	uint64_t ms;

	switch (id) {
	case O_SERVER: c->server = a; return 0;
	case O_PORT: return parse_uint(name, a, 1, 65535, &c->port);
	case O_PROTO: return parse_proto(c, a);
	case O_THREADS: return parse_uint(name, a, 1, 256, &c->threads);
	case O_CPUS: return parse_cpus(c, a);
	case O_DEPTH: return parse_uint(name, a, 1, 32768, &c->depth);
	case O_CONNS: return parse_uint(name, a, 1, 1024, &c->conns);
	case O_RATE: return parse_double(name, a, 1, 1e9, &c->rate);
	case O_KEYS: return parse_u64(name, a, 1, 1000000000000ULL, &c->keys);
	case O_DIST: return parse_dist(c, a);
	case O_KEY_SIZE: return parse_uint(name, a, LG_KEY_MIN, LG_KEY_MAX, &c->key_size);
	case O_VALUE_SIZE:
		c->nvalues = 1;
		return parse_uint(name, a, LG_VAL_MIN, LG_VAL_MAX, &c->values[0]);
	case O_VALUE_DIST: return parse_value_dist(c, a);
	case O_WRITE: return parse_double(name, a, 0, 100, &c->write_ratio);
	case O_SCAN: return parse_double(name, a, 0, 100, &c->scan_ratio);
	case O_SCAN_LEN: return parse_uint(name, a, 1, 10000, &c->scan_len);
	case O_TIMEOUT:
		if (parse_u64(name, a, 1, 600000, &ms) < 0)
			return -1;
		c->timeout_ms = (unsigned)ms;
		return 0;
	case O_DURATION: return parse_double(name, a, 0.001, 86400, &c->duration);
	case O_WARMUP: return parse_double(name, a, 0, 86400, &c->warmup);
	case O_REQUESTS: return parse_u64(name, a, 1, UINT64_MAX / 2, &c->requests);
	case O_PRELOAD: c->preload = true; return 0;
	case O_VERIFY_ONLY: c->verify_only = true; return 0;
	case O_JSON: c->json = true; return 0;
	case O_QUIET: c->quiet = true; return 0;
	case O_SPIN: c->spin = true; return 0;
	case O_ECHO: c->echo = true; return 0;
	case O_KSTAMP: c->kstamp = true; return 0;
	case O_PROGRESS: c->progress = true; return 0;
	case O_SEED: return parse_u64(name, a, 0, UINT64_MAX, &c->seed);
	case O_DUMP: return parse_u64(name, a, 1, 1000000000ULL, &c->dump_keys);
	case O_WORKLOAD:
		if (wl_parse(&c->wl, a, LG_KEY_MIN, LG_KEY_MAX, LG_VAL_MIN, LG_VAL_MAX) < 0)
			return bad(name, a, "expected fixed, etc or twitter");
		return 0;
	}
	(void)seen;
	return -1;
}

/* Combinations the options alone cannot check. */
static int check(struct lg_config *c, const bool *seen)
{
	char k[LG_KEY_MAX + 1];

	if (seen[O_VALUE_SIZE - O_SERVER] && seen[O_VALUE_DIST - O_SERVER]) {
		fprintf(stderr, "xkv-loadgen: --value-size and --value-dist exclude each other\n");
		return -1;
	}
	if (c->wl.kind != WL_FIXED) {
		if (seen[O_KEY_SIZE - O_SERVER] || seen[O_VALUE_SIZE - O_SERVER] ||
		    seen[O_VALUE_DIST - O_SERVER]) {
			fprintf(stderr, "xkv-loadgen: --workload %s sizes keys and values itself: "
				"no --key-size, --value-size or --value-dist\n", wl_name(c->wl.kind));
			return -1;
		}
		/* the worst case a request can be (lg_req_max) */
		c->key_size = LG_KEY_MAX;
		c->values[0] = LG_VAL_MAX;
		c->nvalues = 1;
	}
	if (c->write_ratio + c->scan_ratio > 100) {
		fprintf(stderr, "xkv-loadgen: --write-ratio + --scan-ratio exceed 100 %%\n");
		return -1;
	}
	if (lg_key(k, c->key_size, c->keys - 1) < 0) {
		fprintf(stderr, "xkv-loadgen: --keys %llu needs keys longer than --key-size %u\n",
			(unsigned long long)c->keys, c->key_size);
		return -1;
	}
	if (c->scan_ratio > 0 && c->scan_len > c->keys) {
		fprintf(stderr, "xkv-loadgen: --scan-len %u is larger than --keys\n", c->scan_len);
		return -1;
	}
	if (c->proto == LG_MC_UDP && lg_req_max(c) + 8 > LG_UDP_MAX) {
		fprintf(stderr, "xkv-loadgen: a scan of %u keys does not fit one UDP datagram\n",
			c->scan_len);
		return -1;
	}
	if (c->ncpus && c->ncpus < c->threads && c->ncpus != 1)
		fprintf(stderr, "xkv-loadgen: note: %u threads over %u CPUs, some share a CPU\n",
			c->threads, c->ncpus);
	return 0;
}

static void defaults(struct lg_config *c)
{
	memset(c, 0, sizeof(*c));
	c->server = "127.0.0.1";
	c->threads = 1;
	c->conns = 1;
	c->keys = 1000000;
	c->key_size = 16;
	c->values[0] = 128;
	c->nvalues = 1;
	c->write_ratio = 10;
	c->scan_len = 100;
	c->duration = 5;
	c->seed = 1;
}

/* lib/opts' rows for opts[], in the same order: every option is loadgen's
 * own type, T_OPT, parsed by set_opt (row i is opts[i]); one positional row
 * keeps the first stray argument, reported after the options as getopt did. */
enum { T_OPT = XO_EXT, T_STRAY };

static struct xo rows[NOPTS + 2];
static struct lg_config *cur;
static bool seen[O_HELP - O_SERVER + 1], help;
static const char *stray;

static int own(const char *ctx, const struct xo *r, const char *a, void *field)
{
	(void)ctx, (void)field;
	if (r->type == T_STRAY) {
		if (!stray)
			stray = a;
		return 0;
	}
	const struct opt *o = &opts[r - rows];
	if (o->id == O_HELP) {
		help = true;
		return -1; /* stop here: --help wins over what follows */
	}
	seen[o->id - O_SERVER] = true;
	return set_opt(cur, o->id, o->name, a, seen);
}

static const struct xo_ext own_types[] = { { T_OPT, own }, { T_STRAY, own }, { 0, NULL } };

/* 0 ok, 1 --help printed, -1 bad options (message printed). */
int lg_parse_opts(struct lg_config *c, int argc, char **argv)
{
	struct xo_parser p = { .ext = own_types, .quiet = true, .abbrev = true };

	defaults(c);
	cur = c;
	help = false;
	stray = NULL;
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < NOPTS; i++)
		rows[i] = (struct xo){ .name = opts[i].name, .type = T_OPT, .metavar = opts[i].arg,
				       .help = opts[i].help, .flags = opts[i].arg ? 0 : XO_NOVAL };
	rows[NOPTS] = (struct xo){ .name = "ARG", .type = T_STRAY, .flags = XO_POS };
	rows[NOPTS + 1] = (struct xo)XO_END;

	struct xo_set set = { rows, c };
	if (xo_parse(&p, argc - 1, argv + 1, &set, 1, false, "xkv-loadgen") < 0) {
		const char *at = argv[p.at + 1];
		if (help) {
			usage(stdout);
			return 1;
		}
		if (p.fail == XO_FAIL_UNKNOWN || p.fail == XO_FAIL_AMBIGUOUS)
			fprintf(stderr, "xkv-loadgen: unknown option %s (see --help)\n", at);
		else if (p.fail == XO_FAIL_FORM)
			fprintf(stderr, "xkv-loadgen: option %s needs a value (see --help)\n", at);
		else if (p.fail == XO_FAIL_UNEXPECTED)
			fprintf(stderr, "xkv-loadgen: unexpected argument '%s' (see --help)\n", stray);
		return -1;
	}
	if (stray) {
		fprintf(stderr, "xkv-loadgen: unexpected argument '%s' (see --help)\n", stray);
		return -1;
	}
	if (!seen[O_PORT - O_SERVER])
		c->port = c->proto == LG_REDIS ? 6379 : 11211;
	if (!seen[O_TIMEOUT - O_SERVER])
		c->timeout_ms = c->proto == LG_MC_UDP ? 100 : 2000;
	if (!seen[O_DEPTH - O_SERVER])
		c->depth = c->rate > 0 ? 1024 : 16;
	if (check(c, seen) < 0)
		return -1;
	if (c->dist == LG_ZIPF)
		lg_zipf_init(&c->zipf, c->keys, c->theta);
	if (!c->dump_keys && resolve(c) < 0)
		return -1;
	return 0;
}
