/* SPDX-License-Identifier: MIT */
/* The TCP fast path's shared state (common/tcp.bpf.h, server/serve_tcp.c):
 * per connection, in the slot userspace gave it (tcp_slots: socket cookie
 * -> slot, written by userspace at accept and close), the bytes the kernel
 * handed to userspace (tcp_conns[slot], written by the kernel only) and the
 * bytes userspace has consumed and answered in full (tcp_paid[slot],
 * written by userspace only).  The kernel answers a connection's requests
 * only while the two are equal.  Both arrays are mapped into serve's
 * memory: it reads and writes them without a system call.
 * docs/architecture.md, "TCP in the kernel". */
#ifndef XDPKV_TCPFAST_H
#define XDPKV_TCPFAST_H

#include <linux/types.h>

#define XKV_TCP_CONNS_MAX 65536 /* connections the fast path can hold (slots) */

struct xkv_tcp_conn {
	__u64 passed;  /* bytes handed to userspace (SK_PASS) */
	__u64 kq;      /* reply bytes the kernel queued for the socket's egress */
	__s64 credit;  /* request bytes the kernel took minus reply bytes it sent:
			* how far the socket's copied_seq lags (never below 0) */
	__u64 xdp_ns;  /* the last request the XDP responder answered on it (bpf_ktime_get_ns,
			* CLOCK_MONOTONIC): serve's --idle-timeout counts it as activity */
};

#ifndef __bpf__
/* Bytes of the TCP socket fd its peer acknowledged (TCP_INFO
 * tcpi_bytes_acked; server/tcpinfo.c).  0 or -errno. */
int xkv_tcp_bytes_acked(int fd, __u64 *acked);
#endif

#endif
