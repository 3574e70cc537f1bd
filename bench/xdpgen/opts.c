// SPDX-License-Identifier: MIT
/* xdpgen's command line: its options, their defaults, checks and --help. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xg.h"
#include "lg.h"
#include "wire.h"
#include "fnv.h"
#include "loadgen.h"
#include "opts.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xdpgen DEV --dst-ip IP [options]\n"
		"Send memcached get/set requests out of DEV from BPF_PROG_TEST_RUN (live frames),\n"
		"count and drop the replies on DEV, report rates.  Run it in DEV's namespace, as root.\n"
		"\n"
		"  --dst-ip IP          the server's IPv4 address (required)\n"
		"  --dst-mac MAC        the server's MAC (default: DEV's ARP entry for --dst-ip)\n"
		"  --src-ip IP          source address (default: DEV's first IPv4 address)\n"
		"  --port N             server UDP port (default 11211)\n"
		"  --src-port N         source UDP port (default 40000)\n"
		"  --keys N             number of keys (default 10000)\n"
		"  --key-base B         first key index (default 0): keys B .. B+N-1\n"
		"  --key-size K         key bytes, the 'xdpkv load --generate' rule (default 16)\n"
		"  --value-size V       value bytes of a set (default 64)\n"
		"  --value-seed S       seed of the set values' content (default 0)\n"
		"  --dist uniform|zipf  key distribution (default uniform)\n"
		"  --theta T            Zipf skew, 0 < T < 1 (default 0.99; YCSB scrambled Zipf)\n"
		"  --write-ratio P      share of sets, 0..1 (default 0)\n"
		"  --seq N              requests in the pre-built sequence (default 65536)\n"
		"  --seed N             random seed (default 1)\n"
		"  --duration S         seconds to run (default 5)\n"
		"  --cpus LIST          generator threads, one per CPU: 0 or 0,1 or 0-1 (default 0)\n"
		"  --server-cpu LIST    CPUs whose busy time is reported, summed: the server's\n"
		"                       cores (1, or 1-3 for three queues' NAPI threads; default 1)\n"
		"  --rate PPS           pace the generator to PPS frames/s in total (default: flat out)\n"
		"  --batch N            live-frames batch size, 1..256 (default 64)\n"
		"  --json               print the result as JSON\n"
		"  --static-frame       diagnostic: never rewrite the frame (shows page recycling)\n"
		"  --no-csum            send UDP checksum 0 (allowed over IPv4; default: a real checksum,\n"
		"                       as Linux clients send, which the server verifies)\n"
		"  -v, --verbose        libbpf messages\n");
}

static int parse_ull(const char *name, const char *s, unsigned long long lo,
		     unsigned long long hi, unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi) {
		fprintf(stderr, "xdpgen: %s: '%s' is not a number in %llu..%llu\n", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_uint(const char *name, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	unsigned long long v;
	if (parse_ull(name, s, lo, hi, &v))
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int parse_double(const char *name, const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "xdpgen: %s: '%s' is not a number in %g..%g\n", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int parse_mac(const char *s, __u8 *mac)
{
	unsigned b[ETH_ALEN];
	char tail;
	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return -1;
	for (int i = 0; i < ETH_ALEN; i++) {
		if (b[i] > 255)
			return -1;
		mac[i] = (__u8)b[i];
	}
	return 0;
}

/* "0", "0,1", "0-3", "0,2-3" into cpus[] (at most XG_CPUS_MAX) */
static int parse_cpus(const char *name, const char *s, int *cpus, int *ncpus)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	char *dup = strdup(s), *save = NULL, *tok;
	int rc = 0;

	if (!dup) {
		perror("xdpgen: strdup");
		return -1;
	}
	*ncpus = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned a, b;
		char tail;
		int n = sscanf(tok, "%u-%u%c", &a, &b, &tail);
		if (n == 1)
			b = a;
		if ((n != 1 && n != 2) || a > b || b >= (unsigned)ncpu) {
			fprintf(stderr, "xdpgen: %s: bad CPU list '%s' (CPUs 0..%ld)\n", name, s,
				ncpu - 1);
			rc = -1;
			break;
		}
		for (unsigned c = a; c <= b && *ncpus < XG_CPUS_MAX; c++)
			cpus[(*ncpus)++] = (int)c;
	}
	free(dup);
	if (!rc && !*ncpus) {
		fprintf(stderr, "xdpgen: %s: empty CPU list\n", name);
		rc = -1;
	}
	return rc;
}

enum {
	O_DST_IP = 256, O_DST_MAC, O_SRC_IP, O_PORT, O_SRC_PORT, O_KEYS, O_KEY_BASE, O_KEY_SIZE,
	O_VALUE_SIZE, O_VALUE_SEED, O_DIST, O_THETA, O_WRITE_RATIO, O_SEQ, O_SEED, O_DURATION,
	O_CPUS, O_SERVER_CPU, O_RATE, O_BATCH, O_JSON, O_STATIC, O_NO_CSUM,
};

/* name, takes a value, id, short letter; help is usage() */
static const struct {
	const char *name;
	bool arg;
	int id;
	char sh;
} xopts[] = {
	{ "dst-ip", true, O_DST_IP }, { "dst-mac", true, O_DST_MAC }, { "src-ip", true, O_SRC_IP },
	{ "port", true, O_PORT }, { "src-port", true, O_SRC_PORT }, { "keys", true, O_KEYS },
	{ "key-base", true, O_KEY_BASE }, { "key-size", true, O_KEY_SIZE },
	{ "value-size", true, O_VALUE_SIZE }, { "value-seed", true, O_VALUE_SEED },
	{ "dist", true, O_DIST }, { "theta", true, O_THETA }, { "write-ratio", true, O_WRITE_RATIO },
	{ "seq", true, O_SEQ }, { "seed", true, O_SEED }, { "duration", true, O_DURATION },
	{ "cpus", true, O_CPUS }, { "server-cpu", true, O_SERVER_CPU }, { "rate", true, O_RATE },
	{ "batch", true, O_BATCH }, { "json", false, O_JSON }, { "static-frame", false, O_STATIC },
	{ "no-csum", false, O_NO_CSUM }, { "verbose", false, 'v', 'v' }, { "help", false, 'h', 'h' },
};
#define NXOPTS (sizeof(xopts) / sizeof(xopts[0]))

static int parse_opt(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case O_DST_IP:
	case O_SRC_IP: {
		struct in_addr *a = c == O_DST_IP ? &o->dst_ip : &o->src_ip;
		if (inet_pton(AF_INET, arg, a) != 1) {
			fprintf(stderr, "xdpgen: '%s' is not an IPv4 address\n", arg);
			return -1;
		}
		*(c == O_DST_IP ? &o->have_dst_ip : &o->have_src_ip) = true;
		return 0;
	}
	case O_DST_MAC:
		if (parse_mac(arg, o->dst_mac)) {
			fprintf(stderr, "xdpgen: --dst-mac: '%s' is not a MAC address\n", arg);
			return -1;
		}
		o->have_dst_mac = true;
		return 0;
	case O_PORT: return parse_uint("--port", arg, 1, 65535, &o->port);
	case O_SRC_PORT: return parse_uint("--src-port", arg, 1, 65535, &o->src_port);
	case O_KEYS: return parse_ull("--keys", arg, 1, 1ULL << 40, &o->keys);
	case O_KEY_BASE: return parse_ull("--key-base", arg, 0, 1ULL << 60, &o->key_base);
	case O_KEY_SIZE: return parse_uint("--key-size", arg, 5, XKV_KEY_MAX, &o->key_size);
	case O_VALUE_SIZE: return parse_uint("--value-size", arg, 0, XG_FRAME_MAX, &o->value_size);
	case O_VALUE_SEED: return parse_uint("--value-seed", arg, 0, ~0u, &o->value_seed);
	case O_DIST:
		if (!strcmp(arg, "uniform"))
			o->dist = DIST_UNIFORM;
		else if (!strcmp(arg, "zipf"))
			o->dist = DIST_ZIPF;
		else {
			fprintf(stderr, "xdpgen: --dist: '%s': uniform or zipf\n", arg);
			return -1;
		}
		return 0;
	case O_THETA:
		if (parse_double("--theta", arg, 0, 1, &o->theta))
			return -1;
		if (o->theta <= 0 || o->theta >= 1) {
			fprintf(stderr, "xdpgen: --theta must be strictly between 0 and 1\n");
			return -1;
		}
		return 0;
	case O_WRITE_RATIO: return parse_double("--write-ratio", arg, 0, 1, &o->write_ratio);
	case O_SEQ: return parse_uint("--seq", arg, 1, 1u << 24, &o->seq_len);
	case O_SEED: return parse_ull("--seed", arg, 0, ~0ULL, &o->seed);
	case O_DURATION: return parse_double("--duration", arg, 0.01, 86400, &o->duration);
	case O_CPUS: return parse_cpus("--cpus", arg, o->cpus, &o->ncpus);
	case O_SERVER_CPU: return parse_cpus("--server-cpu", arg, o->server_cpus, &o->nserver);
	case O_RATE: return parse_double("--rate", arg, 1, 1e9, &o->rate);
	case O_BATCH: return parse_uint("--batch", arg, 1, 256, &o->batch);
	case O_JSON: o->json = true; return 0;
	case O_STATIC: o->static_frame = true; return 0;
	case O_NO_CSUM: o->no_csum = true; return 0;
	case 'v': o->verbose = true; return 0;
	case 'h': usage(stdout); exit(0);
	default: return -1;
	}
}

/* lib/opts' rows for xopts[], in the same order (row i is xopts[i]), each of
 * xdpgen's own type T_OPT (parse_opt), then DEV.  getopt_long's forms:
 * abbreviations, bundled -vh, --x=v and --x v. */
enum { T_OPT = XO_EXT };
static struct xo rows[NXOPTS + 2];

static int own(const char *ctx, const struct xo *r, const char *arg, void *field)
{
	(void)ctx;
	return parse_opt(xopts[r - rows].id, arg, field);
}

static const struct xo_ext own_types[] = { { T_OPT, own }, { 0, NULL } };

int parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){
		.port = XKV_DEFAULT_PORT, .src_port = 40000, .key_size = 16, .value_size = 64,
		.keys = 10000, .dist = DIST_UNIFORM, .theta = 0.99, .seq_len = 65536, .seed = 1,
		.duration = 5, .cpus = { 0 }, .ncpus = 1, .server_cpus = { 1 }, .nserver = 1, .batch = 64,
	};
	for (size_t i = 0; i < NXOPTS; i++)
		rows[i] = (struct xo){ .name = xopts[i].name, .sh = xopts[i].sh, .type = T_OPT,
				       .metavar = xopts[i].arg ? "V" : NULL,
				       .flags = xopts[i].arg ? 0 : XO_NOVAL };
	rows[NXOPTS] = (struct xo){ .name = "DEV", .type = XO_STR, .off = offsetof(struct opts, dev),
				    .flags = XO_POS | XO_REQ };
	rows[NXOPTS + 1] = (struct xo)XO_END;

	struct xo_parser p = { .ext = own_types, .quiet = true, .abbrev = true, .bundle = true };
	struct xo_set set = { rows, o };
	int npos = xo_parse(&p, argc - 1, argv + 1, &set, 1, false, "xdpgen");
	if (npos < 0) {
		const char *at = argv[p.at + 1];
		const char *eq = strchr(at, '=');
		if (p.fail == XO_FAIL_UNKNOWN && at[1] != '-')
			fprintf(stderr, "xdpgen: invalid option -- '%c'\n", at[1]);
		else if (p.fail == XO_FAIL_UNKNOWN)
			fprintf(stderr, "xdpgen: unrecognized option '%s'\n", at);
		else if (p.fail == XO_FAIL_AMBIGUOUS)
			fprintf(stderr, "xdpgen: option '%s' is ambiguous\n", at);
		else if (p.fail == XO_FAIL_FORM && eq)
			fprintf(stderr, "xdpgen: option '%.*s' doesn't allow an argument\n", (int)(eq - at), at);
		else if (p.fail == XO_FAIL_FORM)
			fprintf(stderr, "xdpgen: option '%s' requires an argument\n", at);
		if (p.fail != XO_FAIL_VALUE)
			usage(stderr);
		return -1;
	}
	if (npos != 1) {
		usage(stderr);
		return -1;
	}
	if (!o->have_dst_ip) {
		fprintf(stderr, "xdpgen: --dst-ip is required (the server's IPv4 address)\n");
		return -1;
	}
	if (xkv_gen_digits(o->key_base + o->keys - 1) > o->key_size - 4) {
		fprintf(stderr, "xdpgen: key index %llu needs more than %u digits (--key-size %u)\n",
			o->key_base + o->keys - 1, o->key_size - 4, o->key_size);
		return -1;
	}
	return 0;
}
