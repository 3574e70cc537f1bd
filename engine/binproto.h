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

#define XKV_BIN_REQ 0x80  /* a request's magic: its first byte */
#define XKV_BIN_RES 0x81
#define XKV_BIN_HDR_LEN 24

/* Opcodes memcached 1.6.18 serves */
enum xkv_bin_op {
	XKV_BIN_GET = 0x00, XKV_BIN_SET = 0x01, XKV_BIN_ADD = 0x02, XKV_BIN_REPLACE = 0x03,
	XKV_BIN_DELETE = 0x04, XKV_BIN_INCR = 0x05, XKV_BIN_DECR = 0x06, XKV_BIN_QUIT = 0x07,
	XKV_BIN_FLUSH = 0x08, XKV_BIN_GETQ = 0x09, XKV_BIN_NOOP = 0x0a, XKV_BIN_VERSION = 0x0b,
	XKV_BIN_GETK = 0x0c, XKV_BIN_GETKQ = 0x0d, XKV_BIN_APPEND = 0x0e, XKV_BIN_PREPEND = 0x0f,
	XKV_BIN_STAT = 0x10, XKV_BIN_SETQ = 0x11, XKV_BIN_ADDQ = 0x12, XKV_BIN_REPLACEQ = 0x13,
	XKV_BIN_DELETEQ = 0x14, XKV_BIN_INCRQ = 0x15, XKV_BIN_DECRQ = 0x16, XKV_BIN_QUITQ = 0x17,
	XKV_BIN_FLUSHQ = 0x18, XKV_BIN_APPENDQ = 0x19, XKV_BIN_PREPENDQ = 0x1a,
	XKV_BIN_VERBOSITY = 0x1b, XKV_BIN_TOUCH = 0x1c, XKV_BIN_GAT = 0x1d, XKV_BIN_GATQ = 0x1e,
	XKV_BIN_SASL_LIST = 0x20, XKV_BIN_SASL_AUTH = 0x21, XKV_BIN_SASL_STEP = 0x22,
	XKV_BIN_GATK = 0x23, XKV_BIN_GATKQ = 0x24,
};

/* Response status codes */
enum xkv_bin_status {
	XKV_BIN_OK = 0x00, XKV_BIN_ENOENT = 0x01, XKV_BIN_EEXISTS = 0x02, XKV_BIN_E2BIG = 0x03,
	XKV_BIN_EINVAL = 0x04, XKV_BIN_NOT_STORED = 0x05, XKV_BIN_DELTA_BADVAL = 0x06,
	XKV_BIN_AUTH_ERROR = 0x20, XKV_BIN_AUTH_CONTINUE = 0x21,
	XKV_BIN_UNKNOWN = 0x81, XKV_BIN_ENOMEM = 0x82,
};

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
