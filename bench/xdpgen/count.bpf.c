// SPDX-License-Identifier: MIT
/* The reply counter on the generator's device: counts every datagram from the
 * server port as a reply, classifies it per CPU (a memcached reply, or the
 * request itself sent back by a reflector) and drops it, so the client's
 * stack never sees them.  Everything else passes. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdpgen.h"

const volatile struct xg_count_cfg ccfg = { .port = 11211 };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xg_counts);
} counts SEC(".maps");

/* The reply text starts with the n bytes of lit. */
static __always_inline int starts(const __u8 *t, const void *end, const char *lit, __u32 n)
{
	if ((const void *)(t + n) > end)
		return 0;
#pragma unroll
	for (__u32 i = 0; i < 8; i++) {
		if (i >= n)
			break;
		if (t[i] != (__u8)lit[i])
			return 0;
	}
	return 1;
}
#define STARTS(t, end, s) starts(t, end, s, sizeof(s) - 1)

static __always_inline enum xg_count classify(const __u8 *t, const void *end)
{
	if (STARTS(t, end, "VALUE "))
		return XG_C_hits;
	if (STARTS(t, end, "END\r\n"))
		return XG_C_misses;
	if (STARTS(t, end, "STORED\r\n"))
		return XG_C_stored;
	if (STARTS(t, end, "ERROR") || STARTS(t, end, "CLIENT_E") || STARTS(t, end, "SERVER_E"))
		return XG_C_errors;
	/* a reflector (bench/reflector) sends the request back from the port */
	if (STARTS(t, end, "get ") || STARTS(t, end, "set "))
		return XG_C_echoes;
	return XG_C_other;
}

SEC("xdp")
int xdpgen_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u32 zero = 0;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5)
			return XDP_PASS;
		udp = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return XDP_PASS;
		udp = (void *)(ip6 + 1);
	} else {
		return XDP_PASS;
	}
	if ((void *)(udp + 1) > end || udp->source != bpf_htons(ccfg.port))
		return XDP_PASS;

	struct xg_counts *c = bpf_map_lookup_elem(&counts, &zero);
	if (!c)
		return XDP_PASS;
	c->v[XG_C_replies]++;
	/* text after the 8-byte memcached frame header */
	enum xg_count k = classify((const __u8 *)(udp + 1) + 8, end);
	if (k < XG_C__MAX)
		c->v[k]++;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
