/* SPDX-License-Identifier: MIT */
/* Wire format of memcached over UDP, ASCII and binary: constants shared by
 * the XDP fast path, the userspace slow path, the CLI and the tests.  See
 * docs/protocol.md. */
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
	XKV_E_DEL_USAGE,      /* CLIENT_ERROR bad command line format.  Usage: delete ... */
	XKV_E_HTTP,           /* an HTTP request line: no reply, the connection closed (memcached) */
	XKV_E_DELTA,          /* CLIENT_ERROR invalid numeric delta argument (incr, decr) */
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
#define XKV_R_DELTA       "CLIENT_ERROR invalid numeric delta argument\r\n"
#define XKV_R_DEL_USAGE   "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
#define XKV_R_END         "END\r\n"
#define XKV_R_STORED      "STORED\r\n"
#define XKV_R_NOT_STORED  "NOT_STORED\r\n"
#define XKV_R_DELETED     "DELETED\r\n"
#define XKV_R_NOT_FOUND   "NOT_FOUND\r\n"
#define XKV_R_EXISTS      "EXISTS\r\n"
#define XKV_R_TOUCHED     "TOUCHED\r\n"
#define XKV_R_VALUE       "VALUE "
#define XKV_R_DATA_END    "\r\nEND\r\n" /* after the last value of a get */

/* memcached's binary protocol (its protocol_binary.h): a 24-byte header,
 * then extras, key and value; every field big-endian but the opaque, which
 * is echoed as it came.  The slow path serves all of it (engine/binproto.c);
 * the XDP program a datagram holding one get, getq, getk or getkq
 * (common/binget.bpf.h).  docs/protocol.md, "Binary protocol". */
#define XKV_BIN_REQ 0x80  /* a request's magic: its first byte */
#define XKV_BIN_RES 0x81
#define XKV_BIN_HDR_LEN 24

struct xkv_bin_hdr {
	__u8 magic;
	__u8 opcode;
	__be16 keylen;
	__u8 extlen;
	__u8 datatype;
	__be16 status;    /* a request's vbucket */
	__be32 bodylen;   /* extras + key + value */
	__u32 opaque;     /* echoed unchanged */
	__be64 cas;
};

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
#define XKV_BIN_M_ENOENT "Not found" /* the body of an ENOENT response (but getk's) */

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
