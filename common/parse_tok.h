/* SPDX-License-Identifier: MIT */
/* The request parser's pieces below the command rules (parse.h): the parse
 * span, the ops, the request and token structs, the byte scan that splits a
 * command line into tokens, and the number readers (memcached's strtol /
 * strtoul rules).  Portable C for BPF and userspace, as parse.h. */
#ifndef XDPKV_PARSE_TOK_H
#define XDPKV_PARSE_TOK_H

#include <linux/types.h>
#include "wire.h"

#ifndef XKV_PARSE_SPAN
#define XKV_PARSE_SPAN XKV_REQ_MAX   /* power of two */
#endif
#ifndef XKV_PARSE_TOKENS
#define XKV_PARSE_TOKENS XKV_TOKENS_MAX
#endif
#define XKV_PMASK (XKV_PARSE_SPAN - 1)

/* The value as if unknown to the compiler from here on (libbpf's, for
 * userspace builds too): a check after it stays, on the register used. */
#ifndef barrier_var
#define barrier_var(var) asm volatile("" : "=r"(var) : "0"(var))
#endif

#ifdef __bpf__
#define xkv_loop(n, cb, ctx) bpf_loop((n), (cb), (ctx), 0)
#else
static inline long xkv_loop(__u32 n, long (*cb)(__u32, void *), void *ctx)
{
	for (__u32 i = 0; i < n; i++)
		if (cb(i, ctx))
			return i + 1;
	return n;
}
#endif

enum xkv_op {
	XKV_OP_NONE = 0,
	XKV_OP_GET, XKV_OP_SET, XKV_OP_DELETE,          /* fast path */
	XKV_OP_ADD, XKV_OP_REPLACE, XKV_OP_INCR, XKV_OP_DECR, /* slow path only */
	XKV_OP_VERSION, XKV_OP_STATS, XKV_OP_FLUSH_ALL,
	XKV_OP_APPEND, XKV_OP_PREPEND, XKV_OP_CAS,          /* storage commands */
	XKV_OP_GETS, XKV_OP_GAT, XKV_OP_GATS,               /* get-like: keys, then END */
	XKV_OP_TOUCH, XKV_OP_VERBOSITY,
	XKV_OP_MG, XKV_OP_MN,                               /* meta protocol */
	XKV_OP_MS, XKV_OP_MD, XKV_OP_MA, XKV_OP_ME,
	XKV_OP_SHUTDOWN,                                    /* refused, as memcached without -A */
	XKV_OP_LRU_CRAWLER,                                 /* metadump only */
	XKV_OP_SLABS,                                       /* automove, reassign: answered, nothing moves */
};
#define XKV_OP_FAST_LAST XKV_OP_DELETE

/* Does this command change the store?  Refused to sources outside the write
 * list and held by snapshot --pause-writes, on every path; gat and gats
 * change expiries. */
static inline __attribute__((always_inline)) int xkv_op_writes(__u8 op)
{
	return op == XKV_OP_SET || op == XKV_OP_DELETE || op == XKV_OP_ADD ||
	       op == XKV_OP_REPLACE || op == XKV_OP_INCR || op == XKV_OP_DECR ||
	       op == XKV_OP_FLUSH_ALL || (op >= XKV_OP_APPEND && op <= XKV_OP_CAS) ||
	       op == XKV_OP_GAT || op == XKV_OP_GATS || op == XKV_OP_TOUCH ||
	       op == XKV_OP_MS || op == XKV_OP_MD || op == XKV_OP_MA;
}

struct xkv_tok {
	__u32 off;
	__u32 len;
};

struct xkv_req {
	__u8 op;          /* enum xkv_op, XKV_OP_NONE when err != XKV_OK */
	__u8 err;         /* enum xkv_perr */
	__u8 noreply;
	__u8 too_many;    /* more than XKV_PARSE_TOKENS tokens (fast path passes get on) */
	__u32 ntok;       /* tokens stored in tok[] (<= XKV_PARSE_TOKENS) */
	__u32 line_len;   /* command line bytes, without \r\n */
	__u32 next;       /* offset after this command (line [+ data block]) */
	__u32 data_off;   /* storage commands: first data byte */
	__u32 bytes;      /* storage commands: <bytes> */
	__u32 flags;      /* storage commands: <flags> */
	__u32 key1;       /* get-like commands: token of the first key (gat/gats: 2) */
	__s64 exptime;    /* storage commands, touch, gat, gats: <exptime> */
	__u64 num;        /* incr/decr: <value>; flush_all: delay; cas: <cas unique> */
	__u32 ctrl_mask;  /* bit i: token i (i < 32) holds a control character */
	__u32 key_cap;    /* input: largest key accepted */
	__u32 val_cap;    /* input: largest value accepted */
	__u32 binary_keys; /* input: accept control bytes in keys (XKV_CFG_BINARY_KEYS) */
	/* The byte scan's own state (in a token; 1 = found \r\n, 2 = bare \n).
	 * It lives here, in the caller's memory (in BPF a map value), not on
	 * the scan's stack: the verifier then reads it back as any value and
	 * walks the scan loop once for all of them, instead of once per
	 * combination of constants it could track on the stack (307 k
	 * instructions verified for hash_map before, 86 k after: attach
	 * 1.2 s -> 0.2 s). */
	__u32 in_tok;
	__u32 done;
	struct xkv_tok tok[XKV_PARSE_TOKENS];
};

struct xkv_scan {
	const __u8 *buf;
	__u32 len;
	struct xkv_req *req;
};

/* Bytes [i, i+n) are token bytes: extend the open token or start one. */
static __attribute__((always_inline)) inline void xkv_tok_grow(struct xkv_scan *s, __u32 i, __u32 n)
{
	struct xkv_req *r = s->req;

	if (!r->in_tok) {
		r->in_tok = 1;
		if (r->ntok >= XKV_PARSE_TOKENS) {
			r->too_many = 1;
			return;
		}
		__u32 k = r->ntok;
		if (k < XKV_PARSE_TOKENS) {
			r->tok[k].off = i;
			r->tok[k].len = 0;
		}
		r->ntok = k + 1;
	}
	if (r->too_many)
		return;
	__u32 t = r->ntok - 1;
	if (t < XKV_PARSE_TOKENS)
		r->tok[t].len += n;
}

/* One byte of the command line; returns 1 at its end. */
static __attribute__((always_inline)) inline long xkv_scan_byte(struct xkv_scan *s, __u32 i)
{
	struct xkv_req *r = s->req;

	if (i >= s->len)
		return 1;
	__u8 c = s->buf[i & XKV_PMASK];
	if (c == '\n') {
		r->done = 2; /* bare \n: \r\n is caught on the \r */
		r->line_len = i;
		return 1;
	}
	if (c == '\r' && i + 1 < s->len && s->buf[(i + 1) & XKV_PMASK] == '\n') {
		r->done = 1;
		r->line_len = i;
		return 1;
	}
	if (c == ' ') {
		r->in_tok = 0;
		return 0;
	}
	xkv_tok_grow(s, i, 1);
	__u32 t = r->ntok - 1;
	if (!r->too_many && xkv_key_byte_bad(c, r->binary_keys) && t < 32)
		r->ctrl_mask |= 1u << t;
	return 0;
}

/* SWAR: non-zero iff some byte of w is below 0x21 (space, CR, LF, control)
 * or is DEL.  Such a word is walked byte by byte; any other word is eight
 * plain token bytes at once. */
#define XKV_ONES 0x0101010101010101ULL
#define XKV_HIGHS 0x8080808080808080ULL
static inline __u64 xkv_word_special(__u64 w)
{
	__u64 below = (w - 0x21 * XKV_ONES) & ~w & XKV_HIGHS;
	__u64 x = w ^ (0x7f * XKV_ONES);
	__u64 del = (x - XKV_ONES) & ~x & XKV_HIGHS;
	return below | del;
}

/* One 8-byte word of the command line (wi: word index); returns 1 at its end.
 * In BPF the request buffer is 8-aligned, so the word load is aligned too. */
static long xkv_scan_word(__u32 wi, void *vctx)
{
	struct xkv_scan *s = vctx;
	__u32 base = wi * 8;

	if (base >= s->len)
		return 1;
	if (base + 8 <= s->len) {
		__u64 w;
#ifdef __bpf__
		w = *(const __u64 *)&s->buf[base & XKV_PMASK];
#else
		__builtin_memcpy(&w, &s->buf[base & XKV_PMASK], 8); /* a later command may be unaligned */
#endif
		if (!xkv_word_special(w)) {
			xkv_tok_grow(s, base, 8);
			return 0;
		}
	}
	for (__u32 k = 0; k < 8; k++)
		if (xkv_scan_byte(s, base + k))
			return 1;
	return 0;
}

/* token t equals the literal s of length n (n <= 12) */
static inline int xkv_tok_is(const __u8 *buf, const struct xkv_tok *t, const char *s, __u32 n)
{
	if (t->len != n)
		return 0;
	for (__u32 i = 0; i < 12; i++) {
		if (i >= n)
			break;
		if (buf[(t->off + i) & XKV_PMASK] != (__u8)s[i])
			return 0;
	}
	return 1;
}

/* One digit of a number (c->off + i): an xkv_loop step (verified once; the
 * bounded loop's three exits an iteration left the verifier 20 levels of
 * pending branches, too many for 6.12 in the arena object). */
struct xkv_digits { /* 32 bytes: 6.1 counts each frame of a call chain, rounded to 32 */
	const __u8 *buf;
	__u64 v, max;
	__u16 off;
	__u8 len, bad;
};

static long xkv_digit_step(__u32 i, void *vc)
{
	struct xkv_digits *c = vc;

	if (i >= c->len || i >= 20)
		return 1;
	__u8 ch = c->buf[(c->off + i) & XKV_PMASK];
	if (ch < '0' || ch > '9') {
		c->bad = 1;
		return 1;
	}
	__u64 d = ch - '0';
	if (c->v > (c->max - d) / 10) {
		c->bad = 1;
		return 1;
	}
	c->v = c->v * 10 + d;
	return 0;
}

/* Unsigned decimal token; at most 20 digits, overflow of `max` is an error. */
static inline int xkv_tok_u64(const __u8 *buf, const struct xkv_tok *t, __u64 max, __u64 *out)
{
	if (t->len == 0 || t->len > 20)
		return -1;
	struct xkv_digits c = { .buf = buf, .max = max, .off = t->off, .len = t->len };
	xkv_loop(t->len, xkv_digit_step, &c);
	if (c.bad)
		return -1;
	*out = c.v;
	return 0;
}

static inline int xkv_tok_s64(const __u8 *buf, const struct xkv_tok *t, __s64 *out)
{
	struct xkv_tok u = *t;
	__u64 v;
	int neg = 0;
	if (u.len > 1 && buf[u.off & XKV_PMASK] == '-') {
		neg = 1;
		u.off++;
		u.len--;
	}
	if (xkv_tok_u64(buf, &u, 0x7fffffffffffffffULL, &v))
		return -1;
	*out = neg ? -(__s64)v : (__s64)v;
	return 0;
}

/* A number as memcached reads one (strtol / strtoul and its safe_strto*
 * checks): an optional sign, then decimal digits (at most 20). */
static inline int xkv_tok_signed(const __u8 *buf, const struct xkv_tok *t, __u64 *mag, int *neg)
{
	struct xkv_tok u = *t;
	*neg = 0;
	if (u.len > 1) {
		__u8 c = buf[u.off & XKV_PMASK];
		if (c == '-' || c == '+') {
			*neg = c == '-';
			u.off++;
			u.len--;
		}
	}
	return xkv_tok_u64(buf, &u, ~0ULL, mag);
}

/* memcached's safe_strtol into an int32_t: strtol's range (a long), then
 * the low 32 bits kept (its flags-free fields: exptime, <bytes>).  *wide
 * gets the value before the cut. */
static inline int xkv_tok_mc_i32(const __u8 *buf, const struct xkv_tok *t, __s64 *out, __s64 *wide)
{
	__u64 m;
	int neg;
	if (xkv_tok_signed(buf, t, &m, &neg))
		return -1;
	if (neg ? m > (1ULL << 63) : m > 0x7fffffffffffffffULL)
		return -1; /* ERANGE */
	__s64 l = neg ? (__s64)(0 - m) : (__s64)m;
	*wide = l;
	*out = (__s32)(__u32)(__u64)l;
	return 0;
}

/* memcached's safe_strtoul / safe_strtoull: strtoull negates a '-'
 * number modulo 2^64, and a result that is negative as a signed number is
 * refused when a '-' was there (-1 is refused, -0 is 0, and
 * -9223372036854775809 reads as 9223372036854775807). */
static inline int xkv_tok_mc_u64(const __u8 *buf, const struct xkv_tok *t, __u64 *out)
{
	int neg;
	if (xkv_tok_signed(buf, t, out, &neg))
		return -1;
	if (neg)
		*out = 0 - *out;
	return neg && (__s64)*out < 0 ? -1 : 0;
}

#endif
