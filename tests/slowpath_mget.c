// SPDX-License-Identifier: MIT
/* Slow path tests: multi-gets on a stream answered as the connection drains
 * (engine/mget.c): the same bytes whatever the output bound, at most the
 * bound plus one VALUE held per call, and lines longer than one parse
 * answered key by key as memcached answers them; lru_crawler metadump the
 * same way. */
#include "slowpath_test.h"

/* Feed req[0..n) to a fresh connection whose output is bounded by out_max
 * (0: none), the client reading everything after each call, until the
 * input is used up: every reply into got; the most output one call left
 * in *peak.  The number of calls (0: it stopped making progress). */
static int drained(struct env *e, const void *req, size_t n, size_t out_max, struct xkv_buf *got,
		   size_t *peak)
{
	struct conn c = { .st.out_max = out_max };
	int calls = 1;

	*peak = 0;
	feed(e, &c, req, n);
	for (;;) {
		if (c.out.len > *peak)
			*peak = c.out.len;
		tput(got, c.out.p, c.out.len);
		size_t had = c.in.len, sent = c.out.len;
		c.out.len = 0;
		if ((!c.in.len && !xkv_slow_stream_busy(&c.st)) || c.closed)
			break;
		feed(e, &c, NULL, 0);
		calls++;
		if (c.in.len == had && !c.out.len && !sent) {
			calls = 0;
			break;
		}
	}
	conn_free(&c);
	return calls;
}

/* Gets of every form, hits and misses, errors and the requests after
 * them: with out_max 0 (the reply built whole, as before replies streamed)
 * and with bounds down to one byte, byte for byte the same. */
static void mg_same(struct env *e)
{
	struct xkv_buf req = {};
	__u8 val[6000];

	clear(e);
	for (int i = 0; i < 12; i++) {
		size_t len = 1 + (size_t)i * 500;
		fill(val, len, (unsigned)i);
		tprintf(&req, "set m%d %d 0 %zu\r\n", i, i, len);
		tput(&req, val, len);
		tprintf(&req, "\r\n");
	}
	size_t set_len = req.len;
	tprintf(&req, "get m0 m1 nope m2 m3 m4 m5 m6 m7 m8 m9 m10 m11\r\n");
	tprintf(&req, "gets m11 m3 m3 nope m7\r\n");
	tprintf(&req, "gat 1000 m1 m2 missing m10\r\n");
	tprintf(&req, "gats 0 m4\r\n");
	tprintf(&req, "get m1 ");
	for (int i = 0; i < 251; i++)
		tprintf(&req, "x");
	tprintf(&req, " m2\r\n"); /* one bad key: the error alone, no VALUE */
	tprintf(&req, "get m5 m6\nget\r\nversion\r\nget m0\r\n");
	struct xkv_buf ref = {};
	size_t peak;
	struct conn s = {};
	feed(e, &s, req.p, set_len);
	conn_free(&s);
	int ok = drained(e, req.p + set_len, req.len - set_len, 0, &ref, &peak) == 1;
	int bad = 0;
	static const size_t bounds[] = { 1, 100, 1000, 4000, 20000 };
	for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		struct xkv_buf got = {};
		int calls = drained(e, req.p + set_len, req.len - set_len, bounds[b], &got, &peak);
		/* one VALUE at most past the bound: 5501 bytes and its lines */
		if (!calls || !same(&got, ref.p, ref.len) || peak > bounds[b] + 5501 + 64) {
			if (!bad)
				show_diff(got.p, got.len, ref.p, ref.len);
			printf("    out_max %zu: %d calls, at most %zu bytes out\n", bounds[b], calls, peak);
			bad++;
		}
		xkv_buf_free(&got);
	}
	const char *r = (const char *)ref.p;
	ok = ok && ref.len > 30000 && strstr(r, "VALUE m11 11 5501\r\n") &&
	     strstr(r, "CLIENT_ERROR bad command line format\r\nVALUE m5 5 2501\r\n") &&
	     strstr(r, XKV_VERSION_LINE);
	report(ok && !bad, "%s: gets of every form over an output bound of 1 to 20000 bytes: the same "
	       "%zu bytes as built whole, at most one VALUE past the bound per call", e->layout, ref.len);
	xkv_buf_free(&ref);
	xkv_buf_free(&req);
}

/* memcached reads a get line of any length: 18,725 keys on one line of
 * 187,256 bytes answer every hit, then END (observed with 1.6.18); and one
 * bad key anywhere in it is the error alone, the next line served. */
static void mg_long_line(struct env *e)
{
	struct xkv_buf req = {}, want = {};
	enum { N = 18725 };

	clear(e);
	static const int hits[] = { 0, 5, 4095, 4096, 9999, 18724 };
	for (size_t h = 0; h < sizeof(hits) / sizeof(hits[0]); h++)
		tprintf(&req, "set k%08d 0 0 3\r\nv%02zu\r\n", hits[h], h);
	struct conn s = {};
	feed(e, &s, req.p, req.len);
	conn_free(&s);
	req.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < N; i++)
		tprintf(&req, " k%08d", i);
	tprintf(&req, "\r\n");
	size_t line = req.len;
	tprintf(&req, "get k00000005\r\n");
	for (size_t h = 0, k = 0; h < (size_t)N; h++)
		if (k < sizeof(hits) / sizeof(hits[0]) && (int)h == hits[k])
			tprintf(&want, "VALUE k%08zu 0 3\r\nv%02zu\r\n", h, k++);
	tprintf(&want, "END\r\nVALUE k00000005 0 3\r\nv01\r\nEND\r\n");
	int bad = 0;
	size_t peak;
	static const size_t bounds[] = { 0, 1, 64 };
	for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		struct xkv_buf got = {};
		if (!drained(e, req.p, req.len, bounds[b], &got, &peak) ||
		    !same(&got, want.p, want.len)) {
			if (!bad)
				show_diff(got.p, got.len, want.p, want.len);
			bad++;
		}
		xkv_buf_free(&got);
	}
	report(!bad && line > 187000, "%s: a get of %d keys on one %zu-byte line: every VALUE, "
	       "then END, then the next line (output bound none, 1 and 64 bytes)", e->layout, N, line);

	/* a key of 251 bytes in the middle */
	struct xkv_buf req2 = {}, got = {};
	tprintf(&req2, "get");
	for (int i = 0; i < N; i++)
		tprintf(&req2, i == N / 2 ? " %0251d" : " k%08d", i);
	tprintf(&req2, "\r\nget k00000005\r\n");
	static const char want2[] = "CLIENT_ERROR bad command line format\r\n"
				    "VALUE k00000005 0 3\r\nv01\r\nEND\r\n";
	int ok = drained(e, req2.p, req2.len, 1000, &got, &peak) && same(&got, want2, sizeof(want2) - 1);
	if (!ok)
		print_escaped("got", got.p, got.len, 300);
	report(ok, "%s: the same line with a 251-byte key halfway: the error alone (no VALUE), the next "
	       "line served, as memcached", e->layout);
	xkv_buf_free(&got);

	/* one key of 60,000 bytes; a key after 60,000 spaces (memcached 1.6.18:
	 * the error, then v01 twice) */
	req2.len = 0;
	tprintf(&req2, "get %060000d\r\nget k00000005\r\nget", 7);
	for (int i = 0; i < 60000; i++)
		tprintf(&req2, " ");
	tprintf(&req2, "k00000005\r\nget k00000005\r\n");
	static const char want3[] = "CLIENT_ERROR bad command line format\r\n"
				    "VALUE k00000005 0 3\r\nv01\r\nEND\r\n"
				    "VALUE k00000005 0 3\r\nv01\r\nEND\r\n"
				    "VALUE k00000005 0 3\r\nv01\r\nEND\r\n";
	ok = drained(e, req2.p, req2.len, 1000, &got, &peak) && same(&got, want3, sizeof(want3) - 1);
	if (!ok)
		print_escaped("got", got.p, got.len, 300);
	report(ok, "%s: a get of one 60,000-byte key: the error; a key after 60,000 spaces: its VALUE "
	       "(as memcached)", e->layout);
	xkv_buf_free(&got);
	xkv_buf_free(&req2);
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

/* lru_crawler metadump over a bounded stream: walked a part of the store at
 * a time as the output drains; the same lines as the dump built whole. */
static void mg_metadump(struct env *e)
{
	struct xkv_buf req = {}, whole = {}, parts = {};
	size_t peak;

	clear(e);
	for (int i = 0; i < 3000; i++)
		tprintf(&req, "set md%d 0 0 5 noreply\r\nv%04d\r\n", i, i);
	struct conn s = {};
	feed(e, &s, req.p, req.len);
	conn_free(&s);
	static const char dump[] = "lru_crawler metadump all\r\nmn\r\n";
	int c0 = drained(e, dump, sizeof(dump) - 1, 0, &whole, &peak);
	int c1 = drained(e, dump, sizeof(dump) - 1, 2000, &parts, &peak);
	/* the lines in any order: the parts walk the store range by range */
	size_t nl = 0;
	for (size_t i = 0; i < whole.len; i++)
		nl += whole.p[i] == '\n';
	int ok = c0 == 1 && c1 > 2 && whole.len == parts.len && nl > 1000 &&
		 whole.len > 12 && !memcmp(whole.p + whole.len - 9, "END\r\nMN\r\n", 9) &&
		 !memcmp(parts.p + parts.len - 9, "END\r\nMN\r\n", 9);
	if (ok) {
		tput(&whole, "", 1);
		tput(&parts, "", 1);
		for (char *l = (char *)parts.p, *end; ok && (end = strchr(l, '\n')); l = end + 1) {
			*end = 0;
			ok = strstr((const char *)whole.p, l) != NULL;
			*end = '\n';
		}
	}
	report(ok, "%s: lru_crawler metadump with out_max 2000: %d calls, the same %zu lines as the "
	       "dump built whole (%zu bytes)", e->layout, c1, nl, whole.len);
	xkv_buf_free(&req);
	xkv_buf_free(&whole);
	xkv_buf_free(&parts);
}

void st_mget(struct env *e)
{
	mg_same(e);
	mg_long_line(e);
	mg_metadump(e);
}
