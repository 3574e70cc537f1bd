// SPDX-License-Identifier: MIT
/* xdpgen: measure an XDP memcached server's capacity from inside the kernel.
 *
 * The generator program (xdpgen.bpf.c) runs under BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES on the client's device and returns XDP_TX, which
 * live mode turns into a transmit out of that device; the server answers with
 * XDP_TX back to it, where the counter (count.bpf.c) classifies and drops the
 * replies.  Requests are pre-built frames in a table, in the order the key
 * distribution gives (README.md).
 *
 *   xdpgen DEV --dst-ip IP [--keys N] [--duration S] [--cpus LIST] ...
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
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

#include "xdpgen.h"
#include "lg.h"
#include "xdpgen.skel.h"
#include "xdpgen_count.skel.h"
#include "wire.h"
#include "fnv.h"
#include "loadgen.h"

#define XG_CPUS_MAX 64
#define XG_REPEAT (1u << 31) /* frames per test run call: the thread is interrupted long before */
#define XG_ENOTSUPP 524 /* the kernel's internal ENOTSUPP, as BPF returns it */

/* ---- options ------------------------------------------------------------ */

enum dist { DIST_UNIFORM, DIST_ZIPF };

struct opts {
	const char *dev;
	struct in_addr dst_ip, src_ip;
	bool have_dst_ip, have_src_ip, have_dst_mac;
	__u8 dst_mac[ETH_ALEN];
	unsigned port, src_port;
	unsigned key_size, value_size, value_seed;
	unsigned long long keys, key_base;
	enum dist dist;
	double theta, write_ratio;
	unsigned seq_len;
	double duration;
	int cpus[XG_CPUS_MAX];
	int ncpus;
	int server_cpus[XG_CPUS_MAX];
	int nserver;
	double rate;
	unsigned batch;
	unsigned long long seed;
	bool json, static_frame, verbose, no_csum;
};

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

static int parse_mac(const char *s, __u8 *mac)
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

static const struct option long_opts[] = {
	{ "dst-ip", required_argument, 0, O_DST_IP },
	{ "dst-mac", required_argument, 0, O_DST_MAC },
	{ "src-ip", required_argument, 0, O_SRC_IP },
	{ "port", required_argument, 0, O_PORT },
	{ "src-port", required_argument, 0, O_SRC_PORT },
	{ "keys", required_argument, 0, O_KEYS },
	{ "key-base", required_argument, 0, O_KEY_BASE },
	{ "key-size", required_argument, 0, O_KEY_SIZE },
	{ "value-size", required_argument, 0, O_VALUE_SIZE },
	{ "value-seed", required_argument, 0, O_VALUE_SEED },
	{ "dist", required_argument, 0, O_DIST },
	{ "theta", required_argument, 0, O_THETA },
	{ "write-ratio", required_argument, 0, O_WRITE_RATIO },
	{ "seq", required_argument, 0, O_SEQ },
	{ "seed", required_argument, 0, O_SEED },
	{ "duration", required_argument, 0, O_DURATION },
	{ "cpus", required_argument, 0, O_CPUS },
	{ "server-cpu", required_argument, 0, O_SERVER_CPU },
	{ "rate", required_argument, 0, O_RATE },
	{ "batch", required_argument, 0, O_BATCH },
	{ "json", no_argument, 0, O_JSON },
	{ "static-frame", no_argument, 0, O_STATIC },
	{ "no-csum", no_argument, 0, O_NO_CSUM },
	{ "verbose", no_argument, 0, 'v' },
	{ "help", no_argument, 0, 'h' },
	{ 0 },
};

static int parse_opt(int c, const char *arg, struct opts *o)
{
	unsigned u;
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
	default: usage(stderr); return -1;
	}
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){
		.port = XKV_DEFAULT_PORT, .src_port = 40000, .key_size = 16, .value_size = 64,
		.keys = 10000, .dist = DIST_UNIFORM, .theta = 0.99, .seq_len = 65536, .seed = 1,
		.duration = 5, .cpus = { 0 }, .ncpus = 1, .server_cpus = { 1 }, .nserver = 1, .batch = 64,
	};
	int c;
	while ((c = getopt_long(argc, argv, "vh", long_opts, NULL)) != -1)
		if (parse_opt(c, optarg, o))
			return -1;
	if (optind != argc - 1) {
		usage(stderr);
		return -1;
	}
	o->dev = argv[optind];
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

/* ---- the device --------------------------------------------------------- */

struct netinfo {
	int ifindex;
	unsigned mtu;
	__u8 mac[ETH_ALEN];
};

static int dev_info(const struct opts *o, struct netinfo *ni)
{
	struct ifreq ifr = { 0 };
	int fd, rc = -1;

	ni->ifindex = (int)if_nametoindex(o->dev);
	if (!ni->ifindex) {
		fprintf(stderr, "xdpgen: device %s not found in this network namespace "
				"(run xdpgen where DEV lives: nsenter --net=/run/netns/NS xdpgen ...)\n",
			o->dev);
		return -1;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("xdpgen: socket");
		return -1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", o->dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		fprintf(stderr, "xdpgen: %s: cannot read the MAC address: %s\n", o->dev, strerror(errno));
		goto out;
	}
	memcpy(ni->mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	if (ioctl(fd, SIOCGIFMTU, &ifr)) {
		fprintf(stderr, "xdpgen: %s: cannot read the MTU: %s\n", o->dev, strerror(errno));
		goto out;
	}
	ni->mtu = (unsigned)ifr.ifr_mtu;
	rc = 0;
out:
	close(fd);
	return rc;
}

static int src_ip_of(const char *dev, struct in_addr *ip)
{
	struct ifaddrs *ifa, *i;
	int rc = -1;

	if (getifaddrs(&ifa)) {
		perror("xdpgen: getifaddrs");
		return -1;
	}
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, dev)) {
			*ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			rc = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	if (rc)
		fprintf(stderr, "xdpgen: %s has no IPv4 address: give --src-ip\n", dev);
	return rc;
}

/* The ARP entry for ip on dev (/proc/net/arp of this namespace). */
static int arp_read(const char *dev, struct in_addr ip, __u8 *mac)
{
	char want[INET_ADDRSTRLEN], line[256], addr[64], hw[64], ifn[IFNAMSIZ + 8];
	unsigned type, flags;
	FILE *f = fopen("/proc/net/arp", "r");
	int rc = -1;

	inet_ntop(AF_INET, &ip, want, sizeof(want));
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%63s 0x%x 0x%x %63s %*s %23s", addr, &type, &flags, hw, ifn) != 5)
				continue;
			if (!strcmp(addr, want) && !strcmp(ifn, dev) && (flags & 0x2) && !parse_mac(hw, mac)) {
				rc = 0;
				break;
			}
		}
		fclose(f);
	}
	return rc;
}

/* Make the kernel resolve ip: one empty datagram to the discard port. */
static void arp_poke(const char *dev, struct in_addr ip)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = ip, .sin_port = htons(9) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev));
	sendto(fd, "", 0, 0, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
}

/* The server's MAC: its ARP entry on dev, resolved if need be (1 s). */
static int arp_lookup(const char *dev, struct in_addr ip, __u8 *mac)
{
	char want[INET_ADDRSTRLEN];

	for (int i = 0; i < 100; i++) {
		if (!arp_read(dev, ip, mac))
			return 0;
		if (i % 25 == 0)
			arp_poke(dev, ip);
		usleep(10000);
	}
	inet_ntop(AF_INET, &ip, want, sizeof(want));
	fprintf(stderr, "xdpgen: %s does not resolve to a MAC address on %s: give --dst-mac\n",
		want, dev);
	return -1;
}

/* ---- the request sequence ----------------------------------------------- */

static __u16 ip_csum(const void *hdr, unsigned len)
{
	const __u16 *w = hdr;
	__u32 s = 0;
	for (unsigned i = 0; i < len / 2; i++)
		s += w[i];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

struct frame_src {
	const __u8 *src_mac, *dst_mac;
	struct in_addr src_ip, dst_ip;
	unsigned src_port, port;
};

/* Build request i (key index k, set or get) into f; returns its length or -1. */
static int build_frame(struct xg_frame *f, const struct frame_src *fs, const struct opts *o,
		       unsigned i, __u64 k, bool set)
{
	__u8 *p = f->data;
	struct ethhdr *eth = (void *)p;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	struct xkv_udp_hdr *fh = (void *)(udp + 1);
	char *text = (char *)(fh + 1);
	char key[XKV_KEY_MAX + 1];
	size_t room = sizeof(f->data) - (size_t)(text - (char *)p);
	int n;

	memset(f, 0, sizeof(*f));
	if (xkv_gen_key(key, o->key_size, k) < 0)
		return -1;
	if (set) {
		n = snprintf(text, room, "set %s 0 0 %u\r\n", key, o->value_size);
		if (n < 0 || (size_t)n + o->value_size + 2 > room)
			return -1;
		xkv_gen_value(text + n, o->value_size, key, o->key_size, o->value_seed);
		n += (int)o->value_size;
		memcpy(text + n, "\r\n", 2);
		n += 2;
	} else {
		n = snprintf(text, room, "get %s\r\n", key);
		if (n < 0 || (size_t)n >= room)
			return -1;
	}
	unsigned udp_len = sizeof(*udp) + sizeof(*fh) + (unsigned)n;

	memcpy(eth->h_dest, fs->dst_mac, ETH_ALEN);
	memcpy(eth->h_source, fs->src_mac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons((__u16)(sizeof(*ip) + udp_len));
	ip->id = htons((__u16)i);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = fs->src_ip.s_addr;
	ip->daddr = fs->dst_ip.s_addr;
	ip->check = ip_csum(ip, sizeof(*ip));
	udp->source = htons((__u16)fs->src_port);
	udp->dest = htons((__u16)fs->port);
	udp->len = htons((__u16)udp_len);
	fh->req_id = htons((__u16)i);
	fh->seq = 0;
	fh->total = htons(1);
	fh->reserved = 0;
	udp->check = 0;
	if (!o->no_csum) { /* pseudo header + UDP header + payload, as a client's stack sends it */
		__u32 sum = 0;
		const __u8 *b = (const __u8 *)udp;
		for (unsigned j = 0; j + 1 < udp_len; j += 2)
			sum += (__u32)(b[j] | b[j + 1] << 8);
		if (udp_len & 1)
			sum += b[udp_len - 1];
		const __u16 *a = (const __u16 *)&ip->saddr;
		sum += a[0] + a[1] + a[2] + a[3] + htons(IPPROTO_UDP) + htons((__u16)udp_len);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		udp->check = (__u16)~sum ? (__u16)~sum : 0xffff;
	}
	f->len = (__u32)(sizeof(*eth) + sizeof(*ip) + udp_len);
	return (int)f->len;
}

/* Fill the table map with the sequence; *frame_max gets the longest frame,
 * *first a copy of it (the data_in of the test runs). */
static int fill_table(int map_fd, __u32 value_size, const struct frame_src *fs,
		      const struct opts *o, unsigned *nsets)
{
	struct xg_frame *f = calloc(1, sizeof(*f) > value_size ? sizeof(*f) : value_size);
	/* keys are drawn as the socket load generator draws them
	 * (bench/loadgen/keys.c): the same seed gives the same sequence */
	struct lg_zipf z = { 0 };
	struct lg_rng rs = { o->seed };
	int rc = -1;

	if (!f) {
		perror("xdpgen: the request table");
		return -1;
	}
	if (o->dist == DIST_ZIPF)
		lg_zipf_init(&z, o->keys, o->theta);
	*nsets = 0;
	for (unsigned i = 0; i < o->seq_len; i++) {
		__u64 k = o->dist == DIST_ZIPF ? lg_scramble(lg_zipf_rank(&z, &rs), o->keys)
					       : lg_rand(&rs) % o->keys;
		bool set = o->write_ratio > 0 && lg_rand01(&rs) < o->write_ratio;
		if (build_frame(f, fs, o, i, o->key_base + k, set) < 0) {
			fprintf(stderr, "xdpgen: request %u does not fit a frame\n", i);
			goto out;
		}
		if (bpf_map_update_elem(map_fd, &i, f, 0)) {
			fprintf(stderr, "xdpgen: filling the request table: %s\n", strerror(errno));
			goto out;
		}
		*nsets += set;
	}
	rc = 0;
out:
	free(f);
	return rc;
}

/* The longest request the options can produce: a set if there are any,
 * else a get of the longest key (all keys have key_size bytes). */
static unsigned longest_frame(const struct frame_src *fs, const struct opts *o, struct xg_frame *f)
{
	int n = build_frame(f, fs, o, 0, o->key_base, o->write_ratio > 0);
	return n < 0 ? 0 : (unsigned)n;
}

/* ---- per-CPU counters ----------------------------------------------------- */

static int ncpus_possible;

static int read_gen(int fd, struct xg_gen_state *sum)
{
	struct xg_gen_state v[ncpus_possible];
	__u32 zero = 0;
	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(fd, &zero, v))
		return -1;
	for (int c = 0; c < ncpus_possible; c++) {
		sum->sent += v[c].sent;
		sum->bad += v[c].bad;
	}
	return 0;
}

static int read_counts(int fd, struct xg_counts *sum)
{
	struct xg_counts v[ncpus_possible];
	__u32 zero = 0;
	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(fd, &zero, v))
		return -1;
	for (int c = 0; c < ncpus_possible; c++)
		for (int i = 0; i < XG_C__MAX; i++)
			sum->v[i] += v[c].v[i];
	return 0;
}

/* Spread the CPUs' starting points over the sequence, so threads do not send
 * the same requests in lockstep. */
static int init_positions(int fd, const struct opts *o)
{
	struct xg_gen_state v[ncpus_possible];
	__u32 zero = 0;
	memset(v, 0, sizeof(v));
	for (int t = 0; t < o->ncpus; t++)
		if (o->cpus[t] < ncpus_possible)
			v[o->cpus[t]].pos = (__u64)o->seq_len * (unsigned)t / (unsigned)o->ncpus;
	return bpf_map_update_elem(fd, &zero, v, 0);
}

/* ---- server CPU time ------------------------------------------------------ */

/* busy ticks (user+nice+system+irq+softirq+steal in /proc/stat) of each
 * of cpus[0..n-1] into busy[]; -1 where a CPU has no line.  Returns the sum,
 * or -1 when any CPU is missing. */
static long long cpu_busy_ticks(const int *cpus, int n, long long *busy)
{
	char line[512];
	unsigned long long u, ni, s, idle, iow, irq, sirq, steal;
	long long sum = 0;
	FILE *f = fopen("/proc/stat", "r");

	for (int i = 0; i < n; i++)
		busy[i] = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int cpu;
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &u, &ni, &s,
			   &idle, &iow, &irq, &sirq, &steal) != 9)
			continue;
		for (int i = 0; i < n; i++)
			if (cpus[i] == cpu)
				busy[i] = (long long)(u + ni + s + irq + sirq + steal);
	}
	fclose(f);
	for (int i = 0; i < n; i++) {
		if (busy[i] < 0)
			return -1;
		sum += busy[i];
	}
	return sum;
}

/* ---- XDP on the device ---------------------------------------------------- */

struct attach {
	int ifindex;
	int old_fd;   /* the program we replaced (-1: none) */
	int our_fd;
	bool attached;
};

static int count_attach(struct attach *a, int ifindex, int prog_fd, const char *dev)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	LIBBPF_OPTS(bpf_xdp_attach_opts, ao);
	__u32 flags = XDP_FLAGS_DRV_MODE;

	a->ifindex = ifindex;
	a->old_fd = -1;
	a->our_fd = prog_fd;
	if (bpf_xdp_query(ifindex, 0, &q)) {
		fprintf(stderr, "xdpgen: %s: cannot query XDP: %s\n", dev, strerror(errno));
		return -1;
	}
	if (q.attach_mode == XDP_ATTACHED_SKB || q.attach_mode == XDP_ATTACHED_HW ||
	    q.attach_mode == XDP_ATTACHED_MULTI) {
		fprintf(stderr, "xdpgen: %s has a generic/offloaded XDP program: the counter needs "
				"native mode alone (detach it first)\n", dev);
		return -1;
	}
	if (q.attach_mode == XDP_ATTACHED_DRV) {
		/* hold the old program: once replaced, nothing else might */
		a->old_fd = bpf_prog_get_fd_by_id(q.drv_prog_id);
		if (a->old_fd < 0) {
			fprintf(stderr, "xdpgen: %s: cannot get its XDP program %u: %s\n", dev,
				q.drv_prog_id, strerror(errno));
			return -1;
		}
		flags |= XDP_FLAGS_REPLACE;
		ao.old_prog_fd = a->old_fd;
	} else {
		flags |= XDP_FLAGS_UPDATE_IF_NOEXIST;
	}
	if (bpf_xdp_attach(ifindex, prog_fd, flags, &ao)) {
		fprintf(stderr, "xdpgen: %s: cannot attach the reply counter in native mode: %s\n",
			dev, strerror(errno));
		if (a->old_fd >= 0)
			close(a->old_fd);
		a->old_fd = -1;
		return -1;
	}
	a->attached = true;
	return 0;
}

/* Put back what was there (or nothing). */
static void count_detach(struct attach *a, const char *dev)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = a->our_fd);
	int err;

	if (!a->attached)
		return;
	if (a->old_fd >= 0)
		err = bpf_xdp_attach(a->ifindex, a->old_fd, XDP_FLAGS_DRV_MODE | XDP_FLAGS_REPLACE, &ao);
	else
		err = bpf_xdp_detach(a->ifindex, XDP_FLAGS_DRV_MODE, &ao);
	if (err)
		fprintf(stderr, "xdpgen: %s: could not restore its XDP program: %s\n", dev, strerror(errno));
	if (a->old_fd >= 0)
		close(a->old_fd);
	a->old_fd = -1;
	a->attached = false;
}

/* ---- generator threads ---------------------------------------------------- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

struct gen {
	pthread_t tid;
	int cpu;
	int prog_fd;
	int ifindex;
	const void *data_in;
	unsigned data_len;
	unsigned batch;
	int err;     /* errno of a failed call, 0 */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int test_run(const struct gen *g, unsigned repeat)
{
	/* the kernel wants data_end = the data size, data_meta and data 0 */
	struct xdp_md ctx = { .data_end = g->data_len, .ingress_ifindex = (__u32)g->ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = g->data_in,
		.data_size_in = g->data_len,
		.ctx_in = &ctx,
		.ctx_size_in = sizeof(ctx),
		.repeat = repeat,
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		.batch_size = g->batch);
	return bpf_prog_test_run_opts(g->prog_fd, &o) ? -errno : 0;
}

/* One long test run per thread: a call costs an RCU grace period or so (the
 * kernel sets up and tears down a page pool), so the thread makes one that
 * lasts until the main thread interrupts it with SIGUSR1 (the kernel checks
 * for signals between batches). */
static void *gen_main(void *arg)
{
	struct gen *g = arg;

	while (!stop) {
		int err = test_run(g, XG_REPEAT);
		if (err == -EINTR)
			continue;
		if (err) {
			g->err = -err;
			stop = 1;
			break;
		}
	}
	return NULL;
}

/* Interrupt the thread's test run until it has ended (a signal that lands
 * just before it enters the kernel is lost). */
static void gen_stop(struct gen *g)
{
	struct timespec ts;

	do {
		pthread_kill(g->tid, SIGUSR1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	} while (pthread_timedjoin_np(g->tid, NULL, &ts) == ETIMEDOUT);
}

static int gen_start(struct gen *g)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(g->cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	err = pthread_create(&g->tid, &attr, gen_main, g);
	pthread_attr_destroy(&attr);
	if (err)
		fprintf(stderr, "xdpgen: cannot start a thread on CPU %d: %s\n", g->cpu, strerror(err));
	return err ? -1 : 0;
}

static void explain_run_error(int err, const char *dev)
{
	if (err == EINVAL || err == EOPNOTSUPP || err == XG_ENOTSUPP)
		fprintf(stderr, "xdpgen: BPF_PROG_TEST_RUN with live frames failed (%s): the kernel "
				"needs BPF_F_TEST_XDP_LIVE_FRAMES (Linux 5.18+) and %s must accept "
				"XDP frames (ndo_xdp_xmit)\n", strerror(err), dev);
	else if (err == ENXIO || err == ENETDOWN)
		fprintf(stderr, "xdpgen: %s cannot transmit XDP frames (%s): is it up, and does "
				"its veth peer run a native XDP program?\n", dev, strerror(err));
	else
		fprintf(stderr, "xdpgen: BPF_PROG_TEST_RUN failed: %s\n", strerror(err));
}

/* ---- report --------------------------------------------------------------- */

struct result {
	double elapsed;
	unsigned long long sent, bad;
	struct xg_counts c;
	double busy_s;  /* server CPUs' busy seconds, summed; < 0: unknown */
	double cpu_busy_s[XG_CPUS_MAX];  /* each server CPU's */
	unsigned nsets;
};

static void report(const struct opts *o, const struct result *r)
{
	double sent_pps = r->sent / r->elapsed, reply_pps = r->c.v[XG_C_replies] / r->elapsed;
	double ratio = r->sent ? (double)r->c.v[XG_C_replies] / (double)r->sent : 0;
	double ns_per_reply = r->busy_s >= 0 && r->c.v[XG_C_replies]
				      ? r->busy_s * 1e9 / (double)r->c.v[XG_C_replies] : -1;
	char cpus[XG_CPUS_MAX * 4 + 1] = "", scpus[XG_CPUS_MAX * 4 + 1] = "";
	char spct[XG_CPUS_MAX * 8 + 1] = "";
	/* the mean over the server CPUs: 100 is every one of them busy all the time */
	double busy_pct = r->busy_s >= 0 ? 100 * r->busy_s / r->elapsed / o->nserver : -1;

	for (int i = 0; i < o->ncpus; i++)
		snprintf(cpus + strlen(cpus), sizeof(cpus) - strlen(cpus), "%s%d", i ? "," : "",
			 o->cpus[i]);
	for (int i = 0; i < o->nserver; i++) {
		snprintf(scpus + strlen(scpus), sizeof(scpus) - strlen(scpus), "%s%d", i ? "," : "",
			 o->server_cpus[i]);
		snprintf(spct + strlen(spct), sizeof(spct) - strlen(spct), "%s%.1f", i ? ", " : "",
			 r->busy_s >= 0 ? 100 * r->cpu_busy_s[i] / r->elapsed : -1);
	}
	if (o->json) {
		printf("{\"dev\": \"%s\", \"threads\": %d, \"cpus\": [%s], \"duration_s\": %.6f, "
		       "\"keys\": %llu, \"key_base\": %llu, \"key_size\": %u, \"value_size\": %u, "
		       "\"dist\": \"%s\", \"theta\": %g, \"write_ratio\": %g, \"seq\": %u, "
		       "\"seq_sets\": %u, \"rate\": %.0f, \"sent\": %llu, \"bad\": %llu",
		       o->dev, o->ncpus, cpus, r->elapsed, o->keys, o->key_base, o->key_size,
		       o->value_size, o->dist == DIST_ZIPF ? "zipf" : "uniform",
		       o->dist == DIST_ZIPF ? o->theta : 0, o->write_ratio, o->seq_len, r->nsets,
		       o->rate, r->sent, r->bad);
#define XG_JSON(n, h) printf(", \"%s\": %llu", #n, (unsigned long long)r->c.v[XG_C_##n]);
		XG_COUNT_LIST(XG_JSON)
#undef XG_JSON
		printf(", \"sent_pps\": %.0f, \"reply_pps\": %.0f, \"reply_ratio\": %.6f, "
		       "\"server_cpu\": %d, \"server_cpus\": [%s], \"server_busy_s\": %.3f, "
		       "\"server_busy_pct\": %.1f, \"server_busy_pct_per_cpu\": [%s], "
		       "\"server_ns_per_reply\": %.1f}\n",
		       sent_pps, reply_pps, ratio, o->server_cpus[0], scpus, r->busy_s, busy_pct, spct,
		       ns_per_reply);
		return;
	}
	printf("xdpgen %s: %d thread(s) on CPU %s, %.2f s, %llu keys from %llu (%s), %.0f%% sets\n",
	       o->dev, o->ncpus, cpus, r->elapsed, o->keys, o->key_base,
	       o->dist == DIST_ZIPF ? "zipf" : "uniform", 100.0 * r->nsets / o->seq_len);
	printf("sent     %12llu  %8.3f Mpps%s\n", r->sent, sent_pps / 1e6, r->bad ? "  (bad frames!)" : "");
	printf("replies  %12llu  %8.3f Mpps  (%.1f%% of sent)\n", (unsigned long long)r->c.v[XG_C_replies],
	       reply_pps / 1e6, 100 * ratio);
	printf("  hits %llu  misses %llu  stored %llu  errors %llu  echoes %llu  other %llu\n",
	       (unsigned long long)r->c.v[XG_C_hits], (unsigned long long)r->c.v[XG_C_misses],
	       (unsigned long long)r->c.v[XG_C_stored], (unsigned long long)r->c.v[XG_C_errors],
	       (unsigned long long)r->c.v[XG_C_echoes], (unsigned long long)r->c.v[XG_C_other]);
	if (r->busy_s >= 0)
		printf("server CPU %s busy %.2f s (%.0f%% per CPU: %s), %.0f ns per reply\n", scpus,
		       r->busy_s, busy_pct, spct, ns_per_reply);
}

/* ---- main ----------------------------------------------------------------- */

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
}

static void progress(double t0, double t, int gen_fd, int cnt_fd, struct xg_gen_state *g0,
		     struct xg_counts *c0, double *tp)
{
	struct xg_gen_state g;
	struct xg_counts c;
	if (read_gen(gen_fd, &g) || read_counts(cnt_fd, &c))
		return;
	double dt = t - *tp;
	fprintf(stderr, "\r%6.1f s  sent %7.3f Mpps  replies %7.3f Mpps ", t - t0,
		(double)(g.sent - g0->sent) / dt / 1e6,
		(double)(c.v[XG_C_replies] - c0->v[XG_C_replies]) / dt / 1e6);
	*g0 = g;
	*c0 = c;
	*tp = t;
}

static int run(const struct opts *o, struct xdpgen *gskel, struct xdpgen_count *cskel,
	       const struct netinfo *ni, const void *data_in, unsigned data_len, struct result *r)
{
	int gen_fd = bpf_map__fd(gskel->maps.state), cnt_fd = bpf_map__fd(cskel->maps.counts);
	int prog_fd = bpf_program__fd(gskel->progs.xdpgen);
	struct gen g[XG_CPUS_MAX] = { 0 };
	struct xg_gen_state gs0, gs1, gp;
	struct xg_counts c0, c1, cp;
	bool tty = isatty(STDERR_FILENO) && !o->json;
	int started = 0, rc = 0;

	/* one frame first: a clear error if live frames do not work here */
	g[0] = (struct gen){ .prog_fd = prog_fd, .ifindex = ni->ifindex, .data_in = data_in,
			     .data_len = data_len, .batch = o->batch };
	int err = test_run(&g[0], 1);
	if (err) {
		explain_run_error(-err, o->dev);
		return -1;
	}
	usleep(20000);

	if (read_gen(gen_fd, &gs0) || read_counts(cnt_fd, &c0)) {
		fprintf(stderr, "xdpgen: reading the counters: %s\n", strerror(errno));
		return -1;
	}
	long long bc0[XG_CPUS_MAX], bc1[XG_CPUS_MAX];
	long long b0 = cpu_busy_ticks(o->server_cpus, o->nserver, bc0);
	double t0 = now_s(), tp = t0;
	gp = gs0;
	cp = c0;
	for (int i = 0; i < o->ncpus; i++) {
		g[i] = (struct gen){ .cpu = o->cpus[i], .prog_fd = prog_fd, .ifindex = ni->ifindex,
				     .data_in = data_in, .data_len = data_len, .batch = o->batch };
		if (gen_start(&g[i])) {
			stop = 1;
			rc = -1;
			break;
		}
		started++;
	}
	double next_print = t0 + 1;
	while (!stop) {
		double t = now_s();
		if (t - t0 >= o->duration)
			break;
		if (tty && t >= next_print) {
			progress(t0, t, gen_fd, cnt_fd, &gp, &cp, &tp);
			next_print += 1;
		}
		double left = t0 + o->duration - t;
		usleep((useconds_t)(1e6 * (left < 0.1 ? left : 0.1)));
	}
	stop = 1;
	for (int i = 0; i < started; i++)
		gen_stop(&g[i]);
	r->elapsed = now_s() - t0;
	long long b1 = cpu_busy_ticks(o->server_cpus, o->nserver, bc1);
	if (tty)
		fprintf(stderr, "\n");
	/* replies still in flight */
	usleep(50000);
	if (read_gen(gen_fd, &gs1) || read_counts(cnt_fd, &c1)) {
		fprintf(stderr, "xdpgen: reading the counters: %s\n", strerror(errno));
		return -1;
	}
	for (int i = 0; i < started; i++) {
		if (g[i].err) {
			explain_run_error(g[i].err, o->dev);
			rc = -1;
		}
	}
	r->sent = gs1.sent - gs0.sent;
	r->bad = gs1.bad - gs0.bad;
	for (int i = 0; i < XG_C__MAX; i++)
		r->c.v[i] = c1.v[i] - c0.v[i];
	double hz = (double)sysconf(_SC_CLK_TCK);
	r->busy_s = b0 >= 0 && b1 >= 0 ? (double)(b1 - b0) / hz : -1;
	for (int i = 0; i < o->nserver; i++)
		r->cpu_busy_s[i] = r->busy_s >= 0 ? (double)(bc1[i] - bc0[i]) / hz : -1;
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct netinfo ni;
	struct frame_src fs;
	struct xdpgen *gskel = NULL;
	struct xdpgen_count *cskel = NULL;
	struct attach at = { .old_fd = -1 };
	struct xg_frame *first = NULL;
	struct result r = { 0 };
	int rc = 1;

	if (parse_args(argc, argv, &o))
		return 2;
	if (geteuid() != 0) {
		fprintf(stderr, "xdpgen: must run as root (BPF programs, XDP attach)\n");
		return 1;
	}
	libbpf_set_print(o.verbose ? libbpf_print : NULL);
	setrlimit(RLIMIT_MEMLOCK, &(struct rlimit){ RLIM_INFINITY, RLIM_INFINITY });
	ncpus_possible = libbpf_num_possible_cpus();
	if (ncpus_possible <= 0) {
		fprintf(stderr, "xdpgen: cannot count the possible CPUs\n");
		return 1;
	}

	if (dev_info(&o, &ni))
		return 1;
	if (!o.have_src_ip && src_ip_of(o.dev, &o.src_ip))
		return 1;
	if (!o.have_dst_mac && arp_lookup(o.dev, o.dst_ip, o.dst_mac))
		return 1;
	fs = (struct frame_src){ .src_mac = ni.mac, .dst_mac = o.dst_mac, .src_ip = o.src_ip,
				 .dst_ip = o.dst_ip, .src_port = o.src_port, .port = o.port };

	first = calloc(1, sizeof(*first));
	if (!first)
		return 1;
	unsigned frame_max = longest_frame(&fs, &o, first);
	if (!frame_max || frame_max > ni.mtu + ETH_HLEN) {
		fprintf(stderr, "xdpgen: a request frame of %u bytes does not fit %s (MTU %u): "
				"smaller --value-size\n", frame_max, o.dev, ni.mtu);
		goto out;
	}

	gskel = xdpgen__open();
	if (!gskel) {
		fprintf(stderr, "xdpgen: cannot open the generator program: %s\n", strerror(errno));
		goto out;
	}
	gskel->rodata->gcfg.nframes = o.seq_len;
	gskel->rodata->gcfg.frame_max = frame_max;
	gskel->rodata->gcfg.static_frame = o.static_frame;
	if (o.rate > 0)
		gskel->rodata->gcfg.interval_ns = (__u64)(1e9 * o.ncpus / o.rate);
	/* a batch's worth: it leaves as one burst anyway */
	gskel->rodata->gcfg.burst_ns = gskel->rodata->gcfg.interval_ns * o.batch;
	__u32 value_size = (XG_FRAME_OFF + frame_max + 7) & ~7u;
	if (bpf_map__set_max_entries(gskel->maps.table, o.seq_len) ||
	    bpf_map__set_value_size(gskel->maps.table, value_size)) {
		fprintf(stderr, "xdpgen: cannot size the request table\n");
		goto out;
	}
	if (xdpgen__load(gskel)) {
		fprintf(stderr, "xdpgen: cannot load the generator program: %s (-v for the "
				"verifier log)\n", strerror(errno));
		goto out;
	}
	if (fill_table(bpf_map__fd(gskel->maps.table), value_size, &fs, &o, &r.nsets))
		goto out; /* it said why */
	if (init_positions(bpf_map__fd(gskel->maps.state), &o)) {
		fprintf(stderr, "xdpgen: preparing the generator: %s\n", strerror(errno));
		goto out;
	}

	cskel = xdpgen_count__open();
	if (!cskel) {
		fprintf(stderr, "xdpgen: cannot open the reply counter: %s\n", strerror(errno));
		goto out;
	}
	cskel->rodata->ccfg.port = (__u16)o.port;
	if (xdpgen_count__load(cskel)) {
		fprintf(stderr, "xdpgen: cannot load the reply counter: %s\n", strerror(errno));
		goto out;
	}

	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (count_attach(&at, ni.ifindex, bpf_program__fd(cskel->progs.xdpgen_count), o.dev))
		goto out;

	if (run(&o, gskel, cskel, &ni, first->data, frame_max, &r) == 0) {
		report(&o, &r);
		rc = 0;
	}
out:
	count_detach(&at, o.dev);
	xdpgen_count__destroy(cskel);
	xdpgen__destroy(gskel);
	free(first);
	return rc;
}
