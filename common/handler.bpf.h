/* SPDX-License-Identifier: MIT */
/* The programs of a variant's object: the XDP request handler (xdp.bpf.h)
 * and the TCP fast path's stream verdict (tcp.bpf.h), over the one store.
 * Included once by every variant after prelude.bpf.h and its store:
 * XKV_KEY_IN_VALUE, store_lookup(), store_set(), store_del() and the
 * optional hooks ops.bpf.h lists.  The headers below it, by concern:
 *   csum.bpf.h    checksums
 *   reply.bpf.h   reply text (literals, numbers, a get's VALUE line)
 *   acl.bpf.h     the access lists both programs ask
 *   guards.bpf.h  the XDP program's refusals before parsing
 *   emit.bpf.h    the XDP reply frame, under the amplification cap
 *   ops.bpf.h     the one get, set and delete over the store
 * and TCP answered in the driver hook (tcpx.h): tcpx_xdp.bpf.h answers and
 * translates what arrives, tcpx_tc.bpf.h translates what the kernel sends. */
#ifndef XDPKV_HANDLER_BPF_H
#define XDPKV_HANDLER_BPF_H

#include "xdp.bpf.h"
#include "tcp.bpf.h"
#include "tcpx_xdp.bpf.h"
#include "tcpx_tc.bpf.h"
#include "xdp_main.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#endif
