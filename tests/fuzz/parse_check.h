/* SPDX-License-Identifier: MIT */
/* The checks of fuzz_parse, included by fuzz_parse.c (the parser as the XDP
 * program builds it: XKV_PARSE_SPAN 2048, 24 tokens) and fuzz_parse_slow.c
 * (as the slow path builds it: 65536, 4096), each defining the sizes first.
 *
 * The input is one request payload.  It is parsed command by command, as
 * both paths walk a pipeline (the next command at r.next, indexes masked
 * from its start), from a buffer of exactly 2 * XKV_PARSE_SPAN bytes (what
 * the masking promises to stay inside; ASan sees any read past it).  Every
 * input is parsed twice, with different bytes after its end, under three
 * configurations; what is checked:
 *   - a verdict never depends on bytes past the payload's end;
 *   - a request parsed OK is consistent: next within the payload, tokens
 *     within the line, keys within key_cap, a storage command's data block
 *     ending in \r\n at next, bytes <= val_cap;
 *   - the shortcuts (xkv_quick_get, xkv_quick_set) claim a request only
 *     where xkv_parse reads the same one (tests/test_parse.c, as a property);
 *   - xkv_reply_shaped and xkv_err_line answer every verdict. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#pragma GCC diagnostic ignored "-Wunused-function" /* parse.h: what only BPF uses */
#include "parse.h"

#define PC_BUF (2 * XKV_PARSE_SPAN)

/* abort() with a message: libFuzzer keeps the input as a crash. */
#define PC_CHECK(cond, ...)                                                         \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "fuzz_parse (span %u): check failed: %s: ", \
				(unsigned)XKV_PARSE_SPAN, #cond);                   \
			fprintf(stderr, __VA_ARGS__);                               \
			fprintf(stderr, "\n");                                      \
			abort();                                                    \
		}                                                                   \
	} while (0)

struct pc_cfg {
	__u32 key_cap, val_cap, binary;
};

/* Parse every command of buf[0..len); the verdicts and requests into out[]
 * (at most max of them), their number returned. */
static unsigned pc_walk(const __u8 *buf, __u32 len, const struct pc_cfg *cfg, struct xkv_req *out,
			unsigned max)
{
	unsigned n = 0;
	__u32 off = 0;

	while (off < len && n < max) {
		struct xkv_req *r = &out[n++];
		memset(r, 0, offsetof(struct xkv_req, tok)); /* the parser fills the tokens */
		r->key_cap = cfg->key_cap;
		r->val_cap = cfg->val_cap;
		r->binary_keys = cfg->binary;
		__u32 left = len - off;
		int err = xkv_parse(buf + off, left, r);
		const __u8 *b = buf + off;
		__u32 span = left < XKV_PARSE_SPAN ? left : XKV_PARSE_SPAN;

		PC_CHECK(err == r->err, "returned %d, r.err %u", err, r->err);
		PC_CHECK(err >= XKV_OK && err < XKV_E__MAX, "verdict %d", err);
		PC_CHECK(xkv_err_line(err) != NULL, "no reply line for %d", err);
		if (err == XKV_E_UNKNOWN)
			(void)xkv_reply_shaped(b, r);
		if (err == XKV_E_NO_CRLF)
			break; /* both paths stop at a line without \r\n */
		PC_CHECK(r->line_len + 2 <= span, "line_len %u, %u bytes", r->line_len, span);
		PC_CHECK(b[r->line_len] == '\r' && b[r->line_len + 1] == '\n', "line end at %u",
			 r->line_len);
		if (err != XKV_OK) {
			PC_CHECK(r->op == XKV_OP_NONE, "op %u with verdict %d", r->op, err);
			off += r->line_len + 2; /* as the slow path goes on after an error line */
			continue;
		}
		PC_CHECK(r->op != XKV_OP_NONE, "OK without an op");
		PC_CHECK(r->next >= r->line_len + 2 && r->next <= span, "next %u, line %u, span %u",
			 r->next, r->line_len, span);
		__u32 nt = r->ntok < XKV_PARSE_TOKENS ? r->ntok : XKV_PARSE_TOKENS;
		PC_CHECK(r->too_many || r->ntok <= XKV_PARSE_TOKENS, "ntok %u", r->ntok);
		for (__u32 t = 0; t < nt; t++) {
			PC_CHECK(r->tok[t].len > 0, "token %u empty", t);
			PC_CHECK(r->tok[t].off + r->tok[t].len <= r->line_len, "token %u {%u,%u} past line %u",
				 t, r->tok[t].off, r->tok[t].len, r->line_len);
		}
		int storage = r->op == XKV_OP_SET || r->op == XKV_OP_ADD || r->op == XKV_OP_REPLACE ||
			      r->op == XKV_OP_APPEND || r->op == XKV_OP_PREPEND || r->op == XKV_OP_CAS;
		if (storage) {
			PC_CHECK(r->bytes <= cfg->val_cap, "bytes %u > val_cap %u", r->bytes, cfg->val_cap);
			PC_CHECK(r->data_off == r->line_len + 2, "data_off %u", r->data_off);
			PC_CHECK(r->next == r->data_off + r->bytes + 2, "next %u, data %u + %u", r->next,
				 r->data_off, r->bytes);
			PC_CHECK(b[r->next - 2] == '\r' && b[r->next - 1] == '\n', "data block end");
		} else {
			PC_CHECK(r->next == r->line_len + 2, "next %u after a line of %u", r->next,
				 r->line_len);
		}
		/* key tokens within key_cap (get-like: all checked unless too many) */
		__u32 k1 = 1, k2 = 1;
		if (r->op == XKV_OP_GET || r->op == XKV_OP_GETS || r->op == XKV_OP_GAT ||
		    r->op == XKV_OP_GATS) {
			k1 = r->key1;
			k2 = r->too_many ? 0 : (nt < 32 ? nt - 1 : 31);
		} else if (r->op == XKV_OP_VERSION || r->op == XKV_OP_STATS || r->op == XKV_OP_FLUSH_ALL ||
			   r->op == XKV_OP_VERBOSITY || r->op == XKV_OP_MN || r->op == XKV_OP_MS ||
			   r->op == XKV_OP_MD || r->op == XKV_OP_MA || r->op == XKV_OP_ME) {
			k2 = 0; /* no key, or the slow path checks it (meta) */
		} else if (r->too_many) {
			k2 = 0; /* more tokens than tok[] holds: a command that is not a
				 * fixed word count is the slow path's, which parses it
				 * again with room for them all (parse.h) */
		}
		for (__u32 t = k1; t <= k2 && t < nt; t++) {
			PC_CHECK(r->tok[t].len <= cfg->key_cap, "key token %u of %u bytes, cap %u", t,
				 r->tok[t].len, cfg->key_cap);
			for (__u32 i = 0; i < r->tok[t].len; i++)
				PC_CHECK(!xkv_key_byte_bad(b[r->tok[t].off + i], cfg->binary),
					 "key token %u byte %u is %#x", t, i, b[r->tok[t].off + i]);
		}
		off += r->next;
	}
	return n;
}

/* The shortcuts on the whole payload, against xkv_parse (first = its
 * reading of the first command). */
static void pc_quick(const __u8 *buf, __u32 len, const struct pc_cfg *cfg, const struct xkv_req *first)
{
	__u64 key[(XKV_KEY_MAX + 7) / 8 + 1];
	__u32 key_size = (cfg->key_cap + 7) & ~7u;

	if (len > XKV_PARSE_SPAN || !first)
		return;
	if (!cfg->binary) { /* plain keys only: with binary keys the caller skips it */
		__u32 k = xkv_quick_get(buf, len, cfg->key_cap, key, key_size);
		if (k) {
			PC_CHECK(first->err == XKV_OK && first->op == XKV_OP_GET && first->ntok == 2 &&
					 first->next == len && first->tok[1].off == 4 && first->tok[1].len == k,
				 "quick_get claimed %u bytes; parse: err %u op %u ntok %u next %u", k,
				 first->err, first->op, first->ntok, first->next);
			PC_CHECK(!memcmp(key, buf + 4, k), "quick_get key bytes");
		}
	}
	struct xkv_req q;
	memset(&q, 0, sizeof(q));
	q.key_cap = cfg->key_cap;
	q.val_cap = cfg->val_cap;
	if (!cfg->binary && xkv_quick_set(buf, len, &q, key, key_size)) {
		PC_CHECK(first->err == XKV_OK && first->op == XKV_OP_SET && first->next == len &&
				 first->ntok == q.ntok && first->noreply == q.noreply &&
				 first->flags == q.flags && first->exptime == q.exptime &&
				 first->bytes == q.bytes && first->data_off == q.data_off &&
				 first->line_len == q.line_len && first->tok[1].off == q.tok[1].off &&
				 first->tok[1].len == q.tok[1].len,
			 "quick_set claimed it; parse: err %u op %u next %u/%u ntok %u/%u bytes %u/%u",
			 first->err, first->op, first->next, q.next, first->ntok, q.ntok, first->bytes,
			 q.bytes);
		PC_CHECK(!memcmp(key, buf + 4, q.tok[1].len), "quick_set key bytes");
	}
}

/* The requests of two walks are the same (tokens compared while stored). */
static void pc_same(const struct xkv_req *a, const struct xkv_req *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const size_t head = offsetof(struct xkv_req, tok);
		PC_CHECK(!memcmp(&a[i], &b[i], head), "command %u differs with other bytes past the end", i);
		__u32 nt = a[i].ntok < XKV_PARSE_TOKENS ? a[i].ntok : XKV_PARSE_TOKENS;
		if (a[i].err == XKV_OK)
			PC_CHECK(!memcmp(a[i].tok, b[i].tok, nt * sizeof(a[i].tok[0])),
				 "command %u tokens differ with other bytes past the end", i);
	}
}

#define PC_MAX_CMDS 64

static void pc_run(const __u8 *data, size_t size)
{
	static const struct pc_cfg cfgs[] = {
		{ XKV_KEY_MAX, 1024, 0 },   /* the defaults */
		{ 16, 64, 1 },              /* short keys and values, binary keys */
		{ 250, XKV_BIG_MAX, 0 },    /* a store with a big map */
	};
	/* two buffers that differ past the payload: 0xa5, and line ends and
	 * digits (what could change a verdict); made once, the payload copied
	 * in and the pattern put back after each input */
	static __u8 *ba, *bb, *pa, *pb;
	static struct xkv_req *ra, *rb;
	__u32 len = size < XKV_PARSE_SPAN ? (__u32)size : XKV_PARSE_SPAN;

	if (!ba) {
		ba = malloc(PC_BUF), bb = malloc(PC_BUF);
		pa = malloc(PC_BUF), pb = malloc(PC_BUF);
		ra = malloc(PC_MAX_CMDS * sizeof(*ra));
		rb = malloc(PC_MAX_CMDS * sizeof(*rb));
		if (!ba || !bb || !pa || !pb || !ra || !rb)
			abort();
		memset(pa, 0xa5, PC_BUF);
		for (__u32 i = 0; i < PC_BUF; i++)
			pb[i] = "\r\n0 "[i & 3];
		memcpy(ba, pa, PC_BUF);
		memcpy(bb, pb, PC_BUF);
	}
	memcpy(ba, data, len);
	memcpy(bb, data, len);
	for (unsigned c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		unsigned na = pc_walk(ba, len, &cfgs[c], ra, PC_MAX_CMDS);
		pc_quick(ba, len, &cfgs[c], na ? &ra[0] : NULL);
		unsigned nb = pc_walk(bb, len, &cfgs[c], rb, PC_MAX_CMDS);
		PC_CHECK(na == nb, "%u commands, %u with other bytes past the end", na, nb);
		pc_same(ra, rb, na);
	}
	memcpy(ba, pa, len);
	memcpy(bb, pb, len);
}
