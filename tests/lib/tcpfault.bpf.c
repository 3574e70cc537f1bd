// SPDX-License-Identifier: MIT
/* Faults for TCP to and from the service port, on the client end of the
 * testbed's veth (this kernel has no netem): the XDP program drops
 * DROP_PM per mille of the server's segments as they arrive; the TC
 * program (egress and ingress of the same end) drops DROP_PM per mille of
 * the client's segments and duplicates DUP_PM per mille of both (a clone
 * redirected back into the same direction, marked so that it is not
 * touched again).  Compiled by tests/e2e/tcpfault.sh with -DDROP_PM=
 * -DDUP_PM= -DPORT=. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef DROP_PM
#define DROP_PM 10
#endif
#ifndef DUP_PM
#define DUP_PM 10
#endif
#ifndef PORT
#define PORT 11211
#endif
#define CLONE_MARK 0x7cf17

/* Counters: 0 server segments dropped, 1 client segments dropped, 2 server
 * segments duplicated, 3 client segments duplicated. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} faults SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&faults, &i);
	if (v)
		(*v)++;
}

/* The TCP ports of an IPv4 frame at [data, end): 0 when it is not one. */
static __always_inline int ports(void *data, void *end, __u16 *sport, __u16 *dport)
{
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP || ip->ihl != 5)
		return 0;
	struct tcphdr *th = (void *)(ip + 1);
	if ((void *)(th + 1) > end)
		return 0;
	*sport = bpf_ntohs(th->source);
	*dport = bpf_ntohs(th->dest);
	return 1;
}

SEC("xdp")
int xdp_fault(struct xdp_md *ctx)
{
	__u16 sp, dp;
	if (ports((void *)(long)ctx->data, (void *)(long)ctx->data_end, &sp, &dp) && sp == PORT &&
	    bpf_get_prandom_u32() % 1000 < DROP_PM) {
		count(0);
		return XDP_DROP;
	}
	return XDP_PASS;
}

SEC("tc")
int tc_fault(struct __sk_buff *skb)
{
	__u16 sp, dp;
	if (skb->mark == CLONE_MARK) {
		skb->mark = 0;
		return TC_ACT_OK;
	}
	if (!ports((void *)(long)skb->data, (void *)(long)skb->data_end, &sp, &dp) &&
	    (bpf_skb_pull_data(skb, 54) ||
	     !ports((void *)(long)skb->data, (void *)(long)skb->data_end, &sp, &dp)))
		return TC_ACT_OK;
	int to_server = dp == PORT, from_server = sp == PORT;
	if (!to_server && !from_server)
		return TC_ACT_OK;
	__u32 r = bpf_get_prandom_u32() % 1000;
	if (to_server && r < DROP_PM) {
		count(1);
		return TC_ACT_SHOT;
	}
	if (r >= DROP_PM && r < DROP_PM + DUP_PM) {
		skb->mark = CLONE_MARK;
		bpf_clone_redirect(skb, skb->ifindex, from_server ? BPF_F_INGRESS : 0);
		skb->mark = 0;
		count(from_server ? 2 : 3);
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
