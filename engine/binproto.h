/* SPDX-License-Identifier: MIT */
/* memcached's binary protocol on the slow path (binproto.c): frames
 * decoded here, run by the executor the text and meta commands use
 * (slowexec.h).  docs/protocol.md, "Binary protocol". */
#ifndef XDPKV_BINPROTO_H
#define XDPKV_BINPROTO_H

#include <stdbool.h>
#include "slowpath.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The wire format (magic, header, opcodes, status codes): common/wire.h. */

/* A TCP connection's bytes: takes them when the connection speaks the
 * binary protocol (its first byte is XKV_BIN_REQ, as memcached decides) or
 * must not speak text (SASL required: closed without a reply, as memcached
 * -S does), with xkv_slow_stream's contract; sets *rc.  false: text, for
 * xkv_slow_stream's own parser. */
bool xkv_bin_stream_take(struct xkv_slow *sl, const struct xkv_slow_src *src,
			 struct xkv_slow_stream *st, const __u8 *buf, size_t len, size_t *consumed,
			 struct xkv_buf *out, struct xkv_stats *delta, int *rc);

/* A datagram: takes it when its request (after the 8-byte frame header)
 * is binary, or when SASL is required (every datagram dropped: memcached
 * -S serves no UDP), with xkv_slow_handle's contract; sets *rc. */
bool xkv_bin_dgram_take(struct xkv_slow *sl, const struct xkv_slow_src *src, const __u8 *dgram,
			size_t len, struct xkv_udp_hdr *hdr, struct xkv_buf *out,
			struct xkv_stats *delta, int *rc);

#ifdef __cplusplus
}
#endif
#endif
