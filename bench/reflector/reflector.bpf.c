// SPDX-License-Identifier: MIT
/* The ceiling of a capacity run (bench/capacity.sh): a bare XDP reflector.
 * A UDP datagram to the memcached port (IPv4 or IPv6) goes back where it came
 * from with its MACs, IP addresses and UDP ports swapped, and nothing else:
 * no parsing, no map, no reply text.  Swapping leaves both the IPv4 header
 * checksum and the UDP checksum valid (each is a sum over the swapped fields).
 * Everything else passes to the stack.
 *
 *   ip link set dev DEV xdpdrv obj reflector.bpf.o sec xdp
 *
 * The port is fixed at build time (-DXKV_REFLECT_PORT=N, default 11211). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#define SEC(name) __attribute__((section(name), used))

#ifndef XKV_REFLECT_PORT
#define XKV_REFLECT_PORT 11211
#endif

static __attribute__((always_inline)) void swap_bytes(void *a, void *b, unsigned n)
{
	__u8 t[16];
	__builtin_memcpy(t, a, n);
	__builtin_memcpy(a, b, n);
	__builtin_memcpy(b, t, n);
}

SEC("xdp")
int reflector(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5)
			return XDP_PASS;
		udp = (void *)ip + ip->ihl * 4;
		if ((void *)(udp + 1) > end || udp->dest != bpf_htons(XKV_REFLECT_PORT))
			return XDP_PASS;
		__u32 a = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return XDP_PASS;
		udp = (void *)(ip6 + 1);
		if ((void *)(udp + 1) > end || udp->dest != bpf_htons(XKV_REFLECT_PORT))
			return XDP_PASS;
		swap_bytes(&ip6->saddr, &ip6->daddr, sizeof(ip6->saddr));
	} else {
		return XDP_PASS;
	}
	__be16 p = udp->source;
	udp->source = udp->dest;
	udp->dest = p;
	swap_bytes(eth->h_source, eth->h_dest, ETH_ALEN);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
