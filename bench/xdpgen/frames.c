// SPDX-License-Identifier: MIT
/* xdpgen: the request sequence, pre-built Ethernet/IPv4/UDP frames in the
 * generator's table map, keys drawn as the socket load generator draws
 * them. */
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
int fill_table(int map_fd, __u32 value_size, const struct frame_src *fs,
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
unsigned longest_frame(const struct frame_src *fs, const struct opts *o, struct xg_frame *f)
{
	int n = build_frame(f, fs, o, 0, o->key_base, o->write_ratio > 0);
	return n < 0 ? 0 : (unsigned)n;
}
