// SPDX-License-Identifier: MIT
/* Slow path tests.
 *   test_slowpath unit    every layout, in-process: exact reply texts of
 *                         xkv_slow_handle, framing, counters, stats.
 *   test_slowpath daemon  xkv_serve on lo in a thread, real UDP clients over
 *                         127.0.0.1 and ::1.
 * No XDP attach: the BPF object is loaded in-process and its maps used. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include "xdpkv.h"
#include "fnv.h"
#include "slowpath.h"

#define REQ_ID 0x1234
#define VAL_CAP 8192
#define ENTRIES 4096
#define MAX_FRAMES 4096

static int n_pass, n_fail;

static void report(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s ", ok ? "PASS" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	if (ok)
		n_pass++;
	else
		n_fail++;
}

/* ---- text helpers --------------------------------------------------------- */

static void tprintf(struct xkv_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *tmp = malloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(tmp, (size_t)n + 1, fmt, ap);
	va_end(ap);
	xkv_buf_put(b, tmp, (size_t)n);
	free(tmp);
}

static void tput(struct xkv_buf *b, const void *p, size_t n)
{
	xkv_buf_put(b, p, n);
}

/* Print up to max bytes of p, escaping \r \n and non-printables. */
static void print_escaped(const char *label, const __u8 *p, size_t n, size_t max)
{
	printf("    %s (%zu bytes): \"", label, n);
	for (size_t i = 0; i < n && i < max; i++) {
		if (p[i] == '\r')
			printf("\\r");
		else if (p[i] == '\n')
			printf("\\n");
		else if (p[i] < 0x20 || p[i] >= 0x7f)
			printf("\\x%02x", p[i]);
		else
			putchar(p[i]);
	}
	printf(n > max ? "\"...\n" : "\"\n");
}

/* Show where two texts part. */
static void show_diff(const __u8 *got, size_t gl, const __u8 *want, size_t wl)
{
	size_t i = 0;
	while (i < gl && i < wl && got[i] == want[i])
		i++;
	size_t from = i > 40 ? i - 40 : 0;
	printf("    first difference at byte %zu\n", i);
	print_escaped("want", want + from, wl - from, 160);
	print_escaped("got ", got + from, gl - from, 160);
}

static void short_name(char *dst, size_t n, const void *src, size_t len)
{
	const __u8 *p = src;
	size_t o = 0;
	for (size_t i = 0; i < len && o + 4 < n; i++) {
		if (p[i] == '\r' || p[i] == '\n') {
			dst[o++] = '\\';
			dst[o++] = p[i] == '\r' ? 'r' : 'n';
		} else {
			dst[o++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
		}
	}
	if (o + 4 >= n)
		memcpy(dst + o - 3, "...", 3);
	dst[o] = 0;
}

/* ---- store in-process ------------------------------------------------------ */

struct env {
	const char *layout;
	struct bpf_object *obj;
	struct xkv_store s;
	struct xkv_stats delta;
};

static int env_open(struct env *e, const char *layout, __u32 entries, __u32 val_cap)
{
	char err[XKV_ERRLEN];
	struct xkv_config cfg;

	memset(e, 0, sizeof(*e));
	e->layout = layout;
	if (xkv_config_defaults(&cfg, layout)) {
		printf("FAIL %s: xkv_config_defaults\n", layout);
		return -1;
	}
	cfg.entries = entries;
	cfg.val_cap = val_cap;
	cfg.key_cap = XKV_KEY_MAX;
	if (xkv_config_finish(&cfg, err, sizeof(err))) {
		printf("FAIL %s: config: %s\n", layout, err);
		return -1;
	}
	e->obj = xkv_object_open(&cfg, err, sizeof(err));
	if (!e->obj) {
		printf("FAIL %s: open: %s\n", layout, err);
		return -1;
	}
	if (xkv_object_load(e->obj, err, sizeof(err)) ||
	    xkv_store_from_object(&e->s, NULL, e->obj, err, sizeof(err))) {
		printf("FAIL %s: load: %s\n", layout, err);
		bpf_object__close(e->obj);
		e->obj = NULL;
		return -1;
	}
	return 0;
}

static void env_close(struct env *e)
{
	xkv_store_close(&e->s);
	bpf_object__close(e->obj);
	e->obj = NULL;
}

static __u8 dgram_buf[70000];

static size_t mkdgram(__u8 *d, __u16 id, __u16 seq, __u16 total, const void *text, size_t len)
{
	struct xkv_udp_hdr h = { htons(id), htons(seq), htons(total), 0 };
	memcpy(d, &h, sizeof(h));
	memcpy(d + 8, text, len);
	return len + 8;
}

/* One request datagram (frame header added) through the slow path. */
static int ask_hdr(struct env *e, __u16 seq, __u16 total, const void *req, size_t len,
		   struct xkv_buf *out, struct xkv_udp_hdr *h)
{
	size_t dl = mkdgram(dgram_buf, REQ_ID, seq, total, req, len);
	out->len = 0;
	return xkv_slow_handle(&e->s, dgram_buf, dl, h, out, &e->delta);
}

static int ask(struct env *e, const void *req, size_t len, struct xkv_buf *out)
{
	struct xkv_udp_hdr h;
	return ask_hdr(e, 0, 1, req, len, out, &h);
}

static void expect_hdr(struct env *e, const char *what, __u16 seq, __u16 total, const void *req,
		       size_t rl, const void *want, size_t wl)
{
	struct xkv_buf out = {};
	struct xkv_udp_hdr h = {};
	char name[72];
	int ret = ask_hdr(e, seq, total, req, rl, &out, &h);
	int ok = out.len == wl && (!wl || !memcmp(out.p, want, wl)) && ret == (wl > 0) &&
		 h.req_id == htons(REQ_ID);

	if (!what) {
		short_name(name, sizeof(name), req, rl);
		what = name;
	}
	report(ok, "%s: %s", e->layout, what);
	if (!ok) {
		printf("    handle returned %d, req_id %#x\n", ret, ntohs(h.req_id));
		show_diff(out.p ? out.p : (const __u8 *)"", out.len, want, wl);
	}
	xkv_buf_free(&out);
}

static void expect_n(struct env *e, const char *what, const void *req, size_t rl,
		     const void *want, size_t wl)
{
	expect_hdr(e, what, 0, 1, req, rl, want, wl);
}

#define EXPECT(e, req, want) expect_n(e, NULL, req, sizeof(req) - 1, want, sizeof(want) - 1)
#define EXPECTB(e, what, req, want) expect_n(e, what, (req)->p, (req)->len, (want)->p, (want)->len)
/* request in a buffer, reply a literal */
#define EXPECTL(e, what, req, lit) expect_n(e, what, (req)->p, (req)->len, lit, sizeof(lit) - 1)

static void flush_store(struct env *e)
{
	int r = e->s.L->flush(&e->s);
	if (r)
		report(0, "%s: flush accessor returned %d", e->layout, r);
}

/* ---- framing -------------------------------------------------------------- */

struct frames {
	int n;
	size_t len[MAX_FRAMES];
	__u8 d[MAX_FRAMES][XKV_DGRAM_MAX + 64];
};

static int collect(void *arg, const __u8 *dgram, size_t dlen)
{
	struct frames *f = arg;
	if (f->n >= MAX_FRAMES || dlen > sizeof(f->d[0]))
		return -E2BIG;
	memcpy(f->d[f->n], dgram, dlen);
	f->len[f->n++] = dlen;
	return 0;
}

/* Put frames together by sequence number (they are walked backwards, so the
 * order they came in does not matter).  Checks sizes, ids and totals;
 * 0 and the text in *text, or -1 with the reason in why. */
static int reassemble(const struct frames *f, __u16 req_id_be, struct xkv_buf *text, char *why, size_t wl)
{
	static const __u8 *by_seq[MAX_FRAMES];
	static size_t len_seq[MAX_FRAMES];
	int total = -1;

	memset(by_seq, 0, sizeof(by_seq));
	if (f->n == 0)
		return snprintf(why, wl, "no datagrams"), -1;
	for (int i = f->n - 1; i >= 0; i--) {
		struct xkv_udp_hdr h;
		if (f->len[i] < 8 || f->len[i] > XKV_DGRAM_MAX)
			return snprintf(why, wl, "datagram %d has %zu bytes", i, f->len[i]), -1;
		memcpy(&h, f->d[i], 8);
		int seq = ntohs(h.seq), tot = ntohs(h.total);
		if (h.req_id != req_id_be || h.reserved)
			return snprintf(why, wl, "datagram %d: req_id %#x reserved %u", i,
					ntohs(h.req_id), ntohs(h.reserved)), -1;
		if (total < 0)
			total = tot;
		if (tot != total || seq >= tot || by_seq[seq])
			return snprintf(why, wl, "datagram %d: seq %d total %d (first total %d)", i, seq,
					tot, total), -1;
		by_seq[seq] = f->d[i] + 8;
		len_seq[seq] = f->len[i] - 8;
	}
	if (total != f->n)
		return snprintf(why, wl, "total %d but %d datagrams", total, f->n), -1;
	text->len = 0;
	for (int s = 0; s < total; s++) {
		if (s < total - 1 && len_seq[s] != XKV_DGRAM_TEXT)
			return snprintf(why, wl, "datagram seq %d not full: %zu text bytes", s, len_seq[s]), -1;
		tput(text, by_seq[s], len_seq[s]);
	}
	return 0;
}

/* The reply of req, framed, must reassemble to want in ndgrams datagrams. */
static void expect_framed(struct env *e, const char *what, const struct xkv_buf *req,
			  const struct xkv_buf *want, int ndgrams)
{
	static struct frames f;
	struct xkv_buf out = {}, text = {};
	struct xkv_udp_hdr h;
	char why[200] = "";

	ask_hdr(e, 0, 1, req->p, req->len, &out, &h);
	f.n = 0;
	int n = xkv_slow_frame(h.req_id, out.p, out.len, collect, &f);
	int ok = n == ndgrams && n == f.n && !reassemble(&f, htons(REQ_ID), &text, why, sizeof(why)) &&
		 text.len == want->len && !memcmp(text.p, want->p, want->len);
	report(ok, "%s: %s: %d datagrams reassemble by seq", e->layout, what, ndgrams);
	if (!ok) {
		printf("    frame returned %d (want %d), %d collected; %s\n", n, ndgrams, f.n, why);
		show_diff(text.p ? text.p : (const __u8 *)"", text.len, want->p, want->len);
	}
	xkv_buf_free(&out);
	xkv_buf_free(&text);
}

/* ---- the unit tests ------------------------------------------------------- */

static void t_basic(struct env *e)
{
	flush_store(e);
	EXPECT(e, "version\r\n", "VERSION xdpkv 0.1.0\r\n");
	EXPECT(e, "get nothere\r\n", "END\r\n");
	EXPECT(e, "set k1 5 0 3\r\nabc\r\n", "STORED\r\n");
	EXPECT(e, "get k1\r\n", "VALUE k1 5 3\r\nabc\r\nEND\r\n");
	EXPECT(e, "set k1 4294967295 0 0\r\n\r\n", "STORED\r\n");
	EXPECT(e, "get k1\r\n", "VALUE k1 4294967295 0\r\n\r\nEND\r\n");
	EXPECT(e, "set gone 0 -1 2\r\nxy\r\n", "STORED\r\n");
	EXPECT(e, "get gone\r\n", "END\r\n");
	EXPECT(e, "delete gone\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "set later 0 100 2\r\nxy\r\n", "STORED\r\n");
	EXPECT(e, "get later\r\n", "VALUE later 0 2\r\nxy\r\nEND\r\n");
	EXPECT(e, "delete k1\r\n", "DELETED\r\n");
	EXPECT(e, "delete k1\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "get k1\r\n", "END\r\n");
	EXPECT(e, "set k2 0 0 1 noreply\r\nz\r\n", "");
	EXPECT(e, "get k2\r\n", "VALUE k2 0 1\r\nz\r\nEND\r\n");
	EXPECT(e, "delete k2 0\r\n", "DELETED\r\n");
	EXPECT(e, "set k2 0 0 1\r\nz\r\n", "STORED\r\n");
	EXPECT(e, "delete k2 noreply\r\n", "");
	EXPECT(e, "get k2\r\n", "END\r\n");
	EXPECT(e, "delete k2 noreply\r\n", "");
}

static void t_add_replace(struct env *e)
{
	flush_store(e);
	EXPECT(e, "replace r 0 0 1\r\nA\r\n", "NOT_STORED\r\n");
	EXPECT(e, "get r\r\n", "END\r\n");
	EXPECT(e, "add r 3 0 1\r\nB\r\n", "STORED\r\n");
	EXPECT(e, "add r 0 0 1\r\nC\r\n", "NOT_STORED\r\n");
	EXPECT(e, "get r\r\n", "VALUE r 3 1\r\nB\r\nEND\r\n");
	EXPECT(e, "replace r 7 0 2\r\nDD\r\n", "STORED\r\n");
	EXPECT(e, "get r\r\n", "VALUE r 7 2\r\nDD\r\nEND\r\n");
	EXPECT(e, "add r 0 0 1 noreply\r\nE\r\n", "");
	EXPECT(e, "replace nope 0 0 1 noreply\r\nE\r\n", "");
	EXPECT(e, "get r nope\r\n", "VALUE r 7 2\r\nDD\r\nEND\r\n");
	/* an expired item does not block add, and cannot be replaced */
	EXPECT(e, "set old 0 -1 1\r\nx\r\n", "STORED\r\n");
	EXPECT(e, "replace old 0 0 1\r\ny\r\n", "NOT_STORED\r\n");
	EXPECT(e, "add old 0 0 1\r\nz\r\n", "STORED\r\n");
	EXPECT(e, "get old\r\n", "VALUE old 0 1\r\nz\r\nEND\r\n");
}

static void t_arith(struct env *e)
{
	struct xkv_item it;

	flush_store(e);
	EXPECT(e, "incr n 1\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "decr n 1\r\n", "NOT_FOUND\r\n");
	EXPECT(e, "incr n 1 noreply\r\n", "");
	EXPECT(e, "set n 77 100 2\r\n10\r\n", "STORED\r\n");
	int r1 = e->s.L->get(&e->s, "n", 1, &it);
	__u64 exp_before = it.expire_ns;
	EXPECT(e, "incr n 5\r\n", "15\r\n");
	EXPECT(e, "get n\r\n", "VALUE n 77 2\r\n15\r\nEND\r\n");
	EXPECT(e, "incr n 85\r\n", "100\r\n");
	EXPECT(e, "get n\r\n", "VALUE n 77 3\r\n100\r\nEND\r\n");
	EXPECT(e, "decr n 1\r\n", "99\r\n");
	EXPECT(e, "get n\r\n", "VALUE n 77 2\r\n99\r\nEND\r\n");
	int r2 = e->s.L->get(&e->s, "n", 1, &it);
	report(r1 == 1 && r2 == 1 && exp_before != 0 && it.expire_ns == exp_before && it.flags == 77,
	       "%s: incr/decr keep flags and expiry (expire_ns %llu -> %llu)", e->layout,
	       (unsigned long long)exp_before, (unsigned long long)it.expire_ns);
	EXPECT(e, "decr n 1000\r\n", "0\r\n");
	EXPECT(e, "get n\r\n", "VALUE n 77 1\r\n0\r\nEND\r\n");
	EXPECT(e, "incr n 7 noreply\r\n", "");
	EXPECT(e, "get n\r\n", "VALUE n 77 1\r\n7\r\nEND\r\n");
	EXPECT(e, "set big 0 0 20\r\n18446744073709551615\r\n", "STORED\r\n");
	EXPECT(e, "incr big 2\r\n", "1\r\n");
	EXPECT(e, "decr big 18446744073709551615\r\n", "0\r\n");
	EXPECT(e, "incr big 18446744073709551615\r\n", "18446744073709551615\r\n");
	EXPECT(e, "set txt 0 0 3\r\nabc\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "set txt 0 0 0\r\n\r\n", "STORED\r\n");
	EXPECT(e, "decr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "set txt 0 0 20\r\n18446744073709551616\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "set txt 0 0 3\r\n-12\r\n", "STORED\r\n");
	EXPECT(e, "incr txt 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	EXPECT(e, "incr n abc\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "incr n -1\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "incr n\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "set ex 0 -1 1\r\n5\r\n", "STORED\r\n");
	EXPECT(e, "incr ex 1\r\n", "NOT_FOUND\r\n");
}

static void t_errors(struct env *e)
{
	struct xkv_buf req = {}, want = {};
	char key251[252];

	flush_store(e);
	EXPECT(e, "bogus\r\n", "ERROR\r\n");
	EXPECT(e, "get\r\n", "ERROR\r\n");
	EXPECT(e, "\r\n", "ERROR\r\n");
	EXPECT(e, "set k 0 0\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "set k x 0 1\r\na\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "delete\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "delete k 5\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "version extra\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "flush_all soon\r\n", "CLIENT_ERROR bad command line format\r\n");
	EXPECT(e, "stats items\r\n", "ERROR\r\n");
	EXPECT(e, "set k 0 0 5\r\nabc\r\n", "CLIENT_ERROR bad data chunk\r\n");
	EXPECT(e, "set k 0 0 2\r\nabcd\r\n", "CLIENT_ERROR bad data chunk\r\n");
	EXPECT(e, "get k", "CLIENT_ERROR line not terminated by \\r\\n\r\n");
	EXPECT(e, "get k\n", "CLIENT_ERROR line not terminated by \\r\\n\r\n");
	EXPECT(e, "", "CLIENT_ERROR line not terminated by \\r\\n\r\n");
	EXPECT(e, "get a\tb\r\n", "CLIENT_ERROR bad key\r\n");
	EXPECT(e, "set k 0 0 8193\r\n", "SERVER_ERROR object too large for cache\r\n");
	expect_hdr(e, "multi-datagram request (total 2)", 0, 2, "get k\r\n", 7,
		   XKV_R_MULTI_DGRAM, strlen(XKV_R_MULTI_DGRAM));
	expect_hdr(e, "multi-datagram request (seq 1)", 1, 1, "get k\r\n", 7,
		   XKV_R_MULTI_DGRAM, strlen(XKV_R_MULTI_DGRAM));

	memset(key251, 'k', 251);
	key251[251] = 0;
	tprintf(&req, "get %s\r\n", key251);
	EXPECTL(e, "get of a 251-byte key", &req, XKV_R_KEY_LONG);
	req.len = 0;
	tprintf(&req, "set %.250s 0 0 1\r\nv\r\n", key251);
	EXPECTL(e, "set of a 250-byte key", &req, "STORED\r\n");

	/* keys past the parser's 32 checked tokens are checked too */
	req.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 40; i++) {
		if (i == 36)
			tprintf(&req, " %s", key251);
		else
			tprintf(&req, " k%d", i);
	}
	tprintf(&req, "\r\n");
	want.len = 0;
	tprintf(&want, "%s", XKV_R_KEY_LONG);
	EXPECTB(e, "get with a long 37th key", &req, &want);
	req.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 40; i++)
		tprintf(&req, " k%d%s", i, i == 38 ? "\x01" : "");
	tprintf(&req, "\r\n");
	want.len = 0;
	tprintf(&want, "%s", XKV_R_KEY_BAD);
	EXPECTB(e, "get with a control character in the 39th key", &req, &want);

	/* more keys than the parser's token array */
	req.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 5000; i++)
		tprintf(&req, " a");
	tprintf(&req, "\r\n");
	want.len = 0;
	tprintf(&want, "%s", XKV_R_FORMAT);
	EXPECTB(e, "get with 5000 keys", &req, &want);

	/* a parse error ends the datagram */
	EXPECT(e, "version\r\nbogus\r\nversion\r\n", "VERSION xdpkv 0.1.0\r\nERROR\r\n");
	EXPECT(e, "set q 0 0 5\r\nabc\r\nget q\r\n", "CLIENT_ERROR bad data chunk\r\n");

	/* a datagram too short for a frame header gets no answer */
	struct xkv_buf out = {};
	struct xkv_udp_hdr h;
	int ret = xkv_slow_handle(&e->s, (const __u8 *)"\0\1\0", 3, &h, &out, &e->delta);
	report(ret == 0 && out.len == 0, "%s: 3-byte datagram: no reply (ret %d, %zu bytes)",
	       e->layout, ret, out.len);
	xkv_buf_free(&out);
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

static void t_multi_cmd(struct env *e)
{
	flush_store(e);
	EXPECT(e, "get k\r\nversion\r\n", "END\r\nVERSION xdpkv 0.1.0\r\n");
	EXPECT(e, "set a 1 0 1\r\nA\r\nset b 2 0 2 noreply\r\nBB\r\nget a b c\r\ndelete a\r\n"
		  "get a b\r\nincr c 1\r\nadd c 0 0 1\r\n9\r\nincr c 1\r\nversion\r\n",
	       "STORED\r\nVALUE a 1 1\r\nA\r\nVALUE b 2 2\r\nBB\r\nEND\r\nDELETED\r\n"
	       "VALUE b 2 2\r\nBB\r\nEND\r\nNOT_FOUND\r\nSTORED\r\n10\r\nVERSION xdpkv 0.1.0\r\n");
	EXPECT(e, "delete b noreply\r\nset c 0 0 1 noreply\r\nx\r\n", "");
	EXPECT(e, "get b c\r\n", "VALUE c 0 1\r\nx\r\nEND\r\n");
}

static void t_flush(struct env *e)
{
	flush_store(e);
	EXPECT(e, "set f1 0 0 1\r\n1\r\nset f2 0 0 1\r\n2\r\n", "STORED\r\nSTORED\r\n");
	long c1 = e->s.L->count(&e->s);
	EXPECT(e, "flush_all\r\n", "OK\r\n");
	long c2 = e->s.L->count(&e->s);
	report(c1 == 2 && c2 == 0, "%s: flush_all empties the store (%ld -> %ld items)", e->layout, c1, c2);
	EXPECT(e, "get f1 f2\r\n", "END\r\n");
	EXPECT(e, "set f1 0 0 1\r\n1\r\n", "STORED\r\n");
	EXPECT(e, "flush_all 10\r\n", "OK\r\n");
	EXPECT(e, "get f1\r\n", "END\r\n");
	EXPECT(e, "set f1 0 0 1\r\n1\r\n", "STORED\r\n");
	EXPECT(e, "flush_all 0 noreply\r\n", "");
	EXPECT(e, "get f1\r\n", "END\r\n");
	EXPECT(e, "set f1 0 0 1\r\n1\r\nflush_all noreply\r\nget f1\r\n", "STORED\r\nEND\r\n");
}

static void fill(__u8 *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (__u8)('!' + (i * 7 + seed * 13) % 90);
}

static void t_large(struct env *e)
{
	static __u8 val[VAL_CAP + 1];
	struct xkv_buf req = {}, want = {};

	flush_store(e);
	fill(val, sizeof(val), 1);
	tprintf(&req, "set big 42 0 5000\r\n");
	tput(&req, val, 5000);
	tprintf(&req, "\r\n");
	EXPECTL(e, "set of 5000 bytes", &req, "STORED\r\n");

	req.len = 0;
	tprintf(&req, "get big\r\n");
	tprintf(&want, "VALUE big 42 5000\r\n");
	tput(&want, val, 5000);
	tprintf(&want, "\r\nEND\r\n");
	EXPECTB(e, "get of 5000 bytes", &req, &want);
	expect_framed(e, "get of 5000 bytes", &req, &want, (int)((want.len + 1391) / 1392));

	/* exactly the value cap, and one byte over */
	req.len = 0;
	tprintf(&req, "set cap 0 0 %d\r\n", VAL_CAP);
	tput(&req, val, VAL_CAP);
	tprintf(&req, "\r\nget cap\r\n");
	want.len = 0;
	tprintf(&want, "STORED\r\nVALUE cap 0 %d\r\n", VAL_CAP);
	tput(&want, val, VAL_CAP);
	tprintf(&want, "\r\nEND\r\n");
	EXPECTB(e, "set+get of exactly --value-size bytes", &req, &want);
	req.len = 0;
	tprintf(&req, "set cap 0 0 %d\r\n", VAL_CAP + 1);
	tput(&req, val, VAL_CAP + 1);
	tprintf(&req, "\r\n");
	want.len = 0;
	tprintf(&want, "%s", XKV_R_TOO_LARGE);
	EXPECTB(e, "set of --value-size + 1 bytes", &req, &want);

	/* a reply of exactly one full datagram, and one byte more */
	for (int extra = 0; extra < 2; extra++) {
		/* "VALUE e 0 NNNN\r\n" (16) + data + "\r\nEND\r\n" (7) */
		int n = XKV_DGRAM_TEXT - 16 - 7 + extra;
		req.len = 0;
		tprintf(&req, "set e 0 0 %d\r\n", n);
		tput(&req, val, (size_t)n);
		tprintf(&req, "\r\n");
		ask(e, req.p, req.len, &want);
		req.len = 0;
		tprintf(&req, "get e\r\n");
		want.len = 0;
		tprintf(&want, "VALUE e 0 %d\r\n", n);
		tput(&want, val, (size_t)n);
		tprintf(&want, "\r\nEND\r\n");
		expect_framed(e, extra ? "reply of 1393 bytes" : "reply of 1392 bytes", &req, &want, 1 + extra);
	}
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

/* n keys whose array_fnv slots differ (so no layout overwrites another). */
static int pick_keys(char keys[][16], int n, __u32 entries)
{
	static __u8 used[1 << 16];
	int got = 0;
	memset(used, 0, sizeof(used));
	for (int i = 0; got < n && i < 100000; i++) {
		char k[16];
		snprintf(k, sizeof(k), "mk%05d", i);
		__u32 slot = (__u32)(xkv_fnv1a((const __u8 *)k, (__u32)strlen(k)) % entries);
		if (used[slot])
			continue;
		used[slot] = 1;
		strcpy(keys[got++], k);
	}
	return got;
}

static void t_multiget(struct env *e)
{
	static char keys[200][16];
	static __u8 val[400];
	struct xkv_buf req = {}, want = {};

	flush_store(e);
	pick_keys(keys, 200, ENTRIES);
	fill(val, sizeof(val), 3);
	for (int i = 0; i < 200; i++) {
		if (i % 10 == 9)
			continue; /* every tenth key is never stored: a miss */
		req.len = 0;
		tprintf(&req, "set %s %d 0 %d\r\n", keys[i], i, i % 300 + 1);
		tput(&req, val + i % 50, (size_t)(i % 300 + 1));
		tprintf(&req, "\r\n");
		ask(e, req.p, req.len, &want);
		if (want.len != 8 || memcmp(want.p, "STORED\r\n", 8))
			report(0, "%s: multi-get setup: set %s", e->layout, keys[i]);
	}
	req.len = 0;
	want.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 200; i++) {
		tprintf(&req, " %s", keys[i]);
		if (i % 10 == 9)
			continue;
		tprintf(&want, "VALUE %s %d %d\r\n", keys[i], i, i % 300 + 1);
		tput(&want, val + i % 50, (size_t)(i % 300 + 1));
		tprintf(&want, "\r\n");
	}
	tprintf(&req, " %s\r\n", keys[0]); /* asked twice: answered twice */
	tprintf(&want, "VALUE %s 0 1\r\n", keys[0]);
	tput(&want, val, 1);
	tprintf(&want, "\r\nEND\r\n");

	memset(&e->delta, 0, sizeof(e->delta));
	EXPECTB(e, "get of 201 keys (20 misses)", &req, &want);
	struct xkv_stats *d = &e->delta;
	report(d->v[XKV_STAT_get_keys] == 201 && d->v[XKV_STAT_get_hits] == 181 &&
	       d->v[XKV_STAT_get_misses] == 20 && d->v[XKV_STAT_cmd_get] == 1 &&
	       d->v[XKV_STAT_requests] == 1 &&
	       d->v[XKV_STAT_replies] == (want.len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT,
	       "%s: multi-get counters (keys %llu hits %llu misses %llu replies %llu)", e->layout,
	       (unsigned long long)d->v[XKV_STAT_get_keys], (unsigned long long)d->v[XKV_STAT_get_hits],
	       (unsigned long long)d->v[XKV_STAT_get_misses], (unsigned long long)d->v[XKV_STAT_replies]);
	expect_framed(e, "get of 201 keys", &req, &want, (int)((want.len + 1391) / 1392));
	xkv_buf_free(&req);
	xkv_buf_free(&want);
}

/* Every counter the slow path touches, after a known sequence. */
static void t_counters(struct env *e)
{
	struct xkv_buf out = {};
	struct xkv_stats want = {};
	static const struct { const char *req; } seq[] = {
		{ "set a 0 0 1\r\nA\r\n" },           /* cmd_set stores */
		{ "get a b c\r\n" },                  /* cmd_get keys 3 hits 1 misses 2 */
		{ "set x 0 0 1 noreply\r\nx\r\n" },   /* cmd_set stores noreply, no reply */
		{ "delete zz\r\n" },                  /* cmd_delete delete_misses */
		{ "delete x\r\n" },                   /* cmd_delete deletes */
		{ "bogus\r\n" },                      /* err_unknown */
		{ "get a\x02\r\n" },                  /* err_client */
		{ "set k 0 0 9000\r\n" },             /* err_too_large */
		{ "version\r\nincr a 1\r\n" },        /* cmd_other x2, err_client */
		{ "add a 0 0 1\r\nZ\r\n" },           /* cmd_other, NOT_STORED */
		{ "add n 0 0 1\r\nZ\r\n" },           /* cmd_other stores */
	};

	flush_store(e);
	memset(&e->delta, 0, sizeof(e->delta));
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		ask(e, seq[i].req, strlen(seq[i].req), &out);
	want.v[XKV_STAT_requests] = 11;
	want.v[XKV_STAT_cmd_get] = 1;
	want.v[XKV_STAT_cmd_set] = 2;
	want.v[XKV_STAT_cmd_delete] = 2;
	want.v[XKV_STAT_cmd_other] = 4;
	want.v[XKV_STAT_get_keys] = 3;
	want.v[XKV_STAT_get_hits] = 1;
	want.v[XKV_STAT_get_misses] = 2;
	want.v[XKV_STAT_stores] = 3;
	/* a, x and n were new; counted by the layouts that count new items
	 * (as their XDP side does: array_fnv, lru) */
	if (!strcmp(e->layout, "array_fnv") || !strcmp(e->layout, "lru"))
		want.v[XKV_STAT_store_new] = 3;
	want.v[XKV_STAT_deletes] = 1;
	want.v[XKV_STAT_delete_misses] = 1;
	want.v[XKV_STAT_err_unknown] = 1;
	want.v[XKV_STAT_err_client] = 2;
	want.v[XKV_STAT_err_too_large] = 1;
	want.v[XKV_STAT_replies] = 10;
	want.v[XKV_STAT_noreply] = 1;
	int ok = 1;
	for (int i = 0; i < XKV_STAT__MAX; i++) {
		if (e->delta.v[i] != want.v[i]) {
			ok = 0;
			printf("    %s: got %llu want %llu\n", xkv_stat_names[i],
			       (unsigned long long)e->delta.v[i], (unsigned long long)want.v[i]);
		}
	}
	report(ok, "%s: counters after a known sequence", e->layout);
	xkv_buf_free(&out);
}

/* Value of "STAT name v" in a stats reply; -1 if missing or twice. */
static int stat_field(const struct xkv_buf *b, const char *name, char *val, size_t vl)
{
	char pat[96];
	int found = 0;
	snprintf(pat, sizeof(pat), "STAT %s ", name);
	size_t pl = strlen(pat);
	for (size_t i = 0; i + pl <= b->len; i++) {
		if ((i == 0 || b->p[i - 1] == '\n') && !memcmp(b->p + i, pat, pl)) {
			size_t j = i + pl, k = 0;
			while (j < b->len && b->p[j] != '\r' && k + 1 < vl)
				val[k++] = (char)b->p[j++];
			val[k] = 0;
			found++;
		}
	}
	return found == 1 ? 0 : -1;
}

/* Every line is "STAT <name> <value>\r\n", the last "END\r\n". */
static int stats_well_formed(const struct xkv_buf *b)
{
	size_t i = 0;
	while (i < b->len) {
		const __u8 *nl = memchr(b->p + i, '\n', b->len - i);
		if (!nl)
			return 0;
		size_t ll = (size_t)(nl - (b->p + i)) + 1;
		if (ll == 5 && !memcmp(b->p + i, "END\r\n", 5))
			return i + 5 == b->len;
		int spaces = 0;
		for (size_t k = 0; k < ll - 2; k++)
			spaces += b->p[i + k] == ' ';
		if (ll < 9 || memcmp(b->p + i, "STAT ", 5) || b->p[i + ll - 2] != '\r' || spaces != 2)
			return 0;
		i += ll;
	}
	return 0;
}

static void t_stats(struct env *e)
{
	struct xkv_buf out = {};
	struct xkv_stats *rows = calloc(e->s.ncpus, sizeof(*rows)), slow_map;
	__u32 slot = XKV_STATS_FAST;
	char v[128], want[128];

	flush_store(e);
	/* the fast path's slot: 400 seen over the CPUs, 100 passed on */
	rows[0].v[XKV_STAT_requests] = 300;
	rows[0].v[XKV_STAT_pass_cmd] = 60;
	rows[0].v[XKV_STAT_get_hits] = 1000;
	rows[e->s.ncpus - 1].v[XKV_STAT_requests] += 100;
	rows[e->s.ncpus - 1].v[XKV_STAT_pass_room] = 40;
	if (bpf_map_update_elem(e->s.stats_fd, &slot, rows, BPF_ANY))
		report(0, "%s: write the fast slot: %s", e->layout, strerror(errno));
	/* the slow slot: what earlier tests counted, pushed, plus a pending delta */
	if (xkv_stats_slow_add(&e->s, &e->delta))
		report(0, "%s: xkv_stats_slow_add", e->layout);
	memset(&e->delta, 0, sizeof(e->delta));
	const char *setup = "set s1 0 0 1\r\n1\r\nset s2 0 0 1\r\n2\r\nget s1 s3\r\n";
	ask(e, setup, strlen(setup), &out);
	xkv_stats_read(&e->s, XKV_STATS_SLOW, &slow_map, NULL);
	struct xkv_stats pending = e->delta;

	int ret = ask(e, "stats\r\n", 7, &out);
	report(ret == 1 && stats_well_formed(&out), "%s: stats reply is STAT lines then END", e->layout);

	/* the stats command counts itself before answering */
	pending.v[XKV_STAT_requests]++;
	pending.v[XKV_STAT_cmd_other]++;
	int ok = 1;
	for (int i = 0; i < XKV_STAT__MAX; i++) {
		__u64 w = slow_map.v[i] + pending.v[i];
		for (int c = 0; c < e->s.ncpus; c++)
			w += rows[c].v[i];
		snprintf(want, sizeof(want), "%llu", (unsigned long long)w);
		if (stat_field(&out, xkv_stat_names[i], v, sizeof(v)) || strcmp(v, want)) {
			ok = 0;
			printf("    STAT %s: got '%s' want '%s'\n", xkv_stat_names[i], v, want);
		}
	}
	report(ok, "%s: stats lists every counter, both slots and the pending delta summed", e->layout);

	__u64 slow_n = slow_map.v[XKV_STAT_requests] + pending.v[XKV_STAT_requests];
	snprintf(want, sizeof(want), "%.1f", 100.0 * 300 / (300.0 + (double)slow_n));
	char fr[64] = "-", sr[64] = "-", share[64] = "-";
	char slow_s[32];
	snprintf(slow_s, sizeof(slow_s), "%llu", (unsigned long long)slow_n);
	ok = !stat_field(&out, "fast_path_requests", fr, sizeof(fr));
	ok &= !stat_field(&out, "slow_path_requests", sr, sizeof(sr));
	ok &= !stat_field(&out, "fast_path_share", share, sizeof(share));
	ok &= !strcmp(fr, "300") && !strcmp(sr, slow_s) && !strcmp(share, want);
	report(ok, "%s: fast_path_requests %s (want 300) slow_path_requests %s (want %s) share %s (want %s)",
	       e->layout, fr, sr, slow_s, share, want);

	char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	ok = !stat_field(&out, "pid", v, sizeof(v)) && !strcmp(v, pid);
	ok &= !stat_field(&out, "version", v, sizeof(v)) && !strcmp(v, "0.1.0");
	ok &= !stat_field(&out, "layout", v, sizeof(v)) && !strcmp(v, e->layout);
	ok &= !stat_field(&out, "curr_items", v, sizeof(v)) && !strcmp(v, "2");
	ok &= !stat_field(&out, "limit_items", v, sizeof(v)) && atol(v) == ENTRIES;
	ok &= !stat_field(&out, "item_size_max", v, sizeof(v)) && atol(v) == VAL_CAP;
	ok &= !stat_field(&out, "uptime", v, sizeof(v)) && !stat_field(&out, "time", v, sizeof(v)) &&
	      labs(atol(v) - (long)time(NULL)) <= 2;
	report(ok, "%s: stats pid, version, layout, curr_items 2, limits, time", e->layout);
	if (!ok)
		print_escaped("stats", out.p, out.len, 4000);

	/* counters back to zero for the next tests */
	memset(rows, 0, e->s.ncpus * sizeof(*rows));
	bpf_map_update_elem(e->s.stats_fd, &slot, rows, BPF_ANY);
	slot = XKV_STATS_SLOW;
	bpf_map_update_elem(e->s.stats_fd, &slot, rows, BPF_ANY);
	memset(&e->delta, 0, sizeof(e->delta));
	ask(e, "stats\r\n", 7, &out);
	strcpy(share, "-");
	strcpy(sr, "-");
	ok = !stat_field(&out, "fast_path_share", share, sizeof(share));
	ok &= !stat_field(&out, "slow_path_requests", sr, sizeof(sr));
	ok &= !strcmp(share, "0.0") && !strcmp(sr, "1");
	report(ok, "%s: no fast-path traffic: share %s (want 0.0), slow %s (want 1)", e->layout, share, sr);
	free(rows);
	xkv_buf_free(&out);
}

/* hash_map is authoritative: a full map refuses new keys, keeps old ones. */
static void t_oom(void)
{
	struct env e;
	struct xkv_buf req = {}, out = {};
	int stored = 0;

	if (env_open(&e, "hash_map", 64, 64)) {
		report(0, "hash_map: open a 64-entry store");
		return;
	}
	for (int i = 0; i < 64; i++) {
		req.len = 0;
		tprintf(&req, "set f%d 0 0 1\r\nx\r\n", i);
		ask(&e, req.p, req.len, &out);
		stored += out.len == 8 && !memcmp(out.p, "STORED\r\n", 8);
	}
	report(stored == 64, "hash_map: 64 of 64 entries stored (%d)", stored);
	EXPECT(&e, "set one-more 0 0 1\r\nx\r\n", "SERVER_ERROR out of memory storing object\r\n");
	EXPECT(&e, "set one-more 0 0 1 noreply\r\nx\r\n", "SERVER_ERROR out of memory storing object\r\n");
	EXPECT(&e, "set f3 0 0 1\r\ny\r\nget f3\r\n", "STORED\r\nVALUE f3 0 1\r\ny\r\nEND\r\n");
	report(e.delta.v[XKV_STAT_err_oom] == 2, "hash_map: err_oom counted (%llu)",
	       (unsigned long long)e.delta.v[XKV_STAT_err_oom]);
	env_close(&e);
	xkv_buf_free(&req);
	xkv_buf_free(&out);
}

/* percpu: write different copies directly; the slow path answers the newest live. */
static void percpu_write(struct env *e, const char *key, const __u64 *wtime, const __u64 *expire,
			 const char *const *vals)
{
	__u32 es = e->s.cfg.entry_size;
	__u8 *all = calloc(e->s.ncpus, es);
	__u8 k[XKV_KEY_MAX + 8];

	xkv_key_pack(&e->s.cfg, key, (__u32)strlen(key), k);
	for (int c = 0; c < e->s.ncpus; c++) {
		struct xkv_entry *en = (void *)(all + (size_t)c * es);
		en->wtime_ns = wtime[c];
		en->expire_ns = expire[c];
		en->flags = 100 + c;
		en->len = (__u32)strlen(vals[c]);
		memcpy(en->data, vals[c], en->len);
	}
	if (bpf_map_update_elem(e->s.store_fd, k, all, BPF_ANY))
		report(0, "percpu: raw update: %s", strerror(errno));
	free(all);
}

static void t_percpu(struct env *e)
{
	int n = e->s.ncpus;
	__u64 now = xkv_now_ns();
	__u64 *wt = calloc(n, 8), *ex = calloc(n, 8);
	const char **vals = calloc(n, sizeof(*vals));
	char line[128], want[256];
	struct xkv_buf out = {};

	flush_store(e);
	if (n < 2) {
		report(0, "percpu: needs at least 2 possible CPUs (have %d)", n);
		goto out;
	}
	for (int c = 0; c < n; c++) {
		wt[c] = now - 5000000 + (__u64)c * 1000; /* older than the last two below */
		vals[c] = "stale";
	}
	/* newest on CPU 0, the second newest on the last CPU */
	wt[0] = now - 1000;
	vals[0] = "newest";
	wt[n - 1] = now - 2000;
	vals[n - 1] = "second";
	percpu_write(e, "pc", wt, ex, vals);
	snprintf(want, sizeof(want), "VALUE pc 100 6\r\nnewest\r\nEND\r\n");
	expect_n(e, "newest copy (CPU 0) wins", "get pc\r\n", 8, want, strlen(want));

	ex[0] = 1; /* the newest copy expired: the next newest live one */
	percpu_write(e, "pc", wt, ex, vals);
	snprintf(want, sizeof(want), "VALUE pc %d 6\r\nsecond\r\nEND\r\n", 100 + n - 1);
	expect_n(e, "newest copy expired: next newest", "get pc\r\n", 8, want, strlen(want));

	ex[0] = 0;
	wt[0] = 0; /* an empty copy (as a new element's other CPUs) */
	percpu_write(e, "pc", wt, ex, vals);
	expect_n(e, "empty copy ignored", "get pc\r\n", 8, want, strlen(want));

	for (int c = 0; c < n; c++)
		ex[c] = 1;
	percpu_write(e, "pc", wt, ex, vals);
	EXPECT(e, "get pc\r\n", "END\r\n");
	EXPECT(e, "delete pc\r\n", "NOT_FOUND\r\n");

	for (int c = 0; c < n; c++) {
		ex[c] = 0;
		vals[c] = "7";
		wt[c] = now - 10000;
	}
	vals[n - 1] = "41";
	wt[n - 1] = now - 10;
	percpu_write(e, "num", wt, ex, vals);
	EXPECT(e, "incr num 1\r\n", "42\r\n");
	snprintf(line, sizeof(line), "VALUE num %d 2\r\n42\r\nEND\r\n", 100 + n - 1);
	expect_n(e, "incr of the newest copy", "get num\r\n", 9, line, strlen(line));

	/* a slow path set writes every copy */
	EXPECT(e, "set all 9 0 3\r\nxyz\r\n", "STORED\r\n");
	__u8 *raw = calloc(n, e->s.cfg.entry_size), k[XKV_KEY_MAX + 8];
	xkv_key_pack(&e->s.cfg, "all", 3, k);
	int ok = !bpf_map_lookup_elem(e->s.store_fd, k, raw);
	for (int c = 0; ok && c < n; c++) {
		struct xkv_entry *en = (void *)(raw + (size_t)c * e->s.cfg.entry_size);
		ok = en->wtime_ns && en->flags == 9 && en->len == 3 && !memcmp(en->data, "xyz", 3);
	}
	report(ok, "percpu: a slow-path set writes all %d copies", n);
	free(raw);
out:
	free(wt);
	free(ex);
	free(vals);
	xkv_buf_free(&out);
}

static int run_unit(void)
{
	for (int i = 0; xkv_layouts[i]; i++) {
		struct env e;
		const char *name = xkv_layouts[i]->name;

		printf("== %s\n", name);
		if (env_open(&e, name, ENTRIES, VAL_CAP)) {
			n_fail++;
			continue;
		}
		t_basic(&e);
		t_add_replace(&e);
		t_arith(&e);
		t_errors(&e);
		t_multi_cmd(&e);
		t_flush(&e);
		t_large(&e);
		t_multiget(&e);
		t_counters(&e);
		t_stats(&e);
		if (!strcmp(name, "percpu"))
			t_percpu(&e);
		env_close(&e);
	}
	printf("== hash_map, 64 entries\n");
	t_oom();
	return 0;
}

/* ---- daemon --------------------------------------------------------------- */

struct daemon {
	struct xkv_store *s;
	struct xkv_serve_opts o;
	volatile sig_atomic_t stop;
	int rc;
	char err[XKV_ERRLEN];
};

static void *daemon_main(void *arg)
{
	struct daemon *d = arg;
	d->rc = xkv_serve(d->s, &d->o, d->err, sizeof(d->err));
	return NULL;
}

static int wait_ready(int fd);

/* xkv_serve on lo in a thread; 0 once it said ready. */
static int daemon_start(struct daemon *d, pthread_t *th, struct xkv_store *s, __u16 port, unsigned push_ms)
{
	int pfd[2];

	memset(d, 0, sizeof(*d));
	if (pipe(pfd))
		return -1;
	d->s = s;
	d->o = (struct xkv_serve_opts){ .ifname = "lo", .port = port, .stop = &d->stop,
					.ready_fd = pfd[1], .push_ms = push_ms };
	if (pthread_create(th, NULL, daemon_main, d)) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	int ready = wait_ready(pfd[0]);
	close(pfd[0]);
	if (ready) {
		d->stop = 1;
		pthread_join(*th, NULL);
	}
	return ready;
}

static int wait_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[16] = "";
	if (poll(&p, 1, 5000) != 1)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	return n == 6 && !memcmp(buf, "ready\n", 6) ? 0 : -1;
}

/* Send one request, gather datagrams of req_id until the total is in (or
 * timeout); each must come from want_from. */
static int udp_ask(int fd, const struct sockaddr *to, socklen_t tl, __u16 id, __u16 seq, __u16 total,
		   const void *text, size_t len, struct frames *f, int timeout_ms, int *bad_src)
{
	static __u8 d[70000];
	size_t dl = mkdgram(d, id, seq, total, text, len);
	f->n = 0;
	*bad_src = 0;
	if (sendto(fd, d, dl, 0, to, tl) != (ssize_t)dl)
		return -errno;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, timeout_ms) != 1)
			return f->n;
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, d, sizeof(d), 0, (struct sockaddr *)&from, &fl);
		if (n < 8)
			continue;
		struct xkv_udp_hdr h;
		memcpy(&h, d, 8);
		if (ntohs(h.req_id) != id)
			continue; /* a late answer to an earlier request */
		if (fl != tl || memcmp(&from, to, tl) != 0)
			(*bad_src)++;
		collect(f, d, (size_t)n);
		if (f->n >= ntohs(h.total))
			return f->n;
	}
}

static void daemon_check(int fd, const struct sockaddr *to, socklen_t tl, const char *what, __u16 id,
			 const struct xkv_buf *req, const struct xkv_buf *want, int ndgrams)
{
	static struct frames f;
	struct xkv_buf text = {};
	char why[200] = "";
	int bad_src = 0;
	int n = udp_ask(fd, to, tl, id, 0, 1, req->p, req->len, &f, 2000, &bad_src);
	int ok = n == ndgrams && !bad_src && !reassemble(&f, htons(id), &text, why, sizeof(why)) &&
		 text.len == want->len && !memcmp(text.p, want->p, want->len);
	report(ok, "daemon: %s (%d datagrams)", what, ndgrams);
	if (!ok) {
		printf("    got %d datagrams, %d from a wrong source; %s\n", n, bad_src, why);
		show_diff(text.p ? text.p : (const __u8 *)"", text.len, want->p, want->len);
	}
	xkv_buf_free(&text);
}

/* A user without privileges asking for a privileged port is told so. */
static void check_unprivileged(struct xkv_store *s)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "r");
	int start = 1024;
	if (f) {
		if (fscanf(f, "%d", &start) != 1)
			start = 1024;
		fclose(f);
	}
	if (start <= 1) {
		printf("SKIP daemon: every port is unprivileged here\n");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char err[XKV_ERRLEN] = "";
		volatile sig_atomic_t stop = 0;
		struct xkv_serve_opts o = { .ifname = "lo", .port = (__u16)(start - 1), .stop = &stop,
					    .ready_fd = -1 };
		if (setgid(65534) || setuid(65534))
			_exit(3);
		int rc = xkv_serve(s, &o, err, sizeof(err));
		printf("    as uid 65534, port %d: rc %d: %s\n", start - 1, rc, err);
		fflush(stdout);
		_exit(rc < 0 && strstr(err, "needs root") ? 0 : 1);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	report(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "daemon: a privileged port without privileges is reported as needing root");
}

static int run_daemon(void)
{
	struct env e;
	struct daemon d = {};
	static __u8 val[5000];
	struct xkv_buf req = {}, want = {};
	__u16 port = (__u16)(21000 + getpid() % 1000);
	pthread_t th;
	char err[XKV_ERRLEN];

	if (env_open(&e, "hash_map", 1024, VAL_CAP))
		return n_fail++, 0;
	int ready = daemon_start(&d, &th, &e.s, port, 0);
	report(!ready, "daemon: ready on lo UDP port %u%s%s", port, ready ? ": " : "", ready ? d.err : "");
	if (ready) {
		env_close(&e);
		return 0;
	}

	/* a second server on the same port, a missing interface */
	struct xkv_serve_opts o2 = { .ifname = "lo", .port = port, .stop = &d.stop, .ready_fd = -1 };
	int rc = xkv_serve(&e.s, &o2, err, sizeof(err));
	report(rc < 0 && strstr(err, "already in use"), "daemon: port in use reported: %s", err);
	o2.ifname = "xkvnosuch0";
	rc = xkv_serve(&e.s, &o2, err, sizeof(err));
	report(rc < 0 && strstr(err, "no such interface"), "daemon: missing interface reported: %s", err);

	check_unprivileged(&e.s);

	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd4 = socket(AF_INET, SOCK_DGRAM, 0), fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
	int rcvbuf = 8 << 20;
	setsockopt(fd4, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd6, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	int sent = 0;

	fill(val, sizeof(val), 5);
	tprintf(&req, "set big 17 0 5000\r\n");
	tput(&req, val, 5000);
	tprintf(&req, "\r\n");
	tprintf(&want, "STORED\r\n");
	daemon_check(fd4, (void *)&a4, sizeof(a4), "IPv4 set of 5000 bytes", 101, &req, &want, 1);
	sent++;

	req.len = want.len = 0;
	tprintf(&req, "get big\r\n");
	tprintf(&want, "VALUE big 17 5000\r\n");
	tput(&want, val, 5000);
	tprintf(&want, "\r\nEND\r\n");
	int nd = (int)((want.len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
	daemon_check(fd4, (void *)&a4, sizeof(a4), "IPv4 get of 5000 bytes from 127.0.0.1", 102, &req, &want, nd);
	daemon_check(fd6, (void *)&a6, sizeof(a6), "IPv6 get of 5000 bytes from ::1", 103, &req, &want, nd);
	sent += 2;

	req.len = want.len = 0;
	tprintf(&req, "version\r\nget nope big\r\ndelete nope\r\n");
	tprintf(&want, "VERSION xdpkv 0.1.0\r\nVALUE big 17 5000\r\n");
	tput(&want, val, 5000);
	tprintf(&want, "\r\nEND\r\nNOT_FOUND\r\n");
	nd = (int)((want.len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
	daemon_check(fd6, (void *)&a6, sizeof(a6), "IPv6 three commands in one datagram", 104, &req, &want, nd);
	sent++;

	/* many keys: a long reply */
	req.len = want.len = 0;
	tprintf(&req, "get");
	for (int i = 0; i < 200; i++) {
		tprintf(&req, " big");
		tprintf(&want, "VALUE big 17 5000\r\n");
		tput(&want, val, 5000);
		tprintf(&want, "\r\n");
	}
	tprintf(&req, "\r\n");
	tprintf(&want, "END\r\n");
	nd = (int)((want.len + XKV_DGRAM_TEXT - 1) / XKV_DGRAM_TEXT);
	/* sent to 127.0.0.2: the reply must come from there, not from the
	 * address the routing table would pick (127.0.0.1) */
	struct sockaddr_in a4b = a4;
	a4b.sin_addr.s_addr = htonl(0x7f000002);
	daemon_check(fd4, (void *)&a4b, sizeof(a4b), "IPv4 get of 200 x 5000 bytes from 127.0.0.2", 105,
		     &req, &want, nd);
	sent++;

	/* errors: multi-datagram request, too-short datagram */
	static struct frames f;
	int bad = 0;
	struct xkv_buf text = {};
	char why[200];
	int n = udp_ask(fd6, (void *)&a6, sizeof(a6), 106, 0, 2, "get big\r\n", 9, &f, 2000, &bad);
	int ok = n == 1 && !bad && !reassemble(&f, htons(106), &text, why, sizeof(why)) &&
		 text.len == strlen(XKV_R_MULTI_DGRAM) && !memcmp(text.p, XKV_R_MULTI_DGRAM, text.len);
	report(ok, "daemon: IPv6 multi-datagram request refused");
	sent++;
	if (sendto(fd4, "\0\1", 2, 0, (void *)&a4, sizeof(a4)) == 2)
		sent++;
	req.len = want.len = 0;
	tprintf(&req, "version\r\n");
	tprintf(&want, "VERSION xdpkv 0.1.0\r\n");
	n = udp_ask(fd4, (void *)&a4, sizeof(a4), 107, 0, 1, req.p, req.len, &f, 2000, &bad);
	struct xkv_udp_hdr h0 = {};
	if (n >= 1)
		memcpy(&h0, f.d[0], 8);
	report(n == 1 && h0.req_id == htons(107), "daemon: 2-byte datagram unanswered, next one answered");
	sent++;

	/* counters reach the map while serving (pushed every 100 ms) */
	usleep(400 * 1000);
	struct xkv_stats slow;
	xkv_stats_read(&e.s, XKV_STATS_SLOW, &slow, NULL);
	report(slow.v[XKV_STAT_requests] == (__u64)sent && slow.v[XKV_STAT_cmd_get] == 4 &&
	       slow.v[XKV_STAT_get_hits] == 203 && slow.v[XKV_STAT_stores] == 1,
	       "daemon: counters pushed while serving: requests %llu (want %d) cmd_get %llu hits %llu",
	       (unsigned long long)slow.v[XKV_STAT_requests], sent,
	       (unsigned long long)slow.v[XKV_STAT_cmd_get], (unsigned long long)slow.v[XKV_STAT_get_hits]);

	/* the last counters are pushed on exit */
	udp_ask(fd6, (void *)&a6, sizeof(a6), 108, 0, 1, "version\r\n", 9, &f, 2000, &bad);
	sent++;
	d.stop = 1;
	pthread_join(th, NULL);
	report(d.rc == 0, "daemon: clean stop (rc %d %s)", d.rc, d.rc ? d.err : "");
	xkv_stats_read(&e.s, XKV_STATS_SLOW, &slow, NULL);
	report(slow.v[XKV_STAT_requests] == (__u64)sent, "daemon: counters pushed on exit: requests %llu (want %d)",
	       (unsigned long long)slow.v[XKV_STAT_requests], sent);

	/* counters are batched: with a long interval nothing reaches the map
	 * while serving, everything on exit */
	__u64 before = slow.v[XKV_STAT_requests];
	ready = daemon_start(&d, &th, &e.s, port, 600000);
	report(!ready, "daemon: restarted with a 600 s counter interval%s%s", ready ? ": " : "", ready ? d.err : "");
	if (!ready) {
		for (int i = 0; i < 3; i++)
			udp_ask(fd4, (void *)&a4, sizeof(a4), (__u16)(200 + i), 0, 1, "version\r\n", 9, &f, 2000, &bad);
		usleep(300 * 1000);
		xkv_stats_read(&e.s, XKV_STATS_SLOW, &slow, NULL);
		__u64 mid = slow.v[XKV_STAT_requests];
		d.stop = 1;
		pthread_join(th, NULL);
		xkv_stats_read(&e.s, XKV_STATS_SLOW, &slow, NULL);
		report(mid == before && slow.v[XKV_STAT_requests] == before + 3,
		       "daemon: counters held while serving (%llu, want %llu), pushed on exit (%llu, want %llu)",
		       (unsigned long long)mid, (unsigned long long)before,
		       (unsigned long long)slow.v[XKV_STAT_requests], (unsigned long long)before + 3);
	}

	close(fd4);
	close(fd6);
	xkv_buf_free(&req);
	xkv_buf_free(&want);
	xkv_buf_free(&text);
	env_close(&e);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "unit";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "unit"))
		run_unit();
	else if (!strcmp(mode, "daemon"))
		run_daemon();
	else {
		fprintf(stderr, "usage: %s unit|daemon\n", argv[0]);
		return 2;
	}
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
