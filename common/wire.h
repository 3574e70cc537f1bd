/* SPDX-License-Identifier: MIT */
/* Wire format of memcached ASCII over UDP: constants shared by the XDP fast
 * path, the userspace slow path, the CLI and the tests.  See docs/protocol.md. */
#ifndef XDPKV_WIRE_H
#define XDPKV_WIRE_H

#ifdef __bpf__
#include <linux/types.h>
#else
#include <linux/types.h>
#endif

#define XKV_DEFAULT_PORT   11211
#define XKV_KEY_MAX        250   /* memcached's own key limit */
#define XKV_VAL_MAX        16384 /* largest --value-size (per-CPU value limit is 32 KiB) */
#define XKV_BIG_MAX        (1u << 20) /* largest value at all: memcached's default item size
				       * (-I 1m); above --value-size it lives in the big map
				       * (entry.h, store/bigval.c), which only userspace serves */
#define XKV_DGRAM_MAX      1400  /* max UDP payload bytes per reply datagram, frame header included */
#define XKV_DGRAM_TEXT     (XKV_DGRAM_MAX - 8) /* reply text per datagram */
#define XKV_REQ_MAX        2048  /* largest request payload the fast path looks at */
#define XKV_TOKENS_MAX     24    /* command tokens the fast path tokenizes (memcached: 24) */
#define XKV_FAST_KEYS_MAX  (XKV_TOKENS_MAX - 1) /* keys in a fast-path multi-get */
#define XKV_REPLY_BUF      4096  /* reply scratch (2048 offset range + one datagram) */
#define XKV_REALTIME_MAXDELTA (60 * 60 * 24 * 30) /* exptime above this is absolute */

/* 8-byte memcached UDP frame header; all fields big-endian. */
struct xkv_udp_hdr {
	__u16 req_id;
	__u16 seq;
	__u16 total;
	__u16 reserved;
};
#define XKV_UDP_HDR_LEN 8

enum xkv_cmd {
	XKV_CMD_NONE = 0,
	XKV_CMD_GET,       /* get / gets? only "get" on the fast path */
	XKV_CMD_SET,
	XKV_CMD_DELETE,
	XKV_CMD_SLOW,      /* a known command the slow path serves (version, stats, …) */
	XKV_CMD_UNKNOWN,
};

/* Parser verdicts (struct xkv_req.err).  Each maps to one reply line. */
enum xkv_perr {
	XKV_OK = 0,
	XKV_E_UNKNOWN,        /* ERROR */
	XKV_E_FORMAT,         /* CLIENT_ERROR bad command line format */
	XKV_E_KEY_LONG,       /* CLIENT_ERROR key too long */
	XKV_E_KEY_BAD,        /* CLIENT_ERROR bad key */
	XKV_E_DATA,           /* CLIENT_ERROR bad data chunk */
	XKV_E_NO_CRLF,        /* CLIENT_ERROR line not terminated by \r\n */
	XKV_E_MULTI_DGRAM,    /* CLIENT_ERROR multi-datagram requests are not supported */
	XKV_E_TOO_LARGE,      /* SERVER_ERROR object too large for cache */
	XKV_E_OOM,            /* SERVER_ERROR out of memory storing object */
	XKV_E_EXPTIME,        /* CLIENT_ERROR invalid exptime argument (touch, gat, gats) */
	XKV_E__MAX,
};

/* Reply lines, indexed by enum xkv_perr (XKV_OK has none). */
#define XKV_R_ERROR       "ERROR\r\n"
#define XKV_R_FORMAT      "CLIENT_ERROR bad command line format\r\n"
#define XKV_R_KEY_LONG    "CLIENT_ERROR key too long\r\n"
#define XKV_R_KEY_BAD     "CLIENT_ERROR bad key\r\n"
#define XKV_R_DATA        "CLIENT_ERROR bad data chunk\r\n"
#define XKV_R_NO_CRLF     "CLIENT_ERROR line not terminated by \\r\\n\r\n"
#define XKV_R_MULTI_DGRAM "CLIENT_ERROR multi-datagram requests are not supported\r\n"
#define XKV_R_TOO_LARGE   "SERVER_ERROR object too large for cache\r\n"
#define XKV_R_OOM         "SERVER_ERROR out of memory storing object\r\n"
#define XKV_R_EXPTIME     "CLIENT_ERROR invalid exptime argument\r\n"
#define XKV_R_END         "END\r\n"
#define XKV_R_STORED      "STORED\r\n"
#define XKV_R_NOT_STORED  "NOT_STORED\r\n"
#define XKV_R_DELETED     "DELETED\r\n"
#define XKV_R_NOT_FOUND   "NOT_FOUND\r\n"
#define XKV_R_EXISTS      "EXISTS\r\n"
#define XKV_R_TOUCHED     "TOUCHED\r\n"
#define XKV_R_VALUE       "VALUE "
#define XKV_R_DATA_END    "\r\nEND\r\n" /* after the last value of a get */

/* The key rule.  Strict (default): no control characters (< 0x20, DEL), as
 * protocol.txt says.  Binary (--binary-keys): only NUL is refused, as
 * memcached itself does in practice (memaslap's keys carry bytes 0x10-0x1f);
 * NUL stays out because map keys are zero padded.  A space, CR or LF never
 * reaches a key: they end the token or the line. */
static inline int xkv_key_byte_bad(__u8 c, __u32 binary)
{
	if (binary)
		return c == 0;
	return c < 0x21 || c == 0x7f;
}

#endif
