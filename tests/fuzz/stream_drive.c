// SPDX-License-Identifier: MIT
/* The stream driver of fuzz_stream and fuzz_meta (stream_drive.h).
 *
 * What serve_tcp.c does with a connection (conn_process, conn_read): bytes
 * are appended to an input buffer of at most TCP_IN_CAP bytes; each call of
 * xkv_slow_stream gets all unconsumed bytes; what it consumed is removed
 * from the front; the connection state (struct xkv_slow_stream) is kept
 * between calls; XKV_STREAM_CLOSE ends the connection once the replies are
 * sent.  Checked on every call:
 *   - consumed <= len, and the bytes past len are never read (ASan: they
 *     are poisoned during the call);
 *   - a full input buffer is always consumed in part or closed (else the
 *     connection would hang: serve_tcp cannot read more into it);
 *   - the replies are whole and well formed: known reply lines, a VALUE or
 *     VA line followed by its data block and \r\n, nothing cut;
 *   - once all bytes are in and a call makes no progress, what is left is
 *     an incomplete request: no line end, or a storage command's line
 *     waiting for its data block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sanitizer/asan_interface.h>
#include "slowpath.h"
#include "binproto.h"
#include "stream_drive.h"

#define TCP_IN_CAP XKV_STREAM_BIG_REQ_MAX /* serve_tcp.c */
#define TCP_OUT_HIGH (256 * 1024)         /* serve_tcp.c: out_max above what is queued */

/* A chunk size from a schedule byte: 00xxxxxx 1..8 bytes, 01xxxxxx up to
 * 190, 10xxxxxx up to ~6 KiB, 11xxxxxx all that is left. */
static size_t chunk_of(__u8 b, size_t left)
{
	size_t n;
	switch (b >> 6) {
	case 0: n = 1 + (b & 7); break;
	case 1: n = 1 + (size_t)(b & 0x3f) * 3; break;
	case 2: n = 1 + (size_t)(b & 0x3f) * 97; break;
	default: n = left; break;
	}
	return n < left ? n : left;
}

__attribute__((noreturn)) static void dump_and_abort(const char *why, const __u8 *p, size_t len, size_t at)
{
	fprintf(stderr, "stream: %s at reply byte %zu of %zu; around it: \"", why, at, len);
	size_t from = at > 80 ? at - 80 : 0;
	for (size_t i = from; i < len && i < at + 80; i++) {
		if (p[i] == '\r')
			fputs("\\r", stderr);
		else if (p[i] == '\n')
			fputs("\\n", stderr);
		else if (p[i] < 0x20 || p[i] >= 0x7f)
			fprintf(stderr, "\\x%02x", p[i]);
		else
			fputc(p[i], stderr);
	}
	fputs("\"\n", stderr);
	abort();
}

/* Is w[0..n) one of the words a reply line starts with, or a number? */
static int reply_word(const __u8 *w, size_t n)
{
	static const char *const words[] = {
		"END", "STORED", "NOT_STORED", "EXISTS", "NOT_FOUND", "DELETED", "TOUCHED", "OK",
		"ERROR", "CLIENT_ERROR", "SERVER_ERROR", "VERSION", "STAT", "HD", "EN", "NF", "NS",
		"EX", "MN", "ME", "RESET", "BADCLASS",
		"ERROR:", /* shutdown: "ERROR: shutdown not enabled", as memcached */
		NULL,
	};
	if (!n)
		return 0;
	size_t d = 0;
	while (d < n && w[d] >= '0' && w[d] <= '9')
		d++;
	if (d == n)
		return n <= 20; /* incr/decr: a u64 */
	for (int i = 0; words[i]; i++)
		if (strlen(words[i]) == n && !memcmp(words[i], w, n))
			return 1;
	return 0;
}

/* Token t (0-based, space separated) of line p[0..n): its start and length. */
static int line_tok(const __u8 *p, size_t n, int t, const __u8 **s, size_t *len)
{
	size_t i = 0;
	for (int k = 0;; k++) {
		while (i < n && p[i] == ' ')
			i++;
		if (i >= n)
			return -1;
		size_t b = i;
		while (i < n && p[i] != ' ')
			i++;
		if (k == t) {
			*s = p + b;
			*len = i - b;
			return 0;
		}
	}
}

static int tok_num(const __u8 *s, size_t n, __u64 *v)
{
	*v = 0;
	if (!n || n > 10)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (s[i] - '0');
	}
	return 0;
}

/* The replies of one call, out[0..len): whole and well formed. */
static void check_replies(const __u8 *out, size_t len)
{
	size_t i = 0;
	while (i < len) {
		const __u8 *nl = memchr(out + i, '\n', len - i);
		if (!nl)
			dump_and_abort("reply line without \\n", out, len, i);
		size_t n = (size_t)(nl - (out + i));
		/* lru_crawler metadump's item lines end in \n alone, as memcached's */
		if (n > 4 && !memcmp(out + i, "key=", 4) && out[i + n - 1] != '\r') {
			i += n + 1;
			continue;
		}
		if (n == 0 || out[i + n - 1] != '\r')
			dump_and_abort("reply line not ended by \\r\\n", out, len, i);
		const __u8 *line = out + i, *w;
		size_t wl, data = 0;
		__u64 v;
		n--; /* without \r */
		if (line_tok(line, n, 0, &w, &wl))
			dump_and_abort("empty reply line", out, len, i);
		if (wl == 5 && !memcmp(w, "VALUE", 5)) {
			const __u8 *b;
			size_t bl;
			if (line_tok(line, n, 3, &b, &bl) || tok_num(b, bl, &v))
				dump_and_abort("VALUE line without <bytes>", out, len, i);
			data = (size_t)v + 2;
		} else if (wl == 2 && !memcmp(w, "VA", 2)) {
			const __u8 *b;
			size_t bl;
			if (line_tok(line, n, 1, &b, &bl) || tok_num(b, bl, &v))
				dump_and_abort("VA line without <bytes>", out, len, i);
			data = (size_t)v + 2;
		} else if (!reply_word(w, wl)) {
			dump_and_abort("unknown reply line", out, len, i);
		}
		i += n + 2;
		if (data) {
			if (len - i < data)
				dump_and_abort("data block cut", out, len, i);
			if (out[i + data - 2] != '\r' || out[i + data - 1] != '\n')
				dump_and_abort("data block not ended by \\r\\n", out, len, i + data - 2);
			i += data;
		}
	}
}

/* The binary responses of one call (a connection whose first byte was 0x80,
 * engine/binproto.c): whole frames, magic 0x81, key and extras inside the
 * body their header says. */
static __u32 be32_at(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static void check_bin_replies(const __u8 *out, size_t len)
{
	size_t i = 0;
	while (i < len) {
		if (len - i < XKV_BIN_HDR_LEN)
			dump_and_abort("binary response cut in its header", out, len, i);
		if (out[i] != XKV_BIN_RES)
			dump_and_abort("binary response without magic 0x81", out, len, i);
		__u32 body = be32_at(out + i + 8);
		if ((__u32)(out[i + 2] << 8 | out[i + 3]) + out[i + 4] > body)
			dump_and_abort("binary response: key and extras past its body", out, len, i);
		if (len - i - XKV_BIN_HDR_LEN < body)
			dump_and_abort("binary response body cut", out, len, i);
		i += XKV_BIN_HDR_LEN + body;
	}
}

/* The bytes after a request's header the engine needs before it answers:
 * its body, or its extras and key where they claim more (memcached reads
 * the header, extras and key before it looks at any of them, and waits for
 * them: engine/binproto.c). */
static size_t bin_frame_body(const __u8 *h)
{
	size_t body = be32_at(h + 8), head = (size_t)h[4] + (size_t)(h[2] << 8 | h[3]);
	return head > body ? head : body;
}

/* What is left once all bytes are in and nothing more runs: an incomplete
 * request (no \n yet, or a storage command's line waiting for its data). */
static void check_rest(const __u8 *p, size_t len)
{
	static const char *const storage[] = { "set", "add", "replace", "append", "prepend",
					       "cas", "ms", NULL };
	const __u8 *nl = memchr(p, '\n', len);
	const __u8 *w;
	size_t wl;

	if (!nl)
		return;
	if (line_tok(p, (size_t)(nl - p), 0, &w, &wl) == 0)
		for (int i = 0; storage[i]; i++)
			if (strlen(storage[i]) == wl && !memcmp(storage[i], w, wl))
				return;
	fprintf(stderr, "stream: %zu bytes left unconsumed, a whole line among them: \"%.*s\"\n", len,
		(int)(nl - p < 120 ? nl - p : 120), (const char *)p);
	abort();
}

size_t sd_run(struct fuzz_env *e, const __u8 *text, size_t len, const struct sd_plan *plan)
{
	struct xkv_slow *sl = xkv_slow_new(&e->s, NULL);
	struct xkv_slow_stream st = { 0 };
	struct xkv_stats delta = { 0 };
	struct xkv_buf out = { 0 };
	size_t in_len = 0, fed = 0, replied = 0, k = 0;
	/* the input buffer at its largest, as serve_tcp grows it */
	size_t cap = len < TCP_IN_CAP ? len : TCP_IN_CAP;
	__u8 *in = malloc(cap ? cap : 1);

	FUZZ_CHECK(sl && in, "out of memory");
	for (;;) {
		/* conn_read: what arrives next, as far as the buffer takes it */
		if (fed < len && in_len < cap) {
			size_t n = chunk_of(plan->nsched ? plan->sched[k++ % plan->nsched] : 0xff, len - fed);
			if (n > cap - in_len)
				n = cap - in_len;
			memcpy(in + in_len, text + fed, n);
			in_len += n;
			fed += n;
		}
		if (!in_len) {
			if (fed == len)
				break;
			continue;
		}
		/* conn_process */
		size_t used = (size_t)-1, before = out.len;
		st.out_max = plan->out_small ? 64 : TCP_OUT_HIGH;
		ASAN_POISON_MEMORY_REGION(in + in_len, cap - in_len);
		int rc = xkv_slow_stream(sl, NULL, &st, in, in_len, &used, &out, &delta);
		ASAN_UNPOISON_MEMORY_REGION(in + in_len, cap - in_len);
		FUZZ_CHECK(rc == XKV_STREAM_MORE || rc == XKV_STREAM_CLOSE, "rc %d", rc);
		FUZZ_CHECK(used <= in_len, "consumed %zu of %zu", used, in_len);
		if (st.proto == XKV_STREAM_BINARY)
			check_bin_replies(out.p, out.len);
		else
			check_replies(out.p, out.len);
		size_t got = out.len - before;
		replied += out.len;
		out.len = 0; /* sent */
		if (rc == XKV_STREAM_CLOSE)
			break;
		/* a reply in parts (a multi-get, a metadump): the rest once out has
		 * drained, each call a part of it */
		if (!used && xkv_slow_stream_busy(&st)) {
			FUZZ_CHECK(got, "a reply in parts made no progress");
			continue;
		}
		if (used) {
			memmove(in, in + used, in_len - used);
			in_len -= used;
			continue;
		}
		FUZZ_CHECK(in_len < TCP_IN_CAP, "a full input buffer (%zu bytes) made no progress", in_len);
		if (fed == len) {
			/* no progress, nothing more to come: an incomplete request */
			FUZZ_CHECK(out.len == before || before == 0, "replies without progress");
			if (st.proto != XKV_STREAM_BINARY)
				check_rest(in, in_len);
			else if (in_len >= XKV_BIN_HDR_LEN && in_len >= XKV_BIN_HDR_LEN + bin_frame_body(in))
				dump_and_abort("a whole binary frame left unconsumed", in, in_len, 0);
			break;
		}
	}
	xkv_buf_free(&out);
	free(in);
	xkv_slow_free(sl);
	return replied;
}
