// SPDX-License-Identifier: MIT
/* XDP_PASS for the client end of the testbed's veth pair.  A veth end only
 * receives the frames its peer XDP_TXes when it runs an XDP program of its
 * own; this one lets every frame through to the stack. */
#include <linux/bpf.h>

#define SEC(name) __attribute__((section(name), used))

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
