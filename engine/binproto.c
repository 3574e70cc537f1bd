// SPDX-License-Identifier: MIT
/* memcached's binary protocol: decode a request frame, run it through the
 * slow path's executor (slowexec.h: the store functions the text and meta
 * commands run), encode the response.  TCP and UDP share it; only the
 * framing differs.  Behaviour is memcached 1.6.18's (proto_bin.c): its
 * status codes and messages, opaque echoed, cas in the response header,
 * quiet commands silent on success (quiet gets: on a miss), errors always
 * answered, a frame of the wrong shape answered "Invalid arguments" and the
 * connection closed.  Deviations: docs/protocol.md, "Binary protocol". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "binproto.h"
#include "sasl.h"
#include "slowexec.h"

#define BIN_KEY_MAX 250          /* memcached's KEY_MAX_LENGTH */
#define BIN_SASL_MECH_MAX 32     /* memcached's MAX_SASL_MECH_LEN */
#define BIN_SASL_DATA_MAX 1024   /* a PLAIN message: two names and a password */

struct bin_req {
	__u8 op, extlen;
	__u16 keylen;
	__u32 bodylen, opaque;   /* opaque as it came (echoed unchanged) */
	__u64 cas;
	const __u8 *ext, *key, *val;
	__u32 vlen;
};

static __u64 get_be64(const __u8 *p)
{
	__u64 v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static __u32 get_be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static void put_be64(__u8 *p, __u64 v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (__u8)v;
}

/* One response: header, extras, key, value (any may be empty). */
static int put_res(struct xkv_buf *out, const struct bin_req *q, __u16 status, __u64 cas,
		   const void *ext, __u8 extlen, const void *key, __u16 keylen, const void *val,
		   __u32 vlen)
{
	__u8 h[XKV_BIN_HDR_LEN] = { XKV_BIN_RES, q->op };
	__u16 kl = htons(keylen), st = htons(status);
	__u32 bl = htonl((__u32)extlen + keylen + vlen);

	memcpy(h + 2, &kl, 2);
	h[4] = extlen;
	memcpy(h + 6, &st, 2);
	memcpy(h + 8, &bl, 4);
	memcpy(h + 12, &q->opaque, 4);
	put_be64(h + 16, cas);
	if (xkv_buf_put(out, h, sizeof(h)) || xkv_buf_put(out, ext, extlen) ||
	    xkv_buf_put(out, key, keylen) || xkv_buf_put(out, val, vlen))
		return -ENOMEM;
	return 0;
}

/* An error response with memcached's message for the status (or msg). */
static int put_err(struct xkv_buf *out, const struct bin_req *q, __u16 status, const char *msg)
{
	if (!msg) {
		switch (status) {
		case XKV_BIN_ENOMEM: msg = "Out of memory"; break;
		case XKV_BIN_UNKNOWN: msg = "Unknown command"; break;
		case XKV_BIN_ENOENT: msg = XKV_BIN_M_ENOENT; break;
		case XKV_BIN_EINVAL: msg = "Invalid arguments"; break;
		case XKV_BIN_EEXISTS: msg = "Data exists for key."; break;
		case XKV_BIN_E2BIG: msg = "Too large."; break;
		case XKV_BIN_DELTA_BADVAL: msg = "Non-numeric server-side value for incr or decr"; break;
		case XKV_BIN_NOT_STORED: msg = "Not stored."; break;
		case XKV_BIN_AUTH_ERROR: msg = "Auth failure."; break;
		default: msg = ""; break;
		}
	}
	return put_res(out, q, status, 0, NULL, 0, NULL, 0, msg, (__u32)strlen(msg));
}

/* The quiet opcodes and the command each is the quiet form of. */
static __u8 loud_op(__u8 op, bool *quiet)
{
	static const __u8 quiet_of[][2] = {
		{ XKV_BIN_GETQ, XKV_BIN_GET }, { XKV_BIN_GETKQ, XKV_BIN_GETK },
		{ XKV_BIN_SETQ, XKV_BIN_SET }, { XKV_BIN_ADDQ, XKV_BIN_ADD },
		{ XKV_BIN_REPLACEQ, XKV_BIN_REPLACE }, { XKV_BIN_DELETEQ, XKV_BIN_DELETE },
		{ XKV_BIN_INCRQ, XKV_BIN_INCR }, { XKV_BIN_DECRQ, XKV_BIN_DECR },
		{ XKV_BIN_QUITQ, XKV_BIN_QUIT }, { XKV_BIN_FLUSHQ, XKV_BIN_FLUSH },
		{ XKV_BIN_APPENDQ, XKV_BIN_APPEND }, { XKV_BIN_PREPENDQ, XKV_BIN_PREPEND },
		{ XKV_BIN_GATQ, XKV_BIN_GAT }, { XKV_BIN_GATKQ, XKV_BIN_GATK },
	};
	for (size_t i = 0; i < sizeof(quiet_of) / sizeof(quiet_of[0]); i++)
		if (quiet_of[i][0] == op) {
			*quiet = true;
			return quiet_of[i][1];
		}
	*quiet = false;
	return op;
}

/* Does the opcode change the store (refused whole to a source outside the
 * write list, as a text datagram is)? */
static bool op_writes(__u8 op)
{
	bool q;
	switch (loud_op(op, &q)) {
	case XKV_BIN_SET: case XKV_BIN_ADD: case XKV_BIN_REPLACE: case XKV_BIN_DELETE:
	case XKV_BIN_INCR: case XKV_BIN_DECR: case XKV_BIN_FLUSH: case XKV_BIN_APPEND:
	case XKV_BIN_PREPEND: case XKV_BIN_TOUCH: case XKV_BIN_GAT: case XKV_BIN_GATK:
		return true;
	default:
		return false;
	}
}

/* What a frame's head (header, extras, key) says about the frame. */
enum head_verdict {
	HEAD_RUN,      /* well formed: run it once the whole frame is here */
	HEAD_INVALID,  /* wrong shape: EINVAL, then close (memcached's protocol error) */
	HEAD_UNKNOWN,  /* keylen + extlen > bodylen: "Unknown command", then close */
	HEAD_NO_OP,    /* an opcode memcached does not serve: "Unknown command", body skipped */
};

/* memcached's dispatch_bin_command checks, on the loud opcode; stat,
 * touch and gat also take no value (memcached would read one as the next
 * request: a frame can only be as long as what it carries, so that no
 * connection waits for a body it will never use). */
static int head_check(__u8 op, __u8 extlen, __u16 keylen, __u32 bodylen)
{
	if (keylen > bodylen || (__u32)keylen + extlen > bodylen)
		return HEAD_UNKNOWN;
	if (keylen > BIN_KEY_MAX)
		return HEAD_INVALID;
	bool ok;
	switch (op) {
	case XKV_BIN_VERSION: case XKV_BIN_NOOP: case XKV_BIN_QUIT: case XKV_BIN_SASL_LIST:
		ok = !extlen && !keylen && !bodylen;
		break;
	case XKV_BIN_FLUSH:
		ok = !keylen && bodylen == extlen && (extlen == 0 || extlen == 4);
		break;
	case XKV_BIN_SET: case XKV_BIN_ADD: case XKV_BIN_REPLACE:
		ok = extlen == 8 && keylen && bodylen >= (__u32)keylen + 8;
		break;
	case XKV_BIN_GET: case XKV_BIN_GETK:
		ok = !extlen && bodylen == keylen && keylen;
		break;
	case XKV_BIN_DELETE:
		ok = keylen && !extlen && bodylen == keylen;
		break;
	case XKV_BIN_INCR: case XKV_BIN_DECR:
		ok = keylen && extlen == 20 && bodylen == (__u32)keylen + extlen;
		break;
	case XKV_BIN_APPEND: case XKV_BIN_PREPEND:
		ok = keylen && !extlen;
		break;
	case XKV_BIN_STAT: /* memcached: !extlen, and reads a value as the next request */
		ok = !extlen && bodylen == keylen;
		break;
	case XKV_BIN_SASL_AUTH: case XKV_BIN_SASL_STEP:
		ok = !extlen && keylen;
		break;
	case XKV_BIN_TOUCH: case XKV_BIN_GAT: case XKV_BIN_GATK: /* as stat */
		ok = extlen == 4 && keylen && bodylen == (__u32)keylen + 4;
		break;
	default:
		return HEAD_NO_OP;
	}
	return ok ? HEAD_RUN : HEAD_INVALID;
}

/* One connection's (or datagram's) state while its frames run. */
struct bin_run {
	struct xkv_slow *sl;
	struct xkv_slow_stream *st;   /* NULL: a datagram */
	const __u8 *buf;
	size_t len, used;
	struct xkv_buf *out;
	bool close;                   /* end the connection once out is sent */
	bool authed;                  /* SASL: authenticated (or not required) */
};

#define STAT(c, name) (xkv_exec_delta(c)->v[XKV_STAT_##name]++)

/* A store error (-errno) or a refusal the text path answers with a
 * SERVER_ERROR line: ENOMEM with the reason. */
static int put_store_err(struct bin_run *b, struct slow_cmd *c, const struct bin_req *q, int ret)
{
	if (ret == -ENOMEM) {
		STAT(c, err_oom);
		return put_err(b->out, q, XKV_BIN_ENOMEM, NULL);
	}
	if (ret == XKV_EX_DENIED) { /* as a text write from outside the write list: closed */
		b->close = true;
		return 0;
	}
	if (ret == XKV_EX_PAUSED)
		return put_err(b->out, q, XKV_BIN_ENOMEM, "writes paused for a snapshot");
	if (ret == XKV_EX_MIGRATING)
		return put_err(b->out, q, XKV_BIN_ENOMEM, "flush refused while the store migrates");
	if (ret == -EBUSY)
		return put_err(b->out, q, XKV_BIN_ENOMEM, "busy");
	return put_err(b->out, q, XKV_BIN_ENOMEM, strerror(ret < 0 ? -ret : EIO));
}

/* A key the store cannot hold: longer than --key-size, a NUL (the zero-
 * padded map key cannot tell it from its end), or a byte the key rule
 * refuses (xkv_key_check: without --binary-keys, spaces and control bytes).
 * A write of one answers 0x04, a get a miss (no such item can exist). */
static bool key_unfit(struct slow_cmd *c, const struct bin_req *q)
{
	return q->keylen > xkv_exec_cfg(c)->key_cap || memchr(q->key, 0, q->keylen) ||
	       xkv_key_check(xkv_exec_cfg(c), q->key, q->keylen);
}

static int run_get(struct bin_run *b, struct slow_cmd *c, const struct bin_req *q, __u8 op, bool quiet)
{
	bool touch = op == XKV_BIN_TOUCH || op == XKV_BIN_GAT || op == XKV_BIN_GATK;
	bool with_key = op == XKV_BIN_GETK || op == XKV_BIN_GATK;
	struct xkv_exec_item it = {};
	int ret = 0;

	STAT(c, cmd_get);
	if (!key_unfit(c, q))
		ret = xkv_exec_get(c, q->key, q->keylen, touch, touch ? (__s64)get_be32(q->ext) : 0, &it);
	if (ret < 0 || ret >= XKV_EX_DENIED)
		return put_store_err(b, c, q, ret);
	if (ret == 0) {
		if (quiet)
			return 0;
		if (with_key)
			return put_res(b->out, q, XKV_BIN_ENOENT, 0, NULL, 0, q->key, q->keylen, NULL, 0);
		return put_err(b->out, q, XKV_BIN_ENOENT, NULL);
	}
	STAT(c, get_hits);
	__be32 flags = htonl(it.flags);
	return put_res(b->out, q, XKV_BIN_OK, it.cas, &flags, 4, with_key ? q->key : NULL,
		       with_key ? q->keylen : 0, it.val, op == XKV_BIN_TOUCH ? 0 : it.len);
}

/* set, add, replace (cas != 0: each is a cas), append, prepend */
static int run_store(struct bin_run *b, struct slow_cmd *c, const struct bin_req *q, __u8 op, bool quiet)
{
	struct xkv_exec_wr w = { .has_cas = q->cas != 0, .cas = q->cas, .data = q->val,
				 .bytes = q->vlen };
	__u64 cas = 0;

	STAT(c, cmd_set);
	if (op == XKV_BIN_APPEND || op == XKV_BIN_PREPEND) {
		w.mode = op == XKV_BIN_APPEND ? XKV_EX_APPEND : XKV_EX_PREPEND;
	} else {
		w.mode = w.has_cas ? XKV_EX_SET : op == XKV_BIN_SET ? XKV_EX_SET
					      : op == XKV_BIN_ADD ? XKV_EX_ADD : XKV_EX_REPLACE;
		w.flags = get_be32(q->ext);
		w.exptime = (__s64)get_be32(q->ext + 4);
	}
	if (key_unfit(c, q))
		return put_err(b->out, q, XKV_BIN_EINVAL, NULL);
	int ret = xkv_exec_write(c, q->key, q->keylen, &w, &cas, NULL);
	switch (ret) {
	case XKV_EX_STORED:
		return quiet ? 0 : put_res(b->out, q, XKV_BIN_OK, cas, NULL, 0, NULL, 0, NULL, 0);
	case XKV_EX_EXISTS:
		return put_err(b->out, q, XKV_BIN_EEXISTS, NULL);
	case XKV_EX_NOT_FOUND:
		return put_err(b->out, q, XKV_BIN_ENOENT, NULL);
	case XKV_EX_NOT_STORED: /* memcached's codes for add and replace */
		return put_err(b->out, q, op == XKV_BIN_ADD ? XKV_BIN_EEXISTS
					  : op == XKV_BIN_REPLACE ? XKV_BIN_ENOENT : XKV_BIN_NOT_STORED, NULL);
	case XKV_EX_TOO_LARGE:
		STAT(c, err_too_large);
		return put_err(b->out, q, XKV_BIN_E2BIG, NULL);
	}
	return put_store_err(b, c, q, ret);
}

static int run_arith(struct bin_run *b, struct slow_cmd *c, const struct bin_req *q, __u8 op, bool quiet)
{
	__u32 exp = get_be32(q->ext + 16);
	struct xkv_exec_wr w = {
		.mode = op == XKV_BIN_INCR ? XKV_EX_INCR : XKV_EX_DECR,
		.has_cas = q->cas != 0, .cas = q->cas,
		.delta = get_be64(q->ext), .initial = get_be64(q->ext + 8),
		.vivify = exp != 0xffffffffu, .exptime = (__s64)exp,
	};
	__u64 cas = 0, num = 0;

	STAT(c, cmd_other);
	if (key_unfit(c, q))
		return put_err(b->out, q, XKV_BIN_EINVAL, NULL);
	int ret = xkv_exec_write(c, q->key, q->keylen, &w, &cas, &num);
	switch (ret) {
	case XKV_EX_STORED: {
		__u8 v[8];
		put_be64(v, num);
		return quiet ? 0 : put_res(b->out, q, XKV_BIN_OK, cas, NULL, 0, NULL, 0, v, 8);
	}
	case XKV_EX_NOT_FOUND:
		return put_err(b->out, q, XKV_BIN_ENOENT, NULL);
	case XKV_EX_EXISTS:
		return put_err(b->out, q, XKV_BIN_EEXISTS, NULL);
	case XKV_EX_NON_NUMERIC:
		STAT(c, err_client);
		return put_err(b->out, q, XKV_BIN_DELTA_BADVAL, NULL);
	case XKV_EX_NOT_STORED:
		return put_err(b->out, q, XKV_BIN_NOT_STORED, NULL);
	}
	return put_store_err(b, c, q, ret);
}

static int run_delete(struct bin_run *b, struct slow_cmd *c, const struct bin_req *q, bool quiet)
{
	int ret = 0;

	STAT(c, cmd_delete);
	if (!key_unfit(c, q))
		ret = xkv_exec_delete(c, q->key, q->keylen, q->cas);
	if (ret == 1) {
		STAT(c, deletes);
		return quiet ? 0 : put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, NULL, 0);
	}
	if (ret == 0) {
		STAT(c, delete_misses);
		return put_err(b->out, q, XKV_BIN_ENOENT, NULL);
	}
	if (ret == XKV_EX_EXISTS)
		return put_err(b->out, q, XKV_BIN_EEXISTS, NULL);
	return put_store_err(b, c, q, ret);
}

/* stat: one response per line (key: the name, value: the value), then an
 * empty one.  With a group as the key, that group's (the text stats
 * groups; reset: the empty one alone); another: 0x01, as memcached
 * answers a group it does not have. */
static int run_stat(struct bin_run *b, struct slow_cmd *c, const struct bin_req *q)
{
	struct xkv_buf lines = {};
	int ret;

	STAT(c, cmd_other);
	if (q->keylen >= 6 && !memcmp(q->key, "detail", 6)) {
		/* on, off: the end alone; dump: one value "detailed" first */
		ret = xkv_exec_detail(c, q->key + 6, q->keylen - 6u, &lines);
		if (ret == 0 && lines.len)
			ret = put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, (const __u8 *)"detailed", 8,
				      lines.p, (__u32)lines.len);
		xkv_buf_free(&lines);
		if (ret == 1) {
			STAT(c, err_unknown);
			return put_err(b->out, q, XKV_BIN_ENOENT, NULL);
		}
		return ret ? put_err(b->out, q, XKV_BIN_ENOMEM, NULL)
			   : put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, NULL, 0);
	}
	/* memcached takes "reset" and "settings" as prefixes of the key
	 * (proto_bin.c's strncmp): "reset now", "settingsx" are those groups */
	__u32 glen = q->keylen;
	if (glen >= 5 && !memcmp(q->key, "reset", 5))
		glen = 5;
	else if (glen >= 8 && !memcmp(q->key, "settings", 8))
		glen = 8;
	ret = xkv_exec_stats(c, q->key, glen, &lines);
	if (ret == 1) {
		xkv_buf_free(&lines);
		STAT(c, err_unknown);
		return put_err(b->out, q, XKV_BIN_ENOENT, NULL);
	}
	/* sizes_enable, sizes_disable: memcached sends their one value and no
	 * empty response after it */
	bool empty_end = ret != 2;
	if (!empty_end)
		ret = 0;
	for (size_t i = 0; !ret && i < lines.len;) {
		const __u8 *l = lines.p + i, *end = memchr(l, '\n', lines.len - i);
		size_t n = end ? (size_t)(end - l) + 1 : lines.len - i;
		i += n;
		if (n < 7 || memcmp(l, "STAT ", 5))
			continue;
		const __u8 *name = l + 5, *sp = memchr(name, ' ', n - 5);
		if (!sp)
			continue;
		const __u8 *v = sp + 1, *ve = l + n - (l[n - 2] == '\r' ? 2 : 1);
		ret = put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, name, (__u16)(sp - name), v,
			      (__u32)(ve - v));
	}
	xkv_buf_free(&lines);
	if (ret)
		return put_err(b->out, q, XKV_BIN_ENOMEM, NULL);
	return empty_end ? put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, NULL, 0) : 0;
}

/* SASL PLAIN (sasl.c): list, auth, step. */
static int run_sasl(struct bin_run *b, struct slow_cmd *c, const struct bin_req *q, __u8 op)
{
	const struct xkv_sasl *db = xkv_slow_sasl(b->sl);

	if (!db) /* memcached without -S */
		return put_err(b->out, q, XKV_BIN_UNKNOWN, NULL);
	if (op == XKV_BIN_SASL_LIST)
		return put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, "PLAIN", 5);
	STAT(c, cmd_other);
	/* PLAIN is one step: a step has nothing to continue (memcached: an
	 * error, as its sasl_server_step without a start) */
	bool ok = op == XKV_BIN_SASL_AUTH && q->keylen == 5 && !memcmp(q->key, "PLAIN", 5) &&
		  xkv_sasl_plain(db, q->val, q->vlen);
	if (!ok) {
		STAT(c, err_client);
		return put_err(b->out, q, XKV_BIN_AUTH_ERROR, NULL);
	}
	b->authed = true;
	return put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, "Authenticated", 13);
}

/* Run one whole, well-formed frame. */
static int run_frame(struct bin_run *b, struct slow_cmd *c, const struct bin_req *q)
{
	bool quiet;
	__u8 op = loud_op(q->op, &quiet);

	switch (op) {
	case XKV_BIN_GET: case XKV_BIN_GETK: case XKV_BIN_TOUCH: case XKV_BIN_GAT: case XKV_BIN_GATK:
		return run_get(b, c, q, op, quiet);
	case XKV_BIN_SET: case XKV_BIN_ADD: case XKV_BIN_REPLACE: case XKV_BIN_APPEND:
	case XKV_BIN_PREPEND:
		return run_store(b, c, q, op, quiet);
	case XKV_BIN_INCR: case XKV_BIN_DECR:
		return run_arith(b, c, q, op, quiet);
	case XKV_BIN_DELETE:
		return run_delete(b, c, q, quiet);
	case XKV_BIN_STAT:
		return run_stat(b, c, q);
	case XKV_BIN_NOOP:
		return put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, NULL, 0);
	case XKV_BIN_VERSION: {
		const char *v = XKV_PROTO_VERSION;
		return put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, v, (__u32)strlen(v));
	}
	case XKV_BIN_QUIT:
		b->close = true;
		return quiet ? 0 : put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, NULL, 0);
	case XKV_BIN_FLUSH: {
		STAT(c, cmd_other);
		int ret = xkv_exec_flush(c, q->extlen == 4 ? (__s64)get_be32(q->ext) : 0);
		if (ret)
			return put_store_err(b, c, q, ret);
		return quiet ? 0 : put_res(b->out, q, XKV_BIN_OK, 0, NULL, 0, NULL, 0, NULL, 0);
	}
	case XKV_BIN_SASL_LIST: case XKV_BIN_SASL_AUTH: case XKV_BIN_SASL_STEP:
		return run_sasl(b, c, q, op);
	}
	return put_err(b->out, q, XKV_BIN_UNKNOWN, NULL);
}

/* Commands an unauthenticated connection may send (memcached's authenticated()). */
static bool auth_free(__u8 op)
{
	return op == XKV_BIN_SASL_LIST || op == XKV_BIN_SASL_AUTH || op == XKV_BIN_SASL_STEP ||
	       op == XKV_BIN_VERSION;
}

/* Is op a storage command, whose value is the frame's bulk? */
static bool op_stores(__u8 op)
{
	return op == XKV_BIN_SET || op == XKV_BIN_ADD || op == XKV_BIN_REPLACE ||
	       op == XKV_BIN_APPEND || op == XKV_BIN_PREPEND;
}

/* The frame at the front of b->buf + b->used.  Returns 1 when it was
 * taken (b->used moved past it, or a swallow set), 0 when more bytes are
 * needed, -1 when the connection ends (b->close set). */
static int one_frame(struct bin_run *b, struct slow_cmd *c)
{
	const __u8 *p = b->buf + b->used;
	size_t n = b->len - b->used;
	struct bin_req q = {};

	if (b->st)
		b->st->need = 0;
	if (n < XKV_BIN_HDR_LEN)
		return 0;
	if (p[0] != XKV_BIN_REQ) { /* memcached closes without a word */
		STAT(c, err_client);
		b->close = true;
		return -1;
	}
	q.op = p[1];
	q.keylen = (__u16)(p[2] << 8 | p[3]);
	q.extlen = p[4];
	q.bodylen = get_be32(p + 8);
	memcpy(&q.opaque, p + 12, 4);
	q.cas = get_be64(p + 16);
	size_t head = XKV_BIN_HDR_LEN + (size_t)q.extlen + q.keylen;
	bool quiet;
	__u8 op = loud_op(q.op, &quiet);
	int hv = head_check(op, q.extlen, q.keylen, q.bodylen);

	/* memcached reads the header, extras and key before it looks at any
	 * of them: a head still coming is waited for, whatever it says */
	if (n < head) {
		if (b->st && b->st->no_room) { /* a key and extras the server cannot hold */
			b->close = true;
			return -1;
		}
		if (b->st)
			b->st->need = head; /* serve_tcp reads on until then (slowpath.h) */
		return 0;
	}
	if (hv == HEAD_UNKNOWN || hv == HEAD_INVALID || (xkv_slow_sasl(b->sl) && !b->authed &&
							 !auth_free(op))) {
		STAT(c, requests);
		STAT(c, err_client);
		put_err(b->out, &q, hv == HEAD_UNKNOWN ? XKV_BIN_UNKNOWN
				    : hv == HEAD_INVALID ? XKV_BIN_EINVAL : XKV_BIN_AUTH_ERROR, NULL);
		b->close = true;
		return -1;
	}
	q.vlen = q.bodylen - q.extlen - q.keylen;
	/* Refused before the body is read: an opcode memcached does not
	 * serve, a value over the size limit, a SASL message too long for
	 * PLAIN; the rest of the frame is skipped as it arrives. */
	int refuse = hv == HEAD_NO_OP ? XKV_BIN_UNKNOWN
		     : op_stores(op) && q.vlen > xkv_exec_val_max(c) ? XKV_BIN_E2BIG
		     : (op == XKV_BIN_SASL_AUTH || op == XKV_BIN_SASL_STEP) &&
				     (q.keylen > BIN_SASL_MECH_MAX || q.vlen > BIN_SASL_DATA_MAX)
			     ? XKV_BIN_EINVAL
			     : 0;
	if (refuse) {
		STAT(c, requests);
		if (hv == HEAD_NO_OP) {
			STAT(c, err_unknown);
			head = XKV_BIN_HDR_LEN;
			q.vlen = q.bodylen;
		} else {
			xkv_exec_delta(c)->v[refuse == XKV_BIN_E2BIG ? XKV_STAT_err_too_large
								      : XKV_STAT_err_client]++;
		}
		/* memcached: a set refused as too large removes the old value */
		q.key = p + XKV_BIN_HDR_LEN + q.extlen;
		if (op == XKV_BIN_SET && refuse == XKV_BIN_E2BIG && !key_unfit(c, &q))
			xkv_exec_delete(c, q.key, q.keylen, 0);
		put_err(b->out, &q, (__u16)refuse, NULL);
		b->used += head;
		if (b->st)
			b->st->swallow = q.vlen;
		else
			b->used += q.vlen; /* a datagram holds its frames whole (dgram_scan) */
		return 1;
	}
	size_t frame = XKV_BIN_HDR_LEN + (size_t)q.bodylen;
	if (n < frame && b->st && b->st->no_room) {
		/* no memory for its body (serve --max-buffer-mib): memcached's
		 * answer to an item it cannot allocate, the old value of a set
		 * removed, the rest swallowed as it arrives (slowpath.h) */
		STAT(c, requests);
		xkv_exec_delta(c)->v[XKV_STAT_err_oom]++;
		q.key = p + XKV_BIN_HDR_LEN + q.extlen;
		if (op == XKV_BIN_SET && !key_unfit(c, &q))
			xkv_exec_delete(c, q.key, q.keylen, 0);
		put_err(b->out, &q, XKV_BIN_ENOMEM, NULL);
		b->st->no_room = false;
		b->st->swallow = frame - n;
		b->used += n;
		return 1;
	}
	if (n < frame) {
		if (b->st)
			b->st->need = frame;
		return 0;
	}
	q.ext = p + XKV_BIN_HDR_LEN;
	q.key = q.ext + q.extlen;
	q.val = q.key + q.keylen;
	b->used += frame;
	STAT(c, requests);
	if (run_frame(b, c, &q) < 0) {
		b->close = true;
		return -1;
	}
	return b->close ? -1 : 1;
}

/* ---- TCP --------------------------------------------------------------- */

static int stream_run(struct slow_cmd *c, const struct xkv_exec_rights *rt, void *arg)
{
	struct bin_run *b = arg;
	struct xkv_slow_stream *st = b->st;
	(void)rt;

	while (b->used < b->len) {
		if (st->swallow) {
			size_t n = b->len - b->used;
			if (n > st->swallow)
				n = (size_t)st->swallow;
			b->used += n;
			st->swallow -= n;
			continue;
		}
		if (st->out_max && b->out->len >= st->out_max)
			break;
		size_t before = b->out->len;
		int r = one_frame(b, c);
		if (b->out->len > before)
			STAT(c, replies);
		if (r <= 0)
			break;
	}
	return b->close ? XKV_STREAM_CLOSE : XKV_STREAM_MORE;
}

bool xkv_bin_stream_take(struct xkv_slow *sl, const struct xkv_slow_src *src,
			 struct xkv_slow_stream *st, const __u8 *buf, size_t len, size_t *consumed,
			 struct xkv_buf *out, struct xkv_stats *delta, int *rc)
{
	if (!st->proto && len)
		st->proto = buf[0] == XKV_BIN_REQ ? XKV_STREAM_BINARY : XKV_STREAM_TEXT;
	if (st->proto != XKV_STREAM_BINARY && !(st->proto && xkv_slow_sasl(sl)))
		return false;
	*consumed = 0;
	*rc = XKV_STREAM_CLOSE;
	if (st->proto != XKV_STREAM_BINARY) { /* text while SASL is required: memcached -S closes */
		delta->v[XKV_STAT_err_client]++;
		return true;
	}
	struct bin_run b = { .sl = sl, .st = st, .buf = buf, .len = len, .out = out,
			     .authed = st->authed };
	int r = xkv_exec_run(sl, src, false, &st->rights, out, delta, stream_run, &b);
	st->authed = b.authed;
	*consumed = b.used;
	*rc = r == XKV_EXEC_REFUSED ? XKV_STREAM_CLOSE : r;
	return true;
}

/* ---- UDP --------------------------------------------------------------- */

/* Every frame whole, and none that writes from a source that may not:
 * else the datagram is dropped before any of it runs (as a text one). */
static int dgram_scan(const __u8 *p, size_t n, bool may_write)
{
	size_t off = 0;
	while (off < n) {
		if (n - off < XKV_BIN_HDR_LEN || p[off] != XKV_BIN_REQ)
			return XKV_STAT_drop_frame;
		size_t frame = XKV_BIN_HDR_LEN + (size_t)get_be32(p + off + 8);
		if (frame > n - off)
			return XKV_STAT_drop_frame;
		if (!may_write && op_writes(p[off + 1]))
			return XKV_STAT_drop_write_acl;
		off += frame;
	}
	return -1;
}

struct dgram_arg {
	struct bin_run b;
	size_t dlen;     /* the datagram's bytes, for the amplification cap */
	int sent;
};

static int dgram_run(struct slow_cmd *c, const struct xkv_exec_rights *rt, void *arg)
{
	struct dgram_arg *a = arg;
	struct bin_run *b = &a->b;
	size_t start = b->out->len;
	int drop = dgram_scan(b->buf, b->len, rt->write);

	if (drop >= 0) {
		xkv_exec_delta(c)->v[drop]++;
		return 0;
	}
	while (b->used < b->len && one_frame(b, c) > 0)
		;
	size_t n = b->out->len - start;
	/* an unverified source gets at most max_amp reply bytes per request
	 * byte (docs/security.md); over it: nothing (a binary client reads a
	 * text line as a broken frame) */
	const struct xkv_config *cfg = xkv_exec_cfg(c);
	__u64 cap = rt->trusted || !cfg->max_amp || (cfg->flags & XKV_CFG_UNGUARDED)
			    ? xkv_slow_limits_of(b->sl).max_reply
			    : (__u64)cfg->max_amp * a->dlen;
	size_t wire = n + XKV_UDP_HDR_LEN * ((n + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
	if (wire > cap) {
		b->out->len = start;
		STAT(c, drop_amp);
		return 0;
	}
	if (!n)
		return 0;
	xkv_exec_delta(c)->v[XKV_STAT_replies] += (n + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT;
	return 1;
}

bool xkv_bin_dgram_take(struct xkv_slow *sl, const struct xkv_slow_src *src, const __u8 *dgram,
			size_t len, struct xkv_udp_hdr *hdr, struct xkv_buf *out,
			struct xkv_stats *delta, int *rc)
{
	bool sasl = xkv_slow_sasl(sl) != NULL;
	if (!sasl && (len <= XKV_UDP_HDR_LEN || dgram[XKV_UDP_HDR_LEN] != XKV_BIN_REQ))
		return false;
	*rc = 0;
	if (sasl) { /* memcached -S serves no UDP: nobody is answered */
		delta->v[XKV_STAT_drop_acl]++;
		return true;
	}
	memcpy(hdr, dgram, sizeof(*hdr));
	if (hdr->total != htons(1) || hdr->seq != 0) { /* one datagram per request */
		delta->v[XKV_STAT_drop_frame]++;
		return true;
	}
	struct dgram_arg a = { .b = { .sl = sl, .buf = dgram + XKV_UDP_HDR_LEN,
				      .len = len - XKV_UDP_HDR_LEN, .out = out, .authed = true },
			       .dlen = len };
	int r = xkv_exec_run(sl, src, true, NULL, out, delta, dgram_run, &a);
	*rc = r == XKV_EXEC_REFUSED ? 0 : r;
	return true;
}
